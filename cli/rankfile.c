/* SPDX-License-Identifier: BSD-3-Clause
 * Rank maps (rankfile.h): Open MPI's rankfile and numakit's numakit-rank-map JSON, read into one list of
 * slots.  Every refusal is one line naming where (the line, or the map's index) and what was expected,
 * because the file is often written by hand or by another tool.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "rankfile.h"
#include "why.h"

#define MAX_ID 65535 /* node and cpu ids, as the library's lists (NK__MAX_ID) */


void cli_rankfile_free(struct cli_rankfile *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->slots[i].host);
		free(f->slots[i].cpus);
	}
	free(f->slots);
	memset(f, 0, sizeof *f);
}

static int cmp_slot(const void *x, const void *y)
{
	const struct cli_rank_slot *a = x, *b = y;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

const struct cli_rank_slot *cli_rankfile_find(const struct cli_rankfile *f, int rank)
{
	size_t lo = 0, hi = f ? f->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->slots[mid].rank == rank)
			return &f->slots[mid];
		if (f->slots[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

char *cli_rankfile_ranks(const struct cli_rankfile *f)
{
	int *ids = malloc((f->n ? f->n : 1) * sizeof *ids);
	char *s = NULL;
	if (!ids)
		return NULL;
	for (size_t i = 0; i < f->n; i++)
		ids[i] = f->slots[i].rank;
	/* ranks go beyond the library's id lists' bound: formatted here */
	size_t cap = 24 * (f->n + 1), len = 0;
	if ((s = malloc(cap))) {
		s[0] = 0;
		for (size_t i = 0; i < f->n;) {
			size_t j = i;
			while (j + 1 < f->n && ids[j + 1] == ids[j] + 1)
				j++;
			if (j == i)
				len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "", ids[i]);
			else
				len += (size_t)snprintf(s + len, cap - len, "%s%d-%d", i ? "," : "", ids[i], ids[j]);
			i = j + 1;
		}
	}
	free(ids);
	return s;
}

/* Slots sorted by rank; a rank given twice is refused.  0 or -1. */
static int finish(struct cli_rankfile *f, char *why, size_t cap)
{
	if (!f->n)
		return nk__cli_fail(why, cap, "the map has no rank (expected lines \"rank N=HOST slot=CPUS\", or a "
				      "numakit-rank-map JSON object)");
	qsort(f->slots, f->n, sizeof *f->slots, cmp_slot);
	for (size_t i = 1; i < f->n; i++)
		if (f->slots[i].rank == f->slots[i - 1].rank) {
			const struct cli_rank_slot *a = &f->slots[i - 1], *b = &f->slots[i];
			return nk__cli_fail(why, cap, "%s %d: rank %d is given twice (also %s %d)", f->json ? "map entry" : "line",
				    a->line > b->line ? a->line : b->line, a->rank, f->json ? "map entry" : "line",
				    a->line > b->line ? b->line : a->line);
		}
	return 0;
}

static struct cli_rank_slot *grow(struct cli_rankfile *f, size_t *cap)
{
	if (f->n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct cli_rank_slot *s = realloc(f->slots, c * sizeof *s);
		if (!s)
			return NULL;
		f->slots = s;
		*cap = c;
	}
	memset(&f->slots[f->n], 0, sizeof f->slots[f->n]);
	return &f->slots[f->n++];
}

/* A decimal number in 0..max at *p, advancing *p; -1 when there is none or it is larger. */
static long number(const char **p, const char *end, long max)
{
	const char *s = *p;
	long v = 0;
	if (s == end || !isdigit((unsigned char)*s))
		return -1;
	for (; s < end && isdigit((unsigned char)*s); s++) {
		v = v * 10 + (*s - '0');
		if (v > max)
			return -2;
	}
	*p = s;
	return v;
}

static const char *skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

/* One line of a rankfile, [p, end) without its newline nor comment; blank lines are skipped. */
static int rankfile_line(struct cli_rankfile *f, size_t *slots_cap, int lineno, const char *p, const char *end,
			 char *why, size_t cap)
{
	static const char expected[] = "expected \"rank N=HOST slot=CPUS\"";
	p = skip_blank(p, end);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (p == end)
		return 0;
	if ((size_t)(end - p) < 4 || strncmp(p, "rank", 4) || (p + 4 < end && !isblank((unsigned char)p[4])))
		return nk__cli_fail(why, cap, "line %d: %s", lineno, expected);
	p = skip_blank(p + 4, end);
	long rank = number(&p, end, CLI_RANKFILE_MAX_RANK);
	if (rank == -2)
		return nk__cli_fail(why, cap, "line %d: the rank is larger than %d", lineno, CLI_RANKFILE_MAX_RANK);
	if (rank < 0)
		return nk__cli_fail(why, cap, "line %d: %s: the rank is not a number", lineno, expected);
	p = skip_blank(p, end);
	if (p == end || *p != '=')
		return nk__cli_fail(why, cap, "line %d: %s: no '=' after the rank", lineno, expected);
	p = skip_blank(p + 1, end);
	const char *h = p;
	while (p < end && !isblank((unsigned char)*p))
		p++;
	if (p == h || (p - h >= 5 && !strncmp(h, "slot=", 5)))
		return nk__cli_fail(why, cap, "line %d: %s: no host after '='", lineno, expected);
	for (const char *c = h; c < p; c++)
		if (!isgraph((unsigned char)*c) || *c == '=')
			return nk__cli_fail(why, cap, "line %d: the host has a character a host name cannot have", lineno);
	const char *host_end = p;
	p = skip_blank(p, end);
	if ((size_t)(end - p) < 5 || strncmp(p, "slot", 4))
		return nk__cli_fail(why, cap, "line %d: %s: no slot", lineno, expected);
	p = skip_blank(p + 4, end);
	if (p == end || *p != '=')
		return nk__cli_fail(why, cap, "line %d: %s: no '=' after slot", lineno, expected);
	p = skip_blank(p + 1, end);
	const char *s = p;
	while (p < end && !isblank((unsigned char)*p))
		p++;
	const char *slot_end = p;
	if (skip_blank(p, end) != end)
		return nk__cli_fail(why, cap, "line %d: unexpected text after the slot (numakit reads \"rank N=HOST slot=CPUS\"; "
				      "Open MPI's options after the slot are not read)", lineno);
	if (s == slot_end)
		return nk__cli_fail(why, cap, "line %d: the slot is empty", lineno);
	if (memchr(s, ':', (size_t)(slot_end - s)))
		return nk__cli_fail(why, cap, "line %d: slot=%.*s: Open MPI's socket:core form (logical numbering) is not "
				      "read: give physical cpus (\"slot=0-3\", as numakit advise --ranks writes them)",
			    lineno, (int)(slot_end - s > 40 ? 40 : slot_end - s), s);
	for (const char *c = s; c < slot_end; c++)
		if (!isdigit((unsigned char)*c) && *c != ',' && *c != '-')
			return nk__cli_fail(why, cap, "line %d: slot=%.*s: expected a cpu list such as \"0-3,8\"", lineno,
				    (int)(slot_end - s > 40 ? 40 : slot_end - s), s);
	char *list = strndup(s, (size_t)(slot_end - s)), *host = strndup(h, (size_t)(host_end - h));
	nk_error err = { 0, "" };
	int k = list ? nk_parse_list(list, NULL, 0, &err) : -1;
	int *cpus = NULL;
	struct cli_rank_slot *slot = NULL;
	if (!list || !host)
		goto nomem;
	if (k < 0) {
		nk__cli_fail(why, cap, "line %d: slot=%s: %s", lineno, list, err.message[0] ? err.message : nk_strerror(k));
		goto bad;
	}
	if (k == 0) {
		nk__cli_fail(why, cap, "line %d: the slot names no cpu", lineno);
		goto bad;
	}
	if (!(cpus = malloc((size_t)k * sizeof *cpus)))
		goto nomem;
	nk_parse_list(list, cpus, (size_t)k, NULL);
	if (!(slot = grow(f, slots_cap)))
		goto nomem;
	*slot = (struct cli_rank_slot){ (int)rank, host, -1, cpus, (size_t)k, lineno };
	free(list);
	return 0;
nomem:
	nk__cli_fail(why, cap, "out of memory");
bad:
	free(list);
	free(host);
	free(cpus);
	return -1;
}

static int parse_rankfile(const char *text, size_t len, struct cli_rankfile *f, char *why, size_t cap)
{
	size_t slots_cap = 0;
	int lineno = 0;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop = nl ? nl : end;
		const char *hash = memchr(p, '#', (size_t)(stop - p));
		if (++lineno == INT_MAX)
			return nk__cli_fail(why, cap, "too many lines");
		if (rankfile_line(f, &slots_cap, lineno, p, hash ? hash : stop, why, cap))
			return -1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static int parse_json(const char *text, size_t len, struct cli_rankfile *f, char *why, size_t cap)
{
	json_error_t jerr;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), *v, *map, *e;
	size_t slots_cap = 0, i;
	int rc = -1;
	f->json = 1;
	if (!o)
		return nk__cli_fail(why, cap, "line %d: not JSON: %s", jerr.line, jerr.text);
	if (!json_is_object(o)) {
		nk__cli_fail(why, cap, "expected a numakit-rank-map object");
		goto out;
	}
	v = json_object_get(o, "format");
	if (!json_is_string(v) || strcmp(json_string_value(v), "numakit-rank-map")) {
		nk__cli_fail(why, cap, "\"format\" is not \"numakit-rank-map\" (`numakit advise --ranks --json` writes one)");
		goto out;
	}
	v = json_object_get(o, "version");
	if (!json_is_integer(v) || json_integer_value(v) < 1) {
		nk__cli_fail(why, cap, "\"version\" is not a positive integer");
		goto out;
	}
	if (json_integer_value(v) != 1) {
		nk__cli_fail(why, cap, "version %lld: this numakit reads version 1", (long long)json_integer_value(v));
		goto out;
	}
	map = json_object_get(o, "map");
	if (!json_is_array(map)) {
		nk__cli_fail(why, cap, "\"map\" is not an array");
		goto out;
	}
	json_array_foreach (map, i, e) {
		json_t *r = json_object_get(e, "rank"), *n = json_object_get(e, "node"), *h = json_object_get(e, "host");
		struct cli_rank_slot *s;
		char *host;
		if (!json_is_object(e)) {
			nk__cli_fail(why, cap, "map[%zu]: not an object", i);
			goto out;
		}
		if (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > CLI_RANKFILE_MAX_RANK) {
			nk__cli_fail(why, cap, "map[%zu]: \"rank\" is not an integer in 0..%d", i, CLI_RANKFILE_MAX_RANK);
			goto out;
		}
		if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > MAX_ID) {
			nk__cli_fail(why, cap, "map[%zu]: \"node\" is not an integer in 0..%d", i, MAX_ID);
			goto out;
		}
		if (h && !json_is_null(h) && !json_is_string(h)) {
			nk__cli_fail(why, cap, "map[%zu]: \"host\" is not a string", i);
			goto out;
		}
		if (json_is_string(h) && strlen(json_string_value(h)) != json_string_length(h)) {
			nk__cli_fail(why, cap, "map[%zu]: \"host\" holds a NUL byte", i);
			goto out;
		}
		if (!(host = strdup(json_is_string(h) ? json_string_value(h) : "")) || !(s = grow(f, &slots_cap))) {
			free(host);
			nk__cli_fail(why, cap, "out of memory");
			goto out;
		}
		*s = (struct cli_rank_slot){ (int)json_integer_value(r), host, (int)json_integer_value(n), NULL, 0,
					     (int)(i < INT_MAX ? i + 1 : INT_MAX) };
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

int cli_rankfile_parse(const char *text, size_t len, struct cli_rankfile *out, char *why, size_t whycap)
{
	struct cli_rankfile f = { 0 };
	const char *p = text;
	int rc;
	if (why && whycap)
		why[0] = 0;
	memset(out, 0, sizeof *out);
	if (!text && len)
		return nk__cli_fail(why, whycap, "no text");
	if (len > CLI_RANKFILE_MAX_BYTES)
		return nk__cli_fail(why, whycap, "larger than %u MiB", CLI_RANKFILE_MAX_BYTES >> 20);
	if (len && memchr(text, 0, len))
		return nk__cli_fail(why, whycap, "a NUL byte: not a text file");
	while (p < text + len && isspace((unsigned char)*p))
		p++;
	if (p < text + len && *p == '{')
		rc = parse_json(text, len, &f, why, whycap);
	else
		rc = parse_rankfile(text, len, &f, why, whycap);
	if (!rc)
		rc = finish(&f, why, whycap);
	if (rc) {
		cli_rankfile_free(&f);
		return -1;
	}
	*out = f;
	return 0;
}

int cli_rankfile_load(const char *path, struct cli_rankfile *out, char *why, size_t whycap)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;
	memset(out, 0, sizeof *out);
	if (!fp)
		return nk__cli_fail(why, whycap, "%s", strerror(errno));
	for (;;) {
		if (len == cap) {
			char *b;
			if (cap > CLI_RANKFILE_MAX_BYTES) {
				fclose(fp);
				free(buf);
				return nk__cli_fail(why, whycap, "larger than %u MiB", CLI_RANKFILE_MAX_BYTES >> 20);
			}
			cap = cap ? 2 * cap : 4096;
			if (!(b = realloc(buf, cap + 1))) {
				fclose(fp);
				free(buf);
				return nk__cli_fail(why, whycap, "out of memory");
			}
			buf = b;
		}
		size_t k = fread(buf + len, 1, cap - len, fp);
		len += k;
		if (k == 0)
			break;
	}
	if (ferror(fp)) {
		int e = errno;
		fclose(fp);
		free(buf);
		return nk__cli_fail(why, whycap, "%s", strerror(e ? e : EIO));
	}
	fclose(fp);
	rc = cli_rankfile_parse(buf, len, out, why, whycap);
	free(buf);
	return rc;
}
