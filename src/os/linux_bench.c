/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer for the benchmark: anonymous mappings it can bind before
 * the first touch, and a monotonic clock.  Kept apart from the policy
 * wrappers so the benchmark's needs stay visible in one place.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "os/os.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

int nk__os_map_anon(size_t len, void **out, int *sys_errno)
{
	void *p;

	if (!len || !out)
		return nk__os_sys(EINVAL, sys_errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return nk__os_sys(errno, sys_errno);
	*out = p;
	return nk__os_ok(0, sys_errno);
}

int nk__os_unmap(void *addr, size_t len, int *sys_errno)
{
	if (!addr)
		return nk__os_ok(0, sys_errno);
	return munmap(addr, len) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

uint64_t nk__os_now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid clock id and pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
