/* SPDX-License-Identifier: BSD-3-Clause
 * Internal view of a placement plan for the layers that apply it (memory/).
 *
 * A plan is built by nk_plan_build() for one region address; it never holds
 * one entry per page.  Besides the public per-page queries (nk_plan_node,
 * nk_plan_nodes) the applier gets here:
 *   - the plan's geometry: kind, region address, first page, resolved node set;
 *   - runs: maximal stretches of pages on one node, found in O(1) each
 *     (nk__plan_run_at) and, for policies with O(nodes) runs (bind, block by
 *     pages or rows), the whole list at once (nk__plan_runs);
 *   - a kernel hint: when the whole region is ONE mbind call the kernel can
 *     express exactly (nk__plan_kernel_hint).
 * Everything here is pure and allocation-free; a built plan is immutable and
 * may be read by many threads at once.
 */
#ifndef NK_POLICY_PLAN_H
#define NK_POLICY_PLAN_H

#include <stddef.h>
#include <stdint.h>

/*
 * The run queries libnumakit_heap.so reads a plan through (src/heap/heap.c, a library of its own): exported
 * by libnumakit.so in NUMAKIT_PRIVATE (abi/libnumakit.map) under nk__ names, so that struct nk_plan and the
 * code that walks it stay in libnumakit.  Not API: libnumakit_heap and the libnumakit it links come from
 * one build.
 */
#define NK__PLAN_API __attribute__((visibility("default")))

#include "numakit.h"

/** Pages [first, first + npages) of the plan all go to @c node. */
struct nk__plan_run {
	size_t first;  /* page index in the plan (0 = the page holding the region's first byte) */
	size_t npages; /* > 0 */
	int node;      /* OS node id */
};

/** enum nk_policy_kind of the policy the plan was built from, or NK_EINVAL (NULL). */
int nk__plan_kind(const struct nk_plan *pl);

/** The region address the plan was built for (nk_region.addr), NULL for a NULL plan. */
void *nk__plan_addr(const struct nk_plan *pl);

/** Address of page 0: the region address rounded down to the plan's page size. */
uintptr_t nk__plan_base(const struct nk_plan *pl);

/**
 * The resolved node set in the order the policy uses it (after defaults,
 * cyclic_neighbors' neighbour choice, ...).  For block this is the node set,
 * not the per-thread list.  Returns 0 or NK_EINVAL.
 */
NK__PLAN_API int nk__plan_node_set(const struct nk_plan *pl, const int **nodes, size_t *n);

/**
 * Node of page @p page and, in *len (may be NULL), how many consecutive
 * pages from @p page on (bounded by the end of the plan) go to that same
 * node under the policy's own structure (1 for per-page policies such as
 * cyclic even when neighbours happen to agree; the rest of a block, column
 * band or weight run otherwise).  O(1), O(log) for run lists and weights.
 * Returns the node (>= 0), NK_EINVAL (out of range) or
 * NK_ENODATA (next_touch: no fixed node; *len then covers the whole rest).
 */
NK__PLAN_API int nk__plan_run_at(const struct nk_plan *pl, size_t page, size_t *len);

/**
 * The complete run list in page order, for plans whose runs are O(nodes):
 * bind (one run per node used) and block split by pages or rows (one run per
 * thread, adjacent runs on the same node merged).  The array belongs to the
 * plan.  Returns 0, or NK_ENODATA when the policy has no compact run list
 * (use nk__plan_run_at to walk it), NK_EINVAL.
 */
int nk__plan_runs(const struct nk_plan *pl, size_t *count, const struct nk__plan_run **runs);

/**
 * When the whole region can be placed by ONE mbind(mode, nodes) call over
 * [nk__plan_base, base + num_pages * page_size) with the kernel producing
 * exactly the plan's page -> node map on first touch, return 0 and fill:
 *   NK__MPOL_BIND, one node         every page on one node (any policy whose
 *                                   map is constant, e.g. bind that fits in
 *                                   its first node, or any M = 1 policy);
 *   NK__MPOL_INTERLEAVE, nodes      cyclic (or cyclic_neighbors, a one-page
 *                                   cyclic_block/block_cyclic, prime_mapp
 *                                   with P = M, weighted with all weights 1) when
 *                                   the kernel's interleave, which follows
 *                                   the absolute virtual page number (page at
 *                                   address a -> set[(a / pagesize) mod M],
 *                                   increasing ids), equals the policy's map;
 *   NK__MPOL_WEIGHTED_INTERLEAVE    weighted, likewise, when in addition the
 *                                   machine's system-wide weights
 *                                   (nk_machine_wi_weight) equal the policy's.
 * *nodes (owned by the plan, increasing ids) and *n describe the node set to
 * pass.  Mode values are those of src/os/os.h.  The hint assumes anonymous
 * memory in base pages (file mappings offset interleave by the file offset;
 * THP interleaves per huge page).
 * Returns 0, NK_ENODATA when no single call expresses the plan, NK_EINVAL.
 */
NK__PLAN_API int nk__plan_kernel_hint(const struct nk_plan *pl, int *mode, const int **nodes, size_t *n);

/**
 * A plan given directly as runs (the FGDLS migration: slices of pages ->
 * their threads' nodes).  @p runs must cover the pages of [addr, addr + len)
 * on @p m's page size in order: runs[0].first == 0, each run starting where
 * the previous one ends, npages > 0, the last ending at the region's page
 * count.  Adjacent runs on one node are merged.  A run's node without memory
 * or not allowed to the process is replaced by its nearest usable node, as
 * for block's thread nodes.  The plan is of kind NK_POLICY_BLOCK (one
 * contiguous block per run) and carries a BIND kernel hint when everything
 * lands on one node.
 * Errors: NK_EINVAL (NULL, len 0, runs that do not tile the region),
 * NK_ENODEV (a node the machine lacks), NK_EPERM (no usable node), NK_ENOMEM.
 */
int nk__plan_from_runs(const nk_machine *m, void *addr, size_t len, const struct nk__plan_run *runs, size_t nruns,
		       nk_plan **out, nk_error *err);

#endif
