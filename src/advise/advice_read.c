/* SPDX-License-Identifier: BSD-3-Clause
 * Advice file, reader (nk_advice_parse, nk_advice_load; format in docs/plan.md): JSON -> struct
 * nk_advice, validated without a machine (advice_check.c checks against one).
 *
 * A plan is a file a person reads and edits, so the reader is strict: an
 * unknown member anywhere is an error (a typo such as "polcy" would
 * otherwise silently drop the policy), and every message names the entry
 * (index and key) and the member.  The writer (advice_write.c) reads back
 * what it wrote with this reader.  Builds no advice from a profile (advise.c).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "os/os.h"
#include "policy/policy_impl.h"
#include "util/error.h"
#include "util/json_read.h"
#include "util/list.h"

#define AP_MAX_FILE (64u << 20)       /* a plan file larger than this is refused (NK_EIO) */
#define AP_MAX_THREADS 4096           /* pin.threads, and the side of pin.sharing */
#define AP_MIN_PAGE 4096ULL           /* page_size bounds (powers of two) */
#define AP_MAX_SITE_BYTES (1ULL << 48) /* "size" of a "blocks" layout: 256 TiB */
#define AP_MAX_PAGE (1ULL << 34)
#define AP_MAX_PAGES (1ULL << 52)     /* first + count of a range: 2^52 pages is beyond any address space */

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

/* ================================================================== reader */

/* Reject members of @p obj not in @p known (NULL-terminated). */
static int check_fields(struct nk__json_in *in, const json_t *obj, const char *where, const char *const *known)
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
			return nk__json_fail(in, NK_EPARSE, where, "unknown field \"%.60s\" (expected %s)", k, list);
		}
	}
	return 0;
}

/* Optional string member (absent or null: *out NULL); copied. */
static int get_str(struct nk__json_in *in, const json_t *obj, const char *field, const char *where, char **out)
{
	const json_t *v = json_object_get(obj, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return nk__json_fail(in, NK_EPARSE, where, "%s: expected a string, found %s", field, nk__json_type_name(v));
	if (!(*out = strdup(json_string_value(v))))
		return nk__json_fail(in, NK_ENOMEM, where, "out of memory");
	return 0;
}

/* Optional non-negative integer member (absent or null: *out = dflt). */
static int get_uint(struct nk__json_in *in, const json_t *obj, const char *field, const char *where, uint64_t max,
		    uint64_t dflt, uint64_t *out)
{
	const json_t *v = json_object_get(obj, field);

	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return nk__json_fail(in, NK_EPARSE, where, "%s: expected an integer, found %s", field, nk__json_type_name(v));
	json_int_t x = json_integer_value(v);
	if (x < 0 || (uint64_t)x > max)
		return nk__json_fail(in, NK_EPARSE, where, "%s: %lld is out of range 0..%llu", field, (long long)x,
			       (unsigned long long)max);
	*out = (uint64_t)x;
	return 0;
}

/* Optional number in [lo, hi] (absent or null: *out = dflt). */
static int get_num(struct nk__json_in *in, const json_t *obj, const char *field, const char *where, double lo, double hi,
		   double dflt, double *out)
{
	const json_t *v = json_object_get(obj, field);

	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return nk__json_fail(in, NK_EPARSE, where, "%s: expected a number, found %s", field, nk__json_type_name(v));
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return nk__json_fail(in, NK_EPARSE, where, "%s: %g is out of range %g..%g", field, x, lo, hi);
	*out = x;
	return 0;
}

/* "entries[3] (key "heap:...")" */
void nk__aplan_entry_where(char *buf, size_t cap, size_t i, const char *key)
{
	if (key)
		snprintf(buf, cap, "entries[%zu] (key \"%.100s%s\")", i, key, strlen(key) > 100 ? "..." : "");
	else
		snprintf(buf, cap, "entries[%zu]", i);
}

/* evidence.candidates, left_alone[].candidates: [{"policy", "remote_fraction", "stall_ms"}, ...] (absent in
 * older plans) */
static int parse_candidates(struct nk__json_in *in, const json_t *v, const char *where, struct nk__aplan_cand **cands,
			    size_t *ncands)
{
	static const char *const fields[] = { "policy", "remote_fraction", "stall_ms", NULL };
	char w[260]; /* where (< 224) + ": candidates[N]" */
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return nk__json_fail(in, NK_EPARSE, where, "candidates: expected an array, found %s", nk__json_type_name(v));
	for (size_t i = 0; i < json_array_size(v); i++) {
		const json_t *c = json_array_get(v, i), *pol;
		double rf, st;
		snprintf(w, sizeof w, "%s: candidates[%zu]", where, i);
		if (!json_is_object(c))
			return nk__json_fail(in, NK_EPARSE, w, "expected an object, found %s", nk__json_type_name(c));
		if ((rc = check_fields(in, c, w, fields)))
			return rc;
		pol = json_object_get(c, "policy");
		if (!json_is_string(pol) || !*json_string_value(pol))
			return nk__json_fail(in, NK_EPARSE, w, "policy: expected a non-empty string, found %s",
					     pol ? nk__json_type_name(pol) : "nothing");
		if (!json_object_get(c, "stall_ms"))
			return nk__json_fail(in, NK_EPARSE, w, "stall_ms: missing");
		if ((rc = get_num(in, c, "remote_fraction", w, 0, 1, -1, &rf)) ||
		    (rc = get_num(in, c, "stall_ms", w, 0, 1e300, 0, &st)))
			return rc;
		if (nk__aplan_cands_add(cands, ncands, json_string_value(pol), rf, st))
			return nk__json_fail(in, NK_ENOMEM, w, "out of memory");
	}
	return 0;
}

static int parse_evidence(struct nk__json_in *in, const json_t *v, const char *where, struct nk__aplan_evidence *ev)
{
	static const char *const fields[] = { "size",         "samples",        "threads",       "remote_fraction",
					      "read_fraction", "regularity",    "shared_pages",  "dominant_node",
					      "dominant_share", "diagnosis",    "remote_ci",     "samples_effective",
					      "noise_ms",       "candidates",   NULL };
	char w[224]; /* where (< 200) + ": evidence" */
	uint64_t dn;
	int rc;

	nk__aplan_evidence_unknown(ev);
	if (!v || json_is_null(v))
		return 0;
	snprintf(w, sizeof w, "%s: evidence", where);
	if (!json_is_object(v))
		return nk__json_fail(in, NK_EPARSE, w, "expected an object, found %s", nk__json_type_name(v));
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
	    (rc = get_num(in, v, "samples_effective", w, 0, 1e300, -1, &ev->samples_effective)) ||
	    (rc = get_num(in, v, "noise_ms", w, 0, 1e300, -1, &ev->noise_ms)) ||
	    (rc = parse_candidates(in, json_object_get(v, "candidates"), w, &ev->cands, &ev->n_cands)))
		return rc;
	const json_t *ci = json_object_get(v, "remote_ci");
	if (ci && !json_is_null(ci)) {
		if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
		    !json_is_number(json_array_get(ci, 1)))
			return nk__json_fail(in, NK_EPARSE, w, "remote_ci: expected [low, high], found %s", nk__json_type_name(ci));
		double lo = json_number_value(json_array_get(ci, 0)), hi = json_number_value(json_array_get(ci, 1));
		if (!(lo >= 0 && lo <= hi && hi <= 1))
			return nk__json_fail(in, NK_EPARSE, w, "remote_ci: [%g, %g] is not an interval within 0..1", lo, hi);
		ev->ci_lo = lo;
		ev->ci_hi = hi;
	}
	ev->dominant_node = dn == UINT64_MAX ? -1 : (int)dn;
	return 0;
}

static int parse_ranges(struct nk__json_in *in, const json_t *v, const char *where, struct nk__aplan_entry *e)
{
	size_t n = json_array_size(v);

	if (!n)
		return nk__json_fail(in, NK_EPARSE, where, "pages: empty (policy \"pages\" needs at least one range)");
	e->ranges = calloc(n, sizeof(*e->ranges));
	if (!e->ranges)
		return nk__json_fail(in, NK_ENOMEM, where, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(v, i);
		json_int_t x[3];
		if (!json_is_array(r) || json_array_size(r) != 3)
			return nk__json_fail(in, NK_EPARSE, where, "pages[%zu]: expected [first, count, node], found %s", i,
				       json_is_array(r) ? "another array" : nk__json_type_name(r));
		for (int k = 0; k < 3; k++) {
			const json_t *c = json_array_get(r, (size_t)k);
			if (!json_is_integer(c))
				return nk__json_fail(in, NK_EPARSE, where, "pages[%zu][%d]: expected an integer, found %s", i,
					       k, nk__json_type_name(c));
			x[k] = json_integer_value(c);
		}
		if (x[0] < 0 || (uint64_t)x[0] >= AP_MAX_PAGES)
			return nk__json_fail(in, NK_EPARSE, where, "pages[%zu]: first page %lld is out of range", i,
				       (long long)x[0]);
		if (x[1] <= 0 || (uint64_t)x[1] > AP_MAX_PAGES - (uint64_t)x[0])
			return nk__json_fail(in, NK_EPARSE, where, "pages[%zu]: count %lld must be > 0 (and in range)", i,
				       (long long)x[1]);
		if (x[2] < 0 || x[2] > NK__MAX_ID)
			return nk__json_fail(in, NK_EPARSE, where, "pages[%zu]: node %lld is out of range 0..%d", i,
				       (long long)x[2], NK__MAX_ID);
		if (i && (uint64_t)x[0] < e->ranges[i - 1].first + e->ranges[i - 1].count)
			return nk__json_fail(in, NK_EPARSE, where,
				       "pages[%zu]: starts at page %lld, inside or before pages[%zu] (%llu+%llu): "
				       "ranges must be sorted and disjoint",
				       i, (long long)x[0], i - 1, (unsigned long long)e->ranges[i - 1].first,
				       (unsigned long long)e->ranges[i - 1].count);
		e->ranges[i] = (struct nk__aplan_range){ (uint64_t)x[0], (uint64_t)x[1], (int)x[2] };
		e->n_ranges = i + 1;
	}
	return 0;
}

/* "layout" ("instance", the default, or "blocks": a heap site of many blocks, laid end to end in allocation
 * order) and its "size" (bytes, required with "blocks", nowhere else). */
static int parse_layout(struct nk__json_in *in, const json_t *v, const char *where, struct nk__aplan_entry *e)
{
	const json_t *l = json_object_get(v, "layout"), *sz = json_object_get(v, "size");
	int rc;

	if (!l || json_is_null(l)) {
		if (sz)
			return nk__json_fail(in, NK_EPARSE, where, "size: only allowed with \"layout\": \"blocks\"");
		return 0;
	}
	if (!json_is_string(l))
		return nk__json_fail(in, NK_EPARSE, where, "layout: expected a string, found %s", nk__json_type_name(l));
	if (!strcmp(json_string_value(l), "instance")) {
		if (sz)
			return nk__json_fail(in, NK_EPARSE, where, "size: only allowed with \"layout\": \"blocks\"");
		return 0;
	}
	if (strcmp(json_string_value(l), "blocks"))
		return nk__json_fail(in, NK_EPARSE, where, "layout: \"%.40s\" is not instance or blocks",
				     json_string_value(l));
	if (strncmp(e->key, "heap:", 5))
		return nk__json_fail(in, NK_EPARSE, where, "layout: \"blocks\" is for heap keys only");
	if (!sz)
		return nk__json_fail(in, NK_EPARSE, where, "size: missing (\"layout\": \"blocks\" needs the bytes of the blocks)");
	if ((rc = get_uint(in, v, "size", where, AP_MAX_SITE_BYTES, 0, &e->site_bytes)))
		return rc;
	if (!e->site_bytes)
		return nk__json_fail(in, NK_EPARSE, where, "size: must be > 0");
	return 0;
}

static int parse_entry(struct nk__json_in *in, const json_t *v, size_t idx, struct nk__aplan_entry *e)
{
	static const char *const fields[] = { "variable", "key",    "policy", "when",   "phase",    "page_size",
					      "pages",    "layout", "size",   "reason", "evidence", NULL };
	char where[200];
	const json_t *k, *w, *pg;
	int rc;

	memset(e, 0, sizeof(*e));
	nk__aplan_evidence_unknown(&e->ev);
	nk__aplan_entry_where(where, sizeof where, idx, NULL);
	if (!json_is_object(v))
		return nk__json_fail(in, NK_EPARSE, where, "expected an object, found %s", nk__json_type_name(v));
	k = json_object_get(v, "key");
	if (!k)
		return nk__json_fail(in, NK_EPARSE, where, "key: missing");
	if (!json_is_string(k))
		return nk__json_fail(in, NK_EPARSE, where, "key: expected a string, found %s", nk__json_type_name(k));
	if (!nk__aplan_key_valid(json_string_value(k)))
		return nk__json_fail(in, NK_EPARSE, where, "key: \"%.100s\" does not start with static:, heap: or name:",
			       json_string_value(k));
	if (!(e->key = strdup(json_string_value(k))))
		return nk__json_fail(in, NK_ENOMEM, where, "out of memory");
	nk__aplan_entry_where(where, sizeof where, idx, e->key);
	if ((rc = check_fields(in, v, where, fields)) || (rc = get_str(in, v, "variable", where, &e->variable)) ||
	    (rc = get_str(in, v, "reason", where, &e->reason)))
		return rc;

	/* policy */
	const json_t *p = json_object_get(v, "policy");
	if (!p)
		return nk__json_fail(in, NK_EPARSE, where, "policy: missing");
	if (!json_is_string(p))
		return nk__json_fail(in, NK_EPARSE, where, "policy: expected a string, found %s", nk__json_type_name(p));
	const char *ptext = json_string_value(p);
	if (strcmp(ptext, "none") && strcmp(ptext, "pages")) {
		nk_policy *pol = NULL;
		nk_error perr = { 0, "" };
		rc = nk_policy_parse(ptext, &pol, &perr);
		if (rc)
			return nk__json_fail(in, rc == NK_ENOMEM ? NK_ENOMEM : NK_EPARSE, where, "policy: %s", perr.message);
		nk_policy_free(pol);
	}
	if (!(e->policy = strdup(ptext)))
		return nk__json_fail(in, NK_ENOMEM, where, "out of memory");

	/* when, phase */
	e->when = NK__WHEN_ALLOC;
	w = json_object_get(v, "when");
	if (w) {
		int found = -1;
		if (!json_is_string(w))
			return nk__json_fail(in, NK_EPARSE, where, "when: expected a string, found %s", nk__json_type_name(w));
		for (int i = 0; i <= NK__WHEN_PHASE; i++)
			if (!strcmp(json_string_value(w), when_names[i]))
				found = i;
		if (found < 0)
			return nk__json_fail(in, NK_EPARSE, where,
				       "when: \"%.40s\" is not alloc, first-parallel or phase", json_string_value(w));
		e->when = found;
	}
	const json_t *ph = json_object_get(v, "phase");
	if (e->when == NK__WHEN_PHASE) {
		if (!ph)
			return nk__json_fail(in, NK_EPARSE, where, "phase: missing (\"when\": \"phase\" needs the phase name)");
		if (!json_is_string(ph) || !json_string_value(ph)[0])
			return nk__json_fail(in, NK_EPARSE, where, "phase: expected a non-empty string, found %s",
				       json_is_string(ph) ? "\"\"" : nk__json_type_name(ph));
		if (!(e->phase = strdup(json_string_value(ph))))
			return nk__json_fail(in, NK_ENOMEM, where, "out of memory");
	} else if (ph) {
		return nk__json_fail(in, NK_EPARSE, where, "phase: only allowed with \"when\": \"phase\"");
	}

	/* pages */
	pg = json_object_get(v, "pages");
	const json_t *ps = json_object_get(v, "page_size");
	if (!strcmp(e->policy, "pages")) {
		if (!ps)
			return nk__json_fail(in, NK_EPARSE, where, "page_size: missing (policy \"pages\" needs it)");
		if ((rc = get_uint(in, v, "page_size", where, AP_MAX_PAGE, 0, &e->page_size)))
			return rc;
		if (e->page_size < AP_MIN_PAGE || (e->page_size & (e->page_size - 1)))
			return nk__json_fail(in, NK_EPARSE, where, "page_size: %llu is not a power of two >= %llu",
				       (unsigned long long)e->page_size, AP_MIN_PAGE);
		if (!pg)
			return nk__json_fail(in, NK_EPARSE, where, "pages: missing (policy \"pages\" needs page ranges)");
		if (!json_is_array(pg))
			return nk__json_fail(in, NK_EPARSE, where, "pages: expected an array, found %s", nk__json_type_name(pg));
		if ((rc = parse_ranges(in, pg, where, e)))
			return rc;
	} else if (pg || ps) {
		return nk__json_fail(in, NK_EPARSE, where, "%s: only allowed with \"policy\": \"pages\"",
			       pg ? "pages" : "page_size");
	}
	if ((rc = parse_layout(in, v, where, e)))
		return rc;
	return parse_evidence(in, json_object_get(v, "evidence"), where, &e->ev);
}

static int parse_pin(struct nk__json_in *in, const json_t *v, struct nk__aplan_pin *pin)
{
	static const char *const fields[] = { "strategy", "threads", "cpus", "sharing", "reason", NULL };
	const json_t *s, *c, *sh;
	uint64_t t;
	int rc, known = 0;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return nk__json_fail(in, NK_EPARSE, "pin", "expected an object, found %s", nk__json_type_name(v));
	if ((rc = check_fields(in, v, "pin", fields)))
		return rc;
	s = json_object_get(v, "strategy");
	if (!s)
		return nk__json_fail(in, NK_EPARSE, "pin", "strategy: missing");
	if (!json_is_string(s))
		return nk__json_fail(in, NK_EPARSE, "pin", "strategy: expected a string, found %s", nk__json_type_name(s));
	for (size_t i = 0; i < sizeof pin_strategies / sizeof *pin_strategies; i++)
		known |= !strcmp(json_string_value(s), pin_strategies[i]);
	if (!known)
		return nk__json_fail(in, NK_EPARSE, "pin", "strategy: \"%.40s\" is not none, compact, scatter, sharing or cpus",
			       json_string_value(s));
	if (!(pin->strategy = strdup(json_string_value(s))))
		return nk__json_fail(in, NK_ENOMEM, "pin", "out of memory");
	if ((rc = get_uint(in, v, "threads", "pin", AP_MAX_THREADS, 0, &t)) ||
	    (rc = get_str(in, v, "reason", "pin", &pin->reason)))
		return rc;
	pin->threads = (int)t;
	c = json_object_get(v, "cpus");
	sh = json_object_get(v, "sharing");
	if (!strcmp(pin->strategy, "cpus")) {
		if (!c)
			return nk__json_fail(in, NK_EPARSE, "pin", "cpus: missing (strategy \"cpus\" needs the cpu of each thread)");
		if (!json_is_array(c) || !json_array_size(c))
			return nk__json_fail(in, NK_EPARSE, "pin", "cpus: expected a non-empty array, found %s",
				       json_is_array(c) ? "an empty one" : nk__json_type_name(c));
		size_t n = json_array_size(c);
		if (n > AP_MAX_THREADS)
			return nk__json_fail(in, NK_EPARSE, "pin", "cpus: %zu threads, more than %d", n, AP_MAX_THREADS);
		if (pin->threads && (size_t)pin->threads != n)
			return nk__json_fail(in, NK_EPARSE, "pin", "cpus: %zu cpus for %d threads (one per thread)", n,
				       pin->threads);
		if (!(pin->cpus = malloc(n * sizeof(*pin->cpus))))
			return nk__json_fail(in, NK_ENOMEM, "pin", "out of memory");
		for (size_t i = 0; i < n; i++) {
			const json_t *x = json_array_get(c, i);
			if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > NK__MAX_ID)
				return nk__json_fail(in, NK_EPARSE, "pin", "cpus[%zu]: expected a cpu id 0..%d, found %s", i,
					       NK__MAX_ID, json_is_integer(x) ? "one out of range" : nk__json_type_name(x));
			pin->cpus[i] = (int)json_integer_value(x);
		}
		pin->n_cpus = n;
		pin->threads = (int)n;
	} else if (c) {
		return nk__json_fail(in, NK_EPARSE, "pin", "cpus: only allowed with \"strategy\": \"cpus\"");
	}
	if (!strcmp(pin->strategy, "sharing")) {
		if (!sh)
			return nk__json_fail(in, NK_EPARSE, "pin", "sharing: missing (strategy \"sharing\" needs the matrix)");
		if (!json_is_array(sh) || !json_array_size(sh))
			return nk__json_fail(in, NK_EPARSE, "pin", "sharing: expected a non-empty array of rows, found %s",
				       json_is_array(sh) ? "an empty one" : nk__json_type_name(sh));
		size_t n = json_array_size(sh);
		if (n > AP_MAX_THREADS)
			return nk__json_fail(in, NK_EPARSE, "pin", "sharing: %zu threads, more than %d", n, AP_MAX_THREADS);
		if (pin->threads && (size_t)pin->threads != n)
			return nk__json_fail(in, NK_EPARSE, "pin", "sharing: %zu rows for %d threads", n, pin->threads);
		if (!(pin->sharing = calloc(n * n, sizeof(*pin->sharing))))
			return nk__json_fail(in, NK_ENOMEM, "pin", "out of memory");
		for (size_t i = 0; i < n; i++) {
			const json_t *row = json_array_get(sh, i);
			if (!json_is_array(row) || json_array_size(row) != n)
				return nk__json_fail(in, NK_EPARSE, "pin", "sharing[%zu]: expected an array of %zu numbers", i,
					       n);
			for (size_t j = 0; j < n; j++) {
				const json_t *x = json_array_get(row, j);
				double d = json_is_number(x) ? json_number_value(x) : -1;
				if (!(d >= 0) || !isfinite(d))
					return nk__json_fail(in, NK_EPARSE, "pin", "sharing[%zu][%zu]: expected a number >= 0",
						       i, j);
				pin->sharing[i * n + j] = d;
			}
		}
		pin->threads = (int)n;
	} else if (sh) {
		return nk__json_fail(in, NK_EPARSE, "pin", "sharing: only allowed with \"strategy\": \"sharing\"");
	}
	return 0;
}

/* machine.share (optional): the share the entries' node ids refer to, increasing ids among machine.nodes. */
static int parse_share(struct nk__json_in *in, const json_t *v, nk_advice *a)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || !json_array_size(v))
		return nk__json_fail(in, NK_EPARSE, "machine", "share: expected an array of node ids, found %s",
				     nk__json_type_name(v));
	if (!a->n_nodes)
		return nk__json_fail(in, NK_EPARSE, "machine", "share: needs the machine's nodes");
	size_t cnt = json_array_size(v);
	if (cnt > (size_t)a->n_nodes)
		return nk__json_fail(in, NK_EPARSE, "machine", "share: %zu nodes, the machine has %d", cnt, a->n_nodes);
	if (!(a->share = malloc(cnt * sizeof(int))))
		return nk__json_fail(in, NK_ENOMEM, "machine", "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		const json_t *x = json_array_get(v, i);
		int id = json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= NK__MAX_ID
				 ? (int)json_integer_value(x) : -1;
		int known = 0;
		for (int k = 0; k < a->n_nodes; k++)
			known |= a->node_ids[k] == id;
		if (!known)
			return nk__json_fail(in, NK_EPARSE, "machine", "share[%zu]: expected one of the machine's nodes", i);
		a->share[i] = id;
		if (i && a->share[i] <= a->share[i - 1])
			return nk__json_fail(in, NK_EPARSE, "machine", "share[%zu]: ids must be increasing", i);
		a->n_share = i + 1;
	}
	return 0;
}

static int parse_machine(struct nk__json_in *in, const json_t *v, nk_advice *a)
{
	static const char *const fields[] = { "nodes", "numa_factor", "share", NULL };
	const json_t *n;
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return nk__json_fail(in, NK_EPARSE, "machine", "expected an object, found %s", nk__json_type_name(v));
	if ((rc = check_fields(in, v, "machine", fields)) ||
	    (rc = get_num(in, v, "numa_factor", "machine", 0, 1e6, 0, &a->numa_factor)))
		return rc;
	n = json_object_get(v, "nodes");
	if (!n || json_is_null(n))
		return parse_share(in, json_object_get(v, "share"), a); /* refused: a share needs the nodes */
	if (!json_is_array(n))
		return nk__json_fail(in, NK_EPARSE, "machine", "nodes: expected an array, found %s", nk__json_type_name(n));
	size_t cnt = json_array_size(n);
	if (cnt > NK__MAX_ID + 1)
		return nk__json_fail(in, NK_EPARSE, "machine", "nodes: too many (%zu)", cnt);
	if (cnt && !(a->node_ids = malloc(cnt * sizeof(int))))
		return nk__json_fail(in, NK_ENOMEM, "machine", "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		const json_t *x = json_array_get(n, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > NK__MAX_ID)
			return nk__json_fail(in, NK_EPARSE, "machine", "nodes[%zu]: expected a node id 0..%d", i, NK__MAX_ID);
		a->node_ids[i] = (int)json_integer_value(x);
		if (i && a->node_ids[i] <= a->node_ids[i - 1])
			return nk__json_fail(in, NK_EPARSE, "machine", "nodes[%zu]: ids must be increasing", i);
		a->n_nodes = (int)i + 1;
	}
	return parse_share(in, json_object_get(v, "share"), a);
}

static int parse_left_alone(struct nk__json_in *in, const json_t *v, nk_advice *a)
{
	static const char *const fields[] = { "key", "variable", "reason", "candidates", NULL };
	char where[64];
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return nk__json_fail(in, NK_EPARSE, "left_alone", "expected an array, found %s", nk__json_type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->left_alone = calloc(n, sizeof(*a->left_alone))))
		return nk__json_fail(in, NK_ENOMEM, "left_alone", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(v, i);
		struct nk__aplan_skip *k = &a->left_alone[i];
		snprintf(where, sizeof where, "left_alone[%zu]", i);
		if (!json_is_object(s))
			return nk__json_fail(in, NK_EPARSE, where, "expected an object, found %s", nk__json_type_name(s));
		a->n_left_alone = i + 1; /* owned from here on, for the free on failure */
		if ((rc = check_fields(in, s, where, fields)) || (rc = get_str(in, s, "key", where, &k->key)) ||
		    (rc = get_str(in, s, "variable", where, &k->variable)) ||
		    (rc = get_str(in, s, "reason", where, &k->reason)) ||
		    (rc = parse_candidates(in, json_object_get(s, "candidates"), where, &k->cands, &k->n_cands)))
			return rc;
		if (!k->key || !k->key[0])
			return nk__json_fail(in, NK_EPARSE, where, "key: missing");
	}
	return 0;
}

static int parse_warnings(struct nk__json_in *in, const json_t *v, nk_advice *a)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return nk__json_fail(in, NK_EPARSE, "warnings", "expected an array of strings, found %s", nk__json_type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->warnings = calloc(n, sizeof(char *))))
		return nk__json_fail(in, NK_ENOMEM, "warnings", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(v, i);
		if (!json_is_string(s))
			return nk__json_fail(in, NK_EPARSE, "warnings", "[%zu]: expected a string, found %s", i, nk__json_type_name(s));
		if (!(a->warnings[i] = strdup(json_string_value(s))))
			return nk__json_fail(in, NK_ENOMEM, "warnings", "out of memory");
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

static int check_duplicates(struct nk__json_in *in, const nk_advice *a)
{
	size_t n = a->n_entries, bad = SIZE_MAX, first = 0;

	if (n < 2)
		return 0;
	struct dup_key *k = malloc(n * sizeof(*k));
	if (!k)
		return nk__json_fail(in, NK_ENOMEM, NULL, "out of memory");
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
	nk__aplan_entry_where(where, sizeof where, bad, e->key);
	if (e->when == NK__WHEN_PHASE)
		return nk__json_fail(in, NK_EPARSE, where,
			       "duplicates entries[%zu]: same key, \"when\": \"phase\" and phase \"%.60s\"", first,
			       e->phase);
	return nk__json_fail(in, NK_EPARSE, where, "duplicates entries[%zu]: same key and \"when\": \"%s\"", first,
		       when_names[e->when]);
}

static int parse_root(struct nk__json_in *in, const json_t *root, nk_advice *a)
{
	static const char *const fields[] = { "format", "version", "program", "profile",  "runs", "machine",
					      "pin",    "entries", "left_alone", "warnings", NULL };
	const json_t *v;
	int rc;

	if (!json_is_object(root))
		return nk__json_fail(in, NK_EPARSE, NULL, "expected a JSON object, found %s", nk__json_type_name(root));
	v = json_object_get(root, "format");
	if (!v)
		return nk__json_fail(in, NK_EPARSE, "format", "missing (not a numakit plan)");
	if (!json_is_string(v) || strcmp(json_string_value(v), NK__APLAN_FORMAT))
		return nk__json_fail(in, NK_EPARSE, "format", "expected \"" NK__APLAN_FORMAT "\"");
	v = json_object_get(root, "version");
	if (!v)
		return nk__json_fail(in, NK_EPARSE, "version", "missing");
	if (!json_is_integer(v))
		return nk__json_fail(in, NK_EPARSE, "version", "expected an integer, found %s", nk__json_type_name(v));
	if (json_integer_value(v) != NK__APLAN_VERSION)
		return nk__json_fail(in, NK_EVERSION, "version", "version %lld is not supported (this library reads %d)",
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
		return nk__json_fail(in, NK_EPARSE, "entries", "missing");
	if (!json_is_array(v))
		return nk__json_fail(in, NK_EPARSE, "entries", "expected an array, found %s", nk__json_type_name(v));
	size_t n = json_array_size(v);
	if (n && !(a->entries = calloc(n, sizeof(*a->entries))))
		return nk__json_fail(in, NK_ENOMEM, "entries", "out of memory");
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
	struct nk__json_in in = { name, err };
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
	/* through the OS layer; a file of AP_MAX_FILE bytes or more is refused, as is any unreadable one
	 * (NK_EIO: permissions included) */
	char *buf = NULL;
	size_t len = 0;
	int e = 0, rc = nk__os_read_whole(path, AP_MAX_FILE - 1, &buf, &len, &e);
	if (rc == NK_ENOENT && e == ENOENT)
		return nk__error(err, NK_ENOENT, "%s: no such file", path);
	if (rc == NK_ENOMEM)
		rc = nk__error(err, NK_ENOMEM, "%s: out of memory", path);
	else if (rc && e == EFBIG)
		rc = nk__error(err, NK_EIO, "%s: larger than %u MiB: not a plan", path, AP_MAX_FILE >> 20);
	else if (rc && (e == EISDIR || e == EIO))
		rc = nk__error(err, NK_EIO, "%s: cannot read: %s", path, strerror(e));
	else if (rc)
		rc = nk__error(err, NK_EIO, "%s: cannot open: %s", path, strerror(e));
	if (!rc)
		rc = parse_named(path, buf ? buf : "", len, out, err);
	free(buf);
	return rc;
}
