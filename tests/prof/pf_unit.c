/* SPDX-License-Identifier: BSD-3-Clause
 * Unit test of preload/prof/pagefault.c and its pf_*.c, linked here with test doubles of
 * the runtime (nkp_emit records into an array, the "tracked" memory is one
 * test region): the revoked-page table, the fault path (read/write kind,
 * ip, nodes, first touch resolved later), I/O holds, forgets, and the
 * sampler thread under concurrent access and I/O.  Exit 0 on success.
 */
#include "pagefault_impl.h" /* the sampler's internals; its objects are linked (tests/prof/pf.cmake) */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

/* ---- test doubles of runtime.c / alloc.c ---- */
struct nkp_state nkp;
#define MAX_SAMPLES (1 << 20)
static struct nk__nkp_sample got[MAX_SAMPLES];
static atomic_uint n_got;
static uintptr_t tr_lo, tr_hi; /* the tracked region */

uint64_t nkp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint32_t nkp_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}
int nkp_cpu_node(int cpu)
{
	return cpu >= 0 ? 0 : -1;
}
int nkp_emit(const struct nk__nkp_sample *s)
{
	unsigned i = atomic_fetch_add(&n_got, 1);
	if (i < MAX_SAMPLES)
		got[i] = *s;
	return 0;
}
/* callers.c's entry points: the fault path asks for the callers of first touches only */
static atomic_uint n_callers_noted;
void nkp_callers_note(const void *uctx, const struct nk__nkp_sample *s)
{
	(void)uctx;
	if (s->flags & NK__SF_FIRST_TOUCH)
		atomic_fetch_add(&n_callers_noted, 1);
}
void nkp_callers_counts(uint64_t *noted, uint64_t *lost)
{
	*noted = atomic_load(&n_callers_noted);
	*lost = 0;
}
uint32_t nkp_budget_halvings(void)
{
	return 0;
}
void nkp_enter(void)
{
}
void nkp_leave(void)
{
}
void nkp_own_thread_cpus(void)
{
}
int nkp_own_cpu_random(uint64_t *rng)
{
	(void)rng;
	return -1;
}
size_t nkp_tracked_random_groups(uint64_t *rng, size_t group, uintptr_t *starts, uint32_t *npages, size_t max,
				 uint64_t *total)
{
	uint64_t pages = (tr_hi - tr_lo) >> pf_shift, n = (pages + group - 1) / group;
	*total = n;
	if (!n)
		return 0;
	for (size_t i = 0; i < max; i++)
		starts[i] = (uintptr_t)(nkp_rand(rng) % n);
	for (size_t i = 1; i < max; i++) /* address order, as the registry gives them */
		for (size_t j = i; j > 0 && starts[j - 1] > starts[j]; j--) {
			uintptr_t t = starts[j];
			starts[j] = starts[j - 1];
			starts[j - 1] = t;
		}
	for (size_t i = 0; i < max; i++) {
		uint64_t first = starts[i] * group;
		npages[i] = (uint32_t)(pages - first < group ? pages - first : group);
		starts[i] = tr_lo + ((uintptr_t)first << pf_shift);
	}
	return max;
}
static uint64_t tr_gen = 1;
uint64_t nkp_tracked_generation(void)
{
	return tr_gen;
}
int nkp_tracked_contains(uintptr_t page)
{
	return page >= tr_lo && page + pf_ps <= tr_hi;
}

/* ---- harness ---- */
static int failures;
#define CHECK(c)                                                                       \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "pf_unit:%d: CHECK failed: %s\n", __LINE__, #c); \
			failures++;                                                    \
		}                                                                      \
	} while (0)

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	if (nkp_pf_fault(sig, si, uc))
		return;
	static const char msg[] = "pf_unit: a fault on a revoked page was not resolved\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(99);
}

static uintptr_t page_of(void *base, unsigned i)
{
	return (uintptr_t)base + ((uintptr_t)i << pf_shift);
}

static void test_table(void)
{
	uintptr_t base = (uintptr_t)1 << 40;
	unsigned in = 0;
	int slots[3 * PF_SLOTS / 4];

	for (unsigned i = 0; i < 3 * PF_SLOTS / 4; i++) {
		slots[i] = pf_insert(base + ((uintptr_t)i << pf_shift), 0, 0, 1, 1);
		in += slots[i] >= 0;
	}
	CHECK(in > PF_SLOTS / 2); /* the probe window rarely overflows at 75% load */
	CHECK(atomic_load(&pf_out) == in);
	for (unsigned i = 0; i < 3 * PF_SLOTS / 4; i++) {
		uintptr_t p = base + ((uintptr_t)i << pf_shift);
		CHECK((pf_find(p) >= 0) == (slots[i] >= 0));
		if (slots[i] >= 0) {
			CHECK(pf_find(p) == slots[i]);
			CHECK(pf_insert(p, 0, 0, 1, 1) < 0); /* no duplicates */
			CHECK(pf_claim(slots[i], p) == PF_BUSY); /* ARMING cannot be claimed */
			atomic_store(&pf_key[slots[i]], p | PF_ARMED);
			CHECK(pf_claim(slots[i], p + pf_ps) == PF_GONE);
			CHECK(pf_claim(slots[i], p) == PF_GOT);
			CHECK(pf_claim(slots[i], p) == PF_BUSY); /* a second claimer loses */
			pf_clear(slots[i]);
			CHECK(pf_claim(slots[i], p) == PF_GONE);
			CHECK(pf_find(p) < 0);
		}
	}
	CHECK(atomic_load(&pf_out) == 0);
	CHECK(pf_find(base - pf_ps) < 0);
}

static void test_fault_path(void)
{
	unsigned char *m = mmap(NULL, 64 * pf_ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *pages[64];
	int status[64];
	volatile unsigned char *v = m;

	CHECK(m != MAP_FAILED);
	for (unsigned i = 0; i < 32; i++)
		m[(size_t)i * pf_ps] = (unsigned char)i; /* 0..31 present, 32..63 not */
	for (unsigned i = 0; i < 64; i++)
		pages[i] = (void *)page_of(m, i);
	CHECK(pf_query(64, pages, status) == 0);
	CHECK(status[0] >= 0 && status[40] < 0);
	atomic_store(&nkp.sampling, 1);
	/* The weights as drawn: the correction for the profiler's own time (pf_self.h; most of this thread's time
	 * is spent in the handler here) is tested in test_visits and pf_self_unit. */
	atomic_store(&pf_self_on, 0);
	uint64_t now = nkp_now();
	CHECK(pf_arm_run(page_of(m, 0), 4, &status[0], 1, now) == 4);
	CHECK(pf_arm_run(page_of(m, 40), 2, &status[40], 0, now) == 2);
	CHECK(pf_arm_run(page_of(m, 2), 2, &status[2], 1, now) == 0); /* already armed: all or nothing */
	CHECK(atomic_load(&pf_out) == 6);

	unsigned before = atomic_load(&n_got);
	CHECK(v[10] == 0); /* read of page 0 */
	v[pf_ps + 5] = 7; /* write of page 1 */
	CHECK(atomic_load(&n_got) == before + 2);
	struct nk__nkp_sample *r = &got[before], *w = &got[before + 1];
	CHECK(r->addr == (uintptr_t)m + 10 && r->access == NK__ACC_READ && r->ip != 0);
	CHECK(w->addr == (uintptr_t)m + pf_ps + 5 && w->access == NK__ACC_WRITE);
	CHECK(r->tid == nkp_tid() && r->sampler == NK__SAMPLER_PAGEFAULT && r->flags == 0);
	CHECK(r->latency >= 1 && w->latency >= 1); /* arm-to-access delay, us */
	CHECK(r->page_node == status[0] && r->weight >= 1);
	CHECK(v[pf_ps + 5] == 7 && v[2 * pf_ps] == 2); /* page 2 faulted and came back with its data */

	/* First touch by a write: the handler places the page (from this thread, as the instruction would) and
	 * the sample goes out at once with its node. */
	before = atomic_load(&n_got);
	unsigned noted = atomic_load(&n_callers_noted);
	CHECK(noted == 0); /* the visits above were no first touches: no callers asked for */
	v[40 * pf_ps] = 1;
	CHECK(atomic_load(&n_got) == before + 1);
	CHECK(atomic_load(&n_callers_noted) == noted + 1); /* callers.c is asked who called (issue 16) */
	CHECK(got[before].flags == (NK__SF_FIRST_TOUCH | NK__SF_NEW_BLOCK) && got[before].page_node >= 0 &&
	      got[before].access == NK__ACC_WRITE && got[before].weight == atomic_load(&pf_cur_w));
	CHECK(v[40 * pf_ps] == 1);
	/* First touch by a read (nothing placed: the zero page): parked until the sampler thread asks. */
	before = atomic_load(&n_got);
	CHECK(v[41 * pf_ps] == 0);
	CHECK(atomic_load(&n_got) == before);
	pf_flush_pending();
	CHECK(atomic_load(&n_got) == before + 1);
	CHECK(got[before].flags == (NK__SF_FIRST_TOUCH | NK__SF_NEW_BLOCK) && got[before].access == NK__ACC_READ);

	/* Placed after the sampler's query said "not present" and before it revoked the page: the status it
	 * armed with is stale, and the visits that fault are ordinary ones, not first touches (4n-slit-ic0). */
	int stale[2] = { -ENOENT, -ENOENT };
	m[44 * pf_ps] = 44;
	m[45 * pf_ps] = 45;
	CHECK(pf_arm_run(page_of(m, 44), 2, stale, 1, nkp_now()) == 2);
	before = atomic_load(&n_got);
	CHECK(v[44 * pf_ps] == 44); /* a read */
	v[45 * pf_ps + 1] = 1;      /* a write */
	CHECK(atomic_load(&n_got) == before + 2);
	CHECK(atomic_load(&n_callers_noted) == noted + 2); /* the two first touches above, not these visits */
	for (unsigned i = before; i < before + 2; i++)
		CHECK(!(got[i].flags & NK__SF_FIRST_TOUCH) && got[i].page_node >= 0 && got[i].page_node == status[0]);
	CHECK(v[45 * pf_ps] == 45 && v[45 * pf_ps + 1] == 1);

	/* I/O: begin gives back our pages in the span as I/O samples and holds the span. */
	before = atomic_load(&n_got);
	int t = nkp_pf_io_begin(page_of(m, 3), page_of(m, 42), NK__ACC_WRITE);
	CHECK(t >= 0);
	CHECK(atomic_load(&pf_out) == 0);
	pf_flush_pending();
	CHECK(atomic_load(&n_got) == before + 1); /* page 3 (40 and 41 were visited above) */
	for (unsigned i = before; i < atomic_load(&n_got); i++)
		CHECK((got[i].flags & NK__SF_IO) && got[i].access == NK__ACC_WRITE && got[i].tid == nkp_tid());
	CHECK(pf_held(page_of(m, 10), page_of(m, 11)));
	CHECK(!pf_held(page_of(m, 50), page_of(m, 51)));
	CHECK(pf_arm_run(page_of(m, 10), 1, &status[10], 1, now) == 0); /* refused under I/O */
	CHECK(atomic_load(&pf_out) == 0);
	nkp_pf_io_end(t);
	CHECK(!pf_held(page_of(m, 10), page_of(m, 11)));
	CHECK(pf_arm_run(page_of(m, 10), 1, &status[10], 1, now) == 1);

	/* Exclusion: given back at once, never armed again. */
	CHECK(pf_arm_run(page_of(m, 12), 2, &status[12], 1, now) == 2);
	nkp_pf_exclude(page_of(m, 13), page_of(m, 14));
	CHECK(pf_find(page_of(m, 13)) < 0 && pf_find(page_of(m, 12)) >= 0);
	CHECK(pf_arm_run(page_of(m, 13), 1, &status[13], 1, now) == 0);
	CHECK(pf_arm_run(page_of(m, 14), 1, &status[14], 1, now) == 1);
	nkp_pf_exclude(page_of(m, 13), page_of(m, 14)); /* once per range */
	CHECK(atomic_load(&pf_n_excl) == 1);

	/* Forget: gives back without a sample and stops the sampler's picks from before. */
	uint64_t gen = pf_forget_gen;
	before = atomic_load(&n_got);
	nkp_pf_forget(page_of(m, 8), 8 * pf_ps);
	CHECK(atomic_load(&pf_out) == 0 && atomic_load(&n_got) == before);
	CHECK(pf_forgotten(gen, tr_gen, page_of(m, 9), page_of(m, 10)));
	CHECK(!pf_forgotten(gen, tr_gen, page_of(m, 20), page_of(m, 21)));
	/* Picked after the forget, but the registry had not dropped the range yet: still unsafe. */
	CHECK(pf_forgotten(pf_forget_gen, tr_gen, page_of(m, 9), page_of(m, 10)));
	tr_gen++; /* the registry dropped it */
	CHECK(!pf_forgotten(pf_forget_gen, tr_gen, page_of(m, 9), page_of(m, 10)));
	CHECK(pf_forgotten(gen, tr_gen, page_of(m, 9), page_of(m, 10)));
	CHECK(v[10 * pf_ps] == 10);

	/* Moved, expiry: give back silently. */
	CHECK(pf_arm_run(page_of(m, 20), 2, &status[20], 1, now) == 2);
	nkp_pf_moved(page_of(m, 20), pf_ps);
	CHECK(atomic_load(&pf_out) == 1);
	CHECK(pf_expire(UINT64_MAX) == 1 && atomic_load(&pf_out) == 0);
	CHECK(atomic_load(&n_got) == before);
	munmap(m, 64 * pf_ps);
	atomic_store(&pf_self_on, 1);
}

/*
 * A fault whose page another thread gave back before our handler looked, twice in a row (armed, claimed
 * and given back again in between: every thread sweeping the same pages): the instruction must be run
 * again both times.  With one retry per address the second went to the program (SIGSEGV in an uncapped
 * column sweep in the guest).  A fault with no page given back since the last look goes to the program.
 */
static void test_retry_regiven(void)
{
	unsigned char *m = mmap(NULL, 4 * pf_ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int status[1] = { 0 };
	siginfo_t si;

	CHECK(m != MAP_FAILED);
	m[0] = 1;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGSEGV;
	si.si_code = SEGV_ACCERR;
	si.si_addr = m + 8;
	for (int round = 0; round < 3; round++) {
		/* armed, then claimed and given back by "another thread" (no handler: our TLS stays) */
		CHECK(pf_arm_run(page_of(m, 0), 1, status, 1, nkp_now()) == 1);
		int slot = pf_find(page_of(m, 0));
		CHECK(slot >= 0 && pf_claim(slot, page_of(m, 0)) == PF_GOT);
		CHECK(pf_restore(slot, page_of(m, 0)) == 0);
		/* our fault, raised while the page was revoked, finds no slot: run it again */
		CHECK(nkp_pf_fault(SIGSEGV, &si, NULL) == 1);
	}
	/* the same address faults again with nothing given back since: a real fault, the program's */
	CHECK(nkp_pf_fault(SIGSEGV, &si, NULL) == 0);
	CHECK(atomic_load(&pf_out) == 0 && m[0] == 1);
	munmap(m, 4 * pf_ps);
}

/* The sampler thread against threads that read, write and do I/O on the tracked region. */
#define REGION (16u << 20)
static atomic_int stop_workers;
static atomic_int io_errors, data_errors;

static void *hammer(void *arg)
{
	uint64_t *a = (uint64_t *)tr_lo;
	size_t n = REGION / sizeof *a, k = (size_t)(uintptr_t)arg;

	for (uint64_t it = 1; !atomic_load(&stop_workers); it++) {
		for (size_t i = k; i < n; i += 2)
			a[i] = it * 2 + k + i;
		for (size_t i = k; i < n; i += 2)
			if (a[i] != it * 2 + k + i)
				atomic_fetch_add(&data_errors, 1);
	}
	return NULL;
}

static void *io_worker(void *arg)
{
	(void)arg;
	int fd = open("/dev/zero", O_RDONLY);
	unsigned char *b = (unsigned char *)tr_hi - (1u << 20); /* the last MiB, not hammered by index parity */
	while (!atomic_load(&stop_workers)) {
		int t = nkp_pf_io_begin((uintptr_t)b, (uintptr_t)b + (1u << 20), NK__ACC_WRITE);
		ssize_t r = read(fd, b, 1u << 20);
		nkp_pf_io_end(t);
		if (r != (ssize_t)(1u << 20))
			atomic_fetch_add(&io_errors, 1);
	}
	close(fd);
	return NULL;
}

static void test_sampler_thread(void)
{
	void *m = mmap(NULL, REGION + (1u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t th[3];

	CHECK(m != MAP_FAILED);
	tr_lo = (uintptr_t)m;
	tr_hi = tr_lo + REGION + (1u << 20);
	nkp.rate = 20000;
	nkp.seed = 42;
	atomic_store(&nkp.sampling, 1);
	unsigned before = atomic_load(&n_got);
	nkp_pf_start();
	CHECK(atomic_load(&pf_running) == 1);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, hammer, (void *)i);
	pthread_create(&th[2], NULL, io_worker, NULL);
	struct timespec ts = { 0, 600 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	atomic_store(&stop_workers, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	/* Paused: the sampler gives everything back and arms nothing. */
	atomic_store(&nkp.sampling, 0);
	nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	CHECK(atomic_load(&pf_out) == 0);
	atomic_store(&nkp.sampling, 1);
	nkp_pf_stop();
	unsigned n = atomic_load(&n_got) - before;
	fprintf(stderr, "pf_unit: sampler thread: %u samples, %lu expired, %lu I/O pages\n", n,
		(unsigned long)atomic_load(&pf_expired), (unsigned long)atomic_load(&pf_io_pages));
	CHECK(n > 50);
	CHECK(atomic_load(&io_errors) == 0);
	CHECK(atomic_load(&data_errors) == 0);
	CHECK(atomic_load(&pf_out) == 0);
	CHECK(atomic_load(&pf_running) == 0);
	for (unsigned i = before; i < atomic_load(&n_got); i++)
		CHECK(got[i].addr >= tr_lo && got[i].addr < tr_hi);
	/* Everything is accessible again without our handler's help. */
	CHECK(mprotect(m, REGION, PROT_READ | PROT_WRITE) == 0);
	munmap(m, REGION + (1u << 20));
}

/*
 * The weights estimate page visits whatever the program's pace (the reason for members, see the header of
 * pagefault.c): one thread writes every page once, slowly (about 0.3 s), then reads every page in 8 quick
 * sweeps 50 ms apart.  The sum of the weights over PF_W_ONE of the writes must be near the pages, and of
 * the reads near 8 times the pages.  One sample per page per pick (the sampler before) weighs phases
 * by their duration instead: the slow writes would count about as much as all the sweeps.
 */
#define V_PAGES 8192u /* twice the member pages at most: half of them members, weights of about 32 */
#define V_SWEEPS 8u
static void *pacer(void *arg)
{
	volatile unsigned char *a = arg;
	struct timespec slow = { 0, 5 * 1000 * 1000 }, gap = { 0, 50 * 1000 * 1000 };
	unsigned sum = 0;

	for (unsigned i = 0; i < V_PAGES; i++) {
		a[(size_t)i << pf_shift] = 1;
		if (i % (V_PAGES / 64) == V_PAGES / 64 - 1)
			nanosleep(&slow, NULL);
	}
	for (unsigned k = 0; k < V_SWEEPS; k++) {
		nanosleep(&gap, NULL);
		for (unsigned i = 0; i < V_PAGES; i++)
			sum += a[(size_t)i << pf_shift];
	}
	nanosleep(&gap, NULL);
	return (void *)(uintptr_t)sum;
}

static void test_visits(void)
{
	void *m = mmap(NULL, V_PAGES << pf_shift, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t th;
	void *sum;
	double wv = 0, rv = 0;

	CHECK(m != MAP_FAILED);
	tr_lo = (uintptr_t)m;
	tr_hi = tr_lo + (V_PAGES << pf_shift);
	nkp.rate = 20000;
	double keep = PF_MAX_OVERHEAD;
	PF_MAX_OVERHEAD = 1e9; /* the governor's cap is not under test */
	unsigned before = atomic_load(&n_got);
	nkp_pf_start();
	pthread_create(&th, NULL, pacer, m);
	pthread_join(th, &sum);
	nkp_pf_stop();
	PF_MAX_OVERHEAD = keep;
	CHECK((uintptr_t)sum == V_PAGES * V_SWEEPS);
	for (unsigned i = before; i < atomic_load(&n_got); i++) {
		if (got[i].addr < tr_lo || got[i].addr >= tr_hi)
			continue;
		if (got[i].access == NK__ACC_WRITE)
			wv += (double)got[i].weight / PF_W_ONE;
		else
			rv += (double)got[i].weight / PF_W_ONE;
	}
	fprintf(stderr, "pf_unit: visits estimated: writes %.0f of %u, reads %.0f of %u (%u samples)\n", wv, V_PAGES,
		rv, V_PAGES * V_SWEEPS, atomic_load(&n_got) - before);
	CHECK(wv > 0.75 * V_PAGES && wv < 1.25 * V_PAGES);
	CHECK(rv > 0.75 * V_PAGES * V_SWEEPS && rv < 1.25 * V_PAGES * V_SWEEPS);
	CHECK(atomic_load(&pf_out) == 0);
	CHECK(atomic_load(&pf_cur_w) > PF_W_ONE); /* not every page was a member: the weights were tested */
	/* With the correction for the profiler's own time on (pf_self.h): most of a sweep's time is the handler's,
	 * but a page left alone for 50 ms between two sweeps keeps its weight (1 - f^6), so the visits above hold. */
	CHECK(atomic_load(&pf_self_on) == 1 && atomic_load(&pf_self_n) > 0);
	munmap(m, V_PAGES << pf_shift);
}

/*
 * A run whose end lies past the mapping (a heap that malloc trimmed since the pages were drawn): Linux's
 * mprotect changes the vmas before the hole and then fails with ENOMEM.  The run must be refused with
 * every page of it as it was: before the fix its first pages stayed revoked with no slot, and malloc died
 * of SIGSEGV on the heap's last page (unit.prof.pf.ranges under load).
 */
static void test_arm_hole(void)
{
	unsigned char *m = mmap(NULL, 8 * pf_ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int status[8];

	CHECK(m != MAP_FAILED);
	for (unsigned i = 0; i < 8; i++) {
		m[(size_t)i * pf_ps] = (unsigned char)(i + 1);
		status[i] = 0;
	}
	CHECK(munmap(m + 4 * pf_ps, 4 * pf_ps) == 0);
	CHECK(pf_arm_run(page_of(m, 2), 4, &status[2], 1, nkp_now()) == 0);
	for (unsigned i = 2; i < 4; i++) {
		CHECK(pf_find(page_of(m, i)) < 0);
		unsigned char vec;
		CHECK(mincore(m + (size_t)i * pf_ps, pf_ps, &vec) == 0);
		/* accessible without the handler: a read through a pipe fails with EFAULT on a revoked page */
		int fd[2];
		CHECK(pipe(fd) == 0);
		CHECK(write(fd[1], m + (size_t)i * pf_ps, 1) == 1);
		close(fd[0]);
		close(fd[1]);
	}
	munmap(m, 4 * pf_ps);
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	nkp.page_size = (int)sysconf(_SC_PAGESIZE);
	pf_ps = (uintptr_t)nkp.page_size;
	pf_shift = (uintptr_t)__builtin_ctzl(pf_ps);
	atomic_store(&pf_started, 1);
	test_table();
	test_fault_path();
	test_arm_hole();
	test_retry_regiven();
	test_sampler_thread();
	test_visits();
	char js[1024]; /* part.c gives it 8 KiB */
	size_t jn = nkp_pf_end_json(js, sizeof js);
	CHECK(jn > 0 && jn == strlen(js) && !strncmp(js, "\"faults\": ", 10) && strstr(js, "\"pagefault\": {") &&
	      js[jn - 1] == '}');
	CHECK(nkp_pf_end_json(js, 100) == 0);
	fprintf(stderr, "pf_unit: %s\n", js);
	if (failures)
		fprintf(stderr, "pf_unit: %d checks failed\n", failures);
	else
		fprintf(stderr, "pf_unit: ok\n");
	return failures ? 1 : 0;
}
