/* SPDX-License-Identifier: BSD-3-Clause
 * nk_apply on the live kernel of this host (often one node, where every plan
 * is "node 0": the calls, counts and contents are what is checked; placement
 * across nodes is checked in the guests, tests/guest/).  Also run under
 * -DNK_SANITIZE=thread: threads applying plans to disjoint regions and to
 * one region at once.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/memory.h"
#include "os/os.h"

static nk_machine *live(void)
{
	nk_machine *m = NULL;
	nk_error e;
	if (nk_machine_load_live(&m, &e))
		fail_msg("%s", e.message);
	return m;
}

static nk_plan *plan_for(const nk_machine *m, const char *policy, void *addr, size_t len)
{
	nk_policy *p = NULL;
	nk_plan *pl = NULL;
	nk_error e;
	if (nk_policy_parse(policy, &p, &e))
		fail_msg("%s: %s", policy, e.message);
	nk_region r = { .addr = addr, .len = len };
	if (nk_plan_build(m, p, &r, &pl, &e))
		fail_msg("%s: %s", policy, e.message);
	nk_policy_free(p);
	return pl;
}

static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void test_untouched_then_touched(void **state)
{
	nk_machine *m = live();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), np = 2500, len = np * ps;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	nk_plan *pl = plan_for(m, "cyclic", p, len);
	nk_apply_result r;
	nk_error e;
	assert_int_equal(nk_apply(m, pl, p, 0, &r, &e), 0);
	assert_int_equal(r.pages, np);
	assert_int_equal(r.pages_untouched, np);
	if (nk_machine_num_nodes(m) == 1) /* range check + the one mbind + queries */
		assert_int_equal(r.syscalls, 2 + (np + NK__MEM_BATCH - 1) / NK__MEM_BATCH);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 131 + 7);
	uint64_t sum = checksum(p, len);
	/* every page where the plan wants it (a one-node host: in place) */
	assert_int_equal(nk_apply(m, pl, p, 0, &r, &e), 0);
	assert_int_equal(r.pages_in_place + r.pages_moved + r.pages_fallback, np);
	assert_int_equal(r.pages_failed, 0);
	if (nk_machine_num_nodes(m) == 1) {
		assert_int_equal(r.pages_in_place, np);
		assert_int_equal(r.syscalls, 1 + (np + NK__MEM_BATCH - 1) / NK__MEM_BATCH);
	}
	int *nodes = malloc(np * sizeof *nodes);
	assert_int_equal(nk_where(m, p, len, nodes, NULL), 0);
	for (size_t i = 0; i < np; i++)
		assert_int_equal(nodes[i], nk_plan_node(pl, i));
	assert_int_equal(checksum(p, len), sum);
	/* STRICT and NO_MOVE are accepted; nothing to do */
	assert_int_equal(nk_apply(m, pl, p, NK_APPLY_STRICT | NK_APPLY_NO_MOVE, &r, &e), 0);
	assert_int_equal(checksum(p, len), sum);
	free(nodes);
	nk_plan_free(pl);
	munmap(p, len);
	nk_machine_free(m);
}

/* Memory from malloc: an unaligned region; the plan's page 0 is the page holding its first byte. */
static void test_malloc_region(void **state)
{
	nk_machine *m = live();
	size_t len = 300000;
	unsigned char *p = malloc(len);
	assert_non_null(p);
	memset(p, 0x5a, len);
	nk_plan *pl = plan_for(m, "bind", p + 1, len - 1);
	nk_apply_result r;
	nk_error e;
	assert_int_equal(nk_apply(m, pl, p + 1, 0, &r, &e), 0);
	assert_int_equal(r.pages, nk_plan_num_pages(pl));
	assert_int_equal(r.pages_failed, 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], 0x5a);
	/* the plan is for p + 1, not p */
	assert_int_equal(nk_apply(m, pl, p, 0, &r, &e), NK_EINVAL);
	assert_int_equal(nk_apply(m, pl, p + 1, 0x100, &r, &e), NK_EINVAL);
	assert_int_equal(nk_apply(NULL, pl, p + 1, 0, &r, &e), NK_EINVAL);
	nk_plan_free(pl);
	free(p);
	nk_machine_free(m);
}

/* The OS layer's populate: pages become resident, contents unchanged. */
static void test_populate_keeps_contents(void **state)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), np = 64;
	unsigned char *p = mmap(NULL, np * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < np; i += 2)
		p[i * ps + 5] = (unsigned char)i;
	int e = 0;
	int rc = nk__os_populate_write(p, np * ps, &e);
	if (rc == NK_EINVAL && e == EINVAL) {
		munmap(p, np * ps);
		skip(); /* kernel < 5.14 */
	}
	assert_int_equal(rc, 0);
	void *pages[64];
	int st[64];
	for (size_t i = 0; i < np; i++)
		pages[i] = p + i * ps;
	assert_int_equal(nk__os_move_pages(np, pages, NULL, st, 0, NULL), 0);
	for (size_t i = 0; i < np; i++) {
		assert_true(st[i] >= 0);
		assert_int_equal(p[i * ps + 5], i % 2 ? 0 : (unsigned char)i);
	}
	/* read-only memory cannot be populated for writing: an error, not a crash */
	assert_int_equal(mprotect(p, np * ps, PROT_READ), 0);
	assert_true(nk__os_populate_write(p, np * ps, &e) < 0);
	assert_true(e != 0);
	munmap(p, np * ps);
	uint64_t total = 0, freeb = 0;
	assert_int_equal(nk__os_node_meminfo(0, &total, &freeb), 0);
	assert_true(total > 0 && freeb > 0 && freeb <= total);
	assert_int_equal(nk__os_node_meminfo(-1, &total, &freeb), NK_EINVAL);
	assert_int_equal(nk__os_node_meminfo(4000, &total, &freeb), NK_ENOENT);
	assert_int_equal(nk__os_range_mapped(p, np * ps, &e), NK_ENOMEM);
	assert_int_equal(e, ENOMEM);
}

/* ---- concurrency: no shared mutable state, so TSan must stay silent ---- */

struct job {
	const nk_machine *m;
	const nk_plan *pl;
	void *addr;
	int rc;
};

static void *apply_thread(void *arg)
{
	struct job *j = arg;
	nk_apply_result r;
	for (int k = 0; k < 5 && !j->rc; k++)
		j->rc = nk_apply(j->m, j->pl, j->addr, 0, &r, NULL);
	return NULL;
}

static void test_threads(void **state)
{
	enum { T = 4 };
	nk_machine *m = live();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = 512 * ps;
	unsigned char *p = mmap(NULL, (T + 1) * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < (T + 1) * len; i++)
		p[i] = (unsigned char)(i >> 3);
	uint64_t sum = checksum(p, (T + 1) * len);
	const char *pol[] = { "cyclic", "bind", "block", "random:seed=3", "skew_mapp" };
	nk_plan *plans[2 * T];
	struct job jobs[2 * T];
	pthread_t th[2 * T];
	for (int t = 0; t < 2 * T; t++) {
		/* threads 0..T-1: a region each; T..2T-1: all on the last region */
		void *a = t < T ? p + (size_t)t * len : p + T * len;
		plans[t] = plan_for(m, pol[t % 5], a, len);
		jobs[t] = (struct job){ m, plans[t], a, 0 };
		assert_int_equal(pthread_create(&th[t], NULL, apply_thread, &jobs[t]), 0);
	}
	for (int t = 0; t < 2 * T; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(jobs[t].rc, 0);
		nk_plan_free(plans[t]);
	}
	assert_int_equal(checksum(p, (T + 1) * len), sum);
	munmap(p, (T + 1) * len);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untouched_then_touched),
		cmocka_unit_test(test_malloc_region),
		cmocka_unit_test(test_populate_keeps_contents),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
