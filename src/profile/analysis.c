/*
 * Data-centric analysis of a profile: attribution of samples to variables,
 * counts, page classes, matrices, diagnosis (analysis.h, docs/report.md).
 * Pure computation over an in-memory profile; symbolisation through the
 * nk__sym_* interface when a symtab is given.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis.h"
#include "util/list.h"

#define MAX_NODE_ID 4096

/* ---------------------------------------------------------------- helpers */

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Open addressing: slots hold index + 1, 0 empty. */
struct table {
	uint32_t *slot;
	size_t cap;
};

static int table_grow(struct table *t, size_t n, uint64_t (*hash_of)(void *, uint32_t), void *ctx)
{
	if (n * 2 < t->cap)
		return 0;
	size_t cap = t->cap ? t->cap * 2 : 64;
	while (cap < n * 2 + 2)
		cap *= 2;
	uint32_t *s = calloc(cap, sizeof(*s));
	if (!s)
		return NK_ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i])
			continue;
		size_t j = hash_of(ctx, t->slot[i] - 1) & (cap - 1);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = s;
	t->cap = cap;
	return 0;
}

/* ---------------------------------------------------------------- context */

struct thr_key {
	uint32_t proc, tid;
};

struct rec {
	uint64_t page;
	uint64_t cl;           /* cluster of the remote-share interval (intervals()) */
	uint8_t grouped;       /* cl is a 16-page group (pagefault), else the sample's own index */
	uint32_t var, proc, thread, w;
	int16_t cnode, pnode; /* raw node ids, -1 unknown */
	uint8_t access, where; /* where: 0 local, 1 remote, 2 unknown */
	uint16_t phase;        /* global phase index + 1, 0 none */
	uint8_t ft;            /* the page's first touch */
	uint8_t init;          /* ft, or made by an instruction that first-touches the variable (mark_init) */
};

struct iprec {
	uint64_t ip;
	uint32_t var, proc, thread, w;
	uint8_t remote, ft;
	int16_t pnode;
};

struct blk {
	uint64_t lo, hi, born, died;
	uint32_t site;
	uint32_t tid;
};

struct ctx {
	const struct nk__nkp_profile *p;
	nk__symtab *const *syms;
	const struct nk__an_symops *ops;
	struct nk__analysis *a;
	size_t cap_vars;
	struct table vtab; /* key -> var */
	struct thr_key *tkeys;
	size_t cap_threads;
	struct table ttab; /* (proc, tid) -> thread */
	struct rec *recs;
	size_t n_recs;
	struct iprec *ips;
	size_t n_ips;
	size_t cap_phases;
	/* per-phase run (phase_vars): the whole-profile analysis, its variables sorted by key, and the
	 * global phase index whose samples alone are analysed; parent NULL and only_phase -1 otherwise */
	const struct nk__analysis *parent;
	struct nk__an_var *const *parent_by_key;
	int only_phase;
	/* several runs (setup_runs): per process, its ordinal in its run and the pid of the first run's
	 * process of that ordinal, and its (tid, THREAD index) pairs sorted by tid; NULL for one run */
	uint32_t *proc_ord, *canon_pid;
	struct tid_index { uint32_t tid, index; } **tids;
	size_t *n_tids;
};

static uint64_t var_hash(void *c, uint32_t i)
{
	return hash_str(((struct ctx *)c)->a->vars[i].key);
}

static uint64_t thr_hash(void *c, uint32_t i)
{
	struct thr_key *k = &((struct ctx *)c)->tkeys[i];
	return hash_u64(((uint64_t)k->proc << 32) | k->tid);
}

/* The variable of @p key, created with @p name (taken over: freed on failure too). */
static int var_get(struct ctx *c, int kind, const char *key, char *name, uint64_t size)
{
	struct nk__analysis *a = c->a;
	uint64_t h = hash_str(key);
	if (c->vtab.cap) {
		for (size_t j = h & (c->vtab.cap - 1); c->vtab.slot[j]; j = (j + 1) & (c->vtab.cap - 1)) {
			struct nk__an_var *v = &a->vars[c->vtab.slot[j] - 1];
			if (!strcmp(v->key, key)) {
				free(name);
				if (size > v->size)
					v->size = size;
				return (int)(c->vtab.slot[j] - 1);
			}
		}
	}
	if (!name)
		return NK_ENOMEM;
	if (table_grow(&c->vtab, a->n_vars + 1, var_hash, c)) {
		free(name);
		return NK_ENOMEM;
	}
	if (a->n_vars == c->cap_vars) {
		size_t cap = c->cap_vars ? c->cap_vars * 2 : 32;
		struct nk__an_var *nv = realloc(a->vars, cap * sizeof(*nv));
		if (!nv) {
			free(name);
			return NK_ENOMEM;
		}
		a->vars = nv;
		c->cap_vars = cap;
	}
	struct nk__an_var *v = &a->vars[a->n_vars];
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->name = name;
	v->key = xstrdup(key);
	v->size = size;
	v->ft_thread = -1;
	v->alloc_thread = -1;
	v->ft_node = -1;
	v->dominant_node = -1;
	v->regularity = -1;
	v->created = a->n_vars;
	if (!v->key) {
		free(name);
		return NK_ENOMEM;
	}
	size_t j = h & (c->vtab.cap - 1);
	while (c->vtab.slot[j])
		j = (j + 1) & (c->vtab.cap - 1);
	c->vtab.slot[j] = (uint32_t)++a->n_vars;
	return (int)(a->n_vars - 1);
}

static int cmp_tid_index(const void *x, const void *y)
{
	const struct tid_index *a = x, *b = y;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

/* The pid a process is shown with: with several runs, that of the first run's process of its ordinal
 * (so that "pid P thread N" and stacks are one thread and one variable over the runs). */
static uint32_t shown_pid(const struct ctx *c, size_t proc)
{
	return c->canon_pid ? c->canon_pid[proc] : c->p->procs[proc].info.pid;
}

static int thread_get(struct ctx *c, uint32_t proc, uint32_t tid, int index)
{
	struct nk__analysis *a = c->a;
	uint32_t gproc = proc, gtid = tid;
	if (c->proc_ord) {
		/* Several runs: a thread is (the process's ordinal in its run, the THREAD index), the same
		 * thread in every run; a tid without THREAD record stays one of its own process. */
		if (index < 0 && c->n_tids[proc]) {
			struct tid_index key = { tid, 0 };
			const struct tid_index *f =
				bsearch(&key, c->tids[proc], c->n_tids[proc], sizeof(key), cmp_tid_index);
			if (f)
				index = (int)f->index;
		}
		if (index >= 0) {
			proc = c->proc_ord[proc];
			tid = 0x80000000u | (uint32_t)index;
		} else {
			proc |= 0x80000000u;
		}
	}
	uint64_t h = hash_u64(((uint64_t)proc << 32) | tid);
	if (c->ttab.cap) {
		for (size_t j = h & (c->ttab.cap - 1); c->ttab.slot[j]; j = (j + 1) & (c->ttab.cap - 1)) {
			struct thr_key *k = &c->tkeys[c->ttab.slot[j] - 1];
			if (k->proc == proc && k->tid == tid)
				return (int)(c->ttab.slot[j] - 1);
		}
	}
	if (table_grow(&c->ttab, a->n_threads + 1, thr_hash, c))
		return NK_ENOMEM;
	if (a->n_threads == c->cap_threads) {
		size_t cap = c->cap_threads ? c->cap_threads * 2 : 16;
		struct nk__an_thread *t = realloc(a->threads, cap * sizeof(*t));
		if (!t)
			return NK_ENOMEM;
		a->threads = t;
		struct thr_key *k = realloc(c->tkeys, cap * sizeof(*k));
		if (!k)
			return NK_ENOMEM;
		c->tkeys = k;
		c->cap_threads = cap;
	}
	struct nk__an_thread *t = &a->threads[a->n_threads];
	memset(t, 0, sizeof(*t));
	t->pid = shown_pid(c, gproc);
	t->tid = gtid;
	t->index = index;
	t->node = -1;
	if (a->n_procs > 1)
		t->label = index >= 0 ? xprintf("pid %u thread %d", t->pid, index) : xprintf("pid %u tid %u", t->pid, tid);
	else
		t->label = index >= 0 ? xprintf("thread %d", index) : xprintf("tid %u", tid);
	if (!t->label)
		return NK_ENOMEM;
	c->tkeys[a->n_threads] = (struct thr_key){ proc, tid };
	size_t j = h & (c->ttab.cap - 1);
	while (c->ttab.slot[j])
		j = (j + 1) & (c->ttab.cap - 1);
	c->ttab.slot[j] = (uint32_t)++a->n_threads;
	return (int)(a->n_threads - 1);
}

static int warn(struct nk__analysis *a, char *text)
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

static int phase_get(struct ctx *c, const char *name)
{
	struct nk__analysis *a = c->a;
	for (size_t i = 0; i < a->n_phases; i++)
		if (!strcmp(a->phases[i].name, name))
			return (int)i;
	if (a->n_phases == c->cap_phases) {
		size_t cap = c->cap_phases ? c->cap_phases * 2 : 8;
		struct nk__an_phase *ph = realloc(a->phases, cap * sizeof(*ph));
		if (!ph)
			return NK_ENOMEM;
		a->phases = ph;
		c->cap_phases = cap;
	}
	struct nk__an_phase *ph = &a->phases[a->n_phases];
	memset(ph, 0, sizeof(*ph));
	ph->name = xstrdup(name);
	if (!ph->name)
		return NK_ENOMEM;
	return (int)a->n_phases++;
}

/* ---------------------------------------------------------------- naming */

/* Frames of the allocator, libc or the runtime are skipped when naming a site. */
static int runtime_object(const char *obj)
{
	if (!obj)
		return 0;
	const char *b = base_name(obj);
	static const char *const skip[] = { "libc.", "libc-", "libnumakit", "ld-linux", "libstdc++", "libgcc", "libgomp",
					    "libomp", "libpthread", "libjemalloc", "libtcmalloc" };
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strncmp(b, skip[i], strlen(skip[i])))
			return 1;
	return 0;
}

static char *loc_text(const struct nk__sym_loc *l, uint64_t ip)
{
	if (l->file && l->line > 0)
		return l->function ? xprintf("%s:%d (%s)", base_name(l->file), l->line, l->function)
				   : xprintf("%s:%d", base_name(l->file), l->line);
	if (l->function)
		return xprintf("%s (%s+0x%llx)", l->function, l->object ? base_name(l->object) : "?",
			       (unsigned long long)l->offset);
	if (l->object)
		return xprintf("%s+0x%llx", base_name(l->object), (unsigned long long)l->offset);
	return xprintf("0x%llx", (unsigned long long)ip);
}

static char *ip_text(const struct nk__an_symops *ops, nk__symtab *s, uint64_t ip)
{
	struct nk__sym_loc l;
	memset(&l, 0, sizeof(l));
	if (s && ip && ops->ip(s, ip, &l))
		return loc_text(&l, ip);
	return xprintf("0x%llx", (unsigned long long)ip);
}

static const struct nk__nkp_site_data *find_site(const struct nk__nkp_process_data *pd, uint32_t id)
{
	size_t lo = 0, hi = pd->n_sites;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pd->sites[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pd->n_sites && pd->sites[lo].id == id ? &pd->sites[lo] : NULL;
}

/* The variable of heap allocation site @p site of process @p proc. */
static int site_var(struct ctx *c, size_t proc, uint32_t site, uint64_t size)
{
	const struct nk__nkp_process_data *pd = &c->p->procs[proc];
	nk__symtab *s = c->syms ? c->syms[proc] : NULL;
	const struct nk__nkp_site_data *sd = site ? find_site(pd, site) : NULL;
	char key[1024];
	char *name = NULL;

	if (!sd || !sd->depth) {
		snprintf(key, sizeof(key), "heap:pid%u:site%u", pd->info.pid, site);
		return var_get(c, NK__VAR_HEAP, key, xprintf("allocation site %u", site), size);
	}
	if (s) {
		size_t kl = (size_t)snprintf(key, sizeof(key), "heap:");
		int named = 0, frames = 0;
		for (uint32_t i = 0; i < sd->depth; i++) {
			struct nk__sym_loc l;
			memset(&l, 0, sizeof(l));
			uint64_t ip = sd->ips[i] ? sd->ips[i] - 1 : 0; /* return address: the call is before it */
			if (!c->ops->ip(s, ip, &l) || !l.object)
				continue;
			if (frames < 4 && kl < sizeof(key) - 64) {
				kl += (size_t)snprintf(key + kl, sizeof(key) - kl, "%s%s+0x%llx", frames ? ";" : "",
						       base_name(l.object), (unsigned long long)l.offset);
				frames++;
			}
			if (!named && !runtime_object(l.object)) {
				name = loc_text(&l, ip);
				if (!name)
					return NK_ENOMEM;
				named = 1;
			}
		}
		if (frames) {
			if (!name)
				name = xprintf("allocation site %u", site);
			return var_get(c, NK__VAR_HEAP, key, name, size);
		}
	}
	snprintf(key, sizeof(key), "heap:pid%u:site%u", pd->info.pid, site);
	return var_get(c, NK__VAR_HEAP, key, xprintf("allocation site %u (0x%llx)", site, (unsigned long long)sd->ips[0]),
		       size);
}

/* ---------------------------------------------------------------- attribution */

static int cmp_blk(const void *x, const void *y)
{
	const struct blk *a = x, *b = y;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->born < b->born ? -1 : a->born > b->born;
}

struct proc_ctx {
	struct blk *blks;
	size_t n_blks;
	uint64_t max_len;
	int *blk_var;       /* var of each block's site, -2 not yet known */
	struct blk *statics; /* STATIC segments */
	size_t n_statics;
	int *name_var;      /* per NAME record */
	int *stack_var;     /* per THREAD record, -2 not yet known */
	uint64_t last_lo, last_hi; /* last static/mapping found */
	int last_var;
	uint64_t hit_lo, hit_hi;   /* the instance attribute() last returned: block, static, range (0, 0 unknown) */
	int anon_var;
	int16_t phase_map_id[64];
	int phase_map_g[64];
	int n_phase_map;
	unsigned char *site_small; /* [max site id + 1]: 1 when the site's live blocks never together reached
				    * META min_size (not a variable: its samples fall through to the mapping) */
	uint32_t n_site_small;
};

static int build_blocks(const struct nk__nkp_process_data *pd, struct proc_ctx *pc)
{
	size_t n = 0, ns = 0;
	for (size_t i = 0; i < pd->n_allocs; i++)
		if (pd->allocs[i].kind == NK__ALLOC_STATIC)
			ns++;
		else
			n++;
	pc->blks = calloc(n ? n : 1, sizeof(*pc->blks));
	pc->statics = calloc(ns ? ns : 1, sizeof(*pc->statics));
	pc->blk_var = malloc((n ? n : 1) * sizeof(int));
	if (!pc->blks || !pc->statics || !pc->blk_var)
		return NK_ENOMEM;
	/* id -> block, to close blocks by FREE id */
	uint32_t max_id = 0;
	for (size_t i = 0; i < pd->n_allocs; i++)
		if (pd->allocs[i].id > max_id)
			max_id = pd->allocs[i].id;
	for (size_t i = 0; i < pd->n_allocs; i++) {
		const struct nk__nkp_alloc *al = &pd->allocs[i];
		struct blk b = { al->addr, al->addr + al->size, al->time_ns, UINT64_MAX, al->site, al->tid };
		if (al->kind == NK__ALLOC_STATIC) {
			pc->statics[pc->n_statics++] = b;
			continue;
		}
		pc->blk_var[pc->n_blks] = -2;
		pc->blks[pc->n_blks++] = b;
		if (al->size > pc->max_len)
			pc->max_len = al->size;
	}
	/* Frees: the block of that address born last before the free and still live. */
	qsort(pc->blks, pc->n_blks, sizeof(*pc->blks), cmp_blk);
	for (size_t f = 0; f < pd->n_frees; f++) {
		const struct nk__nkp_free *fr = &pd->frees[f];
		size_t lo = 0, hi = pc->n_blks;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (pc->blks[mid].lo < fr->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		struct blk *best = NULL;
		for (size_t i = lo; i < pc->n_blks && pc->blks[i].lo == fr->addr; i++)
			if (pc->blks[i].born <= fr->time_ns && pc->blks[i].died == UINT64_MAX)
				best = &pc->blks[i];
		if (best)
			best->died = fr->time_ns;
	}
	(void)max_id;
	return 0;
}

/* Attribute address @p addr at time @p t in process @p proc to a variable. */
static int attribute(struct ctx *c, size_t proc, struct proc_ctx *pc, uint64_t addr, uint64_t t)
{
	const struct nk__nkp_process_data *pd = &c->p->procs[proc];
	nk__symtab *s = c->syms ? c->syms[proc] : NULL;
	char key[512];

	/* 1. names given by the program, the latest given before the access winning */
	for (size_t i = pd->n_names; i-- > 0;) {
		const struct nk__nkp_name *n = &pd->names[i].n;
		if (addr >= n->addr && addr - n->addr < n->size && n->time_ns <= t) {
			if (pc->name_var[i] == -2) {
				snprintf(key, sizeof(key), "name:%s", pd->names[i].name);
				pc->name_var[i] = var_get(c, NK__VAR_NAMED, key, xstrdup(pd->names[i].name), n->size);
			}
			pc->hit_lo = n->addr;
			pc->hit_hi = n->addr + n->size;
			return pc->name_var[i];
		}
	}
	/* 2. heap blocks live at t (an address may be reused by a later block) */
	if (pc->n_blks && addr >= pc->blks[0].lo) {
		size_t lo = 0, hi = pc->n_blks;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (pc->blks[mid].lo <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i-- > 0;) {
			struct blk *b = &pc->blks[i];
			if (addr - b->lo >= pc->max_len)
				break;
			if (addr < b->hi && b->born <= t && t < b->died) {
				if (b->site < pc->n_site_small && pc->site_small[b->site])
					break;
				if (pc->blk_var[i] == -2)
					pc->blk_var[i] = site_var(c, proc, b->site, b->hi - b->lo);
				else if (pc->blk_var[i] >= 0 && b->hi - b->lo > c->a->vars[pc->blk_var[i]].size)
					c->a->vars[pc->blk_var[i]].size = b->hi - b->lo;
				pc->hit_lo = b->lo;
				pc->hit_hi = b->hi;
				return pc->blk_var[i];
			}
		}
	}
	if (pc->last_var >= 0 && addr >= pc->last_lo && addr < pc->last_hi) {
		pc->hit_lo = pc->last_lo;
		pc->hit_hi = pc->last_hi;
		return pc->last_var;
	}
	/* 3. statics */
	struct nk__sym_var sv;
	memset(&sv, 0, sizeof(sv));
	if (s && c->ops->data(s, addr, &sv) && sv.name) {
		char *name = sv.decl_file && sv.decl_line > 0
				     ? xprintf("%s (%s:%d)", sv.name, base_name(sv.decl_file), sv.decl_line)
				     : xstrdup(sv.name);
		snprintf(key, sizeof(key), "static:%s:%s", sv.object ? base_name(sv.object) : "?", sv.name);
		int v = var_get(c, NK__VAR_STATIC, key, name, sv.size);
		if (v >= 0 && sv.type && !c->a->vars[v].type)
			c->a->vars[v].type = xstrdup(sv.type);
		pc->last_lo = sv.addr;
		pc->last_hi = sv.addr + sv.size;
		pc->last_var = v;
		pc->hit_lo = sv.addr;
		pc->hit_hi = sv.addr + sv.size;
		return v;
	}
	for (size_t i = 0; i < pc->n_statics; i++) {
		struct blk *b = &pc->statics[i];
		if (addr >= b->lo && addr < b->hi) {
			const char *obj = NULL;
			uint64_t lo, hi;
			if (s && c->ops->mapping(s, addr, &obj, &lo, &hi) != NK__MAP_FILE)
				obj = NULL;
			if (obj)
				snprintf(key, sizeof(key), "static:%s", base_name(obj));
			else
				snprintf(key, sizeof(key), "static:pid%u:%llx", pd->info.pid, (unsigned long long)b->lo);
			int v = var_get(c, NK__VAR_STATIC, key,
					obj ? xprintf("static data of %s", base_name(obj))
					    : xprintf("static data at 0x%llx", (unsigned long long)b->lo),
					b->hi - b->lo);
			/* No lookup cache here: the segment holds named variables too, and caching
			 * the whole segment after one unnamed address sent every later sample of
			 * them to "static data of ..." (seen in the 4n-slit guest test). */
			pc->hit_lo = b->lo;
			pc->hit_hi = b->hi;
			return v;
		}
	}
	/* 4. thread stacks */
	for (size_t i = 0; i < pd->n_threads; i++) {
		const struct nk__nkp_thread *th = &pd->threads[i];
		if (th->stack_hi > th->stack_lo && addr >= th->stack_lo && addr < th->stack_hi) {
			if (pc->stack_var[i] == -2) {
				snprintf(key, sizeof(key), "stack:pid%u:%u", shown_pid(c, proc), th->index);
				pc->stack_var[i] = var_get(c, NK__VAR_STACK, key,
							   c->a->n_procs > 1 ? xprintf("stack of pid %u thread %u",
										       shown_pid(c, proc), th->index)
									     : xprintf("stack of thread %u", th->index),
							   th->stack_hi - th->stack_lo);
			}
			pc->hit_lo = th->stack_lo;
			pc->hit_hi = th->stack_hi;
			return pc->stack_var[i];
		}
	}
	/* 5. mappings */
	const char *mname = NULL;
	uint64_t lo = 0, hi = 0;
	int kind = s ? c->ops->mapping(s, addr, &mname, &lo, &hi) : NK__MAP_NONE;
	if (kind == NK__MAP_FILE && mname) {
		snprintf(key, sizeof(key), "file:%s", mname);
		int v = var_get(c, NK__VAR_FILE, key, xstrdup(mname), hi - lo);
		pc->last_lo = lo;
		pc->last_hi = hi;
		pc->last_var = v;
		pc->hit_lo = lo;
		pc->hit_hi = hi;
		return v;
	}
	if (kind == NK__MAP_STACK) {
		snprintf(key, sizeof(key), "stack:pid%u:0", shown_pid(c, proc));
		int v = var_get(c, NK__VAR_STACK, key,
				c->a->n_procs > 1 ? xprintf("stack of pid %u thread 0", shown_pid(c, proc))
						  : xstrdup("stack of thread 0"),
				hi - lo);
		pc->last_lo = lo;
		pc->last_hi = hi;
		pc->last_var = v;
		pc->hit_lo = lo;
		pc->hit_hi = hi;
		return v;
	}
	if (pc->anon_var < 0)
		pc->anon_var = var_get(c, NK__VAR_ANON, "anon", xstrdup("[anonymous]"), 0);
	pc->hit_lo = pc->hit_hi = 0;
	return pc->anon_var;
}

static int json_u64(json_t *o, const char *k, uint64_t *out)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

/* Several runs: what each run was (the report lists them), and the mean wall time. */
static int read_runs(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	const struct nk__nkp_profile *p = c->p;
	a->runs = (int)nk__nkp_n_runs(p);
	if (a->runs < 2)
		return 0;
	a->run_info = calloc((size_t)a->runs, sizeof(*a->run_info));
	if (!a->run_info)
		return NK_ENOMEM;
	uint64_t wall = 0, nwall = 0;
	for (int r = 0; r < a->runs; r++) {
		struct nk__an_run *ri = &a->run_info[r];
		json_t *run = json_loads(p->runs[r].run_json, 0, NULL), *cmd = json_object_get(run, "command"), *arg;
		size_t i, len = 1;
		json_array_foreach(cmd, i, arg) len += json_is_string(arg) ? strlen(json_string_value(arg)) + 1 : 0;
		ri->command = calloc(1, len);
		json_array_foreach(cmd, i, arg) if (ri->command && json_is_string(arg))
		{
			if (*ri->command)
				strcat(ri->command, " ");
			strcat(ri->command, json_string_value(arg));
		}
		ri->exit_status = -1;
		json_u64(run, "wall_ns", &ri->wall_ns);
		json_t *st = json_object_get(run, "exit_status"), *sg = json_object_get(run, "signal");
		if (json_is_integer(st))
			ri->exit_status = (int)json_integer_value(st);
		if (json_is_integer(sg))
			ri->signal = (int)json_integer_value(sg);
		json_decref(run);
		ri->processes = (int)p->runs[r].n_procs;
		for (size_t k = 0; k < p->runs[r].n_procs; k++)
			ri->samples += p->procs[p->runs[r].first_proc + k].n_samples;
		if (p->runs[r].source && !(ri->source = xstrdup(p->runs[r].source)))
			return NK_ENOMEM;
		if (!ri->command)
			return NK_ENOMEM;
		if (ri->wall_ns) {
			wall += ri->wall_ns;
			nwall++;
		}
	}
	a->wall_ns = nwall ? (wall + nwall / 2) / nwall : 0;
	return 0;
}

/* Several runs: each process's ordinal in its run and the pid it is shown with, its threads by tid. */
static int setup_runs(struct ctx *c)
{
	const struct nk__nkp_profile *p = c->p;
	size_t runs = nk__nkp_n_runs(p);
	if (runs < 2 || !p->n_procs)
		return 0;
	c->proc_ord = calloc(p->n_procs, sizeof(*c->proc_ord));
	c->canon_pid = calloc(p->n_procs, sizeof(*c->canon_pid));
	c->tids = calloc(p->n_procs, sizeof(*c->tids));
	c->n_tids = calloc(p->n_procs, sizeof(*c->n_tids));
	if (!c->proc_ord || !c->canon_pid || !c->tids || !c->n_tids)
		return NK_ENOMEM;
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		size_t r = nk__nkp_run_of(p, i), ord = i - p->runs[r].first_proc;
		c->proc_ord[i] = (uint32_t)ord;
		c->canon_pid[i] = ord < p->runs[0].n_procs ? p->procs[p->runs[0].first_proc + ord].info.pid : pd->info.pid;
		c->tids[i] = malloc((pd->n_threads ? pd->n_threads : 1) * sizeof(**c->tids));
		if (!c->tids[i])
			return NK_ENOMEM;
		for (size_t t = 0; t < pd->n_threads; t++)
			c->tids[i][t] = (struct tid_index){ pd->threads[t].tid, pd->threads[t].index };
		qsort(c->tids[i], pd->n_threads, sizeof(**c->tids), cmp_tid_index);
		c->n_tids[i] = pd->n_threads;
	}
	return 0;
}

static int coverage_reason(struct nk__analysis *a, char *text)
{
	char **r = text ? realloc(a->coverage_reasons, (a->n_coverage_reasons + 1) * sizeof(*r)) : NULL;
	if (!r) {
		free(text);
		return NK_ENOMEM;
	}
	a->coverage_reasons = r;
	r[a->n_coverage_reasons++] = text;
	a->covered = 0;
	return 0;
}

/*
 * Does process @p pd's part cover its run?  Not when it was not closed (killed: its samples end wherever it
 * died) or when samples were dropped: spent budget drops the end of the run, a full ring drops bursts (a
 * parallel phase), either biases every fraction.  The time the budget ran out is said when END has it.
 */
static int coverage_of(struct nk__analysis *a, const struct nk__nkp_process_data *pd, json_t *end, uint64_t dropped)
{
	uint64_t budget = 0, bdropped = 0, spent = 0, t_end = 0;
	if (!pd->complete) {
		a->procs_incomplete++;
		if (coverage_reason(a, xprintf("process %u did not finish its profile (killed?): its samples end where "
					       "it stopped", pd->info.pid)))
			return NK_ENOMEM;
	}
	if (!dropped)
		return 0;
	a->dropped += dropped;
	if (end) {
		json_u64(end, "budget", &budget);
		json_u64(end, "budget_dropped", &bdropped);
		json_u64(end, "budget_spent_ns", &spent);
		json_u64(end, "time_ns", &t_end);
	}
	if (bdropped > dropped)
		bdropped = dropped;
	a->budget_dropped += bdropped;
	char *text;
	if (bdropped && spent && t_end >= spent)
		text = xprintf("process %u: sample budget (%llu) spent at %.2f s of %.2f s: %llu samples dropped",
			       pd->info.pid, (unsigned long long)budget, (double)spent / 1e9, (double)t_end / 1e9,
			       (unsigned long long)bdropped);
	else if (bdropped)
		text = xprintf("process %u: sample budget (%llu) spent: %llu samples dropped", pd->info.pid,
			       (unsigned long long)budget, (unsigned long long)bdropped);
	else
		text = xprintf("process %u: %llu samples dropped", pd->info.pid, (unsigned long long)dropped);
	if (coverage_reason(a, text))
		return NK_ENOMEM;
	if (bdropped && bdropped < dropped &&
	    coverage_reason(a, xprintf("process %u: %llu samples dropped with the ring full", pd->info.pid,
				       (unsigned long long)(dropped - bdropped))))
		return NK_ENOMEM;
	return 0;
}

static int read_header(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	json_t *run = c->p->run_json ? json_loads(c->p->run_json, 0, NULL) : NULL;
	const char *prog = "?", *sampler = "?";
	if (json_is_object(run)) {
		json_t *cmd = json_object_get(run, "command");
		if (json_is_array(cmd) && json_is_string(json_array_get(cmd, 0)))
			prog = json_string_value(json_array_get(cmd, 0));
		if (json_is_string(json_object_get(run, "sampler")))
			sampler = json_string_value(json_object_get(run, "sampler"));
		json_u64(run, "wall_ns", &a->wall_ns);
		json_t *fb = json_object_get(run, "fallback");
		if (json_is_string(fb) && warn(a, xprintf("sampler fallback: %s", json_string_value(fb)))) {
			json_decref(run);
			return NK_ENOMEM;
		}
	}
	a->program = xstrdup(prog);
	a->sampler = xstrdup(sampler);
	json_decref(run);
	if (!a->program || !a->sampler)
		return NK_ENOMEM;
	if (read_runs(c))
		return NK_ENOMEM;
	a->covered = 1;
	for (size_t i = 0; i < c->p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &c->p->procs[i];
		if (!pd->complete && warn(a, xprintf("process %u did not finish its profile (killed?): its data is "
						     "incomplete", pd->info.pid)))
			return NK_ENOMEM;
		json_t *end = pd->end_json ? json_loads(pd->end_json, 0, NULL) : NULL;
		uint64_t dropped = 0;
		if (json_is_object(end) && json_u64(end, "dropped", &dropped) && dropped &&
		    warn(a, xprintf("process %u: %llu samples dropped", pd->info.pid, (unsigned long long)dropped))) {
			json_decref(end);
			return NK_ENOMEM;
		}
		int rc = coverage_of(a, pd, json_is_object(end) ? end : NULL, dropped);
		json_decref(end);
		if (rc)
			return rc;
		nk__symtab *s = c->syms ? c->syms[i] : NULL;
		const char *sw = s ? c->ops->warnings(s) : "";
		if (sw && *sw && warn(a, xprintf("process %u: %s", pd->info.pid, sw)))
			return NK_ENOMEM;
	}
	return 0;
}

static uint64_t page_size_of(const struct nk__nkp_process_data *pd)
{
	uint64_t ps = 4096;
	json_t *meta = pd->meta_json ? json_loads(pd->meta_json, 0, NULL) : NULL;
	if (json_is_object(meta))
		json_u64(meta, "page_size", &ps);
	json_decref(meta);
	if (!ps || (ps & (ps - 1)))
		ps = 4096;
	return ps;
}

static int thread_known(const struct nk__nkp_process_data *pd, uint32_t tid)
{
	for (size_t t = 0; t < pd->n_threads; t++)
		if (pd->threads[t].tid == tid)
			return 1;
	return 0;
}

static uint64_t min_size_of(const struct nk__nkp_process_data *pd)
{
	uint64_t ms = 0;
	json_t *meta = pd->meta_json ? json_loads(pd->meta_json, 0, NULL) : NULL;
	if (json_is_object(meta))
		json_u64(meta, "min_size", &ms);
	json_decref(meta);
	return ms;
}

struct sev {
	uint64_t t;
	int64_t blocks, bytes;
	uint32_t key; /* a site id or a variable */
};

static int cmp_sev(const void *x, const void *y)
{
	const struct sev *a = x, *b = y;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->blocks < b->blocks ? -1 : a->blocks > b->blocks; /* frees before allocations at one time */
}

/* Events of the blocks (+1 at birth, -1 at death) keyed by @p key[i] (UINT32_MAX: left out), sorted. */
static struct sev *site_events(const struct proc_ctx *pc, const uint32_t *key, size_t *n_out)
{
	struct sev *e = malloc((2 * pc->n_blks + 1) * sizeof(*e));
	size_t n = 0;
	if (!e)
		return NULL;
	for (size_t i = 0; i < pc->n_blks; i++) {
		if (key[i] == UINT32_MAX)
			continue;
		int64_t sz = (int64_t)(pc->blks[i].hi - pc->blks[i].lo);
		e[n++] = (struct sev){ pc->blks[i].born, 1, sz, key[i] };
		if (pc->blks[i].died != UINT64_MAX)
			e[n++] = (struct sev){ pc->blks[i].died, -1, -sz, key[i] };
	}
	qsort(e, n, sizeof(*e), cmp_sev);
	*n_out = n;
	return e;
}

/*
 * A site is a variable when its live blocks together reach the process's --min-size (issue 19): sites of
 * small blocks whose peak live bytes stay below it are marked in pc->site_small.  Profiles without
 * min_size in META (or 0) mark nothing.
 */
static int mark_small_sites(const struct nk__nkp_process_data *pd, struct proc_ctx *pc)
{
	uint64_t ms = min_size_of(pd);
	uint32_t max_site = 0;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blks[i].site > max_site)
			max_site = pc->blks[i].site;
	if (!ms || !max_site)
		return 0;
	uint32_t *key = malloc((pc->n_blks ? pc->n_blks : 1) * sizeof(*key));
	pc->site_small = calloc(max_site + 1, 1);
	if (!key || !pc->site_small) {
		free(key);
		return NK_ENOMEM;
	}
	pc->n_site_small = max_site + 1;
	for (size_t i = 0; i < pc->n_blks; i++)
		key[i] = pc->blks[i].site ? pc->blks[i].site : UINT32_MAX;
	size_t n = 0;
	struct sev *e = site_events(pc, key, &n);
	free(key);
	if (!e)
		return NK_ENOMEM;
	for (size_t i = 0; i < n;) {
		uint32_t site = e[i].key;
		int64_t bytes = 0, peak = 0;
		for (; i < n && e[i].key == site; i++) {
			bytes += e[i].bytes;
			if (bytes > peak)
				peak = bytes;
		}
		pc->site_small[site] = (uint64_t)peak < ms;
	}
	free(e);
	return 0;
}

/* The site members of the heap variables of process @p proc (whole profile only). */
static int site_stats(struct ctx *c, size_t proc, struct proc_ctx *pc)
{
	const struct nk__nkp_process_data *pd = &c->p->procs[proc];
	struct nk__analysis *a = c->a;
	uint32_t max_site = 0;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blks[i].site > max_site)
			max_site = pc->blks[i].site;
	int *sv = malloc((max_site + 1) * sizeof(int));
	uint32_t *key = malloc((pc->n_blks ? pc->n_blks : 1) * sizeof(*key));
	if (!sv || !key) {
		free(sv);
		free(key);
		return NK_ENOMEM;
	}
	for (uint32_t s = 0; s <= max_site; s++)
		sv[s] = -1;
	for (size_t i = 0; i < pc->n_blks; i++)
		if (pc->blk_var[i] >= 0 && pc->blks[i].site)
			sv[pc->blks[i].site] = pc->blk_var[i];
	/* thread -> blocks of each variable: counted in a small table per variable */
	for (size_t i = 0; i < pc->n_blks; i++) {
		int v = pc->blks[i].site ? sv[pc->blks[i].site] : -1;
		key[i] = v >= 0 ? (uint32_t)v : UINT32_MAX;
		if (v < 0)
			continue;
		struct nk__an_var *var = &a->vars[v];
		var->site = 1;
		var->site_blocks++;
		if (pc->blks[i].died == UINT64_MAX) {
			var->site_live++;
			var->site_bytes_live += pc->blks[i].hi - pc->blks[i].lo;
		}
	}
	/* allocating thread: the one with most blocks of the variable (a pass per thread of the process) */
	for (size_t t = 0; t < pd->n_threads + 1; t++) {
		uint32_t tid = t < pd->n_threads ? pd->threads[t].tid : 0;
		uint64_t *cnt = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		if (!cnt) {
			free(sv);
			free(key);
			return NK_ENOMEM;
		}
		for (size_t i = 0; i < pc->n_blks; i++)
			if (key[i] != UINT32_MAX &&
			    (t < pd->n_threads ? pc->blks[i].tid == tid : !thread_known(pd, pc->blks[i].tid)))
				cnt[key[i]]++;
		for (size_t v = 0; v < a->n_vars; v++) {
			if (!cnt[v] || cnt[v] <= a->vars[v].alloc_thread_blocks)
				continue;
			int th = t < pd->n_threads ? thread_get(c, (uint32_t)proc, tid, -1) : -1;
			a->vars[v].alloc_thread = th;
			a->vars[v].alloc_thread_blocks = cnt[v];
		}
		free(cnt);
	}
	size_t n = 0;
	struct sev *e = site_events(pc, key, &n);
	free(sv);
	free(key);
	if (!e)
		return NK_ENOMEM;
	for (size_t i = 0; i < n;) {
		uint32_t v = e[i].key;
		int64_t blocks = 0, bytes = 0, pb = 0, pbytes = 0;
		for (; i < n && e[i].key == v; i++) {
			blocks += e[i].blocks;
			bytes += e[i].bytes;
			if (blocks > pb)
				pb = blocks;
			if (bytes > pbytes)
				pbytes = bytes;
		}
		a->vars[v].site_peak += (uint64_t)pb;
		a->vars[v].site_bytes_peak += (uint64_t)pbytes;
	}
	free(e);
	return 0;
}

static void free_pc(struct proc_ctx *pc)
{
	free(pc->site_small);
	free(pc->blks);
	free(pc->blk_var);
	free(pc->statics);
	free(pc->name_var);
	free(pc->stack_var);
}

static int attribute_all(struct ctx *c)
{
	const struct nk__nkp_profile *p = c->p;
	size_t total = 0, nft = 0;
	for (size_t i = 0; i < p->n_procs; i++)
		total += p->procs[i].n_samples;
	if (c->only_phase >= 0) /* the whole-profile run counted the phase's samples */
		total = c->parent->phases[c->only_phase].samples;
	if (c->only_phase < 0) {
		c->a->attr = malloc((total ? total : 1) * sizeof(*c->a->attr));
		if (!c->a->attr)
			return NK_ENOMEM;
	}
	c->recs = malloc((total ? total : 1) * sizeof(*c->recs));
	c->ips = malloc((total ? total : 1) * sizeof(*c->ips));
	if (!c->recs || !c->ips)
		return NK_ENOMEM;
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		for (size_t t = 0; t < pd->n_threads; t++)
			if (thread_get(c, (uint32_t)i, pd->threads[t].tid, (int)pd->threads[t].index) < 0)
				return NK_ENOMEM;
	}
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		struct proc_ctx pc;
		memset(&pc, 0, sizeof(pc));
		pc.last_var = -1;
		pc.anon_var = -1;
		int rc = build_blocks(pd, &pc);
		if (!rc)
			rc = mark_small_sites(pd, &pc);
		pc.name_var = malloc((pd->n_names ? pd->n_names : 1) * sizeof(int));
		pc.stack_var = malloc((pd->n_threads ? pd->n_threads : 1) * sizeof(int));
		if (rc || !pc.name_var || !pc.stack_var) {
			free_pc(&pc);
			return NK_ENOMEM;
		}
		for (size_t k = 0; k < pd->n_names; k++)
			pc.name_var[k] = -2;
		for (size_t k = 0; k < pd->n_threads; k++)
			pc.stack_var[k] = -2;
		for (size_t k = 0; k < pd->n_phases; k++) {
			const struct nk__nkp_phase_data *ph = &pd->phases[k];
			if (ph->p.kind != 0 || !ph->name || pc.n_phase_map == 64)
				continue;
			int g = phase_get(c, ph->name);
			if (g < 0) {
				free_pc(&pc);
				return NK_ENOMEM;
			}
			pc.phase_map_id[pc.n_phase_map] = (int16_t)ph->p.id;
			pc.phase_map_g[pc.n_phase_map++] = g;
		}
		uint64_t ps = page_size_of(pd);
		if (i == 0)
			c->a->page_size = ps;
		for (size_t k = 0; k < pd->n_samples; k++) {
			const struct nk__nkp_sample *sm = &pd->samples[k];
			uint16_t phase = 0;
			for (int q = 0; q < pc.n_phase_map; q++)
				if (pc.phase_map_id[q] == (int16_t)sm->phase)
					phase = (uint16_t)(pc.phase_map_g[q] + 1);
			if (c->only_phase >= 0 && phase != (uint16_t)(c->only_phase + 1))
				continue;
			if (c->n_recs == total) { /* cannot happen: the same samples as the whole-profile run */
				free_pc(&pc);
				return NK_ENOMEM;
			}
			int v = attribute(c, i, &pc, sm->addr, sm->time_ns);
			int th = v >= 0 ? thread_get(c, (uint32_t)i, sm->tid, -1) : v;
			if (v < 0 || th < 0) {
				free_pc(&pc);
				return NK_ENOMEM;
			}
			struct rec *r = &c->recs[c->n_recs++];
			r->page = sm->addr / ps;
			/* Clusters of the interval (docs/report.md, "What the numbers estimate"): the pagefault
			 * sampler revokes groups of 16 pages cut from a tracked range's first page and samples
			 * every visit to them, so its samples come in groups; the variable instance's first
			 * page stands for the range's (the same for heap blocks and named ranges).  hw and trace
			 * samples are drawn from the access stream one by one: each is its own cluster. */
			if (sm->sampler == NK__SAMPLER_PAGEFAULT) {
				uint64_t first = pc.hit_hi > pc.hit_lo && pc.hit_lo / ps <= r->page ? pc.hit_lo / ps : 0;
				r->cl = first + (r->page - first) / NK__AN_GROUP_PAGES * NK__AN_GROUP_PAGES;
				r->grouped = 1;
			} else {
				r->cl = c->n_recs - 1;
				r->grouped = 0;
			}
			r->var = (uint32_t)v;
			r->proc = (uint32_t)i;
			r->thread = (uint32_t)th;
			r->w = sm->weight ? sm->weight : 1;
			r->cnode = sm->cpu_node;
			r->pnode = sm->page_node;
			r->access = sm->access;
			r->ft = (sm->flags & NK__SF_FIRST_TOUCH) != 0;
			if (sm->cpu_node >= 0 && sm->page_node >= 0)
				r->where = sm->cpu_node == sm->page_node ? 0 : 1;
			else if (sm->source == NK__SRC_LOCAL_DRAM)
				r->where = 0;
			else if (sm->source == NK__SRC_REMOTE_DRAM || sm->source == NK__SRC_REMOTE_CACHE)
				r->where = 1;
			else
				r->where = 2;
			r->phase = phase;
			struct iprec *ip = &c->ips[c->n_ips++];
			ip->ip = sm->ip;
			ip->var = (uint32_t)v;
			ip->proc = (uint32_t)i;
			ip->thread = (uint32_t)th;
			ip->w = r->w;
			ip->remote = r->where == 1;
			ip->ft = (sm->flags & NK__SF_FIRST_TOUCH) != 0;
			ip->pnode = sm->page_node;
			nft += ip->ft;
			if (c->only_phase < 0) {
				struct nk__an_sample *as = &c->a->attr[c->a->n_attr++];
				as->addr = sm->addr;
				as->lo = pc.hit_lo;
				as->hi = pc.hit_hi;
				as->time_ns = sm->time_ns;
				as->var = (uint32_t)v;
				as->thread = (uint32_t)th;
				as->weight = r->w;
				as->proc = (uint32_t)i;
				as->cpu_node = sm->cpu_node;
				as->page_node = sm->page_node;
				as->phase = (int16_t)((int)phase - 1);
				as->access = sm->access;
				as->first_touch = ip->ft;
			}
			struct nk__an_var *av = &c->a->vars[v];
			if (av->kind == NK__VAR_HEAP) { /* users of a heap variable, by accesses */
				int u = 0;
				while (u < av->n_users && av->users[u].thread != th)
					u++;
				if (u == av->n_users && u < NK__AN_TOP_USERS) {
					av->users[u].thread = th;
					av->users[u].acc = 0;
					av->n_users++;
				}
				if (u < av->n_users)
					av->users[u].acc += r->w;
			}
		}
		if (c->only_phase < 0 && site_stats(c, i, &pc)) {
			free_pc(&pc);
			return NK_ENOMEM;
		}
		free_pc(&pc);
	}
	(void)nft;
	return 0;
}

/* ---------------------------------------------------------------- nodes */

static int setup_nodes(struct ctx *c, const nk_machine *m)
{
	struct nk__analysis *a = c->a;
	unsigned char *seen = calloc(MAX_NODE_ID, 1);
	if (!seen)
		return NK_ENOMEM;
	if (c->parent) { /* a phase: the whole profile's nodes (node arrays comparable), no machine */
		for (int i = 0; i < c->parent->n_nodes; i++)
			seen[c->parent->node_ids[i]] = 1;
		m = NULL;
		a->l2_size = c->parent->l2_size;
		a->numa_factor = c->parent->numa_factor;
		a->bandwidth_measured = c->parent->bandwidth_measured;
	}
	if (m) {
		int n = nk_machine_num_nodes(m);
		for (int i = 0; i < n; i++) {
			int id = nk_machine_node_id(m, i);
			if (id >= 0 && id < MAX_NODE_ID)
				seen[id] = 1;
		}
	}
	for (size_t i = 0; !c->parent && i < c->n_recs; i++) {
		if (c->recs[i].cnode >= 0 && c->recs[i].cnode < MAX_NODE_ID)
			seen[c->recs[i].cnode] = 1;
		if (c->recs[i].pnode >= 0 && c->recs[i].pnode < MAX_NODE_ID)
			seen[c->recs[i].pnode] = 1;
	}
	int n = 0;
	for (int i = 0; i < MAX_NODE_ID; i++)
		n += seen[i];
	a->node_ids = malloc((n ? (size_t)n : 1) * sizeof(int));
	if (!a->node_ids) {
		free(seen);
		return NK_ENOMEM;
	}
	for (int i = 0; i < MAX_NODE_ID; i++)
		if (seen[i])
			a->node_ids[a->n_nodes++] = i;
	free(seen);
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1;
	a->node_local = calloc(nn, sizeof(uint64_t));
	a->node_remote = calloc(nn, sizeof(uint64_t));
	a->node_pages_acc = calloc(nn, sizeof(uint64_t));
	if (!a->node_local || !a->node_remote || !a->node_pages_acc)
		return NK_ENOMEM;
	if (m) {
		int nc = nk_machine_num_caches(m);
		for (int i = 0; i < nc; i++) {
			nk_cache_info ci;
			if (!nk_machine_cache(m, i, &ci) && ci.level == 2 && ci.type != NK_CACHE_INSTRUCTION && ci.size) {
				a->l2_size = ci.size;
				break;
			}
		}
		int mn = nk_machine_num_nodes(m);
		for (int i = 0; i < mn; i++)
			for (int j = 0; j < mn; j++) {
				double f;
				double bw;
				int from = nk_machine_node_id(m, i), to = nk_machine_node_id(m, j);
				if (i != j && !nk_machine_numa_factor(m, from, to, &f) && f > a->numa_factor)
					a->numa_factor = f;
				if (!nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, from, to, &bw))
					a->bandwidth_measured = 1;
			}
	}
	return 0;
}

int nk__an_node_index(const struct nk__analysis *a, int id)
{
	for (int i = 0; i < a->n_nodes; i++)
		if (a->node_ids[i] == id)
			return i;
	return -1;
}

/* ---------------------------------------------------------------- aggregation */

static int cmp_rec(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	if (a->var != b->var)
		return a->var < b->var ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->page != b->page)
		return a->page < b->page ? -1 : 1;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return 0;
}

static int cmp_ip(const void *x, const void *y)
{
	const struct iprec *a = x, *b = y;
	if (a->var != b->var)
		return a->var < b->var ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->ip != b->ip)
		return a->ip < b->ip ? -1 : 1;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return 0;
}

static int alloc_var_arrays(struct nk__analysis *a)
{
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1;
	for (size_t i = 0; i < a->n_vars; i++) {
		struct nk__an_var *v = &a->vars[i];
		v->acc_cpu = calloc(nn, sizeof(uint64_t));
		v->remote_cpu = calloc(nn, sizeof(uint64_t));
		v->acc_page = calloc(nn, sizeof(uint64_t));
		v->pages_on = calloc(nn, sizeof(uint64_t));
		if (!v->acc_cpu || !v->remote_cpu || !v->acc_page || !v->pages_on)
			return NK_ENOMEM;
	}
	return 0;
}

static int count(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1, nt = a->n_threads ? a->n_threads : 1;
	uint64_t *tcpu = calloc(nt * nn, sizeof(uint64_t));
	a->thread_node = calloc(nt * nn, sizeof(uint64_t));
	a->sharing = calloc(nt * nt, sizeof(double));
	if (!tcpu || !a->thread_node || !a->sharing) {
		free(tcpu);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < a->n_phases; i++) {
		a->phases[i].var_acc = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		a->phases[i].var_remote = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		if (!a->phases[i].var_acc || !a->phases[i].var_remote) {
			free(tcpu);
			return NK_ENOMEM;
		}
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *r = &c->recs[i];
		struct nk__an_var *v = &a->vars[r->var];
		struct nk__an_thread *t = &a->threads[r->thread];
		int ci = r->cnode >= 0 && r->cnode < MAX_NODE_ID ? nidx[r->cnode] : -1;
		int pi = r->pnode >= 0 && r->pnode < MAX_NODE_ID ? nidx[r->pnode] : -1;
		v->samples++;
		v->acc += r->w;
		a->samples++;
		a->acc += r->w;
		t->samples++;
		t->acc += r->w;
		if (r->where == 0) {
			v->local += r->w;
			a->local += r->w;
		} else if (r->where == 1) {
			v->remote += r->w;
			a->remote += r->w;
			t->remote += r->w;
		} else {
			v->unknown += r->w;
			a->unknown += r->w;
		}
		if (r->access == NK__ACC_READ)
			v->reads += r->w;
		else if (r->access == NK__ACC_WRITE)
			v->writes += r->w;
		if (ci >= 0) {
			v->acc_cpu[ci] += r->w;
			tcpu[r->thread * nn + (size_t)ci]++;
			if (r->where == 1) {
				v->remote_cpu[ci] += r->w;
				a->node_remote[ci] += r->w;
			} else if (r->where == 0) {
				a->node_local[ci] += r->w;
			}
		}
		if (pi >= 0) {
			v->acc_page[pi] += r->w;
			a->node_pages_acc[pi] += r->w;
			a->thread_node[r->thread * nn + (size_t)pi] += r->w;
		}
		if (r->phase) {
			struct nk__an_phase *ph = &a->phases[r->phase - 1];
			ph->samples++;
			ph->acc += r->w;
			if (r->where == 0)
				ph->local += r->w;
			else if (r->where == 1)
				ph->remote += r->w;
			ph->var_acc[r->var] += r->w;
			if (r->where == 1)
				ph->var_remote[r->var] += r->w;
		}
	}
	for (size_t t = 0; t < a->n_threads; t++) {
		uint64_t best = 0;
		for (size_t k = 0; k < (size_t)a->n_nodes; k++)
			if (tcpu[t * nn + k] > best) {
				best = tcpu[t * nn + k];
				a->threads[t].node = a->node_ids[k];
			}
	}
	free(tcpu);
	return 0;
}

/* ---------------------------------------------------------------- intervals */

void nk__an_ratio_ci(const double *W, const double *Y, size_t n, double sum_w2, struct nk__an_ci *out)
{
	const double z = NK__AN_Z95, z2 = z * z;
	double sw = 0, sy = 0, ss = 0;
	*out = (struct nk__an_ci){ 0, 0, 1, 0 };
	for (size_t c = 0; c < n; c++) {
		sw += W[c];
		sy += Y[c];
	}
	if (!n || sw <= 0)
		return;
	double r = sy / sw;
	if (r < 0)
		r = 0;
	if (r > 1)
		r = 1;
	out->r = r;
	for (size_t c = 0; c < n; c++) {
		double d = Y[c] - r * W[c];
		ss += d * d;
	}
	/* Kish's effective size: what unequal weights leave of the sample count even when samples are
	 * independent; a cluster-robust variance below it (clusters more alike than independent samples
	 * would be) is not trusted beyond it */
	double kish = sum_w2 > 0 ? sw * sw / sum_w2 : (double)n;
	double var = n >= 2 ? ss / (sw * sw) * (double)n / (double)(n - 1) : 0;
	double ne;
	if (var > 0 && r > 0 && r < 1)
		ne = r * (1 - r) / var;
	else /* no spread seen: as if each cluster were one sample (all remote in 3 groups is 3 samples' worth) */
		ne = (double)n;
	if (ne > kish)
		ne = kish;
	out->n_eff = ne;
	if (ne <= 0)
		return;
	double den = 1 + z2 / ne, mid = (r + z2 / (2 * ne)) / den;
	double half = z * sqrt(r * (1 - r) / ne + z2 / (4 * ne * ne)) / den;
	out->lo = mid - half < 0 ? 0 : mid - half;
	out->hi = mid + half > 1 ? 1 : mid + half;
	/* r is inside its Wilson interval; rounding must not put it out */
	if (out->lo > r)
		out->lo = r;
	if (out->hi < r)
		out->hi = r;
}

int nk__an_decided(const struct nk__an_var *v)
{
	return v->known_samples && v->clusters >= NK__AN_MIN_CLUSTERS &&
	       (v->ci_hi - v->ci_lo) / 2 <= NK__AN_CI_HALF + 1e-12;
}

struct clrec {
	uint32_t var, proc;
	uint64_t cl;
	uint8_t grouped, remote;
	uint32_t w;
};

static int cmp_clrec(const void *x, const void *y)
{
	const struct clrec *a = x, *b = y;
	if (a->var != b->var)
		return a->var < b->var ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->grouped != b->grouped)
		return a->grouped < b->grouped ? -1 : 1;
	return (a->cl > b->cl) - (a->cl < b->cl);
}

/* Each variable's remote-share interval from its samples with both nodes known (local or remote). */
static int intervals(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	size_t n = 0;
	struct clrec *cr = malloc((c->n_recs ? c->n_recs : 1) * sizeof(*cr));
	double *W = malloc((c->n_recs ? c->n_recs : 1) * sizeof(double));
	double *Y = malloc((c->n_recs ? c->n_recs : 1) * sizeof(double));
	if (!cr || !W || !Y) {
		free(cr);
		free(W);
		free(Y);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < a->n_vars; i++) {
		a->vars[i].ci_lo = 0;
		a->vars[i].ci_hi = 1;
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *r = &c->recs[i];
		if (r->where < 2)
			cr[n++] = (struct clrec){ r->var, r->proc, r->cl, r->grouped, r->where == 1, r->w };
	}
	qsort(cr, n, sizeof(*cr), cmp_clrec);
	for (size_t i = 0, j; i < n; i = j) {
		struct nk__an_var *v = &a->vars[cr[i].var];
		size_t nc = 0;
		double w2 = 0;
		for (j = i; j < n && cr[j].var == cr[i].var; j++) {
			const struct clrec *q = &cr[j];
			if (j == i || q->proc != cr[j - 1].proc || q->grouped != cr[j - 1].grouped || q->cl != cr[j - 1].cl) {
				W[nc] = Y[nc] = 0;
				nc++;
			}
			W[nc - 1] += q->w;
			Y[nc - 1] += q->remote ? q->w : 0;
			w2 += (double)q->w * q->w;
			v->known_samples++;
			v->ci_grouped |= q->grouped;
		}
		struct nk__an_ci ci;
		nk__an_ratio_ci(W, Y, nc, w2, &ci);
		v->clusters = nc;
		v->ci_lo = ci.lo;
		v->ci_hi = ci.hi;
		v->n_eff = ci.n_eff;
	}
	free(cr);
	free(W);
	free(Y);
	return 0;
}

struct pth {
	uint32_t thread;
	uint64_t w;
	int cnode;
};

/* Pages: classes, sharing, regularity. recs sorted by (var, proc, page, thread). */
static int pages(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	size_t nt = a->n_threads ? a->n_threads : 1;
	struct pth *pt = malloc(nt * sizeof(*pt));
	uint32_t *owner = malloc((c->n_recs ? c->n_recs : 1) * sizeof(uint32_t));
	uint64_t *tot = calloc(nt, sizeof(uint64_t)), *run = calloc(nt, sizeof(uint64_t)),
		 *best = calloc(nt, sizeof(uint64_t));
	int64_t *lastpos = malloc(nt * sizeof(int64_t));
	unsigned char *seen = calloc(nt, 1);
	if (!pt || !owner || !tot || !run || !best || !lastpos || !seen) {
		free(seen);
		free(pt);
		free(owner);
		free(tot);
		free(run);
		free(best);
		free(lastpos);
		return NK_ENOMEM;
	}
	size_t i = 0;
	while (i < c->n_recs) {
		uint32_t var = c->recs[i].var;
		struct nk__an_var *v = &a->vars[var];
		size_t n_owner = 0;
		while (i < c->n_recs && c->recs[i].var == var) {
			/* one page */
			size_t j = i, npt = 0, e = i;
			int pnode = -1, later = 0;
			/* The page's users, its class, owner and sharing come from the accesses that are not its
			 * initialisation when there are any (mark_init): the initialisation placed the page (the
			 * hot-spot and first-touch views report it); counting it as a user made a partition
			 * mismatch (threads initialise their blocks, others compute on them) read as pages shared
			 * across nodes. */
			while (e < c->n_recs && c->recs[e].var == var && c->recs[e].proc == c->recs[i].proc &&
			       c->recs[e].page == c->recs[i].page)
				later |= !c->recs[e++].init;
			while (j < e) {
				const struct rec *r = &c->recs[j];
				if (r->pnode >= 0)
					pnode = r->pnode;
				if (later && r->init) {
					if (!seen[r->thread]) {
						seen[r->thread] = 1;
						v->threads++;
					}
					j++;
					continue;
				}
				if (npt && pt[npt - 1].thread == r->thread) {
					pt[npt - 1].w += r->w;
					if (pt[npt - 1].cnode < 0)
						pt[npt - 1].cnode = r->cnode;
				} else {
					pt[npt++] = (struct pth){ r->thread, r->w, r->cnode };
				}
				j++;
			}
			v->pages++;
			int pi = pnode >= 0 && pnode < MAX_NODE_ID ? nidx[pnode] : -1;
			if (pi >= 0)
				v->pages_on[pi]++;
			int cross = 0, cn = -1;
			for (size_t k = 0; k < npt; k++) {
				if (!seen[pt[k].thread]) {
					seen[pt[k].thread] = 1;
					v->threads++;
				}
				if (pt[k].cnode < 0)
					continue;
				if (cn < 0)
					cn = pt[k].cnode;
				else if (pt[k].cnode != cn)
					cross = 1;
			}
			if (npt == 1)
				v->pages_private++;
			else if (cross)
				v->pages_cross_shared++;
			else
				v->pages_node_shared++;
			size_t ow = 0;
			for (size_t k = 0; k < npt; k++) {
				if (pt[k].w > pt[ow].w)
					ow = k;
				for (size_t l = k + 1; l < npt; l++) {
					double m = (double)(pt[k].w < pt[l].w ? pt[k].w : pt[l].w);
					a->sharing[pt[k].thread * nt + pt[l].thread] += m;
					a->sharing[pt[l].thread * nt + pt[k].thread] += m;
				}
			}
			owner[n_owner++] = pt[ow].thread;
			i = j;
		}
		/* regularity: each thread's owned pages, the share inside its longest run of consecutive
		 * sampled pages (in address order) */
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			tot[t] = run[t] = best[t] = 0;
			lastpos[t] = -2;
		}
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			tot[t]++;
			run[t] = lastpos[t] == (int64_t)k - 1 ? run[t] + 1 : 1;
			if (run[t] > best[t])
				best[t] = run[t];
			lastpos[t] = (int64_t)k;
		}
		uint64_t inside = 0;
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			if (tot[t]) {
				inside += best[t];
				tot[t] = 0;
			}
		}
		v->regularity = n_owner ? (double)inside / (double)n_owner : -1;
		memset(seen, 0, nt);
		a->pages_private += v->pages_private;
		a->pages_node_shared += v->pages_node_shared;
		a->pages_cross_shared += v->pages_cross_shared;
	}
	free(pt);
	free(owner);
	free(tot);
	free(run);
	free(best);
	free(lastpos);
	free(seen);
	return 0;
}

struct ipagg {
	uint64_t ip, acc, remote;
	uint32_t proc;
};

static int cmp_ipagg(const void *x, const void *y)
{
	const struct ipagg *a = x, *b = y;
	if (a->remote != b->remote)
		return a->remote > b->remote ? -1 : 1;
	if (a->acc != b->acc)
		return a->acc > b->acc ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

/* Top lines and the first-touch site.  ips sorted by (var, proc, ip, thread). */
static int lines(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	struct ipagg *ag = malloc((c->n_ips ? c->n_ips : 1) * sizeof(*ag));
	uint64_t *nodecnt = calloc(a->n_nodes ? (size_t)a->n_nodes : 1, sizeof(uint64_t));
	if (!ag || !nodecnt) {
		free(ag);
		free(nodecnt);
		return NK_ENOMEM;
	}
	size_t i = 0;
	int rc = 0;
	while (i < c->n_ips && !rc) {
		uint32_t var = c->ips[i].var;
		struct nk__an_var *v = &a->vars[var];
		size_t nag = 0, j = i;
		/* first touch: best (proc, ip) by samples, then its most common thread */
		uint64_t ft_best = 0;
		size_t ft_at = 0;
		while (j < c->n_ips && c->ips[j].var == var) {
			size_t k = j;
			uint64_t acc = 0, rem = 0, ft = 0;
			while (k < c->n_ips && c->ips[k].var == var && c->ips[k].proc == c->ips[j].proc &&
			       c->ips[k].ip == c->ips[j].ip) {
				acc += c->ips[k].w;
				rem += c->ips[k].remote ? c->ips[k].w : 0;
				ft += c->ips[k].ft;
				k++;
			}
			v->ft_samples += ft;
			if (ft > ft_best) {
				ft_best = ft;
				ft_at = j;
			}
			ag[nag++] = (struct ipagg){ c->ips[j].ip, acc, rem, c->ips[j].proc };
			j = k;
		}
		if (ft_best) {
			uint32_t proc = c->ips[ft_at].proc;
			uint64_t ip = c->ips[ft_at].ip, tbest = 0, tcur = 0;
			memset(nodecnt, 0, (a->n_nodes ? (size_t)a->n_nodes : 1) * sizeof(uint64_t));
			for (size_t k = ft_at; k < j && c->ips[k].proc == proc && c->ips[k].ip == ip; k++) {
				if (!c->ips[k].ft)
					continue;
				tcur = k > ft_at && c->ips[k - 1].thread == c->ips[k].thread && c->ips[k - 1].ft ? tcur + 1 : 1;
				if (tcur > tbest) {
					tbest = tcur;
					v->ft_thread = (int)c->ips[k].thread;
				}
				int pn = c->ips[k].pnode;
				if (pn >= 0 && pn < MAX_NODE_ID && nidx[pn] >= 0)
					nodecnt[nidx[pn]]++;
			}
			uint64_t nb = 0;
			for (int n = 0; n < a->n_nodes; n++)
				if (nodecnt[n] > nb) {
					nb = nodecnt[n];
					v->ft_node = a->node_ids[n];
				}
			v->ft_top = ft_best;
			v->ft_where = ip_text(c->ops, c->syms ? c->syms[proc] : NULL, ip);
			if (!v->ft_where)
				rc = NK_ENOMEM;
		}
		qsort(ag, nag, sizeof(*ag), cmp_ipagg);
		/* symbolise the first 4*TOP, merge equal texts, keep TOP */
		struct nk__an_line tmp[4 * NK__AN_TOP_LINES];
		int nt = 0;
		for (size_t k = 0; k < nag && k < 4 * NK__AN_TOP_LINES && !rc; k++) {
			if (!ag[k].remote && !ag[k].acc)
				continue;
			char *w = ip_text(c->ops, c->syms ? c->syms[ag[k].proc] : NULL, ag[k].ip);
			if (!w) {
				rc = NK_ENOMEM;
				break;
			}
			int found = -1;
			for (int q = 0; q < nt; q++)
				if (!strcmp(tmp[q].where, w))
					found = q;
			if (found >= 0) {
				tmp[found].acc += ag[k].acc;
				tmp[found].remote += ag[k].remote;
				free(w);
			} else {
				tmp[nt++] = (struct nk__an_line){ w, ag[k].acc, ag[k].remote };
			}
		}
		/* order again after merging (insertion sort, small) */
		for (int q = 1; q < nt; q++)
			for (int r = q; r > 0 && (tmp[r].remote > tmp[r - 1].remote ||
						  (tmp[r].remote == tmp[r - 1].remote && tmp[r].acc > tmp[r - 1].acc));
			     r--) {
				struct nk__an_line x = tmp[r];
				tmp[r] = tmp[r - 1];
				tmp[r - 1] = x;
			}
		for (int q = 0; q < nt; q++) {
			if (q < NK__AN_TOP_LINES)
				v->lines[v->n_lines++] = tmp[q];
			else
				free(tmp[q].where);
		}
		i = j;
	}
	free(ag);
	free(nodecnt);
	return rc;
}

/* ---------------------------------------------------------------- diagnosis */

const char *nk__an_kind_name(int kind)
{
	static const char *const n[] = { "named", "heap", "static", "stack", "file", "anonymous" };
	return kind >= 0 && kind < 6 ? n[kind] : "?";
}

const char *nk__an_diag_name(int diag)
{
	static const char *const n[] = { "too-few-samples", "fine", "hot-spot", "partition-mismatch", "uniform-sharing" };
	return diag >= 0 && diag < 5 ? n[diag] : "?";
}

const char *nk__an_fix_name(int fix)
{
	static const char *const n[] = { "none", "leave", "not-worth-it", "parallel-init", "cyclic", "weighted" };
	return fix >= 0 && fix < 6 ? n[fix] : "?";
}

static int diagnose(struct nk__analysis *a, struct nk__an_var *v)
{
	uint64_t known = v->local + v->remote;
	double rshare = known ? (double)v->remote / (double)known : 0;
	uint64_t pages_known = 0, top = 0;
	for (int n = 0; n < a->n_nodes; n++) {
		pages_known += v->pages_on[n];
		if (v->pages_on[n] > top) {
			top = v->pages_on[n];
			v->dominant_node = a->node_ids[n];
		}
	}
	v->dominant_share = pages_known ? (double)top / (double)pages_known : 0;
	double cross = v->pages ? (double)v->pages_cross_shared / (double)v->pages : 0;
	uint64_t typed = v->reads + v->writes;
	int read_mostly = typed && (double)v->reads / (double)typed >= NK__AN_READ_MOSTLY;
	int regular = v->regularity >= NK__AN_REGULAR;
	v->small = a->l2_size && v->size && v->size < a->l2_size;

	if (!known || !nk__an_decided(v))
		v->diag = NK__DIAG_FEW_SAMPLES;
	else if (rshare <= NK__AN_FINE_REMOTE)
		v->diag = NK__DIAG_FINE;
	else if (v->dominant_share >= NK__AN_HOTSPOT_NODE && a->n_nodes > 1)
		v->diag = NK__DIAG_HOTSPOT;
	else if (cross >= NK__AN_SHARED_PAGES)
		v->diag = NK__DIAG_SHARING;
	else if (v->samples < 2 * v->pages && v->regularity >= 0 && v->regularity < NK__AN_IRREGULAR &&
		 v->threads > 1)
		/* Too few samples per page to see two threads on one page, but the threads' sampled
		 * pages interleave all through the variable: they share it (a partition, even on the
		 * wrong nodes, leaves each thread long runs of its own pages). */
		v->diag = NK__DIAG_SHARING;
	else
		v->diag = NK__DIAG_PARTITION;

	char ft[512] = "", ci[64];
	snprintf(ci, sizeof ci, "%.1f%% [%.1f, %.1f]", 100 * rshare, 100 * v->ci_lo, 100 * v->ci_hi);
	if (v->ft_where) {
		const char *tl = v->ft_thread >= 0 ? a->threads[v->ft_thread].label : "an unknown thread";
		snprintf(ft, sizeof(ft), "; initialised by %s at %s", tl, v->ft_where);
	}
	v->policy = NULL;
	if (v->diag == NK__DIAG_FEW_SAMPLES || v->diag == NK__DIAG_FINE)
		v->fix = NK__FIX_NONE;
	else if (a->numa_factor > 0 && a->numa_factor < NK__AN_MIN_NUMA_FACTOR)
		v->fix = NK__FIX_NOT_WORTH;
	else if (v->small || v->threads == 1)
		v->fix = NK__FIX_LEAVE;
	else if (regular && v->diag != NK__DIAG_SHARING)
		v->fix = NK__FIX_PARALLEL_INIT;
	else
		v->fix = a->bandwidth_measured ? NK__FIX_WEIGHTED : NK__FIX_CYCLIC;
	if (v->fix == NK__FIX_PARALLEL_INIT)
		v->policy = "block";
	else if (v->fix == NK__FIX_CYCLIC)
		v->policy = "cyclic";
	else if (v->fix == NK__FIX_WEIGHTED)
		v->policy = "weighted";

	switch (v->diag) {
	case NK__DIAG_FEW_SAMPLES:
		if (!known)
			v->explain = xprintf("no sample with both the cpu's and the page's node known: cannot judge");
		else
			v->explain = xprintf("%s remote, too wide to judge (more than +-%.0f points): %llu samples "
					     "in %llu %s, %.1f effective",
					     ci, 100 * NK__AN_CI_HALF,
					     (unsigned long long)v->known_samples, (unsigned long long)v->clusters,
					     v->ci_grouped ? (v->clusters == 1 ? "page group" : "page groups")
							   : (v->clusters == 1 ? "cluster" : "clusters"),
					     v->n_eff);
		break;
	case NK__DIAG_FINE:
		v->explain = xprintf("%s of its accesses are remote: fine", ci);
		break;
	case NK__DIAG_HOTSPOT:
		v->explain = xprintf("hot spot: %.0f%% of its pages are on node %d, %s of accesses remote%s",
				     100 * v->dominant_share, v->dominant_node, ci, ft);
		break;
	case NK__DIAG_SHARING:
		v->explain = xprintf("uniform sharing: %.0f%% of its pages are used by threads of several nodes, "
				     "%s of accesses remote%s",
				     100 * cross, ci, read_mostly ? " (read-mostly)" : "");
		break;
	default:
		v->explain = xprintf("partition mismatch: pages spread over nodes, but threads use other nodes' pages "
				     "(%s of accesses remote, regularity %.2f)%s",
				     ci, v->regularity < 0 ? 0 : v->regularity, ft);
		break;
	}
	return v->explain ? 0 : NK_ENOMEM;
}

static int cmp_var(const void *x, const void *y)
{
	const struct nk__an_var *a = x, *b = y;
	if (a->remote != b->remote)
		return a->remote > b->remote ? -1 : 1;
	if (a->acc != b->acc)
		return a->acc > b->acc ? -1 : 1;
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

/*
 * A variable's initialisation: the samples flagged first touch, and every sample of an instruction that
 * made at least AN_INIT_SHARE of the variable's first-touch samples.  The pagefault sampler flags most of
 * an initialisation loop's samples (the page was not there when it was armed); the trace sampler only
 * the one access that placed each page, so the rest of the loop's accesses to the page are known by the
 * instruction.  Runs before recs and ips are sorted (they are parallel arrays until then).
 */
#define AN_INIT_SHARE 0.10

struct varip {
	uint32_t var, n;
	uint64_t ip;
};

static int cmp_varip(const void *x, const void *y)
{
	const struct varip *a = x, *b = y;
	if (a->var != b->var)
		return a->var < b->var ? -1 : 1;
	return (a->ip > b->ip) - (a->ip < b->ip);
}

static int mark_init(struct ctx *c)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < c->n_recs; i++) {
		c->recs[i].init = c->recs[i].ft;
		n += c->recs[i].ft;
	}
	if (!n)
		return 0;
	struct varip *v = malloc(n * sizeof(*v));
	if (!v)
		return NK_ENOMEM;
	for (size_t i = 0; i < c->n_recs; i++)
		if (c->recs[i].ft)
			v[k++] = (struct varip){ c->recs[i].var, 1, c->ips[i].ip };
	qsort(v, n, sizeof(*v), cmp_varip);
	/* merge equal (var, ip) pairs, then keep the instructions with a large enough share */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && v[m - 1].var == v[i].var && v[m - 1].ip == v[i].ip)
			v[m - 1].n++;
		else
			v[m++] = v[i];
	}
	size_t kept = 0;
	for (size_t i = 0, j; i < m; i = j) {
		uint64_t tot = 0;
		for (j = i; j < m && v[j].var == v[i].var; j++)
			tot += v[j].n;
		for (size_t q = i; q < j; q++)
			if ((double)v[q].n >= AN_INIT_SHARE * (double)tot)
				v[kept++] = v[q];
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		struct varip key = { c->recs[i].var, 0, c->ips[i].ip };
		if (!c->recs[i].init && bsearch(&key, v, kept, sizeof(*v), cmp_varip))
			c->recs[i].init = 1;
	}
	free(v);
	return 0;
}

/* Attribution, counts, pages, lines, diagnosis and sorting of c->a (the whole profile, or with
 * c->only_phase >= 0 the samples of one phase). */
static int analyze_core(struct ctx *c, const nk_machine *m)
{
	int rc;
	int *nidx = NULL;
	if ((rc = setup_runs(c)))
		return rc;
	if (!c->parent && (rc = read_header(c)))
		return rc;
	if ((rc = attribute_all(c)))
		return rc;
	if ((rc = mark_init(c)))
		return rc;
	if (c->parent && (rc = adopt_parent(c)))
		return rc;
	if ((rc = setup_nodes(c, m)))
		return rc;
	rc = NK_ENOMEM;
	nidx = malloc(MAX_NODE_ID * sizeof(int));
	if (!nidx)
		goto out;
	for (int i = 0; i < MAX_NODE_ID; i++)
		nidx[i] = -1;
	for (int i = 0; i < c->a->n_nodes; i++)
		nidx[c->a->node_ids[i]] = i;
	if (alloc_var_arrays(c->a) || count(c, nidx) || intervals(c))
		goto out;
	qsort(c->recs, c->n_recs, sizeof(*c->recs), cmp_rec);
	qsort(c->ips, c->n_ips, sizeof(*c->ips), cmp_ip);
	if (pages(c, nidx) || lines(c, nidx))
		goto out;
	for (size_t i = 0; i < c->a->n_vars; i++)
		if (diagnose(c->a, &c->a->vars[i]))
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
			if (warn(c.a, xprintf("the profile's machine description is unusable (%s): nodes are taken "
					      "from the samples", merr.message)))
				goto out;
		}
		m = own;
	} else if (!m && warn(c.a, xstrdup("the profile has no machine description: nodes are taken from the "
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
	if (!c.a->samples && warn(c.a, xstrdup("the profile holds no samples")))
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
	free(a->attr);
	free(a->machine_json);
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
