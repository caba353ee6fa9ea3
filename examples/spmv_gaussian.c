/* SPDX-License-Identifier: BSD-3-Clause
 * spmv_gaussian — Slavin & Freeman's experiment (§5.2, Table 1) with numakit's
 * FGDLS: y = A x repeated over outer iterations, A an N x N sparse matrix in
 * CSR whose row r holds 1 + round(P exp(-z^2/2)) non-zeros, z = (r - N/2) /
 * (N/16) (a Gaussian around the middle row; P = --peak), columns uniform
 * (deterministic PRNG).  Every array is page-aligned (mmap) and initialised
 * by the main thread, so first touch puts it all on one node, as in the
 * untuned program.  T pthreads, pinned round robin over the allowed cpus,
 * each compute the rows of their slice.
 *
 * Modes:  static            equipartition, no migration (the untuned code)
 *         static+migrate    equipartition, slices migrated once before the first iteration
 *         fgdls             FGDLS; after each update the slices' pages migrate (nk_fgdls_migrate)
 *         fgdls-nomigrate   FGDLS without migration
 *
 * Remote accesses are computed from residency (nk_where) and the thread ->
 * node map, weighted by bytes read per iteration: for each row of a thread's
 * slice, its values (8 B each), column indices (4 B each), its row pointer
 * (8 B) and its y entry (8 B) — the streamed data, which is what the paper's
 * counters (L2 misses) see; accesses to x (8 B per non-zero, on x's page of
 * the column) are reported apart: x is 64 KiB at N = 8192, shared by every
 * thread, and cache-resident on a real machine.
 *
 * --check (the guest test tests/vm/tests/threads_fgdls): after every
 * migration, every page of every attached array must be on the node of the
 * thread whose slice holds the page's first byte (its nearest node with
 * memory for a memoryless node), contents bit for bit as before; FGDLS must
 * bring the last iteration's remote fraction below 1% (when every thread's
 * node has memory, and --max-remote 1 asks for it).  Exit 1 when not.
 *
 * Timings in emulated guests (QEMU TCG) are not NUMA-realistic; the remote
 * fractions are.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "numakit.h"

enum { MODE_STATIC, MODE_STATIC_MIGRATE, MODE_FGDLS, MODE_FGDLS_NOMIGRATE, MODE_COUNT };
static const char *mode_names[MODE_COUNT] = { "static", "static+migrate", "fgdls", "fgdls-nomigrate" };

struct opts {
	long n;
	int threads;
	int iters;
	int peak;
	int cost_nnz;
	double damping;
	double max_remote; /* --max-remote: fraction, < 0 = no limit */
	int check;
	int json;
	int modes[MODE_COUNT];
	unsigned long long seed;
};

struct matrix {
	long n, nnz;
	long *rowptr;   /* n + 1 */
	int *col;       /* nnz */
	double *val;    /* nnz */
	double *x, *y;  /* n */
	size_t bytes[5];
};

struct iter_stat {
	double imbalance, remote, remote_x, time, mig_time;
	size_t moved;
};

struct team;
struct member {
	struct team *tm;
	int tid, cpu, node;
	double cost;
};
struct team {
	const struct opts *o;
	struct matrix *a;
	nk_fgdls *f;
	int record; /* fgdls modes: threads record their cost */
	int stop;
	pthread_barrier_t start, done;
	struct member *mb;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static void *page_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes ? bytes : 1, MADV_NOHUGEPAGE); /* base pages: the granularity the paper migrates */
	return p;
}

static long row_nnz(long r, long n, int peak)
{
	double z = ((double)r - n / 2.0) / (n / 16.0);
	return 1 + (long)floor(peak * exp(-0.5 * z * z) + 0.5);
}

/* Build and initialise serially on the calling thread (first touch: its node). */
static int matrix_build(struct matrix *a, const struct opts *o)
{
	uint64_t s = o->seed;
	long n = o->n, nnz = 0;

	memset(a, 0, sizeof *a);
	a->n = n;
	for (long r = 0; r < n; r++)
		nnz += row_nnz(r, n, o->peak);
	a->nnz = nnz;
	a->bytes[0] = (size_t)nnz * sizeof(double);
	a->bytes[1] = (size_t)nnz * sizeof(int);
	a->bytes[2] = (size_t)(n + 1) * sizeof(long);
	a->bytes[3] = (size_t)n * sizeof(double);
	a->bytes[4] = (size_t)n * sizeof(double);
	a->val = page_alloc(a->bytes[0]);
	a->col = page_alloc(a->bytes[1]);
	a->rowptr = page_alloc(a->bytes[2]);
	a->x = page_alloc(a->bytes[3]);
	a->y = page_alloc(a->bytes[4]);
	if (!a->val || !a->col || !a->rowptr || !a->x || !a->y)
		return -1;
	a->rowptr[0] = 0;
	for (long r = 0; r < n; r++) {
		long k0 = a->rowptr[r], k1 = k0 + row_nnz(r, n, o->peak);
		for (long k = k0; k < k1; k++) {
			a->col[k] = (int)(rng_next(&s) % (uint64_t)n);
			a->val[k] = (double)(rng_next(&s) >> 11) / 9007199254740992.0;
		}
		a->rowptr[r + 1] = k1;
	}
	for (long i = 0; i < n; i++) {
		a->x[i] = 1.0 + (double)i / n;
		a->y[i] = 0;
	}
	return 0;
}

static void matrix_free(struct matrix *a)
{
	void *p[5] = { a->val, a->col, a->rowptr, a->x, a->y };
	for (int k = 0; k < 5; k++)
		if (p[k])
			munmap(p[k], a->bytes[k] ? a->bytes[k] : 1);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001B3ULL;
	return h;
}

static uint64_t checksum(const struct matrix *a)
{
	uint64_t h = 0xCBF29CE484222325ULL;
	h = fnv(h, a->val, a->bytes[0]);
	h = fnv(h, a->col, a->bytes[1]);
	h = fnv(h, a->rowptr, a->bytes[2]);
	h = fnv(h, a->x, a->bytes[3]);
	return fnv(h, a->y, a->bytes[4]);
}

static void *worker(void *arg)
{
	struct member *me = arg;
	struct team *tm = me->tm;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(me->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	for (;;) {
		nk_range r;
		double t0;
		const struct matrix *a = tm->a;
		pthread_barrier_wait(&tm->start);
		if (tm->stop)
			return NULL;
		nk_fgdls_slice(tm->f, me->tid, &r);
		t0 = now();
		for (long i = r.begin; i < r.end; i++) {
			double s = 0;
			for (long k = a->rowptr[i]; k < a->rowptr[i + 1]; k++)
				s += a->val[k] * a->x[a->col[k]];
			a->y[i] = s;
		}
		me->cost = tm->o->cost_nnz ? (double)(a->rowptr[r.end] - a->rowptr[r.begin]) : now() - t0;
		if (tm->record)
			nk_fgdls_record(tm->f, me->tid, me->cost);
		pthread_barrier_wait(&tm->done);
	}
}

/* Node of each page of an array, into a fresh buffer (NULL on failure). */
static int *residency(const nk_machine *m, const void *p, size_t bytes, size_t *np)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	int *nodes;
	*np = (bytes + ps - 1) / ps;
	nodes = malloc((*np ? *np : 1) * sizeof *nodes);
	if (nodes && *np && nk_where(m, p, bytes, nodes, NULL)) {
		free(nodes);
		return NULL;
	}
	return nodes;
}

/* Remote fractions of one iteration: streamed data (matrix + y) and x. */
static int remote_fractions(const nk_machine *m, const struct team *tm, double *remote, double *remote_x)
{
	const struct matrix *a = tm->a;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), np[5];
	const void *arr[5] = { a->val, a->col, a->rowptr, a->x, a->y };
	int *res[5] = { 0 };
	double rb = 0, tb = 0, rx = 0, tx = 0;
	int rc = -1;

	for (int k = 0; k < 5; k++)
		if (!(res[k] = residency(m, arr[k], a->bytes[k], &np[k])))
			goto out;
#define NODE_OF(k, ptr) (res[k][(size_t)((const char *)(ptr) - (const char *)arr[k]) / ps])
	for (int t = 0; t < tm->o->threads; t++) {
		nk_range r;
		int me = tm->mb[t].node;
		nk_fgdls_slice(tm->f, t, &r);
		for (long i = r.begin; i < r.end; i++) {
			tb += 16;
			rb += 8 * (NODE_OF(2, &a->rowptr[i]) != me) + 8 * (NODE_OF(4, &a->y[i]) != me);
			for (long k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
				tb += 12;
				rb += 8 * (NODE_OF(0, &a->val[k]) != me) + 4 * (NODE_OF(1, &a->col[k]) != me);
				tx += 8;
				rx += 8 * (NODE_OF(3, &a->x[a->col[k]]) != me);
			}
		}
	}
#undef NODE_OF
	*remote = tb > 0 ? rb / tb : 0;
	*remote_x = tx > 0 ? rx / tx : 0;
	rc = 0;
out:
	for (int k = 0; k < 5; k++)
		free(res[k]);
	return rc;
}

/* Where thread t's pages must be: its node, or the nearest node with memory. */
static int target_of(const nk_machine *m, int node)
{
	int near[1];
	if (nk_machine_node_flags(m, node) & NK_NODE_HAS_MEMORY)
		return node;
	return nk_machine_neighbors(m, node, near, 1) > 0 ? near[0] : node;
}

/* --check: the first-byte rule, page by page, for the attached arrays. */
static int check_placement(const nk_machine *m, const struct team *tm, int it)
{
	const struct matrix *a = tm->a;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	const void *arr[4] = { a->val, a->col, a->rowptr, a->y };
	const size_t esz[4] = { sizeof(double), sizeof(int), sizeof(long), sizeof(double) };
	const char *name[4] = { "values", "col", "rowptr", "y" };
	int bad = 0;

	for (int k = 0; k < 4; k++) {
		size_t np, len = k < 2 ? (size_t)a->nnz * esz[k] : (size_t)a->n * esz[k];
		int *nodes = residency(m, arr[k], len, &np);
		if (!nodes) {
			fprintf(stderr, "check: nk_where failed on %s\n", name[k]);
			return 1;
		}
		for (int t = 0; t < tm->o->threads; t++) {
			nk_range r;
			size_t s, e;
			int want = target_of(m, tm->mb[t].node);
			nk_fgdls_slice(tm->f, t, &r);
			s = (size_t)(k < 2 ? a->rowptr[r.begin] : r.begin) * esz[k];
			e = (size_t)(k < 2 ? a->rowptr[r.end] : r.end) * esz[k];
			/* arrays start on a page: page p's first byte is p * ps */
			for (size_t p = (s + ps - 1) / ps; p < (e + ps - 1) / ps && p < np; p++)
				if (nodes[p] != want) {
					if (bad++ < 10)
						fprintf(stderr,
							"check: iteration %d: %s page %zu (thread %d's slice [%ld,%ld)) on "
							"node %d, expected %d\n",
							it, name[k], p, t, r.begin, r.end, nodes[p], want);
				}
		}
		free(nodes);
	}
	return bad != 0;
}

static int run_mode(const nk_machine *m, const struct opts *o, int mode, const int *cpus, int ncpus,
		    struct iter_stat *st, int *failed)
{
	struct matrix a;
	struct team tm = { 0 };
	pthread_t *th = NULL;
	uint64_t ref = 0;
	int rc = -1, migrate = mode == MODE_FGDLS || mode == MODE_STATIC_MIGRATE;
	int adaptive = mode == MODE_FGDLS || mode == MODE_FGDLS_NOMIGRATE, all_mem = 1;
	cpu_set_t set;
	nk_error err;

	/* the untuned program: everything first-touched by the main thread on cpu 0 of the team */
	CPU_ZERO(&set);
	CPU_SET(cpus[0], &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (matrix_build(&a, o)) {
		fprintf(stderr, "spmv_gaussian: out of memory for N = %ld\n", o->n);
		matrix_free(&a);
		return -1;
	}
	tm.o = o;
	tm.a = &a;
	tm.record = adaptive;
	tm.mb = calloc((size_t)o->threads, sizeof *tm.mb);
	th = calloc((size_t)o->threads, sizeof *th);
	if (!tm.mb || !th || nk_fgdls_create(m, 0, o->n, o->threads, &tm.f)) {
		fprintf(stderr, "spmv_gaussian: cannot create the scheduler (threads %d > N %ld?)\n", o->threads, o->n);
		goto out;
	}
	if (o->damping > 0 && nk_fgdls_set_damping(tm.f, o->damping)) {
		fprintf(stderr, "spmv_gaussian: damping %g outside (0, 1]\n", o->damping);
		goto out;
	}
	nk_fgdls_attach_offsets(tm.f, a.val, sizeof *a.val, a.rowptr);
	nk_fgdls_attach_offsets(tm.f, a.col, sizeof *a.col, a.rowptr);
	nk_fgdls_attach(tm.f, a.rowptr, sizeof *a.rowptr);
	nk_fgdls_attach(tm.f, a.y, sizeof *a.y);
	for (int t = 0; t < o->threads; t++) {
		nk_cpu_info ci;
		tm.mb[t] = (struct member){ &tm, t, cpus[t % ncpus], 0, 0 };
		tm.mb[t].node = nk_machine_cpu_info(m, tm.mb[t].cpu, &ci) ? -1 : ci.node;
		if (!(nk_machine_node_flags(m, tm.mb[t].node) & NK_NODE_HAS_MEMORY))
			all_mem = 0;
		if (!adaptive) /* fgdls modes learn the node from the threads' records (getcpu) */
			nk_fgdls_set_thread_node(tm.f, t, tm.mb[t].node);
	}
	pthread_barrier_init(&tm.start, NULL, (unsigned)o->threads + 1);
	pthread_barrier_init(&tm.done, NULL, (unsigned)o->threads + 1);
	for (int t = 0; t < o->threads; t++)
		pthread_create(&th[t], NULL, worker, &tm.mb[t]);

	for (int it = 0; it < o->iters; it++) {
		struct iter_stat *s = &st[it];
		double t0, max = 0, sum = 0;
		if (mode == MODE_STATIC_MIGRATE && it == 0) {
			nk_apply_result res;
			t0 = now();
			if (nk_fgdls_migrate(tm.f, 0, &res, &err)) {
				fprintf(stderr, "spmv_gaussian: migrate: %s\n", err.message);
				goto stop;
			}
			s->mig_time = now() - t0;
			s->moved = res.pages_moved;
			if (o->check && check_placement(m, &tm, it))
				*failed = 1;
		}
		t0 = now();
		pthread_barrier_wait(&tm.start);
		pthread_barrier_wait(&tm.done);
		s->time = now() - t0;
		if (it == 0)
			ref = checksum(&a); /* y is the same every iteration: x does not change */
		for (int t = 0; t < o->threads; t++) {
			sum += tm.mb[t].cost;
			if (tm.mb[t].cost > max)
				max = tm.mb[t].cost;
		}
		s->imbalance = sum > 0 ? max / (sum / o->threads) - 1 : 0;
		if (remote_fractions(m, &tm, &s->remote, &s->remote_x)) {
			fprintf(stderr, "spmv_gaussian: nk_where failed\n");
			goto stop;
		}
		if (adaptive && it + 1 < o->iters) {
			nk_fgdls_update(tm.f);
			if (migrate) {
				nk_apply_result res;
				double m0 = now();
				if (nk_fgdls_migrate(tm.f, 0, &res, &err)) {
					fprintf(stderr, "spmv_gaussian: migrate: %s\n", err.message);
					goto stop;
				}
				st[it + 1].mig_time = now() - m0; /* charged to the iteration it prepares */
				st[it + 1].moved = res.pages_moved;
				if (o->check) {
					if (check_placement(m, &tm, it + 1))
						*failed = 1;
					if (checksum(&a) != ref) {
						fprintf(stderr, "check: iteration %d: contents changed by migration\n", it);
						*failed = 1;
					}
				}
			}
		}
	}
	if (o->check && mode == MODE_FGDLS && all_mem && o->max_remote >= 0 &&
	    st[o->iters - 1].remote >= o->max_remote) {
		fprintf(stderr, "check: fgdls: last iteration %.3f%% remote, expected < %g%%\n",
			100 * st[o->iters - 1].remote, 100 * o->max_remote);
		*failed = 1;
	}
	/* balance is only reachable when a row is a small part of a slice */
	if (o->check && mode == MODE_FGDLS && o->cost_nnz && o->iters >= 15 && o->n >= 256L * o->threads &&
	    st[o->iters - 1].imbalance >= 0.05) {
		fprintf(stderr, "check: fgdls: imbalance %.2f%% after %d iterations, expected < 5%%\n",
			100 * st[o->iters - 1].imbalance, o->iters);
		*failed = 1;
	}
	rc = 0;
stop:
	tm.stop = 1;
	pthread_barrier_wait(&tm.start);
	for (int t = 0; t < o->threads; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&tm.start);
	pthread_barrier_destroy(&tm.done);
out:
	nk_fgdls_free(tm.f);
	free(tm.mb);
	free(th);
	matrix_free(&a);
	return rc;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: spmv_gaussian [OPTIONS]\n"
		"Sparse matrix-vector product with Gaussian row density, repeated; equipartition vs FGDLS with\n"
		"page migration (Slavin & Freeman, Table 1).\n"
		"  -n, --size N        matrix rows and columns (default 8192)\n"
		"  -t, --threads T     threads, pinned round robin over the allowed cpus (default: one per cpu)\n"
		"  -i, --iterations K  outer iterations (default 20)\n"
		"  -m, --mode LIST     comma list of static, static+migrate, fgdls, fgdls-nomigrate, or all (default)\n"
		"      --cost WHAT     time (default: measured seconds) or nnz (deterministic work measure)\n"
		"      --damping D     FGDLS damping in (0, 1] (default: the library's)\n"
		"      --peak P        non-zeros of the middle row minus one (default 512)\n"
		"      --seed S        PRNG seed (default 1)\n"
		"      --check         verify placement and contents after every migration (exit 1 on failure)\n"
		"      --max-remote PCT  with --check: fgdls's last iteration must read < PCT%% remote (when\n"
		"                        every thread's node has memory)\n"
		"      --json          machine-readable output\n"
		"  -h, --help          this text\n");
}

static int parse_modes(const char *s, int *modes)
{
	char buf[256], *tok, *save = NULL;
	if (!strcmp(s, "all")) {
		for (int k = 0; k < MODE_COUNT; k++)
			modes[k] = 1;
		return 0;
	}
	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k = 0;
		while (k < MODE_COUNT && strcmp(tok, mode_names[k]))
			k++;
		if (k == MODE_COUNT)
			return -1;
		modes[k] = 1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int any = 0;
	*o = (struct opts){ .n = 8192, .iters = 20, .peak = 512, .seed = 1, .max_remote = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
#define ARG(s, l) (!strcmp(a, s) || !strcmp(a, l))
		if (ARG("-h", "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--check")) {
			o->check = 1;
			continue;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		} else if (!v) {
			fprintf(stderr, "spmv_gaussian: %s: unknown option or missing value\n", a);
			return -1;
		} else if (ARG("-n", "--size")) {
			o->n = strtol(v, &end, 10);
			if (*end || o->n < 1 || o->n > (1L << 28))
				goto bad;
		} else if (ARG("-t", "--threads")) {
			o->threads = (int)strtol(v, &end, 10);
			if (*end || o->threads < 1 || o->threads > 4096)
				goto bad;
		} else if (ARG("-i", "--iterations")) {
			o->iters = (int)strtol(v, &end, 10);
			if (*end || o->iters < 1 || o->iters > 100000)
				goto bad;
		} else if (ARG("-m", "--mode")) {
			if (parse_modes(v, o->modes))
				goto bad;
			any = 1;
		} else if (!strcmp(a, "--cost")) {
			if (strcmp(v, "time") && strcmp(v, "nnz"))
				goto bad;
			o->cost_nnz = !strcmp(v, "nnz");
		} else if (!strcmp(a, "--damping")) {
			o->damping = strtod(v, &end);
			if (*end || !(o->damping > 0 && o->damping <= 1))
				goto bad;
		} else if (!strcmp(a, "--peak")) {
			o->peak = (int)strtol(v, &end, 10);
			if (*end || o->peak < 0 || o->peak > 100000)
				goto bad;
		} else if (!strcmp(a, "--max-remote")) {
			o->max_remote = strtod(v, &end) / 100;
			if (*end || !(o->max_remote >= 0 && o->max_remote <= 1))
				goto bad;
		} else if (!strcmp(a, "--seed")) {
			o->seed = strtoull(v, &end, 10);
			if (*end)
				goto bad;
		} else {
			fprintf(stderr, "spmv_gaussian: %s: unknown option (try --help)\n", a);
			return -1;
		}
		i++;
		continue;
	bad:
		fprintf(stderr, "spmv_gaussian: %s: bad value '%s' (try --help)\n", a, v);
		return -1;
#undef ARG
	}
	if (!any)
		parse_modes("all", o->modes);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	nk_machine *m = NULL;
	nk_error err;
	int *cpus = NULL, ncpus, failed = 0, first = 1;
	struct iter_stat *st[MODE_COUNT] = { 0 };
	double base_time = 0;

	if (parse(argc, argv, &o))
		return 2;
	if (nk_machine_load_live(&m, &err)) {
		fprintf(stderr, "spmv_gaussian: %s\n", err.message);
		return 1;
	}
	ncpus = nk_machine_allowed_cpus(m, NULL, 0);
	cpus = malloc((size_t)(ncpus > 0 ? ncpus : 1) * sizeof *cpus);
	if (ncpus < 1 || !cpus) {
		fprintf(stderr, "spmv_gaussian: no allowed cpu\n");
		return 1;
	}
	nk_machine_allowed_cpus(m, cpus, (size_t)ncpus);
	if (!o.threads)
		o.threads = ncpus;
	if (o.threads > o.n) {
		fprintf(stderr, "spmv_gaussian: %d threads for %ld rows: at most one thread per row\n", o.threads, o.n);
		return 2;
	}

	for (int k = 0; k < MODE_COUNT; k++) {
		if (!o.modes[k])
			continue;
		st[k] = calloc((size_t)o.iters, sizeof *st[k]);
		if (!st[k] || run_mode(m, &o, k, cpus, ncpus, st[k], &failed)) {
			failed = 1;
			free(st[k]);
			st[k] = NULL;
		}
	}

	/* summaries: remote fraction over all iterations = mean of per-iteration
	 * fractions (every iteration reads the same bytes) */
	if (o.json)
		printf("{\"n\": %ld, \"threads\": %d, \"iterations\": %d, \"cost\": \"%s\", \"modes\": [", o.n, o.threads,
		       o.iters, o.cost_nnz ? "nnz" : "time");
	else
		printf("spmv_gaussian: N=%ld threads=%d iterations=%d cost=%s nodes=%d\n", o.n, o.threads, o.iters,
		       o.cost_nnz ? "nnz" : "time", nk_machine_num_nodes(m));
	if (st[MODE_STATIC])
		for (int it = 0; it < o.iters; it++)
			base_time += st[MODE_STATIC][it].time;
	for (int k = 0; k < MODE_COUNT; k++) {
		double rem = 0, remx = 0, time = 0, mig = 0;
		size_t moved = 0;
		if (!st[k])
			continue;
		for (int it = 0; it < o.iters; it++) {
			rem += st[k][it].remote / o.iters;
			remx += st[k][it].remote_x / o.iters;
			time += st[k][it].time;
			mig += st[k][it].mig_time;
			moved += st[k][it].moved;
		}
		if (o.json) {
			printf("%s{\"mode\": \"%s\", \"per_iteration\": [", first ? "" : ", ", mode_names[k]);
			for (int it = 0; it < o.iters; it++)
				printf("%s{\"imbalance\": %.6f, \"remote\": %.6f, \"remote_x\": %.6f, \"time\": %.6f, "
				       "\"migrate_time\": %.6f, \"pages_moved\": %zu}",
				       it ? ", " : "", st[k][it].imbalance, st[k][it].remote, st[k][it].remote_x,
				       st[k][it].time, st[k][it].mig_time, st[k][it].moved);
			printf("], \"remote\": %.6f, \"remote_last\": %.6f, \"remote_x\": %.6f, \"time\": %.6f, "
			       "\"migrate_time\": %.6f, \"pages_moved\": %zu}",
			       rem, st[k][o.iters - 1].remote, remx, time, mig, moved);
		} else {
			printf("\n%s\n  iter  imbalance%%  remote%%  remote-x%%   time(ms)  migrate(ms)  moved\n",
			       mode_names[k]);
			for (int it = 0; it < o.iters; it++)
				printf("  %4d  %10.2f  %7.2f  %9.2f  %9.3f  %11.3f  %5zu\n", it,
				       100 * st[k][it].imbalance, 100 * st[k][it].remote, 100 * st[k][it].remote_x,
				       1e3 * st[k][it].time, 1e3 * st[k][it].mig_time, st[k][it].moved);
		}
		first = 0;
	}
	if (o.json) {
		printf("], \"check\": \"%s\"}\n", o.check ? (failed ? "failed" : "passed") : "off");
	} else {
		printf("\nTable (after Slavin & Freeman, Table 1): remote = matrix + y bytes read from another node\n");
		printf("  %-16s %9s %9s %9s %9s %10s %9s\n", "mode", "remote%", "first%", "last%", "x-remote%",
		       "imbalance%", "time/static");
		for (int k = 0; k < MODE_COUNT; k++) {
			double rem = 0, remx = 0, time = 0;
			if (!st[k])
				continue;
			for (int it = 0; it < o.iters; it++) {
				rem += st[k][it].remote / o.iters;
				remx += st[k][it].remote_x / o.iters;
				time += st[k][it].time + st[k][it].mig_time;
			}
			printf("  %-16s %9.2f %9.2f %9.2f %9.2f %10.2f", mode_names[k], 100 * rem, 100 * st[k][0].remote,
			       100 * st[k][o.iters - 1].remote, 100 * remx, 100 * st[k][o.iters - 1].imbalance);
			if (base_time > 0)
				printf(" %11.3f\n", time / base_time);
			else
				printf(" %11s\n", "-");
		}
		printf("  (time/static includes migration; timings are meaningless in emulated guests)\n");
		if (o.check)
			printf("check: %s\n", failed ? "FAILED" : "passed");
	}
	for (int k = 0; k < MODE_COUNT; k++)
		free(st[k]);
	free(cpus);
	nk_machine_free(m);
	return failed ? 1 : 0;
}
