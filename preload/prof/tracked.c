/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so's tracked-range registry (split from alloc.c, issue 15): the sorted set of tracked
 * ranges the samplers draw pages from, copy-on-write (writers under nkp_blk_lock publish a new array with one
 * atomic store; readers, signal handlers included, announce themselves in `readers` and never block; an old
 * array is unmapped once no reader is inside).  It must not allocate from the heap, lock, or include
 * ../common/interpose.h: its arrays come from nkp_real_mmap/nkp_real_munmap (alloc.c).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#include "alloc_impl.h"
#include "prof.h"

struct rng {
	uintptr_t blo, bhi; /* the block (byte range); blocks do not overlap, sorted by blo */
	uintptr_t lo, hi;   /* its page-aligned interior, lo == hi when empty */
	uint64_t cum;       /* interior pages of r[0..i] */
	int heap;           /* pages holding small blocks (blo == lo, bhi == hi), not one block */
};
struct rset {
	size_t n, cap, bytes;
	struct rng r[];
};
static struct rset *_Atomic cur_set;
static _Atomic uint64_t generation;
static atomic_int readers;
#define MAX_RETIRED 64
static struct rset *retired[MAX_RETIRED];
static size_t n_retired;

/* Arrays no reader can see any more, kept for reuse (a tracked malloc/free pair would otherwise cost two
 * mmap/munmap pairs).  nkp_blk_lock held. */
#define POOL_MAX 4
static struct rset *pool[POOL_MAX];
static size_t n_pool;

static struct rset *rset_new(size_t cap)
{
	for (size_t i = 0; i < n_pool; i++)
		if (pool[i]->cap >= cap) {
			struct rset *s = pool[i];
			pool[i] = pool[--n_pool];
			s->n = 0;
			return s;
		}
	size_t bytes = sizeof(struct rset) + cap * sizeof(struct rng);
	bytes = (bytes + 4095) & ~(size_t)4095;
	struct rset *s = nkp_real_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	s->n = 0;
	s->cap = (bytes - sizeof(struct rset)) / sizeof(struct rng);
	s->bytes = bytes;
	return s;
}

/* Publish @p s (nkp_blk_lock held); unmap what no reader can still see. */
static void rset_publish(struct rset *s)
{
	uint64_t c = 0;
	for (size_t i = 0; i < s->n; i++) {
		c += (s->r[i].hi - s->r[i].lo) / (uintptr_t)nkp.page_size;
		s->r[i].cum = c;
	}
	struct rset *old = atomic_exchange(&cur_set, s);
	atomic_fetch_add(&generation, 1);
	if (old && n_retired < MAX_RETIRED)
		retired[n_retired++] = old;
	else if (old)
		(void)0; /* leaked rather than freed under a reader */
	if (atomic_load(&readers) == 0) {
		for (size_t i = 0; i < n_retired; i++) {
			if (n_pool < POOL_MAX) {
				pool[n_pool++] = retired[i];
				continue;
			}
			/* the smallest of pool + this one goes */
			size_t k = 0;
			for (size_t j = 1; j < n_pool; j++)
				if (pool[j]->cap < pool[k]->cap)
					k = j;
			struct rset *out = retired[i];
			if (pool[k]->cap < out->cap) {
				out = pool[k];
				pool[k] = retired[i];
			}
			nkp_real_munmap(out, out->bytes);
		}
		n_retired = 0;
	}
}

int nkp_range_add(uintptr_t blo, uintptr_t bhi, uintptr_t lo, uintptr_t hi)
{
	struct rset *o = atomic_load(&cur_set);
	size_t n = o ? o->n : 0;
	struct rset *s = rset_new(n + 1 > 64 ? (n + 1) * 5 / 4 : 64);
	if (!s)
		return -1;
	size_t i = 0, j = 0;
	while (i < n && o->r[i].blo < blo)
		s->r[j++] = o->r[i++];
	s->r[j++] = (struct rng){ blo, bhi, lo, hi, 0, 0 };
	while (i < n)
		s->r[j++] = o->r[i++];
	s->n = j;
	rset_publish(s);
	return 0;
}

void nkp_range_remove(uintptr_t blo, uintptr_t bhi)
{
	struct rset *o = atomic_load(&cur_set);
	if (!o)
		return;
	struct rset *s = rset_new(o->n ? o->n : 1);
	if (!s)
		return;
	size_t j = 0, found = 0;
	for (size_t i = 0; i < o->n; i++) {
		if (!found && o->r[i].blo == blo && o->r[i].bhi == bhi) {
			found = 1;
			continue;
		}
		s->r[j++] = o->r[i];
	}
	s->n = j;
	rset_publish(s);
}

/* Index of the first range whose block begins after @p addr. */
static size_t upper(const struct rset *s, uintptr_t addr)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (s->r[m].blo <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* 1 when [lo, hi) overlaps a range of the current set.  nkp_blk_lock held. */
int nkp_range_overlaps(uintptr_t lo, uintptr_t hi)
{
	struct rset *o = atomic_load(&cur_set);
	if (!o || !o->n)
		return 0;
	size_t a = upper(o, lo);
	return (a > 0 && o->r[a - 1].bhi > lo) || (a < o->n && o->r[a].blo < hi);
}

/* Heap pages holding small blocks are sampled as ranges of whole pages (flag heap), merged with a heap range
 * this close: the gap between two small blocks' pages is heap memory, and fewer ranges make each copy of
 * the set cheaper (sequential allocations then grow one range). */
#define HEAP_MERGE_GAP (64u * 1024u)
/* The program break when the runtime started: what lies below (the loader's, libc's and the runtime's own
 * allocations of start-up, the cpu table the fault handler reads among them) is never sampled as heap pages:
 * a fault handler that faults on its own data kills the program. */
uintptr_t nkp_heap_floor;

/*
 * Make the pages [lo, hi) (page-aligned, those of a small block) part of the tracked set, unless they are
 * already (by a heap range or a large block or static segment: those keep their ranges, the pages around
 * them are clipped).  The newly tracked pages, if any, are [*nlo, *nhi) (a merge may fill a gap too).
 * Returns 1 when pages were added.  nkp_blk_lock held.
 */
int nkp_heap_cover(uintptr_t lo, uintptr_t hi, uintptr_t *nlo, uintptr_t *nhi)
{
	uintptr_t ps = (uintptr_t)nkp.page_size;
	struct rset *o = atomic_load(&cur_set);
	size_t n = o ? o->n : 0;
	size_t a = n ? upper(o, lo) : 0;
	const struct rng *pred = a > 0 ? &o->r[a - 1] : NULL, *succ = a < n ? &o->r[a] : NULL;

	if (lo < nkp_heap_floor)
		lo = nkp_heap_floor;
	if (pred && pred->bhi >= hi)
		return 0;
	if (pred && pred->bhi > lo) {
		if (!pred->heap)
			lo = (pred->bhi + ps - 1) & ~(ps - 1);
	}
	if (succ && succ->blo < hi)
		hi = succ->blo & ~(ps - 1);
	if (lo >= hi)
		return 0;
	int mp = pred && pred->heap && pred->bhi + HEAP_MERGE_GAP >= lo;
	int ms = succ && succ->heap && hi + HEAP_MERGE_GAP >= succ->blo;
	struct rset *s = rset_new(n + 1 > 64 ? (n + 1) * 5 / 4 : 64);
	if (!s)
		return 0;
	size_t j = 0;
	for (size_t i = 0; i + (mp ? 1 : 0) < a; i++)
		s->r[j++] = o->r[i];
	uintptr_t elo = mp ? pred->blo : lo, ehi = ms ? succ->bhi : hi;
	s->r[j++] = (struct rng){ elo, ehi, elo, ehi, 0, 1 };
	for (size_t i = a + (ms ? 1 : 0); i < n; i++)
		s->r[j++] = o->r[i];
	s->n = j;
	/* read from the old set before publishing the new one: publishing retires the old set, and pred and
	 * succ point into it (a use after unmap killed prof_vecvec under the plan runtime, whose arena blocks
	 * made many heap ranges) */
	*nlo = mp ? pred->bhi : lo;
	*nhi = ms ? succ->blo : hi;
	rset_publish(s);
	return 1;
}

int nkp_tracked_contains(uintptr_t page)
{
	atomic_fetch_add(&readers, 1);
	struct rset *s = atomic_load(&cur_set);
	int hit = 0;
	if (s && s->n) {
		size_t a = upper(s, page);
		hit = a > 0 && page >= s->r[a - 1].lo && page + (uintptr_t)nkp.page_size <= s->r[a - 1].hi;
	}
	atomic_fetch_sub(&readers, 1);
	return hit;
}

uint64_t nkp_tracked_generation(void)
{
	return atomic_load_explicit(&generation, memory_order_acquire);
}

int nkp_tracked_span(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	atomic_fetch_add(&readers, 1);
	struct rset *s = atomic_load(&cur_set);
	int hit = 0;
	uintptr_t l = 0, h = UINTPTR_MAX;
	if (s && s->n) {
		size_t a = upper(s, addr);
		if (a > 0 && addr < s->r[a - 1].bhi) {
			hit = 1;
			l = s->r[a - 1].blo;
			h = s->r[a - 1].bhi;
		} else {
			l = a > 0 ? s->r[a - 1].bhi : 0;
			h = a < s->n ? s->r[a].blo : UINTPTR_MAX;
		}
	}
	atomic_fetch_sub(&readers, 1);
	if (lo)
		*lo = l;
	if (hi)
		*hi = h;
	return hit;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Shell sort: qsort may call malloc (glibc does for more than 1 KiB), which the sampler thread must not. */
static void sort_u(uintptr_t *v, size_t n)
{
	static const size_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
	for (size_t g = 0; g < sizeof gaps / sizeof *gaps; g++)
		for (size_t i = gaps[g]; i < n; i++) {
			uintptr_t x = v[i];
			size_t j = i;
			for (; j >= gaps[g] && v[j - gaps[g]] > x; j -= gaps[g])
				v[j] = v[j - gaps[g]];
			v[j] = x;
		}
}

size_t nkp_tracked_random_groups(uint64_t *rng, size_t group, uintptr_t *starts, uint32_t *npages, size_t max,
				 uint64_t *total)
{
	uint64_t all = 0;
	size_t got = 0;

	if (total)
		*total = 0;
	if (!group || group > UINT32_MAX)
		return 0;
	uintptr_t ps = (uintptr_t)nkp.page_size;
	atomic_fetch_add(&readers, 1);
	struct rset *s = atomic_load(&cur_set);
	for (size_t i = 0; s && i < s->n; i++)
		all += ((s->r[i].hi - s->r[i].lo) / ps + group - 1) / group;
	if (all && starts && npages && max) {
		/* Draw group numbers in the set's order, sort them, walk the ranges once. */
		_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "group numbers are kept in starts[]");
		for (size_t k = 0; k < max; k++)
			starts[k] = (uintptr_t)(rnd(rng) % all);
		sort_u(starts, max);
		uint64_t before = 0;
		size_t i = 0;
		for (size_t k = 0; k < max; k++) {
			uint64_t g = starts[k], ng = 0, pages = 0;
			for (; i < s->n; i++) {
				pages = (s->r[i].hi - s->r[i].lo) / ps;
				ng = (pages + group - 1) / group;
				if (g < before + ng)
					break;
				before += ng;
			}
			if (i == s->n)
				break;
			uint64_t first = (g - before) * group;
			starts[got] = s->r[i].lo + (uintptr_t)first * ps;
			npages[got] = (uint32_t)(pages - first < group ? pages - first : group);
			got++;
		}
	}
	atomic_fetch_sub(&readers, 1);
	if (total)
		*total = all;
	return got;
}

/* Child after fork: its one thread is inside no reader. */
void nkp_tracked_fork_child(void)
{
	atomic_store(&readers, 0);
}
