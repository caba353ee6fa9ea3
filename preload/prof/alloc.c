/*
 * libnumakit_prof.so allocation tracking (prof.h): the malloc family and
 * mmap/munmap/mremap interposers, allocation sites, the tracked-range
 * registry the samplers draw pages from, static segments of loaded objects.
 *
 * Blocks of at least nkp.min_size bytes are tracked: a SITE record the first
 * time their call stack is seen, an ALLOC record, and their page-aligned
 * interior in the range registry.  The registry is copy-on-write: writers
 * (under blk_lock) publish a new sorted array with one atomic store; readers
 * (signal handlers included) announce themselves in `readers` and never
 * block; an old array is unmapped once no reader is inside.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof.h"

#define NKP_EXPORT __attribute__((visibility("default")))

#pragma weak nkp_pf_forget
#pragma weak nkp_pf_new_block

/* ---------------------------------------------------------------- real functions, bootstrap */

#define NK_INTERPOSE_BOOT_BYTES (64 * 1024)
#include "../common/interpose.h"

#define RESOLVED() (atomic_load_explicit(&resolved, memory_order_acquire) == 2)

/* ---------------------------------------------------------------- the range registry */

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
 * mmap/munmap pairs).  blk_lock held. */
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
	struct rset *s = real_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	s->n = 0;
	s->cap = (bytes - sizeof(struct rset)) / sizeof(struct rng);
	s->bytes = bytes;
	return s;
}

/* Publish @p s (blk_lock held); unmap what no reader can still see. */
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
			real_munmap(out, out->bytes);
		}
		n_retired = 0;
	}
}

static int range_add(uintptr_t blo, uintptr_t bhi, uintptr_t lo, uintptr_t hi)
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

static void range_remove(uintptr_t blo, uintptr_t bhi)
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

/* 1 when [lo, hi) overlaps a range of the current set.  blk_lock held. */
static int range_overlaps(uintptr_t lo, uintptr_t hi)
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
static uintptr_t heap_floor;

/*
 * Make the pages [lo, hi) (page-aligned, those of a small block) part of the tracked set, unless they are
 * already (by a heap range or a large block or static segment: those keep their ranges, the pages around
 * them are clipped).  The newly tracked pages, if any, are [*nlo, *nhi) (a merge may fill a gap too).
 * Returns 1 when pages were added.  blk_lock held.
 */
static int heap_cover(uintptr_t lo, uintptr_t hi, uintptr_t *nlo, uintptr_t *nhi)
{
	uintptr_t ps = (uintptr_t)nkp.page_size;
	struct rset *o = atomic_load(&cur_set);
	size_t n = o ? o->n : 0;
	size_t a = n ? upper(o, lo) : 0;
	const struct rng *pred = a > 0 ? &o->r[a - 1] : NULL, *succ = a < n ? &o->r[a] : NULL;

	if (lo < heap_floor)
		lo = heap_floor;
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
	rset_publish(s);
	*nlo = mp ? pred->bhi : lo;
	*nhi = ms ? succ->blo : hi;
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

/* ---------------------------------------------------------------- sites */

#define SITE_CAP 4096
struct site {
	uint64_t hash;
	uint32_t id, depth;
	int written; /* SITE record in the current part */
	int skip;    /* small blocks of this site are not recorded: called from a runtime (skip_obj) */
	uint64_t ip[NK__NKP_MAX_DEPTH];
};
static struct site sites[SITE_CAP];
static uint32_t n_sites;
static uintptr_t self_lo, self_hi; /* the runtime's own object */

/*
 * Objects whose own small allocations are not recorded (the caller of malloc is one of them): the loader,
 * threading and OpenMP runtimes, numakit's libraries.  Their blocks hold locks and barriers that the kernel
 * reads in futex calls, which a revoked page would fail with EFAULT; and they are nobody's data.  Filled by
 * statics_cb (start and every dlopen); read by site_of, under blk_lock.
 */
#define SKIP_CAP 64
static struct { uintptr_t lo, hi; } skip_obj[SKIP_CAP];
static size_t n_skip_obj;

static int skip_caller(uintptr_t ip)
{
	for (size_t i = 0; i < n_skip_obj; i++)
		if (ip >= skip_obj[i].lo && ip < skip_obj[i].hi)
			return 1;
	return 0;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t probe = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (probe >= lo && probe < hi) {
			uintptr_t a = UINTPTR_MAX, b = 0;
			for (int j = 0; j < info->dlpi_phnum; j++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[j];
				if (q->p_type != PT_LOAD)
					continue;
				uintptr_t l = info->dlpi_addr + q->p_vaddr;
				if (l < a)
					a = l;
				if (l + q->p_memsz > b)
					b = l + q->p_memsz;
			}
			self_lo = a;
			self_hi = b;
			return 1;
		}
	}
	return 0;
}

/* Site id of the current call stack (without the runtime's frames); writes SITE when new; *skip (may be NULL)
 * tells whether the site's small blocks are left out (skip_caller).  blk_lock held. */
static uint32_t site_of(void *const *fr, int n, int *skip)
{
	/* Drop the runtime's frames: the interposers on top, and the main() wrapper further down. */
	void *own[NK__NKP_MAX_DEPTH];
	uint32_t depth = 0;
	for (int i = 0; i < n && depth < NK__NKP_MAX_DEPTH; i++)
		if ((uintptr_t)fr[i] < self_lo || (uintptr_t)fr[i] >= self_hi)
			own[depth++] = fr[i];
	if (!depth)
		return 0;
	fr = own;
	const int k = 0;
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < depth; i++) {
		h ^= (uint64_t)(uintptr_t)fr[k + i];
		h *= 1099511628211ull;
	}
	size_t slot = h & (SITE_CAP - 1);
	for (size_t probe = 0; probe < SITE_CAP; probe++, slot = (slot + 1) & (SITE_CAP - 1)) {
		struct site *s = &sites[slot];
		if (!s->id) {
			if (n_sites >= SITE_CAP * 3 / 4)
				return 0;
			s->hash = h;
			s->depth = depth;
			for (uint32_t i = 0; i < depth; i++)
				s->ip[i] = (uint64_t)(uintptr_t)fr[k + i];
			s->skip = skip_caller((uintptr_t)fr[k]);
			s->id = ++n_sites;
		} else if (s->hash != h || s->depth != depth) {
			continue;
		} else {
			int same = 1;
			for (uint32_t i = 0; i < depth && same; i++)
				same = s->ip[i] == (uint64_t)(uintptr_t)fr[k + i];
			if (!same)
				continue;
		}
		if (!s->written) {
			struct nk__nkp_site r = { .id = s->id, .depth = s->depth };
			if (!nkp_record(NK__NKP_SITE, &r, sizeof r, s->ip, s->depth * sizeof s->ip[0]))
				s->written = 1;
		}
		if (skip)
			*skip = s->skip;
		return s->id;
	}
	return 0;
}

/* ---------------------------------------------------------------- tracked blocks */

struct blk {
	uintptr_t addr; /* 0 empty */
	uint64_t size;
	uint64_t time_ns;
	uint32_t id, site, kind, tid;
	uintptr_t lo, hi; /* tracked interior, lo == hi when none */
	int reg;          /* in the range registry */
};
#define BLK_CAP (1u << 17)
static struct blk blks[BLK_CAP];
static size_t n_blks;
static atomic_size_t n_live; /* blocks other than statics: a fast "nothing to look up" for free() */
static uint32_t alloc_ids;
static pthread_mutex_t blk_lock = PTHREAD_MUTEX_INITIALIZER;

/* Addresses of the live MMAP blocks, so munmap looks at them and not the whole table. */
#define MMAP_CAP 8192
static uintptr_t mmap_addrs[MMAP_CAP];
static size_t n_mmap;

static size_t blk_hash(uintptr_t a)
{
	return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 47) & (BLK_CAP - 1);
}

static struct blk *blk_find(uintptr_t a)
{
	for (size_t i = blk_hash(a), k = 0; k < BLK_CAP; k++, i = (i + 1) & (BLK_CAP - 1)) {
		if (!blks[i].addr)
			return NULL;
		if (blks[i].addr == a)
			return &blks[i];
	}
	return NULL;
}

static struct blk *blk_insert(uintptr_t a)
{
	if (n_blks >= BLK_CAP / 2)
		return NULL;
	for (size_t i = blk_hash(a);; i = (i + 1) & (BLK_CAP - 1))
		if (!blks[i].addr) {
			n_blks++;
			return &blks[i];
		}
}

/* Backward-shift deletion (linear probing, no tombstones). */
static void blk_delete(struct blk *b)
{
	size_t i = (size_t)(b - blks);
	blks[i].addr = 0;
	n_blks--;
	for (size_t j = (i + 1) & (BLK_CAP - 1); blks[j].addr; j = (j + 1) & (BLK_CAP - 1)) {
		size_t h = blk_hash(blks[j].addr);
		/* may blks[j] move to the hole at i? only if its home is not in (i, j] cyclically */
		int between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
		if (!between) {
			blks[i] = blks[j];
			blks[j].addr = 0;
			i = j;
		}
	}
}

static void write_alloc(const struct blk *b, uint64_t time_ns)
{
	struct nk__nkp_alloc a = { .addr = b->addr, .size = b->size, .time_ns = time_ns, .tid = b->tid,
				   .site = b->site, .kind = b->kind, .id = b->id };
	(void)nkp_record(NK__NKP_ALLOC, &a, sizeof a, NULL, 0);
}

/* Track [addr, addr+size) of @p kind; @p fr/@p nfr its call stack (NULL for statics).  Takes blk_lock. */
static void untrack_locked(struct blk *b);

static void track(uintptr_t addr, uint64_t size, uint32_t kind, void *const *fr, int nfr)
{
	uintptr_t ps = (uintptr_t)nkp.page_size;
	uintptr_t lo = (addr + ps - 1) & ~(ps - 1), hi = (addr + size) & ~(ps - 1);
	if (hi < lo)
		hi = lo;
	pthread_mutex_lock(&blk_lock);
	struct blk *stale = blk_find(addr);
	if (stale) /* its free was not seen (freed behind our back): it is gone now */
		untrack_locked(stale);
	if (kind == NK__ALLOC_MMAP && n_mmap == MMAP_CAP) {
		pthread_mutex_unlock(&blk_lock);
		return;
	}
	struct blk *b = blk_insert(addr);
	if (!b) {
		pthread_mutex_unlock(&blk_lock);
		return;
	}
	*b = (struct blk){ .addr = addr, .size = size, .time_ns = nkp_now(), .id = ++alloc_ids,
			   .site = fr ? site_of(fr, nfr, NULL) : 0, .kind = kind, .tid = nkp_tid(), .lo = lo, .hi = hi };
	/* A large block inside pages already sampled as heap pages (a 64-128 KiB block of an arena holding small
	 * blocks): those ranges stay, the block is attributed by its ALLOC record all the same. */
	int covered = range_overlaps(addr, addr + size);
	b->reg = !covered && range_add(addr, addr + size, lo, hi) == 0;
	if (!b->reg && !covered)
		b->lo = b->hi = 0;
	if (kind != NK__ALLOC_STATIC)
		atomic_fetch_add(&n_live, 1);
	if (kind == NK__ALLOC_MMAP)
		mmap_addrs[n_mmap++] = addr;
	write_alloc(b, b->time_ns);
	int arm = b->reg && b->lo < b->hi && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_new_block;
	pthread_mutex_unlock(&blk_lock);
	if (arm)
		nkp_pf_new_block(lo, hi - lo);
}

/* blk_lock held. */
static void untrack_locked(struct blk *b)
{
	if (b->lo < b->hi && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_forget)
		nkp_pf_forget(b->lo, b->hi - b->lo);
	if (b->reg)
		range_remove(b->addr, b->addr + b->size);
	struct nk__nkp_free f = { .addr = b->addr, .time_ns = nkp_now(), .tid = nkp_tid(), .id = b->id };
	(void)nkp_record(NK__NKP_FREE, &f, sizeof f, NULL, 0);
	if (b->kind != NK__ALLOC_STATIC)
		atomic_fetch_sub(&n_live, 1);
	if (b->kind == NK__ALLOC_MMAP)
		for (size_t i = 0; i < n_mmap; i++)
			if (mmap_addrs[i] == b->addr) {
				mmap_addrs[i] = mmap_addrs[--n_mmap];
				break;
			}
	blk_delete(b);
}

static void untrack(uintptr_t addr)
{
	pthread_mutex_lock(&blk_lock);
	struct blk *b = blk_find(addr);
	if (b)
		untrack_locked(b);
	pthread_mutex_unlock(&blk_lock);
}

/* Every tracked MMAP block overlapping [addr, addr+len) (a partial munmap forgets the whole block). */
static void untrack_mmap_overlap(uintptr_t addr, size_t len)
{
	pthread_mutex_lock(&blk_lock);
	for (size_t i = 0; i < n_mmap;) {
		struct blk *b = blk_find(mmap_addrs[i]);
		if (b && b->addr < addr + len && addr < b->addr + b->size)
			untrack_locked(b); /* moves the last entry into slot i */
		else
			i++;
	}
	pthread_mutex_unlock(&blk_lock);
}

#define STACK(fr, n)                                                                                                \
	void *fr[NK__NKP_MAX_DEPTH + 8];                                                                            \
	nkp_enter();                                                                                                \
	int n = backtrace(fr, (int)(sizeof fr / sizeof fr[0]));                                                     \
	nkp_leave()

static int want(size_t n)
{
	return n >= nkp.min_size && n && nkp.active && !nkp_busy();
}

/* ---------------------------------------------------------------- small blocks (issue 19)
 *
 * A block smaller than min_size is recorded by its site like a large one, in a compact form: no table entry
 * of its own in the range registry and no record per call, but one 32-byte event (struct nk__nkp_block) in a
 * batch written as one BLOCKS record when full (sbuf) or when the part closes, and an entry in an
 * open-addressing set of the live ones (stab), so that free() writes an event only for blocks recorded and
 * a child after fork gets the live ones.  The pages holding them join the sampled set as heap ranges
 * (heap_cover): the samplers draw whole pages there, and a sample is attributed offline by its exact address
 * to the block that holds it (a sample on malloc's own headers or on free chunks is attributed to no
 * block).  The costs per small malloc: the call stack (backtrace, as for a large block), the site lookup,
 * one event; per free of a recorded block: one set lookup and one event.  All under blk_lock.
 */

struct sblk {
	uintptr_t addr; /* 0 empty */
	uint32_t size, site;
	uint64_t time_ns;
	uint32_t tid, kind;
};
static struct sblk *stab;
static size_t stab_cap, stab_n, stab_bytes;
static atomic_size_t n_small; /* live recorded small blocks: a fast "nothing to look up" for free() */
#define SBUF_CAP 2048         /* events per BLOCKS record (64 KiB) */
static struct nk__nkp_block sbuf[SBUF_CAP];
static size_t sbuf_n;
static uint64_t small_allocs, small_frees, small_lost; /* END counters */

static size_t stab_hash(uintptr_t a, size_t cap)
{
	return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

/* blk_lock held. */
static void sbuf_flush_locked(void)
{
	if (sbuf_n && nkp_record(NK__NKP_BLOCKS | NK__NKP_OPTIONAL, sbuf, sbuf_n * sizeof sbuf[0], NULL, 0))
		small_lost += sbuf_n;
	sbuf_n = 0;
}

static void sbuf_put(const struct nk__nkp_block *e)
{
	if (sbuf_n == SBUF_CAP)
		sbuf_flush_locked();
	sbuf[sbuf_n++] = *e;
}

/* Grow the set (twice as large, mmap'd: not from the heap we record).  blk_lock held.  -1 when out of memory. */
static int stab_grow(void)
{
	size_t cap = stab_cap ? stab_cap * 2 : 4096;
	size_t bytes = cap * sizeof(struct sblk);
	struct sblk *t = real_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < stab_cap; i++)
		if (stab[i].addr)
			for (size_t j = stab_hash(stab[i].addr, cap);; j = (j + 1) & (cap - 1))
				if (!t[j].addr) {
					t[j] = stab[i];
					break;
				}
	if (stab)
		real_munmap(stab, stab_bytes);
	stab = t;
	stab_cap = cap;
	stab_bytes = bytes;
	return 0;
}

static struct sblk *stab_find(uintptr_t a)
{
	if (!stab_cap)
		return NULL;
	for (size_t i = stab_hash(a, stab_cap);; i = (i + 1) & (stab_cap - 1)) {
		if (!stab[i].addr)
			return NULL;
		if (stab[i].addr == a)
			return &stab[i];
	}
}

static void stab_delete(struct sblk *b)
{
	size_t i = (size_t)(b - stab), cap = stab_cap;
	stab[i].addr = 0;
	stab_n--;
	for (size_t j = (i + 1) & (cap - 1); stab[j].addr; j = (j + 1) & (cap - 1)) {
		size_t h = stab_hash(stab[j].addr, cap);
		int between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
		if (!between) {
			stab[i] = stab[j];
			stab[j].addr = 0;
			i = j;
		}
	}
}

/* Forget the recorded small block at @p a (a FREE event), if it is one.  blk_lock held. */
static void small_free_locked(uintptr_t a)
{
	struct sblk *b = stab_find(a);
	if (!b)
		return;
	struct nk__nkp_block e = { .addr = a, .time_ns = nkp_now(), .tid = nkp_tid() };
	sbuf_put(&e);
	stab_delete(b);
	small_frees++;
	atomic_fetch_sub(&n_small, 1);
}

static void small_here(void *p, size_t n, uint32_t kind)
{
	STACK(fr, nfr);
	uintptr_t a = (uintptr_t)p, ps = (uintptr_t)nkp.page_size, nlo = 0, nhi = 0;
	int skip = 0, arm = 0;
	nkp_enter();
	pthread_mutex_lock(&blk_lock);
	uint32_t site = site_of(fr, nfr, &skip);
	if (!site || skip)
		goto out;
	struct sblk *b = stab_find(a);
	if (b) { /* its free was not seen (freed behind our back) */
		stab_delete(b);
		atomic_fetch_sub(&n_small, 1);
	}
	if ((stab_n + 1) * 2 > stab_cap && stab_grow())
		goto out;
	size_t i = stab_hash(a, stab_cap);
	while (stab[i].addr)
		i = (i + 1) & (stab_cap - 1);
	struct sblk nb = { .addr = a, .size = (uint32_t)n, .site = site, .time_ns = nkp_now(), .tid = nkp_tid(),
			   .kind = kind };
	stab[i] = nb;
	stab_n++;
	atomic_fetch_add(&n_small, 1);
	small_allocs++;
	struct nk__nkp_block e = { .addr = a, .time_ns = nb.time_ns, .size = nb.size, .site = site, .tid = nb.tid,
				   .kind = (uint16_t)kind };
	sbuf_put(&e);
	arm = heap_cover(a & ~(ps - 1), (a + n + ps - 1) & ~(ps - 1), &nlo, &nhi) && nlo < nhi &&
	      nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_new_block;
out:
	pthread_mutex_unlock(&blk_lock);
	nkp_leave();
	if (arm) /* the new pages, like a new block: their first touch may be sampled */
		nkp_pf_new_block(nlo, nhi - nlo);
}

/* free()/realloc() of @p p: 1 when it was a recorded small block (now forgotten). */
static void maybe_small_free(void *p)
{
	if (!p || !nkp.active || !atomic_load_explicit(&n_small, memory_order_relaxed) || nkp_busy())
		return;
	nkp_enter();
	pthread_mutex_lock(&blk_lock);
	small_free_locked((uintptr_t)p);
	pthread_mutex_unlock(&blk_lock);
	nkp_leave();
}

static int want_small(size_t n)
{
	return nkp.small_blocks && n && n < nkp.min_size && n <= UINT32_MAX && nkp.active && !nkp_busy();
}

void nkp_alloc_flush(int from_signal)
{
	if (!nkp.active)
		return;
	if (from_signal) {
		if (pthread_mutex_trylock(&blk_lock))
			return;
	} else {
		pthread_mutex_lock(&blk_lock);
	}
	sbuf_flush_locked();
	pthread_mutex_unlock(&blk_lock);
}

/* AS-safe (END may be written from a fatal signal's handler): no stdio. */
static char *put_u64(char *p, uint64_t v)
{
	char d[24];
	int k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (k)
		*p++ = d[--k];
	return p;
}

size_t nkp_alloc_end_json(char *buf, size_t cap)
{
	static const char *const key[] = { "\"small_blocks\": {\"allocs\": ", ", \"frees\": ", ", \"live\": ",
					   ", \"lost\": " };
	const uint64_t v[] = { small_allocs, small_frees, stab_n, small_lost };
	if (cap < 160)
		return 0;
	char *p = buf;
	for (size_t i = 0; i < 4; i++) {
		size_t l = strlen(key[i]);
		memcpy(p, key[i], l);
		p = put_u64(p + l, v[i]);
	}
	*p++ = '}';
	return (size_t)(p - buf);
}


static void track_here(void *p, size_t n, uint32_t kind)
{
	STACK(fr, nfr);
	nkp_enter();
	track((uintptr_t)p, n, kind, fr, nfr);
	nkp_leave();
}

/* Returns the size of the block it stopped tracking, 0 when @p p was not tracked. */
static uint64_t maybe_untrack(void *p)
{
	if (!p || !nkp.active || !atomic_load_explicit(&n_live, memory_order_relaxed) || nkp_busy())
		return 0;
	if (real_usable && real_usable(p) < nkp.min_size)
		return 0;
	uint64_t size = 0;
	nkp_enter();
	pthread_mutex_lock(&blk_lock);
	struct blk *b = blk_find((uintptr_t)p);
	if (b) {
		size = b->size;
		untrack_locked(b);
	}
	pthread_mutex_unlock(&blk_lock);
	nkp_leave();
	return size;
}

/* ---------------------------------------------------------------- malloc family */

NKP_EXPORT void *malloc(size_t n)
{
	if (!RESOLVED()) {
		if (atomic_load(&resolved) == 1)
			return boot_alloc(n);
		interpose_resolve();
	}
	void *p = real_malloc(n);
	if (p && want(n))
		track_here(p, n, NK__ALLOC_MALLOC);
	else if (p && want_small(n))
		small_here(p, n, NK__ALLOC_MALLOC);
	return p;
}

NKP_EXPORT void *calloc(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!RESOLVED()) {
		if (atomic_load(&resolved) == 1)
			return boot_alloc(n);
		interpose_resolve();
	}
	void *p = real_calloc(a, b);
	if (p && want(n))
		track_here(p, n, NK__ALLOC_CALLOC);
	else if (p && want_small(n))
		small_here(p, n, NK__ALLOC_CALLOC);
	return p;
}

NKP_EXPORT void free(void *p)
{
	if (!p || is_boot(p))
		return;
	if (!RESOLVED())
		interpose_resolve();
	maybe_small_free(p);
	maybe_untrack(p);
	real_free(p);
}

NKP_EXPORT void *realloc(void *old, size_t n)
{
	if (!RESOLVED()) {
		if (atomic_load(&resolved) == 1) {
			void *p = boot_alloc(n);
			if (p && old) {
				size_t had = *(size_t *)((char *)old - 16);
				memcpy(p, old, had < n ? had : n);
			}
			return p;
		}
		interpose_resolve();
	}
	if (old && is_boot(old)) {
		size_t had = *(size_t *)((char *)old - 16);
		void *p = malloc(n);
		if (p)
			memcpy(p, old, had < n ? had : n);
		return p;
	}
	/* Untracked before the call: the sampler must give back access to the old pages before they are copied. */
	uint64_t had = maybe_untrack(old);
	maybe_small_free(old);
	void *p = real_realloc(old, n);
	if (p && want(n))
		track_here(p, n, NK__ALLOC_REALLOC);
	else if (p && want_small(n))
		small_here(p, n, NK__ALLOC_REALLOC);
	else if (!p && n && had && want(had)) /* failed: the old block lives on, as a new allocation */
		track_here(old, had, NK__ALLOC_REALLOC);
	return p;
}

NKP_EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
	if (!RESOLVED())
		interpose_resolve();
	int rc = real_posix_memalign(out, al, n);
	if (!rc && want(n))
		track_here(*out, n, NK__ALLOC_MEMALIGN);
	else if (!rc && want_small(n))
		small_here(*out, n, NK__ALLOC_MEMALIGN);
	return rc;
}

#define ALIGNED(name, args, call, size)                                                                             \
	NKP_EXPORT void *name args                                                                                  \
	{                                                                                                           \
		if (!RESOLVED())                                                                                    \
			interpose_resolve();                                                                        \
		void *p = call;                                                                                     \
		if (p && want(size))                                                                                \
			track_here(p, size, NK__ALLOC_MEMALIGN);                                                    \
		else if (p && want_small(size))                                                                     \
			small_here(p, size, NK__ALLOC_MEMALIGN);                                                    \
		return p;                                                                                           \
	}

ALIGNED(aligned_alloc, (size_t al, size_t n), real_aligned_alloc(al, n), n)
ALIGNED(memalign, (size_t al, size_t n), real_memalign(al, n), n)
ALIGNED(valloc, (size_t n), real_valloc(n), n)
ALIGNED(pvalloc, (size_t n), real_pvalloc(n), n)

/* ---------------------------------------------------------------- mmap family */

NKP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!RESOLVED())
		interpose_resolve();
	void *p = real_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) &&
	    prot == (PROT_READ | PROT_WRITE) && want(len)) {
		if (flags & MAP_FIXED) /* replaces whatever was there */
			untrack_mmap_overlap((uintptr_t)p, len);
		track_here(p, len, NK__ALLOC_MMAP);
	}
	return p;
}

NKP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

NKP_EXPORT int munmap(void *addr, size_t len)
{
	if (!RESOLVED())
		interpose_resolve();
	if (nkp.active && !nkp_busy() && n_mmap) {
		nkp_enter();
		untrack_mmap_overlap((uintptr_t)addr, len);
		nkp_leave();
	}
	return real_munmap(addr, len);
}

NKP_EXPORT void *mremap(void *old, size_t olen, size_t nlen, int flags, ...)
{
	if (!RESOLVED())
		interpose_resolve();
	void *fixed = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		fixed = va_arg(ap, void *);
		va_end(ap);
	}
	int tracked = 0;
	if (nkp.active && !nkp_busy() && atomic_load(&n_live)) {
		nkp_enter();
		pthread_mutex_lock(&blk_lock);
		struct blk *b = blk_find((uintptr_t)old);
		tracked = b && b->kind == NK__ALLOC_MMAP;
		if (tracked)
			untrack_locked(b);
		pthread_mutex_unlock(&blk_lock);
		nkp_leave();
	}
	void *p = (flags & MREMAP_FIXED) ? real_mremap(old, olen, nlen, flags, fixed) : real_mremap(old, olen, nlen, flags);
	if (p == MAP_FAILED && errno == EFAULT && tracked) {
		/*
		 * Revoking pages of a fresh mapping split it, and pieces first written while a
		 * revoked page separated them got different anon_vmas: they never merge again, and
		 * the kernel refuses to remap a range spanning several of them (EFAULT).  The block
		 * is ours (anonymous, private, read-write; its access was given back above), so do
		 * what glibc's realloc does on failure: copy.  Shrinking in place is an unmap of
		 * the tail; growing in place without MREMAP_MAYMOVE stays refused.
		 */
		int e = errno;
		if (nlen <= olen) {
			if (nlen == olen || real_munmap((char *)old + nlen, olen - nlen) == 0)
				p = old;
		} else if ((flags & MREMAP_MAYMOVE) && !(flags & MREMAP_FIXED)) {
			void *q = real_mmap(NULL, nlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (q != MAP_FAILED) {
				memcpy(q, old, olen);
				real_munmap(old, olen);
				p = q;
			}
		}
		if (p == MAP_FAILED)
			errno = e;
	}
	/* Only a block we tracked is known to be anonymous, private and RW: a file mapping stays untracked. */
	if (p != MAP_FAILED && tracked && want(nlen))
		track_here(p, nlen, NK__ALLOC_MMAP);
	return p;
}

/* ---------------------------------------------------------------- numakit's blocks */

void nkp_alloc_track_numakit(uintptr_t addr, size_t len)
{
	if (!nkp.active)
		return;
	nkp_enter();
	untrack_mmap_overlap(addr, len); /* its reservation, seen by our mmap */
	nkp_leave();
	track_here((void *)addr, len, NK__ALLOC_NUMAKIT);
}

void nkp_alloc_untrack_numakit(uintptr_t addr, size_t len)
{
	(void)len;
	if (!nkp.active)
		return;
	nkp_enter();
	untrack(addr);
	nkp_leave();
}

/* ---------------------------------------------------------------- statics */

#define MAX_OBJS 1024
static uintptr_t seen_objs[MAX_OBJS];
static size_t n_seen;

/* 1 when the file name of @p path begins with one of @p prefixes[0..n). */
static int name_starts(const char *path, const char *const *prefixes, size_t n)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

static int excluded(const char *path)
{
	static const char *const skip[] = { "ld-linux", "ld.so", "ld64.so", "libc.so", "libc-", "libpthread",
					     "libdl.", "libdl-", "libnumakit", "libhwloc", "libjansson", "libdw",
					     "libelf", "libgcc_s", "linux-vdso", "linux-gate" };
	return name_starts(path, skip, sizeof skip / sizeof skip[0]);
}

static int skip_alloc(const char *path)
{
	static const char *const skip[] = { "ld-linux", "ld.so", "ld64.so", "libpthread", "libdl.", "libdl-",
					     "libgomp", "libomp", "libiomp", "libnumakit", "libhwloc", "libjansson",
					     "libdw", "libelf", "libgcc_s", "libz.", "libzstd", "liblzma", "libbz2" };
	return name_starts(path, skip, sizeof skip / sizeof skip[0]);
}

static int statics_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t base = info->dlpi_addr;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	/* The runtime itself. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && base + ph->p_vaddr >= self_lo && base + ph->p_vaddr < self_hi)
			return 0;
	}
	/* The main program has an empty name; vdso-like objects have none and no file. */
	if (*name && skip_alloc(name)) {
		uintptr_t a = UINTPTR_MAX, b = 0;
		for (int i = 0; i < info->dlpi_phnum; i++)
			if (info->dlpi_phdr[i].p_type == PT_LOAD) {
				uintptr_t l = base + info->dlpi_phdr[i].p_vaddr;
				if (l < a)
					a = l;
				if (l + info->dlpi_phdr[i].p_memsz > b)
					b = l + info->dlpi_phdr[i].p_memsz;
			}
		int known = 0;
		for (size_t i = 0; i < n_skip_obj; i++)
			known |= skip_obj[i].lo == a;
		if (a < b && !known && n_skip_obj < SKIP_CAP) {
			pthread_mutex_lock(&blk_lock);
			skip_obj[n_skip_obj].lo = a;
			skip_obj[n_skip_obj].hi = b;
			n_skip_obj++;
			pthread_mutex_unlock(&blk_lock);
		}
	}
	if (*name && excluded(name))
		return 0;
	uintptr_t key = base; /* unique among loaded objects (a dlclose + dlopen at the same base is not seen again) */
	for (size_t i = 0; i < n_seen; i++)
		if (seen_objs[i] == key)
			return 0;
	if (n_seen < MAX_OBJS)
		seen_objs[n_seen++] = key;
	uintptr_t rlo = 0, rhi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			rlo = base + info->dlpi_phdr[i].p_vaddr;
			rhi = rlo + info->dlpi_phdr[i].p_memsz;
		}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
			continue;
		uintptr_t lo = base + ph->p_vaddr, hi = lo + ph->p_memsz;
		/* RELRO is read-only after relocation: keep only what lies outside it. */
		if (rlo < rhi && rlo <= lo && rhi > lo)
			lo = rhi < hi ? rhi : hi;
		else if (rlo < rhi && rlo > lo && rlo < hi)
			hi = rlo;
		if (lo < hi)
			track(lo, hi - lo, NK__ALLOC_STATIC, NULL, 0);
	}
	return 0;
}

void nkp_alloc_rescan(void)
{
	if (!nkp.active)
		return;
	nkp_enter();
	dl_iterate_phdr(statics_cb, NULL);
	nkp_leave();
}

void nkp_alloc_start(void)
{
	nkp_enter();
	if (!RESOLVED())
		interpose_resolve();
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&nkp_alloc_start);
	void *fr[4];
	(void)backtrace(fr, 4); /* loads the unwinder now, so later calls do not allocate */
	uintptr_t ps = (uintptr_t)nkp.page_size;
	heap_floor = ((uintptr_t)sbrk(0) + ps - 1) & ~(ps - 1);
	nkp_leave();
	nkp_alloc_rescan();
}

/* ---------------------------------------------------------------- fork */

void nkp_alloc_fork_prepare(void)
{
	pthread_mutex_lock(&blk_lock);
}

void nkp_alloc_fork_parent(void)
{
	pthread_mutex_unlock(&blk_lock);
}

void nkp_alloc_fork_child(void)
{
	pthread_mutex_init(&blk_lock, NULL);
	atomic_store(&readers, 0);
	sbuf_n = 0; /* the parent's events: its own part gets them */
	small_allocs = small_frees = small_lost = 0;
}

void nkp_alloc_replay(void)
{
	nkp_enter();
	pthread_mutex_lock(&blk_lock);
	for (size_t i = 0; i < SITE_CAP; i++)
		sites[i].written = 0;
	for (size_t i = 0; i < BLK_CAP; i++) {
		struct blk *b = &blks[i];
		if (!b->addr)
			continue;
		if (b->site)
			for (size_t j = 0; j < SITE_CAP; j++)
				if (sites[j].id == b->site && !sites[j].written) {
					struct nk__nkp_site r = { .id = sites[j].id, .depth = sites[j].depth };
					if (!nkp_record(NK__NKP_SITE, &r, sizeof r, sites[j].ip,
							sites[j].depth * sizeof sites[j].ip[0]))
						sites[j].written = 1;
					break;
				}
		write_alloc(b, 0);
	}
	for (size_t i = 0; i < stab_cap; i++) { /* the live small blocks, born at time 0 of this part */
		const struct sblk *b = &stab[i];
		if (!b->addr)
			continue;
		for (size_t j = 0; j < SITE_CAP; j++)
			if (sites[j].id == b->site && !sites[j].written) {
				struct nk__nkp_site r = { .id = sites[j].id, .depth = sites[j].depth };
				if (!nkp_record(NK__NKP_SITE, &r, sizeof r, sites[j].ip, sites[j].depth * sizeof sites[j].ip[0]))
					sites[j].written = 1;
				break;
			}
		struct nk__nkp_block e = { .addr = b->addr, .size = b->size, .site = b->site, .tid = b->tid,
					   .kind = (uint16_t)b->kind };
		sbuf_put(&e);
	}
	sbuf_flush_locked();
	pthread_mutex_unlock(&blk_lock);
	nkp_leave();
}
