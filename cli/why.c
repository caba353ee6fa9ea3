/* SPDX-License-Identifier: BSD-3-Clause */
/* The CLI parsers' refusal line (why.h). */
#include "why.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>

int nk__cli_fail(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (why && cap) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
		for (char *c = why; *c; c++)
			if (!isprint((unsigned char)*c))
				*c = '?';
	}
	return -1;
}
