/* SPDX-License-Identifier: BSD-3-Clause
 * The `pagefault` sampler of libnumakit_prof.so.
 *
 * A sampler thread keeps a random set of tracked pages, the members, revoked.
 * Members are groups of up to PF_GROUP pages (each tracked range cut from its
 * first page), drawn uniformly among all tracked groups
 * (nkp_tracked_random_groups); the sampler asks the kernel where their pages
 * live (one batched move_pages query), records them in the revoked-page table
 * and revokes access to each group with one mprotect(PROT_NONE).  The next
 * access to such a page raises SIGSEGV; the runtime's dispatcher calls
 * nkp_pf_fault first, which gives that one page its access back and turns the
 * fault into a sample (address, ip, tid, cpu, nodes, read/write).  The
 * instruction then restarts and succeeds.  Every round (10 ms) the sampler
 * revokes again the member pages it found given back at the round before, so
 * every visit to a member is sampled (visits closer together than that are
 * one), and replaces a few members by fresh draws: all of them within
 * PF_TURNOVER_NS at the fastest (PF_TURNOVER_MIN per PF_TURNOVER_NS at
 * least), slower when that would cost more than a quarter of its time.  Whether a page is a member never depends on what the
 * program does, so a visit is sampled with probability members / tracked
 * groups however often the program comes back to the page; a block allocated
 * meanwhile gets members at once with that probability (its initialisation is
 * sampled like any other visit).  Each sample's weight is PF_W_ONE over that
 * probability at the time: summed, the weights estimate page visits.
 *
 * Design:
 *  - Weights in the program's time (issue 13): visits are counted on the sampler's clock, so a thread slowed
 *    by the profiler itself (recorded small-block mallocs and frees, its fault handling) made more visits
 *    than it would have at its own speed.  Each thread adds up its time inside the profiler; a sample's
 *    weight is scaled by the chance that the visit would have been a sample at the program's speed,
 *    1 - f^(1 + floor(latency / period)), f the profiler's share of the time since the page's last visit by
 *    the thread (pf_fault.c, pf_self.h; docs/profile.md "The profiler's own time").
 *  - The revoked-page table is open addressing with a bounded probe window
 *    (PF_PROBE slots after the hash): no tombstones, a lookup reads at most
 *    PF_PROBE keys, a delete just clears the key.  A key is page | state;
 *    states ARMING (inserted, mprotect not done yet), ARMED (revoked),
 *    CLAIMED (someone is giving it back).  Whoever moves a key from ARMED to
 *    CLAIMED by CAS owns the page's restoration: a faulting thread, an I/O
 *    wrapper, a free, the expiry, stop.  Two threads faulting on the same
 *    page: one claims it, the other sees CLAIMED (or nothing) and returns
 *    "handled" so its instruction runs again - at worst it faults once more
 *    until the first one's mprotect(RW) landed.  Inserts happen only under
 *    pf_lock (sampler thread, nkp_pf_new_block), so the metadata of a slot
 *    is written by one thread before its key is published.
 *  - The handler takes no lock and allocates nothing: atomics, mprotect,
 *    sched_getcpu (vDSO), nkp_emit.  A fault that finds no entry although a
 *    page was ever given back may be ours (restored and cleared by another
 *    thread between the fault and the lookup): it is retried once (thread
 *    local address, as src/memory/next_touch.c does) before it goes to the
 *    program's handler.  Foreign SEGV_ACCERR faults thus arrive twice.
 *  - First touch: a page that was not present when queried (move_pages
 *    status -ENOENT) cannot be placed yet when it faults - the faulting
 *    instruction will place it after we return.  The handler asks again
 *    first: a page the program placed between the query and the revoking is
 *    an ordinary visit.  The handler parks the
 *    sample in the pending array (lock-free: FREE -> FILLING -> READY by
 *    CAS); the sampler thread queries those pages on its next round and
 *    emits them with their node and NK__SF_FIRST_TOUCH.  When the pending
 *    array is full the sample goes out at once with page_node -1.
 *  - Frees race with revocation: the sampler draws groups without pf_lock
 *    (nkp_tracked_random_groups reads the registry; alloc.c may
 *    call nkp_pf_forget with that lock held, so we never hold pf_lock while
 *    calling into the registry's locked paths).  nkp_pf_forget takes pf_lock,
 *    gives back and forgets our pages in the range, and records the range in
 *    a ring of recent forgets with a generation number and the registry's
 *    generation, and drops the members there.  The sampler, under pf_lock,
 *    drops every drawn group that
 *    intersects a range forgotten since it picked, or forgotten before but
 *    still in the registry's set when it picked (alloc.c forgets first, then
 *    drops the range), all of them if the ring overflowed, and re-checks
 *    nkp_tracked_contains: a freed block is never re-protected.  Members
 *    are revoked again only under pf_lock, so never after their forget.
 *  - I/O: the kernel does not fault on the program's behalf (read(2) into a
 *    revoked page fails with EFAULT).  io.c brackets each call with
 *    nkp_pf_io_begin/nkp_pf_io_end: begin publishes a hold on the buffer's
 *    span, then gives back our pages there; the sampler, after inserting its
 *    keys as ARMING and before mprotect, checks the holds (both sides
 *    seq_cst: either the sampler sees the hold and cancels the run, or begin
 *    sees the ARMING key and waits until it is ARMED to claim it).  A page we
 *    give back for I/O is a real access by the kernel for this thread: it is
 *    emitted as a sample flagged NK__SF_IO with the caller's tid, ip 0, and
 *    the direction of the call (read(2) = the kernel writes: WRITE).
 *  - Overhead: every sample costs a fault and two mprotect calls with TLB
 *    shootdowns (KERNEL-NOTES: ~25 us).  The handler and the sampler add
 *    their time to pf_cost_ns, plus PF_FAULT_NS per fault for what user
 *    space cannot time (the trap, TLB shootdowns and refills on the other
 *    cpus: without it the triad lost 14% at NK_PROF_RATE=20000, with it 2%);
 *    every PF_GOVERN_NS the sampler sets the number of members from the
 *    last period (its samples per member and second against the rate, its
 *    cost against PF_MAX_OVERHEAD of the wall time; the rate is a target,
 *    not a promise), at once when a round cost four times the limit.
 *    Revocation is by run of contiguous member pages (one mprotect);
 *    restoration is per page (exact attribution).  At most PF_MAX_OUT / 2
 *    member pages are drawn and PF_MAX_OUT revoked at all, so the table and
 *    the number of split mappings stay bounded (at most ~2 * PF_MAX_OUT extra
 *    mappings); a member that leaves gives its pages back.
 *  - Why draws all at once lost: in the guest, giving back and revoking some
 *    1600 pages took over a second while four emulated cpus were busy
 *    (each mprotect waits for TLB shootdowns on all of them), so a sampler
 *    redrawing every second did nothing else and never revoked a page again.
 *  - Why members and not one-shot picks (the sampler before): a page picked
 *    at a random time and sampled at its next access is sampled once however
 *    often it is visited meanwhile, so samples followed time, not visits: a
 *    slow serial initialisation weighed as much as several fast parallel
 *    sweeps (prof_hotspot: 55-61% remote for the true 64%).
 *  - move_pages: the OS wrapper (nk__os_move_pages) is hidden inside
 *    libnumakit; this runtime is a front end like preload/nt_io.c and calls
 *    syscall(SYS_move_pages) itself.
 *
 * Limitations (to be carried into the user documentation of `numakit profile`):
 *  - Accesses the kernel makes without a wrapper see EFAULT: system calls
 *    not wrapped by io.c (ioctl, getdents, stat buffers, ...), O_DIRECT or
 *    asynchronous I/O done by the kernel later (io_uring, aio: the buffer is
 *    released at submission, the sampler may revoke it again before the
 *    kernel copies), another process reading our memory (process_vm_readv,
 *    ptrace, /proc/PID/mem).  futex(2) on a revoked page returns EFAULT;
 *    glibc then touches the word and retries, so locks keep working.
 *  - A sigaltstack or a thread stack inside tracked memory that got
 *    revoked would kill the process when a signal arrives (the kernel cannot
 *    push the frame): io.c excludes the stacks given to sigaltstack,
 *    pthread_attr_setstack, setcontext and swapcontext (nkp_pf_exclude, at
 *    most PF_EXCL distinct ranges, then the sampler stops revoking); stacks
 *    switched to by other means (boost.context and similar assembly) are not
 *    known.  alloc.c must not track memory that is not plain RW
 *    anonymous/heap memory: we give back PROT_READ|PROT_WRITE.
 *  - A fault inside a signal handler that interrupted our own handler on
 *    the same thread (SIGSEGV is blocked there) kills the process.  The
 *    program's own blocking of SIGSEGV is emulated (signal.c), glibc's
 *    (pthread_create, posix_spawn & co.) held off (process.c), the pages of
 *    libc's and the runtimes' own small blocks pinned (blocks.c).
 *  - At vm.max_map_count, mprotect(RW) of one page can fail (ENOMEM); the
 *    fault is then passed on as foreign.
 *  - Revoking pages that are not populated yet (members of new blocks, or
 *    drawn in untouched memory) splits the mapping; pieces
 *    first written while a revoked page separates them get different
 *    anon_vmas and the kernel never merges them again (observed on 6.18).
 *    mremap(2) of a range spanning such pieces then fails with EFAULT:
 *    glibc's realloc falls back to copying, a program's own mremap needs the
 *    runtime's mremap interposer to fall back the same way (tests/prof
 *    churn scenario).  It also leaves a few more mappings per block.
 */
/*
 * Files (issue 15 split them from this one; what they share, hidden pf_* names, is in pagefault_impl.h):
 *   pagefault.c   this comment, the state the others share, the END counters
 *   pf_table.c    the revoked-page table (hash, find/insert/claim/clear, restore), move_pages queries
 *   pf_fault.c    nkp_pf_fault, samples and pending first touches, giving back: I/O holds, exclusions, forgets
 *   pf_sampler.c  members, arming and re-arming rounds, the governor, the sampler thread, start/stop/fork, moves
 */
#include "pagefault_impl.h"

/* ------------------------------------------------------------ shared state (pagefault_impl.h) */

_Atomic uintptr_t pf_key[PF_SLOTS];
struct pf_meta pf_meta[PF_SLOTS];
atomic_uint pf_out;          /* pages revoked now */
atomic_ulong pf_released;    /* pages ever given back (retry logic) */
atomic_ulong pf_cost_ns;     /* time spent, for the governor */
atomic_ulong pf_faults, pf_io_pages, pf_expired, pf_lost;
atomic_ulong pf_turned, pf_rearmed, pf_members_full, pf_rounds, pf_round_ns;
atomic_ulong pf_late_ns, pf_flush_ns, pf_rearm_next;
atomic_ulong pf_start_members, pf_start_pages, pf_start_groups, pf_start_ft;
atomic_ulong pf_query_failed, pf_query_errno, pf_ft_samples, pf_ft_present;
atomic_ulong pf_busy, pf_retries; /* faults on a page being armed or given back; on one given back already */
/* When each page last faulted, by pf_hash (a collision only makes one page wait a round more or less). */
_Atomic uint64_t pf_fault_ns[PF_SLOTS];
atomic_int pf_started;       /* nkp_pf_start ran (the handler looks) */
atomic_uint pf_period_ns = 10000000u;
/* The price of a fault outside the handler (trap, signal frame, return), measured on the probe page. */
atomic_ulong pf_trap_ns = PF_FAULT_NS;
atomic_ulong pf_probes, pf_stretched; /* probe faults taken; rounds run at a period stretched by the cost cap */
_Atomic uintptr_t pf_probe_page;     /* the sampler thread's own page, 0 none */
_Atomic uint64_t pf_probe_in, pf_probe_out; /* the probe fault's handler: entry and exit */
atomic_int pf_self_on = 1;   /* weights corrected for the profiler's own time (NK_PROF_SELFTIME=0: not) */
atomic_ulong pf_self_n, pf_self_f_sum, pf_self_f_max, pf_self_w_in, pf_self_w_out;
atomic_uint pf_clock_ns;     /* one read of nkp_now's clock, measured at start */

/* The members: groups of up to PF_GROUP pages.  Under pf_lock. */
struct pf_member pf_mem[PF_MEMBERS];
unsigned pf_n_mem;
_Atomic uint32_t pf_cur_w = PF_W_ONE; /* PF_W_ONE / pf_frac: the weight of a sample now */

uintptr_t pf_ps = 4096, pf_shift = 12;

/* First-touch samples waiting for the sampler thread. */
struct pf_pending_slot pf_pending[PF_PENDING];

/* Spans under I/O: [start, end), start 0 = free. */
struct pf_span pf_hold[PF_HOLDS];
atomic_int pf_hold_overflow; /* I/O calls in flight that found no hold slot: sampler pauses */

atomic_uint pf_n_excl; /* ranges never to revoke (pf_fault.c's pf_excl), append only */

uint64_t pf_forget_gen; /* recently forgotten ranges (pf_fault.c's pf_forgot), under pf_lock */

struct pf_own_range pf_own[PF_OWN];
int pf_n_own;

pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------ END counters */

size_t nkp_pf_end_json(char *buf, size_t cap)
{
	size_t n = 0;

	if (!buf || cap < 256 || !atomic_load(&pf_started))
		return 0;
	nkp_end_put_kv(buf, cap, &n, "faults", atomic_load(&pf_faults), 1);
	nkp_end_put(buf, cap, &n, ", \"pagefault\": {");
	nkp_end_put_kv(buf, cap, &n, "faults", atomic_load(&pf_faults), 1);
	nkp_end_put_kv(buf, cap, &n, "io_pages", atomic_load(&pf_io_pages), 0);
	nkp_end_put_kv(buf, cap, &n, "expired", atomic_load(&pf_expired), 0);
	nkp_end_put_kv(buf, cap, &n, "first_touch_unresolved", atomic_load(&pf_lost), 0);
	uint64_t callers, callers_lost;
	nkp_callers_counts(&callers, &callers_lost);
	nkp_end_put_kv(buf, cap, &n, "callers", callers, 0);
	nkp_end_put_kv(buf, cap, &n, "callers_lost", callers_lost, 0);
	nkp_end_put_kv(buf, cap, &n, "revoked_at_end", atomic_load(&pf_out), 0);
	nkp_end_put_kv(buf, cap, &n, "cost_ns", atomic_load(&pf_cost_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "excluded_ranges", atomic_load(&pf_n_excl), 0);
	nkp_end_put_kv(buf, cap, &n, "period_ns", atomic_load(&pf_period_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "trap_ns", atomic_load(&pf_trap_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "probes", atomic_load(&pf_probes), 0);
	nkp_end_put_kv(buf, cap, &n, "stretched", atomic_load(&pf_stretched), 0);
	nkp_end_put_kv(buf, cap, &n, "turned_over", atomic_load(&pf_turned), 0);
	nkp_end_put_kv(buf, cap, &n, "rearmed", atomic_load(&pf_rearmed), 0);
	nkp_end_put_kv(buf, cap, &n, "members_full", atomic_load(&pf_members_full), 0);
	nkp_end_put_kv(buf, cap, &n, "rounds", atomic_load(&pf_rounds), 0);
	nkp_end_put_kv(buf, cap, &n, "round_ns", atomic_load(&pf_round_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "late_ns", atomic_load(&pf_late_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "flush_ns", atomic_load(&pf_flush_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "rearmed_next_round", atomic_load(&pf_rearm_next), 0);
	nkp_end_put_kv(buf, cap, &n, "start_members", atomic_load(&pf_start_members), 0);
	nkp_end_put_kv(buf, cap, &n, "start_pages", atomic_load(&pf_start_pages), 0);
	nkp_end_put_kv(buf, cap, &n, "start_groups", atomic_load(&pf_start_groups), 0);
	nkp_end_put_kv(buf, cap, &n, "start_first_touch", atomic_load(&pf_start_ft), 0);
	nkp_end_put_kv(buf, cap, &n, "query_failed", atomic_load(&pf_query_failed), 0);
	nkp_end_put_kv(buf, cap, &n, "query_errno", atomic_load(&pf_query_errno), 0);
	nkp_end_put_kv(buf, cap, &n, "first_touch_samples", atomic_load(&pf_ft_samples), 0);
	nkp_end_put_kv(buf, cap, &n, "first_touch_present", atomic_load(&pf_ft_present), 0);
	nkp_end_put_kv(buf, cap, &n, "busy", atomic_load(&pf_busy), 0);
	nkp_end_put_kv(buf, cap, &n, "retries", atomic_load(&pf_retries), 0);
	/* The correction of the weights for the profiler's own time (docs/profile.md, "the profiler's own time"):
	 * samples scaled (f > 0), mean and largest f in ppm, the summed weights before and after. */
	uint64_t sn = atomic_load(&pf_self_n);
	nkp_end_put(buf, cap, &n, ", \"selftime\": {");
	nkp_end_put_kv(buf, cap, &n, "on", (uint64_t)atomic_load(&pf_self_on), 1);
	nkp_end_put_kv(buf, cap, &n, "samples", sn, 0);
	nkp_end_put_kv(buf, cap, &n, "mean_f_ppm", sn ? atomic_load(&pf_self_f_sum) / sn : 0, 0);
	nkp_end_put_kv(buf, cap, &n, "max_f_ppm", atomic_load(&pf_self_f_max), 0);
	nkp_end_put_kv(buf, cap, &n, "weight_before", atomic_load(&pf_self_w_in), 0);
	nkp_end_put_kv(buf, cap, &n, "weight_after", atomic_load(&pf_self_w_out), 0);
	nkp_end_put_kv(buf, cap, &n, "clock_ns", atomic_load(&pf_clock_ns), 0);
	nkp_end_put(buf, cap, &n, "}");
	nkp_end_put(buf, cap, &n, "}");
	buf[n] = 0;
	return n;
}
