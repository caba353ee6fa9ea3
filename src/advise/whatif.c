/* SPDX-License-Identifier: BSD-3-Clause
 * nk_profile_whatif: what a placement plan (struct nk_advice, advice.h)
 * would have done to the run a profile recorded.  Every attributed sample
 * (nk__analysis.attr) is re-placed: its page gets the node the plan's entry
 * for its variable gives that page of its instance, its thread the node the
 * plan's pinning gives it; remote fraction, an estimated memory-stall time
 * and the migration volume follow.  The model, its assumptions and limits
 * are in docs/whatif.md; the arithmetic is checked with known truth in
 * tests/unit/test_whatif.c.
 *
 * Pure computation: the machine is a description (nk_machine), policies are
 * turned into address-free nk_plans (no memory touched), nothing is printed.
 */
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "advise/whatif.h"
#include "profile/analysis.h"
#include "util/cmp.h"
#include "util/list.h"
#include "util/error.h"
#include "util/strbuf.h"

#define WI_JSON_VERSION 1
#define WI_FALLBACK_NS 80.0 /* latency at SLIT distance 10 when none was measured: 80 ns x distance / 10 */
#define WI_LINE_BYTES 64    /* bytes an access moves: the traffic each node serves ("served") */
#define WI_TEXT_VARS 20     /* variables listed in the text table; the rest are summed in one line */

enum wi_kind {
	WI_FIXED = 0,      /* a policy with a node per page (nk_plan) */
	WI_PAGES = 1,      /* explicit page ranges */
	WI_NONE = 2,       /* "none": pages stay as profiled */
	WI_NEXT_TOUCH = 3, /* no fixed node: the node of the accessing thread */
};

struct wi_plan_cache {
	uint64_t len;
	nk_plan *pl;
};

struct wi_entry {
	const struct nk__aplan_entry *e;
	int start;       /* -2 alloc, -1 first parallel region, k >= 0 phase index; INT_MIN: never applies */
	int kind;        /* enum wi_kind */
	nk_policy *pol;  /* WI_FIXED */
	struct wi_plan_cache *cache;
	size_t n_cache, cap_cache;
	long var;        /* variable of the analysis it matched, -1 none */
	uint64_t applied; /* samples it applied to */
	uint64_t mig_bytes;
};

/* One scenario's counts (as profiled, or under the plan). */
struct wi_acc {
	uint64_t samples, acc, local, remote, unknown;
	double lat_ns;
	double cont_ns;  /* bandwidth model: the latency its saturated nodes add */
	uint64_t *bytes; /* [machine nodes] bytes served by each node */
};

struct wi_var {
	struct wi_acc s[2];
	uint64_t mig_bytes;
	uint64_t samples, acc;
	size_t *entries; /* indices into ctx.ents, sorted by start */
	size_t n_entries;
};

struct wi_ctx {
	const struct nk__analysis *a;
	const nk_machine *m;
	const nk_advice *plan;
	int given_machine;
	nk_error *err;
	/* machine */
	int k;              /* nodes of m */
	int *ids;           /* [k] */
	double *lat;        /* [k][k] ns */
	int lat_measured, lat_fallback; /* pairs used of each kind */
	char *lat_used;     /* [k][k]: 1 measured, 2 fallback (pairs the estimate used) */
	/* the bandwidth model (whatif_bw.c): each node's capacity (its measured bandwidth, else its cores: the
	 * default model, dflt, when no node's is measured), windows, loads per scenario (count_all; scenario 0
	 * the model's base) */
	int dflt;
	struct nk__whatif_bw bw_model;
	int *mem_nodes, n_mem;  /* nodes with memory, index order */
	int *cpu_nodes, n_cpu;  /* nodes with cpus */
	/* node mapping of the profiled machine onto m */
	int remap_threads;  /* a profiled cpu node m lacks: threads round robin over cpu_nodes */
	int remap_pages;    /* a profiled page node m lacks: node index modulo the memory nodes */
	const int *node_map; /* the model for advise: profile node index -> node id of m, for threads (NULL: whatif's) */
	/* threads */
	int *thr_prof;      /* [n_threads] node index of the thread as profiled after remapping, -1 per sample */
	int *thr_plan;      /* [n_threads] node index under the plan's pinning, -1: as profiled */
	int pinned, team;
	int *team_nodes;    /* [team] node id of each team thread */
	/* entries */
	struct wi_entry *ents;
	size_t n_ents;
	struct wi_var *vars;
	struct wi_acc tot[2];
	/* a job's ranks pooled as runs (a->run_rank): per run, local and remote accesses as profiled and
	 * planned ([runs][4]), and each joined process's run */
	uint64_t *rank_lr;
	int *proc_run;
	size_t n_proc_run;
	uint64_t mig_total;
	uint64_t no_instance; /* samples of planned variables whose instance is unknown: kept as profiled */
	char **warn;
	size_t n_warn;
	int oom;
};

static void warnf(struct wi_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(struct wi_ctx *c, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	char **w = n < 0 ? NULL : realloc(c->warn, (c->n_warn + 1) * sizeof(*w));
	if (!w) {
		if (n >= 0)
			free(s);
		c->oom = 1;
		return;
	}
	c->warn = w;
	w[c->n_warn++] = s;
}

static int node_idx(const struct wi_ctx *c, int id)
{
	for (int i = 0; i < c->k; i++)
		if (c->ids[i] == id)
			return i;
	return -1;
}

static const char *entry_label(const struct nk__aplan_entry *e)
{
	return e->variable && *e->variable ? e->variable : e->key;
}

/* ---------------------------------------------------------------- machine */

static int load_machine(struct wi_ctx *c)
{
	const nk_machine *m = c->m;
	int k = nk_machine_num_nodes(m);
	if (k < 1)
		return nk__error(c->err, NK_EINVAL, "the machine has no nodes");
	c->k = k;
	size_t kk = (size_t)k;
	c->ids = calloc(kk, sizeof(int));
	c->lat = calloc(kk * kk, sizeof(double));
	c->lat_used = calloc(kk * kk, 1);
	c->mem_nodes = calloc(kk, sizeof(int));
	c->cpu_nodes = calloc(kk, sizeof(int));
	if (!c->ids || !c->lat || !c->lat_used || !c->mem_nodes || !c->cpu_nodes)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	for (int i = 0; i < k; i++) {
		c->ids[i] = nk_machine_node_id(m, i);
		int f = nk_machine_node_flags(m, c->ids[i]);
		if (f >= 0 && (f & NK_NODE_HAS_MEMORY))
			c->mem_nodes[c->n_mem++] = i;
		if (f >= 0 && (f & NK_NODE_HAS_CPUS))
			c->cpu_nodes[c->n_cpu++] = i;
	}
	if (!c->n_mem || !c->n_cpu)
		return nk__error(c->err, NK_EINVAL, "the machine has no node with %s",
				 c->n_mem ? "cpus" : "memory");
	for (int i = 0; i < k; i++) {
		for (int j = 0; j < k; j++) {
			double v = 0;
			if (!nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, c->ids[i], c->ids[j], &v) && v > 0) {
				c->lat[(size_t)i * kk + (size_t)j] = v;
				c->lat_used[(size_t)i * kk + (size_t)j] = 1;
			} else {
				int d = nk_machine_distance(m, c->ids[i], c->ids[j]);
				if (d <= 0)
					d = i == j ? 10 : 20;
				c->lat[(size_t)i * kk + (size_t)j] = WI_FALLBACK_NS * d / 10.0;
				c->lat_used[(size_t)i * kk + (size_t)j] = 2;
			}
		}
	}
	int rc = nk__whatif_bw_capacity(&c->bw_model, m, c->ids, k, c->err);
	c->dflt = !c->bw_model.n_measured;
	return rc;
}

/* Node index on m of a node id of the profiled machine holding pages; -1 unknown. */
static int map_page_node(struct wi_ctx *c, int id)
{
	if (id < 0)
		return -1;
	int i = node_idx(c, id);
	if (i >= 0)
		return i;
	/* the profiled machine's node of that id is absent: its index there, modulo m's memory nodes */
	int pi = nk__an_node_index(c->a, id);
	if (pi < 0)
		pi = id;
	return c->mem_nodes[(size_t)pi % (size_t)c->n_mem];
}

/* ---------------------------------------------------------------- threads */

static int thread_max_index(const struct nk__analysis *a)
{
	int mx = -1;
	for (size_t t = 0; t < a->n_threads; t++)
		if (a->threads[t].index > mx)
			mx = a->threads[t].index;
	return mx;
}

static int setup_pinning(struct wi_ctx *c)
{
	const struct nk__aplan_pin *pin = &c->plan->pin;
	const struct nk__analysis *a = c->a;
	nk_placement *pl = NULL;
	nk_error perr = { 0, "" };
	int rc = 0;

	if (!pin->strategy || !strcmp(pin->strategy, "none"))
		return 0;
	int team = pin->threads > 0 ? pin->threads : 0;
	if (!strcmp(pin->strategy, "cpus")) {
		if (!pin->cpus || !pin->n_cpus)
			return nk__error(c->err, NK_EINVAL, "plan pinning \"cpus\" without a cpu list");
		if (!team)
			team = (int)pin->n_cpus;
	} else if (!strcmp(pin->strategy, "sharing")) {
		if (!pin->sharing || pin->threads < 1)
			return nk__error(c->err, NK_EINVAL,
					 "plan pinning \"sharing\" needs its matrix and team size (threads)");
	} else if (strcmp(pin->strategy, "compact") && strcmp(pin->strategy, "scatter")) {
		return nk__error(c->err, NK_EINVAL,
				 "plan pinning: unknown strategy \"%s\" (none, compact, scatter, sharing, cpus)",
				 pin->strategy);
	}
	if (!team)
		team = thread_max_index(a) + 1;
	if (team < 1)
		team = 1;
	c->team = team;
	c->team_nodes = calloc((size_t)team, sizeof(int));
	if (!c->team_nodes)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	if (!strcmp(pin->strategy, "cpus")) {
		for (int t = 0; t < team; t++) {
			int cpu = pin->cpus[(size_t)t % pin->n_cpus];
			nk_cpu_info ci;
			if (nk_machine_cpu_info(c->m, cpu, &ci) || ci.node < 0)
				return nk__error(c->err, NK_ENODEV,
						 "plan pinning: thread %d: cpu %d: no such cpu on this machine", t,
						 cpu);
			c->team_nodes[t] = ci.node;
		}
	} else {
		if (!strcmp(pin->strategy, "sharing"))
			rc = nk_placement_from_sharing(c->m, pin->sharing, pin->threads, &pl, &perr);
		else
			rc = nk_placement_build(c->m, pin->strategy, team, &pl, &perr);
		if (rc)
			return nk__error(c->err, rc == NK_ENOMEM ? NK_ENOMEM : rc == NK_ENODEV ? NK_ENODEV : NK_EINVAL,
					 "plan pinning \"%s\": %s", pin->strategy, perr.message);
		for (int t = 0; t < team; t++)
			c->team_nodes[t] = nk_placement_node(pl, t % nk_placement_num_threads(pl));
		nk_placement_free(pl);
	}
	c->pinned = 1;
	return 0;
}

static int setup_threads(struct wi_ctx *c)
{
	const struct nk__analysis *a = c->a;
	size_t nt = a->n_threads ? a->n_threads : 1;
	c->thr_prof = malloc(nt * sizeof(int));
	c->thr_plan = malloc(nt * sizeof(int));
	if (!c->thr_prof || !c->thr_plan)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	/* Does every node the profiled threads ran on exist on m, with cpus? */
	for (size_t i = 0; i < a->n_attr && !c->remap_threads; i++) {
		int id = a->attr[i].cpu_node;
		if (id < 0)
			continue;
		int x = node_idx(c, id);
		if (x < 0 || !(nk_machine_node_flags(c->m, id) & NK_NODE_HAS_CPUS))
			c->remap_threads = 1;
	}
	for (size_t t = 0; t < a->n_threads; t++) {
		c->thr_prof[t] = c->remap_threads ? c->cpu_nodes[t % (size_t)c->n_cpu] : -1;
		c->thr_plan[t] = -1;
		if (c->pinned && a->threads[t].index >= 0) {
			int id = c->team_nodes[(size_t)a->threads[t].index % (size_t)c->team];
			c->thr_plan[t] = node_idx(c, id);
		}
	}
	if (c->remap_threads) {
		char ids[256];
		int *l = malloc((size_t)c->n_cpu * sizeof(int));
		if (!l)
			return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
		for (int i = 0; i < c->n_cpu; i++)
			l[i] = c->ids[c->cpu_nodes[i]];
		nk__format_list(l, (size_t)c->n_cpu, ids, sizeof(ids));
		free(l);
		warnf(c,
		      "the profiled threads ran on nodes this machine lacks: as profiled, thread N (in the order of "
		      "the profile's threads) is taken to run on node N modulo the nodes with cpus (%s)%s",
		      ids, c->pinned ? "; under the plan the pinning decides" : "; the plan pins no thread");
	}
	return 0;
}

/* Profiled page nodes this machine lacks: remapped (map_page_node). */
static void setup_pages(struct wi_ctx *c)
{
	for (int n = 0; n < c->a->n_nodes; n++)
		if (node_idx(c, c->a->node_ids[n]) < 0) {
			c->remap_pages = 1;
			break;
		}
	if (c->remap_pages)
		warnf(c, "pages the profile saw on nodes this machine lacks are taken to be on node (their node's "
			  "index on the profiled machine) modulo this machine's memory nodes");
}

/* Node index of the thread of sample @p s: scenario 0 as profiled, 1 under the plan. */
static int thread_node(const struct wi_ctx *c, const struct nk__an_sample *s, int scen)
{
	if (scen && c->thr_plan[s->thread] >= 0)
		return c->thr_plan[s->thread];
	if (c->remap_threads && c->node_map) {
		int ni = s->cpu_node < 0 ? -1 : nk__an_node_index(c->a, s->cpu_node);
		return ni < 0 ? -1 : node_idx(c, c->node_map[ni]);
	}
	if (c->remap_threads)
		return c->thr_prof[s->thread];
	return s->cpu_node < 0 ? -1 : node_idx(c, s->cpu_node);
}

/* ---------------------------------------------------------------- entries */

static int entry_fail(struct wi_ctx *c, const struct nk__aplan_entry *e, int rc, const char *msg)
{
	if (rc != NK_ENOMEM && rc != NK_ENODEV)
		rc = NK_EINVAL;
	return nk__error(c->err, rc, "plan entry \"%s\" (%s): %s", entry_label(e), e->key, msg);
}

/* The plan of @p we for an instance of @p len bytes; cached per length, sorted (binary search). */
static int plan_for(struct wi_ctx *c, struct wi_entry *we, uint64_t len, nk_plan **out)
{
	size_t lo = 0, hi = we->n_cache;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (we->cache[mid].len < len)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < we->n_cache && we->cache[lo].len == len) {
		*out = we->cache[lo].pl;
		return 0;
	}
	if (we->n_cache == we->cap_cache) {
		size_t cap = we->cap_cache ? 2 * we->cap_cache : 4;
		struct wi_plan_cache *n = realloc(we->cache, cap * sizeof(*n));
		if (!n)
			return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
		we->cache = n;
		we->cap_cache = cap;
	}
	nk_region r = { NULL, (size_t)len, 0, 0, { 0, 0, 0 } };
	nk_error perr = { 0, "" };
	nk_plan *pl = NULL;
	int rc = nk_plan_build(c->m, we->pol, &r, &pl, &perr);
	if (rc)
		return entry_fail(c, we->e, rc, perr.message);
	memmove(&we->cache[lo + 1], &we->cache[lo], (we->n_cache - lo) * sizeof(*we->cache));
	we->cache[lo] = (struct wi_plan_cache){ len, pl };
	we->n_cache++;
	*out = pl;
	return 0;
}

/* The kind of entry @p e's policy, its parsed policy, and for a fixed policy one plan built now: a node the
 * machine lacks is found whether or not a sample needs it. */
static int entry_init(struct wi_ctx *c, struct wi_entry *we, const struct nk__aplan_entry *e)
{
	we->e = e;
	if (!strcmp(e->policy, "none")) {
		we->kind = WI_NONE;
	} else if (!strcmp(e->policy, "pages")) {
		we->kind = WI_PAGES;
		for (size_t r = 0; r < e->n_ranges; r++) {
			int id = e->ranges[r].node;
			if (nk_machine_node_flags(c->m, id) < 0) {
				char msg[128];
				snprintf(msg, sizeof(msg), "page range %zu: node %d: no such node on this machine",
					 r + 1, id);
				return entry_fail(c, e, NK_ENODEV, msg);
			}
		}
	} else {
		nk_error perr = { 0, "" };
		int rc = nk_policy_parse(e->policy, &we->pol, &perr);
		if (rc)
			return entry_fail(c, e, rc, perr.message);
		if (nk_policy_kind(we->pol) == NK_POLICY_NEXT_TOUCH) {
			we->kind = WI_NEXT_TOUCH;
		} else {
			nk_plan *pl;
			we->kind = WI_FIXED;
			rc = plan_for(c, we, nk_machine_page_size(c->m), &pl);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static void entry_fini(struct wi_entry *we)
{
	nk_policy_free(we->pol);
	for (size_t k = 0; k < we->n_cache; k++)
		nk_plan_free(we->cache[k].pl);
	free(we->cache);
	memset(we, 0, sizeof(*we));
}

static int setup_entries(struct wi_ctx *c)
{
	const nk_advice *p = c->plan;
	const struct nk__analysis *a = c->a;
	c->n_ents = p->n_entries;
	c->ents = calloc(p->n_entries ? p->n_entries : 1, sizeof(*c->ents));
	c->vars = calloc(a->n_vars ? a->n_vars : 1, sizeof(*c->vars));
	if (!c->ents || !c->vars)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	for (size_t v = 0; v < a->n_vars; v++)
		for (int s = 0; s < 2; s++)
			if (!(c->vars[v].s[s].bytes = calloc((size_t)c->k, sizeof(uint64_t))))
				return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct nk__aplan_entry *e = &p->entries[i];
		struct wi_entry *we = &c->ents[i];
		we->e = e;
		we->var = -1;
		if (!e->key || !*e->key || !e->policy)
			return nk__error(c->err, NK_EINVAL, "plan entry %zu has no %s", i + 1,
					 !e->key || !*e->key ? "key" : "policy");
		switch (e->when) {
		case NK__WHEN_ALLOC:
			we->start = -2;
			break;
		case NK__WHEN_FIRST_PARALLEL:
			we->start = -1;
			break;
		case NK__WHEN_PHASE:
			if (!e->phase)
				return entry_fail(c, e, NK_EINVAL, "\"when\" is a phase but no phase is named");
			we->start = INT_MIN;
			for (size_t k = 0; k < a->n_phases; k++)
				if (!strcmp(a->phases[k].name, e->phase))
					we->start = (int)k;
			if (we->start == INT_MIN)
				warnf(c, "plan entry \"%s\": phase \"%s\" never occurs in the profile: ignored", entry_label(e),
				      e->phase);
			break;
		default:
			return entry_fail(c, e, NK_EINVAL, "unknown \"when\"");
		}
		int rc = entry_init(c, we, e);
		if (rc)
			return rc;
		for (size_t v = 0; v < a->n_vars; v++)
			if (a->vars[v].key && !strcmp(a->vars[v].key, e->key)) {
				we->var = (long)v;
				break;
			}
		if (we->var < 0) {
			warnf(c, "plan entry \"%s\" (%s) matches no variable of the profile: ignored", entry_label(e), e->key);
			continue;
		}
		if (we->start == INT_MIN)
			continue;
		struct wi_var *wv = &c->vars[we->var];
		size_t *n = realloc(wv->entries, (wv->n_entries + 1) * sizeof(*n));
		if (!n)
			return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
		wv->entries = n;
		size_t pos = wv->n_entries++;
		while (pos > 0 && c->ents[n[pos - 1]].start > we->start) { /* keep sorted by start */
			n[pos] = n[pos - 1];
			pos--;
		}
		n[pos] = i;
	}
	return 0;
}

static int is_main_first_touch(const struct wi_ctx *c, const struct nk__an_sample *s)
{
	return s->first_touch && c->a->threads[s->thread].index == 0;
}

/* The entry in effect for sample @p s (the applicable one that started last), NULL none. */
static struct wi_entry *entry_for(struct wi_ctx *c, const struct nk__an_sample *s, int before_start)
{
	const struct wi_var *wv = &c->vars[s->var];
	struct wi_entry *best = NULL;
	for (size_t i = 0; i < wv->n_entries; i++) {
		struct wi_entry *we = &c->ents[wv->entries[i]];
		if (we->start >= before_start)
			break;
		if (we->start == -1 && is_main_first_touch(c, s))
			continue;
		if (we->start >= 0 && s->phase < we->start)
			continue;
		best = we;
	}
	return best;
}

/*
 * Node index of the page of sample @p s under entry @p we (NULL: as profiled),
 * with @p tnode the accessing thread's node index under the scenario.  -1 unknown.
 */
static int page_node_under(struct wi_ctx *c, struct wi_entry *we, const struct nk__an_sample *s, int tnode, int *rc)
{
	*rc = 0;
	if (!we || we->kind == WI_NONE)
		return map_page_node(c, s->page_node);
	if (we->kind == WI_NEXT_TOUCH)
		return tnode;
	if (s->hi <= s->lo || s->addr < s->lo || s->addr >= s->hi) {
		c->no_instance++;
		return map_page_node(c, s->page_node);
	}
	if (we->kind == WI_PAGES) {
		uint64_t ps = we->e->page_size ? we->e->page_size : c->a->page_size;
		uint64_t page = s->addr / ps - s->lo / ps;
		for (size_t r = 0; r < we->e->n_ranges; r++) {
			const struct nk__aplan_range *rg = &we->e->ranges[r];
			if (page >= rg->first && page - rg->first < rg->count)
				return node_idx(c, rg->node);
		}
		return map_page_node(c, s->page_node);
	}
	uint64_t ps = nk_machine_page_size(c->m);
	uint64_t base = s->lo - s->lo % ps;
	nk_plan *pl;
	if ((*rc = plan_for(c, we, s->hi - base, &pl)))
		return -1;
	int node = nk_plan_node(pl, (size_t)(s->addr / ps - s->lo / ps));
	return node < 0 ? map_page_node(c, s->page_node) : node_idx(c, node);
}

/* ---------------------------------------------------------------- counting */

static void count(struct wi_ctx *c, struct wi_acc *acc, int tn, int pn, uint32_t w)
{
	acc->samples++;
	acc->acc += w;
	if (tn < 0 || pn < 0) {
		acc->unknown += w;
		return;
	}
	if (tn == pn)
		acc->local += w;
	else
		acc->remote += w;
	size_t kk = (size_t)c->k;
	acc->lat_ns += (double)w * c->lat[(size_t)tn * kk + (size_t)pn];
	c->lat_used[(size_t)tn * kk + (size_t)pn] |= 4; /* used */
	acc->bytes[pn] += (uint64_t)w * WI_LINE_BYTES;
}

/* ------------------------------------------------- the bandwidth model */

/* The windows and the bandwidth model's arrays (measured bandwidth or the default model). */
static int setup_windows(struct wi_ctx *c)
{
	return nk__whatif_bw_setup(&c->bw_model, c->a, c->err);
}

/* The latency a saturated node adds to sample @p s (from node index @p tn to @p pn) in scenario @p scen, ns. */
static double contention(const struct wi_ctx *c, int scen, const struct nk__an_sample *s, int tn, int pn)
{
	if (!c->bw_model.on || tn < 0 || pn < 0)
		return 0;
	double f = nk__whatif_bw_factor(&c->bw_model, scen, s, pn);
	return f > 1 ? (double)s->weight * c->lat[(size_t)tn * (size_t)c->k + (size_t)pn] * (f - 1) : 0;
}

/*
 * The model, for one sample: the node indices of its thread (*tn) and its page (*pn) in scenario @p scen
 * (0 as profiled, 1 under the plan), its page placed by entry @p we (NULL: as profiled).  -1 unknown.
 * count_all() replays a whole plan with it, nk__whatif_model_eval() one variable under one candidate.
 */
static void replay(struct wi_ctx *c, const struct nk__an_sample *s, struct wi_entry *we, int scen, int *tn, int *pn,
		   int *rc)
{
	*tn = thread_node(c, s, scen);
	*pn = scen ? page_node_under(c, we, s, *tn, rc) : map_page_node(c, s->page_node);
	if (!scen)
		*rc = 0;
}

/* Per rank of a job pooled as runs: the run of each joined process.  0 or NK_ENOMEM (then no ranks). */
static int setup_ranks(struct wi_ctx *c)
{
	const struct nk__analysis *a = c->a;
	if (!a->run_rank || a->runs < 2 || !a->run_info)
		return 0;
	size_t np = 0;
	for (int r = 0; r < a->runs; r++)
		np += (size_t)(a->run_info[r].processes > 0 ? a->run_info[r].processes : 0);
	c->proc_run = malloc((np ? np : 1) * sizeof(int));
	c->rank_lr = calloc((size_t)a->runs * 4, sizeof(uint64_t));
	if (!c->proc_run || !c->rank_lr)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	for (int r = 0; r < a->runs; r++)
		for (int k = 0; k < a->run_info[r].processes; k++)
			c->proc_run[c->n_proc_run++] = r;
	return 0;
}

static void count_rank(struct wi_ctx *c, const struct nk__an_sample *s, int scen, int tn, int pn)
{
	if (!c->rank_lr || s->proc >= c->n_proc_run || tn < 0 || pn < 0)
		return;
	c->rank_lr[(size_t)c->proc_run[s->proc] * 4 + (size_t)scen * 2 + (tn == pn ? 0 : 1)] += s->weight;
}

static double rank_frac(const uint64_t *lr)
{
	return lr[0] + lr[1] ? (double)lr[1] / (double)(lr[0] + lr[1]) : -1;
}

static int count_all(struct wi_ctx *c)
{
	const struct nk__analysis *a = c->a;
	/* the nodes of each sample in each scenario, for the second pass (the bandwidth model needs every
	 * sample's load before it can price one) */
	int16_t *nodes = malloc((a->n_attr ? a->n_attr : 1) * 4 * sizeof(int16_t));
	if (!nodes)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	for (size_t i = 0; i < a->n_attr; i++) {
		const struct nk__an_sample *s = &a->attr[i];
		struct wi_var *wv = &c->vars[s->var];
		wv->samples++;
		wv->acc += s->weight;
		struct wi_entry *we = entry_for(c, s, INT_MAX);
		int t0, p0, t1, p1, rc;
		replay(c, s, NULL, 0, &t0, &p0, &rc);
		replay(c, s, we, 1, &t1, &p1, &rc);
		if (rc) {
			free(nodes);
			return rc;
		}
		if (we)
			we->applied++;
		count(c, &wv->s[0], t0, p0, s->weight);
		count(c, &wv->s[1], t1, p1, s->weight);
		count(c, &c->tot[0], t0, p0, s->weight);
		count(c, &c->tot[1], t1, p1, s->weight);
		count_rank(c, s, 0, t0, p0);
		count_rank(c, s, 1, t1, p1);
		int16_t *x = &nodes[4 * i];
		x[0] = (int16_t)t0, x[1] = (int16_t)p0, x[2] = (int16_t)t1, x[3] = (int16_t)p1;
		nk__whatif_bw_add(&c->bw_model, 0, s, t0, p0, 1);
		nk__whatif_bw_add(&c->bw_model, 1, s, t1, p1, 1);
	}
	int rc = nk__whatif_bw_factors(&c->bw_model, 0, c->err);
	if (!rc)
		rc = nk__whatif_bw_factors(&c->bw_model, 1, c->err);
	for (size_t i = 0; i < a->n_attr && !rc; i++) {
		const struct nk__an_sample *s = &a->attr[i];
		for (int sc = 0; sc < 2; sc++) {
			double x = contention(c, sc, s, nodes[4 * i + 2 * sc], nodes[4 * i + 2 * sc + 1]);
			c->vars[s->var].s[sc].cont_ns += x;
			c->tot[sc].cont_ns += x;
		}
	}
	free(nodes);
	return rc;
}

/* ---------------------------------------------------------------- migration */

struct mig_rec {
	uint64_t lo, hi, page;
	uint32_t proc;
	size_t order;
	int before, after;
};

static int cmp_mig(const void *x, const void *y)
{
	const struct mig_rec *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->proc, b->proc)) || (c = NK__CMP(a->lo, b->lo)) || (c = NK__CMP(a->hi, b->hi)) ||
	    (c = NK__CMP(a->page, b->page)))
		return c;
	return NK__CMP(a->order, b->order);
}

/* Bytes entry @p we (applied at a first parallel region or phase) migrates. */
static int migration(struct wi_ctx *c, struct wi_entry *we)
{
	const struct nk__analysis *a = c->a;
	if (we->var < 0 || we->start == INT_MIN || we->start == -2 || we->kind == WI_NONE)
		return 0;
	size_t n = 0;
	struct mig_rec *r = malloc((c->vars[we->var].samples ? c->vars[we->var].samples : 1) * sizeof(*r));
	if (!r)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	uint64_t saved_no_instance = c->no_instance;
	for (size_t i = 0; i < a->n_attr; i++) {
		const struct nk__an_sample *s = &a->attr[i];
		if ((long)s->var != we->var || s->hi <= s->lo || s->addr < s->lo || s->addr >= s->hi)
			continue;
		int applies = !(we->start == -1 && is_main_first_touch(c, s)) && !(we->start >= 0 && s->phase < we->start);
		if (we->kind == WI_NEXT_TOUCH && !applies)
			continue; /* the page moves to the thread that touches it once the entry applies */
		int rc, t1 = thread_node(c, s, 1);
		/* the layout just before: the entry in effect before this one started, else as profiled */
		struct wi_entry *prev = entry_for(c, s, we->start);
		int before = page_node_under(c, prev, s, t1, &rc);
		if (rc) {
			free(r);
			return rc;
		}
		int after = page_node_under(c, we, s, t1, &rc);
		if (rc) {
			free(r);
			return rc;
		}
		uint64_t ps = a->page_size ? a->page_size : 4096;
		r[n++] = (struct mig_rec){ s->lo, s->hi, s->addr / ps - s->lo / ps, s->proc, i, before, after };
	}
	c->no_instance = saved_no_instance;
	if (n)
		qsort(r, n, sizeof(*r), cmp_mig);
	uint64_t bytes = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t pages = 0, moved = 0;
		while (j < n && r[j].proc == r[i].proc && r[j].lo == r[i].lo && r[j].hi == r[i].hi) {
			/* the first sample of each page decides it */
			if (j == i || r[j].page != r[j - 1].page) {
				if (r[j].before >= 0 && r[j].after >= 0) {
					pages++;
					moved += r[j].before != r[j].after;
				}
			}
			j++;
		}
		if (pages)
			bytes += (uint64_t)((double)(r[i].hi - r[i].lo) * (double)moved / (double)pages + 0.5);
		i = j;
	}
	free(r);
	we->mig_bytes = bytes;
	c->vars[we->var].mig_bytes += bytes;
	c->mig_total += bytes;
	return 0;
}

/* ---------------------------------------------------------------- results */

static double remote_frac(const struct wi_acc *x)
{
	uint64_t k = x->local + x->remote;
	return k ? (double)x->remote / (double)k : -1;
}

/* The bandwidth term in ns with measured bandwidth: the contention its saturated nodes add (the same
 * windowed model as the default one, with the measured capacities); -1 under the default model. */
static double bw_ns(const struct wi_ctx *c, const struct wi_acc *x)
{
	return c->dflt ? -1 : x->cont_ns;
}

/* latency + contention, whichever capacities the bandwidth model has (measured or cores). */
static double stall_ms(const struct wi_ctx *c, const struct wi_acc *x)
{
	(void)c;
	return (x->lat_ns + x->cont_ns) / 1e6;
}

/* "measured", "SLIT" or "partly measured" for the latency pairs the estimate used. */
static const char *lat_source(const struct wi_ctx *c)
{
	int meas = 0, fb = 0;
	for (size_t i = 0; i < (size_t)c->k * (size_t)c->k; i++) {
		if (!(c->lat_used[i] & 4))
			continue;
		if ((c->lat_used[i] & 3) == 1)
			meas = 1;
		else
			fb = 1;
	}
	if (meas && fb)
		return "partly measured";
	if (meas)
		return "measured";
	return "slit";
}

static char *entries_text(const struct wi_ctx *c, size_t v)
{
	const struct wi_var *wv = &c->vars[v];
	size_t len = 1;
	for (size_t i = 0; i < wv->n_entries; i++) {
		const struct nk__aplan_entry *e = c->ents[wv->entries[i]].e;
		len += strlen(e->policy) + 6 + (e->phase ? strlen(e->phase) : 0); /* ";" POLICY "@par" or "@" PHASE */
	}
	char *s = malloc(len);
	if (!s)
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < wv->n_entries; i++) {
		const struct nk__aplan_entry *e = c->ents[wv->entries[i]].e;
		if (i)
			strcat(s, ";");
		strcat(s, e->policy);
		if (e->when == NK__WHEN_PHASE) {
			strcat(s, "@");
			strcat(s, e->phase);
		} else if (e->when == NK__WHEN_FIRST_PARALLEL) {
			strcat(s, "@par");
		}
	}
	return s;
}

/* ---------------------------------------------------------------- text */

static void pct_pair(char *buf, size_t cap, const struct wi_acc *x)
{
	double f0 = remote_frac(&x[0]), f1 = remote_frac(&x[1]);
	char a[16], b[16];
	if (f0 < 0)
		snprintf(a, sizeof(a), "%5s", "-");
	else
		snprintf(a, sizeof(a), "%5.1f", 100 * f0);
	if (f1 < 0)
		snprintf(b, sizeof(b), "%5s", "-");
	else
		snprintf(b, sizeof(b), "%5.1f", 100 * f1);
	snprintf(buf, cap, "%s -> %s", a, b);
}

/* One table line: 24 + 1 + 8 + 2 + 14 + 2 + 20 + 2 + 9 + 2 + 14 = 98 columns at most. */
static void row(struct wi_ctx *c, struct nk__strbuf *b, const char *name, uint64_t samples, const struct wi_acc *x,
		uint64_t mig, const char *pol)
{
	char nb[64], pb[64], rp[40];
	pct_pair(rp, sizeof(rp), x);
	nk__strbuf_printf(b, "%-24s %8llu  %s  %8.4f -> %8.4f  %9.2f%s%s\n", nk__fit(name, 24, nb, sizeof(nb)),
		(unsigned long long)samples, rp, stall_ms(c, &x[0]), stall_ms(c, &x[1]), (double)mig / 1048576.0,
		*pol ? "  " : "", nk__fit(pol, 14, pb, sizeof(pb)));
}

/* Several runs replayed together (nk_profile_load_many): every run's accesses and the instances it
 * migrates are estimates of the same run, so accesses, stall and migration volume are means per run
 * (docs/whatif.md); samples stay the pooled count. */
static void acc_means(const struct wi_ctx *c, struct wi_acc *x, uint64_t n)
{
	x->acc = (x->acc + n / 2) / n;
	x->local = (x->local + n / 2) / n;
	x->remote = (x->remote + n / 2) / n;
	x->unknown = (x->unknown + n / 2) / n;
	x->lat_ns /= (double)n;
	x->cont_ns /= (double)n;
	for (int k = 0; x->bytes && k < c->k; k++)
		x->bytes[k] = (x->bytes[k] + n / 2) / n;
}

static void per_run_means(struct wi_ctx *c)
{
	uint64_t n = (uint64_t)c->a->runs;
	for (int s = 0; s < 2; s++)
		acc_means(c, &c->tot[s], n);
	for (size_t i = 0; c->vars && i < c->a->n_vars; i++) {
		for (int s = 0; s < 2; s++)
			acc_means(c, &c->vars[i].s[s], n);
		c->vars[i].acc = (c->vars[i].acc + n / 2) / n;
		c->vars[i].mig_bytes = (c->vars[i].mig_bytes + n / 2) / n;
	}
	for (size_t i = 0; i < c->n_ents; i++)
		c->ents[i].mig_bytes = (c->ents[i].mig_bytes + n / 2) / n;
	c->mig_total = (c->mig_total + n / 2) / n;
}

/* A capacity in threads: "0.5", "2.5", "12", "125000" */
static const char *fmt_threads(double x, char *buf, size_t cap)
{
	snprintf(buf, cap, x < 10 ? "%.2g" : "%.0f", x);
	return buf;
}

/* The nodes that saturate in either scenario: their peak load. */
static void sat_text(const struct wi_ctx *c, struct nk__strbuf *b)
{
	const struct nk__whatif_bw *m = &c->bw_model;
	char th[32];
	int any = 0;
	for (int n = 0; n < c->k; n++) {
		if (m->peak[0][n] <= 1 && m->peak[1][n] <= 1)
			continue;
		if (!any)
			nk__strbuf_printf(b, "saturated (threads at once and peak load, 1 = what its %s serve%s at full "
				    "speed):\n", c->dflt ? "cores" : "bandwidth", c->dflt ? "" : "s");
		if (m->measured[n])
			nk__strbuf_printf(b, "  node %d (%.0f MB/s, %s threads): ", c->ids[n], m->node_mbs[n],
				    fmt_threads(m->cap[n], th, sizeof th));
		else
			nk__strbuf_printf(b, "  node %d (%g core%s): ", c->ids[n], m->cap[n], m->cap[n] == 1 ? "" : "s");
		nk__strbuf_printf(b, "%d threads, load %.2f -> %d threads, load %.2f\n", m->peak_users[0][n], m->peak[0][n],
			    m->peak_users[1][n], m->peak[1][n]);
		any = 1;
	}
}

/* With measured bandwidth, each node's capacity: "node 0 20000 MB/s = 2.5 threads", wrapped. */
static void capacity_text(const struct wi_ctx *c, struct nk__strbuf *b)
{
	const struct nk__whatif_bw *m = &c->bw_model;
	size_t col = 0;
	int same = 1;
	for (int n = 1; n < c->k; n++)
		same = same && m->measured[n] && m->node_mbs[n] == m->node_mbs[0];
	if (same && m->measured[0] && c->k > 1) { /* "nodes 0-3: 20000 MB/s each = 2.5 threads" */
		char list[256], th[32];
		nk__format_list(c->ids, (size_t)c->k, list, sizeof list);
		nk__strbuf_printf(b, "  nodes %s: %.0f MB/s each = %s threads\n", list, m->node_mbs[0],
			    fmt_threads(m->cap[0], th, sizeof th));
		return;
	}
	for (int n = 0; n < c->k; n++) {
		char item[96], th[32];
		if (m->measured[n])
			snprintf(item, sizeof item, "node %d %.0f MB/s = %s threads", c->ids[n], m->node_mbs[n],
				 fmt_threads(m->cap[n], th, sizeof th));
		else
			snprintf(item, sizeof item, "node %d not measured: %g core%s = %.0f MB/s", c->ids[n], m->cap[n],
				 m->cap[n] == 1 ? "" : "s", m->node_mbs[n]);
		size_t len = strlen(item);
		if (col && col + 2 + len > 98) {
			nk__strbuf_printf(b, ";\n");
			col = 0;
		}
		nk__strbuf_printf(b, "%s%s", col ? "; " : "  ", item);
		col += 2 + len;
	}
	nk__strbuf_printf(b, "\n");
}

static int text_out(struct wi_ctx *c, char **out)
{
	const struct nk__analysis *a = c->a;
	struct nk__strbuf b = { 0 };
	char tmp[256];
	nk__strbuf_printf(&b, "numakit whatif: %s, %llu samples (%s), plan: %zu entr%s\n", a->program,
		(unsigned long long)a->samples, a->sampler ? a->sampler : "?", c->plan->n_entries,
		c->plan->n_entries == 1 ? "y" : "ies");
	if (a->runs > 1)
		nk__strbuf_printf(&b, "%d runs replayed together: accesses, stall and migration are means per run\n", a->runs);
	nk__format_list(c->ids, (size_t)c->k, tmp, sizeof(tmp));
	nk__strbuf_printf(&b, "machine: %s, nodes %s\n", c->given_machine ? "as given" : "the profile's", tmp);
	const char *ls = lat_source(c);
	if (!strcmp(ls, "measured"))
		nk__strbuf_printf(&b, "latency: measured\n");
	else
		nk__strbuf_printf(&b, "latency: %s (unmeasured pairs: 80 ns x SLIT distance / 10)\n",
			!strcmp(ls, "slit") ? "not measured" : "partly measured");
	if (c->dflt) {
		nk__strbuf_printf(&b, "bandwidth: default model (not measured: a node serves as many threads at once as it "
			    "has cores,\n  %.0f MB/s each; above that its accesses slow down in proportion)\n",
			    c->bw_model.thread_mbs);
	} else {
		nk__strbuf_printf(&b, "bandwidth: measured (a node serves as many threads at once as its read bandwidth "
			    "feeds,\n  %.0f MB/s each; above that its accesses slow down in proportion)\n",
			    c->bw_model.thread_mbs);
		capacity_text(c, &b);
	}
	sat_text(c, &b);
	if (c->pinned) {
		int *l = malloc((size_t)c->team * sizeof(int));
		char *txt = NULL;
		if (l) {
			for (int t = 0; t < c->team; t++)
				l[t] = c->team_nodes[t];
			/* nodes in thread order, one per thread (not a sorted list) */
			size_t cap = (size_t)c->team * 12 + 1;
			txt = malloc(cap);
			if (txt) {
				size_t o = 0;
				txt[0] = 0;
				for (int t = 0; t < c->team && o < cap; t++)
					o += (size_t)snprintf(txt + o, cap - o, t ? ",%d" : "%d", l[t]);
			}
			free(l);
		}
		nk__strbuf_printf(&b, "pinning: %s, %d threads on nodes %s\n", c->plan->pin.strategy, c->team, txt ? txt : "?");
		free(txt);
	} else {
		nk__strbuf_printf(&b, "pinning: none (threads as profiled)\n");
	}
	nk__strbuf_printf(&b, "\n%-24s %8s  %-14s  %-20s  %9s  %s\n", "variable", "samples", "remote %", "stall ms (estimate)",
		"migrate", "policy");
	nk__strbuf_printf(&b, "%-24s %8s  %-14s  %-20s  %9s\n", "", "", "profiled->plan", "profiled ->     plan", "MiB");
	size_t shown = 0;
	struct wi_acc rest[2];
	uint64_t rest_bytes[2][64];
	memset(rest, 0, sizeof(rest));
	memset(rest_bytes, 0, sizeof(rest_bytes));
	uint64_t *rb0 = c->k <= 64 ? rest_bytes[0] : calloc((size_t)c->k, sizeof(uint64_t));
	uint64_t *rb1 = c->k <= 64 ? rest_bytes[1] : calloc((size_t)c->k, sizeof(uint64_t));
	rest[0].bytes = rb0;
	rest[1].bytes = rb1;
	uint64_t rest_samples = 0, rest_mig = 0;
	size_t n_rest = 0;
	for (size_t v = 0; v < a->n_vars; v++) {
		struct wi_var *wv = &c->vars[v];
		if (!wv->samples)
			continue;
		if (shown < WI_TEXT_VARS || wv->n_entries) {
			char *pol = entries_text(c, v);
			row(c, &b, a->vars[v].name, wv->samples, wv->s, wv->mig_bytes,
			    pol ? (*pol ? pol : "(as profiled)") : "?");
			free(pol);
			shown++;
			continue;
		}
		n_rest++;
		rest_samples += wv->samples;
		rest_mig += wv->mig_bytes;
		for (int s = 0; s < 2 && rb0 && rb1; s++) {
			rest[s].samples += wv->s[s].samples;
			rest[s].acc += wv->s[s].acc;
			rest[s].local += wv->s[s].local;
			rest[s].remote += wv->s[s].remote;
			rest[s].unknown += wv->s[s].unknown;
			rest[s].lat_ns += wv->s[s].lat_ns;
			rest[s].cont_ns += wv->s[s].cont_ns;
			for (int n = 0; n < c->k; n++)
				rest[s].bytes[n] += wv->s[s].bytes[n];
		}
	}
	if (n_rest && rb0 && rb1) {
		snprintf(tmp, sizeof(tmp), "(%zu more variables)", n_rest);
		row(c, &b, tmp, rest_samples, rest, rest_mig, "(as profiled)");
	}
	if (c->k > 64) {
		free(rb0);
		free(rb1);
	}
	row(c, &b, "total", a->n_attr, c->tot, c->mig_total, "");
	if (c->rank_lr) {
		nk__strbuf_printf(&b, "\nper rank (the job's ranks pooled as runs): remote %% profiled -> plan\n");
		for (int r = 0; r < a->runs; r++) {
			const uint64_t *x = &c->rank_lr[(size_t)r * 4];
			double f0 = rank_frac(x), f1 = rank_frac(x + 2);
			char p0[16] = "    -", p1[16] = "    -";
			if (f0 >= 0)
				snprintf(p0, sizeof p0, "%5.1f", 100 * f0);
			if (f1 >= 0)
				snprintf(p1, sizeof p1, "%5.1f", 100 * f1);
			nk__strbuf_printf(&b, "  rank %-6d %s -> %s\n", a->run_rank[r], p0, p1);
		}
	}
	if (c->tot[0].unknown)
		nk__strbuf_printf(&b, "%llu of %llu accesses have no known node (not in the remote share nor the stall)\n",
			(unsigned long long)c->tot[0].unknown, (unsigned long long)c->tot[0].acc);
	nk__strbuf_printf(&b, "\nStall is an estimate for comparing plans (accesses x latency, for the accesses the samples\n"
		    "stand for), not a prediction of run time.  Migration: bytes moved when a policy is applied at\n"
		    "the first parallel region or a phase (@par, @PHASE); \"alloc\" entries move nothing.\n");
	if (c->no_instance)
		nk__strbuf_printf(&b, "%llu samples of planned variables fell outside a known instance: kept as profiled\n",
			(unsigned long long)c->no_instance);
	if (c->n_warn || c->plan->n_warnings) {
		nk__strbuf_printf(&b, "\nwarnings:\n");
		for (size_t i = 0; i < c->n_warn; i++)
			nk__strbuf_printf(&b, "  %s\n", c->warn[i]);
		for (size_t i = 0; i < c->plan->n_warnings; i++)
			nk__strbuf_printf(&b, "  plan: %s\n", c->plan->warnings[i]);
	}
	if (b.oom || !b.s) {
		free(b.s);
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	}
	*out = b.s;
	return 0;
}

/* ---------------------------------------------------------------- JSON */

static json_t *jfrac(double f)
{
	return f < 0 ? json_null() : json_real(f);
}

static json_t *scen_json(const struct wi_ctx *c, const struct wi_acc *x, int total_scen)
{
	json_t *o = json_object();
	double b = bw_ns(c, x);
	json_object_set_new(o, "accesses", json_integer((json_int_t)x->acc));
	json_object_set_new(o, "local", json_integer((json_int_t)x->local));
	json_object_set_new(o, "remote", json_integer((json_int_t)x->remote));
	json_object_set_new(o, "unknown", json_integer((json_int_t)x->unknown));
	json_object_set_new(o, "remote_fraction", jfrac(remote_frac(x)));
	json_object_set_new(o, "latency_ms", json_real(x->lat_ns / 1e6));
	json_object_set_new(o, "bandwidth_ms", b < 0 ? json_null() : json_real(b / 1e6));
	json_object_set_new(o, "stall_ms", json_real(stall_ms(c, x)));
	json_t *served = json_array();
	for (int n = 0; n < c->k; n++)
		json_array_append_new(served, json_integer((json_int_t)(x->bytes[n] / WI_LINE_BYTES)));
	json_object_set_new(o, "served", served);
	json_object_set_new(o, "contention_ms", json_real(x->cont_ns / 1e6));
	if (total_scen >= 0) { /* the whole scenario's: each node's peak over the windows */
		json_t *ld = json_array(), *us = json_array();
		for (int n = 0; n < c->k; n++) {
			json_array_append_new(ld, json_real(c->bw_model.peak[total_scen][n]));
			json_array_append_new(us, json_integer(c->bw_model.peak_users[total_scen][n]));
		}
		json_object_set_new(o, "node_load", ld);
		json_object_set_new(o, "node_threads", us);
	}
	return o;
}

static json_t *entry_json(const struct nk__aplan_entry *e)
{
	const char *when = nk__aplan_when_name(e->when);
	json_t *o = json_object();
	json_object_set_new(o, "policy", json_string(e->policy));
	json_object_set_new(o, "when", json_string(when ? when : "?"));
	json_object_set_new(o, "phase", e->phase ? json_string(e->phase) : json_null());
	return o;
}

static int json_out(struct wi_ctx *c, char **out)
{
	const struct nk__analysis *a = c->a;
	json_t *r = json_object(), *mach = json_object(), *nodes = json_array(), *vars = json_array(),
	       *ents = json_array(), *warns = json_array(), *threads = json_array(), *tot = json_object();
	json_object_set_new(r, "format", json_string("numakit-whatif"));
	json_object_set_new(r, "version", json_integer(WI_JSON_VERSION));
	json_object_set_new(r, "program", json_string(a->program));
	json_object_set_new(r, "sampler", a->sampler ? json_string(a->sampler) : json_null());
	json_object_set_new(r, "samples", json_integer((json_int_t)a->samples));
	if (a->runs > 1)
		json_object_set_new(r, "runs", json_integer(a->runs));
	for (int n = 0; n < c->k; n++)
		json_array_append_new(nodes, json_integer(c->ids[n]));
	json_object_set_new(mach, "source", json_string(c->given_machine ? "given" : "profile"));
	json_object_set_new(mach, "nodes", nodes);
	json_object_set_new(mach, "latency", json_string(lat_source(c)));
	json_object_set_new(mach, "fallback_ns_per_distance_10", json_real(WI_FALLBACK_NS));
	json_object_set_new(mach, "bandwidth_measured", json_boolean(!c->dflt));
	json_object_set_new(mach, "bandwidth", json_string(c->dflt ? "default model" : "measured"));
	json_t *bm = json_object(), *nm = json_array();
	for (int n = 0; n < c->k; n++)
		json_array_append_new(nm, json_real(c->bw_model.node_mbs[n]));
	json_object_set_new(bm, "thread_mbs", json_real(c->bw_model.thread_mbs));
	json_object_set_new(bm, "node_mbs", nm);
	json_object_set_new(bm, "windows", json_integer(c->bw_model.nwin));
	if (!c->dflt) { /* which capacities were measured (the others: cores x thread_mbs) */
		json_t *meas = json_array();
		for (int n = 0; n < c->k; n++)
			json_array_append_new(meas, json_boolean(c->bw_model.measured[n]));
		json_object_set_new(bm, "node_measured", meas);
	}
	json_object_set_new(mach, "bandwidth_model", bm);
	json_object_set_new(mach, "threads_remapped", json_boolean(c->remap_threads));
	json_object_set_new(r, "machine", mach);
	if (c->pinned) {
		json_t *pin = json_object(), *tn = json_array();
		for (int t = 0; t < c->team; t++)
			json_array_append_new(tn, json_integer(c->team_nodes[t]));
		json_object_set_new(pin, "strategy", json_string(c->plan->pin.strategy));
		json_object_set_new(pin, "threads", json_integer(c->team));
		json_object_set_new(pin, "thread_nodes", tn);
		json_object_set_new(r, "pinning", pin);
	} else {
		json_object_set_new(r, "pinning", json_null());
	}
	for (size_t t = 0; t < a->n_threads; t++) {
		json_t *o = json_object();
		json_object_set_new(o, "label", json_string(a->threads[t].label));
		json_object_set_new(o, "index", json_integer(a->threads[t].index));
		int prof = c->remap_threads ? c->ids[c->thr_prof[t]] : a->threads[t].node;
		json_object_set_new(o, "profiled_node", prof >= 0 ? json_integer(prof) : json_null());
		int plan = c->thr_plan[t] >= 0 ? c->ids[c->thr_plan[t]] : prof;
		json_object_set_new(o, "planned_node", plan >= 0 ? json_integer(plan) : json_null());
		json_array_append_new(threads, o);
	}
	json_object_set_new(r, "threads", threads);
	for (size_t v = 0; v < a->n_vars; v++) {
		const struct wi_var *wv = &c->vars[v];
		json_t *o = json_object(), *el = json_array();
		json_object_set_new(o, "name", json_string(a->vars[v].name));
		json_object_set_new(o, "key", a->vars[v].key ? json_string(a->vars[v].key) : json_null());
		json_object_set_new(o, "kind", json_string(nk__an_kind_name(a->vars[v].kind)));
		json_object_set_new(o, "samples", json_integer((json_int_t)wv->samples));
		for (size_t i = 0; i < wv->n_entries; i++)
			json_array_append_new(el, entry_json(c->ents[wv->entries[i]].e));
		json_object_set_new(o, "entries", el);
		json_object_set_new(o, "profiled", scen_json(c, &wv->s[0], -1));
		json_object_set_new(o, "planned", scen_json(c, &wv->s[1], -1));
		json_object_set_new(o, "migration_bytes", json_integer((json_int_t)wv->mig_bytes));
		json_object_set_new(o, "migration_mib", json_real((double)wv->mig_bytes / 1048576.0));
		json_array_append_new(vars, o);
	}
	json_object_set_new(r, "variables", vars);
	json_object_set_new(tot, "samples", json_integer((json_int_t)a->n_attr));
	json_object_set_new(tot, "profiled", scen_json(c, &c->tot[0], 0));
	json_object_set_new(tot, "planned", scen_json(c, &c->tot[1], 1));
	json_object_set_new(tot, "migration_bytes", json_integer((json_int_t)c->mig_total));
	json_object_set_new(tot, "migration_mib", json_real((double)c->mig_total / 1048576.0));
	json_object_set_new(r, "total", tot);
	if (c->rank_lr) {
		json_t *ranks = json_array();
		for (int k = 0; ranks && k < a->runs; k++) {
			const uint64_t *x = &c->rank_lr[(size_t)k * 4];
			json_t *o = json_object();
			json_object_set_new(o, "rank", json_integer(a->run_rank[k]));
			json_object_set_new(o, "profiled_remote_fraction", jfrac(rank_frac(x)));
			json_object_set_new(o, "planned_remote_fraction", jfrac(rank_frac(x + 2)));
			json_array_append_new(ranks, o);
		}
		json_object_set_new(r, "ranks", ranks);
	}
	for (size_t i = 0; i < c->n_ents; i++) {
		const struct wi_entry *we = &c->ents[i];
		json_t *o = entry_json(we->e);
		json_object_set_new(o, "variable", json_string(entry_label(we->e)));
		json_object_set_new(o, "key", json_string(we->e->key));
		json_object_set_new(o, "matched", json_boolean(we->var >= 0 && we->start != INT_MIN));
		json_object_set_new(o, "samples_applied", json_integer((json_int_t)we->applied));
		json_object_set_new(o, "migration_bytes", json_integer((json_int_t)we->mig_bytes));
		json_array_append_new(ents, o);
	}
	json_object_set_new(r, "entries", ents);
	json_object_set_new(r, "outside_instance", json_integer((json_int_t)c->no_instance));
	for (size_t i = 0; i < c->n_warn; i++)
		json_array_append_new(warns, json_string(c->warn[i]));
	for (size_t i = 0; i < c->plan->n_warnings; i++) {
		char *s = NULL;
		if (asprintf(&s, "plan: %s", c->plan->warnings[i]) >= 0) {
			json_array_append_new(warns, json_string(s));
			free(s);
		}
	}
	json_object_set_new(r, "warnings", warns);
	json_object_set_new(r, "note", json_string("stall times are estimates for comparing plans, not predictions "
						    "of run time"));
	char *s = json_dumps(r, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(r);
	if (!s)
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	/* a trailing newline, like the text */
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return nk__error(c->err, NK_ENOMEM, "whatif: out of memory");
	}
	t[n] = '\n';
	t[n + 1] = 0;
	*out = t;
	return 0;
}

/* ---------------------------------------------------------------- API */

static void ctx_free(struct wi_ctx *c)
{
	free(c->ids);
	free(c->lat);
	free(c->lat_used);
	nk__whatif_bw_free(&c->bw_model);
	free(c->mem_nodes);
	free(c->cpu_nodes);
	free(c->thr_prof);
	free(c->thr_plan);
	free(c->team_nodes);
	for (size_t i = 0; i < c->n_ents; i++)
		entry_fini(&c->ents[i]);
	free(c->ents);
	if (c->vars && c->a)
		for (size_t v = 0; v < c->a->n_vars; v++) {
			free(c->vars[v].s[0].bytes);
			free(c->vars[v].s[1].bytes);
			free(c->vars[v].entries);
		}
	free(c->vars);
	free(c->tot[0].bytes);
	free(c->tot[1].bytes);
	free(c->rank_lr);
	free(c->proc_run);
	for (size_t i = 0; i < c->n_warn; i++)
		free(c->warn[i]);
	free(c->warn);
}

int nk_profile_whatif(const nk_profile *p, const nk_machine *m, const nk_advice *a, int format, char **out,
		      nk_error *err)
{
	if (!p || !a || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_whatif: NULL argument");
	if (format != NK_REPORT_TEXT && format != NK_REPORT_JSON)
		return nk__error(err, NK_EINVAL, "nk_profile_whatif: format %d is not text or JSON", format);
	const struct nk__analysis *an = nk__profile_analysis(p);
	if (!an)
		return nk__error(err, NK_EINVAL, "nk_profile_whatif: a job's profile has one analysis per rank: load its "
				 "ranks pooled (nk_profile_load_pooled)");
	if (a->n_entries && !a->entries)
		return nk__error(err, NK_EINVAL, "nk_profile_whatif: plan entries missing");
	struct wi_ctx c;
	memset(&c, 0, sizeof(c));
	c.a = an;
	c.plan = a;
	c.err = err;
	c.given_machine = m != NULL;
	nk_machine *own = NULL;
	int rc;
	if (!m) {
		if (!an->machine_json) {
			rc = nk__error(err, NK_EINVAL,
				       "the profile has no machine description: give one (--machine FILE)");
			goto out;
		}
		nk_error merr = { 0, "" };
		rc = nk_machine_load_buffer(an->machine_json, strlen(an->machine_json), &own, &merr);
		if (rc) {
			rc = nk__error(err, rc == NK_ENOMEM ? NK_ENOMEM : NK_EINVAL,
				       "the profile's machine description is unusable: %s", merr.message);
			goto out;
		}
		m = own;
	}
	c.m = m;
	if ((rc = load_machine(&c)))
		goto out;
	c.tot[0].bytes = calloc((size_t)c.k, sizeof(uint64_t));
	c.tot[1].bytes = calloc((size_t)c.k, sizeof(uint64_t));
	if (!c.tot[0].bytes || !c.tot[1].bytes) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	if ((rc = setup_entries(&c)) || (rc = setup_pinning(&c)) || (rc = setup_threads(&c)) || (rc = setup_windows(&c)) ||
	    (rc = setup_ranks(&c)))
		goto out;
	setup_pages(&c);
	if ((rc = count_all(&c)))
		goto out;
	for (size_t i = 0; i < c.n_ents; i++)
		if ((rc = migration(&c, &c.ents[i])))
			goto out;
	if (c.oom) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	if (c.a->runs > 1)
		per_run_means(&c);
	rc = format == NK_REPORT_JSON ? json_out(&c, out) : text_out(&c, out);
out:
	ctx_free(&c);
	nk_machine_free(own);
	return rc;
}

/* ------------------------------------------------- one variable, for advise */

struct nk__whatif_model {
	struct wi_ctx c;  /* no plan: threads as profiled */
	size_t *vstart;   /* samples of variable v: vidx[vstart[v] .. vstart[v + 1]), in the analysis' order */
	uint32_t *vidx;
};

void nk__whatif_model_free(struct nk__whatif_model *w)
{
	if (!w)
		return;
	ctx_free(&w->c);
	free(w->vstart);
	free(w->vidx);
	free(w);
}

int nk__whatif_model_new(const struct nk__analysis *a, const nk_machine *m, const int *node_map,
			 struct nk__whatif_model **out, nk_error *err)
{
	struct nk__whatif_model *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	if (!w)
		return nk__error(err, NK_ENOMEM, "whatif: out of memory");
	w->c.a = a;
	w->c.m = m;
	w->c.err = err;
	w->c.given_machine = 1;
	w->c.node_map = node_map;
	if ((rc = load_machine(&w->c)) || (rc = setup_threads(&w->c)) || (rc = setup_windows(&w->c)))
		goto fail;
	setup_pages(&w->c);
	/* the bandwidth model's base: every sample as profiled (an evaluation replaces one variable's) */
	for (size_t i = 0; i < a->n_attr; i++) {
		int tn, pn, r;
		replay(&w->c, &a->attr[i], NULL, 1, &tn, &pn, &r);
		nk__whatif_bw_add(&w->c.bw_model, 0, &a->attr[i], tn, pn, 1);
	}
	w->vstart = calloc(a->n_vars + 1, sizeof(size_t));
	w->vidx = malloc((a->n_attr ? a->n_attr : 1) * sizeof(uint32_t));
	size_t *fill = malloc((a->n_vars ? a->n_vars : 1) * sizeof(size_t));
	if (!w->vstart || !w->vidx || !fill || w->c.oom) {
		free(fill);
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < a->n_attr; i++)
		w->vstart[a->attr[i].var + 1]++;
	for (size_t v = 0; v < a->n_vars; v++)
		w->vstart[v + 1] += w->vstart[v];
	memcpy(fill, w->vstart, a->n_vars * sizeof(size_t));
	for (size_t i = 0; i < a->n_attr; i++)
		w->vidx[fill[a->attr[i].var]++] = (uint32_t)i;
	free(fill);
	*out = w;
	return 0;
fail:
	nk__whatif_model_free(w);
	return rc;
}

int nk__whatif_model_eval(struct nk__whatif_model *w, size_t var, const struct nk__aplan_entry *e, int uses,
			  struct nk__whatif_pred *out, nk_error *err)
{
	struct wi_ctx *c = &w->c;
	struct wi_entry we;
	struct wi_acc x;
	int16_t *nodes = NULL;
	double *by_node = NULL;
	int rc = 0;

	memset(&we, 0, sizeof(we));
	memset(&x, 0, sizeof(x));
	c->err = err;
	if (var >= c->a->n_vars)
		return nk__error(err, NK_EINVAL, "whatif: no variable %zu", var);
	if (e && (rc = entry_init(c, &we, e)))
		goto out;
	size_t nv = w->vstart[var + 1] - w->vstart[var];
	x.bytes = calloc((size_t)c->k, sizeof(uint64_t));
	nodes = malloc((nv ? nv : 1) * 2 * sizeof(int16_t));
	by_node = calloc((size_t)c->k, sizeof(double));
	if (!x.bytes || !nodes || !by_node) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	/* the same replay and counting as count_all(), under this one entry, in the same order */
	for (size_t k = w->vstart[var]; k < w->vstart[var + 1]; k++) {
		const struct nk__an_sample *s = &c->a->attr[w->vidx[k]];
		int tn, pn;
		replay(c, s, e ? &we : NULL, 1, &tn, &pn, &rc);
		if (rc)
			goto out;
		nodes[2 * (k - w->vstart[var])] = (int16_t)tn;
		nodes[2 * (k - w->vstart[var]) + 1] = (int16_t)pn;
		if (uses && (s->init || s->fini))
			continue;
		count(c, &x, tn, pn, s->weight);
	}
	out->sat_node = -1;
	out->sat_threads = 0;
	out->sat_load = 0;
	out->sat_mbs = 0;
	out->bw_measured = !c->dflt;
	{
		/* the loads of whatif's planned scenario for this one entry: the other variables as profiled, this
		 * one's accesses (a site's fill and teardown included: they load the node all the same) moved */
		nk__whatif_bw_base(&c->bw_model);
		for (size_t k = w->vstart[var]; k < w->vstart[var + 1]; k++) {
			const struct nk__an_sample *s = &c->a->attr[w->vidx[k]];
			int tp, pp;
			replay(c, s, NULL, 1, &tp, &pp, &rc);
			nk__whatif_bw_add(&c->bw_model, 1, s, tp, pp, -1);
			nk__whatif_bw_add(&c->bw_model, 1, s, nodes[2 * (k - w->vstart[var])], nodes[2 * (k - w->vstart[var]) + 1], 1);
		}
		if ((rc = nk__whatif_bw_factors(&c->bw_model, 1, c->err)))
			goto out;
		for (size_t k = w->vstart[var]; k < w->vstart[var + 1]; k++) {
			const struct nk__an_sample *s = &c->a->attr[w->vidx[k]];
			int tn = nodes[2 * (k - w->vstart[var])], pn = nodes[2 * (k - w->vstart[var]) + 1];
			if (uses && (s->init || s->fini))
				continue;
			double d = contention(c, 1, s, tn, pn);
			x.cont_ns += d;
			if (pn >= 0)
				by_node[pn] += d;
		}
		double most = 0;
		for (int n = 0; n < c->k; n++)
			if (by_node[n] > most) {
				most = by_node[n];
				out->sat_node = c->ids[n];
				out->sat_threads = c->bw_model.peak_users[1][n];
				out->sat_load = c->bw_model.peak[1][n];
				out->sat_mbs = c->bw_model.measured[n] ? c->bw_model.node_mbs[n] : 0;
			}
	}
	if (c->a->runs > 1)
		acc_means(c, &x, (uint64_t)c->a->runs);
	double b = bw_ns(c, &x), served = 0, most = 0;
	out->acc = x.acc;
	out->local = x.local;
	out->remote = x.remote;
	out->unknown = x.unknown;
	out->remote_fraction = remote_frac(&x);
	out->latency_ms = x.lat_ns / 1e6;
	out->bandwidth_ms = b < 0 ? -1 : b / 1e6;
	out->contention_ms = x.cont_ns / 1e6;
	out->stall_ms = stall_ms(c, &x);
	out->busiest_node = -1;
	for (int n = 0; n < c->k; n++) {
		served += (double)x.bytes[n];
		if ((double)x.bytes[n] > most) {
			most = (double)x.bytes[n];
			out->busiest_node = c->ids[n];
		}
	}
	out->busiest_share = served > 0 ? most / served : 0;
out:
	entry_fini(&we);
	free(x.bytes);
	free(nodes);
	free(by_node);
	return rc;
}

double nk__whatif_model_remote_penalty_ns(const struct nk__whatif_model *w)
{
	const struct wi_ctx *c = &w->c;
	size_t kk = (size_t)c->k;
	double ls = 0, rs = 0;
	int ln = 0, rn = 0;
	for (int i = 0; i < c->n_mem; i++)
		for (int j = 0; j < c->n_mem; j++) {
			double l = c->lat[(size_t)c->mem_nodes[i] * kk + (size_t)c->mem_nodes[j]];
			if (i == j) {
				ls += l;
				ln++;
			} else {
				rs += l;
				rn++;
			}
		}
	return ln && rn ? rs / rn - ls / ln : 0;
}

/* ------------------------------------------- a rank moved, for whatif --rank-map */

/* The pred of scenario @p x (means per run already taken). */
static void fill_pred(const struct wi_ctx *c, const struct wi_acc *x, struct nk__whatif_pred *out)
{
	double b = bw_ns(c, x), served = 0, most = 0;
	out->acc = x->acc;
	out->local = x->local;
	out->remote = x->remote;
	out->unknown = x->unknown;
	out->remote_fraction = remote_frac(x);
	out->latency_ms = x->lat_ns / 1e6;
	out->bandwidth_ms = b < 0 ? -1 : b / 1e6;
	out->contention_ms = x->cont_ns / 1e6;
	out->stall_ms = stall_ms(c, x);
	out->bw_measured = !c->dflt;
	out->sat_node = -1;
	out->sat_threads = 0;
	out->sat_load = out->sat_mbs = 0;
	out->busiest_node = -1;
	for (int n = 0; n < c->k; n++) {
		served += (double)x->bytes[n];
		if ((double)x->bytes[n] > most) {
			most = (double)x->bytes[n];
			out->busiest_node = c->ids[n];
		}
	}
	out->busiest_share = served > 0 ? most / served : 0;
}

int nk__whatif_move(const struct nk__analysis *a, const nk_machine *m, int node, int follow,
		    struct nk__whatif_pred *out, char **warning, nk_error *err)
{
	struct wi_ctx c;
	struct wi_acc x;
	int rc, tq = -1, pq = -1;

	memset(&c, 0, sizeof(c));
	memset(&x, 0, sizeof(x));
	if (warning)
		*warning = NULL;
	c.a = a;
	c.m = m;
	c.err = err;
	c.given_machine = 1;
	if ((rc = load_machine(&c)) || (rc = setup_threads(&c)) || (rc = setup_windows(&c)))
		goto out;
	setup_pages(&c);
	if (node >= 0) {
		int f = nk_machine_node_flags(m, node);
		tq = node_idx(&c, node);
		if (tq < 0 || f < 0 || !(f & NK_NODE_HAS_CPUS)) {
			rc = nk__error(err, NK_EINVAL, "node %d %s", node, tq < 0 ? "is not on the machine" : "has no cpus");
			goto out;
		}
		/* memory that follows the rank: its node, else the nearest node with memory (numakit run --rank-map) */
		pq = tq;
		if (!(f & NK_NODE_HAS_MEMORY)) {
			int best = -1;
			for (int i = 0; i < c.n_mem; i++) {
				int d = nk_machine_distance(m, node, c.ids[c.mem_nodes[i]]);
				if (d >= 0 && (best < 0 || d < best)) {
					best = d;
					pq = c.mem_nodes[i];
				}
			}
		}
	}
	if (!(x.bytes = calloc((size_t)c.k, sizeof(uint64_t)))) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	/* twice: the bandwidth model's loads (the rank alone on the machine), then each access priced */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		for (size_t i = 0; i < a->n_attr; i++) {
			const struct nk__an_sample *s = &a->attr[i];
			int tn, pn, r = 0;
			replay(&c, s, NULL, 0, &tn, &pn, &r); /* as profiled */
			if (node >= 0) {
				tn = tq; /* every thread of the rank runs on its node */
				if (follow && pn >= 0)
					pn = pq;
			}
			if (pass) {
				count(&c, &x, tn, pn, s->weight);
				x.cont_ns += contention(&c, 0, s, tn, pn);
			} else {
				nk__whatif_bw_add(&c.bw_model, 0, s, tn, pn, 1);
			}
		}
		if (!pass)
			rc = nk__whatif_bw_factors(&c.bw_model, 0, err);
	}
	if (rc)
		goto out;
	if (a->runs > 1)
		acc_means(&c, &x, (uint64_t)a->runs);
	if (c.oom) {
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
		goto out;
	}
	fill_pred(&c, &x, out);
	if (warning && c.n_warn && !(*warning = strdup(c.warn[0])))
		rc = nk__error(err, NK_ENOMEM, "whatif: out of memory");
out:
	free(x.bytes);
	ctx_free(&c);
	return rc;
}
