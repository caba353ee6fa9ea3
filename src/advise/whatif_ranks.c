/* SPDX-License-Identifier: BSD-3-Clause
 * whatif for a rank mapping (issue 14 §3, docs/whatif.md "A rank mapping"): a proposed slot (host, node)
 * for some of a job's ranks priced against the slots they ran in.  Communication x distance is rank_map.c's
 * cost (nk__job_rm_env: the job's traffic and its hosts' distances), per pair and in total; each rank's
 * memory accesses are whatif's replay of its samples (nk__whatif_move) with its threads on its new node,
 * under two assumptions on its memory: it follows the rank (bound to the node by `numakit run --rank-map`,
 * or first touched there by the rank's threads) or it stays where it was profiled (memory the program
 * binds to fixed nodes itself).  It reads the job (profile/job.h, the one place outside src/profile/ that
 * does: the job is the input here as the analysis is whatif's) and each rank's file again, one at a time.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/whatif.h"
#include "job/rankmap.h"
#include "profile/analysis.h"
#include "profile/job.h"
#include "profile/report_fmt.h"
#include "util/error.h"
#include "util/strbuf.h"

#define WR_TOP_PAIRS 10 /* pairs in the text, heaviest first; the JSON has all */

enum { S_PROF, S_FOLLOW, S_STAY, S_N };

struct wr_pair {
	int a, b;                 /* job rank indices, a < b */
	double bytes, d0, d1;     /* bytes both ways; distance profiled, mapped */
};

struct wr {
	const struct nk__job *j;
	struct nk__job_rm_env env;
	size_t n;
	size_t *host;             /* [n] host index under the map */
	int *node;                /* [n] node under the map */
	char *in_map;             /* [n] the map gives it a slot */
	struct nk__whatif_pred (*pred)[S_N]; /* [n] */
	struct wr_pair *pairs;
	size_t n_pairs;
	double before, after;
	char **warn;
	size_t n_warn;
	int oom;
};

static void wr_free(struct wr *w)
{
	nk__job_rm_env_free(&w->env, w->j->n_hosts);
	free(w->host);
	free(w->node);
	free(w->in_map);
	free(w->pred);
	free(w->pairs);
	for (size_t i = 0; i < w->n_warn; i++)
		free(w->warn[i]);
	free(w->warn);
}

static void warn_add(struct wr *w, char *s)
{
	char **v = s ? realloc(w->warn, (w->n_warn + 1) * sizeof *v) : NULL;
	if (!v) {
		free(s);
		w->oom = 1;
		return;
	}
	w->warn = v;
	w->warn[w->n_warn++] = s;
}

/* The host of the job named @p name: exactly, else by short name (up to the first dot); -1 none. */
static long find_host(const struct nk__job *j, const char *name)
{
	size_t ln = strcspn(name, ".");
	for (size_t h = 0; h < j->n_hosts; h++)
		if (!strcmp(j->hosts[h].name, name))
			return (long)h;
	for (size_t h = 0; h < j->n_hosts; h++)
		if (strcspn(j->hosts[h].name, ".") == ln && !strncmp(j->hosts[h].name, name, ln))
			return (long)h;
	return -1;
}

static char *host_names(const struct nk__job *j)
{
	struct nk__strbuf b = { 0 };
	for (size_t h = 0; h < j->n_hosts; h++)
		nk__strbuf_printf(&b, "%s%s", h ? ", " : "", j->hosts[h].name);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* The slots of the map onto the job's ranks (w->host, w->node). */
static int apply_slots(struct wr *w, const nk_rank_slot *slots, size_t n, nk_error *err)
{
	const struct nk__job *j = w->j;
	for (size_t k = 0; k < n; k++) {
		const nk_rank_slot *s = &slots[k];
		size_t i = 0; /* at most NK__RM_MAX_RANKS ranks: a scan */
		while (i < j->n_ranks && j->ranks[i].rank != s->rank)
			i++;
		if (i == j->n_ranks)
			return nk__error(err, NK_EINVAL, "the map gives rank %d a slot, but the job has no rank %d (%zu ranks)",
					 s->rank, s->rank, j->n_ranks);
		if (w->in_map[i])
			return nk__error(err, NK_EINVAL, "the map gives rank %d two slots", s->rank);
		size_t h = j->ranks[i].host_index;
		if (s->host && s->host[0]) {
			long x = find_host(j, s->host);
			if (x < 0) {
				char *names = host_names(j);
				int rc = nk__error(err, NK_EINVAL, "rank %d: host %s is not a host of the job (%s)", s->rank,
						   s->host, names ? names : "?");
				free(names);
				return rc;
			}
			h = (size_t)x;
		}
		const nk_machine *m = w->env.m[h];
		int node = s->node;
		if (node < 0) {
			if (!s->cpus || !s->ncpus)
				return nk__error(err, NK_EINVAL, "rank %d: its slot names neither a node nor cpus", s->rank);
			for (size_t c = 0; c < s->ncpus; c++) {
				nk_cpu_info ci;
				if (nk_machine_cpu_info(m, s->cpus[c], &ci) || ci.node < 0)
					return nk__error(err, NK_EINVAL, "rank %d: cpu %d is not on host %s's machine (%d cpus)",
							 s->rank, s->cpus[c], j->hosts[h].name, nk_machine_num_cpus(m));
				if (node >= 0 && ci.node != node)
					return nk__error(err, NK_EINVAL, "rank %d: its cpus are on nodes %d and %d of host %s: whatif "
							 "predicts for a rank on one node", s->rank, node, ci.node, j->hosts[h].name);
				node = ci.node;
			}
		}
		int f = nk_machine_node_flags(m, node);
		if (f < 0 || !(f & NK_NODE_HAS_CPUS))
			return nk__error(err, NK_EINVAL, "rank %d: node %d %s host %s's machine", s->rank, node,
					 f < 0 ? "is not on" : "has no cpus on", j->hosts[h].name);
		w->in_map[i] = 1;
		w->host[i] = h;
		w->node[i] = node;
	}
	return 0;
}

static int cmp_ends(const void *x, const void *y)
{
	const struct wr_pair *a = x, *b = y;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return (a->b > b->b) - (a->b < b->b);
}

static int cmp_pair(const void *x, const void *y)
{
	const struct wr_pair *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return (a->b > b->b) - (a->b < b->b);
}

/* Communication x distance: the edges summed into unordered pairs, each priced as profiled and mapped. */
static int comm(struct wr *w, nk_error *err)
{
	const struct nk__job *j = w->j;
	const struct nk__job_rm_env *e = &w->env;
	if (!(w->pairs = malloc((e->n_edges ? e->n_edges : 1) * sizeof *w->pairs)))
		return nk__error(err, NK_ENOMEM, "whatif: out of memory");
	/* the edges (one per direction) as unordered pairs, summed: sorted by their ends, merged */
	for (size_t k = 0; k < e->n_edges; k++) {
		int a = e->edges[k].a < e->edges[k].b ? e->edges[k].a : e->edges[k].b;
		int b = e->edges[k].a < e->edges[k].b ? e->edges[k].b : e->edges[k].a;
		w->pairs[k] = (struct wr_pair){ a, b, e->edges[k].bytes, 0, 0 };
	}
	qsort(w->pairs, e->n_edges, sizeof *w->pairs, cmp_ends);
	for (size_t k = 0; k < e->n_edges; k++) {
		if (w->n_pairs && w->pairs[w->n_pairs - 1].a == w->pairs[k].a && w->pairs[w->n_pairs - 1].b == w->pairs[k].b) {
			w->pairs[w->n_pairs - 1].bytes += w->pairs[k].bytes;
			continue;
		}
		struct wr_pair x = w->pairs[k];
		const struct nk__job_rank *ra = &j->ranks[x.a], *rb = &j->ranks[x.b];
		x.d0 = nk__job_rm_dist(e, ra->host_index, ra->cpu_node, rb->host_index, rb->cpu_node);
		x.d1 = nk__job_rm_dist(e, w->host[x.a], w->node[x.a], w->host[x.b], w->node[x.b]);
		if (x.d0 < 0 || x.d1 < 0)
			return nk__error(err, NK_EINVAL, "ranks %d and %d: a node is not in its host's machine", ra->rank,
					 rb->rank);
		w->pairs[w->n_pairs++] = x;
	}
	for (size_t p = 0; p < w->n_pairs; p++) {
		w->before += w->pairs[p].bytes * w->pairs[p].d0;
		w->after += w->pairs[p].bytes * w->pairs[p].d1;
	}
	qsort(w->pairs, w->n_pairs, sizeof *w->pairs, cmp_pair);
	return 0;
}

/* Each rank's accesses as profiled, and on its mapped node with its memory following or staying. */
static int memory(struct wr *w, nk_error *err)
{
	const struct nk__job *j = w->j;
	for (size_t i = 0; i < w->n; i++) {
		const struct nk__job_rank *k = &j->ranks[i];
		const char *path = k->path;
		struct nk__analysis *an = NULL;
		int rc = nk__profile_analyse_files(&path, 1, &an, err);
		if (rc)
			return rc;
		for (int s = 0; s < S_N && !rc; s++) {
			char *why = NULL;
			size_t h = s == S_PROF ? k->host_index : w->host[i];
			rc = nk__whatif_move(an, w->env.m[h], s == S_PROF ? -1 : w->node[i], s == S_FOLLOW, &w->pred[i][s],
					     &why, err);
			if (!rc && why && s != S_STAY) /* the same remapping as following: said once */
				warn_add(w, nk__aprintf("rank %d%s: %s", k->rank, s == S_PROF ? " as profiled" : "", why));
			free(why);
		}
		nk__analysis_free(an);
		if (rc) {
			char msg[NK_ERROR_MSG_MAX];
			snprintf(msg, sizeof msg, "%s", err && err->message[0] ? err->message : nk_strerror(rc));
			return nk__error(err, rc, "rank %d (%s): %s", k->rank, path, msg);
		}
	}
	return 0;
}

static const char *pct(double f, char *buf, size_t cap)
{
	if (f < 0)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.1f", 100.0 * f);
	return buf;
}

/* Sum of a scenario over the ranks: counts, stall; the remote fraction of the pooled counts. */
static struct nk__whatif_pred total(const struct wr *w, int s)
{
	struct nk__whatif_pred t = { 0 };
	for (size_t i = 0; i < w->n; i++) {
		const struct nk__whatif_pred *p = &w->pred[i][s];
		t.acc += p->acc;
		t.local += p->local;
		t.remote += p->remote;
		t.unknown += p->unknown;
		t.latency_ms += p->latency_ms;
		t.stall_ms += p->stall_ms;
		if (p->bandwidth_ms >= 0)
			t.bandwidth_ms += p->bandwidth_ms;
	}
	t.remote_fraction = t.local + t.remote ? (double)t.remote / (double)(t.local + t.remote) : -1;
	return t;
}

static const char ASSUMPTION[] =
	"mapped: each rank runs on its mapped node and its memory follows it (numakit run --rank-map binds it "
	"there; memory first touched by the rank's threads, now on that node, lands there too); memory_stays: "
	"the threads move but the memory keeps the node ids it was profiled on (memory the program binds to "
	"fixed nodes itself; on another host, those ids there).  Ranks the map leaves out stay on their node "
	"and are predicted the same way.";

static void text_out(const struct wr *w, struct nk__strbuf *b)
{
	const struct nk__job *j = w->j;
	char s1[32], s2[32], s3[32], f1[16], f2[16], f3[16], at[64], fa[24], fb[24];
	size_t moved = 0, mapped = 0;
	for (size_t i = 0; i < w->n; i++) {
		moved += w->host[i] != j->ranks[i].host_index || w->node[i] != j->ranks[i].cpu_node;
		mapped += w->in_map[i] != 0;
	}
	nk__strbuf_printf(b, "numakit whatif: job of %s, %zu ranks on %zu host%s; the map places %zu rank%s, %zu move\n",
			  j->program, w->n, j->n_hosts, j->n_hosts == 1 ? "" : "s", mapped, mapped == 1 ? "" : "s", moved);
	nk__strbuf_printf(b, "communication x distance (bytes x SLIT distance / 10, between hosts %.0f / 10):\n",
			  w->env.host_dist);
	nk__strbuf_printf(b, "  as profiled %s, mapped %s", nk__rep_size((uint64_t)(w->before / 10), s1, sizeof s1),
			  nk__rep_size((uint64_t)(w->after / 10), s2, sizeof s2));
	if (w->before > 0)
		nk__strbuf_printf(b, " (%+.1f%%)", 100.0 * (w->after - w->before) / w->before);
	nk__strbuf_printf(b, "\n\nheaviest pairs (bytes both ways, means per run):\n");
	nk__strbuf_printf(b, "%-13s %10s  %-13s  %s\n", "ranks", "traffic", "distance", "comm x distance");
	for (size_t p = 0; p < w->n_pairs && p < WR_TOP_PAIRS; p++) {
		const struct wr_pair *x = &w->pairs[p];
		char ranks[32], dist[32];
		snprintf(ranks, sizeof ranks, "%d-%d", j->ranks[x->a].rank, j->ranks[x->b].rank);
		snprintf(dist, sizeof dist, "%.0f -> %.0f", x->d0, x->d1);
		nk__strbuf_printf(b, "%-13s %10s  %-13s  %s -> %s\n", ranks, nk__rep_size((uint64_t)x->bytes, s1, sizeof s1),
				  dist, nk__rep_size((uint64_t)(x->bytes * x->d0 / 10), s2, sizeof s2),
				  nk__rep_size((uint64_t)(x->bytes * x->d1 / 10), s3, sizeof s3));
	}
	if (w->n_pairs > WR_TOP_PAIRS)
		nk__strbuf_printf(b, "(%zu more pairs)\n", w->n_pairs - WR_TOP_PAIRS);
	nk__strbuf_printf(b, "\n%-6s %-12s %-12s %10s  %-22s  %s\n", "rank", "profiled", "mapped", "traffic",
			  "remote %", "stall ms (estimate)");
	nk__strbuf_printf(b, "%-6s %-12s %-12s %10s  %6s %6s %8s  %8s %8s %8s\n", "", "host:node", "host:node", "",
			  "prof", "mapped", "stays", "prof", "mapped", "stays");
	for (size_t i = 0; i < w->n; i++) {
		const struct nk__job_rank *k = &j->ranks[i];
		const struct nk__whatif_pred *p = w->pred[i];
		snprintf(at, sizeof at, "%s:%d", k->host, k->cpu_node);
		nk__fit(at, 12, fa, sizeof fa);
		snprintf(at, sizeof at, "%s:%d%s", j->hosts[w->host[i]].name, w->node[i], w->in_map[i] ? "" : "*");
		nk__fit(at, 12, fb, sizeof fb);
		nk__strbuf_printf(b, "%-6d %-12s %-12s %10s  %6s %6s %8s  %8.4f %8.4f %8.4f\n", k->rank, fa, fb,
				  nk__rep_size((uint64_t)w->env.traffic[i], s1, sizeof s1), pct(p[S_PROF].remote_fraction, f1, sizeof f1),
				  pct(p[S_FOLLOW].remote_fraction, f2, sizeof f2), pct(p[S_STAY].remote_fraction, f3, sizeof f3),
				  p[S_PROF].stall_ms, p[S_FOLLOW].stall_ms, p[S_STAY].stall_ms);
	}
	struct nk__whatif_pred t0 = total(w, S_PROF), t1 = total(w, S_FOLLOW), t2 = total(w, S_STAY);
	nk__strbuf_printf(b, "%-6s %-12s %-12s %10s  %6s %6s %8s  %8.4f %8.4f %8.4f\n", "total", "", "", "",
			  pct(t0.remote_fraction, f1, sizeof f1), pct(t1.remote_fraction, f2, sizeof f2),
			  pct(t2.remote_fraction, f3, sizeof f3), t0.stall_ms, t1.stall_ms, t2.stall_ms);
	if (mapped < w->n)
		nk__strbuf_printf(b, "* not in the map: stays on its node\n");
	nk__strbuf_printf(b, "\nmapped: each rank on its mapped node, its memory following it (numakit run --rank-map\n"
			     "binds it there; what the rank's threads first touch lands there too).  stays: the\n"
			     "threads move, the memory keeps the node ids it was profiled on (memory the program\n"
			     "binds to fixed nodes itself; on another host, those ids there).  Stall is an\n"
			     "estimate for comparing mappings (the accesses the samples stand for), not a run time.\n");
	if (w->n_warn) {
		nk__strbuf_printf(b, "\nwarnings:\n");
		for (size_t i = 0; i < w->n_warn; i++)
			nk__strbuf_printf(b, "  %s\n", w->warn[i]);
	}
}

static json_t *jfrac(double f)
{
	return f < 0 ? json_null() : json_real(f);
}

static json_t *scen(const struct nk__whatif_pred *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "accesses", json_integer((json_int_t)p->acc));
	json_object_set_new(o, "local", json_integer((json_int_t)p->local));
	json_object_set_new(o, "remote", json_integer((json_int_t)p->remote));
	json_object_set_new(o, "unknown", json_integer((json_int_t)p->unknown));
	json_object_set_new(o, "remote_fraction", jfrac(p->remote_fraction));
	json_object_set_new(o, "latency_ms", json_real(p->latency_ms));
	json_object_set_new(o, "bandwidth_ms", p->bandwidth_ms < 0 ? json_null() : json_real(p->bandwidth_ms));
	json_object_set_new(o, "stall_ms", json_real(p->stall_ms));
	return o;
}

static json_t *json_out(const struct wr *w)
{
	const struct nk__job *j = w->j;
	json_t *o = json_object(), *pairs = json_array(), *map = json_array(), *tot = json_object(), *warn = json_array();
	json_object_set_new(o, "format", json_string("numakit-rankmap-whatif"));
	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "program", json_string(j->program));
	json_object_set_new(o, "ranks", json_integer((json_int_t)w->n));
	json_object_set_new(o, "hosts", json_integer((json_int_t)j->n_hosts));
	json_object_set_new(o, "host_distance", json_real(w->env.host_dist));
	json_object_set_new(o, "cost_profiled", json_real(w->before / 10));
	json_object_set_new(o, "cost_mapped", json_real(w->after / 10));
	for (size_t p = 0; p < w->n_pairs; p++) {
		const struct wr_pair *x = &w->pairs[p];
		json_t *e = json_object();
		json_object_set_new(e, "ranks", json_pack("[ii]", j->ranks[x->a].rank, j->ranks[x->b].rank));
		json_object_set_new(e, "bytes", json_real(x->bytes));
		json_object_set_new(e, "distance_profiled", json_real(x->d0));
		json_object_set_new(e, "distance_mapped", json_real(x->d1));
		json_object_set_new(e, "cost_profiled", json_real(x->bytes * x->d0 / 10));
		json_object_set_new(e, "cost_mapped", json_real(x->bytes * x->d1 / 10));
		json_array_append_new(pairs, e);
	}
	json_object_set_new(o, "pairs", pairs);
	for (size_t i = 0; i < w->n; i++) {
		const struct nk__job_rank *k = &j->ranks[i];
		json_t *e = json_object();
		json_object_set_new(e, "rank", json_integer(k->rank));
		json_object_set_new(e, "host_profiled", json_string(k->host));
		json_object_set_new(e, "node_profiled", json_integer(k->cpu_node));
		json_object_set_new(e, "host", json_string(j->hosts[w->host[i]].name));
		json_object_set_new(e, "node", json_integer(w->node[i]));
		json_object_set_new(e, "in_map", json_boolean(w->in_map[i]));
		json_object_set_new(e, "moved", json_boolean(w->host[i] != k->host_index || w->node[i] != k->cpu_node));
		json_object_set_new(e, "traffic_bytes", json_real(w->env.traffic[i]));
		json_object_set_new(e, "profiled", scen(&w->pred[i][S_PROF]));
		json_object_set_new(e, "mapped", scen(&w->pred[i][S_FOLLOW]));
		json_object_set_new(e, "memory_stays", scen(&w->pred[i][S_STAY]));
		json_array_append_new(map, e);
	}
	json_object_set_new(o, "map", map);
	struct nk__whatif_pred t0 = total(w, S_PROF), t1 = total(w, S_FOLLOW), t2 = total(w, S_STAY);
	json_object_set_new(tot, "profiled", scen(&t0));
	json_object_set_new(tot, "mapped", scen(&t1));
	json_object_set_new(tot, "memory_stays", scen(&t2));
	json_object_set_new(o, "total", tot);
	json_object_set_new(o, "assumption", json_string(ASSUMPTION));
	for (size_t i = 0; i < w->n_warn; i++)
		json_array_append_new(warn, json_string(w->warn[i]));
	json_object_set_new(o, "warnings", warn);
	json_object_set_new(o, "note", json_string("stall times are estimates for comparing mappings, not predictions "
						   "of run time"));
	return o;
}

int nk_profile_rankmap_whatif(const nk_profile *p, const nk_rank_slot *slots, size_t n, int format, char **out,
			      nk_error *err)
{
	if (!p || !out || (n && !slots))
		return nk__error(err, NK_EINVAL, "nk_profile_rankmap_whatif: NULL argument");
	if (format != NK_REPORT_TEXT && format != NK_REPORT_JSON)
		return nk__error(err, NK_EINVAL, "nk_profile_rankmap_whatif: format %d is not text or JSON", format);
	const struct nk__job *j = nk__profile_job(p);
	if (!j)
		return nk__error(err, NK_EINVAL, "not a job's profile: a rank mapping needs the rank files of a job "
				 "(`numakit profile` under an MPI launcher)");
	struct wr w = { .j = j, .n = j->n_ranks };
	int rc;
	if (j->n_ranks > NK__RM_MAX_RANKS)
		return nk__error(err, NK_EINVAL, "%zu ranks: rank mapping goes up to %d", j->n_ranks, NK__RM_MAX_RANKS);
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *k = &j->ranks[i];
		if (k->rank < 0 || !k->host || !k->host[0])
			return nk__error(err, NK_EINVAL, "rank %d (%s): its host is unknown", k->rank, k->path);
		if (k->cpu_node < 0)
			return nk__error(err, NK_EINVAL, "rank %d (%s): the node it ran on is unknown (no sample)", k->rank,
					 k->path);
	}
	if ((rc = nk__job_rm_env_load(j, &w.env, err)))
		return rc;
	w.host = malloc((w.n ? w.n : 1) * sizeof *w.host);
	w.node = malloc((w.n ? w.n : 1) * sizeof *w.node);
	w.in_map = calloc(w.n ? w.n : 1, 1);
	w.pred = calloc(w.n ? w.n : 1, sizeof *w.pred);
	if (!w.host || !w.node || !w.in_map || !w.pred) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	for (size_t i = 0; i < w.n; i++) {
		w.host[i] = j->ranks[i].host_index;
		w.node[i] = j->ranks[i].cpu_node;
	}
	if ((rc = apply_slots(&w, slots, n, err)) || (rc = comm(&w, err)) || (rc = memory(&w, err)))
		goto out;
	struct nk__strbuf b = { 0 };
	if (format == NK_REPORT_JSON) {
		json_t *o = json_out(&w);
		char *t = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) : NULL;
		json_decref(o);
		if (t)
			nk__strbuf_printf(&b, "%s\n", t);
		else
			w.oom = 1;
		free(t);
	} else {
		text_out(&w, &b);
	}
	if (!b.s || b.oom || w.oom) {
		free(b.s);
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	*out = b.s;
out:
	wr_free(&w);
	return rc;
}
