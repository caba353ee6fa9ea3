/* SPDX-License-Identifier: BSD-3-Clause */
/* What the strict JSON readers share (util/json_read.h). */
#include "util/json_read.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/error.h"

int nk__json_fail(const struct nk__json_in *in, int code, const char *where, const char *fmt, ...)
{
	char why[360];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (where && *where)
		return nk__error(in->err, code, "%s: %s: %s", in->name, where, why);
	return nk__error(in->err, code, "%s: %s", in->name, why);
}

const char *nk__json_type_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}
