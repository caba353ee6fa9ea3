/* SPDX-License-Identifier: BSD-3-Clause
 * Share frames: carrying what one rank of a job did on its share of the machine over to another rank's
 * share (docs/plan.md "Plans for the ranks of a job").  A job's ranks on shares of the same size are
 * pooled in the frame of the first rank's share (src/profile/job_share.c), and a plan made there is
 * resolved onto each rank's own share when it runs (nk_advice_resolve_share).  Both sides use the one
 * rule below, so that a plan means the same node wherever it was made and applied.  Pure.
 */
#ifndef NK_JOB_SHARE_H
#define NK_JOB_SHARE_H

#include <stddef.h>

/*
 * The node map of one frame onto another: share @p from (@p n sorted distinct node ids) goes onto share
 * @p to (@p n sorted distinct ids) position by position (from[i] -> to[i]), and the machine's other
 * nodes (those of @p all, @p n_all distinct ids in any order, that are not in the share) go onto the
 * nodes of @p all outside @p to, both taken in increasing id order.  The result is a permutation of
 * @p all: map[i] is the image of all[i].  Returns 0, or NK_EINVAL (n 0 or above n_all, a share id not in
 * @p all, unsorted or repeated ids); @p map is untouched on error.
 */
int nk__share_node_map(const int *all, size_t n_all, const int *from, const int *to, size_t n, int *map);

/* The image of node @p node under a map of nk__share_node_map (@p all, @p map, @p n_all); @p node itself
 * when it is not in @p all (a negative "unknown" stays unknown). */
int nk__share_map_node(const int *all, const int *map, size_t n_all, int node);

#endif
