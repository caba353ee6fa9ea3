/* SPDX-License-Identifier: BSD-3-Clause
 * Between the pagefault sampler's own files only (pagefault.c, pf_table.c, pf_fault.c, pf_sampler.c), split
 * from one pagefault.c (issue 15); the design is in pagefault.c's header comment.  Every name here is hidden:
 * the .so exports only the nkp_pf_* entry points of prof.h, as before.  Nothing here may be used by other files.
 */
#ifndef NK_PRELOAD_PROF_PAGEFAULT_IMPL_H
#define NK_PRELOAD_PROF_PAGEFAULT_IMPL_H

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
#include "pf_self.h"
#include "prof.h"

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_POINTER_LOCK_FREE == 2,
	       "the SIGSEGV handler needs lock-free atomics");

#define PF_TLS __attribute__((tls_model("initial-exec")))
#define PF_HIDDEN __attribute__((visibility("hidden")))

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
/* NK_PROF_MAX_OVERHEAD (percent; >= 100: no cap) overrides it, read once at start (PF_MAX_OVERHEAD, pf_sampler.c). */
#define PF_FAULT_NS 20000u /* the price of a fault outside the handler until the probe measured it (pf_trap_ns) */

enum { PF_ARMING = 1, PF_ARMED = 2, PF_CLAIMED = 3, PF_STATE = 3 };

struct pf_meta {
	uint64_t armed_ns;
	int16_t node;   /* node at arm time, -1 not present */
	uint8_t flags;  /* NK__SF_FIRST_TOUCH when not present */
	uint8_t random; /* 1: drawn by the sampler; 0: joined the members with its new block */
};

/* ---- shared state, defined in pagefault.c ---- */

extern PF_HIDDEN _Atomic uintptr_t pf_key[PF_SLOTS];
extern PF_HIDDEN struct pf_meta pf_meta[PF_SLOTS];
extern PF_HIDDEN atomic_uint pf_out;          /* pages revoked now */
extern PF_HIDDEN atomic_ulong pf_released;    /* pages ever given back (retry logic) */
extern PF_HIDDEN atomic_ulong pf_cost_ns;     /* time spent, for the governor */
extern PF_HIDDEN atomic_ulong pf_faults, pf_io_pages, pf_expired, pf_lost;
extern PF_HIDDEN atomic_ulong pf_busy, pf_retries;
extern PF_HIDDEN atomic_ulong pf_turned, pf_rearmed, pf_members_full, pf_rounds, pf_round_ns;
/* wake-ups after their due time; time resolving parked first touches; pages revoked again at the next round */
extern PF_HIDDEN atomic_ulong pf_late_ns, pf_flush_ns, pf_rearm_next;
/* The first draw, before the program runs: members joined, pages revoked, tracked groups (END "start_*"). */
extern PF_HIDDEN atomic_ulong pf_start_members, pf_start_pages, pf_start_groups, pf_start_ft;
/* END's account of first touches: failed move_pages queries when arming (and the last errno), first-touch
 * samples handed out, and faults flagged first touch whose page was present after all. */
extern PF_HIDDEN atomic_ulong pf_query_failed, pf_query_errno, pf_ft_samples, pf_ft_present;
/* When each page last faulted, by pf_hash (a collision only makes one page wait a round more or less). */
extern PF_HIDDEN _Atomic uint64_t pf_fault_ns[PF_SLOTS];
#define PF_VISIT_NS 1000000ull /* accesses to a page closer together than this are one visit */
extern PF_HIDDEN atomic_int pf_started;       /* nkp_pf_start ran (the handler looks) */
extern PF_HIDDEN atomic_uint pf_period_ns;
extern PF_HIDDEN atomic_ulong pf_trap_ns, pf_probes, pf_stretched;
extern PF_HIDDEN _Atomic uintptr_t pf_probe_page;
extern PF_HIDDEN _Atomic uint64_t pf_probe_in, pf_probe_out;
/* The profiler's own time in each thread (pf_self.h, pf_fault.c): NK_PROF_SELFTIME=0 turns the correction of
 * the weights off (read at start).  END "selftime": samples whose weight was scaled, the sum of their f and the
 * largest (parts per million), the summed weights before and after, and the price of a clock read. */
extern PF_HIDDEN atomic_int pf_self_on;
extern PF_HIDDEN atomic_ulong pf_self_n, pf_self_f_sum, pf_self_f_max, pf_self_w_in, pf_self_w_out;
extern PF_HIDDEN atomic_uint pf_clock_ns; /* the price of one nkp_now() (END selftime.clock_ns) */
#define PF_PERIOD_NS 10000000u      /* a round every 10 ms, */
#define PF_PERIOD_MAX_NS 1000000000u /* stretched up to a second when one member group costs too much */

/* The members: groups of up to PF_GROUP pages.  Under pf_lock. */
struct pf_member {
	uintptr_t start;          /* first page */
	uint16_t seen;            /* bit k: page k was found given back at the last round */
	uint8_t pages;            /* 1..PF_GROUP */
	uint8_t fresh;            /* joined with its new block */
	int16_t node[PF_GROUP];   /* where each page lives, as last asked; < 0: ask again (-ENOENT: not present) */
};
extern PF_HIDDEN struct pf_member pf_mem[PF_MEMBERS];
extern PF_HIDDEN unsigned pf_n_mem;
extern PF_HIDDEN _Atomic uint32_t pf_cur_w; /* PF_W_ONE / pf_frac: the weight of a sample now */

extern PF_HIDDEN uintptr_t pf_ps, pf_shift;

/* First-touch samples waiting for the sampler thread. */
enum { PN_FREE = 0, PN_FILLING = 1, PN_READY = 2 };
struct pf_pending_slot {
	atomic_int state;
	unsigned tries; /* rounds the page was found still not present (sampler thread only) */
	struct nk__nkp_sample s;
};
extern PF_HIDDEN struct pf_pending_slot pf_pending[PF_PENDING];
#define PF_PENDING_TRIES 50 /* rounds a first touch may wait for its faulting thread to run again */

/* Spans under I/O: [start, end), start 0 = free. */
struct pf_span {
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
};
extern PF_HIDDEN struct pf_span pf_hold[PF_HOLDS];
extern PF_HIDDEN atomic_int pf_hold_overflow; /* I/O calls in flight that found no hold slot: sampler pauses */

/* Ranges never to revoke (stacks the kernel pushes signal frames on, stdio buffers): append only. */
#define PF_EXCL 1024u
extern PF_HIDDEN atomic_uint pf_n_excl;

/* Recently forgotten ranges (pf_fault.c), written under pf_lock. */
extern PF_HIDDEN uint64_t pf_forget_gen;

/* The writable segments of this object. */
struct pf_own_range {
	uintptr_t start, end;
};
extern PF_HIDDEN struct pf_own_range pf_own[PF_OWN];
extern PF_HIDDEN int pf_n_own;

extern PF_HIDDEN pthread_mutex_t pf_lock;

/* ---- pf_table.c: the revoked-page table, and the kernel queries ---- */

PF_HIDDEN unsigned pf_hash(uintptr_t page);
PF_HIDDEN long pf_query(unsigned long n, void **pages, int *status);
PF_HIDDEN void pf_query_or_unknown(unsigned long n, void **pages, int *status);
PF_HIDDEN int pf_populate_write(void *page);
PF_HIDDEN void pf_cost(uint64_t ns);
PF_HIDDEN int pf_find(uintptr_t page);
PF_HIDDEN int pf_insert(uintptr_t page, int node, uint8_t flags, uint8_t random, uint64_t now);
PF_HIDDEN void pf_clear(int slot);
enum { PF_GOT = 0, PF_GONE = 1, PF_BUSY = 2 };
PF_HIDDEN int pf_claim(int slot, uintptr_t page);
PF_HIDDEN int pf_restore_run(uintptr_t s, unsigned n, const int *slot);
PF_HIDDEN int pf_restore(int slot, uintptr_t page);

/* ---- pf_fault.c: the fault, giving back, holds, exclusions, forgets ---- */

PF_HIDDEN void pf_release_range(uintptr_t s, uintptr_t e, int io, uint8_t access);
PF_HIDDEN int pf_held(uintptr_t s, uintptr_t e);
PF_HIDDEN int pf_excluded(uintptr_t s, uintptr_t e);
PF_HIDDEN int pf_forgotten(uint64_t since, uint64_t tsince, uintptr_t s, uintptr_t e);
PF_HIDDEN int pf_is_own(uintptr_t s, uintptr_t e);

/* pf_sampler.c, shared with the unit test (tests/prof/pf_unit.c links these objects with test doubles of
 * the runtime): the sampler's run flag and cost cap, revoking a run of pages, giving back expired pages,
 * emitting parked first touches. */
extern PF_HIDDEN atomic_int pf_running;
extern PF_HIDDEN double PF_MAX_OVERHEAD; /* the cost cap (NK_PROF_MAX_OVERHEAD), a variable despite its name */
PF_HIDDEN unsigned pf_expire(uint64_t before);
PF_HIDDEN unsigned pf_arm_run(uintptr_t start, unsigned n, const int *status, uint8_t random, uint64_t now);
PF_HIDDEN void pf_flush_pending(void);

#endif
