/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so: sites of small blocks (advice_rt.h; a plan entry with "layout": "blocks",
 * docs/plan-runtime.md "Sites of small blocks").  The variable is the site's blocks laid end to end in
 * allocation order; its policy is laid over that array.  Every allocation of such a site is served from a
 * jemalloc arena of its own, so that blocks allocated one after another share pages that this file places
 * by their position in the array.
 *
 * Why jemalloc, and how it is tied in:
 *   - An allocator is not written by hand here: jemalloc (Debian's libjemalloc2, unprefixed) is linked as a
 *     DT_NEEDED of this library.  It loads after libc in the search order, so the program's malloc stays
 *     libc's (or whatever it had); only mallocx & co. with MALLOCX_ARENA reach jemalloc.  (A dlopen of
 *     libjemalloc at run time fails: its initial-exec TLS does not fit the static TLS block.)
 *   - One arena per site (arenas.create with extent hooks), every call with MALLOCX_TCACHE_NONE: a thread
 *     cache would hand one site's blocks to another.
 *   - Extents come from one region reserved at the first arena (MAP_NORESERVE), a slice per site: a lock-free
 *     bump pointer per slice (no mutex: the hooks run under jemalloc's locks, and a fork may come at any
 *     time).  "Is this block ours" is one range check of the region, and the slice names the site.  The region
 *     is mapped read-write when the kernel overcommits (vm.overcommit_memory 0 or 1: a page costs nothing
 *     until touched, and a commit is no system call), else PROT_NONE and made writable extent by extent
 *     (strict accounting would charge the whole region at once), as jemalloc itself decides.
 *   - Placement happens in the commit hook, not the alloc hook.  jemalloc grows an arena by asking the alloc
 *     hook for geometrically larger pieces (2 MiB first) that it keeps uncommitted ("retained") and carves
 *     extents from; each extent it hands out is committed first, through the commit hook, with exactly that
 *     extent's range, while the allocation that needs it is on the stack.  So every extent is placed once,
 *     when it starts to be used, whatever the grow sizes (no retain_grow_limit needed: the log's counts,
 *     extents placed against grows, show it).  The alloc hook commits only when jemalloc asks it to: its own
 *     metadata, never placed.
 *   - The dalloc hook opts out (the address space is never given back, so the region stays ours); decommit
 *     drops the pages (MADV_DONTNEED; PROT_NONE too under strict accounting), and jemalloc commits them again,
 *     placed anew, when it reuses them.  Freed blocks inside live extents are reused as they are: their pages
 *     keep their nodes.
 *
 * Placement: before each mallocx / rallocx the thread notes {site, position, ratio}: position = bytes the site
 * was asked for before this block (one atomic counter per site: allocation order across threads), ratio = the
 * requested size / the size jemalloc gives it.  The commit hook of that site maps page j of the new extent to
 * page nkpl_site_page(position, j, ratio) of the site's array and puts it on that page's node: consecutive
 * pages of one node get mbind MPOL_PREFERRED (the fallback nk_apply uses without NK_APPLY_STRICT), which their
 * first touch follows.  A commit with no note (jemalloc's metadata, the arena's creation) is not placed.
 *   - System calls per extent would cost more than the blocks (an mbind per page of 1 KiB blocks doubled the
 *     time of a malloc loop on the test host).  So when jemalloc grows the arena during an allocation, the
 *     pieces' pages are bound ahead as the blocks after this one would fill them (few runs only), and a table
 *     per page remembers the node each page's policy names; a commit binds only the pages whose node differs
 *     from what the table says (none, when the site's blocks come in one size and the layout is made of
 *     blocks of nodes).
 *   - A run of the same node right after another merges with it into one mapping, but each change of node
 *     splits the mapping, and a layout that changes node every page (cyclic) over a site of a few hundred MiB
 *     would reach vm.max_map_count (65530), after which the program's own mmaps fail.  So once the runs that
 *     extend no previous one pass SPLIT_BUDGET, nothing is bound ahead, and runs are faulted in at once
 *     (MADV_POPULATE_WRITE) and given the default policy back, and merge again into one mapping (two more
 *     system calls per run, and pages touched at commit rather than by the blocks; a kernel before 5.14 has no
 *     MADV_POPULATE_WRITE: the policy then stays).
 * The same table records each handed-out page's array page, so a later entry (first-parallel, phase) can move
 * the pages to its own layout (runtime.c, through nkpl_arena_runs).
 *
 * Like the profiler runtime, this file makes its own system calls for its memory (mmap, mprotect, madvise): it
 * runs inside the program, inside jemalloc's hooks, where libnumakit's calls (which allocate) cannot go.  The
 * memory policy goes through the OS layer's nk__os_mbind_node (no allocation, linked from numakit_rtsupport).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "advice_rt.h"
#include "os/os.h"

uintptr_t nkpl_region_lo;
size_t nkpl_region_len;

#ifndef NK_HAVE_JEMALLOC

/* Built without jemalloc: nothing is served; runtime.c logs each entry of layout blocks once. */
int nkpl_arena_built(void)
{
	return 0;
}
int nkpl_arena_setup(size_t n, const int *groups, const char *const *keys, const uint64_t *npages)
{
	return n ? -1 : 0;
}
void nkpl_arena_set_layout(int group, const struct nkpl_layout *l)
{
}
void *nkpl_arena_alloc(int group, size_t n, size_t align, int zero)
{
	return NULL;
}
void nkpl_arena_free(void *p)
{
}
void *nkpl_arena_realloc(void *p, size_t n)
{
	errno = ENOMEM;
	return NULL;
}
size_t nkpl_arena_usable(const void *p)
{
	return 0;
}
void nkpl_arena_runs(int group, const struct nkpl_layout *l, void (*fn)(uintptr_t lo, uintptr_t hi, int node, void *arg),
		     void *arg)
{
}
int nkpl_arena_stats(int group, struct nkpl_arena_stats *out)
{
	return -1;
}
void nkpl_arena_fork_child(void)
{
}

#else

#include <jemalloc/jemalloc.h>

/* Address space tried for the region, largest first (RLIMIT_AS may refuse the larger ones). */
static const uint64_t region_tries[] = { 64ull << 30, 16ull << 30, 4ull << 30, 1ull << 30 };
#define SLICE_ALIGN (2u << 20) /* jemalloc asks for its metadata 2 MiB-aligned */
#define MIN_SLICE (8u << 20)
#define AS_SHARE 8 /* under a finite RLIMIT_AS, the region takes at most this share of it */
#define SIDE_NONE 0u               /* page not handed out to blocks (metadata, never committed, decommitted) */
#define SIDE_UNKNOWN UINT32_MAX    /* handed out without a position (committed with no note) */
#define PREDICT_RUNS 16            /* a grown piece is bound ahead only when its predicted layout has this few runs */

enum { ST_NONE = 0, ST_MAKING = 1, ST_READY = 2, ST_FAILED = 3 };

struct site {
	extent_hooks_t hooks;   /* first: the hooks get &site->hooks and find their site with it */
	int group;
	const char *key;
	uint64_t npages;        /* pages of the site's array */
	atomic_int state;
	unsigned arena;
	uintptr_t lo, hi;       /* its slice of the region */
	_Atomic uintptr_t cur;  /* bump pointer in the slice */
	_Atomic(const struct nkpl_layout *) layout;
	atomic_uint_fast64_t pos; /* bytes asked for at the site so far: the next block's position */
	atomic_uint_fast64_t blocks, bytes, left, frees, reallocs, extents, grows, unplaced;
	atomic_int full_logged;
	_Atomic uintptr_t last_end; /* where the last run placed ended, and its node: a run right after it with */
	atomic_int last_node;       /* the same node merges with it */
};

static struct site *sites;
static size_t n_sites;
static atomic_int region_state;
static size_t slice_len;
/* Per region page; under strict accounting its pages are made writable as the slices' bump pointers pass. */
struct pinfo {
	uint32_t arr;   /* SIDE_NONE, SIDE_UNKNOWN or the array page + 1 */
	uint16_t bound; /* node + 1 that the page's policy names (mbind by this file), 0 unknown or default */
	uint16_t spare;
};
static _Atomic(struct pinfo *) side;
static int region_rw;           /* the region is read-write from the start (the kernel overcommits) */
#define SPLIT_BUDGET 4096        /* runs of a new node the mappings may split into before runs are faulted in */
static atomic_uint splits;       /* runs placed that extended no previous run (an estimate of new mappings) */
static atomic_int populate_off;  /* the kernel has no MADV_POPULATE_WRITE: policies stay for the first touch */

/* The allocation in flight on this thread (set around mallocx/rallocx, read by the commit hook). */
static __thread struct {
	struct site *site;
	uint64_t pos;
	double ratio;
} note __attribute__((tls_model("initial-exec")));

int nkpl_arena_built(void)
{
	return 1;
}

static struct site *site_of_group(int group)
{
	for (size_t i = 0; i < n_sites; i++)
		if (sites[i].group == group)
			return &sites[i];
	return NULL;
}

static struct site *site_of_ptr(const void *p)
{
	size_t k = slice_len ? ((uintptr_t)p - nkpl_region_lo) / slice_len : n_sites;
	return k < n_sites ? &sites[k] : NULL;
}

static struct site *site_of_hooks(extent_hooks_t *h)
{
	return (struct site *)(void *)h;
}

/* ---------------------------------------------------------------- placement */


static struct pinfo *pinfo_of(uintptr_t p)
{
	return &atomic_load_explicit(&side, memory_order_relaxed)[(p - nkpl_region_lo) / nkpl_page_size];
}

static int populating(void)
{
	return atomic_load_explicit(&splits, memory_order_relaxed) >= SPLIT_BUDGET &&
	       !atomic_load_explicit(&populate_off, memory_order_relaxed);
}

/*
 * Pages [lo, hi) on @p node (node < 0: nothing): their policy, and while the budget of split mappings lasts
 * that is all; past it, faulted in and the policy taken back.  No allocation, no lock (inside jemalloc).
 */
static void place_run(struct site *s, uintptr_t lo, uintptr_t hi, int node)
{
	uint64_t ps = nkpl_page_size;

	if (node < 0 || lo >= hi)
		return;
	if (nk__os_mbind_node((void *)lo, hi - lo, NK__MPOL_PREFERRED, node, NULL) != 0) {
		atomic_fetch_add(&s->unplaced, (hi - lo) / ps);
		return;
	}
	int extends = atomic_load_explicit(&s->last_end, memory_order_relaxed) == lo &&
		      atomic_load_explicit(&s->last_node, memory_order_relaxed) == node;
	atomic_store_explicit(&s->last_end, hi, memory_order_relaxed);
	atomic_store_explicit(&s->last_node, node, memory_order_relaxed);
	if (!extends)
		atomic_fetch_add_explicit(&splits, 1, memory_order_relaxed);
	uint16_t bound = (uint16_t)(node + 1);
	if (populating()) {
		if (!madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE)) {
			(void)nk__os_mbind((void *)lo, hi - lo, NK__MPOL_DEFAULT, NULL, 0, 0, NULL); /* no node: no allocation */
			bound = 0;
		} else if (errno == EINVAL) { /* before Linux 5.14: the policy stays for the first touch */
			atomic_store(&populate_off, 1);
		}
	}
	for (uintptr_t p = lo; p < hi; p += ps)
		pinfo_of(p)->bound = bound;
}

static int layout_node(const struct nkpl_layout *l, uint32_t sv)
{
	if (!l || !l->nodes || !l->npages || sv == SIDE_NONE || sv == SIDE_UNKNOWN)
		return -1;
	uint64_t page = sv - 1;
	return l->nodes[page < l->npages ? page : l->npages - 1];
}

/* The array page (SIDE_* encoding) of page @p j of an extent whose first block is the noted one. */
static uint32_t noted_page(const struct site *s, uint64_t j)
{
	uint64_t sp = nkpl_site_page(note.pos, j, nkpl_page_size, note.ratio, s->npages ? s->npages : 1);
	return sp >= SIDE_UNKNOWN - 1 ? SIDE_UNKNOWN - 1 : (uint32_t)sp + 1;
}

/* Pages [lo, lo + len) of the extent starting at @p base were committed: record them, place those not yet. */
static void place(struct site *s, uintptr_t base, uintptr_t lo, size_t len)
{
	uint64_t ps = nkpl_page_size;
	const struct nkpl_layout *l = atomic_load_explicit(&s->layout, memory_order_acquire);
	int noted = note.site == s, all = populating();
	uintptr_t run_lo = lo;
	int run_node = -1;

	atomic_fetch_add_explicit(&s->extents, 1, memory_order_relaxed);
	for (uintptr_t p = lo; p < lo + len; p += ps) {
		struct pinfo *pi = pinfo_of(p);
		uint32_t sv = noted ? noted_page(s, (p - base) / ps) : SIDE_UNKNOWN;
		pi->arr = sv;
		int node = layout_node(l, sv);
		if (node >= 0 && !all && pi->bound == node + 1)
			node = -1; /* its policy names that node already */
		if (node != run_node) {
			place_run(s, run_lo, p, run_node);
			run_lo = p;
			run_node = node;
		}
	}
	place_run(s, run_lo, lo + len, run_node);
}

/*
 * jemalloc grew the arena by [a, a + size) during the noted allocation: bind its pages ahead, as the blocks
 * after the noted one would fill them, when that takes few runs (the commits then find them bound).
 */
static void bind_ahead(struct site *s, uintptr_t a, size_t size)
{
	const struct nkpl_layout *l = atomic_load_explicit(&s->layout, memory_order_acquire);
	uint64_t ps = nkpl_page_size, n = size / ps, runs = 0;
	int prev = -2;

	if (note.site != s || !l || !l->nodes || populating())
		return;
	for (uint64_t j = 0; j < n && runs <= PREDICT_RUNS; j++) {
		int node = layout_node(l, noted_page(s, j));
		if (node != prev)
			runs++;
		prev = node;
	}
	if (runs > PREDICT_RUNS)
		return;
	uint64_t run_j = 0;
	prev = layout_node(l, noted_page(s, 0));
	for (uint64_t j = 1; j <= n; j++) {
		int node = j < n ? layout_node(l, noted_page(s, j)) : -2;
		if (node != prev) {
			place_run(s, a + run_j * ps, a + j * ps, prev);
			run_j = j;
			prev = node;
		}
	}
}

/* ---------------------------------------------------------------- extent hooks (no lock, no allocation) */

static void *hook_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t align, bool *zero, bool *commit,
			unsigned arena_ind)
{
	struct site *s = site_of_hooks(h);
	uintptr_t cur, a, end;

	if (new_addr || !size) /* an address of jemalloc's choosing: the slice cannot promise it */
		return NULL;
	if (align < nkpl_page_size)
		align = nkpl_page_size;
	cur = atomic_load(&s->cur);
	do {
		a = (cur + align - 1) & ~(uintptr_t)(align - 1);
		end = a + size;
		if (a < cur || end < a || end > s->hi)
			return NULL; /* the slice is full: mallocx fails, the block goes to the allocator */
	} while (!atomic_compare_exchange_weak(&s->cur, &cur, end));
	atomic_fetch_add_explicit(&s->grows, 1, memory_order_relaxed);
	if (!region_rw) {
		/* the table's entries of [a, end), writable (idempotent: a neighbour may share a page of them) */
		uintptr_t slo = (uintptr_t)pinfo_of(a) & ~(uintptr_t)(nkpl_page_size - 1);
		uintptr_t shi = ((uintptr_t)pinfo_of(end) + nkpl_page_size - 1) & ~(uintptr_t)(nkpl_page_size - 1);
		if (mprotect((void *)slo, shi - slo, PROT_READ | PROT_WRITE))
			return NULL; /* its address space stays unused */
		if (*commit && mprotect((void *)a, size, PROT_READ | PROT_WRITE))
			return NULL;
	}
	if (!*commit)
		bind_ahead(s, a, size);
	*zero = true; /* never touched */
	return (void *)a;
}

static bool hook_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned arena_ind)
{
	return true; /* opt out: jemalloc keeps the extent (retained) and reuses it; the region stays ours */
}

static bool hook_commit(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned arena_ind)
{
	struct site *s = site_of_hooks(h);
	uintptr_t lo = (uintptr_t)addr + off;
	if (!region_rw && mprotect((void *)lo, len, PROT_READ | PROT_WRITE))
		return true;
	place(s, (uintptr_t)addr, lo, len);
	return false;
}

static bool hook_decommit(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len, unsigned arena_ind)
{
	uintptr_t lo = (uintptr_t)addr + off;
	if (madvise((void *)lo, len, MADV_DONTNEED) || (!region_rw && mprotect((void *)lo, len, PROT_NONE)))
		return true;
	for (uintptr_t p = lo; p < lo + len; p += nkpl_page_size)
		pinfo_of(p)->arr = SIDE_NONE; /* the policy stays: bound is still right */
	return false;
}

static bool hook_split(extent_hooks_t *h, void *addr, size_t size, size_t a, size_t b, bool committed,
		       unsigned arena_ind)
{
	return false; /* one slice, one mapping: any split is fine */
}

static bool hook_merge(extent_hooks_t *h, void *a, size_t sa, void *b, size_t sb, bool committed, unsigned arena_ind)
{
	return false;
}

static const extent_hooks_t hooks_template = {
	.alloc = hook_alloc,
	.dalloc = hook_dalloc,
	.commit = hook_commit,
	.decommit = hook_decommit,
	.split = hook_split,
	.merge = hook_merge,
};

/* ---------------------------------------------------------------- setup and the arenas */

int nkpl_arena_setup(size_t n, const int *groups, const char *const *keys, const uint64_t *npages)
{
	if (!n)
		return 0;
	struct site *s = calloc(n, sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++) {
		s[i].hooks = hooks_template;
		s[i].group = groups[i];
		s[i].key = keys[i];
		s[i].npages = npages[i];
	}
	sites = s;
	n_sites = n;
	return 0;
}

void nkpl_arena_set_layout(int group, const struct nkpl_layout *l)
{
	struct site *s = site_of_group(group);
	if (s)
		atomic_store_explicit(&s->layout, l, memory_order_release);
}

/* Wait while another thread makes it (milliseconds, once); the final state. */
static int settle(atomic_int *state)
{
	int st;
	while ((st = atomic_load(state)) == ST_MAKING)
		sched_yield();
	return st;
}

static void left_once(struct site *s, const char *why)
{
	nkpl_log("small blocks of %s left to the allocator: %s", s->key, why);
}

/* The region, reserved once for every site.  0 ready. */
static int region_ready(void)
{
	int st = ST_NONE;
	if (!atomic_compare_exchange_strong(&region_state, &st, ST_MAKING))
		return settle(&region_state) == ST_READY ? 0 : -1;
	uint64_t ps = nkpl_page_size, cap = UINT64_MAX;
	struct rlimit rl;
	char oc = '0';
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &oc, 1) != 1)
			oc = '0';
		close(fd);
	}
	region_rw = oc != '2';
	int prot = region_rw ? PROT_READ | PROT_WRITE : PROT_NONE;
	/* The program's own address space first: under a limit, a small share of it. */
	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY)
		cap = (uint64_t)rl.rlim_cur / AS_SHARE;
	for (size_t t = 0; t < sizeof region_tries / sizeof region_tries[0]; t++) {
		uint64_t len = region_tries[t];
		size_t sl = (size_t)(len / n_sites) & ~(size_t)(SLICE_ALIGN - 1);
		if (sl < MIN_SLICE)
			break;
		if (len + SLICE_ALIGN + len / ps * sizeof(struct pinfo) > cap) {
			errno = ENOMEM;
			continue;
		}
		/* one extra alignment unit: the slices start 2 MiB-aligned */
		void *m = nkpl_real_mmap(NULL, len + SLICE_ALIGN, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			continue;
		size_t side_len = (size_t)(len / ps) * sizeof(struct pinfo);
		void *sd = nkpl_real_mmap(NULL, side_len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (sd == MAP_FAILED) {
			nkpl_real_munmap(m, len + SLICE_ALIGN);
			continue;
		}
		uintptr_t lo = ((uintptr_t)m + SLICE_ALIGN - 1) & ~(uintptr_t)(SLICE_ALIGN - 1);
		/* Per-page placement needs base pages: a huge page would put 2 MiB on one node. */
		(void)madvise((void *)lo, len, MADV_NOHUGEPAGE);
		slice_len = sl;
		for (size_t i = 0; i < n_sites; i++) {
			sites[i].lo = lo + i * sl;
			sites[i].hi = sites[i].lo + sl;
			atomic_store(&sites[i].cur, sites[i].lo);
		}
		atomic_store(&side, (struct pinfo *)sd);
		__atomic_store_n(&nkpl_region_lo, lo, __ATOMIC_RELAXED);
		__atomic_store_n(&nkpl_region_len, (size_t)len, __ATOMIC_RELEASE);
		nkpl_log("arenas: region %#lx-%#lx (%llu MiB%s) for %zu sites of small blocks, %zu MiB each",
			 (unsigned long)lo, (unsigned long)(lo + len), (unsigned long long)(len >> 20),
			 region_rw ? "" : ", committed extent by extent", n_sites, sl >> 20);
		atomic_store(&region_state, ST_READY);
		return 0;
	}
	nkpl_log("error: arenas: cannot reserve address space for the sites of small blocks (%s)", strerror(errno));
	atomic_store(&region_state, ST_FAILED);
	return -1;
}

/* Make @p s's arena (first block of the site).  0 ready. */
static int arena_ready(struct site *s)
{
	int st = atomic_load_explicit(&s->state, memory_order_acquire);
	if (st == ST_READY)
		return 0;
	if (st == ST_FAILED)
		return -1;
	st = ST_NONE;
	if (!atomic_compare_exchange_strong(&s->state, &st, ST_MAKING))
		return settle(&s->state) == ST_READY ? 0 : -1;
	if (region_ready()) {
		left_once(s, "no address space for its arena");
		goto fail;
	}
	bool retain = false;
	size_t sz = sizeof retain;
	if (mallctl("opt.retain", &retain, &sz, NULL, 0) || !retain) {
		/* without retain jemalloc takes committed extents straight from the alloc hook: never placed */
		left_once(s, "jemalloc runs without opt.retain (MALLOC_CONF?), its extents could not be placed");
		goto fail;
	}
	unsigned idx = 0;
	extent_hooks_t *hp = &s->hooks;
	sz = sizeof idx;
	int rc = mallctl("arenas.create", &idx, &sz, &hp, sizeof hp);
	if (rc) {
		char why[96];
		snprintf(why, sizeof why, "jemalloc cannot create its arena (arenas.create: %s)", strerror(rc));
		left_once(s, why);
		goto fail;
	}
	s->arena = idx;
	atomic_store_explicit(&s->state, ST_READY, memory_order_release);
	nkpl_log("arena %u for %s: slice %#lx-%#lx", idx, s->key, (unsigned long)s->lo, (unsigned long)s->hi);
	nkpl_blocks_matched(s->group);
	return 0;
fail:
	atomic_store(&s->state, ST_FAILED);
	return -1;
}

static int flags_of(const struct site *s)
{
	return (int)MALLOCX_ARENA(s->arena) | MALLOCX_TCACHE_NONE;
}

/* Note the block about to be allocated: its position, its density. */
static void note_block(struct site *s, size_t n, size_t req, int flags)
{
	size_t usable = nallocx(req, flags);
	note.pos = atomic_fetch_add_explicit(&s->pos, n, memory_order_relaxed);
	note.ratio = usable ? (double)req / (double)usable : 1.0;
	note.site = s;
}

void *nkpl_arena_alloc(int group, size_t n, size_t align, int zero)
{
	struct site *s = site_of_group(group);
	if (!s)
		return NULL;
	if (arena_ready(s)) {
		atomic_fetch_add_explicit(&s->left, 1, memory_order_relaxed);
		return NULL;
	}
	size_t req = n ? n : 1; /* mallocx(0) is undefined */
	int flags = flags_of(s) | (zero ? MALLOCX_ZERO : 0) | (align ? MALLOCX_ALIGN(align) : 0);
	note_block(s, n, req, flags);
	void *p = mallocx(req, flags);
	note.site = NULL;
	if (!p) {
		atomic_fetch_add_explicit(&s->left, 1, memory_order_relaxed);
		if (!atomic_exchange(&s->full_logged, 1))
			left_once(s, "its arena is full or out of memory (later blocks too)");
		return NULL;
	}
	atomic_fetch_add_explicit(&s->blocks, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
	return p;
}

void nkpl_arena_free(void *p)
{
	struct site *s = site_of_ptr(p);
	if (s)
		atomic_fetch_add_explicit(&s->frees, 1, memory_order_relaxed);
	dallocx(p, MALLOCX_TCACHE_NONE);
}

void *nkpl_arena_realloc(void *p, size_t n)
{
	struct site *s = site_of_ptr(p);
	if (!n) { /* as glibc: free, NULL */
		nkpl_arena_free(p);
		return NULL;
	}
	if (!s) { /* cannot happen: every region pointer has its slice */
		errno = ENOMEM;
		return NULL;
	}
	int flags = flags_of(s);
	note_block(s, n, n, flags);
	void *q = rallocx(p, n, flags);
	note.site = NULL;
	if (!q) {
		errno = ENOMEM;
		return NULL; /* the block is left as it was */
	}
	atomic_fetch_add_explicit(&s->reallocs, 1, memory_order_relaxed);
	return q;
}

size_t nkpl_arena_usable(const void *p)
{
	return sallocx((void *)p, 0);
}

void nkpl_arena_runs(int group, const struct nkpl_layout *l, void (*fn)(uintptr_t lo, uintptr_t hi, int node, void *arg),
		     void *arg)
{
	struct site *s = site_of_group(group);
	uint64_t ps = nkpl_page_size;
	if (!s || !atomic_load(&side) || atomic_load(&s->state) != ST_READY)
		return;
	uintptr_t end = atomic_load(&s->cur), run_lo = 0;
	int run_node = -1;
	for (uintptr_t p = s->lo; p <= end; p += ps) {
		uint32_t sv = p < end ? __atomic_load_n(&pinfo_of(p)->arr, __ATOMIC_RELAXED) : SIDE_NONE;
		int node = layout_node(l, sv);
		if (run_lo && (sv == SIDE_NONE || node != run_node)) {
			fn(run_lo, p, run_node, arg);
			/* a new layout: the policies fn set are not this table's (unknown: bound again at a commit) */
			for (uintptr_t q = run_lo; l && q < p; q += ps)
				pinfo_of(q)->bound = 0;
			run_lo = 0;
		}
		if (sv != SIDE_NONE && !run_lo) {
			run_lo = p;
			run_node = node;
		}
	}
}

int nkpl_arena_stats(int group, struct nkpl_arena_stats *out)
{
	struct site *s = site_of_group(group);
	if (!s || !out)
		return -1;
	int st = atomic_load(&s->state);
	*out = (struct nkpl_arena_stats){
		.made = st == ST_READY ? 1 : st == ST_FAILED ? -1 : 0,
		.arena = s->arena,
		.lo = s->lo,
		.hi = s->hi,
		.blocks = atomic_load(&s->blocks),
		.bytes = atomic_load(&s->bytes),
		.left = atomic_load(&s->left),
		.frees = atomic_load(&s->frees),
		.reallocs = atomic_load(&s->reallocs),
		.extents = atomic_load(&s->extents),
		.grows = atomic_load(&s->grows),
		.unplaced = atomic_load(&s->unplaced),
	};
	return 0;
}

/* A fork while another thread made an arena or the region: that thread is gone, so is what it was making. */
void nkpl_arena_fork_child(void)
{
	int st = ST_MAKING;
	(void)atomic_compare_exchange_strong(&region_state, &st, ST_FAILED);
	for (size_t i = 0; i < n_sites; i++) {
		st = ST_MAKING;
		(void)atomic_compare_exchange_strong(&sites[i].state, &st, ST_FAILED);
	}
}

#endif
