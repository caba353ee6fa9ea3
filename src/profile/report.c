/* SPDX-License-Identifier: BSD-3-Clause
 * The public profile API of the reader side: nk_profile_load / free /
 * report / sharing (include/numakit.h).  Loading reads the file
 * (nkp_read.c), symbolises each process (symbols.c) and analyses
 * (analysis*.c); the reports only format struct nk__analysis.  Formats
 * documented in docs/report.md.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis.h"
#include "profile/job.h"
#include "util/error.h"
#include "profile/report_fmt.h"
#include "util/strbuf.h"

/* A profile: one analysis (a run, or runs pooled), or a job of ranks each analysed alone (job.c). */
struct nk_profile {
	struct nk__analysis *a;
	struct nk__job *job;
};

int nk__profile_from_analysis(struct nk__analysis *a, nk_profile **out, nk_error *err)
{
	if (!a || !out)
		return nk__error(err, NK_EINVAL, "nk__profile_from_analysis: NULL argument");
	nk_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return nk__error(err, NK_ENOMEM, "profile: out of memory");
	p->a = a;
	*out = p;
	return 0;
}

const struct nk__analysis *nk__profile_analysis(const nk_profile *p)
{
	return p ? p->a : NULL;
}

const struct nk__job *nk__profile_job(const nk_profile *p)
{
	return p ? p->job : NULL;
}

int nk_profile_rankmap(const nk_profile *p, int format, char **out, nk_error *err)
{
	if (!p || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_rankmap: NULL argument");
	if (!p->job)
		return nk__error(err, NK_EINVAL, "not a job's profile: rank mapping needs the rank files of a job "
				 "(`numakit profile` under an MPI launcher)");
	return nk__job_rankmap(p->job, format, out, err);
}

int nk_profile_load(const char *path, nk_profile **out, nk_error *err)
{
	if (!path || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_load: NULL argument");
	return nk_profile_load_many(&path, 1, out, err);
}

int nk_profile_combine(const char *const *paths, size_t n, const char *output, nk_error *err)
{
	if (!paths || !n || !output)
		return nk__error(err, NK_EINVAL, "nk_profile_combine: no profile or no output");
	for (size_t i = 0; i < n; i++)
		if (!paths[i])
			return nk__error(err, NK_EINVAL, "nk_profile_combine: NULL path");
	char *warn = NULL;
	int rc = nk__nkp_combine_files(paths, n, output, &warn, err);
	free(warn); /* loading the combined file says it again */
	return rc;
}

/* Read @p paths and join their runs (nkp_runs.c); warnings about the runs into *warn.  A job's ranks
 * (@p pk their peeks, NULL otherwise) are first carried into one share's frame (@p fr). */
static int load_runs(const char *const *paths, size_t n, const struct nk__job_peek *pk, struct nk__job_frame *fr,
		     struct nk__nkp_profile **out, char **warn, nk_error *err)
{
	struct nk__nkp_profile **ps = calloc(n, sizeof(*ps));
	if (!ps)
		return nk__error(err, NK_ENOMEM, "profiles: out of memory");
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = nk__nkp_load(paths[i], &ps[i], err);
	if (!rc && pk && n > 1)
		rc = nk__job_frame_apply(ps, pk, n, fr, err);
	if (!rc && n == 1 && nk__nkp_n_runs(ps[0]) == 1) {
		*out = ps[0]; /* one run: as it always was */
		ps[0] = NULL;
	} else if (!rc) {
		rc = nk__nkp_join(ps, paths, n, out, warn, err); /* frees ps[] */
	}
	for (size_t i = 0; i < n; i++)
		nk__nkp_free(ps[i]);
	free(ps);
	return rc;
}

/* Append @p w (taken over) to the analysis's warnings.  0 or NK_ENOMEM (@p w freed). */
static int take_warning(struct nk__analysis *a, char *w)
{
	char **nw = w ? realloc(a->warnings, (a->n_warnings + 1) * sizeof(*nw)) : NULL;
	if (!nw) {
		free(w);
		return NK_ENOMEM;
	}
	a->warnings = nw;
	nw[a->n_warnings++] = w;
	return 0;
}

static int analyse(const char *const *paths, size_t n, const struct nk__job_peek *pk, struct nk__analysis **out,
		   nk_error *err)
{
	const char *path = n == 1 ? paths[0] : "profiles";
	struct nk__nkp_profile *np = NULL;
	struct nk__job_frame fr = { 0 };
	char *runs_warn = NULL;
	int rc = load_runs(paths, n, pk, &fr, &np, &runs_warn, err);
	if (rc) {
		nk__job_frame_clear(&fr);
		return rc;
	}
	nk__symtab **syms = calloc(np->n_procs ? np->n_procs : 1, sizeof(*syms));
	char **sym_warn = calloc(np->n_procs ? np->n_procs : 1, sizeof(*sym_warn));
	if (!syms || !sym_warn) {
		free(syms);
		free(sym_warn);
		free(runs_warn);
		nk__nkp_free(np);
		nk__job_frame_clear(&fr);
		return nk__error(err, NK_ENOMEM, "%s: out of memory", path);
	}
	for (size_t i = 0; i < np->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &np->procs[i];
		nk_error serr = { 0 };
		if (!pd->n_maps)
			continue;
		if (nk__sym_open((const char *const *)pd->all_maps, pd->n_maps, &syms[i], &serr)) {
			syms[i] = NULL;
			if (asprintf(&sym_warn[i], "process %u: cannot symbolise (%s): names are addresses", pd->info.pid,
				     serr.message) < 0)
				sym_warn[i] = NULL;
		}
	}
	struct nk__analysis *a = NULL;
	rc = nk__analyze(np, NULL, syms, &a, err);
	for (size_t i = 0; i < np->n_procs; i++)
		nk__sym_close(syms[i]);
	free(syms);
	if (!rc) {
		for (size_t i = 0; i < np->n_procs; i++) {
			if (sym_warn[i])
				take_warning(a, sym_warn[i]); /* out of memory: the warning is lost, not the report */
			sym_warn[i] = NULL;
		}
	}
	if (!rc && runs_warn) {
		take_warning(a, runs_warn);
		runs_warn = NULL;
	}
	if (!rc && fr.note) {
		take_warning(a, fr.note);
		fr.note = NULL;
	}
	if (!rc && pk && a->runs == (int)n && n > 1 && (a->run_rank = malloc(n * sizeof(int))))
		for (size_t i = 0; i < n; i++)
			a->run_rank[i] = pk[i].rank; /* runs joined in file order, one run per rank file */
	if (!rc && fr.share) {
		a->share = fr.share;
		a->n_share = fr.n_share;
		fr.share = NULL;
	}
	nk__job_frame_clear(&fr);
	free(runs_warn);
	for (size_t i = 0; i < np->n_procs; i++)
		free(sym_warn[i]);
	free(sym_warn);
	nk__nkp_free(np);
	if (rc)
		return rc;
	*out = a;
	return 0;
}

int nk__profile_analyse_files(const char *const *paths, size_t n, struct nk__analysis **out, nk_error *err)
{
	return analyse(paths, n, NULL, out, err);
}

int nk__profile_analyse_ranks(const char *const *paths, const struct nk__job_peek *pk, size_t n,
			      struct nk__analysis **out, nk_error *err)
{
	return analyse(paths, n, pk, out, err);
}

int nk_profile_load_many(const char *const *paths, size_t n, nk_profile **out, nk_error *err)
{
	if (!paths || !n || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_load_many: no profile");
	for (size_t i = 0; i < n; i++)
		if (!paths[i])
			return nk__error(err, NK_EINVAL, "nk_profile_load_many: NULL path");
	struct nk__job_inputs in;
	int rc = nk__job_inputs(paths, n, &in, err);
	if (rc)
		return rc;
	if (in.is_job) { /* a job: each rank analysed alone (job.c) */
		struct nk__job *j = NULL;
		rc = nk__job_load(&in, &j, err);
		nk__job_inputs_free(&in);
		if (rc)
			return rc;
		nk_profile *p = calloc(1, sizeof(*p));
		if (!p) {
			nk__job_free(j);
			return nk__error(err, NK_ENOMEM, "profile: out of memory");
		}
		p->job = j;
		*out = p;
		return 0;
	}
	nk__job_inputs_free(&in);
	struct nk__analysis *a = NULL;
	if ((rc = nk__profile_analyse_files(paths, n, &a, err)))
		return rc;
	rc = nk__profile_from_analysis(a, out, err);
	if (rc)
		nk__analysis_free(a);
	return rc;
}

int nk_profile_load_pooled(const char *const *paths, size_t n, nk_profile **out, nk_error *err)
{
	if (!paths || !n || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_load_pooled: no profile");
	for (size_t i = 0; i < n; i++)
		if (!paths[i])
			return nk__error(err, NK_EINVAL, "nk_profile_load_pooled: NULL path");
	struct nk__job_inputs in;
	struct nk__analysis *a = NULL;
	int rc = nk__job_inputs(paths, n, &in, err);
	if (rc)
		return rc;
	if (!in.is_job) {
		nk__job_inputs_free(&in);
		if ((rc = nk__profile_analyse_files(paths, n, &a, err)))
			return rc;
	} else {
		/* a job's ranks as runs of one program (SPMD): one analysis, variables pooled by key */
		rc = nk__profile_analyse_ranks((const char *const *)in.paths, in.peeks, in.n, &a, err);
		if (rc == NK_EINVAL && err) {
			char msg[sizeof err->message];
			snprintf(msg, sizeof msg, "the job's ranks cannot be pooled as runs of one program: %.380s; pass the "
				 "rank files of the ranks on one kind of machine", err->message);
			snprintf(err->message, sizeof err->message, "%s", msg);
		}
		if (!rc) {
			for (size_t i = 0; i < in.n_warnings && !rc; i++) {
				rc = take_warning(a, in.warnings[i]);
				in.warnings[i] = NULL;
			}
			if (!rc)
				rc = take_warning(a, nk__aprintf("the %zu ranks of the job (%s%s%s) are pooled as runs of one "
								 "program: counts are means per rank", in.n,
								 nk_launcher_name(in.launcher), in.id ? ", job " : "",
								 in.id ? in.id : ""));
			if (rc) {
				nk__analysis_free(a);
				rc = nk__error(err, NK_ENOMEM, "out of memory");
			}
		}
		nk__job_inputs_free(&in);
		if (rc)
			return rc;
	}
	rc = nk__profile_from_analysis(a, out, err);
	if (rc)
		nk__analysis_free(a);
	return rc;
}

void nk_profile_free(nk_profile *p)
{
	if (!p)
		return;
	nk__analysis_free(p->a);
	nk__job_free(p->job);
	free(p);
}

/* ---------------------------------------------------------------- buffer */

static int bfinish(struct nk__strbuf *b, char **out, nk_error *err)
{
	if (b->oom || !b->s) {
		free(b->s);
		return nk__error(err, NK_ENOMEM, "profile report: out of memory");
	}
	*out = b->s;
	return 0;
}

static const char *fix_text(const struct nk__analysis *a, const struct nk__an_var *v, char *buf, size_t cap)
{
	switch (v->fix) {
	case NK__FIX_LEAVE:
		snprintf(buf, cap, "leave it (%s)", v->small ? "smaller than L2" : "used by one thread only");
		break;
	case NK__FIX_NOT_WORTH:
		snprintf(buf, cap, "not worth it: NUMA factor %.2f < %.2f", a->numa_factor, NK__AN_MIN_NUMA_FACTOR);
		break;
	case NK__FIX_PARALLEL_INIT:
		snprintf(buf, cap, "initialise in parallel with the compute loop's partition, or policy `block`");
		break;
	case NK__FIX_CYCLIC:
		snprintf(buf, cap, "spread its pages: policy `cyclic`");
		break;
	case NK__FIX_WEIGHTED:
		snprintf(buf, cap, "spread its pages by bandwidth: policy `weighted`");
		break;
	default:
		snprintf(buf, cap, "nothing to do");
		break;
	}
	return buf;
}

/* ---------------------------------------------------------------- text */

/* @p text after @p indent spaces, wrapped at word boundaries to 100 columns. */
static void wrapped(struct nk__strbuf *b, int indent, const char *prefix, const char *text)
{
	int col = indent + (int)strlen(prefix);
	nk__strbuf_printf(b, "%*s%s", indent, "", prefix);
	int first = 1;
	while (*text) {
		while (*text == ' ')
			text++;
		if (!*text)
			break;
		const char *sp = strchr(text, ' ');
		int w = sp ? (int)(sp - text) : (int)strlen(text);
		if (!first && col + 1 + w > 100) {
			nk__strbuf_printf(b, "\n%*s", indent + 2, "");
			col = indent + 2;
		} else if (!first) {
			nk__strbuf_printf(b, " ");
			col++;
		}
		nk__strbuf_printf(b, "%.*s", w, text);
		col += w;
		text += w;
		first = 0;
	}
	nk__strbuf_printf(b, "\n");
}

#define TEXT_VARS 12 /* variables listed per node and in the table */

/* A variable's remote-share interval in whole percent, "[61,68]"; "-" when no access has a known node. */
static const char *ci_text(const struct nk__an_var *v, char *buf, size_t cap)
{
	if (!v->known_samples)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "[%.0f,%.0f]", 100 * v->ci_lo, 100 * v->ci_hi);
	return buf;
}


static int users_sorted(const struct nk__an_var *v, int *ord);

/* Heap sites with their blocks (issue 19): how many, how large, who allocated and who uses them. */
static void sites_text(struct nk__strbuf *b, const struct nk__analysis *a)
{
	int head = 0;
	for (size_t i = 0; i < a->n_vars && i < 3 * TEXT_VARS; i++) {
		const struct nk__an_var *v = &a->vars[i];
		char s1[32], s2[32];
		int ord[NK__AN_TOP_USERS];
		if (!v->site || !v->samples)
			continue;
		if (!head++)
			nk__strbuf_printf(b, "\n== Allocation sites ==\n");
		nk__strbuf_printf(b, "%s: %llu blocks (at most %llu live, %s; %llu live at the end, %s)\n", v->name,
			(unsigned long long)v->site_blocks, (unsigned long long)v->site_peak,
			nk__rep_size(v->site_bytes_peak, s1, sizeof s1), (unsigned long long)v->site_live,
			nk__rep_size(v->site_bytes_live, s2, sizeof s2));
		if (v->alloc_thread >= 0)
			nk__strbuf_printf(b, "  allocated by %s (%.0f%% of the blocks)", a->threads[v->alloc_thread].label,
				nk__rep_pct(v->alloc_thread_blocks, v->site_blocks));
		else
			nk__strbuf_printf(b, "  allocated by an unknown thread");
		if (v->ft_where && v->ft_thread >= 0)
			nk__strbuf_printf(b, ", first written by %s", a->threads[v->ft_thread].label);
		nk__strbuf_printf(b, "\n  used by");
		int n = users_sorted(v, ord);
		uint64_t all = 0;
		for (int k = 0; k < n; k++)
			all += v->users[k].acc;
		for (int k = 0; k < n && k < 4; k++)
			nk__strbuf_printf(b, "%s %s (%.0f%%)", k ? "," : "", a->threads[v->users[ord[k]].thread].label,
				nk__rep_pct(v->users[ord[k]].acc, all));
		if (n > 4)
			nk__strbuf_printf(b, ", ...");
		if (v->site_space)
			nk__strbuf_printf(b, "\n  placed as one array of %s: its blocks end to end in allocation order",
				nk__rep_size(v->size, s1, sizeof s1));
		nk__strbuf_printf(b, "\n  pages sampled by node:");
		for (int k = 0; k < a->n_nodes; k++)
			if (v->pages_on[k])
				nk__strbuf_printf(b, " node %d %.0f%%", a->node_ids[k], nk__rep_pct(v->pages_on[k], v->pages));
		nk__strbuf_printf(b, "\n");
	}
}

static void text_report(const struct nk__analysis *a, struct nk__strbuf *b)
{
	char s1[64], s2[128];
	uint64_t known = a->local + a->remote;
	/* First, before any figure: figures of a profile that misses part of the run describe only that part. */
	if (!a->covered) {
		nk__strbuf_printf(b, "INCOMPLETE PROFILE: the samples do not cover the whole run; every figure below may describe\n"
			   "only part of it, and numakit advise and whatif refuse it without --force.\n");
		for (size_t i = 0; i < a->n_coverage_reasons; i++)
			wrapped(b, 2, "- ", a->coverage_reasons[i]);
		nk__strbuf_printf(b, "\n");
	}
	nk__strbuf_printf(b, "numakit report: %s\n", a->program);
	if (a->runs > 1) { /* several runs combined: say so first, then list them */
		nk__strbuf_printf(b, "%d runs combined: samples pooled, accesses are means per run, durations means\n", a->runs);
		for (int r = 0; r < a->runs; r++) {
			const struct nk__an_run *ri = &a->run_info[r];
			nk__strbuf_printf(b, "  run %d: %s, %.2f s, %llu samples", r + 1, ri->command, (double)ri->wall_ns / 1e9,
				(unsigned long long)ri->samples);
			if (ri->signal)
				nk__strbuf_printf(b, ", killed by signal %d", ri->signal);
			else if (ri->exit_status >= 0)
				nk__strbuf_printf(b, ", exit %d", ri->exit_status);
			if (ri->source)
				nk__strbuf_printf(b, " (%s)", ri->source);
			nk__strbuf_printf(b, "\n");
		}
	}
	nk__strbuf_printf(b, "sampler %s, %llu samples (%llu accesses), %d process%s, %zu thread%s", a->sampler,
		(unsigned long long)a->samples, (unsigned long long)a->acc, a->n_procs, a->n_procs == 1 ? "" : "es",
		a->n_threads, a->n_threads == 1 ? "" : "s");
	if (a->wall_ns)
		nk__strbuf_printf(b, ", %.2f s", (double)a->wall_ns / 1e9);
	if (a->runs < 2 && a->signal > 0)
		nk__strbuf_printf(b, ", killed by signal %d (%s)", a->signal, strsignal(a->signal));
	else if (a->runs < 2 && a->exit_status > 0)
		nk__strbuf_printf(b, ", exit status %d", a->exit_status);
	nk__strbuf_printf(b, "\nremote accesses: %.1f%% of %llu with known nodes", nk__rep_pct(a->remote, known),
		(unsigned long long)known);
	if (a->unknown)
		nk__strbuf_printf(b, " (%llu accesses of unknown node)", (unsigned long long)a->unknown);
	nk__strbuf_printf(b, "\nmachine: %d node%s", a->n_nodes, a->n_nodes == 1 ? "" : "s");
	if (a->numa_factor > 0)
		nk__strbuf_printf(b, ", NUMA factor up to %.2f", a->numa_factor);
	if (a->l2_size)
		nk__strbuf_printf(b, ", L2 %s", nk__rep_size(a->l2_size, s1, sizeof(s1)));
	nk__strbuf_printf(b, "\n");

	nk__strbuf_printf(b, "\n== Per node: variables by remote accesses from the node's cpus ==\n");
	for (int n = 0; n < a->n_nodes; n++) {
		uint64_t tot = a->node_local[n] + a->node_remote[n];
		nk__strbuf_printf(b, "node %d: %llu accesses, %.1f%% remote; pages on it served %llu accesses\n", a->node_ids[n],
			(unsigned long long)tot, nk__rep_pct(a->node_remote[n], tot), (unsigned long long)a->node_pages_acc[n]);
		int shown = 0;
		for (size_t i = 0; i < a->n_vars && shown < TEXT_VARS; i++) {
			const struct nk__an_var *v = &a->vars[i];
			if (!v->remote_cpu[n])
				continue;
			shown++;
			nk__strbuf_printf(b, "  %-46s %10llu remote %6.1f%% of its accesses here\n", nk__fit(v->name, 46, s2, sizeof(s2)),
				(unsigned long long)v->remote_cpu[n], nk__rep_pct(v->remote_cpu[n], v->acc_cpu[n]));
			for (int k = 0; k < v->n_lines && k < 3; k++)
				if (v->lines[k].remote)
					nk__strbuf_printf(b, "      at %-52s %10llu remote (all nodes)\n",
						nk__fit(v->lines[k].where, 52, s2, sizeof(s2)), (unsigned long long)v->lines[k].remote);
		}
		if (!shown)
			nk__strbuf_printf(b, "  (no remote access sampled)\n");
	}

	nk__strbuf_printf(b, "\n== Variables ==\n");
	nk__strbuf_printf(b, "%-25s %-6s %9s %8s %-16s %6s %5s %5s %5s %5s\n", "variable", "kind", "size", "samples",
		" remote [95% CI]", "pages", "priv", "node", "cross", "reg");
	for (size_t i = 0; i < a->n_vars && i < 3 * TEXT_VARS; i++) {
		const struct nk__an_var *v = &a->vars[i];
		char reg[16], ci[32];
		if (v->regularity < 0)
			snprintf(reg, sizeof(reg), "-");
		else
			snprintf(reg, sizeof(reg), "%.2f", v->regularity);
		nk__strbuf_printf(b, "%-25s %-6.6s %9s %8llu %6.1f%% %-9s %6llu %4.0f%% %4.0f%% %4.0f%% %5s\n",
			nk__fit(v->name, 25, s2, sizeof(s2)), nk__an_kind_name(v->kind),
			v->size ? nk__rep_size(v->size, s1, sizeof(s1)) : "-", (unsigned long long)v->samples,
			nk__rep_pct(v->remote, v->local + v->remote), ci_text(v, ci, sizeof ci), (unsigned long long)v->pages,
			nk__rep_pct(v->pages_private, v->pages),
			nk__rep_pct(v->pages_node_shared, v->pages), nk__rep_pct(v->pages_cross_shared, v->pages), reg);
	}
	if (a->n_vars > 3 * TEXT_VARS)
		nk__strbuf_printf(b, "(%zu more variables in --json)\n", a->n_vars - 3 * TEXT_VARS);
	uint64_t pg = a->pages_private + a->pages_node_shared + a->pages_cross_shared;
	nk__strbuf_printf(b, "page classes: %llu pages sampled, %.1f%% private, %.1f%% shared within a node, %.1f%% shared "
		   "across nodes\n",
		(unsigned long long)pg, nk__rep_pct(a->pages_private, pg), nk__rep_pct(a->pages_node_shared, pg),
		nk__rep_pct(a->pages_cross_shared, pg));
	sites_text(b, a);

	if (a->n_threads && a->n_nodes) {
		nk__strbuf_printf(b, "\n== Threads x page nodes (%% of the thread's accesses) ==\n%-22s %5s", "thread", "runs");
		for (int n = 0; n < a->n_nodes; n++) {
			snprintf(s1, sizeof(s1), "node%d", a->node_ids[n]);
			nk__strbuf_printf(b, " %8s", s1);
		}
		nk__strbuf_printf(b, "\n");
		for (size_t t = 0; t < a->n_threads && t < 64; t++) {
			const struct nk__an_thread *th = &a->threads[t];
			uint64_t tot = 0;
			for (int n = 0; n < a->n_nodes; n++)
				tot += a->thread_node[t * (size_t)a->n_nodes + (size_t)n];
			if (th->node >= 0)
				snprintf(s1, sizeof(s1), "%d", th->node);
			else
				snprintf(s1, sizeof(s1), "-");
			nk__strbuf_printf(b, "%-22s %5s", nk__fit(th->label, 22, s2, sizeof(s2)), s1);
			for (int n = 0; n < a->n_nodes; n++)
				nk__strbuf_printf(b, " %7.1f%%", nk__rep_pct(a->thread_node[t * (size_t)a->n_nodes + (size_t)n], tot));
			nk__strbuf_printf(b, "\n");
		}
		if (a->n_threads > 64)
			nk__strbuf_printf(b, "(%zu more threads in --json)\n", a->n_threads - 64);
	}
	if (a->n_threads >= 2 && a->n_threads <= 16) {
		double mx = 0;
		for (size_t i = 0; i < a->n_threads * a->n_threads; i++)
			if (a->sharing[i] > mx)
				mx = a->sharing[i];
		nk__strbuf_printf(b, "\n== Thread sharing (accesses to common pages, %% of the largest pair) ==\n%-10s", "");
		for (size_t j = 0; j < a->n_threads; j++)
			nk__strbuf_printf(b, " %5zu", j);
		nk__strbuf_printf(b, "\n");
		for (size_t i = 0; i < a->n_threads; i++) {
			nk__strbuf_printf(b, "%-10s", nk__fit(a->threads[i].label, 10, s2, sizeof(s2)));
			for (size_t j = 0; j < a->n_threads; j++) {
				if (i == j)
					nk__strbuf_printf(b, " %5s", "-");
				else
					nk__strbuf_printf(b, " %5.0f", mx > 0 ? 100 * a->sharing[i * a->n_threads + j] / mx : 0);
			}
			nk__strbuf_printf(b, "\n");
		}
	} else if (a->n_threads > 16) {
		nk__strbuf_printf(b, "\n(thread sharing matrix: %zu threads, see --json or --sharing)\n", a->n_threads);
	}
	if (a->n_phases) {
		nk__strbuf_printf(b, "\n== Phases (each phase's variables, diagnosed on the phase's samples alone) ==\n");
		nk__strbuf_printf(b, "  %-34s %9s %-17s %-18s %s\n", "variable", "accesses", " remote [95% CI]", "diagnosis",
			"fix");
		for (size_t i = 0; i < a->n_phases; i++) {
			const struct nk__an_phase *ph = &a->phases[i];
			nk__strbuf_printf(b, "%-30s %10llu samples %6.1f%% remote\n", nk__fit(ph->name, 30, s2, sizeof(s2)),
				(unsigned long long)ph->samples, nk__rep_pct(ph->remote, ph->local + ph->remote));
			for (size_t k = 0; k < ph->n_vars && k < TEXT_VARS; k++) {
				const struct nk__an_var *v = &ph->vars[k];
				const char *fx = nk__an_fix_name(v->fix);
				char ci[32];
				nk__strbuf_printf(b, "  %-34s %9llu %6.1f%% %-9s %-18s %s", nk__fit(v->name, 34, s2, sizeof(s2)),
					(unsigned long long)v->acc, nk__rep_pct(v->remote, v->local + v->remote),
					ci_text(v, ci, sizeof ci), nk__an_diag_name(v->diag), fx);
				if (v->policy && strcmp(v->policy, fx))
					nk__strbuf_printf(b, " (%s)", v->policy);
				nk__strbuf_printf(b, "\n");
			}
			if (ph->n_vars > TEXT_VARS)
				nk__strbuf_printf(b, "  (%zu more variables in --json)\n", ph->n_vars - TEXT_VARS);
		}
	}

	nk__strbuf_printf(b, "\n== Diagnosis ==\n");
	int said = 0;
	for (size_t i = 0; i < a->n_vars && i < 3 * TEXT_VARS; i++) {
		const struct nk__an_var *v = &a->vars[i];
		char fx[160];
		if (v->diag == NK__DIAG_FEW_SAMPLES && v->remote == 0)
			continue;
		said++;
		nk__strbuf_printf(b, "%s [%s]\n", v->name, nk__an_diag_name(v->diag));
		wrapped(b, 2, "", v->explain);
		wrapped(b, 2, "fix: ", fix_text(a, v, fx, sizeof(fx)));
	}
	if (!said)
		nk__strbuf_printf(b, "(nothing sampled)\n");
	if (a->n_warnings) {
		nk__strbuf_printf(b, "\n== Warnings ==\n");
		for (size_t i = 0; i < a->n_warnings; i++)
			wrapped(b, 0, "- ", a->warnings[i]);
	}
}

/* ---------------------------------------------------------------- JSON */

static json_t *u64_array(const uint64_t *v, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_integer((json_int_t)v[i]));
	return arr;
}

/* The users of heap variable @p v by accesses, descending, as indexes into v->users; returns how many. */
static int users_sorted(const struct nk__an_var *v, int *ord)
{
	int n = v->n_users;
	for (int i = 0; i < n; i++)
		ord[i] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v->users[ord[j]].acc > v->users[ord[j - 1]].acc; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	return n;
}

/* One variable: the same members at the top level and in each phase (docs/report.md). */
static json_t *var_json(const struct nk__analysis *a, const struct nk__an_var *v)
{
	size_t nn = (size_t)a->n_nodes;
	json_t *o = json_object(), *lines = json_array(), *ft = json_null();
	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "key", json_string(v->key));
	json_object_set_new(o, "kind", json_string(nk__an_kind_name(v->kind)));
	json_object_set_new(o, "type", v->type ? json_string(v->type) : json_null());
	json_object_set_new(o, "size", json_integer((json_int_t)v->size));
	json_object_set_new(o, "samples", json_integer((json_int_t)v->samples));
	json_object_set_new(o, "accesses", json_integer((json_int_t)v->acc));
	json_object_set_new(o, "local", json_integer((json_int_t)v->local));
	json_object_set_new(o, "remote", json_integer((json_int_t)v->remote));
	json_object_set_new(o, "remote_fraction", v->local + v->remote
							  ? json_real((double)v->remote / (double)(v->local + v->remote))
							  : json_null());
	json_object_set_new(o, "remote_ci", v->known_samples ? json_pack("[ff]", v->ci_lo, v->ci_hi) : json_null());
	json_object_set_new(o, "samples_effective", json_real(v->n_eff));
	json_object_set_new(o, "samples_known", json_integer((json_int_t)v->known_samples));
	json_object_set_new(o, "clusters", json_integer((json_int_t)v->clusters));
	json_object_set_new(o, "decided", json_boolean(nk__an_decided(v)));
	json_object_set_new(o, "unknown", json_integer((json_int_t)v->unknown));
	json_object_set_new(o, "reads", json_integer((json_int_t)v->reads));
	json_object_set_new(o, "writes", json_integer((json_int_t)v->writes));
	json_object_set_new(o, "by_cpu_node", u64_array(v->acc_cpu, nn));
	json_object_set_new(o, "remote_by_cpu_node", u64_array(v->remote_cpu, nn));
	json_object_set_new(o, "by_page_node", u64_array(v->acc_page, nn));
	json_object_set_new(o, "pages_by_node", u64_array(v->pages_on, nn));
	json_object_set_new(o, "pages", json_integer((json_int_t)v->pages));
	json_object_set_new(o, "threads", json_integer((json_int_t)v->threads));
	json_object_set_new(o, "pages_private", json_integer((json_int_t)v->pages_private));
	json_object_set_new(o, "pages_node_shared", json_integer((json_int_t)v->pages_node_shared));
	json_object_set_new(o, "pages_cross_shared", json_integer((json_int_t)v->pages_cross_shared));
	json_object_set_new(o, "regularity", v->regularity >= 0 ? json_real(v->regularity) : json_null());
	json_object_set_new(o, "dominant_node", json_integer(v->dominant_node));
	json_object_set_new(o, "dominant_share", json_real(v->dominant_share));
	json_object_set_new(o, "smaller_than_l2", json_boolean(v->small));
	if (v->ft_where) {
		ft = json_object();
		json_object_set_new(ft, "where", json_string(v->ft_where));
		json_object_set_new(ft, "thread", v->ft_thread >= 0 ? json_string(a->threads[v->ft_thread].label)
								     : json_null());
		json_object_set_new(ft, "node", json_integer(v->ft_node));
		json_object_set_new(ft, "samples", json_integer((json_int_t)v->ft_top));
		json_object_set_new(ft, "of", json_integer((json_int_t)v->ft_samples));
		/* issue 16: a first touch inside a library (memset) names the program's line that called it in
		 * "where"; the library function and its own instruction here, null otherwise */
		json_object_set_new(ft, "inside", v->ft_inside ? json_string(v->ft_inside) : json_null());
		json_object_set_new(ft, "inside_where", v->ft_inside_where ? json_string(v->ft_inside_where) : json_null());
	}
	json_object_set_new(o, "first_touch", ft);
	for (int k = 0; k < v->n_lines; k++) {
		json_t *l = json_object();
		json_object_set_new(l, "where", json_string(v->lines[k].where));
		json_object_set_new(l, "accesses", json_integer((json_int_t)v->lines[k].acc));
		json_object_set_new(l, "remote", json_integer((json_int_t)v->lines[k].remote));
		json_array_append_new(lines, l);
	}
	json_object_set_new(o, "lines", lines);
	json_object_set_new(o, "diagnosis", json_string(nk__an_diag_name(v->diag)));
	json_object_set_new(o, "explanation", json_string(v->explain));
	json_object_set_new(o, "fix", json_string(nk__an_fix_name(v->fix)));
	json_object_set_new(o, "policy", v->policy ? json_string(v->policy) : json_null());
	if (v->site) {
		json_t *st = json_object(), *users = json_array();
		int ord[NK__AN_TOP_USERS];
		int n = users_sorted(v, ord);
		json_object_set_new(st, "blocks", json_integer((json_int_t)v->site_blocks));
		json_object_set_new(st, "blocks_live", json_integer((json_int_t)v->site_live));
		json_object_set_new(st, "blocks_peak", json_integer((json_int_t)v->site_peak));
		json_object_set_new(st, "bytes_live", json_integer((json_int_t)v->site_bytes_live));
		json_object_set_new(st, "bytes_peak", json_integer((json_int_t)v->site_bytes_peak));
		json_object_set_new(st, "allocated_by", v->alloc_thread >= 0 ? json_string(a->threads[v->alloc_thread].label)
									   : json_null());
		json_object_set_new(st, "allocated_by_blocks", json_integer((json_int_t)v->alloc_thread_blocks));
		for (int k = 0; k < n; k++) {
			json_t *u = json_object();
			json_object_set_new(u, "thread", json_string(a->threads[v->users[ord[k]].thread].label));
			json_object_set_new(u, "accesses", json_integer((json_int_t)v->users[ord[k]].acc));
			json_array_append_new(users, u);
		}
		json_object_set_new(st, "used_by", users);
		/* "blocks": a site of small blocks, one array in allocation order (its size is that array's) */
		json_object_set_new(st, "layout", json_string(v->site_space ? "blocks" : "instance"));
		json_object_set_new(o, "site", st);
	}
	return o;
}

static json_t *json_report(const struct nk__analysis *a)
{
	json_t *r = json_object(), *nodes = json_array(), *vars = json_array(), *threads = json_array(),
	       *tn = json_array(), *sh = json_array(), *phases = json_array(), *warns = json_array();
	json_object_set_new(r, "format", json_string("numakit-report"));
	json_object_set_new(r, "version", json_integer(NK__REPORT_JSON_VERSION));
	json_object_set_new(r, "program", json_string(a->program));
	json_object_set_new(r, "sampler", json_string(a->sampler));
	json_object_set_new(r, "wall_ns", json_integer((json_int_t)a->wall_ns));
	json_t *cov = json_object(), *why = json_array();
	json_object_set_new(cov, "complete", json_boolean(a->covered));
	for (size_t i = 0; i < a->n_coverage_reasons; i++)
		json_array_append_new(why, json_string(a->coverage_reasons[i]));
	json_object_set_new(cov, "reasons", why);
	json_object_set_new(cov, "dropped", json_integer((json_int_t)a->dropped));
	json_object_set_new(cov, "budget_dropped", json_integer((json_int_t)a->budget_dropped));
	json_object_set_new(cov, "processes_incomplete", json_integer((json_int_t)a->procs_incomplete));
	json_object_set_new(r, "coverage", cov);
	json_object_set_new(r, "processes", json_integer(a->n_procs));
	if (a->runs < 2) { /* how the program ended; combined reports give it per run below */
		json_object_set_new(r, "exit_status", a->exit_status >= 0 ? json_integer(a->exit_status) : json_null());
		json_object_set_new(r, "signal", json_integer(a->signal));
	}
	if (a->runs > 1) { /* only in combined reports: a one-run report is as it always was */
		json_t *rl = json_array();
		json_object_set_new(r, "runs", json_integer(a->runs));
		for (int k = 0; k < a->runs; k++) {
			const struct nk__an_run *ri = &a->run_info[k];
			json_t *o = json_object();
			json_object_set_new(o, "command", json_string(ri->command));
			json_object_set_new(o, "profile", ri->source ? json_string(ri->source) : json_null());
			json_object_set_new(o, "wall_ns", json_integer((json_int_t)ri->wall_ns));
			json_object_set_new(o, "exit_status", json_integer(ri->exit_status));
			json_object_set_new(o, "signal", json_integer(ri->signal));
			json_object_set_new(o, "processes", json_integer(ri->processes));
			json_object_set_new(o, "samples", json_integer((json_int_t)ri->samples));
			json_array_append_new(rl, o);
		}
		json_object_set_new(r, "run_list", rl);
	}
	json_object_set_new(r, "samples", json_integer((json_int_t)a->samples));
	json_object_set_new(r, "accesses", json_integer((json_int_t)a->acc));
	json_object_set_new(r, "local", json_integer((json_int_t)a->local));
	json_object_set_new(r, "remote", json_integer((json_int_t)a->remote));
	json_object_set_new(r, "unknown", json_integer((json_int_t)a->unknown));
	json_object_set_new(r, "l2_bytes", json_integer((json_int_t)a->l2_size));
	json_object_set_new(r, "numa_factor", a->numa_factor > 0 ? json_real(a->numa_factor) : json_null());
	json_object_set_new(r, "bandwidth_measured", json_boolean(a->bandwidth_measured));
	json_t *thr = json_object();
	/* "too few samples": the remote share's 95 % interval wider than +-ci_half_width, or fewer clusters
	 * than min_clusters (the fixed min_samples of 20 it replaces is gone) */
	json_object_set_new(thr, "ci_level", json_real(0.95));
	json_object_set_new(thr, "ci_half_width", json_real(NK__AN_CI_HALF));
	json_object_set_new(thr, "min_clusters", json_integer(NK__AN_MIN_CLUSTERS));
	json_object_set_new(thr, "fine_remote", json_real(NK__AN_FINE_REMOTE));
	json_object_set_new(thr, "hotspot_node", json_real(NK__AN_HOTSPOT_NODE));
	json_object_set_new(thr, "shared_pages", json_real(NK__AN_SHARED_PAGES));
	json_object_set_new(thr, "regular", json_real(NK__AN_REGULAR));
	json_object_set_new(thr, "min_numa_factor", json_real(NK__AN_MIN_NUMA_FACTOR));
	json_object_set_new(r, "thresholds", thr);
	for (int n = 0; n < a->n_nodes; n++) {
		json_t *o = json_object();
		json_object_set_new(o, "node", json_integer(a->node_ids[n]));
		json_object_set_new(o, "local", json_integer((json_int_t)a->node_local[n]));
		json_object_set_new(o, "remote", json_integer((json_int_t)a->node_remote[n]));
		json_object_set_new(o, "served", json_integer((json_int_t)a->node_pages_acc[n]));
		json_array_append_new(nodes, o);
	}
	json_object_set_new(r, "nodes", nodes);
	size_t nn = (size_t)a->n_nodes;
	for (size_t i = 0; i < a->n_vars; i++)
		json_array_append_new(vars, var_json(a, &a->vars[i]));
	json_object_set_new(r, "variables", vars);
	for (size_t t = 0; t < a->n_threads; t++) {
		const struct nk__an_thread *th = &a->threads[t];
		json_t *o = json_object(), *row = json_array();
		json_object_set_new(o, "label", json_string(th->label));
		json_object_set_new(o, "pid", json_integer(th->pid));
		json_object_set_new(o, "tid", json_integer(th->tid));
		json_object_set_new(o, "index", json_integer(th->index));
		json_object_set_new(o, "node", json_integer(th->node));
		json_object_set_new(o, "samples", json_integer((json_int_t)th->samples));
		json_object_set_new(o, "accesses", json_integer((json_int_t)th->acc));
		json_object_set_new(o, "remote", json_integer((json_int_t)th->remote));
		json_array_append_new(threads, o);
		json_array_append_new(tn, u64_array(a->thread_node + t * nn, nn));
		for (size_t j = 0; j < a->n_threads; j++)
			json_array_append_new(row, json_real(a->sharing[t * a->n_threads + j]));
		json_array_append_new(sh, row);
	}
	json_object_set_new(r, "threads", threads);
	json_object_set_new(r, "thread_node", tn);
	json_object_set_new(r, "sharing", sh);
	json_t *pc = json_object();
	json_object_set_new(pc, "private", json_integer((json_int_t)a->pages_private));
	json_object_set_new(pc, "node_shared", json_integer((json_int_t)a->pages_node_shared));
	json_object_set_new(pc, "cross_shared", json_integer((json_int_t)a->pages_cross_shared));
	json_object_set_new(r, "page_classes", pc);
	for (size_t i = 0; i < a->n_phases; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(a->phases[i].name));
		json_object_set_new(o, "samples", json_integer((json_int_t)a->phases[i].samples));
		json_object_set_new(o, "accesses", json_integer((json_int_t)a->phases[i].acc));
		json_object_set_new(o, "local", json_integer((json_int_t)a->phases[i].local));
		json_object_set_new(o, "remote", json_integer((json_int_t)a->phases[i].remote));
		json_t *pv = json_array();
		for (size_t v = 0; v < a->phases[i].n_vars; v++)
			json_array_append_new(pv, var_json(a, &a->phases[i].vars[v]));
		json_object_set_new(o, "variables", pv);
		json_array_append_new(phases, o);
	}
	json_object_set_new(r, "phases", phases);
	for (size_t i = 0; i < a->n_warnings; i++)
		json_array_append_new(warns, json_string(a->warnings[i]));
	json_object_set_new(r, "warnings", warns);
	return r;
}

/* ---------------------------------------------------------------- HTML */

/* As hesc, `text` in backquotes becoming <code>text</code>. */
static void hesc_code(struct nk__strbuf *b, const char *s)
{
	int open = 0;
	for (; *s; s++) {
		if (*s == '`') {
			nk__strbuf_printf(b, open ? "</code>" : "<code>");
			open = !open;
		} else {
			char c[2] = { *s, 0 };
			nk__html_esc(b, c);
		}
	}
	if (open)
		nk__strbuf_printf(b, "</code>");
}

static const char *diag_color(int d)
{
	switch (d) {
	case NK__DIAG_FINE:
		return "#2e7d32";
	case NK__DIAG_HOTSPOT:
		return "#c62828";
	case NK__DIAG_PARTITION:
		return "#ef6c00";
	case NK__DIAG_SHARING:
		return "#6a1b9a";
	default:
		return "#757575";
	}
}

/* A heat map of @p v (nr x nc); cells show @p v itself when @p raw, else % of the largest. */
static void svg_heatmap(struct nk__strbuf *b, const char *title, const char *const *rows, size_t nr, const char *const *cols,
			size_t nc, const double *v, int diag_blank, int raw)
{
	const int cell = nc > 24 ? 14 : nc <= 8 ? 44 : 34, lw = 130, th = 24;
	double mx = 0;
	for (size_t i = 0; i < nr * nc; i++)
		if (v[i] > mx && !(diag_blank && i / nc == i % nc))
			mx = v[i];
	int w = lw + (int)nc * cell + 10, h = th + 18 + (int)nr * cell + 4;
	nk__strbuf_printf(b, "<figure><figcaption>");
	nk__html_esc(b, title);
	nk__strbuf_printf(b, "</figcaption><svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">", w, h, w, h);
	for (size_t j = 0; j < nc; j++)
		if (cell >= 30 || j % 4 == 0) {
			nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">", lw + (int)j * cell + cell / 2,
				th + 10);
			nk__html_esc(b, cols[j]);
			nk__strbuf_printf(b, "</text>");
		}
	for (size_t i = 0; i < nr; i++) {
		int y = th + 18 + (int)i * cell;
		nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">", lw - 6, y + cell / 2 + 4);
		nk__html_esc(b, rows[i]);
		nk__strbuf_printf(b, "</text>");
		for (size_t j = 0; j < nc; j++) {
			double f = mx > 0 ? v[i * nc + j] / mx : 0;
			nk__strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"", lw + (int)j * cell, y, cell - 1,
				cell - 1);
			if (diag_blank && i == j)
				nk__strbuf_printf(b, "#ddd");
			else
				nk__html_heat(b, f, 1);
			nk__strbuf_printf(b, "\"><title>%.4g</title></rect>", v[i * nc + j]);
			if (cell >= 30 && !(diag_blank && i == j))
				nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"cv\" text-anchor=\"middle\">%.0f</text>",
					lw + (int)j * cell + cell / 2, y + cell / 2 + 4, raw ? v[i * nc + j] : 100 * f);
		}
	}
	nk__strbuf_printf(b, "</svg></figure>\n");
}

#define HTML_VARS 20

static void html_report(const struct nk__analysis *a, struct nk__strbuf *b)
{
	char s1[64], s2[64];
	uint64_t known = a->local + a->remote;
	size_t nv = a->n_vars < HTML_VARS ? a->n_vars : HTML_VARS;
	nk__strbuf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>numakit report: ");
	nk__html_esc(b, a->program);
	nk__strbuf_printf(b, "</title>\n<style>\n"
		   "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1120px;"
		   "color:#222;padding:0 16px}\n"
		   "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;"
		   "padding-bottom:4px}\n"
		   ".cards{display:flex;gap:12px;flex-wrap:wrap;margin:14px 0}.card{background:#f5f7fa;border-radius:8px;"
		   "padding:10px 16px;min-width:120px}.card b{display:block;font-size:20px}.card span{color:#666;"
		   "font-size:12px}\n"
		   "table{border-collapse:collapse;width:100%%}td,th{padding:5px 8px;border-bottom:1px solid #eee;"
		   "text-align:left;vertical-align:top}th{background:#fafafa;font-weight:600}td.n,th.n{text-align:right;"
		   "font-variant-numeric:tabular-nums}\n"
		   ".tag{color:#fff;border-radius:4px;padding:1px 6px;font-size:12px;white-space:nowrap}\n"
		   "code{background:#f1f1f1;padding:0 3px;border-radius:3px}.ax{font-size:11px;fill:#444}"
		   ".cv{font-size:10px;fill:#222}\n"
		   "figure{margin:10px 0;display:inline-block;vertical-align:top;margin-right:24px}figcaption{font-weight:600;"
		   "margin-bottom:4px}.legend .sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;"
		   "vertical-align:middle}.warn{background:#fff8e1;border-left:4px solid #f9a825;padding:6px 10px;"
		   "margin:4px 0}.muted{color:#777}\n"
		   "</style></head><body>\n<h1>numakit report: ");
	nk__html_esc(b, a->program);
	nk__strbuf_printf(b, "</h1>");
	if (!a->covered) {
		nk__strbuf_printf(b, "<div class=\"warn\"><b>Incomplete profile:</b> the samples do not cover the whole run; every "
			   "figure may describe only part of it (numakit advise and whatif refuse it without --force).<ul>");
		for (size_t i = 0; i < a->n_coverage_reasons; i++) {
			nk__strbuf_printf(b, "<li>");
			nk__html_esc(b, a->coverage_reasons[i]);
			nk__strbuf_printf(b, "</li>");
		}
		nk__strbuf_printf(b, "</ul></div>\n");
	}
	nk__strbuf_printf(b, "<div class=\"muted\">sampler ");
	nk__html_esc(b, a->sampler);
	nk__strbuf_printf(b, ", %d process%s, %zu thread%s, %d node%s", a->n_procs, a->n_procs == 1 ? "" : "es", a->n_threads,
		a->n_threads == 1 ? "" : "s", a->n_nodes, a->n_nodes == 1 ? "" : "s");
	if (a->numa_factor > 0)
		nk__strbuf_printf(b, ", NUMA factor up to %.2f", a->numa_factor);
	if (a->l2_size)
		nk__strbuf_printf(b, ", L2 %s", nk__rep_size(a->l2_size, s1, sizeof(s1)));
	if (a->runs > 1)
		nk__strbuf_printf(b, ", %d runs combined (accesses: means per run)", a->runs);
	nk__strbuf_printf(b, "</div>\n<div class=\"cards\">");
	nk__strbuf_printf(b, "<div class=\"card\"><b>%llu</b><span>samples</span></div>", (unsigned long long)a->samples);
	nk__strbuf_printf(b, "<div class=\"card\"><b>%.1f%%</b><span>remote accesses</span></div>", nk__rep_pct(a->remote, known));
	if (a->wall_ns)
		nk__strbuf_printf(b, "<div class=\"card\"><b>%.2f s</b><span>duration</span></div>", (double)a->wall_ns / 1e9);
	nk__strbuf_printf(b, "<div class=\"card\"><b>%zu</b><span>variables</span></div>", a->n_vars);
	int bad = 0;
	for (size_t i = 0; i < a->n_vars; i++)
		bad += a->vars[i].diag >= NK__DIAG_HOTSPOT;
	nk__strbuf_printf(b, "<div class=\"card\"><b>%d</b><span>variables with a problem</span></div></div>\n", bad);

	for (size_t i = 0; i < a->n_warnings; i++) {
		nk__strbuf_printf(b, "<div class=\"warn\">");
		nk__html_esc(b, a->warnings[i]);
		nk__strbuf_printf(b, "</div>\n");
	}

	/* diagnosis table */
	nk__strbuf_printf(b, "<h2>Diagnosis</h2><table><tr><th>variable</th><th>diagnosis</th><th>why</th><th>suggested fix</th>"
		   "</tr>\n");
	for (size_t i = 0; i < nv; i++) {
		const struct nk__an_var *v = &a->vars[i];
		char fx[160];
		nk__strbuf_printf(b, "<tr><td><b>");
		nk__html_esc(b, v->name);
		nk__strbuf_printf(b, "</b><br><span class=\"muted\">%s%s%s</span></td><td><span class=\"tag\" style=\"background:%s\">%s"
			   "</span></td><td>",
			nk__an_kind_name(v->kind), v->size ? ", " : "", v->size ? nk__rep_size(v->size, s1, sizeof(s1)) : "",
			diag_color(v->diag), nk__an_diag_name(v->diag));
		nk__html_esc(b, v->explain);
		nk__strbuf_printf(b, "</td><td>");
		hesc_code(b, fix_text(a, v, fx, sizeof(fx)));
		nk__strbuf_printf(b, "</td></tr>\n");
	}
	nk__strbuf_printf(b, "</table>\n");

	/* stacked bars: per variable, per cpu node, local vs remote */
	if (nv && a->n_nodes) {
		uint64_t mx = 0;
		for (size_t i = 0; i < nv; i++)
			for (int n = 0; n < a->n_nodes; n++)
				if (a->vars[i].acc_cpu[n] > mx)
					mx = a->vars[i].acc_cpu[n];
		const int lw = 250, bw = 620, bh = 12, gap = 2;
		int rowh = a->n_nodes * (bh + gap) + 10;
		int h = 30 + (int)nv * rowh;
		nk__strbuf_printf(b, "<h2>Accesses per variable and node</h2><div class=\"legend\"><span class=\"sw\" "
			   "style=\"background:#43a047\"></span>local<span class=\"sw\" "
			   "style=\"background:#e53935\"></span>remote &nbsp; <span class=\"muted\">one bar per node of "
			   "the accessing cpus (n0 = node 0)</span></div>\n<svg width=\"%d\" height=\"%d\" role=\"img\">",
			lw + bw + 120, h);
		for (size_t i = 0; i < nv; i++) {
			const struct nk__an_var *v = &a->vars[i];
			int y0 = 20 + (int)i * rowh;
			nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"12\">", lw - 8,
				y0 + (a->n_nodes * (bh + gap)) / 2 + 4);
			char nm[48];
			nk__html_esc(b, nk__fit(v->name, 36, nm, sizeof(nm)));
			nk__strbuf_printf(b, "</text>");
			for (int n = 0; n < a->n_nodes; n++) {
				int y = y0 + n * (bh + gap);
				uint64_t tot = v->acc_cpu[n], rem = v->remote_cpu[n];
				/* local here: not remote; unknown accesses have no cpu node split, left out */
				double wl = mx ? (double)bw * (double)(tot - rem) / (double)mx : 0;
				double wr = mx ? (double)bw * (double)rem / (double)mx : 0;
				nk__strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#43a047\"><title>node %d "
					   "local %llu</title></rect>",
					lw, y, wl, bh, a->node_ids[n], (unsigned long long)(tot - rem));
				nk__strbuf_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#e53935\"><title>node "
					   "%d remote %llu</title></rect>",
					lw + wl, y, wr, bh, a->node_ids[n], (unsigned long long)rem);
				nk__strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"ax\">n%d %s</text>", lw + wl + wr + 4, y + bh - 2,
					a->node_ids[n], tot ? (snprintf(s2, sizeof(s2), "%.0f%% remote", nk__rep_pct(rem, tot)), s2) : "");
			}
		}
		nk__strbuf_printf(b, "</svg>\n");
	}

	/* top lines */
	nk__strbuf_printf(b, "<h2>Where the remote accesses are made</h2><table><tr><th>variable</th><th>source line</th>"
		   "<th class=\"n\">remote</th><th class=\"n\">accesses</th><th>first touch</th></tr>\n");
	for (size_t i = 0; i < nv && i < 10; i++) {
		const struct nk__an_var *v = &a->vars[i];
		for (int k = 0; k < (v->n_lines ? v->n_lines : 1) && k < 3; k++) {
			nk__strbuf_printf(b, "<tr><td>");
			if (!k)
				nk__html_esc(b, v->name);
			nk__strbuf_printf(b, "</td><td><code>");
			nk__html_esc(b, v->n_lines ? v->lines[k].where : "-");
			nk__strbuf_printf(b, "</code></td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td>",
				(unsigned long long)(v->n_lines ? v->lines[k].remote : 0),
				(unsigned long long)(v->n_lines ? v->lines[k].acc : 0));
			if (!k && v->ft_where) {
				nk__html_esc(b, v->ft_thread >= 0 ? a->threads[v->ft_thread].label : "?");
				nk__strbuf_printf(b, " at <code>");
				nk__html_esc(b, v->ft_where);
				nk__strbuf_printf(b, "</code>");
				if (v->ft_inside) {
					nk__strbuf_printf(b, ", inside <code>");
					nk__html_esc(b, v->ft_inside);
					nk__strbuf_printf(b, "</code>");
				}
				nk__strbuf_printf(b, " (node %d)", v->ft_node);
			}
			nk__strbuf_printf(b, "</td></tr>\n");
		}
	}
	nk__strbuf_printf(b, "</table>\n");

	/* matrices */
	if (a->n_threads && a->n_nodes) {
		size_t nt = a->n_threads < 64 ? a->n_threads : 64, nn = (size_t)a->n_nodes;
		const char **rows = calloc(nt, sizeof(*rows));
		char (*cols)[16] = calloc(nt > nn ? nt : nn, sizeof(*cols));
		const char **colp = calloc(nt > nn ? nt : nn, sizeof(*colp));
		double *m = calloc(nt * (nt > nn ? nt : nn), sizeof(double));
		if (!rows || !cols || !colp || !m) {
			b->oom = 1;
		} else {
			nk__strbuf_printf(b, "<h2>Threads and nodes</h2>\n");
			for (size_t t = 0; t < nt; t++) {
				rows[t] = a->threads[t].label;
				uint64_t tot = 0;
				for (size_t n = 0; n < nn; n++)
					tot += a->thread_node[t * nn + n];
				for (size_t n = 0; n < nn; n++)
					m[t * nn + n] = nk__rep_pct(a->thread_node[t * nn + n], tot);
			}
			for (size_t n = 0; n < nn; n++) {
				snprintf(cols[n], sizeof(cols[n]), "node%d", a->node_ids[n]);
				colp[n] = cols[n];
			}
			svg_heatmap(b, "thread x page node (% of the thread's accesses)", rows, nt, colp, nn, m, 0, 1);
			if (nt >= 2) {
				for (size_t j = 0; j < nt; j++) {
					snprintf(cols[j], sizeof(cols[j]), "%zu", j);
					colp[j] = cols[j];
					for (size_t i = 0; i < nt; i++)
						m[i * nt + j] = a->sharing[i * a->n_threads + j];
				}
				svg_heatmap(b, "thread x thread sharing (% of the largest pair)", rows, nt, colp, nt, m, 1, 0);
			}
		}
		free(rows);
		free(cols);
		free(colp);
		free(m);
	}

	/* page classes and variables table */
	uint64_t pg = a->pages_private + a->pages_node_shared + a->pages_cross_shared;
	nk__strbuf_printf(b, "<h2>Variables</h2><p>%llu pages sampled: %.1f%% private (one thread), %.1f%% shared within a "
		   "node, %.1f%% shared across nodes.</p>\n",
		(unsigned long long)pg, nk__rep_pct(a->pages_private, pg), nk__rep_pct(a->pages_node_shared, pg),
		nk__rep_pct(a->pages_cross_shared, pg));
	nk__strbuf_printf(b, "<table><tr><th>variable</th><th>kind</th><th class=\"n\">size</th><th class=\"n\">samples</th>"
		   "<th class=\"n\">remote</th><th class=\"n\">95%% interval</th><th class=\"n\">pages</th>"
		   "<th class=\"n\">private</th>"
		   "<th class=\"n\">node-shared</th><th class=\"n\">cross-shared</th><th class=\"n\">regularity</th></tr>\n");
	for (size_t i = 0; i < a->n_vars && i < 100; i++) {
		const struct nk__an_var *v = &a->vars[i];
		nk__strbuf_printf(b, "<tr><td>");
		nk__html_esc(b, v->name);
		if (v->type) {
			nk__strbuf_printf(b, " <span class=\"muted\">");
			nk__html_esc(b, v->type);
			nk__strbuf_printf(b, "</span>");
		}
		char ci[32];
		nk__strbuf_printf(b, "</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td class=\"n\">%.1f%%</td>"
			   "<td class=\"n\">%s</td>"
			   "<td class=\"n\">%llu</td><td class=\"n\">%.0f%%</td><td class=\"n\">%.0f%%</td>"
			   "<td class=\"n\">%.0f%%</td><td class=\"n\">",
			nk__an_kind_name(v->kind), v->size ? nk__rep_size(v->size, s1, sizeof(s1)) : "-",
			(unsigned long long)v->samples, nk__rep_pct(v->remote, v->local + v->remote), ci_text(v, ci, sizeof ci),
			(unsigned long long)v->pages,
			nk__rep_pct(v->pages_private, v->pages), nk__rep_pct(v->pages_node_shared, v->pages),
			nk__rep_pct(v->pages_cross_shared, v->pages));
		if (v->regularity >= 0)
			nk__strbuf_printf(b, "%.2f", v->regularity);
		else
			nk__strbuf_printf(b, "-");
		nk__strbuf_printf(b, "</td></tr>\n");
	}
	nk__strbuf_printf(b, "</table>\n");
	if (a->n_phases) {
		nk__strbuf_printf(b, "<h2>Phases</h2><table><tr><th>phase</th><th class=\"n\">samples</th><th class=\"n\">remote</th>"
			   "<th>variables with most remote accesses</th></tr>\n");
		for (size_t i = 0; i < a->n_phases; i++) {
			const struct nk__an_phase *ph = &a->phases[i];
			nk__strbuf_printf(b, "<tr><td>");
			nk__html_esc(b, ph->name);
			nk__strbuf_printf(b, "</td><td class=\"n\">%llu</td><td class=\"n\">%.1f%%</td><td>",
				(unsigned long long)ph->samples, nk__rep_pct(ph->remote, ph->local + ph->remote));
			size_t shown[3] = { SIZE_MAX, SIZE_MAX, SIZE_MAX };
			for (int k = 0; k < 3; k++) {
				size_t best = SIZE_MAX;
				for (size_t v = 0; v < a->n_vars; v++)
					if (v != shown[0] && v != shown[1] && ph->var_remote[v] &&
					    (best == SIZE_MAX || ph->var_remote[v] > ph->var_remote[best]))
						best = v;
				if (best == SIZE_MAX)
					break;
				shown[k] = best;
				if (k)
					nk__strbuf_printf(b, ", ");
				nk__html_esc(b, a->vars[best].name);
				nk__strbuf_printf(b, " <span class=\"muted\">%llu</span>", (unsigned long long)ph->var_remote[best]);
			}
			nk__strbuf_printf(b, "</td></tr>\n");
		}
		nk__strbuf_printf(b, "</table>\n");
		/* per phase: its variables diagnosed on the phase's samples alone */
		for (size_t i = 0; i < a->n_phases; i++) {
			const struct nk__an_phase *ph = &a->phases[i];
			if (!ph->n_vars)
				continue;
			nk__strbuf_printf(b, "<h3>Phase ");
			nk__html_esc(b, ph->name);
			nk__strbuf_printf(b, "</h3><table><tr><th>variable</th><th class=\"n\">accesses</th><th class=\"n\">remote</th>"
				   "<th class=\"n\">95%% interval</th><th>diagnosis</th><th>suggested fix</th></tr>\n");
			for (size_t k = 0; k < ph->n_vars && k < HTML_VARS; k++) {
				const struct nk__an_var *v = &ph->vars[k];
				char fx[160], ci[32];
				nk__strbuf_printf(b, "<tr><td>");
				nk__html_esc(b, v->name);
				nk__strbuf_printf(b, "</td><td class=\"n\">%llu</td><td class=\"n\">%.1f%%</td><td class=\"n\">%s</td>"
					   "<td><span class=\"tag\" style=\"background:%s\" title=\"",
					(unsigned long long)v->acc, nk__rep_pct(v->remote, v->local + v->remote),
					ci_text(v, ci, sizeof ci), diag_color(v->diag));
				nk__html_esc(b, v->explain);
				nk__strbuf_printf(b, "\">%s</span></td><td>", nk__an_diag_name(v->diag));
				hesc_code(b, fix_text(a, v, fx, sizeof(fx)));
				nk__strbuf_printf(b, "</td></tr>\n");
			}
			nk__strbuf_printf(b, "</table>\n");
		}
	}
	nk__strbuf_printf(b, "<p class=\"muted\">Generated by numakit report (format version %d). Diagnosis rules: "
		   "docs/report.md.</p>\n</body></html>\n",
		NK__REPORT_JSON_VERSION);
}

/* ---------------------------------------------------------------- public */

static void text_form(const void *a, struct nk__strbuf *b)
{
	text_report(a, b);
}

static void html_form(const void *a, struct nk__strbuf *b)
{
	html_report(a, b);
}

static json_t *json_form(const void *a)
{
	return json_report(a);
}

int nk__report_analysis(const struct nk__analysis *a, int format, char **out, nk_error *err)
{
	static const struct nk__rep_forms forms = { text_form, html_form, json_form };

	if (!a || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_report: NULL argument");
	return nk__rep_render(&forms, a, format, "profile report", out, err);
}

int nk_profile_report(const nk_profile *p, int format, char **out, nk_error *err)
{
	if (!p || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_report: NULL argument");
	if (p->job)
		return nk__job_report(p->job, format, out, err);
	return nk__report_analysis(p->a, format, out, err);
}

int nk__sharing_analysis(const struct nk__analysis *a, char **out, nk_error *err)
{
	if (!a || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_sharing: NULL argument");
	/* The process with the most samples; its threads by index (the thread numbers of `numakit run --pin`). */
	size_t best = SIZE_MAX;
	uint64_t bs = 0;
	for (size_t t = 0; t < a->n_threads; t++) {
		uint64_t s = 0;
		for (size_t u = 0; u < a->n_threads; u++)
			if (a->threads[u].pid == a->threads[t].pid)
				s += a->threads[u].samples;
		if (s > bs) {
			bs = s;
			best = t;
		}
	}
	int n = 0, sampled = 0;
	for (size_t t = 0; best != SIZE_MAX && t < a->n_threads; t++)
		if (a->threads[t].pid == a->threads[best].pid && a->threads[t].index >= 0) {
			if (a->threads[t].index + 1 > n)
				n = a->threads[t].index + 1;
			sampled += a->threads[t].samples > 0;
		}
	if (sampled < 2)
		return nk__error(err, NK_ENODATA, "sharing matrix: fewer than two threads sampled");
	size_t *row = malloc((size_t)n * sizeof(size_t));
	if (!row)
		return nk__error(err, NK_ENOMEM, "sharing matrix: out of memory");
	for (int i = 0; i < n; i++)
		row[i] = SIZE_MAX;
	for (size_t t = 0; t < a->n_threads; t++)
		if (a->threads[t].pid == a->threads[best].pid && a->threads[t].index >= 0)
			row[a->threads[t].index] = t;
	struct nk__strbuf b = { 0 };
	nk__strbuf_printf(&b, "# numakit report: thread x thread sharing of %s (pid %u), %d threads by thread number\n",
		a->program, a->threads[best].pid, n);
	nk__strbuf_printf(&b, "# entry: sampled accesses of both threads to common pages (sum over pages of the smaller)\n");
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			double v = row[i] != SIZE_MAX && row[j] != SIZE_MAX && i != j
					   ? a->sharing[row[i] * a->n_threads + row[j]]
					   : 0;
			nk__strbuf_printf(&b, "%s%.17g", j ? " " : "", v);
		}
		nk__strbuf_printf(&b, "\n");
	}
	free(row);
	return bfinish(&b, out, err);
}

int nk_profile_sharing(const nk_profile *p, char **out, nk_error *err)
{
	if (!p || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_sharing: NULL argument");
	if (p->job)
		return nk__error(err, NK_EINVAL, "a job's profile has no one sharing matrix (threads share within a "
				 "process): give one rank's profile, e.g. %s", p->job->n_ranks ? p->job->ranks[0].path : "RANK.nkp");
	return nk__sharing_analysis(p->a, out, err);
}

int nk__coverage_text(const struct nk__analysis *a, char **why)
{
	size_t n = 1;
	for (size_t i = 0; i < a->n_coverage_reasons; i++)
		n += strlen(a->coverage_reasons[i]) + 2;
	char *t = malloc(n);
	if (!t)
		return NK_ENOMEM;
	t[0] = 0;
	for (size_t i = 0; i < a->n_coverage_reasons; i++) {
		if (i)
			strcat(t, "; ");
		strcat(t, a->coverage_reasons[i]);
	}
	*why = t;
	return 0;
}

int nk_profile_coverage(const nk_profile *p, int *complete, char **why, nk_error *err)
{
	char *t = NULL;
	if (p && p->job && complete) {
		if (why && !p->job->covered && nk__job_coverage_text(p->job, &t))
			return nk__error(err, NK_ENOMEM, "out of memory");
		*complete = p->job->covered;
		if (why)
			*why = t;
		return 0;
	}
	if (!p || !p->a || !complete)
		return nk__error(err, NK_EINVAL, "nk_profile_coverage: NULL argument");
	if (why && !p->a->covered && nk__coverage_text(p->a, &t))
		return nk__error(err, NK_ENOMEM, "out of memory");
	*complete = p->a->covered;
	if (why)
		*why = t;
	return 0;
}
