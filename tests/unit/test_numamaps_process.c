/* SPDX-License-Identifier: BSD-3-Clause
 * Process-wide policies (nk_process_set_policy / nk_process_set_cpus, what
 * `numakit run` calls): every check against the machine model on synthetic
 * machines with sparse ids, memoryless and disallowed nodes (dry run, so
 * nothing changes here), then the real system calls on this machine,
 * verified with get_mempolicy and sched_getaffinity.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "os/os.h"

/* ids 0,1,4,9; node 4 memoryless; node 9 and cpu 3 not allowed; weights 1,2,3,4 */
#define SPARSE "nodes=4 ids=0,1,4,9 cores=1 mem=1G memless=2 allowed_nodes=0,1,4 allowed_cpus=0-2 wi=1,2,3,4"

static nk_machine *synth(const char *desc)
{
	nk_machine *m = NULL;
	nk_error err = { 0, "" };

	if (nk_machine_load_synthetic(desc, &m, &err))
		fail_msg("synthetic: %s", err.message);
	return m;
}

static void expect(int rc, int want_rc, const nk_error *err, const char *want_msg)
{
	if (rc != want_rc || (want_msg && !strstr(err->message, want_msg)))
		fail_msg("rc %d (want %d), message \"%s\" (want \"%s\")", rc, want_rc, err->message,
			 want_msg ? want_msg : "");
}

static void test_policy_checks(void **state)
{
	nk_machine *m = synth(SPARSE);
	nk_error err = { 0, "" };
	const unsigned dry = NK_PROCESS_DRY_RUN;
	int n7 = 7, n4 = 4, n9 = 9, two[2] = { 0, 1 }, dup[2] = { 1, 1 }, neg = -1;

	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, &n7, NULL, 1, dry, &err), NK_ENODEV, &err,
	       "node 7 does not exist (nodes: 0-1,4,9)");
	expect(nk_process_set_policy(m, NK_PROCESS_INTERLEAVE, &neg, NULL, 1, dry, &err), NK_ENODEV, &err,
	       "node -1 does not exist");
	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, &n4, NULL, 1, dry, &err), NK_EINVAL, &err,
	       "node 4 has no memory (a memoryless node)");
	expect(nk_process_set_policy(m, NK_PROCESS_INTERLEAVE, &n9, NULL, 1, dry, &err), NK_EPERM, &err,
	       "node 9 is not allowed to this process (allowed nodes: 0-1,4)");
	expect(nk_process_set_policy(m, NK_PROCESS_PREFERRED, two, NULL, 2, dry, &err), NK_EINVAL, &err,
	       "preferred takes one node");
	expect(nk_process_set_policy(m, NK_PROCESS_PREFERRED_MANY, dup, NULL, 2, dry, &err), NK_EINVAL, &err,
	       "node 1 is given twice");
	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, NULL, NULL, 0, dry, &err), NK_EINVAL, &err,
	       "no node given");
	expect(nk_process_set_policy(m, 42, two, NULL, 2, dry, &err), NK_EINVAL, &err, "unknown process policy");
	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, two, NULL, 2, 0x100, &err), NK_EINVAL, &err,
	       "unknown flags");
	expect(nk_process_set_policy(NULL, NK_PROCESS_MEMBIND, two, NULL, 2, dry, &err), NK_EINVAL, &err, NULL);
	/* good ones */
	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, two, NULL, 2, dry, &err), 0, &err, NULL);
	expect(nk_process_set_policy(m, NK_PROCESS_PREFERRED, &two[1], NULL, 1, dry, &err), 0, &err, NULL);
	expect(nk_process_set_policy(m, NK_PROCESS_DEFAULT, NULL, NULL, 0, dry, &err), 0, &err, NULL);
	nk_machine_free(m);
}

static void test_weighted_checks(void **state)
{
	nk_machine *m = synth(SPARSE), *nowi = synth("nodes=2");
	nk_error err = { 0, "" };
	const unsigned dry = NK_PROCESS_DRY_RUN;
	int two[2] = { 0, 1 };
	unsigned same[2] = { 1, 2 }, other[2] = { 3, 2 }, zero[2] = { 0, 2 }, big[2] = { 256, 2 };

	expect(nk_process_set_policy(m, NK_PROCESS_WEIGHTED, two, same, 2, dry, &err), 0, &err, NULL);
	expect(nk_process_set_policy(m, NK_PROCESS_WEIGHTED, two, NULL, 2, dry, &err), 0, &err, NULL);
	expect(nk_process_set_policy(m, NK_PROCESS_WEIGHTED, two, other, 2, dry, &err), NK_EINVAL, &err,
	       "weights 0=3,1=2 differ from the system's (0=1,1=2)");
	assert_non_null(strstr(err.message, "numakit does not change them"));
	assert_non_null(strstr(err.message, "/sys/kernel/mm/mempolicy/weighted_interleave/node0"));
	expect(nk_process_set_policy(m, NK_PROCESS_WEIGHTED, two, zero, 2, dry, &err), NK_EINVAL, &err,
	       "weight 0 of node 0 is outside 1..255");
	expect(nk_process_set_policy(m, NK_PROCESS_WEIGHTED, two, big, 2, dry, &err), NK_EINVAL, &err,
	       "outside 1..255");
	/* a machine whose weights are unknown cannot confirm them */
	expect(nk_process_set_policy(nowi, NK_PROCESS_WEIGHTED, two, same, 2, dry, &err), NK_ENOSYS, &err,
	       "weight of node 0 is unknown");
	nk_machine_free(m);
	nk_machine_free(nowi);
}

static void test_cpu_checks(void **state)
{
	nk_machine *m = synth(SPARSE);
	nk_error err = { 0, "" };
	const unsigned dry = NK_PROCESS_DRY_RUN;
	int c9 = 9, c3 = 3, ok[2] = { 0, 2 }, dup[2] = { 2, 2 };

	expect(nk_process_set_cpus(m, &c9, 1, dry, &err), NK_ENODEV, &err,
	       "cpu 9 does not exist or is offline (cpus: 0-3)");
	expect(nk_process_set_cpus(m, &c3, 1, dry, &err), NK_EPERM, &err,
	       "cpu 3 is not allowed to this process (allowed cpus: 0-2)");
	expect(nk_process_set_cpus(m, dup, 2, dry, &err), NK_EINVAL, &err, "cpu 2 is given twice");
	expect(nk_process_set_cpus(m, NULL, 0, dry, &err), NK_EINVAL, &err, "no cpu given");
	expect(nk_process_set_cpus(m, ok, 2, 0x10, &err), NK_EINVAL, &err, "unknown flags");
	expect(nk_process_set_cpus(m, ok, 2, dry, &err), 0, &err, NULL);
	nk_machine_free(m);
}

/* The real calls on this machine (node 0 and the allowed cpus exist everywhere). */
static void test_live(void **state)
{
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	nk__ilist cpus = { 0 }, nodes = { 0 };
	int node0 = 0, mode = -1, rc;

	assert_int_equal(nk_machine_load_live(&m, &err), 0);
	rc = nk_process_set_policy(m, NK_PROCESS_MEMBIND, &node0, NULL, 1, 0, &err);
	if (rc == NK_ENOSYS) {
		nk_machine_free(m);
		skip();
	}
	expect(rc, 0, &err, NULL);
	assert_int_equal(nk__os_get_mempolicy(&mode, &nodes, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_BIND);
	assert_int_equal(nodes.n, 1);
	assert_int_equal(nodes.v[0], 0);
	{ /* the public reader sees what was set */
		int kind = -1, got = -1;
		assert_int_equal(nk_process_get_policy(&kind, &got, 1, &err), 1);
		assert_int_equal(kind, NK_PROCESS_MEMBIND);
		assert_int_equal(got, 0);
		assert_int_equal(nk_process_get_policy(&kind, NULL, 0, &err), 1);
		assert_int_equal(nk_process_get_policy(NULL, NULL, 0, &err), NK_EINVAL);
	}

	expect(nk_process_set_policy(m, NK_PROCESS_INTERLEAVE, &node0, NULL, 1, 0, &err), 0, &err, NULL);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_INTERLEAVE);

	/* preferred-many: supported since 5.15, otherwise a clear ENOSYS */
	rc = nk_process_set_policy(m, NK_PROCESS_PREFERRED_MANY, &node0, NULL, 1, 0, &err);
	if (rc == 0) {
		assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
		assert_int_equal(mode, NK__MPOL_PREFERRED_MANY);
	} else {
		expect(rc, NK_ENOSYS, &err, "preferred-many is not supported by this kernel");
	}
	/* a dry run changes nothing */
	expect(nk_process_set_policy(m, NK_PROCESS_MEMBIND, &node0, NULL, 1, NK_PROCESS_DRY_RUN, &err), 0, &err,
	       NULL);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_true(mode != NK__MPOL_BIND);

	expect(nk_process_set_policy(m, NK_PROCESS_LOCAL, NULL, NULL, 0, 0, &err), 0, &err, NULL);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_LOCAL);
	{
		int kind = -1;
		assert_int_equal(nk_process_get_policy(&kind, NULL, 0, &err), 0);
		assert_int_equal(kind, NK_PROCESS_LOCAL);
	}

	expect(nk_process_set_policy(m, NK_PROCESS_DEFAULT, NULL, NULL, 0, 0, &err), 0, &err, NULL);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_DEFAULT);
	{
		int kind = -1;
		assert_int_equal(nk_process_get_policy(&kind, NULL, 0, &err), 0);
		assert_int_equal(kind, NK_PROCESS_DEFAULT);
	}

	/* cpus: pin to the last allowed cpu, check, restore */
	assert_int_equal(nk__os_affinity(&cpus), 0);
	int last = cpus.v[cpus.n - 1], now = -1;
	expect(nk_process_set_cpus(m, &last, 1, 0, &err), 0, &err, NULL);
	assert_int_equal(nk__os_getcpu(&now, NULL, NULL), 0);
	assert_int_equal(now, last);
	expect(nk_process_set_cpus(m, cpus.v, cpus.n, 0, &err), 0, &err, NULL);
	nk__ilist_free(&cpus);
	nk__ilist_free(&nodes);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_checks),
		cmocka_unit_test(test_weighted_checks),
		cmocka_unit_test(test_cpu_checks),
		cmocka_unit_test(test_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
