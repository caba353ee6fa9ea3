/* SPDX-License-Identifier: BSD-3-Clause
 * Job profiles (src/profile/job.c, report_job.c) on inputs built in memory: the peek at a profile's first
 * records (the job object's checks), the checks that rank files are one job, the pooled intervals (which
 * must equal what the analysis gives the same samples in one profile), the ranks that differ, hosts and
 * machines, and the three reports.  The command's side (rank files written under simulated launchers) is
 * tests/cli/job_check.py.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis.h"
#include "profile/job.h"
#include "profile/nkp.h"

#define PAGE 4096ull
#define BASE 0x10000000ull
#define M2 "nodes=2 cores=2 mem=1G dist=10:21"

/* ---------------------------------------------------------------- the peek */

struct bytes {
	unsigned char b[8192];
	size_t n;
};

static void header(struct bytes *x, uint32_t version)
{
	struct nk__nkp_file_header fh = { .version = version, .header_size = sizeof fh };
	memcpy(fh.magic, NK__NKP_MAGIC, 8);
	memcpy(x->b, &fh, sizeof fh);
	x->n = sizeof fh;
}

static void rec(struct bytes *x, uint32_t type, const void *p, size_t len)
{
	struct nk__nkp_record_header h = { type, 0, len };
	assert_true(x->n + sizeof h + len <= sizeof x->b);
	memcpy(x->b + x->n, &h, sizeof h);
	memcpy(x->b + x->n + sizeof h, p, len);
	x->n += sizeof h + len;
}

static void rec_s(struct bytes *x, uint32_t type, const char *s)
{
	rec(x, type, s, strlen(s));
}

/* A profile's start: RUN with @p job (a JSON member text or ""), MACHINE, PROCESS, META with exe /bin/app. */
static void profile_start(struct bytes *x, const char *job)
{
	char run[1024];
	struct nk__nkp_process pr = { 42, 1, 0 };
	snprintf(run, sizeof run, "{\"command\": [\"./app\", \"-x\"], \"start_unix_ns\": 1000%s}", job);
	header(x, 1);
	rec_s(x, NK__NKP_RUN, run);
	rec_s(x, NK__NKP_MACHINE, "{}");
	rec(x, NK__NKP_PROCESS, &pr, sizeof pr);
	rec_s(x, NK__NKP_META, "{\"pid\": 42, \"exe\": \"/bin/app\"}");
}

static int peek_job(const char *job, struct nk__job_peek *pk, nk_error *err)
{
	struct bytes x;
	profile_start(&x, job);
	return nk__job_peek_buffer(x.b, x.n, "t.nkp", pk, err);
}

static void test_peek(void **state)
{
	struct nk__job_peek pk;
	nk_error err = { 0, "" };
	struct bytes x;
	(void)state;

	/* a rank */
	assert_int_equal(peek_job(", \"job\": {\"launcher\": \"slurm\", \"rank\": 3, \"size\": 4, \"local_rank\": 1, "
				  "\"local_size\": 2, \"host\": \"n1\", \"id\": \"77.0\"}", &pk, &err), 0);
	assert_true(pk.has_job);
	assert_int_equal(pk.launcher, NK_LAUNCHER_SLURM);
	assert_int_equal(pk.rank, 3);
	assert_int_equal(pk.size, 4);
	assert_int_equal(pk.local_rank, 1);
	assert_int_equal(pk.local_size, 2);
	assert_string_equal(pk.host, "n1");
	assert_string_equal(pk.id, "77.0");
	assert_string_equal(pk.exe, "/bin/app"); /* META's, not the command's */
	assert_string_equal(pk.command, "./app -x");
	assert_int_equal(pk.start_unix_ns, 1000);
	nk__job_peek_free(&pk);
	/* nulls: unknown */
	assert_int_equal(peek_job(", \"job\": {\"launcher\": \"pmi\", \"rank\": 0, \"size\": null, \"local_rank\": null, "
				  "\"local_size\": null, \"host\": null, \"id\": null}", &pk, &err), 0);
	assert_true(pk.has_job && pk.size == -1 && pk.local_rank == -1 && !pk.host && !pk.id);
	nk__job_peek_free(&pk);
	/* not a job */
	assert_int_equal(peek_job("", &pk, &err), 0);
	assert_false(pk.has_job);
	nk__job_peek_free(&pk);
	/* a run without processes: the command's program */
	header(&x, 1);
	rec_s(&x, NK__NKP_RUN, "{\"command\": [\"./solo\"]}");
	rec(&x, NK__NKP_TRAILER, (struct nk__nkp_trailer[]){ { 1, 0, 0 } }, sizeof(struct nk__nkp_trailer));
	assert_int_equal(nk__job_peek_buffer(x.b, x.n, "t.nkp", &pk, &err), 0);
	assert_string_equal(pk.exe, "./solo");
	nk__job_peek_free(&pk);

	/* bad job objects: named as such */
	static const struct {
		const char *job, *why;
	} bad[] = {
		{ ", \"job\": 3", "job: expected an object" },
		{ ", \"job\": {\"launcher\": \"lsf\", \"rank\": 0}", "job: launcher" },
		{ ", \"job\": {\"launcher\": \"slurm\"}", "job: rank" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": -1}", "job: rank" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 4, \"size\": 4}", "rank 4 is not below the job's size 4" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1, \"size\": 0}", "job: size" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1, \"local_rank\": 2, \"local_size\": 2}", "local rank 2 of 2" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1, \"local_rank\": 0}", "local rank 0 of -1" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1, \"host\": 5}", "job: host" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1, \"id\": \"\"}", "job: id" },
		{ ", \"job\": {\"launcher\": \"slurm\", \"rank\": 1.5}", "job: rank" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		memset(&pk, 0x5a, sizeof pk);
		struct nk__job_peek before = pk;
		assert_int_equal(peek_job(bad[i].job, &pk, &err), NK_EPARSE);
		if (!strstr(err.message, bad[i].why) || !strstr(err.message, "t.nkp: offset 16: RUN record"))
			fail_msg("%s: %s", bad[i].job, err.message);
		assert_memory_equal(&pk, &before, sizeof pk); /* nothing changed */
	}
	/* not a profile's start */
	assert_int_equal(nk__job_peek_buffer("hello", 5, "t.nkp", &pk, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "bad magic"));
	header(&x, 1);
	assert_int_equal(nk__job_peek_buffer(x.b, 12, "t.nkp", &pk, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "truncated"));
	header(&x, 7);
	assert_int_equal(nk__job_peek_buffer(x.b, x.n, "t.nkp", &pk, &err), NK_EVERSION);
	header(&x, 1);
	rec_s(&x, NK__NKP_META, "{}");
	assert_int_equal(nk__job_peek_buffer(x.b, x.n, "t.nkp", &pk, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "not RUN"));
	profile_start(&x, "");
	assert_int_equal(nk__job_peek_buffer(x.b, 40, "t.nkp", &pk, &err), NK_EPARSE); /* RUN cut */
	header(&x, 1);
	rec_s(&x, NK__NKP_RUN, "{\"a\": 1, \"a\": 2}");
	assert_int_equal(nk__job_peek_buffer(x.b, x.n, "t.nkp", &pk, &err), NK_EPARSE);
	header(&x, 1);
	rec_s(&x, NK__NKP_RUN, "[1]");
	assert_int_equal(nk__job_peek_buffer(x.b, x.n, "t.nkp", &pk, &err), NK_EPARSE);
	assert_int_equal(nk__job_peek_file("/no/such/rank-0.nkp", &pk, &err), NK_ENOENT);
	assert_int_equal(nk__job_peek_buffer(NULL, 0, "t", &pk, &err), NK_EINVAL);
}

/* ---------------------------------------------------------------- the checks */

struct part {
	const char *path, *exe;
	int launcher, rank, size;
	const char *id;
	uint64_t start;
};

static void inputs(struct nk__job_inputs *in, const struct part *p, size_t n)
{
	memset(in, 0, sizeof *in);
	in->n = n;
	in->is_job = 1;
	in->paths = calloc(n, sizeof *in->paths);
	in->peeks = calloc(n, sizeof *in->peeks);
	for (size_t i = 0; i < n; i++) {
		in->paths[i] = strdup(p[i].path);
		struct nk__job_peek *pk = &in->peeks[i];
		pk->exe = strdup(p[i].exe);
		pk->command = strdup(p[i].exe);
		pk->has_job = p[i].launcher > 0;
		pk->launcher = p[i].launcher;
		pk->rank = p[i].rank;
		pk->size = p[i].size;
		pk->local_rank = pk->local_size = -1;
		pk->id = p[i].id ? strdup(p[i].id) : NULL;
		pk->start_unix_ns = p[i].start;
	}
}

static int check(const struct part *p, size_t n, nk_error *err, struct nk__job_inputs *keep)
{
	struct nk__job_inputs in;
	inputs(&in, p, n);
	int rc = nk__job_check(&in, err);
	if (keep)
		*keep = in;
	else
		nk__job_inputs_free(&in);
	return rc;
}

static int has_warning(const struct nk__job_inputs *in, const char *what)
{
	for (size_t i = 0; i < in->n_warnings; i++)
		if (strstr(in->warnings[i], what))
			return 1;
	return 0;
}

static void test_check(void **state)
{
	nk_error err = { 0, "" };
	struct nk__job_inputs in;
	(void)state;
	const int O = NK_LAUNCHER_OPENMPI;

	/* one job, given out of order: sorted by rank, rank 2 missing */
	struct part ok[] = { { "j/rank-3.nkp", "/a", O, 3, 4, "7", 0 }, { "j/rank-0.nkp", "/a", O, 0, 4, "7", 0 },
			     { "j/rank-1.nkp", "/a", O, 1, 4, "7", 0 } };
	assert_int_equal(check(ok, 3, &err, &in), 0);
	assert_string_equal(in.paths[0], "j/rank-0.nkp");
	assert_string_equal(in.paths[2], "j/rank-3.nkp");
	assert_int_equal(in.peeks[2].rank, 3);
	assert_int_equal(in.size, 4);
	assert_string_equal(in.id, "7");
	assert_int_equal(in.n_missing, 1);
	assert_int_equal(in.missing[0], 2);
	assert_true(has_warning(&in, "1 of the job's 4 ranks has no profile here (rank 2)"));
	nk__job_inputs_free(&in);

	/* refused, naming both files */
	struct part prog[] = { { "a.nkp", "/a", O, 0, 2, "7", 0 }, { "b.nkp", "/b", O, 1, 2, "7", 0 } };
	assert_int_equal(check(prog, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "b.nkp (rank 1) is of program /b and a.nkp (rank 0) of /a"));
	struct part ids[] = { { "a.nkp", "/a", O, 0, 2, "7", 0 }, { "b.nkp", "/a", O, 1, 2, "8", 0 } };
	assert_int_equal(check(ids, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "b.nkp (rank 1) is of job 8 and a.nkp (rank 0) of job 7"));
	struct part launchers[] = { { "a.nkp", "/a", O, 0, 2, "7", 0 }, { "b.nkp", "/a", NK_LAUNCHER_SLURM, 1, 2, "7", 0 } };
	assert_int_equal(check(launchers, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "by Open MPI"));
	struct part sizes[] = { { "a.nkp", "/a", O, 0, 2, NULL, 0 }, { "b.nkp", "/a", O, 1, 3, NULL, 0 } };
	assert_int_equal(check(sizes, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "b.nkp (rank 1) is of a job of 3 ranks and a.nkp (rank 0) of one of 2"));
	struct part twice[] = { { "a.nkp", "/a", O, 1, 2, "7", 0 }, { "b.nkp", "/a", O, 1, 2, "7", 0 } };
	assert_int_equal(check(twice, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "a.nkp and b.nkp are both rank 1 of job 7"));
	struct part mixed[] = { { "a.nkp", "/a", O, 1, 2, "7", 0 }, { "plain.nkp", "/a", 0, -1, -1, NULL, 0 } };
	assert_int_equal(check(mixed, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "a.nkp is rank 1 of a job and plain.nkp is not a rank of a job"));
	struct part beyond[] = { { "a.nkp", "/a", O, 5, -1, NULL, 0 }, { "b.nkp", "/a", O, 1, 4, NULL, 0 } };
	assert_int_equal(check(beyond, 2, &err, NULL), NK_EINVAL);
	assert_non_null(strstr(err.message, "a.nkp: rank 5 in a job of 4 ranks"));

	/* warnings: a rank without an id among ranks with one; no id, started far apart; no size */
	struct part noid[] = { { "a.nkp", "/a", O, 0, 2, "7", 0 }, { "b.nkp", "/a", O, 1, 2, NULL, 0 } };
	assert_int_equal(check(noid, 2, &err, &in), 0);
	assert_true(has_warning(&in, "rank 1 carries no job id, the others job 7"));
	nk__job_inputs_free(&in);
	struct part apart[] = { { "a.nkp", "/a", NK_LAUNCHER_PMI, 0, 2, NULL, 1000000000000ull },
				{ "b.nkp", "/a", NK_LAUNCHER_PMI, 1, 2, NULL, 1300000000000ull } };
	assert_int_equal(check(apart, 2, &err, &in), 0);
	assert_true(has_warning(&in, "started 300 s apart"));
	nk__job_inputs_free(&in);
	apart[1].start = 1010000000000ull;
	assert_int_equal(check(apart, 2, &err, &in), 0);
	assert_int_equal(in.n_warnings, 0);
	nk__job_inputs_free(&in);
	struct part nosize[] = { { "a.nkp", "/a", O, 0, -1, "7", 0 }, { "b.nkp", "/a", O, 5, -1, "7", 0 } };
	assert_int_equal(check(nosize, 2, &err, &in), 0);
	assert_true(has_warning(&in, "did not say how many ranks"));
	nk__job_inputs_free(&in);
}

/* ---------------------------------------------------------------- ranks in memory */

struct pbuild {
	struct nk__nkp_profile p;
	struct nk__nkp_process_data pd[2];
	size_t cap[2];
	char *machine;
};

/* The RUN record names the sampler of the samples (the analysis clusters by it, the job's sums by RUN's). */
static void pb_init(struct pbuild *b, const char *machine_desc, int procs, int sampler)
{
	memset(b, 0, sizeof(*b));
	b->p.version = 1;
	b->p.run_json = strdup(sampler == NK__SAMPLER_PAGEFAULT
				       ? "{\"command\": [\"./app\"], \"sampler\": \"pagefault\", \"wall_ns\": 1000000000}"
				       : "{\"command\": [\"./app\"], \"sampler\": \"trace\", \"wall_ns\": 1000000000}");
	nk_machine *m = nk_test_synth(machine_desc);
	assert_int_equal(nk_machine_to_json(m, 0, &b->machine), 0);
	nk_machine_free(m);
	b->p.machine_json = b->machine;
	for (int i = 0; i < procs; i++) {
		struct nk__nkp_process_data *pd = &b->pd[i];
		pd->info.pid = 100 + (uint32_t)i;
		pd->meta_json = strdup("{\"page_size\": 4096}");
		pd->end_json = strdup("{\"complete\": true, \"dropped\": 0}");
		pd->complete = 1;
		pd->threads = calloc(3, sizeof(*pd->threads));
		for (int t = 0; t < 2; t++)
			pd->threads[t] = (struct nk__nkp_thread){ .tid = 1000 + (uint32_t)t, .index = (uint32_t)t, .cpu = -1 };
		pd->n_threads = 2;
		pd->names = calloc(2, sizeof(*pd->names));
		pd->names[0] = (struct nk__nkp_name_data){ { BASE, 64 * 16 * PAGE, 0 }, strdup("v") };
		pd->names[1] = (struct nk__nkp_name_data){ { BASE + (64 << 20), 16 * PAGE, 0 }, strdup("w") };
		pd->n_names = 2;
	}
	b->p.procs = b->pd;
	b->p.n_procs = (size_t)procs;
}

static void pb_free(struct pbuild *b)
{
	free(b->p.run_json);
	free(b->machine);
	for (size_t i = 0; i < b->p.n_procs; i++) {
		free(b->pd[i].meta_json);
		free(b->pd[i].end_json);
		free(b->pd[i].threads);
		for (size_t k = 0; k < b->pd[i].n_names; k++)
			free(b->pd[i].names[k].name);
		free(b->pd[i].names);
		free(b->pd[i].samples);
	}
}

static void pb_sample(struct pbuild *b, int proc, uint64_t t, uint64_t addr, int thread, int cnode, int pnode,
		      int sampler, uint32_t weight)
{
	/* pagefault samples wait since their round revoked the page: up to 30 ms here, so that rounds are not
	 * the sample's time alone */
	uint32_t latency = sampler == NK__SAMPLER_PAGEFAULT ? 1 + (uint32_t)((addr / PAGE * 7919u + t) % 30000u) : 0;
	struct nk__nkp_process_data *pd = &b->pd[proc];
	if (pd->n_samples == b->cap[proc]) {
		b->cap[proc] = b->cap[proc] ? 2 * b->cap[proc] : 256;
		pd->samples = realloc(pd->samples, b->cap[proc] * sizeof(*pd->samples));
	}
	pd->samples[pd->n_samples++] = (struct nk__nkp_sample){
		.time_ns = t, .addr = addr, .tid = 1000 + (uint32_t)thread, .weight = weight, .latency = latency,
		.cpu = (int16_t)cnode,
		.cpu_node = (int16_t)cnode, .page_node = (int16_t)pnode, .access = NK__ACC_READ, .sampler = (uint8_t)sampler
	};
	b->p.n_samples++;
}

/* Rank @p k's samples into process @p proc of @p b: pagefault samples in 64 groups over 20 rounds; v about
 * 20 % remote (k = 1: 25 %; k = 3: every page remote), w half remote. */
static void rank_samples(struct pbuild *b, int proc, int k, int sampler)
{
	unsigned x = 12345u + (unsigned)k;
	for (int round = 0; round < 20; round++)
		for (int i = 0; i < 64; i++) {
			x = x * 1103515245u + 12345u;
			int th = (int)((x >> 16) % 2);
			int remote = k == 3 ? 1 : (int)((x >> 8) % 20) < (k == 1 ? 5 : 4);
			uint64_t t = (uint64_t)round * NK__AN_ROUND_NS + 1000 + (uint64_t)i;
			pb_sample(b, proc, t, BASE + ((uint64_t)i * 16 + (uint64_t)(round % 16)) * PAGE, th, th,
				  remote ? 1 - th : th, sampler, 1 + (x >> 20) % 3);
		}
	for (int i = 0; i < 64; i++)
		pb_sample(b, proc, 5 + (uint64_t)i, BASE + (64 << 20) + (uint64_t)(i % 16) * PAGE, i % 2, i % 2, (i / 2) % 2,
			  sampler, 1);
}

static struct nk__analysis *analyze(struct pbuild *b)
{
	struct nk__analysis *a = NULL;
	nk_error err = { 0 };
	if (nk__analyze(&b->p, NULL, NULL, &a, &err))
		fail_msg("nk__analyze: %s", err.message);
	return a;
}

static const struct nk__an_var *find_var(const struct nk__analysis *a, const char *name)
{
	for (size_t i = 0; i < a->n_vars; i++)
		if (!strcmp(a->vars[i].name, name))
			return &a->vars[i];
	fail_msg("no variable %s", name);
	return NULL;
}

static const struct nk__job_var *job_var(const struct nk__job *j, const char *name)
{
	for (size_t i = 0; i < j->n_vars; i++)
		if (!strcmp(j->vars[i].name, name))
			return &j->vars[i];
	fail_msg("no job variable %s", name);
	return NULL;
}

static struct nk__job_peek peek_of(int rank, int size, const char *host)
{
	struct nk__job_peek pk = { 0 };
	pk.has_job = 1;
	pk.launcher = NK_LAUNCHER_OPENMPI;
	pk.rank = rank;
	pk.size = size;
	pk.local_rank = rank % 2;
	pk.local_size = 2;
	pk.host = (char *)host;
	pk.command = (char *)"./app";
	pk.exe = (char *)"/bin/app";
	return pk;
}

/* A job of @p n ranks (rank k: rank_samples(k)), hosts h0 (ranks 0-1) and h1; rank 3 on machine @p m3. */
static struct nk__job *job_of(int n, int sampler, const char *m3)
{
	struct nk__job *j = NULL;
	assert_int_equal(nk__job_begin(NULL, &j), 0);
	j->size = n;
	for (int k = 0; k < n; k++) {
		struct pbuild b;
		char path[32];
		pb_init(&b, k == 3 && m3 ? m3 : M2, 1, sampler);
		rank_samples(&b, 0, k, sampler);
		struct nk__analysis *a = analyze(&b);
		struct nk__job_peek pk = peek_of(k, n, k < 2 ? "h0" : "h1");
		snprintf(path, sizeof path, "j/rank-%d.nkp", k);
		assert_int_equal(nk__job_add_rank(j, &pk, path, a), 0);
		nk__analysis_free(a);
		pb_free(&b);
	}
	assert_int_equal(nk__job_finish(j), 0);
	return j;
}

static void close_to(double a, double b, const char *what)
{
	if (fabs(a - b) > 1e-9 * (1 + fabs(b)))
		fail_msg("%s: %.17g, expected %.17g", what, a, b);
}

/* Pooled over ranks from their sums == the analysis of the same samples as processes of one profile. */
static void test_pooled_interval(void **state)
{
	(void)state;
	for (int sampler = NK__SAMPLER_PAGEFAULT; sampler <= NK__SAMPLER_TRACE; sampler++) {
		struct nk__job *j = job_of(2, sampler, NULL);
		struct pbuild b;
		pb_init(&b, M2, 2, sampler);
		rank_samples(&b, 0, 0, sampler);
		rank_samples(&b, 1, 1, sampler);
		struct nk__analysis *a = analyze(&b);
		for (int w = 0; w < 2; w++) {
			const struct nk__an_var *v = find_var(a, w ? "w" : "v");
			const struct nk__job_var *jv = job_var(j, w ? "w" : "v");
			assert_int_equal(jv->n_per, 2);
			assert_int_equal(jv->share.samples, v->known_samples);
			assert_int_equal(jv->share.clusters, v->clusters);
			close_to(jv->share.r, (double)v->remote / (double)(v->local + v->remote), "share");
			close_to(jv->share.lo, v->ci_lo, "interval low");
			close_to(jv->share.hi, v->ci_hi, "interval high");
			close_to(jv->share.n_eff, v->n_eff, "effective size");
			assert_int_equal(jv->share.decided, nk__an_decided(v));
			assert_int_equal(jv->acc, v->acc);
			assert_int_equal(jv->remote, v->remote);
		}
		nk__analysis_free(a);
		pb_free(&b);
		/* one rank: its own variable's interval, its own report's */
		pb_init(&b, M2, 1, sampler);
		rank_samples(&b, 0, 1, sampler);
		a = analyze(&b);
		const struct nk__an_var *v = find_var(a, "v");
		const struct nk__job_vrank *p = &job_var(j, "v")->per[1];
		close_to(p->share.lo, v->ci_lo, "rank's interval");
		close_to(p->share.hi, v->ci_hi, "rank's interval");
		/* the rank's total: its accesses with both nodes known, clusters spanning its variables' rounds */
		const struct nk__job_rank *r = &j->ranks[1];
		close_to(r->share.r, (double)a->remote / (double)(a->local + a->remote), "rank share");
		assert_true(r->share.lo <= r->share.r && r->share.r <= r->share.hi);
		assert_int_equal(r->samples, a->samples);
		nk__analysis_free(a);
		pb_free(&b);
		nk__job_free(j);
	}
}

static void test_differ_and_reports(void **state)
{
	(void)state;
	struct nk__job *j = job_of(4, NK__SAMPLER_TRACE, "nodes=2 cores=2 mem=1G dist=10:31");
	/* ranks 0-2: v 20-25 % remote; rank 3: all remote, the one that differs */
	assert_int_equal(j->n_ranks, 4);
	assert_true(j->median >= 0);
	for (int k = 0; k < 3; k++)
		if (j->ranks[k].differs)
			fail_msg("rank %d differs: %s", k, j->ranks[k].differs);
	assert_non_null(j->ranks[3].differs);
	assert_non_null(strstr(j->ranks[3].differs, "the median rank"));
	assert_int_equal(j->n_differ, 1);
	const struct nk__job_var *v = job_var(j, "v");
	assert_true(v->per[3].differs && !v->per[0].differs);
	assert_int_equal(v->n_differ, 1);
	assert_false(job_var(j, "w")->n_differ);
	/* hosts: h0 ranks 0-1, h1 ranks 2-3; rank 3's machine has other distances: a host of its own of the same
	 * name, two machines, both said */
	assert_int_equal(j->n_hosts, 3);
	assert_int_equal(j->hosts[1].n_ranks, 1);
	assert_string_equal(j->hosts[2].name, "h1");
	assert_int_equal(j->hosts[2].ranks[0], 3);
	assert_int_equal(j->topologies, 2);
	assert_int_equal(j->hosts[2].topology, 1);
	int warned = 0;
	for (size_t i = 0; i < j->n_warnings; i++)
		warned += strstr(j->warnings[i], "2 kinds of machine") || strstr(j->warnings[i], "one host name");
	assert_int_equal(warned, 2);
	/* totals are sums */
	uint64_t acc = 0;
	for (size_t i = 0; i < j->n_ranks; i++)
		acc += j->ranks[i].acc;
	assert_int_equal(j->acc, acc);

	char *out = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__job_report(j, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "4 ranks of 4 on 3 hosts"));
	assert_non_null(strstr(out, "] *\n"));
	assert_non_null(strstr(out, "rank 3 (h1):"));
	assert_non_null(strstr(out, "host h1"));
	for (char *l = out, *e; (e = strchr(l, '\n')); l = e + 1)
		if (e - l > 100)
			fail_msg("text line over 100 columns: %.*s", (int)(e - l), l);
	free(out);
	assert_int_equal(nk__job_report(j, NK_REPORT_JSON, &out, &err), 0);
	json_error_t je;
	json_t *r = json_loads(out, 0, &je);
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "format")), "numakit-job-report");
	assert_int_equal(json_integer_value(json_object_get(r, "version")), 1);
	assert_int_equal(json_array_size(json_object_get(r, "ranks")), 4);
	json_t *d = json_object_get(r, "differing_ranks");
	assert_int_equal(json_array_size(d), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "rank")), 3);
	json_t *v0 = json_array_get(json_object_get(r, "variables"), 0);
	assert_string_equal(json_string_value(json_object_get(v0, "name")), "v");
	assert_int_equal(json_array_size(json_object_get(v0, "per_rank")), 4);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(v0, "differing_ranks"), 0)), 3);
	json_t *r0 = json_array_get(json_object_get(r, "ranks"), 0);
	assert_int_equal(json_array_size(json_object_get(r0, "page_nodes")), 2);
	assert_string_equal(json_string_value(json_object_get(r0, "host")), "h0");
	assert_true(json_is_array(json_object_get(r0, "remote_ci")));
	json_decref(r);
	free(out);
	assert_int_equal(nk__job_report(j, NK_REPORT_HTML, &out, &err), 0);
	assert_non_null(strstr(out, "<svg"));
	assert_non_null(strstr(out, "rank 3 *"));
	assert_null(strstr(out, "http")); /* nothing fetched */
	free(out);
	assert_int_equal(nk__job_report(j, 7, &out, &err), NK_EINVAL);
	nk__job_free(j);

	/* fewer than NK__JOB_MIN_RANKS ranks: nobody is called out */
	j = job_of(2, NK__SAMPLER_TRACE, NULL);
	assert_int_equal(j->median, -1);
	assert_int_equal(j->n_differ, 0);
	assert_int_equal(nk__job_report(j, NK_REPORT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "no rank is compared"));
	free(out);
	nk__job_free(j);
}

/* The text stays within 100 columns on machines of many nodes (a column per node, then a list). */
static void test_wide_machines(void **state)
{
	(void)state;
	static const char *const machines[] = { "nodes=6 cores=1 dist=10:21", "nodes=9 cores=1 dist=10:21",
						"nodes=16 cores=1 dist=10:21" };
	for (size_t m = 0; m < 3; m++) {
		struct nk__job *j = job_of(4, NK__SAMPLER_TRACE, NULL);
		nk__job_free(j);
		j = NULL;
		assert_int_equal(nk__job_begin(NULL, &j), 0);
		for (int k = 0; k < 4; k++) {
			struct pbuild b;
			pb_init(&b, machines[m], 1, NK__SAMPLER_TRACE);
			rank_samples(&b, 0, k, NK__SAMPLER_TRACE);
			struct nk__analysis *a = analyze(&b);
			struct nk__job_peek pk = peek_of(k, 4, "a-rather-long-host-name-of-a-cluster-node.example.org");
			assert_int_equal(nk__job_add_rank(j, &pk, "r", a), 0);
			nk__analysis_free(a);
			pb_free(&b);
		}
		assert_int_equal(nk__job_finish(j), 0);
		char *out = NULL;
		nk_error err = { 0 };
		assert_int_equal(nk__job_report(j, NK_REPORT_TEXT, &out, &err), 0);
		for (char *l = out, *e; (e = strchr(l, '\n')); l = e + 1)
			if (e - l > 100)
				fail_msg("%s: a text line over 100 columns: %.*s", machines[m], (int)(e - l), l);
		assert_non_null(strstr(out, m < 2 ? "n1 " : "by node %: n0:"));
		free(out);
		nk__job_free(j);
	}
}

/* A rank doing 3x the others' accesses differs by its load, whatever its share. */
static void test_load(void **state)
{
	(void)state;
	struct nk__job *j = NULL;
	assert_int_equal(nk__job_begin(NULL, &j), 0);
	for (int k = 0; k < 3; k++) {
		struct pbuild b;
		pb_init(&b, M2, 1, NK__SAMPLER_TRACE);
		for (int rep = 0; rep < (k == 2 ? 3 : 1); rep++)
			rank_samples(&b, 0, 0, NK__SAMPLER_TRACE);
		struct nk__analysis *a = analyze(&b);
		struct nk__job_peek pk = peek_of(k, 3, "h");
		assert_int_equal(nk__job_add_rank(j, &pk, "r", a), 0);
		nk__analysis_free(a);
		pb_free(&b);
	}
	assert_int_equal(nk__job_finish(j), 0);
	assert_null(j->ranks[0].differs);
	assert_non_null(j->ranks[2].differs);
	assert_non_null(strstr(j->ranks[2].differs, "3.00x the accesses of the median rank"));
	nk__job_free(j);
}

/* The job's MPI traffic from its ranks' COMM sums: pairs, means per run, ranks left out and warned about. */
static void set_comm(struct nk__analysis *a, uint32_t rank, const struct nk__an_comm_peer *c, size_t n)
{
	a->comm_procs = 1;
	a->comm_size = 4;
	a->n_comm = n;
	free(a->comm);
	a->comm = malloc(n * sizeof *c);
	assert_non_null(a->comm);
	memcpy(a->comm, c, n * sizeof *c);
	for (size_t i = 0; i < n; i++)
		a->comm[i].from = rank;
}

static void test_traffic(void **state)
{
	(void)state;
	static const struct nk__an_comm_peer c0[] = { { 0, 1, NK__COMM_P2P, 10, 1000 }, { 0, 1, NK__COMM_COLL, 2, 64 },
						      { 0, 3, NK__COMM_P2P, 1, 8 } };
	static const struct nk__an_comm_peer c1[] = { { 0, 0, NK__COMM_P2P, 10, 2001 } };
	struct nk__job *j = NULL;
	assert_int_equal(nk__job_begin(NULL, &j), 0);
	j->size = 4;
	for (int k = 0; k < 4; k++) {
		struct pbuild b;
		pb_init(&b, M2, 1, NK__SAMPLER_TRACE);
		rank_samples(&b, 0, 0, NK__SAMPLER_TRACE);
		struct nk__analysis *a = analyze(&b);
		if (k == 0)
			set_comm(a, 0, c0, 3);
		if (k == 1) {
			set_comm(a, 1, c1, 1);
			a->runs = 2; /* totals over 2 runs: means per run in the job */
		}
		if (k == 3)
			set_comm(a, 2, c1, 1); /* says it is rank 2: left out */
		struct nk__job_peek pk = peek_of(k, 4, "h");
		assert_int_equal(nk__job_add_rank(j, &pk, "r", a), 0);
		nk__analysis_free(a);
		pb_free(&b);
	}
	assert_int_equal(nk__job_finish(j), 0);
	assert_int_equal(j->comm_ranks, 2);
	assert_int_equal(j->n_pairs, 3);
	const struct nk__job_pair want[3] = { { 0, 1, 10, 1000, 2, 64 }, { 0, 3, 1, 8, 0, 0 }, { 1, 0, 5, 1001, 0, 0 } };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(j->pairs[i].from, want[i].from);
		assert_int_equal(j->pairs[i].to, want[i].to);
		assert_int_equal(j->pairs[i].p2p_messages, want[i].p2p_messages);
		assert_int_equal(j->pairs[i].p2p_bytes, want[i].p2p_bytes);
		assert_int_equal(j->pairs[i].coll_messages, want[i].coll_messages);
		assert_int_equal(j->pairs[i].coll_bytes, want[i].coll_bytes);
	}
	assert_int_equal(j->comm_bytes, 1000 + 64 + 8 + 1001);
	int mismatch = 0, without = 0;
	for (size_t i = 0; i < j->n_warnings; i++) {
		mismatch += strstr(j->warnings[i], "rank 3 is rank 2 of 4 in MPI_COMM_WORLD") != NULL;
		without += strstr(j->warnings[i], "1 of 4 ranks recorded no MPI traffic (rank 2 first)") != NULL;
	}
	assert_int_equal(mismatch, 1);
	assert_int_equal(without, 1);
	char *text = NULL, *json = NULL;
	nk_error err = { 0 };
	assert_int_equal(nk__job_report(j, NK_REPORT_TEXT, &text, &err), 0);
	assert_non_null(strstr(text, "rank 0 <-> rank 1"));
	assert_non_null(strstr(text, "17 messages, same host"));
	assert_int_equal(nk__job_report(j, NK_REPORT_JSON, &json, &err), 0);
	assert_non_null(strstr(json, "\"ranks_recorded\": 2"));
	free(text);
	free(json);
	nk__job_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_pooled_interval),
		cmocka_unit_test(test_differ_and_reports),
		cmocka_unit_test(test_wide_machines),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_traffic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
