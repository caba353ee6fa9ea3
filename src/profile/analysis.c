/* SPDX-License-Identifier: BSD-3-Clause
 * Data-centric analysis of a profile (analysis.h, docs/report.md): the entry points, the order of the
 * steps (attribution, aggregation, intervals, diagnosis: analysis_*.c), the per-phase runs, the means of
 * several runs, and freeing.  Holds no step of its own; pure computation over an in-memory profile.
 */
#include "profile/analysis_impl.h"
#include "util/error.h"

int nk__an_warn(struct nk__analysis *a, char *text)
{
	if (!text)
		return NK_ENOMEM;
	char **w = realloc(a->warnings, (a->n_warnings + 1) * sizeof(*w));
	if (!w) {
		free(text);
		return NK_ENOMEM;
	}
	a->warnings = w;
	w[a->n_warnings++] = text;
	return 0;
}

static int cmp_var(const void *x, const void *y)
{
	const struct nk__an_var *a = x, *b = y;
	int c;
	if ((c = NK__CMP(b->remote, a->remote)) || (c = NK__CMP(b->acc, a->acc)))
		return c;
	return strcmp(a->name, b->name);
}

/* Per-phase variable counts follow the sorted variables. */
static int permute_phases(struct nk__analysis *a)
{
	uint64_t *tmp = malloc((a->n_vars ? a->n_vars : 1) * sizeof(uint64_t));
	if (!tmp)
		return NK_ENOMEM;
	for (size_t p = 0; p < a->n_phases; p++) {
		uint64_t *arrs[2] = { a->phases[p].var_acc, a->phases[p].var_remote };
		for (int k = 0; k < 2; k++) {
			for (size_t i = 0; i < a->n_vars; i++)
				tmp[i] = arrs[k][a->vars[i].created];
			memcpy(arrs[k], tmp, a->n_vars * sizeof(uint64_t));
		}
	}
	for (size_t i = 0; i < a->n_vars; i++)
		a->vars[i].created = i;
	free(tmp);
	return 0;
}

/* ---------------------------------------------------------------- per phase */

static void var_free(struct nk__an_var *v)
{
	free(v->name);
	free(v->key);
	free(v->type);
	free(v->acc_cpu);
	free(v->remote_cpu);
	free(v->acc_page);
	free(v->pages_on);
	free(v->ft_where);
	free(v->ft_inside);
	free(v->ft_inside_where);
	free(v->explain);
	for (int k = 0; k < v->n_lines; k++)
		free(v->lines[k].where);
}

static int cmp_var_key(const void *x, const void *y)
{
	const struct nk__an_var *const *a = x, *const *b = y;
	return strcmp((*a)->key, (*b)->key);
}

/* A phase run: each variable takes the whole-profile variable's name, size and type (a property of the
 * variable, not of the phase: "smaller than L2" must not depend on which blocks the phase hit). */
static int adopt_parent(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	for (size_t i = 0; i < a->n_vars; i++) {
		struct nk__an_var *v = &a->vars[i];
		struct nk__an_var key = { .key = v->key };
		const struct nk__an_var *kp = &key;
		struct nk__an_var *const *f =
			bsearch(&kp, c->parent_by_key, c->parent->n_vars, sizeof(*c->parent_by_key), cmp_var_key);
		if (!f)
			continue;
		char *name = xstrdup((*f)->name), *type = (*f)->type ? xstrdup((*f)->type) : NULL;
		if (!name || ((*f)->type && !type)) {
			free(name);
			free(type);
			return NK_ENOMEM;
		}
		free(v->name);
		free(v->type);
		v->name = name;
		v->type = type;
		v->kind = (*f)->kind;
		v->size = (*f)->size;
	}
	return 0;
}

static void ctx_release(struct ctx *c)
{
	for (size_t i = 0; c->tids && i < c->p->n_procs; i++)
		free(c->tids[i]);
	free(c->tids);
	free(c->n_tids);
	free(c->proc_ord);
	free(c->canon_pid);
	c->tids = NULL;
	c->n_tids = NULL;
	c->proc_ord = c->canon_pid = NULL;
	free(c->vtab.slot);
	free(c->ttab.slot);
	free(c->tkeys);
	free(c->recs);
	free(c->ips);
	c->vtab.slot = c->ttab.slot = NULL;
	c->tkeys = NULL;
	c->recs = NULL;
	c->ips = NULL;
	c->n_recs = c->n_ips = 0;
}

/* Attribution, counts, pages, lines, diagnosis and sorting of c->a (the whole profile, or with
 * c->only_phase >= 0 the samples of one phase). */
static int analyze_core(struct ctx *c, const nk_machine *m)
{
	int rc;
	int *nidx = NULL;
	if ((rc = nk__an_setup_runs(c)))
		return rc;
	if (!c->parent && (rc = nk__an_read_header(c)))
		return rc;
	if ((rc = nk__an_attribute_all(c)))
		return rc;
	if ((rc = nk__an_mark_init(c)))
		return rc;
	if (c->parent && (rc = adopt_parent(c)))
		return rc;
	if ((rc = nk__an_setup_nodes(c, m)))
		return rc;
	rc = NK_ENOMEM;
	nidx = malloc(MAX_NODE_ID * sizeof(int));
	if (!nidx)
		goto out;
	for (int i = 0; i < MAX_NODE_ID; i++)
		nidx[i] = -1;
	for (int i = 0; i < c->a->n_nodes; i++)
		nidx[c->a->node_ids[i]] = i;
	if (nk__an_alloc_var_arrays(c->a) || nk__an_count(c, nidx) || nk__an_intervals(c))
		goto out;
	qsort(c->recs, c->n_recs, sizeof(*c->recs), nk__an_cmp_rec);
	qsort(c->ips, c->n_ips, sizeof(*c->ips), nk__an_cmp_ip);
	if (nk__an_pages(c, nidx) || nk__an_lines(c, nidx))
		goto out;
	for (size_t i = 0; i < c->a->n_vars; i++)
		if (nk__an_diagnose(c->a, &c->a->vars[i]))
			goto out;
	if (c->a->n_vars)
		qsort(c->a->vars, c->a->n_vars, sizeof(*c->a->vars), cmp_var);
	if (c->a->n_attr) { /* attributed samples follow the sorted variables */
		uint32_t *to = malloc(c->a->n_vars * sizeof(uint32_t));
		if (!to)
			goto out;
		for (size_t i = 0; i < c->a->n_vars; i++)
			to[c->a->vars[i].created] = (uint32_t)i;
		for (size_t i = 0; i < c->a->n_attr; i++)
			c->a->attr[i].var = to[c->a->attr[i].var];
		free(to);
	}
	if (permute_phases(c->a))
		goto out;
	rc = 0;
out:
	free(nidx);
	return rc;
}

/* Thread index of (proc, tid) in the run of @p c, -1 when absent. */
static int thread_find(const struct ctx *c, uint32_t proc, uint32_t tid)
{
	if (!c->ttab.cap)
		return -1;
	uint64_t h = hash_u64(((uint64_t)proc << 32) | tid);
	for (size_t j = h & (c->ttab.cap - 1); c->ttab.slot[j]; j = (j + 1) & (c->ttab.cap - 1)) {
		const struct thr_key *k = &c->tkeys[c->ttab.slot[j] - 1];
		if (k->proc == proc && k->tid == tid)
			return (int)(c->ttab.slot[j] - 1);
	}
	return -1;
}

/* Per phase with samples, the same analysis on that phase's samples only (filtered in attribute_all);
 * its variables are kept in the phase, the rest of the run freed before the next phase. @p top is the
 * whole-profile run (its thread table maps the phase runs' threads back). */
static int phase_vars(const struct ctx *top, const struct nk__nkp_profile *p, nk__symtab *const *syms,
		      const struct nk__an_symops *ops)
{
	struct nk__analysis *a = top->a;
	if (!a->n_phases)
		return 0;
	struct nk__an_var **by_key = malloc((a->n_vars ? a->n_vars : 1) * sizeof(*by_key));
	if (!by_key)
		return NK_ENOMEM;
	for (size_t i = 0; i < a->n_vars; i++)
		by_key[i] = &a->vars[i];
	qsort(by_key, a->n_vars, sizeof(*by_key), cmp_var_key);
	int rc = 0;
	for (size_t ph = 0; ph < a->n_phases && !rc; ph++) {
		if (!a->phases[ph].samples)
			continue;
		struct ctx c;
		memset(&c, 0, sizeof(c));
		c.p = p;
		c.syms = syms;
		c.ops = ops;
		c.parent = a;
		c.parent_by_key = by_key;
		c.only_phase = (int)ph;
		c.a = calloc(1, sizeof(*c.a));
		if (!c.a) {
			rc = NK_ENOMEM;
			break;
		}
		c.a->n_procs = a->n_procs;
		rc = analyze_core(&c, NULL);
		for (size_t i = 0; !rc && i < c.a->n_vars; i++) {
			struct nk__an_var *v = &c.a->vars[i];
			if (v->ft_thread >= 0) {
				const struct thr_key *k = &c.tkeys[v->ft_thread];
				v->ft_thread = thread_find(top, k->proc, k->tid);
			}
		}
		if (!rc) { /* take the variables over */
			a->phases[ph].vars = c.a->vars;
			a->phases[ph].n_vars = c.a->n_vars;
			c.a->vars = NULL;
			c.a->n_vars = 0;
		}
		ctx_release(&c);
		nk__analysis_free(c.a);
	}
	free(by_key);
	return rc;
}

/* ---------------------------------------------------------------- runs */

/* Several runs: each run's weights estimate the same accesses, so the combined estimate of a count is
 * the mean over the runs.  Applied after everything was decided on the pooled sums (shares and
 * diagnoses do not change); samples stay counts over all runs (the evidence). */
static uint64_t mean_of(uint64_t x, uint64_t n)
{
	return (x + n / 2) / n;
}

static void var_means(struct nk__an_var *v, int n_nodes, uint64_t n)
{
	v->acc = mean_of(v->acc, n);
	v->local = mean_of(v->local, n);
	v->remote = mean_of(v->remote, n);
	v->unknown = mean_of(v->unknown, n);
	v->reads = mean_of(v->reads, n);
	v->writes = mean_of(v->writes, n);
	if (v->blocks)
		v->blocks = mean_of(v->blocks, n) ? mean_of(v->blocks, n) : 1;
	for (int k = 0; k < n_nodes; k++) {
		if (v->acc_cpu)
			v->acc_cpu[k] = mean_of(v->acc_cpu[k], n);
		if (v->remote_cpu)
			v->remote_cpu[k] = mean_of(v->remote_cpu[k], n);
		if (v->acc_page)
			v->acc_page[k] = mean_of(v->acc_page[k], n);
	}
	for (int l = 0; l < v->n_lines; l++) {
		v->lines[l].acc = mean_of(v->lines[l].acc, n);
		v->lines[l].remote = mean_of(v->lines[l].remote, n);
	}
}

static void per_run_means(struct nk__analysis *a)
{
	uint64_t n = (uint64_t)a->runs;
	a->acc = mean_of(a->acc, n);
	a->local = mean_of(a->local, n);
	a->remote = mean_of(a->remote, n);
	a->unknown = mean_of(a->unknown, n);
	for (int k = 0; k < a->n_nodes; k++) {
		a->node_local[k] = mean_of(a->node_local[k], n);
		a->node_remote[k] = mean_of(a->node_remote[k], n);
		a->node_pages_acc[k] = mean_of(a->node_pages_acc[k], n);
	}
	for (size_t i = 0; i < a->n_vars; i++)
		var_means(&a->vars[i], a->n_nodes, n);
	for (size_t t = 0; t < a->n_threads; t++) {
		a->threads[t].acc = mean_of(a->threads[t].acc, n);
		a->threads[t].remote = mean_of(a->threads[t].remote, n);
		for (int k = 0; a->thread_node && k < a->n_nodes; k++)
			a->thread_node[t * (size_t)a->n_nodes + (size_t)k] =
				mean_of(a->thread_node[t * (size_t)a->n_nodes + (size_t)k], n);
		for (size_t u = 0; a->sharing && u < a->n_threads; u++)
			a->sharing[t * a->n_threads + u] /= (double)n;
	}
	for (size_t ph = 0; ph < a->n_phases; ph++) {
		struct nk__an_phase *p = &a->phases[ph];
		p->acc = mean_of(p->acc, n);
		p->local = mean_of(p->local, n);
		p->remote = mean_of(p->remote, n);
		for (size_t i = 0; i < a->n_vars; i++) {
			if (p->var_acc)
				p->var_acc[i] = mean_of(p->var_acc[i], n);
			if (p->var_remote)
				p->var_remote[i] = mean_of(p->var_remote[i], n);
		}
		for (size_t i = 0; i < p->n_vars; i++)
			var_means(&p->vars[i], a->n_nodes, n);
	}
}

/* ---------------------------------------------------------------- entry */

static const struct nk__an_symops default_ops = { nk__sym_ip, nk__sym_data, nk__sym_mapping, nk__sym_warnings };

int nk__analyze(const struct nk__nkp_profile *p, const nk_machine *m, nk__symtab *const *syms,
		struct nk__analysis **out, nk_error *err)
{
	return nk__analyze_ops(p, m, syms, NULL, out, err);
}

int nk__analyze_ops(const struct nk__nkp_profile *p, const nk_machine *m, nk__symtab *const *syms,
		    const struct nk__an_symops *ops, struct nk__analysis **out, nk_error *err)
{
	if (!p || !out)
		return nk__error(err, NK_EINVAL, "nk__analyze: NULL argument");
	if (ops && (!ops->ip || !ops->data || !ops->mapping || !ops->warnings))
		return nk__error(err, NK_EINVAL, "nk__analyze: incomplete symbol operations");
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.p = p;
	c.syms = syms;
	c.ops = ops ? ops : &default_ops;
	c.only_phase = -1;
	c.a = calloc(1, sizeof(*c.a));
	nk_machine *own = NULL;
	int rc = NK_ENOMEM;
	if (!c.a)
		goto out;
	c.a->n_procs = (int)p->n_procs;
	if (nk__nkp_n_runs(p) > 1) { /* process k of every run is one process */
		c.a->n_procs = 0;
		for (size_t r = 0; r < p->n_runs; r++)
			if ((int)p->runs[r].n_procs > c.a->n_procs)
				c.a->n_procs = (int)p->runs[r].n_procs;
	}
	c.a->page_size = 4096;
	if (p->machine_json && !(c.a->machine_json = xstrdup(p->machine_json)))
		goto out;
	if (!m && p->machine_json) {
		nk_error merr;
		if (nk_machine_load_buffer(p->machine_json, strlen(p->machine_json), &own, &merr)) {
			own = NULL;
			if (nk__an_warn(c.a, nk__aprintf("the profile's machine description is unusable (%s): nodes are taken "
					      "from the samples", merr.message)))
				goto out;
		}
		m = own;
	} else if (!m && nk__an_warn(c.a, xstrdup("the profile has no machine description: nodes are taken from the "
					   "samples, cache sizes and NUMA factor are unknown"))) {
		goto out;
	}
	if ((rc = analyze_core(&c, m)))
		goto out;
	rc = NK_ENOMEM;
	/* the whole run's samples are no longer needed; its thread table is (phase runs map threads back) */
	free(c.recs);
	free(c.ips);
	c.recs = NULL;
	c.ips = NULL;
	if (phase_vars(&c, p, syms, c.ops))
		goto out;
	if (c.a->runs > 1)
		per_run_means(c.a);
	if (!c.a->samples && nk__an_warn(c.a, xstrdup("the profile holds no samples")))
		goto out;
	rc = 0;
out:
	ctx_release(&c);
	nk_machine_free(own);
	if (rc) {
		nk__analysis_free(c.a);
		return nk__error(err, rc, "profile analysis: out of memory");
	}
	*out = c.a;
	return 0;
}

void nk__analysis_free(struct nk__analysis *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_vars; i++)
		var_free(&a->vars[i]);
	free(a->vars);
	for (size_t i = 0; i < a->n_threads; i++)
		free(a->threads[i].label);
	free(a->threads);
	for (size_t i = 0; i < a->n_phases; i++) {
		free(a->phases[i].name);
		free(a->phases[i].var_acc);
		free(a->phases[i].var_remote);
		for (size_t k = 0; k < a->phases[i].n_vars; k++)
			var_free(&a->phases[i].vars[k]);
		free(a->phases[i].vars);
	}
	free(a->phases);
	for (int r = 0; a->run_info && r < a->runs; r++) {
		free(a->run_info[r].command);
		free(a->run_info[r].source);
	}
	free(a->run_info);
	free(a->comm);
	free(a->attr);
	free(a->machine_json);
	free(a->share);
	free(a->run_rank);
	for (size_t i = 0; i < a->n_warnings; i++)
		free(a->warnings[i]);
	free(a->warnings);
	for (size_t i = 0; i < a->n_coverage_reasons; i++)
		free(a->coverage_reasons[i]);
	free(a->coverage_reasons);
	free(a->program);
	free(a->sampler);
	free(a->node_ids);
	free(a->node_local);
	free(a->node_remote);
	free(a->node_pages_acc);
	free(a->thread_node);
	free(a->sharing);
	free(a);
}
