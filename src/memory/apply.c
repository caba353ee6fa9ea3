/* SPDX-License-Identifier: BSD-3-Clause
 * Applying a plan to memory (nk_apply).  docs/placement.md explains the
 * choices and the measurements behind them; in short, the region is
 * streamed in batches of NK__MEM_BATCH pages (memory O(batch), never
 * O(pages)) and each batch is
 *   1. queried with one move_pages(nodes = NULL) call;
 *   2. untouched pages are given the plan through the fewest mbind calls
 *      that express it exactly (one call for the whole region when the plan
 *      has a kernel hint, one per run of the plan otherwise), or, for plans
 *      that change node every few pages, faulted in without changing their
 *      contents (MADV_POPULATE_WRITE) and moved like resident pages, which
 *      costs O(pages / batch) calls instead of O(pages) mbind calls and VMAs;
 *   3. resident pages not on their target are moved with one move_pages
 *      call, grouped by target node (the kernel migrates each stretch of
 *      equal targets as one list, so grouping turns a cyclic batch of 1024
 *      one-page migrations into a few 256-page ones);
 *   4. a node that refuses memory (-ENOMEM, or not allowed) is remembered
 *      for the rest of the call, and the pages meant for it go to the
 *      nearest allowed node with room (nk_machine_neighbors order).
 * No state outlives a call and nothing is shared between calls, so calls on
 * disjoint regions may run concurrently.
 */
#include "memory/memory.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "policy/plan.h"
#include "runtime/runtime.h"
#include "util/error.h"

/* How untouched pages get their placement. */
enum {
	UT_HINT,     /* one mbind over the region: the kernel expresses the plan */
	UT_RUNS,     /* one mbind per plan run holding untouched pages */
	UT_POPULATE, /* fault in without changing contents, then move */
};

/*
 * UT_RUNS is chosen when runs are at least this many pages on average (an
 * mbind costs about as much as faulting and migrating a few pages) and the
 * region has at most RUNS_MAX of them: every run becomes a VMA, and the
 * kernel limits a process to vm.max_map_count (65530 by default) of them.
 */
#define RUNS_MIN_PAGES 16
#define RUNS_MAX 16384

/* Free memory a node keeps in STRICT's up-front check: the kernel's own
 * watermarks are a fraction of a percent to a few percent of the node. */
#define STRICT_RESERVE_SHIFT 5 /* total / 32 */

/* What a page of the current batch is. */
enum {
	PG_POLICY,   /* untouched; placement left to the policy set by mbind */
	PG_INPLACE,  /* resident on its target */
	PG_MOVE,     /* resident elsewhere: queued */
	PG_POPULATE, /* untouched, faulted in by this call: queued */
	PG_LEFT,     /* resident elsewhere, NK_APPLY_NO_MOVE */
	PG_FAILED,   /* the query gave an error other than "untouched" */
};

struct apply {
	const nk_machine *m;
	const nk_plan *pl;
	const struct nk__memops *ops;
	unsigned flags;
	nk_error *err;
	uintptr_t base;
	size_t ps, npages, batch;
	int verify; /* huge pages may move as units: re-query each batch after moving */

	int ut_mode;
	int hint_mode;
	const int *hint_nodes;
	size_t hint_n;
	int hint_done;       /* UT_HINT: the mbind was made */
	int interleave_done; /* UT_POPULATE: the region was given an interleave policy */
	size_t mbind_until;  /* UT_RUNS: pages [0, mbind_until) have their policy */

	/* per node index */
	int nnodes;
	unsigned char *bad; /* refused memory during this call */
	int *fb;            /* cached fallback of a target (-2 unknown, -1 none) */
	int *nbr;           /* scratch for nk_machine_neighbors */
	size_t *bucket;     /* nnodes + 1 */

	/* per page of the batch */
	void **addr;
	int *target;
	int *st;     /* where the page is (node) or -errno */
	int *dest;   /* where it is being moved; -1 = given up */
	unsigned char *kind;
	size_t *w, *w2; /* work lists of page indices */
	void **call_addr;
	int *call_dest, *call_st, *call_st0;

	nk_apply_result r;
};

static int node_idx(const struct apply *a, int node)
{
	return node < 0 ? -1 : nk_machine_node_index(a->m, node);
}

/* A node pages may be placed on: has memory, allowed, not refused in this call. */
static int usable(const struct apply *a, int node)
{
	int k = node_idx(a, node);
	if (k < 0 || a->bad[k])
		return 0;
	int f = nk_machine_node_flags(a->m, node);
	return f >= 0 && (f & NK_NODE_HAS_MEMORY) && (f & NK_NODE_MEM_ALLOWED);
}

/* Where pages meant for @p target go: itself when usable, else its nearest usable neighbour, else -1. */
static int placement_for(struct apply *a, int target)
{
	int k = node_idx(a, target);
	if (k < 0)
		return -1;
	if (a->fb[k] != -2)
		return a->fb[k];
	int res = -1;
	if (usable(a, target)) {
		res = target;
	} else {
		int n = nk_machine_neighbors(a->m, target, a->nbr, (size_t)a->nnodes);
		for (int i = 0; i < n && i < a->nnodes; i++)
			if (a->nbr[i] != target && usable(a, a->nbr[i])) {
				res = a->nbr[i];
				break;
			}
	}
	a->fb[k] = res;
	return res;
}

/* A node refused memory (@p why: -ENOMEM full, -EACCES not allowed). */
static int mark_bad(struct apply *a, int node, long why)
{
	int k = node_idx(a, node);
	if (a->flags & NK_APPLY_STRICT) {
		if (why == -ENOMEM)
			return nk__error(a->err, NK_ENOMEM, "node %d has no free memory for the pages planned there "
					 "(NK_APPLY_STRICT: no fallback)", node);
		return nk__error(a->err, NK_EPERM, "node %d refused the pages planned there (not allowed)", node);
	}
	if (k >= 0)
		a->bad[k] = 1;
	for (int i = 0; i < a->nnodes; i++)
		a->fb[i] = -2;
	return 0;
}

static int sys_error(struct apply *a, long rc, const char *what)
{
	int code = nk__mem_errno(rc);
	return nk__error(a->err, code, "%s failed: %s", what, nk_strerror(code));
}

/* Group work list @p w[0..n) by destination node (stable), so the kernel migrates each node's pages as one list. */
static void group_by_dest(struct apply *a, size_t n)
{
	size_t nn = (size_t)a->nnodes;
	int last = INT_MIN, lk = 0, mixed = 0;
	memset(a->bucket, 0, (nn + 1) * sizeof *a->bucket);
	for (size_t k = 0; k < n; k++) {
		int d = a->dest[a->w[k]];
		if (d != last) {
			mixed |= last != INT_MIN;
			last = d;
			lk = node_idx(a, d);
		}
		a->bucket[lk + 1]++;
	}
	if (!mixed)
		return;
	for (size_t i = 1; i <= nn; i++)
		a->bucket[i] += a->bucket[i - 1];
	last = INT_MIN;
	for (size_t k = 0; k < n; k++) {
		int d = a->dest[a->w[k]];
		if (d != last) {
			last = d;
			lk = node_idx(a, d);
		}
		a->w2[a->bucket[lk]++] = a->w[k];
	}
	memcpy(a->w, a->w2, n * sizeof *a->w);
}

/*
 * Move the pages of work list w[0..n) to dest[].  Afterwards st[i] is the
 * node page i is on (or -errno).  move_pages stops at the first stretch of
 * equal targets it cannot migrate and leaves the statuses of the rest
 * unwritten, so after any failure the pages are queried again: the first
 * page not on its destination names the stretch that failed.
 */
#define MOVE_BUSY_ROUNDS 6

/* A page that was resident when queried and that move_pages now reports
 * busy, locked, or absent (-ENOENT: the migration entry of a page kcompactd
 * is moving at that instant) is worth another round.  The CI saw one such
 * page of 82272 counted failed after four immediate rounds (stop 22). */
static int transient(int s)
{
	return s == -EBUSY || s == -EAGAIN || s == -ENOENT;
}

static int move_work(struct apply *a, size_t n)
{
	const struct nk__memops *ops = a->ops;
	int rc = 0, busy_rounds = 0, kept_busy = 0;

	while (n) {
		/* A page the kernel is migrating or has locked at this instant
		 * (compaction on a nearly full node, a racing fault) reports
		 * -EBUSY/-EAGAIN/-ENOENT; a few more rounds, each after a longer
		 * wait, usually get it (seen in the fallback guest test: 153 of
		 * 79632 pages under pressure). */
		if (kept_busy && ops->backoff)
			ops->backoff(ops->ctx, busy_rounds - 1);
		kept_busy = 0;
		group_by_dest(a, n);
		for (size_t k = 0; k < n; k++) {
			a->call_addr[k] = a->addr[a->w[k]];
			a->call_dest[k] = a->dest[a->w[k]];
			a->call_st[k] = INT_MIN;
		}
		long e = ops->move_pages(ops->ctx, n, a->call_addr, a->call_dest, a->call_st);
		a->r.syscalls++;
		if (e < 0 && e != -ENOMEM && e != -EACCES && e != -EBUSY && e != -EAGAIN)
			return sys_error(a, e, "move_pages");
		if (e != 0) {
			/* statuses the kernel wrote are exact; the unwritten ones
			 * (INT_MIN) belong to the stretch that failed or to pages
			 * after it: ask where those are now */
			memcpy(a->call_st0, a->call_st, n * sizeof *a->call_st);
			long q = ops->move_pages(ops->ctx, n, a->call_addr, NULL, a->call_st);
			a->r.syscalls++;
			if (q < 0)
				return sys_error(a, q, "move_pages (query)");
		}
		size_t left = 0;
		int failed_dest = -1;
		for (size_t k = 0; k < n; k++) {
			size_t i = a->w[k];
			int exact = e == 0 || a->call_st0[k] != INT_MIN;
			int s = e == 0 ? a->call_st[k] : exact ? a->call_st0[k] : a->call_st[k];
			a->st[i] = s;
			if (s == a->dest[i])
				continue;
			if (exact) {
				if (transient(s) && busy_rounds < MOVE_BUSY_ROUNDS) {
					kept_busy = 1;
					a->w[left++] = i;
					continue;
				}
				/* otherwise only "no memory there" is worth another try */
				if (s != -ENOMEM)
					continue;
				if (usable(a, a->dest[i]) && (rc = mark_bad(a, a->dest[i], -ENOMEM)))
					return rc;
				a->dest[i] = placement_for(a, a->target[i]);
				if (a->dest[i] >= 0)
					a->w[left++] = i;
				continue;
			}
			if (failed_dest < 0)
				failed_dest = a->dest[i];
			a->w[left++] = i;
		}
		if (e != 0 && failed_dest >= 0) {
			int refused = e == -ENOMEM || e == -EACCES;
			if (refused && (rc = mark_bad(a, failed_dest, e)))
				return rc;
			size_t keep = 0;
			for (size_t k = 0; k < left; k++) {
				size_t i = a->w[k];
				if (a->dest[i] == failed_dest) {
					if (!refused) {
						/* busy: retry a few rounds, then leave it where it is */
						if (busy_rounds < MOVE_BUSY_ROUNDS) {
							kept_busy = 1;
							a->w[keep++] = i;
						}
						continue;
					}
					a->dest[i] = placement_for(a, a->target[i]);
					if (a->dest[i] < 0)
						continue;
				}
				a->w[keep++] = i;
			}
			left = keep;
		}
		busy_rounds += kept_busy;
		n = left;
	}
	return 0;
}

/* mbind [page, page + n) to the plan's runs there; every run one call. */
static int mbind_runs(struct apply *a, size_t page, size_t n)
{
	const struct nk__memops *ops = a->ops;
	int mode = (a->flags & NK_APPLY_STRICT) ? NK__MPOL_BIND : NK__MPOL_PREFERRED;
	size_t end = page + n;

	while (page < end) {
		size_t len = 0;
		int node = nk__plan_run_at(a->pl, page, &len);
		if (node < 0)
			return nk__error(a->err, node, "plan has no node for page %zu", page);
		if (len == 0 || len > end - page)
			len = end - page;
		int e = ops->mbind(ops->ctx, (void *)(a->base + page * a->ps), len * a->ps, mode, &node, 1);
		a->r.syscalls++;
		if (e)
			return sys_error(a, e, "mbind");
		page += len;
	}
	return 0;
}

static int hint_mbind(struct apply *a)
{
	const struct nk__memops *ops = a->ops;
	int mode = a->hint_mode;
	/* one node: PREFERRED lets a fault on a full node fall back to the
	 * nearest node instead of waking the OOM killer; STRICT keeps BIND */
	if (mode == NK__MPOL_BIND && a->hint_n == 1 && !(a->flags & NK_APPLY_STRICT))
		mode = NK__MPOL_PREFERRED;
	int e = ops->mbind(ops->ctx, (void *)a->base, a->npages * a->ps, mode, a->hint_nodes, a->hint_n);
	a->r.syscalls++;
	a->hint_done = 1;
	return e ? sys_error(a, e, "mbind") : 0;
}

/*
 * Populate the untouched pages of the batch, span by span, and queue them
 * for moving.  Before the first populate the region gets an interleave
 * policy over the plan's nodes, so faulting in a large region spreads it
 * over the nodes that will hold it instead of filling the local node.
 */
static int populate_batch(struct apply *a, size_t first, size_t n)
{
	const struct nk__memops *ops = a->ops;
	int rc;

	for (size_t i = 0; i < n;) {
		if (a->kind[i] != PG_POPULATE) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && a->kind[j] == PG_POPULATE)
			j++;
		if (!a->interleave_done) {
			const int *set;
			size_t m;
			a->interleave_done = 1;
			if (!nk__plan_node_set(a->pl, &set, &m) && m > 1) {
				/* a hint only: failure (e.g. a node refused) costs placement nothing */
				ops->mbind(ops->ctx, (void *)a->base, a->npages * a->ps, NK__MPOL_INTERLEAVE, set, m);
				a->r.syscalls++;
			}
		}
		int e = ops->populate(ops->ctx, a->addr[i], (j - i) * a->ps);
		a->r.syscalls++;
		if (e) {
			/* an old kernel or a mapping that cannot be populated (not
			 * writable): give these pages the exact policy instead */
			for (size_t k = i; k < j; k++)
				a->kind[k] = PG_POLICY;
			if ((rc = mbind_runs(a, first + i, j - i)))
				return rc;
		} else {
			/* Where did they land?  A page already on its target in a
			 * move_pages list makes the kernel cut the list there, so
			 * those must stay out of it. */
			e = ops->move_pages(ops->ctx, j - i, a->addr + i, NULL, a->st + i);
			a->r.syscalls++;
			if (e < 0)
				return sys_error(a, e, "move_pages (query)");
		}
		i = j;
	}
	return 0;
}

static int query(struct apply *a, size_t n)
{
	long e = a->ops->move_pages(a->ops->ctx, n, a->addr, NULL, a->st);
	a->r.syscalls++;
	return e < 0 ? sys_error(a, e, "move_pages (query)") : 0;
}

static int load_batch(struct apply *a, size_t first, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a->addr[i] = (void *)(a->base + (first + i) * a->ps);
	int rc = nk_plan_nodes(a->pl, first, n, a->target);
	if (rc)
		return nk__error(a->err, rc, "plan: no nodes for pages %zu..%zu", first, first + n - 1);
	for (size_t i = 0; i < n; i++)
		if (node_idx(a, a->target[i]) < 0)
			return nk__error(a->err, NK_ENODEV, "plan targets node %d, which the machine lacks",
					 a->target[i]);
	return query(a, n);
}

static int untouched(int s)
{
	/* -EFAULT on a range known to be mapped: the shared zero page */
	return s == -ENOENT || s == -EFAULT;
}

static int apply_batch(struct apply *a, size_t first, size_t n)
{
	int rc;
	size_t nq = 0;

	if ((rc = load_batch(a, first, n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		int s = a->st[i];
		a->dest[i] = -1;
		if (untouched(s)) {
			a->kind[i] = a->ut_mode == UT_POPULATE ? PG_POPULATE : PG_POLICY;
			if (a->ut_mode == UT_HINT && !a->hint_done && (rc = hint_mbind(a)))
				return rc;
			if (a->ut_mode == UT_RUNS && first + i >= a->mbind_until) {
				size_t len = 0;
				if (nk__plan_run_at(a->pl, first + i, &len) < 0 || !len)
					len = 1;
				if (len > a->npages - (first + i))
					len = a->npages - (first + i);
				if ((rc = mbind_runs(a, first + i, len)))
					return rc;
				a->mbind_until = first + i + len;
			}
		} else if (s < 0) {
			a->kind[i] = PG_FAILED;
		} else if (s == a->target[i]) {
			a->kind[i] = PG_INPLACE;
		} else {
			a->kind[i] = (a->flags & NK_APPLY_NO_MOVE) ? PG_LEFT : PG_MOVE;
		}
	}
	if (a->ut_mode == UT_POPULATE && (rc = populate_batch(a, first, n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if ((a->kind[i] != PG_MOVE && a->kind[i] != PG_POPULATE) || a->st[i] == a->target[i])
			continue;
		a->dest[i] = placement_for(a, a->target[i]);
		if (a->dest[i] >= 0)
			a->w[nq++] = i;
	}
	if (nq && (rc = move_work(a, nq)))
		return rc;
	if (a->verify && nq && (rc = query(a, n)))
		return rc;

	for (size_t i = 0; i < n; i++) {
		int s = a->st[i];
		switch (a->kind[i]) {
		case PG_POLICY:
			a->r.pages_untouched++;
			continue;
		case PG_LEFT:
			continue;
		case PG_FAILED:
			a->r.pages_failed++;
			continue;
		}
		if (s == a->target[i]) {
			if (a->kind[i] == PG_POPULATE)
				a->r.pages_untouched++;
			else if (a->kind[i] == PG_INPLACE)
				a->r.pages_in_place++;
			else
				a->r.pages_moved++;
		} else if (s >= 0 && a->kind[i] != PG_INPLACE && s == a->dest[i]) {
			a->r.pages_fallback++;
			a->r.fallback_node = s;
		} else {
			/* busy, pinned, shared, or part of a huge page that went elsewhere */
			a->r.pages_failed++;
		}
	}
	return 0;
}

/*
 * NK_APPLY_STRICT: before anything changes, count the pages each node must
 * receive (untouched pages and misplaced resident ones) and compare with its
 * free memory now, less a reserve.  Another process can still take the
 * memory between the check and the moves; then the call stops with
 * NK_ENOMEM, the pages moved so far stay moved (contents intact).
 */
static int strict_check(struct apply *a)
{
	size_t *need = calloc((size_t)a->nnodes, sizeof *need);
	int rc = 0;

	if (!need)
		return nk__error(a->err, NK_ENOMEM, "out of memory");
	for (size_t first = 0; first < a->npages; first += a->batch) {
		size_t n = a->npages - first < a->batch ? a->npages - first : a->batch;
		if ((rc = load_batch(a, first, n)))
			goto out;
		for (size_t i = 0; i < n; i++) {
			int s = a->st[i];
			if (untouched(s) || (s >= 0 && s != a->target[i] && !(a->flags & NK_APPLY_NO_MOVE)))
				need[node_idx(a, a->target[i])]++;
		}
	}
	for (int k = 0; k < a->nnodes; k++) {
		if (!need[k])
			continue;
		int node = nk_machine_node_id(a->m, k);
		uint64_t total = 0, freeb = 0;
		if (!usable(a, node)) {
			rc = nk__error(a->err, NK_EPERM, "node %d: the process may not allocate there", node);
			goto out;
		}
		int e = a->ops->node_meminfo(a->ops->ctx, node, &total, &freeb);
		if (e) {
			rc = nk__error(a->err, e, "node %d: free memory unknown (%s)", node, nk_strerror(e));
			goto out;
		}
		uint64_t want = (uint64_t)need[k] * a->ps, reserve = total >> STRICT_RESERVE_SHIFT;
		if (want + reserve > freeb) {
			rc = nk__error(a->err, NK_ENOMEM,
				       "node %d: %llu KiB needed, %llu KiB free (less a reserve of %llu KiB)", node,
				       (unsigned long long)(want >> 10), (unsigned long long)(freeb >> 10),
				       (unsigned long long)(reserve >> 10));
			goto out;
		}
	}
out:
	free(need);
	return rc;
}

/* How untouched pages will be placed (see the top of the file). */
static void choose_untouched_mode(struct apply *a)
{
	size_t count;
	const struct nk__plan_run *runs;

	if (!nk__plan_kernel_hint(a->pl, &a->hint_mode, &a->hint_nodes, &a->hint_n)) {
		a->ut_mode = UT_HINT;
		return;
	}
	a->ut_mode = UT_RUNS;
	if ((a->flags & NK_APPLY_NO_MOVE) || !nk__plan_runs(a->pl, &count, &runs))
		return;
	/* Sample the run length at a few places; regular policies have equal runs. */
	size_t shortest = a->npages;
	for (size_t s = 0; s < 4; s++) {
		size_t len = 0, page = a->npages / 4 * s;
		if (nk__plan_run_at(a->pl, page, &len) < 0)
			len = 1;
		if (len < shortest)
			shortest = len;
	}
	if (shortest < RUNS_MIN_PAGES || a->npages / (shortest ? shortest : 1) > RUNS_MAX)
		a->ut_mode = UT_POPULATE;
}

/* The profiler runtime (libnumakit_prof.so) caches page nodes: its moved hook is told when pages moved.
 * Its pagefault sampler keeps pages revoked (PROT_NONE): MADV_POPULATE_WRITE fails on them, and move_pages
 * cannot write statuses into them (EFAULT), so the region and the buffers are held (given back, none revoked
 * again) while the plan is applied.  Hook table: runtime/runtime.h; absent outside the profiler. */
static const struct nk__runtime_hooks *prof_hooks(void)
{
	static const struct nk__runtime_hooks none;
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);
	return p ? p : &none;
}

int nk__apply_ops(const nk_machine *m, const nk_plan *pl, void *addr, unsigned flags, nk_apply_result *res,
		  nk_error *err, const struct nk__memops *ops, size_t batch)
{
	struct apply a = { 0 };
	void *mem = NULL;
	int rc = 0, mem_hold = -1;
	const struct nk__runtime_hooks *prof = NULL; /* set where the buffer is held; read only if held */

	a.r.fallback_node = -1;
	if (!m || !pl || !ops)
		return nk__error(err, NK_EINVAL, "nk_apply: NULL argument");
	if (flags & ~NK_APPLY_ALLFLAGS)
		return nk__error(err, NK_EINVAL, "nk_apply: unknown flags 0x%x", flags & ~NK_APPLY_ALLFLAGS);
	if (addr != nk__plan_addr(pl))
		return nk__error(err, NK_EINVAL, "nk_apply: the plan was built for address %p, not %p",
				 nk__plan_addr(pl), addr);
	if (nk__plan_kind(pl) == NK_POLICY_NEXT_TOUCH)
		return nk__error(err, NK_EINVAL, "nk_apply: next_touch plans have no fixed nodes to apply");
	a.m = m;
	a.pl = pl;
	a.ops = ops;
	a.flags = flags;
	a.err = err;
	a.ps = ops->page_size ? ops->page_size : nk__os_page_size();
	if (nk_plan_page_size(pl) != a.ps)
		return nk__error(err, NK_EINVAL, "nk_apply: the plan is for %llu-byte pages, the system's are %zu",
				 (unsigned long long)nk_plan_page_size(pl), a.ps);
	a.base = nk__plan_base(pl);
	a.npages = nk_plan_num_pages(pl);
	a.batch = batch ? batch : NK__MEM_BATCH;
	if (a.batch > a.npages)
		a.batch = a.npages;
	a.nnodes = nk_machine_num_nodes(m);
	nk_kernel_settings ks;
	/* a huge page moves as a unit: statuses may be stale, so re-query */
	a.verify = nk_machine_kernel_settings(m, &ks) || ks.thp_enabled != NK_THP_NEVER;

	long e = ops->mapped(ops->ctx, (void *)a.base, a.npages * a.ps);
	a.r.syscalls++;
	if (e) {
		rc = e == -ENOMEM ? nk__error(err, NK_EINVAL, "nk_apply: part of the region is not mapped")
				  : nk__error(err, nk__mem_errno(e), "nk_apply: region check failed");
		goto out;
	}

	/* One allocation for every per-call buffer: O(batch + nodes). */
	size_t B = a.batch, N = (size_t)a.nnodes;
	size_t sz = B * (3 * sizeof(void *) + 2 * sizeof(size_t) + 6 * sizeof(int) + 1) +
		    N * (2 * sizeof(int) + sizeof(size_t) + 1) + sizeof(size_t) + 64;
	mem = malloc(sz);
	if (!mem) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out;
	}
	/* The kernel writes move_pages statuses into this buffer: under the profiler it must not be revoked. */
	prof = prof_hooks();
	if (prof->hold)
		mem_hold = prof->hold(mem, sz);
	char *p = mem;
#define TAKE(ptr, count) do { (ptr) = (void *)p; p += (count) * sizeof *(ptr); } while (0)
	TAKE(a.addr, B);
	TAKE(a.call_addr, B);
	TAKE(a.w, B);
	TAKE(a.w2, B);
	TAKE(a.bucket, N + 1);
	TAKE(a.target, B);
	TAKE(a.st, B);
	TAKE(a.dest, B);
	TAKE(a.call_dest, B);
	TAKE(a.call_st, B);
	TAKE(a.call_st0, B);
	TAKE(a.fb, N);
	TAKE(a.nbr, N);
	TAKE(a.kind, B);
	TAKE(a.bad, N);
#undef TAKE
	memset(a.bad, 0, N);
	for (size_t k = 0; k < N; k++)
		a.fb[k] = -2;

	choose_untouched_mode(&a);
	if ((flags & NK_APPLY_STRICT) && (rc = strict_check(&a)))
		goto out;
	for (size_t first = 0; first < a.npages; first += a.batch) {
		size_t n = a.npages - first < a.batch ? a.npages - first : a.batch;
		if ((rc = apply_batch(&a, first, n)))
			goto out;
	}
out:
	a.r.pages = a.npages;
	if (res)
		*res = a.r;
	if (mem_hold >= 0 && prof->unhold)
		prof->unhold(mem_hold);
	free(mem);
	return rc;
}

int nk_apply(const nk_machine *m, const nk_plan *pl, void *addr, unsigned flags, nk_apply_result *res,
	     nk_error *err)
{
	nk_apply_result r;
	int rc;

	memset(&r, 0, sizeof r);
	r.pages = SIZE_MAX; /* stays so when nk__apply_ops returned before touching *res */
	const struct nk__runtime_hooks *prof = prof_hooks();
	int hold = -1;
	if (prof->hold && pl)
		hold = prof->hold((const void *)nk__plan_base(pl), (size_t)(nk_plan_num_pages(pl) * nk_plan_page_size(pl)));
	rc = nk__apply_ops(m, pl, addr, flags, &r, err, &nk__memops_os, 0);
	if (prof->unhold && hold >= 0)
		prof->unhold(hold);
	if (r.pages == SIZE_MAX)
		return rc;
	if (r.pages_moved && prof->moved)
		prof->moved((const void *)nk__plan_base(pl), (size_t)(nk_plan_num_pages(pl) * nk_plan_page_size(pl)));
	if (res)
		*res = r;
	return rc;
}
