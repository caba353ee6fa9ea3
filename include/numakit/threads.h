/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/threads.h: threads and loops: thread placement and pinning, sharing matrices, loop schedules,
 * feedback-guided loop scheduling.  Part of the public API; include <numakit.h>, which includes it (it
 * also compiles alone).  Conventions (errors, identifiers, thread safety, API tiers): the top of
 * <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_THREADS_H
#define NUMAKIT_THREADS_H

#include "numakit/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================= threads and loops
 *
 * Data placement is half of memory affinity: the thread that works on a
 * page must run on that page's node, and the work split must follow the
 * data (Minas §5.2.5; Majo & Gross §4.2; Slavin & Freeman).  See
 * docs/threads.md.
 *
 * PLACEMENT
 *   An nk_placement is the cpu of each thread of a team of n threads,
 *   computed once from the machine and a strategy; threads then pin
 *   themselves with nk_thread_pin().  Only cpus this process may use
 *   (allowed cpus) are ever chosen.
 *
 * SCHEDULES
 *   Functions that return the calling thread's iterations of a loop, for a
 *   thread id and team size, so that the iterations follow a distribution
 *   of the data.  Usable inside `#pragma omp parallel` from C, C++ and
 *   Fortran (module numakit in fortran/numakit.f90).  Pure and lock-free:
 *   nothing is allocated, nothing is remembered (the owner schedule is
 *   built once, then only read).  Formulas and the schedule <-> distribution
 *   table: docs/schedules.md.
 *
 * FEEDBACK-GUIDED SCHEDULING (nk_fgdls)
 *   An outer-loop scheduler after Bull and Slavin & Freeman: contiguous
 *   slices whose boundaries move every outer iteration to equalise the
 *   measured cost, and whose pages then migrate to their thread's node.
 */

/** A half-open iteration range [begin, end); empty when begin == end. */
typedef struct nk_range {
	long begin;
	long end;
} nk_range;

/* --- thread placement --- */

typedef struct nk_placement nk_placement;

/**
 * Where each of @p nthreads threads runs, by @p strategy:
 *   "compact"       one thread per core, cores in cache-sharing order (node by
 *                   node, within a node last-level cache by last-level cache,
 *                   then L2 by L2), so consecutive threads share the most
 *                   cache; when every core has a thread, the cores' other
 *                   hardware threads (SMT) follow in the same order.
 *   "scatter"       threads spread evenly over the nodes that have allowed
 *                   cpus, in contiguous groups (thread t on node index
 *                   floor(t * N / T) when T <= N, else group t of T cut in
 *                   N parts as evenly as possible, the first parts one
 *                   larger, like OpenMP's spread); within a node spread over
 *                   its last-level caches, then cores, then SMT siblings.
 *   "LIST"          an explicit cpu list in thread order: "3,1,0-2" gives
 *                   thread 0 cpu 3, thread 1 cpu 1, threads 2-4 cpus 0-2.
 *   "file:PATH"     the same list read from a file (separated by commas,
 *                   blanks or newlines; '#' starts a comment).
 *   "sharing:PATH"  from a thread x thread sharing matrix file
 *                   (nk_sharing_load): groups of threads that share the most
 *                   data go to the same node, then to cores sharing a cache.
 * @p nthreads 0 means one thread per cpu the strategy uses (LIST: its
 * length; sharing: the matrix size).  More threads than the strategy's cpus
 * is allowed: thread t takes the strategy's cpu t mod C (C its cpu count;
 * for scatter the order it gives C threads), so cpus are shared round robin
 * and nk_placement_oversubscribed() says so; sharing gives every node
 * floor(n / C) threads per allowed cpu plus its share of the rest, so every
 * cpu runs floor(n / C) or ceil(n / C) threads.  Ties go to the lower id: the
 * result is deterministic.  The exact rules, with worked examples, are in
 * docs/threads.md.
 * Errors: NK_EPARSE (unknown strategy, bad list or file; the message names
 * it), NK_EVERSION (a JSON sharing matrix of another version),
 * NK_ENOENT/NK_EIO (a file), NK_ENODEV (a listed cpu the machine lacks),
 * NK_EPERM (a listed cpu this process may not use), NK_EINVAL (NULL
 * argument, nthreads < 0 or > 65536, sharing matrix size != nthreads),
 * NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_placement_build(const nk_machine *m, const char *strategy, int nthreads, nk_placement **out,
			      nk_error *err);

/**
 * The "sharing" strategy from a matrix in memory: @p matrix is n x n,
 * row-major, entry [i][j] how much threads i and j share (any non-negative
 * unit: bytes, pages, sampled accesses); the diagonal is ignored and
 * [i][j] + [j][i] is used, so the matrix need not be symmetric.
 * Errors: NK_EINVAL (NULL, n < 1 or > 65536, a negative or non-finite entry), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_placement_from_sharing(const nk_machine *m, const double *matrix, int n, nk_placement **out,
				     nk_error *err);

/**
 * Parse a sharing matrix (docs/formats.md): either text, n lines of n
 * non-negative numbers ('#' comments, blank lines ignored), or JSON
 * {"format": "numakit-sharing", "version": 1, "matrix": [[...], ...]}.
 * Numbers are decimal ("12", "0.5", "3e6"); signs, inf, nan and hex are
 * rejected.  On success *matrix (freed with free()) holds n*n values, row-major.
 * Errors: NK_EPARSE ("sharing matrix: line 3: 4 values, expected 5"; the JSON
 * path for JSON), NK_EVERSION (a JSON "version" other than 1), NK_EINVAL
 * (NULL), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_sharing_parse(const char *text, size_t len, double **matrix, int *n, nk_error *err);
/**
 * nk_sharing_parse() of a file (messages name it).  Errors: those, and NK_ENOENT, NK_EIO (also larger than 256 MiB).
 * @since 0.1
 */
NK_API int nk_sharing_load(const char *path, double **matrix, int *n, nk_error *err);

/** Free a placement; NULL is a no-op.  @since 0.1 */
NK_API void nk_placement_free(nk_placement *p);
/** Number of threads (> 0), or NK_EINVAL.  @since 0.1 */
NK_API int nk_placement_num_threads(const nk_placement *p);
/** Cpu of thread @p thread, or NK_EINVAL (NULL, thread out of range).  @since 0.1 */
NK_API int nk_placement_cpu(const nk_placement *p, int thread);
/** Node of thread @p thread's cpu, or NK_EINVAL.  @since 0.1 */
NK_API int nk_placement_node(const nk_placement *p, int thread);
/** Cpus of every thread in thread order; count/capacity semantics (returns the thread count).  @since 0.1 */
NK_API int nk_placement_cpus(const nk_placement *p, int *cpus, size_t cap);
/** 1 when some cpu has more than one thread, 0 when not, NK_EINVAL.  @since 0.1 */
NK_API int nk_placement_oversubscribed(const nk_placement *p);
/**
 * The cpus in thread order as a list, "0,2,1,3" (every thread, no ranges);
 * snprintf semantics, except that a buffer too small holds only whole items.
 * Errors: NK_EINVAL (NULL @p p, or NULL @p buf with cap > 0).
 * @since 0.1
 */
NK_API int nk_placement_format(const nk_placement *p, char *buf, size_t cap);
/**
 * The cpus as OpenMP places, "{0},{2},{1},{3}" (numakit run --pin's OMP_PLACES); as nk_placement_format().
 * @since 0.1
 */
NK_API int nk_placement_omp_places(const nk_placement *p, char *buf, size_t cap);

/**
 * Pin the calling thread to the cpu of thread @p thread of @p p (a thread
 * id >= the placement's size wraps: thread mod size).  Threads created
 * afterwards by this thread inherit the pinning.
 * Thread-safe: every team member calls it concurrently with its own id (and
 * its own @p err, or NULL).
 * Errors: NK_EINVAL (NULL, thread < 0), NK_EPERM (the cpu is no longer
 * allowed: cpuset changed; the message names it), NK_ENOSYS.
 * @since 0.1
 */
NK_API int nk_thread_pin(const nk_placement *p, int thread, nk_error *err);

/**
 * Where the calling thread runs now (getcpu; it may move right after unless
 * pinned): its cpu, and that cpu's node on @p m (@p m NULL: the kernel's
 * node).  Either pointer may be NULL.  Thread-safe.
 * Errors: NK_ENOSYS (getcpu unavailable), NK_ENODEV (a cpu @p m lacks).
 * @since 0.1
 */
NK_API int nk_thread_where(const nk_machine *m, int *cpu, int *node);

/* --- loop schedules ---
 * All of them (docs/schedules.md): pure, lock-free, safe to call from every
 * thread of a team at once; a failing call writes nothing.  Iterations are
 * C ones: a loop is [begin, end).  Bands are cut as the policies cut them
 * (docs/policies.md): n items in t parts, the first n mod t one larger,
 * part k starting at k*floor(n/t) + min(k, n mod t).
 */

/**
 * OpenMP's schedule(static) without a chunk: [begin, end) cut into
 * @p nthreads contiguous parts, the first ((end - begin) mod nthreads) one
 * iteration longer; thread @p tid gets part tid.  This is the part
 * "block:split=rows" (threads = the team's nodes in thread order) places on
 * thread tid's node.  begin >= end gives every thread an empty range;
 * more threads than iterations give the last threads empty ranges at end.
 * Any long bounds work (end - begin may exceed LONG_MAX).
 * Errors: NK_EINVAL (NULL @p out, nthreads < 1, tid outside 0..nthreads-1).
 * @since 0.1
 */
NK_API int nk_sched_static(long begin, long end, int tid, int nthreads, nk_range *out);

/**
 * Majo & Gross' static-inverse: thread tid gets the part static gives
 * thread nthreads-1-tid (for loops that run "upwards" over data placed by a
 * downward loop, lu's upper triangle; or the second half of a
 * block_exclusive array with p = 2).  Errors and empty ranges as
 * nk_sched_static().
 * @since 0.1
 */
NK_API int nk_sched_static_inverse(long begin, long end, int tid, int nthreads, nk_range *out);

/** The most ranges nk_sched_block_exclusive() gives one thread: a @p cap of 2 always suffices. */
#define NK_SCHED_BE_MAX_RANGES 2

/** Which dimension of a 2D block_exclusive array a schedule hands out. */
enum nk_sched_view {
	NK_VIEW_ROWS = 0, /**< the loop runs over rows; the phase is the column band being processed */
	NK_VIEW_COLS = 1, /**< the loop runs over columns; the phase is the row band being processed */
};

/**
 * Majo & Gross' block-exclusive schedule for an array placed with
 * block_exclusive over p nodes: rows cut into p row bands, columns into p
 * column bands, block (r, c) on node[(r + c) mod p] (docs/policies.md).
 * @p rows and @p cols are the array's dimensions; @p view says which one
 * the loop runs over; @p phase (0..p-1) is the band of the other dimension
 * being processed (an x-wise sweep over rows runs p phases, one per column
 * band, with a barrier between them).
 *
 * Groups: the team forms p groups, group g being the threads "scatter"
 * places on node index g.  With T = @p nthreads >= p, thread t is in group
 * part_of(T, p, t) (T cut in p contiguous parts, the first T mod p one
 * larger).  With T < p, thread t runs on node index floor(t p / T) and
 * serves the groups floor(t p / T) .. floor((t+1) p / T) - 1, so every
 * group has exactly one thread.  Group g gets the band b of the loop
 * dimension with (b + phase) mod p == g — the block on node[g] in this
 * phase — clipped to [begin, end), and, when the group has k > 1 threads,
 * split among them as nk_sched_static() splits it.  Every iteration of
 * [begin, end) goes to exactly one thread.
 *
 * A thread's ranges are sorted, non-empty and not adjacent (touching bands
 * are merged): at most NK_SCHED_BE_MAX_RANGES (two only when T < p and its
 * bands wrap past the last band).  Writes min(count, @p cap) ranges to
 * @p out and returns the count (0: nothing to do in this phase).
 * begin >= end is an empty loop (returns 0).
 * Errors: NK_EINVAL (NULL @p out with cap > 0, p < 1, phase outside
 * 0..p-1, an unknown view, tid outside 0..nthreads-1, nthreads < 1, rows or
 * cols < p, a non-empty [begin, end) outside 0..rows (ROWS) or 0..cols (COLS)).
 * @since 0.1
 */
NK_API int nk_sched_block_exclusive(long rows, long cols, int p, int view, int phase, long begin, long end,
				    int tid, int nthreads, nk_range *out, size_t cap);

/** The owner schedule of an array: built once, queried by every thread. */
typedef struct nk_owner_sched nk_owner_sched;

/**
 * "owner": the rows (outermost dimension: rows of a 2D array, planes of a
 * 3D one, elements of a 1D one) of @p a whose memory is on each thread's
 * node, whatever policy placed them.  Row r belongs to the node holding
 * most of its resident bytes (residency now, nk_array_where; ties to the
 * lowest node id); rows on a node without threads go to the nearest node
 * with threads (SLIT distance, ties to the lowest id), and rows with no
 * resident byte are shared statically among all threads.  A node's rows,
 * in increasing order, are cut into as many contiguous shares as the node
 * has threads (@p thread_nodes[t], from nk_placement_node() or
 * nk_thread_where()), the first shares one row larger; threads take them
 * in thread order.  Every row goes to exactly one thread.  The schedule is
 * a snapshot: build it again after pages move.  Cost: one residency query
 * and O(rows + pages) time; memory O(threads + ranges).
 * Errors: NK_EINVAL (NULL argument, nthreads < 1, @p a not a numakit
 * array), NK_ENODEV (a thread node or a page on a node the array's machine
 * lacks; the message names it), NK_ENOSYS (no residency query), NK_ENOMEM.
 * Nothing is written to @p out on failure.
 * @since 0.1
 */
NK_API int nk_sched_owner_build(const nk_array *a, const int *thread_nodes, int nthreads, nk_owner_sched **out,
				nk_error *err);
/**
 * Thread @p tid's rows: sorted, non-adjacent ranges; writes min(count,
 * @p cap) of them and returns the count.  Safe from many threads at once.
 * Errors: NK_EINVAL (NULL @p s, tid out of range, NULL @p out with cap > 0).
 * @since 0.1
 */
NK_API int nk_sched_owner(const nk_owner_sched *s, int tid, nk_range *out, size_t cap);
/** Free an owner schedule; NULL is a no-op.  @since 0.1 */
NK_API void nk_sched_owner_free(nk_owner_sched *s);

/* --- feedback-guided dynamic loop scheduling with migration --- */

/*
 * Use (docs/fgdls.md; examples/spmv_gaussian.c):
 *   nk_fgdls_create(m, 0, n, T, &f);  nk_fgdls_attach*(f, ...);
 *   for each outer iteration:
 *     in parallel, thread tid: nk_fgdls_slice(f, tid, &r); work on r; nk_fgdls_record(f, tid, cost);
 *     one thread, the others waiting: nk_fgdls_update(f); nk_fgdls_migrate(f, 0, &res, &err);
 * THREAD SAFETY: nk_fgdls_slice() and nk_fgdls_record() may be called by the
 * team concurrently (record: each thread its own tid, nothing shared, no
 * lock).  Every other call needs the scheduler to itself, between outer
 * iterations; the caller's barrier orders the records before the update.
 */
typedef struct nk_fgdls nk_fgdls;

/**
 * A scheduler of the iterations [begin, end) of a parallel loop executed
 * again and again (an outer loop) by @p nthreads threads, starting from an
 * equipartition (nk_sched_static: the first (end - begin) mod nthreads
 * slices one iteration longer).  @p m (the live machine for migration; any
 * machine otherwise) must outlive the scheduler.  FGDLS does not pin:
 * nthreads may exceed the machine's cpus.
 * Errors: NK_EINVAL (NULL, begin >= end, nthreads < 1 or > end - begin), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_fgdls_create(const nk_machine *m, long begin, long end, int nthreads, nk_fgdls **out);
/** Free a scheduler (not the attached data); NULL is a no-op.  @since 0.1 */
NK_API void nk_fgdls_free(nk_fgdls *f);

/**
 * Damping d in (0, 1]: each update moves every boundary d of the way from
 * where it is to where the cost estimate says it should be (default 0.5).
 * 0.5 trades speed for robustness: with an exact work measure (e.g. the
 * non-zeros of a slice) d = 1 converges fastest (Gaussian SpMV, T = 2..16:
 * imbalance < 5% within 4 updates, against 10 for 0.5), but with measured
 * times d = 1 passes the timing noise on undamped (10% noise: a steady
 * imbalance of 13-18% against 8-12% for 0.5); docs/fgdls.md has the table.
 * Errors: NK_EINVAL (d outside (0, 1], NaN).
 * @since 0.1
 */
NK_API int nk_fgdls_set_damping(nk_fgdls *f, double d);

/**
 * Thread @p tid's slice for the coming iteration (never empty).  Errors: NK_EINVAL (NULL, tid out of range).
 * @since 0.1
 */
NK_API int nk_fgdls_slice(const nk_fgdls *f, int tid, nk_range *out);

/**
 * Record the cost of thread @p tid's slice in the iteration just run: a
 * time in seconds, or any work measure proportional to time.  Also records
 * the node the calling thread runs on (getcpu and @p m's cpu -> node map;
 * a cpu @p m lacks, or no getcpu, keeps the node an earlier record found) as
 * the thread's node, unless nk_fgdls_set_thread_node() fixed it.  A second
 * record in the same iteration replaces the first.  Threads may record
 * concurrently (each its own tid).  Errors: NK_EINVAL (NULL, tid out of
 * range, a negative or non-finite cost).
 * @since 0.1
 */
NK_API int nk_fgdls_record(nk_fgdls *f, int tid, double cost);

/**
 * Fix thread @p tid's node (tests, a known placement).  Errors: NK_EINVAL (NULL, tid, node < 0), NK_ENODEV (a node @p m lacks).
 * @since 0.1
 */
NK_API int nk_fgdls_set_thread_node(nk_fgdls *f, int tid, int node);

/**
 * Between outer iterations (one thread, the others waiting): move the slice
 * boundaries to equalise the recorded costs.  The cost of a slice is spread
 * evenly over its iterations (a piecewise-constant cost density), the
 * cumulative cost is cut into nthreads equal parts (the cut k at the
 * iteration where the cumulative cost reaches k/nthreads of the total,
 * interpolated within its slice; slices of cost 0 hold no cut), and each
 * inner boundary b moves to b + round(d (cut - b)), or to round(cut) when
 * that damped step rounds to 0; boundaries are then clamped to stay
 * increasing, every slice keeping at least one iteration.  All costs 0:
 * nothing moves.  Clears the recorded costs (the thread nodes stay).
 * Errors: NK_EINVAL (NULL, a thread has recorded no cost this iteration;
 * nothing changes).
 * @since 0.1
 */
NK_API int nk_fgdls_update(nk_fgdls *f);

/**
 * Load imbalance max cost / mean cost - 1 (0 = perfect; all costs 0 gives
 * 0): of the current iteration when every thread has recorded, else of the
 * iteration the last nk_fgdls_update() consumed.
 * Errors: NK_EINVAL, NK_ENODATA (no complete iteration recorded yet).
 * @since 0.1
 */
NK_API int nk_fgdls_imbalance(const nk_fgdls *f, double *imbalance);

/**
 * Data that follows the slices: iteration i owns the @p bytes_per_iter
 * bytes at @p base + (i - begin) * bytes_per_iter (a vector, rows of a
 * dense matrix).  Up to 16 attachments in all.
 * Errors: NK_EINVAL (NULL, 0 bytes, a size that overflows), NK_ENOMEM (too many).
 * @since 0.1
 */
NK_API int nk_fgdls_attach(nk_fgdls *f, void *base, size_t bytes_per_iter);
/**
 * Data with irregular rows (CSR): iteration i owns elements
 * [offsets[i - begin], offsets[i - begin + 1]) of @p elem_size bytes at
 * @p base; @p offsets has end - begin + 1 non-decreasing, non-negative
 * entries (empty rows allowed) and must outlive the scheduler, unchanged.
 * Errors: NK_EINVAL (NULL, elem_size 0, decreasing or negative offsets,
 * overflow), NK_ENOMEM (too many).
 * @since 0.1
 */
NK_API int nk_fgdls_attach_offsets(nk_fgdls *f, void *base, size_t elem_size, const long *offsets);

/**
 * Move every slice's pages of every attached region to its thread's node
 * (nk_apply: only the pages not already there move; untouched pages get the
 * policy for their first touch).  A page shared by two slices goes with the
 * slice holding its first byte.  A thread on a node without memory (or not
 * allowed) gets its nearest usable node.  @p flags and @p res (summed over
 * attachments; may be NULL) as nk_apply().  Regions are applied one after
 * the other: a failure leaves the regions before it migrated.
 * Errors: NK_EINVAL (NULL, flags), NK_ENODATA (a thread's node is unknown:
 * no record, no set node; nothing moved), and those of nk_apply().
 * @since 0.1
 */
NK_API int nk_fgdls_migrate(nk_fgdls *f, unsigned flags, nk_apply_result *res, nk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_THREADS_H */
