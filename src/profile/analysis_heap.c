/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, heap: one process's allocations as blocks with lifetimes (frees matched), the sites
 * too small to be variables (--min-size), and the site statistics of heap variables (live, peak, the
 * allocating thread).  Knows nothing of samples beyond the variables attribution gave the blocks.
 */
#include "profile/analysis_impl.h"

/* ---------------------------------------------------------------- blocks */

static int cmp_blk(const void *x, const void *y)
{
	const struct blk *a = x, *b = y;
	int c = NK__CMP(a->lo, b->lo);
	return c ? c : NK__CMP(a->born, b->born);
}

/* Frees by (address, time, record order), through an index array (qsort has no context argument; the
 * analysis of one process runs on one thread, so the base is set around the one qsort that uses it). */
static _Thread_local const struct nk__nkp_free *free_order_base;

static int cmp_free_order(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	const struct nk__nkp_free *a = &free_order_base[i], *b = &free_order_base[j];
	int c;
	if ((c = NK__CMP(a->addr, b->addr)) || (c = NK__CMP(a->time_ns, b->time_ns)))
		return c;
	return NK__CMP(i, j);
}

int nk__an_build_blocks(const struct nk__nkp_process_data *pd, struct proc_ctx *pc)
{
	size_t n = 0, ns = 0;
	for (size_t i = 0; i < pd->n_allocs; i++)
		if (pd->allocs[i].kind == NK__ALLOC_STATIC)
			ns++;
		else
			n++;
	pc->blks = calloc(n ? n : 1, sizeof(*pc->blks));
	pc->statics = calloc(ns ? ns : 1, sizeof(*pc->statics));
	pc->blk_var = malloc((n ? n : 1) * sizeof(int));
	if (!pc->blks || !pc->statics || !pc->blk_var)
		return NK_ENOMEM;
	/* id -> block, to close blocks by FREE id */
	uint32_t max_id = 0;
	for (size_t i = 0; i < pd->n_allocs; i++)
		if (pd->allocs[i].id > max_id)
			max_id = pd->allocs[i].id;
	for (size_t i = 0; i < pd->n_allocs; i++) {
		const struct nk__nkp_alloc *al = &pd->allocs[i];
		struct blk b = { al->addr, al->addr + al->size, al->time_ns, UINT64_MAX, al->site, al->tid, 0 };
		if (al->kind == NK__ALLOC_STATIC) {
			pc->statics[pc->n_statics++] = b;
			continue;
		}
		pc->blk_var[pc->n_blks] = -2;
		pc->blks[pc->n_blks++] = b;
		if (al->size > pc->max_len)
			pc->max_len = al->size;
	}
	/* Frees: the block of that address born last before the free and still live.  Per address, the blocks
	 * (sorted by birth) and the frees (sorted by time) are merged: a block is pushed when it is born, a free
	 * pops the last one pushed.  A program that mallocs and frees one chunk over and over (the same address
	 * 10^5-10^6 times) made the scan of every block of that address per free quadratic: minutes. */
	qsort(pc->blks, pc->n_blks, sizeof(*pc->blks), cmp_blk);
	size_t *fo = malloc((pd->n_frees ? pd->n_frees : 1) * sizeof(*fo));
	size_t *stack = malloc((pc->n_blks ? pc->n_blks : 1) * sizeof(*stack));
	if (!fo || !stack) {
		free(fo);
		free(stack);
		return NK_ENOMEM;
	}
	for (size_t f = 0; f < pd->n_frees; f++)
		fo[f] = f;
	free_order_base = pd->frees;
	qsort(fo, pd->n_frees, sizeof(*fo), cmp_free_order);
	free_order_base = NULL;
	size_t b = 0;
	for (size_t f = 0; f < pd->n_frees;) {
		uint64_t addr = pd->frees[fo[f]].addr;
		while (b < pc->n_blks && pc->blks[b].lo < addr)
			b++;
		size_t top = 0;
		for (; f < pd->n_frees && pd->frees[fo[f]].addr == addr; f++) {
			const struct nk__nkp_free *fr = &pd->frees[fo[f]];
			while (b < pc->n_blks && pc->blks[b].lo == addr && pc->blks[b].born <= fr->time_ns)
				stack[top++] = b++;
			if (top) {
				struct blk *best = &pc->blks[stack[--top]];
				best->died = fr->time_ns;
				best->ftid = fr->tid;
			}
		}
	}
	free(fo);
	free(stack);
	(void)max_id;
	return 0;
}

static int thread_known(const struct nk__nkp_process_data *pd, uint32_t tid)
{
	for (size_t t = 0; t < pd->n_threads; t++)
		if (pd->threads[t].tid == tid)
			return 1;
	return 0;
}

struct sev {
	uint64_t t;
	int64_t blocks, bytes;
	uint32_t key; /* a site id or a variable */
};

static int cmp_sev(const void *x, const void *y)
{
	const struct sev *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->key, b->key)) || (c = NK__CMP(a->t, b->t)))
		return c;
	return NK__CMP(a->blocks, b->blocks); /* frees before allocations at one time */
}

/* Events of the blocks (+1 at birth, -1 at death) keyed by @p key[i] (UINT32_MAX: left out), sorted. */
static struct sev *site_events(const struct proc_ctx *pc, const uint32_t *key, size_t *n_out)
{
	struct sev *e = malloc((2 * pc->n_blks + 1) * sizeof(*e));
	size_t n = 0;
	if (!e)
		return NULL;
	for (size_t i = 0; i < pc->n_blks; i++) {
		if (key[i] == UINT32_MAX)
			continue;
		int64_t sz = (int64_t)(pc->blks[i].hi - pc->blks[i].lo);
		e[n++] = (struct sev){ pc->blks[i].born, 1, sz, key[i] };
		if (pc->blks[i].died != UINT64_MAX)
			e[n++] = (struct sev){ pc->blks[i].died, -1, -sz, key[i] };
	}
	qsort(e, n, sizeof(*e), cmp_sev);
	*n_out = n;
	return e;
}

/*
 * A site is a variable when its live blocks together reach the process's --min-size (issue 19): sites of
 * small blocks whose peak live bytes stay below it are marked in pc->site_small.  Profiles without
 * min_size in META (or 0) mark nothing.
 */
int nk__an_mark_small_sites(const struct nk__nkp_process_data *pd, struct proc_ctx *pc)
{
	uint64_t ms = nk__an_min_size_of(pd);
	uint32_t max_site = 0;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blks[i].site > max_site)
			max_site = pc->blks[i].site;
	if (!ms || !max_site)
		return 0;
	uint32_t *key = malloc((pc->n_blks ? pc->n_blks : 1) * sizeof(*key));
	pc->site_small = calloc(max_site + 1, 1);
	if (!key || !pc->site_small) {
		free(key);
		return NK_ENOMEM;
	}
	pc->n_site_small = max_site + 1;
	for (size_t i = 0; i < pc->n_blks; i++)
		key[i] = pc->blks[i].site ? pc->blks[i].site : UINT32_MAX;
	size_t n = 0;
	struct sev *e = site_events(pc, key, &n);
	free(key);
	if (!e)
		return NK_ENOMEM;
	for (size_t i = 0; i < n;) {
		uint32_t site = e[i].key;
		int64_t bytes = 0, peak = 0;
		for (; i < n && e[i].key == site; i++) {
			bytes += e[i].bytes;
			if (bytes > peak)
				peak = bytes;
		}
		pc->site_small[site] = (uint64_t)peak < ms;
	}
	free(e);
	return 0;
}

/* ---------------------------------------------------------------- sites of small blocks as arrays */

/*
 * A site of small blocks (issue 19) is a variable made of many instances; page i of one block means nothing
 * to a placement.  Its blocks laid end to end in the order they were allocated make one array instead:
 * a row-by-row grid is then the grid, a list built node by node the list, and a block layout of that array
 * is "the first quarter of the rows to node 0, ...", which the plan runtime reproduces by serving the site
 * from an arena in allocation order (docs/plan-runtime.md).  Only sites whose every block is under the
 * process's min_size, with two blocks or more; blocks of the site never sampled count too (their site id is
 * that of a sampled block).  The samples move to addresses in that array: AN_SITE_BASE + proc * 2^44 + the
 * bytes of the blocks allocated before + the offset in the block, and their instance is the whole array.
 *
 * Initialisation: malloc writes its header into a block's page before the program writes the block, so no
 * sample of a small block is flagged first touch, and a master's serial fill would count as a use of every
 * page (advise then saw "no stable owner" in a list built by the master and swept by each thread in its
 * share).  A sample by the block's allocating thread before that thread's next allocation at the site is
 * its initialisation (sample.init: a row is allocated, then filled; a node allocated, then written); after
 * a thread's last block, for as long as its previous gap between two allocations.
 *
 * Teardown, the same the other way: a list freed node by node reads each node's next pointer just before
 * it frees it, and a master that built the site and frees it walks every page once more.  Under the
 * profiler that walk takes as long as the fill (each free is recorded), so the pagefault sampler weighed it
 * as much as the compute loop's sweeps and the pages lost their owners again (tests/guest/prof_list: 1000
 * of 4100 samples in the last second, every page "used" by the master; advise then chose cyclic, 1 run in
 * 4).  A sample by the thread that allocated the block and frees it, after that thread's previous free at
 * the site, is its teardown (sample.fini); before a thread's first free, for as long as its next gap
 * between two frees.  A block freed by another thread (a consumer that processes, then frees) keeps its
 * samples as uses.
 */
#define AN_SITE_BASE (1ull << 60)
#define AN_SITE_SPAN (1ull << 44)

struct sso {
	uint32_t var;
	uint64_t born, lo;
	size_t i;
};

static int cmp_sso(const void *x, const void *y)
{
	const struct sso *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->born, b->born)) || (c = NK__CMP(a->lo, b->lo)))
		return c;
	return NK__CMP(a->i, b->i);
}

/* The block of process @p pc that holds [lo, ...) at time @p t, or -1. */
static long block_at(const struct proc_ctx *pc, uint64_t lo, uint64_t t)
{
	size_t l = 0, h = pc->n_blks;
	while (l < h) {
		size_t mid = (l + h) / 2;
		if (pc->blks[mid].lo < lo)
			l = mid + 1;
		else
			h = mid;
	}
	long best = -1;
	for (size_t i = l; i < pc->n_blks && pc->blks[i].lo == lo; i++)
		if (pc->blks[i].born <= t && t < pc->blks[i].died)
			best = (long)i;
	return best;
}

/*
 * For events @p o[0..n) sorted by variable, then time (.born): @p nxt[k] the time of the same thread's next
 * event at that variable, @p prv[k] of its previous one.  A thread's last event gets its time plus its gap
 * from the one before, its first its time minus the gap to the one after (not below 0), an only event its
 * own time (an empty window), as do the events of threads past a variable's first 64.
 */
static void thread_edges(const struct blk *blks, const struct sso *o, size_t n, uint64_t *prv, uint64_t *nxt)
{
	enum { TT = 64 };
	uint32_t tt[TT];
	size_t first[TT], last[TT], nt = 0;

	for (size_t k = 0; k <= n; k++) {
		if (k == n || (k && o[k].var != o[k - 1].var)) { /* a variable ends: its threads' edges */
			for (size_t q = 0; q < nt; q++) {
				size_t f = first[q], l = last[q];
				if (f == l)
					continue;
				uint64_t tf = o[f].born, tl = o[l].born, after = nxt[f] - tf;
				nxt[l] = tl + (tl - prv[l]);
				prv[f] = tf > after ? tf - after : 0;
			}
			nt = 0;
			if (k == n)
				break;
		}
		prv[k] = nxt[k] = o[k].born;
		uint32_t tid = blks[o[k].i].tid;
		size_t q = 0;
		while (q < nt && tt[q] != tid)
			q++;
		if (q == nt) {
			if (nt < TT) {
				tt[nt] = tid;
				first[nt] = last[nt] = k;
				nt++;
			}
			continue;
		}
		nxt[last[q]] = o[k].born;
		prv[k] = o[last[q]].born;
		last[q] = k;
	}
}

int nk__an_site_space(struct ctx *c, size_t proc, struct proc_ctx *pc, size_t attr0)
{
	struct nk__analysis *a = c->a;
	uint64_t ms = nk__an_min_size_of(&c->p->procs[proc]);
	int rc = NK_ENOMEM;
	if (!ms || pc->n_blks < 2 || !a->n_vars || proc >= (AN_SITE_BASE >> 44) / 2)
		return 0;
	uint32_t max_site = 0;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blks[i].site > max_site)
			max_site = pc->blks[i].site;
	int *sv = malloc((max_site + 1) * sizeof(int));
	uint64_t *nblk = calloc(a->n_vars, sizeof(uint64_t)), *total = calloc(a->n_vars, sizeof(uint64_t));
	unsigned char *bad = calloc(a->n_vars, 1);
	uint64_t *soff = malloc(pc->n_blks * sizeof(uint64_t)), *init_end = NULL, *fini_start = NULL, *prv = NULL, *nxt = NULL;
	struct sso *o = malloc(pc->n_blks * sizeof(*o));
	if (!sv || !nblk || !total || !bad || !soff || !o)
		goto out;
	for (uint32_t s = 0; s <= max_site; s++)
		sv[s] = -1;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blk_var[i] >= 0 && pc->blks[i].site)
			sv[pc->blks[i].site] = pc->blk_var[i];
	size_t n = 0;
	for (size_t i = 0; i < pc->n_blks; i++) {
		soff[i] = UINT64_MAX;
		int v = pc->blks[i].site ? sv[pc->blks[i].site] : -1;
		if (v < 0 || a->vars[v].kind != NK__VAR_HEAP)
			continue;
		nblk[v]++;
		if (pc->blks[i].hi - pc->blks[i].lo >= ms)
			bad[v] = 1;
		o[n++] = (struct sso){ (uint32_t)v, pc->blks[i].born, pc->blks[i].lo, i };
	}
	qsort(o, n, sizeof(*o), cmp_sso);
	for (size_t k = 0; k < n; k++) {
		uint32_t v = o[k].var;
		if (bad[v] || nblk[v] < 2)
			continue;
		uint64_t len = pc->blks[o[k].i].hi - pc->blks[o[k].i].lo;
		if (total[v] + len >= AN_SITE_SPAN) {
			bad[v] = 1; /* beyond 16 TiB: left as instances */
			continue;
		}
		soff[o[k].i] = total[v];
		total[v] += len;
	}
	/* The windows (the header comment): a block's initialisation ends at its allocating thread's next
	 * allocation at the site, its teardown begins at that thread's previous free there. */
	init_end = malloc(pc->n_blks * sizeof(uint64_t));
	fini_start = malloc(pc->n_blks * sizeof(uint64_t));
	prv = malloc((n ? n : 1) * sizeof(uint64_t));
	nxt = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!init_end || !fini_start || !prv || !nxt)
		goto out;
	for (size_t i = 0; i < pc->n_blks; i++) {
		init_end[i] = 0;
		fini_start[i] = UINT64_MAX;
	}
	thread_edges(pc->blks, o, n, prv, nxt);
	for (size_t k = 0; k < n; k++)
		init_end[o[k].i] = nxt[k];
	{
		size_t nf = 0; /* the frees by the allocating thread, by variable, then free time */
		for (size_t k = 0; k < n; k++) {
			const struct blk *bk = &pc->blks[o[k].i];
			if (bk->died != UINT64_MAX && bk->ftid == bk->tid)
				o[nf++] = (struct sso){ o[k].var, bk->died, bk->lo, o[k].i };
		}
		qsort(o, nf, sizeof(*o), cmp_sso);
		thread_edges(pc->blks, o, nf, prv, nxt);
		for (size_t k = 0; k < nf; k++)
			fini_start[o[k].i] = prv[k];
	}
	uint64_t base = AN_SITE_BASE + (uint64_t)proc * AN_SITE_SPAN * 2;
	for (size_t k = attr0; k < a->n_attr; k++) {
		struct nk__an_sample *s = &a->attr[k];
		if (s->var >= a->n_vars || bad[s->var] || nblk[s->var] < 2)
			continue;
		long b = block_at(pc, s->lo, s->time_ns);
		if (b < 0 || soff[b] == UINT64_MAX || s->addr < s->lo || s->addr >= s->hi) {
			s->lo = s->hi = 0; /* no instance: no page of the array */
			continue;
		}
		const struct blk *bk = &pc->blks[b];
		if (s->thread < a->n_threads && a->threads[s->thread].tid == bk->tid && s->time_ns >= bk->born &&
		    s->time_ns < init_end[b])
			s->init = 1;
		else if (s->thread < a->n_threads && a->threads[s->thread].tid == bk->tid && bk->ftid == bk->tid &&
			 s->time_ns >= fini_start[b] && s->time_ns < bk->died)
			s->fini = 1;
		s->addr = base + soff[b] + (s->addr - s->lo);
		s->lo = base;
		s->hi = base + total[s->var];
	}
	for (size_t v = 0; v < a->n_vars; v++)
		if (!bad[v] && nblk[v] >= 2 && total[v]) {
			a->vars[v].site_space = 1;
			if (total[v] > a->vars[v].size)
				a->vars[v].size = total[v];
		}
	rc = 0;
out:
	free(sv);
	free(nblk);
	free(total);
	free(bad);
	free(soff);
	free(init_end);
	free(fini_start);
	free(prv);
	free(nxt);
	free(o);
	return rc;
}

/* The site members of the heap variables of process @p proc (whole profile only). */
int nk__an_site_stats(struct ctx *c, size_t proc, struct proc_ctx *pc)
{
	const struct nk__nkp_process_data *pd = &c->p->procs[proc];
	struct nk__analysis *a = c->a;
	uint32_t max_site = 0;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blks[i].site > max_site)
			max_site = pc->blks[i].site;
	int *sv = malloc((max_site + 1) * sizeof(int));
	uint32_t *key = malloc((pc->n_blks ? pc->n_blks : 1) * sizeof(*key));
	if (!sv || !key) {
		free(sv);
		free(key);
		return NK_ENOMEM;
	}
	for (uint32_t s = 0; s <= max_site; s++)
		sv[s] = -1;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blk_var[i] >= 0 && pc->blks[i].site)
			sv[pc->blks[i].site] = pc->blk_var[i];
	/* thread -> blocks of each variable: counted in a small table per variable */
	for (size_t i = 0; i < pc->n_blks; i++) {
		int v = pc->blks[i].site ? sv[pc->blks[i].site] : -1;
		key[i] = v >= 0 ? (uint32_t)v : UINT32_MAX;
		if (v < 0)
			continue;
		struct nk__an_var *var = &a->vars[v];
		var->site = 1;
		var->site_blocks++;
		if (pc->blks[i].died == UINT64_MAX) {
			var->site_live++;
			var->site_bytes_live += pc->blks[i].hi - pc->blks[i].lo;
		}
	}
	/* allocating thread: the one with most blocks of the variable (a pass per thread of the process) */
	for (size_t t = 0; t < pd->n_threads + 1; t++) {
		uint32_t tid = t < pd->n_threads ? pd->threads[t].tid : 0;
		uint64_t *cnt = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		if (!cnt) {
			free(sv);
			free(key);
			return NK_ENOMEM;
		}
		for (size_t i = 0; i < pc->n_blks; i++)
			if (key[i] != UINT32_MAX &&
			    (t < pd->n_threads ? pc->blks[i].tid == tid : !thread_known(pd, pc->blks[i].tid)))
				cnt[key[i]]++;
		for (size_t v = 0; v < a->n_vars; v++) {
			if (!cnt[v] || cnt[v] <= a->vars[v].alloc_thread_blocks)
				continue;
			int th = t < pd->n_threads ? nk__an_thread_get(c, (uint32_t)proc, tid, -1) : -1;
			a->vars[v].alloc_thread = th;
			a->vars[v].alloc_thread_blocks = cnt[v];
		}
		free(cnt);
	}
	size_t n = 0;
	struct sev *e = site_events(pc, key, &n);
	free(sv);
	free(key);
	if (!e)
		return NK_ENOMEM;
	for (size_t i = 0; i < n;) {
		uint32_t v = e[i].key;
		int64_t blocks = 0, bytes = 0, pb = 0, pbytes = 0;
		for (; i < n && e[i].key == v; i++) {
			blocks += e[i].blocks;
			bytes += e[i].bytes;
			if (blocks > pb)
				pb = blocks;
			if (bytes > pbytes)
				pbytes = bytes;
		}
		a->vars[v].site_peak += (uint64_t)pb;
		a->vars[v].site_bytes_peak += (uint64_t)pbytes;
	}
	free(e);
	return 0;
}

void nk__an_free_pc(struct proc_ctx *pc)
{
	free(pc->site_small);
	free(pc->blks);
	free(pc->blk_var);
	free(pc->statics);
	free(pc->name_var);
	free(pc->stack_var);
}
