/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/bench.h: machine characterisation: the benchmark and its results.  Part of the public API;
 * include <numakit.h>, which includes it (it also compiles alone).  Conventions (errors, identifiers,
 * thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_BENCH_H
#define NUMAKIT_BENCH_H

#include "numakit/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================= bench (machine characterisation)
 *
 * `numakit bench` measures, for every (cpu node, memory node) pair, idle
 * load latency (dependent loads chasing a random single-cycle permutation
 * over a buffer larger than the last-level cache), bandwidth of read, write,
 * copy and triad kernels with one thread and with every allowed cpu of the
 * cpu node (plus non-temporal-store variants where the cpu has them),
 * access patterns (sequential, cache-line stride, page stride, random),
 * loaded latency (every cpu node hitting one memory node vs each its own)
 * and thread spread (two writers on one node vs on two nodes, Guo & Han
 * §III.C).  Memory is bound to its node before the first touch and its
 * residency checked with a move_pages query; every thread is pinned and
 * checks with getcpu where it runs.  A pair whose placement cannot be
 * verified fails the run: no figure is reported for memory that is not
 * where it was asked to be.  See docs/bench.md for the JSON form.
 *
 * Statistics: each figure is measured `repetitions` times after `warmups`
 * unmeasured runs; the median and the spread (min, max, quartiles) are kept.
 *
 * Thread safety: nk_bench_run() creates and joins its own threads; it must
 * not run concurrently with another benchmark if the figures are to mean
 * anything, but nothing breaks if it does.  Results are immutable.
 */

/** What to measure and how.  Initialise with nk_bench_options_init(). */
typedef struct nk_bench_options {
	uint64_t size;       /**< bytes of the buffer per memory node; 0 = automatic (4 x LLC, 64 MiB..1 GiB; quick: 4 MiB) */
	int repetitions;     /**< measured runs per figure (>= 1); 0 = default (5, quick 3) */
	int warmups;         /**< unmeasured runs first (>= 0); -1 = default (1) */
	int quick;           /**< 1: small buffer and short chases, for a fast look */
	const int *nodes;    /**< node subset (OS ids), NULL = every node */
	size_t nnodes;       /**< entries of @p nodes */
	uint64_t seed;       /**< seed of the random chase and random pattern (same seed, same order) */
} nk_bench_options;

/** Defaults: automatic size, default repetitions, all nodes, seed 1.  @since 0.1 */
NK_API void nk_bench_options_init(nk_bench_options *o);

/**
 * Check @p o against @p m without measuring.  Errors: NK_EINVAL (size below
 * one page, negative counts; the message says which), NK_ENODEV (a node the
 * machine lacks, named), NK_ENOMEM (the size does not fit a node's free
 * memory: a bound buffer would meet the out-of-memory killer), NK_ENODATA
 * (the subset leaves no cpu node or no memory node to measure).
 * @since 0.1
 */
NK_API int nk_bench_options_check(const nk_machine *m, const nk_bench_options *o, nk_error *err);

/** Progress report passed to the callback before each step. */
typedef struct nk_bench_progress {
	int step;         /**< 0-based index of the step starting now */
	int steps;        /**< total steps of the run */
	const char *what; /**< e.g. "latency cpu node 0 -> memory node 1" */
} nk_bench_progress;
typedef void (*nk_bench_progress_fn)(void *user, const nk_bench_progress *p);

/** Results of a run; opaque, freed with nk_bench_results_free(). */
typedef struct nk_bench_results nk_bench_results;

/**
 * Measure the live machine @p m (loaded with nk_machine_load_live; other
 * sources are refused with NK_EINVAL).  @p progress (may be NULL) is called
 * from the calling thread before each step.  The library prints nothing.
 * Errors: those of nk_bench_options_check(); NK_EPERM (memory could not be
 * bound or pages were found on another node, or a thread could not be
 * pinned or ran on another node: the message names the pair, the pages or
 * cpu and what the kernel said); NK_ENOSYS (kernel without NUMA system
 * calls); NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_bench_run(const nk_machine *m, const nk_bench_options *o, nk_bench_progress_fn progress,
			void *user, nk_bench_results **out, nk_error *err);

/** Free the results of a run; NULL is a no-op.  @since 0.1 */
NK_API void nk_bench_results_free(nk_bench_results *r);

/** Which nodes a run measured. */
enum nk_bench_role {
	NK_BENCH_CPU_NODES = 0, /**< nodes threads ran on (rows) */
	NK_BENCH_MEM_NODES = 1, /**< nodes memory was bound to (columns) */
};
/** Node ids of a role, increasing; count/capacity semantics.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_bench_nodes(const nk_bench_results *r, int role, int *ids, size_t cap);

/** Figures of a pair.  Bandwidths in MB/s (10^6 bytes/s), latency in ns per access. */
enum nk_bench_metric {
	NK_BENCH_LATENCY = 0,      /**< idle latency, ns (one thread) */
	NK_BENCH_READ = 1,         /**< sum of 8-byte loads, 8 B/element */
	NK_BENCH_WRITE = 2,        /**< 8-byte stores, 8 B/element */
	NK_BENCH_COPY = 3,         /**< c[i] = a[i], 16 B/element */
	NK_BENCH_TRIAD = 4,        /**< a[i] = b[i] + s*c[i], 24 B/element (STREAM counting) */
	NK_BENCH_WRITE_NT = 5,     /**< write with non-temporal stores */
	NK_BENCH_COPY_NT = 6,      /**< copy with non-temporal stores */
	NK_BENCH_TRIAD_NT = 7,     /**< triad with non-temporal stores */
	NK_BENCH_STRIDE_LINE = 8,  /**< one load per cache line, 64 B counted per load (one thread) */
	NK_BENCH_STRIDE_PAGE = 9,  /**< loads a page apart, 64 B per load (one thread) */
	NK_BENCH_RANDOM = 10,      /**< independent loads at random lines, 64 B per load (one thread) */
	NK_BENCH_LOADED_ALL = 11,  /**< latency, ns, while every cpu node hits the memory node */
	NK_BENCH_LOADED_OWN = 12,  /**< latency, ns, while every cpu node hits its own (nearest) memory node */
	NK_BENCH_METRIC_COUNT = 13
};
/** Thread counts of bandwidth figures. */
enum nk_bench_threads { NK_BENCH_ONE = 0, NK_BENCH_ALL = 1 };

/** Median and spread of the repetitions of one figure. */
typedef struct nk_bench_stat {
	double median, min, max, q1, q3; /**< q1/q3: quartiles (linear interpolation) */
	int n;                           /**< repetitions */
} nk_bench_stat;

/**
 * One figure: @p threads is NK_BENCH_ONE or NK_BENCH_ALL (only READ..TRIAD_NT
 * have NK_BENCH_ALL).  NK_BENCH_LOADED_OWN exists for (c, the memory node
 * that was c's own).  Errors: NK_EINVAL, NK_ENODEV (pair not measured),
 * NK_ENODATA (not measured: no non-temporal stores on this cpu, ...).
 * @since 0.1
 */
NK_API int nk_bench_get(const nk_bench_results *r, int metric, int threads, int cpu_node, int mem_node,
			nk_bench_stat *out);

/** How a pair was run and what was verified. */
typedef struct nk_bench_pair {
	int cpu;                /**< cpu of the one-thread figures */
	int threads;            /**< threads of the all-cpus figures */
	size_t pages;           /**< pages of the buffer checked with move_pages */
	int placement_verified; /**< 1: every page was on the memory node, before and after */
	int cpu_verified;       /**< 1: every thread ran on a cpu of the cpu node (getcpu) */
} nk_bench_pair;
/** Errors: NK_EINVAL, NK_ENODEV (pair not measured).  @since 0.1 */
NK_API int nk_bench_pair_info(const nk_bench_results *r, int cpu_node, int mem_node, nk_bench_pair *out);

/**
 * Derived: remote/local latency (local = the cpu node's own memory, or its
 * nearest measured memory node when it has none).  Errors: NK_ENODEV, NK_ENODATA.
 * @since 0.1
 */
NK_API int nk_bench_numa_factor(const nk_bench_results *r, int cpu_node, int mem_node, double *factor);

/**
 * Derived: local read bandwidth of memory node @p node with all cpus (MB/s),
 * measured from @p *from: the node itself, or its nearest cpu node when it
 * has no cpus.  Errors: NK_ENODEV, NK_ENODATA.
 * @since 0.1
 */
NK_API int nk_bench_local_bandwidth(const nk_bench_results *r, int node, int *from, double *mbs);

/** Thread spread (two writers, each on its own local data). */
enum nk_bench_spread_kind { NK_BENCH_SPREAD_ONE_NODE = 0, NK_BENCH_SPREAD_TWO_NODES = 1 };
typedef struct nk_bench_spread {
	int cpus[2];        /**< the writers' cpus */
	int nodes[2];       /**< their nodes (= their data's nodes) */
	nk_bench_stat mbs;  /**< aggregate write bandwidth, MB/s */
} nk_bench_spread;
/** Errors: NK_EINVAL, NK_ENODATA (the machine or subset cannot host this layout).  @since 0.1 */
NK_API int nk_bench_get_spread(const nk_bench_results *r, int kind, nk_bench_spread *out);

/** Notes of the run ("node 1 has no memory: not a memory target").  @since 0.1 */
NK_API int nk_bench_num_notes(const nk_bench_results *r);
/** The @p i-th note, or NULL.  @since 0.1 */
NK_API const char *nk_bench_note(const nk_bench_results *r, int i);

/** Options in effect (size and repetitions resolved), or NULL.  @since 0.1 */
NK_API const nk_bench_options *nk_bench_used_options(const nk_bench_results *r);

/** The results as JSON (docs/bench.md); flags as nk_machine_to_json.  Errors: NK_EINVAL, NK_ENOMEM.  @since 0.1 */
NK_API int nk_bench_results_to_json(const nk_bench_results *r, unsigned flags, char **out);

/**
 * Store the measured matrices in @p m: NK_MATRIX_LATENCY_NS (idle latency),
 * NK_MATRIX_BANDWIDTH_MBS (read, all cpus of the cpu node) and
 * NK_MATRIX_NUMA_FACTOR, for every measured pair.  Returns the number of
 * values stored.  Errors: NK_EINVAL, NK_ENODEV (a node @p m lacks; nothing
 * stored), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_bench_results_to_machine(const nk_bench_results *r, nk_machine *m);

/**
 * Let a machine carry measurements saved earlier: copy every measured
 * matrix value of @p saved (a machine file, nk_machine_load_file) into
 * @p live, for pairs of node ids present in both.  Refused with NK_ENODEV
 * (nothing copied; the message says what differs) unless both machines
 * have the same node ids with the same cpus, i.e. the file describes this
 * machine.  @p flags must be 0.  Returns the number of values copied.
 * Errors: NK_EINVAL, NK_ENODEV, NK_ENOMEM.  Needs exclusive access to @p live.
 * @since 0.1
 */
NK_API int nk_machine_merge_measurements(nk_machine *live, const nk_machine *saved, unsigned flags,
					 nk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_BENCH_H */
