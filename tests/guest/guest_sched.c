/* SPDX-License-Identifier: BSD-3-Clause
 * Guest test of the loop schedules (run inside NUMA guests by
 * tests/vm/tests/threads_sched): for each schedule with the distribution it
 * matches, T pinned threads touch exactly the ranges the schedule gives
 * them, and the residency of exactly those bytes (nk_where) must be the
 * thread's node.  Rows are whole pages (or column bands whole pages), so a
 * page is never shared by threads of different nodes and the check is exact.
 *
 *   static            <-> block:split=rows,threads=<node of each thread>
 *   static_inverse    <-> the same with the thread list reversed
 *   block_exclusive   <-> block_exclusive, both views, every phase
 *   owner             <-> cyclic_block (row-aligned blocks), block, random,
 *                         cyclic (the owner schedule reads the residency)
 *
 * Teams: 1 thread, one per cpu, and two per cpu (oversubscribed).  Threads
 * pin themselves (sched_setaffinity) the way "scatter" places them: thread
 * t on node index floor(t N / T) when T <= N, else part_of(T, N, t), cpus of
 * a node round robin; the schedule's group rule is the inverse of that.
 * Where a thread must serve data of nodes without a thread of the team
 * (T < nodes), its pages must be on a node it serves.
 * Exit status 0 pass, 1 fail, 77 skip (fewer than two nodes).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numakit.h"
#include "threads/schedule_impl.h"

#define MAXN 64

static int failures;
static size_t ps;
static nk_machine *M;
static int nnodes;                     /* nodes (each with cpus and memory) */
static int node_id[MAXN];
static int node_cpus[MAXN][256], node_ncpus[MAXN];

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			failures++;                                         \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
			printf(__VA_ARGS__);                                \
			printf("\n");                                       \
		}                                                           \
	} while (0)

/* ---- a team of pinned threads ---- */

enum kind { K_STATIC, K_INVERSE, K_BE, K_OWNER };

struct byterange {
	size_t off, len;
};

struct team;

struct member {
	struct team *tm;
	int t, cpu, node_idx; /* where scatter puts it */
	int ran_cpu;          /* where it ran */
	struct byterange *br; /* bytes it touched */
	size_t nbr, capbr;
	int err;
};

struct team {
	int T;
	enum kind kind;
	char *data;
	size_t rows, cols, elem, row_bytes;
	int view, phase;                 /* block_exclusive */
	const nk_owner_sched *owner;
	int control; /* negative control: a mismatched distribution, remote pages expected */
	struct member mem[512];
};

static void add_bytes(struct member *me, size_t off, size_t len)
{
	if (!len)
		return;
	if (me->nbr == me->capbr) {
		me->capbr = me->capbr ? 2 * me->capbr : 64;
		me->br = realloc(me->br, me->capbr * sizeof *me->br);
		if (!me->br)
			abort();
	}
	me->br[me->nbr].off = off;
	me->br[me->nbr++].len = len;
}

/* Scatter: node index of thread t of T, and its cpu (round robin within the node). */
static void scatter(int t, int T, int *node_idx, int *cpu)
{
	int k, first;
	if (T <= nnodes) {
		k = (int)((long)t * nnodes / T);
		*cpu = node_cpus[k][0];
	} else {
		k = (int)nk__part_of((unsigned long)T, (unsigned long)nnodes, (unsigned long)t);
		first = (int)nk__part_start((unsigned long)T, (unsigned long)nnodes, (unsigned long)k);
		*cpu = node_cpus[k][(t - first) % node_ncpus[k]];
	}
	*node_idx = k;
}

static void *member_main(void *arg)
{
	struct member *me = arg;
	struct team *tm = me->tm;
	cpu_set_t set;
	nk_range r[4096];
	int n = 0;

	CPU_ZERO(&set);
	CPU_SET(me->cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		me->err = 1;
		return NULL;
	}
	me->ran_cpu = sched_getcpu();

	switch (tm->kind) {
	case K_STATIC:
		me->err = nk_sched_static(0, (long)tm->rows, me->t, tm->T, r) != 0;
		n = 1;
		break;
	case K_INVERSE:
		me->err = nk_sched_static_inverse(0, (long)tm->rows, me->t, tm->T, r) != 0;
		n = 1;
		break;
	case K_BE:
		n = nk_sched_block_exclusive((long)tm->rows, (long)tm->cols, nnodes, tm->view, tm->phase, 0,
					     tm->view == NK_VIEW_ROWS ? (long)tm->rows : (long)tm->cols, me->t, tm->T, r,
					     4096);
		me->err = n < 0;
		break;
	case K_OWNER:
		n = nk_sched_owner(tm->owner, me->t, r, 4096);
		me->err = n < 0 || n > 4096;
		break;
	}
	if (me->err)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (tm->kind != K_BE) {
			add_bytes(me, (size_t)r[i].begin * tm->row_bytes, (size_t)(r[i].end - r[i].begin) * tm->row_bytes);
		} else if (tm->view == NK_VIEW_ROWS) { /* rows r[i] x column band phase */
			size_t cb = nk__part_start(tm->cols, (unsigned long)nnodes, (unsigned long)tm->phase);
			size_t ce = nk__part_start(tm->cols, (unsigned long)nnodes, (unsigned long)tm->phase + 1);
			for (long row = r[i].begin; row < r[i].end; row++)
				add_bytes(me, (size_t)row * tm->row_bytes + cb * tm->elem, (ce - cb) * tm->elem);
		} else { /* row band phase x columns r[i] */
			size_t rb = nk__part_start(tm->rows, (unsigned long)nnodes, (unsigned long)tm->phase);
			size_t re = nk__part_start(tm->rows, (unsigned long)nnodes, (unsigned long)tm->phase + 1);
			for (size_t row = rb; row < re; row++)
				add_bytes(me, row * tm->row_bytes + (size_t)r[i].begin * tm->elem,
					  (size_t)(r[i].end - r[i].begin) * tm->elem);
		}
	}
	for (size_t i = 0; i < me->nbr; i++) /* the work: write every byte it owns */
		memset(tm->data + me->br[i].off, (char)(me->t + 1), me->br[i].len);
	return NULL;
}

/* Nodes (indices) a thread may find its pages on: its own, or the groups it serves when T < nodes. */
static int allowed(const struct team *tm, const struct member *me, int node_idx)
{
	if (node_idx == me->node_idx)
		return 1;
	if (tm->T >= nnodes)
		return 0;
	if (tm->kind == K_BE) {
		int g0, g1;
		nk__sched_groups(me->t, tm->T, nnodes, &g0, &g1);
		return node_idx >= g0 && node_idx < g1;
	}
	return -1; /* owner/static with fewer threads than nodes: locality is not defined */
}

/* Run the team, then check every touched page's node. */
static void run_team(struct team *tm, const char *what)
{
	pthread_t th[512];
	size_t pages_checked = 0, remote = 0, undefined = 0, mismatched = 0;
	int *where = NULL;
	size_t cap = 0;

	for (int t = 0; t < tm->T; t++) {
		struct member *me = &tm->mem[t];
		memset(me, 0, sizeof *me);
		me->tm = tm;
		me->t = t;
		scatter(t, tm->T, &me->node_idx, &me->cpu);
		if (pthread_create(&th[t], NULL, member_main, me)) {
			printf("FAIL pthread_create\n");
			exit(1);
		}
	}
	for (int t = 0; t < tm->T; t++)
		pthread_join(th[t], NULL);

	for (int t = 0; t < tm->T; t++) {
		struct member *me = &tm->mem[t];
		CHECK(!me->err, "%s: thread %d: schedule or pinning failed", what, t);
		CHECK(me->ran_cpu == me->cpu, "%s: thread %d ran on cpu %d, pinned to %d", what, t, me->ran_cpu, me->cpu);
		for (size_t i = 0; i < me->nbr; i++) {
			const char *p = tm->data + me->br[i].off;
			size_t first = (size_t)p / ps, last = ((size_t)p + me->br[i].len - 1) / ps, np = last - first + 1;
			if (np > cap) {
				cap = np;
				where = realloc(where, cap * sizeof *where);
			}
			int rc = nk_where(M, p, me->br[i].len, where, NULL);
			CHECK(rc == 0, "%s: nk_where: %s", what, nk_strerror(rc));
			if (rc)
				continue;
			for (size_t k = 0; k < np; k++) {
				int idx = where[k] < 0 ? -1 : nk_machine_node_index(M, where[k]);
				int ok = idx >= 0 ? allowed(tm, me, idx) : 0;
				pages_checked++;
				if (ok < 0) {
					undefined++;
					continue;
				}
				if (idx != me->node_idx)
					remote++;
				if (tm->control) {
					mismatched += !ok;
					continue;
				}
				CHECK(ok, "%s: thread %d (node %d) touched page %zu of the array on node %d", what, t,
				      node_id[me->node_idx], (size_t)(p - tm->data) / ps + k, where[k]);
			}
		}
		free(me->br);
	}
	free(where);
	if (tm->control) {
		CHECK(mismatched > 0, "%s: the control found no remote page: the check is vacuous", what);
		printf("ok   %-46s T=%-3d pages checked %zu, %zu remote as expected\n", what, tm->T, pages_checked,
		       mismatched);
		return;
	}
	printf("ok   %-46s T=%-3d pages checked %zu%s%s\n", what, tm->T, pages_checked,
	       remote ? " (some on served nodes, T < nodes)" : "",
	       undefined ? " (locality not defined: T < nodes)" : "");
}

/* ---- the cases ---- */

static nk_array *make_array(size_t rows, size_t cols, const char *policy)
{
	nk_array *a = NULL;
	nk_policy *pol = NULL;
	nk_error e;
	size_t dims[2] = { rows, cols };
	if (nk_array_alloc(M, 8, 2, dims, NK_ARRAY_NO_THP, &a)) {
		printf("FAIL nk_array_alloc\n");
		exit(1);
	}
	if (nk_policy_parse(policy, &pol, &e) || nk_array_apply(a, pol, 0, NULL, &e)) {
		printf("FAIL %s: %s\n", policy, e.message);
		exit(1);
	}
	nk_policy_free(pol);
	return a;
}

static void case_static(int T, int inverse, int control)
{
	struct team *tm = calloc(1, sizeof *tm);
	char policy[4096] = "block:split=rows,threads=";
	size_t rows = (size_t)(7 * T + 3);
	for (int t = 0; t < T; t++) {
		int k, cpu, tt = inverse != control ? T - 1 - t : t; /* the inverse: block t for thread T-1-t */
		scatter(tt, T, &k, &cpu);
		snprintf(policy + strlen(policy), sizeof policy - strlen(policy), "%s%d", t ? "," : "", node_id[k]);
	}
	nk_array *a = make_array(rows, ps / 8, policy); /* one page per row */
	tm->T = T;
	tm->kind = inverse ? K_INVERSE : K_STATIC;
	tm->control = control;
	tm->data = nk_array_data(a);
	tm->rows = rows;
	tm->cols = ps / 8;
	tm->elem = 8;
	tm->row_bytes = ps;
	char what[128];
	snprintf(what, sizeof what, "%s%s <-> block:split=rows%s", control ? "control: " : "",
		 inverse ? "static_inverse" : "static", inverse != control ? " (reversed)" : "");
	run_team(tm, what);
	nk_array_free(a);
	free(tm);
}

static void case_block_exclusive(int T)
{
	struct team *tm = calloc(1, sizeof *tm);
	/* a column band = 2 pages; 3 rows per band and one more */
	size_t rows = (size_t)(3 * nnodes + 1), cols = (size_t)nnodes * 2 * (ps / 8);
	nk_array *a = make_array(rows, cols, "block_exclusive");
	tm->T = T;
	tm->kind = K_BE;
	tm->data = nk_array_data(a);
	tm->rows = rows;
	tm->cols = cols;
	tm->elem = 8;
	tm->row_bytes = cols * 8;
	for (int view = NK_VIEW_ROWS; view <= NK_VIEW_COLS; view++)
		for (int phase = 0; phase < nnodes; phase++) {
			char what[128];
			tm->view = view;
			tm->phase = phase;
			snprintf(what, sizeof what, "block_exclusive %s phase %d <-> block_exclusive",
				 view == NK_VIEW_ROWS ? "rows" : "cols", phase);
			run_team(tm, what);
		}
	nk_array_free(a);
	free(tm);
}

static void case_owner(int T, const char *policy)
{
	struct team *tm = calloc(1, sizeof *tm);
	size_t rows = 96;
	nk_array *a = make_array(rows, ps / 8, policy);
	int tn[512];
	nk_owner_sched *s = NULL;
	nk_error e;

	memset(nk_array_data(a), 0, rows * ps); /* resident, where the policy says */
	for (int t = 0; t < T; t++) {
		int k, cpu;
		scatter(t, T, &k, &cpu);
		tn[t] = node_id[k];
	}
	int rc = nk_sched_owner_build(a, tn, T, &s, &e);
	CHECK(rc == 0, "owner build: %s", e.message);
	if (rc)
		goto out;
	/* the union of the threads' ranges is every row exactly once */
	{
		int *hits = calloc(rows, sizeof *hits);
		nk_range r[256];
		for (int t = 0; t < T; t++) {
			int n = nk_sched_owner(s, t, r, 256);
			for (int i = 0; i < n && i < 256; i++)
				for (long x = r[i].begin; x < r[i].end; x++)
					hits[x]++;
		}
		for (size_t x = 0; x < rows; x++)
			CHECK(hits[x] == 1, "owner %s: row %zu given %d times", policy, x, hits[x]);
		free(hits);
	}
	tm->T = T;
	tm->kind = K_OWNER;
	tm->owner = s;
	tm->data = nk_array_data(a);
	tm->rows = rows;
	tm->cols = ps / 8;
	tm->elem = 8;
	tm->row_bytes = ps;
	char what[128];
	snprintf(what, sizeof what, "owner <-> %s", policy);
	run_team(tm, what);
out:
	nk_sched_owner_free(s);
	nk_array_free(a);
	free(tm);
}

int main(void)
{
	nk_error e;
	int ncpus = 0;

	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (nk_machine_load_live(&M, &e)) {
		printf("FAIL load: %s\n", e.message);
		return 1;
	}
	nnodes = nk_machine_num_nodes(M);
	if (nnodes < 2 || nnodes > MAXN) {
		printf("SKIP: %d node(s)\n", nnodes);
		return 77;
	}
	for (int i = 0; i < nnodes; i++) {
		node_id[i] = nk_machine_node_id(M, i);
		unsigned f = (unsigned)nk_machine_node_flags(M, node_id[i]);
		if (!(f & NK_NODE_HAS_MEMORY) || !(f & NK_NODE_CPUS_ALLOWED) || !(f & NK_NODE_MEM_ALLOWED)) {
			printf("SKIP: node %d lacks cpus or memory this process may use\n", node_id[i]);
			return 77;
		}
		int n = nk_machine_node_cpus(M, node_id[i], node_cpus[i], 256);
		if (n < 1 || n > 256) {
			printf("SKIP: node %d has %d cpus\n", node_id[i], n);
			return 77;
		}
		node_ncpus[i] = n;
		ncpus += n;
	}
	printf("%d nodes, %d cpus, page %zu\n", nnodes, ncpus, ps);

	const int teams[] = { 1, ncpus, 2 * ncpus };
	for (int k = 0; k < 3; k++) {
		int T = teams[k];
		if (k && T == teams[k - 1])
			continue;
		case_static(T, 0, 0);
		case_static(T, 1, 0);
		if (T > 1)
			case_static(T, 0, 1); /* static against the reversed blocks must see remote pages */
		case_block_exclusive(T);
		case_owner(T, "cyclic_block:block=8K");
		case_owner(T, "block");
		case_owner(T, "random:seed=7");
		case_owner(T, "cyclic");
	}
	nk_machine_free(M);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
