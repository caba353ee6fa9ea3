/* SPDX-License-Identifier: BSD-3-Clause
 * The rank mapping of a job (issue 14 §3, docs/profile.md "Rank mapping"): the job's MPI traffic (job.c's
 * pairs) and the slots its ranks ran in (each rank's host and the node its threads ran on) made into a
 * mapping problem for src/job/rankmap.c, solved, and written as text, JSON or an Open MPI rankfile.  The
 * slots stay the job's: each node and host keeps its number of ranks.  The cost is communication x
 * distance: the bytes of each pair times the SLIT distance of their slots' nodes on one host, and
 * NK__RM_HOST_DIST between hosts.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/rankmap.h"
#include "profile/job.h"
#include "util/error.h"
#include "util/list.h"
#include "profile/report_fmt.h"
#include "util/strbuf.h"

#define NK__RM_HOST_DIST 100 /* a byte between hosts costs as much as at SLIT distance 100 (10 x a local one) */

struct rm {
	const struct nk__job *j;
	int n;
	struct nk__job_rm_env env; /* machines, host distance, edges, each rank's traffic */
	int *slot_rank;      /* [n] job rank index of each slot as profiled (slots by host, node, rank) */
	int *initial, *out;  /* [n] slot of each job rank index */
	int *group;          /* [n] (host, node) number of each slot */
	double *dist;
	double before, after;
};

void nk__job_rm_env_free(struct nk__job_rm_env *e, size_t n_hosts)
{
	for (size_t h = 0; e->m && h < n_hosts; h++)
		nk_machine_free(e->m[h]);
	free(e->m);
	free(e->edges);
	free(e->traffic);
	memset(e, 0, sizeof *e);
}

double nk__job_rm_dist(const struct nk__job_rm_env *e, size_t ha, int na, size_t hb, int nb)
{
	if (ha != hb)
		return e->host_dist;
	int x = nk_machine_distance(e->m[ha], na, nb);
	return x < 0 ? -1 : x;
}

int nk__job_rm_env_load(const struct nk__job *j, struct nk__job_rm_env *e, nk_error *err)
{
	size_t n = j->n_ranks;
	memset(e, 0, sizeof *e);
	if (!j->comm_ranks)
		return nk__error(err, NK_EINVAL, "the job's profile holds no MPI traffic: profile it again with the program "
				 "linked to Open MPI or an MPI of MPICH's ABI, without --no-mpi-traffic");
	e->m = calloc(j->n_hosts ? j->n_hosts : 1, sizeof *e->m);
	e->edges = malloc((j->n_pairs ? j->n_pairs : 1) * sizeof *e->edges);
	e->traffic = calloc(n ? n : 1, sizeof *e->traffic);
	if (!e->m || !e->edges || !e->traffic)
		goto nomem;
	e->host_dist = NK__RM_HOST_DIST;
	for (size_t h = 0; h < j->n_hosts; h++) {
		const struct nk__job_rank *first = &j->ranks[j->hosts[h].ranks[0]];
		int rc;
		if (!first->machine_json) {
			nk__job_rm_env_free(e, j->n_hosts);
			return nk__error(err, NK_EINVAL, "host %s: its machine is not in the profile", first->host);
		}
		if ((rc = nk_machine_load_buffer(first->machine_json, strlen(first->machine_json), &e->m[h], NULL))) {
			nk__job_rm_env_free(e, j->n_hosts);
			return nk__error(err, rc == NK_ENOMEM ? NK_ENOMEM : NK_EINVAL, "host %s: its machine in rank %d's "
					 "profile cannot be read", first->host, first->rank);
		}
		for (int a = 0; a < nk_machine_num_nodes(e->m[h]); a++)
			for (int b = 0; b < nk_machine_num_nodes(e->m[h]); b++) {
				int d = nk_machine_distance(e->m[h], nk_machine_node_id(e->m[h], a), nk_machine_node_id(e->m[h], b));
				if (2.0 * d > e->host_dist)
					e->host_dist = 2.0 * d; /* between hosts always dearer than within one */
			}
	}
	/* MPI ranks to job rank indices */
	int max_rank = 0;
	for (size_t i = 0; i < n; i++)
		max_rank = j->ranks[i].rank > max_rank ? j->ranks[i].rank : max_rank;
	int *idx = malloc(((size_t)max_rank + 1) * sizeof *idx);
	if (!idx)
		goto nomem;
	for (int i = 0; i <= max_rank; i++)
		idx[i] = -1;
	for (size_t i = 0; i < n; i++)
		if (j->ranks[i].rank >= 0)
			idx[j->ranks[i].rank] = (int)i;
	for (size_t i = 0; i < j->n_pairs; i++) {
		const struct nk__job_pair *p = &j->pairs[i];
		if (p->from < 0 || p->to < 0 || p->from > max_rank || p->to > max_rank || idx[p->from] < 0 || idx[p->to] < 0)
			continue; /* a peer without a rank file: its slot is unknown */
		e->edges[e->n_edges++] =
			(struct nk__rm_edge){ idx[p->from], idx[p->to], (double)(p->p2p_bytes + p->coll_bytes) };
	}
	free(idx);
	for (size_t k = 0; k < e->n_edges; k++) {
		e->traffic[e->edges[k].a] += e->edges[k].bytes;
		e->traffic[e->edges[k].b] += e->edges[k].bytes;
	}
	return 0;
nomem:
	nk__job_rm_env_free(e, j->n_hosts);
	return nk__error(err, NK_ENOMEM, "rank mapping: out of memory");
}

static void rm_free(struct rm *r)
{
	nk__job_rm_env_free(&r->env, r->j->n_hosts);
	free(r->slot_rank);
	free(r->initial);
	free(r->out);
	free(r->group);
	free(r->dist);
}

/* A slot as profiled: where job rank @p idx ran, the sort key of the slots. */
struct slot_key {
	size_t host;
	int node, rank, idx;
};

static int cmp_slot(const void *x, const void *y)
{
	const struct slot_key *a = x, *b = y;
	if (a->host != b->host)
		return a->host < b->host ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

static int setup(struct rm *r, nk_error *err)
{
	const struct nk__job *j = r->j;
	size_t n = j->n_ranks;
	int rc;
	if (!j->comm_ranks)
		return nk__error(err, NK_EINVAL, "the job's profile holds no MPI traffic: profile it again with the program "
				 "linked to Open MPI or an MPI of MPICH's ABI, without --no-mpi-traffic");
	if (n > NK__RM_MAX_RANKS)
		return nk__error(err, NK_EINVAL, "%zu ranks: rank mapping goes up to %d", n, NK__RM_MAX_RANKS);
	for (size_t i = 0; i < n; i++) {
		const struct nk__job_rank *k = &j->ranks[i];
		if (k->rank < 0 || !k->host || !k->host[0])
			return nk__error(err, NK_EINVAL, "rank %d (%s): its host is unknown", k->rank, k->path);
		if (k->cpu_node < 0)
			return nk__error(err, NK_EINVAL, "rank %d (%s): the node it ran on is unknown (no sample)", k->rank,
					 k->path);
	}
	r->n = (int)n;
	if ((rc = nk__job_rm_env_load(j, &r->env, err)))
		return rc;
	r->slot_rank = malloc(n * sizeof *r->slot_rank);
	r->initial = malloc(n * sizeof *r->initial);
	r->out = malloc(n * sizeof *r->out);
	r->group = malloc(n * sizeof *r->group);
	r->dist = malloc(n * n * sizeof *r->dist);
	if (!r->slot_rank || !r->initial || !r->out || !r->group || !r->dist)
		return nk__error(err, NK_ENOMEM, "rank mapping: out of memory");
	struct slot_key *keys = malloc(n * sizeof *keys);
	if (!keys)
		return nk__error(err, NK_ENOMEM, "rank mapping: out of memory");
	for (size_t i = 0; i < n; i++)
		keys[i] = (struct slot_key){ j->ranks[i].host_index, j->ranks[i].cpu_node, j->ranks[i].rank, (int)i };
	qsort(keys, n, sizeof *keys, cmp_slot);
	for (size_t i = 0; i < n; i++)
		r->slot_rank[i] = keys[i].idx;
	free(keys);
	for (size_t s = 0; s < n; s++) {
		const struct nk__job_rank *k = &j->ranks[r->slot_rank[s]], *prev = s ? &j->ranks[r->slot_rank[s - 1]] : NULL;
		r->initial[r->slot_rank[s]] = (int)s;
		r->group[s] = !prev ? 0 : prev->host_index == k->host_index && prev->cpu_node == k->cpu_node
						 ? r->group[s - 1] : r->group[s - 1] + 1;
	}
	for (size_t s = 0; s < n; s++) {
		const struct nk__job_rank *a = &j->ranks[r->slot_rank[s]];
		for (size_t t = 0; t < n; t++) {
			const struct nk__job_rank *b = &j->ranks[r->slot_rank[t]];
			double d = nk__job_rm_dist(&r->env, a->host_index, a->cpu_node, b->host_index, b->cpu_node);
			if (d < 0)
				return nk__error(err, NK_EINVAL, "host %s: node %d or %d is not in its machine", a->host,
						 a->cpu_node, b->cpu_node);
			r->dist[s * n + t] = s == t ? 0 : d;
		}
	}
	return 0;
}

/* The slot's host and node. */
static const struct nk__job_rank *slot_of(const struct rm *r, int s)
{
	return &r->j->ranks[r->slot_rank[s]];
}

/* The cpus of @p node on host @p h as a list ("0-3"), malloc'ed. */
static char *node_cpus(const struct rm *r, size_t h, int node)
{
	int n = nk_machine_node_cpus(r->env.m[h], node, NULL, 0);
	if (n < 0)
		return NULL;
	int *c = malloc(((size_t)n + 1) * sizeof *c);
	if (!c)
		return NULL;
	nk_machine_node_cpus(r->env.m[h], node, c, (size_t)n);
	char *s = nk__format_list_alloc(c, (size_t)n);
	free(c);
	return s;
}

static void text_out(const struct rm *r, struct nk__strbuf *b)
{
	const struct nk__job *j = r->j;
	char s1[64], s2[64];
	int moved = 0;
	for (int i = 0; i < r->n; i++)
		moved += r->out[i] != r->initial[i];
	nk__strbuf_printf(b, "numakit rank mapping: job of %s, %d ranks on %zu host%s\n", j->program, r->n, j->n_hosts,
			  j->n_hosts == 1 ? "" : "s");
	nk__strbuf_printf(b, "communication x distance (bytes x SLIT distance / 10, between hosts %.0f / 10):\n",
			  r->env.host_dist);
	nk__strbuf_printf(b, "  as profiled %s, proposed %s", nk__rep_size((uint64_t)(r->before / 10), s1, sizeof s1),
			  nk__rep_size((uint64_t)(r->after / 10), s2, sizeof s2));
	if (r->before > 0)
		nk__strbuf_printf(b, " (%+.1f%%)", 100.0 * (r->after - r->before) / r->before);
	nk__strbuf_printf(b, "\n");
	if (!moved) {
		nk__strbuf_printf(b, "the ranks already sit as well as the search found: nothing to change\n");
		return;
	}
	nk__strbuf_printf(b, "%d of %d ranks move; each node and host keeps its number of ranks (traffic: bytes sent\n"
			     "and received, means per run)\n\n", moved, r->n);
	nk__strbuf_printf(b, "%-6s %-24s %-24s %10s\n", "rank", "profiled (host:node)", "proposed", "traffic");
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *k = &j->ranks[i], *to = slot_of(r, r->out[i]);
		char at[64], fit1[32], fit2[32];
		snprintf(at, sizeof at, "%s:%d", k->host, k->cpu_node);
		nk__strbuf_printf(b, "%-6d %-24s ", k->rank, nk__fit(at, 24, fit1, sizeof fit1));
		snprintf(at, sizeof at, "%s:%d", to->host, to->cpu_node);
		nk__strbuf_printf(b, "%-24s %10s%s\n", nk__fit(at, 24, fit2, sizeof fit2),
				  nk__rep_size((uint64_t)r->env.traffic[i], s1, sizeof s1),
				  r->out[i] != r->initial[i] ? "  moves" : "");
	}
	nk__strbuf_printf(b, "\nOpen MPI: numakit advise --ranks -o RANKFILE JOB, then mpirun --mca "
			     "rmaps_rank_file_physical 1 -rf RANKFILE ...\n");
	nk__strbuf_printf(b, "numakit run (any launcher; each rank binds its cpus and memory to its node, on the host\n"
			     "the launcher started it on, which must be the map's):\n"
			     "  mpirun ... numakit run --rank-map RANKFILE -- %s\n", j->program);
}

static json_t *json_out(const struct rm *r)
{
	const struct nk__job *j = r->j;
	json_t *o = json_object(), *map = json_array();
	json_object_set_new(o, "format", json_string("numakit-rank-map"));
	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "program", json_string(j->program));
	json_object_set_new(o, "ranks", json_integer(r->n));
	json_object_set_new(o, "hosts", json_integer((json_int_t)j->n_hosts));
	json_object_set_new(o, "host_distance", json_real(r->env.host_dist));
	json_object_set_new(o, "cost_profiled", json_real(r->before / 10));
	json_object_set_new(o, "cost_proposed", json_real(r->after / 10));
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *k = &j->ranks[i], *to = slot_of(r, r->out[i]);
		json_t *e = json_object();
		char *cpus = node_cpus(r, to->host_index, to->cpu_node);
		json_object_set_new(e, "rank", json_integer(k->rank));
		json_object_set_new(e, "host_profiled", json_string(k->host));
		json_object_set_new(e, "node_profiled", json_integer(k->cpu_node));
		json_object_set_new(e, "host", json_string(to->host));
		json_object_set_new(e, "node", json_integer(to->cpu_node));
		json_object_set_new(e, "cpus", cpus ? json_string(cpus) : json_null());
		json_object_set_new(e, "traffic_bytes", json_real(r->env.traffic[i]));
		free(cpus);
		json_array_append_new(map, e);
	}
	json_object_set_new(o, "map", map);
	return o;
}

static void rankfile_out(const struct rm *r, struct nk__strbuf *b)
{
	const struct nk__job *j = r->j;
	nk__strbuf_printf(b, "# numakit advise --ranks: job of %s, communication x distance %.0f -> %.0f\n", j->program,
			  r->before / 10, r->after / 10);
	nk__strbuf_printf(b, "# slots are physical cpus (the node's): mpirun --mca rmaps_rank_file_physical 1 -rf FILE ...\n");
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *k = &j->ranks[i], *to = slot_of(r, r->out[i]);
		char *cpus = node_cpus(r, to->host_index, to->cpu_node);
		nk__strbuf_printf(b, "rank %d=%s slot=%s\n", k->rank, to->host, cpus ? cpus : "?");
		free(cpus);
	}
}

int nk__job_rankmap(const struct nk__job *j, int format, char **out, nk_error *err)
{
	if (!j || !out || (format != NK_REPORT_TEXT && format != NK_REPORT_JSON && format != NK__RANKMAP_OPENMPI))
		return nk__error(err, NK_EINVAL, "nk__job_rankmap: bad argument");
	struct rm r = { .j = j };
	int rc = setup(&r, err);
	if (!rc) {
		struct nk__rm_problem p = { r.n, r.dist, r.env.edges, r.env.n_edges, r.initial, r.group };
		rc = nk__rm_solve(&p, r.out);
		if (rc)
			rc = nk__error(err, rc, "rank mapping: %s", nk_strerror(rc));
		else {
			r.before = nk__rm_cost(&p, r.initial);
			r.after = nk__rm_cost(&p, r.out);
		}
	}
	if (!rc) {
		struct nk__strbuf b = { 0 };
		if (format == NK_REPORT_JSON) {
			json_t *o = json_out(&r);
			char *t = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
			json_decref(o);
			if (t)
				nk__strbuf_printf(&b, "%s\n", t);
			free(t);
		} else if (format == NK_REPORT_TEXT) {
			text_out(&r, &b);
		} else {
			rankfile_out(&r, &b);
		}
		if (!b.s || b.oom) {
			free(b.s);
			rc = nk__error(err, NK_ENOMEM, "rank mapping: out of memory");
		} else {
			*out = b.s;
		}
	}
	rm_free(&r);
	return rc;
}
