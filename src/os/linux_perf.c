/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: perf_event_open(2) and the mapping of its ring buffers,
 * for the hw sampler (src/profile/hw.c).  Decides nothing: errors go back
 * as -errno for the caller to explain.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall */
#endif
#include "os/os.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__linux__) && __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#define NK_HAVE_PERF 1
#endif

int nk__os_perf_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags)
{
#if defined(NK_HAVE_PERF) && defined(SYS_perf_event_open)
	long fd = syscall(SYS_perf_event_open, attr, (pid_t)pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
#else
	(void)attr, (void)pid, (void)cpu, (void)group_fd, (void)flags;
	return -ENOSYS;
#endif
}

int nk__os_perf_mmap(int fd, size_t len, void **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int nk__os_perf_munmap(void *addr, size_t len)
{
	if (!addr)
		return 0;
	return munmap(addr, len) ? -errno : 0;
}

int nk__os_perf_close(int fd)
{
	if (fd < 0)
		return 0;
	return close(fd) ? -errno : 0;
}
