/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: what the strict JSON readers (advice files, machine files) share: one message shape and the
 * name of a JSON value's type.  Pure helpers over jansson; each reader keeps its own getters. */
#ifndef NK_UTIL_JSON_READ_H
#define NK_UTIL_JSON_READ_H

#include <jansson.h>

#include "numakit.h"

/** The input a reader reports about: its name in messages (a file name, or a word for a buffer). */
struct nk__json_in {
	const char *name;
	nk_error *err;
};

/** Fail with the one message shape "NAME: WHERE: problem" ("NAME: problem" when @p where is NULL or
 *  empty); returns @p code. */
int nk__json_fail(const struct nk__json_in *in, int code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** "an object", "an array", "a string", "an integer", "a real number", "a boolean", "null";
 *  "nothing" for NULL (a missing member). */
const char *nk__json_type_name(const json_t *v);

#endif
