/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so allocation interposers (advice_rt.h).
 *
 * An allocation of at least one page whose call stack has a key in the plan
 * is served from a fresh page-aligned anonymous mapping: the policy can then
 * be given to its pages before the program touches any (a serial
 * initialisation follows the plan), and page i of the block is page i of the
 * variable as the plan counts it.  The mapping is recorded in a hash table
 * (address -> length, key group) so that free, realloc, reallocarray and
 * malloc_usable_size recognise it; everything else goes to the next
 * allocator (libc's, or the profiler runtime's chain when both are loaded).
 * Runtime-internal allocations (nkpl_busy) are never served or looked up.
 *
 * A site of small blocks (layout blocks, arena.c) is served whole, any size,
 * from its arena.  An allocation under a page is looked at only when its
 * caller's return address starts such a site's key (nkpl_small_candidate:
 * a few compares, no lock), so the program's other small allocations cost
 * what they did.  Blocks of the arenas' region go back to jemalloc in free,
 * realloc and malloc_usable_size before anything else (one range check).
 *
 * Anonymous private read-write mappings the program makes itself with mmap
 * at a planned site are recorded too (kind NKPL_MMAP): their policy is
 * applied right after the mmap, before the program touches them, and munmap
 * or mremap forgets them.  free & co never take them for theirs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "advice_rt.h"

#define NKPL_EXPORT __attribute__((visibility("default")))

#include "../common/interpose.h"

void nkpl_alloc_resolve(void)
{
	interpose_resolve();
}

#define RESOLVE()                                                                                                   \
	do {                                                                                                        \
		if (atomic_load_explicit(&resolved, memory_order_acquire) != 2)                                     \
			nkpl_alloc_resolve();                                                                       \
	} while (0)

void *nkpl_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	RESOLVE();
	return real_mmap(addr, len, prot, flags, fd, off);
}

int nkpl_real_munmap(void *addr, size_t len)
{
	RESOLVE();
	return real_munmap(addr, len);
}

/* ---------------------------------------------------------------- tracked blocks */

struct blk {
	uintptr_t addr; /* 0: empty slot */
	size_t len;     /* mapping length (whole pages) */
	int group;
	int kind;       /* NKPL_HEAP: ours (served to malloc & co); NKPL_MMAP: the program's own mapping */
};
#define BLK_CAP (1u << 16)
static struct blk *blks; /* mapped on first use: BLK_CAP slots */
static size_t n_blks;
static atomic_size_t n_live;
static pthread_mutex_t blk_lock = PTHREAD_MUTEX_INITIALIZER;

/* Addresses of the live NKPL_MMAP blocks, so that munmap looks at them and not the whole table. */
#define MMAP_CAP 1024
static uintptr_t mmap_addrs[MMAP_CAP];
static atomic_size_t n_mmap;

static size_t blk_hash(uintptr_t a)
{
	return (size_t)((a >> 12) * 0x9e3779b97f4a7c15ull >> 48) & (BLK_CAP - 1);
}

static struct blk *blk_find(uintptr_t a)
{
	if (!blks)
		return NULL;
	for (size_t i = blk_hash(a), k = 0; k < BLK_CAP; k++, i = (i + 1) & (BLK_CAP - 1)) {
		if (!blks[i].addr)
			return NULL;
		if (blks[i].addr == a)
			return &blks[i];
	}
	return NULL;
}

static int blk_insert(uintptr_t a, size_t len, int group, int kind)
{
	if (!blks) {
		void *m = real_mmap(NULL, BLK_CAP * sizeof(struct blk), PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		blks = m;
	}
	if (n_blks >= BLK_CAP / 2 || (kind == NKPL_MMAP && n_mmap >= MMAP_CAP))
		return -1;
	if (kind == NKPL_MMAP)
		mmap_addrs[atomic_fetch_add(&n_mmap, 1)] = a;
	for (size_t i = blk_hash(a);; i = (i + 1) & (BLK_CAP - 1))
		if (!blks[i].addr) {
			blks[i] = (struct blk){ a, len, group, kind };
			n_blks++;
			atomic_fetch_add(&n_live, 1);
			return 0;
		}
}

/* Backward-shift deletion (linear probing, no tombstones). */
static void blk_delete(struct blk *b)
{
	size_t i = (size_t)(b - blks);
	if (b->kind == NKPL_MMAP)
		for (size_t k = 0; k < n_mmap; k++)
			if (mmap_addrs[k] == b->addr) {
				mmap_addrs[k] = mmap_addrs[n_mmap - 1];
				atomic_fetch_sub(&n_mmap, 1);
				break;
			}
	blks[i].addr = 0;
	n_blks--;
	atomic_fetch_sub(&n_live, 1);
	for (size_t j = (i + 1) & (BLK_CAP - 1); blks[j].addr; j = (j + 1) & (BLK_CAP - 1)) {
		size_t h = blk_hash(blks[j].addr);
		int between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
		if (!between) {
			blks[i] = blks[j];
			blks[j].addr = 0;
			i = j;
		}
	}
}

void nkpl_alloc_each(int group, void (*fn)(void *addr, size_t len, void *arg), void *arg)
{
	pthread_mutex_lock(&blk_lock);
	for (size_t i = 0; blks && i < BLK_CAP; i++)
		if (blks[i].addr && blks[i].group == group)
			fn((void *)blks[i].addr, blks[i].len, arg);
	pthread_mutex_unlock(&blk_lock);
}

/* Length of tracked block @p p (0: not ours).  Cheap when nothing is tracked or @p p is not page-aligned. */
static size_t tracked_len(const void *p, int *group)
{
	uintptr_t a = (uintptr_t)p;
	size_t len = 0;
	if (!p || !atomic_load_explicit(&n_live, memory_order_relaxed) || !nkpl_page_size ||
	    (a & (nkpl_page_size - 1)) || nkpl_busy())
		return 0;
	pthread_mutex_lock(&blk_lock);
	struct blk *b = blk_find(a);
	if (b && b->kind == NKPL_HEAP) {
		len = b->len;
		if (group)
			*group = b->group;
	}
	pthread_mutex_unlock(&blk_lock);
	return len;
}

/* Stop tracking and unmap block @p p; 1 when it was ours. */
static int release(void *p)
{
	uintptr_t a = (uintptr_t)p;
	size_t len = 0;
	int group = -1;
	if (!tracked_len(p, NULL))
		return 0;
	pthread_mutex_lock(&blk_lock);
	struct blk *b = blk_find(a);
	if (b && b->kind == NKPL_HEAP) {
		len = b->len;
		group = b->group;
		blk_delete(b);
	}
	pthread_mutex_unlock(&blk_lock);
	if (!len)
		return 0;
	nkpl_enter();
	nkpl_block_dies(group, p, len, NKPL_HEAP);
	nkpl_leave();
	real_munmap(p, len);
	return 1;
}

/*
 * A block for @p n bytes (aligned to @p align, a power of two or 0; zeroed when @p zero) when the call stack's site
 * is in the plan, else NULL (the caller forwards): from the site's arena for a site of small blocks, else a
 * mapping of its own when @p n is at least a page.
 */
static void *serve(size_t n, size_t align, int zero, int *group_out, uintptr_t ra, uintptr_t cfa)
{
	uint64_t ps = nkpl_page_size;
	void *p = NULL;
	if (!ps || ((n < ps || align > ps) && !nkpl_small_candidate(ra)) || !nkpl_heap_active() || nkpl_busy())
		return NULL;
	nkpl_enter();
	int g = nkpl_site_group(ra, cfa);
	if (nkpl_group_blocks(g)) {
		p = nkpl_arena_alloc(g, n, align, zero);
		goto out;
	}
	if (g < 0 || n < ps || align > ps)
		goto out;
	size_t len = (n + ps - 1) & ~(size_t)(ps - 1);
	if (len < n)
		goto out;
	p = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		nkpl_log("error: group %d: cannot map %zu bytes (%s): left to the allocator", g, len, strerror(errno));
		p = NULL;
		goto out;
	}
	pthread_mutex_lock(&blk_lock);
	int rc = blk_insert((uintptr_t)p, len, g, NKPL_HEAP);
	pthread_mutex_unlock(&blk_lock);
	if (rc) {
		nkpl_log("error: too many tracked blocks: an allocation of %zu bytes left to the allocator", n);
		real_munmap(p, len);
		p = NULL;
		goto out;
	}
	nkpl_block_born(g, p, len, NKPL_HEAP);
	if (group_out)
		*group_out = g;
out:
	nkpl_leave();
	return p;
}

/* ---------------------------------------------------------------- malloc family */

/* @p ra, @p cfa: the return address and CFA of the interposer the program called (serve's filter and memo). */
static void *do_malloc(size_t n, uintptr_t ra, uintptr_t cfa)
{
	if (atomic_load_explicit(&resolved, memory_order_acquire) != 2) {
		if (atomic_load(&resolved) == 1)
			return boot_alloc(n);
		nkpl_alloc_resolve();
	}
	void *p = serve(n, 0, 0, NULL, ra, cfa);
	return p ? p : real_malloc(n);
}

NKPL_EXPORT void *malloc(size_t n)
{
	return do_malloc(n, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

NKPL_EXPORT void *calloc(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (atomic_load_explicit(&resolved, memory_order_acquire) != 2) {
		if (atomic_load(&resolved) == 1)
			return boot_alloc(n);
		nkpl_alloc_resolve();
	}
	/* a fresh mapping is zero; an arena block is asked for zeroed */
	void *p = serve(n, 0, 1, NULL, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
	return p ? p : real_calloc(a, b);
}

NKPL_EXPORT void free(void *p)
{
	if (!p || is_boot(p))
		return;
	if (nkpl_in_region(p)) {
		nkpl_arena_free(p);
		return;
	}
	RESOLVE();
	if (release(p))
		return;
	real_free(p);
}

NKPL_EXPORT size_t malloc_usable_size(void *p)
{
	RESOLVE();
	if (!p)
		return 0;
	if (is_boot(p))
		return *(size_t *)((char *)p - 16);
	if (nkpl_in_region(p))
		return nkpl_arena_usable(p);
	size_t len = tracked_len(p, NULL);
	return len ? len : real_usable(p);
}

static void *do_realloc(void *old, size_t n, uintptr_t ra, uintptr_t cfa)
{
	if (atomic_load_explicit(&resolved, memory_order_acquire) != 2) {
		if (atomic_load(&resolved) == 1) {
			void *p = boot_alloc(n);
			if (p && old) {
				size_t had = *(size_t *)((char *)old - 16);
				memcpy(p, old, had < n ? had : n);
			}
			return p;
		}
		nkpl_alloc_resolve();
	}
	if (old && is_boot(old)) {
		size_t had = *(size_t *)((char *)old - 16);
		void *p = do_malloc(n, ra, cfa);
		if (p)
			memcpy(p, old, had < n ? had : n);
		return p;
	}
	if (!old)
		return do_malloc(n, ra, cfa);
	if (nkpl_in_region(old))
		return nkpl_arena_realloc(old, n);
	int group = -1;
	size_t had = tracked_len(old, &group);
	if (had) {
		if (!n) {
			release(old);
			return NULL;
		}
		if (n <= had)
			return old; /* the mapping holds it: keeps its placement */
		/* Grow: a new mapping of the same group (its policy applied before the copy touches it). */
		size_t len = (n + nkpl_page_size - 1) & ~(size_t)(nkpl_page_size - 1);
		void *p = len < n ? MAP_FAILED
				  : real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			errno = ENOMEM;
			return NULL;
		}
		pthread_mutex_lock(&blk_lock);
		int rc = blk_insert((uintptr_t)p, len, group, NKPL_HEAP);
		pthread_mutex_unlock(&blk_lock);
		if (rc) {
			real_munmap(p, len);
			/* untracked now: an ordinary block */
			p = real_malloc(n);
			if (!p)
				return NULL;
		} else {
			nkpl_enter();
			nkpl_block_born(group, p, len, NKPL_REALLOC);
			nkpl_leave();
		}
		memcpy(p, old, had);
		release(old);
		return p;
	}
	/* An ordinary block: a realloc site of the plan moves it into a tracked mapping or its arena. */
	if (n && nkpl_heap_active() && !nkpl_busy()) {
		void *p = serve(n, 0, 0, NULL, ra, cfa);
		if (p) {
			size_t u = real_usable(old);
			memcpy(p, old, u < n ? u : n);
			real_free(old);
			return p;
		}
	}
	return real_realloc(old, n);
}

NKPL_EXPORT void *realloc(void *old, size_t n)
{
	return do_realloc(old, n, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

NKPL_EXPORT void *reallocarray(void *old, size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	/* libc's reallocarray calls its own realloc, which knows nothing of our blocks */
	return do_realloc(old, n, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

NKPL_EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
	RESOLVE();
	if (al && !(al & (al - 1)) && al % sizeof(void *) == 0) {
		void *p = serve(n, al, 0, NULL, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
		if (p) {
			*out = p;
			return 0;
		}
	}
	return real_posix_memalign(out, al, n);
}

/* An alignment that is not a power of two is rounded up to one, as glibc's memalign does. */
static size_t pow2_align(size_t al)
{
	size_t p = 1;
	while (p < al && p <= SIZE_MAX / 2)
		p <<= 1;
	return p < al ? 0 : p;
}

#define ALIGNED(name, args, call, al, size)                                                                         \
	NKPL_EXPORT void *name args                                                                                 \
	{                                                                                                           \
		RESOLVE();                                                                                          \
		size_t al_ = pow2_align(al), n_ = (size);                                                           \
		uintptr_t ra_ = (uintptr_t)__builtin_return_address(0), cfa_ = (uintptr_t)__builtin_dwarf_cfa();   \
		void *p = !al_ || n_ == SIZE_MAX ? NULL : serve(n_, al_, 0, NULL, ra_, cfa_);                       \
		return p ? p : call;                                                                                \
	}

ALIGNED(aligned_alloc, (size_t al, size_t n), real_aligned_alloc(al, n), al, n)
ALIGNED(memalign, (size_t al, size_t n), real_memalign(al, n), al, n)
ALIGNED(valloc, (size_t n), real_valloc(n), (size_t)nkpl_page_size, n)
/* pvalloc: whole pages (its size rounded up, as glibc's) */
ALIGNED(pvalloc, (size_t n), real_pvalloc(n), (size_t)nkpl_page_size,
	nkpl_page_size && n <= SIZE_MAX - nkpl_page_size ? (n + nkpl_page_size - 1) & ~(size_t)(nkpl_page_size - 1)
							 : SIZE_MAX)

/* ---------------------------------------------------------------- mmap family */

/* Forget the NKPL_MMAP blocks overlapping [a, a + len) (a partial unmap forgets the whole block). */
static void forget_mappings(uintptr_t a, size_t len)
{
	if (!atomic_load_explicit(&n_mmap, memory_order_relaxed) || nkpl_busy())
		return;
	nkpl_enter();
	for (;;) {
		uintptr_t addr = 0;
		size_t blen = 0;
		int group = -1;
		pthread_mutex_lock(&blk_lock);
		for (size_t k = 0; k < n_mmap; k++) {
			struct blk *b = blk_find(mmap_addrs[k]);
			if (b && b->addr < a + len && a < b->addr + b->len) {
				addr = b->addr;
				blen = b->len;
				group = b->group;
				blk_delete(b);
				break;
			}
		}
		pthread_mutex_unlock(&blk_lock);
		if (!addr)
			break;
		nkpl_block_dies(group, (void *)addr, blen, NKPL_MMAP); /* still mapped: the residency is readable */
	}
	nkpl_leave();
}

NKPL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	RESOLVE();
	if (flags & MAP_FIXED)
		forget_mappings((uintptr_t)addr, len);
	void *p = real_mmap(addr, len, prot, flags, fd, off);
	uint64_t ps = nkpl_page_size;
	if (p == MAP_FAILED || !ps || len < ps || !(flags & MAP_ANONYMOUS) || !(flags & MAP_PRIVATE) ||
	    prot != (PROT_READ | PROT_WRITE) || !nkpl_heap_active() || nkpl_busy())
		return p;
	nkpl_enter();
	/*
	 * Called from a runtime: the profiler's own bookkeeping (its range registry grows while it
	 * records a planned block, and its stack would carry the program's key) or its forwarding of
	 * the program's mmap, which cannot be told apart here: not matched.  Under the profiler,
	 * mmap sites are left alone.
	 */
	int g = nkpl_in_runtime(ra) ? -1 : nkpl_site_group(ra, (uintptr_t)__builtin_dwarf_cfa());
	if (g >= 0 && !nkpl_group_blocks(g)) { /* a site of small blocks is its arena: its own mappings are left alone */
		size_t whole = (len + ps - 1) & ~(size_t)(ps - 1);
		pthread_mutex_lock(&blk_lock);
		int rc = blk_insert((uintptr_t)p, whole, g, NKPL_MMAP);
		pthread_mutex_unlock(&blk_lock);
		if (rc)
			nkpl_log("error: too many tracked mappings: a mapping of %zu bytes left as it is", len);
		else
			nkpl_block_born(g, p, whole, NKPL_MMAP);
	}
	nkpl_leave();
	return p;
}

NKPL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

NKPL_EXPORT int munmap(void *addr, size_t len)
{
	RESOLVE();
	forget_mappings((uintptr_t)addr, len);
	return real_munmap(addr, len);
}

NKPL_EXPORT void *mremap(void *old, size_t olen, size_t nlen, int flags, ...)
{
	void *fixed = NULL;
	RESOLVE();
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		fixed = va_arg(ap, void *);
		va_end(ap);
	}
	/* A moved or resized mapping is the program's business again (its pages keep their policy). */
	forget_mappings((uintptr_t)old, olen ? olen : 1);
	return (flags & MREMAP_FIXED) ? real_mremap(old, olen, nlen, flags, fixed) : real_mremap(old, olen, nlen, flags);
}

/* ---------------------------------------------------------------- fork */

void nkpl_alloc_fork_prepare(void)
{
	pthread_mutex_lock(&blk_lock);
}

void nkpl_alloc_fork_parent(void)
{
	pthread_mutex_unlock(&blk_lock);
}

void nkpl_alloc_fork_child(void)
{
	pthread_mutex_init(&blk_lock, NULL);
}
