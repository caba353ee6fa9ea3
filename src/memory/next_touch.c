/* SPDX-License-Identifier: BSD-3-Clause
 * Next-touch: every page of an armed range moves to the node of the next
 * thread that touches it.  Arming revokes access (PROT_NONE); the touch
 * raises SIGSEGV; the handler below moves that page to the toucher's node
 * and gives its access back; the faulting instruction restarts.
 *
 * Why it is built this way:
 *  - The handler may interrupt anything, malloc and our own arm/disarm
 *    included, so it takes no lock and allocates nothing: it makes system
 *    calls (getcpu, move_pages, mprotect) and reads the registry with
 *    acquire loads.  The registry is a fixed array of slots, each a seqlock
 *    (odd sequence = live): writers (arm, disarm) serialise on a mutex and
 *    publish a slot's bounds before its sequence; readers re-check the
 *    sequence after reading the bounds, so a slot reused under their feet is
 *    skipped, never misread.
 *  - Live regions are disjoint and never abut (arm merges), so one region
 *    answers for an address, and re-arming an array each program phase
 *    reuses its slot instead of filling the registry.
 *  - A fault whose region was just unregistered (a disarm racing with a
 *    touch: the page got its access back, then the slot went away) finds
 *    nothing.  Such a fault is retried once (return and let the instruction
 *    run again) before it is taken for the program's: a thread-local
 *    remembers the address.  Foreign protection faults therefore arrive twice
 *    once any region was ever unregistered; that is the price of never
 *    passing a next-touch fault to a handler that would kill the program.
 *  - One page per fault: exact semantics, and the cost of a fault is
 *    dominated by the fault and the TLB shootdown of mprotect, not by the
 *    page size (KERNEL-NOTES: ~25 us per revocation round trip).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "memory/next_touch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "numakit.h"
#include "os/os.h"
#include "util/error.h"

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_POINTER_LOCK_FREE == 2,
	       "the SIGSEGV handler needs lock-free atomics (async-signal-safety)");

/* Thread-locals read in the handler must not be allocated lazily (the
 * general-dynamic model may call malloc on first access). */
#define NT_TLS __attribute__((tls_model("initial-exec")))

struct nt_slot {
	atomic_ulong seq;     /* odd: live; changes on every publish and unpublish */
	atomic_uintptr_t start;
	atomic_uintptr_t end; /* [start, end), page aligned */
};

static struct nt_slot nt_slots[NK_NEXT_TOUCH_MAX_REGIONS];
static atomic_uint nt_used;          /* slots [0, nt_used) have ever been live */
static atomic_ulong nt_unpublished;  /* regions ever unregistered: a miss may be stale */
static atomic_uintptr_t nt_page;     /* page size, set before the handler is installed */
static atomic_int nt_target[NK__NT_MAX_NODE]; /* node + 1 of the fallback, 0 = the node itself */

/* The handler faults are passed to; two copies so a reinstall can replace it
 * while a handler on another thread reads the other one. */
static struct sigaction nt_prev[2];
static atomic_int nt_prev_idx;
static atomic_int nt_installed;

/* Writers only: arm, disarm, (re)installation of the handler. */
static pthread_mutex_t nt_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	atomic_ulong faults, moved, local, unbacked, failed, wide, foreign, prepared;
} nt_count;

/* The fault we were retrying, and the chain call in progress on this thread. */
static _Thread_local uintptr_t nt_retry_addr NT_TLS;
static _Thread_local const void *nt_chain_info NT_TLS;
static _Thread_local uintptr_t nt_chain_frame NT_TLS;

static void nt_inc(atomic_ulong *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------- registry */

/* A consistent snapshot of slot @p i: 1 and its bounds when live. */
static int nt_slot_read(unsigned i, uintptr_t *s, uintptr_t *e)
{
	struct nt_slot *sl = &nt_slots[i];
	unsigned long q = atomic_load_explicit(&sl->seq, memory_order_acquire);

	if (!(q & 1))
		return 0;
	*s = atomic_load_explicit(&sl->start, memory_order_relaxed);
	*e = atomic_load_explicit(&sl->end, memory_order_relaxed);
	/* Pairs with the release fence in nt_publish: bounds written for a
	 * later publication make the sequence check below fail. */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&sl->seq, memory_order_relaxed) == q;
}

int nk__next_touch_lookup(const void *addr, uintptr_t *start, uintptr_t *end)
{
	uintptr_t a = (uintptr_t)addr, s, e;
	unsigned n = atomic_load_explicit(&nt_used, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		if (nt_slot_read(i, &s, &e) && a >= s && a < e) {
			*start = s;
			*end = e;
			return 1;
		}
	}
	return 0;
}

int nk__next_touch_target(int node)
{
	if (node < 0 || node >= NK__NT_MAX_NODE)
		return node;
	int t = atomic_load_explicit(&nt_target[node], memory_order_relaxed);
	return t ? t - 1 : node;
}

/* Writers hold nt_lock.  A free slot index, or -1 when the registry is full. */
static int nt_free_slot(void)
{
	unsigned n = atomic_load_explicit(&nt_used, memory_order_relaxed);

	for (unsigned i = 0; i < n; i++)
		if (!(atomic_load_explicit(&nt_slots[i].seq, memory_order_relaxed) & 1))
			return (int)i;
	return n < NK_NEXT_TOUCH_MAX_REGIONS ? (int)n : -1;
}

static int nt_free_slots(void)
{
	unsigned n = atomic_load_explicit(&nt_used, memory_order_relaxed);
	int free_n = NK_NEXT_TOUCH_MAX_REGIONS - (int)n;

	for (unsigned i = 0; i < n; i++)
		if (!(atomic_load_explicit(&nt_slots[i].seq, memory_order_relaxed) & 1))
			free_n++;
	return free_n;
}

static int nt_live(unsigned i, uintptr_t *s, uintptr_t *e)
{
	if (!(atomic_load_explicit(&nt_slots[i].seq, memory_order_relaxed) & 1))
		return 0;
	*s = atomic_load_explicit(&nt_slots[i].start, memory_order_relaxed);
	*e = atomic_load_explicit(&nt_slots[i].end, memory_order_relaxed);
	return 1;
}

static void nt_publish(int i, uintptr_t s, uintptr_t e)
{
	struct nt_slot *sl = &nt_slots[i];
	unsigned long q = atomic_load_explicit(&sl->seq, memory_order_relaxed);

	/* The slot is free (even).  A reader that saw its previous, odd value
	 * and then reads the bounds below must see the sequence moved: keep the
	 * new bounds behind the unpublish store. */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&sl->start, s, memory_order_relaxed);
	atomic_store_explicit(&sl->end, e, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, q + 1, memory_order_release);
	if ((unsigned)i >= atomic_load_explicit(&nt_used, memory_order_relaxed))
		atomic_store_explicit(&nt_used, (unsigned)i + 1, memory_order_release);
}

static void nt_unpublish(int i)
{
	struct nt_slot *sl = &nt_slots[i];

	/* Counted first: a handler that misses because of this must retry. */
	atomic_fetch_add_explicit(&nt_unpublished, 1, memory_order_seq_cst);
	atomic_store_explicit(&sl->seq, atomic_load_explicit(&sl->seq, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* ---------------------------------------------------------- the handler */

/*
 * Give @p page its access back.  When the kernel cannot split the mapping
 * any further (ENOMEM at vm.max_map_count), give back a wider span, which
 * merges mappings instead: its other armed pages lose next-touch, which is
 * better than a program that cannot go on.  AS-safe.
 */
static int nt_unprotect(uintptr_t page, uintptr_t ps, uintptr_t s, uintptr_t e)
{
	if (nk__os_protect((void *)page, ps, NK__PROT_RW, NULL) == 0)
		return 0;
	uintptr_t ws = page & ~(NK__NT_WIDE_SPAN - 1), we = ws + NK__NT_WIDE_SPAN;
	if (ws < s)
		ws = s;
	if (we > e || we < ws)
		we = e;
	nt_inc(&nt_count.wide);
	if (nk__os_protect((void *)ws, we - ws, NK__PROT_RW, NULL) == 0)
		return 0;
	return nk__os_protect((void *)s, e - s, NK__PROT_RW, NULL);
}

/*
 * Restore access to @p page and move it to the caller's node (or its
 * fallback).  Access first: the 6.1 kernel's move_pages does not see pages
 * mapped PROT_NONE (follow_page treats them as NUMA-hinting entries, not
 * present: the query says "not backed" and a move skips them); 6.12 sees
 * them.  Moving an accessible page is just as safe: migration keeps other
 * threads out of the page while it copies.  AS-safe.
 */
static int nt_take_page(uintptr_t page, uintptr_t s, uintptr_t e)
{
	uintptr_t ps = atomic_load_explicit(&nt_page, memory_order_relaxed);
	void *p = (void *)page;
	int node = -1, status = -1;

	nt_inc(&nt_count.faults);
	if (nt_unprotect(page, ps, s, e))
		return -1;
	/* Query first: a page already local costs no migration, and only the
	 * query tells "moved" from "was there" apart in the counters. */
	if (nk__os_getcpu(NULL, &node, NULL) == 0 && nk__os_move_pages(1, &p, NULL, &status, 0, NULL) == 0) {
		int target = nk__next_touch_target(node);
		if (status < 0) {
			/* -ENOENT: never touched; -EFAULT: the shared zero page.
			 * No memory to move: the first write allocates it. */
			nt_inc(&nt_count.unbacked);
		} else if (status == target) {
			nt_inc(&nt_count.local);
		} else if (nk__os_move_pages(1, &p, &target, &status, 0, NULL) == 0 && status == target) {
			nt_inc(&nt_count.moved);
		} else {
			nt_inc(&nt_count.failed);
		}
	} else {
		nt_inc(&nt_count.failed);
	}
	return 0;
}

enum { NT_FOREIGN = 0, NT_RESOLVED = 1 };

/* Resolve the fault if it is ours.  AS-safe. */
static int nt_resolve(void *info)
{
	void *addr;
	uintptr_t s, e, a, ps;

	if (nk__os_fault_decode(info, &addr) != NK__FAULT_ACCESS)
		return NT_FOREIGN;
	a = (uintptr_t)addr;
	ps = atomic_load_explicit(&nt_page, memory_order_relaxed);
	if (ps && nk__next_touch_lookup(addr, &s, &e)) {
		nt_retry_addr = 0;
		return nt_take_page(a & ~(ps - 1), s, e) == 0 ? NT_RESOLVED : NT_FOREIGN;
	}
	/* Not in the registry now; possibly unregistered after the fault was
	 * raised.  Let the instruction run once more before giving it away. */
	if (atomic_load_explicit(&nt_unpublished, memory_order_seq_cst) && nt_retry_addr != a) {
		nt_retry_addr = a;
		return NT_RESOLVED;
	}
	nt_retry_addr = 0;
	return NT_FOREIGN;
}

/*
 * 1 when this is a call for the signal we are passing on right now, from
 * deeper in this stack: the handler we chained to hands the fault back (it
 * had saved ours as its predecessor, or calls nk_next_touch_handle_fault).
 * A new fault after a siglongjmp out of a chained handler has its frame at
 * the same depth, not deeper, so it is not mistaken for one.  Stacks grow
 * down on every architecture numakit builds for.
 */
static int nt_passed_back(const void *info, uintptr_t here)
{
	return nt_chain_info == info && here < nt_chain_frame;
}

static void nt_chain(int sig, void *info, void *uctx, uintptr_t here)
{
	const void *saved_info = nt_chain_info;
	uintptr_t saved_frame = nt_chain_frame;

	nt_inc(&nt_count.foreign);
	nt_chain_info = info;
	nt_chain_frame = here;
	nk__os_fault_chain(sig, info, uctx, &nt_prev[atomic_load_explicit(&nt_prev_idx, memory_order_acquire)]);
	nt_chain_info = saved_info;
	nt_chain_frame = saved_frame;
}

static void nt_handler(int sig, void *info, void *uctx)
{
	int saved_errno = errno; /* the interrupted code may be between a call and its errno check */
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	if (nt_passed_back(info, here))
		nk__os_fault_default(info); /* nobody wants it: die as without numakit */
	else if (nt_resolve(info) != NT_RESOLVED)
		nt_chain(sig, info, uctx, here);
	errno = saved_errno;
}

int nk_next_touch_handle_fault(int sig, void *info, void *uctx)
{
	int saved_errno = errno, rc = 0;

	/* A fault we are chaining was found foreign already: do not retry it. */
	if (sig == SIGSEGV && info && atomic_load_explicit(&nt_installed, memory_order_acquire) &&
	    !nt_passed_back(info, (uintptr_t)__builtin_frame_address(0)))
		rc = nt_resolve(info) == NT_RESOLVED;
	errno = saved_errno;
	return rc;
}

/* --------------------------------------------------------------- writers */

/* Install the handler, or put it back on top of one installed since.  Locked. */
static int nt_install_locked(nk_error *err)
{
	int idx = atomic_load_explicit(&nt_prev_idx, memory_order_relaxed), rc, e;

	if (atomic_load_explicit(&nt_installed, memory_order_relaxed)) {
		rc = nk__os_fault_current(nt_handler, &e);
		if (rc == 1)
			return 0;
		if (rc < 0)
			goto out_fail;
	}
	/* Read the handler we are about to replace into the copy no handler
	 * reads, publish it, then install: a foreign fault between the two
	 * steps reaches the right handler either way. */
	rc = nk__os_fault_query(&nt_prev[idx ^ 1], &e);
	if (rc)
		goto out_fail;
	atomic_store_explicit(&nt_prev_idx, idx ^ 1, memory_order_release);
	rc = nk__os_fault_install(nt_handler, NULL, &e);
	if (rc)
		goto out_fail;
	atomic_store_explicit(&nt_installed, 1, memory_order_release);
	return 0;

out_fail:
	return nk__error(err, NK_ENOSYS, "next-touch: cannot install the SIGSEGV handler: %s", strerror(e));
}

/* Fallback of every node of @p m: the nearest node with memory the process may use. */
static void nt_set_targets(const nk_machine *m)
{
	int nn = nk_machine_num_nodes(m);

	for (int i = 0; i < nn; i++) {
		int node = nk_machine_node_id(m, i), near[64], target = node;
		if (node < 0 || node >= NK__NT_MAX_NODE)
			continue;
		int k = nk_machine_neighbors(m, node, near, sizeof near / sizeof near[0]);
		if (k > (int)(sizeof near / sizeof near[0]))
			k = (int)(sizeof near / sizeof near[0]);
		for (int j = 0; j < k; j++) {
			int f = nk_machine_node_flags(m, near[j]);
			if (f >= 0 && (f & NK_NODE_MEM_ALLOWED)) {
				target = near[j];
				break;
			}
		}
		atomic_store_explicit(&nt_target[node], target + 1, memory_order_relaxed);
	}
}

/* [addr, addr+len) widened to pages; NK_EINVAL on a wrapping range. */
static int nt_pages(const void *addr, size_t len, uintptr_t ps, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)addr;

	if (len > UINTPTR_MAX - a || a + len > UINTPTR_MAX - ps)
		return NK_EINVAL;
	*s = a & ~(ps - 1);
	*e = (a + len + ps - 1) & ~(ps - 1);
	return 0;
}

/* The code nk_next_touch_arm reports for mprotect's errno @p e (not os.h's table: EIO and the like
 * are a bad range to the caller). */
static int nt_errno_code(int e)
{
	switch (e) {
	case ENOMEM:
		return NK_ENOMEM;
	case EACCES:
	case EPERM:
		return NK_EPERM;
	case ENOSYS:
		return NK_ENOSYS;
	default:
		return NK_EINVAL;
	}
}

int nk_next_touch_arm(const nk_machine *m, void *addr, size_t len, nk_error *err)
{
	uintptr_t ps = nk__os_page_size(), s, e, hs, he, os_, oe;
	int merged[NK_NEXT_TOUCH_MAX_REGIONS], nmerged = 0, slot, rc, sys_e;

	if (!addr || !len || nt_pages(addr, len, ps, &s, &e))
		return nk__error(err, NK_EINVAL, "next-touch: bad range %p + %zu", addr, len);
	pthread_mutex_lock(&nt_lock);
	atomic_store_explicit(&nt_page, ps, memory_order_relaxed);
	rc = nt_install_locked(err);
	if (rc)
		goto out_unlock;
	if (m)
		nt_set_targets(m);

	/* The hull of the range and every region it overlaps or abuts. */
	hs = s;
	he = e;
	unsigned n = atomic_load_explicit(&nt_used, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		if (!nt_live(i, &os_, &oe) || oe < s || os_ > e)
			continue;
		merged[nmerged++] = (int)i;
		hs = os_ < hs ? os_ : hs;
		he = oe > he ? oe : he;
	}
	if (nmerged == 1 && nt_live((unsigned)merged[0], &os_, &oe) && os_ == hs && oe == he) {
		slot = -1; /* re-arming inside one region: the registry already says so */
	} else {
		slot = nt_free_slot();
		if (slot < 0) {
			rc = nk__error(err, NK_ENOMEM, "next-touch: the registry is full (%d regions); disarm some",
				       NK_NEXT_TOUCH_MAX_REGIONS);
			goto out_unlock;
		}
		/* Publish the hull before revoking access, so that no armed page
		 * is ever outside the registry. */
		nt_publish(slot, hs, he);
	}

	rc = nk__os_protect((void *)s, e - s, NK__PROT_NONE, &sys_e);
	if (rc) {
		/*
		 * mprotect changes mapping after mapping and stops at the first
		 * it cannot change (a hole, the mapping limit), so the same call
		 * with the old access gives back exactly what the failed one took,
		 * and fails at the same place.  Its result is therefore ignored.
		 */
		(void)nk__os_protect((void *)s, e - s, NK__PROT_RW, NULL);
		if (slot >= 0)
			nt_unpublish(slot);
		rc = nk__error(err, nt_errno_code(sys_e), "next-touch: mprotect %p + %zu: %s%s", (void *)s,
			       (size_t)(e - s), strerror(sys_e),
			       sys_e == ENOMEM ? " (not entirely mapped, or vm.max_map_count reached)" : "");
		goto out_unlock;
	}
	if (slot >= 0)
		for (int k = 0; k < nmerged; k++)
			nt_unpublish(merged[k]);
	rc = 0;

out_unlock:
	pthread_mutex_unlock(&nt_lock);
	return rc;
}

/* Read one byte of every page of [s, e) that lies in a region.  Lock-free. */
static void nt_prepare_pages(uintptr_t s, uintptr_t e, uintptr_t ps)
{
	unsigned n = atomic_load_explicit(&nt_used, memory_order_acquire);
	unsigned long pages = 0;
	uintptr_t rs, re;

	for (unsigned i = 0; i < n; i++) {
		if (!nt_slot_read(i, &rs, &re) || re <= s || rs >= e)
			continue;
		uintptr_t from = rs > s ? rs : s, to = re < e ? re : e;
		/* An atomic load: the byte may be another thread's to write,
		 * and reading it is only a way to fault the page in here. */
		for (uintptr_t p = from; p < to; p += ps, pages++)
			(void)__atomic_load_n((const volatile char *)p, __ATOMIC_RELAXED);
	}
	if (pages)
		atomic_fetch_add_explicit(&nt_count.prepared, pages, memory_order_relaxed);
}

int nk_next_touch_prepare(void *addr, size_t len)
{
	uintptr_t ps = atomic_load_explicit(&nt_page, memory_order_relaxed), s, e;

	if (!len)
		return 0;
	if (!addr)
		return NK_EINVAL;
	if (!ps) /* nothing was ever armed */
		return nt_pages(addr, len, nk__os_page_size(), &s, &e);
	if (nt_pages(addr, len, ps, &s, &e))
		return NK_EINVAL;
	nt_prepare_pages(s, e, ps);
	return 0;
}

int nk_next_touch_disarm(void *addr, size_t len)
{
	uintptr_t ps = atomic_load_explicit(&nt_page, memory_order_relaxed), s, e, rs, re;
	int rc = 0;

	if (!len)
		return 0;
	if (!addr)
		return NK_EINVAL;
	if (!ps)
		return nt_pages(addr, len, nk__os_page_size(), &s, &e);
	if (nt_pages(addr, len, ps, &s, &e))
		return NK_EINVAL;
	pthread_mutex_lock(&nt_lock);
	/* Room for the pieces first, so that a failure changes nothing. */
	/* Regions are disjoint, so at most two pieces remain (left of the
	 * first region cut, right of the last); each is published before the
	 * slot it comes from is freed. */
	int pieces = 0;
	unsigned n = atomic_load_explicit(&nt_used, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		if (nt_live(i, &rs, &re) && re > s && rs < e)
			pieces += (rs < s) + (re > e);
	if (pieces > nt_free_slots()) {
		rc = NK_ENOMEM;
		goto out_unlock;
	}
	nt_prepare_pages(s, e, ps);
	for (unsigned i = 0; i < n; i++) {
		if (!nt_live(i, &rs, &re) || re <= s || rs >= e)
			continue;
		/* Pieces first, then the old slot: coverage never has a hole. */
		if (rs < s)
			nt_publish(nt_free_slot(), rs, s);
		if (re > e)
			nt_publish(nt_free_slot(), e, re);
		nt_unpublish((int)i);
	}

out_unlock:
	pthread_mutex_unlock(&nt_lock);
	return rc;
}

int nk_next_touch_stats(nk_next_touch_counts *out)
{
	if (!out)
		return NK_EINVAL;
	memset(out, 0, sizeof *out);
	out->faults = atomic_load_explicit(&nt_count.faults, memory_order_relaxed);
	out->pages_moved = atomic_load_explicit(&nt_count.moved, memory_order_relaxed);
	out->pages_local = atomic_load_explicit(&nt_count.local, memory_order_relaxed);
	out->pages_unbacked = atomic_load_explicit(&nt_count.unbacked, memory_order_relaxed);
	out->move_failures = atomic_load_explicit(&nt_count.failed, memory_order_relaxed);
	out->wide_unprotects = atomic_load_explicit(&nt_count.wide, memory_order_relaxed);
	out->foreign_faults = atomic_load_explicit(&nt_count.foreign, memory_order_relaxed);
	out->pages_prepared = atomic_load_explicit(&nt_count.prepared, memory_order_relaxed);
	unsigned n = atomic_load_explicit(&nt_used, memory_order_acquire);
	for (unsigned i = 0; i < n; i++) {
		uintptr_t s, e;
		out->regions += nt_slot_read(i, &s, &e);
	}
	out->capacity = NK_NEXT_TOUCH_MAX_REGIONS;
	return 0;
}
