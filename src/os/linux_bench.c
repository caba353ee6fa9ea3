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

int nk__os_map_anon(size_t len, void **out)
{
	void *p;

	if (!len || !out)
		return -EINVAL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int nk__os_unmap(void *addr, size_t len)
{
	if (!addr)
		return 0;
	return munmap(addr, len) ? -errno : 0;
}

uint64_t nk__os_now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid clock id and pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
