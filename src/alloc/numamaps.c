/* SPDX-License-Identifier: BSD-3-Clause
 * /proc/PID/numa_maps: parser, per-node totals and JSON.
 *
 * One line per mapping (fs/proc/task_mmu.c show_numa_map):
 *   ADDR POLICY [file=PATH | heap | stack] [huge] [anon=N] [dirty=N]
 *        [mapped=N] [mapmax=N] [swapcache=N] [active=N] [writeback=N]
 *        [N<node>=pages ...] [kernelpagesize_kB=K]
 * The kernel prints a counter only when it is non-zero and stops after the
 * policy (and file/heap/stack) when no page is resident, so a line with page
 * counts always ends in kernelpagesize_kB: its absence means the line was
 * cut.  Two policy names contain a space ("prefer (many)", "weighted
 * interleave"), so the policy is not simply the second word.  Paths come
 * through seq_path, which escapes space, tab, newline and backslash as
 * \ooo; they are decoded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "numakit.h"
#include "os/os.h"
#include "util/list.h"
#include "util/error.h"

struct nm_entry {
	uint64_t addr;
	char *policy;
	char *path;
	int type;
	uint64_t page_size;
	uint64_t pages;
	uint64_t anon, dirty, mapped, mapmax, swapcache, active, writeback;
	size_t nnodes;
	int *nodes;
	uint64_t *node_pages;
};

struct nk_numamaps {
	struct nm_entry *e;
	size_t n, cap;
};

/* Largest value anywhere (a count, a byte size): what JSON integers hold. */
#define NM_MAX ((uint64_t)INT64_MAX)

static void entry_clear(struct nm_entry *e)
{
	free(e->policy);
	free(e->path);
	free(e->nodes);
	free(e->node_pages);
	memset(e, 0, sizeof *e);
}

void nk_numamaps_free(nk_numamaps *nm)
{
	if (!nm)
		return;
	for (size_t i = 0; i < nm->n; i++)
		entry_clear(&nm->e[i]);
	free(nm->e);
	free(nm);
}

/* ---- parsing ---- */

struct nm_parser {
	size_t line;
	nk_error *err;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A token for a message: at most 40 bytes, non-printable bytes as '?'. */
static const char *shown(const char *tok, size_t len, char *buf, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < len && k + 4 < cap && i < 40; i++)
		buf[k++] = (tok[i] >= 0x20 && tok[i] < 0x7f) ? tok[i] : '?';
	if (len > 40 && k + 4 < cap) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

static int fail(struct nm_parser *ps, const char *what, const char *tok, size_t len)
{
	char b[64];

	if (tok)
		return nk__error(ps->err, NK_EPARSE, "numa_maps line %zu: %s '%s'", ps->line, what,
				 shown(tok, len, b, sizeof b));
	return nk__error(ps->err, NK_EPARSE, "numa_maps line %zu: %s", ps->line, what);
}

static int parse_dec(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (NM_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static int parse_hex(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || len > 16)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

static char *dup_n(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

/* seq_path's escapes: \ooo (three octal digits) -> the byte. */
static char *decode_path(const char *s, size_t len)
{
	char *d = malloc(len + 1);
	size_t k = 0;

	if (!d)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
			if (v != 0) {
				d[k++] = (char)v;
				i += 3;
				continue;
			}
		}
		d[k++] = s[i];
	}
	d[k] = '\0';
	return d;
}

static int add_node(struct nm_parser *ps, struct nm_entry *e, int node, uint64_t pages, size_t *cap,
		    const char *tok, size_t len)
{
	for (size_t i = 0; i < e->nnodes; i++)
		if (e->nodes[i] == node)
			return fail(ps, "node counted twice:", tok, len);
	if (e->nnodes == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4;
		int *nn = realloc(e->nodes, ncap * sizeof *nn);
		if (!nn)
			return nk__error(ps->err, NK_ENOMEM, "out of memory");
		e->nodes = nn;
		uint64_t *np = realloc(e->node_pages, ncap * sizeof *np);
		if (!np)
			return nk__error(ps->err, NK_ENOMEM, "out of memory");
		e->node_pages = np;
		*cap = ncap;
	}
	/* keep increasing order (the kernel prints it so; hand-made text may not) */
	size_t at = e->nnodes;
	while (at > 0 && e->nodes[at - 1] > node) {
		e->nodes[at] = e->nodes[at - 1];
		e->node_pages[at] = e->node_pages[at - 1];
		at--;
	}
	e->nodes[at] = node;
	e->node_pages[at] = pages;
	e->nnodes++;
	return 0;
}

static const char *const counter_keys[] = { "anon", "dirty", "mapped", "mapmax", "swapcache", "active",
					    "writeback" };

static uint64_t *counter_slot(struct nm_entry *e, size_t k)
{
	uint64_t *slots[] = { &e->anon, &e->dirty, &e->mapped, &e->mapmax, &e->swapcache, &e->active,
			      &e->writeback };
	return slots[k];
}

/* A bare word that starts a key=value the kernel writes: what a cut-off line ends in. */
static int is_key_prefix(const char *w, size_t wl)
{
	static const char *const keys[] = { "kernelpagesize_kB=", "file=", "anon=", "dirty=", "mapped=",
					    "mapmax=", "swapcache=", "active=", "writeback=" };

	if (wl >= 1 && w[0] == 'N' && (wl == 1 || (w[1] >= '0' && w[1] <= '9')))
		return 1; /* "N" or "N12" of N12=pages */
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (wl < strlen(keys[k]) && memcmp(w, keys[k], wl) == 0)
			return 1;
	return 0;
}

/* Policy names containing a space (mm/mempolicy.c policy_modes[]). */
static const char *const spaced_modes[] = { "prefer (many)", "weighted interleave" };

static int parse_line(struct nm_parser *ps, const char *s, size_t len, struct nm_entry *e)
{
	size_t i = 0, t, node_cap = 0;
	int have_psz = 0, rc;

	memset(e, 0, sizeof *e);
	e->type = NK_MAPS_ANON;
	/* address */
	for (t = i; i < len && !is_space(s[i]); i++)
		;
	if (parse_hex(s + t, i - t, &e->addr))
		return fail(ps, "expected a hexadecimal address, found", s + t, i - t);
	while (i < len && is_space(s[i]))
		i++;
	if (i == len)
		return fail(ps, "no memory policy after the address (truncated line?)", NULL, 0);
	/* policy */
	t = i;
	for (size_t k = 0; k < sizeof spaced_modes / sizeof spaced_modes[0]; k++) {
		size_t ml = strlen(spaced_modes[k]);
		if (len - i >= ml && memcmp(s + i, spaced_modes[k], ml) == 0) {
			i += ml;
			break;
		}
	}
	while (i < len && !is_space(s[i]))
		i++;
	e->policy = dup_n(s + t, i - t);
	if (!e->policy)
		return nk__error(ps->err, NK_ENOMEM, "out of memory");
	/* the rest: words */
	for (;;) {
		while (i < len && is_space(s[i]))
			i++;
		if (i == len)
			break;
		t = i;
		while (i < len && !is_space(s[i]))
			i++;
		const char *w = s + t;
		size_t wl = i - t;
		const char *eq = memchr(w, '=', wl);
		uint64_t v;

		if (!eq) {
			if (wl == 4 && memcmp(w, "heap", 4) == 0) {
				e->type = NK_MAPS_HEAP;
				free(e->path);
				e->path = dup_n("[heap]", 6);
			} else if ((wl == 5 && memcmp(w, "stack", 5) == 0) ||
				   (wl > 6 && memcmp(w, "stack:", 6) == 0)) {
				/* "stack:TID" is what kernels before 4.5 wrote for thread stacks */
				e->type = NK_MAPS_STACK;
				free(e->path);
				e->path = dup_n("[stack]", 7);
			} else if (wl == 4 && memcmp(w, "huge", 4) == 0) {
				e->type = NK_MAPS_HUGE;
				continue;
			} else if (is_key_prefix(w, wl)) {
				return fail(ps, "cut-off word (truncated line?)", w, wl);
			} else {
				return fail(ps, "unknown word", w, wl);
			}
			if (!e->path)
				return nk__error(ps->err, NK_ENOMEM, "out of memory");
			continue;
		}
		size_t kl = (size_t)(eq - w);
		const char *val = eq + 1;
		size_t vl = wl - kl - 1;

		if (kl == 4 && memcmp(w, "file", 4) == 0) {
			if (!vl)
				return fail(ps, "empty file name in", w, wl);
			free(e->path);
			e->path = decode_path(val, vl);
			if (!e->path)
				return nk__error(ps->err, NK_ENOMEM, "out of memory");
			if (e->type != NK_MAPS_HUGE)
				e->type = NK_MAPS_FILE;
			continue;
		}
		if (kl >= 2 && w[0] == 'N' && w[1] >= '0' && w[1] <= '9') {
			uint64_t node;
			if (parse_dec(w + 1, kl - 1, &node) || node > NK__MAX_ID)
				return fail(ps, "bad node id in", w, wl);
			if (parse_dec(val, vl, &v))
				return fail(ps, "bad page count in", w, wl);
			rc = add_node(ps, e, (int)node, v, &node_cap, w, wl);
			if (rc)
				return rc;
			continue;
		}
		if (kl == 17 && memcmp(w, "kernelpagesize_kB", 17) == 0) {
			if (parse_dec(val, vl, &v) || v == 0 || v > NM_MAX / 1024)
				return fail(ps, "bad page size in", w, wl);
			e->page_size = v * 1024;
			have_psz = 1;
			continue;
		}
		size_t k;
		for (k = 0; k < sizeof counter_keys / sizeof counter_keys[0]; k++)
			if (kl == strlen(counter_keys[k]) && memcmp(w, counter_keys[k], kl) == 0)
				break;
		if (k < sizeof counter_keys / sizeof counter_keys[0]) {
			if (parse_dec(val, vl, &v))
				return fail(ps, "bad count in", w, wl);
			*counter_slot(e, k) = v;
			continue;
		}
		/* Another key=value: a counter a newer kernel added.  Ignored, but
		 * it must look like one (a name and a count). */
		if (!kl)
			return fail(ps, "malformed word", w, wl);
		if (parse_dec(val, vl, &v))
			return fail(ps, "unknown word", w, wl);
	}
	if (!e->path) {
		e->path = dup_n("", 0);
		if (!e->path)
			return nk__error(ps->err, NK_ENOMEM, "out of memory");
	}
	if (e->nnodes && !have_psz)
		return fail(ps, "page counts without kernelpagesize_kB (truncated line?)", NULL, 0);
	for (size_t n = 0; n < e->nnodes; n++) {
		if (e->node_pages[n] > NM_MAX / (e->page_size ? e->page_size : 1) ||
		    e->pages > NM_MAX - e->node_pages[n])
			return fail(ps, "page counts too large", NULL, 0);
		e->pages += e->node_pages[n];
	}
	if (e->pages > NM_MAX / (e->page_size ? e->page_size : 1))
		return fail(ps, "page counts too large", NULL, 0);
	return 0;
}

int nk_numamaps_parse(const char *text, size_t len, nk_numamaps **out, nk_error *err)
{
	struct nm_parser ps = { 0, err };
	nk_numamaps *nm;
	size_t pos = 0;
	int rc = 0;

	if (!text || !out)
		return nk__error(err, NK_EINVAL, "numa_maps: no text");
	nm = calloc(1, sizeof *nm);
	if (!nm)
		return nk__error(err, NK_ENOMEM, "out of memory");
	while (pos < len) {
		const char *ln = text + pos;
		const char *nl = memchr(ln, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - ln) : len - pos;
		size_t b;

		pos += ll + (nl ? 1 : 0);
		ps.line++;
		if (memchr(ln, '\0', ll)) {
			rc = fail(&ps, "NUL byte in the line", NULL, 0);
			goto out_free;
		}
		for (b = 0; b < ll && is_space(ln[b]); b++)
			;
		if (b == ll)
			continue; /* blank line */
		if (nm->n == nm->cap) {
			size_t ncap = nm->cap ? nm->cap * 2 : 64;
			struct nm_entry *ne = realloc(nm->e, ncap * sizeof *ne);
			if (!ne) {
				rc = nk__error(err, NK_ENOMEM, "out of memory");
				goto out_free;
			}
			nm->e = ne;
			nm->cap = ncap;
		}
		rc = parse_line(&ps, ln + b, ll - b, &nm->e[nm->n]);
		if (rc) {
			entry_clear(&nm->e[nm->n]);
			goto out_free;
		}
		nm->n++;
	}
	*out = nm;
	return 0;
out_free:
	nk_numamaps_free(nm);
	return rc;
}

int nk_numamaps_read(int pid, nk_numamaps **out, nk_error *err)
{
	char *text = NULL;
	size_t len = 0;
	int e = 0, rc;
	char who[32];

	if (!out || pid < 0)
		return nk__error(err, NK_EINVAL, "numa_maps: bad process id %d", pid);
	if (pid)
		snprintf(who, sizeof who, "process %d", pid);
	else
		snprintf(who, sizeof who, "the calling process");
	rc = nk__os_read_numa_maps(pid, &text, &len, &e);
	switch (rc) {
	case 0:
		break;
	case NK_ENOENT:
		return nk__error(err, rc, "%s does not exist", who);
	case NK_EPERM:
		return nk__error(err, rc, "cannot read the numa_maps of %s: %s (needs ptrace access: same user, or root)",
				 who, strerror(e ? e : EACCES));
	case NK_ENOSYS:
		return nk__error(err, rc, "%s has no numa_maps: the kernel was built without NUMA support", who);
	case NK_ENOMEM:
		return nk__error(err, rc, "out of memory");
	default:
		return nk__error(err, rc, "cannot read the numa_maps of %s: %s", who,
				 e ? strerror(e) : nk_strerror(rc));
	}
	rc = nk_numamaps_parse(text, len, out, err);
	free(text);
	return rc;
}

/* ---- queries ---- */

size_t nk_numamaps_count(const nk_numamaps *nm)
{
	return nm ? nm->n : 0;
}

int nk_numamaps_entry(const nk_numamaps *nm, size_t idx, nk_maps_entry *out)
{
	const struct nm_entry *e;

	if (!nm || !out || idx >= nm->n)
		return NK_EINVAL;
	e = &nm->e[idx];
	out->addr = e->addr;
	out->policy = e->policy;
	out->type = e->type;
	out->path = e->path;
	out->page_size = e->page_size;
	out->pages = e->pages;
	out->anon = e->anon;
	out->dirty = e->dirty;
	out->mapped = e->mapped;
	out->mapmax = e->mapmax;
	out->swapcache = e->swapcache;
	out->active = e->active;
	out->writeback = e->writeback;
	out->nnodes = e->nnodes;
	out->nodes = e->nodes;
	out->node_pages = e->node_pages;
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > NM_MAX - b ? NM_MAX : a + b;
}

/* Distinct nodes with their bytes, increasing ids, into freshly allocated arrays. */
static int collect_totals(const nk_numamaps *nm, int **nodes_out, uint64_t **bytes_out, size_t *n_out)
{
	nk__ilist ids = { 0 };
	uint64_t *bytes = NULL;

	for (size_t i = 0; i < nm->n; i++)
		for (size_t k = 0; k < nm->e[i].nnodes; k++)
			if (nk__ilist_push(&ids, nm->e[i].nodes[k]))
				goto out_nomem;
	nk__ilist_normalize(&ids);
	bytes = calloc(ids.n ? ids.n : 1, sizeof *bytes);
	if (!bytes)
		goto out_nomem;
	for (size_t i = 0; i < nm->n; i++) {
		const struct nm_entry *e = &nm->e[i];
		for (size_t k = 0; k < e->nnodes; k++) {
			/* binary search: ids is sorted */
			size_t lo = 0, hi = ids.n;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (ids.v[mid] < e->nodes[k])
					lo = mid + 1;
				else
					hi = mid;
			}
			bytes[lo] = sat_add(bytes[lo], e->node_pages[k] * e->page_size);
		}
	}
	*nodes_out = ids.v;
	*bytes_out = bytes;
	*n_out = ids.n;
	return 0;
out_nomem:
	nk__ilist_free(&ids);
	free(bytes);
	return NK_ENOMEM;
}

int nk_numamaps_totals(const nk_numamaps *nm, int *nodes, uint64_t *bytes, size_t cap)
{
	int *ids = NULL;
	uint64_t *b = NULL;
	size_t n = 0;
	int rc;

	if (!nm)
		return NK_EINVAL;
	rc = collect_totals(nm, &ids, &b, &n);
	if (rc)
		return rc;
	if (n > (size_t)INT32_MAX) {
		free(ids);
		free(b);
		return NK_ERANGE;
	}
	for (size_t i = 0; i < n && i < cap; i++) {
		if (nodes)
			nodes[i] = ids[i];
		if (bytes)
			bytes[i] = b[i];
	}
	free(ids);
	free(b);
	return (int)n;
}

/* ---- JSON ---- */

static const char *type_name(int t)
{
	switch (t) {
	case NK_MAPS_FILE:
		return "file";
	case NK_MAPS_HEAP:
		return "heap";
	case NK_MAPS_STACK:
		return "stack";
	case NK_MAPS_HUGE:
		return "huge";
	default:
		return "anon";
	}
}

/* json_object_set_new that remembers a failure (ENOMEM) instead of returning it each time. */
static void oset(int *bad, json_t *o, const char *k, json_t *v)
{
	if (!o || !v || json_object_set_new(o, k, v))
		*bad = 1;
}

static void apush(int *bad, json_t *a, json_t *v)
{
	if (!a || !v || json_array_append_new(a, v))
		*bad = 1;
}

/* A JSON string of bytes that may not be UTF-8 (paths, fuzzed text): invalid bytes become '?'. */
static json_t *jstr(const char *s)
{
	json_t *v = json_string(s);
	char *c;

	if (v)
		return v;
	c = strdup(s);
	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	v = json_string(c);
	free(c);
	return v;
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)(v > NM_MAX ? NM_MAX : v));
}

int nk_numamaps_to_json(const nk_numamaps *nm, int pid, unsigned flags, char **out)
{
	json_t *root = NULL, *maps, *totals, *tnodes;
	int *ids = NULL;
	uint64_t *bytes = NULL, all = 0;
	size_t nt = 0;
	int bad = 0, rc;
	char addr[24];

	if (!nm || !out || (flags & ~NK_JSON_ALLFLAGS) || pid < 0)
		return NK_EINVAL;
	rc = collect_totals(nm, &ids, &bytes, &nt);
	if (rc)
		return rc;
	root = json_object();
	oset(&bad, root, "format", json_string("numakit-numamaps"));
	oset(&bad, root, "version", json_integer(1));
	oset(&bad, root, "numakit_version", json_string(nk_version()));
	oset(&bad, root, "pid", pid ? json_integer(pid) : json_null());
	maps = json_array();
	oset(&bad, root, "mappings", maps);
	for (size_t i = 0; i < nm->n && !bad; i++) {
		const struct nm_entry *e = &nm->e[i];
		json_t *m = json_object(), *nodes = json_array();

		apush(&bad, maps, m);
		snprintf(addr, sizeof addr, "0x%" PRIx64, e->addr);
		oset(&bad, m, "address", json_string(addr));
		oset(&bad, m, "policy", jstr(e->policy));
		oset(&bad, m, "type", json_string(type_name(e->type)));
		oset(&bad, m, "path", jstr(e->path));
		oset(&bad, m, "page_size", jint(e->page_size));
		oset(&bad, m, "pages", jint(e->pages));
		oset(&bad, m, "bytes", jint(e->pages * e->page_size));
		for (size_t k = 0; k < sizeof counter_keys / sizeof counter_keys[0]; k++)
			oset(&bad, m, counter_keys[k], jint(*counter_slot((struct nm_entry *)e, k)));
		oset(&bad, m, "nodes", nodes);
		for (size_t k = 0; k < e->nnodes; k++) {
			json_t *n = json_object();
			apush(&bad, nodes, n);
			oset(&bad, n, "node", json_integer(e->nodes[k]));
			oset(&bad, n, "pages", jint(e->node_pages[k]));
			oset(&bad, n, "bytes", jint(e->node_pages[k] * e->page_size));
		}
	}
	totals = json_object();
	tnodes = json_array();
	oset(&bad, root, "totals", totals);
	for (size_t k = 0; k < nt; k++) {
		json_t *n = json_object();
		apush(&bad, tnodes, n);
		oset(&bad, n, "node", json_integer(ids[k]));
		oset(&bad, n, "bytes", jint(bytes[k]));
		all = sat_add(all, bytes[k]);
	}
	oset(&bad, totals, "bytes", jint(all));
	oset(&bad, totals, "nodes", tnodes);
	if (!bad) {
		*out = json_dumps(root, (flags & NK_JSON_COMPACT) ? JSON_COMPACT : JSON_INDENT(2));
		if (!*out)
			bad = 1;
	}
	json_decref(root);
	free(ids);
	free(bytes);
	return bad ? NK_ENOMEM : 0;
}
