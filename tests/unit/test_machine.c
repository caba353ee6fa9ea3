/* SPDX-License-Identifier: BSD-3-Clause */
/* Machine accessors, exercised on synthetic machines whose answers follow from the description. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static nk_machine *load(const char *desc)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	int rc = nk_machine_load_synthetic(desc, &m, &err);
	if (rc)
		fail_msg("\"%s\": %d %s", desc, rc, err.message);
	return m;
}

static void expect_neighbors(const nk_machine *m, int node, const int *want, int n)
{
	int got[16];
	int k = nk_machine_neighbors(m, node, got, 16);
	if (k != n)
		fail_msg("neighbors of %d: %d nodes, want %d", node, k, n);
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("neighbors of %d: [%d] is %d, want %d", node, i, got[i], want[i]);
}

static void test_neighbors_by_distance(void **state)
{
	/* from node 0: node 2 at 20, node 3 at 20 (tie -> id), node 1 at 30 */
	nk_machine *m = load("nodes=4 dist=10,30,20,20/30,10,20,20/20,20,10,30/20,20,30,10");

	(void)state;
	expect_neighbors(m, 0, (const int[]){ 0, 2, 3, 1 }, 4);
	expect_neighbors(m, 1, (const int[]){ 1, 2, 3, 0 }, 4);
	expect_neighbors(m, 3, (const int[]){ 3, 0, 1, 2 }, 4);
	nk_machine_free(m);
}

static void test_neighbors_skip_memoryless(void **state)
{
	nk_machine *m = load("nodes=4 memless=2 dist=10,30,20,20/30,10,20,20/20,20,10,30/20,20,30,10");

	(void)state;
	expect_neighbors(m, 0, (const int[]){ 0, 3, 1 }, 3);
	/* a memoryless node is not its own first neighbour: it has nothing to give */
	expect_neighbors(m, 2, (const int[]){ 0, 1, 3 }, 3);
	nk_machine_free(m);
}

static void test_neighbors_ties_by_id_sparse(void **state)
{
	nk_machine *m = load("nodes=4 ids=2,5,7,9 dist=10:20");

	(void)state;
	expect_neighbors(m, 7, (const int[]){ 7, 2, 5, 9 }, 4);
	expect_neighbors(m, 9, (const int[]){ 9, 2, 5, 7 }, 4);
	nk_machine_free(m);
}

static void test_neighbors_asymmetric_rows(void **state)
{
	/* row = from.  Read by columns, node 0 would see node 2 (35) before node 1 (40). */
	nk_machine *m = load("nodes=3 dist=10,20,30/40,10,50/35,70,10");

	(void)state;
	expect_neighbors(m, 0, (const int[]){ 0, 1, 2 }, 3);
	expect_neighbors(m, 1, (const int[]){ 1, 0, 2 }, 3);
	expect_neighbors(m, 2, (const int[]){ 2, 0, 1 }, 3);
	assert_int_equal(nk_machine_distance(m, 2, 0), 35);
	assert_int_equal(nk_machine_distance(m, 0, 2), 30);
	assert_int_equal(nk_machine_distance(m, 1, 2), 50);
	assert_int_equal(nk_machine_distance(m, 2, 1), 70);
	nk_machine_free(m);
}

/*
 * @p desc's machine with its distance matrix replaced by @p dist (JSON), through a machine file: what
 * firmware may report, which a synthetic description refuses (a remote distance below the local one).
 */
static nk_machine *load_with_distances(const char *desc, const char *dist)
{
	nk_machine *m = load(desc), *out = NULL;
	char *json = NULL;
	nk_error err = { 0 };

	assert_int_equal(nk_machine_to_json(m, 0, &json), 0);
	nk_machine_free(m);
	char *key = strstr(json, "\"distances\"");
	assert_non_null(key);
	char *a = strchr(key, '['), *e = a;
	int depth = 0;
	do {
		depth += *e == '[';
		depth -= *e == ']';
		e++;
	} while (depth && *e);
	size_t len = strlen(json), nd = strlen(dist);
	char *buf = malloc(len + nd + 1);
	assert_non_null(buf);
	memcpy(buf, json, (size_t)(a - json));
	memcpy(buf + (a - json), dist, nd);
	strcpy(buf + (a - json) + nd, e);
	if (nk_machine_load_buffer(buf, strlen(buf), &out, &err))
		fail_msg("distances %s: %s", dist, err.message);
	free(buf);
	free(json);
	return out;
}

static void test_neighbors_self_first(void **state)
{
	/* the header promises the node itself first when it has memory, even
	 * when firmware reports a remote distance below the local one (a
	 * synthetic description refuses that: test_synthetic_dist_below) */
	nk_machine *m = load_with_distances("nodes=3 dist=10:20", "[[20,10,30],[10,20,30],[30,30,10]]");

	(void)state;
	expect_neighbors(m, 0, (const int[]){ 0, 1, 2 }, 3);
	expect_neighbors(m, 1, (const int[]){ 1, 0, 2 }, 3);
	nk_machine_free(m);
}

/* A description with a remote distance below the local one, or no memory anywhere, is refused. */
static void test_synthetic_dist_below(void **state)
{
	static const char *const bad[] = { "nodes=2 dist=10:9", "nodes=3 dist=20,10,30/10,20,30/30,30,10",
					   "nodes=2 dist=10,21/9,10", "nodes=2 cores=1 memless=0,1" };
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		nk_machine *m = NULL;
		nk_error err = { 0 };
		assert_int_equal(nk_machine_load_synthetic(bad[i], &m, &err), NK_EPARSE);
		assert_null(m);
		assert_true(strstr(err.message, "below its distance to itself") || strstr(err.message, "every node is memless"));
	}
	nk_machine_free(load("nodes=2 dist=10:10")); /* equal: allowed */
}

static void test_neighbors_capacity(void **state)
{
	nk_machine *m = load("nodes=4 dist=10:20");
	int got[4] = { -1, -1, -1, -1 };

	(void)state;
	assert_int_equal(nk_machine_neighbors(m, 1, NULL, 0), 4);
	assert_int_equal(nk_machine_neighbors(m, 1, got, 2), 4);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 0);
	assert_int_equal(got[2], -1);
	assert_int_equal(nk_machine_neighbors(m, 1, NULL, 1), NK_EINVAL);
	assert_int_equal(nk_machine_neighbors(m, 4, got, 4), NK_ENODEV);
	assert_int_equal(nk_machine_neighbors(m, -1, got, 4), NK_ENODEV);
	assert_int_equal(nk_machine_neighbors(NULL, 0, got, 4), NK_EINVAL);
	nk_machine_free(m);
}

static void test_numa_factor(void **state)
{
	nk_machine *m = load("nodes=2 dist=10,21/31,10");
	double f = 0, v = 0;

	(void)state;
	/* no measurement: distance / 10 */
	assert_int_equal(nk_machine_numa_factor(m, 0, 1, &f), 0);
	assert_true(fabs(f - 2.1) < 1e-12);
	assert_int_equal(nk_machine_numa_factor(m, 1, 0, &f), 0);
	assert_true(fabs(f - 3.1) < 1e-12);
	assert_int_equal(nk_machine_numa_factor(m, 0, 0, &f), 0);
	assert_true(fabs(f - 1.0) < 1e-12);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 1, &v), NK_ENODATA);

	/* a measured value takes over for that pair only */
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 1, 1.7), 0);
	assert_int_equal(nk_machine_numa_factor(m, 0, 1, &f), 0);
	assert_true(f == 1.7);
	assert_int_equal(nk_machine_numa_factor(m, 1, 0, &f), 0);
	assert_true(fabs(f - 3.1) < 1e-12);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 1, &v), 0);
	assert_true(v == 1.7);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, 1, 0, &v), NK_ENODATA);

	/* latency measurements do not change the factor */
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 1, 0, 250.0), 0);
	assert_int_equal(nk_machine_numa_factor(m, 1, 0, &f), 0);
	assert_true(fabs(f - 3.1) < 1e-12);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 1, 0, &v), 0);
	assert_true(v == 250.0);

	assert_int_equal(nk_machine_numa_factor(m, 0, 2, &f), NK_ENODEV);
	assert_int_equal(nk_machine_numa_factor(m, 0, 1, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_numa_factor(NULL, 0, 1, &f), NK_EINVAL);
	nk_machine_free(m);
}

static void test_set_matrix_rejects(void **state)
{
	nk_machine *m = load("nodes=2");
	double v = 0;

	(void)state;
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, NAN), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, INFINITY), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, 0.0), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, -5.0), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_KIND_COUNT, 0, 1, 1.0), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, -1, 0, 1, 1.0), NK_EINVAL);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 0, 7, 1.0), NK_ENODEV);
	assert_int_equal(nk_machine_set_matrix(NULL, NK_MATRIX_BANDWIDTH_MBS, 0, 1, 1.0), NK_EINVAL);
	/* none of the rejected calls stored anything */
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, &v), NK_ENODATA);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 0, 1, &v), NK_ENODATA);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_KIND_COUNT, 0, 1, &v), NK_EINVAL);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 0, 1, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 9, 1, &v), NK_ENODEV);
	nk_machine_free(m);
}

static void test_matrix_sparse_ids(void **state)
{
	nk_machine *m = load("nodes=3 ids=1,4,6");
	double v = 0;

	(void)state;
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 6, 1, 12000.5), 0);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 6, 1, &v), 0);
	assert_true(v == 12000.5);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 1, 6, &v), NK_ENODATA);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 2, 1, 1.0), NK_ENODEV);
	nk_machine_free(m);
}

static void test_sparse_ids(void **state)
{
	nk_machine *m = load("nodes=3 ids=1,4,6 cores=2");
	int cpus[4];

	(void)state;
	assert_int_equal(nk_machine_num_nodes(m), 3);
	assert_int_equal(nk_machine_node_id(m, 0), 1);
	assert_int_equal(nk_machine_node_id(m, 2), 6);
	assert_int_equal(nk_machine_node_id(m, 3), NK_EINVAL);
	assert_int_equal(nk_machine_node_id(m, -1), NK_EINVAL);
	assert_int_equal(nk_machine_node_index(m, 6), 2);
	assert_int_equal(nk_machine_node_index(m, 0), NK_ENODEV);
	assert_int_equal(nk_machine_node_index(m, 5), NK_ENODEV);
	/* no id in 0..n-1 is assumed: node 0 and node 2 do not exist */
	assert_int_equal(nk_machine_node_flags(m, 0), NK_ENODEV);
	assert_int_equal(nk_machine_node_flags(m, 2), NK_ENODEV);
	assert_int_equal(nk_machine_node_cpus(m, 4, cpus, 4), 2);
	assert_int_equal(cpus[0], 2);
	assert_int_equal(cpus[1], 3);
	assert_int_equal(nk_machine_distance(m, 1, 6), 20);
	assert_int_equal(nk_machine_distance(m, 0, 6), NK_ENODEV);
	assert_int_equal(nk_machine_cpu_id(m, 5), 5);
	assert_int_equal(nk_machine_cpu_id(m, 6), NK_EINVAL);
	nk_machine_free(m);
}

static void test_count_capacity(void **state)
{
	nk_machine *m = load("nodes=2 cores=4 smt=2 hugepages=2M,1G l3=4M");
	int buf[8];
	uint64_t sizes[2] = { 0, 0 };

	(void)state;
	for (int i = 0; i < 8; i++)
		buf[i] = -1;
	/* cap 0 sizes, cap < count writes cap entries and still returns the count */
	assert_int_equal(nk_machine_node_cpus(m, 1, NULL, 0), 8);
	assert_int_equal(nk_machine_node_cpus(m, 1, buf, 3), 8);
	assert_int_equal(buf[0], 8);
	assert_int_equal(buf[2], 10);
	assert_int_equal(buf[3], -1);
	assert_int_equal(nk_machine_node_cpus(m, 1, NULL, 3), NK_EINVAL);

	assert_int_equal(nk_machine_allowed_cpus(m, NULL, 0), 16);
	assert_int_equal(nk_machine_allowed_cpus(m, buf, 2), 16);
	assert_int_equal(buf[1], 1);
	assert_int_equal(nk_machine_allowed_nodes(m, buf, 1), 2);
	assert_int_equal(buf[0], 0);
	assert_int_equal(nk_machine_allowed_cpus(m, NULL, 1), NK_EINVAL);

	assert_int_equal(nk_machine_cache_cpus(m, 1, NULL, 0), 8);
	assert_int_equal(nk_machine_cache_cpus(m, 1, buf, 1), 8);
	assert_int_equal(buf[0], 8);

	assert_int_equal(nk_machine_huge_page_sizes(m, NULL, 0), 2);
	assert_int_equal(nk_machine_huge_page_sizes(m, sizes, 1), 2);
	assert_int_equal(sizes[0], 2u << 20);
	assert_int_equal(sizes[1], 0);
	assert_int_equal(nk_machine_huge_page_sizes(m, NULL, 1), NK_EINVAL);
	nk_machine_free(m);
}

static void test_enodev_einval(void **state)
{
	nk_machine *m = load("nodes=2 cores=2");
	uint64_t t;
	nk_cpu_info ci;
	nk_cache_info cache;
	nk_kernel_settings ks;

	(void)state;
	assert_int_equal(nk_machine_node_flags(m, 2), NK_ENODEV);
	assert_int_equal(nk_machine_node_flags(m, -1), NK_ENODEV);
	assert_int_equal(nk_machine_node_memory(m, 2, &t, &t), NK_ENODEV);
	assert_int_equal(nk_machine_node_memory(m, 1, NULL, NULL), 0);
	assert_int_equal(nk_machine_node_cpus(m, 2, NULL, 0), NK_ENODEV);
	assert_int_equal(nk_machine_distance(m, 2, 0), NK_ENODEV);
	assert_int_equal(nk_machine_distance(m, 0, 2), NK_ENODEV);
	assert_int_equal(nk_machine_wi_weight(m, 2), NK_ENODEV);
	assert_int_equal(nk_machine_cpu_info(m, 4, &ci), NK_ENODEV);
	assert_int_equal(nk_machine_cpu_info(m, -1, &ci), NK_ENODEV);
	assert_int_equal(nk_machine_cpu_info(m, 0, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_cpu_id(m, -1), NK_EINVAL);
	assert_int_equal(nk_machine_cache(m, 0, &cache), NK_EINVAL); /* no caches described */
	assert_int_equal(nk_machine_cache_cpus(m, 0, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_kernel_settings(m, NULL), NK_EINVAL);

	assert_int_equal(nk_machine_num_nodes(NULL), NK_EINVAL);
	assert_int_equal(nk_machine_num_cpus(NULL), NK_EINVAL);
	assert_int_equal(nk_machine_num_cores(NULL), NK_EINVAL);
	assert_int_equal(nk_machine_num_caches(NULL), NK_EINVAL);
	assert_int_equal(nk_machine_node_id(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_node_index(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_node_flags(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_node_memory(NULL, 0, &t, &t), NK_EINVAL);
	assert_int_equal(nk_machine_node_cpus(NULL, 0, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_distance(NULL, 0, 0), NK_EINVAL);
	assert_int_equal(nk_machine_cpu_id(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_cpu_info(NULL, 0, &ci), NK_EINVAL);
	assert_int_equal(nk_machine_allowed_cpus(NULL, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_allowed_nodes(NULL, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_kernel_settings(NULL, &ks), NK_EINVAL);
	assert_int_equal(nk_machine_wi_weight(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_machine_source(NULL, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_page_size(NULL), 0);
	nk_machine_free(NULL);
	nk_machine_free(m);
}

static void test_cores_and_memory(void **state)
{
	nk_machine *m = load("nodes=2 cores=3 smt=4 mem=3G");
	nk_cpu_info ci;
	uint64_t total, freeb;

	(void)state;
	assert_int_equal(nk_machine_num_cpus(m), 24);
	assert_int_equal(nk_machine_num_cores(m), 6);
	/* cpu 13 = node 1 (cpus 12..23), core 0 of that node (machine-wide 3), thread 1 */
	assert_int_equal(nk_machine_cpu_info(m, 13, &ci), 0);
	assert_int_equal(ci.node, 1);
	assert_int_equal(ci.core, 3);
	assert_int_equal(nk_machine_cpu_info(m, 23, &ci), 0);
	assert_int_equal(ci.core, 5);
	assert_int_equal(nk_machine_node_memory(m, 1, &total, &freeb), 0);
	assert_int_equal(total, 3ULL << 30);
	assert_int_equal(freeb, 3ULL << 30);
	nk_machine_free(m);
}

static void test_strerror_version(void **state)
{
	(void)state;
	assert_string_equal(nk_version(), NK_VERSION_STRING);
	assert_string_equal(nk_strerror(NK_OK), "success");
	assert_string_equal(nk_strerror(NK_ENODEV), "no such node or cpu");
	assert_string_equal(nk_strerror(NK_EVERSION), "unsupported format version");
	assert_string_equal(nk_strerror(12345), "unknown error");
	for (int c = NK_EPERM; c <= NK_OK; c++) {
		assert_non_null(nk_strerror(c));
		assert_string_not_equal(nk_strerror(c), "unknown error");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_neighbors_by_distance),
		cmocka_unit_test(test_neighbors_skip_memoryless),
		cmocka_unit_test(test_neighbors_ties_by_id_sparse),
		cmocka_unit_test(test_neighbors_asymmetric_rows),
		cmocka_unit_test(test_neighbors_self_first),
		cmocka_unit_test(test_synthetic_dist_below),
		cmocka_unit_test(test_neighbors_capacity),
		cmocka_unit_test(test_numa_factor),
		cmocka_unit_test(test_set_matrix_rejects),
		cmocka_unit_test(test_matrix_sparse_ids),
		cmocka_unit_test(test_sparse_ids),
		cmocka_unit_test(test_count_capacity),
		cmocka_unit_test(test_enodev_einval),
		cmocka_unit_test(test_cores_and_memory),
		cmocka_unit_test(test_strerror_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
