/* SPDX-License-Identifier: BSD-3-Clause
 * Rank mapping (issue 14 §3, docs/profile.md "Rank mapping"): which rank of a job runs in which slot (a
 * host and a NUMA node of it), so that the ranks that exchange the most bytes sit close, as TreeMatch and
 * Minas' NumaLB do.  The slots are those the job ran in (as many as ranks, each node keeping its number of
 * ranks: the load per node and host stays as the launcher balanced it); only who sits where changes.
 * Pure and deterministic: the caller builds the problem from a job profile (src/advise/rankmap_job.c).
 */
#ifndef NK_JOB_RANKMAP_H
#define NK_JOB_RANKMAP_H

#include <stddef.h>

#define NK__RM_MAX_RANKS 4096 /* the slot distance matrix is n x n doubles */

/* Traffic between two ranks, both directions summed (bytes). */
struct nk__rm_edge {
	int a, b; /* ranks, a != b */
	double bytes;
};

struct nk__rm_problem {
	int n;                             /* ranks = slots, 1 .. NK__RM_MAX_RANKS */
	const double *dist;                /* [n * n]: cost of one byte between slots s and t; symmetric */
	const struct nk__rm_edge *edges;   /* may list a pair more than once (summed) */
	size_t n_edges;
	const int *initial;                /* [n]: the slot of rank i as profiled, a permutation of 0..n-1 */
	const int *group;                  /* [n] or NULL: the slots' domain (a node of a host), equal for
					    * consecutive slots only; the greedy start fills one domain at a time */
};

/* Sum over the edges of bytes x dist[slot of a][slot of b] under @p map (slot of each rank). */
double nk__rm_cost(const struct nk__rm_problem *p, const int *map);

/*
 * A mapping at most as costly as the initial one into @p out[n] (slot of each rank): pairwise swaps of
 * ranks until no swap lowers the cost, from several starts: the initial mapping, a greedy one (each domain
 * filled in turn by a traversal that takes next the rank with the most traffic to those already in it) and,
 * up to 256 ranks, 16 seeded random ones; the cheapest result, the initial one on a tie.  Returns 0, NK_EINVAL (a bad problem: n out of range, initial not a permutation, an edge's rank out
 * of range or negative bytes), NK_ENOMEM; @p out is untouched on error.
 */
int nk__rm_solve(const struct nk__rm_problem *p, int *out);

#endif
