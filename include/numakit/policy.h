/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/policy.h: placement policies and the plans they yield (the node of every page of a region).
 * Part of the public API; include <numakit.h>, which includes it (it also compiles alone).  Conventions
 * (errors, identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_POLICY_H
#define NUMAKIT_POLICY_H

#include "numakit/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* =============================================================== policies
 *
 * A policy is a value: a kind, a node set and parameters.  Given a machine
 * and a region (an address range with optional geometry) it yields a plan,
 * the node of every page, without touching memory.  Policies are pure and
 * deterministic (random takes a seed).  Applying a plan is separate
 * (nk_apply), so a policy can be re-applied at every program phase.
 *
 * Page i below is the i-th page of the region counted from the page that
 * holds its first byte; M is the size of the policy's node set.
 */
typedef struct nk_policy nk_policy;

enum nk_policy_kind {
	NK_POLICY_BIND = 0,             /**< all pages on the node set, filling nodes in order (Minas bind_all) */
	NK_POLICY_BLOCK = 1,            /**< one contiguous block per thread (or per node), block t on thread t's node */
	NK_POLICY_CYCLIC = 2,           /**< page i -> node[i mod M] */
	NK_POLICY_CYCLIC_BLOCK = 3,     /**< block of b pages j -> node[j mod M] */
	NK_POLICY_CYCLIC_NEIGHBORS = 4, /**< cyclic over the home node and its nearest neighbours by NUMA factor */
	NK_POLICY_SKEW_MAPP = 5,        /**< page i -> node[(i + floor(i/M) + 1) mod M] */
	NK_POLICY_PRIME_MAPP = 6,       /**< cyclic over P >= M virtual banks (P prime), then virtual -> real cyclic */
	NK_POLICY_RANDOM = 7,           /**< seeded, reproducible uniform choice per page */
	NK_POLICY_BLOCK_CYCLIC = 8,     /**< blocks of a given byte size round robin (Majo & Gross) */
	NK_POLICY_BLOCK_EXCLUSIVE = 9,  /**< 2D latin square: block (r,c) of a p x p grid -> node[(r + c) mod p] */
	NK_POLICY_WEIGHTED = 10,        /**< weighted interleave: node k gets w_k of every sum(w) pages */
	NK_POLICY_NEXT_TOUCH = 11,      /**< each page moves to the node of the next thread touching it */
	NK_POLICY_KIND_COUNT = 12
};

/** How NK_POLICY_BLOCK cuts a region with geometry. */
enum nk_split {
	NK_SPLIT_PAGES = 0,  /**< equal runs of pages (any region) */
	NK_SPLIT_ROWS = 1,   /**< whole rows (2D) or planes (3D) per block: dims[0] is divided */
	NK_SPLIT_COLS = 2,   /**< whole columns (2D, row-major): dims[1] is divided, page-granular */
};

/**
 * Parse a policy from text, the form used by the CLI and plans:
 *   KIND[:key=value[,key=value...]]   e.g.
 *   "cyclic:nodes=0-3"   "cyclic_block:block=64K"   "bind:nodes=2"
 *   "block:split=rows"   "skew_mapp"   "prime_mapp:prime=7"   "random:seed=42"
 *   "block_cyclic:block=1M,nodes=0,2"   "weighted:weights=0=3/1=1"
 *   "cyclic_neighbors:home=1,count=2"   "block_exclusive"   "next_touch"
 * Keys not given keep their defaults (nodes: every node with memory that the
 * process may use).  Errors: NK_EPARSE naming the token, NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_policy_parse(const char *text, nk_policy **out, nk_error *err);
/** A policy of @p kind with default parameters.  Errors: NK_EINVAL, NK_ENOMEM.  @since 0.1 */
NK_API int nk_policy_create(int kind, nk_policy **out);
/** Deep copy.  Errors: NK_EINVAL, NK_ENOMEM.  @since 0.1 */
NK_API int nk_policy_copy(const nk_policy *p, nk_policy **out);
/** Free a policy; NULL is a no-op.  @since 0.1 */
NK_API void nk_policy_free(nk_policy *p);
/** The kind, or NK_EINVAL.  @since 0.1 */
NK_API int nk_policy_kind(const nk_policy *p);
/** Canonical text form (parses back to an equal policy); snprintf semantics.  @since 0.1 */
NK_API int nk_policy_format(const nk_policy *p, char *buf, size_t cap);

/*
 * Setters: each returns NK_EINVAL for a kind it does not apply to, and
 * 0/-1 values reset to the default (nodes n = 0, home -1, count 0, prime 0).
 */
/**
 * Node set, in the order the policy uses (n = 0: the default set). Errors: NK_EINVAL (negative id, duplicate).
 * @since 0.1
 */
NK_API int nk_policy_set_nodes(nk_policy *p, const int *nodes, size_t n);
/**
 * Block size in bytes for cyclic_block / block_cyclic (rounded up to whole pages). Errors: NK_EINVAL (0).
 * @since 0.1
 */
NK_API int nk_policy_set_block(nk_policy *p, uint64_t bytes);
/** Weights (1..255) per node for NK_POLICY_WEIGHTED.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_policy_set_weights(nk_policy *p, const int *nodes, const unsigned *weights, size_t n);
/** Seed of NK_POLICY_RANDOM.  @since 0.1 */
NK_API int nk_policy_set_seed(nk_policy *p, uint64_t seed);
/** Home node of cyclic_neighbors (default: the caller's node when the plan is built).  @since 0.1 */
NK_API int nk_policy_set_home(nk_policy *p, int node);
/**
 * How many nodes cyclic_neighbors uses, home included (default: home + nodes at the smallest remote factor).
 * @since 0.1
 */
NK_API int nk_policy_set_count(nk_policy *p, int count);
/** Prime P of prime_mapp (default: the smallest prime >= M).  Errors: NK_EINVAL (not prime, < M).  @since 0.1 */
NK_API int nk_policy_set_prime(nk_policy *p, int prime);
/**
 * Threads of NK_POLICY_BLOCK: block t goes to @p thread_nodes[t] (default: one
 * block per node of the set).  A thread on a memoryless or disallowed node
 * gets the nearest usable node.  Giving both threads and nodes is NK_EINVAL.
 * @since 0.1
 */
NK_API int nk_policy_set_threads(nk_policy *p, const int *thread_nodes, size_t nthreads);
/** enum nk_split of NK_POLICY_BLOCK.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_policy_set_split(nk_policy *p, int split);

/** An address range and, optionally, its geometry (row-major, outermost first). */
typedef struct nk_region {
	void *addr;       /**< first byte */
	size_t len;       /**< bytes (> 0) */
	size_t elem_size; /**< bytes per element, 0 = no geometry */
	int ndims;        /**< 0 (flat), 1, 2 or 3 */
	size_t dims[3];   /**< extents, outermost first; product * elem_size == len */
} nk_region;

/** The node of every page of a region under a policy. */
typedef struct nk_plan nk_plan;

/**
 * Build the plan of @p p over @p r on @p m.  Compact: memory is O(nodes +
 * blocks), never O(pages), except for policies that are genuinely per page
 * (random keeps only its seed and recomputes).
 * The plan is tied to r->addr (nk_apply refuses another address); addr may be
 * NULL for an address-free plan (page 0 = the region's first byte).  The
 * default node set leaves out nodes without memory; a memoryless node named
 * explicitly is an error.
 * Errors: NK_EINVAL (bad region, geometry the policy needs is missing, a
 * memoryless node in the set, an empty default set); NK_ENODEV (a node the
 * machine lacks); NK_EPERM (a node the process may not use); NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_plan_build(const nk_machine *m, const nk_policy *p, const nk_region *r, nk_plan **out, nk_error *err);
/** Free a plan; NULL is a no-op.  @since 0.1 */
NK_API void nk_plan_free(nk_plan *pl);
/** Number of pages the plan covers.  @since 0.1 */
NK_API size_t nk_plan_num_pages(const nk_plan *pl);
/** Page size the plan was built for.  @since 0.1 */
NK_API uint64_t nk_plan_page_size(const nk_plan *pl);
/**
 * Node of page @p page (0-based); NK_EINVAL when out of range; NK_ENODATA for next_touch (no fixed node).
 * @since 0.1
 */
NK_API int nk_plan_node(const nk_plan *pl, size_t page);
/**
 * Nodes of pages [first, first + n) into @p nodes, in O(n) without per-call
 * allocation (the fast path for appliers and tests).  Errors: NK_EINVAL;
 * NK_ENODATA for next_touch (nothing written).
 * @since 0.1
 */
NK_API int nk_plan_nodes(const nk_plan *pl, size_t first, size_t n, int *nodes);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_POLICY_H */
