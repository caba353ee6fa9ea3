/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so runtime core (advice_rt.h): the plan, the machine, the
 * key groups (site.c matches call stacks to them through the accessors
 * below), statics, applying entries, phases, the first thread, the log and
 * the summary; for sites of small blocks (layout blocks) their layouts and
 * moving their arenas' pages at later entries.
 *
 * Entries are grouped by key (one group per distinct key; a key may have an
 * at-allocation entry and entries for later phases).  A group is matched by
 * a static resolved at start (or after a dlopen) or by heap blocks served by
 * alloc.c.  Applying an entry builds the nk_plan of its policy over the
 * variable's pages and calls nk_apply(flags 0): untouched pages get the
 * policy for their first touch (mbind), resident ones are migrated.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "advice_rt.h"
#include "runtime/runtime.h"
#include "util/list.h"

uint64_t nkpl_page_size;

static struct {
	int active;        /* plan loaded, machine known */
	int heap;          /* some group is a heap key */
	pid_t pid;         /* the process that loaded the plan (children after fork print no summary) */
	int log_fd;        /* -1 none */
	nk_advice *plan;   /* read through the accessors of runtime/runtime.h only */
	struct nk__advice_entry_info *ent; /* per entry, from nk__advice_entry */
	size_t n_entries;
	nk_machine *m;
	nk_policy **pol;   /* per entry, NULL for "none" / "pages" / unparsable */
	uint64_t *matched; /* per entry: variable instances seen */
	uint64_t *applied; /* per entry: successful applications */
	uint64_t *failed;  /* per entry: failed applications */
	int *group;        /* per entry: its key group */
	const char **gkey; /* per group: the key */
	int *gheap;        /* per group: 1 heap key */
	uintptr_t *saddr;  /* per group: static's address (0 unresolved) */
	uint64_t *ssize;
	int *gblocks;      /* per group: 1 a site of small blocks served from its arena (layout blocks, jemalloc built in) */
	int *gcur;         /* per group of small blocks: the entry whose layout new extents follow, -1 none yet */
	struct nkpl_layout *lay; /* per entry of layout blocks: its policy laid over the site's array */
	int *lay_ok;       /* per entry: 1 the layout was built */
	size_t n_groups;
	atomic_int first_thread_done;
	char phase[128];   /* current phase, "" none */
} st = { .log_fd = -1 };

static pthread_mutex_t apply_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread int busy __attribute__((tls_model("initial-exec")));

int nkpl_busy(void)
{
	return busy;
}
void nkpl_enter(void)
{
	busy++;
}
void nkpl_leave(void)
{
	busy--;
}

int nkpl_heap_active(void)
{
	return st.heap;
}

/* ---------------------------------------------------------------- log */

/* @p prefix then the message into buf[cap], without its newline; returns its length, -1 when it cannot be
 * formatted.  Leaves room for the newline the caller appends. */
static int format_line(char *buf, size_t cap, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static int format_line(char *buf, size_t cap, const char *prefix, const char *fmt, va_list ap)
{
	int n = snprintf(buf, cap, "%s", prefix);
	int k = vsnprintf(buf + n, cap - (size_t)n - 1, fmt, ap);
	if (k < 0)
		return -1;
	n += k;
	return (size_t)n > cap - 2 ? (int)cap - 2 : n;
}

void nkpl_log(const char *fmt, ...)
{
	char buf[2048], pid[24];
	va_list ap;

	if (st.log_fd < 0)
		return;
	snprintf(pid, sizeof pid, "[%d] ", (int)getpid());
	va_start(ap, fmt);
	int n = format_line(buf, sizeof buf, pid, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf[n++] = '\n';
	(void)!write(st.log_fd, buf, (size_t)n);
}

/* Without a log, the few messages that matter (the plan could not be used) go to stderr. */
static void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = format_line(buf, sizeof buf, "numakit run --plan: ", fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	nkpl_log("%.*s", n, buf);
	buf[n++] = '\n';
	(void)!write(2, buf, (size_t)n);
}

/* ---------------------------------------------------------------- key groups (site.c's view of the plan) */

size_t nkpl_num_groups(void)
{
	return st.n_groups;
}

const char *nkpl_group_key(int group)
{
	return group >= 0 && (size_t)group < st.n_groups ? st.gkey[group] : NULL;
}

int nkpl_group_heap(int group)
{
	return group >= 0 && (size_t)group < st.n_groups && st.gheap[group];
}

int nkpl_group_blocks(int group)
{
	return group >= 0 && (size_t)group < st.n_groups && st.gblocks && st.gblocks[group];
}

/* ---------------------------------------------------------------- applying */

static const char *when_name(int w)
{
	return w == NK__ADVICE_AT_ALLOC ? "alloc" : w == NK__ADVICE_AT_FIRST_PARALLEL ? "first-parallel" : "phase";
}

static int apply_one(const nk_policy *p, uintptr_t lo, uintptr_t hi, nk_apply_result *sum, nk_error *err)
{
	nk_region r = { .addr = (void *)lo, .len = hi - lo };
	nk_plan *pl = NULL;
	nk_apply_result res;
	/*
	 * Per-page policies need base pages: with transparent huge pages a fault fills 2 MiB on one
	 * node (the kernel interleaves huge pages, not pages), and in the 4n-slit guest half of a
	 * static's pages were faulted as huge pages while nk_apply worked on it and could not be moved
	 * (failed 1152 of 2047).  One node for the whole range keeps its huge pages.  Errors ignored:
	 * a kernel without THP has nothing to turn off.
	 */
	if (nk_policy_kind(p) != NK_POLICY_BIND)
		(void)madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE);
	int rc = nk_plan_build(st.m, p, &r, &pl, err);
	if (!rc)
		rc = nk_apply(st.m, pl, (void *)lo, 0, &res, err);
	nk_plan_free(pl);
	if (!rc) {
		sum->pages += res.pages;
		sum->pages_untouched += res.pages_untouched;
		sum->pages_in_place += res.pages_in_place;
		sum->pages_moved += res.pages_moved;
		sum->pages_fallback += res.pages_fallback;
		sum->pages_failed += res.pages_failed;
	}
	return rc;
}

/*
 * Apply entry @p e to the variable instance [addr, addr + len); [plo, phi) are the pages the
 * runtime may change (whole pages: shared edge pages of a static are left alone).  apply_lock held.
 */
static void apply_entry(size_t e, const char *what, uintptr_t addr, uint64_t len, uintptr_t plo, uintptr_t phi)
{
	struct nk__advice_entry_info *en = &st.ent[e];
	nk_apply_result sum;
	nk_error err = { 0, "" };
	int rc = 0;

	memset(&sum, 0, sizeof sum);
	st.matched[e]++;
	if (!strcmp(en->policy, "none")) {
		nkpl_log("match %s %s at %#lx size %llu policy none (%s): left as it is", what, en->key,
			 (unsigned long)addr, (unsigned long long)len, when_name(en->when));
		st.applied[e]++;
		return;
	}
	if (plo >= phi) {
		nkpl_log("match %s %s at %#lx size %llu policy %s (%s): no whole page to place", what, en->key,
			 (unsigned long)addr, (unsigned long long)len, en->policy, when_name(en->when));
		st.failed[e]++;
		return;
	}
	nkpl_enter();
	if (!strcmp(en->policy, "pages")) {
		uint64_t eps = en->page_size ? en->page_size : nkpl_page_size;
		for (size_t i = 0; i < en->n_ranges && !rc; i++) {
			uintptr_t a, b;
			uint64_t first = 0, count = 0;
			int node = -1;
			char text[64];
			nk_policy *p = NULL;
			(void)nk__advice_entry_range(st.plan, e, i, &first, &count, &node); /* i < n_ranges: cannot fail */
			nkpl_range_bytes(addr, first, count, eps, plo, phi, nkpl_page_size, &a, &b);
			if (a >= b)
				continue;
			snprintf(text, sizeof text, "bind:nodes=%d", node);
			rc = nk_policy_parse(text, &p, &err);
			if (!rc)
				rc = apply_one(p, a, b, &sum, &err);
			nk_policy_free(p);
		}
	} else if (st.pol[e]) {
		rc = apply_one(st.pol[e], plo, phi, &sum, &err);
	} else {
		rc = NK_EINVAL;
		snprintf(err.message, sizeof err.message, "policy %s could not be parsed", en->policy);
	}
	nkpl_leave();
	if (rc) {
		st.failed[e]++;
		nkpl_log("error %s %s at %#lx size %llu policy %s (%s): %s; left as it was", what, en->key,
			 (unsigned long)addr, (unsigned long long)len, en->policy, when_name(en->when),
			 err.message[0] ? err.message : nk_strerror(rc));
		return;
	}
	st.applied[e]++;
	nkpl_log("match %s %s at %#lx size %llu policy %s (%s%s%s): pages %zu placed %zu moved %zu in_place %zu "
		 "fallback %zu failed %zu",
		 what, en->key, (unsigned long)addr, (unsigned long long)len, en->policy, when_name(en->when),
		 en->phase ? " " : "", en->phase ? en->phase : "", sum.pages, sum.pages_untouched, sum.pages_moved,
		 sum.pages_in_place, sum.pages_fallback, sum.pages_failed);
}

/* Entries of group @p g due now: at allocation, or later ones whose moment has passed / is current. */
static int due(const struct nk__advice_entry_info *en, int at_birth)
{
	if (en->when == NK__ADVICE_AT_ALLOC)
		return at_birth;
	if (en->when == NK__ADVICE_AT_FIRST_PARALLEL)
		return at_birth && atomic_load(&st.first_thread_done);
	return at_birth && st.phase[0] && en->phase && !strcmp(en->phase, st.phase);
}

void nkpl_block_born(int group, void *addr, size_t len, int how)
{
	if (!st.active || group < 0 || (size_t)group >= st.n_groups)
		return;
	pthread_mutex_lock(&apply_lock);
	for (size_t e = 0; e < st.n_entries; e++)
		if (st.group[e] == group && due(&st.ent[e], 1))
			apply_entry(e, how == NKPL_REALLOC ? "realloc" : how == NKPL_MMAP ? "mmap" : "heap", (uintptr_t)addr, len,
				    (uintptr_t)addr,
				    (uintptr_t)addr + len);
	pthread_mutex_unlock(&apply_lock);
}

/* "0:12 1:12 untouched:3": where the pages of [lo, hi) are. */
static void where_text(uintptr_t lo, uintptr_t hi, char *buf, size_t cap)
{
	int nn = nk_machine_num_nodes(st.m);
	size_t counts[257], used = 0;

	buf[0] = 0;
	if (nn <= 0 || nn > 256 || lo >= hi || nk_where(st.m, (void *)lo, hi - lo, NULL, counts)) {
		snprintf(buf, cap, "unknown");
		return;
	}
	for (int i = 0; i <= nn && used < cap; i++) {
		if (!counts[i])
			continue;
		int k = i < nn ? snprintf(buf + used, cap - used, "%s%d:%zu", used ? " " : "", nk_machine_node_id(st.m, i),
					  counts[i])
			       : snprintf(buf + used, cap - used, "%suntouched:%zu", used ? " " : "", counts[i]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

void nkpl_block_dies(int group, void *addr, size_t len, int how)
{
	char w[512];
	if (!st.active || st.log_fd < 0 || group < 0 || (size_t)group >= st.n_groups)
		return;
	where_text((uintptr_t)addr, (uintptr_t)addr + len, w, sizeof w);
	nkpl_log("%s %s at %#lx size %zu: pages per node %s", how == NKPL_MMAP ? "unmap" : "free heap", st.gkey[group],
		 (unsigned long)addr, len, w);
}

struct each_arg {
	size_t e;
};

static void apply_block(void *addr, size_t len, void *arg)
{
	const struct each_arg *a = arg;
	apply_entry(a->e, "heap", (uintptr_t)addr, len, (uintptr_t)addr, (uintptr_t)addr + len);
}

/* ---------------------------------------------------------------- sites of small blocks */

/*
 * Entry @p e of layout blocks: its policy over the site's array (site_bytes), one node per page, built once on
 * this machine.  "none": no nodes; "pages": each range's node on the system pages starting in it, -1 elsewhere.
 */
static int build_layout(size_t e, nk_error *err)
{
	const struct nk__advice_entry_info *en = &st.ent[e];
	uint64_t ps = nkpl_page_size, np = en->site_bytes / ps + (en->site_bytes % ps != 0);
	int *nodes = NULL, rc = 0;

	st.lay[e] = (struct nkpl_layout){ NULL, np };
	if (!strcmp(en->policy, "none"))
		return 0;
	if (np > SIZE_MAX / sizeof *nodes || !(nodes = malloc((size_t)np * sizeof *nodes)))
		return NK_ENOMEM;
	if (!strcmp(en->policy, "pages")) {
		uint64_t eps = en->page_size ? en->page_size : ps;
		for (uint64_t i = 0; i < np; i++)
			nodes[i] = -1;
		for (size_t r = 0; r < en->n_ranges; r++) {
			uint64_t first = 0, count = 0, lo, hi;
			int node = -1;
			(void)nk__advice_entry_range(st.plan, e, r, &first, &count, &node); /* r < n_ranges: cannot fail */
			nkpl_plan_pages_sys(first, count, eps, ps, &lo, &hi);
			for (uint64_t i = lo; i < hi && i < np; i++)
				nodes[i] = node;
		}
	} else if (st.pol[e]) {
		nk_region r = { .addr = NULL, .len = (size_t)en->site_bytes };
		nk_plan *pl = NULL;
		rc = nk_plan_build(st.m, st.pol[e], &r, &pl, err);
		if (!rc) {
			size_t n = nk_plan_num_pages(pl);
			if (n > np)
				n = (size_t)np;
			rc = n ? nk_plan_nodes(pl, 0, n, nodes) : NK_EINVAL;
			for (uint64_t i = n; !rc && i < np; i++)
				nodes[i] = nodes[n - 1];
		}
		nk_plan_free(pl);
	} else {
		rc = NK_EINVAL;
		snprintf(err->message, sizeof err->message, "policy %s could not be parsed", en->policy);
	}
	if (rc) {
		free(nodes);
		return rc;
	}
	st.lay[e].nodes = nodes;
	return 0;
}

/* Which entry of a site of small blocks new extents follow: its latest due one (phase, first-parallel, alloc). */
static int blocks_current(int g)
{
	int cur = -1, rank = -1;
	for (size_t e = 0; e < st.n_entries; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (st.group[e] != g || !st.lay_ok[e] || !due(en, 1))
			continue;
		int r = en->when == NK__ADVICE_AT_PHASE ? 2 : en->when == NK__ADVICE_AT_FIRST_PARALLEL ? 1 : 0;
		if (r > rank) {
			rank = r;
			cur = (int)e;
		}
	}
	return cur;
}

void nkpl_blocks_matched(int group)
{
	if (!nkpl_group_blocks(group))
		return;
	pthread_mutex_lock(&apply_lock);
	int cur = st.gcur[group], any = 0;
	/* Every entry due now applies to the array from its first block, as to an instance at its birth; the latest
	 * one due is the layout the extents follow. */
	for (size_t e = 0; e < st.n_entries; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (st.group[e] != group || !due(en, 1))
			continue;
		any = 1;
		st.matched[e]++;
		if (!st.lay_ok[e]) {
			st.failed[e]++;
			continue;
		}
		st.applied[e]++;
		nkpl_log("match blocks %s policy %s (%s%s%s): its array of %llu bytes (%llu pages) %s", en->key, en->policy,
			 when_name(en->when), en->phase ? " " : "", en->phase ? en->phase : "",
			 (unsigned long long)en->site_bytes, (unsigned long long)st.lay[e].npages,
			 (int)e != cur	      ? "(a later entry is due too: its layout is followed)"
			 : st.lay[e].nodes ? "placed as its blocks are allocated"
					   : "served from its arena, not placed");
	}
	if (!any)
		nkpl_log("match blocks %s: served from its arena, not placed until an entry of it is due", st.gkey[group]);
	pthread_mutex_unlock(&apply_lock);
}

struct relayout {
	const nk_policy *pol; /* bind:nodes=node, kept while runs go to one node */
	int node;
	nk_apply_result sum;
	int rc;
	nk_error err;
};

static void relayout_run(uintptr_t lo, uintptr_t hi, int node, void *arg)
{
	struct relayout *r = arg;
	char text[48];
	if (node < 0 || r->rc)
		return;
	if (node != r->node) {
		nk_policy_free((nk_policy *)r->pol);
		r->pol = NULL;
		nk_policy *p = NULL;
		snprintf(text, sizeof text, "bind:nodes=%d", node);
		if ((r->rc = nk_policy_parse(text, &p, &r->err)))
			return;
		r->pol = p;
		r->node = node;
	}
	r->rc = apply_one(r->pol, lo, hi, &r->sum, &r->err);
}

/*
 * Entry @p e of a site of small blocks is due (first thread, phase): extents handed out from now on follow its
 * layout, and the pages handed out so far move to it (each page to the node of its array page).  apply_lock held.
 */
static void blocks_relayout(size_t e)
{
	const struct nk__advice_entry_info *en = &st.ent[e];
	int g = st.group[e];
	struct nkpl_arena_stats as;

	if (!st.lay_ok[e]) {
		st.matched[e]++;
		st.failed[e]++;
		return;
	}
	st.gcur[g] = (int)e;
	nkpl_arena_set_layout(g, &st.lay[e]);
	if (nkpl_arena_stats(g, &as) || as.made != 1) {
		nkpl_log("blocks %s policy %s (%s%s%s): for the blocks allocated from now on", en->key, en->policy,
			 when_name(en->when), en->phase ? " " : "", en->phase ? en->phase : "");
		return;
	}
	st.matched[e]++;
	if (!st.lay[e].nodes) {
		st.applied[e]++;
		nkpl_log("match blocks %s policy %s (%s%s%s): left as they are", en->key, en->policy, when_name(en->when),
			 en->phase ? " " : "", en->phase ? en->phase : "");
		return;
	}
	struct relayout r = { .node = -1, .err = { 0, "" } };
	nkpl_enter();
	nkpl_arena_runs(g, &st.lay[e], relayout_run, &r);
	nk_policy_free((nk_policy *)r.pol);
	nkpl_leave();
	if (r.rc) {
		st.failed[e]++;
		nkpl_log("error blocks %s policy %s (%s%s%s): %s; pages moved so far stay", en->key, en->policy,
			 when_name(en->when), en->phase ? " " : "", en->phase ? en->phase : "",
			 r.err.message[0] ? r.err.message : nk_strerror(r.rc));
		return;
	}
	st.applied[e]++;
	nkpl_log("match blocks %s policy %s (%s%s%s): pages %zu placed %zu moved %zu in_place %zu fallback %zu failed %zu",
		 en->key, en->policy, when_name(en->when), en->phase ? " " : "", en->phase ? en->phase : "", r.sum.pages,
		 r.sum.pages_untouched, r.sum.pages_moved, r.sum.pages_in_place, r.sum.pages_fallback, r.sum.pages_failed);
}

struct where_sum {
	size_t counts[258];
	int nn;
	int bad;
};

static void where_run(uintptr_t lo, uintptr_t hi, int node, void *arg)
{
	struct where_sum *w = arg;
	size_t c[258];
	if (w->bad || nk_where(st.m, (void *)lo, hi - lo, NULL, c)) {
		w->bad = 1;
		return;
	}
	for (int i = 0; i <= w->nn; i++)
		w->counts[i] += c[i];
}

/* At exit, with a log: what each site of small blocks' arena served and where its pages are. */
static void blocks_report(void)
{
	for (size_t g = 0; g < st.n_groups && st.log_fd >= 0; g++) {
		struct nkpl_arena_stats as;
		char w[512];
		size_t used = 0;
		if (!nkpl_group_blocks((int)g) || nkpl_arena_stats((int)g, &as))
			continue;
		struct where_sum ws = { .nn = nk_machine_num_nodes(st.m) };
		w[0] = 0;
		if (ws.nn <= 0 || ws.nn > 256) {
			snprintf(w, sizeof w, "unknown");
		} else {
			nkpl_enter();
			nkpl_arena_runs((int)g, NULL, where_run, &ws);
			nkpl_leave();
			for (int i = 0; i <= ws.nn && used < sizeof w && !ws.bad; i++) {
				if (!ws.counts[i])
					continue;
				int k = i < ws.nn ? snprintf(w + used, sizeof w - used, "%s%d:%zu", used ? " " : "",
							     nk_machine_node_id(st.m, i), ws.counts[i])
						  : snprintf(w + used, sizeof w - used, "%suntouched:%zu", used ? " " : "",
							     ws.counts[i]);
				if (k < 0)
					break;
				used += (size_t)k;
			}
			if (ws.bad)
				snprintf(w, sizeof w, "unknown");
			else if (!used)
				snprintf(w, sizeof w, "none");
		}
		nkpl_log("site %s: %llu blocks (%.1f MiB) served from its arena, %llu left to the allocator, %llu frees, "
			 "%llu reallocs; %llu extents committed, %llu taken from its slice %#lx-%#lx, %llu pages not placed; "
			 "pages by node: %s",
			 st.gkey[g], (unsigned long long)as.blocks, (double)as.bytes / (1024.0 * 1024.0),
			 (unsigned long long)as.left, (unsigned long long)as.frees, (unsigned long long)as.reallocs,
			 (unsigned long long)as.extents, (unsigned long long)as.grows, (unsigned long)as.lo,
			 (unsigned long)as.hi, (unsigned long long)as.unplaced, w);
	}
}

/* Entry @p e applies now (first thread, phase): to its static and to every live block.  apply_lock held. */
static void apply_now(size_t e)
{
	int g = st.group[e];
	if (st.gblocks[g]) {
		blocks_relayout(e);
	} else if (st.saddr[g]) {
		uintptr_t lo, hi;
		nkpl_inner_pages(st.saddr[g], st.ssize[g], nkpl_page_size, &lo, &hi);
		apply_entry(e, strncmp(st.gkey[g], "name:", 5) ? "static" : "named", st.saddr[g], st.ssize[g], lo, hi);
	} else if (st.gheap[g]) {
		struct each_arg a = { e };
		nkpl_alloc_each(g, apply_block, &a);
	}
}

/* ---------------------------------------------------------------- statics */

/* The static groups not resolved yet, in the objects just scanned (nkpl_objs_rescan: the object table held). */
static void resolve_in_objects(void *arg)
{
	(void)arg;
	for (size_t g = 0; g < st.n_groups; g++) {
		const char *k = st.gkey[g];
		if (st.saddr[g] || strncmp(k, "static:", 7))
			continue;
		const char *obj = k + 7, *colon = strchr(obj, ':');
		if (!colon || !colon[1])
			continue; /* "static:OBJ": a whole segment, not a variable; reported never matched */
		const char *path = NULL;
		const struct nkpl_obj *o = nkpl_obj_named(obj, (size_t)(colon - obj), &path);
		uint64_t value = 0, size = 0;
		const char *why = NULL;
		if (!o)
			continue;
		/* C++: the analysis shows demangled names; libstdc++ is loaded in a C++ program */
		nkpl_demangle_fn dm = (nkpl_demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (nkpl_elf_symbol(path, colon + 1, dm, &value, &size, &why)) {
			nkpl_log("error static %s: %s: %s", k, path, why);
			continue;
		}
		st.saddr[g] = o->bias + (uintptr_t)value;
		st.ssize[g] = size;
		if (st.log_fd >= 0) {
			uintptr_t lo, hi;
			char w[512];
			nkpl_inner_pages(st.saddr[g], size, nkpl_page_size, &lo, &hi);
			where_text(lo, hi, w, sizeof w);
			nkpl_log("static %s resolved: %s at %#lx size %llu; whole pages per node now %s", k, path,
				 (unsigned long)st.saddr[g], (unsigned long long)size, w);
		}
	}
}

/* Scan the objects again, resolve the static groups not resolved yet, apply their at-start entries.  apply_lock
 * held. */
static void resolve_statics(void)
{
	nkpl_objs_rescan(resolve_in_objects, NULL);
	for (size_t e = 0; e < st.n_entries; e++) {
		int g = st.group[e];
		if (!st.saddr[g] || st.matched[e] || strncmp(st.gkey[g], "static:", 7))
			continue;
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (en->when == NK__ADVICE_AT_ALLOC || due(en, 1)) {
			uintptr_t lo, hi;
			nkpl_inner_pages(st.saddr[g], st.ssize[g], nkpl_page_size, &lo, &hi);
			apply_entry(e, "static", st.saddr[g], st.ssize[g], lo, hi);
		}
	}
}

/* ---------------------------------------------------------------- phases, threads, dlopen */

static int nkplan_hook_phase(const char *name)
{
	if (!st.active || !name || nkpl_busy())
		return 0;
	pthread_mutex_lock(&apply_lock);
	snprintf(st.phase, sizeof st.phase, "%s", name);
	int any = 0;
	for (size_t e = 0; e < st.n_entries; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (en->when == NK__ADVICE_AT_PHASE && en->phase && !strcmp(en->phase, name)) {
			if (!any)
				nkpl_log("phase %s", name);
			any = 1;
			apply_now(e);
		}
	}
	pthread_mutex_unlock(&apply_lock);
	return 0;
}

static int nkplan_hook_name(const void *addr, size_t len, const char *name)
{
	char key[300];
	if (!st.active || !addr || !len || !name || nkpl_busy() ||
	    snprintf(key, sizeof key, "name:%s", name) >= (int)sizeof key)
		return 0;
	pthread_mutex_lock(&apply_lock);
	for (size_t g = 0; g < st.n_groups; g++) {
		if (strcmp(st.gkey[g], key))
			continue;
		/* the latest range given the name is the variable (as the analysis attributes) */
		st.saddr[g] = (uintptr_t)addr;
		st.ssize[g] = len;
		for (size_t e = 0; e < st.n_entries; e++)
			if (st.group[e] == (int)g && due(&st.ent[e], 1)) {
				uintptr_t lo, hi;
				nkpl_inner_pages((uintptr_t)addr, len, nkpl_page_size, &lo, &hi);
				apply_entry(e, "named", (uintptr_t)addr, len, lo, hi);
			}
	}
	pthread_mutex_unlock(&apply_lock);
	return 0;
}

/* The table libnumakit pulls (runtime/runtime.h): nk_profile_phase and nk_profile_name reach the hooks above. */
NK__RUNTIME_DEFINE(NK__RUNTIME_SYM_PLAN) = {
	NK__RUNTIME_HOOKS_HEADER,
	.phase = nkplan_hook_phase,
	.name = nkplan_hook_name,
};

/* dlsym(RTLD_NEXT, @p name) inside the runtime's guard (dlsym may allocate through our malloc). */
static void *real_next_guarded(const char *name)
{
	nkpl_enter();
	void *f = dlsym(RTLD_NEXT, name);
	nkpl_leave();
	return f;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

NKPL_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static pthread_create_fn real_create;
	if (!real_create && !(real_create = (pthread_create_fn)real_next_guarded("pthread_create")))
		return ENOSYS;
	/* Every call here is the program's, also when the profiler's wrapper forwards it: numakit's runtimes
	 * start their own threads with libc's pthread_create (preload/common/own_thread.h). */
	if (st.active && !nkpl_busy() && !atomic_load(&st.first_thread_done)) {
		pthread_mutex_lock(&apply_lock);
		if (!atomic_exchange(&st.first_thread_done, 1)) {
			int any = 0;
			for (size_t e = 0; e < st.n_entries; e++)
				if (st.ent[e].when == NK__ADVICE_AT_FIRST_PARALLEL) {
					if (!any)
						nkpl_log("first thread created: first-parallel entries");
					any = 1;
					apply_now(e);
				}
		}
		pthread_mutex_unlock(&apply_lock);
	}
	return real_create(th, attr, fn, arg);
}

typedef void *(*dlopen_fn)(const char *, int);

NKPL_API void *dlopen(const char *file, int mode)
{
	static dlopen_fn real_dlopen;
	if (!real_dlopen && !(real_dlopen = (dlopen_fn)real_next_guarded("dlopen")))
		return NULL;
	void *h = real_dlopen(file, mode);
	if (h && st.active && !nkpl_busy()) {
		nkpl_objs_changed();
		pthread_mutex_lock(&apply_lock);
		resolve_statics();
		pthread_mutex_unlock(&apply_lock);
	}
	return h;
}

/* ---------------------------------------------------------------- fork, exit */

static void fork_prepare(void)
{
	pthread_mutex_lock(&apply_lock);
	nkpl_site_fork_prepare();
	nkpl_alloc_fork_prepare();
}

static void fork_parent(void)
{
	nkpl_alloc_fork_parent();
	nkpl_site_fork_parent();
	pthread_mutex_unlock(&apply_lock);
}

static void fork_child(void)
{
	nkpl_arena_fork_child();
	nkpl_alloc_fork_child();
	nkpl_site_fork_child();
	pthread_mutex_init(&apply_lock, NULL);
}

static void summary(void)
{
	char buf[4096];
	size_t n_applied = 0, used = 0;
	int k;

	if (!st.active || getpid() != st.pid)
		return;
	for (size_t e = 0; e < st.n_entries; e++)
		if (st.applied[e])
			n_applied++;
	k = snprintf(buf, sizeof buf, "numakit run --plan: %zu of %zu entries applied", n_applied, st.n_entries);
	used = k > 0 ? (size_t)k : 0;
	const char *sep = "; never matched: ";
	for (size_t e = 0; e < st.n_entries && used < sizeof buf - 64; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (st.matched[e])
			continue;
		k = snprintf(buf + used, sizeof buf - used, "%s%s (%s)", sep, en->key,
			     en->variable ? en->variable : "?");
		used = k > 0 && (size_t)k < sizeof buf - used ? used + (size_t)k : sizeof buf - 64;
		sep = ", ";
	}
	sep = "; failed: ";
	for (size_t e = 0; e < st.n_entries && used < sizeof buf - 64; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		if (!st.matched[e] || st.applied[e])
			continue;
		k = snprintf(buf + used, sizeof buf - used, "%s%s (%s)", sep, en->key,
			     en->variable ? en->variable : "?");
		used = k > 0 && (size_t)k < sizeof buf - used ? used + (size_t)k : sizeof buf - 64;
		sep = ", ";
	}
	if (used >= sizeof buf - 1)
		used = sizeof buf - 2;
	for (size_t g = 0; g < st.n_groups && st.log_fd >= 0; g++) {
		uintptr_t lo, hi;
		char w[512];
		if (!st.saddr[g] || strncmp(st.gkey[g], "static:", 7)) /* a named range may be gone */
			continue;
		nkpl_inner_pages(st.saddr[g], st.ssize[g], nkpl_page_size, &lo, &hi);
		nkpl_enter();
		where_text(lo, hi, w, sizeof w);
		nkpl_leave();
		nkpl_log("exit static %s at %#lx size %llu: whole pages per node %s", st.gkey[g], (unsigned long)st.saddr[g],
			 (unsigned long long)st.ssize[g], w);
	}
	blocks_report();
	nkpl_log("summary: %.*s", (int)used, buf);
	for (size_t e = 0; e < st.n_entries; e++)
		nkpl_log("entry %zu %s (%s%s%s): matched %llu applied %llu failed %llu", e, st.ent[e].key,
			 when_name(st.ent[e].when), st.ent[e].phase ? " " : "",
			 st.ent[e].phase ? st.ent[e].phase : "",
			 (unsigned long long)st.matched[e], (unsigned long long)st.applied[e],
			 (unsigned long long)st.failed[e]);
	buf[used++] = '\n';
	(void)!write(2, buf, used);
}

/* ---------------------------------------------------------------- start */

/* The sites of small blocks (entries of layout blocks): their layouts, their arenas (made at their first block). */
static int setup_blocks(void)
{
	size_t n = 0;
	int *groups = calloc(st.n_groups + 1, sizeof *groups);
	const char **keys = calloc(st.n_groups + 1, sizeof *keys);
	uint64_t *npages = calloc(st.n_groups + 1, sizeof *npages);
	int rc = 0;

	if (!groups || !keys || !npages) {
		complain("out of memory; running without the plan");
		rc = -1;
		goto out;
	}
	for (size_t e = 0; e < st.n_entries; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		int g = st.group[e];
		if (!en->site_bytes || !st.gheap[g])
			continue;
		if (!nkpl_arena_built()) {
			nkpl_log("small blocks of %s not served: libnumakit_plan.so was built without jemalloc (install "
				 "libjemalloc-dev)",
				 en->key);
			continue;
		}
		nk_error err = { 0, "" };
		int brc = build_layout(e, &err);
		if (brc)
			nkpl_log("error entry %zu %s: policy %s over its array of %llu bytes: %s; it will not be applied", e,
				 en->key, en->policy, (unsigned long long)en->site_bytes,
				 err.message[0] ? err.message : nk_strerror(brc));
		st.lay_ok[e] = !brc;
		if (!st.gblocks[g]) {
			st.gblocks[g] = 1;
			groups[n] = g;
			keys[n] = st.gkey[g];
			n++;
		}
		for (size_t i = 0; i < n; i++)
			if (groups[i] == g && st.lay[e].npages > npages[i])
				npages[i] = st.lay[e].npages;
	}
	for (size_t e = 0; e < st.n_entries; e++)
		if (st.gblocks[st.group[e]] && !st.ent[e].site_bytes)
			nkpl_log("error entry %zu %s: layout instance beside entries of layout blocks of the same key; it will "
				 "not be applied",
				 e, st.ent[e].key);
	for (size_t g = 0; g < st.n_groups; g++)
		st.gcur[g] = -1;
	if (n && nkpl_arena_setup(n, groups, keys, npages)) {
		complain("out of memory; running without the plan");
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int e = blocks_current(groups[i]);
		st.gcur[groups[i]] = e;
		nkpl_arena_set_layout(groups[i], e >= 0 ? &st.lay[e] : NULL);
	}
out:
	free(groups);
	free(keys);
	free(npages);
	return rc;
}

static int setup(const char *path)
{
	nk_error err = { 0, "" };
	int rc;
	size_t ne;

	rc = nk_advice_load(path, &st.plan, &err);
	if (rc) {
		complain("cannot load plan %s: %s; running without it", path, err.message[0] ? err.message : nk_strerror(rc));
		return -1;
	}
	rc = nk_machine_load_live(&st.m, &err);
	if (rc) {
		complain("cannot discover this machine: %s; running without the plan",
			 err.message[0] ? err.message : nk_strerror(rc));
		return -1;
	}
	/* A plan for the ranks of a job refers to the first rank's share: `numakit run` names this rank's share
	 * (NK_PLAN_SHARE, its memory nodes) and the plan is carried onto it (docs/plan.md). */
	const char *share = getenv("NK_PLAN_SHARE");
	if (share && *share) {
		nk__ilist nodes = { 0 };
		char why[160];
		if (nk__parse_list(share, &nodes, why, sizeof why)) {
			complain("NK_PLAN_SHARE=%s: %s; running without the plan", share, why);
			return -1;
		}
		rc = nk_advice_resolve_share(st.plan, st.m, nodes.v, nodes.n, &err);
		nk__ilist_free(&nodes);
		if (rc) {
			complain("plan %s cannot be carried onto this rank's nodes %s: %s; running without it", path, share,
				 err.message[0] ? err.message : nk_strerror(rc));
			return -1;
		}
		nkpl_log("plan %s: carried onto this rank's share, nodes %s", path, share);
	}
	/* The pinning is numakit run's (done before the exec, through OMP_PLACES); this process may be bound
	 * already - libgomp binds the initial thread in its own constructor when OMP_PROC_BIND is set - so
	 * its cpus are not checked here: seen in the 4n-slit guest, where the check refused every plan
	 * with a pinning ("this process may not run on cpu 1") and the program ran without its plan. */
	rc = nk__advice_check_entries(st.plan, st.m, &err);
	if (rc) {
		complain("plan %s does not fit this machine: %s; running without it", path,
			 err.message[0] ? err.message : nk_strerror(rc));
		return -1;
	}
	nkpl_page_size = nk_machine_page_size(st.m);
	if (!nkpl_page_size)
		nkpl_page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	ne = st.n_entries = nk__advice_num_entries(st.plan);
	st.ent = calloc(ne + 1, sizeof *st.ent);
	st.pol = calloc(ne + 1, sizeof *st.pol);
	st.matched = calloc(ne + 1, sizeof *st.matched);
	st.applied = calloc(ne + 1, sizeof *st.applied);
	st.failed = calloc(ne + 1, sizeof *st.failed);
	st.group = calloc(ne + 1, sizeof *st.group);
	st.gkey = calloc(ne + 1, sizeof *st.gkey);
	st.gheap = calloc(ne + 1, sizeof *st.gheap);
	st.saddr = calloc(ne + 1, sizeof *st.saddr);
	st.ssize = calloc(ne + 1, sizeof *st.ssize);
	st.gblocks = calloc(ne + 1, sizeof *st.gblocks);
	st.gcur = calloc(ne + 1, sizeof *st.gcur);
	st.lay = calloc(ne + 1, sizeof *st.lay);
	st.lay_ok = calloc(ne + 1, sizeof *st.lay_ok);
	if (!st.ent || !st.pol || !st.matched || !st.applied || !st.failed || !st.group || !st.gkey || !st.gheap || !st.saddr ||
	    !st.ssize || !st.gblocks || !st.gcur || !st.lay || !st.lay_ok) {
		complain("out of memory; running without the plan");
		return -1;
	}
	for (size_t e = 0; e < ne; e++)
		(void)nk__advice_entry(st.plan, e, &st.ent[e]); /* e < ne: cannot fail */
	for (size_t e = 0; e < ne; e++) {
		const struct nk__advice_entry_info *en = &st.ent[e];
		size_t g;
		for (g = 0; g < st.n_groups; g++)
			if (!strcmp(st.gkey[g], en->key))
				break;
		if (g == st.n_groups) {
			st.gkey[g] = en->key;
			st.gheap[g] = !strncmp(en->key, "heap:", 5);
			st.n_groups++;
			if (st.gheap[g])
				st.heap = 1;
		}
		st.group[e] = (int)g;
		if (strcmp(en->policy, "none") && strcmp(en->policy, "pages")) {
			rc = nk_policy_parse(en->policy, &st.pol[e], &err);
			if (rc)
				nkpl_log("error entry %zu %s: policy %s: %s; it will not be applied", e, en->key, en->policy,
					 err.message);
		}
		if (!strncmp(en->key, "name:", 5))
			nkpl_log("entry %zu %s: applies when the program names the range (nk_profile_name)", e, en->key);
	}
	if (setup_blocks())
		return -1;
	nkpl_log("plan %s: %zu entries, %zu keys, page size %llu", path, ne, st.n_groups,
		 (unsigned long long)nkpl_page_size);
	return 0;
}

__attribute__((constructor(101))) static void nkpl_init(void)
{
	const char *path = getenv("NK_PLAN"), *log = getenv("NK_PLAN_LOG");

	nkpl_alloc_resolve();
	if (!path || !*path)
		return;
	nkpl_enter();
	if (log && *log) {
		st.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (st.log_fd < 0)
			complain("cannot open log %s: %s", log, strerror(errno));
	}
	st.pid = getpid();
	if (setup(path)) {
		nkpl_leave();
		return;
	}
	nkpl_site_start();
	pthread_mutex_lock(&apply_lock);
	st.active = 1;
	resolve_statics();
	pthread_mutex_unlock(&apply_lock);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(summary);
	nkpl_leave();
}
