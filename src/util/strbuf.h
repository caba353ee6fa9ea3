/* Internal: the library's one growing string (text reports, reasons, policy texts). */
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

#endif
