/* SPDX-License-Identifier: BSD-3-Clause
 * The real allocation functions behind numakit's interposing preload libraries (libnumakit_prof:
 * preload/prof/alloc.c, libnumakit_plan: preload/advice/alloc.c): their pointers, found with
 * dlsym(RTLD_NEXT) the first time they are needed, and the static arena that serves dlsym's own
 * allocations while they are not known yet.  Each library includes this once, in the file that
 * interposes malloc & co.: the definitions are static, one copy per library.
 * NK_INTERPOSE_BOOT_BYTES (defined before including) sizes the arena, 32 KiB by default.
 */
#ifndef NK_PRELOAD_INTERPOSE_H
#define NK_PRELOAD_INTERPOSE_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#ifndef NK_INTERPOSE_BOOT_BYTES
#define NK_INTERPOSE_BOOT_BYTES (32 * 1024)
#endif

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

static atomic_int resolved; /* 0 no, 1 resolving, 2 done */

/* dlsym may allocate (calloc for its error state) before the real functions are known: a static arena,
 * never freed, never reused (so its memory is zeroed). */
static _Alignas(16) char boot[NK_INTERPOSE_BOOT_BYTES];
static atomic_size_t boot_used;

static inline void *boot_alloc(size_t n)
{
	n = (n + 16 + 15) & ~(size_t)15;
	size_t at = atomic_fetch_add(&boot_used, n);
	if (at + n > sizeof boot)
		return NULL;
	*(size_t *)(boot + at) = n - 16;
	return boot + at + 16;
}

static inline int is_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

/* Find the real functions once; a second thread waits for the first. */
static inline void interpose_resolve(void)
{
	int z = 0;
	if (!atomic_compare_exchange_strong(&resolved, &z, 1)) {
		while (atomic_load(&resolved) != 2)
			;
		return;
	}
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	real_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
	real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
	atomic_store(&resolved, 2);
}

#endif
