/* SPDX-License-Identifier: BSD-3-Clause */
/* The command's one growing string, for every cli/ file that builds text.  The command uses only the
 * public API, so this is its own and not the library's src/util/strbuf.h. */
#ifndef NK_CLI_STRBUF_H
#define NK_CLI_STRBUF_H

#include <stddef.h>

/* Zero-initialise ({ 0 }); out of memory sets oom, after which appends do nothing. */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

void sb_addn(struct sbuf *b, const char *s, size_t n);
void sb_add(struct sbuf *b, const char *s);
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text ("" when nothing was added), or NULL (and nothing leaked) when an append ran out of memory. */
char *sb_take(struct sbuf *b);

#endif
