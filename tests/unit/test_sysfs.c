/* SPDX-License-Identifier: BSD-3-Clause
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
	put("sys/devices/system/node/node5/distance", "31 10\n");
}

/* The note @p needle is among the machine's notes (and the count is @p count). */
static void expect_note(const nk_machine *m, int count, const char *needle)
{
	int n = nk_machine_num_notes(m);
	for (int i = 0; i < n; i++)
		if (strstr(nk_machine_note(m, i), needle))
			goto found;
	fail_msg("no note names \"%s\" (%d notes)", needle, n);
found:
	assert_int_equal(n, count);
	assert_null(nk_machine_note(m, n));
	assert_null(nk_machine_note(m, -1));
}

/* The good tree uses one fallback already: node 5 has only a cpumap. */
static void test_notes_good_tree(void **state)
{
	nk_machine *m = load_ok();
	expect_note(m, 1, "nodeN/cpulist missing (node 5): cpus from nodeN/cpumap");
	/* a machine file keeps them; a copy too */
	char *json = NULL;
	assert_int_equal(nk_machine_to_json(m, 0, &json), 0);
	nk_machine *back = NULL;
	assert_int_equal(nk_machine_load_buffer(json, strlen(json), &back, NULL), 0);
	expect_note(back, 1, "nodeN/cpulist missing (node 5)");
	nk_machine *r = NULL;
	int cpus[] = { 2 };
	assert_int_equal(nk_machine_restrict(back, cpus, 1, NULL, 0, &r, NULL), 0);
	expect_note(r, 1, "nodeN/cpulist missing (node 5)");
	nk_machine_free(r);
	nk_machine_free(back);
	free(json);
	assert_int_equal(nk_machine_num_notes(NULL), NK_EINVAL);
	assert_null(nk_machine_note(NULL, 0));
	nk_machine_free(m);
	/* no fallback, no note */
	put("sys/devices/system/node/node5/cpulist", "2-3\n");
	m = load_ok();
	assert_int_equal(nk_machine_num_notes(m), 0);
	nk_machine_free(m);
}

/* A machine file's notes must be strings of one line; a bad one changes nothing. */
static void test_notes_machine_file(void **state)
{
	nk_machine *m = load_ok(), *back = (nk_machine *)0x1;
	char *json = NULL, *bad;
	nk_error e = { 0 };
	assert_int_equal(nk_machine_to_json(m, NK_JSON_COMPACT, &json), 0);
	char *p = strstr(json, "\"notes\":[");
	assert_non_null(p);
	size_t k = (size_t)(p - json) + strlen("\"notes\":[");
	bad = malloc(strlen(json) + 16);
	assert_non_null(bad);
	/* a number before the note */
	memcpy(bad, json, k);
	strcpy(bad + k, "7,");
	strcat(bad, json + k);
	assert_int_equal(nk_machine_load_buffer(bad, strlen(bad), &back, &e), NK_EPARSE);
	assert_non_null(strstr(e.message, "notes[0]"));
	/* a note of two lines */
	memcpy(bad, json, k);
	strcpy(bad + k, "\"a\\nb\",");
	strcat(bad, json + k);
	assert_int_equal(nk_machine_load_buffer(bad, strlen(bad), &back, &e), NK_EPARSE);
	assert_non_null(strstr(e.message, "one line"));
	assert_ptr_equal(back, (nk_machine *)0x1);
	free(bad);
	free(json);
	nk_machine_free(m);
}

/* No cpu/online (before 2.6.x): the cpuN directories and their online files; cpu0 has none. */
static void test_no_cpu_online(void **state)
{
	rm("sys/devices/system/cpu/online");
	put("sys/devices/system/cpu/cpu1/online", "1\n");
	put("sys/devices/system/cpu/cpu2/online", "1\n");
	put("sys/devices/system/cpu/cpu3/online", "0\n");
	put("proc/self/status", "Name:\tx\n");
	nk_machine *m = load_ok();
	int ids[8];
	assert_int_equal(nk_machine_num_cpus(m), 3);
	assert_int_equal(nk_machine_node_cpus(m, 5, ids, 8), 1);
	assert_int_equal(ids[0], 2);
	expect_note(m, 2, "cpu/online missing: online cpus from the cpuN directories and their online files");
	nk_machine_free(m);
}

/* Neither cpu/online nor cpuN directories: cpu/present, cpu/possible, /proc/cpuinfo, else an error. */
static void test_no_cpu_dirs(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'/sys/devices/system/cpu/cpu[0-9]*", root);
	assert_int_equal(system(cmd), 0);
	rm("sys/devices/system/cpu/online");
	put("proc/self/status", "Name:\tx\n");
	put("sys/devices/system/cpu/present", "0-3\n");
	put("sys/devices/system/cpu/possible", "0-7\n");
	nk_machine *m = load_ok();
	assert_int_equal(nk_machine_num_cpus(m), 4);
	expect_note(m, 2, "online cpus from cpu/present");
	nk_machine_free(m);
	rm("sys/devices/system/cpu/present");
	put("sys/devices/system/cpu/possible", "0-3\n");
	m = load_ok();
	expect_note(m, 2, "online cpus from cpu/possible");
	nk_machine_free(m);
	rm("sys/devices/system/cpu/possible");
	put("proc/cpuinfo", "processor\t: 0\nvendor_id\t: x\n\nprocessor\t: 1\n\nprocessor : 2\nprocessor\t: 3\n"
			    "Processor\t: ARMv7 rev 0\n");
	m = load_ok();
	assert_int_equal(nk_machine_num_cpus(m), 4);
	expect_note(m, 2, "online cpus from the processor lines of /proc/cpuinfo");
	nk_machine_free(m);
	rm("proc/cpuinfo");
	expect_error(NK_EPARSE, "cpu/online: missing, and no cpuN directory");
	put("sys/devices/system/cpu/online", "\n"); /* present but empty: the old message */
	expect_error(NK_EPARSE, "no online cpu");
}

/* No node/online: every nodeN directory is a node. */
static void test_no_node_online(void **state)
{
	rm("sys/devices/system/node/online");
	nk_machine *m = load_ok();
	assert_int_equal(nk_machine_num_nodes(m), 2);
	expect_note(m, 2, "node/online missing: nodes from the nodeN directories");
	nk_machine_free(m);
}

/* Neither cpulist nor cpumap: the cpuN/nodeM links. */
static void test_no_cpumap(void **state)
{
	rm("sys/devices/system/node/node5/cpumap");
	mkdirs("sys/devices/system/cpu/cpu2/node5");
	mkdirs("sys/devices/system/cpu/cpu3/node5");
	nk_machine *m = load_ok();
	int ids[8];
	assert_int_equal(nk_machine_node_cpus(m, 5, ids, 8), 2);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 3);
	expect_note(m, 1, "nodeN/cpulist and cpumap missing (node 5): cpus from the cpuN/nodeM links");
	nk_machine_free(m);
}

/* A missing distance file: no distances at all (as hwloc), the defaults, and a note. */
static void test_no_distance(void **state)
{
	rm("sys/devices/system/node/node5/distance");
	nk_machine *m = load_ok();
	assert_int_equal(nk_machine_distance(m, 0, 5), 20); /* node0's row (21) is not used either */
	assert_int_equal(nk_machine_distance(m, 5, 0), 20);
	assert_int_equal(nk_machine_distance(m, 5, 5), 10);
	expect_note(m, 2, "nodeN/distance missing (node 5): no distances, 10 local and 20 remote assumed");
	nk_machine_free(m);
	rm("sys/devices/system/node/node0/distance");
	m = load_ok();
	expect_note(m, 2, "nodeN/distance missing (nodes 0,5)");
	nk_machine_free(m);
}

/* Missing nodeN/meminfo: node/has_memory says whether it has memory; one node: /proc/meminfo. */
static void test_no_meminfo(void **state)
{
	uint64_t t;
	rm("sys/devices/system/node/node5/meminfo");
	nk_machine *m = load_ok();
	assert_false(nk_machine_node_flags(m, 5) & NK_NODE_HAS_MEMORY);
	expect_note(m, 2, "nodeN/meminfo missing (node 5): memory unknown, counted as without memory");
	nk_machine_free(m);
	put("sys/devices/system/node/has_memory", "0,5\n");
	m = load_ok();
	assert_true(nk_machine_node_flags(m, 5) & NK_NODE_HAS_MEMORY);
	assert_int_equal(nk_machine_node_memory(m, 5, &t, NULL), 0);
	assert_true(t == 0);
	expect_note(m, 2, "memory size unknown, whether it has any from node/has_memory");
	nk_machine_free(m);
	/* one node: the machine's meminfo is the node's */
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/sys/devices/system/node/node5'", root);
	assert_int_equal(system(cmd), 0);
	put("sys/devices/system/node/online", "0\n");
	put("sys/devices/system/node/possible", "0\n");
	put("sys/devices/system/node/node0/distance", "10\n");
	put("sys/devices/system/node/node0/cpulist", "0-3\n");
	rm("sys/devices/system/node/node0/meminfo");
	put("proc/meminfo", "MemTotal:        4096 kB\nMemFree:         1024 kB\n");
	put("proc/self/status", "Name:\tx\n");
	m = load_ok();
	assert_int_equal(nk_machine_node_memory(m, 0, &t, NULL), 0);
	assert_true(t == 4096 * 1024);
	expect_note(m, 1, "nodeN/meminfo missing (node 0): memory from /proc/meminfo");
	nk_machine_free(m);
	put("proc/meminfo", "garbage\n");
	expect_error(NK_EPARSE, "/proc/meminfo");
}

/* Without a node directory and without /proc/meminfo: memory size unknown, said so. */
static void test_no_numa_no_meminfo(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/sys/devices/system/node'", root);
	assert_int_equal(system(cmd), 0);
	put("proc/self/status", "Name:\tx\n");
	nk_machine *m = load_ok();
	expect_note(m, 1, "/proc/meminfo missing: memory size unknown");
	assert_true(nk_machine_node_flags(m, 0) & NK_NODE_HAS_MEMORY);
	nk_machine_free(m);
}

/* Kernels before thread_siblings_list: the thread_siblings mask. */
static void test_siblings_mask(void **state)
{
	for (int c = 0; c < 4; c++) {
		char rel[128];
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		rm(rel);
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/thread_siblings", c);
		put(rel, c == 3 ? "zz\n" : c < 2 ? "00000003\n" : "0000000c\n"); /* cpu3's is garbled: own core */
	}
	nk_machine *m = load_ok();
	assert_int_equal(nk_machine_num_cores(m), 3);
	expect_note(m, 2, "cpuN/topology/thread_siblings_list missing (cpus 0-2): cores from the thread_siblings masks");
	nk_machine_free(m);
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
		cmocka_unit_test_setup_teardown(test_notes_good_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notes_machine_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cpu_online, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cpu_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_node_online, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cpumap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_distance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_meminfo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_numa_no_meminfo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_siblings_mask, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
