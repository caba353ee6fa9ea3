/* SPDX-License-Identifier: BSD-3-Clause
 * Advice against a machine (nk_advice_check): every node an entry names exists, has memory and is
 * allowed (cpuset) where pages go, every policy builds for that machine, and pinned cpus exist and are
 * allowed.  Reads the advice, changes nothing, and knows nothing of JSON or profiles.
 */
#include <stdio.h>
#include <string.h>

#include "advise/advice.h"
#include "policy/policy_impl.h"
#include "util/error.h"

/* ============================================================ machine check */

static int node_ok(const nk_machine *m, int node, int need_memory, const char *where, const char *what,
		   nk_error *err)
{
	int f = nk_machine_node_flags(m, node);
	if (f < 0) {
		int ids[64], n = 0, cnt = nk_machine_num_nodes(m);
		for (int i = 0; i < cnt && n < 64; i++)
			ids[n++] = nk_machine_node_id(m, i);
		char list[200];
		nk_format_list(ids, (size_t)n, list, sizeof list);
		return nk__error(err, NK_ENODEV, "%s: %s node %d does not exist on this machine (nodes %s)", where, what,
				 node, list);
	}
	if (need_memory && !(f & NK_NODE_HAS_MEMORY))
		return nk__error(err, NK_ENODEV, "%s: %s node %d has no memory", where, what, node);
	if (need_memory && !(f & NK_NODE_MEM_ALLOWED))
		return nk__error(err, NK_EPERM, "%s: %s node %d: this process may not allocate there (cpuset)", where,
				 what, node);
	return 0;
}

static int check_policy(const nk_machine *m, const struct nk__aplan_entry *e, const char *where, nk_error *err)
{
	nk_policy *p = NULL;
	nk_error perr = { 0, "" };
	int rc = nk_policy_parse(e->policy, &p, &perr);

	if (rc)
		return nk__error(err, rc == NK_ENOMEM ? rc : NK_EINVAL, "%s: policy: %s", where, perr.message);
	for (size_t i = 0; !rc && i < p->nnodes; i++)
		rc = node_ok(m, p->nodes[i], 1, where, "policy", err);
	for (size_t i = 0; !rc && i < p->nweights; i++)
		rc = node_ok(m, p->wnodes[i], 1, where, "policy weight", err);
	/* threads and home may name cpu-only nodes: blocks then go to the nearest memory (docs/policies.md) */
	for (size_t i = 0; !rc && i < p->nthreads; i++)
		rc = node_ok(m, p->threads[i], 0, where, "policy thread", err);
	if (!rc && p->home >= 0)
		rc = node_ok(m, p->home, 0, where, "policy home", err);
	if (!rc) {
		/* a dummy 2D region of 64 x one-page rows: every kind builds on it, geometry or not */
		uint64_t ps = nk_machine_page_size(m);
		if (!ps)
			ps = 4096;
		nk_region r = { NULL, (size_t)(64 * ps), 8, 2, { 64, (size_t)(ps / 8), 0 } };
		nk_plan *pl = NULL;
		rc = nk_plan_build(m, p, &r, &pl, &perr);
		if (rc)
			rc = nk__error(err, rc, "%s: %s", where, perr.message);
		nk_plan_free(pl);
	}
	nk_policy_free(p);
	return rc;
}

int nk_advice_check(const nk_advice *a, const nk_machine *m, nk_error *err)
{
	char where[200];
	int rc;

	if (!a || !m)
		return nk__error(err, NK_EINVAL, "nk_advice_check: NULL argument");
	for (size_t i = 0; i < a->n_entries; i++) {
		const struct nk__aplan_entry *e = &a->entries[i];
		nk__aplan_entry_where(where, sizeof where, i, e->key);
		if (!e->policy || !e->key)
			return nk__error(err, NK_EINVAL, "%s: no %s", where, e->key ? "policy" : "key");
		if (!strcmp(e->policy, "none"))
			continue;
		if (!strcmp(e->policy, "pages")) {
			for (size_t k = 0; k < e->n_ranges; k++) {
				char w[240];
				snprintf(w, sizeof w, "%s: pages[%zu]", where, k);
				/* a node repeated in consecutive ranges is checked once */
				if (k && e->ranges[k].node == e->ranges[k - 1].node)
					continue;
				if ((rc = node_ok(m, e->ranges[k].node, 1, w, "", err)))
					return rc;
			}
			continue;
		}
		if ((rc = check_policy(m, e, where, err)))
			return rc;
	}
	if (a->pin.strategy && !strcmp(a->pin.strategy, "cpus")) {
		for (size_t i = 0; i < a->pin.n_cpus; i++) {
			nk_cpu_info ci;
			if (nk_machine_cpu_info(m, a->pin.cpus[i], &ci))
				return nk__error(err, NK_ENODEV, "pin: cpus[%zu]: cpu %d does not exist on this machine", i,
						 a->pin.cpus[i]);
			if (!ci.allowed)
				return nk__error(err, NK_EPERM, "pin: cpus[%zu]: this process may not run on cpu %d", i,
						 a->pin.cpus[i]);
		}
	}
	return 0;
}
