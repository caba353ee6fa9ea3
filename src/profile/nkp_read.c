/* SPDX-License-Identifier: BSD-3-Clause
 * The profile reader (src/profile/nkp.h): a whole merged .nkp file into
 * memory, validated record by record.  Strict: anything that is not exactly
 * what the merger writes is rejected with the byte offset and the record, so
 * that the analysis never works on a silently repaired profile.
 *
 * One pass over the bytes; every array grows with the records that fill it,
 * so memory stays O(file) whatever counts a corrupt file claims.  Ids a
 * record refers to (sample phases, allocation sites) are checked when the
 * process's END closes its section, because the runtime's flusher may write
 * a sample of a new phase before the PHASE record that declares it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "os/os.h"
#include "profile/nkp.h"
#include "profile/nkp_impl.h"
#include "util/cmp.h"
#include "util/error.h"

static const char *const type_names[] = {
	[NK__NKP_RUN] = "RUN",	       [NK__NKP_MACHINE] = "MACHINE", [NK__NKP_PROCESS] = "PROCESS",
	[NK__NKP_META] = "META",       [NK__NKP_MAPS] = "MAPS",	      [NK__NKP_THREAD] = "THREAD",
	[NK__NKP_SITE] = "SITE",       [NK__NKP_ALLOC] = "ALLOC",     [NK__NKP_FREE] = "FREE",
	[NK__NKP_NAME] = "NAME",       [NK__NKP_PHASE] = "PHASE",     [NK__NKP_SAMPLES] = "SAMPLES",
	[NK__NKP_END] = "END",	       [NK__NKP_TRAILER] = "TRAILER", [NK__NKP_BLOCKS] = "BLOCKS", [NK__NKP_COMM] = "COMM",
	[NK__NKP_CALLERS] = "CALLERS",
};

const char *nk__nkp_type_name(uint32_t type)
{
	return type < sizeof type_names / sizeof *type_names ? type_names[type] : NULL;
}

/* ------------------------------------------------------------ payload checks */

static int why_fmt(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_fmt(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return NK_EPARSE;
}

static int check_json(const unsigned char *p, size_t len, char *why, size_t n)
{
	json_error_t je;
	json_t *j;

	if (!len)
		return why_fmt(why, n, "empty JSON text");
	if (memchr(p, 0, len))
		return why_fmt(why, n, "JSON text contains a NUL byte");
	j = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return why_fmt(why, n, "JSON does not parse: %s (line %d, column %d)", je.text, je.line, je.column);
	int obj = json_is_object(j);
	json_decref(j);
	return obj ? 0 : why_fmt(why, n, "JSON text is not an object");
}

static int check_name(const unsigned char *p, size_t len, char *why, size_t n)
{
	if (!len)
		return why_fmt(why, n, "empty name");
	if (len > NK__NKP_MAX_NAME)
		return why_fmt(why, n, "name of %zu bytes, more than %u", len, NK__NKP_MAX_NAME);
	if (memchr(p, 0, len))
		return why_fmt(why, n, "name contains a NUL byte");
	return 0;
}

static int check_size(size_t len, size_t want, char *why, size_t n)
{
	return len == want ? 0 : why_fmt(why, n, "length %zu, expected %zu", len, want);
}

int nk__nkp_check_sample(const struct nk__nkp_sample *s, char *why, size_t n)
{
	if (s->access > NK__ACC_WRITE)
		return why_fmt(why, n, "access %u out of range (0..2)", s->access);
	if (s->source > NK__SRC_UNCACHED)
		return why_fmt(why, n, "source %u out of range (0..10)", s->source);
	if (s->sampler < NK__SAMPLER_PAGEFAULT || s->sampler > NK__SAMPLER_TIMER)
		return why_fmt(why, n, "sampler %u out of range (1..4)", s->sampler);
	if (s->cpu < -1)
		return why_fmt(why, n, "cpu %d out of range (>= -1)", s->cpu);
	if (s->cpu_node < -1)
		return why_fmt(why, n, "cpu_node %d out of range (>= -1)", s->cpu_node);
	if (s->page_node < -1)
		return why_fmt(why, n, "page_node %d out of range (>= -1)", s->page_node);
	return 0;
}

int nk__nkp_check_payload(uint32_t type, const unsigned char *p, size_t len, char *why, size_t n)
{
	switch (type) {
	case NK__NKP_RUN:
	case NK__NKP_MACHINE:
	case NK__NKP_META:
	case NK__NKP_END:
		return check_json(p, len, why, n);
	case NK__NKP_PROCESS:
		return check_size(len, sizeof(struct nk__nkp_process), why, n);
	case NK__NKP_MAPS:
		if (len < sizeof(struct nk__nkp_maps))
			return why_fmt(why, n, "length %zu, less than %zu", len, sizeof(struct nk__nkp_maps));
		if (memchr(p + sizeof(struct nk__nkp_maps), 0, len - sizeof(struct nk__nkp_maps)))
			return why_fmt(why, n, "maps text contains a NUL byte");
		return 0;
	case NK__NKP_THREAD: {
		struct nk__nkp_thread t;
		if (check_size(len, sizeof t, why, n))
			return NK_EPARSE;
		memcpy(&t, p, sizeof t);
		if (t.cpu < -1)
			return why_fmt(why, n, "cpu %" PRId32 " out of range (>= -1)", t.cpu);
		if (t.stack_lo > t.stack_hi)
			return why_fmt(why, n, "stack [0x%" PRIx64 ", 0x%" PRIx64 ") is inverted", t.stack_lo,
				       t.stack_hi);
		return 0;
	}
	case NK__NKP_SITE: {
		struct nk__nkp_site s;
		if (len < sizeof s)
			return why_fmt(why, n, "length %zu, less than %zu", len, sizeof s);
		memcpy(&s, p, sizeof s);
		if (s.id == 0)
			return why_fmt(why, n, "site id 0 (sites are numbered from 1)");
		if (s.depth > NK__NKP_MAX_DEPTH)
			return why_fmt(why, n, "depth %" PRIu32 ", more than %d", s.depth, NK__NKP_MAX_DEPTH);
		if (len != sizeof s + (size_t)s.depth * sizeof(uint64_t))
			return why_fmt(why, n, "length %zu does not match depth %" PRIu32 " (expected %zu)", len,
				       s.depth, sizeof s + (size_t)s.depth * sizeof(uint64_t));
		return 0;
	}
	case NK__NKP_ALLOC: {
		struct nk__nkp_alloc a;
		if (check_size(len, sizeof a, why, n))
			return NK_EPARSE;
		memcpy(&a, p, sizeof a);
		if (a.kind < NK__ALLOC_MALLOC || a.kind > NK__ALLOC_STATIC)
			return why_fmt(why, n, "kind %" PRIu32 " out of range (1..7)", a.kind);
		return 0;
	}
	case NK__NKP_FREE:
		return check_size(len, sizeof(struct nk__nkp_free), why, n);
	case NK__NKP_BLOCKS: {
		struct nk__nkp_block b;
		if (len % sizeof b)
			return why_fmt(why, n, "length %zu is not a multiple of %zu", len, sizeof b);
		for (size_t i = 0; i < len / sizeof b; i++) {
			memcpy(&b, p + i * sizeof b, sizeof b);
			if (b.kind > NK__ALLOC_STATIC || b.kind == NK__ALLOC_STATIC)
				return why_fmt(why, n, "block %zu: kind %u out of range (0..6)", i, b.kind);
		}
		return 0;
	}
	case NK__NKP_COMM: {
		struct nk__nkp_comm c;
		struct nk__nkp_comm_peer e;
		if (len < sizeof c)
			return why_fmt(why, n, "length %zu, less than %zu", len, sizeof c);
		memcpy(&c, p, sizeof c);
		if (c.size == 0 || c.rank >= c.size)
			return why_fmt(why, n, "rank %" PRIu32 " of %" PRIu32 " out of range", c.rank, c.size);
		if (c.n > 2ull * c.size)
			return why_fmt(why, n, "%" PRIu32 " peers, more than 2 x size %" PRIu32, c.n, c.size);
		if (len != sizeof c + (size_t)c.n * sizeof e)
			return why_fmt(why, n, "length %zu does not match %" PRIu32 " peers (expected %zu)", len, c.n,
				       sizeof c + (size_t)c.n * sizeof e);
		for (uint32_t i = 0; i < c.n; i++) {
			memcpy(&e, p + sizeof c + (size_t)i * sizeof e, sizeof e);
			if (e.peer >= c.size || e.kind > NK__COMM_COLL)
				return why_fmt(why, n, "peer %" PRIu32 ": rank %" PRIu32 " kind %" PRIu32 " out of range", i,
					       e.peer, e.kind);
		}
		return 0;
	}
	case NK__NKP_CALLERS: {
		struct nk__nkp_caller e;
		if (!len || len % sizeof e)
			return why_fmt(why, n, "length %zu is not a positive multiple of %zu", len, sizeof e);
		for (size_t i = 0; i < len / sizeof e; i++) {
			memcpy(&e, p + i * sizeof e, sizeof e);
			if (e.depth < 1 || e.depth > NK__NKP_CALLER_DEPTH)
				return why_fmt(why, n, "entry %zu: depth %u out of range (1..%d)", i, e.depth,
					       NK__NKP_CALLER_DEPTH);
			if (e.reserved)
				return why_fmt(why, n, "entry %zu: reserved field %u (0 in version 1)", i, e.reserved);
			for (unsigned k = 0; k < NK__NKP_CALLER_DEPTH; k++)
				if ((k < e.depth) != (e.ret[k] != 0))
					return why_fmt(why, n, "entry %zu: return address %u is %s (depth %u)", i, k,
						       e.ret[k] ? "set beyond the depth" : "0", e.depth);
		}
		return 0;
	}
	case NK__NKP_NAME:
		if (len < sizeof(struct nk__nkp_name))
			return why_fmt(why, n, "length %zu, less than %zu", len, sizeof(struct nk__nkp_name));
		return check_name(p + sizeof(struct nk__nkp_name), len - sizeof(struct nk__nkp_name), why, n);
	case NK__NKP_PHASE: {
		struct nk__nkp_phase ph;
		if (len < sizeof ph)
			return why_fmt(why, n, "length %zu, less than %zu", len, sizeof ph);
		memcpy(&ph, p, sizeof ph);
		if (ph.kind > 2)
			return why_fmt(why, n, "kind %u out of range (0..2)", ph.kind);
		/* ROI start/stop may come without a name; a phase needs one */
		if (ph.kind != 0 && len == sizeof ph)
			return 0;
		return check_name(p + sizeof ph, len - sizeof ph, why, n);
	}
	case NK__NKP_SAMPLES: {
		struct nk__nkp_sample s;
		char inner[200];
		if (len % sizeof s)
			return why_fmt(why, n, "length %zu is not a multiple of %zu", len, sizeof s);
		for (size_t i = 0; i < len / sizeof s; i++) {
			memcpy(&s, p + i * sizeof s, sizeof s);
			if (nk__nkp_check_sample(&s, inner, sizeof inner))
				return why_fmt(why, n, "sample %zu: %s", i, inner);
		}
		return 0;
	}
	case NK__NKP_TRAILER:
		return check_size(len, sizeof(struct nk__nkp_trailer), why, n);
	}
	return why_fmt(why, n, "unknown record type %" PRIu32, type);
}

int nk__nkp_end_complete(const unsigned char *p, size_t len)
{
	json_t *j = json_loadb((const char *)p, len, 0, NULL);
	int c = j && json_is_true(json_object_get(j, "complete"));
	json_decref(j);
	return c;
}

/* ------------------------------------------------------------ the reader */

struct tsite {
	struct nk__nkp_site_data sd;
	uint64_t off;
};

struct srec {
	uint64_t off;   /* offset of a SAMPLES record of the open section */
	size_t first;   /* index of its first sample in the process's samples */
};

enum { ST_RUN, ST_TOP, ST_META, ST_SECTION, ST_AFTER_END, ST_DONE };

struct rd {
	const unsigned char *d;
	size_t len;
	const char *name;
	nk_error *err;
	struct nk__nkp_profile *p;
	const char *path; /* the file (run sources), NULL for a buffer */
	size_t cap_procs, cap_runs;
	int state;
	uint64_t records, proc_off;
	/* the open section: capacities of its process's arrays and what its END checks */
	size_t cap_maps, cap_threads, cap_allocs, cap_frees, cap_names, cap_phases, cap_samples, cap_callers;
	struct tsite *sites;
	size_t n_sites, cap_sites;
	uint64_t *alloc_off;
	size_t cap_alloc_off;
	struct srec *srecs;
	size_t n_srecs, cap_srecs;
	uint64_t *phase_bits; /* 65536 bits: phase ids declared in the open section */
};

static int fail(struct rd *r, int code, uint64_t off, uint32_t type, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(struct rd *r, int code, uint64_t off, uint32_t type, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *tn = nk__nkp_type_name(type);
	if (tn)
		return nk__error(r->err, code, "%s: offset %" PRIu64 ": %s record: %s", r->name, off, tn, msg);
	return nk__error(r->err, code, "%s: offset %" PRIu64 ": %s", r->name, off, msg);
}

static int oom(struct rd *r)
{
	return nk__error(r->err, NK_ENOMEM, "%s: out of memory", r->name);
}

/* Room for @p more elements after @p n in *v (capacity *cap).  0 or NK_ENOMEM. */
static int reserve(void *vp, size_t *cap, size_t n, size_t more, size_t elem)
{
	void **v = vp;
	if (n + more <= *cap)
		return 0;
	if (more > SIZE_MAX / elem - n)
		return NK_ENOMEM;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < n + more)
		ncap = ncap > SIZE_MAX / 2 / elem ? n + more : ncap * 2;
	void *nv = realloc(*v, ncap * elem);
	if (!nv)
		return NK_ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static char *dup_text(const unsigned char *p, size_t len)
{
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, p, len);
		s[len] = 0;
	}
	return s;
}

static void free_proc(struct nk__nkp_process_data *pd)
{
	free(pd->meta_json);
	free(pd->end_json);
	free(pd->peers);
	for (size_t i = 0; i < pd->n_maps; i++)
		free(pd->all_maps[i]);
	free(pd->all_maps);
	free(pd->threads);
	for (size_t i = 0; i < pd->n_sites; i++)
		free(pd->sites[i].ips);
	free(pd->sites);
	free(pd->allocs);
	free(pd->frees);
	for (size_t i = 0; i < pd->n_names; i++)
		free(pd->names[i].name);
	free(pd->names);
	for (size_t i = 0; i < pd->n_phases; i++)
		free(pd->phases[i].name);
	free(pd->phases);
	free(pd->samples);
	free(pd->callers);
}

void nk__nkp_free(struct nk__nkp_profile *p)
{
	if (!p)
		return;
	free(p->run_json);
	free(p->machine_json);
	for (size_t i = 0; i < p->n_runs; i++) {
		free(p->runs[i].run_json);
		free(p->runs[i].machine_json);
		free(p->runs[i].source);
	}
	free(p->runs);
	for (size_t i = 0; i < p->n_procs; i++)
		free_proc(&p->procs[i]);
	free(p->procs);
	free(p);
}

static int cmp_tsite(const void *a, const void *b)
{
	const struct tsite *x = a, *y = b;
	int c = NK__CMP(x->sd.id, y->sd.id);
	return c ? c : NK__CMP(x->off, y->off);
}

static int cmp_site(const void *key, const void *elem)
{
	uint32_t id = *(const uint32_t *)key, e = ((const struct nk__nkp_site_data *)elem)->id;
	return id < e ? -1 : id > e;
}

static int cmp_caller(const void *a, const void *b)
{
	const struct nk__nkp_caller *x = a, *y = b;
	int c;
	if ((c = NK__CMP(x->tid, y->tid)) || (c = NK__CMP(x->time_ns, y->time_ns)))
		return c;
	return NK__CMP(x->addr, y->addr);
}

const struct nk__nkp_caller *nk__nkp_find_caller(const struct nk__nkp_process_data *pd,
						 const struct nk__nkp_sample *s)
{
	if (!pd || !s || !pd->n_callers)
		return NULL;
	struct nk__nkp_caller key = { .time_ns = s->time_ns, .addr = s->addr, .tid = s->tid };
	return bsearch(&key, pd->callers, pd->n_callers, sizeof *pd->callers, cmp_caller);
}

static int phase_declared(const struct rd *r, uint16_t id)
{
	return id == 0 || (r->phase_bits[id / 64] >> (id % 64) & 1);
}

/* END closes the section: sort the sites and check every id referenced in it. */
static int close_section(struct rd *r, uint64_t end_off)
{
	struct nk__nkp_process_data *pd = &r->p->procs[r->p->n_procs - 1];
	int rc = 0;

	if (r->n_sites) {
		qsort(r->sites, r->n_sites, sizeof *r->sites, cmp_tsite);
		for (size_t i = 1; i < r->n_sites; i++)
			if (r->sites[i].sd.id == r->sites[i - 1].sd.id)
				return fail(r, NK_EPARSE, r->sites[i].off, NK__NKP_SITE,
					    "duplicate site id %" PRIu32 " (first at offset %" PRIu64 ")",
					    r->sites[i].sd.id, r->sites[i - 1].off);
		pd->sites = malloc(r->n_sites * sizeof *pd->sites);
		if (!pd->sites)
			return oom(r);
		for (size_t i = 0; i < r->n_sites; i++) {
			pd->sites[i] = r->sites[i].sd;
			r->sites[i].sd.ips = NULL; /* owned by pd now */
		}
		pd->n_sites = r->n_sites;
		r->n_sites = 0;
	}
	for (size_t i = 0; i < pd->n_allocs; i++) {
		uint32_t site = pd->allocs[i].site;
		if (site && (!pd->n_sites || !bsearch(&site, pd->sites, pd->n_sites, sizeof *pd->sites, cmp_site)))
			return fail(r, NK_EPARSE, r->alloc_off[i], NK__NKP_ALLOC,
				    "site %" PRIu32 " is not declared by a SITE record of process %" PRIu32, site,
				    pd->info.pid);
	}
	if (pd->n_callers) /* looked up by sample (nk__nkp_find_caller) */
		qsort(pd->callers, pd->n_callers, sizeof *pd->callers, cmp_caller);
	for (size_t i = 0, k = 0; i < pd->n_samples; i++) {
		if (phase_declared(r, pd->samples[i].phase))
			continue;
		while (k + 1 < r->n_srecs && r->srecs[k + 1].first <= i)
			k++;
		rc = fail(r, NK_EPARSE, r->srecs[k].off, NK__NKP_SAMPLES,
			  "sample %zu: phase %u is not declared by a PHASE record of process %" PRIu32,
			  i - r->srecs[k].first, pd->samples[i].phase, pd->info.pid);
		break;
	}
	(void)end_off;
	for (size_t i = 0; i < pd->n_phases; i++)
		r->phase_bits[pd->phases[i].p.id / 64] &= ~((uint64_t)1 << (pd->phases[i].p.id % 64));
	r->n_srecs = 0;
	return rc;
}

/* One record of a known base type at @p off, its payload checked already. */
static int take(struct rd *r, uint64_t off, uint32_t type, const unsigned char *pl, size_t len)
{
	struct nk__nkp_profile *p = r->p;
	struct nk__nkp_process_data *pd = p->n_procs ? &p->procs[p->n_procs - 1] : NULL;

	/* where each record may stand */
	switch (type) {
	case NK__NKP_RUN:
		/* version 2: a RUN after a run's processes (or after an empty run) begins the next run */
		if (r->state != ST_RUN &&
		    !(p->version == NK__NKP_VERSION_RUNS && (r->state == ST_TOP || r->state == ST_AFTER_END)))
			return fail(r, NK_EPARSE, off, type,
				    p->version == NK__NKP_VERSION_RUNS
					    ? "RUN must be the first record, or follow a run's last END"
					    : "RUN must be the first record, and only once");
		break;
	case NK__NKP_MACHINE:
		if (r->state != ST_TOP || p->runs[p->n_runs - 1].n_procs || p->runs[p->n_runs - 1].machine_json)
			return fail(r, NK_EPARSE, off, type, "MACHINE must follow RUN, once, before any PROCESS");
		break;
	case NK__NKP_PROCESS:
	case NK__NKP_TRAILER:
		if (r->state == ST_RUN)
			return fail(r, NK_EPARSE, off, type, "the file does not begin with a RUN record");
		if (r->state == ST_META)
			return fail(r, NK_EPARSE, off, type, "PROCESS at offset %" PRIu64 " without META",
				    r->proc_off);
		if (r->state == ST_SECTION)
			return fail(r, NK_EPARSE, off, type,
				    "process %" PRIu32 " (PROCESS at offset %" PRIu64 ") has no END", pd->info.pid,
				    r->proc_off);
		break;
	case NK__NKP_META:
		if (r->state != ST_META)
			return fail(r, NK_EPARSE, off, type, "META must follow PROCESS, once");
		break;
	default: /* MAPS ... SAMPLES, END: inside a section */
		if (r->state == ST_META)
			return fail(r, NK_EPARSE, off, type, "PROCESS at offset %" PRIu64 " without META",
				    r->proc_off);
		if (r->state != ST_SECTION)
			return fail(r, NK_EPARSE, off, type, "outside a process section");
		break;
	}

	switch (type) {
	case NK__NKP_RUN: {
		if (reserve(&p->runs, &r->cap_runs, p->n_runs, 1, sizeof *p->runs))
			return oom(r);
		struct nk__nkp_run_data *run = &p->runs[p->n_runs++];
		memset(run, 0, sizeof *run);
		run->first_proc = p->n_procs;
		if (!(run->run_json = dup_text(pl, len)) || (r->path && !(run->source = strdup(r->path))))
			return oom(r);
		if (p->n_runs == 1 && !(p->run_json = dup_text(pl, len)))
			return oom(r);
		r->state = ST_TOP;
		return 0;
	}
	case NK__NKP_MACHINE:
		if (!(p->runs[p->n_runs - 1].machine_json = dup_text(pl, len)))
			return oom(r);
		if (p->n_runs == 1 && !(p->machine_json = dup_text(pl, len)))
			return oom(r);
		return 0;
	case NK__NKP_PROCESS:
		if (reserve(&p->procs, &r->cap_procs, p->n_procs, 1, sizeof *p->procs))
			return oom(r);
		pd = &p->procs[p->n_procs++];
		memset(pd, 0, sizeof *pd);
		p->runs[p->n_runs - 1].n_procs++;
		memcpy(&pd->info, pl, sizeof pd->info);
		r->cap_maps = r->cap_threads = r->cap_allocs = r->cap_frees = 0;
		r->cap_names = r->cap_phases = r->cap_samples = r->cap_callers = 0;
		r->proc_off = off;
		r->state = ST_META;
		return 0;
	case NK__NKP_META:
		if (!(pd->meta_json = dup_text(pl, len)))
			return oom(r);
		r->state = ST_SECTION;
		return 0;
	case NK__NKP_MAPS: {
		char *t = dup_text(pl + sizeof(struct nk__nkp_maps), len - sizeof(struct nk__nkp_maps));
		if (!t || reserve(&pd->all_maps, &r->cap_maps, pd->n_maps, 1, sizeof *pd->all_maps)) {
			free(t);
			return oom(r);
		}
		pd->all_maps[pd->n_maps++] = t;
		pd->maps = t;
		return 0;
	}
	case NK__NKP_THREAD:
		if (reserve(&pd->threads, &r->cap_threads, pd->n_threads, 1, sizeof *pd->threads))
			return oom(r);
		memcpy(&pd->threads[pd->n_threads++], pl, sizeof *pd->threads);
		return 0;
	case NK__NKP_SITE: {
		struct nk__nkp_site s;
		memcpy(&s, pl, sizeof s);
		uint64_t *ips = malloc(s.depth ? s.depth * sizeof *ips : 1);
		if (!ips || reserve(&r->sites, &r->cap_sites, r->n_sites, 1, sizeof *r->sites)) {
			free(ips);
			return oom(r);
		}
		memcpy(ips, pl + sizeof s, s.depth * sizeof *ips);
		r->sites[r->n_sites++] = (struct tsite){ { s.id, s.depth, ips }, off };
		return 0;
	}
	case NK__NKP_ALLOC:
		if (reserve(&pd->allocs, &r->cap_allocs, pd->n_allocs, 1, sizeof *pd->allocs) ||
		    reserve(&r->alloc_off, &r->cap_alloc_off, pd->n_allocs, 1, sizeof *r->alloc_off))
			return oom(r);
		r->alloc_off[pd->n_allocs] = off;
		memcpy(&pd->allocs[pd->n_allocs++], pl, sizeof *pd->allocs);
		return 0;
	case NK__NKP_FREE:
		if (reserve(&pd->frees, &r->cap_frees, pd->n_frees, 1, sizeof *pd->frees))
			return oom(r);
		memcpy(&pd->frees[pd->n_frees++], pl, sizeof *pd->frees);
		return 0;
	case NK__NKP_BLOCKS: /* small blocks: as ALLOC and FREE records of id 0 */
		for (size_t i = 0; i < len / sizeof(struct nk__nkp_block); i++) {
			struct nk__nkp_block b;
			memcpy(&b, pl + i * sizeof b, sizeof b);
			if (!b.kind) {
				if (reserve(&pd->frees, &r->cap_frees, pd->n_frees, 1, sizeof *pd->frees))
					return oom(r);
				pd->frees[pd->n_frees++] =
					(struct nk__nkp_free){ .addr = b.addr, .time_ns = b.time_ns, .tid = b.tid };
				continue;
			}
			if (reserve(&pd->allocs, &r->cap_allocs, pd->n_allocs, 1, sizeof *pd->allocs) ||
			    reserve(&r->alloc_off, &r->cap_alloc_off, pd->n_allocs, 1, sizeof *r->alloc_off))
				return oom(r);
			r->alloc_off[pd->n_allocs] = off;
			pd->allocs[pd->n_allocs++] = (struct nk__nkp_alloc){
				.addr = b.addr, .size = b.size, .time_ns = b.time_ns, .tid = b.tid, .site = b.site,
				.kind = b.kind };
		}
		return 0;
	case NK__NKP_COMM: {
		struct nk__nkp_comm c;
		memcpy(&c, pl, sizeof c);
		if (pd->has_comm)
			return fail(r, NK_EPARSE, off, NK__NKP_COMM, "a second COMM record for process %" PRIu32, pd->info.pid);
		struct nk__nkp_comm_peer *v = malloc((c.n ? c.n : 1) * sizeof *v);
		if (!v)
			return oom(r);
		memcpy(v, pl + sizeof c, (size_t)c.n * sizeof *v);
		pd->comm = c;
		pd->peers = v;
		pd->has_comm = 1;
		return 0;
	}
	case NK__NKP_CALLERS: {
		size_t k = len / sizeof(struct nk__nkp_caller);
		if (reserve(&pd->callers, &r->cap_callers, pd->n_callers, k, sizeof *pd->callers))
			return oom(r);
		memcpy(pd->callers + pd->n_callers, pl, len);
		pd->n_callers += k;
		return 0;
	}
	case NK__NKP_NAME: {
		struct nk__nkp_name_data nd;
		memcpy(&nd.n, pl, sizeof nd.n);
		nd.name = dup_text(pl + sizeof nd.n, len - sizeof nd.n);
		if (!nd.name || reserve(&pd->names, &r->cap_names, pd->n_names, 1, sizeof *pd->names)) {
			free(nd.name);
			return oom(r);
		}
		pd->names[pd->n_names++] = nd;
		return 0;
	}
	case NK__NKP_PHASE: {
		struct nk__nkp_phase_data ph;
		memcpy(&ph.p, pl, sizeof ph.p);
		ph.name = dup_text(pl + sizeof ph.p, len - sizeof ph.p);
		if (!ph.name || reserve(&pd->phases, &r->cap_phases, pd->n_phases, 1, sizeof *pd->phases)) {
			free(ph.name);
			return oom(r);
		}
		pd->phases[pd->n_phases++] = ph;
		r->phase_bits[ph.p.id / 64] |= (uint64_t)1 << (ph.p.id % 64);
		return 0;
	}
	case NK__NKP_SAMPLES: {
		size_t k = len / sizeof(struct nk__nkp_sample);
		if (!k)
			return 0;
		if (reserve(&pd->samples, &r->cap_samples, pd->n_samples, k, sizeof *pd->samples) ||
		    reserve(&r->srecs, &r->cap_srecs, r->n_srecs, 1, sizeof *r->srecs))
			return oom(r);
		r->srecs[r->n_srecs++] = (struct srec){ off, pd->n_samples };
		memcpy(pd->samples + pd->n_samples, pl, len);
		pd->n_samples += k;
		p->n_samples += k;
		return 0;
	}
	case NK__NKP_END:
		if (!(pd->end_json = dup_text(pl, len)))
			return oom(r);
		pd->complete = nk__nkp_end_complete(pl, len);
		r->state = ST_AFTER_END;
		return close_section(r, off);
	case NK__NKP_TRAILER: {
		struct nk__nkp_trailer t;
		memcpy(&t, pl, sizeof t);
		if (t.records != r->records)
			return fail(r, NK_EPARSE, off, type, "counts %" PRIu64 " records, the file has %" PRIu64,
				    t.records, r->records);
		if (t.processes != p->n_procs)
			return fail(r, NK_EPARSE, off, type, "counts %" PRIu64 " processes, the file has %zu",
				    t.processes, p->n_procs);
		if (t.samples != p->n_samples)
			return fail(r, NK_EPARSE, off, type, "counts %" PRIu64 " samples, the file has %" PRIu64,
				    t.samples, p->n_samples);
		return 0;
	}
	}
	return fail(r, NK_EPARSE, off, type, "unexpected"); /* not reached: the caller knows the type */
}

static int parse(struct rd *r)
{
	const unsigned char *d = r->d;
	size_t len = r->len, pos;
	struct nk__nkp_file_header fh;
	char why[300];

	if (len > NK__NKP_MAX_FILE)
		return nk__error(r->err, NK_EPARSE, "%s: %zu bytes; numakit reads profiles of at most 1 GiB", r->name,
				 len);
	if (len < sizeof fh) {
		size_t k = len < 8 ? len : 8;
		if (memcmp(d, NK__NKP_MAGIC, k))
			return nk__error(r->err, NK_EPARSE, "%s: not a numakit profile (bad magic)", r->name);
		return nk__error(r->err, NK_EPARSE, "%s: truncated: %zu bytes, the file header has %zu", r->name,
				 len, sizeof fh);
	}
	memcpy(&fh, d, sizeof fh);
	if (memcmp(fh.magic, NK__NKP_MAGIC, 8))
		return nk__error(r->err, NK_EPARSE, "%s: not a numakit profile (bad magic)", r->name);
	if (fh.version != NK__NKP_VERSION && fh.version != NK__NKP_VERSION_RUNS)
		return nk__error(r->err, NK_EVERSION,
				 "%s: profile version %" PRIu32 "; this numakit reads versions %u and %u", r->name,
				 fh.version, NK__NKP_VERSION, NK__NKP_VERSION_RUNS);
	if (fh.header_size < sizeof fh)
		return nk__error(r->err, NK_EPARSE, "%s: file header size %" PRIu32 ", less than %zu", r->name,
				 fh.header_size, sizeof fh);
	if (fh.header_size > len)
		return nk__error(r->err, NK_EPARSE,
				 "%s: truncated: file header size %" PRIu32 ", the file has %zu bytes",
				 r->name, fh.header_size, len);
	r->p->version = fh.version;

	for (pos = fh.header_size; pos < len;) {
		struct nk__nkp_record_header h;
		uint64_t off = pos;

		if (r->state == ST_DONE)
			return fail(r, NK_EPARSE, off, 0, "data after TRAILER (%zu bytes)", len - pos);
		if (len - pos < sizeof h)
			return fail(r, NK_EPARSE, off, 0, "truncated: %zu bytes left, a record header has %zu",
				    len - pos, sizeof h);
		memcpy(&h, d + pos, sizeof h);
		pos += sizeof h;
		uint32_t base = h.type & ~NK__NKP_OPTIONAL;
		const char *tn = nk__nkp_type_name(base);
		if (!tn && !(h.type & NK__NKP_OPTIONAL))
			return fail(r, NK_EVERSION, off, 0,
				    "record type %" PRIu32 " unknown to this numakit (a newer profile?)", h.type);
		if (h.length > NK__NKP_MAX_PAYLOAD)
			return fail(r, NK_EPARSE, off, tn ? base : 0, "length %" PRIu64 ", more than %u", h.length,
				    NK__NKP_MAX_PAYLOAD);
		if (h.length > len - pos)
			return fail(r, NK_EPARSE, off, tn ? base : 0,
				    "truncated: length %" PRIu64 " goes past the end of the file (%zu bytes left)",
				    h.length, len - pos);
		if (h.flags)
			return fail(r, NK_EPARSE, off, tn ? base : 0, "flags 0x%" PRIx32 " (0 in version 1)", h.flags);
		const unsigned char *pl = d + pos;
		pos += (size_t)h.length;
		if (!tn) { /* unknown but optional: skipped */
			r->records++;
			continue;
		}
		if (nk__nkp_check_payload(base, pl, (size_t)h.length, why, sizeof why))
			return fail(r, NK_EPARSE, off, base, "%s", why);
		int rc = take(r, off, base, pl, (size_t)h.length);
		if (rc)
			return rc;
		if (base == NK__NKP_TRAILER)
			r->state = ST_DONE;
		else
			r->records++;
	}
	if (r->state != ST_DONE)
		return fail(r, NK_EPARSE, len, 0, "truncated: the file ends without a TRAILER record");
	return 0;
}

static int parse_named(const void *data, size_t len, const char *name, const char *path,
		       struct nk__nkp_profile **out, nk_error *err)
{
	struct rd r = { .d = data, .len = len, .name = name, .path = path, .err = err, .state = ST_RUN };
	int rc;

	r.p = calloc(1, sizeof *r.p);
	r.phase_bits = calloc(65536 / 64, sizeof *r.phase_bits);
	if (!r.p || !r.phase_bits) {
		rc = oom(&r);
		goto out;
	}
	rc = parse(&r);
out:
	for (size_t i = 0; i < r.n_sites; i++)
		free(r.sites[i].sd.ips);
	free(r.sites);
	free(r.alloc_off);
	free(r.srecs);
	free(r.phase_bits);
	if (rc) {
		nk__nkp_free(r.p);
		return rc;
	}
	*out = r.p;
	return 0;
}

int nk__nkp_parse(const void *data, size_t len, struct nk__nkp_profile **out, nk_error *err)
{
	if ((!data && len) || !out)
		return nk__error(err, NK_EINVAL, "nk__nkp_parse: NULL argument");
	return parse_named(data ? data : "", len, "profile", NULL, out, err);
}

int nk__nkp_load(const char *path, struct nk__nkp_profile **out, nk_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc, e = 0;

	if (!path || !out)
		return nk__error(err, NK_EINVAL, "nk__nkp_load: NULL argument");
	rc = nk__os_read_whole(path, NK__NKP_MAX_FILE, &buf, &len, &e);
	if (rc == NK_ENOENT)
		return nk__error(err, rc, "%s: no such file", path);
	if (rc == NK_ENOMEM)
		return nk__error(err, rc, "%s: out of memory", path);
	if (rc && e == EFBIG)
		return nk__error(err, NK_EPARSE, "%s: larger than 1 GiB; numakit reads profiles of at most 1 GiB",
				 path);
	if (rc)
		return nk__error(err, rc, "%s: %s", path, strerror(e));
	rc = parse_named(buf, len, path, path, out, err);
	free(buf);
	return rc;
}
