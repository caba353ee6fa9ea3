/* SPDX-License-Identifier: BSD-3-Clause
 * Between the profiler's allocation-tracking files only (alloc.c, tracked.c, sites.c, blocks.c), split from
 * one alloc.c (issue 15); the rest of the runtime sees prof.h alone.  Every name here is hidden (the target's
 * visibility preset): the .so exports the same interposers as before.
 *
 * The real functions and the dlsym arena (../common/interpose.h: per-file statics) exist once, in alloc.c:
 * the other files reach mmap/munmap only through nkp_real_mmap/nkp_real_munmap and never include
 * interpose.h.  One lock, nkp_blk_lock (alloc.c), guards the block table, the registry's writers, the sites,
 * the skipped objects and the small blocks.
 */
#ifndef NK_PRELOAD_PROF_ALLOC_IMPL_H
#define NK_PRELOAD_PROF_ALLOC_IMPL_H

#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof.h"

/* ---- alloc.c ---- */
/** The real mmap/munmap behind the interposers (found by interpose_resolve before anything is tracked). */
void *nkp_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int nkp_real_munmap(void *addr, size_t len);
/** The tracking lock: the block table, registry writers, sites, skipped objects, small blocks. */
extern pthread_mutex_t nkp_blk_lock;

/* The call stack of the current allocation (without tracking the unwinder's own allocations). */
#define STACK(fr, n)                                                                                                \
	void *fr[NK__NKP_MAX_DEPTH + 8];                                                                            \
	nkp_enter();                                                                                                \
	int n = backtrace(fr, (int)(sizeof fr / sizeof fr[0]));                                                     \
	nkp_leave()

/* ---- tracked.c: the tracked-range registry (writers hold nkp_blk_lock) ---- */
int nkp_range_add(uintptr_t blo, uintptr_t bhi, uintptr_t lo, uintptr_t hi);
void nkp_range_remove(uintptr_t blo, uintptr_t bhi);
int nkp_range_overlaps(uintptr_t lo, uintptr_t hi);
int nkp_heap_cover(uintptr_t lo, uintptr_t hi, uintptr_t *nlo, uintptr_t *nhi);
/** The program break when the runtime started (set by nkp_alloc_start): no heap range below it. */
extern uintptr_t nkp_heap_floor;
/** Child after fork: no reader is inside the set any more. */
void nkp_tracked_fork_child(void);

/* ---- sites.c: allocation sites (nkp_blk_lock held) ---- */
#define SITE_CAP 4096
struct site {
	uint64_t hash;
	uint32_t id, depth;
	int written; /* SITE record in the current part */
	int skip;    /* small blocks of this site are not recorded: called from a runtime (nkp_skip_obj) */
	uint64_t ip[NK__NKP_MAX_DEPTH];
};
extern struct site nkp_sites[SITE_CAP];
extern uintptr_t nkp_self_lo, nkp_self_hi; /* the runtime's own object */
#define SKIP_CAP 64
struct nkp_skip_obj {
	uintptr_t lo, hi;
};
extern struct nkp_skip_obj nkp_skip_obj[SKIP_CAP]; /* filled by alloc.c's statics_cb */
extern size_t nkp_n_skip_obj;
/** dl_iterate_phdr callback: sets nkp_self_lo/hi to the object holding the address @p arg. */
int nkp_find_self(struct dl_phdr_info *info, size_t size, void *arg);
uint32_t nkp_site_of(void *const *fr, int n, int *skip);
/** The SITE record of site @p id (0: none), unless this part has it already (a fork child's replay).
 * nkp_blk_lock held. */
void nkp_site_write_id(uint32_t id);

/* ---- blocks.c: small blocks (issue 19) ---- */
void nkp_small_here(void *p, size_t n, uint32_t kind);
void nkp_maybe_small_free(void *p);
int nkp_want_small(size_t n);
/** Child after fork (nkp_alloc_replay, nkp_blk_lock held): the live small blocks into the new part. */
void nkp_blocks_replay_locked(void);
/** Child after fork: the parent's batched events and counters are dropped. */
void nkp_blocks_fork_child(void);

#endif
