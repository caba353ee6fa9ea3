/* SPDX-License-Identifier: BSD-3-Clause */
/* Machine files: exact round trips, strict validation, and corrupt input that must never crash. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static char *to_json(const nk_machine *m, unsigned flags)
{
	char *s = NULL;
	assert_int_equal(nk_machine_to_json(m, flags, &s), 0);
	assert_non_null(s);
	return s;
}

static nk_machine *load_text(const char *text)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	if (nk_machine_load_buffer(text, strlen(text), &m, &err))
		fail_msg("load: %s", err.message);
	return m;
}

/* Replace the first occurrence of @p from by @p to (which must be there); malloc'ed result. */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *p = strstr(text, from);
	if (!p)
		fail_msg("\"%s\" not found in test input", from);
	size_t a = (size_t)(p - text), lf = strlen(from), lt = strlen(to), rest = strlen(p + lf);
	char *s = malloc(a + lt + rest + 1);
	assert_non_null(s);
	memcpy(s, text, a);
	memcpy(s + a, to, lt);
	memcpy(s + a + lt, p + lf, rest + 1);
	return s;
}

/* A machine with everything the format can hold. */
static const char rich_desc[] = "nodes=4 ids=0,2,5,9 cores=2 smt=2 packages=2 memless=3 cpuless=2 "
				"dist=10,21,31,41/22,10,32,42/33,23,10,43/44,34,24,10 l1=32K l2=1M l3=16M "
				"pagesize=4096 hugepages=2M,1G numa_balancing=1 thp=madvise wi=1,2,3,4 "
				"allowed_cpus=0-5 allowed_nodes=0,2,5";

static nk_machine *rich_machine(void)
{
	nk_machine *m = nk_test_synth(rich_desc);
	/* measured matrices with holes, and doubles that only 17 digits carry */
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 0, 80.5), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 0, 9, 0.1), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 9, 0, 1.0 / 3.0), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, 5, 2, 1.0), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 2, 5, 1.7976931348623157e308), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 5, 5, 4.9406564584124654e-324), 0);
	return m;
}

/* The text of the file machine: as the original, except that it now comes from @p detail. */
static char *as_file(const char *text, const char *desc, const char *detail)
{
	char from[1024], to[1024];
	char *a = replace(text, "\"kind\": \"synthetic\"", "\"kind\": \"file\"");
	snprintf(from, sizeof from, "\"detail\": \"%s\"", desc);
	snprintf(to, sizeof to, "\"detail\": \"%s\"", detail);
	char *b = replace(a, from, to);
	free(a);
	return b;
}

static void test_round_trip(void **state)
{
	nk_machine *m = rich_machine(), *m2, *m3;
	char *j1 = to_json(m, 0), *j2, *j3, *want;
	const char *detail;

	(void)state;
	m2 = load_text(j1);
	j2 = to_json(m2, 0);
	/* identical text but for the source */
	want = as_file(j1, rich_desc, "<buffer>");
	assert_string_equal(j2, want);
	/* and a file machine reproduces itself exactly */
	m3 = load_text(j2);
	j3 = to_json(m3, 0);
	assert_string_equal(j3, j2);
	assert_int_equal(nk_machine_source(m2, &detail), NK_SOURCE_FILE);
	assert_string_equal(detail, "<buffer>");

	free(j1);
	free(j2);
	free(j3);
	free(want);
	nk_machine_free(m);
	nk_machine_free(m2);
	nk_machine_free(m3);
}

static void test_round_trip_compact(void **state)
{
	nk_machine *m = rich_machine(), *m2;
	char *j1 = to_json(m, NK_JSON_COMPACT), *j2;

	(void)state;
	assert_null(strchr(j1, '\n'));
	m2 = load_text(j1);
	j2 = to_json(m2, NK_JSON_COMPACT);
	/* compact text: the source differs, the rest is byte for byte the same */
	const char *tail1 = strstr(j1, "\"page_size\""), *tail2 = strstr(j2, "\"page_size\"");
	assert_non_null(tail1);
	assert_non_null(tail2);
	assert_string_equal(tail1, tail2);
	assert_non_null(strstr(j2, "\"source\":{\"kind\":\"file\",\"detail\":\"<buffer>\"}"));
	free(j1);
	free(j2);
	nk_machine_free(m);
	nk_machine_free(m2);
}

static void test_loaded_values(void **state)
{
	nk_machine *m0 = rich_machine();
	char *j = to_json(m0, 0);
	nk_machine *m = load_text(j);
	double v = 0;
	nk_kernel_settings ks;
	nk_cpu_info ci;
	nk_cache_info cache;
	uint64_t total, huge[2];
	int ids[16];

	(void)state;
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 0, 9, &v), 0);
	assert_true(v == 0.1);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 9, 0, &v), 0);
	assert_true(v == 1.0 / 3.0);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 5, 2, &v), 0);
	assert_true(v == 1.0);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 2, 5, &v), 0);
	assert_true(v == 1.7976931348623157e308);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 5, 5, &v), 0);
	assert_true(v == 4.9406564584124654e-324);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 2, 2, &v), NK_ENODATA);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 0, &v), NK_ENODATA);

	assert_int_equal(nk_machine_distance(m, 9, 5), 24);
	assert_int_equal(nk_machine_distance(m, 5, 9), 43);
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.numa_balancing, 1);
	assert_int_equal(ks.thp_enabled, NK_THP_MADVISE);
	assert_int_equal(ks.thp_defrag, NK_THP_UNKNOWN);
	assert_int_equal(ks.weighted_interleave, 1);
	assert_int_equal(nk_machine_wi_weight(m, 9), 4);
	assert_int_equal(nk_machine_node_flags(m, 9), NK_NODE_HAS_CPUS);
	assert_int_equal(nk_machine_node_flags(m, 5), NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED);
	assert_int_equal(nk_machine_node_memory(m, 9, &total, NULL), 0);
	assert_int_equal(total, 0);
	assert_int_equal(nk_machine_allowed_cpus(m, ids, 16), 6);
	assert_int_equal(ids[5], 5);
	assert_int_equal(nk_machine_cpu_info(m, 9, &ci), 0);
	assert_int_equal(ci.node, 9);
	assert_int_equal(ci.core, 4);
	assert_int_equal(ci.package, 1);
	assert_int_equal(ci.allowed, 0);
	assert_int_equal(nk_machine_num_cores(m), 6);
	assert_int_equal(nk_machine_num_caches(m), 6 + 6 + 3);
	assert_int_equal(nk_machine_cache(m, 14, &cache), 0);
	assert_int_equal(cache.level, 3);
	assert_int_equal(cache.line_size, 64);
	assert_int_equal(nk_machine_huge_page_sizes(m, huge, 2), 2);
	assert_int_equal(huge[1], 1u << 30);
	free(j);
	nk_machine_free(m);
	nk_machine_free(m0);
}

static const char minimal[] = "{\"format\":\"numakit-machine\",\"version\":1,"
			      "\"nodes\":[{\"id\":3,\"mem_total\":1024}],\"distances\":[[10]],"
			      "\"cpus\":[{\"id\":7,\"node\":3,\"core\":0}],\"future_member\":{\"x\":[1,2]}}";

static void test_minimal_file(void **state)
{
	nk_machine *m = load_text(minimal);
	nk_kernel_settings ks;
	nk_cpu_info ci;
	uint64_t total, freeb;
	int ids[2];

	(void)state;
	/* documented defaults for what a file leaves out; unknown members ignored */
	assert_int_equal(nk_machine_page_size(m), 4096);
	assert_int_equal(nk_machine_huge_page_sizes(m, NULL, 0), 0);
	assert_int_equal(nk_machine_node_memory(m, 3, &total, &freeb), 0);
	assert_int_equal(total, 1024);
	assert_int_equal(freeb, 1024);
	assert_int_equal(nk_machine_cpu_info(m, 7, &ci), 0);
	assert_int_equal(ci.package, -1);
	assert_int_equal(ci.allowed, 1);
	assert_int_equal(nk_machine_allowed_nodes(m, ids, 2), 1);
	assert_int_equal(ids[0], 3);
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.numa_balancing, -1);
	assert_int_equal(ks.thp_enabled, NK_THP_UNKNOWN);
	assert_int_equal(ks.weighted_interleave, -1);
	assert_int_equal(nk_machine_num_caches(m), 0);
	nk_machine_free(m);
}

static void test_cpu_on_offline_node(void **state)
{
	/* an online cpu whose node is offline has node -1 (nk_cpu_info) and round-trips */
	static const char text[] =
		"{\"format\":\"numakit-machine\",\"version\":1,"
		"\"nodes\":[{\"id\":1,\"mem_total\":4096}],\"distances\":[[10]],"
		"\"cpus\":[{\"id\":0,\"node\":-1,\"core\":0},{\"id\":1,\"node\":1,\"core\":1}]}";
	nk_machine *m = load_text(text), *m2;
	nk_cpu_info ci;
	char *j1, *j2;

	(void)state;
	assert_int_equal(nk_machine_num_cpus(m), 2);
	assert_int_equal(nk_machine_cpu_info(m, 0, &ci), 0);
	assert_int_equal(ci.node, -1);
	assert_int_equal(nk_machine_node_cpus(m, 1, NULL, 0), 1);
	j1 = to_json(m, NK_JSON_COMPACT);
	assert_non_null(strstr(j1, "{\"id\":0,\"node\":-1,\"core\":0,\"package\":-1}"));
	m2 = load_text(j1);
	j2 = to_json(m2, NK_JSON_COMPACT);
	assert_string_equal(j1, j2);
	free(j1);
	free(j2);
	nk_machine_free(m);
	nk_machine_free(m2);
}

static void test_file_node_order(void **state)
{
	/* nodes listed 5 then 1: every matrix follows that order, row = from */
	static const char text[] =
		"{\"format\":\"numakit-machine\",\"version\":1,"
		"\"nodes\":[{\"id\":5,\"mem_total\":1},{\"id\":1,\"mem_total\":1}],"
		"\"distances\":[[10,21],[31,11]],"
		"\"cpus\":[{\"id\":1,\"node\":5,\"core\":0},{\"id\":0,\"node\":1,\"core\":1}],"
		"\"measured\":{\"latency_ns\":[[100,200],[null,120]]}}";
	nk_machine *m = load_text(text);
	double v;

	(void)state;
	assert_int_equal(nk_machine_node_id(m, 0), 1);
	assert_int_equal(nk_machine_distance(m, 5, 1), 21);
	assert_int_equal(nk_machine_distance(m, 1, 5), 31);
	assert_int_equal(nk_machine_distance(m, 1, 1), 11);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 5, 1, &v), 0);
	assert_true(v == 200);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 1, 1, &v), 0);
	assert_true(v == 120);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 1, 5, &v), NK_ENODATA);
	nk_machine_free(m);
}

/* A compact, valid file by hand; each corrupt case below edits one thing in it. */
static const char base[] =
	"{\"format\":\"numakit-machine\",\"version\":1,\"numakit_version\":\"0.1.0\","
	"\"source\":{\"kind\":\"synthetic\",\"detail\":\"x\"},\"page_size\":4096,\"huge_page_sizes\":[2097152],"
	"\"kernel\":{\"numa_balancing\":1,\"thp_enabled\":\"always\",\"thp_defrag\":\"madvise\","
	"\"weighted_interleave\":false},"
	"\"nodes\":[{\"id\":0,\"cpus\":\"0-1\",\"mem_total\":1073741824,\"mem_free\":900000000,\"has_cpus\":true,"
	"\"has_memory\":true,\"mem_allowed\":true,\"cpus_allowed\":true,\"wi_weight\":null},"
	"{\"id\":1,\"cpus\":\"2-3\",\"mem_total\":2048,\"mem_free\":1024,\"has_cpus\":true,\"has_memory\":true,"
	"\"mem_allowed\":true,\"cpus_allowed\":true,\"wi_weight\":null}],"
	"\"distances\":[[10,21],[21,10]],"
	"\"cpus\":[{\"id\":0,\"node\":0,\"core\":0,\"package\":0},{\"id\":1,\"node\":0,\"core\":0,\"package\":0},"
	"{\"id\":2,\"node\":1,\"core\":1,\"package\":0},{\"id\":3,\"node\":1,\"core\":1,\"package\":0}],"
	"\"caches\":[{\"level\":1,\"type\":\"data\",\"size\":32768,\"line_size\":64,\"ways\":8,\"cpus\":\"0-1\"}],"
	"\"allowed\":{\"cpus\":\"0-3\",\"nodes\":\"0-1\"},"
	"\"measured\":{\"latency_ns\":[[80.5,null],[null,81]],\"bandwidth_mbs\":null,\"numa_factor\":null}}";

static void test_base_is_valid(void **state)
{
	nk_machine *m = load_text(base);
	nk_kernel_settings ks;
	nk_cache_info c;

	(void)state;
	assert_int_equal(nk_machine_num_cpus(m), 4);
	assert_int_equal(nk_machine_num_cores(m), 2);
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.thp_enabled, NK_THP_ALWAYS);
	assert_int_equal(ks.thp_defrag, NK_THP_MADVISE);
	assert_int_equal(ks.weighted_interleave, 0);
	assert_int_equal(nk_machine_cache(m, 0, &c), 0);
	assert_int_equal(c.ways, 8);
	assert_int_equal(c.type, NK_CACHE_DATA);
	nk_machine_free(m);
}

struct corrupt {
	const char *from, *to;
	int code;
	const char *message; /* after "<buffer>: " */
};

static const struct corrupt corrupt_cases[] = {
	{ "\"version\":1", "\"version\":2", NK_EVERSION, "version: version 2 is not supported (this library reads 1)" },
	{ "\"version\":1", "\"version\":0", NK_EVERSION, "version: version 0 is not supported" },
	{ "\"version\":1", "\"version\":\"1\"", NK_EPARSE, "version: expected an integer, found a string" },
	{ "\"version\":1,", "", NK_EPARSE, "version: missing" },
	{ "\"format\":\"numakit-machine\",", "", NK_EPARSE, "format: missing" },
	{ "numakit-machine", "numakit-plan", NK_EPARSE, "format: expected \"numakit-machine\"" },
	{ "\"numakit_version\":\"0.1.0\"", "\"numakit_version\":5", NK_EPARSE, "numakit_version: expected a string" },
	{ "\"kind\":\"synthetic\"", "\"kind\":\"bogus\"", NK_EPARSE, "source.kind: expected live" },
	{ "\"detail\":\"x\"", "\"detail\":[]", NK_EPARSE, "source.detail: expected a string, found an array" },
	{ "\"page_size\":4096", "\"page_size\":3000", NK_EPARSE, "page_size: 3000 is not a power of two" },
	{ "\"page_size\":4096", "\"page_size\":0", NK_EPARSE, "page_size: 0 is out of range" },
	{ "[2097152]", "[2097153]", NK_EPARSE, "huge_page_sizes[0]: 2097153 is not a multiple of 1024" },
	{ "[2097152]", "\"2M\"", NK_EPARSE, "huge_page_sizes: expected an array, found a string" },
	{ "\"numa_balancing\":1", "\"numa_balancing\":9", NK_EPARSE, "kernel.numa_balancing: 9 is out of range 0..3" },
	{ "\"thp_enabled\":\"always\"", "\"thp_enabled\":5", NK_EPARSE,
	  "kernel.thp_enabled: expected a string or null, found an integer" },
	{ "\"thp_defrag\":\"madvise\"", "\"thp_defrag\":\"sometimes\"", NK_EPARSE,
	  "kernel.thp_defrag: \"sometimes\" is not always, madvise, never, defer or defer+madvise" },
	{ "\"weighted_interleave\":false", "\"weighted_interleave\":1", NK_EPARSE,
	  "kernel.weighted_interleave: expected true or false, found an integer" },
	{ "\"kernel\":{", "\"kernel\":[],\"k\":{", NK_EPARSE, "kernel: expected an object, found an array" },

	{ "{\"id\":0,\"cpus\"", "{\"id\":\"0\",\"cpus\"", NK_EPARSE, "nodes[0].id: expected an integer, found a string" },
	{ "{\"id\":0,\"cpus\"", "{\"id\":-1,\"cpus\"", NK_EPARSE, "nodes[0].id: -1 is out of range 0..65535" },
	{ "{\"id\":0,\"cpus\"", "{\"cpus\"", NK_EPARSE, "nodes[0].id: missing" },
	{ "{\"id\":1,\"cpus\":\"2-3\"", "{\"id\":0,\"cpus\":\"2-3\"", NK_EPARSE, "nodes[1].id: 0 is listed twice" },
	{ "\"cpus\":\"2-3\"", "\"cpus\":\"0-\"", NK_EPARSE, "nodes[1].cpus: bad list \"0-\"" },
	{ "\"cpus\":\"2-3\"", "\"cpus\":23", NK_EPARSE, "nodes[1].cpus: expected a list string" },
	{ "\"cpus\":\"2-3\"", "\"cpus\":\"2\"", NK_EPARSE,
	  "nodes[1].cpus: \"2\" differs from the cpus of node 1 in \"cpus\" (\"2-3\")" },
	{ "\"mem_total\":2048", "\"mem_total\":-1", NK_EPARSE, "nodes[1].mem_total: -1 is out of range" },
	{ "\"mem_total\":2048", "\"mem_total\":2048.0", NK_EPARSE,
	  "nodes[1].mem_total: expected an integer, found a real number" },
	{ "\"mem_free\":1024", "\"mem_free\":4096", NK_EPARSE, "nodes[1].mem_free: 4096 is out of range 0..2048" },
	{ "\"has_cpus\":true", "\"has_cpus\":\"yes\"", NK_EPARSE,
	  "nodes[0].has_cpus: expected true or false, found a string" },
	{ "\"has_cpus\":true", "\"has_cpus\":false", NK_EPARSE, "nodes[0].has_cpus: is false, but the cpus say otherwise" },
	{ "\"mem_allowed\":true", "\"mem_allowed\":false", NK_EPARSE,
	  "nodes[0].mem_allowed: is false, but the allowed sets say otherwise" },
	{ "\"cpus_allowed\":true", "\"cpus_allowed\":null", NK_EPARSE, "nodes[0].cpus_allowed: expected true or false" },
	{ "\"wi_weight\":null", "\"wi_weight\":300", NK_EPARSE, "nodes[0].wi_weight: 300 is out of range 1..255" },
	{ "\"nodes\":[{", "\"nodes\":[7,{", NK_EPARSE, "nodes[0]: expected an object, found an integer" },
	{ "\"nodes\":", "\"nodes\":{},\"x\":", NK_EPARSE, "nodes: expected an array, found an object" },

	{ "[[10,21],[21,10]]", "[[10,21]]", NK_EPARSE, "distances: expected 2 rows (one per node), found 1" },
	{ "[[10,21],[21,10]]", "[[10,21],[21]]", NK_EPARSE, "distances[1]: expected 2 values, found 1" },
	{ "[[10,21],[21,10]]", "[[10,21],21]", NK_EPARSE, "distances[1]: expected an array, found an integer" },
	{ "[[10,21],[21,10]]", "[[10,21],[21,0]]", NK_EPARSE, "distances[1][1]: 0 is out of range 1..1000" },
	{ "[[10,21],[21,10]]", "[[10,21],[21,1.5]]", NK_EPARSE,
	  "distances[1][1]: expected an integer, found a real number" },
	{ "\"distances\":", "\"dist\":", NK_EPARSE, "distances: missing" },

	{ "{\"id\":3,\"node\":1", "{\"id\":3,\"node\":7", NK_EPARSE, "cpus[3].node: no node 7 in \"nodes\"" },
	{ "{\"id\":3,\"node\":1", "{\"id\":2,\"node\":1", NK_EPARSE, "cpus[3].id: 2 is listed twice" },
	{ "{\"id\":3,\"node\":1", "{\"id\":3,\"node\":-2", NK_EPARSE, "cpus[3].node: -2 is out of range -1..65535" },
	{ "\"core\":0,\"package\":0}", "\"package\":0}", NK_EPARSE, "cpus[0].core: missing" },
	{ "\"core\":0,\"package\":0}", "\"core\":0,\"package\":-2}", NK_EPARSE, "cpus[0].package: -2 is out of range" },
	{ "{\"id\":2,\"node\":1,\"core\":1", "{\"id\":2,\"node\":1,\"core\":0", NK_EPARSE,
	  "cpus: a core number is shared by cpus of different nodes or packages" },
	{ "\"cpus\":[{", "\"cpus\":[{},{", NK_EPARSE, "cpus[0].id: missing" },

	{ "\"type\":\"data\"", "\"type\":\"l1\"", NK_EPARSE, "caches[0].type: expected \"unified\", \"data\" or \"instruction\"" },
	{ "\"level\":1", "\"level\":0", NK_EPARSE, "caches[0].level: 0 is out of range 1..9" },
	{ "\"ways\":8,\"cpus\":\"0-1\"", "\"ways\":8,\"cpus\":\"0-9\"", NK_EPARSE, "caches[0].cpus: no cpu 4 in \"cpus\"" },
	{ "\"ways\":8,\"cpus\":\"0-1\"", "\"ways\":8,\"cpus\":\"\"", NK_EPARSE, "caches[0].cpus: a cache needs at least one cpu" },
	{ "\"ways\":8,", "", NK_EPARSE, "caches[0].ways: missing" },
	/* found by fuzz_machinefile: a missing list must not be dereferenced */
	{ "\"ways\":8,\"cpus\":\"0-1\"", "\"ways\":8", NK_EPARSE, "caches[0].cpus: missing" },
	{ "\"ways\":8,\"cpus\":\"0-1\"", "\"ways\":8,\"cpus\":[0]", NK_EPARSE,
	  "caches[0].cpus: expected a list string such as \"0-3,8\", found an array" },

	{ "\"cpus\":\"0-3\",\"nodes\"", "\"cpus\":\"0-5\",\"nodes\"", NK_EPARSE, "allowed.cpus: no cpu 4 in \"cpus\"" },
	{ "\"nodes\":\"0-1\"", "\"nodes\":\"0-2\"", NK_EPARSE, "allowed.nodes: no node 2 in \"nodes\"" },
	{ "\"nodes\":\"0-1\"", "\"nodes\":\"1-0\"", NK_EPARSE, "allowed.nodes: bad list \"1-0\"" },

	{ "[[80.5,null],[null,81]]", "[[80.5,null]]", NK_EPARSE, "measured.latency_ns: expected 2 rows (one per node), found 1" },
	{ "[[80.5,null],[null,81]]", "[[80.5,-1],[null,81]]", NK_EPARSE,
	  "measured.latency_ns[0][1]: -1 is not a positive measurement" },
	{ "[[80.5,null],[null,81]]", "[[80.5,\"x\"],[null,81]]", NK_EPARSE,
	  "measured.latency_ns[0][1]: expected a number or null, found a string" },
	{ "\"bandwidth_mbs\":null", "\"bandwidth_mbs\":5", NK_EPARSE,
	  "measured.bandwidth_mbs: expected an array, found an integer" },
	{ "\"measured\":{", "\"measured\":[],\"m\":{", NK_EPARSE, "measured: expected an object, found an array" },
};

static void test_corrupt_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof corrupt_cases / sizeof *corrupt_cases; i++) {
		const struct corrupt *c = &corrupt_cases[i];
		char *text = replace(base, c->from, c->to);
		nk_machine *sentinel = (nk_machine *)&sentinel, *m = sentinel;
		nk_error err = { 0 };
		char want[NK_ERROR_MSG_MAX];
		int rc = nk_machine_load_buffer(text, strlen(text), &m, &err);
		snprintf(want, sizeof want, "<buffer>: %s", c->message);
		if (rc != c->code || err.code != c->code || m != sentinel || strncmp(err.message, want, strlen(want)))
			fail_msg("case %zu (%s -> %s): rc %d, message \"%s\"; want %d, \"%s...\"", i, c->from, c->to, rc,
				 err.message, c->code, want);
		free(text);
	}
}

static void expect_syntax_error(const char *text, size_t len, const char *needle)
{
	nk_machine *sentinel = (nk_machine *)&sentinel, *m = sentinel;
	nk_error err = { 0 };
	int rc = nk_machine_load_buffer(text, len, &m, &err);
	if (rc != NK_EPARSE || m != sentinel || strncmp(err.message, "<buffer>", 8) || !strstr(err.message, needle))
		fail_msg("rc %d, message \"%s\"; want NK_EPARSE with \"%s\"", rc, err.message, needle);
}

static void test_syntax_errors(void **state)
{
	char *text;

	(void)state;
	expect_syntax_error("", 0, "<buffer>:1:0: ");
	expect_syntax_error("[]", 2, "<buffer>: expected a JSON object, found an array");
	expect_syntax_error("null", 4, "<buffer>:1:");
	expect_syntax_error("{\"format\":", 10, "<buffer>:1:");
	/* duplicate members: which "version" would count? */
	text = replace(base, "\"version\":1,", "\"version\":1,\"version\":1,");
	expect_syntax_error(text, strlen(text), "duplicate");
	free(text);
	/* trailing garbage */
	text = replace(base, "\"numa_factor\":null}}", "\"numa_factor\":null}}x");
	expect_syntax_error(text, strlen(text), "<buffer>:1:");
	free(text);
	/* a line break moves the reported line */
	text = replace(base, "\"distances\":[[10,21],[21,10]]", "\n\"distances\":[[10,21],[21,10]]]");
	expect_syntax_error(text, strlen(text), "<buffer>:2:");
	free(text);
	/* a NUL byte inside the buffer is corruption, not the end */
	text = strdup(base);
	text[strstr(text, "\"x\"") - text + 1] = '\0';
	expect_syntax_error(text, sizeof base - 1, "<buffer>:1:");
	free(text);
	text = replace(base, "\"detail\":\"x\"", "\"detail\":\"a\\u0000b\"");
	expect_syntax_error(text, strlen(text), "<buffer>:1:");
	free(text);
}

static void test_shape_limits(void **state)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	char *text;

	(void)state;
	text = replace(minimal, "\"nodes\":[{\"id\":3,\"mem_total\":1024}]", "\"nodes\":[]");
	assert_int_equal(nk_machine_load_buffer(text, strlen(text), &m, &err), NK_EPARSE);
	assert_string_equal(err.message, "<buffer>: nodes: expected 1..4096 nodes, found 0");
	free(text);
	text = replace(minimal, "\"cpus\":[{\"id\":7,\"node\":3,\"core\":0}]", "\"cpus\":[]");
	assert_int_equal(nk_machine_load_buffer(text, strlen(text), &m, &err), NK_EPARSE);
	assert_string_equal(err.message, "<buffer>: cpus: a machine needs at least one cpu");
	free(text);

	/* 4097 nodes: refused before any n x n matrix is read */
	size_t cap = 4097 * 32 + 256, len = 0;
	text = malloc(cap);
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "{\"format\":\"numakit-machine\",\"version\":1,\"nodes\":[");
	for (int i = 0; i < 4097; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s{\"id\":%d,\"mem_total\":1}", i ? "," : "", i);
	len += (size_t)snprintf(text + len, cap - len, "],\"distances\":[],\"cpus\":[]}");
	assert_int_equal(nk_machine_load_buffer(text, len, &m, &err), NK_EPARSE);
	assert_string_equal(err.message, "<buffer>: nodes: expected 1..4096 nodes, found 4097");
	free(text);
	assert_null(m);
}

/* Every proper prefix of a valid file is corrupt: each must be rejected cleanly. */
static void truncate_everywhere(const char *text)
{
	size_t len = strlen(text);
	for (size_t k = 0; k < len; k++) {
		/* a copy of exactly k bytes, so ASan sees any read past the end */
		char *cut = malloc(k ? k : 1);
		nk_machine *sentinel = (nk_machine *)&sentinel, *m = sentinel;
		nk_error err = { 0 };
		assert_non_null(cut);
		memcpy(cut, text, k);
		int rc = nk_machine_load_buffer(cut, k, &m, &err);
		if (rc != NK_EPARSE || m != sentinel || strncmp(err.message, "<buffer>:", 9))
			fail_msg("truncated at %zu of %zu: rc %d, \"%s\"", k, len, rc, err.message);
		free(cut);
	}
}

static void test_truncated(void **state)
{
	nk_machine *m = rich_machine();
	char *pretty = to_json(m, 0), *compact = to_json(m, NK_JSON_COMPACT);

	(void)state;
	truncate_everywhere(base);
	truncate_everywhere(compact);
	truncate_everywhere(pretty);
	free(pretty);
	free(compact);
	nk_machine_free(m);
}

static void test_save_and_load_file(void **state)
{
	char dir[] = "/tmp/nkmfXXXXXX", path[256];
	nk_machine *m = rich_machine(), *m2 = NULL;
	nk_error err = { 0 };
	char *j1 = to_json(m, 0), *j2, *file, *want;
	const char *detail;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/m.json", dir);
	assert_int_equal(nk_machine_save(m, path, &err), 0);
	/* the file is the JSON text and a newline */
	file = nk_test_slurp(path);
	assert_int_equal(strlen(file), strlen(j1) + 1);
	assert_memory_equal(file, j1, strlen(j1));
	assert_int_equal(file[strlen(j1)], '\n');
	free(file);

	assert_int_equal(nk_machine_load_file(path, &m2, &err), 0);
	assert_int_equal(nk_machine_source(m2, &detail), NK_SOURCE_FILE);
	assert_string_equal(detail, path);
	j2 = to_json(m2, 0);
	want = as_file(j1, rich_desc, path);
	assert_string_equal(j2, want);

	/* saving again replaces the file and leaves no temporary beside it */
	assert_int_equal(nk_machine_save(m2, path, &err), 0);
	file = nk_test_slurp(path);
	assert_memory_equal(file, j2, strlen(j2));
	free(file);
	DIR *d = opendir(dir);
	struct dirent *e;
	int entries = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			entries++;
	closedir(d);
	assert_int_equal(entries, 1);

	unlink(path);
	rmdir(dir);
	free(j1);
	free(j2);
	free(want);
	nk_machine_free(m);
	nk_machine_free(m2);
}

static void test_file_errors(void **state)
{
	nk_machine *sentinel = (nk_machine *)&sentinel, *m = sentinel;
	nk_machine *s = nk_test_synth("nodes=1");
	nk_error err = { 0 };
	char *path;

	(void)state;
	assert_int_equal(nk_machine_load_file("/nonexistent/nk/m.json", &m, &err), NK_ENOENT);
	assert_string_equal(err.message, "/nonexistent/nk/m.json: no such file");
	assert_ptr_equal(m, sentinel);
	/* a directory is there but is not a readable file */
	assert_int_equal(nk_machine_load_file("/tmp", &m, &err), NK_EIO);
	assert_int_equal(strncmp(err.message, "/tmp: ", 6), 0);

	/* messages of a file name the file */
	path = nk_test_tmpfile("{\"format\":\"numakit-machine\",\"version\":3}", 40);
	assert_int_equal(nk_machine_load_file(path, &m, &err), NK_EVERSION);
	assert_int_equal(strncmp(err.message, path, strlen(path)), 0);
	assert_non_null(strstr(err.message, ": version: version 3 is not supported"));
	unlink(path);
	free(path);
	path = nk_test_tmpfile("{\n  \"format\": 1,\n  oops\n}", 25);
	assert_int_equal(nk_machine_load_file(path, &m, &err), NK_EPARSE);
	char want[300];
	snprintf(want, sizeof want, "%s:3:", path);
	assert_int_equal(strncmp(err.message, want, strlen(want)), 0);
	unlink(path);
	free(path);
	assert_ptr_equal(m, sentinel);

	assert_int_equal(nk_machine_save(s, "/nonexistent/nk/m.json", &err), NK_EIO);
	assert_int_equal(strncmp(err.message, "/nonexistent/nk/m.json: ", 24), 0);
	assert_int_equal(nk_machine_save(NULL, "/tmp/x.json", &err), NK_EINVAL);
	assert_int_equal(nk_machine_save(s, NULL, &err), NK_EINVAL);
	assert_int_equal(nk_machine_load_file(NULL, &m, &err), NK_EINVAL);
	assert_int_equal(nk_machine_load_buffer(NULL, 5, &m, &err), NK_EINVAL);
	assert_int_equal(nk_machine_load_buffer(base, sizeof base - 1, NULL, &err), NK_EINVAL);
	nk_machine_free(s);
}

static void test_to_json_arguments(void **state)
{
	nk_machine *m = nk_test_synth("nodes=1");
	char *s = (char *)"untouched";

	(void)state;
	assert_int_equal(nk_machine_to_json(NULL, 0, &s), NK_EINVAL);
	assert_int_equal(nk_machine_to_json(m, 0, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_to_json(m, 0x2, &s), NK_EINVAL);
	assert_string_equal(s, "untouched");
	nk_machine_free(m);
}

static void test_exact_text(void **state)
{
	/* the agreed layout, written out by hand for a one-node machine */
	static const char want[] =
		"{\"format\":\"numakit-machine\",\"version\":1,\"numakit_version\":\"" NK_VERSION_STRING "\","
		"\"source\":{\"kind\":\"synthetic\",\"detail\":\"nodes=1 mem=2K l2=1M thp=never\"},"
		"\"page_size\":4096,\"huge_page_sizes\":[2097152],"
		"\"kernel\":{\"numa_balancing\":null,\"thp_enabled\":\"never\",\"thp_defrag\":null,"
		"\"weighted_interleave\":null},"
		"\"nodes\":[{\"id\":0,\"cpus\":\"0\",\"mem_total\":2048,\"mem_free\":2048,\"has_cpus\":true,"
		"\"has_memory\":true,\"mem_allowed\":true,\"cpus_allowed\":true,\"wi_weight\":null}],"
		"\"distances\":[[10]],"
		"\"cpus\":[{\"id\":0,\"node\":0,\"core\":0,\"package\":0}],"
		"\"caches\":[{\"level\":2,\"type\":\"unified\",\"size\":1048576,\"line_size\":64,\"ways\":0,\"cpus\":\"0\"}],"
		"\"allowed\":{\"cpus\":\"0\",\"nodes\":\"0\"},"
		"\"measured\":{\"latency_ns\":null,\"bandwidth_mbs\":null,\"numa_factor\":null}}";
	nk_machine *m = nk_test_synth("nodes=1 mem=2K l2=1M thp=never");
	char *s = to_json(m, NK_JSON_COMPACT);

	(void)state;
	assert_string_equal(s, want);
	free(s);
	nk_machine_free(m);
}

static void test_large_round_trip(void **state)
{
	nk_machine *m = nk_test_synth("nodes=64 cores=2 dist=10:17"), *m2;
	char *j1, *j2, *want;

	(void)state;
	for (int i = 0; i < 64; i++)
		assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_NUMA_FACTOR, i, 63 - i, 1.0 + i / 7.0), 0);
	j1 = to_json(m, 0);
	m2 = load_text(j1);
	j2 = to_json(m2, 0);
	want = as_file(j1, "nodes=64 cores=2 dist=10:17", "<buffer>");
	assert_string_equal(j2, want);
	free(j1);
	free(j2);
	free(want);
	nk_machine_free(m);
	nk_machine_free(m2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_compact),
		cmocka_unit_test(test_loaded_values),
		cmocka_unit_test(test_minimal_file),
		cmocka_unit_test(test_cpu_on_offline_node),
		cmocka_unit_test(test_file_node_order),
		cmocka_unit_test(test_base_is_valid),
		cmocka_unit_test(test_corrupt_cases),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_shape_limits),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_save_and_load_file),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_to_json_arguments),
		cmocka_unit_test(test_exact_text),
		cmocka_unit_test(test_large_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
