/* SPDX-License-Identifier: BSD-3-Clause */
/* What the reports share in their text and HTML forms (report_fmt.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/report_fmt.h"
#include "util/error.h"

int nk__rep_render(const struct nk__rep_forms *f, const void *obj, int format, const char *what, char **out,
		   nk_error *err)
{
	struct nk__strbuf b = { 0 };

	switch (format) {
	case NK_REPORT_TEXT:
		f->text(obj, &b);
		break;
	case NK_REPORT_HTML:
		f->html(obj, &b);
		break;
	case NK_REPORT_JSON: {
		json_t *o = f->json(obj);
		char *s = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
		json_decref(o);
		if (!s)
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		nk__strbuf_printf(&b, "%s\n", s);
		free(s);
		break;
	}
	default:
		return nk__error(err, NK_EINVAL, "nk_profile_report: unknown format %d", format);
	}
	char *s = nk__strbuf_take(&b);
	if (!s)
		return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	*out = s;
	return 0;
}

double nk__rep_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

const char *nk__rep_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, unit[u]);
	return buf;
}

void nk__html_esc(struct nk__strbuf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			nk__strbuf_printf(b, "&lt;");
			break;
		case '>':
			nk__strbuf_printf(b, "&gt;");
			break;
		case '&':
			nk__strbuf_printf(b, "&amp;");
			break;
		case '"':
			nk__strbuf_printf(b, "&quot;");
			break;
		default:
			nk__strbuf_printf(b, "%c", *s);
		}
	}
}

void nk__html_heat(struct nk__strbuf *b, double f, int red)
{
	if (!(f >= 0))
		f = 0;
	if (f > 1)
		f = 1;
	if (red)
		nk__strbuf_printf(b, "rgb(250,%d,%d)", (int)lround(245 - 180 * f), (int)lround(240 - 200 * f));
	else
		nk__strbuf_printf(b, "rgb(%d,%d,250)", (int)lround(245 - 190 * f), (int)lround(248 - 130 * f));
}
