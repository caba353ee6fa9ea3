/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source: the pure half (decide, patch, print); see
 * srcadv.h.  No libclang here, so the unit tests reach it on hand-written
 * facts.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srcadv.h"
#include "strbuf.h"

/* ---- facts ---- */

struct srcadv_array *srcadv_add_array(struct srcadv_scan *s, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct srcadv_array *a = realloc(s->arr, cap * sizeof *a);
		if (!a)
			return NULL;
		s->arr = a;
		s->cap = cap;
	}
	struct srcadv_array *a = &s->arr[s->n++];
	memset(a, 0, sizeof *a);
	snprintf(a->name, sizeof a->name, "%s", name);
	return a;
}

struct srcadv_access *srcadv_add_access(struct srcadv_array *a)
{
	if (a->nacc == a->capacc) {
		size_t cap = a->capacc ? 2 * a->capacc : 8;
		struct srcadv_access *p = realloc(a->acc, cap * sizeof *p);
		if (!p)
			return NULL;
		a->acc = p;
		a->capacc = cap;
	}
	struct srcadv_access *x = &a->acc[a->nacc++];
	memset(x, 0, sizeof *x);
	return x;
}

int srcadv_add_init(struct srcadv_array *a, unsigned line)
{
	for (size_t i = 0; i < a->ninit; i++)
		if (a->init[i] == line)
			return 0;
	if (a->ninit == a->capinit) {
		size_t cap = a->capinit ? 2 * a->capinit : 4;
		unsigned *p = realloc(a->init, cap * sizeof *p);
		if (!p)
			return -1;
		a->init = p;
		a->capinit = cap;
	}
	a->init[a->ninit++] = line;
	return 0;
}

void srcadv_scan_clear(struct srcadv_scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->arr[i].acc);
		free(s->arr[i].init);
	}
	free(s->arr);
	s->arr = NULL;
	s->n = s->cap = 0;
}

/* ---- names ---- */

const char *srcadv_mode_name(int mode)
{
	return mode == SRCADV_R ? "R" : mode == SRCADV_W ? "W" : "RW";
}

const char *srcadv_shape_name(int shape)
{
	static const char *const names[] = { "regular", "irregular", "shared", "columns", "whole" };
	return shape >= 0 && shape <= SRCADV_WHOLE ? names[shape] : "?";
}

const char *srcadv_sched_name(int sched)
{
	static const char *const names[] = { "none", "static", "dynamic", "guided", "auto", "runtime" };
	return sched >= 0 && sched <= SRCADV_SCHED_RUNTIME ? names[sched] : "?";
}

const char *srcadv_sharing_name(int sharing)
{
	static const char *const names[] = { "shared", "shared", "private", "firstprivate", "lastprivate",
					     "reduction" };
	return sharing >= 0 && sharing <= SRCADV_REDUCTION ? names[sharing] : "?";
}

const char *srcadv_kind_name(int kind)
{
	static const char *const names[] = { "global", "static", "local static", "main array", "main heap" };
	return kind >= 0 && kind <= SRCADV_MAIN_HEAP ? names[kind] : "?";
}

static void fmt_size(uint64_t b, char *buf, size_t cap)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	double v = (double)b;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		snprintf(buf, cap, "%llu %s", (unsigned long long)v, units[u]);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* ---- deciding ---- */

static int is_private(int sharing)
{
	return sharing == SRCADV_PRIVATE || sharing == SRCADV_FIRSTPRIVATE || sharing == SRCADV_LASTPRIVATE ||
	       sharing == SRCADV_REDUCTION;
}

static int is_dynamic(int sched)
{
	return sched == SRCADV_SCHED_DYNAMIC || sched == SRCADV_SCHED_GUIDED || sched == SRCADV_SCHED_AUTO ||
	       sched == SRCADV_SCHED_RUNTIME;
}

/* ", applied before the serial initialisation at line L" and the hot-spot note. */
static void init_note(const struct srcadv_array *a, char *buf, size_t cap, int block)
{
	size_t n;

	buf[0] = '\0';
	if (!a->ninit)
		return;
	unsigned first = a->init[0];
	for (size_t i = 1; i < a->ninit; i++)
		first = a->init[i] < first ? a->init[i] : first;
	n = (size_t)snprintf(buf, cap, "; the serial initialisation (line %u) would first-touch every page on one "
				       "node: the policy is applied before it", first);
	if (block && n < cap)
		snprintf(buf + n, cap - n, " (or initialise in parallel with the compute loop's partition, "
					   "schedule(static))");
}

/* Is @p line in the list "12, 15"? */
static int strstr_line(const char *list, unsigned line)
{
	char num[16];
	size_t n = (size_t)snprintf(num, sizeof num, "%u", line);

	for (const char *p = list; (p = strstr(p, num)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static void decide_one(struct srcadv_array *a, uint64_t min_size)
{
	const struct srcadv_access *priv = NULL, *single = NULL, *whole = NULL, *irr = NULL, *dyn = NULL;
	const struct srcadv_access *shr = NULL, *cols = NULL, *chunked = NULL;
	size_t shared_w = 0, n = 0, multi = 0;
	char note[256], sz[32], lines[96];
	size_t ll = 0;

	a->action = SRCADV_LEAVE;
	a->policy[0] = '\0';
	if (!a->nacc) {
		snprintf(a->reason, sizeof a->reason, "not accessed in an OpenMP parallel construct: nothing to place");
		return;
	}
	if (a->bytes && a->bytes < min_size) {
		char ms[32];
		fmt_size(a->bytes, sz, sizeof sz);
		fmt_size(min_size, ms, sizeof ms);
		snprintf(a->reason, sizeof a->reason, "small (%s < %s): it stays in caches", sz, ms);
		return;
	}
	lines[0] = '\0';
	for (size_t i = 0; i < a->nacc; i++) {
		const struct srcadv_access *x = &a->acc[i];
		if (is_private(x->sharing)) {
			priv = priv ? priv : x;
			continue;
		}
		n++;
		if (x->single) {
			single = single ? single : x;
			continue;
		}
		multi++;
		if (x->shape == SRCADV_WHOLE)
			whole = whole ? whole : x;
		else if (x->shape == SRCADV_IRREGULAR)
			irr = irr ? irr : x;
		else if (x->shape == SRCADV_SHARED) {
			shr = shr ? shr : x;
			shared_w += (x->mode & SRCADV_W) != 0;
		} else if (x->shape == SRCADV_COLUMNS)
			cols = cols ? cols : x;
		if (x->in_loop && is_dynamic(x->sched))
			dyn = dyn ? dyn : x;
		if (x->in_loop && x->sched == SRCADV_SCHED_STATIC && x->chunk[0])
			chunked = chunked ? chunked : x;
		if (ll < sizeof lines - 16 && !strstr_line(lines, x->line))
			ll += (size_t)snprintf(lines + ll, sizeof lines - ll, "%s%u", ll ? ", " : "", x->line);
	}
	if (!n) {
		snprintf(a->reason, sizeof a->reason, "private in every parallel construct (%s, line %u): each thread "
			 "has its own copy", srcadv_sharing_name(priv->sharing), priv->pragma_line);
		return;
	}
	if (single && !multi) {
		snprintf(a->reason, sizeof a->reason, "used by one thread (single/master, line %u): first touch already "
			 "places it on that thread's node (bind it there if that thread moves)", single->line);
		return;
	}
	if (whole) {
		snprintf(a->reason, sizeof a->reason, "used as a whole in a parallel construct (line %u): which part "
			 "each thread uses is not visible in the source", whole->line);
		return;
	}
	a->action = SRCADV_PLACE;
	if (irr) {
		init_note(a, note, sizeof note, 0);
		snprintf(a->policy, sizeof a->policy, "cyclic");
		snprintf(a->reason, sizeof a->reason, "irregular accesses (line %u: indexed through another array): "
			 "interleave its pages over the nodes so that no node serves them all%s", irr->line, note);
		return;
	}
	if (dyn) {
		init_note(a, note, sizeof note, 0);
		snprintf(a->policy, sizeof a->policy, "cyclic");
		snprintf(a->reason, sizeof a->reason, "schedule(%s%s%s) at line %u: iterations go to whichever thread "
			 "is free, there is no partition to follow: interleave%s", srcadv_sched_name(dyn->sched),
			 dyn->chunk[0] ? ", " : "", dyn->chunk, dyn->pragma_line, note);
		return;
	}
	if (shr) {
		init_note(a, note, sizeof note, 0);
		snprintf(a->policy, sizeof a->policy, "cyclic");
		snprintf(a->reason, sizeof a->reason, "%s by every thread (line %u: the index does not follow the loop "
			 "variable): %sshared data, interleave%s", shared_w ? "used" : "read", shr->line,
			 shared_w ? "" : "read-mostly ", note);
		return;
	}
	if (cols) {
		init_note(a, note, sizeof note, 0);
		snprintf(a->policy, sizeof a->policy, "cyclic");
		snprintf(a->reason, sizeof a->reason, "partitioned by columns (line %u: the loop variable indexes an "
			 "inner dimension): every page holds parts of every thread's columns, interleave%s", cols->line,
			 note);
		return;
	}
	if (chunked) {
		init_note(a, note, sizeof note, 0);
		snprintf(a->policy, sizeof a->policy, "cyclic");
		snprintf(a->reason, sizeof a->reason, "schedule(static, %s) at line %u deals chunks to the threads "
			 "round robin: interleave%s", chunked->chunk, chunked->pragma_line, note);
		return;
	}
	/* regular accesses (plus, maybe, some by one thread: the partitioned use decides) */
	init_note(a, note, sizeof note, 1);
	snprintf(a->policy, sizeof a->policy, "block");
	snprintf(a->reason, sizeof a->reason, "regular accesses in static-schedule loops (line%s %s): each thread "
		 "works on one contiguous part, so block, one part per node in order (with threads placed compactly: "
		 "OMP_PROC_BIND=close or numakit run --pin compact)%s", strchr(lines, ',') ? "s" : "", lines, note);
}

void srcadv_decide(struct srcadv_scan *s, uint64_t min_size)
{
	for (size_t i = 0; i < s->n; i++)
		decide_one(&s->arr[i], min_size);
}

/* ---- the patch ---- */

static const char helper_text[] =
	"\n"
	"/* numakit advise --source: the machine, loaded once at the start of main, freed at exit. */\n"
	"static nk_machine *nk_src_machine;\n"
	"\n"
	"static void nk_src_teardown(void)\n"
	"{\n"
	"\tnk_machine_free(nk_src_machine);\n"
	"\tnk_src_machine = NULL;\n"
	"}\n"
	"\n"
	"static void nk_src_setup(void)\n"
	"{\n"
	"\tnk_error err = { 0, \"\" };\n"
	"\tint rc = nk_machine_load_live(&nk_src_machine, &err);\n"
	"\n"
	"\tif (rc) {\n"
	"\t\tfprintf(stderr, \"numakit: memory left as it is: %s\\n\", err.message[0] ? err.message : "
	"nk_strerror(rc));\n"
	"\t\tnk_src_machine = NULL;\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tif (atexit(nk_src_teardown))\n"
	"\t\tfprintf(stderr, \"numakit: cannot register the machine's teardown\\n\");\n"
	"}\n"
	"\n"
	"/* Give [addr, addr + len) a numakit policy; a failure leaves the memory as it is and says why. */\n"
	"static void nk_src_place(void *addr, size_t len, const char *policy, const char *name)\n"
	"{\n"
	"\tnk_error err = { 0, \"\" };\n"
	"\tnk_policy *p = NULL;\n"
	"\tnk_plan *pl = NULL;\n"
	"\tnk_region r = { 0 };\n"
	"\tint rc;\n"
	"\n"
	"\tif (!nk_src_machine || !addr || !len)\n"
	"\t\treturn;\n"
	"\tr.addr = addr;\n"
	"\tr.len = len;\n"
	"\trc = nk_policy_parse(policy, &p, &err);\n"
	"\tif (!rc)\n"
	"\t\trc = nk_plan_build(nk_src_machine, p, &r, &pl, &err);\n"
	"\tif (!rc)\n"
	"\t\trc = nk_apply(nk_src_machine, pl, addr, 0, NULL, &err);\n"
	"\tif (rc)\n"
	"\t\tfprintf(stderr, \"numakit: %s: %s not applied: %s\\n\", name, policy,\n"
	"\t\t\terr.message[0] ? err.message : nk_strerror(rc));\n"
	"\tnk_plan_free(pl);\n"
	"\tnk_policy_free(p);\n"
	"}\n";

struct insertion {
	unsigned after; /* original line after which the text goes (0: before the first) */
	size_t order;   /* stable sort */
	char *text;     /* whole lines, each ending in '\n' */
};

static int ins_cmp(const void *x, const void *y)
{
	const struct insertion *a = x, *b = y;
	if (a->after != b->after)
		return a->after < b->after ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static unsigned count_lines(const char *t)
{
	unsigned n = 0;
	for (; *t; t++)
		n += *t == '\n';
	return n;
}

/* Emit each line of @p t with @p prefix. */
static void emit_prefixed(struct sbuf *b, const char *prefix, const char *t)
{
	while (*t) {
		const char *e = strchr(t, '\n');
		size_t n = e ? (size_t)(e - t) + 1 : strlen(t);
		sb_add(b, prefix);
		sb_addn(b, t, n);
		t += n;
	}
}

/* Does @p src have a line "#include <NAME>" (spaces allowed around '#')? */
static int has_include(const char *src, size_t len, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < len; i++) {
		if (i && src[i - 1] != '\n')
			continue;
		size_t j = i;
		while (j < len && (src[j] == ' ' || src[j] == '\t'))
			j++;
		if (j >= len || src[j] != '#')
			continue;
		j++;
		while (j < len && (src[j] == ' ' || src[j] == '\t'))
			j++;
		if (len - j < 7 || strncmp(src + j, "include", 7))
			continue;
		j += 7;
		while (j < len && (src[j] == ' ' || src[j] == '\t'))
			j++;
		if (j < len && src[j] == '<' && len - j - 1 > nl && !strncmp(src + j + 1, name, nl) &&
		    src[j + 1 + nl] == '>')
			return 1;
	}
	return 0;
}

int srcadv_patch(const struct srcadv_scan *s, const char *src, size_t len, char **out)
{
	struct insertion *ins = NULL;
	size_t nins = 0, *lstart = NULL, nlines = 0, placed = 0;
	struct sbuf b = { 0 }, setup = { 0 };
	int rc = -1;

	*out = NULL;
	for (size_t i = 0; i < s->n; i++)
		placed += s->arr[i].action == SRCADV_PLACE && !s->arr[i].nopatch[0];
	if (!s->has_main || !placed) {
		*out = strdup("");
		return *out ? 0 : -1;
	}
	/* line starts; a last line without '\n' counts */
	lstart = malloc((len + 2) * sizeof *lstart);
	ins = calloc(s->n + 2, sizeof *ins);
	if (!lstart || !ins)
		goto out;
	for (size_t i = 0; i < len; i++)
		if (i == 0 || src[i - 1] == '\n')
			lstart[nlines++] = i;
	lstart[nlines] = len;
	int no_eol = len && src[len - 1] != '\n';

	/* the includes and helpers */
	ins[nins].after = s->include_after;
	ins[nins].order = nins;
	ins[nins].text = strdup(s->include_after ? "\n" : "");
	if (!ins[nins].text)
		goto out;
	{
		struct sbuf h = { 0 };
		sb_add(&h, ins[nins].text);
		sb_add(&h, "#include <numakit.h> /* added by numakit advise --source */\n");
		/* the helpers use stdio (fprintf) and stdlib (atexit): added only when the file lacks them */
		if (!has_include(src, len, "stdio.h"))
			sb_add(&h, "#include <stdio.h>\n");
		if (!has_include(src, len, "stdlib.h"))
			sb_add(&h, "#include <stdlib.h>\n");
		sb_add(&h, helper_text);
		if (!s->include_after)
			sb_add(&h, "\n");
		free(ins[nins].text);
		ins[nins].text = sb_take(&h);
		if (!ins[nins].text)
			goto out;
		nins++;
	}
	/* the setup at the start of main, then the file-scope arrays */
	sb_printf(&setup, "%snk_src_setup();\n", s->main_indent);
	for (size_t i = 0; i < s->n; i++) {
		const struct srcadv_array *a = &s->arr[i];
		if (a->action != SRCADV_PLACE || a->nopatch[0] || a->insert_after)
			continue;
		sb_printf(&setup, "%snk_src_place(%s, %s, \"%s\", \"%s\");\n", s->main_indent, a->name, a->size_expr,
			  a->policy, a->name);
	}
	ins[nins].after = s->main_body_line;
	ins[nins].order = nins;
	if (!(ins[nins].text = sb_take(&setup)))
		goto out;
	nins++;
	/* main's arrays, after their declaration or allocation */
	for (size_t i = 0; i < s->n; i++) {
		const struct srcadv_array *a = &s->arr[i];
		struct sbuf t = { 0 };
		if (a->action != SRCADV_PLACE || a->nopatch[0] || !a->insert_after)
			continue;
		sb_printf(&t, "%snk_src_place(%s, %s, \"%s\", \"%s\");\n", a->indent, a->name, a->size_expr, a->policy,
			  a->name);
		ins[nins].after = a->insert_after;
		ins[nins].order = nins;
		if (!(ins[nins].text = sb_take(&t)))
			goto out;
		nins++;
	}
	for (size_t i = 0; i < nins; i++)
		if (ins[i].after > nlines || (no_eol && ins[i].after == nlines))
			goto out_bad;
	qsort(ins, nins, sizeof *ins, ins_cmp);

	sb_printf(&b, "--- a/%s\n+++ b/%s\n", s->file, s->file);
	long delta = 0; /* lines added before the current hunk */
	for (size_t i = 0; i < nins;) {
		/* a hunk: insertions whose 3-line contexts touch */
		size_t j = i + 1;
		unsigned lo = ins[i].after > 2 ? ins[i].after - 2 : 1; /* first original line shown */
		unsigned hi = ins[i].after + 3;                         /* last original line shown */
		while (j < nins && (ins[j].after > 2 ? ins[j].after - 2 : 1) <= hi + 1) {
			hi = ins[j].after + 3;
			j++;
		}
		if (hi > nlines)
			hi = (unsigned)nlines;
		long added = 0;
		for (size_t k = i; k < j; k++)
			added += count_lines(ins[k].text);
		long ol = hi >= lo ? (long)(hi - lo + 1) : 0;
		sb_printf(&b, "@@ -%u,%ld +%ld,%ld @@\n", ol ? lo : lo - 1, ol, (ol ? (long)lo : (long)lo - 1) + delta,
			  ol + added);
		size_t k = i;
		while (k < j && ins[k].after < lo)
			emit_prefixed(&b, "+", ins[k++].text);
		for (unsigned ln = lo; ln <= hi; ln++) {
			size_t st = lstart[ln - 1], en = lstart[ln];
			sb_add(&b, " ");
			sb_addn(&b, src + st, en - st);
			if (ln == nlines && no_eol)
				sb_add(&b, "\n\\ No newline at end of file\n");
			while (k < j && ins[k].after == ln)
				emit_prefixed(&b, "+", ins[k++].text);
		}
		delta += added;
		i = j;
	}
	*out = sb_take(&b);
	b.p = NULL;
	rc = *out ? 0 : -1;
	goto out;
out_bad:
	/* an insertion point past the file: the scan and the text disagree; no patch */
	*out = strdup("");
	rc = *out ? 0 : -1;
out:
	free(b.p);
	for (size_t i = 0; ins && i < nins; i++)
		free(ins[i].text);
	free(ins);
	free(lstart);
	return rc;
}

/* ---- printing ---- */

char *srcadv_format_text(const struct srcadv_scan *s)
{
	struct sbuf b = { 0 };
	size_t placed = 0;

	for (size_t i = 0; i < s->n; i++)
		placed += s->arr[i].action == SRCADV_PLACE;
	sb_printf(&b, "%s: %zu array%s, %u OpenMP directive%s, %zu to place\n", s->file, s->n, s->n == 1 ? "" : "s",
		  s->directives, s->directives == 1 ? "" : "s", placed);
	for (size_t i = 0; i < s->n; i++) {
		const struct srcadv_array *a = &s->arr[i];
		char sz[32];
		if (a->bytes)
			fmt_size(a->bytes, sz, sizeof sz);
		else
			snprintf(sz, sizeof sz, "size unknown");
		sb_printf(&b, "\n%s: %s%s%s, %s, line %u, %s%s%s\n", a->name, srcadv_kind_name(a->kind),
			  a->func[0] && a->kind == SRCADV_LOCAL_STATIC ? " in " : "",
			  a->func[0] && a->kind == SRCADV_LOCAL_STATIC ? a->func : "", a->type, a->decl_line, sz,
			  a->alloc[0] ? ", " : "", a->alloc);
		for (size_t k = 0; k < a->nacc; k++) {
			const struct srcadv_access *x = &a->acc[k];
			sb_printf(&b, "  %-10s line %-5u %-2s  %-9s  ", k ? "" : "parallel:", x->line,
				  srcadv_mode_name(x->mode), srcadv_shape_name(x->shape));
			if (x->in_loop)
				sb_printf(&b, "schedule(%s%s%s)", srcadv_sched_name(x->sched), x->chunk[0] ? ", " : "",
					  x->chunk);
			else
				sb_add(&b, "parallel region");
			sb_printf(&b, "  %s%s  (directive line %u)\n", srcadv_sharing_name(x->sharing),
				  x->single ? ", one thread" : "", x->pragma_line);
		}
		if (!a->nacc)
			sb_add(&b, "  parallel:  none\n");
		if (a->ninit) {
			sb_add(&b, "  serial writes: line");
			sb_add(&b, a->ninit > 1 ? "s" : "");
			for (size_t k = 0; k < a->ninit; k++)
				sb_printf(&b, "%s %u", k ? "," : "", a->init[k]);
			sb_add(&b, "\n");
		}
		if (a->action == SRCADV_PLACE)
			sb_printf(&b, "  advice: %s: %s\n", a->policy, a->reason);
		else
			sb_printf(&b, "  advice: leave it: %s\n", a->reason);
		if (a->action == SRCADV_PLACE && a->nopatch[0])
			sb_printf(&b, "  not in the patch: %s\n", a->nopatch);
	}
	if (placed && !s->has_main)
		sb_add(&b, "\nno main() in this file: no patch (the setup goes at the start of main)\n");
	return sb_take(&b);
}

static int jset(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

char *srcadv_format_json(const struct srcadv_scan *s, const char *patch)
{
	json_t *root = json_object(), *arrs = json_array();
	char *text = NULL;
	int bad = !root || !arrs;

	bad = bad || jset(root, "format", json_string("numakit-source-advice"));
	bad = bad || jset(root, "version", json_integer(1));
	bad = bad || jset(root, "file", json_string(s->file));
	bad = bad || jset(root, "main", json_boolean(s->has_main));
	bad = bad || jset(root, "openmp_directives", json_integer(s->directives));
	for (size_t i = 0; !bad && i < s->n; i++) {
		const struct srcadv_array *a = &s->arr[i];
		json_t *o = json_object(), *acc = json_array(), *init = json_array(), *adv = json_object();
		bad = !o || !acc || !init || !adv;
		if (bad) {
			json_decref(o);
			json_decref(acc);
			json_decref(init);
			json_decref(adv);
			break;
		}
		bad = json_array_append_new(arrs, o);
		bad = bad || jset(o, "name", json_string(a->name));
		bad = bad || jset(o, "kind", json_string(srcadv_kind_name(a->kind)));
		bad = bad || jset(o, "type", json_string(a->type));
		bad = bad || jset(o, "function", a->func[0] ? json_string(a->func) : json_null());
		bad = bad || jset(o, "line", json_integer(a->decl_line));
		bad = bad || jset(o, "bytes", a->bytes ? json_integer((json_int_t)a->bytes) : json_null());
		bad = bad || jset(o, "alloc", a->alloc[0] ? json_string(a->alloc) : json_null());
		/* attached now (borrowed below), so that an error path frees them with o */
		bad = bad || jset(o, "accesses", json_incref(acc)) || jset(o, "serial_writes", json_incref(init)) ||
		      jset(o, "advice", json_incref(adv));
		json_decref(acc);
		json_decref(init);
		json_decref(adv);
		for (size_t k = 0; !bad && k < a->nacc; k++) {
			const struct srcadv_access *x = &a->acc[k];
			json_t *e = json_object();
			bad = !e || json_array_append_new(acc, e);
			bad = bad || jset(e, "line", json_integer(x->line));
			bad = bad || jset(e, "mode", json_string(srcadv_mode_name(x->mode)));
			bad = bad || jset(e, "directive_line", json_integer(x->pragma_line));
			bad = bad || jset(e, "loop", json_boolean(x->in_loop));
			bad = bad || jset(e, "one_thread", json_boolean(x->single));
			bad = bad || jset(e, "schedule", x->in_loop ? json_string(srcadv_sched_name(x->sched)) : json_null());
			bad = bad || jset(e, "chunk", x->chunk[0] ? json_string(x->chunk) : json_null());
			bad = bad || jset(e, "sharing", json_string(srcadv_sharing_name(x->sharing)));
			bad = bad || jset(e, "sharing_explicit", json_boolean(x->sharing != SRCADV_SHARED_DEFAULT));
			bad = bad || jset(e, "index", json_string(srcadv_shape_name(x->shape)));
		}
		for (size_t k = 0; !bad && k < a->ninit; k++)
			bad = json_array_append_new(init, json_integer(a->init[k]));
		bad = bad || jset(adv, "action", json_string(a->action == SRCADV_PLACE ? "place" : "leave"));
		bad = bad || jset(adv, "policy", a->action == SRCADV_PLACE ? json_string(a->policy) : json_null());
		bad = bad || jset(adv, "reason", json_string(a->reason));
		bad = bad || jset(adv, "patched", json_boolean(a->action == SRCADV_PLACE && !a->nopatch[0] &&
							       s->has_main));
		bad = bad || jset(adv, "not_patched", a->nopatch[0] ? json_string(a->nopatch) : json_null());
	}
	if (!bad) {
		bad = jset(root, "arrays", arrs);
		arrs = NULL;
	}
	bad = bad || jset(root, "patch", patch ? json_string(patch) : json_null());
	if (!bad)
		text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(arrs);
	json_decref(root);
	return text;
}
