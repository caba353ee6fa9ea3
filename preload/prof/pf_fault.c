/* SPDX-License-Identifier: BSD-3-Clause
 * The pagefault sampler's fault path: nkp_pf_fault (the SIGSEGV handler's first look), samples and parked
 * first touches, and giving pages back for I/O, holds, exclusions and forgets.  All of it runs in the
 * program's threads, most of it in a signal handler: AS-safe, no allocation; only nkp_pf_forget takes pf_lock.
 */
#include "pagefault_impl.h"

/* The last fault this thread ran again because its page might have been ours, and pf_released then. */
static _Thread_local uintptr_t pf_retry_addr PF_TLS;
static _Thread_local unsigned long pf_retry_gen PF_TLS;

/* Ranges never to revoke (stacks the kernel pushes signal frames on, stdio buffers): append only. */
static struct {
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
} pf_excl[PF_EXCL];
static atomic_int pf_excl_full; /* more ranges than PF_EXCL: the sampler stops revoking */

/* Recently forgotten ranges, written under pf_lock. */
static struct {
	uint64_t gen;  /* pf_forget_gen of this forget */
	uint64_t tgen; /* nkp_tracked_generation() at the forget: the registry drops the range after it */
	uintptr_t start, end;
} pf_forgot[PF_FORGETS];

/* ------------------------------------------------------------ the profiler's own time (issue 13) */

/*
 * The sampler counts visits in time: a member page is revoked again every round after its fault, so a phase
 * that revisits its pages within a round weighs as many rounds as it lasts, and whatever the profiler does
 * inside a thread (recording each small block's malloc and free with --small-blocks, handling its faults)
 * stretches that thread's phases and their weight.  Each thread adds up its time inside the profiler, and a
 * sample's weight is scaled by the chance that the program at its own speed would have made the visit a sample
 * too, 1 - f^(1 + floor(latency / period)), f the profiler's share of the thread's time since its last visit
 * to the page (pf_self.h): a page revisited within a round keeps 1 - f, and the weight counts the rounds the
 * phase would have lasted at the program's own speed; one left alone for rounds keeps nearly all.  The
 * state is the thread's own (initial-exec TLS, as pf_retry_addr), each part written by one side only: the
 * hooks' total by the hooks, the handler's total and the sums by the handler, so neither needs a lock or an
 * atomic; a handler that interrupts a hook's addition reads the total before it, and the next reading gets it.
 */
static _Thread_local uint64_t pf_self_hooks PF_TLS;   /* ns inside recorded mallocs and frees (blocks.c) */
/* Both totals add one clock read to each interval: of its two reads, the interval holds about one (the end of
 * the first, the start of the second), and the other is the profiler's time too (pf_clock_ns, END
 * selftime.clock_ns: 21 ns on this project's host, 40-50 ns a read under load). */
static _Thread_local uint64_t pf_self_handler PF_TLS; /* ns inside this handler */
static _Thread_local struct pf_self pf_self_tls PF_TLS;
static _Thread_local uint64_t pf_self_rng PF_TLS;

uint64_t nkp_pf_self_begin(void)
{
	if (!atomic_load_explicit(&pf_started, memory_order_relaxed) ||
	    !atomic_load_explicit(&pf_self_on, memory_order_relaxed))
		return 0;
	uint64_t t0 = nkp_now();
	return t0 ? t0 : 1;
}

void nkp_pf_self_end(uint64_t t0)
{
	if (t0) {
		uint64_t t1 = nkp_now();
		pf_self_hooks += (t1 > t0 ? t1 - t0 : 0) + atomic_load_explicit(&pf_clock_ns, memory_order_relaxed);
	}
}

/*
 * Per page (by pf_hash, as pf_fault_ns), the last sample's thread and time and that thread's total of the
 * profiler's time then: the next sample of the page by the same thread reads the profiler's share of exactly
 * the time between the two visits.  key: the page | the thread's tid in bits 48-63 and 0-11 (28 bits).  Written
 * with relaxed stores by whichever thread faults; a reader that meets two writers' halves reads a wrong share,
 * clamped to [0, 1].
 */
static struct {
	_Atomic uint64_t key, t_ns, total;
} pf_visit[PF_SLOTS];

/* Scale @p s's weight (a visit to @p page, revoked s->latency us before it) by the probability that the program
 * at its own speed would have made it a sample too (pf_self.h, pf_self_keep).  AS-safe. */
static void pf_self_correct(struct nk__nkp_sample *s, uintptr_t page)
{
	uint64_t lat_ns = (uint64_t)s->latency * 1000u;
	if (!atomic_load_explicit(&pf_self_on, memory_order_relaxed))
		return;
	uint64_t t = nkp_now(), total = pf_self_hooks + pf_self_handler, tid = nkp_tid();
	double period = (double)atomic_load_explicit(&pf_period_ns, memory_order_relaxed);
	/* The thread's recent share (over about half a round): for a page whose last visit was another thread's. */
	double f = pf_self_read(&pf_self_tls, t, total, period / 2);
	unsigned h = pf_hash(page);
	uint64_t key = (uint64_t)page | (tid & 0xffffu) << 48 | (tid >> 16 & 0xfffu);
	uint64_t k0 = atomic_load_explicit(&pf_visit[h].key, memory_order_relaxed);
	if (k0 == key) {
		uint64_t t0 = atomic_load_explicit(&pf_visit[h].t_ns, memory_order_relaxed);
		uint64_t p0 = atomic_load_explicit(&pf_visit[h].total, memory_order_relaxed);
		if (t > t0 && total >= p0)
			f = pf_self_share(total - p0, t - t0);
	}
	atomic_store_explicit(&pf_visit[h].key, key, memory_order_relaxed);
	atomic_store_explicit(&pf_visit[h].t_ns, t, memory_order_relaxed);
	atomic_store_explicit(&pf_visit[h].total, total, memory_order_relaxed);
	/* A page's first touch, and the first visit to a page revoked because its block was new (its
	 * initialisation: no sample of the page before), happen once whatever the program's speed: kept whole. */
	if ((s->flags & NK__SF_FIRST_TOUCH) ||
	    ((s->flags & NK__SF_NEW_BLOCK) && (k0 & 0x0000fffffffff000ull) != ((uint64_t)page & 0x0000fffffffff000ull)))
		return;
	double keep = pf_self_keep(f, lat_ns, period);
	if (!(keep < 1.0))
		return;
	if (!pf_self_rng)
		pf_self_rng = (tid << 32 ^ t) | 1;
	uint32_t w = s->weight;
	s->weight = pf_self_weight(w, keep, &pf_self_rng);
	uint64_t ppm = (uint64_t)((1.0 - keep) * 1e6 + 0.5);
	atomic_fetch_add_explicit(&pf_self_n, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&pf_self_f_sum, ppm, memory_order_relaxed);
	atomic_fetch_add_explicit(&pf_self_w_in, w, memory_order_relaxed);
	atomic_fetch_add_explicit(&pf_self_w_out, s->weight, memory_order_relaxed);
	unsigned long mx = atomic_load_explicit(&pf_self_f_max, memory_order_relaxed);
	while (ppm > mx && !atomic_compare_exchange_weak_explicit(&pf_self_f_max, &mx, ppm, memory_order_relaxed,
								   memory_order_relaxed))
		;
}

/*
 * The handler's own time, from @p t0 to now: into the governor's cost with the price of the trap before it and
 * the return after it (pf_trap_ns), and into this thread's time in the profiler without that price.  The price
 * is the sampler's probe, a fault on its own page once a second: 9-16 us of CPU on this project's host, where
 * the program's own faults cost its thread 5-6 us in all, 3-4.6 us of it in the handler (tests/prof selftime,
 * thread CPU clocks): counted, it would make faulting phases weigh too little.  AS-safe.
 */
static void pf_handler_time(uint64_t t0)
{
	uint64_t t1 = nkp_now();
	pf_cost(t1 - t0 + atomic_load_explicit(&pf_trap_ns, memory_order_relaxed));
	pf_self_handler += (t1 > t0 ? t1 - t0 : 0) + atomic_load_explicit(&pf_clock_ns, memory_order_relaxed);
}

/* ------------------------------------------------------------ samples */

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
	if (page == atomic_load_explicit(&pf_probe_page, memory_order_relaxed) && page) {
		/* The sampler thread's probe (pf_sampler.c, pf_probe): give it back, time the handler. */
		atomic_store_explicit(&pf_probe_in, nkp_now(), memory_order_relaxed);
		(void)nk__os_protect((void *)page, pf_ps, NK__PROT_RW, NULL);
		atomic_store_explicit(&pf_probe_out, nkp_now(), memory_order_relaxed);
		errno = saved_errno;
		return 1;
	}
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
			atomic_fetch_add_explicit(&pf_retries, 1, memory_order_relaxed);
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
	if (c == PF_BUSY) {
		/*
		 * ARMING: the sampler's mprotect is in flight; CLAIMED: another thread gives it back.  Wait here,
		 * yielding (the thread that holds the page needs a cpu to finish: one at a time under QEMU's
		 * -icount), rather than fault again at once: a fault is the dear part (a table read at random
		 * took a thousand such faults a run in the guest, each a trap of 77 us at -icount shift=4).  A
		 * page armed meanwhile is this access's to sample, as any first access after its revoking.
		 */
		atomic_fetch_add_explicit(&pf_busy, 1, memory_order_relaxed);
		for (int i = 0; i < 64 && c == PF_BUSY; i++) {
			sched_yield();
			c = pf_claim(slot, page);
		}
	}
	if (c != PF_GOT) {
		/* GONE: given back already (or still busy): run the instruction again. */
		pf_handler_time(t0);
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
	if (s.flags & NK__SF_FIRST_TOUCH) {
		/*
		 * "Not present" is what move_pages said before the sampler revoked the page.  The program may have
		 * placed it in between: the sampler queries a round's members first and revokes them one run after
		 * another, and a program 16 times faster than the guests' -icount shift 4 (4n-slit-ic0) wrote
		 * prof_hotspot's array in that gap, so its compute loop's next visits were taken for the first
		 * touches (1464 of 4643 samples; stop 26's CI).  Ask again now that the page is ours: present
		 * means this is an ordinary visit of a page placed before.
		 */
		void *pg = (void *)page;
		int st = -1;
		if (pf_query(1, &pg, &st) >= 0 && st >= 0) {
			s.flags &= (uint8_t)~NK__SF_FIRST_TOUCH;
			s.page_node = (int16_t)st;
			atomic_fetch_add_explicit(&pf_ft_present, 1, memory_order_relaxed);
		}
	}
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
	if (atomic_load_explicit(&nkp.sampling, memory_order_relaxed)) {
		/* A first touch inside a library (memset, memcpy): who called it (callers.c). */
		if (s.flags & NK__SF_FIRST_TOUCH) {
			atomic_fetch_add_explicit(&pf_ft_samples, 1, memory_order_relaxed);
			nkp_callers_note(uctx, &s);
		}
		pf_self_correct(&s, page);
		pf_deliver(&s);
	}
	pf_handler_time(t0);
	errno = saved_errno;
	return 1;
}

/* ------------------------------------------------------------ giving back */

/* Give back every page of ours in [s, e); when @p io, emit them as I/O samples with @p access.  AS-safe. */
void pf_release_range(uintptr_t s, uintptr_t e, int io, uint8_t access)
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
					if (atomic_load_explicit(&nkp.sampling, memory_order_relaxed)) {
						pf_self_correct(&smp, page); /* the caller's visit */
						pf_deliver(&smp);
					}
				}
				break;
			}
			/* BUSY.  ARMING: the sampler is between insert and mprotect; wait for it.  CLAIMED: another
			 * thread is giving it back; make sure it is accessible before our caller goes on (the same
			 * mprotect twice is harmless), then wait for the slot to clear. */
			if ((atomic_load_explicit(&pf_key[slot], memory_order_acquire) & PF_STATE) == PF_CLAIMED &&
			    spins > 64) {
				nk__os_protect((void *)page, pf_ps, NK__PROT_RW, NULL);
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

/* A hold on [start, end): the sampler revokes nothing there until nkp_pf_io_end.  The token (PF_HOLDS when
 * the table is full: then nothing is revoked anywhere), or -1.  AS-safe. */
static int pf_hold_claim(uintptr_t start, uintptr_t end)
{
	if (end <= start || !atomic_load_explicit(&pf_started, memory_order_acquire))
		return -1;
	for (unsigned i = 0; i < PF_HOLDS; i++) {
		unsigned j = (unsigned)(start >> pf_shift) + i;
		j &= PF_HOLDS - 1;
		uintptr_t z = 0;
		if (atomic_compare_exchange_strong_explicit(&pf_hold[j].start, &z, start, memory_order_seq_cst,
							    memory_order_relaxed)) {
			atomic_store_explicit(&pf_hold[j].end, end, memory_order_seq_cst);
			return (int)j;
		}
	}
	atomic_fetch_add_explicit(&pf_hold_overflow, 1, memory_order_seq_cst);
	return (int)PF_HOLDS;
}

/* A hold on [start, end) (the sampler revokes nothing there until nkp_pf_io_end), then our pages there given
 * back: as I/O samples when @p io.  The token, or -1. */
static int pf_hold_span(uintptr_t start, uintptr_t end, int io, int access)
{
	start &= ~(pf_ps - 1);
	int token = pf_hold_claim(start, end);
	if (token < 0)
		return -1;
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

int nkp_pf_hold_all(int give_back)
{
	if (!atomic_load_explicit(&pf_started, memory_order_acquire))
		return -1;
	if (give_back)
		return pf_hold_span(pf_ps, UINTPTR_MAX, 0, NK__ACC_UNKNOWN);
	/* The hold without pf_release_range over everything (thousands of mprotects).  Every revocation runs
	 * under pf_lock and looks at the holds after publishing its keys: once we have had the lock, the runs
	 * that missed this hold are over (their pages ARMED: a touch faults and gives them back), and the later
	 * ones see it. */
	int token = pf_hold_claim(pf_ps, UINTPTR_MAX);
	if (token < 0)
		return -1;
	pthread_mutex_lock(&pf_lock);
	pthread_mutex_unlock(&pf_lock);
	return token;
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
int pf_held(uintptr_t s, uintptr_t e)
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

/*
 * Pinned pages: those holding live blocks of the threading runtimes, the loader, libc itself (stdio buffers
 * it reads into with read(2) inside the library, attributes pthread_create reads with signals blocked) and
 * the like, which share heap pages with the program's small blocks (blocks.c pins them).  A count per page
 * (several blocks per page), open addressing over PF_PIN_PROBE slots; keys are never cleared (a probe chain
 * never breaks), a slot whose count fell to 0 is reused.  Changed under pf_pin_lock; read without a lock.
 */
#define PF_PIN_SLOTS 16384u
#define PF_PIN_PROBE 64u
static struct {
	_Atomic uintptr_t page;
	atomic_uint count;
} pf_pin[PF_PIN_SLOTS];
static pthread_mutex_t pf_pin_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int pf_pin_full; /* a page found no slot: the sampler stops revoking (as pf_excl_full) */

static int pf_pin_find(uintptr_t page)
{
	unsigned h = pf_hash(page) & (PF_PIN_SLOTS - 1);
	for (unsigned i = 0; i < PF_PIN_PROBE; i++) {
		unsigned j = (h + i) & (PF_PIN_SLOTS - 1);
		uintptr_t k = atomic_load_explicit(&pf_pin[j].page, memory_order_seq_cst);
		if (!k)
			return -1;
		if (k == page)
			return (int)j;
	}
	return -1;
}

static int pf_pinned(uintptr_t s, uintptr_t e)
{
	if (atomic_load_explicit(&pf_pin_full, memory_order_seq_cst))
		return 1;
	for (uintptr_t page = s & ~(pf_ps - 1); page < e; page += pf_ps) {
		int j = pf_pin_find(page);
		if (j >= 0 && atomic_load_explicit(&pf_pin[j].count, memory_order_seq_cst))
			return 1;
	}
	return 0;
}

/* Add @p delta (+1 or -1) to the pin count of every page of [start, end) (page-aligned start).  A page to pin
 * that finds no slot sets pf_pin_full; unpinning a page without a count changes nothing. */
static void pf_pin_pages(uintptr_t start, uintptr_t end, int delta)
{
	pthread_mutex_lock(&pf_pin_lock);
	for (uintptr_t page = start; page < end && page >= start; page += pf_ps) {
		int j = pf_pin_find(page);
		if (delta < 0) {
			if (j >= 0 && atomic_load_explicit(&pf_pin[j].count, memory_order_relaxed))
				atomic_fetch_sub_explicit(&pf_pin[j].count, 1, memory_order_seq_cst);
			continue;
		}
		if (j < 0) {
			unsigned h = pf_hash(page) & (PF_PIN_SLOTS - 1);
			for (unsigned i = 0; i < PF_PIN_PROBE && j < 0; i++) {
				unsigned x = (h + i) & (PF_PIN_SLOTS - 1);
				if (!atomic_load_explicit(&pf_pin[x].page, memory_order_relaxed) ||
				    !atomic_load_explicit(&pf_pin[x].count, memory_order_relaxed))
					j = (int)x;
			}
			if (j < 0) {
				atomic_store_explicit(&pf_pin_full, 1, memory_order_seq_cst);
				continue;
			}
			atomic_store_explicit(&pf_pin[j].page, page, memory_order_seq_cst);
		}
		atomic_fetch_add_explicit(&pf_pin[j].count, 1, memory_order_seq_cst);
	}
	pthread_mutex_unlock(&pf_pin_lock);
}

void nkp_pf_pin(uintptr_t start, uintptr_t end)
{
	if (end <= start || !pf_ps)
		return;
	start &= ~(pf_ps - 1);
	pf_pin_pages(start, end, 1);
	/* The pins are visible (seq_cst) before we look for keys: a revocation that missed them is given back. */
	if (atomic_load_explicit(&pf_started, memory_order_acquire))
		pf_release_range(start, end, 0, NK__ACC_UNKNOWN);
}

void nkp_pf_unpin(uintptr_t start, uintptr_t end)
{
	if (end <= start || !pf_ps)
		return;
	pf_pin_pages(start & ~(pf_ps - 1), end, -1);
}

/* 1 when [s, e) intersects an excluded range or a pinned page (or we cannot tell). */
int pf_excluded(uintptr_t s, uintptr_t e)
{
	if (atomic_load_explicit(&pf_excl_full, memory_order_seq_cst))
		return 1;
	if (pf_pinned(s, e))
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
int pf_forgotten(uint64_t since, uint64_t tsince, uintptr_t s, uintptr_t e)
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

int pf_is_own(uintptr_t s, uintptr_t e)
{
	for (int i = 0; i < pf_n_own; i++)
		if (pf_own[i].start < e && s < pf_own[i].end)
			return 1;
	return 0;
}
