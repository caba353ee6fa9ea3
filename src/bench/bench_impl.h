/* SPDX-License-Identifier: BSD-3-Clause
 * Internals of the benchmark (src/bench/): the timing harness (run.c) is
 * separate from the kernels (kernels.c, chase.c), which only touch memory
 * and declare how many bytes one element or access moves; the harness turns
 * time into figures.  Pure helpers (statistics, the Sattolo permutation) are
 * here so unit tests reach them.
 */
#ifndef NK_BENCH_IMPL_H
#define NK_BENCH_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

/** Cache line the kernels and the chase assume (x86-64, most arm64). */
#define NK__LINE 64

/* ---- statistics (stats.c) ---- */

/**
 * Median, quartiles (linear interpolation between order statistics, the
 * "type 7" definition of R and numpy), min and max of @p v[0..n).  @p v is
 * not modified.  Returns 0, NK_EINVAL (n < 1 or a NULL), NK_ENOMEM.
 */
int nk__bench_stats(const double *v, int n, nk_bench_stat *out);

/** splitmix64: the one PRNG of the benchmark (seeded, reproducible). */
static inline uint64_t nk__bench_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- pointer chase (chase.c) ---- */

/**
 * Link the @p nlines lines of @p buf (each @p stride bytes apart, stride >=
 * sizeof(void *)) into one random cycle through every line (Sattolo's
 * algorithm): the first word of each line points to the next line.  Writes
 * every line, so it is also the first touch.  Same seed, same cycle.
 */
void nk__bench_chase_init(void *buf, size_t nlines, size_t stride, uint64_t seed);

/** Follow @p steps pointers from @p start; returns where it stopped (so nothing is optimised away). */
void *nk__bench_chase(void *start, size_t steps);

/* ---- bandwidth kernels (kernels.c) ---- */

/**
 * A kernel over n doubles of up to three arrays (a written, b and c read),
 * returning a value that depends on what it read so it cannot be elided.
 * Array pointers are 64-byte aligned and n is a multiple of 8.
 */
typedef double (*nk__bench_kernel_fn)(double *a, const double *b, const double *c, size_t n);

struct nk__bench_kernel {
	int metric;           /* enum nk_bench_metric */
	const char *name;     /* JSON key */
	int arrays;           /* arrays the buffer is cut into */
	int bytes_per_elem;   /* bytes counted per element (STREAM counting: no write-allocate) */
	int nt;               /* 1: needs non-temporal stores */
	nk__bench_kernel_fn fn;
};

/** The bandwidth kernels, READ..TRIAD_NT in metric order; *n receives the count. */
const struct nk__bench_kernel *nk__bench_kernels(int *n);

/** 1 when this cpu has the non-temporal stores the *_NT kernels use. */
int nk__bench_have_nt(void);

/**
 * Access-pattern kernels over @p len bytes at @p buf (one thread): each
 * returns the number of loads made into *loads (64 bytes counted per load).
 *   stride_line: every line in address order
 *   stride_page: every line, visiting lines one page apart (page-size stride)
 *   random:      as many loads as lines, at random lines (independent loads)
 */
double nk__bench_stride(const void *buf, size_t len, size_t stride, uint64_t *loads);
double nk__bench_random(const void *buf, size_t len, uint64_t seed, uint64_t *loads);

/** Cut @p nelem elements among @p nthreads, in multiples of 8: thread @p t gets [*first, *first + *n). */
void nk__bench_split(size_t nelem, int nthreads, int t, size_t *first, size_t *n);

#endif

/* ---- results (run.c fills, results.c reads) ---- */

struct nk__bench_cell {
	int measured;
	nk_bench_pair info;
	nk_bench_stat stat[NK_BENCH_METRIC_COUNT][2]; /* [metric][NK_BENCH_ONE/ALL]; n == 0: none */
};

struct nk_bench_results {
	nk_bench_options opts; /* resolved: size, repetitions, warmups; nodes -> node_sel */
	int *node_sel;
	int ncpu, nmem;
	int *cpu_nodes, *mem_nodes; /* increasing ids */
	int *own_mem;               /* per cpu index: index of its own (or nearest) memory node */
	int *own_cpu;               /* per memory index: index of the cpu node measuring it locally */
	struct nk__bench_cell *cells; /* ncpu x nmem, row = cpu node */
	int have_spread[2];
	nk_bench_spread spread[2];
	char **notes;
	int nnotes;
	int nt;                     /* non-temporal kernels measured */
	uint64_t page_size;
	uint64_t llc;               /* largest cache, bytes (0 unknown) */
};

/** Cell of (cpu index, memory index). */
static inline struct nk__bench_cell *nk__bench_cell(const struct nk_bench_results *r, int ci, int mi)
{
	return &r->cells[(size_t)ci * (size_t)r->nmem + (size_t)mi];
}

/** Index of @p id in ids[0..n) or -1. */
int nk__bench_index(const int *ids, int n, int id);

/** Append a printf-style note; 0 or NK_ENOMEM. */
int nk__bench_note(struct nk_bench_results *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Resolve options against the machine into @p r (nodes, roles, notes, size,
 * repetitions): the shared part of nk_bench_options_check() and nk_bench_run().
 */
int nk__bench_plan(const nk_machine *m, const nk_bench_options *o, struct nk_bench_results *r, nk_error *err);
