/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis (src/profile/analysis.c) and reports (report.c) on
 * profiles built in memory with known truth: attribution (names, heap
 * blocks with address reuse, stacks, anonymous), counts, page classes,
 * regularity, first touch, matrices, every diagnosis and fix, and the
 * text / JSON / HTML / sharing outputs.  No reader or symboliser needed.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis.h"

#define PAGE 4096ull
#define BASE 0x10000000ull

struct pbuild {
	struct nk__nkp_profile p;
	struct nk__nkp_process_data pd;
	size_t cap;
	char *machine;
};

static void pb_init(struct pbuild *b, const char *machine_desc, int threads)
{
	memset(b, 0, sizeof(*b));
	b->p.version = 1;
	b->p.run_json = strdup("{\"command\": [\"./app\", \"-n\"], \"sampler\": \"pagefault\", \"wall_ns\": 1500000000}");
	if (machine_desc) {
		nk_machine *m = nk_test_synth(machine_desc);
		assert_int_equal(nk_machine_to_json(m, 0, &b->machine), 0);
		nk_machine_free(m);
		b->p.machine_json = b->machine;
	}
	b->pd.info.pid = 100;
	b->pd.meta_json = strdup("{\"pid\": 100, \"page_size\": 4096}");
	b->pd.end_json = strdup("{\"complete\": true, \"dropped\": 0}");
	b->pd.complete = 1;
	b->pd.threads = calloc((size_t)threads + 1, sizeof(*b->pd.threads));
	for (int t = 0; t < threads; t++)
		b->pd.threads[t] = (struct nk__nkp_thread){ .tid = 1000 + (uint32_t)t, .index = (uint32_t)t, .cpu = -1 };
	b->pd.n_threads = (size_t)threads;
	b->p.procs = &b->pd;
	b->p.n_procs = 1;
}

static void pb_free(struct pbuild *b)
{
	free(b->p.run_json);
	free(b->machine);
	free(b->pd.meta_json);
	free(b->pd.end_json);
	free(b->pd.threads);
	for (size_t i = 0; i < b->pd.n_sites; i++)
		free(b->pd.sites[i].ips);
	free(b->pd.sites);
	free(b->pd.allocs);
	free(b->pd.frees);
	for (size_t i = 0; i < b->pd.n_names; i++)
		free(b->pd.names[i].name);
	free(b->pd.names);
	for (size_t i = 0; i < b->pd.n_phases; i++)
		free(b->pd.phases[i].name);
	free(b->pd.phases);
	free(b->pd.samples);
}

static void pb_site(struct pbuild *b, uint32_t id, uint64_t ip)
{
	b->pd.sites = realloc(b->pd.sites, (b->pd.n_sites + 1) * sizeof(*b->pd.sites));
	uint64_t *ips = malloc(sizeof(*ips));
	ips[0] = ip;
	b->pd.sites[b->pd.n_sites++] = (struct nk__nkp_site_data){ id, 1, ips };
}

static void pb_alloc(struct pbuild *b, uint64_t addr, uint64_t size, uint64_t t, uint32_t site, uint32_t id)
{
	b->pd.allocs = realloc(b->pd.allocs, (b->pd.n_allocs + 1) * sizeof(*b->pd.allocs));
	b->pd.allocs[b->pd.n_allocs++] =
		(struct nk__nkp_alloc){ .addr = addr, .size = size, .time_ns = t, .tid = 1000, .site = site,
					.kind = NK__ALLOC_MALLOC, .id = id };
}

static void pb_free_rec(struct pbuild *b, uint64_t addr, uint64_t t, uint32_t id)
{
	b->pd.frees = realloc(b->pd.frees, (b->pd.n_frees + 1) * sizeof(*b->pd.frees));
	b->pd.frees[b->pd.n_frees++] = (struct nk__nkp_free){ .addr = addr, .time_ns = t, .tid = 1000, .id = id };
}

static void pb_name(struct pbuild *b, uint64_t addr, uint64_t size, const char *name)
{
	b->pd.names = realloc(b->pd.names, (b->pd.n_names + 1) * sizeof(*b->pd.names));
	b->pd.names[b->pd.n_names++] = (struct nk__nkp_name_data){ { addr, size, 0 }, strdup(name) };
}

static void pb_phase(struct pbuild *b, uint16_t id, const char *name)
{
	b->pd.phases = realloc(b->pd.phases, (b->pd.n_phases + 1) * sizeof(*b->pd.phases));
	b->pd.phases[b->pd.n_phases++] = (struct nk__nkp_phase_data){ { 0, 1000, id, 0 }, strdup(name) };
}

static struct nk__nkp_sample *pb_sample(struct pbuild *b, uint64_t t, uint64_t addr, uint64_t ip, int thread,
					int cpu_node, int page_node, int access, int flags)
{
	if (b->pd.n_samples == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->pd.samples = realloc(b->pd.samples, b->cap * sizeof(*b->pd.samples));
	}
	struct nk__nkp_sample *s = &b->pd.samples[b->pd.n_samples++];
	*s = (struct nk__nkp_sample){ .time_ns = t, .addr = addr, .ip = ip, .tid = 1000 + (uint32_t)thread, .weight = 1,
				      .cpu = (int16_t)cpu_node, .cpu_node = (int16_t)cpu_node,
				      .page_node = (int16_t)page_node, .access = (uint8_t)access,
				      .sampler = NK__SAMPLER_TRACE, .flags = (uint8_t)flags };
	b->p.n_samples++;
	return s;
}

static struct nk__analysis *analyze(struct pbuild *b)
{
	struct nk__analysis *a = NULL;
	nk_error err = { 0 };
	int rc = nk__analyze(&b->p, NULL, NULL, &a, &err);
	if (rc)
		fail_msg("nk__analyze: %d %s", rc, err.message);
	return a;
}

static const struct nk__an_var *find_var(const struct nk__analysis *a, const char *name)
{
	for (size_t i = 0; i < a->n_vars; i++)
		if (!strcmp(a->vars[i].name, name))
			return &a->vars[i];
	fail_msg("no variable \"%s\"", name);
	return NULL;
}

#define M2 "nodes=2 cores=2 mem=1G dist=10:21 l2=256K"
#define NPAGES 64
#define PER_PAGE 4

/* A 64-page block first touched by thread 0 on node 0, then each of 4
 * threads (0,1 on node 0; 2,3 on node 1) reads its contiguous quarter. */
static void hotspot_profile(struct pbuild *b)
{
	pb_init(b, M2, 4);
	pb_site(b, 1, 0x401000);
	pb_alloc(b, BASE, NPAGES * PAGE, 10, 1, 1);
	uint64_t t = 100;
	for (int pg = 0; pg < NPAGES; pg++)
		pb_sample(b, t++, BASE + pg * PAGE, 0x400100, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH);
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(b, t++, BASE + pg * PAGE + 64 * k, 0x400200 + (th >= 2 ? 8 : 0), th, th / 2, 0,
					  NK__ACC_READ, 0);
}

/* The remote share's interval (nk__an_ratio_ci, docs/report.md "What the numbers estimate"). */
static void test_interval(void **state)
{
	(void)state;
	struct nk__an_ci ci;
	double W[200], Y[200];
	/* all remote, 100 independent samples: Wilson's [n / (n + z^2), 1] */
	for (int i = 0; i < 100; i++)
		W[i] = Y[i] = 1;
	nk__an_ratio_ci(W, Y, 100, 100, &ci);
	assert_true(ci.r == 1 && ci.hi == 1 && ci.n_eff == 100);
	assert_true(fabs(ci.lo - 100 / (100 + NK__AN_Z95 * NK__AN_Z95)) < 1e-9);
	/* the same 100 samples in 4 clusters (all alike): worth 4 samples, much wider */
	double W4[4] = { 25, 25, 25, 25 }, Y4[4] = { 25, 25, 25, 25 };
	struct nk__an_ci c4;
	nk__an_ratio_ci(W4, Y4, 4, 100, &c4);
	assert_true(c4.n_eff == 4 && c4.lo < 0.55 && c4.lo > 0.45);
	/* half remote, 100 independent samples: n_eff = n - 1 (C / (C - 1)), about +-10 points */
	for (int i = 0; i < 100; i++)
		Y[i] = i % 2;
	nk__an_ratio_ci(W, Y, 100, 100, &ci);
	assert_true(ci.r == 0.5 && fabs(ci.n_eff - 99) < 1e-9);
	assert_true(ci.lo > 0.39 && ci.lo < 0.41 && fabs(ci.lo + ci.hi - 1) < 1e-12);
	/* the same samples, one cluster all remote and one all local: 2 clusters' worth, far wider */
	double W2[2] = { 50, 50 }, Y2[2] = { 50, 0 };
	struct nk__an_ci c2;
	nk__an_ratio_ci(W2, Y2, 2, 100, &c2);
	assert_true(c2.r == 0.5 && fabs(c2.n_eff - 1) < 1e-9 && c2.hi - c2.lo > 0.7);
	/* 20 clusters each exactly half remote: no spread between them, worth one sample per cluster */
	for (int i = 0; i < 20; i++) {
		W[i] = 10;
		Y[i] = 5;
	}
	nk__an_ratio_ci(W, Y, 20, 200, &ci);
	assert_true(ci.r == 0.5 && ci.n_eff == 20);
	/* weights: one heavy sample among light ones; Kish's size caps n_eff */
	for (int i = 0; i < 100; i++) {
		W[i] = i ? 1 : 99;
		Y[i] = W[i] * (i % 2 == 0);
	}
	double w2 = 99.0 * 99 + 99;
	nk__an_ratio_ci(W, Y, 100, w2, &ci);
	assert_true(fabs(ci.r - (99 + 49) / 198.0) < 1e-12);
	assert_true(ci.n_eff <= 198.0 * 198 / w2 + 1e-9 && ci.n_eff < 5);
	/* nothing known */
	nk__an_ratio_ci(W, Y, 0, 0, &ci);
	assert_true(ci.lo == 0 && ci.hi == 1 && ci.n_eff == 0);
}

/* Pagefault samples are clustered by 16-page groups from the variable's first page; trace samples are
 * each their own cluster: the same 256 all-remote samples decide as trace, not as 2 page groups. */
static void test_interval_clusters(void **state)
{
	(void)state;
	for (int pf = 0; pf < 2; pf++) {
		struct pbuild b;
		pb_init(&b, M2, 2);
		pb_name(&b, BASE + 5 * PAGE, 32 * PAGE, "v");
		for (int i = 0; i < 256; i++) {
			struct nk__nkp_sample *s = pb_sample(&b, 1 + (uint64_t)i, BASE + (5 + (uint64_t)(i % 32)) * PAGE, 1,
							     1, 1, 0, NK__ACC_READ, 0);
			if (pf)
				s->sampler = NK__SAMPLER_PAGEFAULT;
		}
		struct nk__analysis *a = analyze(&b);
		const struct nk__an_var *v = find_var(a, "v");
		assert_int_equal(v->known_samples, 256);
		assert_int_equal(v->clusters, pf ? 2 : 256);
		assert_int_equal(v->ci_grouped, pf);
		assert_true(v->ci_hi == 1);
		assert_true(pf ? v->diag == NK__DIAG_FEW_SAMPLES : v->diag != NK__DIAG_FEW_SAMPLES);
		if (pf)
			assert_non_null(strstr(v->explain, "256 samples in 2 page groups"));
		nk__analysis_free(a);
		pb_free(&b);
	}
}

/* Pagefault samples are clustered by round too (10 ms of sample time): 64 page groups each visited by a
 * local and a remote thread, but every round's samples from one thread (under QEMU's -icount one virtual cpu
 * runs at a time).  By groups alone every cluster is exactly half remote and the share would look decided;
 * by rounds it is 20 clusters all local or all remote, and the interval says so.  Rounds mixing both
 * threads leave it as narrow as by groups. */
static void test_interval_rounds(void **state)
{
	(void)state;
	double half[2];
	for (int mixed = 0; mixed < 2; mixed++) {
		struct pbuild b;
		pb_init(&b, M2, 2);
		pb_name(&b, BASE, 64 * 16 * PAGE, "v");
		for (int round = 0; round < 20; round++)
			for (int i = 0; i < 64; i++) {
				int th = mixed ? (i + round) % 2 : round % 2;
				uint64_t t = (uint64_t)round * NK__AN_ROUND_NS + 1000 + (uint64_t)i;
				struct nk__nkp_sample *s =
					pb_sample(&b, t, BASE + ((uint64_t)i * 16 + (uint64_t)(round % 16)) * PAGE, 1, th, th, 0,
						  NK__ACC_READ, 0);
				s->sampler = NK__SAMPLER_PAGEFAULT;
			}
		struct nk__analysis *a = analyze(&b);
		const struct nk__an_var *v = find_var(a, "v");
		assert_int_equal(v->known_samples, 1280);
		assert_int_equal(v->clusters, 64);
		assert_true(fabs((double)v->remote / (double)(v->local + v->remote) - 0.5) < 1e-9);
		half[mixed] = (v->ci_hi - v->ci_lo) / 2;
		assert_true(v->ci_lo <= 0.5 && 0.5 <= v->ci_hi);
		nk__analysis_free(a);
		pb_free(&b);
	}
	/* rounds of one thread each: about 20 samples' worth (+-20 points); mixed rounds: what the 64 groups give
	 * alone (no spread between them: 64 samples' worth, +-12 points) */
	assert_true(half[0] > 0.18);
	assert_true(half[1] < 0.13 && half[0] > 1.5 * half[1]);
}

static void test_hotspot(void **state)
{
	(void)state;
	struct pbuild b;
	hotspot_profile(&b);
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(a->n_nodes, 2);
	assert_int_equal(a->n_vars, 1);
	assert_int_equal(a->n_threads, 4);
	assert_string_equal(a->program, "./app");
	assert_string_equal(a->sampler, "pagefault");
	assert_true(a->l2_size == 256 * 1024);
	assert_true(a->numa_factor > 2.0 && a->numa_factor < 2.2);
	const struct nk__an_var *v = &a->vars[0];
	assert_int_equal(v->kind, NK__VAR_HEAP);
	assert_string_equal(v->name, "allocation site 1 (0x401000)");
	assert_int_equal(v->samples, NPAGES + NPAGES * PER_PAGE);
	assert_int_equal(v->remote, 32 * PER_PAGE);
	assert_int_equal(v->local, NPAGES + 32 * PER_PAGE);
	assert_int_equal(v->reads, NPAGES * PER_PAGE);
	assert_int_equal(v->writes, NPAGES);
	assert_int_equal(v->pages, NPAGES);
	assert_int_equal(v->pages_on[0], NPAGES);
	assert_int_equal(v->pages_on[1], 0);
	assert_int_equal(v->remote_cpu[1], 32 * PER_PAGE);
	assert_int_equal(v->remote_cpu[0], 0);
	assert_int_equal(v->threads, 4);
	/* each page is read by one thread after thread 0's first touch: private (the first touch placed
	 * the page, it does not make it shared) */
	assert_int_equal(v->pages_private, NPAGES);
	assert_int_equal(v->pages_node_shared, 0);
	assert_int_equal(v->pages_cross_shared, 0);
	assert_true(v->regularity > 0.999);
	assert_int_equal(v->ft_samples, NPAGES);
	assert_string_equal(v->ft_where, "0x400100");
	assert_int_equal(v->ft_thread, 0);
	assert_int_equal(v->ft_node, 0);
	assert_int_equal(v->dominant_node, 0);
	assert_int_equal(v->diag, NK__DIAG_HOTSPOT);
	assert_int_equal(v->fix, NK__FIX_PARALLEL_INIT);
	assert_string_equal(v->policy, "block");
	assert_non_null(strstr(v->explain, "initialised by thread 0 at 0x400100"));
	/* the remote line first */
	assert_true(v->n_lines >= 2);
	assert_string_equal(v->lines[0].where, "0x400208");
	assert_int_equal(v->lines[0].remote, 32 * PER_PAGE);
	/* thread x node: all on node 0 */
	assert_int_equal(a->thread_node[3 * 2 + 0], 16 * PER_PAGE);
	assert_int_equal(a->thread_node[3 * 2 + 1], 0);
	assert_int_equal(a->threads[2].node, 1);
	/* sharing: none; thread 0's first touches of the others' pages placed them, they are not shared */
	for (int i = 0; i < 16; i++)
		assert_true(a->sharing[i] == 0);
	assert_int_equal(a->n_warnings, 0);
	nk__analysis_free(a);
	pb_free(&b);
}

/* Pages placed on the wrong node: node-0 threads use pages of node 1 and back. */
/*
 * One sample per page: page classes cannot show sharing, but the threads' sampled pages interleave
 * through the whole variable (a column sweep of a row-major grid): uniform sharing.  The same
 * sparse sampling of contiguous per-thread blocks on the wrong nodes stays a partition mismatch.
 */
static void test_sparse_sharing(void **state)
{
	(void)state;
	enum { SP = 4 * NPAGES }; /* enough samples for the interval of a share near 50 % (one per page) */
	for (int interleaved = 0; interleaved < 2; interleaved++) {
		struct pbuild b;
		pb_init(&b, M2, 4);
		pb_name(&b, BASE, SP * PAGE, "grid");
		for (int pg = 0; pg < SP; pg++) {
			int th = interleaved ? (pg * 7 + pg / 3) % 4 : pg / (SP / 4);
			/* pages of the first half on node 0, of the second on node 1 (parallel init) */
			int pnode = pg < SP / 2 ? 0 : 1;
			int cnode = interleaved ? th / 2 : 1 - pnode; /* blocks: every thread on the other node */
			pb_sample(&b, 1 + (uint64_t)pg, BASE + pg * PAGE, 0x400300, th, cnode, pnode, NK__ACC_READ, 0);
		}
		struct nk__analysis *a = analyze(&b);
		const struct nk__an_var *v = find_var(a, "grid");
		assert_int_equal(v->samples, SP);
		assert_int_equal(v->pages_private, SP); /* one sample per page: every page looks private */
		if (interleaved) {
			assert_true(v->regularity < NK__AN_IRREGULAR);
			assert_int_equal(v->diag, NK__DIAG_SHARING);
		} else {
			assert_true(v->regularity >= NK__AN_REGULAR);
			assert_int_equal(v->diag, NK__DIAG_PARTITION);
		}
		nk__analysis_free(a);
		pb_free(&b);
	}
}

static void test_partition_mismatch(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "grid");
	uint64_t t = 1;
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(&b, t++, BASE + pg * PAGE, 0x400300, th, th / 2, pg < 32 ? 1 : 0, NK__ACC_READ, 0);
	struct nk__analysis *a = analyze(&b);
	const struct nk__an_var *v = find_var(a, "grid");
	assert_int_equal(v->kind, NK__VAR_NAMED);
	assert_true(v->size == NPAGES * PAGE);
	assert_int_equal(v->remote, NPAGES * PER_PAGE);
	assert_int_equal(v->pages_private, NPAGES);
	assert_true(v->dominant_share > 0.49 && v->dominant_share < 0.51);
	assert_int_equal(v->diag, NK__DIAG_PARTITION);
	assert_int_equal(v->fix, NK__FIX_PARALLEL_INIT);
	assert_null(v->ft_where);
	nk__analysis_free(a);
	pb_free(&b);
}

/* The same mismatch, with each page first touched by the thread of the other node that initialised it
 * (prof_mismatch: parallel init with one partition, compute with the reversed one).  The first touch
 * placed the page and does not make it shared: it was read as uniform sharing (61% of the pages
 * "shared across nodes") and advise chose cyclic in the guest. */
static void test_mismatch_after_parallel_init(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "grid");
	uint64_t t = 1;
	for (int pg = 0; pg < NPAGES; pg++) {
		int init = 3 - pg / 16; /* the thread of the other node's quarter */
		pb_sample(&b, t++, BASE + pg * PAGE, 0x400100, init, init / 2, init / 2, NK__ACC_WRITE,
			  NK__SF_FIRST_TOUCH);
	}
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(&b, t++, BASE + pg * PAGE, 0x400300, th, th / 2, pg < 32 ? 1 : 0, NK__ACC_READ, 0);
	struct nk__analysis *a = analyze(&b);
	const struct nk__an_var *v = find_var(a, "grid");
	assert_int_equal(v->pages_private, NPAGES);
	assert_int_equal(v->pages_cross_shared, 0);
	assert_int_equal(v->threads, 4);
	assert_true(v->regularity >= 0.99);
	assert_int_equal(v->diag, NK__DIAG_PARTITION);
	assert_int_equal(v->fix, NK__FIX_PARALLEL_INIT);
	/* the sharing matrix: each thread only with itself (no init/compute pairs) */
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 4; j++)
			if (i != j)
				assert_true(a->sharing[i * a->n_threads + j] == 0);
	nk__analysis_free(a);
	pb_free(&b);
}

/* The same with trace-like samples: several samples of the initialisation loop per page, only the one
 * that placed the page flagged first touch (the trace sampler sees one access in RATE).  The loop's
 * other samples are known by their instruction: the page is still private to its compute thread. */
static void test_mismatch_init_by_instruction(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "grid");
	uint64_t t = 1;
	for (int pg = 0; pg < NPAGES; pg++) {
		int init = 3 - pg / 16;
		for (int k = 0; k < 3; k++) /* flagged only on a quarter of the pages */
			pb_sample(&b, t++, BASE + pg * PAGE + 8 * k, 0x400100, init, init / 2, init / 2, NK__ACC_WRITE,
				  !k && pg % 4 == 0 ? NK__SF_FIRST_TOUCH : 0);
	}
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(&b, t++, BASE + pg * PAGE, 0x400300, th, th / 2, pg < 32 ? 1 : 0, NK__ACC_READ,
					  /* one stray first touch by the compute loop: under AN_INIT_SHARE */
					  th == 0 && pg == 0 && k == 0 ? NK__SF_FIRST_TOUCH : 0);
	struct nk__analysis *a = analyze(&b);
	const struct nk__an_var *v = find_var(a, "grid");
	assert_int_equal(v->pages_private, NPAGES);
	assert_int_equal(v->pages_cross_shared, 0);
	assert_true(v->regularity >= 0.99);
	assert_int_equal(v->diag, NK__DIAG_PARTITION);
	nk__analysis_free(a);
	pb_free(&b);
}

/* Every thread reads every page, pages interleaved over the nodes, in a
 * scattered order: uniform sharing, irregular -> cyclic (weighted when
 * bandwidth is measured). */
static void sharing_profile(struct pbuild *b, const char *machine)
{
	pb_init(b, machine, 4);
	pb_site(b, 7, 0x402000);
	pb_alloc(b, BASE, NPAGES * PAGE, 0, 7, 1);
	uint64_t t = 1;
	for (int pg = 0; pg < NPAGES; pg++)
		for (int th = 0; th < 4; th++)
			pb_sample(b, t++, BASE + pg * PAGE, 0x400400, th, th % 2, pg % 2, NK__ACC_READ, 0);
	/* one extra read per page by a thread that changes page to page: owners scattered */
	for (int pg = 0; pg < NPAGES; pg++)
		pb_sample(b, t++, BASE + pg * PAGE, 0x400400, (pg * 7) % 4, ((pg * 7) % 4) % 2, pg % 2, NK__ACC_READ, 0);
}

static void test_uniform_sharing(void **state)
{
	(void)state;
	struct pbuild b;
	sharing_profile(&b, M2);
	struct nk__analysis *a = analyze(&b);
	const struct nk__an_var *v = &a->vars[0];
	assert_int_equal(v->pages_cross_shared, NPAGES);
	assert_int_equal(v->diag, NK__DIAG_SHARING);
	assert_true(v->regularity < NK__AN_REGULAR);
	assert_int_equal(v->fix, NK__FIX_CYCLIC);
	assert_string_equal(v->policy, "cyclic");
	assert_non_null(strstr(v->explain, "read-mostly"));
	nk__analysis_free(a);
	pb_free(&b);

	/* bandwidth measured: weighted */
	sharing_profile(&b, M2);
	nk_machine *m = nk_test_synth(M2);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 0, 1, 5000), 0);
	struct nk__analysis *a2 = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__analyze(&b.p, m, NULL, &a2, &err), 0);
	assert_int_equal(a2->vars[0].fix, NK__FIX_WEIGHTED);
	assert_string_equal(a2->vars[0].policy, "weighted");
	nk__analysis_free(a2);
	nk_machine_free(m);
	pb_free(&b);

	/* NUMA factor 1.1: not worth it */
	sharing_profile(&b, "nodes=2 cores=2 mem=1G dist=10:11 l2=256K");
	a = analyze(&b);
	assert_int_equal(a->vars[0].diag, NK__DIAG_SHARING);
	assert_int_equal(a->vars[0].fix, NK__FIX_NOT_WORTH);
	assert_null(a->vars[0].policy);
	nk__analysis_free(a);
	pb_free(&b);
}

static void test_fine_few_small(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 2);
	pb_name(&b, BASE, NPAGES * PAGE, "local");
	pb_name(&b, BASE + 0x1000000, PAGE, "rare");
	pb_name(&b, BASE + 0x2000000, 8 * PAGE, "tiny"); /* 32 KiB < L2 */
	uint64_t t = 1;
	for (int i = 0; i < 100; i++)
		pb_sample(&b, t++, BASE + (uint64_t)(i % NPAGES) * PAGE, 1, i % 2, i % 2, i % 2, NK__ACC_READ, 0);
	for (int i = 0; i < 5; i++)
		pb_sample(&b, t++, BASE + 0x1000000, 2, 0, 0, 1, NK__ACC_READ, 0);
	/* half remote: 200 samples put the interval within +-10 points (40 did not) */
	for (int i = 0; i < 200; i++)
		pb_sample(&b, t++, BASE + 0x2000000 + (uint64_t)(i % 8) * PAGE, 3, i % 2, i % 2, 1, NK__ACC_WRITE, 0);
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(find_var(a, "local")->diag, NK__DIAG_FINE);
	assert_int_equal(find_var(a, "local")->fix, NK__FIX_NONE);
	assert_int_equal(find_var(a, "rare")->diag, NK__DIAG_FEW_SAMPLES);
	const struct nk__an_var *tiny = find_var(a, "tiny");
	assert_true(tiny->small);
	assert_int_equal(tiny->diag, NK__DIAG_HOTSPOT);
	assert_int_equal(tiny->fix, NK__FIX_LEAVE);
	assert_non_null(strstr(find_var(a, "rare")->explain, "5 samples in 5 clusters"));
	/* sorted by remote accesses: tiny (100 remote) first, rare (5) next */
	assert_string_equal(a->vars[0].name, "tiny");
	assert_string_equal(a->vars[1].name, "rare");
	nk__analysis_free(a);
	pb_free(&b);
}

/* Heap address reuse, names over heap, stacks, anonymous, and no machine. */
static void test_attribution(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, NULL, 2);
	b.pd.threads[1].stack_lo = 0x7f0000000000ull;
	b.pd.threads[1].stack_hi = 0x7f0000100000ull;
	pb_site(&b, 1, 0x401111);
	pb_site(&b, 2, 0x402222);
	pb_alloc(&b, BASE, 1 << 20, 0, 1, 1);
	pb_free_rec(&b, BASE, 100, 1);
	pb_alloc(&b, BASE, 1 << 16, 200, 2, 2); /* same address, later, another site */
	pb_alloc(&b, BASE + (4 << 20), 1 << 20, 0, 2, 3); /* the same site again: one variable */
	pb_name(&b, BASE + (8 << 20), PAGE, "named");
	pb_alloc(&b, BASE + (8 << 20), PAGE, 0, 1, 4); /* a name wins over the heap block */
	pb_sample(&b, 50, BASE + 100, 0, 0, 0, 0, 0, 0);            /* site 1 */
	pb_sample(&b, 150, BASE + 100, 0, 0, 0, 0, 0, 0);           /* freed: anonymous */
	pb_sample(&b, 250, BASE + 100, 0, 0, 0, 0, 0, 0);           /* site 2 */
	pb_sample(&b, 250, BASE + (1 << 17), 0, 0, 0, 0, 0, 0);     /* beyond block 2: anonymous */
	pb_sample(&b, 250, BASE + (4 << 20) + 5, 0, 0, 0, 1, 0, 0); /* site 2, second block */
	pb_sample(&b, 250, BASE + (8 << 20) + 5, 0, 0, 0, 0, 0, 0); /* named */
	pb_sample(&b, 250, 0x7f0000000010ull, 0, 1, 1, 1, 0, 0);    /* stack of thread 1 */
	pb_sample(&b, 250, 0x12345, 0, 5, -1, -1, 0, 0);            /* unknown thread, unknown nodes */
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(a->n_vars, 5);
	assert_int_equal(find_var(a, "allocation site 1 (0x401111)")->samples, 1);
	const struct nk__an_var *s2 = find_var(a, "allocation site 2 (0x402222)");
	assert_int_equal(s2->samples, 2);
	assert_true(s2->size == 1 << 20);
	assert_int_equal(find_var(a, "[anonymous]")->samples, 3);
	assert_int_equal(find_var(a, "[anonymous]")->unknown, 1);
	assert_int_equal(find_var(a, "named")->samples, 1);
	assert_int_equal(find_var(a, "stack of thread 1")->kind, NK__VAR_STACK);
	/* nodes from the samples, a warning about the missing machine */
	assert_int_equal(a->n_nodes, 2);
	assert_true(a->l2_size == 0 && a->numa_factor == 0);
	assert_int_equal(a->n_warnings, 1);
	assert_non_null(strstr(a->warnings[0], "no machine description"));
	assert_int_equal(a->n_threads, 3);
	assert_string_equal(a->threads[2].label, "tid 1005");
	assert_int_equal(a->samples, 8);
	assert_int_equal(a->unknown, 1);
	/* every sample attributed, in file order, to the instance it fell in (sorted variable indices) */
	assert_int_equal(a->n_attr, 8);
	const struct { const char *var; uint64_t lo, hi; } want[8] = {
		{ "allocation site 1 (0x401111)", BASE, BASE + (1 << 20) },
		{ "[anonymous]", 0, 0 },
		{ "allocation site 2 (0x402222)", BASE, BASE + (1 << 16) },
		{ "[anonymous]", 0, 0 },
		{ "allocation site 2 (0x402222)", BASE + (4 << 20), BASE + (5 << 20) },
		{ "named", BASE + (8 << 20), BASE + (8 << 20) + PAGE },
		{ "stack of thread 1", 0x7f0000000000ull, 0x7f0000100000ull },
		{ "[anonymous]", 0, 0 },
	};
	for (int i = 0; i < 8; i++) {
		const struct nk__an_sample *as = &a->attr[i];
		assert_true(as->var < a->n_vars);
		assert_string_equal(a->vars[as->var].name, want[i].var);
		assert_true(as->lo == want[i].lo && as->hi == want[i].hi);
		assert_true(as->weight >= 1 && as->thread < a->n_threads);
	}
	assert_true(a->attr[4].cpu_node == 0 && a->attr[4].page_node == 1);
	assert_int_equal(a->attr[6].thread, 1);
	assert_int_equal(a->attr[0].phase, -1);
	assert_true(a->page_size == 4096);
	nk__analysis_free(a);
	pb_free(&b);
}

static void test_phases_warnings(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 1);
	free(b.pd.end_json);
	b.pd.end_json = strdup("{\"complete\": false, \"dropped\": 17}");
	b.pd.complete = 0;
	pb_phase(&b, 1, "init");
	pb_phase(&b, 2, "solve");
	for (int i = 0; i < 30; i++)
		pb_sample(&b, (uint64_t)i, BASE, 0, 0, 0, i < 10 ? 0 : 1, 0, 0)->phase = i < 10 ? 1 : 2;
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(a->n_phases, 2);
	assert_string_equal(a->phases[0].name, "init");
	assert_int_equal(a->phases[0].samples, 10);
	assert_int_equal(a->phases[0].remote, 0);
	assert_int_equal(a->phases[1].remote, 20);
	assert_int_equal(a->n_vars, 1);
	assert_int_equal(a->phases[1].var_remote[0], 20);
	assert_int_equal(a->phases[0].var_acc[0], 10);
	assert_int_equal(a->n_warnings, 2);
	assert_non_null(strstr(a->warnings[0], "did not finish"));
	assert_non_null(strstr(a->warnings[1], "17 samples dropped"));
	nk__analysis_free(a);
	pb_free(&b);
}

/* A 2D array initialised in parallel and swept x-wise in phase "x" (each thread its own 16 pages, on
 * its node: partitioned, local) then y-wise in phase "y" (every thread on every page: uniform sharing
 * across nodes).  Each phase gets its own diagnosis, by the same rules, on its samples alone; the
 * whole-profile diagnosis is the one of the same samples without phases. */
static void sweeps_profile(struct pbuild *b)
{
	pb_init(b, M2, 4);
	pb_phase(b, 1, "x");
	pb_phase(b, 2, "y");
	pb_name(b, BASE, NPAGES * PAGE, "grid");
	pb_name(b, BASE + (16 << 20), 8 * PAGE, "buf");
	uint64_t t = 1;
	/* first in record order: a thread without THREAD record (tid 1006) in phase y, so that the
	 * whole profile and phase x number the later unrecorded thread 1005 differently */
	pb_sample(b, t++, BASE, 0x400700, 6, 0, 0, NK__ACC_READ, 0)->phase = 2;
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(b, t++, BASE + pg * PAGE + 64 * (uint64_t)k, 0x400100, th, th / 2, pg / 32,
					  NK__ACC_WRITE, k ? 0 : NK__SF_FIRST_TOUCH)
					->phase = 1;
	/* buf: initialised by tid 1005 in phase x */
	for (int i = 0; i < 24; i++)
		pb_sample(b, t++, BASE + (16 << 20) + (uint64_t)(i % 8) * PAGE, 0x400800, 5, 1, 1, NK__ACC_WRITE,
			  i < 8 ? NK__SF_FIRST_TOUCH : 0)
			->phase = 1;
	for (int pg = 0; pg < NPAGES; pg++)
		for (int th = 0; th < 4; th++)
			pb_sample(b, t++, BASE + pg * PAGE, 0x400200, th, th / 2, pg / 32, NK__ACC_READ, 0)->phase = 2;
}

static const struct nk__an_var *phase_var(const struct nk__an_phase *ph, const char *name)
{
	for (size_t i = 0; i < ph->n_vars; i++)
		if (!strcmp(ph->vars[i].name, name))
			return &ph->vars[i];
	fail_msg("no variable \"%s\" in phase %s", name, ph->name);
	return NULL;
}

static void test_phase_diagnosis(void **state)
{
	(void)state;
	struct pbuild b;
	sweeps_profile(&b);
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(a->n_phases, 2);
	const struct nk__an_phase *px = &a->phases[0], *py = &a->phases[1];
	assert_string_equal(px->name, "x");
	assert_string_equal(py->name, "y");
	assert_int_equal(px->n_vars, 2);
	assert_int_equal(py->n_vars, 1);

	/* phase x: partitioned and local */
	const struct nk__an_var *gx = phase_var(px, "grid");
	assert_int_equal(gx->acc, NPAGES * PER_PAGE);
	assert_int_equal(gx->remote, 0);
	assert_int_equal(gx->pages_private, NPAGES);
	assert_int_equal(gx->pages_cross_shared, 0);
	assert_true(gx->regularity > 0.999);
	assert_int_equal(gx->diag, NK__DIAG_FINE);
	assert_int_equal(gx->fix, NK__FIX_NONE);
	assert_true(gx->size == NPAGES * PAGE);
	assert_int_equal(gx->pages_on[0], 32);
	assert_int_equal(gx->pages_on[1], 32);
	/* first touch of buf by tid 1005: the whole profile's thread index, not the phase run's */
	const struct nk__an_var *bx = phase_var(px, "buf");
	assert_int_equal(a->n_threads, 6);
	assert_string_equal(a->threads[4].label, "tid 1006");
	assert_string_equal(a->threads[5].label, "tid 1005");
	assert_int_equal(bx->ft_thread, 5);
	assert_string_equal(bx->ft_where, "0x400800");
	assert_int_equal(bx->ft_node, 1);

	/* phase y: every thread on every page, pages on both nodes */
	const struct nk__an_var *gy = phase_var(py, "grid");
	assert_int_equal(gy->acc, NPAGES * 4 + 1);
	assert_int_equal(gy->remote, NPAGES * 2);
	assert_int_equal(gy->pages_cross_shared, NPAGES);
	assert_int_equal(gy->threads, 5);
	assert_int_equal(gy->diag, NK__DIAG_SHARING);
	assert_int_equal(gy->fix, NK__FIX_CYCLIC);
	assert_string_equal(gy->policy, "cyclic");
	assert_non_null(strstr(gy->explain, "uniform sharing"));
	assert_null(gy->ft_where);

	/* the phases' variables add up to the per-phase counts and the whole profile */
	for (size_t p = 0; p < a->n_phases; p++)
		for (size_t k = 0; k < a->phases[p].n_vars; k++) {
			const struct nk__an_var *pv = &a->phases[p].vars[k];
			size_t i = (size_t)(find_var(a, pv->name) - a->vars);
			assert_int_equal(pv->acc, a->phases[p].var_acc[i]);
			assert_int_equal(pv->remote, a->phases[p].var_remote[i]);
			assert_string_equal(pv->key, a->vars[i].key);
		}
	const struct nk__an_var *g = find_var(a, "grid");
	assert_int_equal(g->acc, gx->acc + gy->acc);
	assert_int_equal(g->diag, NK__DIAG_SHARING);

	/* whole profile unchanged: the same samples without phases give the same variables */
	for (size_t i = 0; i < b.pd.n_samples; i++)
		b.pd.samples[i].phase = 0;
	struct nk__analysis *n = analyze(&b);
	assert_int_equal(n->n_vars, a->n_vars);
	for (size_t i = 0; i < a->n_vars; i++) {
		const struct nk__an_var *v = &a->vars[i], *w = &n->vars[i];
		assert_string_equal(v->name, w->name);
		assert_int_equal(v->acc, w->acc);
		assert_int_equal(v->remote, w->remote);
		assert_int_equal(v->pages_cross_shared, w->pages_cross_shared);
		assert_true(v->regularity == w->regularity);
		assert_int_equal(v->ft_thread, w->ft_thread);
		assert_int_equal(v->diag, w->diag);
		assert_int_equal(v->fix, w->fix);
		assert_string_equal(v->explain, w->explain);
	}
	assert_int_equal(n->n_phases, 2); /* PHASE records, no samples: no variables */
	assert_int_equal(n->phases[0].n_vars, 0);
	assert_null(n->phases[0].vars);
	nk__analysis_free(n);

	/* JSON: each phase's variables have the members of the top-level variables */
	char *js = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__report_analysis(a, NK_REPORT_JSON, &js, &err), 0);
	json_error_t jerr;
	json_t *j = json_loads(js, 0, &jerr);
	assert_non_null(j);
	json_t *top = json_array_get(json_object_get(j, "variables"), 0);
	assert_non_null(json_object_get(top, "remote_fraction"));
	json_t *phs = json_object_get(j, "phases");
	assert_int_equal(json_array_size(phs), 2);
	for (size_t p = 0; p < 2; p++) {
		json_t *vs = json_object_get(json_array_get(phs, p), "variables");
		assert_int_equal(json_array_size(vs), a->phases[p].n_vars);
		for (size_t k = 0; k < json_array_size(vs); k++) {
			json_t *pv = json_array_get(vs, k);
			const char *key;
			json_t *val;
			assert_int_equal(json_object_size(pv), json_object_size(top));
			json_object_foreach(top, key, val)
				assert_non_null(json_object_get(pv, key));
		}
	}
	json_t *vy = json_array_get(json_object_get(json_array_get(phs, 1), "variables"), 0);
	assert_string_equal(json_string_value(json_object_get(vy, "name")), "grid");
	assert_string_equal(json_string_value(json_object_get(vy, "diagnosis")), "uniform-sharing");
	assert_string_equal(json_string_value(json_object_get(vy, "fix")), "cyclic");
	assert_true(json_real_value(json_object_get(vy, "remote_fraction")) > 0.49 &&
		    json_real_value(json_object_get(vy, "remote_fraction")) < 0.5);
	json_t *vx = json_array_get(json_object_get(json_array_get(phs, 0), "variables"), 0);
	assert_string_equal(json_string_value(json_object_get(vx, "diagnosis")), "fine");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    json_array_get(json_object_get(json_array_get(phs, 0), "variables"), 1), "first_touch"),
							  "thread")),
			    "tid 1005");
	json_decref(j);
	free(js);

	/* text: one line per variable under its phase; HTML: a table per phase */
	char *text = NULL;
	assert_int_equal(nk__report_analysis(a, NK_REPORT_TEXT, &text, &err), 0);
	const char *sec = strstr(text, "== Phases");
	assert_non_null(sec);
	const char *lx = strstr(sec, "\nx "), *ly = strstr(sec, "\ny ");
	assert_true(lx && ly && lx < ly);
	const char *l1 = strstr(lx, "\n  grid"), *l2 = strstr(ly, "\n  grid");
	assert_true(l1 && l1 < ly && l2);
	assert_true(strstr(l1, "fine") && strstr(l1, "fine") < strchr(l1 + 1, '\n'));
	assert_true(strstr(l2, "uniform-sharing") && strstr(l2, "uniform-sharing") < strchr(l2 + 1, '\n'));
	free(text);
	char *html = NULL;
	assert_int_equal(nk__report_analysis(a, NK_REPORT_HTML, &html, &err), 0);
	assert_non_null(strstr(html, "<h3>Phase x</h3>"));
	assert_non_null(strstr(html, "<h3>Phase y</h3>"));
	free(html);
	nk__analysis_free(a);
	pb_free(&b);
}

/* @p s with every run of blanks and newlines made one space (undoes the text report's wrapping). */
static char *squeeze(const char *s)
{
	char *d = malloc(strlen(s) + 1), *o = d;
	for (; *s; s++) {
		if (*s == ' ' || *s == '\n') {
			if (o == d || o[-1] != ' ')
				*o++ = ' ';
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	return d;
}

static void test_reports(void **state)
{
	(void)state;
	struct pbuild b;
	hotspot_profile(&b);
	struct nk__analysis *a = analyze(&b);
	nk_profile *p = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__profile_from_analysis(a, &p, &err), 0);
	assert_ptr_equal(nk__profile_analysis(p), a);

	char *text = NULL;
	assert_int_equal(nk_profile_report(p, NK_REPORT_TEXT, &text, &err), 0);
	assert_non_null(strstr(text, "numakit report: ./app"));
	assert_non_null(strstr(text, "node 1:"));
	assert_non_null(strstr(text, "[hot-spot]"));
	char *flat = squeeze(text);
	assert_non_null(strstr(flat, "initialised by thread 0 at 0x400100"));
	assert_non_null(strstr(flat, "policy `block`"));
	free(flat);
	for (char *l = text; *l;) {
		char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (n > 100)
			fail_msg("line longer than 100 columns: %.*s", (int)n, l);
		l += n + (e != NULL);
	}
	free(text);

	char *js = NULL;
	assert_int_equal(nk_profile_report(p, NK_REPORT_JSON, &js, &err), 0);
	json_error_t jerr;
	json_t *j = json_loads(js, 0, &jerr);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "format")), "numakit-report");
	assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
	json_t *v0 = json_array_get(json_object_get(j, "variables"), 0);
	assert_string_equal(json_string_value(json_object_get(v0, "diagnosis")), "hot-spot");
	assert_string_equal(json_string_value(json_object_get(v0, "policy")), "block");
	assert_int_equal(json_integer_value(json_object_get(v0, "remote")), 32 * PER_PAGE);
	assert_int_equal(json_array_size(json_object_get(j, "sharing")), 4);
	json_decref(j);
	free(js);

	char *html = NULL;
	assert_int_equal(nk_profile_report(p, NK_REPORT_HTML, &html, &err), 0);
	assert_non_null(strstr(html, "<!DOCTYPE html>"));
	assert_non_null(strstr(html, "<svg"));
	assert_non_null(strstr(html, "</html>"));
	assert_null(strstr(html, "http://"));
	assert_null(strstr(html, "https://"));
	assert_null(strstr(html, "<script"));
	free(html);

	char *sh = NULL;
	assert_int_equal(nk_profile_sharing(p, &sh, &err), 0);
	double *mat = NULL;
	int n = 0;
	assert_int_equal(nk_sharing_parse(sh, strlen(sh), &mat, &n, &err), 0);
	assert_int_equal(n, 4);
	/* no page has two readers: thread 0's first touches do not count as sharing */
	for (int i = 0; i < 16; i++)
		assert_true(mat[i] == 0);
	free(mat);
	free(sh);

	char *keep = (char *)&keep, *o = keep;
	assert_int_equal(nk_profile_report(p, 7, &o, &err), NK_EINVAL);
	assert_ptr_equal(o, keep);
	assert_int_equal(nk_profile_report(NULL, NK_REPORT_TEXT, &o, &err), NK_EINVAL);
	assert_int_equal(nk_profile_sharing(NULL, &o, &err), NK_EINVAL);
	nk_profile_free(p);
	pb_free(&b);
}

static void test_sharing_one_thread(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 1);
	pb_sample(&b, 1, BASE, 0, 0, 0, 0, 0, 0);
	struct nk__analysis *a = analyze(&b);
	char *keep = (char *)&keep, *o = keep;
	nk_error err = { 0 };
	assert_int_equal(nk__sharing_analysis(a, &o, &err), NK_ENODATA);
	assert_ptr_equal(o, keep);
	/* reports of a tiny profile still work */
	assert_int_equal(nk__report_analysis(a, NK_REPORT_TEXT, &o, &err), 0);
	free(o);
	nk__analysis_free(a);
	pb_free(&b);
}

static void test_empty_and_errors(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 0);
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(a->n_vars, 0);
	assert_int_equal(a->n_warnings, 1);
	assert_non_null(strstr(a->warnings[0], "no samples"));
	for (int f = 0; f < 3; f++) {
		char *o = NULL;
		nk_error err = { 0 };
		assert_int_equal(nk__report_analysis(a, f, &o, &err), 0);
		free(o);
	}
	nk__analysis_free(a);
	nk_error err = { 0 };
	struct nk__analysis *keep = (struct nk__analysis *)&keep, *o = keep;
	assert_int_equal(nk__analyze(NULL, NULL, NULL, &o, &err), NK_EINVAL);
	assert_ptr_equal(o, keep);
	pb_free(&b);

	/* a missing file is an error whatever the reader (the placeholder one says ENOSYS) */
	nk_profile *p = (nk_profile *)&p, *pk = p;
	assert_true(nk_profile_load("/no/such/run.nkp", &p, &err) < 0);
	assert_ptr_equal(p, pk);
	assert_int_equal(nk_profile_load(NULL, &p, &err), NK_EINVAL);
}

/* A fake symboliser: the program is mapped at the symtab's base (ASLR), libc at 0x7f0000000000. */
struct nk__symtab {
	uint64_t base;
};

static int fake_ip(nk__symtab *s, uint64_t ip, struct nk__sym_loc *out)
{
	memset(out, 0, sizeof(*out));
	if (ip >= 0x7f0000080000ull && ip < 0x7f0000081000ull) { /* glibc's memset, with its debug info */
		out->object = "/lib/x86_64-linux-gnu/libc.so.6";
		out->function = "__memset_avx2_unaligned_erms";
		out->file = "../sysdeps/x86_64/multiarch/memset-vec-unaligned-erms.S";
		out->line = 336;
		out->offset = ip - 0x7f0000000000ull;
		return 1;
	}
	if (ip >= 0x7f0000000000ull && ip < 0x7f0000100000ull) {
		out->object = "/lib/x86_64-linux-gnu/libc.so.6";
		out->function = "malloc";
		out->offset = ip - 0x7f0000000000ull;
		return 1;
	}
	if (ip >= s->base && ip < s->base + 0x100000) {
		out->object = "/opt/app/solver";
		out->offset = ip - s->base;
		out->file = "/src/solver/init.c";
		out->line = (int)((ip - s->base) & 0xfff) / 16;
		out->function = "init_grid";
		return 1;
	}
	return 0;
}

static int fake_data(nk__symtab *s, uint64_t addr, struct nk__sym_var *out)
{
	(void)s;
	if (addr < 0x600000 || addr >= 0x600000 + 8192)
		return 0;
	*out = (struct nk__sym_var){ "table", "double[1024]", 0x600000, 8192, "/opt/app/solver", "/src/solver/data.c", 7 };
	return 1;
}

static int fake_mapping(nk__symtab *s, uint64_t addr, const char **name, uint64_t *lo, uint64_t *hi)
{
	(void)s;
	if (addr >= 0x7e0000000000ull && addr < 0x7e0000100000ull) {
		*name = "/data/input.bin";
		*lo = 0x7e0000000000ull;
		*hi = 0x7e0000100000ull;
		return NK__MAP_FILE;
	}
	/* two ranks' Open MPI vader segments: MPI's own memory, one variable (issue 14) */
	if (addr >= 0x7d0000000000ull && addr < 0x7d0000800000ull) {
		*name = addr < 0x7d0000400000ull ? "/dev/shm/vader_segment.vm.0.602a0001.0"
						  : "/dev/shm/vader_segment.vm.0.602a0001.1";
		*lo = addr < 0x7d0000400000ull ? 0x7d0000000000ull : 0x7d0000400000ull;
		*hi = *lo + 0x400000;
		return NK__MAP_FILE;
	}
	return NK__MAP_NONE;
}

static const char *fake_warnings(const nk__symtab *s)
{
	return s->base == 0x400000 ? "" : "/opt/app/libextra.so: missing";
}

static void test_symbolised(void **state)
{
	(void)state;
	static const struct nk__an_symops ops = { fake_ip, fake_data, fake_mapping, fake_warnings };
	struct pbuild b;
	pb_init(&b, M2, 1);
	/* a second process, the same program loaded elsewhere */
	struct nk__nkp_process_data pd[2];
	pd[0] = b.pd;
	pd[1] = b.pd;
	pd[1].info.pid = 101;
	pd[1].samples = NULL;
	pd[1].n_samples = 0;
	uint64_t ips_a[2] = { 0x7f0000000123ull, 0x400123 }, ips_b[2] = { 0x7f0000000123ull, 0x800123 };
	struct nk__nkp_site_data site_a = { 1, 2, ips_a }, site_b = { 1, 2, ips_b };
	struct nk__nkp_alloc al_a = { BASE, 1 << 20, 0, 1000, 1, NK__ALLOC_MALLOC, 1 };
	struct nk__nkp_alloc al_b = { BASE + (8 << 20), 2 << 20, 0, 1000, 1, NK__ALLOC_MALLOC, 1 };
	struct nk__nkp_sample sa[6], sb[2];
	static const uint64_t sa_addr[6] = { BASE, 0x600010, 0x7e0000000040ull, 0x7f0000000000ull, 0x7d0000000100ull,
					     0x7d0000400100ull };
	for (int i = 0; i < 6; i++)
		sa[i] = (struct nk__nkp_sample){ .time_ns = 10, .addr = sa_addr[i], .ip = 0x400234, .tid = 1000, .weight = 1,
						 .cpu_node = 0, .page_node = 1 };
	for (int i = 0; i < 2; i++)
		sb[i] = (struct nk__nkp_sample){ .time_ns = 10, .addr = BASE + (8 << 20) + 64, .ip = 0x800234, .tid = 1000,
						 .weight = 1, .cpu_node = 1, .page_node = 1 };
	pd[0].sites = &site_a;
	pd[0].n_sites = 1;
	pd[0].allocs = &al_a;
	pd[0].n_allocs = 1;
	pd[0].samples = sa;
	pd[0].n_samples = 6;
	pd[1].sites = &site_b;
	pd[1].n_sites = 1;
	pd[1].allocs = &al_b;
	pd[1].n_allocs = 1;
	pd[1].samples = sb;
	pd[1].n_samples = 2;
	b.p.procs = pd;
	b.p.n_procs = 2;
	struct nk__symtab st_a = { 0x400000 }, st_b = { 0x800000 };
	nk__symtab *syms[2] = { &st_a, &st_b };
	struct nk__analysis *a = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__analyze_ops(&b.p, NULL, syms, &ops, &a, &err), 0);
	/* the heap site is named by its first frame outside libc, one variable over both processes */
	const struct nk__an_var *h = find_var(a, "init.c:18 (init_grid)");
	assert_int_equal(h->kind, NK__VAR_HEAP);
	assert_int_equal(h->samples, 3);
	assert_string_equal(h->key, "heap:libc.so.6+0x122;solver+0x122");
	assert_true(h->size == 2 << 20);
	assert_string_equal(h->lines[0].where, "init.c:35 (init_grid)");
	assert_int_equal(h->lines[0].acc, 3);
	const struct nk__an_var *t = find_var(a, "table (data.c:7)");
	assert_int_equal(t->kind, NK__VAR_STATIC);
	assert_string_equal(t->type, "double[1024]");
	assert_true(t->size == 8192);
	assert_int_equal(find_var(a, "/data/input.bin")->kind, NK__VAR_FILE);
	const struct nk__an_var *mv = find_var(a, "MPI shared memory (Open MPI vader segment)");
	assert_int_equal(mv->kind, NK__VAR_MPI);
	assert_string_equal(mv->key, "mpi:openmpi-vader");
	assert_int_equal(mv->samples, 2);
	assert_true(mv->size == 0x400000);
	assert_string_equal(nk__an_kind_name(mv->kind), "mpi");
	assert_int_equal(find_var(a, "[anonymous]")->samples, 1);
	assert_int_equal(a->n_threads, 2);
	assert_string_equal(a->threads[1].label, "pid 101 thread 0");
	assert_int_equal(a->n_warnings, 1);
	assert_non_null(strstr(a->warnings[0], "process 101: /opt/app/libextra.so: missing"));
	nk__analysis_free(a);
	/* incomplete operations are refused */
	struct nk__an_symops bad = ops;
	bad.data = NULL;
	assert_int_equal(nk__analyze_ops(&b.p, NULL, syms, &bad, &a, &err), NK_EINVAL);
	b.p.procs = &b.pd;
	b.p.n_procs = 1;
	pb_free(&b);
}

/*
 * First touches made inside a library (issue 16): the CALLERS entries of a variable's first-touch samples name
 * the program's line that called memset (the most common of them; the libc frames before it skipped); a
 * first touch made by the program itself keeps its own line whatever entries it has, and one whose entries
 * hold no frame of the program keeps the library's line.
 */
static void test_first_touch_caller(void **state)
{
	(void)state;
	static const struct nk__an_symops ops = { fake_ip, fake_data, fake_mapping, fake_warnings };
	const uint64_t memset_ip = 0x7f0000080010ull, libc_ret = 0x7f0000090005ull;
	struct pbuild b;
	pb_init(&b, M2, 4);
	/* site 1 (init.c:16): memset from init.c:42 mostly, init.c:49 sometimes; site 2 (init.c:32): the program's
	 * own loop at init.c:85; site 3 (init.c:48): memset whose entries hold libc's frames only */
	b.pd.sites = calloc(4, sizeof(*b.pd.sites));
	for (uint32_t i = 0; i < 4; i++) {
		uint64_t *ips = malloc(sizeof(*ips));
		ips[0] = 0x401101 + 0x100 * i;
		b.pd.sites[b.pd.n_sites++] = (struct nk__nkp_site_data){ i + 1, 1, ips };
	}
	for (uint32_t i = 0; i < 4; i++)
		pb_alloc(&b, BASE + i * (NPAGES * PAGE), NPAGES * PAGE, 10, i + 1, i + 1);
	struct nk__nkp_caller cl[4 * NPAGES];
	size_t ncl = 0;
	uint64_t t = 100;
	for (int v = 0; v < 3; v++)
		for (int pg = 0; pg < NPAGES; pg++, t++) {
			uint64_t addr = BASE + (uint64_t)v * (NPAGES * PAGE) + (uint64_t)pg * PAGE;
			pb_sample(&b, t, addr, v == 1 ? 0x400555 : memset_ip, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH);
			if (pg % 8 == 7)
				continue; /* some first touches lost their entries (the runtime's table was full) */
			struct nk__nkp_caller e = { .time_ns = t, .addr = addr, .tid = 1000, .depth = 3 };
			e.ret[0] = libc_ret; /* a libc frame first (calloc's memset, a stale word): skipped */
			e.ret[1] = v == 2 ? libc_ret + 16 : pg % 4 == 3 ? 0x400311 : 0x4002a1;
			e.ret[2] = v == 2 ? libc_ret + 32 : 0x400901;
			cl[ncl++] = e;
		}
	/* site 4 (init.c:64): its most common first-touch instruction (40 pages) called from init.c:42 for 20 and
	 * init.c:49 for 15; another instruction of memset (24 pages) from init.c:49 only.  The line is the first
	 * instruction's callers' (42), not a vote over both (49 would win 39 to 20). */
	for (int pg = 0; pg < NPAGES; pg++, t++) {
		uint64_t addr = BASE + 3 * (NPAGES * PAGE) + (uint64_t)pg * PAGE;
		pb_sample(&b, t, addr, pg < 40 ? memset_ip : memset_ip + 0x80, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH);
		if (pg >= 35 && pg < 40)
			continue;
		struct nk__nkp_caller e = { .time_ns = t, .addr = addr, .tid = 1000, .depth = 1 };
		e.ret[0] = pg < 20 ? 0x4002a1 : 0x400311;
		cl[ncl++] = e;
	}
	/* then the threads read it: thread 2 and 3 from node 1, remote */
	for (int v = 0; v < 4; v++)
		for (int th = 0; th < 4; th++)
			for (int pg = th * 16; pg < th * 16 + 16; pg++)
				pb_sample(&b, t++, BASE + (uint64_t)v * (NPAGES * PAGE) + (uint64_t)pg * PAGE + 64, 0x400200,
					  th, th / 2, 0, NK__ACC_READ, 0);
	b.pd.callers = cl;
	b.pd.n_callers = ncl;
	struct nk__symtab st = { 0x400000 };
	nk__symtab *syms[1] = { &st };
	struct nk__analysis *a = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__analyze_ops(&b.p, NULL, syms, &ops, &a, &err), 0);
	const struct nk__an_var *v1 = find_var(a, "init.c:16 (init_grid)");
	assert_string_equal(v1->ft_where, "init.c:42 (init_grid)"); /* the call before 0x4002a1 */
	assert_string_equal(v1->ft_inside, "memset (libc)");
	assert_string_equal(v1->ft_inside_where, "memset-vec-unaligned-erms.S:336 (__memset_avx2_unaligned_erms)");
	assert_int_equal(v1->ft_samples, NPAGES);
	assert_non_null(v1->explain);
	if (!strstr(v1->explain, "initialised by thread 0 at init.c:42 (init_grid), inside memset (libc)"))
		fail_msg("explanation: %s", v1->explain);
	const struct nk__an_var *v2 = find_var(a, "init.c:32 (init_grid)");
	assert_string_equal(v2->ft_where, "init.c:85 (init_grid)");
	assert_null(v2->ft_inside);
	assert_null(v2->ft_inside_where);
	const struct nk__an_var *v3 = find_var(a, "init.c:48 (init_grid)");
	assert_string_equal(v3->ft_where, "memset-vec-unaligned-erms.S:336 (__memset_avx2_unaligned_erms)");
	assert_null(v3->ft_inside);
	const struct nk__an_var *v4 = find_var(a, "init.c:64 (init_grid)");
	assert_string_equal(v4->ft_where, "init.c:42 (init_grid)");
	assert_int_equal(v4->ft_top, 40);
	/* the JSON report: "where" the program's line, "inside" and "inside_where" added */
	char *js = NULL;
	assert_int_equal(nk__report_analysis(a, NK_REPORT_JSON, &js, &err), 0);
	assert_non_null(strstr(js, "\"where\": \"init.c:42 (init_grid)\""));
	assert_non_null(strstr(js, "\"inside\": \"memset (libc)\""));
	assert_non_null(strstr(js, "\"inside\": null"));
	free(js);
	char *html = NULL;
	assert_int_equal(nk__report_analysis(a, NK_REPORT_HTML, &html, &err), 0);
	assert_non_null(strstr(html, "init.c:42 (init_grid)</code>, inside <code>memset (libc)</code>"));
	free(html);
	nk__analysis_free(a);
	b.pd.callers = NULL;
	b.pd.n_callers = 0;
	pb_free(&b);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Several variables with every diagnosis, 8 threads on 2 nodes, two phases.
 * With NK_ANALYSIS_DUMP=DIR the three reports are written there
 * (tests/report/html_check.sh renders the HTML with headless Chromium). */
static void test_demo_report(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, "nodes=2 cores=4 mem=1G dist=10:21 l2=256K", 8);
	pb_phase(&b, 1, "init");
	pb_phase(&b, 2, "compute");
	pb_site(&b, 1, 0x401000);
	pb_site(&b, 2, 0x402000);
	pb_alloc(&b, BASE, 256 * PAGE, 0, 1, 1);
	pb_alloc(&b, BASE + (16 << 20), 128 * PAGE, 0, 2, 2);
	pb_name(&b, BASE + (32 << 20), 256 * PAGE, "grid");
	pb_name(&b, BASE + (48 << 20), 64 * PAGE, "lookup_table");
	pb_name(&b, BASE + (64 << 20), 2 * PAGE, "counters");
	uint64_t t = 1;
	/* hot spot: serial init by thread 0 */
	for (int pg = 0; pg < 256; pg++)
		pb_sample(&b, t++, BASE + pg * PAGE, 0x400100, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH)->phase = 1;
	for (int th = 0; th < 8; th++)
		for (int pg = th * 32; pg < th * 32 + 32; pg++)
			for (int k = 0; k < 3; k++)
				pb_sample(&b, t++, BASE + pg * PAGE, 0x400200, th, th / 4, 0, NK__ACC_READ, 0)->phase = 2;
	/* partition mismatch on grid */
	for (int th = 0; th < 8; th++)
		for (int pg = th * 32; pg < th * 32 + 32; pg++)
			for (int k = 0; k < 2; k++)
				pb_sample(&b, t++, BASE + (32 << 20) + pg * PAGE, 0x400300, th, th / 4, pg < 128 ? 1 : 0,
					  NK__ACC_WRITE, 0)->phase = 2;
	/* uniform sharing on lookup_table */
	for (int pg = 0; pg < 64; pg++)
		for (int th = 0; th < 8; th++)
			pb_sample(&b, t++, BASE + (48 << 20) + pg * PAGE, 0x400400 + 16 * (uint64_t)(pg % 3),
				  (th + pg) % 8, ((th + pg) % 8) / 4, pg % 2, NK__ACC_READ, 0)->phase = 2;
	/* fine: site 2, each thread its own local pages */
	for (int th = 0; th < 8; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			pb_sample(&b, t++, BASE + (16 << 20) + pg * PAGE, 0x400500, th, th / 4, th / 4, NK__ACC_READ, 0)
				->phase = 2;
	/* few samples */
	for (int i = 0; i < 6; i++)
		pb_sample(&b, t++, BASE + (64 << 20), 0x400600, i, i / 4, 0, NK__ACC_WRITE, 0)->phase = 2;
	struct nk__analysis *a = analyze(&b);
	assert_int_equal(find_var(a, "allocation site 1 (0x401000)")->diag, NK__DIAG_HOTSPOT);
	assert_int_equal(find_var(a, "grid")->diag, NK__DIAG_PARTITION);
	assert_int_equal(find_var(a, "lookup_table")->diag, NK__DIAG_SHARING);
	assert_int_equal(find_var(a, "allocation site 2 (0x402000)")->diag, NK__DIAG_FINE);
	assert_int_equal(find_var(a, "counters")->diag, NK__DIAG_FEW_SAMPLES);
	assert_int_equal(a->n_phases, 2);
	/* per-phase counts follow the sorted variables */
	for (size_t i = 0; i < a->n_vars; i++) {
		const struct nk__an_var *v = &a->vars[i];
		assert_int_equal(a->phases[0].var_acc[i] + a->phases[1].var_acc[i], v->acc);
		assert_int_equal(a->phases[0].var_remote[i] + a->phases[1].var_remote[i], v->remote);
		if (!strcmp(v->name, "allocation site 1 (0x401000)"))
			assert_int_equal(a->phases[0].var_acc[i], 256); /* the serial init */
		else
			assert_int_equal(a->phases[0].var_acc[i], 0);
	}
	const char *dir = getenv("NK_ANALYSIS_DUMP");
	const char *names[] = { "report.txt", "report.json", "report.html" };
	for (int f = 0; f < 3; f++) {
		char *o = NULL;
		nk_error err = { 0 };
		assert_int_equal(nk__report_analysis(a, f, &o, &err), 0);
		if (dir)
			write_file(dir, names[f], o);
		free(o);
	}
	nk__analysis_free(a);
	pb_free(&b);
}

/* A chunk malloc'ed and freed over and over at one address (selftime_prog under --small-blocks: 720k events):
 * every free closes the block born last before it, and the matching is not quadratic (it took minutes: the
 * ctest timeout fails this test if it comes back).  Out-of-order records of two threads are matched by time. */
static void test_free_reuse(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, NULL, 1);
	pb_site(&b, 1, 0x401000);
	const uint64_t addr = 0x10000000, n = 600000; /* quadratic: about 6 minutes here, past the 120 s timeout */
	/* the records written in place (pb_alloc's realloc per record is itself quadratic under ASan) */
	b.pd.allocs = malloc((n + 2) * sizeof(*b.pd.allocs));
	b.pd.frees = malloc((n + 2) * sizeof(*b.pd.frees));
	assert_non_null(b.pd.allocs);
	assert_non_null(b.pd.frees);
	for (uint64_t i = 0; i < n; i++) {
		b.pd.allocs[b.pd.n_allocs++] = (struct nk__nkp_alloc){ .addr = addr, .size = 4096, .time_ns = 1000 + 10 * i + 1,
									.tid = 1000, .site = 1, .kind = NK__ALLOC_MALLOC,
									.id = (uint32_t)(i + 1) };
		if (i + 1 < n)
			b.pd.frees[b.pd.n_frees++] = (struct nk__nkp_free){ .addr = addr, .time_ns = 1000 + 10 * i + 5, .tid = 1000,
									    .id = (uint32_t)(i + 1) };
	}
	/* a second address: two live blocks at once, their frees recorded in reverse order */
	pb_alloc(&b, addr + 8192, 4096, 100, 1, (uint32_t)(n + 1));
	pb_free_rec(&b, addr + 8192, 300, (uint32_t)(n + 1));
	pb_alloc(&b, addr + 8192, 4096, 200, 1, (uint32_t)(n + 2));
	/* (a realloc in place at the same address; the later free record comes first) */
	pb_free_rec(&b, addr + 8192, 250, (uint32_t)(n + 2));
	pb_sample(&b, 1000 + 10 * (n - 1) + 2, addr + 64, 0x400a00, 0, 0, 0, NK__ACC_WRITE, 0);
	struct nk__analysis *a = analyze(&b);
	const struct nk__an_var *v = NULL;
	for (size_t i = 0; i < a->n_vars; i++)
		if (a->vars[i].site)
			v = &a->vars[i];
	assert_non_null(v);
	assert_int_equal(v->site_blocks, n + 2);
	assert_int_equal(v->site_live, 1);  /* the last block at addr is never freed */
	assert_int_equal(v->site_peak, 2);  /* the two at addr + 8192 between 200 and 250 */
	nk__analysis_free(a);
	pb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_interval_clusters),
		cmocka_unit_test(test_interval_rounds),
		cmocka_unit_test(test_hotspot),
		cmocka_unit_test(test_partition_mismatch),
		cmocka_unit_test(test_mismatch_after_parallel_init),
		cmocka_unit_test(test_mismatch_init_by_instruction),
		cmocka_unit_test(test_sparse_sharing),
		cmocka_unit_test(test_uniform_sharing),
		cmocka_unit_test(test_fine_few_small),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_phases_warnings),
		cmocka_unit_test(test_phase_diagnosis),
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_sharing_one_thread),
		cmocka_unit_test(test_empty_and_errors),
		cmocka_unit_test(test_demo_report),
		cmocka_unit_test(test_symbolised),
		cmocka_unit_test(test_first_touch_caller),
		cmocka_unit_test(test_free_reuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
