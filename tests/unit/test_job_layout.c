/* SPDX-License-Identifier: BSD-3-Clause
 * The share-out of a host among local ranks (nk_job_layout_build) on
 * synthetic machines, every rank's nodes, memory nodes and cpus worked out
 * by hand from the rules of numakit.h: fewer ranks than nodes, more ranks
 * than nodes, uneven counts, more ranks than cpus, SMT, memory-only and
 * memoryless nodes, a restricted allowed set; and nk_machine_restrict, which
 * confines placement strategies to a share.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nk_job_layout *build(nk_machine *m, const int *cpus, size_t n, int ranks)
{
	nk_job_layout *l = NULL;
	nk_error err = { 0 };
	int rc = nk_job_layout_build(m, cpus, n, ranks, &l, &err);

	if (rc)
		fail_msg("%d ranks: %d %s", ranks, rc, err.message);
	assert_int_equal(nk_job_layout_size(l), ranks);
	return l;
}

typedef int (*getter)(const nk_job_layout *, int, int *, size_t);

static void expect_list(const nk_job_layout *l, int r, getter get, const char *what, const char *want)
{
	int ids[512];
	char buf[1024];
	int n = get(l, r, ids, 512);

	assert_true(n >= 0 && n <= 512);
	/* order matters (memory nodes: own first node first; cpus: core order): no ranges */
	buf[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? "," : "", ids[i]);
	if (strcmp(buf, want))
		fail_msg("rank %d %s: got \"%s\", want \"%s\"", r, what, buf, want);
}

static void expect(const nk_job_layout *l, int r, const char *nodes, const char *mem, const char *cpus, int flags)
{
	expect_list(l, r, nk_job_layout_nodes, "nodes", nodes);
	expect_list(l, r, nk_job_layout_mem_nodes, "memory nodes", mem);
	expect_list(l, r, nk_job_layout_cpus, "cpus", cpus);
	if (nk_job_layout_flags(l, r) != flags)
		fail_msg("rank %d: flags %d, want %d", r, nk_job_layout_flags(l, r), flags);
}

/* 4 ranks on 8 nodes: 2 nodes each, all their cpus. */
static void test_fewer_ranks(void **state)
{
	nk_machine *m = nk_test_synth("nodes=8 cores=2");
	nk_job_layout *l = build(m, NULL, 0, 4);

	(void)state;
	assert_int_equal(nk_job_layout_num_nodes(l), 8);
	expect(l, 0, "0,1", "0,1", "0,1,2,3", 0);
	expect(l, 1, "2,3", "2,3", "4,5,6,7", 0);
	expect(l, 3, "6,7", "6,7", "12,13,14,15", 0);
	nk_job_layout_free(l);
	/* 3 ranks on 4 nodes: the first rank one node more */
	nk_machine_free(m);
	m = nk_test_synth("nodes=4 cores=2");
	l = build(m, NULL, 0, 3);
	expect(l, 0, "0,1", "0,1", "0,1,2,3", 0);
	expect(l, 1, "2", "2", "4,5", 0);
	expect(l, 2, "3", "3", "6,7", 0);
	nk_job_layout_free(l);
	/* one rank: the whole machine */
	l = build(m, NULL, 0, 1);
	expect(l, 0, "0,1,2,3", "0,1,2,3", "0,1,2,3,4,5,6,7", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
}

/* 8 ranks on 4 nodes: 2 ranks a node on disjoint cpus; uneven cuts. */
static void test_more_ranks(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=4");
	nk_job_layout *l = build(m, NULL, 0, 8);

	(void)state;
	expect(l, 0, "0", "0", "0,1", NK_JOB_SHARES_NODE);
	expect(l, 1, "0", "0", "2,3", NK_JOB_SHARES_NODE);
	expect(l, 6, "3", "3", "12,13", NK_JOB_SHARES_NODE);
	expect(l, 7, "3", "3", "14,15", NK_JOB_SHARES_NODE);
	nk_job_layout_free(l);
	/* 6 ranks on 4 nodes: nodes 0 and 1 take two ranks, 2 and 3 one; 3 cpus in 2 parts: 2+1 */
	nk_machine_free(m);
	m = nk_test_synth("nodes=4 cores=3");
	l = build(m, NULL, 0, 6);
	expect(l, 0, "0", "0", "0,1", NK_JOB_SHARES_NODE);
	expect(l, 1, "0", "0", "2", NK_JOB_SHARES_NODE);
	expect(l, 2, "1", "1", "3,4", NK_JOB_SHARES_NODE);
	expect(l, 3, "1", "1", "5", NK_JOB_SHARES_NODE);
	expect(l, 4, "2", "2", "6,7,8", 0);
	expect(l, 5, "3", "3", "9,10,11", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
}

/* 5 ranks on 2 cpus: shared out round robin, every rank oversubscribed. */
static void test_oversubscribed(void **state)
{
	nk_machine *m = nk_test_synth("nodes=1 cores=2");
	nk_job_layout *l = build(m, NULL, 0, 5);
	const int both = NK_JOB_SHARES_NODE | NK_JOB_OVERSUBSCRIBED;

	(void)state;
	expect(l, 0, "0", "0", "0", both);
	expect(l, 1, "0", "0", "1", both);
	expect(l, 2, "0", "0", "0", both);
	expect(l, 4, "0", "0", "0", both);
	nk_job_layout_free(l);
	nk_machine_free(m);
	/* two nodes of one cpu: 3 ranks on node 0, 2 on node 1 */
	m = nk_test_synth("nodes=2 cores=1");
	l = build(m, NULL, 0, 5);
	expect(l, 2, "0", "0", "0", both);
	expect(l, 3, "1", "1", "1", both);
	nk_job_layout_free(l);
	/* an even cut of a node leaves no rank oversubscribed */
	l = build(m, NULL, 0, 2);
	expect(l, 1, "1", "1", "1", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
}

/* SMT siblings stay together: cores {0,1} {2,3} on node 0. */
static void test_smt(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2 smt=2 l3=16M");
	nk_job_layout *l = build(m, NULL, 0, 4);

	(void)state;
	expect(l, 0, "0", "0", "0,1", NK_JOB_SHARES_NODE);
	expect(l, 1, "0", "0", "2,3", NK_JOB_SHARES_NODE);
	expect(l, 3, "1", "1", "6,7", NK_JOB_SHARES_NODE);
	nk_job_layout_free(l);
	nk_machine_free(m);
}

/* Memory-only nodes follow their nearest cpu node; a memoryless cpu node takes its nearest memory. */
static void test_memory_nodes(void **state)
{
	/* node 0 cpus 0-1, node 1 cpus 2-3 without memory, node 2 memory only (nearest: node 0) */
	nk_machine *m = nk_test_synth("nodes=3 cores=2 memless=1 cpuless=2 dist=10,41,21/41,10,31/21,31,10");
	nk_job_layout *l = build(m, NULL, 0, 2);

	(void)state;
	expect(l, 0, "0", "0,2", "0,1", 0);
	expect(l, 1, "1", "2", "2,3", 0);
	nk_job_layout_free(l);
	/* one rank: node 2 once */
	l = build(m, NULL, 0, 1);
	expect(l, 0, "0,1", "0,2", "0,1,2,3", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
	/* 4 cpu nodes and 2 memory-only nodes (CXL-like): 4 nearest 1, 5 nearest 2 */
	m = nk_test_synth("nodes=6 cores=1 cpuless=4,5 dist=10,20,20,20,40,40/20,10,20,20,30,40/20,20,10,20,40,30/"
			  "20,20,20,10,40,40/40,30,40,40,10,40/40,40,30,40,40,10");
	l = build(m, NULL, 0, 2);
	expect(l, 0, "0,1", "0,1,4", "0,1", 0);
	expect(l, 1, "2,3", "2,5,3", "2,3", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
	/* memory this process may not use is left out: node 0's rank takes the nearest it may use */
	m = nk_test_synth("nodes=2 cores=2 allowed_nodes=1");
	l = build(m, NULL, 0, 2);
	expect(l, 0, "0", "1", "0,1", 0);
	expect(l, 1, "1", "1", "2,3", 0);
	nk_job_layout_free(l);
	nk_machine_free(m);
}

/* The share lies within the cpus given: the allowed ones by default. */
static void test_within_allowed(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2 smt=2 l3=16M allowed_cpus=1-4");
	nk_job_layout *l = build(m, NULL, 0, 2);
	int cpus[64];

	(void)state;
	expect(l, 0, "0", "0", "1,2,3", 0);
	expect(l, 1, "1", "1", "4", 0);
	nk_job_layout_free(l);
	/* an explicit set (unsorted, duplicates) */
	{
		const int set[] = { 7, 6, 5, 4, 5 };
		l = build(m, set, 5, 2);
		expect(l, 0, "1", "1", "4,5", NK_JOB_SHARES_NODE);
		expect(l, 1, "1", "1", "6,7", NK_JOB_SHARES_NODE);
		nk_job_layout_free(l);
	}
	assert_int_equal(nk_machine_cpuset_cpus(m, cpus, 64), 4); /* not live: the allowed cpus */
	assert_int_equal(cpus[0], 1);
	nk_machine_free(m);
}

static void test_errors(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2");
	nk_job_layout *l = (nk_job_layout *)&l, *sentinel = l;
	nk_error err = { 0 };
	const int bad[] = { 0, 9 };

	(void)state;
	assert_int_equal(nk_job_layout_build(NULL, NULL, 0, 1, &l, &err), NK_EINVAL);
	assert_int_equal(nk_job_layout_build(m, NULL, 0, 0, &l, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "0 local ranks"));
	assert_int_equal(nk_job_layout_build(m, NULL, 0, 65537, &l, &err), NK_EINVAL);
	assert_int_equal(nk_job_layout_build(m, bad, 0, 1, &l, &err), NK_EINVAL);
	assert_int_equal(nk_job_layout_build(m, bad, 2, 1, &l, &err), NK_ENODEV);
	assert_non_null(strstr(err.message, "cpu 9"));
	assert_ptr_equal(l, sentinel);
	l = build(m, NULL, 0, 2);
	assert_int_equal(nk_job_layout_cpus(l, 2, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_job_layout_cpus(l, -1, NULL, 0), NK_EINVAL);
	assert_int_equal(nk_job_layout_cpus(l, 0, NULL, 0), 2);
	assert_int_equal(nk_job_layout_cpus(l, 0, NULL, 1), NK_EINVAL);
	assert_int_equal(nk_job_layout_flags(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_job_layout_size(NULL), NK_EINVAL);
	nk_job_layout_free(l);
	nk_job_layout_free(NULL);
	nk_machine_free(m);
}

/* nk_machine_restrict: placement strategies inside a share; never wider than the machine allows. */
static void test_restrict(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=2 allowed_cpus=0-5 allowed_nodes=0-2");
	nk_machine *r = NULL;
	nk_placement *p = NULL;
	nk_error err = { 0 };
	const int share[] = { 2, 3 }, node[] = { 1 }, wide[] = { 6 }, wnode[] = { 3 };
	int cpus[16];
	char buf[64];

	(void)state;
	assert_int_equal(nk_machine_restrict(m, share, 2, node, 1, &r, &err), 0);
	assert_int_equal(nk_machine_allowed_cpus(r, cpus, 16), 2);
	assert_int_equal(nk_machine_node_flags(r, 0) & (NK_NODE_CPUS_ALLOWED | NK_NODE_MEM_ALLOWED), 0);
	assert_int_equal(nk_machine_node_flags(r, 1) & (NK_NODE_CPUS_ALLOWED | NK_NODE_MEM_ALLOWED),
			 NK_NODE_CPUS_ALLOWED | NK_NODE_MEM_ALLOWED);
	assert_int_equal(nk_placement_build(r, "scatter", 4, &p, &err), 0);
	nk_placement_format(p, buf, sizeof buf);
	assert_string_equal(buf, "2,3,2,3");
	nk_placement_free(p);
	assert_int_equal(nk_placement_build(r, "0", 1, &p, &err), NK_EPERM);
	/* the copy is independent of the original */
	nk_machine_free(m);
	assert_int_equal(nk_machine_num_nodes(r), 4);
	assert_int_equal(nk_machine_distance(r, 0, 3), 20);
	nk_machine_free(r);

	m = nk_test_synth("nodes=4 cores=2 allowed_cpus=0-5 allowed_nodes=0-2");
	r = (nk_machine *)&r;
	assert_int_equal(nk_machine_restrict(m, wide, 1, NULL, 0, &r, &err), NK_EPERM);
	assert_non_null(strstr(err.message, "cpu 6"));
	assert_int_equal(nk_machine_restrict(m, share, 2, wnode, 1, &r, &err), NK_EPERM);
	assert_int_equal(nk_machine_restrict(m, share, 0, NULL, 0, &r, &err), NK_EINVAL);
	assert_ptr_equal(r, (nk_machine *)&r);
	/* nodes unchanged when none are given */
	assert_int_equal(nk_machine_restrict(m, share, 2, NULL, 0, &r, &err), 0);
	assert_int_equal(nk_machine_allowed_nodes(r, NULL, 0), 3);
	nk_machine_free(r);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fewer_ranks),  cmocka_unit_test(test_more_ranks),  cmocka_unit_test(test_oversubscribed),
		cmocka_unit_test(test_smt),          cmocka_unit_test(test_memory_nodes), cmocka_unit_test(test_within_allowed),
		cmocka_unit_test(test_errors),       cmocka_unit_test(test_restrict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
