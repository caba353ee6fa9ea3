/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for cmocka unit tests. */
#ifndef NK_TESTUTIL_H
#define NK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "numakit.h"

/** Read a whole file into a malloc'ed NUL-terminated string; fails the test when missing. */
char *nk_test_slurp(const char *path);
/** Write @p text to a fresh temporary file and return its malloc'ed path. */
char *nk_test_tmpfile(const char *text, size_t len);
/** A synthetic machine (nk_machine_load_synthetic); fails the test with the message. */
nk_machine *nk_test_synth(const char *desc);
/** Path of an unpacked dump: NK_TOPO_DIR "/" name (static buffer). */
const char *nk_test_dump(const char *name);

#endif
