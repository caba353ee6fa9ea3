/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's one growing string, a printf into a new string, and the cutting of a text to a width. */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk__strbuf_printf(struct nk__strbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap : 256;
		while (cap <= b->len + (size_t)n)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
}

char *nk__strbuf_take(struct nk__strbuf *b)
{
	char *s = b->s;
	int oom = b->oom;
	*b = (struct nk__strbuf){ 0 };
	if (oom) {
		free(s);
		return NULL;
	}
	return s ? s : strdup("");
}

char *nk__aprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

const char *nk__fit(const char *s, int w, char *buf, size_t cap)
{
	size_t n = strlen(s);
	if (n <= (size_t)w || w < 5 || (size_t)w >= cap) {
		snprintf(buf, cap, "%s", s);
		return buf;
	}
	size_t head = (size_t)(w - 1) / 2, tail = (size_t)w - 1 - head;
	snprintf(buf, cap, "%.*s~%s", (int)head, s, s + n - tail);
	return buf;
}
