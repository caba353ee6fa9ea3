/* SPDX-License-Identifier: BSD-3-Clause
 * What the reports share in their text and HTML forms (report.c: one process or runs; report_job.c: a
 * job): percentages, sizes, HTML escaping and heat colours.  Internal.
 */
#ifndef NK_PROFILE_REPORT_FMT_H
#define NK_PROFILE_REPORT_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "util/strbuf.h"

struct json_t;

/* The three forms of one report of @p obj: its text and HTML writers and its JSON builder. */
struct nk__rep_forms {
	void (*text)(const void *obj, struct nk__strbuf *b);
	void (*html)(const void *obj, struct nk__strbuf *b);
	struct json_t *(*json)(const void *obj);
};

/*
 * The report of @p obj in @p format (NK_REPORT_TEXT, _JSON, _HTML) into *@p out (malloc'ed, NUL-ended).
 * 0, or NK_EINVAL (unknown format) / NK_ENOMEM with @p what in the message; *@p out untouched then.
 */
int nk__rep_render(const struct nk__rep_forms *f, const void *obj, int format, const char *what, char **out,
		   nk_error *err);

/* 100 * @p part / @p whole, 0 without a whole. */
double nk__rep_pct(uint64_t part, uint64_t whole);

/* "512 B", "1.5 KiB" ... "2.0 TiB" into @p buf; returns @p buf. */
const char *nk__rep_size(uint64_t bytes, char *buf, size_t cap);

/* @p s with <, >, & and " escaped for HTML text and attribute values (NULL: nothing). */
void nk__html_esc(struct nk__strbuf *b, const char *s);

/* An rgb() colour for @p f in [0, 1] (clamped; NaN as 0): white to red when @p red (a remote share),
 * else white to blue (a share of accesses, neither good nor bad). */
void nk__html_heat(struct nk__strbuf *b, double f, int red);

#endif
