/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: the library's one growing string (text reports, reasons, policy texts), a printf
 * into a new string, and the cutting of a text to a column's width. */
#ifndef NK_UTIL_STRBUF_H
#define NK_UTIL_STRBUF_H

#include <stddef.h>

/**
 * A malloc'ed, NUL-terminated string that appends grow; zero-initialise it ({ 0 }).
 * Running out of memory sets oom, after which appends do nothing: check once at the end.
 * s is NULL until the first append.
 */
struct nk__strbuf {
	char *s;
	size_t len, cap;
	int oom;
};

/** Append printf-style. */
void nk__strbuf_printf(struct nk__strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** The text, handed over to the caller (free it): "" when nothing was appended, NULL (and nothing
 *  leaked) when an append ran out of memory.  The buffer is empty afterwards. */
char *nk__strbuf_take(struct nk__strbuf *b);

/** A malloc'ed string printed printf-style (free it); NULL when out of memory. */
char *nk__aprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Fit @p s in @p w columns, cutting the middle with "~": written into @p buf (@p cap bytes) and
 *  returned.  @p s is copied whole (as far as @p cap allows) when it fits, when @p w < 5 or when
 *  @p w >= @p cap. */
const char *nk__fit(const char *s, int w, char *buf, size_t cap);

#endif
