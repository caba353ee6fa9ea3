/* SPDX-License-Identifier: BSD-3-Clause
 * The END record's counters as JSON members, written without allocation or stdio (a fatal signal may be
 * what ends the part): the samplers' nkp_*_end_json (pagefault.c, timer.c).  Owns only the formatting.
 */
#ifndef NK_PRELOAD_ENDJSON_H
#define NK_PRELOAD_ENDJSON_H

#include <stddef.h>
#include <stdint.h>

/* Append @p t to buf[0..cap-1) at *n (always room for the final NUL).  AS-safe. */
static inline void nkp_end_put(char *buf, size_t cap, size_t *n, const char *t)
{
	while (*t && *n + 1 < cap)
		buf[(*n)++] = *t++;
}

/* Append `"k": v` (preceded by ", " unless @p first).  AS-safe. */
static inline void nkp_end_put_kv(char *buf, size_t cap, size_t *n, const char *k, uint64_t v, int first)
{
	char d[24];
	int i = 0;

	if (!first)
		nkp_end_put(buf, cap, n, ", ");
	nkp_end_put(buf, cap, n, "\"");
	nkp_end_put(buf, cap, n, k);
	nkp_end_put(buf, cap, n, "\": ");
	do
		d[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < 23);
	while (i && *n + 1 < cap)
		buf[(*n)++] = d[--i];
}

#endif
