/* SPDX-License-Identifier: BSD-3-Clause
 * One line saying why the user's text was refused, for the CLI's pure parsers (nodespec.c, rankfile.c):
 * printf into @p why (@p cap bytes; nothing when NULL or 0), every unprintable byte made '?' so that
 * whatever the input held prints as one line.  Returns -1, for `return nk__cli_fail(...)`.
 */
#ifndef NK_CLI_WHY_H
#define NK_CLI_WHY_H

#include <stddef.h>

int nk__cli_fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
