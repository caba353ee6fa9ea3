/*
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
 *    instruction will place it after we return.  The handler parks the
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
 *    the same thread (SIGSEGV is blocked there) kills the process.
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
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "os/os.h"
#include "endjson.h"
#include "prof.h"

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_POINTER_LOCK_FREE == 2,
	       "the SIGSEGV handler needs lock-free atomics");

#define PF_TLS __attribute__((tls_model("initial-exec")))

#ifndef PF_SLOTS
#define PF_SLOTS 16384u /* revoked-page table size, a power of two */
#endif
#define PF_PROBE 32u              /* probe window of the table */
#define PF_MAX_OUT (PF_SLOTS / 2) /* at most this many pages revoked at a time */
#define PF_GROUP 16u              /* pages per member group (from its range's first page) */
#define PF_MEMBERS (PF_MAX_OUT / PF_GROUP) /* member groups at most */
#define PF_TURNOVER_NS 1000000000ull /* every member replaced in this time at the fastest, */
#define PF_TURNOVER_MIN 32u          /* and at least this many per PF_TURNOVER_NS (few members: more pages) */
#define PF_GOVERN_NS 1000000000ull   /* the number of members is set again this often */
#define PF_W_ONE 16u              /* weight of a visit to a page that is surely a member */
#define PF_PENDING 1024u          /* first-touch samples waiting for their node */
#define PF_HOLDS 256u             /* I/O calls in flight holding spans */
#define PF_FORGETS 64u            /* ring of recently forgotten ranges */
#define PF_OWN 8                  /* writable segments of this object (never revoked) */
#define PF_MAX_OVERHEAD_DEFAULT 0.05 /* fraction of wall time the sampler may cost */
/* NK_PROF_MAX_OVERHEAD (percent; >= 100: no cap) overrides it, read once at start. */
static double PF_MAX_OVERHEAD = PF_MAX_OVERHEAD_DEFAULT;
#define PF_FAULT_NS 20000u /* unmeasured cost of one sample (trap, signal frame, TLB shootdowns and refills): KERNEL-NOTES */

enum { PF_ARMING = 1, PF_ARMED = 2, PF_CLAIMED = 3, PF_STATE = 3 };

struct pf_meta {
	uint64_t armed_ns;
	int16_t node;   /* node at arm time, -1 not present */
	uint8_t flags;  /* NK__SF_FIRST_TOUCH when not present */
	uint8_t random; /* 1: drawn by the sampler; 0: joined the members with its new block */
};

static _Atomic uintptr_t pf_key[PF_SLOTS];
static struct pf_meta pf_meta[PF_SLOTS];
static atomic_uint pf_out;          /* pages revoked now */
static atomic_ulong pf_released;    /* pages ever given back (retry logic) */
static atomic_ulong pf_cost_ns;     /* time spent, for the governor */
static atomic_ulong pf_faults, pf_io_pages, pf_expired, pf_lost;
static atomic_ulong pf_turned, pf_rearmed, pf_members_full, pf_rounds, pf_round_ns;
static atomic_ulong pf_late_ns, pf_flush_ns, pf_rearm_next;
/* When each page last faulted, by pf_hash (a collision only makes one page wait a round more or less). */
static _Atomic uint64_t pf_fault_ns[PF_SLOTS];
#define PF_VISIT_NS 1000000ull /* accesses to a page closer together than this are one visit */ /* wake-ups after their due time; parked first touches resolved */
static atomic_int pf_started;       /* nkp_pf_start ran (the handler looks) */
static atomic_int pf_running;       /* the sampler thread should go on */
static atomic_uint pf_period_ns = 10000000u;
static atomic_int pf_over;           /* the last round cost too much: new blocks get no members */

/* The members: groups of up to PF_GROUP pages.  Under pf_lock. */
struct pf_member {
	uintptr_t start;          /* first page */
	uint16_t seen;            /* bit k: page k was found given back at the last round */
	uint8_t pages;            /* 1..PF_GROUP */
	uint8_t fresh;            /* joined with its new block */
	int16_t node[PF_GROUP];   /* where each page lives, as last asked; < 0: ask again (-ENOENT: not present) */
};
static struct pf_member pf_mem[PF_MEMBERS];
static unsigned pf_n_mem;
static uint64_t pf_total;   /* groups in the tracked set, as of the last round */
static unsigned pf_target0; /* member groups to begin with */
static double pf_frac;      /* pf_n_mem / pf_total: the probability that a group is a member; 0: none yet */
static _Atomic uint32_t pf_cur_w = PF_W_ONE; /* PF_W_ONE / pf_frac: the weight of a sample now */
static uint64_t pf_blk_rng; /* new blocks' draws */
static unsigned pf_idx[PF_MEMBERS];
static uint16_t pf_mask[PF_MEMBERS];

static uintptr_t pf_ps = 4096, pf_shift = 12;

/* The last fault this thread ran again because its page might have been ours, and pf_released then. */
static _Thread_local uintptr_t pf_retry_addr PF_TLS;
static _Thread_local unsigned long pf_retry_gen PF_TLS;

/* First-touch samples waiting for the sampler thread. */
enum { PN_FREE = 0, PN_FILLING = 1, PN_READY = 2 };
static struct {
	atomic_int state;
	unsigned tries; /* rounds the page was found still not present (sampler thread only) */
	struct nk__nkp_sample s;
} pf_pending[PF_PENDING];
#define PF_PENDING_TRIES 50 /* rounds a first touch may wait for its faulting thread to run again */

/* Spans under I/O: [start, end), start 0 = free. */
static struct {
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
} pf_hold[PF_HOLDS];
static atomic_int pf_hold_overflow; /* I/O calls in flight that found no hold slot: sampler pauses */

/* Ranges never to revoke (stacks the kernel pushes signal frames on, stdio buffers): append only. */
#define PF_EXCL 1024u
static struct {
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
} pf_excl[PF_EXCL];
static atomic_uint pf_n_excl;
static atomic_int pf_excl_full; /* more ranges than PF_EXCL: the sampler stops revoking */

/* Recently forgotten ranges, written under pf_lock. */
static struct {
	uint64_t gen;  /* pf_forget_gen of this forget */
	uint64_t tgen; /* nkp_tracked_generation() at the forget: the registry drops the range after it */
	uintptr_t start, end;
} pf_forgot[PF_FORGETS];
static uint64_t pf_forget_gen;

static struct {
	uintptr_t start, end;
} pf_own[PF_OWN];
static int pf_n_own;

static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pf_wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pf_wake;
static pthread_t pf_thread;
static int pf_thread_live;
static uint64_t pf_rng;

/* ------------------------------------------------------------ helpers */

static unsigned pf_hash(uintptr_t page)
{
	uint64_t h = (uint64_t)(page >> pf_shift) * 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 40) & (PF_SLOTS - 1);
}

/* move_pages(0, n, pages, NULL, status, 0): query only.  See the header comment for why not nk__os_move_pages. */
static long pf_query(unsigned long n, void **pages, int *status)
{
	long r = syscall(SYS_move_pages, 0, n, pages, NULL, status, 0);
	return r < 0 ? -errno : r;
}

/*
 * The nodes of @p pages into @p status, for arming: node >= 0, -ENOENT not present (first touch), any
 * other negative value unknown.  Without move_pages (a kernel without NUMA, a seccomp filter) every page
 * is "unknown": the sampler still samples, without nodes.
 */
static void pf_query_or_unknown(unsigned long n, void **pages, int *status)
{
	if (pf_query(n, pages, status) < 0)
		for (unsigned long i = 0; i < n; i++)
			status[i] = -ENOSYS;
}

/* Place the page @p page as a write by the calling thread would, without touching it.  0 or -errno (EINVAL
 * before Linux 5.14; EFAULT/ENOMEM when it is not writable now).  AS-safe. */
static int pf_populate_write(void *page)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	return syscall(SYS_madvise, page, (size_t)pf_ps, MADV_POPULATE_WRITE) ? -errno : 0;
}

static void pf_cost(uint64_t ns)
{
	atomic_fetch_add_explicit(&pf_cost_ns, ns, memory_order_relaxed);
}

/* The slot holding @p page (any state), or -1.  AS-safe. */
static int pf_find(uintptr_t page)
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
static int pf_insert(uintptr_t page, int node, uint8_t flags, uint8_t random, uint64_t now)
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
static void pf_clear(int slot)
{
	atomic_store_explicit(&pf_key[slot], 0, memory_order_release);
	atomic_fetch_sub_explicit(&pf_out, 1, memory_order_relaxed);
}

enum { PF_GOT = 0, PF_GONE = 1, PF_BUSY = 2 };

/* Try to move @p slot from ARMED(page) to CLAIMED.  AS-safe. */
static int pf_claim(int slot, uintptr_t page)
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
static int pf_restore_run(uintptr_t s, unsigned n, const int *slot)
{
	int rc = nk__os_protect((void *)s, (uintptr_t)n << pf_shift, NK__PROT_RW);
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
static int pf_restore(int slot, uintptr_t page)
{
	return pf_restore_run(page, 1, &slot);
}

static int pf_cpu(void)
{
	int c = sched_getcpu();
	return c < 0 || c > INT16_MAX ? -1 : c;
}

/* Hand a sample out now, or park it for the sampler thread when its page was not present.  AS-safe. */
static void pf_deliver(struct nk__nkp_sample *s)
{
	if ((s->flags & NK__SF_FIRST_TOUCH) && s->page_node < 0) {
		unsigned start = (unsigned)(s->addr >> pf_shift);
		for (unsigned i = 0; i < PF_PENDING; i++) {
			unsigned j = (start + i) & (PF_PENDING - 1);
			int st = PN_FREE;
			if (atomic_compare_exchange_strong_explicit(&pf_pending[j].state, &st, PN_FILLING,
								    memory_order_acquire, memory_order_relaxed)) {
				pf_pending[j].s = *s;
				atomic_store_explicit(&pf_pending[j].state, PN_READY, memory_order_release);
				return;
			}
		}
		atomic_fetch_add_explicit(&pf_lost, 1, memory_order_relaxed);
	}
	nkp_emit(s);
}

/* A sample for @p page of @p slot (claimed by us). */
static void pf_sample(struct nk__nkp_sample *s, int slot, uintptr_t addr, uint64_t now)
{
	const struct pf_meta *m = &pf_meta[slot];
	int cpu = pf_cpu();

	memset(s, 0, sizeof *s);
	s->time_ns = now;
	s->addr = addr;
	s->tid = nkp_tid();
	s->cpu = (int16_t)cpu;
	s->cpu_node = (int16_t)(cpu >= 0 ? nkp_cpu_node(cpu) : -1);
	s->page_node = m->flags & NK__SF_FIRST_TOUCH ? -1 : m->node;
	s->phase = atomic_load_explicit(&nkp.phase, memory_order_relaxed);
	s->sampler = NK__SAMPLER_PAGEFAULT;
	s->flags = (uint8_t)(m->flags | (m->random ? 0 : NK__SF_NEW_BLOCK));
	/* The probability that the page was a member is the members' share of the tracked groups now. */
	s->weight = atomic_load_explicit(&pf_cur_w, memory_order_relaxed);
	/* The delay since the page was revoked (drawn, or revoked again after its last fault), us. */
	uint64_t us = now > m->armed_ns ? (now - m->armed_ns) / 1000 : 0;
	s->latency = us < 1 ? 1 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* ------------------------------------------------------------ the fault */

/* Instruction pointer and access kind from the signal context.  AS-safe. */
static void pf_decode_context(void *uctx, uint64_t *ip, uint8_t *access)
{
	*ip = 0;
	*access = NK__ACC_UNKNOWN;
	if (!uctx)
		return;
#if defined(__x86_64__)
	const ucontext_t *uc = uctx;
	*ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	/* Page-fault error code: bit 1 = write access. */
	*access = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? NK__ACC_WRITE : NK__ACC_READ;
#elif defined(__aarch64__)
	const ucontext_t *uc = uctx;
	*ip = (uint64_t)uc->uc_mcontext.pc;
	/* The kernel appends records to __reserved; esr_context (magic ESR_MAGIC) holds the ESR, whose bit 6
	 * (WnR) tells a write from a read for data aborts.  Layout from <asm/sigcontext.h>, not included: its
	 * struct sigcontext clashes with glibc's. */
	const unsigned char *p = (const unsigned char *)uc->uc_mcontext.__reserved;
	const unsigned char *end = p + sizeof uc->uc_mcontext.__reserved;
	while (p + 8 <= end) {
		uint32_t magic, size;
		memcpy(&magic, p, 4);
		memcpy(&size, p + 4, 4);
		if (!magic || size < 8 || size > (size_t)(end - p))
			break;
		if (magic == 0x45535201u && size >= 16) {
			uint64_t esr;
			memcpy(&esr, p + 8, 8);
			*access = (esr & (1u << 6)) ? NK__ACC_WRITE : NK__ACC_READ;
			break;
		}
		p += size;
	}
#endif
}

int nkp_pf_fault(int sig, siginfo_t *info, void *uctx)
{
	void *addr;
	uintptr_t a, page;
	int slot, saved_errno;

	if (sig != SIGSEGV || !info || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return 0;
	if (nk__os_fault_decode(info, &addr) != NK__FAULT_ACCESS)
		return 0;
	saved_errno = errno;
	a = (uintptr_t)addr;
	page = a & ~(pf_ps - 1);
	slot = pf_find(page);
	if (slot < 0) {
		/*
		 * Possibly ours, given back and cleared by another thread after the fault was raised: run the
		 * instruction again.  The page may be armed, claimed and given back again before it runs (every
		 * thread sweeping the same pages at once), so it is run again as long as some page was given
		 * back since this thread last looked at the same address; only a fault on an address with no
		 * page given back in between goes to the program.  (One retry per address was not enough: an
		 * uncapped column sweep died of SIGSEGV in the guest.)
		 */
		unsigned long gen = atomic_load_explicit(&pf_released, memory_order_seq_cst);
		if (gen && (pf_retry_addr != a || pf_retry_gen != gen)) {
			pf_retry_addr = a;
			pf_retry_gen = gen;
			errno = saved_errno;
			return 1;
		}
		pf_retry_addr = 0;
		errno = saved_errno;
		return 0;
	}
	pf_retry_addr = 0;
	uint64_t t0 = nkp_now();
	int c = pf_claim(slot, page);
	if (c != PF_GOT) {
		/* ARMING: the sampler's mprotect is in flight; CLAIMED: another thread gives it back; GONE: given
		 * back already.  All three: run the instruction again. */
		errno = saved_errno;
		return 1;
	}
	struct nk__nkp_sample s;
	pf_sample(&s, slot, a, t0);
	atomic_store_explicit(&pf_fault_ns[pf_hash(page)], t0, memory_order_relaxed);
	if (pf_restore(slot, page)) {
		errno = saved_errno;
		return 0;
	}
	pf_decode_context(uctx, &s.ip, &s.access);
	if ((s.flags & NK__SF_FIRST_TOUCH) && s.access == NK__ACC_WRITE) {
		/*
		 * A write that will place a page not yet there: place it now, from this thread on this cpu, as the
		 * instruction would, and ask where it went.  Parked for the sampler thread instead, the first touches
		 * of a thread filling fresh blocks overflowed the pending array while the thread had not yet run
		 * its instruction again (unit.prof.pf.threads: a quarter of the nodes unknown on a loaded machine).
		 * MADV_POPULATE_WRITE (Linux 5.14), not a write of ours: the sampler may have revoked the page again
		 * since we gave it back, and a fault inside this handler would kill the program (a store of 0 did,
		 * in the churn test); the call then fails and the sample waits as before.
		 */
		void *pg = (void *)page;
		int st = -1;
		if (pf_populate_write(pg) == 0 && pf_query(1, &pg, &st) >= 0 && st >= 0)
			s.page_node = (int16_t)st;
	}
	atomic_fetch_add_explicit(&pf_faults, 1, memory_order_relaxed);
	if (atomic_load_explicit(&nkp.sampling, memory_order_relaxed))
		pf_deliver(&s);
	pf_cost(nkp_now() - t0 + PF_FAULT_NS);
	errno = saved_errno;
	return 1;
}

/* ------------------------------------------------------------ giving back */

/* Give back every page of ours in [s, e); when @p io, emit them as I/O samples with @p access.  AS-safe. */
static void pf_release_range(uintptr_t s, uintptr_t e, int io, uint8_t access)
{
	if (!atomic_load_explicit(&pf_out, memory_order_seq_cst) || e <= s)
		return;
	s &= ~(pf_ps - 1);
	uintptr_t npages = (e - s + pf_ps - 1) >> pf_shift;
	uint64_t now = 0;

	for (unsigned i = 0; npages > PF_SLOTS / PF_PROBE ? i < PF_SLOTS : i < npages; i++) {
		int slot;
		uintptr_t page;
		if (npages > PF_SLOTS / PF_PROBE) {
			uintptr_t k = atomic_load_explicit(&pf_key[i], memory_order_acquire);
			page = k & ~(uintptr_t)PF_STATE;
			if (!k || page < s || page >= e)
				continue;
			slot = (int)i;
		} else {
			page = s + ((uintptr_t)i << pf_shift);
			slot = pf_find(page);
			if (slot < 0)
				continue;
		}
		for (unsigned spins = 0;; spins++) {
			int c = pf_claim(slot, page);
			if (c == PF_GONE)
				break;
			if (c == PF_GOT) {
				struct nk__nkp_sample smp;
				if (!now)
					now = nkp_now();
				pf_sample(&smp, slot, page, now);
				if (pf_restore(slot, page) == 0 && io) {
					smp.flags |= NK__SF_IO; /* a visit by the kernel: the member's weight */
					smp.access = access;
					atomic_fetch_add_explicit(&pf_io_pages, 1, memory_order_relaxed);
					if (atomic_load_explicit(&nkp.sampling, memory_order_relaxed))
						pf_deliver(&smp);
				}
				break;
			}
			/* BUSY.  ARMING: the sampler is between insert and mprotect; wait for it.  CLAIMED: another
			 * thread is giving it back; make sure it is accessible before our caller goes on (the same
			 * mprotect twice is harmless), then wait for the slot to clear. */
			if ((atomic_load_explicit(&pf_key[slot], memory_order_acquire) & PF_STATE) == PF_CLAIMED &&
			    spins > 64) {
				nk__os_protect((void *)page, pf_ps, NK__PROT_RW);
				break;
			}
			sched_yield();
		}
	}
}

void nkp_pf_prepare_io(const void *addr, size_t len)
{
	uintptr_t s = (uintptr_t)addr;

	if (!addr || !len || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return;
	pf_release_range(s, s + len < s ? UINTPTR_MAX : s + len, 1, NK__ACC_UNKNOWN);
}

/* A hold on [start, end) (the sampler revokes nothing there until nkp_pf_io_end), then our pages there given
 * back: as I/O samples when @p io.  The token, or -1. */
static int pf_hold_span(uintptr_t start, uintptr_t end, int io, int access)
{
	int token = -1;

	if (end <= start || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return -1;
	start &= ~(pf_ps - 1);
	for (unsigned i = 0; i < PF_HOLDS; i++) {
		unsigned j = (unsigned)(start >> pf_shift) + i;
		j &= PF_HOLDS - 1;
		uintptr_t z = 0;
		if (atomic_compare_exchange_strong_explicit(&pf_hold[j].start, &z, start, memory_order_seq_cst,
							    memory_order_relaxed)) {
			atomic_store_explicit(&pf_hold[j].end, end, memory_order_seq_cst);
			token = (int)j;
			break;
		}
	}
	if (token < 0) {
		atomic_fetch_add_explicit(&pf_hold_overflow, 1, memory_order_seq_cst);
		token = (int)PF_HOLDS;
	}
	/* The hold is visible (seq_cst) before we look for ARMING/ARMED keys: see the header comment. */
	pf_release_range(start, end, io, (uint8_t)access);
	return token;
}

int nkp_pf_io_begin(uintptr_t start, uintptr_t end, int access)
{
	return pf_hold_span(start, end, 1, access);
}

int nkp_pf_hold(uintptr_t start, uintptr_t end)
{
	return pf_hold_span(start, end, 0, NK__ACC_UNKNOWN);
}

void nkp_pf_io_end(int token)
{
	if (token < 0)
		return;
	if (token >= (int)PF_HOLDS) {
		atomic_fetch_sub_explicit(&pf_hold_overflow, 1, memory_order_seq_cst);
		return;
	}
	atomic_store_explicit(&pf_hold[token].end, 0, memory_order_relaxed);
	atomic_store_explicit(&pf_hold[token].start, 0, memory_order_seq_cst);
}

/* 1 when [s, e) intersects a span under I/O.  A hold whose end is not written yet counts as unbounded. */
static int pf_held(uintptr_t s, uintptr_t e)
{
	if (atomic_load_explicit(&pf_hold_overflow, memory_order_seq_cst))
		return 1;
	for (unsigned i = 0; i < PF_HOLDS; i++) {
		uintptr_t hs = atomic_load_explicit(&pf_hold[i].start, memory_order_seq_cst);
		if (!hs)
			continue;
		uintptr_t he = atomic_load_explicit(&pf_hold[i].end, memory_order_seq_cst);
		if (!he)
			he = UINTPTR_MAX;
		if (hs < e && s < he)
			return 1;
	}
	return 0;
}

/* 1 when [s, e) intersects an excluded range (or we cannot tell). */
static int pf_excluded(uintptr_t s, uintptr_t e)
{
	if (atomic_load_explicit(&pf_excl_full, memory_order_seq_cst))
		return 1;
	unsigned n = atomic_load_explicit(&pf_n_excl, memory_order_seq_cst);
	for (unsigned i = 0; i < n && i < PF_EXCL; i++) {
		uintptr_t xs = atomic_load_explicit(&pf_excl[i].start, memory_order_seq_cst);
		uintptr_t xe = atomic_load_explicit(&pf_excl[i].end, memory_order_seq_cst);
		if (xs && xs < e && s < xe)
			return 1;
	}
	return 0;
}

void nkp_pf_exclude(uintptr_t start, uintptr_t end)
{
	if (!start || end <= start)
		return;
	start &= ~(pf_ps - 1);
	/* Stacks are often handed out again (thread pools, coroutine pools): one entry per range. */
	unsigned n = atomic_load_explicit(&pf_n_excl, memory_order_seq_cst);
	for (unsigned i = 0; i < n && i < PF_EXCL; i++)
		if (atomic_load_explicit(&pf_excl[i].start, memory_order_relaxed) == start &&
		    atomic_load_explicit(&pf_excl[i].end, memory_order_relaxed) == end)
			return;
	unsigned i = atomic_fetch_add_explicit(&pf_n_excl, 1, memory_order_seq_cst);
	if (i >= PF_EXCL) {
		atomic_store_explicit(&pf_excl_full, 1, memory_order_seq_cst);
	} else {
		atomic_store_explicit(&pf_excl[i].end, end, memory_order_seq_cst);
		atomic_store_explicit(&pf_excl[i].start, start, memory_order_seq_cst);
	}
	if (atomic_load_explicit(&pf_started, memory_order_acquire))
		pf_release_range(start, end, 0, NK__ACC_UNKNOWN);
}

void nkp_pf_forget(uintptr_t addr, size_t len)
{
	uintptr_t e = addr + len < addr ? UINTPTR_MAX : addr + len;

	if (!len || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return;
	pthread_mutex_lock(&pf_lock);
	pf_forget_gen++;
	unsigned j = (unsigned)(pf_forget_gen % PF_FORGETS);
	pf_forgot[j].gen = pf_forget_gen;
	pf_forgot[j].tgen = nkp_tracked_generation();
	pf_forgot[j].start = addr;
	pf_forgot[j].end = e;
	pf_release_range(addr, e, 0, NK__ACC_UNKNOWN);
	for (unsigned i = 0; i < pf_n_mem;) {
		if (pf_mem[i].start < e && addr < pf_mem[i].start + ((uintptr_t)pf_mem[i].pages << pf_shift))
			pf_mem[i] = pf_mem[--pf_n_mem];
		else
			i++;
	}
	pthread_mutex_unlock(&pf_lock);
}

/*
 * Under pf_lock: 1 when a run [s, e) picked after reading pf_forget_gen == @p since and
 * nkp_tracked_generation() == @p tsince may lie in freed memory (or we cannot tell): it intersects a range
 * forgotten after we began, or one forgotten before whose removal from the registry was not yet published
 * when we began (alloc.c calls nkp_pf_forget before it drops the range, under its lock, and bumps the
 * registry's generation after publishing the new set: tgen >= tsince means the picks may still see it).
 */
static int pf_forgotten(uint64_t since, uint64_t tsince, uintptr_t s, uintptr_t e)
{
	if (pf_forget_gen - since >= PF_FORGETS)
		return 1;
	uint64_t first = pf_forget_gen >= PF_FORGETS ? pf_forget_gen - PF_FORGETS + 1 : 1;
	for (uint64_t g = first; g <= pf_forget_gen; g++) {
		unsigned j = (unsigned)(g % PF_FORGETS);
		if ((g > since || pf_forgot[j].tgen >= tsince) && pf_forgot[j].start < e && s < pf_forgot[j].end)
			return 1;
	}
	return 0;
}

static int pf_is_own(uintptr_t s, uintptr_t e)
{
	for (int i = 0; i < pf_n_own; i++)
		if (pf_own[i].start < e && s < pf_own[i].end)
			return 1;
	return 0;
}

/* ------------------------------------------------------------ arming */

/*
 * Under pf_lock: revoke [start, start + n pages) whose nodes are @p status (move_pages status, <0 not
 * present).  All or nothing.  Returns pages armed.
 */
static unsigned pf_arm_run(uintptr_t start, unsigned n, const int *status, uint8_t random, uint64_t now)
{
	int slots[PF_GROUP];
	uintptr_t end = start + ((uintptr_t)n << pf_shift);
	unsigned k;

	for (k = 0; k < n; k++) {
		int st = status[k];
		slots[k] = pf_insert(start + ((uintptr_t)k << pf_shift), st >= 0 ? st : -1,
				     st == -ENOENT ? NK__SF_FIRST_TOUCH : 0, random, now);
		if (slots[k] < 0)
			break;
	}
	/* Keys are ARMING and visible (seq_cst) before we look at the holds. */
	if (k < n || pf_held(start, end) || pf_excluded(start, end) ||
	    nk__os_protect((void *)start, end - start, NK__PROT_NONE)) {
		for (unsigned i = 0; i < k; i++)
			pf_clear(slots[i]);
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		atomic_store_explicit(&pf_key[slots[i]], (start + ((uintptr_t)i << pf_shift)) | PF_ARMED,
				      memory_order_release);
	return n;
}

/*
 * Under pf_lock: revoke the pages @p want of member @p mb (given back, their visit over), one mprotect per
 * contiguous run (all or nothing per run; a group swept in order costs one).  Pages still revoked are left
 * alone: claiming them to cover them too would look to an I/O wrapper like a fault giving them back.
 * Returns pages revoked.
 */
static unsigned pf_arm_member(const struct pf_member *mb, unsigned want, uint64_t now)
{
	unsigned armed = 0;

	for (unsigned k = 0; k < mb->pages;) {
		if (!(want >> k & 1)) {
			k++;
			continue;
		}
		unsigned e = k;
		int st[PF_GROUP];
		while (e < mb->pages && (want >> e & 1)) {
			/* pf_arm_run's status: the node, or -ENOENT (first touch to come), or another error. */
			st[e - k] = mb->node[e] >= 0 ? mb->node[e] : mb->node[e] == -ENOENT ? -ENOENT : -ENOSYS;
			e++;
		}
		armed += pf_arm_run(mb->start + ((uintptr_t)k << pf_shift), e - k, st, !mb->fresh, now);
		k = e;
	}
	return armed;
}

/*
 * Under pf_lock: revoke the pages of members pf_idx[0..n) given by the bits of pf_mask[].  Pages whose node
 * is not known yet are asked for in one move_pages query per 256.  Returns pages revoked.
 */
static unsigned pf_arm_members(unsigned n, uint64_t now)
{
	void *pages[256];
	int status[256];
	int16_t *where[256];
	unsigned armed = 0, np = 0;

	for (unsigned i = 0; i <= n; i++) {
		if (i < n) {
			struct pf_member *mb = &pf_mem[pf_idx[i]];
			for (unsigned k = 0; k < mb->pages; k++)
				if ((pf_mask[i] >> k & 1) && mb->node[k] < 0) {
					pages[np] = (void *)(mb->start + ((uintptr_t)k << pf_shift));
					where[np++] = &mb->node[k];
				}
		}
		if (np && (i == n || np + PF_GROUP > 256)) {
			pf_query_or_unknown(np, pages, status);
			for (unsigned q = 0; q < np; q++)
				*where[q] = (int16_t)(status[q] <= INT16_MAX && status[q] >= INT16_MIN ? status[q] : -1);
			np = 0;
		}
	}
	for (unsigned i = 0; i < n; i++)
		armed += pf_arm_member(&pf_mem[pf_idx[i]], pf_mask[i], now);
	return armed;
}

/* Under pf_lock: revoke every page of the members from @p n0 on (just joined). */
static void pf_arm_joined(unsigned n0, uint64_t now)
{
	for (unsigned i = n0; i < pf_n_mem; i++) {
		pf_idx[i - n0] = i;
		pf_mask[i - n0] = (uint16_t)((1u << pf_mem[i].pages) - 1);
	}
	if (pf_n_mem > n0)
		pf_arm_members(pf_n_mem - n0, now);
}

/* A uniform draw in [0, 1). */
static double pf_unit(uint64_t *s)
{
	return (double)(nkp_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void pf_member_init(struct pf_member *mb, uintptr_t start, unsigned pages, int fresh)
{
	*mb = (struct pf_member){ .start = start, .pages = (uint8_t)pages, .fresh = (uint8_t)fresh };
	for (unsigned k = 0; k < PF_GROUP; k++)
		mb->node[k] = -1;
}

/* Under pf_lock: the weight of a sample now, from the members' share of the tracked groups. */
static void pf_set_weight(void)
{
	pf_frac = pf_n_mem && pf_total ? (double)pf_n_mem / (double)(pf_total > pf_n_mem ? pf_total : pf_n_mem) : 0;
	double w = pf_frac > 0 ? (double)PF_W_ONE / pf_frac + 0.5 : PF_W_ONE;
	atomic_store_explicit(&pf_cur_w, w > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)w, memory_order_relaxed);
}

/*
 * A block just allocated: each of its groups becomes a member with the members' current probability, at
 * once (so that its initialisation is sampled as any other visit; waiting for draws would miss it).
 */
void nkp_pf_new_block(uintptr_t addr, size_t len)
{
	uintptr_t s = (addr + pf_ps - 1) & ~(pf_ps - 1), e = (addr + len) & ~(pf_ps - 1);

	if (!atomic_load_explicit(&pf_running, memory_order_acquire) ||
	    !atomic_load_explicit(&nkp.sampling, memory_order_relaxed) || addr + len < addr || e <= s ||
	    atomic_load_explicit(&pf_over, memory_order_relaxed))
		return;
	uint64_t t0 = nkp_now();
	uintptr_t gb = (uintptr_t)PF_GROUP << pf_shift;
	pthread_mutex_lock(&pf_lock);
	unsigned n0 = pf_n_mem;
	pf_total += (e - s + gb - 1) / gb;
	/* No members yet (nothing was tracked when the sampler started, and its first round has not come):
	 * this block is all the tracked memory, draw the first members in it. */
	double f = pf_frac > 0 || pf_n_mem ? pf_frac : (double)pf_target0 / (double)pf_total;
	/* The groups as nkp_tracked_random_groups cuts them: from the block's first page. */
	for (uintptr_t g = s; f > 0 && g < e; g = e - g > gb ? g + gb : e) {
		unsigned pages = (unsigned)((e - g > gb ? gb : e - g) >> pf_shift);
		if (pf_unit(&pf_blk_rng) >= f || pf_is_own(g, g + ((uintptr_t)pages << pf_shift)))
			continue;
		if (pf_n_mem >= PF_MEMBERS ||
		    atomic_load_explicit(&pf_out, memory_order_relaxed) + PF_GROUP * (pf_n_mem - n0 + 1) > PF_MAX_OUT) {
			atomic_fetch_add_explicit(&pf_members_full, 1, memory_order_relaxed);
			break;
		}
		pf_member_init(&pf_mem[pf_n_mem++], g, pages, 1);
	}
	pf_arm_joined(n0, t0);
	pf_set_weight();
	pthread_mutex_unlock(&pf_lock);
	pf_cost(nkp_now() - t0);
}

/* ------------------------------------------------------------ the sampler thread */

/* Emit the parked first-touch samples with the node their page got.  Sampler thread (or stop). */
static void pf_flush_pending(void)
{
	void *pages[64];
	int status[64];
	unsigned idx[64], n = 0;

	for (unsigned i = 0; i <= PF_PENDING; i++) {
		if (i < PF_PENDING && atomic_load_explicit(&pf_pending[i].state, memory_order_acquire) == PN_READY) {
			idx[n] = i;
			pages[n] = (void *)(uintptr_t)(pf_pending[i].s.addr & ~(uint64_t)(pf_ps - 1));
			n++;
		}
		if (n == 64 || (i == PF_PENDING && n)) {
			if (pf_query(n, pages, status) < 0)
				for (unsigned k = 0; k < n; k++)
					status[k] = -1;
			for (unsigned k = 0; k < n; k++) {
				/* Not present yet: the faulting thread has not run its instruction again (descheduled
				 * on a loaded machine: unit.prof.pf.write lost 12% of its nodes so).  Ask again at the
				 * next rounds, at most PF_PENDING_TRIES of them, unless the sampler stops. */
				if (status[k] == -ENOENT && pf_pending[idx[k]].tries < PF_PENDING_TRIES &&
				    atomic_load_explicit(&pf_running, memory_order_relaxed)) {
					pf_pending[idx[k]].tries++;
					continue;
				}
				pf_pending[idx[k]].tries = 0;
				pf_pending[idx[k]].s.page_node = (int16_t)(status[k] >= 0 ? status[k] : -1);
				nkp_emit(&pf_pending[idx[k]].s);
				atomic_store_explicit(&pf_pending[idx[k]].state, PN_FREE, memory_order_release);
			}
			n = 0;
		}
	}
}

/* Give back pages armed before @p before (all when UINT64_MAX).  Returns how many. */
static unsigned pf_expire(uint64_t before)
{
	unsigned n = 0;

	for (unsigned i = 0; i < PF_SLOTS; i++) {
		uintptr_t k = atomic_load_explicit(&pf_key[i], memory_order_acquire);
		if ((k & PF_STATE) != PF_ARMED)
			continue;
		uintptr_t page = k & ~(uintptr_t)PF_STATE;
		if (pf_claim((int)i, page) != PF_GOT)
			continue;
		if (pf_meta[i].armed_ns >= before) {
			atomic_store_explicit(&pf_key[i], page | PF_ARMED, memory_order_release);
			continue;
		}
		if (pf_restore((int)i, page) == 0)
			n++;
	}
	atomic_fetch_add_explicit(&pf_expired, n, memory_order_relaxed);
	return n;
}

/* Under pf_lock: give back member @p mb's revoked pages, one mprotect per contiguous run.  Returns pages. */
static unsigned pf_release_member(const struct pf_member *mb)
{
	int slot[PF_GROUP];
	unsigned n = 0, run = 0, k0 = 0;

	for (unsigned k = 0; k <= mb->pages; k++) {
		uintptr_t page = mb->start + ((uintptr_t)k << pf_shift);
		int sl = k < mb->pages ? pf_find(page) : -1;
		if (sl >= 0 && pf_claim(sl, page) == PF_GOT) {
			if (!run)
				k0 = k;
			slot[run++] = sl;
			continue;
		}
		if (run && pf_restore_run(mb->start + ((uintptr_t)k0 << pf_shift), run, slot) == 0)
			n += run;
		run = 0;
	}
	return n;
}

/* Under pf_lock: member @p i leaves (its revoked pages given back; the last member takes its place). */
static void pf_remove_member(unsigned i)
{
	unsigned n = pf_release_member(&pf_mem[i]);
	atomic_fetch_add_explicit(&pf_expired, n, memory_order_relaxed);
	pf_mem[i] = pf_mem[--pf_n_mem];
}

/* No members, nothing revoked (pause, stop). */
static void pf_drop_members(void)
{
	pthread_mutex_lock(&pf_lock);
	while (pf_n_mem)
		pf_remove_member(pf_n_mem - 1);
	if (atomic_load_explicit(&pf_out, memory_order_relaxed))
		pf_expire(UINT64_MAX);
	pf_set_weight();
	pthread_mutex_unlock(&pf_lock);
}

/* Under pf_lock: 1 when the group starting at @p s is a member already. */
static int pf_is_member(uintptr_t s)
{
	for (unsigned i = 0; i < pf_n_mem; i++)
		if (pf_mem[i].start == s)
			return 1;
	return 0;
}

/*
 * Draw @p want groups that are not members yet, uniformly among the tracked ones, and revoke them.  Sampler
 * thread.  Returns how many joined.
 */
static unsigned pf_add_members(unsigned want, uint64_t now)
{
	static uintptr_t picks[PF_MEMBERS];
	static uint32_t npages[PF_MEMBERS];
	uint64_t gen, tgen, total = 0;
	unsigned n0;

	if (want > PF_MEMBERS)
		want = PF_MEMBERS;
	pthread_mutex_lock(&pf_lock);
	gen = pf_forget_gen;
	pthread_mutex_unlock(&pf_lock);
	tgen = nkp_tracked_generation();
	size_t got = nkp_tracked_random_groups(&pf_rng, PF_GROUP, picks, npages, want, &total);
	pthread_mutex_lock(&pf_lock);
	n0 = pf_n_mem;
	for (size_t i = 0; i < got && pf_n_mem < PF_MEMBERS; i++) {
		uintptr_t s = picks[i], e = s + ((uintptr_t)npages[i] << pf_shift);
		/* In address order: a repeat follows its first draw. */
		if ((i && picks[i - 1] == s) || !npages[i] || npages[i] > PF_GROUP || pf_is_member(s) ||
		    pf_forgotten(gen, tgen, s, e) || pf_is_own(s, e) || !nkp_tracked_contains(s) ||
		    !nkp_tracked_contains(e - pf_ps))
			continue;
		pf_member_init(&pf_mem[pf_n_mem], s, npages[i], 0);
		pf_n_mem++;
	}
	pf_arm_joined(n0, now);
	pf_total = total;
	pf_set_weight();
	pthread_mutex_unlock(&pf_lock);
	return pf_n_mem - n0;
}

/* The tracked groups counted again (allocations, frees), and the weight with them.  Sampler thread. */
static void pf_total_refresh(void)
{
	uint64_t total = 0;

	nkp_tracked_random_groups(&pf_rng, PF_GROUP, NULL, NULL, 0, &total);
	pthread_mutex_lock(&pf_lock);
	pf_total = total;
	pf_set_weight();
	pthread_mutex_unlock(&pf_lock);
}

/* @p k random members leave.  Sampler thread; the caller sets the weight after the joins that follow. */
static void pf_remove_members(unsigned k)
{
	pthread_mutex_lock(&pf_lock);
	while (k-- && pf_n_mem)
		pf_remove_member((unsigned)(nkp_rand(&pf_rng) % pf_n_mem));
	pthread_mutex_unlock(&pf_lock);
}

/*
 * A round: revoke again the member pages found given back at the last round too (their visit is over: a
 * round at least since the fault).  Sampler thread.
 */
static void pf_rearm(uint64_t now)
{
	unsigned n = 0;

	pthread_mutex_lock(&pf_lock);
	for (unsigned i = 0; i < pf_n_mem; i++) {
		struct pf_member *mb = &pf_mem[i];
		unsigned absent = 0, over = 0;
		for (unsigned k = 0; k < mb->pages; k++) {
			uintptr_t page = mb->start + ((uintptr_t)k << pf_shift);
			if (pf_find(page) >= 0)
				continue;
			absent |= 1u << k;
			uint64_t f = atomic_load_explicit(&pf_fault_ns[pf_hash(page)], memory_order_relaxed);
			if (now > f + PF_VISIT_NS)
				over |= 1u << k;
		}
		/* Given back at least PF_VISIT_NS ago: its visit is over, revoke it now; given back just before
		 * this round: at the next one (the visit may go on). */
		unsigned again = absent & (mb->seen | over);
		atomic_fetch_add_explicit(&pf_rearm_next, (unsigned)__builtin_popcount(again & ~mb->seen),
					  memory_order_relaxed);
		mb->seen = (uint16_t)(absent & ~again);
		if (again) {
			pf_idx[n] = i;
			pf_mask[n] = (uint16_t)again;
			n++;
		}
	}
	if (n)
		atomic_fetch_add_explicit(&pf_rearmed, pf_arm_members(n, now), memory_order_relaxed);
	pthread_mutex_unlock(&pf_lock);
}

/*
 * Member groups for the next second: enough for the rate at the samples per member page and second seen
 * in the last one, at most 4 times as many, fewer when it cost more than PF_MAX_OVERHEAD.
 */
static unsigned pf_target(unsigned groups, uint64_t dt_ns, uint64_t samples, uint64_t cost_ns)
{
	double limit = (double)(PF_MAX_OUT / 2 / PF_GROUP), t;
	/* Halved each time half of the budget left is used (src/profile/budget.h): the budget lasts the run. */
	double rate = nkp.rate / (double)(1ull << (nkp_budget_halvings() & 63));

	if (!groups || !dt_ns) {
		t = rate * 0.2 / PF_GROUP; /* a fifth of a second's samples if each page is visited once */
	} else {
		double dt = (double)dt_ns / 1e9, per = (double)samples / dt / (double)groups;
		t = per > 0 ? rate / per : limit;
		if (t > 4.0 * groups)
			t = 4.0 * groups;
		double frac = (double)cost_ns / (double)dt_ns;
		if (frac > PF_MAX_OVERHEAD && t > groups * PF_MAX_OVERHEAD / frac)
			t = groups * PF_MAX_OVERHEAD / frac;
	}
	return t < 1 ? 1 : t > limit ? (unsigned)limit : (unsigned)t;
}

static void *pf_main(void *arg)
{
	sigset_t all;
	uint64_t last_cost = atomic_load(&pf_cost_ns), last = nkp_now();
	uint64_t gov_t0 = 0, gov_samples0 = 0, gov_cost0 = 0, gov_groups = 0, gov_rounds = 0;
	unsigned target = 0;
	double rot_ns = 0, rot_due = 0; /* the cost of one member's leaving and another's joining; owed */
	int first = 1;
	uint64_t round_start = 0;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Off the master's cpu: members are revoked again only when this thread runs, and bound behind a
	 * busy OpenMP master it starved for seconds in the guest (visits went unsampled meanwhile). */
	nkp_own_thread_cpus();
	while (atomic_load_explicit(&pf_running, memory_order_acquire)) {
		uint64_t period = atomic_load_explicit(&pf_period_ns, memory_order_relaxed);
		if (!first) {
			/* A round every period from start to start, not a period's sleep after each round: where
			 * revoking is slow (in the guests every mprotect waits for the other virtual cpus to take
			 * their TLB shootdown, 10-170 ms a round at -icount shift=0) a sleep on top halved the
			 * rounds, and the visits in between went unsampled.  A round that overran its period
			 * starts the next one at once, after a yield. */
			struct timespec ts;
			uint64_t due = round_start + period, tnow = nkp_now();
			if (due <= tnow) {
				sched_yield();
				due = tnow;
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + (due - tnow);
			ts.tv_sec += (time_t)(ns / 1000000000u);
			ts.tv_nsec = (long)(ns % 1000000000u);
			pthread_mutex_lock(&pf_wake_lock);
			if (atomic_load_explicit(&pf_running, memory_order_acquire))
				pthread_cond_timedwait(&pf_wake, &pf_wake_lock, &ts);
			pthread_mutex_unlock(&pf_wake_lock);
			if (!atomic_load_explicit(&pf_running, memory_order_acquire))
				break;
			struct timespec w;
			clock_gettime(CLOCK_MONOTONIC, &w);
			int64_t late = (int64_t)(w.tv_sec - ts.tv_sec) * 1000000000 + (w.tv_nsec - ts.tv_nsec);
			if (late > 0)
				atomic_fetch_add_explicit(&pf_late_ns, (uint64_t)late, memory_order_relaxed);
		}
		first = 0;
		round_start = nkp_now();
		/*
		 * Each round from a cpu drawn at random: the first access to a page revoked again is its sample,
		 * and the thread that shares the sampler's cpu runs right after the round.  Under -icount (one
		 * virtual cpu at a time) it then made most of the samples of randomly read shared pages: from a
		 * fixed cpu, prof_table read 11 % remote for the true 64 %.  A random cpu makes that thread a
		 * random one.  On hardware, where the threads run at once, it costs a migration per round.
		 */
		nkp_own_cpu_random(&pf_rng);

		uint64_t tf = nkp_now();
		pf_flush_pending();
		atomic_fetch_add_explicit(&pf_flush_ns, nkp_now() - tf, memory_order_relaxed);
		uint64_t now = nkp_now(), cost = atomic_load(&pf_cost_ns);
		double frac = now > last ? (double)(cost - last_cost) / (double)(now - last) : 0;
		atomic_store_explicit(&pf_over, frac > PF_MAX_OVERHEAD, memory_order_relaxed);
		uint64_t since = now - last;
		last = now;
		last_cost = cost;
		if (!atomic_load_explicit(&nkp.sampling, memory_order_relaxed)) {
			/* Paused (region of interest): no fault may cost the program anything meanwhile. */
			if (pf_n_mem)
				pf_drop_members();
			gov_t0 = 0;
			continue;
		}
		uint64_t samples = atomic_load(&pf_faults) + atomic_load(&pf_io_pages);
		pthread_mutex_lock(&pf_lock);
		unsigned n = pf_n_mem;
		pthread_mutex_unlock(&pf_lock);
		gov_groups += n;
		gov_rounds++;
		/* The governor, every second (and at once when a round cost far more than allowed). */
		if (!gov_t0 || now - gov_t0 >= PF_GOVERN_NS || (frac > 4 * PF_MAX_OVERHEAD && n > 1)) {
			target = pf_target(gov_t0 ? (unsigned)(gov_groups / gov_rounds) : 0, gov_t0 ? now - gov_t0 : 0,
					   samples - gov_samples0, cost - gov_cost0);
			gov_t0 = now;
			gov_samples0 = samples;
			gov_cost0 = cost;
			gov_groups = gov_rounds = 0;
		}
		uint64_t t0 = nkp_now();
		/*
		 * Membership turns over continuously, a member at a time, so that a page's chance of being one
		 * never depends on the program and the samples cover more pages than the members at any time:
		 * all of them in PF_TURNOVER_NS at the most (and PF_TURNOVER_MIN per PF_TURNOVER_NS at least,
		 * so that a few members still visit much of the memory), slower when a member's leaving and another's
		 * joining cost more than a quarter of the time (mprotect with TLB shootdowns across busy
		 * emulated cpus took milliseconds).  Too many or too few members: they leave or join at once.
		 */
		double per_s = (double)(n > PF_TURNOVER_MIN ? n : PF_TURNOVER_MIN) / ((double)PF_TURNOVER_NS / 1e9);
		if (rot_ns > 0 && per_s > 0.25e9 / rot_ns)
			per_s = 0.25e9 / rot_ns;
		rot_due += per_s * (double)since / 1e9;
		unsigned rot = rot_due >= 1 ? (unsigned)rot_due : 0;
		rot_due -= rot;
		if (rot > n)
			rot = n;
		unsigned leave = n > target ? n - target : 0, join = n < target ? target - n : 0;
		if (join > PF_MEMBERS / 4)
			join = PF_MEMBERS / 4;
		if (rot + leave)
			pf_remove_members(rot + leave);
		atomic_fetch_add_explicit(&pf_turned, rot, memory_order_relaxed);
		unsigned joined = rot + join ? pf_add_members(rot + join, now) : 0;
		if (rot && joined) {
			double per = (double)(nkp_now() - t0) / (double)(rot + leave + joined) * 2;
			rot_ns = rot_ns > 0 ? 0.8 * rot_ns + 0.2 * per : per;
		}
		if (!(rot + join))
			pf_total_refresh(); /* no draw counted the tracked groups: the weight follows */
		pf_rearm(now);
		pf_cost(nkp_now() - t0);
		atomic_fetch_add_explicit(&pf_rounds, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&pf_round_ns, nkp_now() - now, memory_order_relaxed);
	}
	return NULL;
}

static int pf_own_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)data;
	int mine = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= s && me < s + ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && pf_n_own < PF_OWN; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			uintptr_t s = info->dlpi_addr + ph->p_vaddr;
			pf_own[pf_n_own].start = s & ~(pf_ps - 1);
			pf_own[pf_n_own].end = s + ph->p_memsz + pf_ps;
			pf_n_own++;
		}
	}
	return 1;
}

typedef int pthread_create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void pf_spawn(void)
{
	/* The real pthread_create: the runtime's wrapper would register the sampler as a program thread. */
	static pthread_create_fn *real;
	if (!real)
		real = (pthread_create_fn *)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		real = pthread_create;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pf_wake, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store_explicit(&pf_running, 1, memory_order_release);
	nkp_enter();
	pf_thread_live = real(&pf_thread, NULL, pf_main, NULL) == 0;
	nkp_leave();
	if (!pf_thread_live)
		atomic_store_explicit(&pf_running, 0, memory_order_release);
}

void nkp_pf_start(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (atomic_load(&pf_running))
		return;
	const char *mo = getenv("NK_PROF_MAX_OVERHEAD");
	if (mo && *mo) {
		char *end;
		double v = strtod(mo, &end);
		if (*end == '\0' && v > 0)
			PF_MAX_OVERHEAD = v >= 100 ? 1e9 : v / 100.0;
	}
	pf_ps = (uintptr_t)(nkp.page_size > 0 ? nkp.page_size : ps > 0 ? ps : 4096);
	pf_shift = (uintptr_t)__builtin_ctzl(pf_ps);
	pf_rng = nkp.seed ? nkp.seed : (uint64_t)nkp_now() ^ (uint64_t)getpid() << 32;
	nkp_rand(&pf_rng);
	pf_blk_rng = pf_rng ^ 0x5bd1e995u;
	nkp_rand(&pf_blk_rng);
	/* Rounds every 10 ms whatever the rate (the rate sets how many pages are members): a member is
	 * revoked again 10-20 ms after its fault, so visits further apart than that are told apart. */
	atomic_store(&pf_period_ns, 10000000u);
	pf_n_own = 0;
	dl_iterate_phdr(pf_own_cb, (void *)(uintptr_t)&pf_key);
	atomic_store_explicit(&pf_started, 1, memory_order_release);
	/* The first members now, before the program runs: blocks it allocates at once join them in their
	 * share, and an initialisation right at the start is sampled too. */
	pf_target0 = pf_target(0, 0, 0, 0);
	pf_add_members(pf_target0, nkp_now());
	pf_spawn();
}

static void pf_stop_thread(void)
{
	atomic_store_explicit(&pf_running, 0, memory_order_release);
	if (!pf_thread_live)
		return;
	pthread_mutex_lock(&pf_wake_lock);
	pthread_cond_broadcast(&pf_wake);
	pthread_mutex_unlock(&pf_wake_lock);
	pthread_join(pf_thread, NULL);
	pf_thread_live = 0;
}

void nkp_pf_stop(void)
{
	if (!atomic_load(&pf_started))
		return;
	pf_stop_thread();
	pthread_mutex_lock(&pf_lock);
	pf_expire(UINT64_MAX);
	pthread_mutex_unlock(&pf_lock);
	pf_flush_pending();
	/* pf_started stays 1: a fault racing with the stop still finds its retry. */
}

void nkp_pf_after_fork(void)
{
	if (!atomic_load(&pf_started))
		return;
	/* Only the forking thread survived: locks may be held by ghosts, holds and claims belong to them.
	 * An ARMING or CLAIMED key: its mprotect may or may not have happened; give the page back (harmless). */
	pthread_mutex_init(&pf_lock, NULL);
	pthread_mutex_init(&pf_wake_lock, NULL);
	for (unsigned i = 0; i < PF_HOLDS; i++) {
		atomic_store(&pf_hold[i].start, 0);
		atomic_store(&pf_hold[i].end, 0);
	}
	atomic_store(&pf_hold_overflow, 0);
	for (unsigned i = 0; i < PF_SLOTS; i++) {
		uintptr_t k = atomic_load(&pf_key[i]);
		if (k && (k & PF_STATE) != PF_ARMED) {
			nk__os_protect((void *)(k & ~(uintptr_t)PF_STATE), pf_ps, NK__PROT_RW);
			pf_clear((int)i);
		}
	}
	/* Parked samples are the parent's: it emits them into its own part. */
	for (unsigned i = 0; i < PF_PENDING; i++)
		atomic_store(&pf_pending[i].state, PN_FREE);
	/* The child's part counts from zero. */
	atomic_store(&pf_faults, 0);
	atomic_store(&pf_io_pages, 0);
	atomic_store(&pf_expired, 0);
	atomic_store(&pf_lost, 0);
	atomic_store(&pf_cost_ns, 0);
	atomic_store(&pf_turned, 0);
	atomic_store(&pf_rearmed, 0);
	atomic_store(&pf_members_full, 0);
	atomic_store(&pf_rounds, 0);
	atomic_store(&pf_round_ns, 0);
	atomic_store(&pf_late_ns, 0);
	atomic_store(&pf_flush_ns, 0);
	atomic_store(&pf_rearm_next, 0);
	pf_thread_live = 0;
	atomic_store(&pf_running, 0);
	pf_rng ^= (uint64_t)getpid() << 17;
	pf_blk_rng ^= (uint64_t)getpid() << 17;
	pf_spawn();
}

void nkp_pf_moved(uintptr_t addr, size_t len)
{
	uintptr_t e = addr + len < addr ? UINTPTR_MAX : addr + len;

	/* The node recorded at arm time is stale: give those pages back without a sample (the members there
	 * are revoked again after a fresh query). */
	if (!len || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return;
	pf_release_range(addr, e, 0, NK__ACC_UNKNOWN);
	pthread_mutex_lock(&pf_lock);
	for (unsigned i = 0; i < pf_n_mem; i++)
		for (unsigned k = 0; k < pf_mem[i].pages; k++) {
			uintptr_t page = pf_mem[i].start + ((uintptr_t)k << pf_shift);
			if (page < e && addr < page + pf_ps)
				pf_mem[i].node[k] = -1;
		}
	pthread_mutex_unlock(&pf_lock);
}

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
	nkp_end_put_kv(buf, cap, &n, "revoked_at_end", atomic_load(&pf_out), 0);
	nkp_end_put_kv(buf, cap, &n, "cost_ns", atomic_load(&pf_cost_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "excluded_ranges", atomic_load(&pf_n_excl), 0);
	nkp_end_put_kv(buf, cap, &n, "period_ns", atomic_load(&pf_period_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "turned_over", atomic_load(&pf_turned), 0);
	nkp_end_put_kv(buf, cap, &n, "rearmed", atomic_load(&pf_rearmed), 0);
	nkp_end_put_kv(buf, cap, &n, "members_full", atomic_load(&pf_members_full), 0);
	nkp_end_put_kv(buf, cap, &n, "rounds", atomic_load(&pf_rounds), 0);
	nkp_end_put_kv(buf, cap, &n, "round_ns", atomic_load(&pf_round_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "late_ns", atomic_load(&pf_late_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "flush_ns", atomic_load(&pf_flush_ns), 0);
	nkp_end_put_kv(buf, cap, &n, "rearmed_next_round", atomic_load(&pf_rearm_next), 0);
	nkp_end_put(buf, cap, &n, "}");
	buf[n] = 0;
	return n;
}
