/* SPDX-License-Identifier: BSD-3-Clause */
/* Synthetic descriptions: every key, its default, and every way to get one wrong. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static nk_machine *load(const char *desc)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	int rc = nk_machine_load_synthetic(desc, &m, &err);
	if (rc)
		fail_msg("\"%s\": %d %s", desc, rc, err.message);
	assert_non_null(m);
	return m;
}

/* The description must fail with NK_EPARSE, leave *out alone, and say @p needle. */
static void expect_error(const char *desc, const char *needle)
{
	nk_machine *sentinel = (nk_machine *)&sentinel;
	nk_machine *m = sentinel;
	nk_error err = { 0 };
	int rc = nk_machine_load_synthetic(desc, &m, &err);
	if (rc != NK_EPARSE)
		fail_msg("\"%s\": expected NK_EPARSE, got %d (%s)", desc, rc, err.message);
	assert_int_equal(err.code, NK_EPARSE);
	assert_ptr_equal(m, sentinel);
	if (strncmp(err.message, "synthetic: ", 11) || !strstr(err.message, needle))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", desc, err.message, needle);
	/* without an nk_error the code is the same */
	assert_int_equal(nk_machine_load_synthetic(desc, &m, NULL), NK_EPARSE);
	assert_ptr_equal(m, sentinel);
}

static void expect_cpus(const nk_machine *m, int node, const int *want, int n)
{
	int got[64];
	assert_int_equal(nk_machine_node_cpus(m, node, got, 64), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

static void test_defaults(void **state)
{
	nk_machine *m = load("nodes=1");
	uint64_t total = 0, freeb = 0, huge[4];
	nk_kernel_settings ks;
	nk_cpu_info ci;
	const char *detail = NULL;

	(void)state;
	assert_int_equal(nk_machine_num_nodes(m), 1);
	assert_int_equal(nk_machine_num_cpus(m), 1);
	assert_int_equal(nk_machine_num_cores(m), 1);
	assert_int_equal(nk_machine_num_caches(m), 0);
	assert_int_equal(nk_machine_node_memory(m, 0, &total, &freeb), 0);
	assert_int_equal(total, 1ULL << 30);
	assert_int_equal(freeb, 1ULL << 30);
	assert_int_equal(nk_machine_distance(m, 0, 0), 10);
	assert_int_equal(nk_machine_page_size(m), 4096);
	assert_int_equal(nk_machine_huge_page_sizes(m, huge, 4), 1);
	assert_int_equal(huge[0], 2u << 20);
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.numa_balancing, -1);
	assert_int_equal(ks.thp_enabled, NK_THP_UNKNOWN);
	assert_int_equal(ks.thp_defrag, NK_THP_UNKNOWN);
	assert_int_equal(ks.weighted_interleave, -1);
	assert_int_equal(nk_machine_wi_weight(m, 0), NK_ENODATA);
	assert_int_equal(nk_machine_cpu_info(m, 0, &ci), 0);
	assert_int_equal(ci.node, 0);
	assert_int_equal(ci.core, 0);
	assert_int_equal(ci.package, 0);
	assert_int_equal(ci.allowed, 1);
	assert_int_equal(nk_machine_node_flags(m, 0),
			 NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED | NK_NODE_CPUS_ALLOWED);
	assert_int_equal(nk_machine_source(m, &detail), NK_SOURCE_SYNTHETIC);
	assert_string_equal(detail, "nodes=1");
	nk_machine_free(m);
}

static void test_numbering(void **state)
{
	/* node i, core c, thread t: cpus count node by node, core by core, thread by thread */
	nk_machine *m = load("nodes=2 cores=2 smt=2");
	nk_cpu_info ci;

	(void)state;
	assert_int_equal(nk_machine_num_cpus(m), 8);
	assert_int_equal(nk_machine_num_cores(m), 4);
	expect_cpus(m, 0, (const int[]){ 0, 1, 2, 3 }, 4);
	expect_cpus(m, 1, (const int[]){ 4, 5, 6, 7 }, 4);
	/* cpu 5 = node 1, its first core (machine-wide core 2), second thread */
	assert_int_equal(nk_machine_cpu_info(m, 5, &ci), 0);
	assert_int_equal(ci.node, 1);
	assert_int_equal(ci.core, 2);
	assert_int_equal(ci.package, 1);
	assert_int_equal(nk_machine_cpu_info(m, 4, &ci), 0);
	assert_int_equal(ci.core, 2);
	assert_int_equal(nk_machine_cpu_info(m, 3, &ci), 0);
	assert_int_equal(ci.core, 1);
	assert_int_equal(ci.node, 0);
	assert_int_equal(nk_machine_distance(m, 0, 1), 20);
	assert_int_equal(nk_machine_distance(m, 1, 0), 20);
	assert_int_equal(nk_machine_distance(m, 1, 1), 10);
	nk_machine_free(m);
}

static void test_packages(void **state)
{
	nk_machine *m = load("nodes=4 packages=2");
	nk_cpu_info ci;

	(void)state;
	/* 4 nodes in 2 packages: nodes 0,1 -> package 0; nodes 2,3 -> package 1 */
	for (int cpu = 0; cpu < 4; cpu++) {
		assert_int_equal(nk_machine_cpu_info(m, cpu, &ci), 0);
		assert_int_equal(ci.node, cpu);
		assert_int_equal(ci.package, cpu / 2);
	}
	nk_machine_free(m);

	/* default: one package per node */
	m = load("nodes=3");
	assert_int_equal(nk_machine_cpu_info(m, 2, &ci), 0);
	assert_int_equal(ci.package, 2);
	nk_machine_free(m);

	m = load("nodes=4 packages=1");
	assert_int_equal(nk_machine_cpu_info(m, 3, &ci), 0);
	assert_int_equal(ci.package, 0);
	nk_machine_free(m);
}

static void test_sparse_ids_and_cpuless(void **state)
{
	nk_machine *m = load("nodes=3 ids=0,4,9 cpuless=2 dist=10,20,30/20,10,30/30,30,10");
	uint64_t total = 0;

	(void)state;
	assert_int_equal(nk_machine_num_nodes(m), 3);
	assert_int_equal(nk_machine_node_id(m, 0), 0);
	assert_int_equal(nk_machine_node_id(m, 1), 4);
	assert_int_equal(nk_machine_node_id(m, 2), 9);
	assert_int_equal(nk_machine_node_index(m, 4), 1);
	assert_int_equal(nk_machine_node_index(m, 1), NK_ENODEV);
	assert_int_equal(nk_machine_num_cpus(m), 2);
	expect_cpus(m, 0, (const int[]){ 0 }, 1);
	expect_cpus(m, 4, (const int[]){ 1 }, 1);
	expect_cpus(m, 9, NULL, 0);
	/* cpuless=2 is an index: the third node, id 9 */
	assert_int_equal(nk_machine_node_flags(m, 9), NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED);
	assert_int_equal(nk_machine_node_memory(m, 9, &total, NULL), 0);
	assert_int_equal(total, 1ULL << 30);
	assert_int_equal(nk_machine_distance(m, 4, 9), 30);
	assert_int_equal(nk_machine_distance(m, 9, 0), 30);
	assert_int_equal(nk_machine_distance(m, 0, 4), 20);
	nk_machine_free(m);
}

static void test_cpuless_in_the_middle(void **state)
{
	nk_machine *m = load("nodes=3 cores=2 cpuless=1");

	(void)state;
	/* numbering continues past the CPU-less node */
	expect_cpus(m, 0, (const int[]){ 0, 1 }, 2);
	expect_cpus(m, 1, NULL, 0);
	expect_cpus(m, 2, (const int[]){ 2, 3 }, 2);
	nk_machine_free(m);
}

static void test_memless(void **state)
{
	nk_machine *m = load("nodes=2 memless=1 mem=512M");
	uint64_t total = 1, freeb = 1;

	(void)state;
	assert_int_equal(nk_machine_node_memory(m, 1, &total, &freeb), 0);
	assert_int_equal(total, 0);
	assert_int_equal(freeb, 0);
	assert_int_equal(nk_machine_node_flags(m, 1), NK_NODE_HAS_CPUS | NK_NODE_MEM_ALLOWED | NK_NODE_CPUS_ALLOWED);
	assert_int_equal(nk_machine_node_memory(m, 0, &total, &freeb), 0);
	assert_int_equal(total, 512ULL << 20);
	assert_int_equal(freeb, 512ULL << 20);
	nk_machine_free(m);
}

static void test_dist(void **state)
{
	nk_machine *m = load("nodes=2 dist=10,21/31,10");

	(void)state;
	/* row = from: asymmetric values stay where they were written */
	assert_int_equal(nk_machine_distance(m, 0, 1), 21);
	assert_int_equal(nk_machine_distance(m, 1, 0), 31);
	nk_machine_free(m);

	m = load("nodes=3 dist=11:32");
	assert_int_equal(nk_machine_distance(m, 2, 2), 11);
	assert_int_equal(nk_machine_distance(m, 0, 2), 32);
	assert_int_equal(nk_machine_distance(m, 2, 1), 32);
	nk_machine_free(m);

	m = load("nodes=1 dist=10");
	assert_int_equal(nk_machine_distance(m, 0, 0), 10);
	nk_machine_free(m);
}

static void test_caches(void **state)
{
	nk_machine *m = load("nodes=2 cores=2 smt=2 l1=32K l2=1M l3=16M");
	nk_cache_info ci;
	int cpus[8];

	(void)state;
	/* per core: 4 L1d + 4 L2; per node: 2 L3; sorted by level then first cpu */
	assert_int_equal(nk_machine_num_caches(m), 10);
	assert_int_equal(nk_machine_cache(m, 0, &ci), 0);
	assert_int_equal(ci.level, 1);
	assert_int_equal(ci.type, NK_CACHE_DATA);
	assert_int_equal(ci.size, 32768);
	assert_int_equal(ci.line_size, 64);
	assert_int_equal(ci.ways, 0);
	assert_int_equal(ci.num_cpus, 2);
	assert_int_equal(nk_machine_cache_cpus(m, 0, cpus, 8), 2);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[1], 1);
	assert_int_equal(nk_machine_cache(m, 3, &ci), 0);
	assert_int_equal(nk_machine_cache_cpus(m, 3, cpus, 8), 2);
	assert_int_equal(cpus[0], 6);
	assert_int_equal(nk_machine_cache(m, 5, &ci), 0);
	assert_int_equal(ci.level, 2);
	assert_int_equal(ci.type, NK_CACHE_UNIFIED);
	assert_int_equal(ci.size, 1 << 20);
	assert_int_equal(nk_machine_cache_cpus(m, 5, cpus, 8), 2);
	assert_int_equal(cpus[0], 2);
	assert_int_equal(nk_machine_cache(m, 9, &ci), 0);
	assert_int_equal(ci.level, 3);
	assert_int_equal(ci.size, 16 << 20);
	assert_int_equal(ci.num_cpus, 4);
	assert_int_equal(nk_machine_cache_cpus(m, 9, cpus, 8), 4);
	assert_int_equal(cpus[0], 4);
	assert_int_equal(cpus[3], 7);
	assert_int_equal(nk_machine_cache(m, 10, &ci), NK_EINVAL);
	nk_machine_free(m);

	/* a CPU-less node has no L3 of its own */
	m = load("nodes=2 cpuless=1 l3=8M");
	assert_int_equal(nk_machine_num_caches(m), 1);
	nk_machine_free(m);
}

static void test_pages(void **state)
{
	nk_machine *m = load("nodes=1 pagesize=64K hugepages=1G,2M");
	uint64_t sizes[4];

	(void)state;
	assert_int_equal(nk_machine_page_size(m), 65536);
	assert_int_equal(nk_machine_huge_page_sizes(m, sizes, 4), 2);
	assert_int_equal(sizes[0], 2u << 20);
	assert_int_equal(sizes[1], 1u << 30);
	nk_machine_free(m);

	m = load("nodes=1 hugepages=none");
	assert_int_equal(nk_machine_huge_page_sizes(m, NULL, 0), 0);
	nk_machine_free(m);
}

static void test_kernel(void **state)
{
	nk_machine *m = load("nodes=2 numa_balancing=1 thp=madvise wi=1,7");
	nk_kernel_settings ks;

	(void)state;
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.numa_balancing, 1);
	assert_int_equal(ks.thp_enabled, NK_THP_MADVISE);
	assert_int_equal(ks.thp_defrag, NK_THP_UNKNOWN);
	assert_int_equal(ks.weighted_interleave, 1);
	assert_int_equal(nk_machine_wi_weight(m, 0), 1);
	assert_int_equal(nk_machine_wi_weight(m, 1), 7);
	assert_int_equal(nk_machine_wi_weight(m, 2), NK_ENODEV);
	nk_machine_free(m);

	m = load("nodes=1 thp=never numa_balancing=0");
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.thp_enabled, NK_THP_NEVER);
	assert_int_equal(ks.numa_balancing, 0);
	nk_machine_free(m);

	m = load("nodes=1 thp=always");
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.thp_enabled, NK_THP_ALWAYS);
	nk_machine_free(m);
}

static void test_allowed(void **state)
{
	nk_machine *m = load("nodes=2 cores=2 allowed_cpus=0-1 allowed_nodes=1");
	int ids[8];
	nk_cpu_info ci;

	(void)state;
	assert_int_equal(nk_machine_allowed_cpus(m, ids, 8), 2);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);
	assert_int_equal(nk_machine_allowed_nodes(m, ids, 8), 1);
	assert_int_equal(ids[0], 1);
	assert_int_equal(nk_machine_node_flags(m, 0), NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY | NK_NODE_CPUS_ALLOWED);
	assert_int_equal(nk_machine_node_flags(m, 1), NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED);
	assert_int_equal(nk_machine_cpu_info(m, 2, &ci), 0);
	assert_int_equal(ci.allowed, 0);
	assert_int_equal(nk_machine_cpu_info(m, 1, &ci), 0);
	assert_int_equal(ci.allowed, 1);
	nk_machine_free(m);

	/* ids of allowed_nodes are OS ids, not indices */
	m = load("nodes=2 ids=3,5 allowed_nodes=5");
	assert_int_equal(nk_machine_allowed_nodes(m, ids, 8), 1);
	assert_int_equal(ids[0], 5);
	nk_machine_free(m);
}

static void test_whitespace(void **state)
{
	nk_machine *m = load("  nodes=2\tcores=3\n smt=1  ");

	(void)state;
	assert_int_equal(nk_machine_num_cpus(m), 6);
	nk_machine_free(m);
}

static void test_large(void **state)
{
	/* later policy tests use up to 1024 nodes: must be quick and exact */
	nk_machine *m = load("nodes=1024 cores=2 l3=8M");
	int nb[4];

	(void)state;
	assert_int_equal(nk_machine_num_nodes(m), 1024);
	assert_int_equal(nk_machine_num_cpus(m), 2048);
	assert_int_equal(nk_machine_num_caches(m), 1024);
	assert_int_equal(nk_machine_distance(m, 1023, 0), 20);
	assert_int_equal(nk_machine_distance(m, 1023, 1023), 10);
	expect_cpus(m, 1023, (const int[]){ 2046, 2047 }, 2);
	/* self, then the others by id */
	assert_int_equal(nk_machine_neighbors(m, 500, nb, 4), 1024);
	assert_int_equal(nb[0], 500);
	assert_int_equal(nb[1], 0);
	assert_int_equal(nb[3], 2);
	nk_machine_free(m);

	m = load("nodes=4096");
	assert_int_equal(nk_machine_num_nodes(m), 4096);
	nk_machine_free(m);
}

static void test_exact_message(void **state)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };

	(void)state;
	assert_int_equal(nk_machine_load_synthetic("nodes=2 dist=10,20", &m, &err), NK_EPARSE);
	assert_string_equal(err.message, "synthetic: \"dist=10,20\": expected 2 rows, found 1");
	assert_int_equal(nk_machine_load_synthetic("nodes=2 dist=10,20/20", &m, &err), NK_EPARSE);
	assert_string_equal(err.message, "synthetic: \"dist=10,20/20\": row 2: expected 2 values, found 1");
	assert_null(m);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("", "\"nodes=N\" is required");
	expect_error("cores=2", "\"nodes=N\" is required");
	expect_error("nodes=0", "\"nodes=0\": expected an integer in 1..4096");
	expect_error("nodes=4097", "\"nodes=4097\"");
	expect_error("nodes=-1", "\"nodes=-1\"");
	expect_error("nodes=2x", "\"nodes=2x\"");
	expect_error("nodes=99999999999999999999999", "expected an integer");
	expect_error("nodes=2 nodes=3", "\"nodes=3\": key \"nodes\" given twice");
	expect_error("nodes=2 foo=1", "\"foo=1\": unknown key \"foo\"");
	expect_error("nodes=2 cores", "\"cores\": expected key=value");
	expect_error("nodes=2 cores=", "\"cores=\": empty value");
	expect_error("nodes=2 =3", "unknown key");
	expect_error("nodes=2 cores=1x", "\"cores=1x\"");
	expect_error("nodes=2 cores=0", "cpuless");
	expect_error("nodes=2 smt=0", "\"smt=0\"");
	expect_error("nodes=4 packages=3", "\"packages=3\": 4 nodes do not split evenly into 3 packages");
	expect_error("nodes=2 packages=3", "\"packages=3\"");
	expect_error("nodes=64 cores=1024 smt=2", "limit");

	expect_error("nodes=2 dist=10,20/20,10,5", "\"dist=10,20/20,10,5\": row 2: expected 2 values, found 3");
	expect_error("nodes=2 dist=10,x/20,10", "row 1 value 2: \"x\"");
	expect_error("nodes=2 dist=10,/20,10", "row 1 value 2");
	expect_error("nodes=2 dist=10,20/20,10/", "expected 2 rows, found 3");
	expect_error("nodes=2 dist=10,1001/20,10", "row 1 value 2");
	expect_error("nodes=2 dist=10,0/20,10", "row 1 value 2");
	expect_error("nodes=2 dist=10:0", "LOCAL:REMOTE");
	expect_error("nodes=2 dist=10:", "LOCAL:REMOTE");
	expect_error("nodes=2 dist=:20", "LOCAL:REMOTE");
	expect_error("nodes=2 dist=10:20:30", "LOCAL:REMOTE");

	expect_error("nodes=2 ids=0,0", "\"ids=0,0\": expected 2 distinct node ids, found 1");
	expect_error("nodes=2 ids=0-2", "found 3");
	expect_error("nodes=2 ids=0-", "\"ids=0-\"");
	expect_error("nodes=2 ids=1,65536", "too large");
	expect_error("nodes=2 memless=2", "\"memless=2\": node index 2 out of range 0..1");
	expect_error("nodes=2 cpuless=1,,", "\"cpuless=1,,\"");
	expect_error("nodes=2 memless=0 cpuless=0", "node index 0 is also memless");
	expect_error("nodes=1 cpuless=0", "every node is CPU-less");

	expect_error("nodes=2 mem=1Q", "\"mem=1Q\": expected a size");
	expect_error("nodes=2 mem=0", "\"mem=0\": size must be positive");
	expect_error("nodes=2 mem=16777216T", "\"mem=16777216T\"");
	expect_error("nodes=2 l1=abc", "\"l1=abc\"");
	expect_error("nodes=2 l3=0", "\"l3=0\"");
	expect_error("nodes=2 pagesize=3000", "\"pagesize=3000\": page size must be a power of two");
	expect_error("nodes=2 hugepages=2M,abc", "\"hugepages=2M,abc\": \"abc\" is not a huge page size");
	expect_error("nodes=2 hugepages=2M,", "is not a huge page size");
	expect_error("nodes=2 hugepages=1500", "\"1500\"");
	expect_error("nodes=2 pagesize=2M hugepages=2M", "\"2M\"");
	expect_error("nodes=2 thp=sometimes", "\"thp=sometimes\": expected always, madvise or never");
	expect_error("nodes=2 numa_balancing=4", "\"numa_balancing=4\"");
	expect_error("nodes=2 wi=1", "\"wi=1\": expected 2 weights, found 1");
	expect_error("nodes=2 wi=1,2,3", "found 3");
	expect_error("nodes=2 wi=1,256", "weight 2");
	expect_error("nodes=2 wi=0,1", "weight 1");
	expect_error("nodes=2 wi=1,", "weight 2");
	expect_error("nodes=2 allowed_cpus=5", "\"allowed_cpus=5\": no cpu 5 on this machine");
	expect_error("nodes=2 allowed_nodes=2", "\"allowed_nodes=2\": no node 2 on this machine");
	expect_error("nodes=2 ids=3,5 allowed_nodes=1", "no node 1");
	expect_error("nodes=2 allowed_cpus=x", "\"allowed_cpus=x\"");
}

static void test_long_token_is_truncated(void **state)
{
	char desc[2048];
	nk_machine *m = NULL;
	nk_error err = { 0 };

	(void)state;
	strcpy(desc, "nodes=1 dist=");
	for (int i = 0; i < 300; i++)
		strcat(desc, "10,");
	strcat(desc, "1");
	assert_int_equal(nk_machine_load_synthetic(desc, &m, &err), NK_EPARSE);
	assert_true(strlen(err.message) < NK_ERROR_MSG_MAX);
	assert_non_null(strstr(err.message, "...\""));
	assert_non_null(strstr(err.message, "row 1: expected 1 value, found 301"));
}

static void test_bad_arguments(void **state)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };

	(void)state;
	assert_int_equal(nk_machine_load_synthetic(NULL, &m, &err), NK_EINVAL);
	assert_int_equal(err.code, NK_EINVAL);
	assert_int_equal(nk_machine_load_synthetic("nodes=1", NULL, NULL), NK_EINVAL);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_numbering),
		cmocka_unit_test(test_packages),
		cmocka_unit_test(test_sparse_ids_and_cpuless),
		cmocka_unit_test(test_cpuless_in_the_middle),
		cmocka_unit_test(test_memless),
		cmocka_unit_test(test_dist),
		cmocka_unit_test(test_caches),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_whitespace),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_exact_message),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_long_token_is_truncated),
		cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
