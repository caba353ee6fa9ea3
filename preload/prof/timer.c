/* SPDX-License-Identifier: BSD-3-Clause
 * The `timer` sampler of libnumakit_prof.so: owns the per-thread CPU-time
 * timers, their signal and its handler.  Must not revoke memory, allocate
 * or lock in the handler; the instruction decoding belongs to
 * preload/decode (decode.h), the samples' way out to runtime.c (nkp_emit).
 *
 * Every program thread gets a clock on its own CPU time that sends it a
 * real-time signal every period of the CPU time it uses (1 / --rate
 * seconds): the kernel's task-clock software event (perf_event_open, an
 * hrtimer: exact periods, no PMU needed, allowed where perf_event_paranoid
 * <= 2 or with CAP_PERFMON), else a POSIX timer on CLOCK_THREAD_CPUTIME_ID
 * (checked at the kernel's tick: at most HZ signals a second per thread, the
 * periods between counted as overruns).  The handler reads
 * the instruction the thread was interrupted at (it has not run yet: the
 * registers are those it will run with), decodes it and computes the
 * address of each of its data accesses; an access to tracked memory becomes
 * a sample (tid, cpu and its node, address, ip, read/write, the page's node
 * from one move_pages query), weighted by the periods the signal stands for
 * (1 + the timer's overruns).
 *
 * What the samples estimate: each thread's CPU time is sampled uniformly,
 * so the weights of a variable's samples estimate the CPU time the threads
 * spent at instructions accessing it, each access of an instruction
 * counted (a load and a store of `add [m], r` both).  Nothing in this
 * depends on how fast the program runs: a program twice as fast gives half
 * the samples with the same shares.  On real hardware an access that waits
 * longer (a remote miss) weighs more, as latency-weighted hardware sampling
 * does, and the interrupt often lands on the instruction after a stalled
 * one (skid).  Under QEMU's TCG, with or without -icount, interrupts are
 * taken between translated blocks, so the interrupted instruction is the
 * first of a block: a bias the sampler cannot see (docs/profile.md).
 *
 * Nothing is revoked, so unlike pagefault this sampler never makes the
 * kernel, another process (process_vm_readv of MPI's shared-memory
 * transport) or a driver meet a protected page.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "decode.h"
#include "endjson.h"
#include "prof.h"

#define TM_DEFAULT_RATE 1000.0 /* samples per second of a thread's CPU time */

static int tm_sig;                 /* the signal the timers send */
static uint64_t tm_period_ns;      /* CPU time between two signals of one thread */
static atomic_int tm_running;      /* 1 between start and stop */
static atomic_int tm_handler_in;   /* the handler is installed */
static pthread_key_t tm_key;       /* a thread's timer, deleted when it exits */
static atomic_int tm_key_ok;
static uintptr_t tm_ps = 4096;
static atomic_ulong tm_ticks, tm_overruns, tm_nomem, tm_untracked, tm_undecoded, tm_unsupported, tm_samples;
static atomic_ulong tm_threads, tm_timer_fail, tm_perf_threads;
static atomic_int tm_no_perf; /* perf_event_open refused once: POSIX timers for every later thread */

#define TM_RING_PAGES 1 /* data pages of a thread's perf ring (its records are never read: see tm_drain) */

/* A thread's clock: a perf task-clock event (fd >= 0, its ring mapped) or a POSIX timer. */
struct tm_clock {
	int fd;
	void *ring;
	size_t ring_len;
};

static _Thread_local int tm_have __attribute__((tls_model("initial-exec")));
static _Thread_local timer_t tm_timer __attribute__((tls_model("initial-exec")));
static _Thread_local struct tm_clock tm_clk __attribute__((tls_model("initial-exec")));
/* This thread's period now (a multiple of tm_period_ns: doubled while the handler costs more than
 * 1/TM_COST_SHARE of it) and the handler's mean cost, ns. */
static _Thread_local uint64_t tm_cur_period __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t tm_cost_avg __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned tm_calls __attribute__((tls_model("initial-exec")));
#define TM_COST_SHARE 16 /* the handler may cost at most 1/16 of a period: a slow machine (an emulator) gets a
			  * longer period instead of signals that queue faster than they are handled */
static atomic_ulong tm_slowed;
static _Thread_local uint64_t tm_rng __attribute__((tls_model("initial-exec")));

/* The node of the page at @p addr: >= 0, -ENOENT not populated yet, other negative unknown.  AS-safe. */
static int tm_page_node(uintptr_t addr)
{
	void *page = (void *)(addr & ~(tm_ps - 1));
	int status = -1;

	if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) < 0)
		return -ENOSYS;
	return status;
}

/*
 * After a signal handled since @p t_in: keep the handler's cost under 1/TM_COST_SHARE of the thread's period
 * by doubling the period (the samples after it weigh twice as much), so that signals never arrive faster than
 * they are handled (an RT signal queue that overflows makes the kernel send SIGIO, which kills).  AS-safe.
 */
/* The calling thread's CPU time, ns (the clock the periods are measured on).  AS-safe. */
static uint64_t tm_cpu_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tm_pace(uint64_t t_in)
{
	/* In the thread's CPU time, as the period: wall time would count the time others ran meanwhile
	 * (under QEMU with -icount the virtual cpus take turns, and the handler looked four times dearer). */
	uint64_t t_out = tm_cpu_now(), c = t_out > t_in ? t_out - t_in : 0;

	/* The first calls of a thread pay for first uses (page faults on the handler's code, lazy binding):
	 * they do not count. */
	if (++tm_calls <= 8)
		return;
	tm_cost_avg = tm_cost_avg ? (7 * tm_cost_avg + c) / 8 : c;
	if (tm_calls < 24 || !tm_have || !tm_cur_period || tm_cost_avg * TM_COST_SHARE <= tm_cur_period ||
	    tm_cur_period >= tm_period_ns * 1024)
		return;
	uint64_t p = tm_cur_period * 2;
	if (tm_clk.fd >= 0) {
		if (ioctl(tm_clk.fd, PERF_EVENT_IOC_PERIOD, &p))
			return;
	} else {
		struct itimerspec its;
		memset(&its, 0, sizeof its);
		its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)(p / 1000000000u);
		its.it_value.tv_nsec = its.it_interval.tv_nsec = (long)(p % 1000000000u);
		if (timer_settime(tm_timer, 0, &its, NULL))
			return;
	}
	tm_cur_period = p;
	atomic_fetch_add_explicit(&tm_slowed, 1, memory_order_relaxed);
}

static void tm_handler(int sig, siginfo_t *si, void *uctx)
{
	int saved_errno = errno;
	uint64_t t_in = tm_cpu_now();

	(void)sig;
	if (tm_clk.ring) {
		/* The records are not needed (the signal's context says it all): mark them consumed so that
		 * the ring never fills (a full ring stops the wakeups that send the signal). */
		struct perf_event_mmap_page *mp = tm_clk.ring;
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	}
	if (!atomic_load_explicit(&tm_running, memory_order_relaxed) || !uctx || !nkp.active)
		goto out;
	atomic_fetch_add_explicit(&tm_ticks, 1, memory_order_relaxed);
	if (!atomic_load_explicit(&nkp.sampling, memory_order_relaxed))
		goto out;
#if defined(__x86_64__)
	const ucontext_t *uc = uctx;
	const greg_t *g = uc->uc_mcontext.gregs;
	uint64_t gpr[NKD_NGPR] = {
		[NKD_RAX] = (uint64_t)g[REG_RAX], [NKD_RCX] = (uint64_t)g[REG_RCX], [NKD_RDX] = (uint64_t)g[REG_RDX],
		[NKD_RBX] = (uint64_t)g[REG_RBX], [NKD_RSP] = (uint64_t)g[REG_RSP], [NKD_RBP] = (uint64_t)g[REG_RBP],
		[NKD_RSI] = (uint64_t)g[REG_RSI], [NKD_RDI] = (uint64_t)g[REG_RDI], [NKD_R8] = (uint64_t)g[REG_R8],
		[NKD_R9] = (uint64_t)g[REG_R9],   [NKD_R10] = (uint64_t)g[REG_R10], [NKD_R11] = (uint64_t)g[REG_R11],
		[NKD_R12] = (uint64_t)g[REG_R12], [NKD_R13] = (uint64_t)g[REG_R13], [NKD_R14] = (uint64_t)g[REG_R14],
		[NKD_R15] = (uint64_t)g[REG_R15],
	};
	uint64_t ip = (uint64_t)g[REG_RIP];
	/* Never read past the instruction's page: the next one may be unmapped.  An instruction that crosses
	 * into it is then too short to decode (counted as undecoded; rare). */
	size_t len = (size_t)(tm_ps - (ip & (tm_ps - 1)));
	struct nkd_access acc[NKD_MAX_ACCESS];
	int n = 0, rc = nkd_accesses((const void *)(uintptr_t)ip, len < 15 ? len : 15, ip, gpr, acc, &n);
	if (rc == NKD_UNDECODED) {
		atomic_fetch_add_explicit(&tm_undecoded, 1, memory_order_relaxed);
		goto out;
	}
	if (rc == NKD_UNSUPPORTED) {
		atomic_fetch_add_explicit(&tm_unsupported, 1, memory_order_relaxed);
		goto out;
	}
	if (n == 0) {
		atomic_fetch_add_explicit(&tm_nomem, 1, memory_order_relaxed);
		goto out;
	}
	int over = si && si->si_code == SI_TIMER ? si->si_overrun : 0;
	if (over < 0)
		over = 0;
	uint64_t mult = tm_cur_period && tm_period_ns ? tm_cur_period / tm_period_ns : 1;
	if (over)
		atomic_fetch_add_explicit(&tm_overruns, (unsigned long)over, memory_order_relaxed);
	uint64_t now = nkp_now();
	int cpu = sched_getcpu();
	for (int i = 0; i < n; i++) {
		uintptr_t lo, hi;
		if (acc[i].stack || !nkp_tracked_span((uintptr_t)acc[i].addr, &lo, &hi)) {
			atomic_fetch_add_explicit(&tm_untracked, 1, memory_order_relaxed);
			continue;
		}
		int node = tm_page_node((uintptr_t)acc[i].addr);
		struct nk__nkp_sample s;
		memset(&s, 0, sizeof s);
		s.time_ns = now;
		s.addr = acc[i].addr;
		s.ip = ip;
		s.tid = nkp_tid();
		/* the base periods this sample stands for: the thread's period, times the signals it missed */
		uint64_t w = mult * (1 + (uint64_t)over);
		s.weight = (uint32_t)(w > UINT32_MAX ? UINT32_MAX : w);
		s.cpu = (int16_t)(cpu >= 0 && cpu <= INT16_MAX ? cpu : -1);
		s.cpu_node = (int16_t)(cpu >= 0 ? nkp_cpu_node(cpu) : -1);
		s.page_node = (int16_t)(node >= 0 && node <= INT16_MAX ? node : -1);
		if (node == -ENOENT)
			s.flags = NK__SF_FIRST_TOUCH; /* this instruction is about to place the page */
		s.phase = atomic_load_explicit(&nkp.phase, memory_order_relaxed);
		s.access = acc[i].write ? NK__ACC_WRITE : NK__ACC_READ;
		s.sampler = NK__SAMPLER_TIMER;
		nkp_emit(&s);
		atomic_fetch_add_explicit(&tm_samples, 1, memory_order_relaxed);
	}
#endif
out:
	tm_pace(t_in);
	errno = saved_errno;
}

static void tm_thread_gone(void *v)
{
	(void)v;
	if (!tm_have)
		return;
	tm_have = 0;
	if (tm_clk.fd >= 0) {
		ioctl(tm_clk.fd, PERF_EVENT_IOC_DISABLE, 0);
		void *ring = tm_clk.ring;
		tm_clk.ring = NULL; /* before the unmap: a signal still pending must not touch it */
		munmap(ring, tm_clk.ring_len);
		close(tm_clk.fd);
		tm_clk.fd = -1;
	} else {
		timer_delete(tm_timer);
	}
}

/* The calling thread's task-clock event: 0, or -1 (nothing left open). */
static int tm_perf_begin(void)
{
	struct perf_event_attr pe;
	struct f_owner_ex owner = { F_OWNER_TID, (pid_t)nkp_tid() };

	memset(&pe, 0, sizeof pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.size = sizeof pe;
	pe.config = PERF_COUNT_SW_TASK_CLOCK;
	pe.sample_period = tm_period_ns;
	pe.sample_type = 0; /* records of a header only: never read */
	pe.disabled = 1;
	pe.exclude_kernel = 1; /* a period that ends in the kernel gives no signal: the handler needs user code */
	pe.exclude_hv = 1;
	pe.wakeup_events = 1; /* every period: a wakeup, hence a signal */
	int fd = (int)syscall(SYS_perf_event_open, &pe, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = (size_t)(1 + TM_RING_PAGES) * tm_ps;
	void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		close(fd);
		return -1;
	}
	tm_clk.fd = fd;
	tm_clk.ring = ring;
	tm_clk.ring_len = len;
	if (fcntl(fd, F_SETOWN_EX, &owner) || fcntl(fd, F_SETSIG, tm_sig) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) || ioctl(fd, PERF_EVENT_IOC_RESET, 0) ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		tm_clk.ring = NULL;
		munmap(ring, len);
		close(fd);
		tm_clk.fd = -1;
		return -1;
	}
	return 0;
}

void nkp_timer_thread_begin(void)
{
	struct sigevent ev;
	struct itimerspec its;

	if (!atomic_load_explicit(&tm_running, memory_order_acquire) || tm_have)
		return;
	tm_clk.fd = -1;
	tm_clk.ring = NULL;
	tm_cur_period = tm_period_ns;
	tm_cost_avg = 0;
	tm_calls = 0;
	if (!atomic_load_explicit(&tm_no_perf, memory_order_relaxed)) {
		if (tm_perf_begin() == 0) {
			tm_have = 1;
			if (atomic_load_explicit(&tm_key_ok, memory_order_acquire))
				pthread_setspecific(tm_key, (void *)1);
			atomic_fetch_add_explicit(&tm_threads, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&tm_perf_threads, 1, memory_order_relaxed);
			return;
		}
		atomic_store_explicit(&tm_no_perf, 1, memory_order_relaxed);
	}
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = tm_sig;
	ev._sigev_un._tid = (pid_t)nkp_tid();
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm_timer)) {
		atomic_fetch_add_explicit(&tm_timer_fail, 1, memory_order_relaxed);
		return;
	}
	tm_have = 1;
	if (atomic_load_explicit(&tm_key_ok, memory_order_acquire))
		pthread_setspecific(tm_key, (void *)1); /* its destructor deletes the timer at thread exit */
	/* The first signal after a random part of a period: threads started together do not tick together. */
	tm_rng = nkp.seed ^ ((uint64_t)nkp_tid() << 20) ^ 0x51ed27u;
	uint64_t first = 1 + nkp_rand(&tm_rng) % tm_period_ns;
	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = (time_t)(first / 1000000000u);
	its.it_value.tv_nsec = (long)(first % 1000000000u);
	its.it_interval.tv_sec = (time_t)(tm_period_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(tm_period_ns % 1000000000u);
	if (timer_settime(tm_timer, 0, &its, NULL)) {
		timer_delete(tm_timer);
		tm_have = 0;
		atomic_fetch_add_explicit(&tm_timer_fail, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&tm_threads, 1, memory_order_relaxed);
}

/* The signal: NK_PROF_TIMER_SIGNAL (a number) or SIGRTMAX - 3, a real-time signal programs rarely use. */
static int tm_choose_signal(void)
{
	const char *e = getenv("NK_PROF_TIMER_SIGNAL");
	if (e && *e) {
		char *end;
		long v = strtol(e, &end, 10);
		if (!*end && v >= SIGRTMIN && v <= SIGRTMAX)
			return (int)v;
	}
	return SIGRTMAX - 3;
}

void nkp_timer_start(void)
{
	struct sigaction sa;
	long ps = sysconf(_SC_PAGESIZE);

	if (atomic_load(&tm_running))
		return;
	tm_ps = (uintptr_t)(nkp.page_size > 0 ? nkp.page_size : ps > 0 ? ps : 4096);
	double rate = nkp.rate > 0 ? nkp.rate : TM_DEFAULT_RATE;
	double period = 1e9 / rate;
	tm_period_ns = period < 1000 ? 1000 : period > 1e10 ? (uint64_t)1e10 : (uint64_t)period;
	tm_sig = tm_choose_signal();
	{
		/* Bind the decoder and move_pages now, not in the first signal handler (lazy binding there is
		 * slow and takes the dynamic linker's locks). */
		static const unsigned char nop[] = { 0x90 };
		uint64_t gpr[NKD_NGPR] = { 0 };
		struct nkd_access acc[NKD_MAX_ACCESS];
		int n;
		(void)nkd_accesses(nop, sizeof nop, 0, gpr, acc, &n);
		(void)tm_page_node((uintptr_t)&gpr);
	}
	if (!atomic_load(&tm_handler_in)) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = tm_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		/* A fault while decoding (it should not happen) must still reach the runtime's dispatcher. */
		sigdelset(&sa.sa_mask, SIGSEGV);
		sigdelset(&sa.sa_mask, SIGBUS);
		if (sigaction(tm_sig, &sa, NULL))
			return;
		atomic_store(&tm_handler_in, 1);
	}
	if (!atomic_load(&tm_key_ok) && pthread_key_create(&tm_key, tm_thread_gone) == 0)
		atomic_store(&tm_key_ok, 1);
	atomic_store_explicit(&tm_running, 1, memory_order_release);
	nkp_timer_thread_begin();
}

void nkp_timer_stop(void)
{
	atomic_store_explicit(&tm_running, 0, memory_order_release);
	/* Other threads' timers keep ticking until those threads exit: the handler returns at once. */
	tm_thread_gone(NULL);
}

void nkp_timer_after_fork(void)
{
	/* The child has no timers (POSIX timers are not inherited; the parent's perf event, inherited as a
	 * descriptor, counts the parent's thread) and one thread: its own clock again. */
	if (tm_clk.fd >= 0) {
		void *ring = tm_clk.ring;
		tm_clk.ring = NULL;
		munmap(ring, tm_clk.ring_len);
		close(tm_clk.fd);
		tm_clk.fd = -1;
	}
	tm_have = 0;
	atomic_store(&tm_ticks, 0);
	atomic_store(&tm_overruns, 0);
	atomic_store(&tm_nomem, 0);
	atomic_store(&tm_untracked, 0);
	atomic_store(&tm_undecoded, 0);
	atomic_store(&tm_unsupported, 0);
	atomic_store(&tm_samples, 0);
	atomic_store(&tm_threads, 0);
	atomic_store(&tm_timer_fail, 0);
	atomic_store(&tm_perf_threads, 0);
	atomic_store(&tm_slowed, 0);
	if (atomic_load(&tm_running))
		nkp_timer_thread_begin();
}

size_t nkp_timer_end_json(char *buf, size_t cap)
{
	size_t n = 0;

	if (!buf || cap < 256 || !atomic_load(&tm_handler_in))
		return 0;
	nkp_end_put(buf, cap, &n, "\"timer\": {");
	nkp_end_put_kv(buf, cap, &n, "period_ns", tm_period_ns, 1);
	nkp_end_put_kv(buf, cap, &n, "signal", (uint64_t)tm_sig, 0);
	nkp_end_put_kv(buf, cap, &n, "ticks", atomic_load(&tm_ticks), 0);
	nkp_end_put_kv(buf, cap, &n, "overruns", atomic_load(&tm_overruns), 0);
	nkp_end_put_kv(buf, cap, &n, "samples", atomic_load(&tm_samples), 0);
	nkp_end_put_kv(buf, cap, &n, "no_memory", atomic_load(&tm_nomem), 0);
	nkp_end_put_kv(buf, cap, &n, "untracked", atomic_load(&tm_untracked), 0);
	nkp_end_put_kv(buf, cap, &n, "undecoded", atomic_load(&tm_undecoded), 0);
	nkp_end_put_kv(buf, cap, &n, "unsupported", atomic_load(&tm_unsupported), 0);
	nkp_end_put_kv(buf, cap, &n, "threads", atomic_load(&tm_threads), 0);
	nkp_end_put_kv(buf, cap, &n, "perf_threads", atomic_load(&tm_perf_threads), 0);
	nkp_end_put_kv(buf, cap, &n, "slowed", atomic_load(&tm_slowed), 0);
	nkp_end_put_kv(buf, cap, &n, "timer_failed", atomic_load(&tm_timer_fail), 0);
	nkp_end_put(buf, cap, &n, "}");
	buf[n] = 0;
	return n;
}
