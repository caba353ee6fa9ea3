/* SPDX-License-Identifier: BSD-3-Clause
 * NUMA arrays: geometry (row and plane pointers address the right bytes),
 * the alignment rule on machines of 1..16 nodes, one mapping per array (no
 * shared pages, tables outside the data), bad sizes, nk_array_from on inner
 * and outer addresses, statistics and history of applied policies (on this
 * machine; page-by-page placement is checked in the NUMA guests).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static nk_machine *synth(const char *desc)
{
	nk_machine *m = NULL;
	nk_error err = { 0, "" };

	if (nk_machine_load_synthetic(desc, &m, &err))
		fail_msg("synthetic: %s", err.message);
	return m;
}

static nk_machine *live(void)
{
	nk_machine *m = NULL;
	nk_error err = { 0, "" };

	if (nk_machine_load_live(&m, &err))
		fail_msg("live: %s", err.message);
	return m;
}

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static void test_geometry_2d(void **state)
{
	nk_machine *m = synth("nodes=4 cores=1");
	const size_t dims[2] = { 37, 1001 };
	nk_array *a = NULL;
	nk_region r;

	assert_int_equal(nk_array_alloc(m, sizeof(double), 2, dims, 0, &a), 0);
	double **x = nk_array_rows(a);
	double *d = nk_array_data(a);
	assert_non_null(x);
	assert_non_null(d);
	assert_true((uintptr_t)d % page() == 0);
	/* untouched memory reads as zero */
	assert_true(d[0] == 0.0 && d[37 * 1001 - 1] == 0.0);
	for (size_t i = 0; i < dims[0]; i++) {
		assert_ptr_equal(x[i], d + i * dims[1]);
		for (size_t j = 0; j < dims[1]; j++)
			x[i][j] = (double)(i * 10000 + j);
	}
	for (size_t k = 0; k < dims[0] * dims[1]; k++)
		assert_true(d[k] == (double)((k / dims[1]) * 10000 + k % dims[1]));
	/* the table is not in the data mapping */
	assert_true((uintptr_t)x + dims[0] * sizeof *x <= (uintptr_t)d ||
		    (uintptr_t)x >= (uintptr_t)d + dims[0] * dims[1] * sizeof *d);

	assert_int_equal(nk_array_region(a, &r), 0);
	assert_ptr_equal(r.addr, d);
	assert_int_equal(r.len, dims[0] * dims[1] * sizeof(double));
	assert_int_equal(r.elem_size, sizeof(double));
	assert_int_equal(r.ndims, 2);
	assert_int_equal(r.dims[0], 37);
	assert_int_equal(r.dims[1], 1001);
	assert_int_equal(r.dims[2], 0);
	assert_int_equal(nk_array_region(NULL, &r), NK_EINVAL);
	nk_array_free(a);
	nk_machine_free(m);
}

/* An odd element size: the row pitch is cols * elem, no padding. */
struct rgb {
	unsigned char c[3];
};

static void test_geometry_3d(void **state)
{
	nk_machine *m = synth("nodes=3 cores=1");
	const size_t dims[3] = { 5, 7, 11 };
	nk_array *a = NULL;

	assert_int_equal(nk_array_alloc(m, sizeof(struct rgb), 3, dims, 0, &a), 0);
	struct rgb ***x = nk_array_rows(a);
	unsigned char *d = nk_array_data(a);
	for (size_t i = 0; i < 5; i++)
		for (size_t j = 0; j < 7; j++) {
			assert_ptr_equal((unsigned char *)x[i][j], d + ((i * 7 + j) * 11) * 3);
			for (size_t k = 0; k < 11; k++) {
				x[i][j][k].c[0] = (unsigned char)i;
				x[i][j][k].c[1] = (unsigned char)j;
				x[i][j][k].c[2] = (unsigned char)k;
			}
		}
	for (size_t e = 0; e < 5 * 7 * 11; e++) {
		assert_int_equal(d[3 * e], e / 77);
		assert_int_equal(d[3 * e + 1], (e / 11) % 7);
		assert_int_equal(d[3 * e + 2], e % 11);
	}
	nk_region r;
	nk_array_region(a, &r);
	assert_int_equal(r.ndims, 3);
	assert_int_equal(r.len, 5 * 7 * 11 * 3);
	assert_int_equal(r.dims[2], 11);
	nk_array_free(a);
	nk_machine_free(m);
}

static void test_geometry_1d(void **state)
{
	nk_machine *m = synth("nodes=2 cores=1");
	const size_t n = 100000;
	nk_array *a = NULL;

	assert_int_equal(nk_array_alloc(m, sizeof(int), 1, &n, NK_ARRAY_NO_THP, &a), 0);
	assert_ptr_equal(nk_array_rows(a), nk_array_data(a));
	int *v = nk_array_rows(a);
	for (size_t i = 0; i < n; i++)
		v[i] = (int)i;
	assert_int_equal(v[n - 1], (int)n - 1);
	nk_array_free(a);
	nk_array_free(NULL);
	assert_null(nk_array_data(NULL));
	assert_null(nk_array_rows(NULL));
	nk_machine_free(m);
}

static size_t lcm_upto(size_t n)
{
	size_t l = 1;

	for (size_t k = 2; k <= n; k++) {
		size_t a = l, b = k;
		while (b) {
			size_t t = a % b;
			a = b;
			b = t;
		}
		l = l / a * k;
	}
	return l;
}

/* First data page's absolute page number: a multiple of lcm(1..N) (or of N when that is too big). */
static void test_alignment(void **state)
{
	static const int counts[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16 };
	const size_t n = 3;
	char desc[64];

	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		snprintf(desc, sizeof desc, "nodes=%d cores=1", counts[c]);
		nk_machine *m = synth(desc);
		size_t l = lcm_upto((size_t)counts[c]);
		size_t want = l * page() <= ((size_t)64 << 20) ? l : (size_t)counts[c];
		/* several arrays: the alignment must hold for every one, not by luck */
		for (int k = 0; k < 8; k++) {
			nk_array *a = NULL;
			assert_int_equal(nk_array_alloc(m, 1, 1, &n, 0, &a), 0);
			uintptr_t pg = (uintptr_t)nk_array_data(a) / page();
			if (pg % want)
				fail_msg("%d nodes: page %#lx not a multiple of %zu", counts[c], (unsigned long)pg, want);
			assert_int_equal(pg % (size_t)counts[c], 0);
			nk_array_free(a);
		}
		nk_machine_free(m);
	}
}

/* Every array has pages of its own: ranges rounded out to pages never overlap. */
static void test_no_shared_pages(void **state)
{
	nk_machine *m = synth("nodes=4 cores=1");
	enum { N = 32 };
	nk_array *a[N];
	const size_t one = 1, two[2] = { 3, 5 };

	for (int i = 0; i < N; i++)
		assert_int_equal(nk_array_alloc(m, 1 + (size_t)i, i % 2 ? 1 : 2, i % 2 ? &one : two, 0, &a[i]), 0);
	for (int i = 0; i < N; i++) {
		nk_region ri;
		nk_array_region(a[i], &ri);
		uintptr_t s = (uintptr_t)ri.addr / page(), e = ((uintptr_t)ri.addr + ri.len - 1) / page();
		for (int j = 0; j < N; j++) {
			nk_region rj;
			if (i == j)
				continue;
			nk_array_region(a[j], &rj);
			uintptr_t s2 = (uintptr_t)rj.addr / page(), e2 = ((uintptr_t)rj.addr + rj.len - 1) / page();
			assert_true(e < s2 || e2 < s);
			/* nor do other arrays' pointer tables live in this one's pages */
			if (j % 2 == 0) {
				uintptr_t t = (uintptr_t)nk_array_rows(a[j]) / page();
				assert_true(t < s || t > e);
			}
		}
	}
	for (int i = 0; i < N; i++)
		nk_array_free(a[i]);
	nk_machine_free(m);
}

static void test_bad_sizes(void **state)
{
	nk_machine *m = synth("nodes=2 cores=1");
	nk_array *a = (nk_array *)0x1;
	const size_t zero[3] = { 4, 0, 4 }, ok[3] = { 2, 2, 2 };
	const size_t huge2[2] = { SIZE_MAX / 2, 3 }, huge3[3] = { (size_t)1 << 22, (size_t)1 << 22, (size_t)1 << 22 };
	const size_t near[1] = { SIZE_MAX - 10 };

	assert_int_equal(nk_array_alloc(m, 8, 3, zero, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 0, 3, ok, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 8, 0, ok, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 8, 4, ok, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 8, 2, huge2, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 1 << 21, 3, huge3, 0, &a), NK_EINVAL); /* 2^87 bytes */
	assert_int_equal(nk_array_alloc(m, 1, 1, near, 0, &a), NK_EINVAL);      /* page rounding overflows */
	assert_int_equal(nk_array_alloc(m, 8, 3, ok, 0x80, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(NULL, 8, 3, ok, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 8, 3, NULL, 0, &a), NK_EINVAL);
	assert_int_equal(nk_array_alloc(m, 8, 3, ok, 0, NULL), NK_EINVAL);
	assert_ptr_equal(a, (nk_array *)0x1); /* untouched */
	/* representable but more than any machine has: the mapping fails, nothing is left */
	const size_t big[2] = { (size_t)1 << 36, (size_t)1 << 20 }; /* 512 PiB */
	int rc = nk_array_alloc(m, 8, 2, big, 0, &a);
	assert_int_equal(rc, NK_ENOMEM);
	assert_ptr_equal(a, (nk_array *)0x1);
	nk_machine_free(m);
}

static void test_from(void **state)
{
	nk_machine *m = synth("nodes=4 cores=1");
	const size_t d2[2] = { 3, 1000 }, d3[3] = { 2, 3, 4 };
	nk_array *a = NULL, *b = NULL;
	int on_stack;

	assert_int_equal(nk_array_alloc(m, 8, 2, d2, 0, &a), 0);
	assert_int_equal(nk_array_alloc(m, 4, 3, d3, 0, &b), 0);
	char *d = nk_array_data(a);
	double **rows = nk_array_rows(a);
	int ***planes = nk_array_rows(b);

	/* inner addresses: first byte, an element, the last byte, the page tail, the tables */
	assert_ptr_equal(nk_array_from(d), a);
	assert_ptr_equal(nk_array_from(&rows[2][999]), a);
	assert_ptr_equal(nk_array_from(d + 3 * 1000 * 8 - 1), a);
	assert_ptr_equal(nk_array_from(d + 6 * page() - 1), a); /* 24000 bytes: 6 pages mapped */
	assert_ptr_equal(nk_array_from(rows), a);
	assert_ptr_equal(nk_array_from(&rows[2]), a);
	assert_ptr_equal(nk_array_from(&planes[1][2][3]), b);
	assert_ptr_equal(nk_array_from(planes[1]), b); /* a row table inside the plane table block */
	assert_ptr_equal(nk_array_from(nk_array_data(b)), b);
	/* outer addresses */
	assert_true(nk_array_from(d - 1) != a);
	assert_true(nk_array_from(d + 6 * page()) != a);
	assert_null(nk_array_from(NULL));
	assert_null(nk_array_from(&on_stack));
	void *heap = malloc(64);
	assert_null(nk_array_from(heap));
	free(heap);
	/* after free the address is nobody's */
	nk_array_free(a);
	assert_null(nk_array_from(d));
	assert_null(nk_array_from(rows));
	/* geometry needed from a pointer that is not an array: documented error */
	nk_policy *p = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_policy_parse("block_exclusive", &p, NULL), 0);
	assert_int_equal(nk_array_apply(nk_array_from(&on_stack), p, 0, NULL, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "not a numakit array"));
	assert_int_equal(nk_array_apply(b, NULL, 0, NULL, &err), NK_EINVAL);
	nk_policy_free(p);
	nk_array_free(b);
	nk_machine_free(m);
}

static void history_is(const nk_array *a, size_t idx, const char *want)
{
	char buf[128];
	int n = nk_array_history(a, idx, buf, sizeof buf);

	assert_int_equal(n, (int)strlen(want));
	assert_string_equal(buf, want);
}

static void test_apply_stats(void **state)
{
	nk_machine *m = live();
	const size_t dims[2] = { 64, page() / 4 }; /* 64 rows of one page each */
	nk_array *a = NULL;
	nk_policy *bind = NULL, *cyc = NULL, *bad = NULL, *rows = NULL;
	nk_apply_result res;
	nk_array_stats st;
	nk_error err = { 0, "" };
	char canon[128];
	int rc;

	assert_int_equal(nk_array_alloc(m, 4, 2, dims, NK_ARRAY_NO_THP, &a), 0);
	assert_int_equal(nk_array_stats_get(a, &st), 0);
	assert_int_equal(st.applications, 0);
	assert_int_equal(st.history, 0);
	assert_int_equal(st.last_fallback_node, -1);
	assert_int_equal(nk_array_history(a, 0, canon, sizeof canon), NK_EINVAL);

	assert_int_equal(nk_policy_parse("bind:nodes=0", &bind, NULL), 0);
	assert_int_equal(nk_policy_parse("cyclic", &cyc, NULL), 0);
	assert_int_equal(nk_policy_parse("block:split=rows", &rows, NULL), 0);
	assert_int_equal(nk_policy_parse("bind:nodes=4000", &bad, NULL), 0);

	rc = nk_array_apply(a, bind, 0, &res, &err);
	if (rc == NK_ENOSYS) /* a kernel without NUMA system calls */
		skip();
	if (rc)
		fail_msg("apply: %s", err.message);
	assert_int_equal(res.pages, 64);
	int *d = nk_array_data(a);
	memset(d, 1, 64 * page());
	/* rows: the geometry is the array's, no argument needed */
	if (nk_array_apply(a, rows, 0, &res, &err))
		fail_msg("apply rows: %s", err.message);
	if (nk_array_apply(a, cyc, 0, &res, &err))
		fail_msg("apply cyclic: %s", err.message);
	assert_int_equal(res.pages, 64);
	assert_int_equal(res.pages_untouched, 0);
	/* one node here: everything is in place already */
	size_t counts[2] = { 0, 0 };
	if (nk_machine_num_nodes(m) == 1) {
		assert_int_equal(res.pages_in_place, 64);
		assert_int_equal(nk_array_where(a, NULL, counts), 0);
		assert_int_equal(counts[0], 64);
		assert_int_equal(counts[1], 0);
	}
	/* a failed application records nothing */
	assert_true(nk_array_apply(a, bad, 0, &res, &err) < 0);
	assert_int_equal(nk_array_stats_get(a, &st), 0);
	assert_int_equal(st.applications, 3);
	assert_int_equal(st.history, 3);
	assert_true(st.syscalls >= 1);
	nk_policy_format(bind, canon, sizeof canon);
	history_is(a, 0, canon);
	nk_policy_format(rows, canon, sizeof canon);
	history_is(a, 1, canon);
	nk_policy_format(cyc, canon, sizeof canon);
	history_is(a, 2, canon);
	assert_int_equal(nk_array_history(a, 3, canon, sizeof canon), NK_EINVAL);
	/* snprintf semantics */
	char tiny[4];
	assert_int_equal(nk_array_history(a, 2, tiny, sizeof tiny), (int)strlen(canon));
	assert_int_equal(strlen(tiny), 3);
	assert_int_equal(nk_array_history(a, 2, NULL, 0), (int)strlen(canon));

	/* the history keeps the most recent NK_ARRAY_HISTORY_MAX */
	for (int i = 0; i < NK_ARRAY_HISTORY_MAX + 5; i++)
		assert_int_equal(nk_array_apply(a, i % 2 ? bind : cyc, 0, NULL, NULL), 0);
	assert_int_equal(nk_array_stats_get(a, &st), 0);
	assert_int_equal(st.applications, 3 + NK_ARRAY_HISTORY_MAX + 5);
	assert_int_equal(st.history, NK_ARRAY_HISTORY_MAX);
	/* the last one applied (i = MAX + 4, even) was cyclic, the one before bind */
	nk_policy_format(cyc, canon, sizeof canon);
	history_is(a, NK_ARRAY_HISTORY_MAX - 1, canon);
	nk_policy_format(bind, canon, sizeof canon);
	history_is(a, NK_ARRAY_HISTORY_MAX - 2, canon);
	/* the data survived every application */
	for (size_t k = 0; k < 64 * page() / 4; k++)
		if (d[k] != 0x01010101)
			fail_msg("element %zu changed", k);
	nk_policy_free(bind);
	nk_policy_free(cyc);
	nk_policy_free(rows);
	nk_policy_free(bad);
	nk_array_free(a);
	nk_machine_free(m);
}

/* Each array is its own line of /proc/self/numa_maps (guard pages keep it from merging). */
static void test_own_numa_maps_line(void **state)
{
	nk_machine *m = synth("nodes=2 cores=1");
	const size_t n = 16 * page();
	nk_array *a = NULL, *b = NULL;
	nk_numamaps *nm = NULL;
	int found = 0;

	assert_int_equal(nk_array_alloc(m, 1, 1, &n, 0, &a), 0);
	assert_int_equal(nk_array_alloc(m, 1, 1, &n, 0, &b), 0);
	memset(nk_array_data(a), 1, n);
	memset(nk_array_data(b), 2, n);
	assert_int_equal(nk_numamaps_read(0, &nm, NULL), 0);
	for (size_t i = 0; i < nk_numamaps_count(nm); i++) {
		nk_maps_entry e, next;
		nk_numamaps_entry(nm, i, &e);
		if (e.addr != (uintptr_t)nk_array_data(a))
			continue;
		found = 1;
		assert_true(e.pages == 16);
		assert_true(e.anon == 16);
		/* the next mapping starts after the array (its guard page) */
		if (i + 1 < nk_numamaps_count(nm)) {
			nk_numamaps_entry(nm, i + 1, &next);
			assert_true(next.addr >= e.addr + n);
		}
	}
	assert_true(found);
	nk_numamaps_free(nm);
	nk_array_free(a);
	nk_array_free(b);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_geometry_2d),
		cmocka_unit_test(test_geometry_3d),
		cmocka_unit_test(test_geometry_1d),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_no_shared_pages),
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_from),
		cmocka_unit_test(test_apply_stats),
		cmocka_unit_test(test_own_numa_maps_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
