/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/memory.h: applying a plan to memory (nk_apply), residency (nk_where) and NUMA arrays
 * (nk_array).  Part of the public API; include <numakit.h>, which includes it (it also compiles alone).
 * Conventions (errors, identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_MEMORY_H
#define NUMAKIT_MEMORY_H

#include "numakit/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================ placement
 * Applying a plan to memory and asking where memory is (Linux: mbind,
 * move_pages).  These are the only calls of this part that touch the system.
 */

/** Flags of nk_apply(). */
#define NK_APPLY_STRICT 0x1u   /**< fail with NK_ENOMEM instead of falling back to another node */
#define NK_APPLY_NO_MOVE 0x2u  /**< set the policy for future faults only; leave resident pages (misplaced
				  resident pages are then counted in no field) */
#define NK_APPLY_ALLFLAGS 0x3u

/** What an application did. */
typedef struct nk_apply_result {
	size_t pages;           /**< pages in the region */
	size_t pages_untouched; /**< not yet faulted in: placed by policy at first touch */
	size_t pages_in_place;  /**< resident on their target already */
	size_t pages_moved;     /**< migrated to their target */
	size_t pages_fallback;  /**< placed on another node than planned (full or refused node) */
	size_t pages_failed;    /**< could not be placed (busy, pinned); the data is intact */
	size_t syscalls;        /**< system calls made (range check, residency queries, madvise, mbind, move_pages) */
	int fallback_node;      /**< a node that received fallback pages, -1 if none */
} nk_apply_result;

/**
 * Make the region's pages follow @p pl: untouched pages through the fewest
 * mbind calls the kernel can express; resident pages through batched
 * move_pages carrying only the pages not already on their target.  A target
 * without free memory or not allowed falls back to the nearest allowed node
 * with room, counted in the result (NK_APPLY_STRICT refuses instead).
 * Contents are preserved bit for bit.  @p res may be NULL.
 * Errors: NK_EINVAL (flags, plan not built for this address, a next_touch
 * plan: use nk_next_touch_arm), NK_ENOSYS
 * (kernel without NUMA system calls), NK_EPERM, NK_ENOMEM (strict and a
 * target node is full).
 * Thread safety: concurrent calls on disjoint regions are safe.
 * @since 0.1
 */
NK_API int nk_apply(const nk_machine *m, const nk_plan *pl, void *addr, unsigned flags, nk_apply_result *res,
		    nk_error *err);

/**
 * Residency: the node of each page of [addr, addr+len) into @p nodes (one
 * entry per page; -1 for a page never touched) and/or the page count per node
 * into @p counts indexed like nk_machine_node_id() with one extra last slot
 * for untouched pages (either may be NULL).  Batched move_pages queries.
 * Errors: NK_EINVAL (a hole in the range), NK_ENODEV (a page on a node the
 * machine does not have), NK_ENOSYS, NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_where(const nk_machine *m, const void *addr, size_t len, int *nodes, size_t *counts);

/* ================= arrays (NUMA arrays, Minas MAi)
 *
 * An nk_array is a 1D, 2D or 3D array of fixed-size elements in its own
 * anonymous mapping, so no two arrays (and nothing else) share a page and a
 * policy placed on one array never moves another's data.  Storage is
 * contiguous and row-major; for 2D and 3D arrays a separate small table of
 * row pointers lets C code write a[i][j] (2D: an array of dims[0] pointers
 * into the data; 3D: dims[0] plane pointers to tables of dims[1] row
 * pointers).  The tables are not in the data mapping: placing the data never
 * moves them, and residency queries of the data never count them.
 *
 * Alignment: the first data page's absolute page number is a multiple of
 * lcm(1..N) pages, N = the machine's node count (or of N alone when that lcm
 * exceeds 64 MiB of address space), so the kernel's interleave, which
 * follows absolute page numbers, places page i of the array on node
 * i mod M of any M-node set in one mbind call.  Only address space is
 * over-reserved, and it is returned at once.
 *
 * The array remembers its geometry, so row, column, plane and
 * block_exclusive policies need no extra arguments: nk_array_apply() builds
 * the plan over nk_array_region() and applies it, and keeps per-array
 * statistics (policy history, pages moved, fallbacks).
 *
 * Transparent huge pages: with THP "always" the kernel may back the array
 * with 2 MiB pages at first touch, and a policy then places 512 base pages
 * at a time.  NK_ARRAY_NO_THP asks the kernel for base pages in this array
 * (madvise MADV_NOHUGEPAGE), so every page follows its policy exactly.
 *
 * Thread safety: allocation, free and nk_array_from() may run concurrently
 * in any threads (a lock guards the registry of live arrays, the one piece
 * of process-wide state of this part).  nk_array_apply() on different arrays
 * runs in parallel; on the same array calls are serialised by a per-array
 * lock.  Reading and writing the elements is the program's business.  An
 * array must not be freed while another thread still uses it, as with free().
 * The machine passed to nk_array_alloc() must outlive the array.
 */
typedef struct nk_array nk_array;

/** Flags of nk_array_alloc(). */
#define NK_ARRAY_NO_THP 0x1u   /**< base pages only (madvise MADV_NOHUGEPAGE) */
#define NK_ARRAY_ALLFLAGS 0x1u

/**
 * Allocate an array of @p ndims (1..3) dimensions @p dims (outermost first)
 * of @p elem_size-byte elements on machine @p m.  The memory is untouched
 * (no page is resident, contents read as zero), so a policy applied before
 * the first write places pages without migrating them.
 * Errors: NK_EINVAL (NULL argument, elem_size 0, ndims outside 1..3, a zero
 * dimension, a size that overflows size_t, an unknown flag); NK_ENOMEM (the
 * mapping or the tables could not be allocated).  Nothing is allocated on
 * failure.
 * @since 0.1
 */
NK_API int nk_array_alloc(const nk_machine *m, size_t elem_size, int ndims, const size_t dims[],
			  unsigned flags, nk_array **out);

/** Free the array, its tables and its mapping; NULL is a no-op.  @since 0.1 */
NK_API void nk_array_free(nk_array *a);

/** First element (page-aligned), or NULL for a NULL array.  @since 0.1 */
NK_API void *nk_array_data(const nk_array *a);

/**
 * The pointer a C program indexes: for 1D the data itself (T *), for 2D the
 * row table (T **, a[i][j]), for 3D the plane table (T ***, a[i][j][k]).
 * Assign it to a pointer of the right type; NULL for a NULL array.
 * @since 0.1
 */
NK_API void *nk_array_rows(const nk_array *a);

/** The data as a region with its geometry (addr, len, elem_size, ndims, dims).  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_array_region(const nk_array *a, nk_region *out);

/**
 * The live array whose data or pointer tables contain @p addr, or NULL when
 * @p addr belongs to no numakit array (memory from malloc, mmap, the stack,
 * a freed array).  Use it where geometry is needed for memory known only by
 * a pointer: nk_array_apply(nk_array_from(p), ...) fails with NK_EINVAL for a
 * pointer that is not a numakit array.
 * @since 0.1
 */
NK_API nk_array *nk_array_from(const void *addr);

/**
 * Build the plan of @p p over the array's region on the array's machine and
 * apply it (nk_plan_build() + nk_apply(); @p flags and @p res as nk_apply()),
 * then record it in the array's statistics.  May be called again at any time
 * (a new program phase): resident pages are migrated as needed.
 * Errors: NK_EINVAL (@p a or @p p NULL: "not a numakit array"), and those of
 * nk_plan_build() and nk_apply().  A failed call records nothing.
 * @since 0.1
 */
NK_API int nk_array_apply(nk_array *a, const nk_policy *p, unsigned flags, nk_apply_result *res, nk_error *err);

/** Residency of the array's data: as nk_where() over nk_array_region().  @since 0.1 */
NK_API int nk_array_where(const nk_array *a, int *nodes, size_t *counts);

/** How many policies an array remembers in its history (the most recent ones). */
#define NK_ARRAY_HISTORY_MAX 64

/** Per-array statistics, summed over every successful nk_array_apply(). */
typedef struct nk_array_stats {
	size_t applications;   /**< successful nk_array_apply() calls */
	size_t history;        /**< policies kept in the history: min(applications, NK_ARRAY_HISTORY_MAX) */
	size_t pages_moved;    /**< pages migrated */
	size_t pages_fallback; /**< pages placed on another node than planned */
	size_t pages_failed;   /**< pages that could not be placed */
	size_t syscalls;       /**< mbind + move_pages calls made */
	int last_fallback_node; /**< the last node that received fallback pages, -1 if none */
} nk_array_stats;

/** Fill @p out.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_array_stats_get(const nk_array *a, nk_array_stats *out);

/**
 * The canonical text (nk_policy_format) of history entry @p idx, 0 = the
 * oldest kept, stats.history - 1 = the current policy; snprintf semantics.
 * Errors: NK_EINVAL (NULL array, idx out of range).
 * @since 0.1
 */
NK_API int nk_array_history(const nk_array *a, size_t idx, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_MEMORY_H */
