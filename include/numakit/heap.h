/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/heap.h: heaps whose memory follows a placement policy (per-node heaps), with a malloc-like
 * interface.  Part of the public API, in a library of its own: libnumakit_heap (-lnumakit_heap, pkg-config
 * numakit-heap, CMake numakit::heap), which links libnumakit and is built only where jemalloc is.  Not
 * included by <numakit.h>: include this header yourself (it includes what it needs of numakit).
 * Conventions (errors, identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: experimental.  Declared only when NUMAKIT_EXPERIMENTAL is defined before this header is
 * included.  The functions are exported by libnumakit_heap.so (version node NUMAKIT_HEAP_0.2), but their
 * signatures, types and behaviour may change in any release, even a patch release: use them from code
 * built together with the numakit it links.  @since on each function names the release that introduced it.
 */
#ifndef NUMAKIT_HEAP_H
#define NUMAKIT_HEAP_H

#include "numakit/policy.h"

#endif /* NUMAKIT_HEAP_H */

/* The declarations exist only with NUMAKIT_EXPERIMENTAL.  They have their own guard, outside
 * the header's, so that including the header again with the macro defined adds them after a
 * first inclusion without it (as zstd.h does with ZSTD_STATIC_LINKING_ONLY). */
#if defined(NUMAKIT_EXPERIMENTAL) && !defined(NUMAKIT_HEAP_EXPERIMENTAL_H)
#define NUMAKIT_HEAP_EXPERIMENTAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ heaps
 * A heap is an allocator of many small or large objects whose pages follow
 * a policy (docs/heap.md): one node ("bind:nodes=1"), a node set, an
 * interleave ("cyclic:nodes=0-3"), weights ("weighted:weights=0=3/1=1"),
 * blocks of pages round robin ("cyclic_block:block=64K") ...  Objects are
 * allocated, resized and freed as with malloc; the pages they live on are
 * placed by the policy as the heap commits them.
 *
 * Placement.  Each heap reserves one range of address space (its capacity,
 * up to 64 GiB; less under a limit on address space) and the policy is laid
 * over that range page by page, in address order: page i of the range goes
 * where the policy puts page i of a region as long as the range.  So
 * "cyclic" interleaves the heap's pages over the nodes (neighbouring objects
 * of one page share its node; an object of k pages spans k nodes), and
 * "cyclic_block:block=B" gives every node B bytes of the range in turn.
 * Kinds whose map depends on the length of the region refuse a heap, which
 * has none: block and block_exclusive (NK_EINVAL: use bind on one node, one
 * heap per node, or cyclic_block); next_touch has no node (NK_EINVAL).  Bind
 * over several nodes puts every page on one of them, the one the kernel
 * picks (the nearest to the touching cpu with room), not filling them in
 * order.  Without NK_HEAP_STRICT a full node falls back to another node, as
 * nk_apply() does; with it the allocation fails with NK_ENOMEM.
 *
 * Costs.  A policy the kernel expresses in one call (one node, a set,
 * cyclic over nodes in increasing order, weighted when the machine's weights
 * are the policy's) is set once over the whole range when the heap is made:
 * later allocations make no system call of numakit's.  Other policies
 * (cyclic_block, block_cyclic, skew_mapp, random, a cyclic set in another
 * order ...) place each extent when the heap commits it, three system calls
 * per run of pages on one node, and fault the extent in at that moment.
 *
 * Thread safety.  Every function may be called from any thread at once on
 * the same heap, except nk_heap_destroy(), which must not overlap any other
 * use of that heap (as free()).  Each thread gets a cache of free small
 * objects per heap (for its first 8 heaps in use), the fast path: no lock,
 * no system call.  A pointer may be freed by another thread than the one
 * that allocated it.
 *
 * Availability.  Heaps are built on jemalloc (its arenas and extent hooks),
 * a private copy inside libnumakit_heap.  A numakit built without jemalloc
 * has no libnumakit_heap (no numakit-heap.pc, no numakit::heap target).
 * libnumakit_heap.so loads when a program links it; loaded with dlopen()
 * it may need GLIBC_TUNABLES=glibc.rtld.optional_static_tls=8192 in the
 * loading process's environment (jemalloc's initial-exec TLS; docs/heap.md).
 */
typedef struct nk_heap nk_heap;

/** Flags of nk_heap_create(). */
#define NK_HEAP_STRICT 0x1u /**< pages only where the policy says: a full node fails the allocation (NK_ENOMEM) */
#define NK_HEAP_ALLFLAGS 0x1u

/** At most this many nodes in nk_heap_stats. */
#define NK_HEAP_STATS_NODES 64

/** What nk_heap_stats_get() reports.  Counts are kept by every thread as it goes; live bytes are the allocator's. */
typedef struct nk_heap_stats {
	uint64_t reserved;        /**< bytes of address space reserved: the heap's capacity */
	uint64_t mapped;          /**< bytes of the reservation handed to the allocator so far (metadata included) */
	uint64_t committed;       /**< of those, bytes the allocator holds committed (in use or cached free) */
	uint64_t resident;        /**< bytes resident now (pages touched): the sum of node_bytes */
	uint64_t objects;         /**< live objects */
	uint64_t usable;          /**< bytes of size classes handed out: the live objects' usable sizes, and free
				       objects waiting in threads' caches (at most a few hundred KiB per thread) */
	uint64_t allocs;          /**< allocations made (a realloc counts one, and frees one) */
	uint64_t frees;           /**< frees made */
	uint64_t requested_total; /**< bytes asked for over every allocation made */
	uint64_t usable_total;    /**< bytes given for them (size classes round up) */
	double fragmentation;     /**< share of the resident bytes no object uses: 1 - usable / resident (0 if below) */
	uint64_t unplaced;        /**< bytes whose policy could not be set when committed (fallback to first touch) */
	size_t nnodes;            /**< entries of node[] and node_bytes[]: the machine's nodes */
	int node[NK_HEAP_STATS_NODES];            /**< node ids */
	uint64_t node_bytes[NK_HEAP_STATS_NODES]; /**< bytes of the heap resident on node[k] */
} nk_heap_stats;

/**
 * Make a heap whose pages follow @p p on machine @p m (which must outlive
 * the heap; the policy is copied).  @p flags: NK_HEAP_*.  Nothing is
 * resident until objects are allocated.
 * Errors: NK_EINVAL (NULL, unknown flag, a kind a heap cannot take: block,
 * block_exclusive, next_touch; the message says why), NK_ENODEV, NK_EPERM
 * (the policy's nodes, as nk_plan_build), NK_ENOMEM (no address space or
 * memory for the heap), NK_ENOSYS (the kernel refuses the policy).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_create(const nk_machine *m, const nk_policy *p, unsigned flags, nk_heap **out, nk_error *err);

/**
 * Destroy a heap: every object it holds is freed and its address space
 * returned.  NULL is a no-op.  No other call may use the heap meanwhile or
 * after.
 * @since 0.2 (experimental)
 */
NK_API void nk_heap_destroy(nk_heap *h);

/**
 * Allocate @p size bytes (aligned for any type, as malloc) into *out.
 * Errors: NK_EINVAL (NULL, size 0), NK_ENOMEM (the heap is full, the
 * memory is short, a strict node is full, or the size exceeds the heap's
 * capacity).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_alloc(nk_heap *h, size_t size, void **out);

/**
 * Allocate @p n objects of @p size bytes, zeroed, into *out.
 * Errors: NK_EINVAL (NULL, n or size 0), NK_ENOMEM (as nk_heap_alloc, or n * size overflows).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_calloc(nk_heap *h, size_t n, size_t size, void **out);

/**
 * Resize the object @p p (NULL: allocate) to @p size bytes; its contents are
 * kept up to the smaller size, bit for bit.  *out receives the object, which
 * may have moved (@p p is then freed).  On failure @p p is left as it was.
 * Errors: NK_EINVAL (NULL h or out, size 0, @p p not in this heap),
 * NK_ENOMEM.
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_realloc(nk_heap *h, void *p, size_t size, void **out);

/**
 * Allocate @p size bytes aligned to @p align (a power of two) into *out.
 * Errors: NK_EINVAL (NULL, size 0, align not a power of two), NK_ENOMEM
 * (also: align larger than the heap's capacity).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_aligned_alloc(nk_heap *h, size_t align, size_t size, void **out);

/**
 * Free @p p (NULL: nothing, 0).  A pointer outside the heap's address range
 * is refused and nothing happens; a pointer inside it that is not a live
 * object of the heap (freed already, or into the middle of one) is undefined,
 * as with free().
 * Errors: NK_EINVAL (NULL h, @p p not in this heap).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_free(nk_heap *h, void *p);

/**
 * The usable size of object @p p into *out (at least the size asked for:
 * the size class).  Errors: NK_EINVAL (NULL, @p p not in this heap).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_usable_size(const nk_heap *h, const void *p, size_t *out);

/**
 * 1 when @p p lies in the heap's address range (one range check: it says
 * nothing of whether an object is live there), 0 when it does not, NK_EINVAL
 * for a NULL heap.
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_owns(const nk_heap *h, const void *p);

/**
 * The live heap whose address range contains @p p, or NULL when no heap's
 * does (memory from malloc, mmap, the stack, a destroyed heap).  A scan of the live heaps under the
 * heaps' registry lock: O(heaps).  The answer is stale once another thread
 * destroys that heap.
 * @since 0.2 (experimental)
 */
NK_API nk_heap *nk_heap_from(const void *p);

/**
 * The heap's reserved address range: [*addr, *addr + *len).  Page i of the
 * range is page i of the policy's plan (nk_plan_build over this region gives
 * the node of every page).  Either pointer may be NULL.  Errors: NK_EINVAL.
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_region(const nk_heap *h, void **addr, size_t *len);

/**
 * Statistics of the heap into *out: its object and byte counts, and where
 * its pages are resident now, per node (a residency query of every page
 * the allocator was handed: O(pages), batched move_pages, as nk_where).
 * Counts of objects are consistent only while no other thread uses the
 * heap.  Errors: NK_EINVAL, NK_ENOMEM, NK_ENOSYS (the residency query).
 * @since 0.2 (experimental)
 */
NK_API int nk_heap_stats_get(const nk_heap *h, nk_heap_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_HEAP_EXPERIMENTAL_H */
