/* SPDX-License-Identifier: BSD-3-Clause
 * Profiles with known truth for the `numakit report` CLI tests.
 *
 *   nk_gen_nkp DIR
 *       writes DIR/hotspot.nkp, onethread.nkp, incomplete.nkp (a process
 *       killed: END "complete": false), truncated.nkp (no TRAILER),
 *       corrupt.nkp (bad magic) and advise.nkp (one variable per rule of
 *       `numakit advise`) with the profile writer (nk__nkp_write); and for
 *       combining runs (issue 13) hotspot-run2.nkp and advise-run2.nkp, the
 *       same runs in another process (pid 4343) with every address moved
 *       (as ASLR would), and other-program.nkp (hotspot of ./mesher); and
 *       stretched.nkp (hotspot's, its pagefault rounds few and spaced out by the cost cap: not covered),
 *       dropped.nkp (hotspot's, its budget spent: samples dropped, so it
 *       does not cover the run); contention.nkp (issue 21's FFT: three arrays on node 0 read
 *       all over by 4 threads in step, on a machine of 4 nodes of one core: the default
 *       bandwidth model's hot spot).
 *       For job profiles (issue 14): DIR/job.nkp/rank-0.nkp .. rank-3.nkp, the
 *       ranks of one Open MPI job (id 4242) on hosts n0 (ranks 0-1) and n1
 *       (2-3, a machine with other distances), each a process of its own
 *       (pid 5000+R, addresses moved); "grid" partitioned and local except in
 *       rank 3 (placed on the other node: the rank that differs), "halo" read
 *       by every thread, half of it remote; and to be refused:
 *       job-other-program.nkp (rank 1 of the same job, another program),
 *       job-other-id.nkp (rank 1 of job 999), job-rank2-again.nkp (rank 2
 *       again), job-bad.nkp (a RUN "job" object with rank 7 of 4).
 *   nk_gen_nkp --golden NAME FORMAT
 *       prints what `numakit report [--json] NAME.nkp` must print, in the
 *       golden file layout of run_golden.py, computed from the same profile
 *       held in memory (no reader involved): the CLI golden tests thus check
 *       the reader (src/profile/nkp_read.c) against the writer too.
 *
 * Each profile is built once in memory (struct nk__nkp_profile) and then
 * serialised, so the file and the expectation cannot drift apart.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/analysis.h"
#include "profile/nkp.h"

#define PAGE 4096ull
/* Addresses are BASE + offsets; a second run moves them all by 'shift' and has pid 4343. */
static uint64_t shift;
static uint32_t pid = 4242;
static const char *prog = "./solver";
static const char *machine_desc = "nodes=2 cores=4 mem=1G dist=10:21 l2=256K l3=8M";
static char job_member[256]; /* ", \"job\": {...}" in RUN, "" outside a job */
#define BASE (0x10000000ull + shift)
#define TID0 (pid == 4242 ? 5000u : 6000u) /* thread ids differ between runs too */

struct gen {
	struct nk__nkp_profile p;
	struct nk__nkp_process_data pd;
	size_t cap;
	/* The samples' sampler.  The report's interval clusters pagefault samples by 16-page group
	 * (docs/report.md): these profiles' variables of 1-8 groups, sampled in one sweep, leave it
	 * honestly undecided, so the profiles meant to exercise the diagnoses are trace profiles (one
	 * cluster per sample) and only "incomplete" keeps pagefault samples, to show the clustered case. */
	const char *sampler;
	uint64_t dropped; /* END: samples dropped because the budget was spent (dropped.nkp) */
	int stretched;    /* END: the pagefault sampler's rounds spaced out by its cost cap, few (stretched.nkp) */
	int has_comm;     /* a COMM record (MPI traffic) before END */
	struct nk__nkp_comm comm;
	struct nk__nkp_comm_peer peers[8];
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "nk_gen_nkp: out of memory\n");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xrealloc(NULL, strlen(s) + 1), s);
}

static void init(struct gen *g, int threads, int complete, const char *sampler)
{
	memset(g, 0, sizeof(*g));
	g->sampler = sampler;
	g->p.version = NK__NKP_VERSION;
	g->p.run_json = xstrdup("{}"); /* finish() writes it */
	nk_machine *m = NULL;
	nk_error err;
	char *json = NULL;
	if (nk_machine_load_synthetic(machine_desc, &m, &err) ||
	    nk_machine_to_json(m, 0, &json)) {
		fprintf(stderr, "nk_gen_nkp: machine: %s\n", err.message);
		exit(1);
	}
	nk_machine_free(m);
	g->p.machine_json = json;
	g->pd.info = (struct nk__nkp_process){ pid, 1, 1000000 };
	char meta[512];
	snprintf(meta, sizeof(meta),
		 "{\"pid\": %u, \"ppid\": 1, \"argv\": [\"%s\", \"-n\", \"64\"], \"exe\": "
		 "\"/nonexistent/%s\", \"sampler\": \"%s\", \"rate\": 1000, \"page_size\": "
		 "4096, \"min_size\": 4096, \"start_unix_ns\": 0}",
		 pid, prog, prog + 2, sampler);
	g->pd.meta_json = xstrdup(meta);
	g->pd.end_json = xstrdup(complete ? "{\"complete\": true, \"how\": \"exit\", \"status\": 0, \"signal\": 0, "
					    "\"time_ns\": 2500000000, \"samples\": 0, \"dropped\": 0, \"faults\": 0}"
					  : "{\"complete\": false, \"how\": \"killed\", \"status\": 0, \"signal\": 9, "
					    "\"time_ns\": 2500000000, \"samples\": 0, \"dropped\": 0, \"faults\": 0}");
	g->pd.complete = complete;
	g->pd.threads = xrealloc(NULL, ((size_t)threads + 1) * sizeof(*g->pd.threads));
	for (int t = 0; t < threads; t++)
		g->pd.threads[t] = (struct nk__nkp_thread){ TID0 + (uint32_t)t, (uint32_t)t, 10 + (uint64_t)t, 0, 0,
							    t * 2 % 8, 0 };
	g->pd.n_threads = (size_t)threads;
	g->p.procs = &g->pd;
	g->p.n_procs = 1;
}

static void site(struct gen *g, uint32_t id, uint64_t ip)
{
	g->pd.sites = xrealloc(g->pd.sites, (g->pd.n_sites + 1) * sizeof(*g->pd.sites));
	uint64_t *ips = xrealloc(NULL, 2 * sizeof(*ips));
	ips[0] = ip;
	ips[1] = 0x401fff;
	g->pd.sites[g->pd.n_sites++] = (struct nk__nkp_site_data){ id, 2, ips };
}

static void alloc_rec(struct gen *g, uint64_t addr, uint64_t size, uint32_t site_id, uint32_t id)
{
	g->pd.allocs = xrealloc(g->pd.allocs, (g->pd.n_allocs + 1) * sizeof(*g->pd.allocs));
	g->pd.allocs[g->pd.n_allocs++] = (struct nk__nkp_alloc){ addr, size, 20 + id, TID0, site_id, NK__ALLOC_MALLOC,
								 id };
}

static void name(struct gen *g, uint64_t addr, uint64_t size, const char *text)
{
	g->pd.names = xrealloc(g->pd.names, (g->pd.n_names + 1) * sizeof(*g->pd.names));
	g->pd.names[g->pd.n_names++] = (struct nk__nkp_name_data){ { addr, size, 30 }, xstrdup(text) };
}

static void phase(struct gen *g, uint16_t id, uint64_t t, const char *text)
{
	g->pd.phases = xrealloc(g->pd.phases, (g->pd.n_phases + 1) * sizeof(*g->pd.phases));
	g->pd.phases[g->pd.n_phases++] = (struct nk__nkp_phase_data){ { t, TID0, id, 0 }, xstrdup(text) };
}

static void sample(struct gen *g, uint64_t t, uint64_t addr, uint64_t ip, int th, int cnode, int pnode, int access,
		   int flags, uint16_t ph)
{
	if (g->pd.n_samples == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1024;
		g->pd.samples = xrealloc(g->pd.samples, g->cap * sizeof(*g->pd.samples));
	}
	g->pd.samples[g->pd.n_samples++] = (struct nk__nkp_sample){
		.time_ns = t, .addr = addr, .ip = ip, .tid = TID0 + (uint32_t)th, .weight = 1, .latency = 0,
		.cpu = (int16_t)(th * 2 % 8), .cpu_node = (int16_t)cnode, .page_node = (int16_t)pnode, .phase = ph,
		.access = (uint8_t)access, .source = 0,
		.sampler = strcmp(g->sampler, "trace") ? NK__SAMPLER_PAGEFAULT : NK__SAMPLER_TRACE, .flags = (uint8_t)flags
	};
	g->p.n_samples++;
}

/* 8 threads, nodes 0 (threads 0-3) and 1 (4-7): a serially initialised
 * heap array (hot spot), a named grid placed backwards (partition
 * mismatch), a shared lookup table, a fine heap array, a rare counter. */
static void build_hotspot(struct gen *g, int complete)
{
	init(g, 8, complete, complete ? "trace" : "pagefault");
	site(g, 1, 0x401234);
	site(g, 2, 0x401300);
	alloc_rec(g, BASE, 128 * PAGE, 1, 1);
	alloc_rec(g, BASE + (16 << 20), 64 * PAGE, 2, 2);
	name(g, BASE + (32 << 20), 128 * PAGE, "grid");
	name(g, BASE + (48 << 20), 32 * PAGE, "lookup");
	name(g, BASE + (64 << 20), PAGE, "counter");
	phase(g, 1, 40, "init");
	uint64_t t = 50;
	for (int pg = 0; pg < 128; pg++)
		sample(g, t++, BASE + pg * PAGE, 0x400a10, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH, 1);
	phase(g, 2, t, "compute");
	for (int th = 0; th < 8; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			for (int k = 0; k < 2; k++)
				sample(g, t++, BASE + pg * PAGE + 64 * (uint64_t)k, 0x400b20, th, th / 4, 0, NK__ACC_READ, 0,
				       2);
	for (int th = 0; th < 8; th++)
		for (int pg = th * 16; pg < th * 16 + 16; pg++)
			sample(g, t++, BASE + (32 << 20) + pg * PAGE, 0x400c30, th, th / 4, pg < 64 ? 1 : 0, NK__ACC_WRITE,
			       0, 2);
	for (int pg = 0; pg < 32; pg++)
		for (int th = 0; th < 8; th++)
			sample(g, t++, BASE + (48 << 20) + pg * PAGE, 0x400d40, (th + pg) % 8, ((th + pg) % 8) / 4, pg % 2,
			       NK__ACC_READ, 0, 2);
	for (int th = 0; th < 8; th++)
		for (int pg = th * 8; pg < th * 8 + 8; pg++)
			sample(g, t++, BASE + (16 << 20) + pg * PAGE, 0x400e50, th, th / 4, th / 4, NK__ACC_READ, 0, 2);
	for (int i = 0; i < 5; i++)
		sample(g, t++, BASE + (64 << 20), 0x400f60, i, i / 4, 0, NK__ACC_WRITE, 0, 2);
}

static void build_onethread(struct gen *g)
{
	init(g, 1, 1, "trace");
	name(g, BASE, 4 * PAGE, "buffer");
	for (int i = 0; i < 160; i++) /* a quarter remote: 160 samples decide it (+-7 points), 40 did not */
		sample(g, 100 + (uint64_t)i, BASE + (uint64_t)(i % 4) * PAGE, 0x400123, 0, 0, i % 4 == 3, NK__ACC_READ, 0, 0);
}

/* For `numakit advise` (docs/plan.md): 8 threads, nodes 0 (threads 0-3) and 1 (4-7), 512 KiB named
 * variables.  grid: serial init, then a slice per thread (block); table: random reads by every thread
 * (cyclic); mesh: runs of uneven length each used by one node (pages); matrix: slices in phase
 * "rows", reversed slices in phase "reverse" (a phase entry, migration not worth it); tiny: 16 KiB
 * (left alone). */
static void build_advise(struct gen *g)
{
	static const int runs[] = { 5, 11, 3, 9, 16, 7, 2, 13, 6, 10, 4, 15, 8, 12, 7 }; /* sum 128 */
	init(g, 8, 1, "trace");
	name(g, BASE, 128 * PAGE, "grid");
	name(g, BASE + (16 << 20), 128 * PAGE, "table");
	name(g, BASE + (32 << 20), 128 * PAGE, "mesh");
	name(g, BASE + (48 << 20), 128 * PAGE, "matrix");
	name(g, BASE + (64 << 20), 4 * PAGE, "tiny");
	phase(g, 1, 40, "init");
	uint64_t t = 50;
	for (int pg = 0; pg < 128; pg++) {
		sample(g, t++, BASE + pg * PAGE, 0x400a10, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH, 1);
		sample(g, t++, BASE + (48 << 20) + pg * PAGE, 0x400a10, 0, 0, 0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH, 1);
	}
	phase(g, 2, t, "rows");
	for (int k = 0; k < 2; k++)
		for (int th = 0; th < 8; th++)
			for (int pg = th * 16; pg < th * 16 + 16; pg++) {
				sample(g, t++, BASE + pg * PAGE + 64 * (uint64_t)k, 0x400b20, th, th / 4, 0, NK__ACC_READ, 0, 2);
				sample(g, t++, BASE + (48 << 20) + pg * PAGE + 64 * (uint64_t)k, 0x400b30, th, th / 4, 0,
				       NK__ACC_READ, 0, 2);
			}
	unsigned x = 7;
	for (int i = 0; i < 1024; i++) {
		x = x * 1103515245u + 12345u;
		int th = (int)((x >> 16) % 8);
		sample(g, t++, BASE + (16 << 20) + ((x >> 4) % 128) * PAGE, 0x400c40, th, th / 4, 0,
		       i % 16 ? NK__ACC_READ : NK__ACC_WRITE, 0, 2);
	}
	for (int k = 0; k < 3; k++) {
		int pg = 0;
		for (size_t r = 0; r < sizeof runs / sizeof *runs; r++)
			for (int n = 0; n < runs[r]; n++, pg++) {
				int th = (int)(r % 2) * 4 + (pg % 4);
				sample(g, t++, BASE + (32 << 20) + pg * PAGE + 64 * (uint64_t)k, 0x400d50, th, th / 4, 0,
				       NK__ACC_READ, 0, 2);
			}
	}
	for (int i = 0; i < 40; i++)
		sample(g, t++, BASE + (64 << 20) + (i % 4) * PAGE, 0x400e60, i % 8, (i % 8) / 4, 0, NK__ACC_READ, 0, 2);
	phase(g, 3, t, "reverse");
	for (int k = 0; k < 2; k++)
		for (int th = 0; th < 8; th++)
			for (int pg = (7 - th) * 16; pg < (8 - th) * 16; pg++)
				sample(g, t++, BASE + (48 << 20) + pg * PAGE + 64 * (uint64_t)k, 0x400f70, th, th / 4, 0,
				       NK__ACC_READ, 0, 3);
}

/*
 * For the default bandwidth model (issue 21 §2; machine: 4 nodes of one core): issue 21's FFT, three
 * 256 KiB arrays re, im and tw that thread 0 initialises (every page first touched on node 0), then read
 * all over by 4 threads in step, thread t on node t: node 0 serves the 4 threads at once.
 */
static void build_contention(struct gen *g)
{
	static const char *const arrays[] = { "re", "im", "tw" };
	init(g, 4, 1, "trace");
	for (int v = 0; v < 3; v++)
		name(g, BASE + ((uint64_t)v << 24), 64 * PAGE, arrays[v]);
	uint64_t t = 50;
	for (int v = 0; v < 3; v++)
		for (int pg = 0; pg < 64; pg++)
			sample(g, t++, BASE + ((uint64_t)v << 24) + pg * PAGE, 0x400a10, 0, 0, 0, NK__ACC_WRITE,
			       NK__SF_FIRST_TOUCH, 0);
	for (int k = 0; k < 128; k++)
		for (int th = 0; th < 4; th++)
			for (int v = 0; v < 3; v++)
				sample(g, t++, BASE + ((uint64_t)v << 24) + (uint64_t)((th * 16 + k * 5) % 64) * PAGE,
				       0x400b20, th, th, 0, NK__ACC_READ, 0, 0);
}

/* RUN and END state the sample count: rewrite them once the samples are in. */
static void finish(struct gen *g)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"numakit\": \"0.1.0\", \"command\": [\"%s\", \"-n\", \"64\"], \"sampler\": \"%s\", "
		 "\"requested_sampler\": \"auto\", \"rate\": 1000, \"start_unix_ns\": 0, \"wall_ns\": %s, "
		 "\"exit_status\": %d, \"signal\": %d, \"processes\": 1, \"samples\": %zu%s}",
		 prog, g->sampler, shift ? "3500000000" : "2500000000", g->pd.complete ? 0 : 137, g->pd.complete ? 0 : 9,
		 g->pd.n_samples, job_member);
	free(g->p.run_json);
	g->p.run_json = xstrdup(buf);
	snprintf(buf, sizeof(buf),
		 g->pd.complete ? "{\"complete\": true, \"how\": \"exit\", \"status\": 0, \"signal\": 0, \"time_ns\": "
				  "2500000000, \"samples\": %zu, \"dropped\": %llu, \"budget\": %zu, \"budget_dropped\": "
				  "%llu, \"budget_spent_ns\": %llu, \"faults\": %zu%s}"
				: "{\"complete\": false, \"how\": \"killed\", \"status\": 0, \"signal\": 9, \"time_ns\": "
				  "2500000000, \"samples\": %zu, \"dropped\": %llu, \"budget\": %zu, \"budget_dropped\": "
				  "%llu, \"budget_spent_ns\": %llu, \"faults\": %zu%s}",
		 g->pd.n_samples, (unsigned long long)g->dropped, g->pd.n_samples, (unsigned long long)g->dropped,
		 g->dropped ? 410000000ull : 0ull, g->pd.n_samples,
		 g->stretched ? ", \"pagefault\": {\"faults\": 900, \"period_ns\": 410000000, \"rounds\": 7, "
				"\"stretched\": 6}"
			      : "");
	free(g->pd.end_json);
	g->pd.end_json = xstrdup(buf);
}

/* Rank @p rank of the job: 4 threads, nodes 0 (threads 0-1) and 1 (2-3).  grid: 64 pages, a slice of 16
 * per thread, 4 reads a page, on the thread's node (rank 3: on the other node); halo: 16 pages read by
 * every thread, page p on node p % 2.  Trace samples (each its own cluster): every share decided. */
static void build_rank(struct gen *g, int rank)
{
	init(g, 4, 1, "trace");
	name(g, BASE, 64 * PAGE, "grid");
	name(g, BASE + (16 << 20), 16 * PAGE, "halo");
	uint64_t t = 50;
	for (int k = 0; k < 4; k++)
		for (int th = 0; th < 4; th++)
			for (int pg = th * 16; pg < th * 16 + 16; pg++) {
				int node = th / 2;
				sample(g, t++, BASE + pg * PAGE + 64 * (uint64_t)k, 0x400b20, th, node, rank == 3 ? 1 - node : node,
				       NK__ACC_READ, 0, 0);
			}
	for (int k = 0; k < 2; k++)
		for (int th = 0; th < 4; th++)
			for (int pg = 0; pg < 16; pg++)
				sample(g, t++, BASE + (16 << 20) + pg * PAGE + 64 * (uint64_t)k, 0x400c30, th, th / 2, pg % 2,
				       NK__ACC_READ, 0, 0);
}

/*
 * Rank @p rank of the mapping job (mapjob.nkp, `numakit advise --ranks`): 4 ranks of one thread, ranks 0 and
 * 2 on host n0 (nodes 0 and 1), 1 and 3 on host n1, each reading its own 8 pages on its node.  A ring whose
 * pairs 0-1 and 2-3 exchange 64 MiB each way and 1-2 and 3-0 1 MiB: the heavy pairs straddle the hosts.
 */
static void build_maprank(struct gen *g, int rank)
{
	static const uint64_t mib = 1 << 20;
	init(g, 1, 1, "trace");
	name(g, BASE, 8 * PAGE, "field");
	int node = rank / 2;
	for (uint64_t t = 0; t < 64; t++)
		sample(g, 50 + t, BASE + (t % 8) * PAGE + 64 * (t / 8), 0x400b20, 0, node, node, NK__ACC_READ, 0, 0);
	int heavy = rank ^ 1, light = rank % 2 ? (rank + 1) % 4 : (rank + 3) % 4;
	g->has_comm = 1;
	g->comm = (struct nk__nkp_comm){ (uint32_t)rank, 4, 2, NK__COMM_FINALIZED, 2400000000u };
	g->peers[0] = (struct nk__nkp_comm_peer){ (uint32_t)heavy, NK__COMM_P2P, 64, 64 * mib };
	g->peers[1] = (struct nk__nkp_comm_peer){ (uint32_t)light, NK__COMM_P2P, 1, mib };
}

/*
 * Rank @p rank of the share job (sharejob.nkp, plans for ranks on shares): 2 ranks on one 4-node host, rank
 * r given cpus 4r-4r+3 (nodes 2r and 2r+1, RUN job "cpus"), 2 threads: thread 0 on node 2r (cpu 4r),
 * thread 1 on node 2r+1 (cpu 4r+2).  field: 64 pages first touched by thread 0 (all on node 2r), then
 * each thread reads its half 4 times: thread 1's reads are remote, 40 % of the accesses.  Pooled in rank
 * 0's frame, both ranks say "block the field by thread over the share's two nodes".
 */
static void build_sharerank(struct gen *g, int rank)
{
	init(g, 2, 1, "trace");
	name(g, BASE, 64 * PAGE, "field");
	uint64_t t = 50;
	int n0 = 2 * rank;
	for (int pg = 0; pg < 64; pg++) {
		sample(g, t++, BASE + pg * PAGE, 0x400a10, 0, n0, n0, NK__ACC_WRITE, NK__SF_FIRST_TOUCH, 0);
		g->pd.samples[g->pd.n_samples - 1].cpu = (int16_t)(4 * rank);
	}
	for (int k = 0; k < 4; k++)
		for (int th = 0; th < 2; th++)
			for (int pg = th * 32; pg < th * 32 + 32; pg++) {
				sample(g, t++, BASE + pg * PAGE + 64 * (uint64_t)k, 0x400b20, th, n0 + th, n0, NK__ACC_READ, 0, 0);
				g->pd.samples[g->pd.n_samples - 1].cpu = (int16_t)(4 * rank + 2 * th);
			}
	for (size_t i = 0; i < g->pd.n_threads; i++)
		g->pd.threads[i].cpu = 4 * rank + 2 * (int)i;
}

static void build(struct gen *g, const char *what)
{
	if (!strcmp(what, "hotspot"))
		build_hotspot(g, 1);
	else if (!strcmp(what, "incomplete"))
		build_hotspot(g, 0);
	else if (!strcmp(what, "onethread"))
		build_onethread(g);
	else if (!strcmp(what, "advise"))
		build_advise(g);
	else if (!strcmp(what, "contention"))
		build_contention(g);
	else if (!strncmp(what, "rank", 4) && what[4] >= '0' && what[4] <= '3' && !what[5])
		build_rank(g, what[4] - '0');
	else if (!strncmp(what, "maprank", 7) && what[7] >= '0' && what[7] <= '3' && !what[8])
		build_maprank(g, what[7] - '0');
	else if (!strncmp(what, "sharerank", 9) && what[9] >= '0' && what[9] <= '1' && !what[10])
		build_sharerank(g, what[9] - '0');
	else if (!strcmp(what, "dropped")) { /* the budget spent at 0.41 s of 2.5 s: issue 13's trace */
		build_hotspot(g, 1);
		g->dropped = 33600000;
	}
	else if (!strcmp(what, "stretched")) { /* 7 pagefault rounds in 2.5 s under the cost cap (issue 13) */
		build_hotspot(g, 1);
		g->stretched = 1;
	}
	else {
		fprintf(stderr, "nk_gen_nkp: unknown profile %s\n", what);
		exit(2);
	}
	finish(g);
}

static void put(struct nk__nkp_writer *w, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	int rc = nk__nkp_write2(w, type, a, alen, b, blen);
	if (rc) {
		fprintf(stderr, "nk_gen_nkp: write: %s\n", strerror(-rc));
		exit(1);
	}
}

/* Serialise @p g as a merged profile; @p cut: stop before TRAILER and cut the last record in half. */
static void write_profile(const struct gen *g, const char *path, int cut)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct nk__nkp_writer w;
	if (fd < 0 || nk__nkp_writer_init(&w, fd)) {
		perror(path);
		exit(1);
	}
	const struct nk__nkp_process_data *pd = &g->pd;
	put(&w, NK__NKP_RUN, g->p.run_json, strlen(g->p.run_json), NULL, 0);
	put(&w, NK__NKP_MACHINE, g->p.machine_json, strlen(g->p.machine_json), NULL, 0);
	put(&w, NK__NKP_PROCESS, &pd->info, sizeof(pd->info), NULL, 0);
	put(&w, NK__NKP_META, pd->meta_json, strlen(pd->meta_json), NULL, 0);
	for (size_t i = 0; i < pd->n_threads; i++)
		put(&w, NK__NKP_THREAD, &pd->threads[i], sizeof(pd->threads[i]), NULL, 0);
	for (size_t i = 0; i < pd->n_sites; i++) {
		struct nk__nkp_site s = { pd->sites[i].id, pd->sites[i].depth };
		put(&w, NK__NKP_SITE, &s, sizeof(s), pd->sites[i].ips, pd->sites[i].depth * sizeof(uint64_t));
	}
	for (size_t i = 0; i < pd->n_allocs; i++)
		put(&w, NK__NKP_ALLOC, &pd->allocs[i], sizeof(pd->allocs[i]), NULL, 0);
	for (size_t i = 0; i < pd->n_names; i++)
		put(&w, NK__NKP_NAME, &pd->names[i].n, sizeof(pd->names[i].n), pd->names[i].name,
		    strlen(pd->names[i].name));
	/* phases and samples in time order */
	size_t s = 0;
	for (size_t i = 0; i <= pd->n_phases; i++) {
		uint64_t until = i < pd->n_phases ? pd->phases[i].p.time_ns : UINT64_MAX;
		size_t e = s;
		while (e < pd->n_samples && pd->samples[e].time_ns < until)
			e++;
		if (e > s)
			put(&w, NK__NKP_SAMPLES, &pd->samples[s], (e - s) * sizeof(*pd->samples), NULL, 0);
		s = e;
		if (i < pd->n_phases)
			put(&w, NK__NKP_PHASE, &pd->phases[i].p, sizeof(pd->phases[i].p), pd->phases[i].name,
			    strlen(pd->phases[i].name));
	}
	if (g->has_comm)
		put(&w, NK__NKP_COMM | NK__NKP_OPTIONAL, &g->comm, sizeof g->comm, g->peers, g->comm.n * sizeof g->peers[0]);
	put(&w, NK__NKP_END, pd->end_json, strlen(pd->end_json), NULL, 0);
	if (cut) {
		/* drop the second half of END: a truncated file */
		if (ftruncate(fd, (off_t)(w.bytes - strlen(pd->end_json) / 2))) {
			perror(path);
			exit(1);
		}
	} else {
		struct nk__nkp_trailer tr = { w.records, 1, pd->n_samples };
		put(&w, NK__NKP_TRAILER, &tr, sizeof(tr), NULL, 0);
	}
	if (close(fd)) {
		perror(path);
		exit(1);
	}
}

static void free_gen(struct gen *g)
{
	free(g->p.run_json);
	free(g->p.machine_json);
	free(g->pd.meta_json);
	free(g->pd.end_json);
	free(g->pd.threads);
	for (size_t i = 0; i < g->pd.n_sites; i++)
		free(g->pd.sites[i].ips);
	free(g->pd.sites);
	free(g->pd.allocs);
	for (size_t i = 0; i < g->pd.n_names; i++)
		free(g->pd.names[i].name);
	free(g->pd.names);
	for (size_t i = 0; i < g->pd.n_phases; i++)
		free(g->pd.phases[i].name);
	free(g->pd.phases);
	free(g->pd.samples);
}

int main(int argc, char **argv)
{
	struct gen g;
	if (argc == 4 && !strcmp(argv[1], "--golden")) {
		int json = !strcmp(argv[3], "json");
		struct nk__analysis *a = NULL;
		char *out = NULL;
		nk_error err;
		build(&g, argv[2]);
		if (nk__analyze(&g.p, NULL, NULL, &a, &err) ||
		    nk__report_analysis(a, json ? NK_REPORT_JSON : NK_REPORT_TEXT, &out, &err)) {
			fprintf(stderr, "nk_gen_nkp: %s\n", err.message);
			return 1;
		}
		printf("$ numakit report %s%s.nkp\nexit 0\n--- stdout\n%s--- stderr\n", json ? "--json " : "", argv[2],
		       out);
		free(out);
		nk__analysis_free(a);
		free_gen(&g);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: nk_gen_nkp DIR | nk_gen_nkp --golden NAME text|json\n");
		return 2;
	}
	char path[4096];
	static const char *const names[] = { "hotspot", "incomplete", "onethread", "advise", "dropped", "stretched" };
	for (int i = 0; i < 6; i++) {
		build(&g, names[i]);
		snprintf(path, sizeof(path), "%s/%s.nkp", argv[1], names[i]);
		write_profile(&g, path, 0);
		if (i == 0) {
			snprintf(path, sizeof(path), "%s/truncated.nkp", argv[1]);
			write_profile(&g, path, 1);
		}
		free_gen(&g);
	}
	/* runs to combine: the same program in another process, every address moved; another program */
	static const char *const runs2[] = { "hotspot", "advise" };
	shift = 0x2345000;
	pid = 4343;
	for (int i = 0; i < 2; i++) {
		build(&g, runs2[i]);
		snprintf(path, sizeof(path), "%s/%s-run2.nkp", argv[1], runs2[i]);
		write_profile(&g, path, 0);
		free_gen(&g);
	}
	shift = 0;
	pid = 4242;
	prog = "./mesher";
	build(&g, "hotspot");
	snprintf(path, sizeof(path), "%s/other-program.nkp", argv[1]);
	write_profile(&g, path, 0);
	free_gen(&g);
	/* issue 21's FFT on 4 nodes of one core */
	prog = "./fft";
	machine_desc = "nodes=4 cores=1 mem=1G dist=10:21 l2=256K l3=8M";
	build(&g, "contention");
	snprintf(path, sizeof(path), "%s/contention.nkp", argv[1]);
	write_profile(&g, path, 0);
	free_gen(&g);
	machine_desc = "nodes=2 cores=4 mem=1G dist=10:21 l2=256K l3=8M";
	prog = "./mesher";
	/* a job of 4 ranks on two hosts (the second a machine with other distances), and parts it refuses */
	snprintf(path, sizeof(path), "%s/job.nkp", argv[1]);
	mkdir(path, 0777);
	struct { const char *file, *prog; int rank, size; const char *id; } jobs[] = {
		{ "job.nkp/rank-0.nkp", "./solver", 0, 4, "4242" }, { "job.nkp/rank-1.nkp", "./solver", 1, 4, "4242" },
		{ "job.nkp/rank-2.nkp", "./solver", 2, 4, "4242" }, { "job.nkp/rank-3.nkp", "./solver", 3, 4, "4242" },
		{ "job-other-program.nkp", "./mesher", 1, 4, "4242" }, { "job-other-id.nkp", "./solver", 1, 4, "999" },
		{ "job-rank2-again.nkp", "./solver", 2, 4, "4242" }, { "job-bad.nkp", "./solver", 7, 4, "4242" },
	};
	for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
		int r = jobs[i].rank % 4;
		char what[8];
		snprintf(job_member, sizeof job_member,
			 ", \"job\": {\"launcher\": \"openmpi\", \"rank\": %d, \"size\": %d, \"local_rank\": %d, "
			 "\"local_size\": 2, \"host\": \"n%d\", \"id\": \"%s\"}",
			 jobs[i].rank, jobs[i].size, r % 2, r / 2, jobs[i].id);
		prog = jobs[i].prog;
		pid = 5000 + (uint32_t)r;
		shift = (uint64_t)r * 0x1234000;
		machine_desc = r / 2 ? "nodes=2 cores=4 mem=1G dist=10:31 l2=256K l3=8M"
				     : "nodes=2 cores=4 mem=1G dist=10:21 l2=256K l3=8M";
		snprintf(what, sizeof what, "rank%d", r);
		build(&g, what);
		snprintf(path, sizeof(path), "%s/%s", argv[1], jobs[i].file);
		write_profile(&g, path, 0);
		free_gen(&g);
	}
	/* the mapping job: 4 ranks on hosts n0 (ranks 0, 2) and n1 (1, 3), one per node of 2-node machines */
	snprintf(path, sizeof(path), "%s/mapjob.nkp", argv[1]);
	mkdir(path, 0777);
	prog = "./ring";
	machine_desc = "nodes=2 cores=2 mem=1G dist=10:21 l2=256K l3=8M";
	for (int r = 0; r < 4; r++) {
		char what[16];
		snprintf(job_member, sizeof job_member,
			 ", \"job\": {\"launcher\": \"openmpi\", \"rank\": %d, \"size\": 4, \"local_rank\": %d, "
			 "\"local_size\": 2, \"host\": \"n%d\", \"id\": \"77\"}",
			 r, r / 2, r % 2);
		pid = 7000 + (uint32_t)r;
		shift = (uint64_t)r * 0x1234000;
		snprintf(what, sizeof what, "maprank%d", r);
		build(&g, what);
		snprintf(path, sizeof(path), "%s/mapjob.nkp/rank-%d.nkp", argv[1], r);
		write_profile(&g, path, 0);
		free_gen(&g);
	}
	/* the share job: 2 ranks of 2 threads on one 4-node host, each on its 2 nodes */
	snprintf(path, sizeof(path), "%s/sharejob.nkp", argv[1]);
	mkdir(path, 0777);
	prog = "./halo";
	machine_desc = "nodes=4 cores=2 mem=1G dist=10:21 l2=256K l3=8M";
	for (int r = 0; r < 2; r++) {
		char what[16];
		snprintf(job_member, sizeof job_member,
			 ", \"job\": {\"launcher\": \"openmpi\", \"rank\": %d, \"size\": 2, \"local_rank\": %d, "
			 "\"local_size\": 2, \"host\": \"n0\", \"id\": \"88\", \"cpus\": [%d, %d, %d, %d]}",
			 r, r, 4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3);
		pid = 8000 + (uint32_t)r;
		shift = (uint64_t)r * 0x1234000;
		snprintf(what, sizeof what, "sharerank%d", r);
		build(&g, what);
		snprintf(path, sizeof(path), "%s/sharejob.nkp/rank-%d.nkp", argv[1], r);
		write_profile(&g, path, 0);
		free_gen(&g);
	}
	job_member[0] = 0;
	prog = "./solver";
	pid = 4242;
	shift = 0;
	machine_desc = "nodes=2 cores=4 mem=1G dist=10:21 l2=256K l3=8M";
	snprintf(path, sizeof(path), "%s/corrupt.nkp", argv[1]);
	FILE *f = fopen(path, "wb");
	if (!f || fputs("NKPROF\r\x01 this is not a profile\n", f) == EOF || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}
