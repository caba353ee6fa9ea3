/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's error reporting: one message and code into the caller's nk_error. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

int nk__error(nk_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}
