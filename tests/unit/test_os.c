/* SPDX-License-Identifier: BSD-3-Clause
 * The OS layer's system-call wrappers on the live kernel.  This machine may
 * have one node only; the multi-node behaviour is tested in guests.  Checks
 * are against what the kernel itself reports (get_mempolicy, move_pages).
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "os/os.h"

static void test_mbind_then_query(void **state)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 8 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	int node0 = 0;
	/* never touched: move_pages says -ENOENT */
	void *pages[8];
	int status[8];
	for (int i = 0; i < 8; i++)
		pages[i] = p + i * ps;
	assert_int_equal(nk__os_move_pages(8, pages, NULL, status, 0, NULL), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(status[i], -ENOENT);
	assert_int_equal(nk__os_mbind(p, 8 * ps, NK__MPOL_BIND, &node0, 1, 0, NULL), 0);
	int mode = -1;
	nk__ilist nodes = { 0 };
	assert_int_equal(nk__os_get_mempolicy(&mode, &nodes, p, NK__MPOL_F_ADDR, NULL), 0);
	assert_int_equal(mode, NK__MPOL_BIND);
	assert_int_equal(nodes.n, 1);
	assert_int_equal(nodes.v[0], 0);
	memset(p, 1, 8 * ps);
	assert_int_equal(nk__os_move_pages(8, pages, NULL, status, 0, NULL), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(status[i], 0);
	/* moving to the node the pages are on is a no-op that succeeds */
	int targets[8] = { 0 };
	assert_int_equal(nk__os_move_pages(8, pages, targets, status, 0, NULL), 0);
	/* a node that does not exist: the kernel refuses, the wrapper hands its errno on */
	int bogus = 4000, e = 0;
	int rc = nk__os_mbind(p, 8 * ps, NK__MPOL_BIND, &bogus, 1, 0, &e);
	assert_true((rc == NK_EINVAL && e == EINVAL) || (rc == NK_ENODEV && e == ENODEV));
	int neg = -1;
	assert_int_equal(nk__os_mbind(p, 8 * ps, NK__MPOL_BIND, &neg, 1, 0, &e), NK_EINVAL);
	assert_int_equal(e, EINVAL);
	nk__ilist_free(&nodes);
	munmap(p, 8 * ps);
}

static void test_affinity_and_getcpu(void **state)
{
	nk__ilist allowed = { 0 };
	assert_int_equal(nk__os_affinity(&allowed), 0);
	assert_true(allowed.n >= 1);
	int cpu = allowed.v[allowed.n - 1], now = -1, node = -1;
	assert_int_equal(nk__os_set_affinity(0, &cpu, 1, NULL), 0);
	assert_int_equal(nk__os_getcpu(&now, &node, NULL), 0);
	assert_int_equal(now, cpu);
	assert_true(node >= 0);
	assert_int_equal(nk__os_set_affinity(0, allowed.v, allowed.n, NULL), 0);
	int e = 0;
	assert_int_equal(nk__os_set_affinity(0, NULL, 0, &e), NK_EINVAL);
	assert_int_equal(e, EINVAL);
	assert_true(nk__os_gettid() > 0);
	nk__ilist_free(&allowed);
}

static void test_set_mempolicy(void **state)
{
	int node0 = 0, mode = -1;
	assert_int_equal(nk__os_set_mempolicy(NK__MPOL_PREFERRED, &node0, 1, NULL), 0);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_PREFERRED);
	assert_int_equal(nk__os_set_mempolicy(NK__MPOL_DEFAULT, NULL, 0, NULL), 0);
	assert_int_equal(nk__os_get_mempolicy(&mode, NULL, NULL, 0, NULL), 0);
	assert_int_equal(mode, NK__MPOL_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mbind_then_query),
		cmocka_unit_test(test_affinity_and_getcpu),
		cmocka_unit_test(test_set_mempolicy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
