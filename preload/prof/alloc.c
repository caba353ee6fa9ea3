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
	s->r[j++] = (struct rng){ blo, bhi, lo, hi, 0 };
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
	uint64_t ip[NK__NKP_MAX_DEPTH];
};
static struct site sites[SITE_CAP];
static uint32_t n_sites;
static uintptr_t self_lo, self_hi; /* the runtime's own object */

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

/* Site id of the current call stack (without the runtime's frames); writes SITE when new.  blk_lock held. */
static uint32_t site_of(void *const *fr, int n)
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
			   .site = fr ? site_of(fr, nfr) : 0, .kind = kind, .tid = nkp_tid(), .lo = lo, .hi = hi };
	b->reg = range_add(addr, addr + size, lo, hi) == 0;
	if (!b->reg)
		b->lo = b->hi = 0;
	if (kind != NK__ALLOC_STATIC)
		atomic_fetch_add(&n_live, 1);
	if (kind == NK__ALLOC_MMAP)
		mmap_addrs[n_mmap++] = addr;
	write_alloc(b, b->time_ns);
	int arm = b->lo < b->hi && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_new_block;
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

static int want(size_t n)
{
	return n >= nkp.min_size && n && nkp.active && !nkp_busy();
}

#define STACK(fr, n)                                                                                                \
	void *fr[NK__NKP_MAX_DEPTH + 8];                                                                            \
	nkp_enter();                                                                                                \
	int n = backtrace(fr, (int)(sizeof fr / sizeof fr[0]));                                                     \
	nkp_leave()

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
	return p;
}

NKP_EXPORT void free(void *p)
{
	if (!p || is_boot(p))
		return;
	if (!RESOLVED())
		interpose_resolve();
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
	void *p = real_realloc(old, n);
	if (p && want(n))
		track_here(p, n, NK__ALLOC_REALLOC);
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

static int excluded(const char *path)
{
	static const char *const skip[] = { "ld-linux", "ld.so", "ld64.so", "libc.so", "libc-", "libpthread",
					     "libdl.", "libdl-", "libnumakit", "libhwloc", "libjansson", "libdw",
					     "libelf", "libgcc_s", "linux-vdso", "linux-gate" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
		if (!strncmp(base, skip[i], strlen(skip[i])))
			return 1;
	return 0;
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
	pthread_mutex_unlock(&blk_lock);
	nkp_leave();
}
