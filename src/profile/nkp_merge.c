/* SPDX-License-Identifier: BSD-3-Clause
 * The part merger (src/profile/nkp.h): one part file per process, written by
 * the runtime and possibly cut anywhere by a kill, into one merged profile
 * that nk__nkp_parse accepts.
 *
 * Lenient on parts, strict on output: a part keeps its whole records up to
 * the first one the reader would reject (checked with the reader's own
 * nk__nkp_check_payload), and what was cut is said in *warn.  Ids that point
 * at a declaration lost in the cut (a sample's phase, an allocation's site)
 * are reset to 0 ("none") and counted, because the reader insists on them.
 *
 * Two passes: scan every part (find its kept prefix), then emit the parts in
 * start order into one buffer written atomically through src/os/.
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

struct part {
	const char *path;
	char *buf;
	size_t len;
	size_t index;      /* position in the caller's list (stable order) */
	size_t first;      /* offset of the first record after PROCESS and META */
	size_t keep;       /* records in [first, keep) are kept */
	size_t end_off;    /* offset of END, 0 when the part has none */
	struct nk__nkp_process info;
	size_t meta_off, meta_len;
	size_t machine_off, machine_len; /* its first MACHINE, 0 0 when none */
	size_t ex_lo, ex_hi;             /* its extra samples: order[ex_lo..ex_hi) */
	uint64_t samples;                /* samples in the kept records */
	size_t max_rec;                  /* samples in its largest kept SAMPLES record */
};

struct text {
	char *s;
	size_t n, cap;
};

static void say(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct text *t, const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	size_t len = strlen(line);
	if (t->n + len + 2 > t->cap) {
		size_t ncap = (t->cap ? t->cap * 2 : 256) + len + 2;
		char *ns = realloc(t->s, ncap);
		if (!ns)
			return; /* a lost warning line is not worth failing the merge */
		t->s = ns;
		t->cap = ncap;
	}
	if (t->n)
		t->s[t->n++] = '\n';
	memcpy(t->s + t->n, line, len + 1);
	t->n += len;
}

/* ---------------------------------------------------------------- sites seen */

struct idset {
	uint32_t *v; /* 0 = empty slot (site ids are >= 1) */
	size_t cap, n;
};

/* Insert @p id; 1 if it was there already, 0 if inserted, NK_ENOMEM. */
static int idset_add(struct idset *s, uint32_t id)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		uint32_t *nv = calloc(ncap, sizeof *nv);
		if (!nv)
			return NK_ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				for (size_t j = (s->v[i] * 2654435761u) & (ncap - 1);; j = (j + 1) & (ncap - 1))
					if (!nv[j]) {
						nv[j] = s->v[i];
						break;
					}
		free(s->v);
		s->v = nv;
		s->cap = ncap;
	}
	for (size_t j = (id * 2654435761u) & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
		if (s->v[j] == id)
			return 1;
		if (!s->v[j]) {
			s->v[j] = id;
			s->n++;
			return 0;
		}
	}
}

static int idset_has(const struct idset *s, uint32_t id)
{
	if (!s->cap)
		return 0;
	for (size_t j = (id * 2654435761u) & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
		if (s->v[j] == id)
			return 1;
		if (!s->v[j])
			return 0;
	}
}

/* ---------------------------------------------------------------- scanning */

static const char *tname(uint32_t type, char *buf, size_t n)
{
	const char *t = nk__nkp_type_name(type & ~NK__NKP_OPTIONAL);
	if (t)
		return t;
	snprintf(buf, n, "type %" PRIu32, type);
	return buf;
}

/*
 * Read one record header at @p pos of @p pt; 0 with *h, or 1 when what is
 * there is no whole record (the reason in @p why).
 */
static int next_record(const struct part *pt, size_t pos, size_t limit, struct nk__nkp_record_header *h, char *why,
		       size_t n)
{
	if (limit - pos < sizeof *h) {
		snprintf(why, n, "a record header cut after %zu bytes", limit - pos);
		return 1;
	}
	memcpy(h, pt->buf + pos, sizeof *h);
	if (h->length > NK__NKP_MAX_PAYLOAD) {
		snprintf(why, n, "length %" PRIu64 ", more than %u", h->length, NK__NKP_MAX_PAYLOAD);
		return 1;
	}
	if (h->length > limit - pos - sizeof *h) {
		snprintf(why, n, "cut after %zu of its %" PRIu64 " bytes", limit - pos - sizeof *h, h->length);
		return 1;
	}
	if (h->flags) {
		snprintf(why, n, "flags 0x%" PRIx32 " (0 in version 1)", h->flags);
		return 1;
	}
	return 0;
}

/* Find the kept prefix of a part.  0 usable, 1 unusable (warned), NK_ENOMEM. */
static int scan(struct part *pt, struct text *warn)
{
	const unsigned char *d = (const unsigned char *)pt->buf;
	struct nk__nkp_file_header fh;
	struct nk__nkp_record_header h;
	struct idset sites = { 0 };
	char why[400], tb[32];
	size_t pos;
	int rc = 0;

	if (pt->len < sizeof fh || memcmp(d, NK__NKP_MAGIC, 8)) {
		say(warn, "%s: skipped: not a numakit part file", pt->path);
		return 1;
	}
	memcpy(&fh, d, sizeof fh);
	if (fh.version != NK__NKP_VERSION) {
		say(warn, "%s: skipped: part version %" PRIu32 ", this numakit reads version %u", pt->path,
		    fh.version, NK__NKP_VERSION);
		return 1;
	}
	if (fh.header_size < sizeof fh || fh.header_size > pt->len) {
		say(warn, "%s: skipped: bad file header size %" PRIu32, pt->path, fh.header_size);
		return 1;
	}
	/* PROCESS and META first, whole and valid, or the part is of no use */
	pos = fh.header_size;
	for (int k = 0; k < 2; k++) {
		uint32_t want = k ? NK__NKP_META : NK__NKP_PROCESS;
		const char *wn = nk__nkp_type_name(want);
		if (next_record(pt, pos, pt->len, &h, why, sizeof why)) {
			say(warn, "%s: skipped: no whole %s record: %s", pt->path, wn, why);
			return 1;
		}
		if (h.type != want) {
			say(warn, "%s: skipped: offset %zu: %s record where %s was expected", pt->path, pos,
			    tname(h.type, tb, sizeof tb), wn);
			return 1;
		}
		if (nk__nkp_check_payload(want, d + pos + sizeof h, (size_t)h.length, why, sizeof why)) {
			say(warn, "%s: skipped: offset %zu: %s record: %s", pt->path, pos, wn, why);
			return 1;
		}
		if (k)
			pt->meta_off = pos + sizeof h, pt->meta_len = (size_t)h.length;
		else
			memcpy(&pt->info, d + pos + sizeof h, sizeof pt->info);
		pos += sizeof h + (size_t)h.length;
	}
	pt->first = pos;
	while (pos < pt->len) {
		int bad = next_record(pt, pos, pt->len, &h, why, sizeof why);
		uint32_t base = h.type & ~NK__NKP_OPTIONAL;
		const char *tn = bad ? NULL : nk__nkp_type_name(base);
		const unsigned char *pl = d + pos + sizeof h;

		if (!bad && !tn && !(h.type & NK__NKP_OPTIONAL)) {
			snprintf(why, sizeof why, "unknown record type %" PRIu32, h.type);
			bad = 1;
		}
		if (!bad && tn && (base == NK__NKP_RUN || base == NK__NKP_PROCESS || base == NK__NKP_META ||
				   base == NK__NKP_TRAILER)) {
			snprintf(why, sizeof why, "%s record in a part", tn);
			bad = 1;
		}
		if (!bad && tn && nk__nkp_check_payload(base, pl, (size_t)h.length, why, sizeof why)) {
			char inner[400];
			memcpy(inner, why, sizeof inner);
			snprintf(why, sizeof why, "%s record: %.300s", tn, inner);
			bad = 1;
		}
		if (!bad && base == NK__NKP_SITE) {
			struct nk__nkp_site s;
			memcpy(&s, pl, sizeof s);
			int dup = idset_add(&sites, s.id);
			if (dup < 0) {
				rc = NK_ENOMEM;
				goto out;
			}
			if (dup) {
				snprintf(why, sizeof why, "SITE record: duplicate site id %" PRIu32, s.id);
				bad = 1;
			}
		}
		if (bad) {
			say(warn, "%s: process %" PRIu32 ": cut at offset %zu (%zu bytes dropped): %s", pt->path,
			    pt->info.pid, pos, pt->len - pos, why);
			break;
		}
		if (base == NK__NKP_SAMPLES) {
			size_t k = (size_t)h.length / sizeof(struct nk__nkp_sample);
			pt->samples += k;
			if (k > pt->max_rec)
				pt->max_rec = k;
		}
		if (base == NK__NKP_MACHINE && !pt->machine_len)
			pt->machine_off = pos + sizeof h, pt->machine_len = (size_t)h.length;
		if (base == NK__NKP_END) {
			pt->end_off = pos;
			pos += sizeof h + (size_t)h.length;
			if (pos < pt->len)
				say(warn, "%s: process %" PRIu32 ": %zu bytes after END ignored", pt->path,
				    pt->info.pid, pt->len - pos);
			break;
		}
		pos += sizeof h + (size_t)h.length;
	}
	pt->keep = pt->end_off ? pt->end_off : pos;
out:
	free(sites.v);
	return rc;
}

/* ---------------------------------------------------------------- emitting */

struct out {
	unsigned char *b;
	size_t n, cap;
	uint64_t records;
};

static int put(struct out *o, const void *p, size_t len)
{
	if (!len)
		return 0;
	if (len > NK__NKP_MAX_FILE - o->n)
		return NK_EIO; /* readers would refuse it */
	if (o->n + len > o->cap) {
		size_t ncap = o->cap ? o->cap : 65536;
		while (ncap < o->n + len)
			ncap *= 2;
		unsigned char *nb = realloc(o->b, ncap);
		if (!nb)
			return NK_ENOMEM;
		o->b = nb;
		o->cap = ncap;
	}
	memcpy(o->b + o->n, p, len);
	o->n += len;
	return 0;
}

static int put_record(struct out *o, uint32_t type, const void *p, size_t len)
{
	struct nk__nkp_record_header h = { .type = type, .flags = 0, .length = len };
	int rc = put(o, &h, sizeof h);
	if (!rc)
		rc = put(o, p, len);
	if (!rc)
		o->records++;
	return rc;
}

struct emit_ctx {
	uint64_t *phase_bits; /* 65536 bits, cleared between parts */
	struct idset sites;
	struct nk__nkp_sample *chunk; /* NK__NKP_SAMPLES_PER_RECORD samples */
	uint64_t samples;             /* over all processes */
	const struct nk__nkp_sample *extra;
	const size_t *order;
};

/* A known type with NK__NKP_OPTIONAL set is that type; an unknown optional one stays as it is. */
static uint32_t base_type(uint32_t type)
{
	uint32_t base = type & ~NK__NKP_OPTIONAL;
	return nk__nkp_type_name(base) ? base : type;
}

static uint64_t time_of(uint32_t type, const unsigned char *pl, size_t len)
{
	uint64_t t = 0;
	if (type == NK__NKP_MAPS)
		memcpy(&t, pl, sizeof t);
	else if (type == NK__NKP_THREAD)
		memcpy(&t, pl + offsetof(struct nk__nkp_thread, time_ns), sizeof t);
	else if (type == NK__NKP_ALLOC)
		memcpy(&t, pl + offsetof(struct nk__nkp_alloc, time_ns), sizeof t);
	else if (type == NK__NKP_FREE)
		memcpy(&t, pl + offsetof(struct nk__nkp_free, time_ns), sizeof t);
	else if (type == NK__NKP_NAME)
		memcpy(&t, pl + offsetof(struct nk__nkp_name, time_ns), sizeof t);
	else if (type == NK__NKP_PHASE)
		memcpy(&t, pl, sizeof t);
	else if (type == NK__NKP_SAMPLES && len)
		memcpy(&t, pl + len - sizeof(struct nk__nkp_sample), sizeof t);
	else if (type == NK__NKP_CALLERS && len)
		memcpy(&t, pl + len - sizeof(struct nk__nkp_caller), sizeof t);
	else if (type == NK__NKP_BLOCKS && len)
		memcpy(&t, pl + len - sizeof(struct nk__nkp_block) + offsetof(struct nk__nkp_block, time_ns), sizeof t);
	return t;
}

static int phase_ok(const struct emit_ctx *c, uint16_t id)
{
	return id == 0 || (c->phase_bits[id / 64] >> (id % 64) & 1);
}

/* Write @p n samples (already in c->chunk) as one SAMPLES record. */
static int flush_chunk(struct out *o, struct emit_ctx *c, size_t n)
{
	if (!n)
		return 0;
	c->samples += n;
	return put_record(o, NK__NKP_SAMPLES, c->chunk, n * sizeof *c->chunk);
}

static int emit_part(struct out *o, struct emit_ctx *c, struct part *pt, struct text *warn)
{
	const unsigned char *d = (const unsigned char *)pt->buf;
	struct nk__nkp_record_header h;
	uint64_t last = 0, fixed_phase = 0, fixed_site = 0, samples = 0;
	size_t pos;
	int rc;

	/* declarations kept: phases and sites */
	for (pos = pt->first; pos < pt->keep; pos += sizeof h + (size_t)h.length) {
		memcpy(&h, d + pos, sizeof h);
		h.type = base_type(h.type);
		const unsigned char *pl = d + pos + sizeof h;
		if (h.type == NK__NKP_PHASE) {
			struct nk__nkp_phase ph;
			memcpy(&ph, pl, sizeof ph);
			c->phase_bits[ph.id / 64] |= (uint64_t)1 << (ph.id % 64);
		} else if (h.type == NK__NKP_SITE) {
			struct nk__nkp_site s;
			memcpy(&s, pl, sizeof s);
			if (idset_add(&c->sites, s.id) < 0)
				return NK_ENOMEM;
		}
	}

	if ((rc = put_record(o, NK__NKP_PROCESS, &pt->info, sizeof pt->info)) ||
	    (rc = put_record(o, NK__NKP_META, d + pt->meta_off, pt->meta_len)))
		return rc;
	for (pos = pt->first; pos < pt->keep; pos += sizeof h + (size_t)h.length) {
		memcpy(&h, d + pos, sizeof h);
		uint32_t written = h.type; /* copied with its optional bit: older readers skip what they do not know */
		h.type = base_type(h.type);
		const unsigned char *pl = d + pos + sizeof h;
		size_t len = (size_t)h.length;
		uint64_t t = time_of(h.type, pl, len);

		if (t > last)
			last = t;
		if (h.type == NK__NKP_MACHINE) /* the merged file has one, at the top */
			continue;
		if (h.type == NK__NKP_SAMPLES) {
			size_t k = len / sizeof *c->chunk;
			/* a part's record may hold more than a merged one does: split it */
			for (size_t i = 0; i < k; i += NK__NKP_SAMPLES_PER_RECORD) {
				size_t m = k - i < NK__NKP_SAMPLES_PER_RECORD ? k - i : NK__NKP_SAMPLES_PER_RECORD;
				memcpy(c->chunk, pl + i * sizeof *c->chunk, m * sizeof *c->chunk);
				for (size_t j = 0; j < m; j++)
					if (!phase_ok(c, c->chunk[j].phase)) {
						c->chunk[j].phase = 0;
						fixed_phase++;
					}
				if ((rc = flush_chunk(o, c, m)))
					return rc;
			}
			samples += k;
			continue;
		}
		if (h.type == NK__NKP_ALLOC) {
			struct nk__nkp_alloc a;
			memcpy(&a, pl, sizeof a);
			if (a.site && !idset_has(&c->sites, a.site)) {
				a.site = 0;
				fixed_site++;
			}
			if ((rc = put_record(o, h.type, &a, sizeof a)))
				return rc;
			continue;
		}
		if (h.type == NK__NKP_BLOCKS) { /* sites fixed as for ALLOC; optional, as the runtime wrote it */
			struct nk__nkp_record_header bh = { .type = NK__NKP_BLOCKS | NK__NKP_OPTIONAL, .length = len };
			if ((rc = put(o, &bh, sizeof bh)))
				return rc;
			for (size_t i = 0; i < len / sizeof(struct nk__nkp_block); i++) {
				struct nk__nkp_block b;
				memcpy(&b, pl + i * sizeof b, sizeof b);
				if (b.site && !idset_has(&c->sites, b.site)) {
					b.site = 0;
					fixed_site++;
				}
				if ((rc = put(o, &b, sizeof b)))
					return rc;
			}
			o->records++;
			continue;
		}
		struct nk__nkp_record_header copy = h;
		copy.type = written;
		if ((rc = put(o, &copy, sizeof copy)) || (rc = put(o, pl, len)))
			return rc;
		o->records++;
	}

	/* extra samples, in time order, rebased on the process's start */
	size_t n = 0;
	for (size_t i = pt->ex_lo; i < pt->ex_hi; i++) {
		struct nk__nkp_sample s = c->extra[c->order[i]];
		s.time_ns = s.time_ns > pt->info.start_ns ? s.time_ns - pt->info.start_ns : 0;
		if (!phase_ok(c, s.phase)) {
			s.phase = 0;
			fixed_phase++;
		}
		if (s.time_ns > last)
			last = s.time_ns;
		c->chunk[n++] = s;
		if (n == NK__NKP_SAMPLES_PER_RECORD) {
			if ((rc = flush_chunk(o, c, n)))
				return rc;
			n = 0;
		}
	}
	if ((rc = flush_chunk(o, c, n)))
		return rc;
	samples += pt->ex_hi - pt->ex_lo;

	if (fixed_phase)
		say(warn, "%s: process %" PRIu32 ": %" PRIu64 " samples of an undeclared phase put in phase 0",
		    pt->path, pt->info.pid, fixed_phase);
	if (fixed_site)
		say(warn, "%s: process %" PRIu32 ": %" PRIu64 " allocations of an undeclared site given site 0",
		    pt->path, pt->info.pid, fixed_site);

	if (pt->end_off) {
		memcpy(&h, d + pt->end_off, sizeof h);
		h.type = base_type(h.type);
		rc = put_record(o, NK__NKP_END, d + pt->end_off + sizeof h, (size_t)h.length);
	} else {
		json_t *j = json_pack("{s:b, s:s, s:I, s:I, s:I}", "complete", 0, "how", "killed", "time_ns",
				      (json_int_t)(last > INT64_MAX ? INT64_MAX : last), "samples",
				      (json_int_t)samples, "truncated_bytes", (json_int_t)(pt->len - pt->keep));
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!s)
			return NK_ENOMEM;
		rc = put_record(o, NK__NKP_END, s, strlen(s));
		free(s);
		if (pt->keep == pt->len)
			say(warn, "%s: process %" PRIu32 " has no END (killed?): marked incomplete", pt->path,
			    pt->info.pid);
	}

	/* forget this part's declarations */
	for (pos = pt->first; pos < pt->keep; pos += sizeof h + (size_t)h.length) {
		memcpy(&h, d + pos, sizeof h);
		if (base_type(h.type) == NK__NKP_PHASE) {
			struct nk__nkp_phase ph;
			memcpy(&ph, d + pos + sizeof h, sizeof ph);
			c->phase_bits[ph.id / 64] &= ~((uint64_t)1 << (ph.id % 64));
		}
	}
	free(c->sites.v); /* not cleared in place: one big part must not make every later one pay for it */
	c->sites = (struct idset){ 0 };
	return rc;
}

/* ---------------------------------------------------------------- ordering */

static int cmp_start(const void *a, const void *b)
{
	const struct part *x = *(struct part *const *)a, *y = *(struct part *const *)b;
	int c;
	if ((c = NK__CMP(x->info.start_ns, y->info.start_ns)) || (c = NK__CMP(x->info.pid, y->info.pid)))
		return c;
	return NK__CMP(x->index, y->index);
}

static int cmp_pid_start(const void *a, const void *b)
{
	const struct part *x = *(struct part *const *)a, *y = *(struct part *const *)b;
	int c = NK__CMP(x->info.pid, y->info.pid);
	return c ? c : cmp_start(a, b);
}

/* qsort of extra sample indices by (pid, time, index), through a file-scope view (qsort has no context) */
struct exkey {
	uint32_t pid;
	uint64_t time;
	size_t i;
};

static int cmp_exkey(const void *a, const void *b)
{
	const struct exkey *x = a, *y = b;
	int c;
	if ((c = NK__CMP(x->pid, y->pid)) || (c = NK__CMP(x->time, y->time)))
		return c;
	return NK__CMP(x->i, y->i);
}

/*
 * Give each usable part its extra samples: those of its pid from its start
 * on, until the next part of the same pid starts (an exec'ed image); those
 * older than every part of the pid go to the first.  Fills *order (indices
 * into extra, valid ones only) and each part's [ex_lo, ex_hi).
 */
static int assign_extra(struct part **byp, size_t np, const struct nk__nkp_sample *extra, const uint32_t *extra_pid,
			size_t n_extra, size_t **order_out, struct text *warn)
{
	struct exkey *k = NULL;
	size_t *order = NULL, n = 0, invalid = 0, orphan = 0;
	char why[200], first_why[200] = "";

	if (!n_extra)
		return 0;
	k = malloc(n_extra * sizeof *k);
	order = malloc(n_extra * sizeof *order);
	if (!k || !order) {
		free(k);
		free(order);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < n_extra; i++) {
		if (nk__nkp_check_sample(&extra[i], why, sizeof why)) {
			if (!invalid++)
				memcpy(first_why, why, sizeof first_why);
			continue;
		}
		k[n++] = (struct exkey){ extra_pid[i], extra[i].time_ns, i };
	}
	qsort(k, n, sizeof *k, cmp_exkey);
	qsort(byp, np, sizeof *byp, cmp_pid_start);
	size_t e = 0, m = 0;
	for (size_t p = 0; p < np;) {
		uint32_t pid = byp[p]->info.pid;
		size_t q = p;
		while (q < np && byp[q]->info.pid == pid)
			q++;
		/* extras of smaller pids have no part */
		while (e < n && k[e].pid < pid)
			e++, orphan++;
		for (size_t r = p; r < q; r++) {
			byp[r]->ex_lo = m;
			while (e < n && k[e].pid == pid && (r + 1 == q || k[e].time < byp[r + 1]->info.start_ns))
				order[m++] = k[e++].i;
			byp[r]->ex_hi = m;
		}
		p = q;
	}
	orphan += n - e;
	if (invalid)
		say(warn, "%zu extra samples dropped as invalid (the first: %s)", invalid, first_why);
	if (orphan)
		say(warn, "%zu extra samples dropped: no part of their process", orphan);
	free(k);
	*order_out = order;
	return 0;
}

/* ---------------------------------------------------------------- the merge */

static char *fix_run(const char *run_json, size_t procs, uint64_t samples)
{
	json_t *j = run_json ? json_loads(run_json, JSON_REJECT_DUPLICATES, NULL) : json_object();
	char *s = NULL;
	if (j && json_is_object(j) && !json_object_set_new(j, "processes", json_integer((json_int_t)procs)) &&
	    !json_object_set_new(j, "samples", json_integer((json_int_t)samples)))
		s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

static int json_object_text(const char *t)
{
	json_t *j = json_loads(t, JSON_REJECT_DUPLICATES, NULL);
	int ok = j && json_is_object(j);
	json_decref(j);
	return ok;
}

int nk__nkp_merge(const char *const *parts, size_t n_parts, const char *run_json, const char *machine_json,
		  const struct nk__nkp_sample *extra, const uint32_t *extra_pid, size_t n_extra,
		  const char *out_path, char **warn, nk_error *err)
{
	struct part *pts = NULL, **byp = NULL;
	struct text w = { 0 };
	struct out o = { 0 };
	struct emit_ctx c = { 0 };
	size_t *order = NULL, np = 0, io_fail = 0;
	const char *stage = "";
	char *run = NULL;
	int rc = 0, e = 0;

	if ((n_parts && !parts) || (n_extra && (!extra || !extra_pid)) || !out_path || !*out_path)
		return nk__error(err, NK_EINVAL, "nk__nkp_merge: NULL argument");
	for (size_t i = 0; i < n_parts; i++)
		if (!parts[i])
			return nk__error(err, NK_EINVAL, "nk__nkp_merge: NULL part path");
	if (run_json && !json_object_text(run_json))
		return nk__error(err, NK_EINVAL, "nk__nkp_merge: the RUN text is not a JSON object");
	if (machine_json && !json_object_text(machine_json))
		return nk__error(err, NK_EINVAL, "nk__nkp_merge: the MACHINE text is not a JSON object");

	pts = calloc(n_parts ? n_parts : 1, sizeof *pts);
	byp = calloc(n_parts ? n_parts : 1, sizeof *byp);
	c.phase_bits = calloc(65536 / 64, sizeof *c.phase_bits);
	if (!pts || !byp || !c.phase_bits)
		goto oom;

	for (size_t i = 0; i < n_parts; i++) {
		struct part *pt = &pts[i];
		pt->path = parts[i];
		pt->index = i;
		rc = nk__os_read_whole(parts[i], NK__NKP_MAX_FILE, &pt->buf, &pt->len, &e);
		if (rc == NK_ENOMEM)
			goto oom;
		if (rc) {
			say(&w, "%s: skipped: %s", parts[i],
			    rc == NK_ENOENT ? "no such file" : e == EFBIG ? "larger than 1 GiB" : strerror(e));
			io_fail++;
			continue;
		}
		rc = scan(pt, &w);
		if (rc < 0)
			goto oom;
		if (rc == 0)
			byp[np++] = pt;
		else {
			free(pt->buf);
			pt->buf = NULL;
		}
	}
	rc = 0;
	if (!np && n_parts) {
		rc = io_fail == n_parts ? NK_EIO : NK_EPARSE;
		nk__error(err, rc, "%s: no usable part file (%zu given)%s%s", out_path, n_parts, w.n ? ": " : "",
			  w.n ? w.s : "");
		goto out;
	}
	if (assign_extra(byp, np, extra, extra_pid, n_extra, &order, &w))
		goto oom;
	c.extra = extra;
	c.order = order;
	/* the sample buffer: as large as one output record can be, and no larger */
	size_t chunk = 1;
	for (size_t i = 0; i < np; i++) {
		size_t need = byp[i]->max_rec > byp[i]->ex_hi - byp[i]->ex_lo ? byp[i]->max_rec
									      : byp[i]->ex_hi - byp[i]->ex_lo;
		if (need > chunk)
			chunk = need;
	}
	if (chunk > NK__NKP_SAMPLES_PER_RECORD)
		chunk = NK__NKP_SAMPLES_PER_RECORD;
	if (!(c.chunk = malloc(chunk * sizeof *c.chunk)))
		goto oom;
	if (np)
		qsort(byp, np, sizeof *byp, cmp_start);
	uint64_t total = 0;
	for (size_t i = 0; i < np; i++)
		total += byp[i]->samples + (byp[i]->ex_hi - byp[i]->ex_lo);
	/* "processes" counts pids: an exec'd image writes a second part under the same pid. */
	size_t npids = 0;
	for (size_t i = 0; i < np; i++) {
		size_t j = 0;
		while (j < i && byp[j]->info.pid != byp[i]->info.pid)
			j++;
		npids += j == i;
	}
	if (!(run = fix_run(run_json, npids, total)))
		goto oom;

	struct nk__nkp_file_header fh;
	memcpy(fh.magic, NK__NKP_MAGIC, sizeof fh.magic);
	fh.version = NK__NKP_VERSION;
	fh.header_size = sizeof fh;
	rc = put(&o, &fh, sizeof fh);
	if (!rc)
		rc = put_record(&o, NK__NKP_RUN, run, strlen(run));
	if (!rc && machine_json) {
		rc = put_record(&o, NK__NKP_MACHINE, machine_json, strlen(machine_json));
	} else if (!rc) { /* the runtime's MACHINE (checked by scan), when the caller has none */
		for (size_t i = 0; i < np; i++)
			if (byp[i]->machine_len) {
				rc = put_record(&o, NK__NKP_MACHINE, byp[i]->buf + byp[i]->machine_off,
						byp[i]->machine_len);
				break;
			}
	}
	for (size_t i = 0; i < np && !rc; i++)
		rc = emit_part(&o, &c, byp[i], &w);
	if (!rc) {
		struct nk__nkp_trailer t = { o.records, np, c.samples };
		rc = put_record(&o, NK__NKP_TRAILER, &t, sizeof t);
	}
	if (rc == NK_ENOMEM)
		goto oom;
	if (rc) {
		nk__error(err, NK_EIO, "%s: the merged profile would exceed 1 GiB, the most numakit reads; "
				       "lower the sampling rate or the sample budget", out_path);
		goto out;
	}

#ifndef NDEBUG
	{ /* the merged output must parse: a merger bug shows here, not in a user's report */
		struct nk__nkp_profile *chk = NULL;
		nk_error cerr = { 0 };
		if (nk__nkp_parse(o.b, o.n, &chk, &cerr)) {
			rc = nk__error(err, NK_EPARSE, "%s: internal error: the merged profile does not parse: %s",
				       out_path, cerr.message);
			goto out;
		}
		nk__nkp_free(chk);
	}
#endif

	rc = nk__os_write_atomic(out_path, o.b, o.n, &stage, &e);
	if (rc == NK_ENOMEM)
		goto oom;
	if (rc) {
		nk__error(err, rc, "%s: %s: %s", out_path,
			  !strcmp(stage, "create")  ? "cannot create a temporary file beside it"
			  : !strcmp(stage, "write") ? "cannot write"
						    : "cannot replace",
			  strerror(e));
		goto out;
	}
	goto out;
oom:
	rc = nk__error(err, NK_ENOMEM, "%s: out of memory", out_path);
out:
	if (!rc && warn)
		*warn = w.s, w.s = NULL;
	else if (warn)
		*warn = NULL;
	free(w.s);
	free(run);
	free(o.b);
	free(order);
	free(c.phase_bits);
	free(c.chunk);
	free(c.sites.v);
	for (size_t i = 0; pts && i < n_parts; i++)
		free(pts[i].buf);
	free(pts);
	free(byp);
	return rc;
}
