/* SPDX-License-Identifier: BSD-3-Clause
 * Internal: the memory feature layer (applying plans, residency queries).
 *
 * The placement logic talks to the kernel through a small table of
 * operations so that unit tests can run it against a simulated multi-node
 * machine (tests/unit/test_memory_fake.c) on a one-node host, with the same
 * code the library runs on the live system (nk__memops_os).
 */
#ifndef NK_MEMORY_H
#define NK_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

/** Pages per move_pages call (query and move); see docs/placement.md for the measurements. */
#define NK__MEM_BATCH 1024

/**
 * What the placement code asks of the kernel.  Each returns 0 (or a count)
 * or the kernel's -errno: the fallback logic of apply.c reasons about the
 * errno itself (ENOMEM, EACCES, EBUSY ...).  The live table (where.c) takes
 * it from the *sys_errno of src/os/os.h's calls, which return NK_E* codes.
 */
struct nk__memops {
	/* move_pages(2) of the calling process: nodes NULL queries */
	long (*move_pages)(void *ctx, unsigned long count, void **pages, const int *nodes, int *status);
	/* mbind(2) without MPOL_MF_* flags */
	int (*mbind)(void *ctx, void *addr, size_t len, int mode, const int *nodes, size_t n);
	/* MADV_POPULATE_WRITE */
	int (*populate)(void *ctx, void *addr, size_t len);
	/* 0 when the range is mapped */
	int (*mapped)(void *ctx, const void *addr, size_t len);
	/* free memory of a node right now (NK_E* code on failure) */
	int (*node_meminfo)(void *ctx, int node, uint64_t *total, uint64_t *free_bytes);
	/* wait before retry @p round (0, 1, ...) of pages the kernel had busy;
	 * NULL: retry at once */
	void (*backoff)(void *ctx, int round);
	/* base page size */
	size_t page_size;
	void *ctx;
};

/** The live system's operations (src/os/). */
extern const struct nk__memops nk__memops_os;

/**
 * nk_where() over @p ops with @p batch pages per query.  Same contract as
 * nk_where(); @p syscalls (may be NULL) receives the number of calls made.
 */
int nk__where_ops(const nk_machine *m, const void *addr, size_t len, int *nodes, size_t *counts,
		  const struct nk__memops *ops, size_t batch, size_t *syscalls);

/**
 * nk_apply() over @p ops with @p batch pages per move_pages call (0 = the
 * default).  Same contract as nk_apply().
 */
int nk__apply_ops(const nk_machine *m, const nk_plan *pl, void *addr, unsigned flags, nk_apply_result *res,
		  nk_error *err, const struct nk__memops *ops, size_t batch);

/** Translate -errno from a memory system call into an NK_E* code. */
int nk__mem_errno(long rc);

#endif
