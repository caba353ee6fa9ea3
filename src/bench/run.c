/* SPDX-License-Identifier: BSD-3-Clause
 * The timing harness of `numakit bench`.  Kernels (kernels.c, chase.c) only
 * touch memory; this file places memory, pins threads, times repetitions
 * and keeps medians.  Nothing is reported for a pair whose memory is not
 * on its node or whose threads did not run on its cpus: each buffer is
 * bound with mbind(MPOL_BIND) before its first touch and its residency
 * checked with a move_pages query before and after the measurements, and
 * every thread checks with getcpu, after pinning and after working, that
 * it runs where it was pinned.
 *
 * Phases (buffers live through all of them, one per memory node):
 *   1 place   map, bind, link the chase (first touch), verify residency
 *   2 latency idle latency of every pair (chase intact)
 *   3 loaded  chasers of every cpu node on one node / each on its own
 *   4 bandwidth kernels with 1 and all threads, access patterns
 *   5 spread  two writers on one node vs two nodes (Guo & Han III.C)
 *   6 verify  residency again
 */
#include "bench/bench_impl.h"
#include "os/os.h"
#include "util/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/* Chase steps per repetition: long enough to dwarf the clock, short enough for guests. */
#define CHASE_STEPS_FULL (1u << 21)
#define CHASE_STEPS_QUICK (1u << 14)

enum job { JOB_KERNEL, JOB_STRIDE, JOB_RANDOM, JOB_CHASE, JOB_LOAD };

struct team;

struct member {
	struct team *t;
	int idx;
	int cpu, node;         /* where it must run */
	pthread_t th;
	int job;
	const struct nk__bench_kernel *k;
	double *a;
	const double *b, *c;
	size_t n;              /* kernel elements */
	const void *buf;       /* patterns, load */
	size_t len;
	size_t stride;
	void *start;           /* chase */
	size_t steps;
	double *samples;       /* chase: ns per access per repetition */
	uint64_t loads;        /* patterns: loads per repetition */
	int rc;                /* 0, -errno (the OS layer's sys_errno), or -EXDEV when it ran elsewhere */
	int ran_cpu, ran_node;
	volatile double sink;  /* results of kernels, so that nothing is elided */
};

struct team {
	int n;
	struct member *mb;
	int synced;            /* 1: repetitions between barriers, timed by member 0 */
	int warm, reps;
	double *rep_ns;        /* synced: wall time per repetition */
	pthread_barrier_t bar;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int gate;              /* 0 wait, 1 go, 2 abort */
	atomic_int chasers_left;
	atomic_int abort;
};

struct run {
	const nk_machine *m;
	struct nk_bench_results *r;
	nk_bench_progress_fn progress;
	void *user;
	int step, steps;
	nk_error *err;
	void **bufs;           /* per memory node */
	size_t len;            /* bytes of each buffer */
	int nmem, ncpu;        /* sizes of bufs and cpus once allocated */
	int **cpus;            /* per cpu node: usable cpus */
	int *ncpus;
};

/* ---- threads ---- */

static int check_cpu(struct member *me)
{
	int cpu = -1, node = -1, e;

	if (nk__os_getcpu(&cpu, &node, &e))
		return -e;
	me->ran_cpu = cpu;
	me->ran_node = node;
	return cpu == me->cpu && node == me->node ? 0 : -EXDEV;
}

static void work_synced(struct member *me)
{
	struct team *t = me->t;
	uint64_t t0 = 0;

	for (int r = 0; r < t->warm + t->reps; r++) {
		pthread_barrier_wait(&t->bar);
		if (me->idx == 0)
			t0 = nk__os_now_ns();
		switch (me->job) {
		case JOB_KERNEL:
			me->sink += me->k->fn(me->a, me->b, me->c, me->n);
			break;
		case JOB_STRIDE:
			me->sink += nk__bench_stride(me->buf, me->len, me->stride, &me->loads);
			break;
		case JOB_RANDOM:
			me->sink += nk__bench_random(me->buf, me->len, (uint64_t)r + 1, &me->loads);
			break;
		}
		pthread_barrier_wait(&t->bar);
		if (me->idx == 0 && r >= t->warm)
			t->rep_ns[r - t->warm] = (double)(nk__os_now_ns() - t0);
	}
}

static void work_free(struct member *me)
{
	struct team *t = me->t;

	if (me->job == JOB_CHASE) {
		void *p = me->start;

		for (int r = 0; r < t->warm + t->reps; r++) {
			uint64_t t0 = nk__os_now_ns();

			p = nk__bench_chase(p, me->steps);
			if (r >= t->warm)
				me->samples[r - t->warm] = (double)(nk__os_now_ns() - t0) / (double)me->steps;
		}
		me->sink += (double)(uintptr_t)p;
		atomic_fetch_sub(&t->chasers_left, 1);
		return;
	}
	/* JOB_LOAD: stream through its share until every chaser is done. */
	while (atomic_load_explicit(&t->chasers_left, memory_order_relaxed) > 0)
		me->sink += nk__bench_stride(me->buf, me->len, NK__LINE, &me->loads);
}

static void *member_main(void *arg)
{
	struct member *me = arg;
	struct team *t = me->t;
	int rc, go, e;

	pthread_mutex_lock(&t->lock);
	while (!t->gate)
		pthread_cond_wait(&t->cond, &t->lock);
	go = t->gate == 1;
	pthread_mutex_unlock(&t->lock);
	if (!go)
		return NULL;

	rc = nk__os_set_affinity(0, &me->cpu, 1, &e) ? -e : 0;
	if (!rc)
		rc = check_cpu(me);
	if (rc) {
		me->rc = rc;
		atomic_store(&t->abort, 1);
	}
	pthread_barrier_wait(&t->bar);
	if (atomic_load(&t->abort))
		return NULL;
	if (t->synced)
		work_synced(me);
	else
		work_free(me);
	me->rc = check_cpu(me);
	return NULL;
}

/* Run the team; on failure the message names the cpu and what went wrong. */
static int team_run(struct run *ru, struct team *t, const char *what)
{
	int created = 0, rc = 0;

	if (pthread_barrier_init(&t->bar, NULL, (unsigned)t->n))
		return nk__error(ru->err, NK_ENOMEM, "%s: cannot create a barrier", what);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->gate = 0;
	atomic_store(&t->abort, 0);
	for (int i = 0; i < t->n; i++) {
		t->mb[i].t = t;
		t->mb[i].idx = i;
		t->mb[i].rc = 0;
		t->mb[i].ran_cpu = t->mb[i].ran_node = -1;
	}
	for (; created < t->n; created++)
		if (pthread_create(&t->mb[created].th, NULL, member_main, &t->mb[created]))
			break;
	pthread_mutex_lock(&t->lock);
	t->gate = created == t->n ? 1 : 2;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	for (int i = 0; i < created; i++)
		pthread_join(t->mb[i].th, NULL);
	if (created < t->n) {
		rc = nk__error(ru->err, NK_ENOMEM, "%s: cannot start %d threads", what, t->n);
		goto out;
	}
	for (int i = 0; i < t->n && !rc; i++) {
		struct member *me = &t->mb[i];

		if (me->rc == -EXDEV)
			rc = nk__error(ru->err, NK_EPERM, "%s: a thread pinned to cpu %d (node %d) ran on cpu %d (node %d)",
				       what, me->cpu, me->node, me->ran_cpu, me->ran_node);
		else if (me->rc == -ENOSYS)
			rc = nk__error(ru->err, NK_ENOSYS, "%s: cannot pin threads or ask where they run (%s)", what,
				       strerror(ENOSYS));
		else if (me->rc)
			rc = nk__error(ru->err, NK_EPERM, "%s: cannot pin a thread to cpu %d: %s", what, me->cpu,
				       strerror(-me->rc));
	}
out:
	pthread_barrier_destroy(&t->bar);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	return rc;
}

/* ---- memory ---- */

static int verify(struct run *ru, int mi, const char *when, size_t *pages_out)
{
	const size_t batch = 4096;
	size_t ps = ru->r->page_size, pages = ru->len / ps, bad = 0, first_bad = 0;
	int node = ru->r->mem_nodes[mi], bad_node = 0, rc = 0, e;
	void **ptrs = malloc(batch * sizeof *ptrs);
	int *st = malloc(batch * sizeof *st);

	if (!ptrs || !st) {
		rc = nk__error(ru->err, NK_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t p = 0; p < pages; p += batch) {
		size_t k = pages - p < batch ? pages - p : batch;
		long r;

		for (size_t i = 0; i < k; i++)
			ptrs[i] = (char *)ru->bufs[mi] + (p + i) * ps;
		r = nk__os_move_pages(k, ptrs, NULL, st, 0, &e);
		if (r < 0) {
			rc = nk__error(ru->err, e == ENOSYS ? NK_ENOSYS : NK_EPERM,
				       "memory node %d: cannot ask where pages are (move_pages): %s", node, strerror(e));
			goto out;
		}
		for (size_t i = 0; i < k; i++)
			if (st[i] != node) {
				if (!bad++) {
					first_bad = p + i;
					bad_node = st[i];
				}
			}
	}
	if (bad) {
		char where[64];

		if (bad_node >= 0)
			snprintf(where, sizeof where, "on node %d", bad_node);
		else
			snprintf(where, sizeof where, "%s", strerror(-bad_node));
		rc = nk__error(ru->err, NK_EPERM,
			       "memory node %d: %zu of %zu pages are not there %s (page %zu: %s); bound with mbind before "
			       "the first touch: the node may be short of memory or the policy overridden",
			       node, bad, pages, when, first_bad, where);
		goto out;
	}
	if (pages_out)
		*pages_out = pages;
out:
	free(ptrs);
	free(st);
	return rc;
}

static int place(struct run *ru, int mi)
{
	int node = ru->r->mem_nodes[mi], rc, e;

	rc = nk__os_map_anon(ru->len, &ru->bufs[mi], &e);
	if (rc) {
		ru->bufs[mi] = NULL;
		return nk__error(ru->err, NK_ENOMEM, "memory node %d: cannot map %.0f MiB: %s", node, ru->len / MIB,
				 strerror(e));
	}
	rc = nk__os_mbind(ru->bufs[mi], ru->len, NK__MPOL_BIND, &node, 1, 0, &e);
	if (rc)
		return nk__error(ru->err, e == ENOSYS ? NK_ENOSYS : NK_EPERM, "memory node %d: mbind(MPOL_BIND): %s",
				 node, strerror(e));
	nk__bench_chase_init(ru->bufs[mi], ru->len / NK__LINE, NK__LINE, ru->r->opts.seed);
	return verify(ru, mi, "after the first touch", NULL);
}

/* ---- measurements ---- */

static void progress(struct run *ru, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct run *ru, const char *fmt, ...)
{
	char what[128];
	nk_bench_progress p;
	va_list ap;

	if (ru->progress) {
		va_start(ap, fmt);
		vsnprintf(what, sizeof what, fmt, ap);
		va_end(ap);
		p.step = ru->step;
		p.steps = ru->steps;
		p.what = what;
		ru->progress(ru->user, &p);
	}
	ru->step++;
}

static struct nk__bench_cell *cell(struct run *ru, int ci, int mi)
{
	return nk__bench_cell(ru->r, ci, mi);
}

static int stat_of(struct run *ru, const double *v, nk_bench_stat *out)
{
	int rc = nk__bench_stats(v, ru->r->opts.repetitions, out);

	return rc ? nk__error(ru->err, rc, "out of memory") : 0;
}

static int latency(struct run *ru, int ci, int mi)
{
	struct team t = { 0 };
	struct member mb = { 0 };
	int reps = ru->r->opts.repetitions, rc;
	size_t lines = ru->len / NK__LINE;
	char what[96];

	mb.samples = calloc((size_t)reps, sizeof(double));
	if (!mb.samples)
		return nk__error(ru->err, NK_ENOMEM, "out of memory");
	mb.cpu = ru->cpus[ci][0];
	mb.node = ru->r->cpu_nodes[ci];
	mb.job = JOB_CHASE;
	mb.start = ru->bufs[mi];
	mb.steps = ru->r->opts.quick ? CHASE_STEPS_QUICK : CHASE_STEPS_FULL;
	if (mb.steps > lines)
		mb.steps = lines;
	t.n = 1;
	t.mb = &mb;
	t.warm = ru->r->opts.warmups;
	t.reps = reps;
	atomic_store(&t.chasers_left, 1);
	snprintf(what, sizeof what, "latency cpu node %d -> memory node %d", mb.node, ru->r->mem_nodes[mi]);
	rc = team_run(ru, &t, what);
	if (!rc)
		rc = stat_of(ru, mb.samples, &cell(ru, ci, mi)->stat[NK_BENCH_LATENCY][NK_BENCH_ONE]);
	if (!rc) {
		cell(ru, ci, mi)->info.cpu = mb.cpu;
		cell(ru, ci, mi)->info.cpu_verified = 1;
	}
	free(mb.samples);
	return rc;
}

/*
 * Loaded latency: on every cpu node one chaser (its first cpu) and, on its
 * other cpus, streaming readers; target = memory node @p target_mi for all,
 * or (target_mi < 0) each cpu node's own memory node.
 */
static int loaded(struct run *ru, int target_mi)
{
	struct nk_bench_results *r = ru->r;
	struct team t = { 0 };
	int n = 0, k = 0, reps = r->opts.repetitions, rc = 0;
	size_t lines = ru->len / NK__LINE;
	char what[96];

	for (int ci = 0; ci < r->ncpu; ci++)
		n += ru->ncpus[ci];
	t.mb = calloc((size_t)n, sizeof *t.mb);
	if (!t.mb)
		return nk__error(ru->err, NK_ENOMEM, "out of memory");
	for (int ci = 0; ci < r->ncpu; ci++) {
		int mi = target_mi >= 0 ? target_mi : r->own_mem[ci];
		/* Readers of this node share the buffer in equal line-aligned slices. */
		int nl = ru->ncpus[ci] - 1;

		for (int j = 0; j < ru->ncpus[ci]; j++, k++) {
			struct member *me = &t.mb[k];

			me->cpu = ru->cpus[ci][j];
			me->node = r->cpu_nodes[ci];
			if (j == 0) {
				me->job = JOB_CHASE;
				/* Different places on the same cycle for chasers sharing a buffer. */
				me->start = (char *)ru->bufs[mi] + (lines * (size_t)ci / (size_t)r->ncpu) * NK__LINE;
				me->steps = r->opts.quick ? CHASE_STEPS_QUICK : CHASE_STEPS_FULL;
				if (me->steps > lines)
					me->steps = lines;
				me->samples = calloc((size_t)reps, sizeof(double));
				if (!me->samples) {
					rc = nk__error(ru->err, NK_ENOMEM, "out of memory");
					goto out;
				}
			} else {
				size_t first, len;

				nk__bench_split(lines * 8, nl, j - 1, &first, &len);
				me->job = JOB_LOAD;
				me->buf = (char *)ru->bufs[mi] + first / 8 * NK__LINE;
				me->len = len / 8 * NK__LINE;
			}
		}
	}
	t.n = n;
	t.warm = r->opts.warmups;
	t.reps = reps;
	atomic_store(&t.chasers_left, r->ncpu);
	if (target_mi >= 0)
		snprintf(what, sizeof what, "loaded latency: every cpu node -> memory node %d", r->mem_nodes[target_mi]);
	else
		snprintf(what, sizeof what, "loaded latency: every cpu node -> its own memory");
	if ((rc = team_run(ru, &t, what)))
		goto out;
	k = 0;
	for (int ci = 0; ci < r->ncpu; ci++) {
		int mi = target_mi >= 0 ? target_mi : r->own_mem[ci];
		int metric = target_mi >= 0 ? NK_BENCH_LOADED_ALL : NK_BENCH_LOADED_OWN;

		if ((rc = stat_of(ru, t.mb[k].samples, &cell(ru, ci, mi)->stat[metric][NK_BENCH_ONE])))
			goto out;
		k += ru->ncpus[ci];
	}
out:
	for (int i = 0; i < n; i++)
		free(t.mb[i].samples);
	free(t.mb);
	return rc;
}

/* MB/s of @p bytes per repetition from the team's times. */
static int mbs_stat(struct run *ru, struct team *t, double bytes, nk_bench_stat *out)
{
	int reps = t->reps;

	for (int i = 0; i < reps; i++)
		t->rep_ns[i] = t->rep_ns[i] > 0 ? bytes / t->rep_ns[i] * 1e3 : 0; /* bytes/ns * 1e3 = MB/s */
	return stat_of(ru, t->rep_ns, out);
}

static int kernel_team(struct run *ru, int ci, int mi, const struct nk__bench_kernel *k, int nthreads,
		       nk_bench_stat *out)
{
	struct team t = { 0 };
	size_t nelem = ru->len / sizeof(double) / (size_t)k->arrays / 8 * 8;
	double *base = ru->bufs[mi];
	double *arr[3];
	char what[112];
	int rc;

	for (int i = 0; i < 3; i++)
		arr[i] = base + (size_t)(i < k->arrays ? i : 0) * nelem;
	t.mb = calloc((size_t)nthreads, sizeof *t.mb);
	t.rep_ns = calloc((size_t)ru->r->opts.repetitions, sizeof(double));
	if (!t.mb || !t.rep_ns) {
		rc = nk__error(ru->err, NK_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nthreads; i++) {
		size_t first, n;

		nk__bench_split(nelem, nthreads, i, &first, &n);
		t.mb[i].cpu = ru->cpus[ci][i];
		t.mb[i].node = ru->r->cpu_nodes[ci];
		t.mb[i].job = JOB_KERNEL;
		t.mb[i].k = k;
		/* a is written, b and c read: one, two or three arrays. */
		t.mb[i].a = (k->arrays == 1 ? arr[0] : k->arrays == 2 ? arr[1] : arr[0]) + first;
		t.mb[i].b = (k->arrays == 3 ? arr[1] : arr[0]) + first;
		t.mb[i].c = (k->arrays == 3 ? arr[2] : arr[0]) + first;
		t.mb[i].n = n;
	}
	t.n = nthreads;
	t.synced = 1;
	t.warm = ru->r->opts.warmups;
	t.reps = ru->r->opts.repetitions;
	snprintf(what, sizeof what, "%s, %d thread%s, cpu node %d -> memory node %d", k->name, nthreads,
		 nthreads > 1 ? "s" : "", ru->r->cpu_nodes[ci], ru->r->mem_nodes[mi]);
	if (!(rc = team_run(ru, &t, what)))
		rc = mbs_stat(ru, &t, (double)nelem * k->bytes_per_elem, out);
out:
	free(t.mb);
	free(t.rep_ns);
	return rc;
}

static int pattern(struct run *ru, int ci, int mi, int metric, nk_bench_stat *out)
{
	struct team t = { 0 };
	struct member mb = { 0 };
	char what[96];
	int rc;

	t.rep_ns = calloc((size_t)ru->r->opts.repetitions, sizeof(double));
	if (!t.rep_ns)
		return nk__error(ru->err, NK_ENOMEM, "out of memory");
	mb.cpu = ru->cpus[ci][0];
	mb.node = ru->r->cpu_nodes[ci];
	mb.job = metric == NK_BENCH_RANDOM ? JOB_RANDOM : JOB_STRIDE;
	mb.buf = ru->bufs[mi];
	mb.len = ru->len;
	mb.stride = metric == NK_BENCH_STRIDE_PAGE ? ru->r->page_size : NK__LINE;
	t.n = 1;
	t.mb = &mb;
	t.synced = 1;
	t.warm = ru->r->opts.warmups;
	t.reps = ru->r->opts.repetitions;
	snprintf(what, sizeof what, "access pattern, cpu node %d -> memory node %d", mb.node, ru->r->mem_nodes[mi]);
	if (!(rc = team_run(ru, &t, what)))
		rc = mbs_stat(ru, &t, (double)mb.loads * NK__LINE, out);
	free(t.rep_ns);
	return rc;
}

static int bandwidth(struct run *ru, int ci, int mi)
{
	struct nk__bench_cell *c = cell(ru, ci, mi);
	const struct nk__bench_kernel *ks;
	int nk, rc;
	static const int patterns[] = { NK_BENCH_STRIDE_LINE, NK_BENCH_STRIDE_PAGE, NK_BENCH_RANDOM };

	ks = nk__bench_kernels(&nk);
	for (int i = 0; i < nk; i++) {
		if (ks[i].nt && (!ru->r->nt || !ks[i].fn))
			continue;
		if ((rc = kernel_team(ru, ci, mi, &ks[i], 1, &c->stat[ks[i].metric][NK_BENCH_ONE])))
			return rc;
		/* One cpu: "all cpus" is the same run again; guests are slow enough without it. */
		if (ru->ncpus[ci] == 1)
			c->stat[ks[i].metric][NK_BENCH_ALL] = c->stat[ks[i].metric][NK_BENCH_ONE];
		else if ((rc = kernel_team(ru, ci, mi, &ks[i], ru->ncpus[ci], &c->stat[ks[i].metric][NK_BENCH_ALL])))
			return rc;
	}
	for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
		if ((rc = pattern(ru, ci, mi, patterns[i], &c->stat[patterns[i]][NK_BENCH_ONE])))
			return rc;
	c->info.threads = ru->ncpus[ci];
	return 0;
}

/* Two writers, each on its own half-buffer of local memory (Guo & Han III.C). */
static int spread(struct run *ru, int kind)
{
	struct nk_bench_results *r = ru->r;
	const struct nk__bench_kernel *ks;
	struct team t = { 0 };
	struct member mb[2];
	int ci[2] = { -1, -1 }, cpu[2], nk, rc;
	size_t half = ru->len / 2 / sizeof(double) / 8 * 8;
	char what[96];

	/* Writers need local memory: cpu nodes whose own memory node is themselves. */
	for (int i = 0; i < r->ncpu; i++) {
		int local = r->mem_nodes[r->own_mem[i]] == r->cpu_nodes[i];

		if (!local)
			continue;
		if (kind == NK_BENCH_SPREAD_ONE_NODE && ru->ncpus[i] >= 2) {
			ci[0] = ci[1] = i;
			cpu[0] = ru->cpus[i][0];
			cpu[1] = ru->cpus[i][1];
			break;
		}
		if (kind == NK_BENCH_SPREAD_TWO_NODES) {
			int slot = ci[0] < 0 ? 0 : 1;

			ci[slot] = i;
			cpu[slot] = ru->cpus[i][0];
			if (slot == 1)
				break;
		}
	}
	if (ci[0] < 0 || ci[1] < 0) {
		return nk__bench_note(r, kind == NK_BENCH_SPREAD_ONE_NODE
						 ? "thread spread: no node with two cpus and local memory: one-node layout not measured"
						 : "thread spread: fewer than two nodes with cpus and local memory: two-node layout not measured");
	}
	ks = nk__bench_kernels(&nk);
	memset(mb, 0, sizeof mb);
	for (int i = 0; i < 2; i++) {
		double *base = ru->bufs[r->own_mem[ci[i]]];

		mb[i].cpu = cpu[i];
		mb[i].node = r->cpu_nodes[ci[i]];
		mb[i].job = JOB_KERNEL;
		mb[i].k = &ks[NK_BENCH_WRITE - NK_BENCH_READ];
		mb[i].a = base + (kind == NK_BENCH_SPREAD_ONE_NODE ? (size_t)i * half : 0);
		mb[i].b = mb[i].c = mb[i].a;
		mb[i].n = half;
		r->spread[kind].cpus[i] = cpu[i];
		r->spread[kind].nodes[i] = mb[i].node;
	}
	t.mb = mb;
	t.n = 2;
	t.synced = 1;
	t.warm = r->opts.warmups;
	t.reps = r->opts.repetitions;
	t.rep_ns = calloc((size_t)t.reps, sizeof(double));
	if (!t.rep_ns)
		return nk__error(ru->err, NK_ENOMEM, "out of memory");
	snprintf(what, sizeof what, "thread spread: writers on cpus %d and %d", cpu[0], cpu[1]);
	if (!(rc = team_run(ru, &t, what)))
		rc = mbs_stat(ru, &t, 2.0 * (double)half * sizeof(double), &r->spread[kind].mbs);
	if (!rc)
		r->have_spread[kind] = 1;
	free(t.rep_ns);
	return rc;
}

/* Usable cpus of each cpu node, in increasing order. */
static int gather_cpus(struct run *ru)
{
	struct nk_bench_results *r = ru->r;
	int na = nk_machine_allowed_cpus(ru->m, NULL, 0);
	int *allowed = malloc(((size_t)(na > 0 ? na : 0) + 1) * sizeof *allowed);

	ru->cpus = calloc((size_t)r->ncpu, sizeof *ru->cpus);
	ru->ncpus = calloc((size_t)r->ncpu, sizeof *ru->ncpus);
	if (!allowed || !ru->cpus || !ru->ncpus)
		goto oom;
	na = nk_machine_allowed_cpus(ru->m, allowed, (size_t)na);
	for (int ci = 0; ci < r->ncpu; ci++) {
		int n = nk_machine_node_cpus(ru->m, r->cpu_nodes[ci], NULL, 0);

		ru->cpus[ci] = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(int));
		if (!ru->cpus[ci])
			goto oom;
		nk_machine_node_cpus(ru->m, r->cpu_nodes[ci], ru->cpus[ci], (size_t)n);
		for (int i = 0; i < n; i++)
			if (nk__bench_index(allowed, na, ru->cpus[ci][i]) >= 0)
				ru->cpus[ci][ru->ncpus[ci]++] = ru->cpus[ci][i];
	}
	free(allowed);
	return 0;
oom:
	free(allowed);
	return nk__error(ru->err, NK_ENOMEM, "out of memory");
}

int nk_bench_options_check(const nk_machine *m, const nk_bench_options *o, nk_error *err)
{
	struct nk_bench_results *r = calloc(1, sizeof *r);
	int rc;

	if (!r)
		return nk__error(err, NK_ENOMEM, "out of memory");
	rc = nk__bench_plan(m, o, r, err);
	nk_bench_results_free(r);
	return rc;
}

int nk_bench_run(const nk_machine *m, const nk_bench_options *o, nk_bench_progress_fn progress_fn, void *user,
		 nk_bench_results **out, nk_error *err)
{
	struct run ru = { 0 };
	struct nk_bench_results *r = NULL;
	int rc, ci, mi;

	if (!m || !out)
		return nk__error(err, NK_EINVAL, "bench: NULL argument");
	if (nk_machine_source(m, NULL) != NK_SOURCE_LIVE)
		return nk__error(err, NK_EINVAL, "bench: only the live machine can be measured");
	r = calloc(1, sizeof *r);
	if (!r)
		return nk__error(err, NK_ENOMEM, "out of memory");
	if ((rc = nk__bench_plan(m, o, r, err)))
		goto out;
	ru.m = m;
	ru.r = r;
	ru.err = err;
	ru.progress = progress_fn;
	ru.user = user;
	ru.len = r->opts.size;
	ru.nmem = r->nmem;
	ru.ncpu = r->ncpu;
	r->nt = nk__bench_have_nt();
	if (!r->nt && (rc = nk__bench_note(r, "this cpu has no non-temporal stores: *_nt kernels not measured")))
		goto out;
	r->cells = calloc((size_t)r->ncpu * (size_t)r->nmem, sizeof *r->cells);
	ru.bufs = calloc((size_t)r->nmem, sizeof *ru.bufs);
	if (!r->cells || !ru.bufs) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = gather_cpus(&ru)))
		goto out;
	ru.steps = 3 * r->nmem + 2 * r->ncpu * r->nmem + 3;

	for (mi = 0; mi < r->nmem; mi++) {
		progress(&ru, "placing the buffer on memory node %d", r->mem_nodes[mi]);
		if ((rc = place(&ru, mi)))
			goto out;
	}
	for (ci = 0; ci < r->ncpu; ci++)
		for (mi = 0; mi < r->nmem; mi++) {
			progress(&ru, "idle latency, cpu node %d -> memory node %d", r->cpu_nodes[ci], r->mem_nodes[mi]);
			if ((rc = latency(&ru, ci, mi)))
				goto out;
		}
	for (mi = 0; mi < r->nmem; mi++) {
		progress(&ru, "loaded latency, every cpu node -> memory node %d", r->mem_nodes[mi]);
		if ((rc = loaded(&ru, mi)))
			goto out;
	}
	progress(&ru, "loaded latency, every cpu node -> its own memory");
	if ((rc = loaded(&ru, -1)))
		goto out;
	for (mi = 0; mi < r->nmem; mi++) {
		/* The chase left pointers there; kernels want ordinary doubles (pointers read as
		 * doubles are denormals, slow on x86). */
		const struct nk__bench_kernel *ks;
		int nk;

		ks = nk__bench_kernels(&nk);
		ks[NK_BENCH_WRITE - NK_BENCH_READ].fn(ru.bufs[mi], NULL, NULL, ru.len / sizeof(double) / 8 * 8);
		for (ci = 0; ci < r->ncpu; ci++) {
			progress(&ru, "bandwidth, cpu node %d -> memory node %d", r->cpu_nodes[ci], r->mem_nodes[mi]);
			if ((rc = bandwidth(&ru, ci, mi)))
				goto out;
		}
	}
	progress(&ru, "thread spread: two writers on one node");
	if ((rc = spread(&ru, NK_BENCH_SPREAD_ONE_NODE)))
		goto out;
	progress(&ru, "thread spread: two writers on two nodes");
	if ((rc = spread(&ru, NK_BENCH_SPREAD_TWO_NODES)))
		goto out;
	for (mi = 0; mi < r->nmem; mi++) {
		size_t pages = 0;

		progress(&ru, "checking where the pages of memory node %d are", r->mem_nodes[mi]);
		if ((rc = verify(&ru, mi, "after the measurements", &pages)))
			goto out;
		for (ci = 0; ci < r->ncpu; ci++) {
			cell(&ru, ci, mi)->info.pages = pages;
			cell(&ru, ci, mi)->info.placement_verified = 1;
			cell(&ru, ci, mi)->measured = 1;
		}
	}
	*out = r;
	r = NULL;
out:
	if (ru.bufs)
		for (mi = 0; mi < ru.nmem; mi++)
			nk__os_unmap(ru.bufs[mi], ru.len, NULL);
	if (ru.cpus)
		for (ci = 0; ci < ru.ncpu; ci++)
			free(ru.cpus[ci]);
	free(ru.cpus);
	free(ru.ncpus);
	free(ru.bufs);
	nk_bench_results_free(r);
	return rc;
}
