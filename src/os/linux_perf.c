/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: perf_event_open(2) and the mapping of its ring buffers,
 * for the hw sampler (src/profile/hw.c).  Decides nothing: errors go back
 * as NK_E* codes with the errno in *sys_errno, for the caller to explain.
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

int nk__os_perf_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags,
		     int *sys_errno)
{
#if defined(NK_HAVE_PERF) && defined(SYS_perf_event_open)
	long fd = syscall(SYS_perf_event_open, attr, (pid_t)pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? nk__os_sys(errno, sys_errno) : nk__os_ok((int)fd, sys_errno);
#else
	(void)attr, (void)pid, (void)cpu, (void)group_fd, (void)flags;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_perf_mmap(int fd, size_t len, void **out, int *sys_errno)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return nk__os_sys(errno, sys_errno);
	*out = p;
	return nk__os_ok(0, sys_errno);
}

int nk__os_perf_munmap(void *addr, size_t len, int *sys_errno)
{
	if (!addr)
		return nk__os_ok(0, sys_errno);
	return munmap(addr, len) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_perf_close(int fd, int *sys_errno)
{
	/* Linux frees the descriptor even when close reports an error: never retried */
	if (fd >= 0 && close(fd))
		return (int)nk__os_ret(NK_EIO, errno, sys_errno);
	return nk__os_ok(0, sys_errno);
}
