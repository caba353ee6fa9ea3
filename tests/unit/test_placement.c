/* SPDX-License-Identifier: BSD-3-Clause
 * Thread placement: every strategy's exact cpu list on synthetic machines
 * (SMT, several caches, memoryless and CPU-less nodes, sparse node ids, a
 * restricted allowed set, the guest topologies of tests/vm), worked out by
 * hand from the rules of numakit.h / docs/threads.md; oversubscription;
 * every error; pinning on this host.
 */
#include "testutil.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 2 nodes x 2 cores x 2 SMT: node 0 cpus 0-3 (cores {0,1} {2,3}), node 1 cpus 4-7. */
#define M_SMT "nodes=2 cores=2 smt=2 l3=16M l2=1M l1=32K"
/* The 4n-slit / 4n-asym guests: 4 nodes x 1 cpu. */
#define M_4N "nodes=4 cores=1 dist=10,21,31,21/21,10,21,31/31,21,10,21/21,31,21,10"
/* The 2n guest. */
#define M_2N "nodes=2 cores=1 dist=10:21"
/* The hetero guest: node 0 cpus 0-1, node 1 cpus 2-3 without memory, node 2 memory only. */
#define M_HETERO "nodes=3 cores=2 memless=1 cpuless=2 dist=10,41,21/41,10,31/21,31,10"
/* Sparse ids, a CPU-less node (id 4) and a memoryless node (id 9, cpus 8-11); no caches. */
#define M_ODD "nodes=4 ids=0,1,4,9 cores=2 smt=2 memless=3 cpuless=2"
/* M_SMT restricted: node 0 allows cpu 1 (core 0), 2 and 3 (core 1); node 1 only cpu 4. */
#define M_RESTRICTED "nodes=2 cores=2 smt=2 l3=16M allowed_cpus=1-4"

/* One node, 4 cores, two L3s that interleave the cpu ids: {0,2} and {1,3} (a machine file). */
static const char two_l3_json[] =
	"{\"format\": \"numakit-machine\", \"version\": 1,"
	" \"nodes\": [{\"id\": 0, \"mem_total\": 1073741824}],"
	" \"distances\": [[10]],"
	" \"cpus\": [{\"id\": 0, \"node\": 0, \"core\": 0}, {\"id\": 1, \"node\": 0, \"core\": 1},"
	"          {\"id\": 2, \"node\": 0, \"core\": 2}, {\"id\": 3, \"node\": 0, \"core\": 3}],"
	" \"caches\": [{\"level\": 3, \"type\": \"unified\", \"size\": 0, \"line_size\": 64, \"ways\": 0, \"cpus\": \"0,2\"},"
	"            {\"level\": 3, \"type\": \"unified\", \"size\": 0, \"line_size\": 64, \"ways\": 0, \"cpus\": \"1,3\"}]}";

static char *tmpfile_str(const char *text)
{
	return nk_test_tmpfile(text, strlen(text));
}

static nk_placement *build(nk_machine *m, const char *strategy, int n)
{
	nk_placement *p = NULL;
	nk_error err = { 0 };
	int rc = nk_placement_build(m, strategy, n, &p, &err);

	if (rc)
		fail_msg("\"%s\" x %d: %d %s", strategy, n, rc, err.message);
	assert_non_null(p);
	return p;
}

static void expect_p(const nk_placement *p, const char *what, const char *expected)
{
	char buf[4096];
	int need = nk_placement_format(p, buf, sizeof buf);

	assert_true(need >= 0);
	if (strcmp(buf, expected))
		fail_msg("%s: cpus %s, expected %s", what, buf, expected);
	assert_int_equal(need, strlen(expected));
}

/* strategy with n threads on the machine desc gives the cpus @p expected ("0,2,4") and oversubscription @p over. */
static void expect(const char *desc, const char *strategy, int n, const char *expected, int over)
{
	nk_machine *m = nk_test_synth(desc);
	nk_placement *p = build(m, strategy, n);
	char what[512];

	snprintf(what, sizeof what, "%s / %s x %d", desc, strategy, n);
	expect_p(p, what, expected);
	if (nk_placement_oversubscribed(p) != over)
		fail_msg("%s: oversubscribed %d, expected %d", what, nk_placement_oversubscribed(p), over);
	nk_placement_free(p);
	nk_machine_free(m);
}

static void expect_err(const char *desc, const char *strategy, int n, int code, const char *needle)
{
	nk_machine *m = nk_test_synth(desc);
	nk_placement *sentinel = (nk_placement *)&sentinel, *p = sentinel;
	nk_error err = { 0 };
	int rc = nk_placement_build(m, strategy, n, &p, &err);

	if (rc != code)
		fail_msg("\"%s\" x %d: expected %d, got %d (%s)", strategy, n, code, rc, err.message);
	assert_int_equal(err.code, code);
	assert_ptr_equal(p, sentinel);
	if (!strstr(err.message, needle))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", strategy, err.message, needle);
	nk_machine_free(m);
}

static void test_compact(void **state)
{
	(void)state;
	/* one thread per core in cache order, then the second SMT threads */
	expect(M_SMT, "compact", 0, "0,2,4,6,1,3,5,7", 0);
	expect(M_SMT, "compact", 3, "0,2,4", 0);
	expect(M_SMT, "compact", 1, "0", 0);
	expect(M_SMT, "compact", 10, "0,2,4,6,1,3,5,7,0,2", 1);
	expect(M_ODD, "compact", 0, "0,2,4,6,8,10,1,3,5,7,9,11", 0);
	expect(M_RESTRICTED, "compact", 0, "1,2,4,3", 0);
	expect(M_RESTRICTED, "compact", 5, "1,2,4,3,1", 1);
	expect(M_4N, "compact", 0, "0,1,2,3", 0);
	expect(M_2N, "compact", 0, "0,1", 0);
	expect(M_HETERO, "compact", 0, "0,1,2,3", 0);
}

static void test_scatter(void **state)
{
	(void)state;
	expect(M_SMT, "scatter", 0, "0,1,2,3,4,5,6,7", 0);
	expect(M_SMT, "scatter", 1, "0", 0);
	expect(M_SMT, "scatter", 2, "0,4", 0);
	expect(M_SMT, "scatter", 3, "0,2,4", 0);
	expect(M_SMT, "scatter", 4, "0,2,4,6", 0);
	expect(M_SMT, "scatter", 5, "0,1,2,4,6", 0);
	expect(M_SMT, "scatter", 9, "0,1,2,3,4,5,6,7,0", 1);
	/* 4 nodes: T <= N puts thread t on node floor(t * N / T) */
	expect(M_4N, "scatter", 4, "0,1,2,3", 0);
	expect(M_4N, "scatter", 2, "0,2", 0);
	expect(M_4N, "scatter", 3, "0,1,2", 0);
	expect(M_4N, "scatter", 6, "0,1,2,3,0,1", 1);
	expect(M_2N, "scatter", 2, "0,1", 0);
	expect(M_2N, "scatter", 3, "0,1,0", 1);
	expect(M_HETERO, "scatter", 2, "0,2", 0);
	expect(M_HETERO, "scatter", 3, "0,1,2", 0);
	expect(M_HETERO, "scatter", 4, "0,1,2,3", 0);
	/* the CPU-less node 4 gets nothing; nodes 0, 1, 9 share the threads */
	expect(M_ODD, "scatter", 3, "0,4,8", 0);
	expect(M_ODD, "scatter", 4, "0,2,4,8", 0);
	expect(M_ODD, "scatter", 6, "0,2,4,6,8,10", 0);
	/* node 1 has one allowed cpu: it is filled, node 0 takes the rest */
	expect(M_RESTRICTED, "scatter", 2, "1,4", 0);
	expect(M_RESTRICTED, "scatter", 3, "1,2,4", 0);
	expect(M_RESTRICTED, "scatter", 4, "1,2,3,4", 0);
}

/* Caches decide the order, not cpu ids: two L3s {0,2} and {1,3} on one node. */
static void test_cache_order(void **state)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	nk_placement *p;

	(void)state;
	if (nk_machine_load_buffer(two_l3_json, strlen(two_l3_json), &m, &err))
		fail_msg("%s", err.message);
	p = build(m, "compact", 0);
	expect_p(p, "two L3 compact", "0,2,1,3");
	nk_placement_free(p);
	p = build(m, "scatter", 2);
	expect_p(p, "two L3 scatter 2", "0,1");
	nk_placement_free(p);
	p = build(m, "scatter", 4);
	expect_p(p, "two L3 scatter 4", "0,2,1,3");
	nk_placement_free(p);
	p = build(m, "scatter", 3);
	expect_p(p, "two L3 scatter 3", "0,2,1");
	nk_placement_free(p);
	nk_machine_free(m);
}

static void test_list(void **state)
{
	char *path;
	char strategy[600];

	(void)state;
	expect(M_SMT, "3,1,0-2", 0, "3,1,0,1,2", 1);
	expect(M_SMT, "1,0", 0, "1,0", 0);
	expect(M_SMT, "2,0", 3, "2,0,2", 1);
	expect(M_SMT, "7", 1, "7", 0);
	expect(M_SMT, "0-6:2", 0, "0,2,4,6", 0);
	expect(M_ODD, "8,0", 0, "8,0", 0);
	expect_err(M_SMT, "1,,2", 0, NK_EPARSE, "empty item");
	expect_err(M_SMT, "1,", 0, NK_EPARSE, "empty item");
	expect_err(M_SMT, "3-1", 0, NK_EPARSE, "reversed");
	expect_err(M_SMT, "0-", 0, NK_EPARSE, "expected a cpu number");
	expect_err(M_SMT, "0x1", 0, NK_EPARSE, "unexpected 'x'");
	expect_err(M_SMT, "0-99999999", 0, NK_EPARSE, "too large");
	expect_err(M_SMT, "0-4000000", 0, NK_EPARSE, "more than 65536");
	expect_err(M_SMT, "1 2", 0, NK_EPARSE, "unexpected ' '");
	expect_err(M_SMT, "8", 0, NK_ENODEV, "cpu 8 does not exist");
	expect_err(M_RESTRICTED, "1,0", 0, NK_EPERM, "cpu 0 is not allowed");

	path = tmpfile_str("# thread order\n3 1\n0,2  # the rest\n");
	snprintf(strategy, sizeof strategy, "file:%s", path);
	expect(M_SMT, strategy, 0, "3,1,0,2", 0);
	unlink(path);
	free(path);
	path = tmpfile_str("3\nx\n");
	snprintf(strategy, sizeof strategy, "file:%s", path);
	expect_err(M_SMT, strategy, 0, NK_EPARSE, ":2: expected a cpu number");
	unlink(path);
	free(path);
	path = tmpfile_str("# nothing\n");
	snprintf(strategy, sizeof strategy, "file:%s", path);
	expect_err(M_SMT, strategy, 0, NK_EPARSE, "empty cpu list");
	unlink(path);
	free(path);
	expect_err(M_SMT, "file:/no/such/file", 0, NK_ENOENT, "/no/such/file: no such file");
	expect_err(M_SMT, "file:", 0, NK_EPARSE, "no file named");
}

static void test_sharing(void **state)
{
	nk_machine *m = nk_test_synth(M_SMT);
	nk_placement *p = NULL;
	nk_error err = { 0 };
	double a[64] = { 0 };

	(void)state;
	/* an all-zero matrix: threads fill the nodes' shares in id order, compact inside a node */
	assert_int_equal(nk_placement_from_sharing(m, a, 4, &p, &err), 0);
	expect_p(p, "zero 4", "0,2,4,6");
	nk_placement_free(p);

	/* 4 threads: 0-3 and 1-2 share most (only the upper triangle given: a[i][j] + a[j][i] counts) */
	memset(a, 0, sizeof a);
	a[0 * 4 + 3] = 10;
	a[1 * 4 + 2] = 8;
	a[0 * 4 + 1] = a[0 * 4 + 2] = a[1 * 4 + 3] = a[2 * 4 + 3] = 1;
	assert_int_equal(nk_placement_from_sharing(m, a, 4, &p, &err), 0);
	expect_p(p, "pairs 4", "0,4,6,2");
	assert_int_equal(nk_placement_node(p, 0), 0);
	assert_int_equal(nk_placement_node(p, 3), 0);
	assert_int_equal(nk_placement_node(p, 1), 1);
	nk_placement_free(p);

	/* 8 threads: pairs (0,7) (1,6) (2,5) (3,4) at 100, and 10 inside {0,1,6,7} and {2,3,4,5}:
	 * node 0 gets {0,1,6,7}, core 0 the pair (0,7), core 1 (1,6); node 1 likewise */
	memset(a, 0, sizeof a);
#define S(i, j, v) (a[(i) * 8 + (j)] = a[(j) * 8 + (i)] = (v))
	S(0, 7, 100);
	S(1, 6, 100);
	S(2, 5, 100);
	S(3, 4, 100);
	S(0, 1, 10), S(0, 6, 10), S(7, 1, 10), S(7, 6, 10);
	S(2, 3, 10), S(2, 4, 10), S(5, 3, 10), S(5, 4, 10);
#undef S
	assert_int_equal(nk_placement_from_sharing(m, a, 8, &p, &err), 0);
	expect_p(p, "groups 8", "0,2,4,6,7,5,3,1");
	assert_int_equal(nk_placement_oversubscribed(p), 0);
	nk_placement_free(p);

	/* one thread */
	assert_int_equal(nk_placement_from_sharing(m, a, 1, &p, &err), 0);
	expect_p(p, "one", "0");
	nk_placement_free(p);
	nk_machine_free(m);

	/* more threads than cpus: node shares 2,2,1,1 on 4 single-cpu nodes */
	m = nk_test_synth(M_4N);
	memset(a, 0, sizeof a);
	assert_int_equal(nk_placement_from_sharing(m, a, 6, &p, &err), 0);
	expect_p(p, "oversubscribed 6", "0,0,1,1,2,3");
	assert_int_equal(nk_placement_oversubscribed(p), 1);
	nk_placement_free(p);
	nk_machine_free(m);
}

static void test_sharing_file(void **state)
{
	char *path;
	char strategy[600];

	(void)state;
	path = tmpfile_str("0 0 0 10\n0 0 8 0\n0 0 0 0\n0 0 0 0\n");
	snprintf(strategy, sizeof strategy, "sharing:%s", path);
	expect(M_SMT, strategy, 0, "0,4,6,2", 0);
	expect(M_SMT, strategy, 4, "0,4,6,2", 0);
	expect_err(M_SMT, strategy, 3, NK_EINVAL, "a 4 x 4 sharing matrix for 3 threads");
	unlink(path);
	free(path);
	expect_err(M_SMT, "sharing:/no/such/matrix", 0, NK_ENOENT, "no such file");
	expect_err(M_SMT, "sharing:", 0, NK_EPARSE, "no file named");
}

static void test_errors(void **state)
{
	nk_machine *m = nk_test_synth(M_SMT);
	nk_placement *p = NULL;
	nk_error err = { 0 };
	double a[4] = { 0, 1, 1, 0 };
	char buf[8];
	int cpus[3];

	(void)state;
	assert_int_equal(nk_placement_build(NULL, "compact", 0, &p, &err), NK_EINVAL);
	assert_int_equal(nk_placement_build(m, NULL, 0, &p, &err), NK_EINVAL);
	assert_int_equal(nk_placement_build(m, "compact", 0, NULL, &err), NK_EINVAL);
	assert_int_equal(nk_placement_build(m, "compact", -1, &p, &err), NK_EINVAL);
	assert_int_equal(nk_placement_build(m, "compact", 65537, &p, NULL), NK_EINVAL);
	assert_null(p);
	expect_err(M_SMT, "bogus", 0, NK_EPARSE, "unknown placement \"bogus\"");
	expect_err(M_SMT, "", 0, NK_EPARSE, "unknown placement");
	expect_err(M_SMT, "Compact", 0, NK_EPARSE, "unknown placement");

	assert_int_equal(nk_placement_from_sharing(m, NULL, 2, &p, &err), NK_EINVAL);
	assert_int_equal(nk_placement_from_sharing(m, a, 0, &p, &err), NK_EINVAL);
	a[1] = -1;
	assert_int_equal(nk_placement_from_sharing(m, a, 2, &p, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "[0][1]"));
	a[1] = NAN;
	assert_int_equal(nk_placement_from_sharing(m, a, 2, &p, &err), NK_EINVAL);
	a[1] = INFINITY;
	assert_int_equal(nk_placement_from_sharing(m, a, 2, &p, &err), NK_EINVAL);
	assert_null(p);

	/* accessors: NULL and out-of-range threads */
	assert_int_equal(nk_placement_num_threads(NULL), NK_EINVAL);
	assert_int_equal(nk_placement_cpu(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_placement_node(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_placement_oversubscribed(NULL), NK_EINVAL);
	assert_int_equal(nk_placement_cpus(NULL, cpus, 3), NK_EINVAL);
	assert_int_equal(nk_placement_format(NULL, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_placement_omp_places(NULL, buf, sizeof buf), NK_EINVAL);
	nk_placement_free(NULL);

	p = build(m, "compact", 4); /* 0,2,4,6 */
	assert_int_equal(nk_placement_num_threads(p), 4);
	assert_int_equal(nk_placement_cpu(p, 1), 2);
	assert_int_equal(nk_placement_cpu(p, -1), NK_EINVAL);
	assert_int_equal(nk_placement_cpu(p, 4), NK_EINVAL);
	assert_int_equal(nk_placement_node(p, 3), 1);
	assert_int_equal(nk_placement_node(p, 4), NK_EINVAL);
	assert_int_equal(nk_placement_cpus(p, NULL, 0), 4);
	assert_int_equal(nk_placement_cpus(p, NULL, 1), NK_EINVAL);
	cpus[2] = -5;
	assert_int_equal(nk_placement_cpus(p, cpus, 2), 4);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[1], 2);
	assert_int_equal(cpus[2], -5);
	/* snprintf semantics, whole items only */
	assert_int_equal(nk_placement_format(p, NULL, 0), 7);
	assert_int_equal(nk_placement_format(p, buf, 5), 7);
	assert_string_equal(buf, "0,2");
	assert_int_equal(nk_placement_omp_places(p, NULL, 0), 15);
	{
		char big[32];
		assert_int_equal(nk_placement_omp_places(p, big, sizeof big), 15);
		assert_string_equal(big, "{0},{2},{4},{6}");
	}
	nk_placement_free(p);
	nk_machine_free(m);
}

/* Pinning on this host: every allowed cpu, a wrapping thread id, bad arguments. */
static void test_pin_live(void **state)
{
	nk_machine *m = NULL;
	nk_placement *p;
	nk_error err = { 0 };
	cpu_set_t saved;
	int n, cpu = -1, node = -2;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
	if (nk_machine_load_live(&m, &err))
		fail_msg("%s", err.message);
	p = build(m, "compact", 0);
	n = nk_placement_num_threads(p);
	for (int t = 0; t < n + 2; t++) {
		assert_int_equal(nk_thread_pin(p, t, &err), 0);
		assert_int_equal(nk_thread_where(m, &cpu, &node), 0);
		assert_int_equal(cpu, nk_placement_cpu(p, t % n));
		assert_int_equal(node, nk_placement_node(p, t % n));
	}
	assert_int_equal(nk_thread_where(NULL, &cpu, NULL), 0);
	assert_int_equal(nk_thread_where(NULL, NULL, NULL), 0);
	assert_int_equal(nk_thread_pin(NULL, 0, &err), NK_EINVAL);
	assert_int_equal(nk_thread_pin(p, -1, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "-1"));
	nk_placement_free(p);
	nk_machine_free(m);

	/* a machine that does not have the cpu we run on */
	m = nk_test_synth("nodes=1 cores=1");
	if (cpu != 0)
		assert_int_equal(nk_thread_where(m, &cpu, &node), NK_ENODEV);
	nk_machine_free(m);
	assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compact),    cmocka_unit_test(test_scatter),      cmocka_unit_test(test_cache_order),
		cmocka_unit_test(test_list),       cmocka_unit_test(test_sharing),      cmocka_unit_test(test_sharing_file),
		cmocka_unit_test(test_errors),     cmocka_unit_test(test_pin_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
