/* SPDX-License-Identifier: BSD-3-Clause
 * The pagefault sampler's revoked-page table (hash, find, insert, claim, clear, restore) and its kernel
 * queries (move_pages, MADV_POPULATE_WRITE).  Everything here but pf_insert (under pf_lock) is AS-safe: no
 * lock, no allocation.  It decides nothing about which pages to revoke: that is pf_sampler.c.
 */
#include "pagefault_impl.h"

/* ------------------------------------------------------------ helpers */

unsigned pf_hash(uintptr_t page)
{
	uint64_t h = (uint64_t)(page >> pf_shift) * 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 40) & (PF_SLOTS - 1);
}

/* move_pages(0, n, pages, NULL, status, 0): query only.  See the header comment for why not nk__os_move_pages. */
long pf_query(unsigned long n, void **pages, int *status)
{
	long r = syscall(SYS_move_pages, 0, n, pages, NULL, status, 0);
	return r < 0 ? -errno : r;
}

/*
 * The nodes of @p pages into @p status, for arming: node >= 0, -ENOENT not present (first touch), any
 * other negative value unknown.  Without move_pages (a kernel without NUMA, a seccomp filter) every page
 * is "unknown": the sampler still samples, without nodes.
 */
void pf_query_or_unknown(unsigned long n, void **pages, int *status)
{
	long r = pf_query(n, pages, status);
	if (r < 0) {
		atomic_fetch_add_explicit(&pf_query_failed, 1, memory_order_relaxed);
		atomic_store_explicit(&pf_query_errno, (unsigned long)-r, memory_order_relaxed);
		for (unsigned long i = 0; i < n; i++)
			status[i] = -ENOSYS;
	}
}

/* Place the page @p page as a write by the calling thread would, without touching it.  0 or -errno (EINVAL
 * before Linux 5.14; EFAULT/ENOMEM when it is not writable now).  AS-safe. */
int pf_populate_write(void *page)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	return syscall(SYS_madvise, page, (size_t)pf_ps, MADV_POPULATE_WRITE) ? -errno : 0;
}

void pf_cost(uint64_t ns)
{
	atomic_fetch_add_explicit(&pf_cost_ns, ns, memory_order_relaxed);
}

/* The slot holding @p page (any state), or -1.  AS-safe. */
int pf_find(uintptr_t page)
{
	unsigned h = pf_hash(page);

	for (unsigned i = 0; i < PF_PROBE; i++) {
		unsigned j = (h + i) & (PF_SLOTS - 1);
		uintptr_t k = atomic_load_explicit(&pf_key[j], memory_order_acquire);
		if ((k & ~(uintptr_t)PF_STATE) == page && k)
			return (int)j;
	}
	return -1;
}

/* Insert @p page as ARMING.  Under pf_lock.  The slot, or -1 (present already or window full). */
int pf_insert(uintptr_t page, int node, uint8_t flags, uint8_t random, uint64_t now)
{
	unsigned h = pf_hash(page);
	int free_slot = -1;

	for (unsigned i = 0; i < PF_PROBE; i++) {
		unsigned j = (h + i) & (PF_SLOTS - 1);
		uintptr_t k = atomic_load_explicit(&pf_key[j], memory_order_acquire);
		if (k && (k & ~(uintptr_t)PF_STATE) == page)
			return -1;
		if (!k && free_slot < 0)
			free_slot = (int)j;
	}
	if (free_slot < 0)
		return -1;
	pf_meta[free_slot] =
		(struct pf_meta){ .armed_ns = now, .node = (int16_t)node, .flags = flags, .random = random };
	/* Only inserters (serialised by pf_lock) move a key away from 0. */
	atomic_store_explicit(&pf_key[free_slot], page | PF_ARMING, memory_order_seq_cst);
	/* seq_cst: a hold or an exclusion published before this is seen by pf_arm_run; one published after
	 * sees pf_out > 0 and looks for the key (pf_release_range). */
	atomic_fetch_add_explicit(&pf_out, 1, memory_order_seq_cst);
	return free_slot;
}

/* Drop an ARMING or CLAIMED key we own.  */
void pf_clear(int slot)
{
	atomic_store_explicit(&pf_key[slot], 0, memory_order_release);
	atomic_fetch_sub_explicit(&pf_out, 1, memory_order_relaxed);
}

/* Try to move @p slot from ARMED(page) to CLAIMED.  AS-safe. */
int pf_claim(int slot, uintptr_t page)
{
	uintptr_t k = atomic_load_explicit(&pf_key[slot], memory_order_acquire);

	for (;;) {
		if ((k & ~(uintptr_t)PF_STATE) != page || !k)
			return PF_GONE;
		if ((k & PF_STATE) != PF_ARMED)
			return PF_BUSY;
		if (atomic_compare_exchange_weak_explicit(&pf_key[slot], &k, page | PF_CLAIMED, memory_order_acq_rel,
							  memory_order_acquire))
			return PF_GOT;
	}
}

/* Give back the claimed pages [s, s + n pages) (slot[i]: page i's) with one mprotect and clear their slots.
 * 0 or -errno (the slots are then ARMED again).  AS-safe. */
int pf_restore_run(uintptr_t s, unsigned n, const int *slot)
{
	int e;
	int rc = nk__os_protect((void *)s, (uintptr_t)n << pf_shift, NK__PROT_RW, &e) ? -e : 0;
	if (rc) {
		for (unsigned i = 0; i < n; i++)
			atomic_store_explicit(&pf_key[slot[i]], (s + ((uintptr_t)i << pf_shift)) | PF_ARMED,
					      memory_order_release);
		return rc;
	}
	/* Counted before the slots are cleared: a thread that finds no slot for its page also sees that
	 * a page was given back since its last look (nkp_pf_fault). */
	atomic_fetch_add_explicit(&pf_released, n, memory_order_seq_cst);
	for (unsigned i = 0; i < n; i++)
		pf_clear(slot[i]);
	return 0;
}

/* One claimed page. */
int pf_restore(int slot, uintptr_t page)
{
	return pf_restore_run(page, 1, &slot);
}
