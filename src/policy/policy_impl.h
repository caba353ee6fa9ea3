/* SPDX-License-Identifier: BSD-3-Clause
 * Internal representation of nk_policy and nk_plan, shared by policy.c
 * (values, text form) and plan.c (page -> node maps).  The applier uses
 * plan.h only.
 */
#ifndef NK_POLICY_IMPL_H
#define NK_POLICY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "policy/plan.h"

/* Bounds on user-given lists: node ids are unique and at most NK__MAX_ID
 * (util/list.h); threads may repeat nodes, so they get their own bound. */
#define NK__POLICY_MAX_THREADS 65536
#define NK__POLICY_MAX_WEIGHT 255

/* Defaults (docs/policies.md). */
#define NK__POLICY_CYCLIC_BLOCK_DEFAULT (64u << 10) /* cyclic_block: 64 KiB */
#define NK__POLICY_BLOCK_CYCLIC_DEFAULT (2u << 20)  /* block_cyclic: 2 MiB */

struct nk_policy {
	int kind;
	int *nodes;          /* explicit node set in policy order; NULL/0 = default set */
	size_t nnodes;
	uint64_t block;      /* bytes; 0 = kind's default */
	int *wnodes;         /* weighted: nodes with an explicit weight, in given order */
	unsigned *weights;
	size_t nweights;
	uint64_t seed;       /* random */
	int home;            /* cyclic_neighbors: -1 = default */
	int count;           /* cyclic_neighbors: 0 = default */
	int prime;           /* prime_mapp: 0 = smallest prime >= M */
	int split;           /* block: enum nk_split */
	int *threads;        /* block: node per thread; NULL/0 = one block per node */
	size_t nthreads;
};

/** Whether a key (a NK__KEY_* bit) applies to a kind. */
#define NK__KEY_NODES 0x001u
#define NK__KEY_BLOCK 0x002u
#define NK__KEY_WEIGHTS 0x004u
#define NK__KEY_SEED 0x008u
#define NK__KEY_HOME 0x010u
#define NK__KEY_COUNT 0x020u
#define NK__KEY_PRIME 0x040u
#define NK__KEY_SPLIT 0x080u
#define NK__KEY_THREADS 0x100u
unsigned nk__policy_keys(int kind);

/** Name of a kind ("cyclic_block"), NULL when out of range. */
const char *nk__policy_kind_name(int kind);

/** 1 when @p a and @p b are equal values (same kind and parameters). */
int nk__policy_equal(const struct nk_policy *a, const struct nk_policy *b);

/**
 * Replace every node id @p p names (its node set, weighted nodes, block thread nodes, cyclic-neighbours
 * home) by its image: node from[i] becomes to[i] (@p n pairs; an id not among @p from stays).  A default
 * set (none given) stays the default.  Used to carry a plan onto another rank's share (job/share.h).
 */
void nk__policy_map_nodes(struct nk_policy *p, const int *from, const int *to, size_t n);

/** 1 when @p x is prime. */
int nk__is_prime(long long x);

struct nk_plan {
	int kind;
	void *addr;
	uintptr_t base;      /* addr rounded down to the page */
	uint64_t page_size;
	size_t delta;        /* addr - base */
	size_t npages;

	int *nodes;          /* resolved node set, policy order */
	size_t nnodes;       /* M */
	int *sorted;         /* the same, increasing (kernel hints) */

	size_t bpages;       /* cyclic_block / block_cyclic: pages per block */
	uint64_t seed;       /* random */
	size_t prime;        /* prime_mapp: P */
	uint64_t *cum;       /* weighted: cum[k] = w[0] + ... + w[k-1], M + 1 entries */

	/* block / block_exclusive */
	int split;
	int *tnodes;         /* node of each block (thread), after mapping */
	size_t nthreads;     /* T */
	size_t rows;         /* dims[0] */
	size_t cols;         /* dims[1] (2D) */
	size_t elem;         /* elem_size */
	size_t row_bytes;    /* bytes per dims[0] slice */

	struct nk__plan_run *runs; /* bind, block (pages/rows); NULL otherwise */
	size_t nruns;

	int hint_mode;       /* -1: no single kernel call */
	int hint_node;       /* the node for NK__MPOL_BIND */
	int *hint_nodes;     /* for INTERLEAVE kinds: points into sorted or at hint_node */
	size_t hint_n;
};

#endif
