/* SPDX-License-Identifier: BSD-3-Clause
 * Residency: where the pages of an address range are (nk_where), through
 * batched move_pages queries.  Also the live operations table the memory
 * layer runs on.
 */
#include "memory/memory.h"

#include <errno.h>
#include <stdlib.h>

#include "os/os.h"

/*
 * The operations table speaks the kernel's -errno (memory.h): apply.c's fallback reasons about
 * ENOMEM, EACCES, EBUSY, as its fake kernels in the tests do.  The OS layer returns an NK_E* code and
 * the errno beside it (os.h), never 0 on failure, so the errno is what these adapters hand on.
 */
static long os_move_pages(void *ctx, unsigned long count, void **pages, const int *nodes, int *status)
{
	int e;
	long rc = nk__os_move_pages(count, pages, nodes, status, NK__MPOL_MF_MOVE, &e);
	return rc < 0 ? -e : rc;
}

static int os_mbind(void *ctx, void *addr, size_t len, int mode, const int *nodes, size_t n)
{
	int e;
	return nk__os_mbind(addr, len, mode, nodes, n, 0, &e) ? -e : 0;
}

static int os_populate(void *ctx, void *addr, size_t len)
{
	int e;
	return nk__os_populate_write(addr, len, &e) ? -e : 0;
}

static int os_mapped(void *ctx, const void *addr, size_t len)
{
	int e;
	return nk__os_range_mapped(addr, len, &e) ? -e : 0;
}

static int os_node_meminfo(void *ctx, int node, uint64_t *total, uint64_t *free_bytes)
{
	return nk__os_node_meminfo(node, total, free_bytes);
}

/* 1, 2, 4, ... 32 ms: long enough for kcompactd to finish a page under TCG */
static void os_backoff(void *ctx, int round)
{
	(void)ctx;
	nk__os_sleep_ms(1 << (round < 5 ? round : 5));
}

const struct nk__memops nk__memops_os = {
	.move_pages = os_move_pages,
	.mbind = os_mbind,
	.populate = os_populate,
	.mapped = os_mapped,
	.node_meminfo = os_node_meminfo,
	.backoff = os_backoff,
	.page_size = 0, /* nk__os_page_size() at call time */
	.ctx = NULL,
};

int nk__mem_errno(long rc)
{
	switch (-rc) {
	case ENOSYS:
		return NK_ENOSYS;
	case EPERM:
	case EACCES:
		return NK_EPERM;
	case ENOMEM:
		return NK_ENOMEM;
	case ENODEV:
		return NK_ENODEV;
	default:
		return NK_EINVAL;
	}
}

/*
 * Node OS id -> machine index, remembering the last answer: pages come in
 * long stretches on one node, and machines may have up to 4096 nodes.
 */
struct node_memo {
	int id;
	int idx;
};

static int node_index(const nk_machine *m, struct node_memo *memo, int id)
{
	if (id != memo->id) {
		memo->idx = nk_machine_node_index(m, id);
		memo->id = id;
	}
	return memo->idx;
}

int nk__where_ops(const nk_machine *m, const void *addr, size_t len, int *nodes, size_t *counts,
		  const struct nk__memops *ops, size_t batch, size_t *syscalls)
{
	size_t ps = ops->page_size ? ops->page_size : nk__os_page_size();
	size_t calls = 0, npages, nnodes = 0;
	uintptr_t base, end;
	void **pages = NULL;
	int *status = NULL;
	size_t *cnt = NULL; /* copied to @p counts only on success */
	int rc = 0;
	struct node_memo memo = { .id = -1, .idx = -1 };

	if (syscalls)
		*syscalls = 0;
	if (!addr || !len || (counts && !m) || !batch)
		return NK_EINVAL;
	if ((uintptr_t)addr > UINTPTR_MAX - len)
		return NK_EINVAL;
	base = (uintptr_t)addr & ~(uintptr_t)(ps - 1);
	end = (uintptr_t)addr + len;
	npages = (size_t)((end - base + ps - 1) / ps);
	if (m)
		nnodes = (size_t)nk_machine_num_nodes(m);

	long e = ops->mapped(ops->ctx, (const void *)base, npages * ps);
	calls++;
	if (e) {
		rc = e == -ENOMEM ? NK_EINVAL : nk__mem_errno(e);
		goto out;
	}
	if (batch > npages)
		batch = npages;
	pages = malloc(batch * sizeof *pages);
	/* Without @p nodes the kernel writes the statuses into our buffer;
	 * with it, straight into the caller's array. */
	if (!nodes)
		status = malloc(batch * sizeof *status);
	if (counts)
		cnt = calloc(nnodes + 1, sizeof *cnt);
	if (!pages || (!nodes && !status) || (counts && !cnt)) {
		rc = NK_ENOMEM;
		goto out;
	}

	for (size_t first = 0; first < npages; first += batch) {
		size_t n = npages - first < batch ? npages - first : batch;
		int *st = nodes ? nodes + first : status;
		for (size_t i = 0; i < n; i++)
			pages[i] = (void *)(base + (first + i) * ps);
		e = ops->move_pages(ops->ctx, n, pages, NULL, st);
		calls++;
		if (e < 0) {
			rc = nk__mem_errno(e);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			/* -ENOENT: never touched; -EFAULT on a mapped page: the shared
			 * zero page (read, never written), which holds no memory of
			 * the range's own either. */
			if (st[i] < 0)
				st[i] = -1;
			if (!counts)
				continue;
			if (st[i] < 0) {
				cnt[nnodes]++;
				continue;
			}
			int k = node_index(m, &memo, st[i]);
			if (k < 0) {
				/* the machine is not the one the memory lives on */
				rc = NK_ENODEV;
				goto out;
			}
			cnt[k]++;
		}
	}
	if (counts)
		for (size_t i = 0; i <= nnodes; i++)
			counts[i] = cnt[i];
out:
	if (syscalls)
		*syscalls = calls;
	free(cnt);
	free(status);
	free(pages);
	return rc;
}

int nk_where(const nk_machine *m, const void *addr, size_t len, int *nodes, size_t *counts)
{
	return nk__where_ops(m, addr, len, nodes, counts, &nk__memops_os, NK__MEM_BATCH, NULL);
}
