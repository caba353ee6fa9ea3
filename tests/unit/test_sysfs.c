/*
 * The sysfs reader on small hand-made trees: each test writes the files a
 * kernel would show, then checks the model against the values written, and
 * that every corrupt or missing file yields one message naming that file.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void mkdirs(const char *rel)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
}

static void put(const char *rel, const char *text)
{
	char path[1024], dir[512];
	snprintf(dir, sizeof dir, "%s", rel);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdirs(dir);
	}
	snprintf(path, sizeof path, "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void rm(const char *rel)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	unlink(path);
}

/* 2 nodes (ids 0 and 5), 4 cpus, asymmetric distances, node 5 with cpumap only. */
static int setup(void **state)
{
	snprintf(root, sizeof root, "/tmp/nk-sysfs-XXXXXX");
	assert_non_null(mkdtemp(root));
	put("sys/devices/system/cpu/online", "0-3\n");
	for (int c = 0; c < 4; c++) {
		char rel[128], val[32];
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		put(rel, c < 2 ? "0\n" : "1\n");
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		snprintf(val, sizeof val, "%d-%d\n", c & ~1, (c & ~1) + 1); /* 2 threads per core */
		put(rel, val);
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cache/index0/level", c);
		put(rel, "2\n");
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cache/index0/type", c);
		put(rel, "Unified\n");
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cache/index0/size", c);
		put(rel, "1024K\n");
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cache/index0/shared_cpu_list", c);
		put(rel, c < 2 ? "0-1\n" : "2-3\n");
	}
	put("sys/devices/system/node/online", "0,5\n");
	put("sys/devices/system/node/possible", "0,5\n");
	put("sys/devices/system/node/node0/cpulist", "0-1\n");
	put("sys/devices/system/node/node0/distance", "10 21\n");
	put("sys/devices/system/node/node0/meminfo",
	    "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree:         524288 kB\n");
	put("sys/devices/system/node/node5/cpumap", "0000000c\n");
	put("sys/devices/system/node/node5/distance", "31 10\n");
	put("sys/devices/system/node/node5/meminfo", "Node 5 MemTotal:       2097152 kB\nNode 5 MemFree: 1 kB\n");
	put("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0\n");
	put("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
	put("sys/kernel/mm/transparent_hugepage/defrag", "always defer [defer+madvise] madvise never\n");
	put("sys/kernel/mm/mempolicy/weighted_interleave/node0", "3\n");
	put("sys/kernel/mm/mempolicy/weighted_interleave/node5", "1\n");
	put("proc/sys/kernel/numa_balancing", "1\n");
	put("proc/self/status", "Name:\tx\nCpus_allowed_list:\t1-3\nMems_allowed_list:\t5\n");
	*state = NULL;
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static nk_machine *load_ok(void)
{
	nk_machine *m = NULL;
	nk_error e = { 0 };
	int rc = nk_machine_load_fsroot(root, &m, &e);
	if (rc)
		fail_msg("load failed: %d %s", rc, e.message);
	return m;
}

static void expect_error(int code, const char *needle)
{
	nk_machine *m = (nk_machine *)0x1; /* must stay untouched on failure */
	nk_error e = { 0 };
	int rc = nk_machine_load_fsroot(root, &m, &e);
	assert_int_equal(rc, code);
	assert_int_equal(e.code, code);
	assert_ptr_equal(m, (nk_machine *)0x1);
	if (!strstr(e.message, needle))
		fail_msg("message \"%s\" does not name \"%s\"", e.message, needle);
	assert_null(strchr(e.message, '\n'));
}

static void test_good_tree(void **state)
{
	nk_machine *m = load_ok();
	int ids[8];
	assert_int_equal(nk_machine_num_nodes(m), 2);
	assert_int_equal(nk_machine_node_id(m, 0), 0);
	assert_int_equal(nk_machine_node_id(m, 1), 5);
	assert_int_equal(nk_machine_node_cpus(m, 5, ids, 8), 2); /* from cpumap 0xc */
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 3);
	assert_int_equal(nk_machine_distance(m, 0, 5), 21);
	assert_int_equal(nk_machine_distance(m, 5, 0), 31); /* asymmetric, not transposed */
	uint64_t t, f;
	assert_int_equal(nk_machine_node_memory(m, 5, &t, &f), 0);
	assert_true(t == 2097152ull * 1024 && f == 1024);
	assert_int_equal(nk_machine_num_cores(m), 2); /* thread_siblings pairs */
	assert_int_equal(nk_machine_num_caches(m), 2);
	nk_cache_info ci;
	assert_int_equal(nk_machine_cache(m, 1, &ci), 0);
	assert_int_equal(ci.level, 2);
	assert_true(ci.size == 1024 * 1024);
	assert_int_equal(nk_machine_cache_cpus(m, 1, ids, 8), 2);
	assert_int_equal(ids[0], 2);
	nk_kernel_settings ks;
	nk_machine_kernel_settings(m, &ks);
	assert_int_equal(ks.numa_balancing, 1);
	assert_int_equal(ks.thp_enabled, NK_THP_MADVISE);
	assert_int_equal(ks.thp_defrag, NK_THP_DEFER_MADVISE);
	assert_int_equal(ks.weighted_interleave, 1);
	assert_int_equal(nk_machine_wi_weight(m, 0), 3);
	assert_int_equal(nk_machine_wi_weight(m, 5), 1);
	assert_int_equal(nk_machine_allowed_nodes(m, ids, 8), 1);
	assert_int_equal(ids[0], 5);
	assert_int_equal(nk_machine_allowed_cpus(m, ids, 8), 3);
	assert_int_equal(nk_machine_node_flags(m, 0), NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY | NK_NODE_CPUS_ALLOWED);
	uint64_t hp[4];
	assert_int_equal(nk_machine_huge_page_sizes(m, hp, 4), 1);
	assert_true(hp[0] == 2u << 20);
	nk_machine_free(m);
}

static void test_corrupt_distance(void **state)
{
	put("sys/devices/system/node/node5/distance", "31 abc\n");
	expect_error(NK_EPARSE, "node5/distance");
	put("sys/devices/system/node/node5/distance", "31\n");
	expect_error(NK_EPARSE, "node5/distance");
	put("sys/devices/system/node/node5/distance", "31 0\n");
	expect_error(NK_EPARSE, "node5/distance");
	rm("sys/devices/system/node/node5/distance");
	expect_error(NK_ENOENT, "node5/distance");
	put("sys/devices/system/node/node5/distance", "31 10\n");
}

static void test_corrupt_lists(void **state)
{
	put("sys/devices/system/node/node0/cpulist", "0-x\n");
	expect_error(NK_EPARSE, "node0/cpulist");
	put("sys/devices/system/node/node0/cpulist", "0-1\n");
	put("sys/devices/system/node/node5/cpumap", "zz\n");
	expect_error(NK_EPARSE, "node5/cpumap");
	put("sys/devices/system/node/node5/cpumap", "0000000c\n");
	put("sys/devices/system/cpu/online", "3-1\n");
	expect_error(NK_EPARSE, "cpu/online");
	put("sys/devices/system/cpu/online", "0-3\n");
	put("sys/devices/system/node/node0/meminfo", "garbage\n");
	expect_error(NK_EPARSE, "node0/meminfo");
	/* strtoull reads "-1" as 2^64-1: a size no machine file can hold (fuzz_fsroot) */
	put("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:-1\n");
	expect_error(NK_EPARSE, "node0/meminfo");
	put("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 99999999999999999999 kB\n");
	expect_error(NK_EPARSE, "node0/meminfo");
	put("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 18014398509481984 kB\n");
	expect_error(NK_EPARSE, "node0/meminfo");
	put("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       1048576 kB\n");
	/* values a machine file could not hold again (fuzz_fsroot found 10) read as unknown */
	put("proc/sys/kernel/numa_balancing", "10\n");
	{
		nk_machine *m = load_ok();
		nk_kernel_settings ks;
		nk_machine_kernel_settings(m, &ks);
		assert_int_equal(ks.numa_balancing, -1);
		char *json = NULL;
		assert_int_equal(nk_machine_to_json(m, 0, &json), 0);
		nk_machine *back = NULL;
		assert_int_equal(nk_machine_load_buffer(json, strlen(json), &back, NULL), 0);
		nk_machine_free(back);
		free(json);
		nk_machine_free(m);
	}
	put("proc/sys/kernel/numa_balancing", "1\n");
	put("proc/self/status", "Cpus_allowed_list:\t1-\n");
	expect_error(NK_EPARSE, "/proc/self/status");
	put("proc/self/status", "Name:\tx\nCpus_allowed_list:\t1-3\nMems_allowed_list:\t5\n");
	nk_machine_free(load_ok());
}

static void test_missing_root(void **state)
{
	nk_machine *m = NULL;
	nk_error e = { 0 };
	assert_int_equal(nk_machine_load_fsroot("/nonexistent/nk-root", &m, &e), NK_ENOENT);
	assert_non_null(strstr(e.message, "/nonexistent/nk-root"));
	assert_null(m);
	/* a directory that is not a sysfs tree */
	assert_int_equal(nk_machine_load_fsroot("/usr/share", &m, &e), NK_ENOENT);
	assert_non_null(strstr(e.message, "not a sysfs tree"));
	assert_int_equal(nk_machine_load_fsroot(NULL, &m, &e), NK_EINVAL);
	assert_int_equal(nk_machine_load_fsroot(root, NULL, &e), NK_EINVAL);
}

/* Without /sys/devices/system/node the machine is one node holding everything. */
static void test_no_numa(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "mv '%s/sys/devices/system/node' '%s/node.away'", root, root);
	assert_int_equal(system(cmd), 0);
	put("proc/meminfo", "MemTotal:        4096 kB\nMemFree:         1024 kB\n");
	put("proc/self/status", "Name:\tx\n");
	nk_machine *m = load_ok();
	int ids[8];
	assert_int_equal(nk_machine_num_nodes(m), 1);
	assert_int_equal(nk_machine_node_id(m, 0), 0);
	assert_int_equal(nk_machine_node_cpus(m, 0, ids, 8), 4);
	uint64_t t;
	nk_machine_node_memory(m, 0, &t, NULL);
	assert_true(t == 4096 * 1024);
	assert_int_equal(nk_machine_distance(m, 0, 0), 10);
	nk_machine_free(m);
	snprintf(cmd, sizeof cmd, "mv '%s/node.away' '%s/sys/devices/system/node'", root, root);
	assert_int_equal(system(cmd), 0);
	put("proc/self/status", "Name:\tx\nCpus_allowed_list:\t1-3\nMems_allowed_list:\t5\n");
}

/* Offline node: its directory is gone, its cpus stay online with node -1. */
static void test_offline_node(void **state)
{
	put("sys/devices/system/node/online", "5\n");
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/sys/devices/system/node/node0'", root);
	assert_int_equal(system(cmd), 0);
	put("sys/devices/system/node/node5/distance", "31 10\n"); /* row covers `possible` 0,5 */
	nk_machine *m = load_ok();
	nk_cpu_info ci;
	assert_int_equal(nk_machine_num_nodes(m), 1);
	assert_int_equal(nk_machine_distance(m, 5, 5), 10);
	assert_int_equal(nk_machine_cpu_info(m, 0, &ci), 0);
	assert_int_equal(ci.node, -1);
	assert_int_equal(nk_machine_cpu_info(m, 2, &ci), 0);
	assert_int_equal(ci.node, 5);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_distance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_numa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offline_node, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
