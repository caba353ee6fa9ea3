/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: the memory calls the placement code needs besides the
 * memory-policy system calls of linux_mempolicy.c — populating a range
 * without changing its contents, checking that a range is mapped, and a
 * node's free memory right now (not the snapshot of nk_machine); the
 * reservations of the heaps (src/heap/) and the pages they drop.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "os/os.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* Linux 5.14 (include/uapi/asm-generic/mman-common.h); older libc headers lack it. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int nk__os_populate_write(void *addr, size_t len, int *sys_errno)
{
	/* Write-faults every page of the range like a store would, but without
	 * storing: contents are unchanged, and a thread writing the same memory
	 * at the same time cannot be clobbered (a "write zero" touch could). */
	return madvise(addr, len, MADV_POPULATE_WRITE) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_range_mapped(const void *addr, size_t len, int *sys_errno)
{
	/* msync(MS_ASYNC) is a no-op on every mapping since Linux 2.6.19 except
	 * for its range check: ENOMEM when part of the range is not mapped. */
	return msync((void *)addr, len, MS_ASYNC) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

/* "Node 1 MemFree:   65536 kB" -> bytes; 0 when the key is missing. */
static int meminfo_value(const char *text, const char *key, uint64_t *out)
{
	const char *p = strstr(text, key);
	if (!p)
		return NK_EPARSE;
	p += strlen(key);
	char *end;
	errno = 0;
	unsigned long long kb = strtoull(p, &end, 10);
	if (end == p || errno)
		return NK_EPARSE;
	*out = (uint64_t)kb * 1024u;
	return 0;
}

int nk__os_node_meminfo(int node, uint64_t *total, uint64_t *free_bytes)
{
	char path[96];
	char *text = NULL;
	uint64_t t = 0, f = 0;
	int rc;

	if (node < 0 || node > NK__MAX_ID)
		return NK_EINVAL;
	snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
	rc = nk__os_read_file(NULL, path, &text);
	if (rc)
		return rc;
	rc = meminfo_value(text, "MemTotal:", &t);
	if (!rc)
		rc = meminfo_value(text, "MemFree:", &f);
	free(text);
	if (rc)
		return rc;
	if (total)
		*total = t;
	if (free_bytes)
		*free_bytes = f;
	return 0;
}

int nk__os_reserve(size_t len, size_t align, int rw, void **out, int *sys_errno)
{
	size_t ps = (size_t)nk__os_page_size();
	uintptr_t start, aligned;
	size_t total, head, tail;
	void *p;

	if (!len || !align || len % ps || align % ps || len > SIZE_MAX - align)
		return nk__os_sys(EINVAL, sys_errno);
	total = len + align - ps;
	p = mmap(NULL, total, rw ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return nk__os_sys(errno, sys_errno);
	start = (uintptr_t)p;
	aligned = (start + align - 1) / align * align;
	head = aligned - start;
	tail = total - head - len;
	/* Trimming untouched space cannot fail short of a kernel bug; if it did, it stays reserved. */
	if (head)
		(void)munmap(p, head);
	if (tail)
		(void)munmap((char *)aligned + len, tail);
	*out = (void *)aligned;
	return nk__os_ok(0, sys_errno);
}

int nk__os_release(void *addr, size_t len, int *sys_errno)
{
	return munmap(addr, len) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_discard(void *addr, size_t len, int *sys_errno)
{
	return madvise(addr, len, MADV_DONTNEED) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_overcommit_strict(void)
{
	char *text = NULL;
	int strict = 0;

	if (!nk__os_read_file(NULL, "/proc/sys/vm/overcommit_memory", &text)) {
		strict = text[0] == '2';
		free(text);
	}
	return strict;
}

int nk__os_as_limit(uint64_t *out)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_AS, &rl))
		return NK_EIO;
	*out = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	return 0;
}
