/* SPDX-License-Identifier: BSD-3-Clause
 * whatif's model, one variable at a time (issue 21 §1): the replay that nk_profile_whatif runs over a
 * whole plan, offered to advise so that it can price each candidate placement of a variable with the
 * same code, and the same numbers, as `numakit whatif` prints for a plan holding that placement as the
 * variable's one "alloc" entry.  Internal to src/advise/ (whatif.c implements it, advise.c uses it).
 *
 * What one evaluation is: every attributed sample of the variable (first touches included, as whatif
 * replays them) re-placed under the entry, threads as profiled (no pinning: advise decides pinning after
 * its entries, and whatif applies it on top), counted into the scenario whatif's JSON calls "planned":
 * remote fraction, latency term, contention term of the bandwidth model (bandwidth term when the machine
 * has bandwidth measured), stall, accesses served per node; means per run for pooled runs.  Pure computation, nothing printed.
 *
 * The bandwidth model (windows, loads, slowdown) is in whatif_bw.c; its pure parts and the state one
 * replay keeps (struct nk__whatif_bw) are declared here too.
 */
#ifndef NK_ADVISE_WHATIF_H
#define NK_ADVISE_WHATIF_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

struct nk__analysis;
struct nk__aplan_entry;
struct nk__whatif_model;

/** One variable under one placement: whatif's SCENARIO for it (docs/whatif.md). */
struct nk__whatif_pred {
	uint64_t acc, local, remote, unknown; /* accesses (sample weights; means per run for pooled runs) */
	double remote_fraction;  /* remote / (local + remote), -1 when no access has both nodes known */
	double latency_ms;       /* latency term */
	double bandwidth_ms;     /* with bandwidth measured, the contention term (from the measured capacities);
				  * -1 when no node's bandwidth is measured (the default model) */
	double contention_ms;    /* the bandwidth model's term: the latency saturated nodes add (>= 0) */
	double stall_ms;         /* latency + contention */
	int busiest_node;        /* the node serving most of its accesses, -1 none */
	double busiest_share;    /* the share of its accesses (node known) that node serves, 0 none */
	/* the bandwidth model: the node whose saturation costs its accesses most (-1 none saturated), the
	 * most threads that read it in one time window, its peak load (1 = what it serves at full speed) and
	 * its measured bandwidth (MB/s; 0: its capacity is its cores, not measured) */
	int sat_node, sat_threads;
	double sat_load, sat_mbs;
	int bw_measured;         /* the machine has bandwidth measured: capacities from it, not the default */
};

/*
 * The bandwidth model (docs/whatif.md, "Bandwidth and contention"; measured bandwidth or the default
 * model, the same arithmetic with other capacities), as pure functions.  The run is cut into time
 * windows; in a window the thread that made the most accesses is one streaming thread, each other one a
 * fraction of one by its access rate relative to it, its demand shared out among the nodes in proportion
 * to its accesses there.
 */

/** Time windows for @p samples samples of @p threads threads: about 16 samples per thread each, 1 to 64. */
int nk__whatif_windows(uint64_t samples, size_t threads);

/**
 * The load of each of @p k nodes in one window: @p acc[t * k + n] the accesses thread t made to node n in
 * it (@p threads threads), @p samples[t] the samples behind thread t's (NULL: exact), @p cap[n] the
 * streaming threads node n serves at full speed (> 0).  Writes @p load[n] = L / cap[n], L the lower end of
 * the 95 % bound (z 1.96) of the sum over threads of d p, p the share of their accesses going to n, d their
 * demand (nk__whatif_demand, against the thread of the window with the most accesses), each share known to
 * a variance p (1 - p) / samples (0 at least), and, when @p users is not NULL, users[n] the threads that
 * accessed n.  A node is saturated only as far as the samples tell.  @p var: k doubles of
 * workspace, needed with @p samples (NULL otherwise).
 */
/**
 * The demand of a thread that made @p w accesses (sample weights) from @p n samples in a window whose busiest
 * thread made @p wmax from @p nmax, as a fraction of one streaming thread (the busiest is one): its access
 * rate relative to the busiest's, w / wmax, taken at the upper end of its 95 % bound (each count known to
 * a relative error 1 / sqrt(samples)) and at most 1: a thread counts for less than a streaming thread only
 * as far as the samples tell that it is slower.  @p n and @p nmax 0: exact (w / wmax).  0 when @p w is 0.
 */
double nk__whatif_demand(uint64_t w, uint64_t n, uint64_t wmax, uint64_t nmax);

void nk__whatif_loads(const uint64_t *acc, const uint64_t *samples, size_t threads, int k, const double *cap,
		      double *load, int *users, double *var);

/** The factor by which a node of load @p load slows its accesses: the load when above 1, else 1. */
double nk__whatif_slowdown(double load);

struct nk__an_sample;

/* The demand of one streaming thread, MB/s (docs/whatif.md, "Bandwidth and contention"): by Little's law
 * 10 cache lines in flight (a core's line-fill buffers) x 64 B per 80 ns (the fallback latency).  A node's
 * capacity is its measured bandwidth over it; unmeasured, its cores (cores x this many MB/s). */
#define NK__WHATIF_THREAD_MBS 8000.0

/*
 * The state of the bandwidth model in one replay (whatif_bw.c): the time windows, each node's capacity, and
 * the accesses per window, thread and node of two scenarios (0 as profiled or the base, 1 under the plan),
 * with the slowdown they give each node in each window.  Zeroed = off: adding does nothing, every factor
 * is 1.
 */
struct nk__whatif_bw {
	int on;             /* windows set up (nk__whatif_bw_setup) */
	int k;              /* nodes of the machine, in its index order */
	size_t nt;          /* threads of the analysis (1 at least) */
	double thread_mbs;  /* one streaming thread's demand, MB/s (NK__WHATIF_THREAD_MBS) */
	double *cap;        /* [k] streaming threads a node serves at full speed: node_mbs / thread_mbs */
	double *node_mbs;   /* [k] what it serves, MB/s: measured, else cores x thread_mbs */
	unsigned char *measured; /* [k] 1: node_mbs measured (numakit bench --save), 0: its cores */
	int n_measured;     /* nodes measured; 0: the default model */
	int nwin;           /* time windows */
	uint64_t t0, tspan; /* the samples' times: first, last - first */
	uint64_t *ld[2];    /* [nwin][nt][k] accesses per scenario */
	uint64_t *ns[2];    /* [nwin][nt] samples behind them */
	double *fac[2];     /* [nwin][k] slowdown per scenario */
	double *peak[2];    /* [k] the highest load of each node over the windows */
	int *peak_users[2]; /* [k] the most threads that accessed it in one window */
};

/** Each node's capacity on @p m (@p ids: the node ids, in index order, @p k of them), in streaming threads:
 * its measured read bandwidth (NK_MATRIX_BANDWIDTH_MBS from its own cpus, else, a node without cpus, the
 * most from any node's) over NK__WHATIF_THREAD_MBS; unmeasured, its cores (distinct core indices of its
 * cpus); a node without cpus the mean of those with cpus, 1 at least.  NK_ENOMEM. */
int nk__whatif_bw_capacity(struct nk__whatif_bw *b, const nk_machine *m, const int *ids, int k, nk_error *err);
/** The windows of analysis @p a (after nk__whatif_bw_capacity), the model on.  NK_ENOMEM. */
int nk__whatif_bw_setup(struct nk__whatif_bw *b, const struct nk__analysis *a, nk_error *err);
void nk__whatif_bw_free(struct nk__whatif_bw *b);
/** Sample @p s's accesses, made from node index @p tn to @p pn (-1 unknown: nothing), added to (@p sign > 0)
 * or taken from scenario @p scen's loads. */
void nk__whatif_bw_add(struct nk__whatif_bw *b, int scen, const struct nk__an_sample *s, int tn, int pn, int sign);
/** Scenario 1's loads set to scenario 0's (the base an evaluation changes one variable of). */
void nk__whatif_bw_base(struct nk__whatif_bw *b);
/** Scenario @p scen's slowdown per window and node from its loads, and each node's peak.  NK_ENOMEM. */
int nk__whatif_bw_factors(struct nk__whatif_bw *b, int scen, nk_error *err);
/** The slowdown of node index @p pn in sample @p s's window in scenario @p scen (after
 * nk__whatif_bw_factors); 1 when off or @p pn < 0. */
double nk__whatif_bw_factor(const struct nk__whatif_bw *b, int scen, const struct nk__an_sample *s, int pn);

/**
 * The model of analysis @p a on machine @p m (the target: node ids of entries are its ids).  Profiled nodes
 * it lacks are remapped as whatif does with --machine, except that with @p node_map (profile node index, as
 * in a->node_ids -> node id of @p m; kept, not copied) the threads follow it: advise prices a plan for
 * another machine with the node mapping it made the plan with, where whatif places the profiled threads
 * round robin.  On the profile's own machine the map plays no part.  Errors: NK_EINVAL (a machine without
 * nodes with memory or cpus), NK_ENOMEM; @p err says which.
 */
int nk__whatif_model_new(const struct nk__analysis *a, const nk_machine *m, const int *node_map,
			 struct nk__whatif_model **out, nk_error *err);
void nk__whatif_model_free(struct nk__whatif_model *w);

/**
 * Variable @p var of the analysis under entry @p e (its policy, ranges and page size are used; it applies
 * to every sample, as an "alloc" entry does), or as profiled when @p e is NULL or its policy "none".
 * @p uses: leave out the samples of a site of small blocks' initialisation and teardown (sample.init,
 * .fini; 0 replays every sample, as whatif does).  Errors: NK_EINVAL / NK_ENODEV (the policy does not
 * parse or build on the machine, a node it lacks), NK_ENOMEM; *out is then unchanged.
 */
int nk__whatif_model_eval(struct nk__whatif_model *w, size_t var, const struct nk__aplan_entry *e, int uses,
			  struct nk__whatif_pred *out, nk_error *err);

/**
 * A rank of a job moved (whatif --rank-map, src/advise/whatif_ranks.c): every attributed sample of its
 * analysis @p a replayed on machine @p m (the host it goes to; profiled nodes it lacks remapped as whatif
 * does with --machine) with its thread on node @p node, the page as profiled, or (@p follow) on @p node
 * itself, else the nearest node with memory (its memory bound there, or first touched by its threads now
 * there); a sample whose page node is unknown stays unknown.  @p node -1: as profiled.  *@p warning
 * (NULL-able; malloc'ed or NULL): the model's first warning (remapped threads or pages).  Errors: NK_EINVAL
 * (@p node not on @p m or without cpus, a machine without memory or cpus), NK_ENOMEM.
 */
int nk__whatif_move(const struct nk__analysis *a, const nk_machine *m, int node, int follow,
		    struct nk__whatif_pred *out, char **warning, nk_error *err);

/** Mean latency (ns) the model gives a remote access minus a local one, over the machine's memory nodes. */
double nk__whatif_model_remote_penalty_ns(const struct nk__whatif_model *w);

#endif
