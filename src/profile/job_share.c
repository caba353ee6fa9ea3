/* SPDX-License-Identifier: BSD-3-Clause
 * A job's ranks pooled relative to their shares (docs/plan.md "Plans for the ranks of a job").  Ranks
 * placed each on their own nodes (`numakit run --cpus rank`, a launcher's binding) run the same code on
 * different nodes: pooled as placed, rank 1's threads on nodes 2-3 would be priced against rank 0's
 * memory on nodes 0-1 and no plan with node lists could serve both.  When every rank says which cpus it
 * was given (RUN job "cpus") and their shares are the same number of nodes, each rank's nodes and cpus
 * are carried into the frame of the first rank's share by the rule of job/share.h before the ranks are
 * joined: the pooled analysis, advise and whatif then see every rank as if it ran where the first did,
 * and the plan records that share (machine.share), which each rank resolves onto its own when it runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/share.h"
#include "profile/job.h"
#include "profile/nkp.h"
#include "util/error.h"
#include "util/list.h"
#include "util/strbuf.h"

void nk__job_frame_clear(struct nk__job_frame *f)
{
	if (!f)
		return;
	free(f->share);
	free(f->note);
	memset(f, 0, sizeof(*f));
}

/* The nodes of cpus @p cpus, increasing, into @p out; 0, -1 (a cpu the machine lacks), -2 (out of memory). */
static int share_of(const nk_machine *m, const int *cpus, size_t n, nk__ilist *out)
{
	for (size_t i = 0; i < n; i++) {
		nk_cpu_info ci;
		if (nk_machine_cpu_info(m, cpus[i], &ci) || ci.node < 0)
			return -1;
		if (nk__ilist_push(out, ci.node))
			return -2;
	}
	nk__ilist_normalize(out);
	return 0;
}

static void print_nodes(struct nk__strbuf *b, const int *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		nk__strbuf_printf(b, "%s%d", i ? "," : "", v[i]);
}

/* The cpu map that goes with a node map: the k-th cpu of node all[i] -> the k-th cpu of map[i].
 * @p cpu_from / @p cpu_to: n_cpus pairs.  0, -1 (a node and its image differ in cpus), -2. */
static int cpu_map_of(const nk_machine *m, const int *all, const int *map, size_t n_all, int **cpu_from, int **cpu_to,
		      size_t *n_pairs)
{
	int total = nk_machine_num_cpus(m);
	int *f = malloc((size_t)(total > 0 ? total : 1) * sizeof(int)), *t = malloc((size_t)(total > 0 ? total : 1) * sizeof(int));
	size_t k = 0;
	int rc = 0;
	if (!f || !t)
		rc = -2;
	for (size_t i = 0; i < n_all && !rc; i++) {
		int na = nk_machine_node_cpus(m, all[i], NULL, 0), nb = nk_machine_node_cpus(m, map[i], NULL, 0);
		if (na < 0 || na != nb || k + (size_t)na > (size_t)total) {
			rc = -1;
			break;
		}
		if (nk_machine_node_cpus(m, all[i], f + k, (size_t)na) != na ||
		    nk_machine_node_cpus(m, map[i], t + k, (size_t)nb) != nb) {
			rc = -1;
			break;
		}
		k += (size_t)na;
	}
	if (rc) {
		free(f);
		free(t);
		return rc;
	}
	*cpu_from = f;
	*cpu_to = t;
	*n_pairs = k;
	return 0;
}

/* A cpu through the pairs (@p from[i] -> @p to[i]); unknown (< 0) and unlisted cpus stay. */
static int cpu_of(const int *from, const int *to, size_t n, int x)
{
	if (x < 0)
		return x;
	for (size_t i = 0; i < n; i++)
		if (from[i] == x)
			return to[i];
	return x;
}

/* Carry every node and cpu of @p p through the maps. */
static void carry(struct nk__nkp_profile *p, const int *all, const int *map, size_t n_all, const int *cf, const int *ct,
		  size_t nc)
{
	for (size_t i = 0; i < p->n_procs; i++) {
		struct nk__nkp_process_data *pd = &p->procs[i];
		for (size_t s = 0; s < pd->n_samples; s++) {
			struct nk__nkp_sample *x = &pd->samples[s];
			x->cpu = (int16_t)cpu_of(cf, ct, nc, x->cpu);
			x->cpu_node = (int16_t)nk__share_map_node(all, map, n_all, x->cpu_node);
			x->page_node = (int16_t)nk__share_map_node(all, map, n_all, x->page_node);
		}
		for (size_t t = 0; t < pd->n_threads; t++)
			pd->threads[t].cpu = cpu_of(cf, ct, nc, pd->threads[t].cpu);
	}
}

int nk__job_frame_apply(struct nk__nkp_profile *const *ps, const struct nk__job_peek *pk, size_t n,
			struct nk__job_frame *out, nk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!n || !ps[0]->machine_json)
		return 0;
	nk_machine *m = NULL;
	if (nk_machine_load_buffer(ps[0]->machine_json, strlen(ps[0]->machine_json), &m, NULL))
		return 0; /* the pooled analysis reports the machine; nothing to carry without it */
	nk__ilist *shares = calloc(n, sizeof(*shares));
	int nn = nk_machine_num_nodes(m);
	int *all = malloc((size_t)(nn > 0 ? nn : 1) * sizeof(int));
	int **maps = calloc(n, sizeof(int *)); /* each rank's node map (all[] order), from the check to the carry */
	int **cf = calloc(n, sizeof(int *)), **ct = calloc(n, sizeof(int *));
	size_t *nc = calloc(n, sizeof(size_t));
	struct nk__strbuf b = { 0 };
	int rc = 0, same = 1, distances_differ = 0;
	if (!shares || !all || !maps || !cf || !ct || !nc) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < nn; i++)
		all[i] = nk_machine_node_id(m, i);
	for (size_t i = 0; i < n; i++) {
		if (!pk[i].n_cpus)
			goto done; /* a rank that does not say where it ran (an older profile): pooled as placed */
		int r = share_of(m, pk[i].cpus, pk[i].n_cpus, &shares[i]);
		if (r == -2) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto done;
		}
		if (r)
			goto done;
		same &= shares[i].n == shares[0].n && !memcmp(shares[i].v, shares[0].v, shares[0].n * sizeof(int));
	}
	if (same)
		goto done; /* every rank on the same nodes: nothing to carry */
	for (size_t i = 1; i < n; i++)
		if (shares[i].n != shares[0].n) {
			nk__strbuf_printf(&b, "the ranks ran on shares of different sizes (rank %d: nodes ", pk[0].rank);
			print_nodes(&b, shares[0].v, shares[0].n);
			nk__strbuf_printf(&b, "; rank %d: nodes ", pk[i].rank);
			print_nodes(&b, shares[i].v, shares[i].n);
			nk__strbuf_printf(&b, "): pooled as placed, so the plan's node ids are the machine's own");
			goto noted;
		}
	for (size_t i = 0; i < n; i++) {
		if (!(maps[i] = malloc((size_t)(nn > 0 ? nn : 1) * sizeof(int)))) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto done;
		}
		if (nk__share_node_map(all, (size_t)nn, shares[i].v, shares[0].v, shares[0].n, maps[i])) {
			rc = nk__error(err, NK_EINVAL, "rank %d: its share is not on the machine", pk[i].rank);
			goto done;
		}
		int r = cpu_map_of(m, all, maps[i], (size_t)nn, &cf[i], &ct[i], &nc[i]);
		if (r == -2) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto done;
		}
		if (r) {
			nk__strbuf_printf(&b, "rank %d's share (nodes ", pk[i].rank);
			print_nodes(&b, shares[i].v, shares[i].n);
			nk__strbuf_printf(&b, ") and rank %d's differ in cpus per node: pooled as placed, so the plan's "
					      "node ids are the machine's own", pk[0].rank);
			goto noted;
		}
		for (int x = 0; x < nn; x++)
			for (int y = 0; y < nn; y++)
				distances_differ |= nk_machine_distance(m, all[x], all[y]) !=
						    nk_machine_distance(m, maps[i][x], maps[i][y]);
	}
	/* every rank carries: do it */
	for (size_t i = 0; i < n; i++)
		carry(ps[i], all, maps[i], (size_t)nn, cf[i], ct[i], nc[i]);
	if (!(out->share = malloc(shares[0].n * sizeof(int)))) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto done;
	}
	memcpy(out->share, shares[0].v, shares[0].n * sizeof(int));
	out->n_share = shares[0].n;
	nk__strbuf_printf(&b, "the %zu ranks ran on shares of %zu node%s each (", n, shares[0].n,
			  shares[0].n == 1 ? "" : "s");
	for (size_t i = 0; i < n && i < 4; i++) {
		nk__strbuf_printf(&b, "%srank %d: ", i ? "; " : "", pk[i].rank);
		print_nodes(&b, shares[i].v, shares[i].n);
	}
	nk__strbuf_printf(&b, "%s): pooled relative to their shares, in rank %d's; the plan's node ids refer to that "
			      "share and each rank applies them to its own", n > 4 ? "; ..." : "", pk[0].rank);
	if (distances_differ)
		nk__strbuf_printf(&b, " (the shares' distances to the other nodes differ: predictions use rank %d's)",
				  pk[0].rank);
noted:
	if (!(out->note = nk__strbuf_take(&b))) {
		nk__job_frame_clear(out);
		rc = nk__error(err, NK_ENOMEM, "out of memory");
	}
done:
	free(b.s);
	for (size_t i = 0; i < n; i++) {
		if (shares)
			nk__ilist_free(&shares[i]);
		if (maps)
			free(maps[i]);
		if (cf)
			free(cf[i]);
		if (ct)
			free(ct[i]);
	}
	free(shares);
	free(all);
	free(maps);
	free(cf);
	free(ct);
	free(nc);
	nk_machine_free(m);
	return rc;
}
