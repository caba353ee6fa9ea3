/* SPDX-License-Identifier: BSD-3-Clause
 * The report of a job (job.h): text, JSON ("numakit-job-report" version 1) and HTML (a rank x node heat map
 * per host).  Formats documented in docs/report.md, "Jobs"; it only formats struct nk__job.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/job.h"
#include "util/error.h"
#include "util/list.h"
#include "profile/report_fmt.h"
#include "util/strbuf.h"

#define TEXT_VARS 15     /* variables of the job in the text report */
#define TEXT_RANKS 32    /* ranks whose top variables the text lists (and every rank that differs) */
#define TEXT_PER_RANK 8  /* ranks listed one by one in a variable's line; above, min / median / max */

static const char *launcher_key(int l)
{
	static const char *const keys[] = { "none", "openmpi", "pmi", "pmix", "slurm" };
	return l >= 0 && l <= 4 ? keys[l] : "none";
}

static const char *host_text(const char *h)
{
	return h && *h ? h : "unknown host";
}

/* "34.2% [31,37]", or "-" without a known share. */
static const char *share_text(const struct nk__job_share *s, char *buf, size_t cap)
{
	if (!s->known)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.1f%% [%.0f,%.0f]", 100 * s->r, 100 * s->lo, 100 * s->hi);
	return buf;
}

/* The ranks of host @p h as a list ("0-3,8"); malloc'ed. */
static char *host_ranks(const struct nk__job *j, const struct nk__job_host *h)
{
	int *v = malloc((h->n_ranks ? h->n_ranks : 1) * sizeof *v);
	char *s;
	if (!v)
		return NULL;
	for (size_t i = 0; i < h->n_ranks; i++)
		v[i] = j->ranks[h->ranks[i]].rank;
	s = nk__format_list_alloc(v, h->n_ranks);
	free(v);
	return s;
}

static char *id_list(const int *ids, int n)
{
	return nk__format_list_alloc(ids, n > 0 ? (size_t)n : 0);
}

/* The diagnoses of a variable over its ranks, most common first: "hot-spot in 3, fine in 1". */
static void diag_counts(struct nk__strbuf *b, const struct nk__job_var *v)
{
	int left[5];
	memcpy(left, v->diag_count, sizeof left);
	for (int first = 1;; first = 0) {
		int best = -1;
		for (int e = 0; e < 5; e++)
			if (left[e] > 0 && (best < 0 || left[e] > left[best]))
				best = e;
		if (best < 0)
			break;
		nk__strbuf_printf(b, "%s%s in %d", first ? "" : ", ", nk__an_diag_name(best), left[best]);
		left[best] = 0;
	}
}

/* ---------------------------------------------------------------- MPI traffic */

#define TEXT_PAIRS 10        /* heaviest rank pairs in the text report */
#define TEXT_MATRIX_RANKS 16 /* the rank x rank matrix in the text report up to this many ranks */

/* A pair of ranks, both directions. */
struct upair {
	int a, b; /* a < b */
	uint64_t bytes, messages;
};

static int cmp_upair_key(const void *x, const void *y)
{
	const struct upair *p = x, *q = y;
	return p->a != q->a ? (p->a > q->a) - (p->a < q->a) : (p->b > q->b) - (p->b < q->b);
}

static int cmp_upair_bytes(const void *x, const void *y)
{
	const struct upair *p = x, *q = y;
	if (p->bytes != q->bytes)
		return p->bytes < q->bytes ? 1 : -1;
	return cmp_upair_key(x, y);
}

/* The job's rank pairs with traffic, both directions summed, heaviest first (malloc'ed, *n of them). */
static struct upair *upairs(const struct nk__job *j, size_t *n)
{
	struct upair *u = malloc((j->n_pairs ? j->n_pairs : 1) * sizeof *u);
	size_t k = 0;
	if (!u)
		return NULL;
	for (size_t i = 0; i < j->n_pairs; i++) {
		const struct nk__job_pair *p = &j->pairs[i];
		u[i] = (struct upair){ p->from < p->to ? p->from : p->to, p->from < p->to ? p->to : p->from,
				       p->p2p_bytes + p->coll_bytes, p->p2p_messages + p->coll_messages };
	}
	qsort(u, j->n_pairs, sizeof *u, cmp_upair_key);
	for (size_t i = 0; i < j->n_pairs; i++) {
		if (k && u[k - 1].a == u[i].a && u[k - 1].b == u[i].b) {
			u[k - 1].bytes += u[i].bytes;
			u[k - 1].messages += u[i].messages;
		} else {
			u[k++] = u[i];
		}
	}
	qsort(u, k, sizeof *u, cmp_upair_bytes);
	*n = k;
	return u;
}

/* The job rank of MPI rank @p rank, NULL when absent. */
static const struct nk__job_rank *rank_of(const struct nk__job *j, int rank)
{
	for (size_t i = 0; i < j->n_ranks; i++)
		if (j->ranks[i].rank == rank)
			return &j->ranks[i];
	return NULL;
}

/* Bytes @p from sent @p to (both kinds), 0 none. */
static uint64_t sent(const struct nk__job *j, int from, int to)
{
	size_t lo = 0, hi = j->n_pairs;
	while (lo < hi) { /* pairs are sorted by from, then to */
		size_t mid = lo + (hi - lo) / 2;
		const struct nk__job_pair *p = &j->pairs[mid];
		if (p->from < from || (p->from == from && p->to < to))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < j->n_pairs && j->pairs[lo].from == from && j->pairs[lo].to == to
		       ? j->pairs[lo].p2p_bytes + j->pairs[lo].coll_bytes
		       : 0;
}

static const char *where_pair(const struct nk__job *j, int a, int b)
{
	const struct nk__job_rank *ra = rank_of(j, a), *rb = rank_of(j, b);
	if (!ra || !rb || !ra->host[0] || !rb->host[0])
		return "hosts unknown";
	return strcmp(ra->host, rb->host) ? "different hosts" : "same host";
}

static void bullet_indent(struct nk__strbuf *b, int indent, const char *text);

static void text_traffic(const struct nk__job *j, struct nk__strbuf *b)
{
	char s1[64];
	nk__strbuf_printf(b, "\n== MPI traffic (bytes sent, means per run) ==\n");
	if (!j->comm_ranks) {
		bullet_indent(b, 2, "not recorded: the program does not link an MPI numakit has wrappers for (Open MPI, "
				    "MPICH's ABI), or the ranks ran with --no-mpi-traffic");
		return;
	}
	uint64_t p2p = 0;
	for (size_t i = 0; i < j->n_pairs; i++)
		p2p += j->pairs[i].p2p_bytes;
	struct nk__strbuf t = { 0 };
	nk__strbuf_printf(&t, "%zu of %zu ranks recorded it: %s in all, %.0f%% point-to-point, the rest collectives "
			      "(each rank's share of them by the MPI standard's definition)",
			  j->comm_ranks, j->n_ranks, nk__rep_size(j->comm_bytes, s1, sizeof s1),
			  j->comm_bytes ? 100.0 * (double)p2p / (double)j->comm_bytes : 0.0);
	bullet_indent(b, 0, t.s ? t.s : "?");
	free(t.s);
	size_t nu = 0;
	struct upair *u = upairs(j, &nu);
	if (!u)
		return;
	nk__strbuf_printf(b, "heaviest pairs, both directions:\n");
	for (size_t i = 0; i < nu && i < TEXT_PAIRS; i++)
		nk__strbuf_printf(b, "  rank %d <-> rank %d  %10s  %llu messages, %s\n", u[i].a, u[i].b,
				  nk__rep_size(u[i].bytes, s1, sizeof s1), (unsigned long long)u[i].messages,
				  where_pair(j, u[i].a, u[i].b));
	if (nu > TEXT_PAIRS)
		nk__strbuf_printf(b, "  ... %zu more pairs in --json\n", nu - TEXT_PAIRS);
	free(u);
	if (j->n_ranks > TEXT_MATRIX_RANKS)
		return;
	nk__strbuf_printf(b, "%-10s", "from \\ to");
	for (size_t c = 0; c < j->n_ranks; c++)
		nk__strbuf_printf(b, " %9d", j->ranks[c].rank);
	nk__strbuf_printf(b, "\n");
	for (size_t r = 0; r < j->n_ranks; r++) {
		nk__strbuf_printf(b, "%-10d", j->ranks[r].rank);
		for (size_t c = 0; c < j->n_ranks; c++) {
			uint64_t x = sent(j, j->ranks[r].rank, j->ranks[c].rank);
			nk__strbuf_printf(b, " %9s", x ? nk__rep_size(x, s1, sizeof s1) : "-");
		}
		nk__strbuf_printf(b, "\n");
	}
}

static json_t *json_traffic(const struct nk__job *j)
{
	json_t *o = json_object(), *pairs = json_array();
	json_object_set_new(o, "ranks_recorded", json_integer((json_int_t)j->comm_ranks));
	json_object_set_new(o, "bytes", json_integer((json_int_t)j->comm_bytes));
	for (size_t i = 0; i < j->n_pairs; i++) {
		const struct nk__job_pair *p = &j->pairs[i];
		json_t *po = json_object();
		json_object_set_new(po, "from", json_integer(p->from));
		json_object_set_new(po, "to", json_integer(p->to));
		json_object_set_new(po, "p2p_messages", json_integer((json_int_t)p->p2p_messages));
		json_object_set_new(po, "p2p_bytes", json_integer((json_int_t)p->p2p_bytes));
		json_object_set_new(po, "collective_messages", json_integer((json_int_t)p->coll_messages));
		json_object_set_new(po, "collective_bytes", json_integer((json_int_t)p->coll_bytes));
		json_array_append_new(pairs, po);
	}
	json_object_set_new(o, "pairs", pairs);
	return o;
}

/* The rank x rank traffic heat map: each cell the share of the heaviest cell. */
static void html_traffic(struct nk__strbuf *b, const struct nk__job *j)
{
	char s1[64];
	if (!j->comm_ranks) {
		nk__strbuf_printf(b, "<p>Not recorded: the program does not link an MPI numakit has wrappers for (Open MPI, "
				     "MPICH's ABI), or the ranks ran with <code>--no-mpi-traffic</code>.</p>\n");
		return;
	}
	nk__strbuf_printf(b, "<p>%zu of %zu ranks recorded it: %s sent in all (means per run).</p>\n", j->comm_ranks,
			  j->n_ranks, nk__rep_size(j->comm_bytes, s1, sizeof s1));
	size_t nr = j->n_ranks > 256 ? 256 : j->n_ranks;
	uint64_t max = 0;
	for (size_t i = 0; i < j->n_pairs; i++) {
		uint64_t x = j->pairs[i].p2p_bytes + j->pairs[i].coll_bytes;
		max = x > max ? x : max;
	}
	int cell = nr > 64 ? 4 : nr > 24 ? 12 : 26, lw = 70, th = 26;
	int w = lw + (int)nr * cell + 10, ht = th + (int)nr * cell + 6;
	nk__strbuf_printf(b, "<figure><figcaption>bytes sent, row rank to column rank (darker: more)%s</figcaption>"
			     "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">",
			  nr < j->n_ranks ? "; the first 256 ranks" : "", w, ht, w, ht);
	for (size_t r = 0; r < nr; r++) {
		int y = th + (int)r * cell;
		if (cell >= 12)
			nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">rank %d</text>", lw - 6,
					  y + cell / 2 + 4, j->ranks[r].rank);
		for (size_t c = 0; c < nr; c++) {
			uint64_t x = sent(j, j->ranks[r].rank, j->ranks[c].rank);
			double f = max ? (double)x / (double)max : 0;
			nk__strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"", lw + (int)c * cell,
					  y, cell - 1, cell - 1);
			nk__html_heat(b, f, 0);
			nk__strbuf_printf(b, "\"><title>rank %d to rank %d: %s</title></rect>", j->ranks[r].rank,
					  j->ranks[c].rank, nk__rep_size(x, s1, sizeof s1));
		}
	}
	nk__strbuf_printf(b, "</svg></figure>\n");
}

/* ---------------------------------------------------------------- text */

/* @p text after @p indent spaces, wrapped at spaces to 100 columns, continuation lines 2 further in. */
static void bullet_indent(struct nk__strbuf *b, int indent, const char *text)
{
	int col = indent;
	nk__strbuf_printf(b, "%*s", indent, "");
	for (int first = 1; *text; first = 0) {
		while (*text == ' ' || *text == '\n')
			text++;
		if (!*text)
			break;
		int w = (int)strcspn(text, " \n");
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
	}
	nk__strbuf_printf(b, "\n");
}

/* "  - " and @p text, wrapped. */
static void bullet(struct nk__strbuf *b, const char *text)
{
	struct nk__strbuf t = { 0 };
	nk__strbuf_printf(&t, "- %s", text);
	bullet_indent(b, 2, t.s ? t.s : "");
	free(t.s);
}

static void text_per_rank_into(struct nk__strbuf *b, const struct nk__job *j, const struct nk__job_var *v)
{
	if (v->n_per <= TEXT_PER_RANK) {
		nk__strbuf_printf(b, "remote by rank:");
		for (size_t i = 0; i < v->n_per; i++) {
			const struct nk__job_vrank *p = &v->per[i];
			if (p->share.known)
				nk__strbuf_printf(b, " %d: %.0f%%%s", j->ranks[p->rank].rank, 100 * p->share.r,
						  p->differs ? " (differs)" : "");
			else
				nk__strbuf_printf(b, " %d: -", j->ranks[p->rank].rank);
		}
		return;
	}
	size_t lo = SIZE_MAX, hi = SIZE_MAX;
	for (size_t i = 0; i < v->n_per; i++) {
		if (!v->per[i].share.known)
			continue;
		if (lo == SIZE_MAX || v->per[i].share.r < v->per[lo].share.r)
			lo = i;
		if (hi == SIZE_MAX || v->per[i].share.r > v->per[hi].share.r)
			hi = i;
	}
	if (lo == SIZE_MAX) {
		nk__strbuf_printf(b, "remote by rank: no rank knows the nodes\n");
		return;
	}
	nk__strbuf_printf(b, "remote by rank: min %.0f%% (rank %d)", 100 * v->per[lo].share.r, j->ranks[v->per[lo].rank].rank);
	if (v->median >= 0)
		nk__strbuf_printf(b, ", median %.0f%% (rank %d)", 100 * v->per[v->median].share.r,
				  j->ranks[v->per[v->median].rank].rank);
	nk__strbuf_printf(b, ", max %.0f%% (rank %d)", 100 * v->per[hi].share.r, j->ranks[v->per[hi].rank].rank);
	if (v->n_differ) {
		int *d = malloc(v->n_differ * sizeof *d);
		int k = 0;
		for (size_t i = 0; d && i < v->n_per; i++)
			if (v->per[i].differs)
				d[k++] = j->ranks[v->per[i].rank].rank;
		char *l = d ? id_list(d, k) : NULL;
		nk__strbuf_printf(b, "; differing: %s", l ? l : "?");
		free(l);
		free(d);
	}
}

static void text_per_rank(struct nk__strbuf *b, const struct nk__job *j, const struct nk__job_var *v)
{
	struct nk__strbuf t = { 0 };
	text_per_rank_into(&t, j, v);
	bullet_indent(b, 4, t.s ? t.s : "?");
	free(t.s);
}

static void text_report(const struct nk__job *j, struct nk__strbuf *b)
{
	char s1[64], s2[64];
	if (!j->covered) {
		nk__strbuf_printf(b, "INCOMPLETE PROFILE: the samples of some ranks do not cover their run; their figures may\n"
				     "describe only part of it, and numakit advise and whatif refuse the job without --force.\n");
		for (size_t i = 0; i < j->n_ranks; i++)
			if (!j->ranks[i].covered)
				nk__strbuf_printf(b, "  - rank %d: %s\n", j->ranks[i].rank,
						  j->ranks[i].coverage ? j->ranks[i].coverage : "incomplete");
		nk__strbuf_printf(b, "\n");
	}
	nk__strbuf_printf(b, "numakit report: job of %s\n", j->program);
	nk__strbuf_printf(b, "%zu rank%s", j->n_ranks, j->n_ranks == 1 ? "" : "s");
	if (j->size >= 0)
		nk__strbuf_printf(b, " of %d", j->size);
	nk__strbuf_printf(b, " on %zu host%s; %s", j->n_hosts, j->n_hosts == 1 ? "" : "s", nk_launcher_name(j->launcher));
	if (j->id)
		nk__strbuf_printf(b, ", job %s", j->id);
	else
		nk__strbuf_printf(b, ", no job id given");
	nk__strbuf_printf(b, "\nsampler %s; %llu samples from %d process%s; longest rank %.2f s\n", j->sampler,
			  (unsigned long long)j->samples, j->processes, j->processes == 1 ? "" : "es",
			  (double)j->wall_ns / 1e9);
	nk__strbuf_printf(b, "remote: %s of the job's accesses (%llu accesses: %llu local, %llu remote, %llu unknown)\n",
			  share_text(&j->share, s1, sizeof s1), (unsigned long long)j->acc, (unsigned long long)j->local,
			  (unsigned long long)j->remote, (unsigned long long)j->unknown);
	if (j->n_missing) {
		char *l = id_list(j->missing, (int)j->n_missing);
		nk__strbuf_printf(b, "missing ranks: %s\n", l ? l : "?");
		free(l);
	}

	nk__strbuf_printf(b, "\n== Hosts ==\n");
	nk__strbuf_printf(b, "  %-24s %-16s %-12s %5s  %s\n", "host", "ranks", "nodes", "cpus", "machine");
	for (size_t h = 0; h < j->n_hosts; h++) {
		const struct nk__job_host *ho = &j->hosts[h];
		char *rl = host_ranks(j, ho), *nl = id_list(ho->node_ids, ho->n_nodes), fit[32];
		nk__strbuf_printf(b, "  %-24s %-16s %-12s %5d  %c\n", nk__fit(host_text(ho->name), 24, fit, sizeof fit),
				  rl ? rl : "?", nl ? nl : "?", ho->cpus, 'A' + (ho->topology % 26));
		free(rl);
		free(nl);
	}
	if (j->topologies > 1)
		nk__strbuf_printf(b, "  (machine: hosts with the same letter have the same nodes, cpus and distances)\n");

	nk__strbuf_printf(b, "\n== Ranks x page nodes: %% of each rank's accesses by the node of the page ==\n");
	for (size_t h = 0; h < j->n_hosts; h++) {
		const struct nk__job_host *ho = &j->hosts[h];
		/* a column per node while they fit in 100 columns (6 with a decimal, 9 without), else a list */
		int max_id = 0;
		for (int k = 0; k < ho->n_nodes; k++)
			max_id = ho->node_ids[k] > max_id ? ho->node_ids[k] : max_id;
		int wide = ho->n_nodes <= 6 && max_id < 1000, cols = wide || (ho->n_nodes <= 9 && max_id < 100);
		nk__strbuf_printf(b, "host %s\n  %5s %7s %8s %10s", host_text(ho->name), "rank", "local/n", "samples",
				  "accesses");
		for (int k = 0; cols && k < ho->n_nodes; k++) {
			char lab[16];
			snprintf(lab, sizeof lab, "n%d", ho->node_ids[k]);
			nk__strbuf_printf(b, wide ? " %5s" : " %3s", lab);
		}
		nk__strbuf_printf(b, "%s  %s\n", cols ? "     ?" : "", "remote [95%]");
		for (size_t i = 0; i < ho->n_ranks; i++) {
			const struct nk__job_rank *r = &j->ranks[ho->ranks[i]];
			char lr[24];
			if (r->local_rank >= 0)
				snprintf(lr, sizeof lr, "%d/%d", r->local_rank, r->local_size);
			else
				snprintf(lr, sizeof lr, "-");
			nk__strbuf_printf(b, "  %5d %7s %8llu %10llu", r->rank, lr, (unsigned long long)r->samples,
					  (unsigned long long)r->acc);
			struct nk__strbuf list = { 0 };
			for (int k = 0; k < ho->n_nodes; k++) {
				uint64_t acc = 0;
				for (int q = 0; q < r->n_nodes; q++)
					if (r->node_ids[q] == ho->node_ids[k])
						acc = r->acc_page[q];
				if (cols)
					nk__strbuf_printf(b, wide ? " %5.1f" : " %3.0f", nk__rep_pct(acc, r->acc));
				else if (acc)
					nk__strbuf_printf(&list, " n%d:%.0f", ho->node_ids[k], nk__rep_pct(acc, r->acc));
			}
			if (cols)
				nk__strbuf_printf(b, " %5.1f", nk__rep_pct(r->acc_page_unknown, r->acc));
			nk__strbuf_printf(b, "  %s%s\n", share_text(&r->share, s1, sizeof s1), r->differs ? " *" : "");
			if (!cols) {
				if (r->acc_page_unknown)
					nk__strbuf_printf(&list, " ?:%.0f", nk__rep_pct(r->acc_page_unknown, r->acc));
				char *t = nk__strbuf_take(&list);
				if (t && t[0]) {
					struct nk__strbuf line = { 0 };
					nk__strbuf_printf(&line, "by node %%:%s", t);
					bullet_indent(b, 10, line.s ? line.s : "");
					free(line.s);
				}
				free(t);
			}
			free(list.s);
		}
	}
	if (j->n_differ)
		nk__strbuf_printf(b, "  (* the rank differs from the others: below)\n");

	nk__strbuf_printf(b, "\n== Ranks that differ from the others ==\n");
	if (j->median < 0 && j->median_load < 0) {
		nk__strbuf_printf(b, "  fewer than %d ranks with samples: no rank is compared with the others\n",
				  NK__JOB_MIN_RANKS);
	} else {
		if (j->median >= 0)
			nk__strbuf_printf(b, "  median rank by remote share: %d, %s\n", j->ranks[j->median].rank,
					  share_text(&j->ranks[j->median].share, s1, sizeof s1));
		if (j->median_load >= 0)
			nk__strbuf_printf(b, "  median rank by accesses: %d, %llu\n", j->ranks[j->median_load].rank,
					  (unsigned long long)j->ranks[j->median_load].acc);
		for (size_t i = 0; i < j->n_ranks; i++)
			if (j->ranks[i].differs) {
				char *t = nk__aprintf("rank %d (%s): %s", j->ranks[i].rank, host_text(j->ranks[i].host),
						      j->ranks[i].differs);
				bullet_indent(b, 2, t ? t : "?");
				free(t);
			}
		if (!j->n_differ)
			nk__strbuf_printf(b, "  none\n");
		nk__strbuf_printf(b, "  (a rank differs when its remote share's interval misses the median rank's and the\n"
				     "  shares are %.0f points apart or more, or when it makes more than %.0fx or less than\n"
				     "  1/%.0f of the median rank's accesses)\n",
				  100 * NK__JOB_DIFF, NK__JOB_LOAD, NK__JOB_LOAD);
	}

	nk__strbuf_printf(b, "\n== Variables across ranks (matched by allocation site or symbol; counts summed) ==\n");
	size_t shown = 0;
	for (size_t o = 0; o < j->n_vars && shown < TEXT_VARS; o++) {
		const struct nk__job_var *v = &j->vars[j->order[o]];
		if (!v->acc)
			continue;
		shown++;
		struct nk__strbuf t = { 0 };
		nk__strbuf_printf(&t, "%s (%s, %s; in %zu of %zu ranks)", v->name, nk__an_kind_name(v->kind),
				  nk__rep_size(v->size, s2, sizeof s2), v->n_per, j->n_ranks);
		bullet_indent(b, 0, t.s ? t.s : "?");
		free(t.s);
		t = (struct nk__strbuf){ 0 };
		nk__strbuf_printf(&t, "%llu accesses, %s remote; ", (unsigned long long)v->acc,
				  share_text(&v->share, s1, sizeof s1));
		diag_counts(&t, v);
		bullet_indent(b, 4, t.s ? t.s : "?");
		free(t.s);
		text_per_rank(b, j, v);
	}
	if (!shown)
		nk__strbuf_printf(b, "  (no variable was sampled)\n");
	else if (j->n_vars > shown)
		nk__strbuf_printf(b, "  ... %zu more in --json\n", j->n_vars - shown);

	nk__strbuf_printf(b, "\n== Top variables of each rank (by remote accesses) ==\n");
	size_t listed = 0, left = 0;
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *r = &j->ranks[i];
		if (listed >= TEXT_RANKS && !r->differs) {
			left++;
			continue;
		}
		listed++;
		struct nk__strbuf t = { 0 };
		nk__strbuf_printf(&t, "rank %d (%s):", r->rank, host_text(r->host));
		if (!r->n_top)
			nk__strbuf_printf(&t, " no variable sampled");
		for (size_t k = 0; k < r->n_top; k++) {
			const struct nk__job_var *v = &j->vars[r->top[k]];
			const struct nk__job_vrank *p = &v->per[r->top_per[k]];
			char fit[40];
			nk__strbuf_printf(&t, "%s %s %s %s", k ? ";" : "", nk__fit(v->name, 36, fit, sizeof fit),
					  share_text(&p->share, s1, sizeof s1), nk__an_diag_name(p->diag));
		}
		bullet_indent(b, 2, t.s ? t.s : "?");
		free(t.s);
	}
	if (left)
		nk__strbuf_printf(b, "  ... %zu more ranks in --json\n", left);

	text_traffic(j, b);

	if (j->n_warnings) {
		nk__strbuf_printf(b, "\n== Warnings ==\n");
		for (size_t i = 0; i < j->n_warnings; i++)
			bullet(b, j->warnings[i]);
	}
}

/* ---------------------------------------------------------------- JSON */

static json_t *share_json(json_t *o, const struct nk__job_share *s)
{
	json_t *ci = json_array();
	if (s->known) {
		json_array_append_new(ci, json_real(s->lo));
		json_array_append_new(ci, json_real(s->hi));
	}
	json_object_set_new(o, "remote_fraction", s->known ? json_real(s->r) : json_null());
	json_object_set_new(o, "remote_ci", s->known ? ci : json_null());
	if (!s->known)
		json_decref(ci);
	json_object_set_new(o, "samples_effective", json_real(s->n_eff));
	json_object_set_new(o, "samples_known", json_integer((json_int_t)s->samples));
	json_object_set_new(o, "clusters", json_integer((json_int_t)s->clusters));
	json_object_set_new(o, "decided", json_boolean(s->decided));
	return o;
}

static json_t *int_or_null(int v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *ints(const int *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static json_t *json_report(const struct nk__job *j)
{
	json_t *r = json_object(), *job = json_object(), *hosts = json_array(), *ranks = json_array(),
	       *vars = json_array(), *warns = json_array(), *differ = json_array(), *cov = json_object(),
	       *reasons = json_array(), *rule = json_object();

	json_object_set_new(r, "format", json_string("numakit-job-report"));
	json_object_set_new(r, "version", json_integer(NK__JOB_REPORT_VERSION));
	json_object_set_new(r, "program", json_string(j->program));
	json_object_set_new(r, "executable", json_string(j->exe));
	json_object_set_new(job, "launcher", json_string(launcher_key(j->launcher)));
	json_object_set_new(job, "id", j->id ? json_string(j->id) : json_null());
	json_object_set_new(job, "size", int_or_null(j->size));
	json_object_set_new(job, "ranks_present", json_integer((json_int_t)j->n_ranks));
	json_object_set_new(job, "missing_ranks", ints(j->missing, j->n_missing));
	json_object_set_new(job, "hosts", json_integer((json_int_t)j->n_hosts));
	json_object_set_new(job, "machines", json_integer(j->topologies));
	json_object_set_new(r, "job", job);
	json_object_set_new(r, "sampler", json_string(j->sampler));
	json_object_set_new(r, "wall_ns", json_integer((json_int_t)j->wall_ns));
	json_object_set_new(cov, "complete", json_boolean(j->covered));
	for (size_t i = 0; i < j->n_ranks; i++)
		if (!j->ranks[i].covered) {
			char *t = nk__aprintf("rank %d: %s", j->ranks[i].rank,
					      j->ranks[i].coverage ? j->ranks[i].coverage : "incomplete");
			if (t)
				json_array_append_new(reasons, json_string(t));
			free(t);
		}
	json_object_set_new(cov, "reasons", reasons);
	json_object_set_new(r, "coverage", cov);
	json_object_set_new(r, "processes", json_integer(j->processes));
	json_object_set_new(r, "samples", json_integer((json_int_t)j->samples));
	json_object_set_new(r, "accesses", json_integer((json_int_t)j->acc));
	json_object_set_new(r, "local", json_integer((json_int_t)j->local));
	json_object_set_new(r, "remote", json_integer((json_int_t)j->remote));
	json_object_set_new(r, "unknown", json_integer((json_int_t)j->unknown));
	share_json(r, &j->share);
	for (size_t h = 0; h < j->n_hosts; h++) {
		const struct nk__job_host *ho = &j->hosts[h];
		json_t *o = json_object(), *rl = json_array();
		for (size_t i = 0; i < ho->n_ranks; i++)
			json_array_append_new(rl, json_integer(j->ranks[ho->ranks[i]].rank));
		json_object_set_new(o, "host", ho->name[0] ? json_string(ho->name) : json_null());
		json_object_set_new(o, "ranks", rl);
		json_object_set_new(o, "nodes", ints(ho->node_ids, ho->n_nodes > 0 ? (size_t)ho->n_nodes : 0));
		json_object_set_new(o, "cpus", json_integer(ho->cpus));
		json_object_set_new(o, "machine", json_integer(ho->topology));
		json_array_append_new(hosts, o);
	}
	json_object_set_new(r, "hosts", hosts);
	json_object_set_new(rule, "min_ranks", json_integer(NK__JOB_MIN_RANKS));
	json_object_set_new(rule, "min_difference", json_real(NK__JOB_DIFF));
	json_object_set_new(rule, "load_factor", json_real(NK__JOB_LOAD));
	json_object_set_new(rule, "median_rank", j->median >= 0 ? json_integer(j->ranks[j->median].rank) : json_null());
	json_object_set_new(rule, "median_rank_accesses",
			    j->median_load >= 0 ? json_integer(j->ranks[j->median_load].rank) : json_null());
	json_object_set_new(r, "differ_rule", rule);
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *rk = &j->ranks[i];
		json_t *o = json_object(), *nodes = json_array(), *top = json_array(), *rw = json_array(),
		       *rc = json_object();
		json_object_set_new(o, "rank", json_integer(rk->rank));
		json_object_set_new(o, "local_rank", int_or_null(rk->local_rank));
		json_object_set_new(o, "local_size", int_or_null(rk->local_size));
		json_object_set_new(o, "host", rk->host[0] ? json_string(rk->host) : json_null());
		json_object_set_new(o, "profile", json_string(rk->path));
		json_object_set_new(o, "command", json_string(rk->command));
		json_object_set_new(o, "sampler", json_string(rk->sampler));
		json_object_set_new(o, "wall_ns", json_integer((json_int_t)rk->wall_ns));
		json_object_set_new(o, "processes", json_integer(rk->processes));
		json_object_set_new(o, "runs", json_integer(rk->runs));
		json_object_set_new(o, "samples", json_integer((json_int_t)rk->samples));
		json_object_set_new(o, "accesses", json_integer((json_int_t)rk->acc));
		json_object_set_new(o, "local", json_integer((json_int_t)rk->local));
		json_object_set_new(o, "remote", json_integer((json_int_t)rk->remote));
		json_object_set_new(o, "unknown", json_integer((json_int_t)rk->unknown));
		share_json(o, &rk->share);
		for (int k = 0; k < rk->n_nodes; k++) {
			json_t *n = json_object();
			json_object_set_new(n, "node", json_integer(rk->node_ids[k]));
			json_object_set_new(n, "accesses", json_integer((json_int_t)rk->acc_page[k]));
			json_object_set_new(n, "samples", json_integer((json_int_t)rk->samples_page[k]));
			json_array_append_new(nodes, n);
		}
		json_object_set_new(o, "page_nodes", nodes);
		json_t *un = json_object();
		json_object_set_new(un, "accesses", json_integer((json_int_t)rk->acc_page_unknown));
		json_object_set_new(un, "samples", json_integer((json_int_t)rk->samples_page_unknown));
		json_object_set_new(o, "page_node_unknown", un);
		for (size_t k = 0; k < rk->n_top; k++) {
			const struct nk__job_var *v = &j->vars[rk->top[k]];
			const struct nk__job_vrank *p = &v->per[rk->top_per[k]];
			json_t *t = json_object();
			json_object_set_new(t, "key", json_string(v->key));
			json_object_set_new(t, "name", json_string(v->name));
			json_object_set_new(t, "accesses", json_integer((json_int_t)p->acc));
			json_object_set_new(t, "remote", json_integer((json_int_t)p->remote));
			share_json(t, &p->share);
			json_object_set_new(t, "diagnosis", json_string(nk__an_diag_name(p->diag)));
			json_object_set_new(t, "fix", json_string(nk__an_fix_name(p->fix)));
			json_array_append_new(top, t);
		}
		json_object_set_new(o, "top_variables", top);
		json_object_set_new(o, "differs", rk->differs ? json_string(rk->differs) : json_null());
		json_object_set_new(rc, "complete", json_boolean(rk->covered));
		json_object_set_new(rc, "reasons", rk->coverage ? json_string(rk->coverage) : json_null());
		json_object_set_new(o, "coverage", rc);
		for (size_t k = 0; k < rk->n_warnings; k++)
			json_array_append_new(rw, json_string(rk->warnings[k]));
		json_object_set_new(o, "warnings", rw);
		json_array_append_new(ranks, o);
		if (rk->differs) {
			json_t *d = json_object();
			json_object_set_new(d, "rank", json_integer(rk->rank));
			json_object_set_new(d, "why", json_string(rk->differs));
			json_array_append_new(differ, d);
		}
	}
	json_object_set_new(r, "ranks", ranks);
	json_object_set_new(r, "differing_ranks", differ);
	for (size_t o = 0; o < j->n_vars; o++) {
		const struct nk__job_var *v = &j->vars[j->order[o]];
		json_t *vo = json_object(), *per = json_array(), *dg = json_object(), *dr = json_array();
		json_object_set_new(vo, "name", json_string(v->name));
		json_object_set_new(vo, "key", json_string(v->key));
		json_object_set_new(vo, "kind", json_string(nk__an_kind_name(v->kind)));
		json_object_set_new(vo, "size", json_integer((json_int_t)v->size));
		json_object_set_new(vo, "ranks", json_integer((json_int_t)v->n_per));
		json_object_set_new(vo, "samples", json_integer((json_int_t)v->samples));
		json_object_set_new(vo, "accesses", json_integer((json_int_t)v->acc));
		json_object_set_new(vo, "local", json_integer((json_int_t)v->local));
		json_object_set_new(vo, "remote", json_integer((json_int_t)v->remote));
		json_object_set_new(vo, "unknown", json_integer((json_int_t)v->unknown));
		share_json(vo, &v->share);
		for (int d = 0; d < 5; d++)
			if (v->diag_count[d])
				json_object_set_new(dg, nk__an_diag_name(d), json_integer(v->diag_count[d]));
		json_object_set_new(vo, "diagnoses", dg);
		json_object_set_new(vo, "median_rank",
				    v->median >= 0 ? json_integer(j->ranks[v->per[v->median].rank].rank) : json_null());
		for (size_t i = 0; i < v->n_per; i++) {
			const struct nk__job_vrank *p = &v->per[i];
			json_t *po = json_object();
			json_object_set_new(po, "rank", json_integer(j->ranks[p->rank].rank));
			json_object_set_new(po, "samples", json_integer((json_int_t)p->samples));
			json_object_set_new(po, "accesses", json_integer((json_int_t)p->acc));
			json_object_set_new(po, "local", json_integer((json_int_t)p->local));
			json_object_set_new(po, "remote", json_integer((json_int_t)p->remote));
			share_json(po, &p->share);
			json_object_set_new(po, "diagnosis", json_string(nk__an_diag_name(p->diag)));
			json_object_set_new(po, "fix", json_string(nk__an_fix_name(p->fix)));
			json_object_set_new(po, "policy", p->policy ? json_string(p->policy) : json_null());
			json_object_set_new(po, "differs", json_boolean(p->differs));
			json_array_append_new(per, po);
			if (p->differs)
				json_array_append_new(dr, json_integer(j->ranks[p->rank].rank));
		}
		json_object_set_new(vo, "per_rank", per);
		json_object_set_new(vo, "differing_ranks", dr);
		json_array_append_new(vars, vo);
	}
	json_object_set_new(r, "variables", vars);
	json_object_set_new(r, "mpi_traffic", json_traffic(j));
	for (size_t i = 0; i < j->n_warnings; i++)
		json_array_append_new(warns, json_string(j->warnings[i]));
	json_object_set_new(r, "warnings", warns);
	return r;
}

/* ---------------------------------------------------------------- HTML */

/* The rank x page-node heat map of host @p h: % of each rank's accesses per node, and its remote share. */
static void html_heatmap(struct nk__strbuf *b, const struct nk__job *j, const struct nk__job_host *h)
{
	size_t nr = h->n_ranks;
	int nc = h->n_nodes + 2; /* nodes, unknown, remote */
	int cell = nr > 64 ? 12 : nr > 24 ? 18 : 30, cw = 54, lw = 90, th = 26;
	int w = lw + nc * cw + 10, ht = th + (int)nr * cell + 6;
	char s1[64];
	nk__strbuf_printf(b, "<figure><figcaption>host ");
	nk__html_esc(b, host_text(h->name));
	nk__strbuf_printf(b, ": %% of each rank's accesses by the node of the page, and the rank's remote share"
			     "</figcaption><svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">", w, ht, w, ht);
	for (int k = 0; k < nc; k++) {
		nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">", lw + k * cw + cw / 2, th - 8);
		if (k < h->n_nodes)
			nk__strbuf_printf(b, "node %d", h->node_ids[k]);
		else
			nk__strbuf_printf(b, "%s", k == h->n_nodes ? "unknown" : "remote");
		nk__strbuf_printf(b, "</text>");
	}
	for (size_t i = 0; i < nr; i++) {
		const struct nk__job_rank *r = &j->ranks[h->ranks[i]];
		int y = th + (int)i * cell;
		nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">rank %d%s</text>", lw - 6,
				  y + cell / 2 + 4, r->rank, r->differs ? " *" : "");
		for (int k = 0; k < nc; k++) {
			double f;
			if (k < h->n_nodes) {
				uint64_t acc = 0;
				for (int q = 0; q < r->n_nodes; q++)
					if (r->node_ids[q] == h->node_ids[k])
						acc = r->acc_page[q];
				f = r->acc ? (double)acc / (double)r->acc : 0;
			} else if (k == h->n_nodes) {
				f = r->acc ? (double)r->acc_page_unknown / (double)r->acc : 0;
			} else {
				f = r->share.known ? r->share.r : 0;
			}
			nk__strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"", lw + k * cw, y, cw - 1,
					  cell - 1);
			nk__html_heat(b, f, k == nc - 1);
			nk__strbuf_printf(b, "\"><title>rank %d, %s: %.1f%%%s%s</title></rect>", r->rank,
					  k < h->n_nodes ? "pages on this node" : k == h->n_nodes ? "page node unknown" : "remote",
					  100 * f, k == nc - 1 ? " " : "", k == nc - 1 ? share_text(&r->share, s1, sizeof s1) : "");
			if (cell >= 18)
				nk__strbuf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"v\" text-anchor=\"middle\">%.0f</text>",
						  lw + k * cw + cw / 2, y + cell / 2 + 4, 100 * f);
		}
	}
	nk__strbuf_printf(b, "</svg></figure>\n");
}

static void html_report(const struct nk__job *j, struct nk__strbuf *b)
{
	char s1[64], s2[64];
	nk__strbuf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>numakit job report: ");
	nk__html_esc(b, j->program);
	nk__strbuf_printf(b, "</title>\n<style>\n"
			     "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}\n"
			     "h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}\n"
			     ".cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;"
			     "padding:8px 14px}.card b{display:block;font-size:20px}\n"
			     "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;"
			     "text-align:right}td.l,th.l{text-align:left}\n"
			     ".banner{background:#fdecea;border:1px solid #c62828;padding:8px;border-radius:6px}\n"
			     ".differs{background:#fff3e0}svg text.ax{font-size:11px;fill:#333}svg text.v{font-size:10px;"
			     "fill:#222}figure{margin:12px 0}figcaption{font-size:13px;margin-bottom:4px}\n"
			     "</style></head><body>\n<h1>numakit job report: ");
	nk__html_esc(b, j->program);
	nk__strbuf_printf(b, "</h1>\n");
	if (!j->covered) {
		nk__strbuf_printf(b, "<div class=\"banner\"><b>Incomplete profile:</b> the samples of some ranks do not cover "
				     "their run.<ul>");
		for (size_t i = 0; i < j->n_ranks; i++)
			if (!j->ranks[i].covered) {
				nk__strbuf_printf(b, "<li>rank %d: ", j->ranks[i].rank);
				nk__html_esc(b, j->ranks[i].coverage ? j->ranks[i].coverage : "incomplete");
				nk__strbuf_printf(b, "</li>");
			}
		nk__strbuf_printf(b, "</ul></div>\n");
	}
	nk__strbuf_printf(b, "<div class=\"cards\"><div class=\"card\">ranks<b>%zu", j->n_ranks);
	if (j->size >= 0)
		nk__strbuf_printf(b, " of %d", j->size);
	nk__strbuf_printf(b, "</b></div><div class=\"card\">hosts<b>%zu</b></div>", j->n_hosts);
	nk__strbuf_printf(b, "<div class=\"card\">launcher<b>%s</b>", nk_launcher_name(j->launcher));
	if (j->id) {
		nk__strbuf_printf(b, "job ");
		nk__html_esc(b, j->id);
	}
	nk__strbuf_printf(b, "</div><div class=\"card\">sampler<b>");
	nk__html_esc(b, j->sampler);
	nk__strbuf_printf(b, "</b></div><div class=\"card\">samples<b>%llu</b></div>", (unsigned long long)j->samples);
	nk__strbuf_printf(b, "<div class=\"card\">remote<b>%s</b></div>", share_text(&j->share, s1, sizeof s1));
	nk__strbuf_printf(b, "<div class=\"card\">longest rank<b>%.2f s</b></div></div>\n", (double)j->wall_ns / 1e9);
	if (j->n_missing) {
		char *l = id_list(j->missing, (int)j->n_missing);
		nk__strbuf_printf(b, "<p>Missing ranks: %s</p>\n", l ? l : "?");
		free(l);
	}

	nk__strbuf_printf(b, "<h2>Ranks &times; page nodes</h2>\n");
	for (size_t h = 0; h < j->n_hosts; h++)
		html_heatmap(b, j, &j->hosts[h]);

	nk__strbuf_printf(b, "<h2>Ranks that differ from the others</h2>\n");
	if (j->median < 0 && j->median_load < 0)
		nk__strbuf_printf(b, "<p>Fewer than %d ranks with samples: no rank is compared.</p>\n", NK__JOB_MIN_RANKS);
	else if (!j->n_differ)
		nk__strbuf_printf(b, "<p>None.</p>\n");
	else {
		nk__strbuf_printf(b, "<ul>");
		for (size_t i = 0; i < j->n_ranks; i++)
			if (j->ranks[i].differs) {
				nk__strbuf_printf(b, "<li>rank %d (", j->ranks[i].rank);
				nk__html_esc(b, host_text(j->ranks[i].host));
				nk__strbuf_printf(b, "): ");
				nk__html_esc(b, j->ranks[i].differs);
				nk__strbuf_printf(b, "</li>");
			}
		nk__strbuf_printf(b, "</ul>\n");
	}
	nk__strbuf_printf(b, "<p>A rank differs when its remote share's 95%% interval misses the median rank's and the "
			     "shares are %.0f points apart or more, or when it makes more than %.0f&times; or less than "
			     "1/%.0f of the median rank's accesses.</p>\n", 100 * NK__JOB_DIFF, NK__JOB_LOAD, NK__JOB_LOAD);

	nk__strbuf_printf(b, "<h2>Ranks</h2>\n<table><tr><th>rank</th><th class=\"l\">host</th><th>local</th>"
			     "<th>samples</th><th>accesses</th><th>remote [95%%]</th><th class=\"l\">local / remote</th>"
			     "<th class=\"l\">top variables</th></tr>\n");
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *r = &j->ranks[i];
		nk__strbuf_printf(b, "<tr%s><td>%d</td><td class=\"l\">", r->differs ? " class=\"differs\"" : "", r->rank);
		nk__html_esc(b, host_text(r->host));
		if (r->local_rank >= 0)
			nk__strbuf_printf(b, "</td><td>%d/%d</td>", r->local_rank, r->local_size);
		else
			nk__strbuf_printf(b, "</td><td>-</td>");
		nk__strbuf_printf(b, "<td>%llu</td><td>%llu</td><td>%s</td><td class=\"l\">", (unsigned long long)r->samples,
				  (unsigned long long)r->acc, share_text(&r->share, s1, sizeof s1));
		if (r->share.known) { /* a bar: the local share green, the remote one red */
			int rw = (int)lround(120 * r->share.r);
			nk__strbuf_printf(b, "<svg width=\"120\" height=\"12\" role=\"img\"><rect x=\"0\" y=\"0\" width=\"%d\" "
					     "height=\"12\" fill=\"#2e7d32\"/><rect x=\"%d\" y=\"0\" width=\"%d\" height=\"12\" "
					     "fill=\"#c62828\"/></svg>", 120 - rw, 120 - rw, rw);
		}
		nk__strbuf_printf(b, "</td><td class=\"l\">");
		for (size_t k = 0; k < r->n_top; k++) {
			const struct nk__job_var *v = &j->vars[r->top[k]];
			nk__strbuf_printf(b, "%s", k ? "; " : "");
			nk__html_esc(b, v->name);
			nk__strbuf_printf(b, " %s %s", share_text(&v->per[r->top_per[k]].share, s1, sizeof s1),
					  nk__an_diag_name(v->per[r->top_per[k]].diag));
		}
		nk__strbuf_printf(b, "</td></tr>\n");
	}
	nk__strbuf_printf(b, "</table>\n");

	nk__strbuf_printf(b, "<h2>Variables across ranks</h2>\n<table><tr><th class=\"l\">variable</th><th class=\"l\">kind"
			     "</th><th>size</th><th>ranks</th><th>accesses</th><th>remote [95%%]</th><th class=\"l\">by rank"
			     "</th><th class=\"l\">diagnoses</th></tr>\n");
	for (size_t o = 0; o < j->n_vars; o++) {
		const struct nk__job_var *v = &j->vars[j->order[o]];
		if (!v->acc)
			continue;
		nk__strbuf_printf(b, "<tr><td class=\"l\">");
		nk__html_esc(b, v->name);
		nk__strbuf_printf(b, "</td><td class=\"l\">%s</td><td>%s</td><td>%zu</td><td>%llu</td><td>%s</td><td class=\"l\">",
				  nk__an_kind_name(v->kind), nk__rep_size(v->size, s2, sizeof s2), v->n_per,
				  (unsigned long long)v->acc, share_text(&v->share, s1, sizeof s1));
		for (size_t i = 0; i < v->n_per && i < 64; i++) {
			const struct nk__job_vrank *p = &v->per[i];
			nk__strbuf_printf(b, "%s<span title=\"rank %d: %s %s\"%s>%d:", i ? " " : "", j->ranks[p->rank].rank,
					  share_text(&p->share, s1, sizeof s1), nk__an_diag_name(p->diag),
					  p->differs ? " class=\"differs\"" : "", j->ranks[p->rank].rank);
			if (p->share.known)
				nk__strbuf_printf(b, "%.0f%%</span>", 100 * p->share.r);
			else
				nk__strbuf_printf(b, "-</span>");
		}
		if (v->n_per > 64)
			nk__strbuf_printf(b, " &hellip;");
		nk__strbuf_printf(b, "</td><td class=\"l\">");
		struct nk__strbuf d = { 0 };
		diag_counts(&d, v);
		nk__html_esc(b, d.s ? d.s : "");
		free(d.s);
		nk__strbuf_printf(b, "</td></tr>\n");
	}
	nk__strbuf_printf(b, "</table>\n");
	nk__strbuf_printf(b, "<h2>MPI traffic</h2>\n");
	html_traffic(b, j);
	if (j->n_warnings) {
		nk__strbuf_printf(b, "<h2>Warnings</h2>\n<ul>");
		for (size_t i = 0; i < j->n_warnings; i++) {
			nk__strbuf_printf(b, "<li>");
			nk__html_esc(b, j->warnings[i]);
			nk__strbuf_printf(b, "</li>");
		}
		nk__strbuf_printf(b, "</ul>\n");
	}
	nk__strbuf_printf(b, "</body></html>\n");
}

static void text_form(const void *j, struct nk__strbuf *b)
{
	text_report(j, b);
}

static void html_form(const void *j, struct nk__strbuf *b)
{
	html_report(j, b);
}

static json_t *json_form(const void *j)
{
	return json_report(j);
}

int nk__job_report(const struct nk__job *j, int format, char **out, nk_error *err)
{
	static const struct nk__rep_forms forms = { text_form, html_form, json_form };

	if (!j || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_report: NULL argument");
	return nk__rep_render(&forms, j, format, "job report", out, err);
}
