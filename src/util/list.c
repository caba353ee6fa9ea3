/* SPDX-License-Identifier: BSD-3-Clause */
/* Id lists: the text forms used by Linux (cpulist, cpumap) and by our CLI. */
#include "util/list.h"
#include "util/error.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nk__ilist_push(nk__ilist *l, int x)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 8;
		int *nv = realloc(l->v, ncap * sizeof *nv);
		if (!nv)
			return NK_ENOMEM;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = x;
	return 0;
}

void nk__ilist_free(nk__ilist *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

void nk__ilist_normalize(nk__ilist *l)
{
	size_t i, j = 0;
	if (l->n < 2)
		return;
	qsort(l->v, l->n, sizeof *l->v, cmp_int);
	for (i = 1; i < l->n; i++)
		if (l->v[i] != l->v[j])
			l->v[++j] = l->v[i];
	l->n = j + 1;
}

int nk__ilist_contains(const nk__ilist *l, int x)
{
	return l->n && bsearch(&x, l->v, l->n, sizeof *l->v, cmp_int) != NULL;
}

int nk__ilist_copy(nk__ilist *dst, const int *src, size_t n)
{
	nk__ilist tmp = { 0 };
	for (size_t i = 0; i < n; i++)
		if (nk__ilist_push(&tmp, src[i])) {
			nk__ilist_free(&tmp);
			return NK_ENOMEM;
		}
	nk__ilist_free(dst);
	*dst = tmp;
	return 0;
}

static void why_set(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t len, const char *fmt, ...)
{
	if (why && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
}

/* Up to 16 bytes of input for a message, non-printable bytes as '?', so a
 * message stays one line of text whatever the input holds. */
static const char *snippet(const char *p, const char *end, char buf[17])
{
	size_t n = (size_t)(end - p) > 16 ? 16 : (size_t)(end - p);
	for (size_t i = 0; i < n; i++)
		buf[i] = isprint((unsigned char)p[i]) ? p[i] : '?';
	buf[n] = '\0';
	return buf;
}

/* Trim a sysfs value: surrounding whitespace; stop at an embedded NUL. */
static void trim_bounds(const char *text, const char **b, const char **e)
{
	const char *s = text, *t = text + strlen(text);
	while (s < t && isspace((unsigned char)*s))
		s++;
	while (t > s && isspace((unsigned char)t[-1]))
		t--;
	*b = s;
	*e = t;
}

static int parse_uint(const char **p, const char *end, long *out)
{
	const char *s = *p;
	long v = 0;
	if (s >= end || !isdigit((unsigned char)*s))
		return -1;
	while (s < end && isdigit((unsigned char)*s)) {
		v = v * 10 + (*s - '0');
		if (v > NK__MAX_ID)
			return -2;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

/*
 * Ranges are collected in a bitmap of NK__MAX_ID + 1 bits (8 KiB), so input
 * that repeats huge ranges costs O(input + ids), never more memory than the
 * bitmap and the output.
 */
int nk__parse_list(const char *text, nk__ilist *out, char *why, size_t whylen)
{
	nk__ilist l = { 0 };
	const char *p, *end;
	uint64_t *bits = NULL;
	char snip[17];
	int rc = NK_EPARSE;

	out->n = 0;
	if (!text) {
		why_set(why, whylen, "no list given");
		return NK_EPARSE;
	}
	trim_bounds(text, &p, &end);
	if (p == end) {
		nk__ilist_free(out);
		return 0;
	}
	bits = calloc((NK__MAX_ID + 64) / 64, sizeof *bits);
	if (!bits) {
		why_set(why, whylen, "out of memory");
		return NK_ENOMEM;
	}
	while (p < end) {
		long a, b, stride = 1;
		int r = parse_uint(&p, end, &a);
		if (r) {
			if (r == -2)
				why_set(why, whylen, "id too large (limit %d)", NK__MAX_ID);
			else
				why_set(why, whylen, "expected a number at \"%s\"", snippet(p, end, snip));
			goto fail;
		}
		b = a;
		if (p < end && *p == '-') {
			p++;
			r = parse_uint(&p, end, &b);
			if (r) {
				if (r == -2)
					why_set(why, whylen, "id too large (limit %d)", NK__MAX_ID);
				else
					why_set(why, whylen, "expected a range end at \"%s\"", snippet(p, end, snip));
				goto fail;
			}
			if (b < a) {
				why_set(why, whylen, "range %ld-%ld is reversed", a, b);
				goto fail;
			}
			if (p < end && *p == ':') {
				p++;
				r = parse_uint(&p, end, &stride);
				if (r || stride == 0) {
					why_set(why, whylen, "bad stride after %ld-%ld", a, b);
					goto fail;
				}
			}
		}
		for (long x = a; x <= b; x += stride)
			bits[x / 64] |= 1ull << (x % 64);
		if (p < end) {
			if (*p != ',') {
				why_set(why, whylen, "unexpected character '%c'", isprint((unsigned char)*p) ? *p : '?');
				goto fail;
			}
			p++;
			if (p == end) {
				why_set(why, whylen, "list ends with ','");
				goto fail;
			}
		}
	}
	for (long w = 0; w < (NK__MAX_ID + 64) / 64; w++)
		for (uint64_t v = bits[w]; v; v &= v - 1)
			if (nk__ilist_push(&l, (int)(w * 64 + __builtin_ctzll(v)))) {
				rc = NK_ENOMEM;
				why_set(why, whylen, "out of memory");
				goto fail;
			}
	free(bits);
	nk__ilist_free(out);
	*out = l;
	return 0;
fail:
	free(bits);
	nk__ilist_free(&l);
	return rc;
}

int nk__parse_mask(const char *text, nk__ilist *out, char *why, size_t whylen)
{
	nk__ilist l = { 0 };
	const char *p, *end;
	size_t ndigits = 0;

	out->n = 0;
	if (!text) {
		why_set(why, whylen, "no mask given");
		return NK_EPARSE;
	}
	trim_bounds(text, &p, &end);
	for (const char *s = p; s < end; s++) {
		if (isxdigit((unsigned char)*s))
			ndigits++;
		else if (*s != ',') {
			why_set(why, whylen, "unexpected character '%c' in hex mask", isprint((unsigned char)*s) ? *s : '?');
			return NK_EPARSE;
		}
	}
	if (ndigits * 4 > (size_t)NK__MAX_ID + 1) {
		why_set(why, whylen, "mask too long");
		return NK_EPARSE;
	}
	/* Walk from the least significant (last) digit. */
	size_t bit = 0;
	for (const char *s = end; s > p; s--) {
		char c = s[-1];
		if (c == ',')
			continue;
		int v = isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10);
		for (int k = 0; k < 4; k++)
			if (v & (1 << k))
				if (nk__ilist_push(&l, (int)(bit + k))) {
					nk__ilist_free(&l);
					why_set(why, whylen, "out of memory");
					return NK_ENOMEM;
				}
		bit += 4;
	}
	nk__ilist_normalize(&l);
	nk__ilist_free(out);
	*out = l;
	return 0;
}

int nk__format_list(const int *ids, size_t n, char *buf, size_t cap)
{
	size_t len = 0;
	char tmp[32];
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		int k;
		if (j > i)
			k = snprintf(tmp, sizeof tmp, "%s%d-%d", len ? "," : "", ids[i], ids[j]);
		else
			k = snprintf(tmp, sizeof tmp, "%s%d", len ? "," : "", ids[i]);
		/* copy what fits, character by character, as snprintf would */
		for (int c = 0; c < k; c++)
			if (len + (size_t)c + 1 < cap)
				buf[len + (size_t)c] = tmp[c];
		len += (size_t)k;
		i = j + 1;
	}
	if (cap)
		buf[len < cap ? len : cap - 1] = '\0';
	return len > INT_MAX ? INT_MAX : (int)len;
}

char *nk__format_list_alloc(const int *ids, size_t n)
{
	int need = nk__format_list(ids, n, NULL, 0);
	char *s = malloc((size_t)need + 1);
	if (s)
		nk__format_list(ids, n, s, (size_t)need + 1);
	return s;
}

int nk__parse_size(const char *text, unsigned long long *out)
{
	const char *p, *end;
	unsigned long long v = 0, mul = 1;
	if (!text)
		return NK_EPARSE;
	trim_bounds(text, &p, &end);
	if (p == end || !isdigit((unsigned char)*p))
		return NK_EPARSE;
	while (p < end && isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (ULLONG_MAX - d) / 10)
			return NK_EPARSE;
		v = v * 10 + d;
		p++;
	}
	if (p < end) {
		switch (toupper((unsigned char)*p)) {
		case 'K': mul = 1ULL << 10; break;
		case 'M': mul = 1ULL << 20; break;
		case 'G': mul = 1ULL << 30; break;
		case 'T': mul = 1ULL << 40; break;
		case 'B': mul = 1; break;
		default: return NK_EPARSE;
		}
		p++;
		if (mul > 1 && p < end && toupper((unsigned char)*p) == 'I')
			p++;
		if (mul > 1 && p < end && toupper((unsigned char)*p) == 'B')
			p++;
		if (p != end)
			return NK_EPARSE;
	}
	if (v && mul > ULLONG_MAX / v)
		return NK_EPARSE;
	*out = v * mul;
	return 0;
}

/* ---- public wrappers ---- */

int nk_parse_list(const char *text, int *ids, size_t cap, nk_error *err)
{
	nk__ilist l = { 0 };
	char why[200];
	if (!text || (cap && !ids))
		return nk__error(err, NK_EINVAL, "nk_parse_list: NULL argument");
	int rc = nk__parse_list(text, &l, why, sizeof why);
	if (rc)
		return nk__error(err, rc, "list \"%.60s\": %s", text, why);
	if (l.n > INT_MAX) {
		nk__ilist_free(&l);
		return nk__error(err, NK_ERANGE, "list \"%.60s\": too many ids", text);
	}
	for (size_t i = 0; i < l.n && i < cap; i++)
		ids[i] = l.v[i];
	rc = (int)l.n;
	nk__ilist_free(&l);
	return rc;
}

int nk_format_list(const int *ids, size_t n, char *buf, size_t cap)
{
	if ((n && !ids) || (cap && !buf))
		return NK_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || (i && ids[i] <= ids[i - 1]))
			return NK_EINVAL;
	return nk__format_list(ids, n, buf, cap);
}
