/* SPDX-License-Identifier: BSD-3-Clause
 * Feedback-guided dynamic loop scheduling with migration (Bull 1998;
 * Slavin & Freeman, docs/fgdls.md).
 *
 * The scheduler keeps T + 1 increasing boundaries b[0] = begin < b[1] < ...
 * < b[T] = end; slice t is [b[t], b[t+1]).  Threads record the cost of their
 * slice into their own cache-line-sized slot (no lock: one writer per slot,
 * and the caller's barrier orders the slots before nk_fgdls_update reads
 * them).  The update treats the cost as spread evenly over each slice's
 * iterations (a piecewise-constant density), cuts the cumulative cost into T
 * equal parts and moves each inner boundary d of the way to its cut.
 *
 * Migration builds, per attached region, one run of pages per slice and lets
 * nk_apply move only the pages not already on their thread's node.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine_impl.h"
#include "policy/plan.h"
#include "threads/fgdls.h"
#include "util/error.h"

#define DEFAULT_DAMPING 0.5

/* One thread's record, alone on its cache line so that concurrent records do not false-share. */
struct slot {
	_Alignas(64) double cost;
	int recorded; /* 1 when cost belongs to the current outer iteration */
	int node;     /* the thread's node, -1 unknown */
	int fixed;    /* node set by nk_fgdls_set_thread_node: record leaves it */
};

struct attach {
	char *base;
	size_t bpi;          /* bytes per iteration (0: offsets) */
	size_t elem;         /* offsets: element size */
	const long *offsets; /* offsets: end - begin + 1 entries */
};

struct nk_fgdls {
	const nk_machine *m;
	long begin, end;
	int T;
	double damping;
	long *b;            /* T + 1 boundaries */
	long *nb;           /* T + 1: the update's new boundaries (allocated once: update cannot fail for memory) */
	double *cum;        /* T + 1: cumulative recorded cost */
	struct slot *slots; /* T, 64-byte aligned */
	double last_imb;
	int have_imb;
	struct attach att[NK__FGDLS_MAX_ATTACH];
	size_t natt;
};

int nk_fgdls_create(const nk_machine *m, long begin, long end, int nthreads, nk_fgdls **out)
{
	struct nk_fgdls *f;
	unsigned long n;

	if (!m || !out || begin >= end || nthreads < 1)
		return NK_EINVAL;
	n = (unsigned long)end - (unsigned long)begin; /* no overflow: begin < end */
	if ((unsigned long)nthreads > n)
		return NK_EINVAL;
	f = calloc(1, sizeof *f);
	if (!f)
		return NK_ENOMEM;
	f->b = malloc(((size_t)nthreads + 1) * sizeof *f->b);
	f->nb = malloc(((size_t)nthreads + 1) * sizeof *f->nb);
	f->cum = malloc(((size_t)nthreads + 1) * sizeof *f->cum);
	f->slots = aligned_alloc(64, (size_t)nthreads * sizeof *f->slots);
	if (!f->b || !f->nb || !f->cum || !f->slots) {
		nk_fgdls_free(f);
		return NK_ENOMEM;
	}
	memset(f->slots, 0, (size_t)nthreads * sizeof *f->slots);
	f->m = m;
	f->begin = begin;
	f->end = end;
	f->T = nthreads;
	f->damping = DEFAULT_DAMPING;
	for (int t = 0; t <= nthreads; t++) { /* nk_sched_static: the first n mod T parts one longer */
		unsigned long q = n / (unsigned long)nthreads, r = n % (unsigned long)nthreads, k = (unsigned long)t;
		f->b[t] = (long)((unsigned long)begin + k * q + (k < r ? k : r));
	}
	for (int t = 0; t < nthreads; t++)
		f->slots[t].node = -1;
	*out = f;
	return 0;
}

void nk_fgdls_free(nk_fgdls *f)
{
	if (!f)
		return;
	free(f->b);
	free(f->nb);
	free(f->cum);
	free(f->slots);
	free(f);
}

int nk_fgdls_set_damping(nk_fgdls *f, double d)
{
	if (!f || !(d > 0 && d <= 1)) /* NaN fails the test */
		return NK_EINVAL;
	f->damping = d;
	return 0;
}

int nk_fgdls_slice(const nk_fgdls *f, int tid, nk_range *out)
{
	if (!f || !out || tid < 0 || tid >= f->T)
		return NK_EINVAL;
	out->begin = f->b[tid];
	out->end = f->b[tid + 1];
	return 0;
}

int nk_fgdls_record(nk_fgdls *f, int tid, double cost)
{
	struct slot *s;

	if (!f || tid < 0 || tid >= f->T || !isfinite(cost) || cost < 0)
		return NK_EINVAL;
	s = &f->slots[tid];
	if (!s->fixed) {
		int node = -1;
		/* an unknown cpu keeps what an earlier record found */
		if (nk_thread_where(f->m, NULL, &node) == 0 && node >= 0)
			s->node = node;
	}
	s->cost = cost;
	s->recorded = 1;
	return 0;
}

int nk_fgdls_set_thread_node(nk_fgdls *f, int tid, int node)
{
	if (!f || tid < 0 || tid >= f->T || node < 0)
		return NK_EINVAL;
	if (nk__node_idx(f->m, node) < 0)
		return NK_ENODEV;
	f->slots[tid].node = node;
	f->slots[tid].fixed = 1;
	return 0;
}

int nk__fgdls_thread_node(const nk_fgdls *f, int tid)
{
	if (!f || tid < 0 || tid >= f->T)
		return NK_EINVAL;
	return f->slots[tid].node;
}

/* max / mean - 1 of the recorded costs; 0 when they are all 0. */
static double imbalance_of(const struct nk_fgdls *f)
{
	double sum = 0, max = 0;
	for (int t = 0; t < f->T; t++) {
		sum += f->slots[t].cost;
		if (f->slots[t].cost > max)
			max = f->slots[t].cost;
	}
	return sum > 0 ? max / (sum / f->T) - 1 : 0;
}

int nk_fgdls_imbalance(const nk_fgdls *f, double *imbalance)
{
	int all = 1;

	if (!f || !imbalance)
		return NK_EINVAL;
	for (int t = 0; t < f->T && all; t++)
		all = f->slots[t].recorded;
	if (all) {
		*imbalance = imbalance_of(f);
		return 0;
	}
	if (!f->have_imb)
		return NK_ENODATA;
	*imbalance = f->last_imb;
	return 0;
}

int nk_fgdls_update(nk_fgdls *f)
{
	const int T = f ? f->T : 0;
	double total = 0, *cum;
	long *nb;

	if (!f)
		return NK_EINVAL;
	for (int t = 0; t < T; t++)
		if (!f->slots[t].recorded)
			return NK_EINVAL;
	cum = f->cum;
	nb = f->nb;
	cum[0] = 0;
	for (int t = 0; t < T; t++)
		cum[t + 1] = cum[t] + f->slots[t].cost;
	total = cum[T];
	memcpy(nb, f->b, ((size_t)T + 1) * sizeof *nb);

	if (total > 0 && isfinite(total)) {
		int t = 0;
		for (int k = 1; k < T; k++) {
			/* the cut: where the cumulative cost reaches k/T of the total,
			 * interpolated inside the slice that holds it (a slice of cost
			 * 0 has no density and never holds a cut) */
			double y = total * k / T, x, step;
			long moved;
			while (t < T - 1 && (cum[t + 1] < y || f->slots[t].cost <= 0))
				t++;
			x = (double)f->b[t];
			if (f->slots[t].cost > 0)
				x += (y - cum[t]) / f->slots[t].cost * (double)(f->b[t + 1] - f->b[t]);
			if (x > (double)f->b[t + 1])
				x = (double)f->b[t + 1];
			/* damped move; a move that rounds to nothing goes to the rounded
			 * cut instead, so integer boundaries do not stall a step short */
			step = f->damping * (x - (double)f->b[k]);
			moved = lround(step);
			nb[k] = moved ? f->b[k] + moved : lround(x);
		}
		/* at least one iteration per slice; backward only: it keeps nb[k] >= begin + k
		 * as long as nb[k] did, and the forward pass gives that */
		for (int k = 1; k < T; k++)
			if (nb[k] < nb[k - 1] + 1)
				nb[k] = nb[k - 1] + 1;
		for (int k = T - 1; k >= 1; k--)
			if (nb[k] > nb[k + 1] - 1)
				nb[k] = nb[k + 1] - 1;
	}
	f->last_imb = imbalance_of(f);
	f->have_imb = 1;
	memcpy(f->b, nb, ((size_t)T + 1) * sizeof *nb);
	for (int t = 0; t < T; t++) {
		f->slots[t].recorded = 0;
		f->slots[t].cost = 0;
	}
	return 0;
}

/* ---------------------------------------------------------- attachments */

int nk_fgdls_attach(nk_fgdls *f, void *base, size_t bytes_per_iter)
{
	size_t n;

	if (!f || !base || !bytes_per_iter)
		return NK_EINVAL;
	n = (size_t)((unsigned long)f->end - (unsigned long)f->begin);
	if (n > SIZE_MAX / bytes_per_iter || (uintptr_t)base + n * bytes_per_iter - 1 < (uintptr_t)base)
		return NK_EINVAL;
	if (f->natt == NK__FGDLS_MAX_ATTACH)
		return NK_ENOMEM;
	f->att[f->natt++] = (struct attach){ base, bytes_per_iter, 0, NULL };
	return 0;
}

int nk_fgdls_attach_offsets(nk_fgdls *f, void *base, size_t elem_size, const long *offsets)
{
	size_t n;

	if (!f || !base || !elem_size || !offsets)
		return NK_EINVAL;
	n = (size_t)((unsigned long)f->end - (unsigned long)f->begin);
	if (offsets[0] < 0)
		return NK_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (offsets[i + 1] < offsets[i])
			return NK_EINVAL;
	if ((unsigned long)offsets[n] > SIZE_MAX / elem_size ||
	    (uintptr_t)base + (size_t)offsets[n] * elem_size < (uintptr_t)base)
		return NK_EINVAL;
	if (f->natt == NK__FGDLS_MAX_ATTACH)
		return NK_ENOMEM;
	f->att[f->natt++] = (struct attach){ base, 0, elem_size, offsets };
	return 0;
}

size_t nk__fgdls_num_attached(const nk_fgdls *f)
{
	return f ? f->natt : 0;
}

/* Byte offset of iteration i's data in attachment a, from the attachment's base. */
static size_t att_off(const struct nk_fgdls *f, const struct attach *a, long i)
{
	size_t k = (size_t)((unsigned long)i - (unsigned long)f->begin);
	return a->offsets ? (size_t)a->offsets[k] * a->elem : k * a->bpi;
}

/* Index of the first page whose first byte is at region offset >= off (as plan.c counts pages). */
static size_t first_page_at(size_t off, size_t delta, uint64_t ps)
{
	return off ? (size_t)((off + delta + ps - 1) / ps) : 0;
}

int nk__fgdls_runs(const nk_fgdls *f, size_t att, uint64_t page_size, const int *tnodes, void **addr, size_t *len,
		   struct nk__plan_run *runs, size_t *nruns)
{
	const struct attach *a;
	size_t off0, total, delta, n = 0;

	if (!f || att >= f->natt || !tnodes || !addr || !len || !runs || !nruns || !page_size ||
	    (page_size & (page_size - 1)) || page_size > SIZE_MAX / 2)
		return NK_EINVAL;
	a = &f->att[att];
	off0 = att_off(f, a, f->begin);
	total = att_off(f, a, f->end) - off0;
	*addr = a->base + off0;
	*len = total;
	if (!total)
		return NK_ENODATA;
	delta = (uintptr_t)(a->base + off0) % page_size;
	for (int t = 0; t < f->T; t++) {
		/* pages whose first byte lies in the slice: page p's first byte is
		 * at region offset p * ps - delta (page 0: offset 0) */
		size_t s = att_off(f, a, f->b[t]) - off0, e = att_off(f, a, f->b[t + 1]) - off0;
		size_t p0 = first_page_at(s, delta, page_size), p1 = first_page_at(e, delta, page_size);
		if (p1 <= p0)
			continue;
		if (n && runs[n - 1].node == tnodes[t] && runs[n - 1].first + runs[n - 1].npages == p0) {
			runs[n - 1].npages += p1 - p0;
		} else {
			runs[n].first = p0;
			runs[n].npages = p1 - p0;
			runs[n].node = tnodes[t];
			n++;
		}
	}
	*nruns = n;
	return 0;
}

int nk_fgdls_migrate(nk_fgdls *f, unsigned flags, nk_apply_result *res, nk_error *err)
{
	nk_apply_result sum = { 0 };
	struct nk__plan_run *runs = NULL;
	int *tnodes = NULL, rc = 0;
	uint64_t ps;

	sum.fallback_node = -1;
	if (!f)
		return nk__error(err, NK_EINVAL, "nk_fgdls_migrate: NULL scheduler");
	if (flags & ~NK_APPLY_ALLFLAGS)
		return nk__error(err, NK_EINVAL, "nk_fgdls_migrate: unknown flags 0x%x", flags & ~NK_APPLY_ALLFLAGS);
	tnodes = malloc((size_t)f->T * sizeof *tnodes);
	runs = malloc((size_t)f->T * sizeof *runs);
	if (!tnodes || !runs) {
		rc = nk__error(err, NK_ENOMEM, "nk_fgdls_migrate: out of memory");
		goto out;
	}
	for (int t = 0; t < f->T; t++) {
		tnodes[t] = f->slots[t].node;
		if (tnodes[t] < 0) {
			rc = nk__error(err, NK_ENODATA,
				       "nk_fgdls_migrate: the node of thread %d is unknown (no record, no set node)", t);
			goto out;
		}
	}
	ps = nk_machine_page_size(f->m);
	for (size_t k = 0; k < f->natt; k++) {
		void *addr;
		size_t len, nruns;
		nk_plan *pl = NULL;
		nk_apply_result r;

		rc = nk__fgdls_runs(f, k, ps, tnodes, &addr, &len, runs, &nruns);
		if (rc == NK_ENODATA) { /* nothing attached there: no pages to move */
			rc = 0;
			continue;
		}
		if (rc) {
			rc = nk__error(err, rc, "nk_fgdls_migrate: attachment %zu: page size %llu unusable", k,
				       (unsigned long long)ps);
			goto out;
		}
		if ((rc = nk__plan_from_runs(f->m, addr, len, runs, nruns, &pl, err)))
			goto out;
		rc = nk_apply(f->m, pl, addr, flags, &r, err);
		nk_plan_free(pl);
		if (rc)
			goto out;
		sum.pages += r.pages;
		sum.pages_untouched += r.pages_untouched;
		sum.pages_in_place += r.pages_in_place;
		sum.pages_moved += r.pages_moved;
		sum.pages_fallback += r.pages_fallback;
		sum.pages_failed += r.pages_failed;
		sum.syscalls += r.syscalls;
		if (sum.fallback_node < 0)
			sum.fallback_node = r.fallback_node;
	}
out:
	if (res && !rc)
		*res = sum;
	free(tnodes);
	free(runs);
	return rc;
}
