/* SPDX-License-Identifier: BSD-3-Clause
 * Machine files: an nk_machine saved as versioned JSON (docs/formats.md) so
 * that a machine measured once can be studied, shared and replayed offline.
 *
 * The reader is strict.  A machine file is as much an input to placement
 * decisions as the live machine, so a hand-edited file that contradicts
 * itself (a node whose "cpus" disagree with the cpu table, an allowed set
 * naming a cpu that does not exist) is rejected with a message naming the
 * file and the JSON path, never silently repaired.  Unknown members are
 * ignored so that later minor additions stay readable (version 1).
 *
 * Output is deterministic: members in a fixed order, doubles with 17
 * significant digits, so load(to_json(m)) serialises to the same text apart
 * from "source", which says the machine now comes from a file.
 *
 * File I/O is done here with stdio rather than through nk__os_read_file():
 * that helper is built for sysfs values (it stops at a NUL byte, which would
 * hide corruption, and refuses files above 8 MiB, which a 4096-node distance
 * matrix exceeds).
 */
#include "machine/machine_impl.h"
#include "os/os.h"
#include "util/error.h"
#include "util/json_read.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MF_FORMAT "numakit-machine"
#define MF_VERSION 1
#define MF_MAX_DIST 1000 /* nk__machine_finalize's range */

static const char *const source_names[] = { "live", "fsroot", "xml", "synthetic", "file" };
static const char *const cache_type_names[] = { "unified", "data", "instruction" };
static const char *const matrix_names[NK_MATRIX_KIND_COUNT] = { "latency_ns", "bandwidth_mbs", "numa_factor" };

/* ================================================================== writer */

/* Collects allocation failures so that building the tree reads straight. */
struct mf_out {
	int bad;
};

static json_t *oset(struct mf_out *o, json_t *obj, const char *key, json_t *v)
{
	if (!obj || !v || json_object_set_new(obj, key, v))
		o->bad = 1;
	return v;
}

static void apush(struct mf_out *o, json_t *arr, json_t *v)
{
	if (!arr || !v || json_array_append_new(arr, v))
		o->bad = 1;
}

static json_t *jlist(const int *v, size_t n)
{
	char *s = nk__format_list_alloc(v, n);
	json_t *j = s ? json_string(s) : NULL;
	free(s);
	return j;
}

/* uint64 values are written as JSON integers, which jansson holds in a long long. */
static json_t *ju64(struct mf_out *o, uint64_t v)
{
	if (v > (uint64_t)INT64_MAX) {
		o->bad = 1;
		return NULL;
	}
	return json_integer((json_int_t)v);
}

static json_t *thp_json(int mode)
{
	switch (mode) {
	case NK_THP_NEVER: return json_string("never");
	case NK_THP_MADVISE: return json_string("madvise");
	case NK_THP_ALWAYS: return json_string("always");
	case NK_THP_DEFER: return json_string("defer");
	case NK_THP_DEFER_MADVISE: return json_string("defer+madvise");
	default: return json_null();
	}
}

static json_t *build_json(const struct nk_machine *m)
{
	struct mf_out o = { 0 };
	const int n = m->nnodes;
	json_t *root = json_object(), *a, *obj;

	oset(&o, root, "format", json_string(MF_FORMAT));
	oset(&o, root, "version", json_integer(MF_VERSION));
	oset(&o, root, "numakit_version", json_string(NK_VERSION_STRING));
	obj = oset(&o, root, "source", json_object());
	oset(&o, obj, "kind",
	     json_string(m->source >= 0 && m->source <= NK_SOURCE_FILE ? source_names[m->source] : "live"));
	oset(&o, obj, "detail", json_string(m->source_detail));
	if (m->nnotes) { /* absent when there are none: files of machines found the usual way are unchanged */
		a = oset(&o, root, "notes", json_array());
		for (int i = 0; i < m->nnotes; i++)
			apush(&o, a, json_string(m->notes[i]));
	}

	oset(&o, root, "page_size", ju64(&o, m->page_size));
	a = oset(&o, root, "huge_page_sizes", json_array());
	for (size_t i = 0; i < m->huge_kb.n; i++)
		apush(&o, a, json_integer((json_int_t)m->huge_kb.v[i] * 1024));

	obj = oset(&o, root, "kernel", json_object());
	oset(&o, obj, "numa_balancing",
	     m->kernel.numa_balancing >= 0 ? json_integer(m->kernel.numa_balancing) : json_null());
	oset(&o, obj, "thp_enabled", thp_json(m->kernel.thp_enabled));
	oset(&o, obj, "thp_defrag", thp_json(m->kernel.thp_defrag));
	oset(&o, obj, "weighted_interleave",
	     m->kernel.weighted_interleave >= 0 ? json_boolean(m->kernel.weighted_interleave) : json_null());

	a = oset(&o, root, "nodes", json_array());
	for (int i = 0; i < n; i++) {
		const struct nk__node *nd = &m->nodes[i];
		json_t *jn = json_object();
		oset(&o, jn, "id", json_integer(nd->id));
		oset(&o, jn, "cpus", jlist(nd->cpus.v, nd->cpus.n));
		oset(&o, jn, "mem_total", ju64(&o, nd->mem_total));
		oset(&o, jn, "mem_free", ju64(&o, nd->mem_free));
		oset(&o, jn, "has_cpus", json_boolean(nd->flags & NK_NODE_HAS_CPUS));
		oset(&o, jn, "has_memory", json_boolean(nd->flags & NK_NODE_HAS_MEMORY));
		oset(&o, jn, "mem_allowed", json_boolean(nd->flags & NK_NODE_MEM_ALLOWED));
		oset(&o, jn, "cpus_allowed", json_boolean(nd->flags & NK_NODE_CPUS_ALLOWED));
		oset(&o, jn, "wi_weight", nd->wi_weight > 0 ? json_integer(nd->wi_weight) : json_null());
		apush(&o, a, jn);
	}

	a = oset(&o, root, "distances", json_array());
	for (int i = 0; i < n; i++) {
		json_t *row = json_array();
		for (int j = 0; j < n; j++)
			apush(&o, row, json_integer(m->dist[i * n + j]));
		apush(&o, a, row);
	}

	a = oset(&o, root, "cpus", json_array());
	for (int i = 0; i < m->ncpus; i++) {
		const struct nk__cpu *c = &m->cpus[i];
		json_t *jc = json_object();
		oset(&o, jc, "id", json_integer(c->id));
		oset(&o, jc, "node", json_integer(c->node));
		oset(&o, jc, "core", json_integer(c->core));
		oset(&o, jc, "package", json_integer(c->package));
		apush(&o, a, jc);
	}

	a = oset(&o, root, "caches", json_array());
	for (int i = 0; i < m->ncaches; i++) {
		const struct nk__cache *c = &m->caches[i];
		json_t *jc = json_object();
		oset(&o, jc, "level", json_integer(c->level));
		oset(&o, jc, "type", json_string(cache_type_names[c->type]));
		oset(&o, jc, "size", ju64(&o, c->size));
		oset(&o, jc, "line_size", json_integer(c->line_size));
		oset(&o, jc, "ways", json_integer(c->ways));
		oset(&o, jc, "cpus", jlist(c->cpus.v, c->cpus.n));
		apush(&o, a, jc);
	}

	obj = oset(&o, root, "allowed", json_object());
	oset(&o, obj, "cpus", jlist(m->allowed_cpus.v, m->allowed_cpus.n));
	oset(&o, obj, "nodes", jlist(m->allowed_nodes.v, m->allowed_nodes.n));

	obj = oset(&o, root, "measured", json_object());
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++) {
		const double *mx = m->matrix[k];
		if (!mx) {
			oset(&o, obj, matrix_names[k], json_null());
			continue;
		}
		a = oset(&o, obj, matrix_names[k], json_array());
		for (int i = 0; i < n; i++) {
			json_t *row = json_array();
			for (int j = 0; j < n; j++) {
				double v = mx[i * n + j];
				apush(&o, row, isfinite(v) ? json_real(v) : json_null());
			}
			apush(&o, a, row);
		}
	}

	if (o.bad) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int nk_machine_to_json(const nk_machine *m, unsigned flags, char **out)
{
	json_t *root;
	char *s;

	if (!m || !out || (flags & ~NK_JSON_ALLFLAGS))
		return NK_EINVAL;
	root = build_json(m);
	if (!root)
		return NK_ENOMEM;
	/* 17 significant digits: every double reads back bit for bit. */
	s = json_dumps(root, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) |
				     ((flags & NK_JSON_COMPACT) ? JSON_COMPACT : JSON_INDENT(2)));
	json_decref(root);
	if (!s)
		return NK_ENOMEM;
	*out = s; /* json_dumps allocates with malloc: the caller's free() matches */
	return 0;
}

int nk_machine_save(const nk_machine *m, const char *path, nk_error *err)
{
	char *text = NULL;
	const char *stage;
	int rc, e = 0;

	if (!m || !path || !*path)
		return nk__error(err, NK_EINVAL, "nk_machine_save: NULL argument");
	rc = nk_machine_to_json(m, 0, &text);
	if (rc)
		return nk__error(err, rc, "%s: %s", path, nk_strerror(rc));
	size_t len = strlen(text);
	text[len] = '\n'; /* json_dumps' terminator becomes the final newline */
	/* Atomic: a reader never sees half a file, a failed save keeps the old one. */
	rc = nk__os_write_atomic(path, text, len + 1, &stage, &e);
	free(text);
	if (rc == NK_ENOMEM)
		return nk__error(err, rc, "%s: out of memory", path);
	if (rc && !strcmp(stage, "create"))
		return nk__error(err, rc, "%s: cannot create a temporary file beside it: %s", path, strerror(e));
	if (rc && !strcmp(stage, "write"))
		return nk__error(err, rc, "%s: cannot write: %s", path, strerror(e));
	if (rc)
		return nk__error(err, rc, "%s: cannot replace: %s", path, strerror(e));
	return 0;
}

/* ================================================================== reader */

struct mf_in {
	struct nk__json_in j; /* file name for messages, "<buffer>" for buffers; the caller's error */
	int n;            /* nodes in the file */
	int *file_ids;    /* node ids in file order: the order of every matrix */
	int *node_ids;    /* the same, sorted, for lookups */
	int *cpu_ids;     /* cpu ids, sorted, for lookups */
	int ncpus;
};

/* Path buffers: "nodes[4095].mem_total" and the like fit with room to spare. */
#define PATH_MAX_LEN 128

/* Integer member or element in [lo, hi]. */
static int get_int(struct mf_in *in, const json_t *v, const char *where, long long lo, long long hi, long long *out)
{
	if (!v)
		return nk__json_fail(&in->j, NK_EPARSE, where, "missing");
	if (!json_is_integer(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected an integer, found %s", nk__json_type_name(v));
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return nk__json_fail(&in->j, NK_EPARSE, where, "%lld is out of range %lld..%lld", (long long)x, lo, hi);
	*out = x;
	return 0;
}

/* Optional boolean: -1 when absent. */
static int get_bool(struct mf_in *in, const json_t *v, const char *where, int *out)
{
	if (!v) {
		*out = -1;
		return 0;
	}
	if (!json_is_boolean(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected true or false, found %s", nk__json_type_name(v));
	*out = json_is_true(v);
	return 0;
}

static int get_list(struct mf_in *in, const json_t *v, const char *where, nk__ilist *out)
{
	char why[200];

	if (!v)
		return nk__json_fail(&in->j, NK_EPARSE, where, "missing");
	if (!json_is_string(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected a list string such as \"0-3,8\", found %s",
			       nk__json_type_name(v));
	if (nk__parse_list(json_string_value(v), out, why, sizeof why))
		return nk__json_fail(&in->j, NK_EPARSE, where, "bad list \"%.40s\": %s", json_string_value(v), why);
	return 0;
}

/* A member that must be an object (or absent when !required); NULL member means absent. */
static int get_object(struct mf_in *in, const json_t *v, const char *where, int required)
{
	if (!v)
		return required ? nk__json_fail(&in->j, NK_EPARSE, where, "missing") : 0;
	if (!json_is_object(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected an object, found %s", nk__json_type_name(v));
	return 0;
}

static int get_array(struct mf_in *in, const json_t *v, const char *where, int required)
{
	if (!v)
		return required ? nk__json_fail(&in->j, NK_EPARSE, where, "missing") : 0;
	if (!json_is_array(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected an array, found %s", nk__json_type_name(v));
	return 0;
}

static int get_thp(struct mf_in *in, const json_t *v, const char *where, int *out)
{
	const char *s;

	*out = NK_THP_UNKNOWN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return nk__json_fail(&in->j, NK_EPARSE, where, "expected a string or null, found %s", nk__json_type_name(v));
	s = json_string_value(v);
	if (!strcmp(s, "always"))
		*out = NK_THP_ALWAYS;
	else if (!strcmp(s, "defer"))
		*out = NK_THP_DEFER;
	else if (!strcmp(s, "defer+madvise"))
		*out = NK_THP_DEFER_MADVISE;
	else if (!strcmp(s, "madvise"))
		*out = NK_THP_MADVISE;
	else if (!strcmp(s, "never"))
		*out = NK_THP_NEVER;
	else
		return nk__json_fail(&in->j, NK_EPARSE, where, "\"%.20s\" is not always, madvise, never, defer or defer+madvise", s);
	return 0;
}

static int read_header(struct mf_in *in, const json_t *root, struct nk_machine *m)
{
	const json_t *v;
	long long x;
	int rc;

	if (!json_is_object(root))
		return nk__json_fail(&in->j, NK_EPARSE, NULL, "expected a JSON object, found %s", nk__json_type_name(root));
	v = json_object_get(root, "format");
	if (!v)
		return nk__json_fail(&in->j, NK_EPARSE, "format", "missing (not a numakit machine file)");
	if (!json_is_string(v) || strcmp(json_string_value(v), MF_FORMAT))
		return nk__json_fail(&in->j, NK_EPARSE, "format", "expected \"" MF_FORMAT "\"");
	v = json_object_get(root, "version");
	if (!v)
		return nk__json_fail(&in->j, NK_EPARSE, "version", "missing");
	if (!json_is_integer(v))
		return nk__json_fail(&in->j, NK_EPARSE, "version", "expected an integer, found %s", nk__json_type_name(v));
	if (json_integer_value(v) != MF_VERSION)
		return nk__json_fail(&in->j, NK_EVERSION, "version", "version %lld is not supported (this library reads %d)",
			       (long long)json_integer_value(v), MF_VERSION);

	v = json_object_get(root, "numakit_version");
	if (v && !json_is_string(v))
		return nk__json_fail(&in->j, NK_EPARSE, "numakit_version", "expected a string, found %s", nk__json_type_name(v));

	/* The original source is checked but not kept: the machine now comes from this file. */
	v = json_object_get(root, "source");
	if ((rc = get_object(in, v, "source", 0)))
		return rc;
	if (v) {
		const json_t *k = json_object_get(v, "kind"), *d = json_object_get(v, "detail");
		int known = 0;
		if (k && json_is_string(k))
			for (size_t i = 0; i < sizeof source_names / sizeof *source_names; i++)
				known |= !strcmp(json_string_value(k), source_names[i]);
		if (k && !known)
			return nk__json_fail(&in->j, NK_EPARSE, "source.kind", "expected live, fsroot, xml, synthetic or file");
		if (d && !json_is_string(d))
			return nk__json_fail(&in->j, NK_EPARSE, "source.detail", "expected a string, found %s", nk__json_type_name(d));
	}

	/* Unlike the source, the notes are kept: they say how the facts below were found. */
	v = json_object_get(root, "notes");
	if ((rc = get_array(in, v, "notes", 0)))
		return rc;
	for (size_t i = 0; v && i < json_array_size(v); i++) {
		const json_t *t = json_array_get(v, i);
		char where[PATH_MAX_LEN];
		snprintf(where, sizeof where, "notes[%zu]", i);
		if (!json_is_string(t))
			return nk__json_fail(&in->j, NK_EPARSE, where, "expected a string, found %s", nk__json_type_name(t));
		if (strpbrk(json_string_value(t), "\n\r"))
			return nk__json_fail(&in->j, NK_EPARSE, where, "a note is one line");
		if (nk__machine_add_note(m, "%s", json_string_value(t)))
			return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	}

	v = json_object_get(root, "page_size");
	if (v) {
		if ((rc = get_int(in, v, "page_size", 1, 1LL << 40, &x)))
			return rc;
		if (x & (x - 1))
			return nk__json_fail(&in->j, NK_EPARSE, "page_size", "%lld is not a power of two", x);
		m->page_size = (uint64_t)x;
	}

	v = json_object_get(root, "huge_page_sizes");
	if ((rc = get_array(in, v, "huge_page_sizes", 0)))
		return rc;
	for (size_t i = 0; v && i < json_array_size(v); i++) {
		char where[PATH_MAX_LEN];
		snprintf(where, sizeof where, "huge_page_sizes[%zu]", i);
		if ((rc = get_int(in, json_array_get(v, i), where, 1024, (long long)INT_MAX * 1024, &x)))
			return rc;
		if (x % 1024)
			return nk__json_fail(&in->j, NK_EPARSE, where, "%lld is not a multiple of 1024", x);
		if (nk__ilist_push(&m->huge_kb, (int)(x / 1024)))
			return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	}

	v = json_object_get(root, "kernel");
	if ((rc = get_object(in, v, "kernel", 0)))
		return rc;
	if (v) {
		const json_t *nb = json_object_get(v, "numa_balancing");
		const json_t *wi = json_object_get(v, "weighted_interleave");
		if (nb && !json_is_null(nb)) {
			if ((rc = get_int(in, nb, "kernel.numa_balancing", 0, 3, &x)))
				return rc;
			m->kernel.numa_balancing = (int)x;
		}
		if ((rc = get_thp(in, json_object_get(v, "thp_enabled"), "kernel.thp_enabled", &m->kernel.thp_enabled)) ||
		    (rc = get_thp(in, json_object_get(v, "thp_defrag"), "kernel.thp_defrag", &m->kernel.thp_defrag)))
			return rc;
		if (wi && !json_is_null(wi) &&
		    (rc = get_bool(in, wi, "kernel.weighted_interleave", &m->kernel.weighted_interleave)))
			return rc;
	}
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int has_id(const int *sorted, int n, int id)
{
	return n > 0 && bsearch(&id, sorted, (size_t)n, sizeof *sorted, cmp_int) != NULL;
}

/* A sorted copy of @p ids, NULL on ENOMEM. */
static int *sorted_copy(const int *ids, int n)
{
	int *s = malloc((size_t)(n ? n : 1) * sizeof *s);
	if (!s)
		return NULL;
	memcpy(s, ids, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_int);
	return s;
}

/* The first id that appears twice in @p ids (n entries), or -1. */
static int duplicate_check(struct mf_in *in, const int *ids, const int *sorted, int n, const char *what,
			   const char *field)
{
	int dup = -1;

	for (int i = 1; i < n && dup < 0; i++)
		if (sorted[i] == sorted[i - 1])
			dup = sorted[i];
	if (dup < 0)
		return 0;
	for (int i = 0, seen = 0; i < n; i++)
		if (ids[i] == dup && seen++) {
			char where[PATH_MAX_LEN];
			snprintf(where, sizeof where, "%s[%d].%s", what, i, field);
			return nk__json_fail(&in->j, NK_EPARSE, where, "%d is listed twice", dup);
		}
	return nk__json_fail(&in->j, NK_EPARSE, what, "%d is listed twice", dup);
}

/* What the file claims about each node, checked against what finalize derives. */
struct mf_claims {
	json_t *cpus; /* node "cpus" strings, by file index */
	int *has_cpus, *mem_allowed, *cpus_allowed; /* -1 absent */
};

static int read_nodes(struct mf_in *in, const json_t *root, struct nk_machine *m, struct mf_claims *cl)
{
	const json_t *nodes = json_object_get(root, "nodes");
	int rc;

	if ((rc = get_array(in, nodes, "nodes", 1)))
		return rc;
	size_t n = json_array_size(nodes);
	if (n < 1 || n > NK__MAX_NODES)
		return nk__json_fail(&in->j, NK_EPARSE, "nodes", "expected 1..%d nodes, found %zu", NK__MAX_NODES, n);
	in->n = (int)n;
	in->file_ids = malloc(n * sizeof *in->file_ids);
	cl->has_cpus = malloc(n * sizeof *cl->has_cpus);
	cl->mem_allowed = malloc(n * sizeof *cl->mem_allowed);
	cl->cpus_allowed = malloc(n * sizeof *cl->cpus_allowed);
	cl->cpus = json_array();
	if (!in->file_ids || !cl->has_cpus || !cl->mem_allowed || !cl->cpus_allowed || !cl->cpus)
		return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");

	for (size_t i = 0; i < n; i++) {
		const json_t *jn = json_array_get(nodes, i);
		char where[PATH_MAX_LEN];
		struct nk__node *nd;
		long long id, total, freeb = -1, w;
		int hm = -1;

#define AT(field) (snprintf(where, sizeof where, "nodes[%zu]%s", i, field), where)
		if ((rc = get_object(in, jn, AT(""), 1)))
			return rc;
		if ((rc = get_int(in, json_object_get(jn, "id"), AT(".id"), 0, NK__MAX_ID, &id)) ||
		    (rc = get_int(in, json_object_get(jn, "mem_total"), AT(".mem_total"), 0, INT64_MAX, &total)))
			return rc;
		if (json_object_get(jn, "mem_free") &&
		    (rc = get_int(in, json_object_get(jn, "mem_free"), AT(".mem_free"), 0, total, &freeb)))
			return rc;
		if ((rc = get_bool(in, json_object_get(jn, "has_cpus"), AT(".has_cpus"), &cl->has_cpus[i])) ||
		    (rc = get_bool(in, json_object_get(jn, "has_memory"), AT(".has_memory"), &hm)) ||
		    (rc = get_bool(in, json_object_get(jn, "mem_allowed"), AT(".mem_allowed"), &cl->mem_allowed[i])) ||
		    (rc = get_bool(in, json_object_get(jn, "cpus_allowed"), AT(".cpus_allowed"),
				   &cl->cpus_allowed[i])))
			return rc;
		const json_t *jc = json_object_get(jn, "cpus");
		if (jc && !json_is_string(jc))
			return nk__json_fail(&in->j, NK_EPARSE, AT(".cpus"), "expected a list string such as \"0-3,8\", found %s",
				       nk__json_type_name(jc));
		if (json_array_append(cl->cpus, jc ? (json_t *)jc : json_null()))
			return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
		const json_t *jw = json_object_get(jn, "wi_weight");
		w = 0;
		if (jw && !json_is_null(jw) && (rc = get_int(in, jw, AT(".wi_weight"), 1, 255, &w)))
			return rc;
#undef AT
		rc = nk__machine_add_node(m, (int)id, &nd);
		if (rc)
			return nk__json_fail(&in->j, rc, NULL, "out of memory");
		nd->mem_total = (uint64_t)total;
		nd->mem_free = freeb < 0 ? (uint64_t)total : (uint64_t)freeb;
		nd->has_memory_hint = hm;
		nd->wi_weight = (int)w;
		in->file_ids[i] = (int)id;
	}
	in->node_ids = sorted_copy(in->file_ids, in->n);
	if (!in->node_ids)
		return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	return duplicate_check(in, in->file_ids, in->node_ids, in->n, "nodes", "id");
}

/* An n x n matrix in file node order; each element checked by @p elem. */
static int read_rows(struct mf_in *in, const json_t *v, const char *name)
{
	int rc;

	if ((rc = get_array(in, v, name, 1)))
		return rc;
	if (json_array_size(v) != (size_t)in->n)
		return nk__json_fail(&in->j, NK_EPARSE, name, "expected %d rows (one per node), found %zu", in->n,
			       json_array_size(v));
	for (int i = 0; i < in->n; i++) {
		const json_t *row = json_array_get(v, (size_t)i);
		char where[PATH_MAX_LEN];
		snprintf(where, sizeof where, "%s[%d]", name, i);
		if ((rc = get_array(in, row, where, 1)))
			return rc;
		if (json_array_size(row) != (size_t)in->n)
			return nk__json_fail(&in->j, NK_EPARSE, where, "expected %d values, found %zu", in->n,
				       json_array_size(row));
	}
	return 0;
}

static int read_distances(struct mf_in *in, const json_t *root, struct nk_machine *m)
{
	const json_t *v = json_object_get(root, "distances");
	const int n = in->n;
	int rc;

	if ((rc = read_rows(in, v, "distances")))
		return rc;
	/* finalize permutes this matrix from file order to id order */
	m->dist = malloc((size_t)n * (size_t)n * sizeof *m->dist);
	if (!m->dist)
		return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < n; i++) {
		const json_t *row = json_array_get(v, (size_t)i);
		for (int j = 0; j < n; j++) {
			char where[PATH_MAX_LEN];
			long long x;
			snprintf(where, sizeof where, "distances[%d][%d]", i, j);
			if ((rc = get_int(in, json_array_get(row, (size_t)j), where, 1, MF_MAX_DIST, &x)))
				return rc;
			m->dist[i * n + j] = (int)x;
		}
	}
	return 0;
}

static int read_cpus(struct mf_in *in, const json_t *root, struct nk_machine *m)
{
	const json_t *cpus = json_object_get(root, "cpus");
	int *ids = NULL, rc;

	if ((rc = get_array(in, cpus, "cpus", 1)))
		return rc;
	size_t n = json_array_size(cpus);
	if (!n)
		return nk__json_fail(&in->j, NK_EPARSE, "cpus", "a machine needs at least one cpu");
	ids = malloc(n * sizeof *ids);
	if (!ids)
		return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *jc = json_array_get(cpus, i);
		char where[PATH_MAX_LEN];
		struct nk__cpu *c;
		long long id, node, core, package = -1;

#define AT(field) (snprintf(where, sizeof where, "cpus[%zu]%s", i, field), where)
		if ((rc = get_object(in, jc, AT(""), 1)) ||
		    (rc = get_int(in, json_object_get(jc, "id"), AT(".id"), 0, NK__MAX_ID, &id)) ||
		    (rc = get_int(in, json_object_get(jc, "node"), AT(".node"), -1, NK__MAX_ID, &node)) ||
		    (rc = get_int(in, json_object_get(jc, "core"), AT(".core"), 0, INT_MAX, &core)))
			goto out;
		if (json_object_get(jc, "package") &&
		    (rc = get_int(in, json_object_get(jc, "package"), AT(".package"), -1, INT_MAX, &package)))
			goto out;
		/* -1: the cpu is online but its node is offline (real machines do that) */
		if (node != -1 && !has_id(in->node_ids, in->n, (int)node)) {
			rc = nk__json_fail(&in->j, NK_EPARSE, AT(".node"), "no node %lld in \"nodes\"", node);
			goto out;
		}
#undef AT
		rc = nk__machine_add_cpu(m, (int)id, &c);
		if (rc) {
			rc = nk__json_fail(&in->j, rc, NULL, "out of memory");
			goto out;
		}
		c->node = (int)node;
		c->core_key = core;
		c->package = (int)package;
		ids[i] = (int)id;
	}
	in->ncpus = (int)n;
	in->cpu_ids = sorted_copy(ids, (int)n);
	if (!in->cpu_ids) {
		rc = nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
		goto out;
	}
	rc = duplicate_check(in, ids, in->cpu_ids, (int)n, "cpus", "id");
out:
	free(ids);
	return rc;
}

/* Every cpu a list names must be in "cpus". */
static int check_cpus_exist(struct mf_in *in, const nk__ilist *l, const char *where)
{
	for (size_t i = 0; i < l->n; i++)
		if (!has_id(in->cpu_ids, in->ncpus, l->v[i]))
			return nk__json_fail(&in->j, NK_EPARSE, where, "no cpu %d in \"cpus\"", l->v[i]);
	return 0;
}

static int read_caches(struct mf_in *in, const json_t *root, struct nk_machine *m)
{
	const json_t *caches = json_object_get(root, "caches");
	int rc;

	if ((rc = get_array(in, caches, "caches", 0)) || !caches)
		return rc;
	for (size_t i = 0; i < json_array_size(caches); i++) {
		const json_t *jc = json_array_get(caches, i), *jt;
		char where[PATH_MAX_LEN];
		struct nk__cache *c;
		long long level, size, line, ways;
		int type = -1;

#define AT(field) (snprintf(where, sizeof where, "caches[%zu]%s", i, field), where)
		if ((rc = get_object(in, jc, AT(""), 1)) ||
		    (rc = get_int(in, json_object_get(jc, "level"), AT(".level"), 1, 9, &level)) ||
		    (rc = get_int(in, json_object_get(jc, "size"), AT(".size"), 0, INT64_MAX, &size)) ||
		    (rc = get_int(in, json_object_get(jc, "line_size"), AT(".line_size"), 0, INT_MAX, &line)) ||
		    (rc = get_int(in, json_object_get(jc, "ways"), AT(".ways"), 0, INT_MAX, &ways)))
			return rc;
		jt = json_object_get(jc, "type");
		for (int t = 0; jt && json_is_string(jt) && t < 3; t++)
			if (!strcmp(json_string_value(jt), cache_type_names[t]))
				type = t;
		if (type < 0)
			return nk__json_fail(&in->j, NK_EPARSE, AT(".type"), "expected \"unified\", \"data\" or \"instruction\"");
		if ((rc = nk__machine_add_cache(m, &c)))
			return nk__json_fail(&in->j, rc, NULL, "out of memory");
		c->level = (int)level;
		c->type = type;
		c->size = (uint64_t)size;
		c->line_size = (int)line;
		c->ways = (int)ways;
		if ((rc = get_list(in, json_object_get(jc, "cpus"), AT(".cpus"), &c->cpus)))
			return rc;
		if (!c->cpus.n)
			return nk__json_fail(&in->j, NK_EPARSE, where, "a cache needs at least one cpu");
		if ((rc = check_cpus_exist(in, &c->cpus, where)))
			return rc;
#undef AT
	}
	return 0;
}

static int read_allowed(struct mf_in *in, const json_t *root, struct nk_machine *m)
{
	const json_t *v = json_object_get(root, "allowed"), *c, *nd;
	int rc;

	if ((rc = get_object(in, v, "allowed", 0)) || !v)
		return rc;
	c = json_object_get(v, "cpus");
	nd = json_object_get(v, "nodes");
	if (c && ((rc = get_list(in, c, "allowed.cpus", &m->allowed_cpus)) ||
		  (rc = check_cpus_exist(in, &m->allowed_cpus, "allowed.cpus"))))
		return rc;
	if (nd) {
		if ((rc = get_list(in, nd, "allowed.nodes", &m->allowed_nodes)))
			return rc;
		for (size_t i = 0; i < m->allowed_nodes.n; i++)
			if (!has_id(in->node_ids, in->n, m->allowed_nodes.v[i]))
				return nk__json_fail(&in->j, NK_EPARSE, "allowed.nodes", "no node %d in \"nodes\"",
					       m->allowed_nodes.v[i]);
	}
	return 0;
}

/* Measured matrices, read in file order into @p file_order[k] (NULL = not measured). */
static int read_measured(struct mf_in *in, const json_t *root, double **file_order)
{
	const json_t *v = json_object_get(root, "measured");
	const int n = in->n;
	int rc;

	if ((rc = get_object(in, v, "measured", 0)) || !v)
		return rc;
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++) {
		const json_t *mx = json_object_get(v, matrix_names[k]);
		char name[48];
		if (!mx || json_is_null(mx))
			continue;
		snprintf(name, sizeof name, "measured.%s", matrix_names[k]);
		if ((rc = read_rows(in, mx, name)))
			return rc;
		file_order[k] = malloc((size_t)n * (size_t)n * sizeof *file_order[k]);
		if (!file_order[k])
			return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
		for (int i = 0; i < n; i++) {
			const json_t *row = json_array_get(mx, (size_t)i);
			for (int j = 0; j < n; j++) {
				const json_t *e = json_array_get(row, (size_t)j);
				char where[PATH_MAX_LEN];
				double x;
				if (json_is_null(e)) {
					file_order[k][i * n + j] = NAN;
					continue;
				}
				snprintf(where, sizeof where, "%s[%d][%d]", name, i, j);
				if (!json_is_number(e))
					return nk__json_fail(&in->j, NK_EPARSE, where, "expected a number or null, found %s",
						       nk__json_type_name(e));
				x = json_number_value(e);
				if (!isfinite(x) || x <= 0)
					return nk__json_fail(&in->j, NK_EPARSE, where, "%g is not a positive measurement", x);
				file_order[k][i * n + j] = x;
			}
		}
	}
	return 0;
}

/* After finalize: what the file said about each node must be what its cpus and allowed sets imply. */
static int check_claims(struct mf_in *in, struct nk_machine *m, const struct mf_claims *cl, const int *core_keys)
{
	int rc = 0;

	for (int i = 0; i < in->n; i++) {
		const struct nk__node *nd = &m->nodes[nk__node_idx(m, in->file_ids[i])];
		const json_t *jc = json_array_get(cl->cpus, (size_t)i);
		char where[PATH_MAX_LEN];
		nk__ilist l = { 0 };

		if (json_is_string(jc)) {
			snprintf(where, sizeof where, "nodes[%d].cpus", i);
			if ((rc = get_list(in, jc, where, &l)))
				return rc;
			int same = l.n == nd->cpus.n && (!l.n || !memcmp(l.v, nd->cpus.v, l.n * sizeof *l.v));
			nk__ilist_free(&l);
			if (!same) {
				char *have = nk__format_list_alloc(nd->cpus.v, nd->cpus.n);
				rc = nk__json_fail(&in->j, NK_EPARSE, where, "\"%.40s\" differs from the cpus of node %d in \"cpus\" (\"%.40s\")",
					     json_string_value(jc), nd->id, have ? have : "?");
				free(have);
				return rc;
			}
		}
		struct {
			const char *field;
			int claim;
			unsigned flag;
		} checks[] = {
			{ "has_cpus", cl->has_cpus[i], NK_NODE_HAS_CPUS },
			{ "mem_allowed", cl->mem_allowed[i], NK_NODE_MEM_ALLOWED },
			{ "cpus_allowed", cl->cpus_allowed[i], NK_NODE_CPUS_ALLOWED },
		};
		for (size_t k = 0; k < sizeof checks / sizeof *checks; k++)
			if (checks[k].claim >= 0 && checks[k].claim != !!(nd->flags & checks[k].flag)) {
				snprintf(where, sizeof where, "nodes[%d].%s", i, checks[k].field);
				return nk__json_fail(&in->j, NK_EPARSE, where, "is %s, but the %s say otherwise",
					       checks[k].claim ? "true" : "false",
					       k == 0 ? "cpus" : "allowed sets");
			}
	}

	/* finalize merges cpus into a core only when node and package agree as
	 * well; a core number spanning two nodes or packages would be split
	 * silently, so count: distinct core numbers must equal cores made. */
	int distinct = 0;
	for (int i = 0; i < m->ncpus; i++)
		distinct += !i || core_keys[i] != core_keys[i - 1];
	if (distinct != m->ncores)
		return nk__json_fail(&in->j, NK_EPARSE, "cpus", "a core number is shared by cpus of different nodes or packages");
	return 0;
}

static int load_json(struct mf_in *in, const json_t *root, nk_machine **out)
{
	struct nk_machine *m = nk__machine_new(NK_SOURCE_FILE, in->j.name);
	struct mf_claims cl = { 0 };
	double *measured[NK_MATRIX_KIND_COUNT] = { 0 };
	int *core_keys = NULL;
	int rc;

	if (!m)
		return nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
	if ((rc = read_header(in, root, m)) || (rc = read_nodes(in, root, m, &cl)) ||
	    (rc = read_distances(in, root, m)) || (rc = read_cpus(in, root, m)) || (rc = read_caches(in, root, m)) ||
	    (rc = read_allowed(in, root, m)) || (rc = read_measured(in, root, measured)))
		goto out;
	rc = nk__machine_finalize(m, in->j.name, in->j.err);
	if (rc)
		goto out;

	/* Matrices were read in file order; finalize sorted the nodes by id. */
	const int n = in->n;
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++) {
		if (!measured[k])
			continue;
		m->matrix[k] = malloc((size_t)n * (size_t)n * sizeof *m->matrix[k]);
		if (!m->matrix[k]) {
			rc = nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
			goto out;
		}
		for (int i = 0; i < n; i++) {
			int a = nk__node_idx(m, in->file_ids[i]);
			for (int j = 0; j < n; j++)
				m->matrix[k][a * n + nk__node_idx(m, in->file_ids[j])] = measured[k][i * n + j];
		}
	}

	core_keys = malloc((size_t)m->ncpus * sizeof *core_keys);
	if (!core_keys) {
		rc = nk__json_fail(&in->j, NK_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (int i = 0; i < m->ncpus; i++)
		core_keys[i] = (int)m->cpus[i].core_key;
	qsort(core_keys, (size_t)m->ncpus, sizeof *core_keys, cmp_int);
	if ((rc = check_claims(in, m, &cl, core_keys)))
		goto out;

	*out = m;
	m = NULL;
out:
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++)
		free(measured[k]);
	free(core_keys);
	free(cl.has_cpus);
	free(cl.mem_allowed);
	free(cl.cpus_allowed);
	json_decref(cl.cpus);
	free(in->file_ids);
	free(in->node_ids);
	free(in->cpu_ids);
	in->file_ids = in->node_ids = in->cpu_ids = NULL;
	nk_machine_free(m);
	return rc;
}

static int load_named(const char *buf, size_t len, const char *name, nk_machine **out, nk_error *err)
{
	struct mf_in in = { .j = { .name = name, .err = err } };
	json_error_t jerr;
	json_t *root;
	int rc;

	/* Duplicate keys are rejected: which of two "version" members would count? */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return nk__error(err, NK_EPARSE, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
	rc = load_json(&in, root, out);
	json_decref(root);
	return rc;
}

int nk_machine_load_buffer(const char *buf, size_t len, nk_machine **out, nk_error *err)
{
	if ((!buf && len) || !out)
		return nk__error(err, NK_EINVAL, "nk_machine_load_buffer: NULL argument");
	return load_named(buf ? buf : "", len, "<buffer>", out, err);
}

/* A 4096-node machine with three measured matrices is ~1 GiB of JSON at
 * worst; anything larger is not a machine file. */
#define MF_MAX_BYTES (1024ul << 20)

int nk_machine_load_file(const char *path, nk_machine **out, nk_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc, e = 0;

	if (!path || !out)
		return nk__error(err, NK_EINVAL, "nk_machine_load_file: NULL argument");
	rc = nk__os_read_whole(path, MF_MAX_BYTES, &buf, &len, &e);
	if (rc == NK_ENOENT)
		return nk__error(err, rc, "%s: no such file", path);
	if (rc == NK_ENOMEM)
		return nk__error(err, rc, "%s: out of memory", path);
	if (rc)
		return nk__error(err, rc, "%s: %s", path, e == EFBIG ? "larger than 1 GiB, not a machine file" : strerror(e));
	rc = load_named(buf, len, path, out, err);
	free(buf);
	return rc;
}
