/* SPDX-License-Identifier: BSD-3-Clause
 * Advice (nk_advice, docs/plan.md), the struct and its edits: create/free, entries added, found and
 * replaced (nk_advice_set, by hand), warnings and left-alone records, match keys, evidence copied from
 * an analysis variable.  No JSON here (advice_read.c, advice_write.c) and no machine (advice_check.c).
 */
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "profile/analysis.h"
#include "util/error.h"

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* strdup that reports failure: 0, or -1 when @p s was non-NULL and the copy failed. */
static int dup_into(char **dst, const char *s)
{
	*dst = NULL;
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -1;
}

int nk__aplan_key_valid(const char *key)
{
	static const char *const prefixes[] = { "static:", "heap:", "name:" };

	if (!key)
		return 0;
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(key, prefixes[i], n) && key[n])
			return 1;
	}
	return 0;
}

int nk__aplan_key_local(const char *key)
{
	for (const char *s = key ? strstr(key, ":pid") : NULL; s; s = strstr(s + 1, ":pid"))
		if (s[4] >= '0' && s[4] <= '9')
			return 1;
	return 0;
}

void nk__aplan_evidence_unknown(struct nk__aplan_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->read_fraction = -1;
	ev->regularity = -1;
	ev->dominant_node = -1;
	ev->ci_lo = ev->ci_hi = -1;
	ev->samples_effective = -1;
	ev->noise_ms = -1;
}

void nk__aplan_cands_free(struct nk__aplan_cand *cands, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(cands[i].policy);
	free(cands);
}

void nk__aplan_evidence_clear(struct nk__aplan_evidence *ev)
{
	free(ev->diagnosis);
	nk__aplan_cands_free(ev->cands, ev->n_cands);
	nk__aplan_evidence_unknown(ev);
}

int nk__aplan_cands_add(struct nk__aplan_cand **cands, size_t *n, const char *policy, double remote_fraction,
			double stall_ms)
{
	struct nk__aplan_cand *c = realloc(*cands, (*n + 1) * sizeof(*c));
	if (!c)
		return NK_ENOMEM;
	*cands = c;
	if (!(c[*n].policy = strdup(policy)))
		return NK_ENOMEM;
	c[*n].remote_fraction = remote_fraction;
	c[*n].stall_ms = stall_ms;
	(*n)++;
	return 0;
}

int nk__aplan_cand_add(struct nk__aplan_evidence *ev, const char *policy, double remote_fraction, double stall_ms)
{
	return nk__aplan_cands_add(&ev->cands, &ev->n_cands, policy, remote_fraction, stall_ms);
}

void nk__aplan_evidence_of(struct nk__aplan_evidence *ev, const struct nk__an_var *v)
{
	uint64_t known = v->local + v->remote, typed = v->reads + v->writes;

	nk__aplan_evidence_unknown(ev);
	ev->size = v->size;
	ev->samples = v->samples;
	ev->threads = v->threads;
	ev->remote_fraction = known ? (double)v->remote / (double)known : 0;
	if (v->known_samples) {
		ev->ci_lo = v->ci_lo;
		ev->ci_hi = v->ci_hi;
		ev->samples_effective = v->n_eff;
	}
	ev->read_fraction = typed ? (double)v->reads / (double)typed : -1;
	ev->regularity = v->regularity >= 0 ? v->regularity : -1;
	ev->shared_pages = v->pages ? (double)v->pages_cross_shared / (double)v->pages : 0;
	ev->dominant_node = v->dominant_node >= 0 ? v->dominant_node : -1;
	ev->dominant_share = v->dominant_node >= 0 ? v->dominant_share : 0;
	ev->diagnosis = xstrdup(nk__an_diag_name(v->diag));
}

/* ------------------------------------------------------------ struct helpers */

void nk__aplan_entry_clear(struct nk__aplan_entry *e)
{
	if (!e)
		return;
	free(e->variable);
	free(e->key);
	free(e->policy);
	free(e->phase);
	free(e->ranges);
	free(e->reason);
	nk__aplan_evidence_clear(&e->ev);
	memset(e, 0, sizeof(*e));
}

static int entry_copy(struct nk__aplan_entry *d, const struct nk__aplan_entry *s)
{
	*d = *s;
	d->variable = d->key = d->policy = d->phase = d->reason = d->ev.diagnosis = NULL;
	d->ranges = NULL;
	d->ev.cands = NULL;
	d->ev.n_cands = 0;
	for (size_t i = 0; i < s->ev.n_cands; i++)
		if (nk__aplan_cand_add(&d->ev, s->ev.cands[i].policy, s->ev.cands[i].remote_fraction,
				       s->ev.cands[i].stall_ms))
			goto oom;
	if (dup_into(&d->variable, s->variable) || dup_into(&d->key, s->key) || dup_into(&d->policy, s->policy) ||
	    dup_into(&d->phase, s->phase) || dup_into(&d->reason, s->reason) ||
	    dup_into(&d->ev.diagnosis, s->ev.diagnosis))
		goto oom;
	if (s->n_ranges) {
		d->ranges = malloc(s->n_ranges * sizeof(*d->ranges));
		if (!d->ranges)
			goto oom;
		memcpy(d->ranges, s->ranges, s->n_ranges * sizeof(*d->ranges));
	}
	return 0;
oom:
	nk__aplan_entry_clear(d);
	return NK_ENOMEM;
}

int nk__aplan_add(nk_advice *a, const struct nk__aplan_entry *e)
{
	if (!a || !e)
		return NK_EINVAL;
	struct nk__aplan_entry *v = realloc(a->entries, (a->n_entries + 1) * sizeof(*v));
	if (!v)
		return NK_ENOMEM;
	a->entries = v;
	if (entry_copy(&v[a->n_entries], e))
		return NK_ENOMEM;
	a->n_entries++;
	return 0;
}

static int same_phase(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

struct nk__aplan_entry *nk__aplan_find(nk_advice *a, const char *key, int when, const char *phase)
{
	if (!a || !key)
		return NULL;
	for (size_t i = 0; i < a->n_entries; i++) {
		struct nk__aplan_entry *e = &a->entries[i];
		if (e->key && !strcmp(e->key, key) && e->when == when &&
		    (when != NK__WHEN_PHASE || same_phase(e->phase, phase)))
			return e;
	}
	return NULL;
}

int nk__aplan_warn(nk_advice *a, const char *msg)
{
	if (!a || !msg)
		return NK_EINVAL;
	char **w = realloc(a->warnings, (a->n_warnings + 1) * sizeof(*w));
	if (!w)
		return NK_ENOMEM;
	a->warnings = w;
	if (!(w[a->n_warnings] = strdup(msg)))
		return NK_ENOMEM;
	a->n_warnings++;
	return 0;
}

static void skip_clear(struct nk__aplan_skip *s)
{
	free(s->key);
	free(s->variable);
	free(s->reason);
	nk__aplan_cands_free(s->cands, s->n_cands);
	memset(s, 0, sizeof(*s));
}

int nk__aplan_skip_priced(nk_advice *a, const char *key, const char *variable, const char *reason,
			  const struct nk__aplan_cand *cands, size_t nc)
{
	if (!a || !key)
		return NK_EINVAL;
	struct nk__aplan_skip *s = realloc(a->left_alone, (a->n_left_alone + 1) * sizeof(*s));
	if (!s)
		return NK_ENOMEM;
	a->left_alone = s;
	struct nk__aplan_skip *n = &s[a->n_left_alone];
	memset(n, 0, sizeof(*n));
	int bad = dup_into(&n->key, key) || dup_into(&n->variable, variable) || dup_into(&n->reason, reason);
	for (size_t i = 0; i < nc && !bad; i++)
		bad = nk__aplan_cands_add(&n->cands, &n->n_cands, cands[i].policy, cands[i].remote_fraction,
					  cands[i].stall_ms) != 0;
	if (bad) {
		skip_clear(n);
		return NK_ENOMEM;
	}
	a->n_left_alone++;
	return 0;
}

int nk__aplan_skip(nk_advice *a, const char *key, const char *variable, const char *reason)
{
	return nk__aplan_skip_priced(a, key, variable, reason, NULL, 0);
}

static void pin_clear(struct nk__aplan_pin *p)
{
	free(p->strategy);
	free(p->cpus);
	free(p->sharing);
	free(p->reason);
	memset(p, 0, sizeof(*p));
}

void nk_advice_free(nk_advice *a)
{
	if (!a)
		return;
	free(a->program);
	free(a->profile);
	free(a->node_ids);
	free(a->share);
	pin_clear(&a->pin);
	for (size_t i = 0; i < a->n_entries; i++)
		nk__aplan_entry_clear(&a->entries[i]);
	free(a->entries);
	for (size_t i = 0; i < a->n_warnings; i++)
		free(a->warnings[i]);
	free(a->warnings);
	for (size_t i = 0; i < a->n_left_alone; i++)
		skip_clear(&a->left_alone[i]);
	free(a->left_alone);
	free(a);
}

int nk_advice_create(nk_advice **out)
{
	if (!out)
		return NK_EINVAL;
	nk_advice *a = calloc(1, sizeof(*a));
	if (!a)
		return NK_ENOMEM;
	a->version = NK__APLAN_VERSION;
	*out = a;
	return 0;
}

size_t nk_advice_num_entries(const nk_advice *a)
{
	return a ? a->n_entries : 0;
}

/* ==================================================================== edit */

/* The analysis variable @p var names: its key first, else its display name (unique). */
static int find_var(const struct nk__analysis *an, const char *var, const struct nk__an_var **out, nk_error *err)
{
	const struct nk__an_var *hit = NULL;
	size_t hits = 0;

	for (size_t i = 0; i < an->n_vars; i++)
		if (an->vars[i].key && !strcmp(an->vars[i].key, var)) {
			*out = &an->vars[i];
			return 0;
		}
	for (size_t i = 0; i < an->n_vars; i++)
		if (an->vars[i].name && !strcmp(an->vars[i].name, var)) {
			if (!hit)
				hit = &an->vars[i];
			hits++;
		}
	if (!hit)
		return nk__error(err, NK_ENOENT, "no variable \"%.200s\" in the profile (give its name as the report "
						 "shows it, or its key)", var);
	if (hits > 1)
		return nk__error(err, NK_EINVAL, "%zu variables are named \"%.200s\": give the key (e.g. \"%.200s\")", hits,
				 var, hit->key);
	*out = hit;
	return 0;
}

int nk_advice_set(nk_advice *a, const nk_profile *p, const char *var, const char *policy, nk_error *err)
{
	const struct nk__an_var *v = NULL;
	const char *key = var;
	int rc;

	if (!a || !var || !policy)
		return nk__error(err, NK_EINVAL, "nk_advice_set: NULL argument");
	if (!strcmp(policy, "pages"))
		return nk__error(err, NK_EINVAL, "policy \"pages\" needs page ranges: write them in the plan file");
	if (strcmp(policy, "none")) {
		nk_policy *pol = NULL;
		nk_error perr = { 0, "" };
		if ((rc = nk_policy_parse(policy, &pol, &perr)))
			return nk__error(err, rc, "%s", perr.message);
		nk_policy_free(pol);
	}
	if (p) {
		const struct nk__analysis *an = nk__profile_analysis(p);
		if (!an)
			return nk__error(err, NK_EINVAL, "nk_advice_set: a job's profile has one analysis per rank: load "
					 "its ranks pooled (nk_profile_load_pooled)");
		if ((rc = find_var(an, var, &v, err)))
			return rc;
		key = v->key;
	}
	if (!nk__aplan_key_valid(key))
		return nk__error(err, NK_EINVAL,
				 "\"%.200s\": a plan can only place statics, heap allocation sites and named ranges "
				 "(keys static:, heap:, name:)",
				 key);
	if (nk__aplan_key_local(key))
		return nk__error(err, NK_EINVAL,
				 "\"%.200s\": its key is local to the profiled process (no symbols): a later run "
				 "cannot find it",
				 key);

	struct nk__aplan_entry ne;
	memset(&ne, 0, sizeof(ne));
	nk__aplan_evidence_unknown(&ne.ev);
	ne.when = NK__WHEN_ALLOC;
	if (!(ne.key = strdup(key)) || !(ne.policy = strdup(policy)) || !(ne.reason = strdup("set by hand")) ||
	    (v && v->name && !(ne.variable = strdup(v->name)))) {
		nk__aplan_entry_clear(&ne);
		return nk__error(err, NK_ENOMEM, "out of memory");
	}
	if (v) {
		nk__aplan_evidence_of(&ne.ev, v);
		ne.site_bytes = v->site_space ? v->size : 0;
	}
	if (v && !ne.ev.diagnosis && nk__an_diag_name(v->diag)) {
		nk__aplan_entry_clear(&ne);
		return nk__error(err, NK_ENOMEM, "out of memory");
	}
	struct nk__aplan_entry *old = nk__aplan_find(a, key, NK__WHEN_ALLOC, NULL);
	if (old) {
		if (!v) { /* no profile: keep what the plan knew about the variable */
			ne.site_bytes = old->site_bytes;
			ne.variable = old->variable;
			old->variable = NULL;
			ne.ev = old->ev;
			old->ev.diagnosis = NULL;
			old->ev.cands = NULL;
			old->ev.n_cands = 0;
		}
		nk__aplan_entry_clear(old);
		*old = ne;
	} else {
		struct nk__aplan_entry *n = realloc(a->entries, (a->n_entries + 1) * sizeof(*n));
		if (!n) {
			nk__aplan_entry_clear(&ne);
			return nk__error(err, NK_ENOMEM, "out of memory");
		}
		a->entries = n;
		n[a->n_entries++] = ne;
	}
	/* it now has an entry: drop it from left_alone */
	size_t w = 0;
	for (size_t i = 0; i < a->n_left_alone; i++) {
		struct nk__aplan_skip *s = &a->left_alone[i];
		if (s->key && !strcmp(s->key, key)) {
			skip_clear(s);
			continue;
		}
		a->left_alone[w++] = *s;
	}
	a->n_left_alone = w;
	return 0;
}
