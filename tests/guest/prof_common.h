/* SPDX-License-Identifier: BSD-3-Clause
 * Shared by the known-truth programs of the profiler (tests/guest/prof_*.c,
 * run by tests/vm/tests/profile_*): the size argument and a checksum that
 * keeps the compiler from dropping the access loops.  Lines the guest tests
 * look for carry a marker comment "TRUTH:NAME" (grep -n finds their number).
 */
#ifndef PROF_COMMON_H
#define PROF_COMMON_H

#include <stdio.h>
#include <stdlib.h>

/* MiB per array from argv[1] (default @p def), 1..1024. */
static inline size_t prof_mib(int argc, char **argv, size_t def)
{
	if (argc > 1) {
		char *end;
		long v = strtol(argv[1], &end, 10);
		if (*end || v < 1 || v > 1024) {
			fprintf(stderr, "usage: %s [MiB per array, 1-1024]\n", argv[0]);
			exit(2);
		}
		return (size_t)v;
	}
	return def;
}

static volatile double prof_sink;

#endif
