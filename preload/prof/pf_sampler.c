/* SPDX-License-Identifier: BSD-3-Clause
 * The pagefault sampler's members and its thread: arming, new blocks, re-arming rounds, turnover, the
 * governor, start/stop/fork and moves.  Revokes only under pf_lock and never calls the registry's locked paths
 * while holding it (pagefault.c, "Frees race with revocation"); nothing here runs in a signal handler.
 */
#include <math.h>
#include <sys/mman.h>

#include "../common/own_thread.h"
#include "pagefault_impl.h"

/* NK_PROF_MAX_OVERHEAD (percent; >= 100: no cap) overrides it, read once at start. */
double PF_MAX_OVERHEAD = PF_MAX_OVERHEAD_DEFAULT;
atomic_int pf_running;              /* the sampler thread should go on */
static atomic_int pf_over;           /* the last round cost too much: new blocks get no members */

/* The members (pf_mem, pf_n_mem: pagefault_impl.h).  Under pf_lock. */
static uint64_t pf_total;   /* groups in the tracked set, as of the last round */
static unsigned pf_target0; /* member groups to begin with */
static double pf_frac;      /* pf_n_mem / pf_total: the probability that a group is a member; 0: none yet */
static uint64_t pf_blk_rng; /* new blocks' draws */
static unsigned pf_idx[PF_MEMBERS];
static uint16_t pf_mask[PF_MEMBERS];

static pthread_mutex_t pf_wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pf_wake;
static pthread_t pf_thread;
static int pf_thread_live;
static uint64_t pf_rng;

/* ------------------------------------------------------------ arming */

/*
 * Under pf_lock: revoke [start, start + n pages) whose nodes are @p status (move_pages status, <0 not
 * present).  All or nothing.  Returns pages armed.
 */
unsigned pf_arm_run(uintptr_t start, unsigned n, const int *status, uint8_t random, uint64_t now)
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
	int refused = k < n || pf_held(start, end) || pf_excluded(start, end);
	if (!refused && nk__os_protect((void *)start, end - start, NK__PROT_NONE, NULL)) {
		/*
		 * Failed part way: where the run reaches past its mapping (a heap malloc trimmed since the pages
		 * were drawn), Linux's mprotect has already revoked the pages before the hole when it fails with
		 * ENOMEM (mm/mprotect.c changes one vma after another).  Give them back while their keys still
		 * say ARMING (a fault there waits), or they stay revoked with no slot and the program dies on
		 * them.  RW fails at the same hole.
		 */
		(void)nk__os_protect((void *)start, end - start, NK__PROT_RW, NULL);
		refused = 1;
	}
	if (refused) {
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
static unsigned pf_arm_joined(unsigned n0, uint64_t now)
{
	for (unsigned i = n0; i < pf_n_mem; i++) {
		pf_idx[i - n0] = i;
		pf_mask[i - n0] = (uint16_t)((1u << pf_mem[i].pages) - 1);
	}
	return pf_n_mem > n0 ? pf_arm_members(pf_n_mem - n0, now) : 0;
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
void pf_flush_pending(void)
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
unsigned pf_expire(uint64_t before)
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
 * thread (and nkp_pf_start).  Returns how many joined; *@p armed (may be NULL): the pages revoked.
 */
static unsigned pf_add_members(unsigned want, uint64_t now, unsigned *armed)
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
	unsigned pages = pf_arm_joined(n0, now);
	if (armed)
		*armed = pages;
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
 * The load for the next second, in member groups revoked every PF_PERIOD_NS: enough for the rate at the
 * samples per unit of load seen in the last second (@p load, the same unit), at most 4 times as much, less
 * when it cost more than PF_MAX_OVERHEAD.  Below 1 the governor keeps one group and stretches the period
 * (pf_main): where a single group revoked every 10 ms already costs more than the cap (under QEMU a fault
 * waits milliseconds for the other virtual cpus), rounds come further apart instead of the cap giving way.
 */
static double pf_target(double load, uint64_t dt_ns, uint64_t samples, uint64_t cost_ns)
{
	double limit = (double)(PF_MAX_OUT / 2 / PF_GROUP), t;
	double floor = (double)PF_PERIOD_NS / (double)PF_PERIOD_MAX_NS;
	/* Halved each time half of the budget left is used (src/profile/budget.h): the budget lasts the run. */
	double rate = nkp.rate / (double)(1ull << (nkp_budget_halvings() & 63));

	if (!(load > 0) || !dt_ns) {
		t = rate * 0.2 / PF_GROUP; /* a fifth of a second's samples if each page is visited once */
	} else {
		double dt = (double)dt_ns / 1e9, per = (double)samples / dt / load;
		t = per > 0 ? rate / per : limit;
		if (t > 4.0 * load)
			t = 4.0 * load;
		if (t < 1)
			t = 1; /* the rate alone never stretches the rounds: one group at least, as ever */
		double frac = (double)cost_ns / (double)dt_ns;
		if (frac > PF_MAX_OVERHEAD && t > load * PF_MAX_OVERHEAD / frac)
			t = load * PF_MAX_OVERHEAD / frac; /* the cap may */
	}
	return t < floor ? floor : t > limit ? limit : t;
}

/*
 * The price of a fault outside the handler (trap, signal frame and return), measured on the sampler's own
 * page once a second: the handler charges it to every fault (pf_fault.c), so the cost cap holds where a
 * fault is dear.  A fixed 20 us undercounted it a thousandfold in the guests: with the other virtual cpus
 * busy a fault took 17 ms at -icount shift=4, and a profile at the "5 %" default ran 3-5 times slower.
 */
static void pf_probe(void)
{
	uintptr_t pg = atomic_load_explicit(&pf_probe_page, memory_order_relaxed);

	if (!pg || nk__os_protect((void *)pg, pf_ps, NK__PROT_NONE, NULL))
		return;
	atomic_store_explicit(&pf_probe_in, 0, memory_order_relaxed);
	uint64_t t0 = nkp_now();
	*(volatile char *)pg = 1; /* faults: nkp_pf_fault gives the page back */
	uint64_t t1 = nkp_now();
	uint64_t in = atomic_load_explicit(&pf_probe_in, memory_order_relaxed);
	uint64_t out = atomic_load_explicit(&pf_probe_out, memory_order_relaxed);
	pf_cost(t1 - t0);
	if (!in || out < in || t1 < t0 || t1 - t0 < out - in)
		return;
	uint64_t trap = (t1 - t0) - (out - in), old = atomic_load_explicit(&pf_trap_ns, memory_order_relaxed);
	/* smoothed: one probe may meet a busy moment */
	uint64_t n = atomic_fetch_add_explicit(&pf_probes, 1, memory_order_relaxed);
	atomic_store_explicit(&pf_trap_ns, n ? (old + trap) / 2 : trap, memory_order_relaxed);
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
	sigemptyset(&all);
	sigaddset(&all, SIGSEGV); /* the probe's fault is taken here */
	pthread_sigmask(SIG_UNBLOCK, &all, NULL);
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
			uint64_t gap = period;
			if (period > PF_PERIOD_NS) {
				/*
				 * Stretched by the cost cap: rounds at the times of a Poisson process of that mean
				 * (exponential gaps, at most 4 means), not on a fixed grid that, run after run,
				 * would sample the same moments of a program (the start of a run shorter than the
				 * period, every time): combined runs then cover every phase alike.
				 */
				double u = pf_unit(&pf_rng), g = -log(u > 1e-300 ? u : 1e-300);
				gap = (uint64_t)((double)period * (g < 4 ? g : 4));
			}
			uint64_t due = round_start + gap, tnow = nkp_now();
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
		if (period > PF_PERIOD_NS)
			atomic_fetch_add_explicit(&pf_stretched, 1, memory_order_relaxed);
		/* The governor, every second (and at once when a round cost far more than allowed). */
		if (!gov_t0 || now - gov_t0 >= PF_GOVERN_NS ||
		    (frac > 4 * PF_MAX_OVERHEAD && (n > 1 || period < PF_PERIOD_MAX_NS))) {
			pf_probe();
			/* load: the mean member groups of a round, times PF_PERIOD_NS over the period in force (not
			 * over the rounds' measured spacing: rounds that overran their period, as where revoking is
			 * slow, would read as less load and the governor would cut the members) */
			double load = gov_t0 && gov_rounds ? (double)gov_groups / (double)gov_rounds *
								     (double)PF_PERIOD_NS / (double)period
							   : 0;
			double want = pf_target(load, gov_t0 ? now - gov_t0 : 0, samples - gov_samples0,
						cost - gov_cost0);
			target = want >= 1 ? (unsigned)want : 1;
			atomic_store_explicit(&pf_period_ns,
					      want >= 1 ? PF_PERIOD_NS : (unsigned)((double)PF_PERIOD_NS / want),
					      memory_order_relaxed);
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
		unsigned joined = rot + join ? pf_add_members(rot + join, now, NULL) : 0;
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

static void pf_spawn(void)
{
	/* libc's pthread_create: neither our wrapper (it would register the sampler as a program thread)
	 * nor a later runtime's (the plan runtime would take it for the program's first thread). */
	nk_rt_pthread_create_fn *real = nk_rt_libc_pthread_create();
	if (!real)
		return;
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
	/* NK_PROF_SELFTIME=0: samples keep their weight whatever the profiler's own time in their thread (pf_fault.c). */
	const char *st = getenv("NK_PROF_SELFTIME");
	atomic_store(&pf_self_on, !(st && strcmp(st, "0") == 0));
	/* The price of one clock read (the least of 8 batches of 32: the quiet moments), added to each interval of
	 * the profiler's own time (pf_fault.c). */
	uint64_t best = UINT64_MAX;
	for (int r = 0; r < 8; r++) {
		uint64_t a = nkp_now();
		for (int i = 0; i < 32; i++)
			(void)nkp_now();
		uint64_t b = nkp_now() - a;
		best = b < best ? b : best;
	}
	atomic_store(&pf_clock_ns, (unsigned)(best / 33 < 10000 ? best / 33 : 10000));
	pf_ps = (uintptr_t)(nkp.page_size > 0 ? nkp.page_size : ps > 0 ? ps : 4096);
	pf_shift = (uintptr_t)__builtin_ctzl(pf_ps);
	pf_rng = nkp.seed ? nkp.seed : (uint64_t)nkp_now() ^ (uint64_t)getpid() << 32;
	nkp_rand(&pf_rng);
	pf_blk_rng = pf_rng ^ 0x5bd1e995u;
	nkp_rand(&pf_blk_rng);
	/* Rounds every 10 ms whatever the rate (the rate sets how many pages are members): a member is
	 * revoked again 10-20 ms after its fault, so visits further apart than that are told apart. */
	atomic_store(&pf_period_ns, PF_PERIOD_NS);
	pf_n_own = 0;
	dl_iterate_phdr(pf_own_cb, (void *)(uintptr_t)&pf_key);
	atomic_store_explicit(&pf_started, 1, memory_order_release);
	/* The first members now, before the program runs: blocks it allocates at once join them in their
	 * share, and an initialisation right at the start is sampled too. */
	pf_target0 = (unsigned)pf_target(0, 0, 0, 0);
	unsigned armed = 0, joined = pf_add_members(pf_target0 ? pf_target0 : 1, nkp_now(), &armed);
	/* In END: a profile whose static data went unsampled at its start (stop 27: once in ~13 runs of
	 * prof_hotspot, hot_static's initialisation had no sample) tells whether the first draw armed anything. */
	atomic_store(&pf_start_members, joined);
	atomic_store(&pf_start_pages, armed);
	atomic_store(&pf_start_groups, pf_total);
	unsigned long ft = 0;
	pthread_mutex_lock(&pf_lock);
	for (unsigned i = 0; i < pf_n_mem; i++)
		for (unsigned k = 0; k < pf_mem[i].pages; k++)
			ft += pf_mem[i].node[k] == -ENOENT;
	pthread_mutex_unlock(&pf_lock);
	atomic_store(&pf_start_ft, ft);
	if (!atomic_load_explicit(&pf_probe_page, memory_order_relaxed)) {
		nkp_enter();
		void *pg = mmap(NULL, pf_ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		nkp_leave();
		if (pg != MAP_FAILED)
			atomic_store_explicit(&pf_probe_page, (uintptr_t)pg, memory_order_relaxed);
	}
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
			nk__os_protect((void *)(k & ~(uintptr_t)PF_STATE), pf_ps, NK__PROT_RW, NULL);
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
	atomic_store(&pf_ft_samples, 0);
	atomic_store(&pf_ft_present, 0);
	atomic_store(&pf_query_failed, 0);
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
