/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/nexttouch.h: next-touch placement (nk_next_touch_*).  Part of the public API; include
 * <numakit.h>, which includes it (it also compiles alone).  Conventions (errors, identifiers, thread
 * safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_NEXTTOUCH_H
#define NUMAKIT_NEXTTOUCH_H

#include "numakit/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================= next-touch
 *
 * Next-touch placement (NK_POLICY_NEXT_TOUCH): every page of an armed range
 * moves to the node of the next thread that touches it, read or write.
 * Arming revokes access to the pages (mprotect PROT_NONE); the touch faults,
 * numakit's SIGSEGV handler gives that one page back its access (PROT_READ |
 * PROT_WRITE), moves it to the toucher's node (getcpu, move_pages) and
 * returns, so the instruction restarts and never notices.
 * Contents are preserved bit for bit.  See docs/next_touch.md.
 *
 * GRANULARITY
 *   One base page per fault.  A page that is part of a transparent huge page
 *   moves with its whole huge page (the kernel migrates folios): arm memory
 *   marked MADV_NOHUGEPAGE when page-exact next-touch matters.  A page never
 *   written before (not yet backed) is not moved: its first write places it
 *   by the range's memory policy, which by default is the toucher's node.
 *   Ranges are widened to whole pages: every page holding a byte of the
 *   range is armed, together with whatever else that page holds.
 *
 * SIGNALS (the one global side effect of numakit)
 *   The first nk_next_touch_arm() installs a process-wide SIGSEGV handler
 *   (SA_SIGINFO | SA_ONSTACK | SA_RESTART) and keeps it for the life of the
 *   process.  A SIGSEGV that is not a next-touch fault goes to the handler
 *   that was installed before (called as the kernel would have called it;
 *   SIG_DFL / SIG_IGN: the default action, the process dies as it would
 *   have).  A program that installs its own SIGSEGV handler after arming
 *   must either call nk_next_touch_handle_fault() first in it, or arm again:
 *   every nk_next_touch_arm() puts numakit's handler back on top and chains
 *   the newcomer.  A handler that calls back into the one it replaced is
 *   detected, so a fault neither wants ends in the default action, not in
 *   endless recursion.  The handler is async-signal-safe: system calls and
 *   lock-free reads of a fixed registry of NK_NEXT_TOUCH_MAX_REGIONS regions.
 *
 * SYSTEM CALLS AND I/O
 *   The kernel does not fault on a program's behalf: read(2), recv(2) and
 *   every other system call that writes into an armed page fail with EFAULT
 *   ("Bad address") instead of touching it.  Call nk_next_touch_prepare() on
 *   the buffer first (it makes the calling thread the next toucher), or
 *   preload libnumakit_nt_io.so, which does so for read, pread, readv,
 *   preadv, recv, recvfrom, recvmsg and fread.  Other processes
 *   (process_vm_writev), io_uring and O_DIRECT DMA into armed memory are not
 *   covered: prepare the buffer yourself.
 *
 * RESTRICTIONS
 *   Arm only private, readable and writable memory (touching restores
 *   PROT_READ | PROT_WRITE, whatever the protection was).  Disarm a range
 *   before unmapping or freeing it, and do not change the protection of armed
 *   pages yourself: the registry would take a later PROT_NONE page at the
 *   same address for an armed one.  Pages shared with another process (after
 *   fork, shared mappings) are not moved (move_pages refuses; counted in
 *   move_failures), but still get their access back.
 *
 * THREAD SAFETY
 *   Any number of threads may touch armed memory at once, on different pages
 *   or on the same page (one of the simultaneous touchers wins the page;
 *   nothing is lost).  Arm and disarm serialise on an internal mutex and may
 *   be called from any thread, but not from a signal handler; prepare takes
 *   no lock.
 */

/** Capacity of the region registry (merged, disjoint ranges armed at once). */
#define NK_NEXT_TOUCH_MAX_REGIONS 256

/** Counters since the process started (all threads). */
typedef struct nk_next_touch_counts {
	uint64_t faults;          /**< next-touch faults resolved (one page each) */
	uint64_t pages_moved;     /**< pages migrated to the toucher's node */
	uint64_t pages_local;     /**< pages already on the toucher's node: access restored, nothing moved */
	uint64_t pages_unbacked;  /**< pages not yet written (no memory yet): placed by their first write */
	uint64_t move_failures;   /**< pages the kernel would not move (shared, busy, node full); data intact */
	uint64_t wide_unprotects; /**< access could not be restored to one page alone (vm.max_map_count):
				       a larger aligned span was given back without moving its pages */
	uint64_t foreign_faults;  /**< SIGSEGVs that were not next-touch faults, passed on */
	uint64_t pages_prepared;  /**< pages of armed ranges read by prepare/disarm (they fault when armed) */
	size_t regions;           /**< ranges in the registry now */
	size_t capacity;          /**< NK_NEXT_TOUCH_MAX_REGIONS */
} nk_next_touch_counts;

/**
 * Arm [addr, addr+len) (widened to whole pages) for next-touch.  Pages
 * already armed stay armed; ranges that overlap or abut are merged in the
 * registry.  @p m is the live machine: a toucher on a node without memory,
 * or whose memory the process may not use, gets its pages on the nearest
 * node that it may use (nk_machine_neighbors); NULL moves pages to the
 * toucher's own node.  The first call installs the SIGSEGV handler (see
 * SIGNALS above); every call reinstalls it if another handler replaced it.
 * Errors: NK_EINVAL (NULL @p addr, @p len 0 or wrapping the address space);
 * NK_ENOMEM (the registry is full: disarm something first; a range that is
 * not entirely mapped; the kernel's mapping limit vm.max_map_count: the
 * message says which);
 * NK_EPERM (the mapping cannot be protected, e.g. a file opened read-only);
 * NK_ENOSYS (signals or mprotect unavailable).  On failure the range is not
 * armed (pages of it that were armed before may have been given back their
 * access, without moving).
 * Thread safety: see THREAD SAFETY above.
 * @since 0.1
 */
NK_API int nk_next_touch_arm(const nk_machine *m, void *addr, size_t len, nk_error *err);

/**
 * Make the calling thread the next toucher of every still-armed page of
 * [addr, addr+len) now: each such page moves to the caller's node and gets
 * its access back; pages already touched stay where they are.  The range
 * stays registered (other pages of the region remain armed).  Call it before
 * a system call writes into next-touch memory (read, recv, ...: they fail
 * with EFAULT on armed pages).  A range not armed costs a registry scan.
 * Lock-free; safe from any thread, not from a signal handler.
 * Returns 0 (len 0 included).  Errors: NK_EINVAL (NULL @p addr with @p len
 * > 0, a range wrapping the address space).
 * @since 0.1
 */
NK_API int nk_next_touch_prepare(void *addr, size_t len);

/**
 * Prepare [addr, addr+len) (the caller becomes the next toucher of its
 * still-armed pages) and take it out of the registry, splitting a region
 * armed beyond it.  Call it before freeing or unmapping armed memory, or to
 * stop next-touch on a range.  Returns 0.  Errors: NK_EINVAL (as prepare);
 * NK_ENOMEM (splitting needs a registry slot and none is free; nothing
 * changed).
 * @since 0.1
 */
NK_API int nk_next_touch_disarm(void *addr, size_t len);

/** Fill @p out with the counters.  Errors: NK_EINVAL (NULL).  @since 0.1 */
NK_API int nk_next_touch_stats(nk_next_touch_counts *out);

/**
 * For a program's own SIGSEGV handler installed after arming: resolve the
 * fault described by @p info (a siginfo_t *) if it is a next-touch fault.
 * Returns 1 when it was one and has been resolved (the handler must return
 * at once: the instruction restarts), 0 when the fault is the program's.
 * Async-signal-safe; @p uctx (the ucontext_t *) is unused today.
 * @since 0.1
 */
NK_API int nk_next_touch_handle_fault(int sig, void *info, void *uctx);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_NEXTTOUCH_H */
