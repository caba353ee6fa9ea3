/* SPDX-License-Identifier: BSD-3-Clause
 * A plan for the ranks of a job, made relative to a share of the machine (docs/plan.md "Plans for the
 * ranks of a job"): nk_advice_share reads the share a plan refers to, nk_advice_resolve_share carries
 * every node id of the plan (entries' policies and page ranges, the evidence's dominant node and priced
 * candidates, an explicit pinning's cpus) onto another share by the rule of job/share.h.
 */
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "job/share.h"
#include "policy/policy_impl.h"
#include "util/error.h"

int nk_advice_share(const nk_advice *a, int *nodes, size_t cap)
{
	if (!a || (cap && !nodes))
		return NK_EINVAL;
	for (size_t i = 0; i < a->n_share && i < cap; i++)
		nodes[i] = a->share[i];
	return (int)a->n_share;
}

/* The policy text @p text with its node ids mapped (malloc'ed into *out); "pages" and "none" copied. */
static int map_policy(const char *text, const int *from, const int *to, size_t n, char **out, nk_error *err)
{
	if (!text || !strcmp(text, "pages") || !strcmp(text, "none")) {
		*out = text ? strdup(text) : NULL;
		return text && !*out ? nk__error(err, NK_ENOMEM, "out of memory") : 0;
	}
	nk_policy *p = NULL;
	int rc = nk_policy_parse(text, &p, err);
	if (rc)
		return rc;
	nk__policy_map_nodes(p, from, to, n);
	int len = nk_policy_format(p, NULL, 0);
	char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (s)
		nk_policy_format(p, s, (size_t)len + 1);
	nk_policy_free(p);
	if (!s)
		return nk__error(err, NK_ENOMEM, "out of memory");
	*out = s;
	return 0;
}

/* New texts for a candidate list (policies mapped), into @p out[n]. */
static int map_cands(const struct nk__aplan_cand *c, size_t nc, const int *from, const int *to, size_t n, char **out,
		     nk_error *err)
{
	for (size_t i = 0; i < nc; i++) {
		int rc = map_policy(c[i].policy, from, to, n, &out[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The k-th cpu of node a goes to the k-th cpu of its image. */
static int map_cpu(const nk_machine *m, const int *from, const int *to, size_t n, int cpu)
{
	for (size_t i = 0; i < n; i++) {
		int have = nk_machine_node_cpus(m, from[i], NULL, 0), want = nk_machine_node_cpus(m, to[i], NULL, 0);
		if (have <= 0 || have != want)
			continue;
		int *a = malloc((size_t)have * sizeof(int)), *b = malloc((size_t)want * sizeof(int)), r = -1;
		if (a && b && nk_machine_node_cpus(m, from[i], a, (size_t)have) == have &&
		    nk_machine_node_cpus(m, to[i], b, (size_t)want) == want)
			for (int k = 0; k < have; k++)
				if (a[k] == cpu)
					r = b[k];
		free(a);
		free(b);
		if (r >= 0)
			return r;
	}
	return -1;
}

static void free_texts(char **t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i]);
	free(t);
}

int nk_advice_resolve_share(nk_advice *a, const nk_machine *m, const int *nodes, size_t n, nk_error *err)
{
	if (!a || (n && !nodes))
		return nk__error(err, NK_EINVAL, "nk_advice_resolve_share: NULL argument");
	if (!a->n_share)
		return 0; /* an absolute plan applies as written */
	if (n != a->n_share)
		return nk__error(err, NK_EINVAL, "the plan was made for ranks on %zu node%s each, this rank's share has %zu",
				 a->n_share, a->n_share == 1 ? "" : "s", n);
	int *to = malloc(n * sizeof(int)), *map = malloc((size_t)a->n_nodes * sizeof(int));
	int *cpus = NULL;
	size_t n_texts = 0;
	for (size_t i = 0; i < a->n_entries; i++)
		n_texts += 1 + a->entries[i].ev.n_cands;
	for (size_t i = 0; i < a->n_left_alone; i++)
		n_texts += a->left_alone[i].n_cands;
	char **texts = calloc(n_texts ? n_texts : 1, sizeof(char *));
	int rc = 0;
	if (!to || !map || !texts) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		to[i] = nodes[i];
		for (size_t k = i; k > 0 && to[k] < to[k - 1]; k--) {
			int t = to[k];
			to[k] = to[k - 1];
			to[k - 1] = t;
		}
	}
	rc = nk__share_node_map(a->node_ids, (size_t)a->n_nodes, a->share, to, n, map);
	if (rc) {
		rc = nk__error(err, rc == NK_ENOMEM ? NK_ENOMEM : NK_EINVAL,
			       "this rank's share (%zu node%s) is not %zu distinct nodes of the plan's machine", n,
			       n == 1 ? "" : "s", n);
		goto done;
	}
	/* every new text first, so that a failure changes nothing */
	size_t t = 0;
	for (size_t i = 0; i < a->n_entries && !rc; i++) {
		struct nk__aplan_entry *e = &a->entries[i];
		rc = map_policy(e->policy, a->node_ids, map, (size_t)a->n_nodes, &texts[t++], err);
		if (!rc)
			rc = map_cands(e->ev.cands, e->ev.n_cands, a->node_ids, map, (size_t)a->n_nodes, &texts[t], err);
		t += e->ev.n_cands;
	}
	for (size_t i = 0; i < a->n_left_alone && !rc; i++) {
		rc = map_cands(a->left_alone[i].cands, a->left_alone[i].n_cands, a->node_ids, map, (size_t)a->n_nodes,
			       &texts[t], err);
		t += a->left_alone[i].n_cands;
	}
	if (!rc && a->pin.strategy && !strcmp(a->pin.strategy, "cpus") && a->pin.n_cpus) {
		if (!m) {
			rc = nk__error(err, NK_EINVAL, "the plan pins threads to cpus: resolving its share needs the machine");
			goto done;
		}
		if (!(cpus = malloc(a->pin.n_cpus * sizeof(int)))) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < a->pin.n_cpus && !rc; i++)
			if ((cpus[i] = map_cpu(m, a->node_ids, map, (size_t)a->n_nodes, a->pin.cpus[i])) < 0)
				rc = nk__error(err, NK_EINVAL, "pin: cpu %d has no counterpart in this rank's share (its "
						"node and the node it maps to differ in cpus)", a->pin.cpus[i]);
	}
	if (rc)
		goto done;
	/* commit */
	t = 0;
	for (size_t i = 0; i < a->n_entries; i++) {
		struct nk__aplan_entry *e = &a->entries[i];
		free(e->policy);
		e->policy = texts[t];
		texts[t++] = NULL;
		for (size_t r = 0; r < e->n_ranges; r++)
			e->ranges[r].node = nk__share_map_node(a->node_ids, map, (size_t)a->n_nodes, e->ranges[r].node);
		if (e->ev.dominant_node >= 0)
			e->ev.dominant_node = nk__share_map_node(a->node_ids, map, (size_t)a->n_nodes, e->ev.dominant_node);
		for (size_t c = 0; c < e->ev.n_cands; c++) {
			free(e->ev.cands[c].policy);
			e->ev.cands[c].policy = texts[t];
			texts[t++] = NULL;
		}
	}
	for (size_t i = 0; i < a->n_left_alone; i++)
		for (size_t c = 0; c < a->left_alone[i].n_cands; c++) {
			free(a->left_alone[i].cands[c].policy);
			a->left_alone[i].cands[c].policy = texts[t];
			texts[t++] = NULL;
		}
	if (cpus) {
		free(a->pin.cpus);
		a->pin.cpus = cpus;
		cpus = NULL;
	}
	for (size_t i = 0; i < n; i++)
		a->share[i] = to[i];
done:
	free_texts(texts, n_texts);
	free(to);
	free(map);
	free(cpus);
	return rc;
}
