/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so allocation tracking (prof.h): the malloc family and
 * mmap/munmap/mremap interposers, the table of tracked blocks, numakit's
 * blocks, static segments of loaded objects, fork.  What it shares with
 * tracked.c (the range registry), sites.c (allocation sites) and blocks.c
 * (small blocks) is in alloc_impl.h; it alone includes interpose.h and
 * hands the real mmap/munmap to them as nkp_real_mmap/nkp_real_munmap.
 *
 * Blocks of at least nkp.min_size bytes are tracked: a SITE record the first
 * time their call stack is seen, an ALLOC record, and their page-aligned
 * interior in the range registry.
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

#include "alloc_impl.h"
#include "prof.h"

#define NKP_EXPORT __attribute__((visibility("default")))

#pragma weak nkp_pf_forget
#pragma weak nkp_pf_new_block

/* ---------------------------------------------------------------- real functions, bootstrap */

#define NK_INTERPOSE_BOOT_BYTES (64 * 1024)
#include "../common/interpose.h"

#define RESOLVED() (atomic_load_explicit(&resolved, memory_order_acquire) == 2)

/* The real functions for tracked.c and blocks.c, which must not include interpose.h (a second copy of its
 * statics and arena). */
void *nkp_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return real_mmap(addr, len, prot, flags, fd, off);
}

int nkp_real_munmap(void *addr, size_t len)
{
	return real_munmap(addr, len);
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
pthread_mutex_t nkp_blk_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Track [addr, addr+size) of @p kind; @p fr/@p nfr its call stack (NULL for statics).  Takes nkp_blk_lock. */
static void untrack_locked(struct blk *b);

static void track(uintptr_t addr, uint64_t size, uint32_t kind, void *const *fr, int nfr)
{
	uintptr_t ps = (uintptr_t)nkp.page_size;
	uintptr_t lo = (addr + ps - 1) & ~(ps - 1), hi = (addr + size) & ~(ps - 1);
	if (hi < lo)
		hi = lo;
	pthread_mutex_lock(&nkp_blk_lock);
	struct blk *stale = blk_find(addr);
	if (stale) /* its free was not seen (freed behind our back): it is gone now */
		untrack_locked(stale);
	if (kind == NK__ALLOC_MMAP && n_mmap == MMAP_CAP) {
		pthread_mutex_unlock(&nkp_blk_lock);
		return;
	}
	struct blk *b = blk_insert(addr);
	if (!b) {
		pthread_mutex_unlock(&nkp_blk_lock);
		return;
	}
	*b = (struct blk){ .addr = addr, .size = size, .time_ns = nkp_now(), .id = ++alloc_ids,
			   .site = fr ? nkp_site_of(fr, nfr, NULL) : 0, .kind = kind, .tid = nkp_tid(), .lo = lo, .hi = hi };
	/* A large block inside pages already sampled as heap pages (a 64-128 KiB block of an arena holding small
	 * blocks): those ranges stay, the block is attributed by its ALLOC record all the same. */
	int covered = nkp_range_overlaps(addr, addr + size);
	b->reg = !covered && nkp_range_add(addr, addr + size, lo, hi) == 0;
	if (!b->reg && !covered)
		b->lo = b->hi = 0;
	if (kind != NK__ALLOC_STATIC)
		atomic_fetch_add(&n_live, 1);
	if (kind == NK__ALLOC_MMAP)
		mmap_addrs[n_mmap++] = addr;
	write_alloc(b, b->time_ns);
	int arm = b->reg && b->lo < b->hi && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_new_block;
	pthread_mutex_unlock(&nkp_blk_lock);
	if (arm)
		nkp_pf_new_block(lo, hi - lo);
}

/* nkp_blk_lock held. */
static void untrack_locked(struct blk *b)
{
	if (b->lo < b->hi && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_forget)
		nkp_pf_forget(b->lo, b->hi - b->lo);
	if (b->reg)
		nkp_range_remove(b->addr, b->addr + b->size);
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
	pthread_mutex_lock(&nkp_blk_lock);
	struct blk *b = blk_find(addr);
	if (b)
		untrack_locked(b);
	pthread_mutex_unlock(&nkp_blk_lock);
}

/* Every tracked MMAP block overlapping [addr, addr+len) (a partial munmap forgets the whole block). */
static void untrack_mmap_overlap(uintptr_t addr, size_t len)
{
	pthread_mutex_lock(&nkp_blk_lock);
	for (size_t i = 0; i < n_mmap;) {
		struct blk *b = blk_find(mmap_addrs[i]);
		if (b && b->addr < addr + len && addr < b->addr + b->size)
			untrack_locked(b); /* moves the last entry into slot i */
		else
			i++;
	}
	pthread_mutex_unlock(&nkp_blk_lock);
}

static int want(size_t n)
{
	return n >= nkp.min_size && n && nkp.active && !nkp_busy();
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
	pthread_mutex_lock(&nkp_blk_lock);
	struct blk *b = blk_find((uintptr_t)p);
	if (b) {
		size = b->size;
		untrack_locked(b);
	}
	pthread_mutex_unlock(&nkp_blk_lock);
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
	else if (p && nkp_want_small(n))
		nkp_small_here(p, n, NK__ALLOC_MALLOC);
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
	else if (p && nkp_want_small(n))
		nkp_small_here(p, n, NK__ALLOC_CALLOC);
	return p;
}

NKP_EXPORT void free(void *p)
{
	if (!p || is_boot(p))
		return;
	if (!RESOLVED())
		interpose_resolve();
	nkp_maybe_small_free(p);
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
	nkp_maybe_small_free(old);
	void *p = real_realloc(old, n);
	if (p && want(n))
		track_here(p, n, NK__ALLOC_REALLOC);
	else if (p && nkp_want_small(n))
		nkp_small_here(p, n, NK__ALLOC_REALLOC);
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
	else if (!rc && nkp_want_small(n))
		nkp_small_here(*out, n, NK__ALLOC_MEMALIGN);
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
		else if (p && nkp_want_small(size))                                                                 \
			nkp_small_here(p, size, NK__ALLOC_MEMALIGN);                                                \
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
		pthread_mutex_lock(&nkp_blk_lock);
		struct blk *b = blk_find((uintptr_t)old);
		tracked = b && b->kind == NK__ALLOC_MMAP;
		if (tracked)
			untrack_locked(b);
		pthread_mutex_unlock(&nkp_blk_lock);
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

/* The loaded objects whose static segments are tracked, by base, with those segments' block addresses, so
 * that the segments of an object dlclose unloads are untracked (nkp_alloc_unloaded).  Under nkp_blk_lock. */
#define MAX_OBJS 1024
#define OBJ_SEGS 4
static struct {
	uintptr_t base;
	uintptr_t seg[OBJ_SEGS];
	unsigned n;
} seen_objs[MAX_OBJS];
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

/*
 * Libraries that hook libc's memory calls by patching libc's code (UCX's UCM "bistro" hooks, used by MPICH
 * and by Open MPI's UCX components; Open MPI's memory patcher and the registration caches it calls back),
 * and the UCX libraries their hooks call into.  Their code then runs inside every madvise/munmap/mmap,
 * also glibc's own: a thread's exit blocks every signal and then calls madvise on its stack (glibc 2.34+,
 * advise_stack_range), where a revoked page of theirs cannot fault into the sampler's handler and kills
 * the process (MPICH 4.0 over UCX: a rank died in ucm_override_madvise on its GOT, 1 run in 5-10 of
 * tests/guest/mpi_halo under the pagefault sampler).  Their data is the MPI stack's, not the program's.
 */
static const char *const hook_libs[] = { "libucm", "libucs", "libuct", "libucp", "libopen-pal", "mca_patcher_",
					 "mca_memory_", "mca_rcache_" };

static int excluded(const char *path)
{
	static const char *const skip[] = { "ld-linux", "ld.so", "ld64.so", "libc.so", "libc-", "libpthread",
					     "libdl.", "libdl-", "libnumakit", "libhwloc", "libjansson", "libdw",
					     "libelf", "libgcc_s", "linux-vdso", "linux-gate" };
	return name_starts(path, skip, sizeof skip / sizeof skip[0]) ||
	       name_starts(path, hook_libs, sizeof hook_libs / sizeof hook_libs[0]);
}

/* libc among them: its own blocks are stdio buffers it reads into inside the library (read(2) into a revoked
 * page fails), pthread attributes it reads with signals blocked, strdup'd strings: pinned (blocks.c). */
static int skip_alloc(const char *path)
{
	static const char *const skip[] = { "ld-linux", "ld.so", "ld64.so", "libc.so", "libc-", "libpthread",
					     "libdl.", "libdl-",
					     "libgomp", "libomp", "libiomp", "libnumakit", "libhwloc", "libjansson",
					     "libdw", "libelf", "libgcc_s", "libz.", "libzstd", "liblzma", "libbz2" };
	return name_starts(path, skip, sizeof skip / sizeof skip[0]) ||
	       name_starts(path, hook_libs, sizeof hook_libs / sizeof hook_libs[0]);
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
		if (ph->p_type == PT_LOAD && base + ph->p_vaddr >= nkp_self_lo && base + ph->p_vaddr < nkp_self_hi)
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
		for (size_t i = 0; i < nkp_n_skip_obj; i++)
			known |= nkp_skip_obj[i].lo == a;
		if (a < b && !known && nkp_n_skip_obj < SKIP_CAP) {
			pthread_mutex_lock(&nkp_blk_lock);
			nkp_skip_obj[nkp_n_skip_obj].lo = a;
			nkp_skip_obj[nkp_n_skip_obj].hi = b;
			nkp_n_skip_obj++;
			pthread_mutex_unlock(&nkp_blk_lock);
		}
	}
	if (*name && excluded(name))
		return 0;
	/* The base is unique among loaded objects; an unloaded object leaves the list (nkp_alloc_unloaded). */
	pthread_mutex_lock(&nkp_blk_lock);
	size_t me = n_seen;
	for (size_t i = 0; i < n_seen; i++)
		if (seen_objs[i].base == base)
			me = SIZE_MAX;
	if (me == n_seen && n_seen < MAX_OBJS) {
		seen_objs[me].base = base;
		seen_objs[me].n = 0;
		n_seen++;
	}
	pthread_mutex_unlock(&nkp_blk_lock);
	if (me == SIZE_MAX)
		return 0;
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
		if (lo >= hi)
			continue;
		track(lo, hi - lo, NK__ALLOC_STATIC, NULL, 0);
		pthread_mutex_lock(&nkp_blk_lock);
		if (me < n_seen && seen_objs[me].base == base && seen_objs[me].n < OBJ_SEGS)
			seen_objs[me].seg[seen_objs[me].n++] = lo;
		pthread_mutex_unlock(&nkp_blk_lock);
	}
	return 0;
}

struct live_objs {
	size_t n;
	uintptr_t base[MAX_OBJS];
};

static int live_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct live_objs *l = arg;
	if (l->n < MAX_OBJS)
		l->base[l->n++] = info->dlpi_addr;
	return 0;
}

/*
 * After dlclose: the static segments of the objects no longer loaded are untracked.  Before, they stayed
 * tracked after the loader unmapped them, the sampler went on revoking pages there, and whatever was mapped
 * there next was revoked and given back read-write: Open MPI opens every component and closes those it does
 * not select, the next component's code landed where a closed one's data had been, and a rank died of
 * SIGSEGV executing it (mca_coll_tuned.so, invalid permissions at the function's first instruction).  The
 * caller holds the pagefault sampler around the dlclose (process.c), so no page of ours was revoked there
 * when the loader unmapped it.
 */
void nkp_alloc_unloaded(void)
{
	if (!nkp.active)
		return;
	nkp_enter();
	struct live_objs *l = nkp_real_mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED) {
		nkp_leave();
		return;
	}
	l->n = 0;
	dl_iterate_phdr(live_cb, l);
	pthread_mutex_lock(&nkp_blk_lock);
	for (size_t i = 0; i < n_seen;) {
		int live = l->n == MAX_OBJS; /* a list cut short: keep everything */
		for (size_t j = 0; j < l->n && !live; j++)
			live = l->base[j] == seen_objs[i].base;
		if (live) {
			i++;
			continue;
		}
		for (unsigned k = 0; k < seen_objs[i].n; k++) {
			struct blk *b = blk_find(seen_objs[i].seg[k]);
			if (b && b->kind == NK__ALLOC_STATIC)
				untrack_locked(b);
		}
		seen_objs[i] = seen_objs[--n_seen];
	}
	pthread_mutex_unlock(&nkp_blk_lock);
	nkp_real_munmap(l, sizeof *l);
	nkp_leave();
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
	dl_iterate_phdr(nkp_find_self, (void *)(uintptr_t)&nkp_alloc_start);
	void *fr[4];
	(void)backtrace(fr, 4); /* loads the unwinder now, so later calls do not allocate */
	uintptr_t ps = (uintptr_t)nkp.page_size;
	nkp_heap_floor = ((uintptr_t)sbrk(0) + ps - 1) & ~(ps - 1);
	nkp_leave();
	nkp_alloc_rescan();
}

/* ---------------------------------------------------------------- fork */

void nkp_alloc_fork_prepare(void)
{
	pthread_mutex_lock(&nkp_blk_lock);
}

void nkp_alloc_fork_parent(void)
{
	pthread_mutex_unlock(&nkp_blk_lock);
}

void nkp_alloc_fork_child(void)
{
	pthread_mutex_init(&nkp_blk_lock, NULL);
	nkp_tracked_fork_child();
	nkp_blocks_fork_child();
}

void nkp_alloc_replay(void)
{
	nkp_enter();
	pthread_mutex_lock(&nkp_blk_lock);
	for (size_t i = 0; i < SITE_CAP; i++)
		nkp_sites[i].written = 0;
	for (size_t i = 0; i < BLK_CAP; i++) {
		struct blk *b = &blks[i];
		if (!b->addr)
			continue;
		nkp_site_write_id(b->site);
		write_alloc(b, 0);
	}
	nkp_blocks_replay_locked();
	pthread_mutex_unlock(&nkp_blk_lock);
	nkp_leave();
}
