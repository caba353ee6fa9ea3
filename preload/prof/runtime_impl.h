/* SPDX-License-Identifier: BSD-3-Clause
 * Between the runtime core's own files only (runtime.c, part.c, ring.c, signal.c, process.c), split from one
 * runtime.c (issue 15); the samplers, alloc.c and io.c see prof.h alone.  Every name here is hidden: the .so
 * exports only its interposers, the nk_profile hooks and the sampler entry points, as before.
 *
 * Locking: one writer lock (part.c; an atomic owner tid, not a pthread mutex, so a fatal-signal handler can
 * try it and tell whether it interrupted its own thread inside a record) serialises every record and is the
 * ring's single consumer.  The sampler functions of pagefault.c/trace.c/timer.c are weak (below): the
 * runtime works (sampler none) while they are absent.
 */
#ifndef NK_PRELOAD_PROF_RUNTIME_IMPL_H
#define NK_PRELOAD_PROF_RUNTIME_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "prof.h"
#include "profile/nkp.h"

#define NKP_EXPORT __attribute__((visibility("default")))
#define NKP_HIDDEN __attribute__((visibility("hidden")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* Weak: pagefault.c / trace.c / timer.c may be missing in a build; then those samplers are unavailable. */
#pragma weak nkp_pf_start
#pragma weak nkp_pf_stop
#pragma weak nkp_pf_fault
#pragma weak nkp_pf_after_fork
#pragma weak nkp_pf_moved
#pragma weak nkp_pf_hold
#pragma weak nkp_pf_hold_all
#pragma weak nkp_pf_io_end
#pragma weak nkp_trace_start
#pragma weak nkp_trace_stop
#pragma weak nkp_trace_moved
#pragma weak nkp_trace_after_fork
#pragma weak nkp_trace_end_json
#pragma weak nkp_pf_end_json
#pragma weak nkp_timer_start
#pragma weak nkp_timer_stop
#pragma weak nkp_timer_thread_begin
#pragma weak nkp_timer_after_fork
#pragma weak nkp_timer_end_json

/* ---- runtime.c: state, basics, real functions, the hook table, start ---- */
/** The interposers' re-entrancy depth (nkp_busy/nkp_enter/nkp_leave); the flusher sets it for good. */
extern TLS NKP_HIDDEN int nkp_tls_busy;
/** nkp_tid's cache; 0 again in a fork child. */
extern TLS NKP_HIDDEN uint32_t nkp_tls_tid;
/** dlsym(RTLD_NEXT, name) with the interposers off.  Not AS-safe. */
NKP_HIDDEN void *nkp_real(const char *name);
/** In the child after fork: the phase table's lock again (a thread of the parent may have held it). */
NKP_HIDDEN void nkp_hooks_after_fork(void);

/* `static type real_NAME`, resolved on first use. */
#define REAL(type, name)                                                                                            \
	static type real_##name;                                                                                    \
	if (!real_##name)                                                                                           \
		real_##name = (type)nkp_real(#name)

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* ---- part.c: the part file, its writer and writer lock, the part's descriptor ---- */
extern NKP_HIDDEN struct nk__nkp_writer nkp_wr;
extern NKP_HIDDEN _Atomic uint32_t nkp_wr_owner; /* tid holding the writer lock, 0 free */
extern NKP_HIDDEN atomic_int nkp_closed;         /* END written (or being written) */
extern NKP_HIDDEN char nkp_part_dir[PATH_MAX];   /* NK_PROF_DIR made absolute (runtime.c's start) */
extern NKP_HIDDEN char nkp_part_path[PATH_MAX];  /* the part being written (or the last name tried) */
NKP_HIDDEN void nkp_wr_lock(void);
NKP_HIDDEN void nkp_wr_unlock(void);
/** 1 when the calling process owns the open part (a vfork child does not).  AS-safe. */
NKP_HIDDEN int nkp_mine(void);
/** Resolve libc's close for nkp_part_fd_close (the constructor: dlsym is not AS-safe). */
NKP_HIDDEN void nkp_part_resolve(void);
/** The part's descriptor really closed (past our close() interposer).  AS-safe. */
NKP_HIDDEN void nkp_part_fd_close(int fd);
/** Begin a part: header, PROCESS, META, MAPS, THREAD of the calling thread (index 0).  Writer lock held. */
NKP_HIDDEN int nkp_begin_part(void);
/** THREAD record of the calling thread.  Writer lock held. */
NKP_HIDDEN void nkp_write_thread_locked(uint32_t index);
/** Close the part for good: samplers stopped, samples, MAPS, END (exit paths, not AS-safe). */
NKP_HIDDEN void nkp_close_part(const char *how, int status, int sig);
/** The writer lock tried (a fatal signal, _exit): samples, END @p how, close.  AS-safe, no MAPS. */
NKP_HIDDEN void nkp_part_end_async(const char *how, int status, int sig);
/** Before an exec: samples, MAPS, END how=exec, keeping the writer lock so that nothing follows END. */
NKP_HIDDEN void nkp_part_exec_begin(void);
/** The exec failed: take END back, release the writer lock and go on. */
NKP_HIDDEN void nkp_part_exec_failed(void);
/** In the child after fork: close the parent's part (the child begins its own). */
NKP_HIDDEN void nkp_part_drop_inherited(void);

/* ---- ring.c: the sample ring, its flusher thread, the sample budget ---- */
extern NKP_HIDDEN _Atomic uint64_t nkp_n_samples, nkp_n_dropped;
extern NKP_HIDDEN _Atomic uint64_t nkp_n_budget_dropped, nkp_budget_spent_ns;
NKP_HIDDEN void nkp_ring_reset(void);
/** In the child after fork: an empty ring, every counter 0. */
NKP_HIDDEN void nkp_ring_after_fork(void);
/** Move published samples to the part; returns how many.  Caller holds the writer lock.  AS-safe. */
NKP_HIDDEN size_t nkp_ring_drain(void);
/** The flusher thread, only with a sampler (none: a single-threaded program stays single-threaded). */
NKP_HIDDEN void nkp_flusher_start(void);
/** Tell the flusher to end (it exits at its next wake-up). */
NKP_HIDDEN void nkp_flusher_stop(void);

/* ---- signal.c: the fatal signals, the dispatcher, the sigaction/signal interposers ---- */
NKP_HIDDEN void nkp_signals_install(void);
/** The program's view of SIGSEGV in this thread's signal mask (1: blocked), which the runtime keeps unblocked
 * while the pagefault sampler runs; a thread starts with its creator's (process.c). */
extern TLS NKP_HIDDEN int nkp_segv_view;
/** In the child after fork: the signal table's lock again. */
NKP_HIDDEN void nkp_signals_after_fork(void);

/* ---- process.c: threads, fork, exec/spawn, exit, dlopen ---- */
extern NKP_HIDDEN _Atomic uint64_t nkp_n_forks;     /* fork()s and vfork children's execs (END "forks") */
extern NKP_HIDDEN _Atomic uint32_t nkp_thread_index; /* last thread index handed out (END "threads") */
/** Resolve libc's _exit for the _exit interposer (the constructor: dlsym is not AS-safe, _exit is). */
NKP_HIDDEN void nkp_process_resolve(void);
/** NK_PROF_* and LD_PRELOAD entries of the environment at start, kept for exec/spawn. */
NKP_HIDDEN void nkp_save_env(void);
/** The fork handlers and the atexit handler. */
NKP_HIDDEN void nkp_process_install(void);

#endif
