/* SPDX-License-Identifier: BSD-3-Clause
 * Heaps placed by a policy (numakit/heap.h, docs/heap.md).
 *
 * Why jemalloc, and how it is tied in (the choices of preload/advice/arena.c, which explains them at length,
 * except the first):
 *   - No allocator is written here: a heap is one jemalloc arena (arenas.create with extent hooks).  jemalloc
 *     is a private copy inside libnumakit_heap, the heaps' own library, never libnumakit (Debian's
 *     libjemalloc_pic.a joined with this file, every symbol but nk_heap_* made local: src/CMakeLists.txt), not libjemalloc.so.2 as a DT_NEEDED: that one exports malloc
 *     and C++'s operator new, which then preempt libstdc++'s for the libraries loaded after it (the `numakit`
 *     command crashed at start-up inside libLLVM).  The private copy serves only this file's mallocx & co.
 *     with MALLOCX_ARENA; the program's malloc stays what it was, jemalloc included.
   - Every extent of the arena comes from one range reserved when the heap is made (MAP_NORESERVE), by a
 *     lock-free bump pointer (the hooks run under jemalloc's locks): "is this pointer ours" is one range check,
 *     and the policy is laid over that range page by page in address order.  The range is read-write from
 *     the start when the kernel overcommits (a page costs nothing until touched), else inaccessible and
 *     opened piece by piece as jemalloc grows the arena (strict accounting would charge it whole).
 *   - The dalloc hook opts out (the address space is never given back while the heap lives); decommit drops
 *     the pages (MADV_DONTNEED), and jemalloc commits them again, placed again, when it reuses them.  The
 *     purge hooks are left out, so jemalloc decommits: a purged page refaulted outside a commit could miss
 *     its placement (runs mode below resets the policy after placing).
 *   - The fast path for small objects: a thread cache, but an explicit one per (thread, heap)
 *     (tcache.create, MALLOCX_TCACHE): a thread's automatic cache would hand one arena's blocks to another
 *     arena's caller.  A thread keeps its caches in a small direct-mapped table (TSLOTS entries, by the heap's
 *     serial number): the first heaps a thread uses get one each, a heap that collides with a live one in the
 *     table goes through the arena without a cache (MALLOCX_TCACHE_NONE: its bin locks).  Caches are
 *     destroyed (flushed into their arena) when their thread exits (a pthread key) or their heap is
 *     destroyed, whichever comes first; one mutex, taken only on these slow paths, orders the two.
 *   - Counters of objects and bytes are kept per (thread, heap) by their owner thread (relaxed stores of its
 *     own values, no read-modify-write on shared lines), summed by nk_heap_stats_get; the usable bytes of
 *     small requests come from the size classes computed inline, and a free counts no bytes (a lookup of
 *     its size would cost as much as the free's own): the live bytes are jemalloc's arena statistics.
 *
 * Placement, decided once when the heap is made:
 *   - kernel mode: the policy is one mbind the kernel expresses exactly over the whole range (one node; a
 *     set for bind over several nodes: the kernel's choice inside it; cyclic in increasing node order over a
 *     range aligned to lcm(1..N) pages, so that the kernel's interleave, which follows the absolute page
 *     number, is the plan; weighted when the system-wide weights are the policy's).  Set at creation over
 *     the reserved range: every later fault follows it, and commits make no system call.
 *   - runs mode (every other kind: cyclic_block, block_cyclic, skew_mapp, prime_mapp, random, a cyclic set
 *     in another order, weighted with other weights): the commit hook walks the plan's runs over the extent
 *     being committed; each run is bound to its node (MPOL_PREFERRED, MPOL_BIND when strict), faulted in at
 *     once (MADV_POPULATE_WRITE) and given the default policy back, so that the mapping merges into one
 *     again: a per-page policy over a large heap would otherwise split it into more mappings than
 *     vm.max_map_count allows (arena.c measured it).  A kernel before 5.14 cannot populate: the policy then
 *     stays for the first touch.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "numakit/heap.h"
#include "os/os.h"
#include "policy/plan.h"
#include "util/error.h"
#include "heap/heap.h"

int nk__heap_test_runs;

#ifndef NK_HAVE_JEMALLOC
#error "src/heap/heap.c is libnumakit_heap, built only with jemalloc (src/CMakeLists.txt)"
#endif

#include <jemalloc/jemalloc.h>

/* Address space tried for a heap, largest first (RLIMIT_AS may refuse the larger ones). */
static const uint64_t region_tries[] = { 64ull << 30, 16ull << 30, 4ull << 30, 1ull << 30 };
#define AS_SHARE 8                 /* under a finite RLIMIT_AS, a heap takes at most this share of it */
#define REGION_ALIGN (2u << 20)    /* jemalloc asks for 2 MiB-aligned pieces of metadata */
#define ALIGN_MAX ((size_t)64 << 20)
#define TSLOTS 8                   /* heaps per thread with a cache of their own */
#define NO_TCACHE UINT_MAX

/* Counters of one (thread, heap); written by the owner thread only, except the shared and retired ones. */
struct heap_thread {
	struct heap_thread *next; /* the heap's list (reg_lock) */
	unsigned tc;              /* explicit tcache or NO_TCACHE */
	int aflags;               /* mallocx flags: the arena and the cache */
	int tflags;               /* dallocx flags: the cache */
	int shared;               /* 1: several threads write the counters (atomic adds) */
	_Atomic uint64_t allocs, frees, usable_in, requested;
};

struct nk_heap {
	extent_hooks_t hooks;     /* first: the hooks get &h->hooks */
	uint64_t serial;          /* never reused: names the heap in the threads' tables */
	unsigned arena;
	const nk_machine *m;
	unsigned flags;
	uintptr_t lo;             /* the reserved range [lo, lo + len) */
	size_t len;
	size_t ps;
	int rw;                   /* the range is read-write from the start */
	nk_plan *plan;            /* runs mode: the plan over the range; NULL in kernel mode */
	int run_mode;             /* NK__MPOL_PREFERRED or NK__MPOL_BIND (strict) */
	_Atomic uintptr_t cur;    /* bump pointer */
	_Atomic uint64_t committed, unplaced;
	atomic_int populate_off;  /* the kernel has no MADV_POPULATE_WRITE */
	struct heap_thread shared;  /* threads without a slot of their own */
	struct heap_thread retired; /* what exited threads counted */
	struct heap_thread *threads; /* reg_lock */
	struct nk_heap *next;        /* the registry (reg_lock) */
};

/* ---------------------------------------------------------------- registry and threads */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nk_heap *heaps;
static uint64_t next_serial;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int key_ok;

struct tslot {
	uint64_t serial;
	struct heap_thread *ht;
};
/* initial-exec (the fast path reads it on every call): 128 bytes, besides jemalloc's own initial-exec TLS */
static __thread struct tslot tslots[TSLOTS] __attribute__((tls_model("initial-exec")));

static struct nk_heap *heap_by_serial(uint64_t serial)
{
	for (struct nk_heap *h = heaps; h; h = h->next)
		if (h->serial == serial)
			return h;
	return NULL;
}

static void add_to(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static void fold(struct heap_thread *into, struct heap_thread *t)
{
	add_to(&into->allocs, atomic_load_explicit(&t->allocs, memory_order_relaxed));
	add_to(&into->frees, atomic_load_explicit(&t->frees, memory_order_relaxed));
	add_to(&into->usable_in, atomic_load_explicit(&t->usable_in, memory_order_relaxed));
	add_to(&into->requested, atomic_load_explicit(&t->requested, memory_order_relaxed));
}

static void tcache_destroy(unsigned tc)
{
	if (tc != NO_TCACHE)
		(void)mallctl("tcache.destroy", NULL, NULL, &tc, sizeof tc);
}

/* Unlink @p t from @p h's list (reg_lock held). */
static void unlink_thread(struct nk_heap *h, struct heap_thread *t)
{
	for (struct heap_thread **pp = &h->threads; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			return;
		}
}

/* A thread exits: its caches flushed into their heaps, its counters kept by the heaps. */
static void thread_exit(void *v)
{
	(void)v;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < TSLOTS; i++) {
		struct tslot *s = &tslots[i];
		struct nk_heap *h = s->serial ? heap_by_serial(s->serial) : NULL;
		if (h) { /* else the heap is gone, and took the slot's state with it */
			unlink_thread(h, s->ht);
			fold(&h->retired, s->ht);
			tcache_destroy(s->ht->tc);
			free(s->ht);
		}
		s->serial = 0;
		s->ht = NULL;
	}
	pthread_mutex_unlock(&reg_lock);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}
static void fork_release(void)
{
	pthread_mutex_unlock(&reg_lock);
}

static void key_make(void)
{
	key_ok = !pthread_key_create(&thread_key, thread_exit);
	(void)pthread_atfork(fork_prepare, fork_release, fork_release);
}

static void init_shared(struct nk_heap *h, struct heap_thread *t)
{
	t->tc = NO_TCACHE;
	t->aflags = (int)MALLOCX_ARENA(h->arena) | MALLOCX_TCACHE_NONE;
	t->tflags = MALLOCX_TCACHE_NONE;
	t->shared = 1;
}

/* The calling thread's state for @p h, made on its first call (the slot @p s is h's and not yet h's). */
static struct heap_thread *thread_slow(struct nk_heap *h, struct tslot *s)
{
	struct heap_thread *t = &h->shared;

	pthread_once(&key_once, key_make);
	pthread_mutex_lock(&reg_lock);
	if (!key_ok || (s->serial && heap_by_serial(s->serial)))
		goto out; /* the slot belongs to another live heap: no cache for this one on this thread */
	struct heap_thread *n = calloc(1, sizeof *n);
	if (!n)
		goto out;
	unsigned tc = 0;
	size_t sz = sizeof tc;
	if (mallctl("tcache.create", &tc, &sz, NULL, 0))
		tc = NO_TCACHE; /* jemalloc's table of caches is full: through the arena */
	n->tc = tc;
	n->aflags = (int)MALLOCX_ARENA(h->arena) | (tc == NO_TCACHE ? MALLOCX_TCACHE_NONE : (int)MALLOCX_TCACHE(tc));
	n->tflags = tc == NO_TCACHE ? MALLOCX_TCACHE_NONE : (int)MALLOCX_TCACHE(tc);
	if (pthread_setspecific(thread_key, (void *)1)) {
		tcache_destroy(tc);
		free(n);
		goto out;
	}
	n->next = h->threads;
	h->threads = n;
	s->serial = h->serial;
	s->ht = n;
	t = n;
out:
	pthread_mutex_unlock(&reg_lock);
	return t;
}

static inline struct heap_thread *thread_of(struct nk_heap *h)
{
	struct tslot *s = &tslots[h->serial % TSLOTS];
	if (__builtin_expect(s->serial == h->serial, 1))
		return s->ht;
	return thread_slow(h, s);
}

/* Counters: the owner thread's plain updates, or atomic adds on the shared block. */
static inline void bump(const struct heap_thread *t, _Atomic uint64_t *c, uint64_t v)
{
	if (t->shared)
		atomic_fetch_add_explicit(c, v, memory_order_relaxed);
	else
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

/* ---------------------------------------------------------------- placement (inside jemalloc's hooks) */

/*
 * Runs mode: pages [lo, lo + len) of the range were committed; place them by the plan's runs.  No allocation,
 * no lock.  0, or -1 when a strict node is full (the range is dropped again).
 */
static int place(struct nk_heap *h, uintptr_t lo, size_t len)
{
	size_t page = (lo - h->lo) / h->ps, end = page + len / h->ps;

	if (!h->plan)
		return 0; /* kernel mode: the range's policy was set when the heap was made */
	while (page < end) {
		size_t run = 0;
		int e = 0, node = nk__plan_run_at(h->plan, page, &run);
		if (node < 0 || !run) {
			add_to(&h->unplaced, (end - page) * h->ps);
			break;
		}
		if (run > end - page)
			run = end - page;
		void *a = (void *)(h->lo + page * h->ps);
		size_t bytes = run * h->ps;
		if (nk__os_mbind_node(a, bytes, h->run_mode, node, &e)) {
			add_to(&h->unplaced, bytes);
		} else if (!atomic_load_explicit(&h->populate_off, memory_order_relaxed)) {
			int rc = nk__os_populate_write(a, bytes, &e);
			if (!rc || e != EINVAL) /* no node: no allocation */
				(void)nk__os_mbind(a, bytes, NK__MPOL_DEFAULT, NULL, 0, 0, NULL);
			if (rc && e == EINVAL) {
				atomic_store(&h->populate_off, 1); /* before Linux 5.14: the policy stays for the first touch */
			} else if (rc && h->run_mode == NK__MPOL_BIND) {
				(void)nk__os_discard((void *)lo, len, NULL);
				return -1;
			} else if (rc) {
				add_to(&h->unplaced, bytes);
			}
		}
		page += run;
	}
	return 0;
}

static void *hook_alloc(extent_hooks_t *eh, void *new_addr, size_t size, size_t align, bool *zero, bool *commit,
			unsigned arena_ind)
{
	struct nk_heap *h = (struct nk_heap *)(void *)eh;
	uintptr_t cur, a, end;

	if (!size)
		return NULL;
	if (align < h->ps)
		align = h->ps;
	cur = atomic_load(&h->cur);
	do {
		a = new_addr ? (uintptr_t)new_addr : (cur + align - 1) & ~(uintptr_t)(align - 1);
		if (new_addr && a != cur)
			return NULL; /* an address of jemalloc's choosing: only the end of the used part can be given */
		end = a + size;
		if (a < cur || end < a || end > h->lo + h->len)
			return NULL; /* the heap is full: the allocation fails with NK_ENOMEM */
	} while (!atomic_compare_exchange_weak(&h->cur, &cur, end));
	if (!h->rw && nk__os_protect((void *)a, size, NK__PROT_RW, NULL))
		return NULL; /* its address space stays unused */
	if (*commit) {
		if (place(h, a, size))
			return NULL;
		add_to(&h->committed, size);
	}
	*zero = true; /* never touched */
	return (void *)a;
}

static bool hook_dalloc(extent_hooks_t *eh, void *addr, size_t size, bool committed, unsigned arena_ind)
{
	return true; /* opt out: jemalloc retains the extent and reuses it; the range is returned at destroy */
}

static void hook_destroy(extent_hooks_t *eh, void *addr, size_t size, bool committed, unsigned arena_ind)
{
	/* the arena is being destroyed: nk_heap_destroy unmaps the whole range afterwards */
}

static bool hook_commit(extent_hooks_t *eh, void *addr, size_t size, size_t off, size_t len, unsigned arena_ind)
{
	struct nk_heap *h = (struct nk_heap *)(void *)eh;
	if (place(h, (uintptr_t)addr + off, len))
		return true;
	add_to(&h->committed, len);
	return false;
}

static bool hook_decommit(extent_hooks_t *eh, void *addr, size_t size, size_t off, size_t len, unsigned arena_ind)
{
	struct nk_heap *h = (struct nk_heap *)(void *)eh;
	if (nk__os_discard((char *)addr + off, len, NULL))
		return true;
	atomic_fetch_sub_explicit(&h->committed, len, memory_order_relaxed);
	return false;
}

static bool hook_split(extent_hooks_t *eh, void *addr, size_t size, size_t a, size_t b, bool committed,
		       unsigned arena_ind)
{
	return false; /* one range, one mapping: any split is fine */
}

static bool hook_merge(extent_hooks_t *eh, void *a, size_t sa, void *b, size_t sb, bool committed, unsigned arena_ind)
{
	return false;
}

static const extent_hooks_t hooks_template = {
	.alloc = hook_alloc,
	.dalloc = hook_dalloc,
	.destroy = hook_destroy,
	.commit = hook_commit,
	.decommit = hook_decommit,
	.split = hook_split,
	.merge = hook_merge,
};

/*
 * jemalloc's small size classes computed inline (the fast path's allocation counts its usable bytes without
 * a lookup): 8, 16, 32, 48, 64, then four classes per doubling (80, 96, 112, 128, 160 ...), the scheme of
 * jemalloc 5 with 16-byte quanta on 64-bit Linux.  Checked against nallocx when the first heap is made
 * (classes_ok); a build of jemalloc with other classes gets sallocx instead.
 */
#define INLINE_CLASSES_MAX 4096
static int classes_ok; /* written once under reg_lock before the first heap is published */

static inline size_t usable_inline(size_t n)
{
	if (n <= 8)
		return 8;
	if (n <= 64)
		return (n + 15) & ~(size_t)15;
	size_t delta = (size_t)1 << (63 - __builtin_clzl(n - 1) - 2);
	return (n + delta - 1) & ~(delta - 1);
}

static int classes_check(void)
{
	for (size_t n = 1; n <= INLINE_CLASSES_MAX; n++)
		if (usable_inline(n) != nallocx(n, 0))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------- creation */

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* lcm(REGION_ALIGN, lcm(1..N) pages): page 0 is node 0 of the kernel's interleave over any M <= N nodes. */
static size_t region_alignment(int nnodes, size_t ps)
{
	size_t l = REGION_ALIGN / ps ? REGION_ALIGN / ps : 1;
	for (size_t k = 2; k <= (size_t)nnodes; k++) {
		size_t next = l / gcd(l, k) * k;
		if (next * ps > ALIGN_MAX)
			break;
		l = next;
	}
	return l * ps;
}

static int kind_refused(int kind, nk_error *err)
{
	switch (kind) {
	case NK_POLICY_BLOCK:
	case NK_POLICY_BLOCK_EXCLUSIVE:
		return nk__error(err, NK_EINVAL,
				 "heap: policy %s splits a region of known length, and a heap grows: use bind on one node "
				 "(a heap per node), cyclic or cyclic_block",
				 kind == NK_POLICY_BLOCK ? "block" : "block_exclusive");
	case NK_POLICY_NEXT_TOUCH:
		return nk__error(err, NK_EINVAL, "heap: policy next_touch names no node for a page");
	default:
		return 0;
	}
}

/* Reserve the range: the largest size of region_tries the address-space limit and the kernel allow. */
static int reserve(struct nk_heap *h, size_t align, nk_error *err)
{
	uint64_t cap = UINT64_MAX, lim;
	int e = 0;

	if (!nk__os_as_limit(&lim) && lim != UINT64_MAX)
		cap = lim / AS_SHARE;
	for (size_t t = 0; t < sizeof region_tries / sizeof region_tries[0]; t++) {
		uint64_t len = region_tries[t];
		void *a = NULL;
		if (len + align > cap || len > SIZE_MAX - align)
			continue;
		if (!nk__os_reserve((size_t)len, align, h->rw, &a, &e)) {
			h->lo = (uintptr_t)a;
			h->len = (size_t)len;
			return 0;
		}
	}
	return nk__error(err, NK_ENOMEM, "heap: cannot reserve address space (%s)",
			 e ? strerror(e) : "the address-space limit leaves too little");
}

/* Set the policy over the whole range when one call expresses it (kernel mode), else keep the plan (runs mode). */
static int choose_placement(struct nk_heap *h, const nk_policy *p, nk_error *err)
{
	nk_region r = { .addr = (void *)h->lo, .len = h->len };
	const int *nodes = NULL;
	size_t n = 0;
	int rc, mode, e = 0, strict = !!(h->flags & NK_HEAP_STRICT);
	nk_plan *pl = NULL;

	rc = nk_plan_build(h->m, p, &r, &pl, err);
	if (rc)
		return rc;
	if ((rc = nk__plan_node_set(pl, &nodes, &n)))
		goto fail;
	if (n > 1)
		(void)nk__os_no_huge_pages((void *)h->lo, h->len, NULL); /* a huge page would put 512 pages on one node */
	if (nk__heap_test_runs)
		goto runs;
	if (nk_policy_kind(p) == NK_POLICY_BIND && n > 1) {
		/* all pages on the set: the kernel's choice inside it (PREFERRED_MANY falls back outside; Linux >= 5.15) */
		rc = strict ? NK_EINVAL : nk__os_mbind((void *)h->lo, h->len, NK__MPOL_PREFERRED_MANY, nodes, n, 0, &e);
		if (rc)
			rc = nk__os_mbind((void *)h->lo, h->len, NK__MPOL_BIND, nodes, n, 0, &e);
		if (rc)
			goto refused;
		nk_plan_free(pl);
		return 0;
	}
	if (!nk__plan_kernel_hint(pl, &mode, &nodes, &n)) {
		/* one node: PREFERRED lets a fault on a full node fall back (nk_apply's choice); STRICT keeps BIND */
		if (mode == NK__MPOL_BIND && n == 1 && !strict)
			mode = NK__MPOL_PREFERRED;
		rc = nk__os_mbind((void *)h->lo, h->len, mode, nodes, n, 0, &e);
		if (!rc) {
			nk_plan_free(pl);
			return 0;
		}
		if (mode != NK__MPOL_WEIGHTED_INTERLEAVE)
			goto refused;
		/* a kernel without weighted interleave: the runs of the plan instead */
	}
runs:
	h->plan = pl;
	h->run_mode = strict ? NK__MPOL_BIND : NK__MPOL_PREFERRED;
	return 0;
refused:
	rc = nk__error(err, rc, "heap: the kernel refuses the policy's memory policy (mbind: %s)", strerror(e));
fail:
	nk_plan_free(pl);
	return rc;
}

int nk_heap_create(const nk_machine *m, const nk_policy *p, unsigned flags, nk_heap **out, nk_error *err)
{
	struct nk_heap *h = NULL;
	nk_plan *probe = NULL;
	int rc, kind;

	if (!m || !p || !out)
		return nk__error(err, NK_EINVAL, "heap: NULL argument");
	if (flags & ~NK_HEAP_ALLFLAGS)
		return nk__error(err, NK_EINVAL, "heap: unknown flags %#x", flags & ~NK_HEAP_ALLFLAGS);
	kind = nk_policy_kind(p);
	if (kind < 0)
		return nk__error(err, NK_EINVAL, "heap: not a policy");
	if ((rc = kind_refused(kind, err)))
		return rc;
	size_t ps = (size_t)nk__os_page_size();
	if (nk_machine_page_size(m) != ps)
		return nk__error(err, NK_EINVAL, "heap: the machine's page size (%llu) is not this system's (%zu)",
				 (unsigned long long)nk_machine_page_size(m), ps);
	/* the policy's nodes checked before anything is reserved (an address-free plan) */
	nk_region r0 = { .addr = NULL, .len = REGION_ALIGN };
	if ((rc = nk_plan_build(m, p, &r0, &probe, err)))
		return rc;
	nk_plan_free(probe);

	h = calloc(1, sizeof *h);
	if (!h)
		return nk__error(err, NK_ENOMEM, "heap: out of memory");
	h->hooks = hooks_template;
	h->m = m;
	h->flags = flags;
	h->ps = ps;
	h->rw = !nk__os_overcommit_strict();
	if ((rc = reserve(h, region_alignment(nk_machine_num_nodes(m), ps), err)))
		goto fail_free;
	atomic_store(&h->cur, h->lo);
	if ((rc = choose_placement(h, p, err)))
		goto fail_release;

	unsigned idx = 0;
	extent_hooks_t *hp = &h->hooks;
	size_t sz = sizeof idx;
	int jrc = mallctl("arenas.create", &idx, &sz, &hp, sizeof hp);
	if (jrc) {
		rc = nk__error(err, NK_ENOMEM, "heap: jemalloc cannot create an arena (arenas.create: %s)", strerror(jrc));
		goto fail_release;
	}
	h->arena = idx;
	init_shared(h, &h->shared);
	init_shared(h, &h->retired);
	pthread_mutex_lock(&reg_lock);
	if (!next_serial)
		classes_ok = classes_check();
	h->serial = ++next_serial;
	h->next = heaps;
	heaps = h;
	pthread_mutex_unlock(&reg_lock);
	*out = h;
	return 0;

fail_release:
	nk_plan_free(h->plan);
	(void)nk__os_release((void *)h->lo, h->len, NULL);
fail_free:
	free(h);
	return rc;
}

void nk_heap_destroy(nk_heap *h)
{
	char name[64];

	if (!h)
		return;
	pthread_mutex_lock(&reg_lock);
	for (struct nk_heap **pp = &heaps; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	while (h->threads) {
		struct heap_thread *t = h->threads;
		h->threads = t->next;
		tcache_destroy(t->tc); /* flushed into the arena, destroyed next */
		free(t);
	}
	pthread_mutex_unlock(&reg_lock);
	snprintf(name, sizeof name, "arena.%u.destroy", h->arena);
	/* The arena's metadata lives in the range: unmapped only once jemalloc has let go of the arena (a
	 * refusal, which its contract leaves no reason for, leaks the range rather than crash a later call). */
	if (!mallctl(name, NULL, NULL, NULL, 0))
		(void)nk__os_release((void *)h->lo, h->len, NULL);
	nk_plan_free(h->plan);
	free(h);
}

/* ---------------------------------------------------------------- objects */


static inline int owned(const struct nk_heap *h, const void *p)
{
	return (uintptr_t)p - h->lo < h->len;
}

static inline int alloc_flags(struct nk_heap *h, size_t size, int extra, void **out)
{
	struct heap_thread *t = thread_of(h);
	void *p = mallocx(size, t->aflags | extra);
	if (__builtin_expect(!p, 0))
		return NK_ENOMEM;
	bump(t, &t->allocs, 1);
	bump(t, &t->requested, size);
	bump(t, &t->usable_in, !extra && size <= INLINE_CLASSES_MAX && classes_ok ? usable_inline(size) : sallocx(p, 0));
	*out = p;
	return 0;
}

int nk_heap_alloc(nk_heap *h, size_t size, void **out)
{
	if (!h || !out || !size)
		return NK_EINVAL;
	if (size > h->len)
		return NK_ENOMEM;
	return alloc_flags(h, size, 0, out);
}

int nk_heap_calloc(nk_heap *h, size_t n, size_t size, void **out)
{
	if (!h || !out || !n || !size)
		return NK_EINVAL;
	if (size > SIZE_MAX / n || n * size > h->len)
		return NK_ENOMEM;
	return alloc_flags(h, n * size, MALLOCX_ZERO, out);
}

int nk_heap_aligned_alloc(nk_heap *h, size_t align, size_t size, void **out)
{
	if (!h || !out || !size || !align || (align & (align - 1)))
		return NK_EINVAL;
	if (size > h->len || align > h->len / 2)
		return NK_ENOMEM;
	return alloc_flags(h, size, MALLOCX_ALIGN(align), out);
}

int nk_heap_free(nk_heap *h, void *p)
{
	if (!h)
		return NK_EINVAL;
	if (!p)
		return 0;
	if (!owned(h, p))
		return NK_EINVAL;
	struct heap_thread *t = thread_of(h);
	dallocx(p, t->tflags);
	bump(t, &t->frees, 1);
	return 0;
}

int nk_heap_realloc(nk_heap *h, void *p, size_t size, void **out)
{
	if (!p)
		return nk_heap_alloc(h, size, out);
	if (!h || !out || !size || !owned(h, p))
		return NK_EINVAL;
	if (size > h->len)
		return NK_ENOMEM;
	struct heap_thread *t = thread_of(h);
	void *q = rallocx(p, size, t->aflags);
	if (!q)
		return NK_ENOMEM; /* p is left as it was */
	bump(t, &t->allocs, 1);
	bump(t, &t->frees, 1);
	bump(t, &t->requested, size);
	bump(t, &t->usable_in, sallocx(q, 0));
	*out = q;
	return 0;
}

int nk_heap_usable_size(const nk_heap *h, const void *p, size_t *out)
{
	if (!h || !p || !out || !owned(h, p))
		return NK_EINVAL;
	*out = sallocx(p, 0);
	return 0;
}

int nk_heap_owns(const nk_heap *h, const void *p)
{
	if (!h)
		return NK_EINVAL;
	return owned(h, p);
}

nk_heap *nk_heap_from(const void *p)
{
	struct nk_heap *found = NULL;

	if (!p)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (struct nk_heap *h = heaps; h && !found; h = h->next)
		if (owned(h, p))
			found = h;
	pthread_mutex_unlock(&reg_lock);
	return found;
}

int nk_heap_region(const nk_heap *h, void **addr, size_t *len)
{
	if (!h)
		return NK_EINVAL;
	if (addr)
		*addr = (void *)h->lo;
	if (len)
		*len = h->len;
	return 0;
}

/*
 * Bytes of size classes the arena has handed out: live objects, and the free ones waiting in thread
 * caches (jemalloc's stats.arenas.<i>.{small,large}.allocated, refreshed by an epoch).  Counting it per
 * object would cost a lookup at every free (sallocx): 2 ns of the 25 of a small allocation+free.
 */
static uint64_t arena_allocated(const struct nk_heap *h)
{
	uint64_t epoch = 1;
	size_t small = 0, large = 0, sz = sizeof epoch;
	char name[64];

	(void)mallctl("epoch", &epoch, &sz, &epoch, sz);
	sz = sizeof small;
	snprintf(name, sizeof name, "stats.arenas.%u.small.allocated", h->arena);
	if (mallctl(name, &small, &sz, NULL, 0))
		small = 0;
	snprintf(name, sizeof name, "stats.arenas.%u.large.allocated", h->arena);
	if (mallctl(name, &large, &sz, NULL, 0))
		large = 0;
	return (uint64_t)small + large;
}

static void sum(struct heap_thread *acc, struct heap_thread *t)
{
	acc->allocs += atomic_load_explicit(&t->allocs, memory_order_relaxed);
	acc->frees += atomic_load_explicit(&t->frees, memory_order_relaxed);
	acc->usable_in += atomic_load_explicit(&t->usable_in, memory_order_relaxed);
	acc->requested += atomic_load_explicit(&t->requested, memory_order_relaxed);
}

int nk_heap_stats_get(const nk_heap *hc, nk_heap_stats *out)
{
	struct nk_heap *h = (struct nk_heap *)hc;
	struct heap_thread acc = { 0 };
	nk_heap_stats st = { 0 };
	int nn, rc;

	if (!h || !out)
		return NK_EINVAL;
	pthread_mutex_lock(&reg_lock);
	sum(&acc, &h->shared);
	sum(&acc, &h->retired);
	for (struct heap_thread *t = h->threads; t; t = t->next)
		sum(&acc, t);
	pthread_mutex_unlock(&reg_lock);

	st.reserved = h->len;
	st.mapped = atomic_load(&h->cur) - h->lo;
	st.committed = atomic_load(&h->committed);
	st.allocs = acc.allocs;
	st.frees = acc.frees;
	st.objects = acc.allocs - acc.frees;
	st.usable = arena_allocated(h);
	st.requested_total = acc.requested;
	st.usable_total = acc.usable_in;
	st.unplaced = atomic_load(&h->unplaced);

	nn = nk_machine_num_nodes(h->m);
	if (nn <= 0)
		return NK_EINVAL;
	size_t *counts = calloc((size_t)nn + 1, sizeof *counts);
	if (!counts)
		return NK_ENOMEM;
	if (st.mapped && (rc = nk_where(h->m, (void *)h->lo, (size_t)st.mapped, NULL, counts))) {
		free(counts);
		return rc;
	}
	for (int k = 0; k < nn && st.nnodes < NK_HEAP_STATS_NODES; k++) {
		st.node[st.nnodes] = nk_machine_node_id(h->m, k);
		st.node_bytes[st.nnodes] = (uint64_t)counts[k] * h->ps;
		st.resident += st.node_bytes[st.nnodes];
		st.nnodes++;
	}
	free(counts);
	st.fragmentation = st.resident > st.usable ? 1.0 - (double)st.usable / (double)st.resident : 0.0;
	*out = st;
	return 0;
}
