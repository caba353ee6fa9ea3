/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer for the alloc/ feature layer: anonymous mappings for NUMA
 * arrays, /proc/PID/numa_maps, the kernel version.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MADV_NOHUGEPAGE */
#endif
#include "os/os.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

int nk__os_map_aligned(size_t len, size_t align, void **out, int *sys_errno)
{
	size_t ps = (size_t)nk__os_page_size();
	size_t total, head, tail;
	uintptr_t start, aligned;
	void *p;

	if (!len || !align || len % ps || align % ps || len > SIZE_MAX - align - 3 * ps)
		return nk__os_sys(EINVAL, sys_errno);
	/* Reserve inaccessible address space with room for a guard page on each
	 * side and some aligned page inside, open the data read-write, return
	 * the rest.  The different protection keeps the data its own VMA. */
	total = len + align + 2 * ps;
	p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return nk__os_sys(errno, sys_errno);
	start = (uintptr_t)p;
	aligned = (start + ps + align - 1) / align * align;
	if (mprotect((void *)aligned, len, PROT_READ | PROT_WRITE)) {
		int e = errno;
		munmap(p, total);
		return nk__os_sys(e, sys_errno);
	}
	head = aligned - ps - start;
	tail = total - head - len - 2 * ps;
	/* Trimming untouched reserved space cannot fail short of a kernel bug;
	 * if it did, the excess stays reserved and only costs address space. */
	if (head)
		(void)munmap(p, head);
	if (tail)
		(void)munmap((char *)aligned + len + ps, tail);
	*out = (void *)aligned;
	return nk__os_ok(0, sys_errno);
}

int nk__os_unmap_aligned(void *addr, size_t len, int *sys_errno)
{
	size_t ps = (size_t)nk__os_page_size();

	return munmap((char *)addr - ps, len + 2 * ps) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_no_huge_pages(void *addr, size_t len, int *sys_errno)
{
#ifdef MADV_NOHUGEPAGE
	return madvise(addr, len, MADV_NOHUGEPAGE) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
#else
	(void)addr, (void)len;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_read_numa_maps(int pid, char **out, size_t *len, int *sys_errno)
{
	char path[64], dir[48];
	struct stat st;
	int rc, e = 0;

	if (pid < 0)
		return (int)nk__os_ret(NK_EINVAL, EINVAL, sys_errno);
	if (pid == 0) {
		snprintf(dir, sizeof dir, "/proc/self");
	} else {
		snprintf(dir, sizeof dir, "/proc/%d", pid);
	}
	snprintf(path, sizeof path, "%s/numa_maps", dir);
	rc = nk__os_read_whole(path, NK__OS_MAX_NUMA_MAPS, out, len, &e);
	if (rc == NK_ENOENT) {
		/* No such process, or a kernel without CONFIG_NUMA (no numa_maps file)? */
		if (stat(dir, &st) == 0)
			rc = NK_ENOSYS;
	} else if (rc == NK_EIO && e == ESRCH) {
		rc = NK_ENOENT; /* it exited while we read */
	}
	if (sys_errno)
		*sys_errno = e;
	return rc;
}

int nk__os_kernel_version(int *major, int *minor)
{
	struct utsname u;
	int a = 0, b = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return NK_EIO;
	*major = a;
	*minor = b;
	return 0;
}
