/* SPDX-License-Identifier: BSD-3-Clause
 * The sample ring: a lock-free multi-producer queue the samplers fill from any thread or signal handler
 * (nkp_emit), the sample budget, and the flusher thread that drains it into the part under the writer lock.
 * It must stay AS-safe and allocation-free on the producer side, and it writes no record but SAMPLES (and
 * callers.c's CALLERS, drained with them).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "../common/own_thread.h"
#include "prof.h"
#include "profile/budget.h"
#include "runtime_impl.h"

_Atomic uint64_t nkp_n_samples, nkp_n_dropped;
/* The accesses the samples kept stand for (their weights: the trace sampler's period follows it, see
 * src/profile/budget.h), the samples dropped because the budget was spent (the rest of nkp_n_dropped found the
 * ring full) and when that began. */
static _Atomic uint64_t n_weighted;
_Atomic uint64_t nkp_n_budget_dropped, nkp_budget_spent_ns;

/* ---------------------------------------------------------------- ring */

#define RING_CAP (64u * 1024u)
#define EMIT_WAIT_NS 200000000u /* nkp_emit_wait: the longest a sample waits for room */
static atomic_int emit_stuck;      /* a wait ran out: no waiting until the flusher drained again */
struct slot {
	_Atomic uint64_t seq;
	struct nk__nkp_sample s;
};
static struct slot ring[RING_CAP];
static _Atomic uint64_t ring_head; /* next enqueue position */
static uint64_t ring_tail;         /* next dequeue position (consumer holds the writer lock) */
static struct nk__nkp_sample drain_buf[RING_CAP];

void nkp_ring_reset(void)
{
	for (uint32_t i = 0; i < RING_CAP; i++)
		atomic_store_explicit(&ring[i].seq, i, memory_order_relaxed);
	atomic_store(&ring_head, 0);
	ring_tail = 0;
}

/* Put @p s in the ring: 0, or -1 when the ring is full.  AS-safe, lock-free. */
static int ring_put(const struct nk__nkp_sample *s)
{
	uint64_t pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
	struct slot *sl;
	for (;;) {
		sl = &ring[pos & (RING_CAP - 1)];
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&ring_head, &pos, pos + 1, memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (dif < 0) { /* full */
			return -1;
		} else {
			pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
		}
	}
	sl->s = *s;
	if (!sl->s.time_ns)
		sl->s.time_ns = nkp_now();
	if (!sl->s.phase)
		sl->s.phase = atomic_load_explicit(&nkp.phase, memory_order_relaxed);
	if (!sl->s.sampler)
		sl->s.sampler = (uint8_t)nkp.sampler;
	atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
	return 0;
}

static int emit(const struct nk__nkp_sample *s, int wait)
{
	if (!nkp.active || nkp_closed)
		return NKP_DROP_OTHER;
	uint64_t used = atomic_fetch_add(&nkp_n_samples, 1);
	if (used >= nkp.budget) {
		uint64_t never = 0;
		atomic_fetch_sub(&nkp_n_samples, 1);
		atomic_fetch_add(&nkp_n_dropped, 1);
		if (!atomic_fetch_add(&nkp_n_budget_dropped, 1))
			atomic_compare_exchange_strong(&nkp_budget_spent_ns, &never, nkp_now() | 1);
		return NKP_DROP_OTHER;
	}
	atomic_fetch_add_explicit(&n_weighted, s->weight ? s->weight : 1, memory_order_relaxed);
	/* Waiting: 100 us naps until the flusher made room, at most EMIT_WAIT_NS, and never inside the
	 * runtime (a signal handler may have interrupted this thread while it held the writer lock the
	 * flusher needs).  A wait that ran out stops the others until the flusher drains again. */
	for (unsigned naps = 0; ring_put(s); naps++) {
		if (naps >= EMIT_WAIT_NS / 100000u)
			atomic_store_explicit(&emit_stuck, 1, memory_order_relaxed);
		if (!wait || nkp_tls_busy || nkp_closed || atomic_load_explicit(&emit_stuck, memory_order_relaxed)) {
			atomic_fetch_sub(&nkp_n_samples, 1);
			atomic_fetch_sub_explicit(&n_weighted, s->weight ? s->weight : 1, memory_order_relaxed);
			atomic_fetch_add(&nkp_n_dropped, 1);
			return NKP_DROP_RING;
		}
		struct timespec ts = { 0, 100000L };
		nanosleep(&ts, NULL);
	}
	return 0;
}

uint64_t nkp_budget_period(uint64_t p0)
{
	return nk__budget_period(p0, nkp.budget, atomic_load_explicit(&nkp_n_samples, memory_order_relaxed),
				 atomic_load_explicit(&n_weighted, memory_order_relaxed));
}

uint32_t nkp_budget_halvings(void)
{
	return nk__budget_halvings(nkp.budget, atomic_load_explicit(&nkp_n_samples, memory_order_relaxed));
}

int nkp_emit(const struct nk__nkp_sample *s)
{
	return emit(s, 0);
}

int nkp_emit_wait(const struct nk__nkp_sample *s)
{
	return emit(s, 1);
}

size_t nkp_ring_drain(void)
{
	size_t total = 0;
	for (;;) {
		size_t n = 0;
		while (n < RING_CAP) {
			struct slot *sl = &ring[ring_tail & (RING_CAP - 1)];
			uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
			if (seq != ring_tail + 1)
				break;
			drain_buf[n++] = sl->s;
			atomic_store_explicit(&sl->seq, ring_tail + RING_CAP, memory_order_release);
			ring_tail++;
		}
		if (!n) {
			nkp_callers_drain(); /* after the samples they belong to, when those were ready */
			return total;
		}
		total += n;
		(void)nk__nkp_write(&nkp_wr, NK__NKP_SAMPLES, drain_buf, n * sizeof drain_buf[0]);
	}
}

void nkp_ring_after_fork(void)
{
	nkp_ring_reset();
	nkp_callers_after_fork();
	atomic_store(&nkp_n_samples, 0);
	atomic_store(&nkp_n_dropped, 0);
	atomic_store(&n_weighted, 0);
	atomic_store(&nkp_n_budget_dropped, 0);
	atomic_store(&nkp_budget_spent_ns, 0);
}

/* ---------------------------------------------------------------- flusher */

static pthread_t flusher;
static atomic_int flusher_run;

static void *flusher_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	nkp_tls_busy = 1; /* the flusher's own allocations are never tracked */
	nkp_own_thread_cpus();
	size_t last = 0;
	while (atomic_load(&flusher_run)) {
		/* Every 50 ms; every 2 ms while samples come fast enough to fill an eighth of the ring between drains
		 * (the trace sampler at rate 1), so that the ring does not overflow. */
		struct timespec ts = { 0, (last > RING_CAP / 8 ? 2 : 50) * 1000000L };
		nanosleep(&ts, NULL);
		nkp_wr_lock();
		last = nkp_closed ? 0 : nkp_ring_drain();
		nkp_wr_unlock();
		if (last)
			atomic_store_explicit(&emit_stuck, 0, memory_order_relaxed);
	}
	return NULL;
}

/*
 * Only samplers fill the ring (sampler none, i.e. hw, records allocations directly): without one no thread is
 * started, so a single-threaded program stays single-threaded (glibc's malloc keeps its lock-free fast path).
 * Samples that still arrive are written at close.
 */
void nkp_flusher_start(void)
{
	if (!nkp.sampler)
		return;
	/* libc's, not a later runtime's interposer (preload/common/own_thread.h). */
	nk_rt_pthread_create_fn *real_pthread_create = nk_rt_libc_pthread_create();
	if (!real_pthread_create)
		return;
	atomic_store(&flusher_run, 1);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (real_pthread_create(&flusher, &at, flusher_main, NULL))
		atomic_store(&flusher_run, 0);
	pthread_attr_destroy(&at);
}

void nkp_flusher_stop(void)
{
	atomic_store(&flusher_run, 0);
}
