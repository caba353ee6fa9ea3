/* SPDX-License-Identifier: BSD-3-Clause
 * nk_profile_whatif (src/advise/whatif.c) on profiles built in memory with
 * known truth (the pb_* helpers of test_analysis.c) and plans built as
 * structs (src/advise/advice.h), so that the arithmetic of the model
 * (docs/whatif.md) is checked number by number: remote fractions under
 * block / cyclic / bind / pages / next_touch, per-phase and first-parallel
 * entries, pinning that moves threads, another machine (2 vs 4 nodes),
 * NK_ENODEV, latency (SLIT fallback and measured), the bandwidth model
 * (default and measured capacities) and the migration volume.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "advise/whatif.h"
#include "profile/analysis.h"

#define PAGE 4096ull
#define BASE 0x10000000ull
#define NPAGES 64
#define PER_PAGE 4

#define M4 "nodes=4 cores=2 mem=1G dist=10:20 l2=256K"
#define M2 "nodes=2 cores=2 mem=1G dist=10:20 l2=256K"

/* ------------------------------------------------ profiles (as test_analysis.c) */

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
	b->p.run_json = strdup("{\"command\": [\"./app\"], \"sampler\": \"pagefault\", \"wall_ns\": 1000000000}");
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
	for (size_t i = 0; i < b->pd.n_names; i++)
		free(b->pd.names[i].name);
	free(b->pd.names);
	for (size_t i = 0; i < b->pd.n_phases; i++)
		free(b->pd.phases[i].name);
	free(b->pd.phases);
	free(b->pd.samples);
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

static struct nk__nkp_sample *pb_sample(struct pbuild *b, uint64_t t, uint64_t addr, int thread, int cpu_node,
					int page_node, int flags, uint16_t phase)
{
	if (b->pd.n_samples == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->pd.samples = realloc(b->pd.samples, b->cap * sizeof(*b->pd.samples));
	}
	struct nk__nkp_sample *s = &b->pd.samples[b->pd.n_samples++];
	*s = (struct nk__nkp_sample){ .time_ns = t, .addr = addr, .ip = 0x400100, .tid = 1000 + (uint32_t)thread,
				      .weight = 1, .cpu = (int16_t)cpu_node, .cpu_node = (int16_t)cpu_node,
				      .page_node = (int16_t)page_node, .access = NK__ACC_READ, .phase = phase,
				      .sampler = NK__SAMPLER_TRACE, .flags = (uint8_t)flags };
	b->p.n_samples++;
	return s;
}

static nk_profile *profile_of(struct pbuild *b)
{
	struct nk__analysis *a = NULL;
	nk_error err = { 0, "" };
	int rc = nk__analyze(&b->p, NULL, NULL, &a, &err);
	if (rc)
		fail_msg("nk__analyze: %d %s", rc, err.message);
	nk_profile *p = NULL;
	assert_int_equal(nk__profile_from_analysis(a, &p, &err), 0);
	return p;
}

/*
 * "grid", 64 pages at BASE, all on node @p page_node; 4 threads, thread t on
 * node @p cpu_nodes[t], reads its quarter (pages 16t..16t+15) 4 times a page.
 * With @p phases: a first phase "init" (thread 0 first-touches every page,
 * local) then "compute" with the reads.
 */
static nk_profile *quarters(const char *mdesc, const int cpu_nodes[4], int page_node, int phases)
{
	struct pbuild b;
	pb_init(&b, mdesc, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "grid");
	uint64_t t = 10;
	if (phases) {
		pb_phase(&b, 1, "init");
		pb_phase(&b, 2, "compute");
		for (int pg = 0; pg < NPAGES; pg++)
			pb_sample(&b, t++, BASE + pg * PAGE, 0, cpu_nodes[0], page_node, NK__SF_FIRST_TOUCH, 1);
	}
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < PER_PAGE; k++)
				pb_sample(&b, t++, BASE + pg * PAGE + 64 * (uint64_t)k, th, cpu_nodes[th], page_node, 0,
					  phases ? 2 : 0);
	nk_profile *p = profile_of(&b);
	pb_free(&b);
	return p;
}

static const int ON_OWN_NODE[4] = { 0, 1, 2, 3 };

/* ------------------------------------------------ plans as structs (advice.h), freed by nk_advice_free */

static nk_advice *plan_new(void)
{
	nk_advice *a = NULL;
	assert_int_equal(nk_advice_create(&a), 0);
	return a;
}

static struct nk__aplan_entry *plan_add(nk_advice *a, const char *key, const char *policy, int when,
					const char *phase)
{
	a->entries = realloc(a->entries, (a->n_entries + 1) * sizeof(*a->entries));
	struct nk__aplan_entry *e = &a->entries[a->n_entries++];
	memset(e, 0, sizeof(*e));
	e->key = strdup(key);
	e->variable = strdup(key + (strncmp(key, "name:", 5) ? 0 : 5));
	e->policy = strdup(policy);
	e->when = when;
	e->phase = phase ? strdup(phase) : NULL;
	e->ev.dominant_node = -1;
	return e;
}

static void plan_pin(nk_advice *a, const char *strategy, int threads)
{
	free(a->pin.strategy);
	a->pin.strategy = strdup(strategy);
	a->pin.threads = threads;
}

static void plan_free(nk_advice *a)
{
	nk_advice_free(a);
}

/* ------------------------------------------------ running it */

static json_t *whatif_json(const nk_profile *p, const nk_machine *m, const nk_advice *a)
{
	char *out = NULL;
	nk_error err = { 0, "" };
	int rc = nk_profile_whatif(p, m, a, NK_REPORT_JSON, &out, &err);
	if (rc)
		fail_msg("nk_profile_whatif: %d %s", rc, err.message);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	if (!j)
		fail_msg("whatif JSON does not parse: %s", je.text);
	free(out);
	assert_string_equal(json_string_value(json_object_get(j, "format")), "numakit-whatif");
	assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
	return j;
}

static double num(const json_t *o, const char *path)
{
	/* "a.b.c" through objects */
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	const json_t *cur = o;
	for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
		cur = json_object_get(cur, tok);
		if (!cur)
			fail_msg("no member %s in %s", tok, path);
	}
	if (!json_is_number(cur))
		fail_msg("%s is not a number", path);
	return json_number_value(cur);
}

static const json_t *var_of(const json_t *j, const char *name)
{
	const json_t *vars = json_object_get(j, "variables"), *v;
	size_t i;
	json_array_foreach(vars, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return v;
	fail_msg("no variable %s", name);
	return NULL;
}

static int has_warning(const json_t *j, const char *needle)
{
	const json_t *w = json_object_get(j, "warnings"), *s;
	size_t i;
	json_array_foreach(w, i, s)
		if (strstr(json_string_value(s), needle))
			return 1;
	return 0;
}

static void near(double x, double y, const char *what, int line)
{
	if (fabs(x - y) > 1e-6)
		fail_msg("line %d: %s is %.9g, expected %.9g", line, what, x, y);
}
#define NEAR(x, y) near((double)(x), (double)(y), #x, __LINE__)

/* remote fraction of "grid" (profiled, planned) under one alloc entry */
static void one_policy(const nk_profile *p, const char *policy, double want_prof, double want_plan)
{
	nk_advice *a = plan_new();
	plan_add(a, "name:grid", policy, NK__WHEN_ALLOC, NULL);
	json_t *j = whatif_json(p, NULL, a);
	const json_t *v = var_of(j, "grid");
	NEAR(num(v, "profiled.remote_fraction"), want_prof);
	NEAR(num(v, "planned.remote_fraction"), want_plan);
	NEAR(num(j, "total.planned.remote_fraction"), want_plan);
	NEAR(num(v, "migration_bytes"), 0); /* alloc entries migrate nothing */
	json_decref(j);
	plan_free(a);
}

/* ------------------------------------------------ tests */

/* Pages all on node 0, thread t on node t reads quarter t: 75 % remote as profiled. */
static void test_policies(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 0);
	one_policy(p, "none", 0.75, 0.75);
	one_policy(p, "block", 0.75, 0.0);           /* blocks in node order = thread order */
	one_policy(p, "cyclic", 0.75, 0.75);         /* each thread finds 4 of its 16 pages local */
	one_policy(p, "bind:nodes=1", 0.75, 0.75);   /* only thread 1 is local */
	one_policy(p, "cyclic:nodes=0,1", 0.75, 0.75); /* threads 0,1 half local, 2,3 never: 64 of 256 */
	one_policy(p, "cyclic_block:block=64K", 0.75, 0.0); /* 16-page blocks round robin = quarters */
	/* 8-page blocks: quarters on nodes {0,1},{2,3},{0,1},{2,3}: threads 0 and 3 half local */
	one_policy(p, "cyclic_block:block=32K", 0.75, 0.75);
	one_policy(p, "next_touch", 0.75, 0.0);      /* every page goes to its reader */
	one_policy(p, "block:nodes=3,2,1,0", 0.75, 1.0);
	nk_profile_free(p);
}

/* Stall: accesses x latency, 80 ns x distance / 10 unmeasured; measured latency and bandwidth. */
static void test_stall(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 0);
	nk_advice *a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_ALLOC, NULL);
	json_t *j = whatif_json(p, NULL, a);
	/* profiled: 64 local x 80 ns + 192 remote x 160 ns; plan: 256 x 80 ns */
	NEAR(num(j, "total.profiled.stall_ms"), (64 * 80.0 + 192 * 160.0) / 1e6);
	NEAR(num(j, "total.planned.stall_ms"), 256 * 80.0 / 1e6);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "machine"), "latency")), "slit");
	assert_true(json_is_null(json_object_get(json_object_get(json_object_get(j, "total"), "planned"),
						 "bandwidth_ms")));
	json_decref(j);

	/* measured: local 100 ns, remote 300 ns; node bandwidth 4000 MB/s, half of what one streaming thread
	 * demands (8000 MB/s): a node serves half a thread at full speed.  The threads read one after the other
	 * (one a time window): as profiled node 0 serves one thread at a time, load 2; under block each node
	 * its own thread, load 2 as well: every access takes twice its latency, the bandwidth term is the
	 * latency again */
	nk_machine *m = nk_test_synth(M4);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++) {
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, i, k, i == k ? 100 : 300), 0);
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, i, k, 4000.0), 0);
		}
	j = whatif_json(p, m, a);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "machine"), "latency")), "measured");
	double l0 = (64 * 100.0 + 192 * 300.0) / 1e6, l1 = 256 * 100.0 / 1e6;
	NEAR(num(j, "total.profiled.latency_ms"), l0);
	NEAR(num(j, "total.planned.latency_ms"), l1);
	NEAR(num(j, "total.profiled.bandwidth_ms"), l0);
	NEAR(num(j, "total.planned.bandwidth_ms"), l1);
	NEAR(num(j, "total.profiled.contention_ms"), l0);
	NEAR(num(j, "total.profiled.stall_ms"), 2 * l0);
	NEAR(num(j, "total.planned.stall_ms"), 2 * l1);
	json_decref(j);
	nk_machine_free(m);
	plan_free(a);
	nk_profile_free(p);
}

/* Per-phase entries apply from their phase on; first-parallel spares the main thread's first touches. */
static void test_phases(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 1);
	/* as profiled: 64 local first touches + 192 remote of 256 reads: 192 / 320 */
	nk_advice *a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_PHASE, "compute");
	json_t *j = whatif_json(p, NULL, a);
	const json_t *v = var_of(j, "grid");
	NEAR(num(v, "profiled.remote_fraction"), 192.0 / 320.0);
	NEAR(num(v, "planned.remote_fraction"), 0.0); /* init stays local, compute is all local */
	/* migration: pages 16..63 leave node 0: 48/64 of 256 KiB */
	NEAR(num(v, "migration_bytes"), 48.0 / 64.0 * NPAGES * PAGE);
	NEAR(num(j, "total.migration_bytes"), 196608);
	json_decref(j);
	plan_free(a);

	/* the same policy at allocation: the init writes of thread 0 (node 0) become remote on 48 pages */
	a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, NULL, a);
	NEAR(num(var_of(j, "grid"), "planned.remote_fraction"), 48.0 / 320.0);
	NEAR(num(var_of(j, "grid"), "migration_bytes"), 0);
	json_decref(j);
	plan_free(a);

	/* first parallel region: the main thread's first touches stay as profiled (node 0, local) */
	a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_FIRST_PARALLEL, NULL);
	j = whatif_json(p, NULL, a);
	NEAR(num(var_of(j, "grid"), "planned.remote_fraction"), 0.0);
	NEAR(num(var_of(j, "grid"), "migration_bytes"), 196608);
	json_decref(j);
	plan_free(a);

	/* cyclic at allocation, block from "compute": init under cyclic (48 remote), reads under block;
	 * migration from cyclic to block: page i stays only where i mod 4 == i / 16 (16 of 64) */
	a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_PHASE, "compute");
	plan_add(a, "name:grid", "cyclic", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, NULL, a);
	v = var_of(j, "grid");
	NEAR(num(v, "planned.remote_fraction"), 48.0 / 320.0);
	NEAR(num(v, "migration_bytes"), 48.0 / 64.0 * NPAGES * PAGE);
	assert_int_equal(json_array_size(json_object_get(v, "entries")), 2);
	/* entries in the plan's order, each with the samples it applied to */
	const json_t *ents = json_object_get(j, "entries");
	NEAR(num(json_array_get(ents, 0), "samples_applied"), 256);
	NEAR(num(json_array_get(ents, 1), "samples_applied"), 64);
	json_decref(j);
	plan_free(a);

	/* next_touch from "compute": each page moves to its first reader there (quarters 1-3 move) */
	a = plan_new();
	plan_add(a, "name:grid", "next_touch", NK__WHEN_PHASE, "compute");
	j = whatif_json(p, NULL, a);
	NEAR(num(var_of(j, "grid"), "planned.remote_fraction"), 0.0);
	NEAR(num(var_of(j, "grid"), "migration_bytes"), 196608);
	json_decref(j);
	plan_free(a);

	/* bind to node 1 in "init" only, then "none" in compute is as profiled again (node 0) */
	a = plan_new();
	plan_add(a, "name:grid", "bind:nodes=1", NK__WHEN_PHASE, "init");
	plan_add(a, "name:grid", "none", NK__WHEN_PHASE, "compute");
	plan_add(a, "name:grid", "cyclic", NK__WHEN_PHASE, "no-such-phase");
	plan_add(a, "name:nothing", "cyclic", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, NULL, a);
	v = var_of(j, "grid");
	NEAR(num(v, "planned.remote_fraction"), (64.0 + 192.0) / 320.0);
	/* init: every page 0 -> 1 (64 of 64); "none" moves nothing */
	NEAR(num(v, "migration_bytes"), NPAGES * PAGE);
	assert_true(has_warning(j, "phase \"no-such-phase\" never occurs"));
	assert_true(has_warning(j, "\"nothing\" (name:nothing) matches no variable"));
	ents = json_object_get(j, "entries");
	assert_true(json_is_false(json_object_get(json_array_get(ents, 2), "matched")));
	assert_true(json_is_false(json_object_get(json_array_get(ents, 3), "matched")));
	json_decref(j);
	plan_free(a);
	nk_profile_free(p);
}

/* Pinning moves the threads: all four ran on node 0, pages already in quarters on nodes 0-3. */
static void test_pinning(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M4, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "grid");
	uint64_t t = 1;
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			pb_sample(&b, t++, BASE + pg * PAGE, th, 0, pg / 16, 0, 0);
	nk_profile *p = profile_of(&b);
	pb_free(&b);

	nk_advice *a = plan_new();
	json_t *j = whatif_json(p, NULL, a); /* empty plan: nothing changes */
	NEAR(num(j, "total.profiled.remote_fraction"), 0.75);
	NEAR(num(j, "total.planned.remote_fraction"), 0.75);
	assert_true(json_is_null(json_object_get(j, "pinning")));
	json_decref(j);

	plan_pin(a, "scatter", 4); /* thread t on node t */
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.planned.remote_fraction"), 0.0);
	const json_t *tn = json_object_get(json_object_get(j, "pinning"), "thread_nodes");
	for (int i = 0; i < 4; i++)
		assert_int_equal(json_integer_value(json_array_get(tn, (size_t)i)), i);
	const json_t *th3 = json_array_get(json_object_get(j, "threads"), 3);
	assert_int_equal(json_integer_value(json_object_get(th3, "profiled_node")), 0);
	assert_int_equal(json_integer_value(json_object_get(th3, "planned_node")), 3);
	json_decref(j);

	plan_pin(a, "compact", 4); /* 2 cores a node: threads 0,1 on node 0, 2,3 on node 1 */
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.planned.remote_fraction"), 0.75); /* only thread 0 finds its quarter local */
	json_decref(j);

	plan_pin(a, "cpus", 0); /* thread t on a cpu of node 3 - t (cpus 6, 4, 2, 0) */
	a->pin.cpus = malloc(4 * sizeof(int));
	a->pin.n_cpus = 4;
	for (int i = 0; i < 4; i++)
		a->pin.cpus[i] = 6 - 2 * i;
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.planned.remote_fraction"), 1.0);
	json_decref(j);

	/* sharing: threads 0 and 3 share, 1 and 2 share: on 2 nodes they pair up ({0,3} and {1,2}) */
	nk_machine *m2 = nk_test_synth(M2);
	struct pbuild b2;
	pb_init(&b2, M2, 4);
	pb_name(&b2, BASE, NPAGES * PAGE, "grid");
	static const int quarter_node[4] = { 0, 1, 1, 0 };
	t = 1;
	for (int th = 0; th < 4; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			pb_sample(&b2, t++, BASE + pg * PAGE, th, 0, quarter_node[th], 0, 0);
	nk_profile *p2 = profile_of(&b2);
	pb_free(&b2);
	nk_advice *s2 = plan_new();
	plan_pin(s2, "sharing", 4);
	s2->pin.sharing = calloc(16, sizeof(double));
	s2->pin.sharing[0 * 4 + 3] = s2->pin.sharing[3 * 4 + 0] = 10;
	s2->pin.sharing[1 * 4 + 2] = s2->pin.sharing[2 * 4 + 1] = 10;
	j = whatif_json(p2, m2, s2);
	NEAR(num(j, "total.profiled.remote_fraction"), 0.5); /* threads 1 and 2 (node 0) read node 1 */
	tn = json_object_get(json_object_get(j, "pinning"), "thread_nodes");
	json_int_t n0 = json_integer_value(json_array_get(tn, 0)), n1 = json_integer_value(json_array_get(tn, 1));
	assert_int_equal(json_integer_value(json_array_get(tn, 3)), n0);
	assert_int_equal(json_integer_value(json_array_get(tn, 2)), n1);
	assert_true(n0 != n1);
	NEAR(num(j, "total.planned.remote_fraction"), n0 == 0 ? 0.0 : 1.0);
	json_decref(j);
	plan_free(s2);
	nk_profile_free(p2);
	nk_machine_free(m2);

	/* a cpu the machine lacks */
	a->pin.cpus[2] = 99;
	char *out = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), NK_ENODEV);
	assert_null(out);
	assert_non_null(strstr(err.message, "cpu 99"));
	plan_free(a);
	nk_profile_free(p);
}

/* The same plan on another machine: a 2-node profile on a 4-node box and back. */
static void test_other_machine(void **state)
{
	(void)state;
	/* 2-node profile: threads 0,1 on node 0, 2,3 on node 1, every page on node 0 */
	static const int TWO[4] = { 0, 0, 1, 1 };
	nk_profile *p2 = quarters(M2, TWO, 0, 0);
	nk_machine *m4 = nk_test_synth(M4), *m2 = nk_test_synth(M2);
	nk_advice *a = plan_new();
	plan_add(a, "name:grid", "cyclic", NK__WHEN_ALLOC, NULL);
	json_t *j = whatif_json(p2, NULL, a);
	NEAR(num(j, "total.profiled.remote_fraction"), 0.5);
	NEAR(num(j, "total.planned.remote_fraction"), 0.5); /* half of every quarter on each of 2 nodes */
	json_decref(j);
	/* on 4 nodes the threads stay on nodes 0 and 1 (they exist) but cyclic spreads over 4 */
	j = whatif_json(p2, m4, a);
	NEAR(num(j, "total.planned.remote_fraction"), 0.75);
	assert_true(json_is_false(json_object_get(json_object_get(j, "machine"), "threads_remapped")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "machine"), "source")), "given");
	json_decref(j);
	/* ...unless the plan pins them: scatter over 4 nodes + block */
	free(a->entries[0].policy);
	a->entries[0].policy = strdup("block");
	plan_pin(a, "scatter", 4);
	j = whatif_json(p2, m4, a);
	NEAR(num(j, "total.planned.remote_fraction"), 0.0);
	json_decref(j);
	plan_free(a);

	/* 4-node profile on a 2-node machine: threads on nodes 2, 3 do not exist there */
	nk_profile *p4 = quarters(M4, ON_OWN_NODE, 0, 0);
	a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p4, m2, a);
	assert_true(json_is_true(json_object_get(json_object_get(j, "machine"), "threads_remapped")));
	assert_true(has_warning(j, "round") || has_warning(j, "modulo"));
	/* threads 0..3 -> nodes 0,1,0,1: as profiled (pages on node 0) threads 1 and 3 are remote */
	NEAR(num(j, "total.profiled.remote_fraction"), 0.5);
	/* block over 2 nodes: quarters 0,1 on node 0, 2,3 on node 1: threads 1 and 2 remote */
	NEAR(num(j, "total.planned.remote_fraction"), 0.5);
	json_decref(j);
	/* a plan node the machine lacks: NK_ENODEV naming the entry and the node, nothing returned */
	free(a->entries[0].policy);
	a->entries[0].policy = strdup("bind:nodes=3");
	char *out = (char *)0x1;
	nk_error err = { 0, "" };
	out = NULL;
	assert_int_equal(nk_profile_whatif(p4, m2, a, NK_REPORT_JSON, &out, &err), NK_ENODEV);
	assert_null(out);
	assert_non_null(strstr(err.message, "grid"));
	assert_non_null(strstr(err.message, "node 3"));
	/* the same with page ranges */
	free(a->entries[0].policy);
	a->entries[0].policy = strdup("pages");
	a->entries[0].ranges = calloc(1, sizeof(*a->entries[0].ranges));
	a->entries[0].ranges[0] = (struct nk__aplan_range){ 0, 16, 2 };
	a->entries[0].n_ranges = 1;
	a->entries[0].page_size = PAGE;
	assert_int_equal(nk_profile_whatif(p4, m2, a, NK_REPORT_TEXT, &out, &err), NK_ENODEV);
	assert_non_null(strstr(err.message, "node 2"));
	/* fine on the machine profiled */
	j = whatif_json(p4, NULL, a);
	/* pages 0..15 -> node 2: thread 0's quarter now remote, the rest as profiled (node 0) */
	NEAR(num(j, "total.planned.remote_fraction"), 1.0);
	json_decref(j);
	plan_free(a);
	nk_machine_free(m4);
	nk_machine_free(m2);
	nk_profile_free(p2);
	nk_profile_free(p4);
}

/* Explicit page ranges: quarter t on node t; pages outside every range stay as profiled. */
static void test_pages(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 0);
	nk_advice *a = plan_new();
	struct nk__aplan_entry *e = plan_add(a, "name:grid", "pages", NK__WHEN_FIRST_PARALLEL, NULL);
	e->ranges = calloc(3, sizeof(*e->ranges));
	e->n_ranges = 3;
	e->page_size = PAGE;
	for (int i = 1; i < 4; i++)
		e->ranges[i - 1] = (struct nk__aplan_range){ 16 * (uint64_t)i, 16, i };
	json_t *j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.planned.remote_fraction"), 0.0);
	/* migration: 48 of the 64 sampled pages move */
	NEAR(num(j, "total.migration_bytes"), 196608);
	NEAR(num(j, "total.migration_mib"), 0.1875);
	json_decref(j);
	plan_free(a);
	nk_profile_free(p);
}

/* The text: within 100 columns, the numbers, the estimate note; bad arguments. */
static void test_text_and_errors(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 0);
	nk_advice *a = plan_new();
	plan_add(a, "name:grid", "block", NK__WHEN_FIRST_PARALLEL, NULL);
	char *out = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), 0);
	for (char *l = out, *e; *l; l = e + 1) {
		e = strchr(l, '\n');
		assert_non_null(e);
		if (e - l > 100)
			fail_msg("line over 100 columns: %.*s", (int)(e - l), l);
	}
	assert_non_null(strstr(out, " 75.0 ->   0.0"));
	assert_non_null(strstr(out, "not a prediction of run time"));
	assert_non_null(strstr(out, "80 ns x SLIT distance / 10"));
	assert_non_null(strstr(out, "block@par"));
	free(out);

	out = NULL;
	assert_int_equal(nk_profile_whatif(NULL, NULL, a, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_whatif(p, NULL, NULL, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_HTML, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, NULL, &err), NK_EINVAL);
	/* a policy that does not parse, a policy that needs geometry */
	free(a->entries[0].policy);
	a->entries[0].policy = strdup("bogus");
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "plan entry \"grid\""));
	free(a->entries[0].policy);
	a->entries[0].policy = strdup("block_exclusive");
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_null(out);
	plan_free(a);
	nk_profile_free(p);

	/* no machine in the profile and none given */
	struct pbuild b;
	pb_init(&b, NULL, 1);
	pb_name(&b, BASE, PAGE, "x");
	pb_sample(&b, 1, BASE, 0, 0, 0, 0, 0);
	p = profile_of(&b);
	pb_free(&b);
	a = plan_new();
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "--machine"));
	nk_machine *m = nk_test_synth(M2);
	assert_int_equal(nk_profile_whatif(p, m, a, NK_REPORT_TEXT, &out, &err), 0);
	free(out);
	nk_machine_free(m);
	plan_free(a);
	nk_profile_free(p);
}

/* Unknown nodes stay out of the fraction and the stall; a thread without THREAD record is never pinned. */
/*
 * A rank moved (nk__whatif_move, whatif --rank-map): four threads on nodes 0-3 reading pages all on node 0.
 * As profiled 75 % remote; on node 2 with the memory staying 100 %, following 0 %; on node 0 staying 0 %.
 */
static void test_move(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 0);
	const struct nk__analysis *an = nk__profile_analysis(p);
	nk_machine *m = nk_test_synth(M4);
	struct nk__whatif_pred prof, x, keep = { 0 };
	nk_error err = { 0, "" };
	char *why = NULL;

	assert_int_equal(nk__whatif_move(an, m, -1, 0, &prof, &why, &err), 0);
	assert_null(why);
	assert_true(fabs(prof.remote_fraction - 0.75) < 1e-9);
	/* latency term: a quarter local (80 ns), three quarters at distance 20 (160 ns) */
	assert_true(fabs(prof.latency_ms - (double)prof.acc * (0.25 * 80 + 0.75 * 160) / 1e6) < 1e-9);
	assert_int_equal(nk__whatif_move(an, m, 2, 0, &x, NULL, &err), 0);
	assert_int_equal(x.acc, prof.acc);
	assert_true(fabs(x.remote_fraction - 1.0) < 1e-9);
	assert_int_equal(nk__whatif_move(an, m, 2, 1, &x, NULL, &err), 0);
	assert_true(fabs(x.remote_fraction) < 1e-9);
	assert_true(fabs(x.latency_ms - (double)prof.acc * 80 / 1e6) < 1e-9);
	assert_int_equal(x.busiest_node, 2);
	assert_int_equal(nk__whatif_move(an, m, 0, 0, &x, NULL, &err), 0);
	assert_true(fabs(x.remote_fraction) < 1e-9);
	/* a node the machine lacks: an error, the output untouched */
	keep.acc = 12345;
	assert_int_equal(nk__whatif_move(an, m, 9, 1, &keep, NULL, &err), NK_EINVAL);
	assert_int_equal(keep.acc, 12345);
	assert_non_null(strstr(err.message, "node 9"));

	/* the public call: a profile that is not a job's, bad arguments; nothing written on error */
	char *out = NULL;
	nk_rank_slot slot = { 0, NULL, 1, NULL, 0 };
	assert_int_equal(nk_profile_rankmap_whatif(p, &slot, 1, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "not a job's profile"));
	assert_int_equal(nk_profile_rankmap_whatif(NULL, &slot, 1, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_rankmap_whatif(p, NULL, 1, NK_REPORT_TEXT, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_rankmap_whatif(p, &slot, 1, NK_REPORT_HTML, &out, &err), NK_EINVAL);
	assert_int_equal(nk_profile_rankmap_whatif(p, &slot, 1, NK_REPORT_TEXT, NULL, &err), NK_EINVAL);
	assert_null(out);
	nk_machine_free(m);
	nk_profile_free(p);
}

static void test_unknown(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 2);
	pb_name(&b, BASE, 4 * PAGE, "buf");
	for (int i = 0; i < 10; i++)
		pb_sample(&b, 1 + (uint64_t)i, BASE + (uint64_t)(i % 4) * PAGE, 0, 0, 1, 0, 0); /* remote */
	for (int i = 0; i < 10; i++)
		pb_sample(&b, 20 + (uint64_t)i, BASE, 1, -1, 0, 0, 0); /* cpu node unknown */
	for (int i = 0; i < 10; i++)
		pb_sample(&b, 40 + (uint64_t)i, BASE, 7, 0, 0, 0, 0)->tid = 4242; /* no THREAD record, local */
	nk_profile *p = profile_of(&b);
	pb_free(&b);
	nk_advice *a = plan_new();
	plan_pin(a, "scatter", 2); /* thread 0 -> node 0, thread 1 -> node 1 */
	json_t *j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.profiled.unknown"), 10);
	NEAR(num(j, "total.profiled.remote_fraction"), 0.5); /* 10 remote, 10 local (tid 4242) */
	NEAR(num(j, "total.profiled.stall_ms"), (10 * 160.0 + 10 * 80.0) / 1e6);
	/* thread 1 is pinned to node 1: its 10 accesses to node 0 become known and remote; tid 4242 stays */
	NEAR(num(j, "total.planned.unknown"), 0);
	NEAR(num(j, "total.planned.remote_fraction"), 20.0 / 30.0);
	const json_t *th = json_array_get(json_object_get(j, "threads"), 2);
	assert_int_equal(json_integer_value(json_object_get(th, "index")), -1);
	assert_int_equal(json_integer_value(json_object_get(th, "planned_node")), 0);
	json_decref(j);
	plan_free(a);
	nk_profile_free(p);
}

/* More than 20 variables: the ones without an entry past the 20th are summed in one line. */
static void test_many_variables(void **state)
{
	(void)state;
	struct pbuild b;
	pb_init(&b, M2, 2);
	char name[32];
	for (int v = 0; v < 25; v++) {
		snprintf(name, sizeof(name), "var%02d", v);
		pb_name(&b, BASE + (uint64_t)v * 16 * PAGE, PAGE, name);
		for (int k = 0; k <= v; k++) /* var24 has the most remote accesses: listed first */
			pb_sample(&b, 1 + (uint64_t)(v * 100 + k), BASE + (uint64_t)v * 16 * PAGE, k % 2, k % 2, 0, 0, 0);
	}
	nk_profile *p = profile_of(&b);
	pb_free(&b);
	nk_advice *a = plan_new();
	plan_add(a, "name:var00", "bind:nodes=1", NK__WHEN_ALLOC, NULL); /* the last one, listed anyway */
	char *out = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "\nvar24 "));
	assert_non_null(strstr(out, "\nvar00 "));
	assert_null(strstr(out, "\nvar01 "));
	/* var01..var04 (2+3+4+5 samples) are summed */
	assert_non_null(strstr(out, "(4 more variables)             14 "));
	free(out);
	plan_free(a);
	nk_profile_free(p);
}

/* Through the public plan API: a parsed plan and nk_advice_set give the same numbers as the structs. */
static void test_public_plan(void **state)
{
	(void)state;
	nk_profile *p = quarters(M4, ON_OWN_NODE, 0, 1);
	static const char json[] =
		"{\"format\": \"numakit-plan\", \"version\": 1,"
		" \"pin\": {\"strategy\": \"scatter\", \"threads\": 4},"
		" \"entries\": [{\"key\": \"name:grid\", \"policy\": \"block\", \"when\": \"phase\","
		" \"phase\": \"compute\"}]}";
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_advice_parse(json, strlen(json), &a, &err), 0);
	json_t *j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.profiled.remote_fraction"), 192.0 / 320.0);
	NEAR(num(j, "total.planned.remote_fraction"), 0.0);
	NEAR(num(j, "total.migration_bytes"), 196608);
	json_decref(j);
	nk_advice_free(a);

	/* nk_advice_set by the report's name: an alloc entry */
	assert_int_equal(nk_advice_create(&a), 0);
	assert_int_equal(nk_advice_set(a, p, "grid", "bind:nodes=1", &err), 0);
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.planned.remote_fraction"), (64.0 + 192.0) / 320.0); /* thread 0's init, threads 0,2,3 */
	NEAR(num(j, "total.migration_bytes"), 0);
	json_decref(j);
	nk_advice_free(a);
	nk_profile_free(p);
}


/* ------------------------------------------------ the default bandwidth model (issue 21 §2) */

/* The pure parts: windows, loads (with their lower bound), demand as a rate, slowdown. */
static void test_bandwidth_pure(void **state)
{
	(void)state;
	assert_int_equal(nk__whatif_windows(0, 4), 1);
	assert_int_equal(nk__whatif_windows(63, 4), 1);
	assert_int_equal(nk__whatif_windows(512, 4), 8);   /* 16 samples per thread and window */
	assert_int_equal(nk__whatif_windows(1u << 30, 4), 64);
	assert_int_equal(nk__whatif_windows(100, 0), 6);

	const double cap1[4] = { 1, 1, 1, 1 }, cap2[4] = { 2, 2, 2, 2 };
	double load[4], var[4];
	int users[4];
	/* every thread reads node 0 only, at the same rate: a node of one core serves 4 threads, exactly (no
	 * spread to doubt) */
	const uint64_t hot[16] = { 16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0 };
	const uint64_t n16[4] = { 16, 16, 16, 16 };
	nk__whatif_loads(hot, n16, 4, 4, cap1, load, users, var);
	NEAR(load[0], 4);
	NEAR(load[1], 0);
	assert_int_equal(users[0], 4);
	assert_int_equal(users[1], 0);
	nk__whatif_loads(hot, n16, 4, 4, cap2, load, NULL, var);
	NEAR(load[0], 2);
	/* each thread on its own node: every node at its capacity, not above */
	const uint64_t own[16] = { 9, 0, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0, 0, 0, 0, 9 };
	nk__whatif_loads(own, NULL, 4, 4, cap1, load, users, NULL);
	for (int n = 0; n < 4; n++) {
		NEAR(load[n], 1);
		assert_int_equal(users[n], 1);
		NEAR(nk__whatif_slowdown(load[n]), 1);
	}
	/* a thread that is not running in the window (no accesses) loads nothing; one split 3:1 loads 0.75 and 0.25 */
	const uint64_t split[8] = { 3, 1, 0, 0, 0, 0, 0, 0 };
	nk__whatif_loads(split, NULL, 2, 4, cap1, load, users, NULL);
	NEAR(load[0], 0.75);
	NEAR(load[1], 0.25);
	assert_int_equal(users[0], 1);
	/* the same shares from 16 samples: the load is the lower 95 % bound, 0.75 - 1.96 sqrt(0.75 x 0.25 / 16) */
	const uint64_t n1[2] = { 16, 0 };
	nk__whatif_loads(split, n1, 2, 4, cap1, load, NULL, var);
	NEAR(load[0], 0.75 - 1.96 * sqrt(0.75 * 0.25 / 16));
	/* 4 threads spread evenly over 4 nodes from 16 samples each: 1 at best, not saturated as far as the
	 * samples tell (1 - 1.96 sqrt(4 x 0.25 x 0.75 / 16)) */
	const uint64_t even[16] = { 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4 };
	nk__whatif_loads(even, n16, 4, 4, cap1, load, NULL, var);
	NEAR(load[2], 1 - 1.96 * sqrt(4 * 0.25 * 0.75 / 16));
	/* a bound below 0 is 0 */
	const uint64_t one[4] = { 1, 1, 1, 1 }, n4[1] = { 4 };
	nk__whatif_loads(one, n4, 1, 4, cap1, load, NULL, var);
	NEAR(load[0], 0);
	NEAR(nk__whatif_slowdown(0), 1);
	NEAR(nk__whatif_slowdown(0.99), 1);
	NEAR(nk__whatif_slowdown(3.5), 3.5);

	/* demand as a rate: the busiest thread of the window streams (1); another counts for its rate relative
	 * to it, at the upper end of its 95 % bound, 1 at most */
	NEAR(nk__whatif_demand(16, 16, 16, 16), 1);
	NEAR(nk__whatif_demand(0, 0, 16, 16), 0);
	NEAR(nk__whatif_demand(8, 0, 16, 0), 0.5);  /* exact */
	NEAR(nk__whatif_demand(16, 16, 32, 32), 1); /* half the rate from 16 samples: not told apart */
	NEAR(nk__whatif_demand(8, 8, 32, 32), 0.25 * (1 + 1.96 / sqrt(8)) / (1 - 1.96 / sqrt(32)));
	NEAR(nk__whatif_demand(1, 1, 64, 64), (1 / 64.0) * (1 + 1.96) / (1 - 1.96 / 8));
	NEAR(nk__whatif_demand(1, 1, 3, 3), 1);     /* the busiest's own count too uncertain */
	/* a thread that made 2 accesses beside one that made 64 in the window loads node 0 by that much */
	const uint64_t light[8] = { 64, 0, 0, 0, 2, 0, 0, 0 }, nl[2] = { 64, 2 };
	nk__whatif_loads(light, nl, 2, 4, cap1, load, users, var);
	NEAR(load[0], 1 + (2 / 64.0) * (1 + 1.96 / sqrt(2)) / (1 - 1.96 / 8));
	assert_int_equal(users[0], 2);
	/* the same weights, exact: 1 + 2 / 64 */
	nk__whatif_loads(light, NULL, 2, 4, cap1, load, NULL, NULL);
	NEAR(load[0], 1 + 2 / 64.0);
}

#define M4ONE "nodes=4 cores=1 mem=1G dist=10:20 l2=256K"

/*
 * "arr", 64 pages; 4 threads, thread t on node t, in step: at each step every thread reads one page, thread
 * t page (t + k) mod 64 at step k, 128 steps (512 samples, 8 windows of 16 steps).  Pages on node
 * @p page_node, or with @p page_node < 0 each thread's pages on its own node (thread t reads its quarter).
 */
static nk_profile *in_step(const char *mdesc, int page_node)
{
	struct pbuild b;
	pb_init(&b, mdesc, 4);
	pb_name(&b, BASE, NPAGES * PAGE, "arr");
	uint64_t t = 10;
	for (int k = 0; k < 128; k++)
		for (int th = 0; th < 4; th++) {
			int pg = page_node < 0 ? th * 16 + k % 16 : (th + k) % NPAGES;
			pb_sample(&b, t++, BASE + (uint64_t)pg * PAGE + 64 * (uint64_t)(k / 64), th, th,
				  page_node < 0 ? th : page_node, 0, 0);
		}
	nk_profile *p = profile_of(&b);
	pb_free(&b);
	return p;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *x = json_object_get(json_object_get(o, a), b);
	return json_is_string(x) ? json_string_value(x) : NULL;
}

/* A node that serves every thread saturates; spreading relieves it; a program on its own nodes never. */
static void test_contention(void **state)
{
	(void)state;
	nk_profile *p = in_step(M4ONE, 0);
	nk_advice *a = plan_new();
	plan_add(a, "name:arr", "cyclic", NK__WHEN_ALLOC, NULL);
	json_t *j = whatif_json(p, NULL, a);
	assert_string_equal(str_at(j, "machine", "bandwidth"), "default model");
	const json_t *bm = json_object_get(json_object_get(j, "machine"), "bandwidth_model");
	NEAR(num(bm, "thread_mbs"), 8000);
	NEAR(num(bm, "windows"), 8);
	NEAR(json_number_value(json_array_get(json_object_get(bm, "node_mbs"), 0)), 8000); /* 1 core */
	/* as profiled: 128 local reads (thread 0) x 80 ns, 384 remote x 160 ns; node 0 serves the 4 threads
	 * at once with the capacity of 1: every access takes 4 times as long */
	double lat = (128 * 80.0 + 384 * 160.0) / 1e6;
	NEAR(num(j, "total.profiled.latency_ms"), lat);
	NEAR(num(j, "total.profiled.contention_ms"), 3 * lat);
	NEAR(num(j, "total.profiled.stall_ms"), 4 * lat);
	const json_t *pl = json_object_get(json_object_get(j, "total"), "profiled");
	NEAR(json_number_value(json_array_get(json_object_get(pl, "node_load"), 0)), 4);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(pl, "node_threads"), 0)), 4);
	assert_true(json_is_null(json_object_get(pl, "bandwidth_ms")));
	/* interleaved: each thread's 16 pages of a window on the 4 nodes evenly, one thread's worth a node (less
	 * its doubt): no contention; the latency is the same (a quarter local), the stall a quarter */
	NEAR(num(j, "total.planned.latency_ms"), lat);
	NEAR(num(j, "total.planned.contention_ms"), 0);
	NEAR(num(j, "total.planned.stall_ms"), lat);
	NEAR(num(var_of(j, "arr"), "profiled.contention_ms"), 3 * lat);
	json_decref(j);
	/* the text says which bandwidth was used and which node saturates */
	char *out = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_profile_whatif(p, NULL, a, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "bandwidth: default model"));
	assert_non_null(strstr(out, "\n  node 0 (1 core): 4 threads, load 4.00 -> 4 threads, load 0.58\n"));
	free(out);
	plan_free(a);

	/* measured bandwidth, huge: the same model, each node's capacity its bandwidth over a thread's demand
	 * (1e9 / 8000 threads): node 0 serving the 4 threads is far from saturated, the latency alone counts */
	nk_machine *m = nk_test_synth(M4ONE);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++)
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, i, k, 1e9), 0);
	a = plan_new();
	plan_add(a, "name:arr", "cyclic", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, m, a);
	assert_string_equal(str_at(j, "machine", "bandwidth"), "measured");
	assert_true(json_is_true(json_object_get(json_object_get(j, "machine"), "bandwidth_measured")));
	bm = json_object_get(json_object_get(j, "machine"), "bandwidth_model");
	NEAR(num(bm, "thread_mbs"), 8000);
	NEAR(json_number_value(json_array_get(json_object_get(bm, "node_mbs"), 2)), 1e9);
	assert_true(json_is_true(json_array_get(json_object_get(bm, "node_measured"), 2)));
	pl = json_object_get(json_object_get(j, "total"), "profiled");
	NEAR(num(j, "total.profiled.contention_ms"), 0);
	NEAR(num(j, "total.profiled.bandwidth_ms"), 0);
	NEAR(num(j, "total.profiled.stall_ms"), lat);
	NEAR(num(j, "total.planned.stall_ms"), lat);
	NEAR(json_number_value(json_array_get(json_object_get(pl, "node_load"), 0)), 4 * 8000 / 1e9);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(pl, "node_threads"), 0)), 4);
	json_decref(j);
	out = NULL;
	assert_int_equal(nk_profile_whatif(p, m, a, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "bandwidth: measured (a node serves as many threads at once as its read bandwidth"));
	assert_non_null(strstr(out, "\n  nodes 0-3: 1000000000 MB/s each = 125000 threads\n"));
	assert_null(strstr(out, "saturated"));
	free(out);
	plan_free(a);
	nk_machine_free(m);
	nk_profile_free(p);

	/* each thread on its own node's pages: every node at its capacity, never above: latency alone; binding
	 * it all to node 0 would make node 0 serve the 4 threads */
	p = in_step(M4ONE, -1);
	a = plan_new();
	plan_add(a, "name:arr", "bind:nodes=0", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.profiled.contention_ms"), 0);
	NEAR(num(j, "total.profiled.stall_ms"), 512 * 80.0 / 1e6);
	lat = (128 * 80.0 + 384 * 160.0) / 1e6;
	NEAR(num(j, "total.planned.latency_ms"), lat);
	NEAR(num(j, "total.planned.contention_ms"), 3 * lat);
	json_decref(j);
	plan_free(a);
	nk_profile_free(p);

	/* a node's capacity is its cores, not its hardware threads: 2 cores of 2 threads each serve 2 threads */
	m = nk_test_synth("nodes=4 cores=2 smt=2 mem=1G dist=10:20 l2=256K");
	p = in_step(M4ONE, 0);
	a = plan_new();
	plan_add(a, "name:arr", "none", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, m, a);
	bm = json_object_get(json_object_get(j, "machine"), "bandwidth_model");
	NEAR(json_number_value(json_array_get(json_object_get(bm, "node_mbs"), 3)), 2 * 8000);
	NEAR(num(j, "total.profiled.contention_ms"), (4.0 / 2 - 1) * (128 * 80.0 + 384 * 160.0) / 1e6);
	json_decref(j);
	plan_free(a);
	nk_profile_free(p);
	nk_machine_free(m);

	/* the same in-step hot spot on nodes of 4 cores: node 0 serves 4 threads at its capacity, no more;
	 * interleaving it gains nothing (the same latency: a quarter local either way) */
	p = in_step("nodes=4 cores=4 mem=1G dist=10:20 l2=256K", 0);
	a = plan_new();
	plan_add(a, "name:arr", "cyclic", NK__WHEN_ALLOC, NULL);
	j = whatif_json(p, NULL, a);
	NEAR(num(j, "total.profiled.contention_ms"), 0);
	NEAR(num(j, "total.profiled.stall_ms"), lat);
	NEAR(num(j, "total.planned.stall_ms"), lat);
	json_decref(j);
	/* measured: each node's memory feeds 16000 MB/s, 2 streaming threads, though it has 4 cores.  Node 0
	 * serving the 4 threads at once is at load 2: every access it serves takes twice its latency, and the
	 * interleave (one thread's worth a node, less its doubt: 0.58 / 2) now pays */
	m = nk_test_synth("nodes=4 cores=4 mem=1G dist=10:20 l2=256K");
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++)
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, i, k, i == k ? 16000 : 9000), 0);
	j = whatif_json(p, m, a);
	bm = json_object_get(json_object_get(j, "machine"), "bandwidth_model");
	NEAR(json_number_value(json_array_get(json_object_get(bm, "node_mbs"), 0)), 16000); /* local, not 9000 */
	NEAR(num(j, "total.profiled.contention_ms"), lat);
	NEAR(num(j, "total.profiled.bandwidth_ms"), lat);
	NEAR(num(j, "total.profiled.stall_ms"), 2 * lat);
	NEAR(num(j, "total.planned.contention_ms"), 0);
	NEAR(num(j, "total.planned.stall_ms"), lat);
	pl = json_object_get(json_object_get(j, "total"), "profiled");
	NEAR(json_number_value(json_array_get(json_object_get(pl, "node_load"), 0)), 2);
	json_decref(j);
	out = NULL;
	assert_int_equal(nk_profile_whatif(p, m, a, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "\n  nodes 0-3: 16000 MB/s each = 2 threads\n"));
	assert_non_null(strstr(out, "saturated (threads at once and peak load, 1 = what its bandwidth serves at full "
				    "speed):\n  node 0 (16000 MB/s, 2 threads): 4 threads, load 2.00 -> 4 threads, "
				    "load 0.29\n"));
	free(out);
	nk_machine_free(m);

	/* partly measured: node 0's bandwidth only; the others keep their cores (4 x 8000 MB/s) */
	m = nk_test_synth("nodes=4 cores=4 mem=1G dist=10:20 l2=256K");
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, 0, 0, 16000), 0);
	j = whatif_json(p, m, a);
	assert_string_equal(str_at(j, "machine", "bandwidth"), "measured");
	bm = json_object_get(json_object_get(j, "machine"), "bandwidth_model");
	NEAR(json_number_value(json_array_get(json_object_get(bm, "node_mbs"), 1)), 32000);
	assert_true(json_is_false(json_array_get(json_object_get(bm, "node_measured"), 1)));
	NEAR(num(j, "total.profiled.stall_ms"), 2 * lat);
	json_decref(j);
	out = NULL;
	assert_int_equal(nk_profile_whatif(p, m, a, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "\n  node 0 16000 MB/s = 2 threads; node 1 not measured: 4 cores = 32000 MB/s;\n"
				    "  node 2 not measured: 4 cores = 32000 MB/s"));
	free(out);
	nk_machine_free(m);
	plan_free(a);
	nk_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies),     cmocka_unit_test(test_stall),
		cmocka_unit_test(test_phases),       cmocka_unit_test(test_pinning),
		cmocka_unit_test(test_other_machine), cmocka_unit_test(test_pages),
		cmocka_unit_test(test_text_and_errors), cmocka_unit_test(test_public_plan),
		cmocka_unit_test(test_unknown), cmocka_unit_test(test_many_variables),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_bandwidth_pure), cmocka_unit_test(test_contention),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
