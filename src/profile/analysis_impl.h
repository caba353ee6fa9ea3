/* SPDX-License-Identifier: BSD-3-Clause
 * What the files of the profile analysis share (analysis.c and analysis_*.c): the
 * working context of one analysis run, the per-process attribution state, small
 * string and hash helpers, and the steps one file runs for another.  Private to
 * src/profile/: the analysis's users see analysis.h only.
 */
#ifndef NK_PROFILE_ANALYSIS_IMPL_H
#define NK_PROFILE_ANALYSIS_IMPL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis.h"
#include "util/cmp.h"
#include "util/strbuf.h"

#define MAX_NODE_ID 4096

/* ---------------------------------------------------------------- helpers */

static inline char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static inline const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static inline uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static inline uint64_t hash_u64(uint64_t x)
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

/* ---------------------------------------------------------------- context */

struct thr_key {
	uint32_t proc, tid;
};

struct rec {
	uint64_t page;
	uint64_t cl;           /* cluster of the remote-share interval (nk__an_intervals()) */
	uint8_t grouped;       /* cl is a 16-page group (pagefault), else the sample's own index */
	uint64_t round;        /* second cluster: the sampler's 10 ms round (pagefault), else the sample's own index */
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
	uint32_t caller; /* first touch: index + 1 of its CALLERS entry in its process's callers, 0 none */
};

struct blk {
	uint64_t lo, hi, born, died;
	uint32_t site;
	uint32_t tid;  /* the allocating thread */
	uint32_t ftid; /* the freeing thread (died < UINT64_MAX) */
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

static inline int cmp_tid_index(const void *x, const void *y)
{
	const struct tid_index *a = x, *b = y;
	return NK__CMP(a->tid, b->tid);
}

/* The attribution state of one process (analysis_attr.c, analysis_heap.c). */
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

/* ---- analysis.c: the run and its results */
/** Append @p text (taken over; NULL: out of memory) to a->warnings.  0 or NK_ENOMEM. */
int nk__an_warn(struct nk__analysis *a, char *text);

/* ---- analysis_input.c: what the profile's RUN, META and END records say */
/** Several runs: each process's ordinal in its run, the pid it is shown with, its threads by tid. */
int nk__an_setup_runs(struct ctx *c);
/** Program, sampler, wall time, runs, warnings and coverage of c->a from the records. */
int nk__an_read_header(struct ctx *c);
/** META page_size of a process (4096 when unknown or not a power of two). */
uint64_t nk__an_page_size_of(const struct nk__nkp_process_data *pd);
/** META min_size of a process, 0 none. */
uint64_t nk__an_min_size_of(const struct nk__nkp_process_data *pd);

/* ---- analysis_attr.c: samples -> variables, threads, phases, source lines */
/** Every sample (of c->only_phase when >= 0) attributed: c->recs, c->ips and (whole profile) a->attr. */
int nk__an_attribute_all(struct ctx *c);
/** Mark the initialisation samples of each variable (recs[].init); before recs and ips are sorted. */
int nk__an_mark_init(struct ctx *c);
/** "file.c:42 (function)" of @p ip (or its address), malloc'ed; NULL out of memory. */
char *nk__an_ip_text(const struct nk__an_symops *ops, nk__symtab *s, uint64_t ip);
/**
 * The first touches of the instruction at c->ips[from] (the run of its process and ip, before @p to) made in
 * a library: the program's own line that called it, most common among their CALLERS entries, into
 * v->ft_where (replacing the instruction's text, which moves to v->ft_inside_where) and the library function
 * into v->ft_inside.
 * Nothing changes when the instruction is the program's own or no entry names a frame of it.  0 or NK_ENOMEM.
 */
int nk__an_ft_caller(struct ctx *c, size_t from, size_t to, struct nk__an_var *v);
/** Thread of (proc, tid), created with THREAD index @p index (-1 unknown).  Index or NK_ENOMEM. */
int nk__an_thread_get(struct ctx *c, uint32_t proc, uint32_t tid, int index);

/* ---- analysis_heap.c: heap blocks and allocation sites of one process */
int nk__an_build_blocks(const struct nk__nkp_process_data *pd, struct proc_ctx *pc);
int nk__an_mark_small_sites(const struct nk__nkp_process_data *pd, struct proc_ctx *pc);
int nk__an_site_stats(struct ctx *c, size_t proc, struct proc_ctx *pc);
/** Sites of small blocks as arrays in allocation order: the samples a->attr[attr0..] of process @p proc
 * moved into that space, the variables marked site_space (whole profile only). */
int nk__an_site_space(struct ctx *c, size_t proc, struct proc_ctx *pc, size_t attr0);
void nk__an_free_pc(struct proc_ctx *pc);

/* ---- analysis_aggregate.c: nodes, counts per variable/thread/node/phase, pages, lines */
int nk__an_setup_nodes(struct ctx *c, const nk_machine *m);
int nk__an_alloc_var_arrays(struct nk__analysis *a);
int nk__an_count(struct ctx *c, int *nidx);
/** Orders of c->recs and c->ips that nk__an_pages and nk__an_lines need. */
int nk__an_cmp_rec(const void *x, const void *y);
int nk__an_cmp_ip(const void *x, const void *y);
int nk__an_pages(struct ctx *c, int *nidx);
int nk__an_lines(struct ctx *c, int *nidx);

/* ---- analysis_interval.c: each variable's remote-share interval */
int nk__an_intervals(struct ctx *c);

/* ---- analysis_diagnose.c: a variable's diagnosis, fix and explanation */
int nk__an_diagnose(struct nk__analysis *a, struct nk__an_var *v);

#endif
