/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so: the profiler runtime that `numakit profile` preloads
 * into the program (and that programs built for the `trace` sampler link).
 * Internal contract between its files:
 *
 *   runtime core (what its files share among themselves: runtime_impl.h)
 *     runtime.c environment and start, global state, tid, the re-entrancy
 *               guard, the public nk_profile_* hooks (hook table).
 *     part.c    the part file (src/profile/nkp.h): writer and writer lock,
 *               PROCESS/META/MAPS/THREAD/END, closing on every path, the
 *               descriptor interposers (close, close_range, dup2, ...).
 *     ring.c    the sample ring, the sample budget, the flusher thread.
 *     signal.c  the fatal signals, the signal interposers (sigaction/signal)
 *               and the SIGSEGV dispatcher.  The core owns the fatal
 *               signals: a sigaction()/signal() call from inside the .so
 *               goes through its interposer and is recorded as the
 *               program's handler, so the other files install none.
 *     process.c threads (pthread_create wrapper), fork, exec/spawn, exit
 *               and the return from main, dlopen.
 *   allocation tracking (what its files share among themselves: alloc_impl.h)
 *     alloc.c   malloc family / mmap / munmap / mremap interposers, the
 *               table of tracked blocks, numakit's blocks, static segments
 *               of loaded objects, fork; the only file with the real
 *               functions (../common/interpose.h).
 *     tracked.c the tracked-range registry the samplers draw pages from.
 *     sites.c   allocation sites (call stacks), the objects left out.
 *     blocks.c  small blocks (under NK_PROF_MIN_SIZE), batched by site.
 *   io.c        wrappers of calls through which the kernel reads or writes
 *               user memory (read, pread, readv, recv*, fread, fgets,
 *               write, pwrite, writev, send*, fwrite, ...): they call
 *               nkp_pf_prepare_io() on the buffer first.
 *   pagefault.c the `pagefault` sampler: revokes access to random tracked
 *               pages from its own thread, turns the faults into samples.
 *               Split by responsibility (hidden pf_* names shared in
 *               pagefault_impl.h): pagefault.c (design, shared state, END
 *               counters), pf_table.c (the revoked-page table),
 *               pf_fault.c (nkp_pf_fault, first touches, I/O holds,
 *               exclusions, forgets), pf_sampler.c (members, rounds, the
 *               governor, the thread, start/stop/fork).
 *   trace.c     the `trace` sampler: -fsanitize-coverage=trace-loads,
 *               trace-stores callbacks.
 *   (the `hw` sampler runs in `numakit profile` itself, through
 *    perf_event_open on the child; the runtime then only records
 *    allocations, threads and maps.)
 *
 * Environment (set by `numakit profile`; without NK_PROF_DIR the runtime
 * stays inactive and every interposer just forwards):
 *   NK_PROF_DIR       folder for part files: <dir>/<pid>.part; an image that
 *                     exec replaced keeps the pid, so the new image writes
 *                     <dir>/<pid>.<n>.part (n = 1, 2, ...: first free name)
 *   NK_PROF_SAMPLER   pagefault | trace | none (hw: none here)
 *   NK_PROF_RATE      pagefault: target samples per second per process
 *                     (default 1000); trace: record one access in RATE
 *                     (default 1 = every access)
 *   NK_PROF_MIN_SIZE  allocations of at least this many bytes are tracked
 *                     one by one (default 65536); smaller ones are
 *                     recorded by site in batches (blocks.c, "small blocks")
 *                     when NK_PROF_SMALL_BLOCKS=1 (off by default: each
 *                     small malloc then costs its call stack)
 *   NK_PROF_ROI       1: start paused until nk_profile_start()
 *   NK_PROF_BUDGET    at most this many samples per process (default 4 Mi),
 *                     spread over the run (src/profile/budget.h: the trace
 *                     period grows, the pagefault rate halves); beyond it
 *                     samples are counted as dropped
 *   NK_PROF_SEED      seed of the sampler's random choices (default from time)
 *
 * Everything reached from a signal handler is marked AS-safe.
 */
#ifndef NK_PRELOAD_PROF_H
#define NK_PRELOAD_PROF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/nkp.h"

#define NKP_API __attribute__((visibility("default")))

/** splitmix64: the samplers' random draws (pagefault's members, timer's first periods).  AS-safe. */
static inline uint64_t nkp_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the runtime core: runtime.c (state, tid, cpus, guard), part.c (nkp_now, nkp_record, nkp_write_maps),
 * ring.c (nkp_emit, budget) ---- */
struct nkp_state {
	int active;        /* NK_PROF_DIR was set and the part file is open */
	int sampler;       /* enum nk__nkp_sampler, 0 = none */
	double rate;
	uint64_t min_size;
	int small_blocks;  /* NK_PROF_SMALL_BLOCKS=1: blocks under min_size recorded by site */
	uint64_t budget;
	uint64_t seed;
	int page_size;
	int ncpus;         /* size of cpu_node */
	int16_t *cpu_node; /* cpu -> node, -1 unknown */
	_Atomic int sampling;   /* 0 while paused (ROI) */
	_Atomic uint16_t phase; /* current phase id */
};
extern struct nkp_state nkp;

/** CLOCK_MONOTONIC ns since the part began.  AS-safe. */
uint64_t nkp_now(void);
/** Kernel tid of the caller (cached per thread).  AS-safe. */
uint32_t nkp_tid(void);
/** Node of @p cpu, -1 unknown.  AS-safe. */
int nkp_cpu_node(int cpu);
/** Queue one sample (fills time/phase/sampler if 0); dropped and counted when the ring is full or the budget spent.
 * 0 queued, NKP_DROP_RING dropped because the ring was full (the flusher fell behind: a caller that weighs
 * its samples can carry the weight over to its next one), NKP_DROP_OTHER (budget spent, not recording).
 * AS-safe, lock-free. */
enum { NKP_DROP_RING = 1, NKP_DROP_OTHER = 2 };
int nkp_emit(const struct nk__nkp_sample *s);
/**
 * nkp_emit, but when the ring is full the caller naps until the flusher made room (at most 200 ms, not
 * inside the runtime, not after a wait ran out until the next drain): the trace sampler, whose samples
 * come in bursts from every thread at once, would otherwise lose those of its parallel phases and bias
 * the fractions.  AS-safe (nanosleep).
 */
int nkp_emit_wait(const struct nk__nkp_sample *s);
/**
 * The sample budget spread over the run (src/profile/budget.h).  nkp_budget_period: the trace sampler's period
 * now, from its first period @p p0 (it grows with the accesses sampled so far over the budget left).
 * nkp_budget_halvings: how many times the pagefault sampler's target rate is halved now (once per half of
 * the budget left used).  AS-safe, relaxed loads.
 */
uint64_t nkp_budget_period(uint64_t p0);
uint32_t nkp_budget_halvings(void);
/** Append one record to the part file (serialised by a lock; not AS-safe). */
int nkp_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
/** Re-entrancy guard of the interposers: nonzero while the runtime itself is inside malloc & co. */
int nkp_busy(void);
void nkp_enter(void);
void nkp_leave(void);
/** Let the calling runtime thread run on every cpu `numakit profile` was given (NK_PROF_CPUS); no-op without. */
void nkp_own_thread_cpus(void);
/* Move the calling runtime thread to one cpu drawn uniformly from NK_PROF_CPUS (else from its current
 * affinity); returns that cpu, -1 when there is no choice or the call failed (the thread stays). */
int nkp_own_cpu_random(uint64_t *rng);

/* libnumakit reaches the runtime only through the hook table runtime.c defines (src/runtime/runtime.h:
 * nk_profile_*, nk_array allocations, nk_apply's hold/unhold and moved pages). */
/** Append a MAPS record (/proc/self/maps now); no-op when inactive. */
void nkp_write_maps(void);

/* ---- comm.c: the MPI traffic the PMPI wrappers attach (../common/comm_abi.h, nk__prof_comm_attach) ---- */
/** The COMM record's payload in *out when this process attached a table, its length; else 0.  AS-safe. */
size_t nkp_comm_record(const void **out);

/* ---- alloc.c, tracked.c (nkp_tracked_*), blocks.c (nkp_alloc_flush, nkp_alloc_end_json) ---- */
/** Interposers' state after the runtime started (statics registered, sites primed). */
void nkp_alloc_start(void);
/**
 * The pagefault sampler's draw.  Each tracked range is cut into groups of @p group pages from its first
 * page (the last one shorter when the range is not a multiple).  Draws @p max groups uniformly among all
 * groups of the set (repeats possible): their first pages in starts[] in address order, their page counts
 * in npages[]; *total = how many groups the set has.  Every tracked page is thus equally likely to be
 * drawn.  Returns how many were drawn.  Not AS-safe (sampler thread).
 */
size_t nkp_tracked_random_groups(uint64_t *rng, size_t group, uintptr_t *starts, uint32_t *npages, size_t max,
				 uint64_t *total);
/** 1 when [page, page + page_size) lies inside a tracked range.  AS-safe (lock-free reads). */
int nkp_tracked_contains(uintptr_t page);
/**
 * Optional (trace.c uses it when alloc.c defines it): a number that changes
 * whenever the tracked set changes, so that a caller may cache answers of
 * nkp_tracked_contains.  AS-safe, one atomic load.
 */
uint64_t nkp_tracked_generation(void);
/**
 * Needed by trace.c (weak there; without it trace falls back to
 * nkp_tracked_contains and misses the accesses to the partial first and
 * last pages of every block, e.g. the first 4080 bytes of a malloc'ed one):
 * 1 when the byte at @p addr lies in a tracked range, which is then
 * [*lo, *hi); 0 when not, [*lo, *hi) then being the untracked gap around
 * @p addr (between the neighbouring ranges, 0 and UINTPTR_MAX at the ends).
 * trace.c caches the span per thread while nkp_tracked_generation() stays
 * the same.  AS-safe, lock-free.
 */
int nkp_tracked_span(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);
/* Between the runtime core and alloc.c only. */
void nkp_alloc_rescan(void);                               /* after dlopen: statics of new objects */
void nkp_alloc_unloaded(void);                             /* after dlclose: untrack statics of objects gone */
void nkp_alloc_track_numakit(uintptr_t addr, size_t len);  /* nkp_hook_alloc */
void nkp_alloc_untrack_numakit(uintptr_t addr, size_t len); /* nkp_hook_free */
void nkp_alloc_fork_prepare(void);
void nkp_alloc_fork_parent(void);
void nkp_alloc_fork_child(void);
void nkp_alloc_replay(void); /* child after fork: SITE/ALLOC of the inherited live blocks into the new part */
/** Write the small blocks' events still batched (before END).  @p from_signal: only if blk_lock is free (a
 * fatal signal may have interrupted its holder). */
void nkp_alloc_flush(int from_signal);
/** END counters of small blocks, `"small_blocks": {...}` (no leading comma); 0 when @p cap is too small. */
size_t nkp_alloc_end_json(char *buf, size_t cap);

/* ---- timer.c (weak in the runtime core, runtime_impl.h: absent without Zydis) ---- */
/** NK_PROF_SAMPLER=timer, after the part is open: the signal handler, the calling thread's timer. */
void nkp_timer_start(void);
void nkp_timer_stop(void);
/** A program thread begins (process.c's thread trampoline): its CPU-time timer. */
void nkp_timer_thread_begin(void);
/** In the child after fork: its one thread's timer again. */
void nkp_timer_after_fork(void);
/** END counters, `"timer": {...}` (no leading comma); 0 when the sampler did not run.  AS-safe. */
size_t nkp_timer_end_json(char *buf, size_t cap);

/* ---- pagefault.c ---- */
void nkp_pf_start(void);
void nkp_pf_stop(void);
/** SIGSEGV from the dispatcher: 1 when it was a fault on a page we revoked (handled), else 0.  AS-safe. */
int nkp_pf_fault(int sig, siginfo_t *info, void *uctx);
/** Before [addr, addr+len) is freed, unmapped or remapped: give back access and forget our pages there. */
void nkp_pf_forget(uintptr_t addr, size_t len);
/** Before the kernel reads or writes [addr, addr+len) for the program: give back access there.  AS-safe. */
void nkp_pf_prepare_io(const void *addr, size_t len);
/** A new tracked block (allocation, static segment): arm some of its pages to catch their first touch. */
void nkp_pf_new_block(uintptr_t addr, size_t len);
/** In the child after fork: the sampler thread did not survive; start again. */
void nkp_pf_after_fork(void);
/**
 * blocks.c (with --small-blocks), around the recording of a malloc or free: the calling thread's time inside
 * the profiler, whose share scales its samples' weights (pf_fault.c, pf_self.h).  begin returns the start
 * (nkp_now; 0: not counted), end takes it.  AS-safe.
 */
uint64_t nkp_pf_self_begin(void);
void nkp_pf_self_end(uint64_t t0);
/**
 * io.c, around one call through which the kernel reads (@p access NK__ACC_READ: write(2)-like) or writes
 * (NK__ACC_WRITE: read(2)-like) the span [start, end): give back access there, as nkp_pf_prepare_io, and
 * keep the sampler from revoking pages of the span until nkp_pf_io_end(token) after the call (else the
 * sampler could revoke the buffer again while the kernel still copies).  Returns the token (-1: nothing to
 * end).  AS-safe.
 */
int nkp_pf_io_begin(uintptr_t start, uintptr_t end, int access);
/** The call of nkp_pf_io_begin's (or nkp_pf_hold's) @p token returned.  AS-safe. */
void nkp_pf_io_end(int token);
/**
 * numakit's own placement (nk_apply through nkp_hook_hold) is about to work on [start, end): give back our
 * pages there without samples and revoke none until nkp_pf_io_end(token): MADV_POPULATE_WRITE fails on a
 * revoked page, and the nodes cached for the members there would go stale.  Returns the token.  AS-safe.
 */
int nkp_pf_hold(uintptr_t start, uintptr_t end);
/**
 * process.c, around glibc calls that read the program's memory with every signal blocked (pthread_create
 * reads the attribute and the cpu set and signal mask it points to; a posix_spawn child reads its
 * arguments, environment and file actions): a fault there cannot be handled and kills the process.  Revoke
 * nothing anywhere until nkp_pf_io_end(token), and return once no revocation is in flight, so that memory
 * the caller touches now stays accessible for the call.  With @p give_back, also give back every page
 * revoked now (for calls whose memory the caller cannot name).  Returns the token (-1: nothing to end).
 * Not AS-safe (waits for the sampler's lock).
 */
int nkp_pf_hold_all(int give_back);
/**
 * blocks.c: a live block of someone else's (the loader, libc, threading runtimes) on [start, end): revoke
 * none of its pages until nkp_pf_unpin of the same span (counted per page); gives back ours there.
 */
void nkp_pf_pin(uintptr_t start, uintptr_t end);
void nkp_pf_unpin(uintptr_t start, uintptr_t end);
/** io.c: never revoke pages of [start, end) again (a stack, a stdio buffer); gives back ours there.  AS-safe. */
void nkp_pf_exclude(uintptr_t start, uintptr_t end);
/**
 * The pagefault sampler's END counters as JSON members, `"faults": N, "pagefault": {...}` (no leading
 * comma), into @p buf; returns their length, 0 when the sampler did not run or @p cap < 256.  part.c
 * adds them to END as it does nkp_trace_end_json (weak: optional).  AS-safe.
 */
size_t nkp_pf_end_json(char *buf, size_t cap);
/** Optional (runtime.c calls it only when defined): pages of [addr, addr+len) may have moved (nk_apply). */
void nkp_pf_moved(uintptr_t addr, size_t len);

/* ---- callers.c: the callers of first touches made inside a library (issue 16) ---- */
/** The executable segments of the loaded objects, again (at the sampler's start, after dlopen).  Not AS-safe. */
void nkp_callers_scan_objects(void);
/** pf_fault.c, for a first-touch sample @p s whose fault context is @p uctx: when its ip is outside the main
 * executable, the return addresses on the stack, kept for a CALLERS record.  AS-safe. */
void nkp_callers_note(const void *uctx, const struct nk__nkp_sample *s);
/** The entries kept, as CALLERS records (the ring's drain, under the writer lock). */
void nkp_callers_drain(void);
/** Entries kept so far, and first touches whose callers were lost (table full, stack unreadable). */
void nkp_callers_counts(uint64_t *noted, uint64_t *lost);
/** In the child after fork. */
void nkp_callers_after_fork(void);

/* ---- trace.c ----
 * the runtime core calls: nkp_trace_start() when NK_PROF_SAMPLER=trace, after the
 * part is open; nkp_trace_stop() before END; nkp_trace_moved() from
 * nkp_hook_moved() and (alloc.c, next to nkp_pf_forget) when tracked memory
 * is freed or unmapped, so that a block later mapped at the same address
 * gets its first touches flagged; nkp_trace_after_fork() in the child (after
 * the new part is open); nkp_trace_end_json() to add its member to the END
 * JSON (give it a static buffer: about 60 bytes per thread, 16 KiB lists
 * ~250 threads). */
/** Sampler TRACE: begin recording (after nkp is set up; threads join lazily on their first access). */
void nkp_trace_start(void);
/**
 * Stop recording and emit the first-touch samples still waiting for their
 * page's node.  Call before writing END.  AS-safe.
 */
void nkp_trace_stop(void);
/** Pages of [addr, addr+len) may have moved: forget their cached nodes (nkp_hook_moved forwards here).  AS-safe. */
void nkp_trace_moved(uintptr_t addr, size_t len);
/** In the child after fork: forget the parent's threads, counters and cached nodes.  AS-safe. */
void nkp_trace_after_fork(void);
/**
 * The trace sampler's END counters as one JSON member, `"trace": {...}`
 * (no leading comma), written into @p buf; returns its length, 0 when the
 * sampler did not run or @p cap < 256 (the per-thread list is cut to fit).
 * AS-safe (no stdio, no allocation).
 */
size_t nkp_trace_end_json(char *buf, size_t cap);

#endif
