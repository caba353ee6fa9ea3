/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: the memory-policy and affinity system calls (with
 * linux_perf.c and linux_process.c, the only files of numakit that call
 * syscall(2)).  No libnuma: its global error knobs and per-page loops are what
 * numakit is measured against.  Errors per os.h: the NK_E* code of the errno,
 * the errno itself in *sys_errno.  Part of numakit_rtsupport: everything here
 * is async-signal-safe except the calls that allocate a node mask.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall, sched_setaffinity, CPU_ALLOC */
#endif
#include "os/os.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BITS_PER_UL (8 * sizeof(unsigned long))

/*
 * A kernel node mask covering @p nodes.  The kernel reads maxnode - 1 bits
 * (mm/mempolicy.c get_nodes() decrements it), so callers pass *maxnode as
 * returned here.  Returns NULL with *maxnode 0 for an empty set, NULL with
 * *err set (EINVAL, ENOMEM) on failure.
 */
static unsigned long *node_mask(const int *nodes, size_t n, unsigned long *maxnode, int *err)
{
	int hi = -1;
	*err = 0;
	*maxnode = 0;
	for (size_t i = 0; i < n; i++) {
		if (nodes[i] < 0 || nodes[i] > NK__MAX_ID) {
			*err = EINVAL;
			return NULL;
		}
		if (nodes[i] > hi)
			hi = nodes[i];
	}
	if (hi < 0)
		return NULL;
	size_t words = (size_t)hi / BITS_PER_UL + 1;
	unsigned long *mask = calloc(words, sizeof *mask);
	if (!mask) {
		*err = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		mask[(size_t)nodes[i] / BITS_PER_UL] |= 1ul << ((size_t)nodes[i] % BITS_PER_UL);
	*maxnode = words * BITS_PER_UL + 1;
	return mask;
}

int nk__os_mbind(void *addr, size_t len, int mode, const int *nodes, size_t n, unsigned flags, int *sys_errno)
{
#ifdef SYS_mbind
	unsigned long maxnode;
	int err;
	unsigned long *mask = node_mask(nodes, n, &maxnode, &err);
	if (err)
		return nk__os_sys(err, sys_errno);
	long rc = syscall(SYS_mbind, addr, len, mode, mask, maxnode, flags);
	err = rc < 0 ? errno : 0;
	free(mask);
	return err ? nk__os_sys(err, sys_errno) : nk__os_ok(0, sys_errno);
#else
	(void)addr, (void)len, (void)mode, (void)nodes, (void)n, (void)flags;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_mbind_node(void *addr, size_t len, int mode, int node, int *sys_errno)
{
#ifdef SYS_mbind
	unsigned long mask[NK__OS_MBIND_NODE_MAX / BITS_PER_UL];
	if (node < 0 || node >= NK__OS_MBIND_NODE_MAX)
		return nk__os_sys(EINVAL, sys_errno);
	size_t words = (size_t)node / BITS_PER_UL + 1;
	memset(mask, 0, words * sizeof mask[0]);
	mask[(size_t)node / BITS_PER_UL] = 1ul << ((size_t)node % BITS_PER_UL);
	/* the kernel reads maxnode - 1 bits (node_mask) */
	if (syscall(SYS_mbind, addr, len, mode, mask, words * BITS_PER_UL + 1, 0) < 0)
		return nk__os_sys(errno, sys_errno);
	return nk__os_ok(0, sys_errno);
#else
	(void)addr, (void)len, (void)mode, (void)node;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_set_mempolicy(int mode, const int *nodes, size_t n, int *sys_errno)
{
#ifdef SYS_set_mempolicy
	unsigned long maxnode;
	int err;
	unsigned long *mask = node_mask(nodes, n, &maxnode, &err);
	if (err)
		return nk__os_sys(err, sys_errno);
	long rc = syscall(SYS_set_mempolicy, mode, mask, maxnode);
	err = rc < 0 ? errno : 0;
	free(mask);
	return err ? nk__os_sys(err, sys_errno) : nk__os_ok(0, sys_errno);
#else
	(void)mode, (void)nodes, (void)n;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_get_mempolicy(int *mode, nk__ilist *nodes, void *addr, unsigned flags, int *sys_errno)
{
#ifdef SYS_get_mempolicy
	/* The kernel refuses masks smaller than its node count (nr_node_ids) and
	 * masks over a page (copy_nodes_to_user): 4096 bits covers every
	 * MAX_NUMNODES Linux builds with (NODES_SHIFT <= 10). */
	const unsigned long bits = 4096;
	unsigned long *mask = NULL;
	nk__ilist set = { 0 };
	int m = 0;
	if (nodes) {
		mask = calloc(bits / BITS_PER_UL + 1, sizeof *mask);
		if (!mask)
			return nk__os_sys(ENOMEM, sys_errno);
	}
	long rc = syscall(SYS_get_mempolicy, &m, mask, mask ? bits + 1 : 0, addr, flags);
	if (rc < 0) {
		int e = errno;
		free(mask);
		return nk__os_sys(e, sys_errno);
	}
	if (nodes) {
		/* into a list of our own first: *nodes stays as it was if a push fails */
		for (unsigned long b = 0; b < bits; b++)
			if ((mask[b / BITS_PER_UL] >> (b % BITS_PER_UL)) & 1ul)
				if (nk__ilist_push(&set, (int)b)) {
					nk__ilist_free(&set);
					free(mask);
					return nk__os_sys(ENOMEM, sys_errno);
				}
		free(mask);
		nk__ilist_free(nodes);
		*nodes = set;
	}
	if (mode)
		*mode = m;
	return nk__os_ok(0, sys_errno);
#else
	(void)mode, (void)nodes, (void)addr, (void)flags;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

long nk__os_move_pages(unsigned long count, void **pages, const int *nodes, int *status, int flags,
		       int *sys_errno)
{
#ifdef SYS_move_pages
	long rc = syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
	return rc < 0 ? nk__os_sys(errno, sys_errno) : nk__os_ret(rc, 0, sys_errno);
#else
	(void)count, (void)pages, (void)nodes, (void)status, (void)flags;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

int nk__os_set_affinity(int tid, const int *cpus, size_t n, int *sys_errno)
{
	int hi = -1;
	for (size_t i = 0; i < n; i++) {
		if (cpus[i] < 0 || cpus[i] > NK__MAX_ID)
			return nk__os_sys(EINVAL, sys_errno);
		if (cpus[i] > hi)
			hi = cpus[i];
	}
	if (hi < 0)
		return nk__os_sys(EINVAL, sys_errno);
	cpu_set_t *set = CPU_ALLOC((size_t)hi + 1);
	size_t sz = CPU_ALLOC_SIZE((size_t)hi + 1);
	if (!set)
		return nk__os_sys(ENOMEM, sys_errno);
	CPU_ZERO_S(sz, set);
	for (size_t i = 0; i < n; i++)
		CPU_SET_S((size_t)cpus[i], sz, set);
	int e = sched_setaffinity(tid, sz, set) ? errno : 0;
	CPU_FREE(set);
	return e ? nk__os_sys(e, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_getcpu(int *cpu, int *node, int *sys_errno)
{
	unsigned c = 0, nd = 0;
#ifdef SYS_getcpu
	if (syscall(SYS_getcpu, &c, &nd, NULL) < 0)
		return nk__os_sys(errno, sys_errno);
#else
	(void)cpu, (void)node;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
	if (cpu)
		*cpu = (int)c;
	if (node)
		*node = (int)nd;
	return nk__os_ok(0, sys_errno);
}

int nk__os_gettid(void)
{
	return (int)syscall(SYS_gettid);
}
