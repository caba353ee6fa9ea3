/* SPDX-License-Identifier: BSD-3-Clause
 * Advice file, writer (nk_advice_format): struct nk_advice -> JSON (docs/plan.md).  Output is
 * deterministic: members in a fixed order, two-space indentation, doubles with 10 significant digits,
 * so format(parse(format(a))) == format(a).  nk_advice_format() parses what it wrote before returning
 * it: a plan that would not read back (an empty key, overlapping page ranges) is refused with NK_EINVAL
 * there and then, not when the runtime loads it.  Validates nothing itself: the reader does.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "util/error.h"

#define AP_REAL_DIGITS 10             /* significant digits of doubles in the output */

static int evidence_is_unknown(const struct nk__aplan_evidence *ev)
{
	return !ev->size && !ev->samples && !ev->threads && ev->remote_fraction == 0 && ev->read_fraction < 0 &&
	       ev->regularity < 0 && ev->shared_pages == 0 && ev->dominant_node < 0 && ev->dominant_share == 0 &&
	       !ev->diagnosis && ev->ci_lo < 0 && ev->samples_effective < 0 && !ev->n_cands && ev->noise_ms < 0;
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

static json_t *build_cands(struct ap_out *o, const struct nk__aplan_cand *cands, size_t n)
{
	json_t *cs = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_object();
		oset(o, c, "policy", jstr(cands[i].policy));
		oset(o, c, "remote_fraction", jfrac(cands[i].remote_fraction));
		oset(o, c, "stall_ms", json_real(cands[i].stall_ms));
		apush(o, cs, c);
	}
	return cs;
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
	if (e->site_bytes) {
		oset(o, j, "layout", json_string("blocks"));
		oset(o, j, "size", ju64(e->site_bytes));
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
		if (ev->noise_ms >= 0)
			oset(o, x, "noise_ms", json_real(ev->noise_ms));
		if (ev->n_cands)
			oset(o, x, "candidates", build_cands(o, ev->cands, ev->n_cands));
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
		if (a->n_share) {
			json_t *sh = oset(&o, x, "share", json_array());
			for (size_t i = 0; i < a->n_share; i++)
				apush(&o, sh, json_integer(a->share[i]));
		}
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
			if (s->n_cands)
				oset(&o, j, "candidates", build_cands(&o, s->cands, s->n_cands));
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
	int rc = nk_advice_parse(s, strlen(s), &back, &perr);
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
