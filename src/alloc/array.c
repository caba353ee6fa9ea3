/* SPDX-License-Identifier: BSD-3-Clause
 * NUMA arrays (Minas' MAi-array): each array in its own anonymous mapping,
 * aligned so that the kernel's interleave (which follows absolute page
 * numbers, see KERNEL-NOTES) can express "page i -> node i mod M" in one
 * mbind call; row/plane pointer tables in a separate allocation; geometry
 * kept so that policies need no extra arguments; statistics per array.
 *
 * The registry of live arrays (for nk_array_from) is the only process-wide
 * state; it is a list under a mutex because lookups are rare (an API call
 * that needs geometry), never on an element access path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "alloc/array_impl.h"
#include "os/os.h"
#include "runtime/runtime.h"
#include "util/error.h"

/* Largest address space over-reserved to align an array (returned at once). */
#define ALIGN_RESERVE_MAX ((size_t)64 << 20)

struct nk_array {
	const nk_machine *m;
	char *data;         /* first element, aligned */
	size_t map_len;     /* bytes mapped from data on (whole pages) */
	size_t len;         /* bytes of elements */
	size_t elem_size;
	int ndims;
	size_t dims[3];
	void **table;       /* row/plane pointers (2D, 3D), NULL for 1D */
	size_t table_bytes;
	void *rows;         /* what nk_array_rows returns */

	pthread_mutex_t lock; /* serialises nk_array_apply and guards st/hist */
	nk_array_stats st;
	char *hist[NK_ARRAY_HISTORY_MAX]; /* ring: oldest at hist_first */
	size_t hist_first;

	struct nk_array *prev, *next; /* registry */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nk_array *registry;

static int mul_ok(size_t a, size_t b, size_t *out)
{
	if (a && b > SIZE_MAX / a)
		return 0;
	*out = a * b;
	return 1;
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Alignment of the data in bytes: lcm(1..N) pages, so that page 0 is
 * node 0 of the kernel's interleave over any set of M <= N nodes; N pages
 * (the rule for the whole node set) when that lcm is too much address space.
 */
static size_t data_alignment(int nnodes, size_t unit)
{
	size_t l = 1;

	for (size_t k = 2; k <= (size_t)nnodes; k++) {
		size_t next = l / gcd(l, k), bytes;
		if (!mul_ok(next, k, &next) || !mul_ok(next, unit, &bytes) || bytes > ALIGN_RESERVE_MAX) {
			l = 0;
			break;
		}
		l = next;
	}
	if (!l)
		l = (size_t)(nnodes > 0 ? nnodes : 1);
	return l * unit;
}

/*
 * The profiler runtime (libnumakit_prof.so, issue 6) wants to know about
 * array memory: its array_alloc/array_free hooks (runtime/runtime.h);
 * absent outside the profiler.
 */
static atomic_uint prof_arrays;

static void prof_array_alloc(const nk_array *a)
{
	char name[32];
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);

	if (!p || !p->array_alloc)
		return;
	snprintf(name, sizeof name, "nk_array#%u", atomic_fetch_add(&prof_arrays, 1) + 1);
	p->array_alloc(a->data, a->map_len, name);
}

static void prof_array_free(const nk_array *a)
{
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);

	if (p && p->array_free)
		p->array_free(a->data, a->map_len);
}

static void registry_add(nk_array *a)
{
	pthread_mutex_lock(&registry_lock);
	a->prev = NULL;
	a->next = registry;
	if (registry)
		registry->prev = a;
	registry = a;
	pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(nk_array *a)
{
	pthread_mutex_lock(&registry_lock);
	if (a->prev)
		a->prev->next = a->next;
	else
		registry = a->next;
	if (a->next)
		a->next->prev = a->prev;
	pthread_mutex_unlock(&registry_lock);
}

static int in_range(uintptr_t p, const void *start, size_t len)
{
	return start && p >= (uintptr_t)start && p - (uintptr_t)start < len;
}

nk_array *nk_array_from(const void *addr)
{
	uintptr_t p = (uintptr_t)addr;
	nk_array *a;

	if (!addr)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	for (a = registry; a; a = a->next)
		if (in_range(p, a->data, a->map_len) || in_range(p, a->table, a->table_bytes))
			break;
	pthread_mutex_unlock(&registry_lock);
	return a;
}

/* Build the pointer tables of a 2D or 3D array (data already mapped). */
static int build_tables(nk_array *a)
{
	size_t d0 = a->dims[0], d1 = a->dims[1], row, nptr;

	if (a->ndims == 1) {
		a->rows = a->data;
		return 0;
	}
	row = a->elem_size * a->dims[a->ndims - 1]; /* fits: product checked before */
	if (a->ndims == 2) {
		nptr = d0;
	} else if (!mul_ok(d0, d1, &nptr) || nptr > SIZE_MAX - d0) {
		return NK_EINVAL;
	} else {
		nptr += d0;
	}
	if (!mul_ok(nptr, sizeof(void *), &a->table_bytes))
		return NK_EINVAL;
	a->table = malloc(a->table_bytes);
	if (!a->table)
		return NK_ENOMEM;
	if (a->ndims == 2) {
		for (size_t i = 0; i < d0; i++)
			a->table[i] = a->data + i * row;
	} else {
		/* [0, d0): plane pointers; then d0 tables of d1 row pointers */
		void **rowp = a->table + d0;
		for (size_t i = 0; i < d0; i++) {
			a->table[i] = &rowp[i * d1];
			for (size_t j = 0; j < d1; j++)
				rowp[i * d1 + j] = a->data + (i * d1 + j) * row;
		}
	}
	a->rows = a->table;
	return 0;
}

int nk_array_alloc(const nk_machine *m, size_t elem_size, int ndims, const size_t dims[], unsigned flags,
		   nk_array **out)
{
	size_t len, unit, align, map_len, os_ps;
	uint64_t mps;
	nk_array *a;
	void *p = NULL;
	int rc;

	if (!m || !out || !dims || !elem_size || ndims < 1 || ndims > 3 || (flags & ~NK_ARRAY_ALLFLAGS))
		return NK_EINVAL;
	len = elem_size;
	for (int d = 0; d < ndims; d++)
		if (!dims[d] || !mul_ok(len, dims[d], &len))
			return NK_EINVAL;
	/* The unit of alignment: the OS page, or the machine's page when it is a multiple of it. */
	os_ps = (size_t)nk__os_page_size();
	mps = nk_machine_page_size(m);
	unit = (mps > os_ps && mps % os_ps == 0 && mps <= ALIGN_RESERVE_MAX) ? (size_t)mps : os_ps;
	align = data_alignment(nk_machine_num_nodes(m), unit);
	if (len > SIZE_MAX - unit || (map_len = (len + unit - 1) / unit * unit) > SIZE_MAX - align ||
	    map_len > (size_t)PTRDIFF_MAX)
		return NK_EINVAL;

	a = calloc(1, sizeof *a);
	if (!a)
		return NK_ENOMEM;
	a->m = m;
	a->len = len;
	a->map_len = map_len;
	a->elem_size = elem_size;
	a->ndims = ndims;
	for (int d = 0; d < ndims; d++)
		a->dims[d] = dims[d];
	a->st.last_fallback_node = -1;
	rc = nk__os_map_aligned(map_len, align, &p, NULL);
	if (rc) {
		rc = rc == NK_EINVAL ? NK_EINVAL : NK_ENOMEM;
		goto out_free;
	}
	a->data = p;
	/* Best effort: a kernel without THP refuses the advice and has no huge pages anyway. */
	if (flags & NK_ARRAY_NO_THP)
		(void)nk__os_no_huge_pages(p, map_len, NULL);
	rc = build_tables(a);
	if (rc)
		goto out_unmap;
	if (pthread_mutex_init(&a->lock, NULL)) {
		rc = NK_ENOMEM;
		goto out_tables;
	}
	registry_add(a);
	prof_array_alloc(a);
	*out = a;
	return 0;
out_tables:
	free(a->table);
out_unmap:
	nk__os_unmap_aligned(a->data, map_len, NULL);
out_free:
	free(a);
	return rc;
}

void nk_array_free(nk_array *a)
{
	if (!a)
		return;
	registry_remove(a);
	prof_array_free(a);
	nk__os_unmap_aligned(a->data, a->map_len, NULL);
	free(a->table);
	for (size_t i = 0; i < NK_ARRAY_HISTORY_MAX; i++)
		free(a->hist[i]);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void *nk_array_data(const nk_array *a)
{
	return a ? a->data : NULL;
}

void *nk_array_rows(const nk_array *a)
{
	return a ? a->rows : NULL;
}

int nk_array_region(const nk_array *a, nk_region *out)
{
	if (!a || !out)
		return NK_EINVAL;
	memset(out, 0, sizeof *out);
	out->addr = a->data;
	out->len = a->len;
	out->elem_size = a->elem_size;
	out->ndims = a->ndims;
	for (int d = 0; d < a->ndims; d++)
		out->dims[d] = a->dims[d];
	return 0;
}

const nk_machine *nk__array_machine(const nk_array *a)
{
	return a ? a->m : NULL;
}

int nk_array_where(const nk_array *a, int *nodes, size_t *counts)
{
	if (!a)
		return NK_EINVAL;
	return nk_where(a->m, a->data, a->len, nodes, counts);
}

/* Canonical text of @p p in a fresh string, or NULL on ENOMEM. */
static char *policy_text(const nk_policy *p)
{
	int need = nk_policy_format(p, NULL, 0);
	char *s;

	if (need < 0)
		return NULL;
	s = malloc((size_t)need + 1);
	if (s)
		nk_policy_format(p, s, (size_t)need + 1);
	return s;
}

int nk_array_apply(nk_array *a, const nk_policy *p, unsigned flags, nk_apply_result *res, nk_error *err)
{
	nk_apply_result r;
	nk_region reg;
	nk_plan *pl = NULL;
	char *text;
	int rc;

	if (!a)
		return nk__error(err, NK_EINVAL, "not a numakit array (nk_array_from found none)");
	if (!p)
		return nk__error(err, NK_EINVAL, "no policy");
	/* Everything that can fail without touching memory comes first. */
	text = policy_text(p);
	if (!text)
		return nk__error(err, NK_ENOMEM, "out of memory");
	nk_array_region(a, &reg);
	rc = nk_plan_build(a->m, p, &reg, &pl, err);
	if (rc)
		goto out_text;
	memset(&r, 0, sizeof r);
	r.fallback_node = -1;
	pthread_mutex_lock(&a->lock);
	rc = nk_apply(a->m, pl, a->data, flags, &r, err);
	if (rc == 0) {
		size_t slot;

		a->st.applications++;
		a->st.pages_moved += r.pages_moved;
		a->st.pages_fallback += r.pages_fallback;
		a->st.pages_failed += r.pages_failed;
		a->st.syscalls += r.syscalls;
		if (r.fallback_node >= 0)
			a->st.last_fallback_node = r.fallback_node;
		if (a->st.history < NK_ARRAY_HISTORY_MAX) {
			slot = (a->hist_first + a->st.history) % NK_ARRAY_HISTORY_MAX;
			a->st.history++;
		} else {
			slot = a->hist_first; /* drop the oldest */
			a->hist_first = (a->hist_first + 1) % NK_ARRAY_HISTORY_MAX;
		}
		free(a->hist[slot]);
		a->hist[slot] = text;
		text = NULL;
	}
	pthread_mutex_unlock(&a->lock);
	if (res)
		*res = r;
	nk_plan_free(pl);
out_text:
	free(text);
	return rc;
}

int nk_array_stats_get(const nk_array *a, nk_array_stats *out)
{
	nk_array *w = (nk_array *)a; /* the lock is not part of the value */

	if (!a || !out)
		return NK_EINVAL;
	pthread_mutex_lock(&w->lock);
	*out = a->st;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

int nk_array_history(const nk_array *a, size_t idx, char *buf, size_t cap)
{
	nk_array *w = (nk_array *)a;
	size_t len;
	int rc;

	if (!a || (cap && !buf))
		return NK_EINVAL;
	pthread_mutex_lock(&w->lock);
	if (idx >= a->st.history) {
		rc = NK_EINVAL;
	} else {
		const char *s = a->hist[(a->hist_first + idx) % NK_ARRAY_HISTORY_MAX];
		len = strlen(s);
		if (cap) {
			size_t k = len < cap - 1 ? len : cap - 1;
			memcpy(buf, s, k);
			buf[k] = '\0';
		}
		rc = len > INT32_MAX ? NK_ERANGE : (int)len;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}
