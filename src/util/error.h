/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: the library's error reporting (fills the caller's nk_error). */
#ifndef NK_UTIL_ERROR_H
#define NK_UTIL_ERROR_H

#include "numakit.h"

/** Set err (may be NULL) and return code; printf-style message. */
int nk__error(nk_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
