/* SPDX-License-Identifier: BSD-3-Clause
 * NUMA arrays placed by every policy, checked page by page.  A unit test on
 * any machine (on one node every page is on node 0, which is checked too),
 * and the real check in the NUMA guests (tests/vm/tests/array_placement runs
 * this binary there): for each policy, on untouched memory (policy first,
 * then first touch) and on touched memory (migration), then a second policy
 * over the first (a new program phase):
 *   - nk_where page by page equals the plan (nk_plan_nodes), no fallback;
 *   - /proc/self/numa_maps (an independent view: the kernel's per-VMA
 *     counts) gives the same pages per node as nk_where;
 *   - the contents survive every migration.
 * Options (for the guest): -v prints one line per case.
 */
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static nk_machine *machine;
static int verbose;
static int mem_nodes[64];
static int nmem;

#define ROWS 16
#define ROW_PAGES 32 /* 512 pages per array: quick even under emulation */

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Policies of issue 3 over the nodes of this machine (texts built at run time for weights). */
static int policy_texts(char texts[][96], int max)
{
	int n = 0;
	static const char *const fixed[] = {
		"bind", "block", "block:split=rows", "block:split=cols", "cyclic", "cyclic_block:block=16K",
		"cyclic_neighbors", "skew_mapp", "prime_mapp", "random:seed=7", "block_cyclic:block=24K",
		"block_exclusive",
	};

	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < max; i++)
		snprintf(texts[n++], 96, "%s", fixed[i]);
	if (nmem >= 2 && n < max)
		snprintf(texts[n++], 96, "weighted:weights=%d=3/%d=1", mem_nodes[0], mem_nodes[1]);
	if (nmem >= 2 && n < max) /* an explicit set in reverse order */
		snprintf(texts[n++], 96, "cyclic:nodes=%d,%d", mem_nodes[nmem - 1], mem_nodes[0]);
	return n;
}

/* Pages per node of [lo, hi) according to numa_maps (every VMA inside the range). */
static void numa_maps_counts(uintptr_t lo, uintptr_t hi, size_t *counts, int nnodes)
{
	nk_numamaps *nm = NULL;
	nk_error err = { 0, "" };

	if (nk_numamaps_read(0, &nm, &err))
		fail_msg("numa_maps: %s", err.message);
	memset(counts, 0, (size_t)(nnodes + 1) * sizeof *counts);
	for (size_t i = 0; i < nk_numamaps_count(nm); i++) {
		nk_maps_entry e;
		nk_numamaps_entry(nm, i, &e);
		if (e.addr < lo || e.addr >= hi)
			continue;
		for (size_t k = 0; k < e.nnodes; k++) {
			int idx = nk_machine_node_index(machine, e.nodes[k]);
			assert_true(idx >= 0);
			counts[idx] += (size_t)(e.node_pages[k] * e.page_size / page());
		}
	}
	nk_numamaps_free(nm);
}

/* The placement of @p a equals the plan of @p p, by move_pages and by numa_maps. */
static void check_placement(nk_array *a, const nk_policy *p, const char *what)
{
	nk_region r;
	nk_plan *pl = NULL;
	nk_error err = { 0, "" };
	int nn = nk_machine_num_nodes(machine);
	size_t npages, *c_where = calloc((size_t)nn + 1, sizeof(size_t)), *c_maps = calloc((size_t)nn + 1, sizeof(size_t));
	int *want, *got;

	assert_non_null(c_where);
	assert_non_null(c_maps);
	nk_array_region(a, &r);
	if (nk_plan_build(machine, p, &r, &pl, &err))
		fail_msg("%s: plan: %s", what, err.message);
	npages = nk_plan_num_pages(pl);
	want = calloc(npages, sizeof *want);
	got = calloc(npages, sizeof *got);
	assert_non_null(want);
	assert_non_null(got);
	assert_int_equal(nk_plan_nodes(pl, 0, npages, want), 0);
	assert_int_equal(nk_array_where(a, got, c_where), 0);
	size_t wrong = 0, first = 0;
	for (size_t i = 0; i < npages; i++)
		if (got[i] != want[i] && !wrong++)
			first = i;
	if (wrong)
		fail_msg("%s: %zu of %zu pages off plan, first page %zu on node %d, planned %d", what, wrong, npages,
			 first, got[first], want[first]);
	assert_int_equal(c_where[nn], 0); /* nothing untouched */
	numa_maps_counts((uintptr_t)r.addr, (uintptr_t)r.addr + npages * page(), c_maps, nn);
	for (int k = 0; k < nn; k++)
		if (c_maps[k] != c_where[k])
			fail_msg("%s: node %d: numa_maps %zu pages, move_pages %zu", what, nk_machine_node_id(machine, k),
				 c_maps[k], c_where[k]);
	if (verbose) {
		printf("ok %-34s", what);
		for (int k = 0; k < nn; k++)
			printf(" N%d=%zu", nk_machine_node_id(machine, k), c_where[k]);
		printf("\n");
	}
	free(want);
	free(got);
	free(c_where);
	free(c_maps);
	nk_plan_free(pl);
}

static void fill(nk_array *a, unsigned seed)
{
	uint32_t **x = nk_array_rows(a);
	size_t cols = ROW_PAGES * page() / 4;

	for (size_t i = 0; i < ROWS; i++)
		for (size_t j = 0; j < cols; j++)
			x[i][j] = (uint32_t)(seed * 2654435761u + i * cols + j);
}

static void check_fill(nk_array *a, unsigned seed, const char *what)
{
	uint32_t **x = nk_array_rows(a);
	size_t cols = ROW_PAGES * page() / 4;

	for (size_t i = 0; i < ROWS; i++)
		for (size_t j = 0; j < cols; j++)
			if (x[i][j] != (uint32_t)(seed * 2654435761u + i * cols + j))
				fail_msg("%s: element [%zu][%zu] changed", what, i, j);
}

static void apply_ok(nk_array *a, const nk_policy *p, const char *what)
{
	nk_apply_result res;
	nk_error err = { 0, "" };

	if (nk_array_apply(a, p, NK_APPLY_STRICT, &res, &err))
		fail_msg("%s: apply: %s", what, err.message);
	assert_int_equal(res.pages_fallback, 0);
	assert_int_equal(res.pages_failed, 0);
}

static void test_every_policy(void **state)
{
	char texts[32][96];
	int n = policy_texts(texts, 32);
	const size_t dims[2] = { ROWS, ROW_PAGES * page() / 4 };

	for (int t = 0; t < n; t++) {
		nk_policy *p = NULL, *q = NULL;
		nk_array *a = NULL;
		nk_error err = { 0, "" };
		char what[160];

		if (nk_policy_parse(texts[t], &p, &err))
			fail_msg("%s: %s", texts[t], err.message);
		/* untouched: policy first, then the first touch places the pages */
		assert_int_equal(nk_array_alloc(machine, 4, 2, dims, NK_ARRAY_NO_THP, &a), 0);
		snprintf(what, sizeof what, "%s untouched", texts[t]);
		apply_ok(a, p, what);
		fill(a, (unsigned)t);
		check_placement(a, p, what);
		/* a new phase: another policy over touched memory migrates */
		assert_int_equal(nk_policy_parse(t % 2 ? "cyclic" : "block:split=rows", &q, NULL), 0);
		snprintf(what, sizeof what, "%s then %s", texts[t], t % 2 ? "cyclic" : "block:split=rows");
		apply_ok(a, q, what);
		check_placement(a, q, what);
		check_fill(a, (unsigned)t, what);
		nk_array_free(a);

		/* touched: first touch on this thread's node, then the policy migrates */
		assert_int_equal(nk_array_alloc(machine, 4, 2, dims, NK_ARRAY_NO_THP, &a), 0);
		fill(a, (unsigned)t + 100);
		snprintf(what, sizeof what, "%s touched", texts[t]);
		apply_ok(a, p, what);
		check_placement(a, p, what);
		check_fill(a, (unsigned)t + 100, what);
		nk_array_stats st;
		nk_array_stats_get(a, &st);
		assert_int_equal(st.applications, 1);
		nk_array_free(a);
		nk_policy_free(p);
		nk_policy_free(q);
	}
}

int main(int argc, char **argv)
{
	nk_error err = { 0, "" };
	int rc;

	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	if (nk_machine_load_live(&machine, &err)) {
		fprintf(stderr, "live machine: %s\n", err.message);
		return 1;
	}
	for (int i = 0; i < nk_machine_num_nodes(machine) && nmem < 64; i++) {
		int id = nk_machine_node_id(machine, i);
		int f = nk_machine_node_flags(machine, id);
		if ((f & NK_NODE_HAS_MEMORY) && (f & NK_NODE_MEM_ALLOWED))
			mem_nodes[nmem++] = id;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_policy),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	nk_machine_free(machine);
	return rc;
}
