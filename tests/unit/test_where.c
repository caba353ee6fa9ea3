/* SPDX-License-Identifier: BSD-3-Clause
 * nk_where on the live kernel (this host may have one node; multi-node
 * residency is checked in the guests, tests/guest/).  The truth is what the
 * test itself did to the memory: touched pages are resident, untouched ones
 * are not, a read-only touch maps the shared zero page (no memory).
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/memory.h"

static nk_machine *live(void)
{
	nk_machine *m = NULL;
	nk_error e;
	if (nk_machine_load_live(&m, &e))
		fail_msg("%s", e.message);
	return m;
}

static void test_touched_and_untouched(void **state)
{
	nk_machine *m = live();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), np = 3000;
	int nn = nk_machine_num_nodes(m);
	char *p = mmap(NULL, np * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	madvise(p, np * ps, MADV_NOHUGEPAGE);
	int *nodes = malloc(np * sizeof *nodes);
	size_t *counts = calloc((size_t)nn + 1, sizeof *counts);

	assert_int_equal(nk_where(m, p, np * ps, nodes, counts), 0);
	for (size_t i = 0; i < np; i++)
		assert_int_equal(nodes[i], -1);
	assert_int_equal(counts[nn], np);

	/* touch every third page by writing, read every fifth (zero page) */
	volatile char sink = 0;
	for (size_t i = 0; i < np; i++) {
		if (i % 3 == 0)
			p[i * ps] = 1;
		else if (i % 5 == 0)
			sink += p[i * ps];
	}
	(void)sink;
	assert_int_equal(nk_where(m, p, np * ps, nodes, counts), 0);
	size_t resident = 0;
	for (size_t i = 0; i < np; i++) {
		if (i % 3 == 0) {
			assert_true(nodes[i] >= 0);
			assert_true(nk_machine_node_index(m, nodes[i]) >= 0);
			resident++;
		} else {
			assert_int_equal(nodes[i], -1);
		}
	}
	size_t sum = 0;
	for (int k = 0; k < nn; k++)
		sum += counts[k];
	assert_int_equal(sum, resident);
	assert_int_equal(counts[nn], np - resident);

	/* counts only, nodes only */
	memset(counts, 0xff, ((size_t)nn + 1) * sizeof *counts);
	assert_int_equal(nk_where(m, p, np * ps, NULL, counts), 0);
	assert_int_equal(counts[nn], np - resident);
	assert_int_equal(nk_where(NULL, p, np * ps, nodes, NULL), 0);
	assert_true(nodes[0] >= 0);

	/* an unaligned range covers every page it touches: bytes ps-1 .. ps+1 are pages 0 and 1 */
	int two[2];
	assert_int_equal(nk_where(m, p + ps - 1, 2, two, NULL), 0);
	assert_true(two[0] >= 0);
	assert_int_equal(two[1], -1);

	free(counts);
	free(nodes);
	munmap(p, np * ps);
	nk_machine_free(m);
}

static void test_bad_input(void **state)
{
	nk_machine *m = live();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	size_t counts[8];
	int nodes[4];
	assert_int_equal(nk_where(m, NULL, ps, nodes, counts), NK_EINVAL);
	assert_int_equal(nk_where(m, p, 0, nodes, counts), NK_EINVAL);
	assert_int_equal(nk_where(NULL, p, ps, NULL, counts), NK_EINVAL); /* counts need the machine */
	assert_int_equal(nk_where(m, (void *)(UINTPTR_MAX - 10), 100, nodes, NULL), NK_EINVAL);
	/* a hole: unmap the middle pages */
	munmap(p + ps, 2 * ps);
	assert_int_equal(nk_where(m, p, 4 * ps, nodes, counts), NK_EINVAL);
	assert_int_equal(nk_where(m, p, ps, nodes, counts), 0);
	munmap(p, ps);
	munmap(p + 3 * ps, ps);
	/* a machine that is not this one: node 0 missing */
	nk_machine *other = NULL;
	assert_int_equal(nk_machine_load_synthetic("nodes=2 ids=5,7", &other, NULL), 0);
	char *q = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q[0] = 1;
	int here = -1;
	assert_int_equal(nk_where(m, q, 1, &here, NULL), 0);
	if (nk_machine_node_index(other, here) < 0)
		assert_int_equal(nk_where(other, q, 1, NULL, counts), NK_ENODEV);
	munmap(q, ps);
	nk_machine_free(other);
	nk_machine_free(m);
}

/* Batching: the same answer for every batch size, one call per batch. */
static void test_batches(void **state)
{
	nk_machine *m = live();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), np = 1000;
	char *p = mmap(NULL, np * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < np; i += 2)
		p[i * ps] = 1;
	int *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
	size_t calls;
	assert_int_equal(nk__where_ops(m, p, np * ps, a, NULL, &nk__memops_os, 1024, &calls), 0);
	assert_int_equal(calls, 2); /* range check + one query */
	assert_int_equal(nk__where_ops(m, p, np * ps, b, NULL, &nk__memops_os, 7, &calls), 0);
	assert_int_equal(calls, 1 + (np + 6) / 7);
	assert_memory_equal(a, b, np * sizeof *a);
	assert_int_equal(nk__where_ops(m, p, np * ps, b, NULL, &nk__memops_os, 0, &calls), NK_EINVAL);
	free(a);
	free(b);
	munmap(p, np * ps);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_touched_and_untouched),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
