/*
 * Placement plans (nk_advice, docs/plan.md): the JSON form, validation
 * without a machine (nk_advice_parse) and against one (nk_advice_check),
 * and editing (nk_advice_set).
 *
 * A plan is a file a person reads and edits, so the reader is strict: an
 * unknown member anywhere is an error (a typo such as "polcy" would
 * otherwise silently drop the policy), and every message names the entry
 * (index and key) and the member.  Output is deterministic: members in a
 * fixed order, two-space indentation, doubles with 10 significant digits,
 * so format(parse(format(a))) == format(a).  nk_advice_format() parses what
 * it wrote before returning it: a plan that would not read back (an empty
 * key, overlapping page ranges) is refused with NK_EINVAL there and then,
 * not when the runtime loads it.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/aplan.h"
#include "policy/policy_impl.h"
#include "profile/analysis.h"
#include "util/list.h"

#define AP_MAX_FILE (64u << 20)       /* a plan file larger than this is refused (NK_EIO) */
#define AP_MAX_THREADS 4096           /* pin.threads, and the side of pin.sharing */
#define AP_MIN_PAGE 4096ULL           /* page_size bounds (powers of two) */
#define AP_MAX_PAGE (1ULL << 34)
#define AP_MAX_PAGES (1ULL << 52)     /* first + count of a range: 2^52 pages is beyond any address space */
#define AP_REAL_DIGITS 10             /* significant digits of doubles in the output */

static const char *const when_names[] = {
	[NK__WHEN_ALLOC] = "alloc",
	[NK__WHEN_FIRST_PARALLEL] = "first-parallel",
	[NK__WHEN_PHASE] = "phase",
};

static const char *const pin_strategies[] = { "none", "compact", "scatter", "sharing", "cpus" };

const char *nk__aplan_when_name(int when)
{
	return when >= 0 && when <= NK__WHEN_PHASE ? when_names[when] : NULL;
}

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

static int evidence_is_unknown(const struct nk__aplan_evidence *ev)
{
	return !ev->size && !ev->samples && !ev->threads && ev->remote_fraction == 0 && ev->read_fraction < 0 &&
	       ev->regularity < 0 && ev->shared_pages == 0 && ev->dominant_node < 0 && ev->dominant_share == 0 &&
	       !ev->diagnosis && ev->ci_lo < 0 && ev->samples_effective < 0;
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
	free(e->ev.diagnosis);
	memset(e, 0, sizeof(*e));
}

static int entry_copy(struct nk__aplan_entry *d, const struct nk__aplan_entry *s)
{
	*d = *s;
	d->variable = d->key = d->policy = d->phase = d->reason = d->ev.diagnosis = NULL;
	d->ranges = NULL;
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

int nk__aplan_skip(nk_advice *a, const char *key, const char *variable, const char *reason)
{
	if (!a || !key)
		return NK_EINVAL;
	struct nk__aplan_skip *s = realloc(a->left_alone, (a->n_left_alone + 1) * sizeof(*s));
	if (!s)
		return NK_ENOMEM;
	a->left_alone = s;
	struct nk__aplan_skip *n = &s[a->n_left_alone];
	if (dup_into(&n->key, key) || dup_into(&n->variable, variable) || dup_into(&n->reason, reason)) {
		free(n->key);
		free(n->variable);
		free(n->reason);
		return NK_ENOMEM;
	}
	a->n_left_alone++;
	return 0;
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
	pin_clear(&a->pin);
	for (size_t i = 0; i < a->n_entries; i++)
		nk__aplan_entry_clear(&a->entries[i]);
	free(a->entries);
	for (size_t i = 0; i < a->n_warnings; i++)
		free(a->warnings[i]);
	free(a->warnings);
	for (size_t i = 0; i < a->n_left_alone; i++) {
		free(a->left_alone[i].key);
		free(a->left_alone[i].variable);
		free(a->left_alone[i].reason);
	}
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

/* ================================================================== reader */

struct ap_in {
	const char *name; /* file name, or "plan" for a buffer */
	nk_error *err;
};

static int ap_fail(struct ap_in *in, int code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One message shape: NAME: WHERE: problem. */
static int ap_fail(struct ap_in *in, int code, const char *where, const char *fmt, ...)
{
	char why[360];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (where && *where)
		return nk__error(in->err, code, "%s: %s: %s", in->name, where, why);
	return nk__error(in->err, code, "%s: %s", in->name, why);
}

static const char *type_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Reject members of @p obj not in @p known (NULL-terminated). */
static int check_fields(struct ap_in *in, const json_t *obj, const char *where, const char *const *known)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		int ok = 0;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = !strcmp(k, known[i]);
		if (!ok) {
			char list[240];
			size_t n = 0;
			list[0] = 0;
			for (size_t i = 0; known[i] && n < sizeof list; i++)
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", known[i]);
			return ap_fail(in, NK_EPARSE, where, "unknown field \"%.60s\" (expected %s)", k, list);
		}
	}
	return 0;
}

/* Optional string member (absent or null: *out NULL); copied. */
static int get_str(struct ap_in *in, const json_t *obj, const char *field, const char *where, char **out)
{
	const json_t *v = json_object_get(obj, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return ap_fail(in, NK_EPARSE, where, "%s: expected a string, found %s", field, type_name(v));
	if (!(*out = strdup(json_string_value(v))))
		return ap_fail(in, NK_ENOMEM, where, "out of memory");
	return 0;
}

/* Optional non-negative integer member (absent or null: *out = dflt). */
static int get_uint(struct ap_in *in, const json_t *obj, const char *field, const char *where, uint64_t max,
		    uint64_t dflt, uint64_t *out)
{
	const json_t *v = json_object_get(obj, field);

	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return ap_fail(in, NK_EPARSE, where, "%s: expected an integer, found %s", field, type_name(v));
	json_int_t x = json_integer_value(v);
	if (x < 0 || (uint64_t)x > max)
		return ap_fail(in, NK_EPARSE, where, "%s: %lld is out of range 0..%llu", field, (long long)x,
			       (unsigned long long)max);
	*out = (uint64_t)x;
	return 0;
}

/* Optional number in [lo, hi] (absent or null: *out = dflt). */
static int get_num(struct ap_in *in, const json_t *obj, const char *field, const char *where, double lo, double hi,
		   double dflt, double *out)
{
	const json_t *v = json_object_get(obj, field);

	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return ap_fail(in, NK_EPARSE, where, "%s: expected a number, found %s", field, type_name(v));
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return ap_fail(in, NK_EPARSE, where, "%s: %g is out of range %g..%g", field, x, lo, hi);
	*out = x;
	return 0;
}

/* "entries[3] (key "heap:...")" */
static void entry_where(char *buf, size_t cap, size_t i, const char *key)
{
	if (key)
		snprintf(buf, cap, "entries[%zu] (key \"%.100s%s\")", i, key, strlen(key) > 100 ? "..." : "");
	else
		snprintf(buf, cap, "entries[%zu]", i);
}

static int parse_evidence(struct ap_in *in, const json_t *v, const char *where, struct nk__aplan_evidence *ev)
{
	static const char *const fields[] = { "size",         "samples",        "threads",       "remote_fraction",
					      "read_fraction", "regularity",    "shared_pages",  "dominant_node",
					      "dominant_share", "diagnosis",    "remote_ci",     "samples_effective",
					      NULL };
	char w[224]; /* where (< 200) + ": evidence" */
	uint64_t dn;
	int rc;

	nk__aplan_evidence_unknown(ev);
	if (!v || json_is_null(v))
		return 0;
	snprintf(w, sizeof w, "%s: evidence", where);
	if (!json_is_object(v))
		return ap_fail(in, NK_EPARSE, w, "expected an object, found %s", type_name(v));
	if ((rc = check_fields(in, v, w, fields)) || (rc = get_uint(in, v, "size", w, UINT64_MAX, 0, &ev->size)) ||
	    (rc = get_uint(in, v, "samples", w, UINT64_MAX, 0, &ev->samples)) ||
	    (rc = get_uint(in, v, "threads", w, UINT64_MAX, 0, &ev->threads)) ||
	    (rc = get_num(in, v, "remote_fraction", w, 0, 1, 0, &ev->remote_fraction)) ||
	    (rc = get_num(in, v, "read_fraction", w, 0, 1, -1, &ev->read_fraction)) ||
	    (rc = get_num(in, v, "regularity", w, 0, 1, -1, &ev->regularity)) ||
	    (rc = get_num(in, v, "shared_pages", w, 0, 1, 0, &ev->shared_pages)) ||
	    (rc = get_uint(in, v, "dominant_node", w, NK__MAX_ID, UINT64_MAX, &dn)) ||
	    (rc = get_num(in, v, "dominant_share", w, 0, 1, 0, &ev->dominant_share)) ||
	    (rc = get_str(in, v, "diagnosis", w, &ev->diagnosis)) ||
	    (rc = get_num(in, v, "samples_effective", w, 0, 1e300, -1, &ev->samples_effective)))
		return rc;
	const json_t *ci = json_object_get(v, "remote_ci");
	if (ci && !json_is_null(ci)) {
		if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
		    !json_is_number(json_array_get(ci, 1)))
			return ap_fail(in, NK_EPARSE, w, "remote_ci: expected [low, high], found %s", type_name(ci));
		double lo = json_number_value(json_array_get(ci, 0)), hi = json_number_value(json_array_get(ci, 1));
		if (!(lo >= 0 && lo <= hi && hi <= 1))
			return ap_fail(in, NK_EPARSE, w, "remote_ci: [%g, %g] is not an interval within 0..1", lo, hi);
		ev->ci_lo = lo;
		ev->ci_hi = hi;
	}
	ev->dominant_node = dn == UINT64_MAX ? -1 : (int)dn;
	return 0;
}

static int parse_ranges(struct ap_in *in, const json_t *v, const char *where, struct nk__aplan_entry *e)
{
	size_t n = json_array_size(v);

	if (!n)
		return ap_fail(in, NK_EPARSE, where, "pages: empty (policy \"pages\" needs at least one range)");
	e->ranges = calloc(n, sizeof(*e->ranges));
	if (!e->ranges)
		return ap_fail(in, NK_ENOMEM, where, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(v, i);
		json_int_t x[3];
		if (!json_is_array(r) || json_array_size(r) != 3)
			return ap_fail(in, NK_EPARSE, where, "pages[%zu]: expected [first, count, node], found %s", i,
				       json_is_array(r) ? "another array" : type_name(r));
		for (int k = 0; k < 3; k++) {
			const json_t *c = json_array_get(r, (size_t)k);
			if (!json_is_integer(c))
				return ap_fail(in, NK_EPARSE, where, "pages[%zu][%d]: expected an integer, found %s", i,
					       k, type_name(c));
			x[k] = json_integer_value(c);
		}
		if (x[0] < 0 || (uint64_t)x[0] >= AP_MAX_PAGES)
			return ap_fail(in, NK_EPARSE, where, "pages[%zu]: first page %lld is out of range", i,
				       (long long)x[0]);
		if (x[1] <= 0 || (uint64_t)x[1] > AP_MAX_PAGES - (uint64_t)x[0])
			return ap_fail(in, NK_EPARSE, where, "pages[%zu]: count %lld must be > 0 (and in range)", i,
				       (long long)x[1]);
		if (x[2] < 0 || x[2] > NK__MAX_ID)
			return ap_fail(in, NK_EPARSE, where, "pages[%zu]: node %lld is out of range 0..%d", i,
				       (long long)x[2], NK__MAX_ID);
		if (i && (uint64_t)x[0] < e->ranges[i - 1].first + e->ranges[i - 1].count)
			return ap_fail(in, NK_EPARSE, where,
				       "pages[%zu]: starts at page %lld, inside or before pages[%zu] (%llu+%llu): "
				       "ranges must be sorted and disjoint",
				       i, (long long)x[0], i - 1, (unsigned long long)e->ranges[i - 1].first,
				       (unsigned long long)e->ranges[i - 1].count);
		e->ranges[i] = (struct nk__aplan_range){ (uint64_t)x[0], (uint64_t)x[1], (int)x[2] };
		e->n_ranges = i + 1;
	}
	return 0;
}

static int parse_entry(struct ap_in *in, const json_t *v, size_t idx, struct nk__aplan_entry *e)
{
	static const char *const fields[] = { "variable", "key",   "policy", "when",     "phase",
					      "page_size", "pages", "reason", "evidence", NULL };
	char where[200];
	const json_t *k, *w, *pg;
	int rc;

	memset(e, 0, sizeof(*e));
	nk__aplan_evidence_unknown(&e->ev);
	entry_where(where, sizeof where, idx, NULL);
	if (!json_is_object(v))
		return ap_fail(in, NK_EPARSE, where, "expected an object, found %s", type_name(v));
	k = json_object_get(v, "key");
	if (!k)
		return ap_fail(in, NK_EPARSE, where, "key: missing");
	if (!json_is_string(k))
		return ap_fail(in, NK_EPARSE, where, "key: expected a string, found %s", type_name(k));
	if (!nk__aplan_key_valid(json_string_value(k)))
		return ap_fail(in, NK_EPARSE, where, "key: \"%.100s\" does not start with static:, heap: or name:",
			       json_string_value(k));
	if (!(e->key = strdup(json_string_value(k))))
		return ap_fail(in, NK_ENOMEM, where, "out of memory");
	entry_where(where, sizeof where, idx, e->key);
	if ((rc = check_fields(in, v, where, fields)) || (rc = get_str(in, v, "variable", where, &e->variable)) ||
	    (rc = get_str(in, v, "reason", where, &e->reason)))
		return rc;

	/* policy */
	const json_t *p = json_object_get(v, "policy");
	if (!p)
		return ap_fail(in, NK_EPARSE, where, "policy: missing");
	if (!json_is_string(p))
		return ap_fail(in, NK_EPARSE, where, "policy: expected a string, found %s", type_name(p));
	const char *ptext = json_string_value(p);
	if (strcmp(ptext, "none") && strcmp(ptext, "pages")) {
		nk_policy *pol = NULL;
		nk_error perr = { 0, "" };
		rc = nk_policy_parse(ptext, &pol, &perr);
		if (rc)
			return ap_fail(in, rc == NK_ENOMEM ? NK_ENOMEM : NK_EPARSE, where, "policy: %s", perr.message);
		nk_policy_free(pol);
	}
	if (!(e->policy = strdup(ptext)))
		return ap_fail(in, NK_ENOMEM, where, "out of memory");

	/* when, phase */
	e->when = NK__WHEN_ALLOC;
	w = json_object_get(v, "when");
	if (w) {
		int found = -1;
		if (!json_is_string(w))
			return ap_fail(in, NK_EPARSE, where, "when: expected a string, found %s", type_name(w));
		for (int i = 0; i <= NK__WHEN_PHASE; i++)
			if (!strcmp(json_string_value(w), when_names[i]))
				found = i;
		if (found < 0)
			return ap_fail(in, NK_EPARSE, where,
				       "when: \"%.40s\" is not alloc, first-parallel or phase", json_string_value(w));
		e->when = found;
	}
	const json_t *ph = json_object_get(v, "phase");
	if (e->when == NK__WHEN_PHASE) {
		if (!ph)
			return ap_fail(in, NK_EPARSE, where, "phase: missing (\"when\": \"phase\" needs the phase name)");
		if (!json_is_string(ph) || !json_string_value(ph)[0])
			return ap_fail(in, NK_EPARSE, where, "phase: expected a non-empty string, found %s",
				       json_is_string(ph) ? "\"\"" : type_name(ph));
		if (!(e->phase = strdup(json_string_value(ph))))
			return ap_fail(in, NK_ENOMEM, where, "out of memory");
	} else if (ph) {
		return ap_fail(in, NK_EPARSE, where, "phase: only allowed with \"when\": \"phase\"");
	}

	/* pages */
	pg = json_object_get(v, "pages");
	const json_t *ps = json_object_get(v, "page_size");
	if (!strcmp(e->policy, "pages")) {
		if (!ps)
			return ap_fail(in, NK_EPARSE, where, "page_size: missing (policy \"pages\" needs it)");
		if ((rc = get_uint(in, v, "page_size", where, AP_MAX_PAGE, 0, &e->page_size)))
			return rc;
		if (e->page_size < AP_MIN_PAGE || (e->page_size & (e->page_size - 1)))
			return ap_fail(in, NK_EPARSE, where, "page_size: %llu is not a power of two >= %llu",
				       (unsigned long long)e->page_size, AP_MIN_PAGE);
		if (!pg)
			return ap_fail(in, NK_EPARSE, where, "pages: missing (policy \"pages\" needs page ranges)");
		if (!json_is_array(pg))
			return ap_fail(in, NK_EPARSE, where, "pages: expected an array, found %s", type_name(pg));
		if ((rc = parse_ranges(in, pg, where, e)))
			return rc;
	} else if (pg || ps) {
		return ap_fail(in, NK_EPARSE, where, "%s: only allowed with \"policy\": \"pages\"",
			       pg ? "pages" : "page_size");
	}
	return parse_evidence(in, json_object_get(v, "evidence"), where, &e->ev);
}

static int parse_pin(struct ap_in *in, const json_t *v, struct nk__aplan_pin *pin)
{
	static const char *const fields[] = { "strategy", "threads", "cpus", "sharing", "reason", NULL };
	const json_t *s, *c, *sh;
	uint64_t t;
	int rc, known = 0;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return ap_fail(in, NK_EPARSE, "pin", "expected an object, found %s", type_name(v));
	if ((rc = check_fields(in, v, "pin", fields)))
		return rc;
	s = json_object_get(v, "strategy");
	if (!s)
		return ap_fail(in, NK_EPARSE, "pin", "strategy: missing");
	if (!json_is_string(s))
		return ap_fail(in, NK_EPARSE, "pin", "strategy: expected a string, found %s", type_name(s));
	for (size_t i = 0; i < sizeof pin_strategies / sizeof *pin_strategies; i++)
		known |= !strcmp(json_string_value(s), pin_strategies[i]);
	if (!known)
		return ap_fail(in, NK_EPARSE, "pin", "strategy: \"%.40s\" is not none, compact, scatter, sharing or cpus",
			       json_string_value(s));
	if (!(pin->strategy = strdup(json_string_value(s))))
		return ap_fail(in, NK_ENOMEM, "pin", "out of memory");
	if ((rc = get_uint(in, v, "threads", "pin", AP_MAX_THREADS, 0, &t)) ||
	    (rc = get_str(in, v, "reason", "pin", &pin->reason)))
		return rc;
	pin->threads = (int)t;
	c = json_object_get(v, "cpus");
	sh = json_object_get(v, "sharing");
	if (!strcmp(pin->strategy, "cpus")) {
		if (!c)
			return ap_fail(in, NK_EPARSE, "pin", "cpus: missing (strategy \"cpus\" needs the cpu of each thread)");
		if (!json_is_array(c) || !json_array_size(c))
			return ap_fail(in, NK_EPARSE, "pin", "cpus: expected a non-empty array, found %s",
				       json_is_array(c) ? "an empty one" : type_name(c));
		size_t n = json_array_size(c);
		if (n > AP_MAX_THREADS)
			return ap_fail(in, NK_EPARSE, "pin", "cpus: %zu threads, more than %d", n, AP_MAX_THREADS);
		if (pin->threads && (size_t)pin->threads != n)
			return ap_fail(in, NK_EPARSE, "pin", "cpus: %zu cpus for %d threads (one per thread)", n,
				       pin->threads);
		if (!(pin->cpus = malloc(n * sizeof(*pin->cpus))))
			return ap_fail(in, NK_ENOMEM, "pin", "out of memory");
		for (size_t i = 0; i < n; i++) {
			const json_t *x = json_array_get(c, i);
			if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > NK__MAX_ID)
				return ap_fail(in, NK_EPARSE, "pin", "cpus[%zu]: expected a cpu id 0..%d, found %s", i,
					       NK__MAX_ID, json_is_integer(x) ? "one out of range" : type_name(x));
			pin->cpus[i] = (int)json_integer_value(x);
		}
		pin->n_cpus = n;
		pin->threads = (int)n;
	} else if (c) {
		return ap_fail(in, NK_EPARSE, "pin", "cpus: only allowed with \"strategy\": \"cpus\"");
	}
	if (!strcmp(pin->strategy, "sharing")) {
		if (!sh)
			return ap_fail(in, NK_EPARSE, "pin", "sharing: missing (strategy \"sharing\" needs the matrix)");
		if (!json_is_array(sh) || !json_array_size(sh))
			return ap_fail(in, NK_EPARSE, "pin", "sharing: expected a non-empty array of rows, found %s",
				       json_is_array(sh) ? "an empty one" : type_name(sh));
		size_t n = json_array_size(sh);
		if (n > AP_MAX_THREADS)
			return ap_fail(in, NK_EPARSE, "pin", "sharing: %zu threads, more than %d", n, AP_MAX_THREADS);
		if (pin->threads && (size_t)pin->threads != n)
			return ap_fail(in, NK_EPARSE, "pin", "sharing: %zu rows for %d threads", n, pin->threads);
		if (!(pin->sharing = calloc(n * n, sizeof(*pin->sharing))))
			return ap_fail(in, NK_ENOMEM, "pin", "out of memory");
		for (size_t i = 0; i < n; i++) {
			const json_t *row = json_array_get(sh, i);
			if (!json_is_array(row) || json_array_size(row) != n)
				return ap_fail(in, NK_EPARSE, "pin", "sharing[%zu]: expected an array of %zu numbers", i,
					       n);
			for (size_t j = 0; j < n; j++) {
				const json_t *x = json_array_get(row, j);
				double d = json_is_number(x) ? json_number_value(x) : -1;
				if (!(d >= 0) || !isfinite(d))
					return ap_fail(in, NK_EPARSE, "pin", "sharing[%zu][%zu]: expected a number >= 0",
						       i, j);
				pin->sharing[i * n + j] = d;
			}
		}
		pin->threads = (int)n;
	} else if (sh) {
		return ap_fail(in, NK_EPARSE, "pin", "sharing: only allowed with \"strategy\": \"sharing\"");
	}
	return 0;
}

static int parse_machine(struct ap_in *in, const json_t *v, nk_advice *a)
{
	static const char *const fields[] = { "nodes", "numa_factor", NULL };
	const json_t *n;
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return ap_fail(in, NK_EPARSE, "machine", "expected an object, found %s", type_name(v));
	if ((rc = check_fields(in, v, "machine", fields)) ||
	    (rc = get_num(in, v, "numa_factor", "machine", 0, 1e6, 0, &a->numa_factor)))
		return rc;
	n = json_object_get(v, "nodes");
	if (!n || json_is_null(n))
		return 0;
	if (!json_is_array(n))
		return ap_fail(in, NK_EPARSE, "machine", "nodes: expected an array, found %s", type_name(n));
	size_t cnt = json_array_size(n);
	if (cnt > NK__MAX_ID + 1)
		return ap_fail(in, NK_EPARSE, "machine", "nodes: too many (%zu)", cnt);
	if (cnt && !(a->node_ids = malloc(cnt * sizeof(int))))
		return ap_fail(in, NK_ENOMEM, "machine", "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		const json_t *x = json_array_get(n, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > NK__MAX_ID)
			return ap_fail(in, NK_EPARSE, "machine", "nodes[%zu]: expected a node id 0..%d", i, NK__MAX_ID);
		a->node_ids[i] = (int)json_integer_value(x);
		if (i && a->node_ids[i] <= a->node_ids[i - 1])
			return ap_fail(in, NK_EPARSE, "machine", "nodes[%zu]: ids must be increasing", i);
		a->n_nodes = (int)i + 1;
	}
	return 0;
}

static int parse_left_alone(struct ap_in *in, const json_t *v, nk_advice *a)
{
	static const char *const fields[] = { "key", "variable", "reason", NULL };
	char where[64];
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return ap_fail(in, NK_EPARSE, "left_alone", "expected an array, found %s", type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->left_alone = calloc(n, sizeof(*a->left_alone))))
		return ap_fail(in, NK_ENOMEM, "left_alone", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(v, i);
		struct nk__aplan_skip *k = &a->left_alone[i];
		snprintf(where, sizeof where, "left_alone[%zu]", i);
		if (!json_is_object(s))
			return ap_fail(in, NK_EPARSE, where, "expected an object, found %s", type_name(s));
		a->n_left_alone = i + 1; /* owned from here on, for the free on failure */
		if ((rc = check_fields(in, s, where, fields)) || (rc = get_str(in, s, "key", where, &k->key)) ||
		    (rc = get_str(in, s, "variable", where, &k->variable)) ||
		    (rc = get_str(in, s, "reason", where, &k->reason)))
			return rc;
		if (!k->key || !k->key[0])
			return ap_fail(in, NK_EPARSE, where, "key: missing");
	}
	return 0;
}

static int parse_warnings(struct ap_in *in, const json_t *v, nk_advice *a)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return ap_fail(in, NK_EPARSE, "warnings", "expected an array of strings, found %s", type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->warnings = calloc(n, sizeof(char *))))
		return ap_fail(in, NK_ENOMEM, "warnings", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(v, i);
		if (!json_is_string(s))
			return ap_fail(in, NK_EPARSE, "warnings", "[%zu]: expected a string, found %s", i, type_name(s));
		if (!(a->warnings[i] = strdup(json_string_value(s))))
			return ap_fail(in, NK_ENOMEM, "warnings", "out of memory");
		a->n_warnings = i + 1;
	}
	return 0;
}

/* Entries sorted by (key, when, phase, index): duplicates end up adjacent.  The sort keys are
 * copied into the array so the comparator needs no context (qsort has none, and a file-level
 * pointer would break the library's thread safety). */
struct dup_key {
	const char *key, *phase;
	int when;
	size_t idx;
};

static int cmp_dup(const void *x, const void *y)
{
	const struct dup_key *a = x, *b = y;
	int c = strcmp(a->key, b->key);
	if (!c)
		c = (a->when > b->when) - (a->when < b->when);
	if (!c)
		c = strcmp(a->phase ? a->phase : "", b->phase ? b->phase : "");
	if (!c)
		c = (a->idx > b->idx) - (a->idx < b->idx);
	return c;
}

static int check_duplicates(struct ap_in *in, const nk_advice *a)
{
	size_t n = a->n_entries, bad = SIZE_MAX, first = 0;

	if (n < 2)
		return 0;
	struct dup_key *k = malloc(n * sizeof(*k));
	if (!k)
		return ap_fail(in, NK_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < n; i++)
		k[i] = (struct dup_key){ a->entries[i].key, a->entries[i].phase, a->entries[i].when, i };
	qsort(k, n, sizeof(*k), cmp_dup);
	for (size_t i = 1; i < n; i++) {
		const struct dup_key *p = &k[i - 1], *q = &k[i];
		if (!strcmp(p->key, q->key) && p->when == q->when &&
		    !strcmp(p->phase ? p->phase : "", q->phase ? q->phase : "") && q->idx < bad) {
			bad = q->idx; /* report the smallest index that repeats an earlier entry */
			first = p->idx;
		}
	}
	free(k);
	if (bad == SIZE_MAX)
		return 0;
	char where[200];
	const struct nk__aplan_entry *e = &a->entries[bad];
	entry_where(where, sizeof where, bad, e->key);
	if (e->when == NK__WHEN_PHASE)
		return ap_fail(in, NK_EPARSE, where,
			       "duplicates entries[%zu]: same key, \"when\": \"phase\" and phase \"%.60s\"", first,
			       e->phase);
	return ap_fail(in, NK_EPARSE, where, "duplicates entries[%zu]: same key and \"when\": \"%s\"", first,
		       when_names[e->when]);
}

static int parse_root(struct ap_in *in, const json_t *root, nk_advice *a)
{
	static const char *const fields[] = { "format", "version", "program", "profile",  "runs", "machine",
					      "pin",    "entries", "left_alone", "warnings", NULL };
	const json_t *v;
	int rc;

	if (!json_is_object(root))
		return ap_fail(in, NK_EPARSE, NULL, "expected a JSON object, found %s", type_name(root));
	v = json_object_get(root, "format");
	if (!v)
		return ap_fail(in, NK_EPARSE, "format", "missing (not a numakit plan)");
	if (!json_is_string(v) || strcmp(json_string_value(v), NK__APLAN_FORMAT))
		return ap_fail(in, NK_EPARSE, "format", "expected \"" NK__APLAN_FORMAT "\"");
	v = json_object_get(root, "version");
	if (!v)
		return ap_fail(in, NK_EPARSE, "version", "missing");
	if (!json_is_integer(v))
		return ap_fail(in, NK_EPARSE, "version", "expected an integer, found %s", type_name(v));
	if (json_integer_value(v) != NK__APLAN_VERSION)
		return ap_fail(in, NK_EVERSION, "version", "version %lld is not supported (this library reads %d)",
			       (long long)json_integer_value(v), NK__APLAN_VERSION);
	a->version = NK__APLAN_VERSION;
	if ((rc = check_fields(in, root, NULL, fields)) || (rc = get_str(in, root, "program", NULL, &a->program)) ||
	    (rc = get_str(in, root, "profile", NULL, &a->profile)) ||
	    (rc = get_uint(in, root, "runs", NULL, 1u << 20, 0, &a->runs)) ||
	    (rc = parse_machine(in, json_object_get(root, "machine"), a)) ||
	    (rc = parse_pin(in, json_object_get(root, "pin"), &a->pin)))
		return rc;
	v = json_object_get(root, "entries");
	if (!v)
		return ap_fail(in, NK_EPARSE, "entries", "missing");
	if (!json_is_array(v))
		return ap_fail(in, NK_EPARSE, "entries", "expected an array, found %s", type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->entries = calloc(n, sizeof(*a->entries))))
		return ap_fail(in, NK_ENOMEM, "entries", "out of memory");
	for (size_t i = 0; i < n; i++) {
		a->n_entries = i + 1; /* owned from here on, for the free on failure */
		if ((rc = parse_entry(in, json_array_get(v, i), i, &a->entries[i])))
			return rc;
	}
	if ((rc = check_duplicates(in, a)) || (rc = parse_left_alone(in, json_object_get(root, "left_alone"), a)) ||
	    (rc = parse_warnings(in, json_object_get(root, "warnings"), a)))
		return rc;
	return 0;
}

static int parse_named(const char *name, const char *json, size_t len, nk_advice **out, nk_error *err)
{
	struct ap_in in = { name, err };
	json_error_t je;
	nk_advice *a = NULL;
	int rc;

	if (!json || !out)
		return nk__error(err, NK_EINVAL, "nk_advice_parse: NULL argument");
	/* Duplicate members are refused: with two "policy" members a person would not know which one counts. */
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		if (json_error_code(&je) == json_error_out_of_memory)
			return nk__error(err, NK_ENOMEM, "%s: out of memory", name);
		return nk__error(err, NK_EPARSE, "%s: line %d column %d: %s", name, je.line, je.column, je.text);
	}
	rc = nk_advice_create(&a);
	if (rc) {
		json_decref(root);
		return nk__error(err, rc, "%s: out of memory", name);
	}
	rc = parse_root(&in, root, a);
	json_decref(root);
	if (rc) {
		nk_advice_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

int nk_advice_parse(const char *json, size_t len, nk_advice **out, nk_error *err)
{
	return parse_named("plan", json, len, out, err);
}

int nk_advice_load(const char *path, nk_advice **out, nk_error *err)
{
	if (!path || !out)
		return nk__error(err, NK_EINVAL, "nk_advice_load: NULL argument");
	FILE *f = fopen(path, "rb");
	if (!f && errno == ENOENT)
		return nk__error(err, NK_ENOENT, "%s: no such file", path);
	if (!f)
		return nk__error(err, NK_EIO, "%s: cannot open: %s", path, strerror(errno));
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= AP_MAX_FILE) {
				rc = nk__error(err, NK_EIO, "%s: larger than %u MiB: not a plan", path, AP_MAX_FILE >> 20);
				break;
			}
			cap = cap ? 2 * cap : 65536;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				rc = nk__error(err, NK_ENOMEM, "%s: out of memory", path);
				break;
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				rc = nk__error(err, NK_EIO, "%s: cannot read: %s", path, strerror(errno));
			break;
		}
	}
	fclose(f);
	if (!rc)
		rc = parse_named(path, buf ? buf : "", len, out, err);
	free(buf);
	return rc;
}

/* ================================================================== writer */

struct ap_out {
	int bad; /* a json_* constructor failed: out of memory, or a value JSON cannot hold (NaN) */
};

static json_t *oset(struct ap_out *o, json_t *obj, const char *key, json_t *v)
{
	if (!obj || !v || json_object_set_new(obj, key, v))
		o->bad = 1;
	return v;
}

static void apush(struct ap_out *o, json_t *arr, json_t *v)
{
	if (!arr || !v || json_array_append_new(arr, v))
		o->bad = 1;
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *ju64(uint64_t v)
{
	return json_integer(v > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)v);
}

/* A fraction/factor: null when unknown (negative) or not finite. */
static json_t *jfrac(double v)
{
	return v >= 0 && isfinite(v) ? json_real(v) : json_null();
}

static json_t *build_entry(struct ap_out *o, const struct nk__aplan_entry *e)
{
	json_t *j = json_object();

	if (e->variable)
		oset(o, j, "variable", json_string(e->variable));
	oset(o, j, "key", jstr(e->key));
	oset(o, j, "policy", jstr(e->policy));
	oset(o, j, "when", jstr(nk__aplan_when_name(e->when)));
	if (e->when == NK__WHEN_PHASE)
		oset(o, j, "phase", jstr(e->phase));
	if (e->policy && !strcmp(e->policy, "pages")) {
		oset(o, j, "page_size", ju64(e->page_size));
		json_t *r = oset(o, j, "pages", json_array());
		for (size_t i = 0; i < e->n_ranges; i++)
			apush(o, r, json_pack("[IIi]", (json_int_t)e->ranges[i].first, (json_int_t)e->ranges[i].count,
					      e->ranges[i].node));
	}
	if (e->reason)
		oset(o, j, "reason", json_string(e->reason));
	if (!evidence_is_unknown(&e->ev)) {
		const struct nk__aplan_evidence *ev = &e->ev;
		json_t *x = oset(o, j, "evidence", json_object());
		oset(o, x, "size", ju64(ev->size));
		oset(o, x, "samples", ju64(ev->samples));
		oset(o, x, "threads", ju64(ev->threads));
		oset(o, x, "remote_fraction", jfrac(ev->remote_fraction));
		if (ev->ci_lo >= 0)
			oset(o, x, "remote_ci", json_pack("[ff]", ev->ci_lo, ev->ci_hi));
		if (ev->samples_effective >= 0)
			oset(o, x, "samples_effective", json_real(ev->samples_effective));
		oset(o, x, "read_fraction", jfrac(ev->read_fraction));
		oset(o, x, "regularity", jfrac(ev->regularity));
		oset(o, x, "shared_pages", jfrac(ev->shared_pages));
		oset(o, x, "dominant_node", ev->dominant_node >= 0 ? json_integer(ev->dominant_node) : json_null());
		oset(o, x, "dominant_share", jfrac(ev->dominant_share));
		oset(o, x, "diagnosis", jstr(ev->diagnosis));
	}
	return j;
}

static json_t *build_json(const nk_advice *a)
{
	struct ap_out o = { 0 };
	json_t *root = json_object(), *x;

	oset(&o, root, "format", json_string(NK__APLAN_FORMAT));
	oset(&o, root, "version", json_integer(NK__APLAN_VERSION));
	if (a->program)
		oset(&o, root, "program", json_string(a->program));
	if (a->profile)
		oset(&o, root, "profile", json_string(a->profile));
	if (a->runs > 1)
		oset(&o, root, "runs", json_integer((json_int_t)a->runs));
	if (a->n_nodes > 0 || a->numa_factor > 0) {
		x = oset(&o, root, "machine", json_object());
		json_t *n = oset(&o, x, "nodes", json_array());
		for (int i = 0; i < a->n_nodes; i++)
			apush(&o, n, json_integer(a->node_ids[i]));
		oset(&o, x, "numa_factor", a->numa_factor > 0 ? jfrac(a->numa_factor) : json_null());
	}
	if (a->pin.strategy) {
		const struct nk__aplan_pin *p = &a->pin;
		x = oset(&o, root, "pin", json_object());
		oset(&o, x, "strategy", json_string(p->strategy));
		oset(&o, x, "threads", json_integer(p->threads));
		if (!strcmp(p->strategy, "cpus")) {
			json_t *c = oset(&o, x, "cpus", json_array());
			for (size_t i = 0; i < p->n_cpus; i++)
				apush(&o, c, json_integer(p->cpus[i]));
		}
		if (!strcmp(p->strategy, "sharing")) {
			json_t *m = oset(&o, x, "sharing", json_array());
			size_t n = p->threads > 0 && p->sharing ? (size_t)p->threads : 0;
			for (size_t i = 0; i < n; i++) {
				json_t *row = json_array();
				for (size_t k = 0; k < n; k++)
					apush(&o, row, json_real(p->sharing[i * n + k]));
				apush(&o, m, row);
			}
		}
		if (p->reason)
			oset(&o, x, "reason", json_string(p->reason));
	}
	x = oset(&o, root, "entries", json_array());
	for (size_t i = 0; i < a->n_entries; i++)
		apush(&o, x, build_entry(&o, &a->entries[i]));
	if (a->n_left_alone) {
		x = oset(&o, root, "left_alone", json_array());
		for (size_t i = 0; i < a->n_left_alone; i++) {
			const struct nk__aplan_skip *s = &a->left_alone[i];
			json_t *j = json_object();
			oset(&o, j, "key", jstr(s->key));
			if (s->variable)
				oset(&o, j, "variable", json_string(s->variable));
			if (s->reason)
				oset(&o, j, "reason", json_string(s->reason));
			apush(&o, x, j);
		}
	}
	if (a->n_warnings) {
		x = oset(&o, root, "warnings", json_array());
		for (size_t i = 0; i < a->n_warnings; i++)
			apush(&o, x, jstr(a->warnings[i]));
	}
	if (o.bad) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/*
 * json_dumps' indentation puts every array element on its own line, which
 * makes a page range five lines.  Arrays holding only scalars are rewritten
 * on one line ("[0, 10, 1]"), in place (the text only shrinks); strings are
 * copied untouched.
 */
static void compact_scalar_arrays(char *s)
{
	char *w = s;
	const char *r = s;

	while (*r) {
		if (*r == '"') { /* a string: copy to its closing quote */
			*w++ = *r++;
			while (*r && *r != '"') {
				if (*r == '\\' && r[1])
					*w++ = *r++;
				*w++ = *r++;
			}
			if (*r)
				*w++ = *r++;
			continue;
		}
		if (*r != '[') {
			*w++ = *r++;
			continue;
		}
		/* does the array close before any nested array or object? */
		const char *q = r + 1;
		int in_str = 0, flat = 0;
		for (; *q; q++) {
			if (in_str) {
				if (*q == '\\' && q[1])
					q++;
				else if (*q == '"')
					in_str = 0;
			} else if (*q == '"') {
				in_str = 1;
			} else if (*q == '[' || *q == '{') {
				break;
			} else if (*q == ']') {
				flat = 1;
				break;
			}
		}
		if (!flat) {
			*w++ = *r++;
			continue;
		}
		/* copy [ ... ] dropping whitespace outside strings, a space after each comma */
		in_str = 0;
		for (; r <= q; r++) {
			if (in_str) {
				if (*r == '\\' && r + 1 < q)
					*w++ = *r++;
				else if (*r == '"')
					in_str = 0;
				*w++ = *r;
			} else if (*r == '"') {
				in_str = 1;
				*w++ = *r;
			} else if (*r == ',') {
				*w++ = ',';
				*w++ = ' ';
			} else if (*r != ' ' && *r != '\n') {
				*w++ = *r;
			}
		}
	}
	*w = 0;
}

int nk_advice_format(const nk_advice *a, char **out, nk_error *err)
{
	if (!a || !out)
		return nk__error(err, NK_EINVAL, "nk_advice_format: NULL argument");
	json_t *root = build_json(a);
	if (!root)
		return nk__error(err, NK_ENOMEM, "plan: out of memory (or a value JSON cannot hold)");
	char *s = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(AP_REAL_DIGITS));
	json_decref(root);
	if (!s)
		return nk__error(err, NK_ENOMEM, "plan: out of memory");
	compact_scalar_arrays(s);
	/* What is written must read back: check it with the reader itself. */
	nk_advice *back = NULL;
	nk_error perr = { 0, "" };
	int rc = parse_named("plan", s, strlen(s), &back, &perr);
	if (rc) {
		free(s);
		if (rc == NK_ENOMEM)
			return nk__error(err, rc, "plan: out of memory");
		return nk__error(err, NK_EINVAL, "nk_advice_format: the plan is not valid: %s", perr.message);
	}
	nk_advice_free(back);
	*out = s; /* json_dumps allocates with malloc: the caller's free() matches */
	return 0;
}

/* ============================================================ machine check */

static int node_ok(const nk_machine *m, int node, int need_memory, const char *where, const char *what,
		   nk_error *err)
{
	int f = nk_machine_node_flags(m, node);
	if (f < 0) {
		int ids[64], n = 0, cnt = nk_machine_num_nodes(m);
		for (int i = 0; i < cnt && n < 64; i++)
			ids[n++] = nk_machine_node_id(m, i);
		char list[200];
		nk_format_list(ids, (size_t)n, list, sizeof list);
		return nk__error(err, NK_ENODEV, "%s: %s node %d does not exist on this machine (nodes %s)", where, what,
				 node, list);
	}
	if (need_memory && !(f & NK_NODE_HAS_MEMORY))
		return nk__error(err, NK_ENODEV, "%s: %s node %d has no memory", where, what, node);
	if (need_memory && !(f & NK_NODE_MEM_ALLOWED))
		return nk__error(err, NK_EPERM, "%s: %s node %d: this process may not allocate there (cpuset)", where,
				 what, node);
	return 0;
}

static int check_policy(const nk_machine *m, const struct nk__aplan_entry *e, const char *where, nk_error *err)
{
	nk_policy *p = NULL;
	nk_error perr = { 0, "" };
	int rc = nk_policy_parse(e->policy, &p, &perr);

	if (rc)
		return nk__error(err, rc == NK_ENOMEM ? rc : NK_EINVAL, "%s: policy: %s", where, perr.message);
	for (size_t i = 0; !rc && i < p->nnodes; i++)
		rc = node_ok(m, p->nodes[i], 1, where, "policy", err);
	for (size_t i = 0; !rc && i < p->nweights; i++)
		rc = node_ok(m, p->wnodes[i], 1, where, "policy weight", err);
	/* threads and home may name cpu-only nodes: blocks then go to the nearest memory (docs/policies.md) */
	for (size_t i = 0; !rc && i < p->nthreads; i++)
		rc = node_ok(m, p->threads[i], 0, where, "policy thread", err);
	if (!rc && p->home >= 0)
		rc = node_ok(m, p->home, 0, where, "policy home", err);
	if (!rc) {
		/* a dummy 2D region of 64 x one-page rows: every kind builds on it, geometry or not */
		uint64_t ps = nk_machine_page_size(m);
		if (!ps)
			ps = 4096;
		nk_region r = { NULL, (size_t)(64 * ps), 8, 2, { 64, (size_t)(ps / 8), 0 } };
		nk_plan *pl = NULL;
		rc = nk_plan_build(m, p, &r, &pl, &perr);
		if (rc)
			rc = nk__error(err, rc, "%s: %s", where, perr.message);
		nk_plan_free(pl);
	}
	nk_policy_free(p);
	return rc;
}

int nk_advice_check(const nk_advice *a, const nk_machine *m, nk_error *err)
{
	char where[200];
	int rc;

	if (!a || !m)
		return nk__error(err, NK_EINVAL, "nk_advice_check: NULL argument");
	for (size_t i = 0; i < a->n_entries; i++) {
		const struct nk__aplan_entry *e = &a->entries[i];
		entry_where(where, sizeof where, i, e->key);
		if (!e->policy || !e->key)
			return nk__error(err, NK_EINVAL, "%s: no %s", where, e->key ? "policy" : "key");
		if (!strcmp(e->policy, "none"))
			continue;
		if (!strcmp(e->policy, "pages")) {
			for (size_t k = 0; k < e->n_ranges; k++) {
				char w[240];
				snprintf(w, sizeof w, "%s: pages[%zu]", where, k);
				/* a node repeated in consecutive ranges is checked once */
				if (k && e->ranges[k].node == e->ranges[k - 1].node)
					continue;
				if ((rc = node_ok(m, e->ranges[k].node, 1, w, "", err)))
					return rc;
			}
			continue;
		}
		if ((rc = check_policy(m, e, where, err)))
			return rc;
	}
	if (a->pin.strategy && !strcmp(a->pin.strategy, "cpus")) {
		for (size_t i = 0; i < a->pin.n_cpus; i++) {
			nk_cpu_info ci;
			if (nk_machine_cpu_info(m, a->pin.cpus[i], &ci))
				return nk__error(err, NK_ENODEV, "pin: cpus[%zu]: cpu %d does not exist on this machine", i,
						 a->pin.cpus[i]);
			if (!ci.allowed)
				return nk__error(err, NK_EPERM, "pin: cpus[%zu]: this process may not run on cpu %d", i,
						 a->pin.cpus[i]);
		}
	}
	return 0;
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
			return nk__error(err, NK_EINVAL, "nk_advice_set: profile without an analysis");
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
	if (v)
		nk__aplan_evidence_of(&ne.ev, v);
	if (v && !ne.ev.diagnosis && nk__an_diag_name(v->diag)) {
		nk__aplan_entry_clear(&ne);
		return nk__error(err, NK_ENOMEM, "out of memory");
	}
	struct nk__aplan_entry *old = nk__aplan_find(a, key, NK__WHEN_ALLOC, NULL);
	if (old) {
		if (!v) { /* no profile: keep what the plan knew about the variable */
			ne.variable = old->variable;
			old->variable = NULL;
			ne.ev = old->ev;
			old->ev.diagnosis = NULL;
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
			free(s->key);
			free(s->variable);
			free(s->reason);
			continue;
		}
		a->left_alone[w++] = *s;
	}
	a->n_left_alone = w;
	return 0;
}
