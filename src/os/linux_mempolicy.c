/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: the memory-policy and affinity system calls.  The only file
 * of numakit that calls syscall(2).  No libnuma: its global error knobs and
 * per-page loops are what numakit is measured against.
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
 * returned here.  Returns NULL with *maxnode 0 for an empty set.
 */
static unsigned long *node_mask(const int *nodes, size_t n, unsigned long *maxnode, int *err)
{
	int hi = -1;
	*err = 0;
	*maxnode = 0;
	for (size_t i = 0; i < n; i++) {
		if (nodes[i] < 0 || nodes[i] > NK__MAX_ID) {
			*err = -EINVAL;
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
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		mask[(size_t)nodes[i] / BITS_PER_UL] |= 1ul << ((size_t)nodes[i] % BITS_PER_UL);
	*maxnode = words * BITS_PER_UL + 1;
	return mask;
}

int nk__os_mbind(void *addr, size_t len, int mode, const int *nodes, size_t n, unsigned flags)
{
#ifdef SYS_mbind
	unsigned long maxnode;
	int err;
	unsigned long *mask = node_mask(nodes, n, &maxnode, &err);
	if (err)
		return err;
	long rc = syscall(SYS_mbind, addr, len, mode, mask, maxnode, flags);
	err = rc < 0 ? -errno : 0;
	free(mask);
	return err;
#else
	return -ENOSYS;
#endif
}

int nk__os_mbind_node(void *addr, size_t len, int mode, int node)
{
#ifdef SYS_mbind
	unsigned long mask[NK__OS_MBIND_NODE_MAX / BITS_PER_UL];
	if (node < 0 || node >= NK__OS_MBIND_NODE_MAX)
		return -EINVAL;
	size_t words = (size_t)node / BITS_PER_UL + 1;
	memset(mask, 0, words * sizeof mask[0]);
	mask[(size_t)node / BITS_PER_UL] = 1ul << ((size_t)node % BITS_PER_UL);
	/* the kernel reads maxnode - 1 bits (node_mask) */
	return syscall(SYS_mbind, addr, len, mode, mask, words * BITS_PER_UL + 1, 0) < 0 ? -errno : 0;
#else
	return -ENOSYS;
#endif
}

int nk__os_set_mempolicy(int mode, const int *nodes, size_t n)
{
#ifdef SYS_set_mempolicy
	unsigned long maxnode;
	int err;
	unsigned long *mask = node_mask(nodes, n, &maxnode, &err);
	if (err)
		return err;
	long rc = syscall(SYS_set_mempolicy, mode, mask, maxnode);
	err = rc < 0 ? -errno : 0;
	free(mask);
	return err;
#else
	return -ENOSYS;
#endif
}

int nk__os_get_mempolicy(int *mode, nk__ilist *nodes, void *addr, unsigned flags)
{
#ifdef SYS_get_mempolicy
	/* The kernel refuses masks smaller than its node count (nr_node_ids) and
	 * masks over a page (copy_nodes_to_user): 4096 bits covers every
	 * MAX_NUMNODES Linux builds with (NODES_SHIFT <= 10). */
	const unsigned long bits = 4096;
	unsigned long *mask = NULL;
	int m = 0;
	if (nodes) {
		mask = calloc(bits / BITS_PER_UL + 1, sizeof *mask);
		if (!mask)
			return -ENOMEM;
	}
	long rc = syscall(SYS_get_mempolicy, &m, mask, mask ? bits + 1 : 0, addr, flags);
	if (rc < 0) {
		int e = -errno;
		free(mask);
		return e;
	}
	if (nodes) {
		nodes->n = 0;
		for (unsigned long b = 0; b < bits; b++)
			if ((mask[b / BITS_PER_UL] >> (b % BITS_PER_UL)) & 1ul)
				if (nk__ilist_push(nodes, (int)b)) {
					free(mask);
					return -ENOMEM;
				}
		free(mask);
	}
	if (mode)
		*mode = m;
	return 0;
#else
	return -ENOSYS;
#endif
}

long nk__os_move_pages(unsigned long count, void **pages, const int *nodes, int *status, int flags)
{
#ifdef SYS_move_pages
	long rc = syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
	return rc < 0 ? -errno : rc;
#else
	return -ENOSYS;
#endif
}

int nk__os_set_affinity(int tid, const int *cpus, size_t n)
{
	int hi = -1;
	for (size_t i = 0; i < n; i++) {
		if (cpus[i] < 0 || cpus[i] > NK__MAX_ID)
			return -EINVAL;
		if (cpus[i] > hi)
			hi = cpus[i];
	}
	if (hi < 0)
		return -EINVAL;
	cpu_set_t *set = CPU_ALLOC((size_t)hi + 1);
	size_t sz = CPU_ALLOC_SIZE((size_t)hi + 1);
	if (!set)
		return -ENOMEM;
	CPU_ZERO_S(sz, set);
	for (size_t i = 0; i < n; i++)
		CPU_SET_S((size_t)cpus[i], sz, set);
	int rc = sched_setaffinity(tid, sz, set) ? -errno : 0;
	CPU_FREE(set);
	return rc;
}

int nk__os_getcpu(int *cpu, int *node)
{
	unsigned c = 0, nd = 0;
#ifdef SYS_getcpu
	if (syscall(SYS_getcpu, &c, &nd, NULL) < 0)
		return -errno;
#else
	return -ENOSYS;
#endif
	if (cpu)
		*cpu = (int)c;
	if (node)
		*node = (int)nd;
	return 0;
}

int nk__os_gettid(void)
{
	return (int)syscall(SYS_gettid);
}
