/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, attribution: each sample to its variable (named range, heap site, static, stack,
 * mapping), thread and phase, with names and keys stable across runs (analysis.h), and which samples
 * initialise a variable.  Produces the per-sample records; counting and judging them is elsewhere.
 */
#include "profile/analysis_impl.h"
#include "profile/mpimem.h"

/* ---------------------------------------------------------------- context */

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

/* The pid a process is shown with: with several runs, that of the first run's process of its ordinal
 * (so that "pid P thread N" and stacks are one thread and one variable over the runs). */
static uint32_t shown_pid(const struct ctx *c, size_t proc)
{
	return c->canon_pid ? c->canon_pid[proc] : c->p->procs[proc].info.pid;
}

int nk__an_thread_get(struct ctx *c, uint32_t proc, uint32_t tid, int index)
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
		t->label = index >= 0 ? nk__aprintf("pid %u thread %d", t->pid, index) : nk__aprintf("pid %u tid %u", t->pid, tid);
	else
		t->label = index >= 0 ? nk__aprintf("thread %d", index) : nk__aprintf("tid %u", tid);
	if (!t->label)
		return NK_ENOMEM;
	c->tkeys[a->n_threads] = (struct thr_key){ proc, tid };
	size_t j = h & (c->ttab.cap - 1);
	while (c->ttab.slot[j])
		j = (j + 1) & (c->ttab.cap - 1);
	c->ttab.slot[j] = (uint32_t)++a->n_threads;
	return (int)(a->n_threads - 1);
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

/*
 * The program's own code (issue 16): an object that is a file outside the system's library folders and not a
 * runtime skipped when naming sites.  Frames elsewhere (libc's memset, libgfortran's copies, the vDSO) are
 * what a first touch is made inside of, not where the program asked for it.
 */
static int own_object(const char *obj)
{
	static const char *const sys[] = { "/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
					   "/usr/libexec/" };
	if (!obj || obj[0] != '/' || runtime_object(obj))
		return 0;
	for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
		if (!strncmp(obj, sys[i], strlen(sys[i])))
			return 0;
	return 1;
}

/* "memset (libc)" for glibc's "__memset_avx2_unaligned_erms" in libc.so.6: the name the program called. */
static char *inside_text(const struct nk__sym_loc *l)
{
	static const char *const variants[] = { "avx", "sse", "evex", "erms", "ssse3", "unaligned", "aligned",
						"generic", "rtm", "chk" };
	const char *obj = l->object ? base_name(l->object) : "?";
	int ol = (int)(strstr(obj, ".so") ? strstr(obj, ".so") - obj : (ptrdiff_t)strlen(obj));
	if (!l->function)
		return nk__aprintf("%.*s", ol, obj);
	const char *f = l->function;
	int fl = (int)strlen(f);
	if (!strncmp(f, "__", 2) && f[2]) {
		const char *u = strchr(f + 2, '_');
		for (size_t i = 0; u && i < sizeof variants / sizeof variants[0]; i++)
			if (!strncmp(u + 1, variants[i], strlen(variants[i]))) {
				f += 2;
				fl = (int)(u - f);
				break;
			}
	}
	return nk__aprintf("%.*s (%.*s)", fl, f, ol, obj);
}

int nk__an_ft_caller(struct ctx *c, size_t from, size_t to, struct nk__an_var *v)
{
	uint32_t proc = c->ips[from].proc;
	nk__symtab *s = c->syms ? c->syms[proc] : NULL;
	const struct nk__nkp_process_data *pd = &c->p->procs[proc];
	struct nk__sym_loc l;

	if (!s || !pd->n_callers)
		return 0;
	memset(&l, 0, sizeof l);
	if (c->ops->ip(s, c->ips[from].ip, &l) && own_object(l.object))
		return 0;
	/* each entry's first return address in the program's own code, counted; a memo of the addresses asked */
	struct { uint64_t ret, n; int own; } seen[32];
	int nseen = 0;
	for (size_t k = from; k < to && c->ips[k].proc == proc && c->ips[k].ip == c->ips[from].ip; k++) {
		if (!c->ips[k].ft || !c->ips[k].caller || c->ips[k].caller > pd->n_callers)
			continue;
		const struct nk__nkp_caller *e = &pd->callers[c->ips[k].caller - 1];
		for (unsigned d = 0; d < e->depth && d < NK__NKP_CALLER_DEPTH; d++) {
			int q = 0;
			while (q < nseen && seen[q].ret != e->ret[d])
				q++;
			if (q == nseen) {
				struct nk__sym_loc cl;
				memset(&cl, 0, sizeof cl);
				int own = e->ret[d] > 1 && c->ops->ip(s, e->ret[d] - 1, &cl) && own_object(cl.object);
				if (nseen == (int)(sizeof seen / sizeof seen[0])) {
					if (!own)
						continue;
					q = nseen - 1; /* memo full: the last slot is reused */
				} else {
					nseen++;
				}
				seen[q].ret = e->ret[d];
				seen[q].n = 0;
				seen[q].own = own;
			}
			if (seen[q].own) {
				seen[q].n++;
				break;
			}
		}
	}
	int best = -1;
	for (int q = 0; q < nseen; q++)
		if (seen[q].own && seen[q].n &&
		    (best < 0 || seen[q].n > seen[best].n || (seen[q].n == seen[best].n && seen[q].ret < seen[best].ret)))
			best = q;
	if (best < 0)
		return 0;
	/* the call instruction is before the return address */
	char *where = nk__an_ip_text(c->ops, s, seen[best].ret - 1);
	char *inside = inside_text(&l);
	if (!where || !inside) {
		free(where);
		free(inside);
		return NK_ENOMEM;
	}
	free(v->ft_inside_where);
	free(v->ft_inside);
	v->ft_inside_where = v->ft_where;
	v->ft_where = where;
	v->ft_inside = inside;
	return 0;
}

static char *loc_text(const struct nk__sym_loc *l, uint64_t ip)
{
	if (l->file && l->line > 0)
		return l->function ? nk__aprintf("%s:%d (%s)", base_name(l->file), l->line, l->function)
				   : nk__aprintf("%s:%d", base_name(l->file), l->line);
	if (l->function)
		return nk__aprintf("%s (%s+0x%llx)", l->function, l->object ? base_name(l->object) : "?",
			       (unsigned long long)l->offset);
	if (l->object)
		return nk__aprintf("%s+0x%llx", base_name(l->object), (unsigned long long)l->offset);
	return nk__aprintf("0x%llx", (unsigned long long)ip);
}

char *nk__an_ip_text(const struct nk__an_symops *ops, nk__symtab *s, uint64_t ip)
{
	struct nk__sym_loc l;
	memset(&l, 0, sizeof(l));
	if (s && ip && ops->ip(s, ip, &l))
		return loc_text(&l, ip);
	return nk__aprintf("0x%llx", (unsigned long long)ip);
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
		return var_get(c, NK__VAR_HEAP, key, nk__aprintf("allocation site %u", site), size);
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
				name = nk__aprintf("allocation site %u", site);
			return var_get(c, NK__VAR_HEAP, key, name, size);
		}
	}
	snprintf(key, sizeof(key), "heap:pid%u:site%u", pd->info.pid, site);
	return var_get(c, NK__VAR_HEAP, key, nk__aprintf("allocation site %u (0x%llx)", site, (unsigned long long)sd->ips[0]),
		       size);
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
				     ? nk__aprintf("%s (%s:%d)", sv.name, base_name(sv.decl_file), sv.decl_line)
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
					obj ? nk__aprintf("static data of %s", base_name(obj))
					    : nk__aprintf("static data at 0x%llx", (unsigned long long)b->lo),
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
							   c->a->n_procs > 1 ? nk__aprintf("stack of pid %u thread %u",
										       shown_pid(c, proc), th->index)
									     : nk__aprintf("stack of thread %u", th->index),
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
		const struct nk__mpi_mem *mpi = nk__mpi_mapping(mname); /* MPI's own: by kind of segment */
		snprintf(key, sizeof(key), "%s:%s", mpi ? "mpi" : "file", mpi ? mpi->id : mname);
		int v = var_get(c, mpi ? NK__VAR_MPI : NK__VAR_FILE, key, xstrdup(mpi ? mpi->name : mname), hi - lo);
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
				c->a->n_procs > 1 ? nk__aprintf("stack of pid %u thread 0", shown_pid(c, proc))
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

int nk__an_attribute_all(struct ctx *c)
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
			if (nk__an_thread_get(c, (uint32_t)i, pd->threads[t].tid, (int)pd->threads[t].index) < 0)
				return NK_ENOMEM;
	}
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		struct proc_ctx pc;
		size_t attr0 = c->a->n_attr;
		memset(&pc, 0, sizeof(pc));
		pc.last_var = -1;
		pc.anon_var = -1;
		int rc = nk__an_build_blocks(pd, &pc);
		if (!rc)
			rc = nk__an_mark_small_sites(pd, &pc);
		pc.name_var = malloc((pd->n_names ? pd->n_names : 1) * sizeof(int));
		pc.stack_var = malloc((pd->n_threads ? pd->n_threads : 1) * sizeof(int));
		if (rc || !pc.name_var || !pc.stack_var) {
			nk__an_free_pc(&pc);
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
				nk__an_free_pc(&pc);
				return NK_ENOMEM;
			}
			pc.phase_map_id[pc.n_phase_map] = (int16_t)ph->p.id;
			pc.phase_map_g[pc.n_phase_map++] = g;
		}
		uint64_t ps = nk__an_page_size_of(pd);
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
				nk__an_free_pc(&pc);
				return NK_ENOMEM;
			}
			int v = attribute(c, i, &pc, sm->addr, sm->time_ns);
			int th = v >= 0 ? nk__an_thread_get(c, (uint32_t)i, sm->tid, -1) : v;
			if (v < 0 || th < 0) {
				nk__an_free_pc(&pc);
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
				nk__an_pf_clusters(sm->addr, pc.hit_lo, pc.hit_hi, ps, sm->time_ns, &r->cl, &r->round);
				r->grouped = 1;
			} else {
				r->cl = c->n_recs - 1;
				r->grouped = 0;
				r->round = c->n_recs - 1;
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
			ip->caller = 0;
			if (ip->ft && pd->n_callers) {
				const struct nk__nkp_caller *ce = nk__nkp_find_caller(pd, sm);
				ip->caller = ce ? (uint32_t)(ce - pd->callers) + 1 : 0;
			}
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
				as->init = 0;
				as->fini = 0;
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
		if (c->only_phase < 0 && (nk__an_site_space(c, i, &pc, attr0) || nk__an_site_stats(c, i, &pc))) {
			nk__an_free_pc(&pc);
			return NK_ENOMEM;
		}
		nk__an_free_pc(&pc);
	}
	(void)nft;
	return 0;
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
	int c = NK__CMP(a->var, b->var);
	return c ? c : NK__CMP(a->ip, b->ip);
}

int nk__an_mark_init(struct ctx *c)
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
