/* SPDX-License-Identifier: BSD-3-Clause
 * What advise.c and advise_blocks.c share: the advise context, a variable's access pattern, and the block
 * layouts fitted to it.  Internal to src/advise/.
 */
#ifndef NK_ADVISE_IMPL_H
#define NK_ADVISE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "profile/analysis.h"

struct nk__whatif_model;

#define ADV_MAX_BLOCKS 4096 /* largest block count tried */

struct adv {
	const struct nk__analysis *a;
	const nk_machine *m; /* the target machine, NULL when neither given nor in the profile */
	const nk_advise_opts *o;
	uint64_t ps;         /* page size of the profile's pages */
	int nn;              /* a->n_nodes */
	int *map;            /* [nn] profile node index -> target node id */
	int *mem;            /* target nodes with memory, increasing */
	int n_mem;
	double factor;       /* largest NUMA factor of the target, 0 unknown */
	uint64_t min_size;
	double lat_local, lat_remote; /* ns */
	int lat_measured;
	struct nk__whatif_model *wm; /* whatif's model on the target (whatif.h), NULL without a machine */
	size_t *vstart;      /* samples of variable i: vidx[vstart[i] .. vstart[i + 1]) */
	uint32_t *vidx;
};

/* One attributed sample of a variable, reduced to what placement needs. */
struct rec {
	uint64_t page;   /* in its instance, page 0 holds the instance's first byte */
	uint64_t npages; /* pages of its instance */
	int node;        /* profile node index of the accessing cpu */
	double w;
};

/* A page and its users. */
struct pg {
	uint64_t page;
	int owner;      /* target node id with most accesses */
	double w_owner; /* accesses from it */
	double w;       /* all accesses */
};

/* Access pattern of a variable (all samples, or one phase's). */
struct pat {
	struct rec *r;
	size_t nr;
	double total;     /* accesses with a known cpu node */
	double w2;        /* sum of the squared weights of those samples (their effective count: total^2 / w2) */
	double *node_w;   /* [nn] accesses by profile node index */
	struct pg *pg;
	size_t npg;
	double owner_local; /* sum of w_owner / total over sampled pages: local share with per-page placement */
	uint64_t npages;    /* pages of the largest instance */
};

/*
 * Best block layout: for each candidate T of @p cands, block b goes to the target node that makes most of
 * the accesses to pages of band b.  The best T (0 none), its node per block in *nodes (malloc'ed) and its
 * local share.  0 or NK_ENOMEM.
 */
int nk__adv_block_fit(const struct adv *c, const struct pat *p, const uint64_t *cands, size_t ncand, int **nodes,
		      uint64_t *best_t, double *best_local);

/*
 * The best layout (*t blocks *bn, local share *local) replaced by the simplest one the samples support;
 * *changed when it is not the best.  0 or NK_ENOMEM.
 */
int nk__adv_block_simplify(const struct adv *c, const struct pat *p, const uint64_t *cands, size_t ncand,
			   uint64_t *t, int **bn, double *local, int *changed);

/* Runs of consecutive blocks on one node in @p bn[0..t). */
int nk__adv_lay_runs(const int *bn, uint64_t t);

#endif
