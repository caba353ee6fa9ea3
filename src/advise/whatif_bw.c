/* SPDX-License-Identifier: BSD-3-Clause
 * whatif's bandwidth model (issue 21 §2; docs/whatif.md, "Bandwidth and contention"): how many threads
 * read each node's memory at once, and how much a node serving more than it can feed slows the accesses
 * it serves.  The run is cut into time windows; in a window the busiest thread is one streaming thread,
 * each other one a fraction of it by its access rate relative to the busiest's (as far as the samples tell
 * it is lower), its demand shared out among the nodes in proportion to its accesses there; a node's
 * load is the sum of those shares (the lower end of its 95 % bound) over its capacity; above load 1 each
 * access it serves costs its latency x the load.
 *
 * The pure parts (nk__whatif_windows, nk__whatif_demand, nk__whatif_loads, nk__whatif_slowdown) and the
 * state one replay keeps (struct nk__whatif_bw: windows, capacities, the loads of two scenarios), used by whatif.c's replay
 * (nk_profile_whatif, the model advise prices its candidates with, a rank moved).  Internal interface in
 * whatif.h.  Pure computation.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "advise/whatif.h"
#include "profile/analysis.h"
#include "util/error.h"

#define WI_WIN_SAMPLES 16 /* a time window holds about this many samples per thread */
#define WI_MAX_WIN 64
#define WI_LOAD_Z 1.96    /* a node's load is its lower 95 % bound (one-sided z as the rest: docs/plan.md) */

/* ------------------------------------------------------------ pure parts */

int nk__whatif_windows(uint64_t samples, size_t threads)
{
	uint64_t w = samples / ((uint64_t)WI_WIN_SAMPLES * (threads ? threads : 1));
	return w < 1 ? 1 : w > WI_MAX_WIN ? WI_MAX_WIN : (int)w;
}

double nk__whatif_demand(uint64_t w, uint64_t n, uint64_t wmax, uint64_t nmax)
{
	if (!w || !wmax || w >= wmax)
		return w ? 1 : 0;
	double r = (double)w / (double)wmax;
	if (!n && !nmax)
		return r; /* exact */
	if (!n || !nmax)
		return 1;
	double den = 1 - WI_LOAD_Z / sqrt((double)nmax);
	if (den <= 0)
		return 1;
	r = r * (1 + WI_LOAD_Z / sqrt((double)n)) / den;
	return r < 1 ? r : 1;
}

void nk__whatif_loads(const uint64_t *acc, const uint64_t *samples, size_t threads, int k, const double *cap,
		      double *load, int *users, double *var)
{
	uint64_t wmax = 0, nmax = 0;
	for (int n = 0; n < k; n++) {
		load[n] = 0;
		if (users)
			users[n] = 0;
		if (samples)
			var[n] = 0;
	}
	/* the busiest thread of the window: the one taken to stream at full speed */
	for (size_t t = 0; t < threads; t++) {
		const uint64_t *a = acc + t * (size_t)k;
		uint64_t tot = 0;
		for (int n = 0; n < k; n++)
			tot += a[n];
		if (tot > wmax) {
			wmax = tot;
			nmax = samples ? samples[t] : 0;
		}
	}
	for (size_t t = 0; t < threads; t++) {
		const uint64_t *a = acc + t * (size_t)k;
		uint64_t tot = 0;
		for (int n = 0; n < k; n++)
			tot += a[n];
		if (!tot)
			continue; /* not running (or not sampled) in this window */
		double d = nk__whatif_demand(tot, samples ? samples[t] : 0, wmax, nmax);
		for (int n = 0; n < k; n++) {
			if (!a[n])
				continue;
			double p = (double)a[n] / (double)tot;
			load[n] += d * p;
			if (samples && samples[t])
				var[n] += d * d * p * (1 - p) / (double)samples[t];
			if (users)
				users[n]++;
		}
	}
	for (int n = 0; n < k; n++) {
		double lo = samples ? load[n] - WI_LOAD_Z * sqrt(var[n]) : load[n];
		load[n] = (lo > 0 ? lo : 0) / cap[n];
	}
}

double nk__whatif_slowdown(double load)
{
	return load > 1 ? load : 1;
}

/* ------------------------------------------------------------ one replay's state */

/* The cores of node @p id (distinct core indices of its cpus), -1 out of memory. */
static int node_cores(const nk_machine *m, int id)
{
	int n = nk_machine_node_cpus(m, id, NULL, 0), cores = 0;
	if (n <= 0)
		return 0;
	int *cpus = malloc((size_t)n * sizeof(int)), *core = malloc((size_t)n * sizeof(int));
	if (!cpus || !core) {
		free(cpus);
		free(core);
		return -1;
	}
	int got = nk_machine_node_cpus(m, id, cpus, (size_t)n);
	n = got < n ? got : n;
	for (int j = 0; j < n; j++) {
		nk_cpu_info ci;
		int x = nk_machine_cpu_info(m, cpus[j], &ci) ? -1 - j : ci.core, seen = 0;
		for (int q = 0; q < cores && !seen; q++)
			seen = core[q] == x;
		if (!seen)
			core[cores++] = x;
	}
	free(cpus);
	free(core);
	return cores;
}

/* The read bandwidth measured for node @p id's memory (MB/s, 0 none): from its own cpus, else (a node
 * without cpus) the most from any node's cpus. */
static double node_measured_mbs(const nk_machine *m, const int *ids, int k, int id)
{
	double bw = 0, best = 0;
	if (!nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, id, id, &bw) && bw > 0)
		return bw;
	for (int r = 0; r < k; r++)
		if (ids[r] != id && !nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, ids[r], id, &bw) && bw > best)
			best = bw;
	return best;
}

int nk__whatif_bw_capacity(struct nk__whatif_bw *b, const nk_machine *m, const int *ids, int k, nk_error *err)
{
	double sum = 0;
	int with = 0;
	b->k = k;
	b->thread_mbs = NK__WHATIF_THREAD_MBS;
	b->cap = calloc((size_t)k, sizeof(double));
	b->node_mbs = calloc((size_t)k, sizeof(double));
	b->measured = calloc((size_t)k, 1);
	if (!b->cap || !b->node_mbs || !b->measured)
		return nk__error(err, NK_ENOMEM, "whatif: out of memory");
	for (int i = 0; i < k; i++) {
		int cores = node_cores(m, ids[i]);
		if (cores < 0)
			return nk__error(err, NK_ENOMEM, "whatif: out of memory");
		b->cap[i] = cores;
		if (cores) {
			sum += cores;
			with++;
		}
	}
	for (int i = 0; i < k; i++) {
		if (b->cap[i] <= 0)
			b->cap[i] = with && sum / with >= 1 ? sum / with : 1;
		double mbs = node_measured_mbs(m, ids, k, ids[i]);
		if (mbs > 0) { /* measured: the threads at once its bandwidth feeds */
			b->measured[i] = 1;
			b->n_measured++;
			b->cap[i] = mbs / b->thread_mbs;
		}
		b->node_mbs[i] = b->cap[i] * b->thread_mbs;
	}
	return 0;
}

int nk__whatif_bw_setup(struct nk__whatif_bw *b, const struct nk__analysis *a, nk_error *err)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < a->n_attr; i++) {
		if (a->attr[i].time_ns < lo)
			lo = a->attr[i].time_ns;
		if (a->attr[i].time_ns > hi)
			hi = a->attr[i].time_ns;
	}
	b->t0 = a->n_attr ? lo : 0;
	b->tspan = a->n_attr ? hi - lo : 0;
	b->nwin = nk__whatif_windows(a->n_attr, a->n_threads);
	b->nt = a->n_threads ? a->n_threads : 1;
	size_t k = (size_t)b->k, nt = b->nt;
	for (int s = 0; s < 2; s++) {
		b->ld[s] = calloc((size_t)b->nwin * nt * k, sizeof(uint64_t));
		b->ns[s] = calloc((size_t)b->nwin * nt, sizeof(uint64_t));
		b->fac[s] = calloc((size_t)b->nwin * k, sizeof(double));
		b->peak[s] = calloc(k, sizeof(double));
		b->peak_users[s] = calloc(k, sizeof(int));
		if (!b->ld[s] || !b->ns[s] || !b->fac[s] || !b->peak[s] || !b->peak_users[s])
			return nk__error(err, NK_ENOMEM, "whatif: out of memory");
	}
	b->on = 1;
	return 0;
}

void nk__whatif_bw_free(struct nk__whatif_bw *b)
{
	free(b->cap);
	free(b->node_mbs);
	free(b->measured);
	for (int s = 0; s < 2; s++) {
		free(b->ld[s]);
		free(b->ns[s]);
		free(b->fac[s]);
		free(b->peak[s]);
		free(b->peak_users[s]);
	}
	memset(b, 0, sizeof(*b));
}

static size_t win_of(const struct nk__whatif_bw *b, const struct nk__an_sample *s)
{
	if (b->nwin < 2 || !b->tspan || s->time_ns <= b->t0)
		return 0;
	size_t w = (size_t)((double)(s->time_ns - b->t0) / (double)b->tspan * b->nwin);
	return w >= (size_t)b->nwin ? (size_t)b->nwin - 1 : w;
}

void nk__whatif_bw_add(struct nk__whatif_bw *b, int scen, const struct nk__an_sample *s, int tn, int pn, int sign)
{
	if (!b->on || tn < 0 || pn < 0)
		return;
	size_t wt = win_of(b, s) * b->nt + s->thread;
	uint64_t *x = &b->ld[scen][wt * (size_t)b->k + (size_t)pn];
	if (sign > 0) {
		*x += s->weight;
		b->ns[scen][wt]++;
	} else {
		*x -= s->weight;
		b->ns[scen][wt]--;
	}
}

void nk__whatif_bw_base(struct nk__whatif_bw *b)
{
	if (!b->on)
		return;
	memcpy(b->ld[1], b->ld[0], (size_t)b->nwin * b->nt * (size_t)b->k * sizeof(uint64_t));
	memcpy(b->ns[1], b->ns[0], (size_t)b->nwin * b->nt * sizeof(uint64_t));
}

int nk__whatif_bw_factors(struct nk__whatif_bw *b, int scen, nk_error *err)
{
	if (!b->on)
		return 0;
	size_t k = (size_t)b->k, nt = b->nt;
	double *load = malloc(k * sizeof(double)), *var = malloc(k * sizeof(double));
	int *users = malloc(k * sizeof(int));
	if (!load || !var || !users) {
		free(load);
		free(var);
		free(users);
		return nk__error(err, NK_ENOMEM, "whatif: out of memory");
	}
	for (size_t n = 0; n < k; n++) {
		b->peak[scen][n] = 0;
		b->peak_users[scen][n] = 0;
	}
	for (size_t w = 0; w < (size_t)b->nwin; w++) {
		nk__whatif_loads(b->ld[scen] + w * nt * k, b->ns[scen] + w * nt, nt, b->k, b->cap, load, users, var);
		for (size_t n = 0; n < k; n++) {
			b->fac[scen][w * k + n] = nk__whatif_slowdown(load[n]);
			if (load[n] > b->peak[scen][n])
				b->peak[scen][n] = load[n];
			if (users[n] > b->peak_users[scen][n])
				b->peak_users[scen][n] = users[n];
		}
	}
	free(load);
	free(var);
	free(users);
	return 0;
}

double nk__whatif_bw_factor(const struct nk__whatif_bw *b, int scen, const struct nk__an_sample *s, int pn)
{
	if (!b->on || pn < 0)
		return 1;
	return b->fac[scen][win_of(b, s) * (size_t)b->k + (size_t)pn];
}
