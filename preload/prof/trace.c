/* SPDX-License-Identifier: BSD-3-Clause
 * The `trace` sampler: callbacks of clang's SanitizerCoverage for programs
 * built with `numakit cc` (-fsanitize-coverage=func,inline-bool-flag,
 * trace-loads,trace-stores).  clang 14 emits the load/store callbacks only
 * together with one of the coverage kinds (trace-pc-guard, trace-pc,
 * inline-8bit-counters, inline-bool-flag); `numakit cc` picks the cheapest,
 * an inline flag per function, and the other kinds' callbacks are no-ops
 * here so that programs built with the flags (trace-pc-guard) work
 * as well.  Every callback gets the data address before the access.
 *
 * Hot path: every instrumented load and store of the program comes here, so
 * the common case is a thread-local slot pointer, two increments and a
 * branch: the slot counts loads and stores exactly and a countdown says
 * when the next access is recorded (one in P on average; the countdown is
 * drawn uniformly from [1, 2 P - 1] so that a loop whose accesses repeat
 * with the period cannot alias with it).  P starts at RATE and grows with
 * the accesses sampled so far over the budget left (src/profile/budget.h),
 * so that the budget lasts the whole run; each sample's weight is the P its
 * countdown was drawn with, so weighted counts stay unbiased.  Reading P
 * costs the slow path two relaxed loads of the runtime's counters.  No locks, no allocation, no
 * recursion (the runtime and libc are not instrumented, and a signal
 * handler of the program that interrupts the slow path only counts).
 *
 * Slots live in a static array, not in TLS, so that END can still read the
 * counters of threads that have exited.
 *
 * Page -> node: a lock-free cache of 64-bit words (page number, state,
 * epoch) with 8-way linear probing, filled by move_pages queries of 64
 * pages at a time from the missed one (a stream then misses once per 64
 * pages).  A page that is not populated yet (-ENOENT; for a store also the
 * shared zero page: -EFAULT) makes the access a first-touch candidate: the sample
 * waits in the thread's slot until the thread's next recorded access (or
 * nkp_trace_stop), when the access has happened and the page can be asked
 * again; if it now has a node the sample is flagged NK__SF_FIRST_TOUCH.
 * The cache forgets pages on nkp_trace_moved() and entirely every
 * REFRESH_NS (kernel NUMA balancing moves pages behind everybody's back).
 *
 * Only accesses to tracked memory (the registry, tracked.c) become samples; the
 * thread remembers the last TK_WAYS tracked ranges or gaps it asked about.
 * One clock reading serves up to CLOCK_EVERY samples of a thread (reading
 * the clock was a fifth of the recording cost in our VMs).
 *
 * Not seen: accesses by uninstrumented code (libc's memcpy/memset, the
 * kernel), aggregate copies the compiler turns into memcpy, and vector
 * accesses wider than 16 bytes (`numakit cc` keeps vectors at 128 bits).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof.h"
#include "profile/budget.h"

#define NSLOTS 1024
#define QUERY_BATCH 64
#define CACHE_BITS 18
#define CACHE_PROBE 8
#define REFRESH_NS 250000000ull
#define REFRESH_CHECK 1024 /* slow paths between two looks at the clock, per thread */
#define CLOCK_EVERY 8      /* samples that may share one clock reading */
#define TK_WAYS 4          /* tracked spans remembered per thread: a triad walks three arrays */

enum { LD = 0, ST = 1 };

struct slot {
	/* first cache line: the hot path's */
	uint64_t n[2];  /* loads, stores: exact */
	uint64_t left;  /* accesses until the next recorded one */
	uint32_t tid;
	uint32_t busy;  /* inside the slow path (a signal handler re-entered) */
	uint64_t rng;
	uint64_t period; /* the mean the countdown in `left` was drawn with: the next sample's weight */
	uint64_t slow;  /* slow paths taken */
	uint64_t recorded;
	uint64_t outside; /* recorded accesses outside tracked ranges (not emitted) */
	/* second line: the slow path's */
	uint64_t queries;     /* move_pages calls */
	uint64_t cache_miss;
	uint64_t first_touch;
	uint64_t carry;   /* the weight of samples the full ring refused, added to the thread's next sample */
	uint64_t carried; /* such samples */
	struct { uintptr_t lo, hi; int hit; } tk[TK_WAYS]; /* the last spans asked of the registry */
	uint64_t tk_gen;  /* ... valid while the tracked set and the epoch are these */
	uint32_t tk_epoch;
	uint32_t tk_next; /* the way replaced next */
	uint64_t clock_ns; /* time of the last samples (the clock is slow in VMs) ... */
	uint64_t clock_gen; /* ... read again after CLOCK_EVERY samples or when the tracked set or phase changed */
	uint32_t clock_left;
	uint16_t clock_phase;
	_Atomic int pending_state; /* 0 none, 1 waiting, 2 being emitted, 3 being written */
	uint32_t pad;
	struct nk__nkp_sample pending;
} __attribute__((aligned(64)));

static struct slot slots[NSLOTS];
static _Atomic uint32_t nslots;       /* slots handed out (may exceed NSLOTS: those threads count in TLS) */
static _Atomic int tr_on;             /* recording */
static _Atomic int tr_ran;            /* nkp_trace_start was called in this process */
static _Atomic int tr_noquery;        /* move_pages unavailable (no NUMA in the kernel): page_node -1 */
static _Atomic uint32_t tr_epoch = 1; /* cache generation, 12 bits used */
static _Atomic uint64_t tr_next_refresh;
static uint64_t tr_period = 1;         /* RATE: the period of the budget's first stage */
static _Atomic uint64_t cache[1u << CACHE_BITS];

#pragma weak nkp_tracked_generation
#pragma weak nkp_tracked_span

static __thread struct slot *me __attribute__((tls_model("initial-exec")));
static __thread struct slot tls_overflow __attribute__((tls_model("initial-exec")));

/* ---- page -> node cache ---- */
#define PN_MASK ((1ull << 40) - 1)
#define ST_SHIFT 40
#define ST_MASK 0xfffull
#define ST_UNKNOWN 0      /* no entry / forgotten */
#define ST_ZERO 0xffeull  /* -EFAULT: not mapped, or only the zero page */
#define ST_NONE 0xfffull  /* -ENOENT: not populated */
#define EP_SHIFT 52

enum { NODE_MISS = -2, NODE_UNTOUCHED = -3, NODE_ZERO = -4 };

static unsigned page_shift = 12; /* log2(nkp.page_size), set by nkp_trace_start */

static inline uint64_t page_number(uintptr_t addr)
{
	return (uint64_t)addr >> page_shift;
}

static inline size_t cache_index(uint64_t pn)
{
	return (size_t)((pn * 0x9E3779B97F4A7C15ull) >> (64 - CACHE_BITS));
}

/* The node of page number @p pn, or NODE_MISS / NODE_UNTOUCHED / NODE_ZERO. */
static int cache_get(uint64_t pn)
{
	uint64_t key = (pn + 1) & PN_MASK, ep = atomic_load_explicit(&tr_epoch, memory_order_relaxed) & 0xfff;
	size_t i = cache_index(pn);

	if (key != pn + 1)
		return NODE_MISS;
	for (int k = 0; k < CACHE_PROBE; k++) {
		uint64_t w = atomic_load_explicit(&cache[(i + k) & ((1u << CACHE_BITS) - 1)], memory_order_relaxed);
		if (!w)
			return NODE_MISS;
		if ((w & PN_MASK) != key)
			continue;
		uint64_t st = (w >> ST_SHIFT) & ST_MASK;
		if ((w >> EP_SHIFT) != ep || st == ST_UNKNOWN)
			return NODE_MISS;
		if (st == ST_NONE)
			return NODE_UNTOUCHED;
		if (st == ST_ZERO)
			return NODE_ZERO;
		return (int)st - 1;
	}
	return NODE_MISS;
}

/* Racing writers may leave two words for one page or lose one: it is a cache. */
static void cache_put(uint64_t pn, uint64_t st)
{
	uint64_t key = (pn + 1) & PN_MASK, ep = atomic_load_explicit(&tr_epoch, memory_order_relaxed) & 0xfff;
	size_t i = cache_index(pn), victim = i;

	if (key != pn + 1)
		return;
	for (int k = 0; k < CACHE_PROBE; k++) {
		size_t j = (i + k) & ((1u << CACHE_BITS) - 1);
		uint64_t w = atomic_load_explicit(&cache[j], memory_order_relaxed);
		if (!w || (w & PN_MASK) == key || (w >> EP_SHIFT) != ep) {
			victim = j;
			break;
		}
	}
	atomic_store_explicit(&cache[victim], key | (st << ST_SHIFT) | (ep << EP_SHIFT), memory_order_relaxed);
}

static uint64_t status_state(int status)
{
	if (status >= 0 && status < (int)ST_ZERO - 1)
		return (uint64_t)status + 1;
	if (status == -ENOENT)
		return ST_NONE;
	return ST_ZERO;
}

/*
 * Ask the kernel where @p n pages from @p page live and cache the answers;
 * the state of the first page in *first.  0, or -1 when move_pages is not
 * available.  A raw syscall on purpose: this runtime is a front end loaded
 * into the program and must not depend on libnuma.  AS-safe.
 */
static int query_pages(struct slot *s, uintptr_t page, unsigned n, uint64_t *first)
{
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];

	if (atomic_load_explicit(&tr_noquery, memory_order_relaxed))
		return -1;
	if (n > QUERY_BATCH)
		n = QUERY_BATCH;
	for (unsigned k = 0; k < n; k++) {
		pages[k] = (void *)(page + (uintptr_t)k * (uintptr_t)nkp.page_size);
		status[k] = -EFAULT;
	}
	s->queries++;
	int saved = errno;
	long rc = syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0);
	if (rc < 0) {
		if (errno == ENOSYS || errno == EPERM)
			atomic_store_explicit(&tr_noquery, 1, memory_order_relaxed);
		errno = saved;
		return -1;
	}
	errno = saved;
	for (unsigned k = 0; k < n; k++)
		cache_put(page_number((uintptr_t)pages[k]), status_state(status[k]));
	*first = status_state(status[0]);
	return 0;
}

/* ---- per-thread state ---- */

static inline uint64_t xorshift(uint64_t *x)
{
	uint64_t v = *x;
	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	return *x = v;
}

/* The period of the budget's current stage, remembered as the next sample's weight, and a countdown drawn with it. */
static inline uint64_t next_period(struct slot *s)
{
	uint64_t p = nkp_budget_period(tr_period);

	s->period = p;
	if (p <= 1)
		return 1;
	return 1 + xorshift(&s->rng) % (2 * p - 1);
}

static struct slot *claim_slot(void)
{
	uint32_t i = atomic_fetch_add_explicit(&nslots, 1, memory_order_relaxed);
	struct slot *s = i < NSLOTS ? &slots[i] : &tls_overflow;

	memset(s, 0, sizeof *s);
	s->tid = nkp_tid();
	s->rng = (nkp.seed ^ ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ull) | 1;
	s->left = next_period(s);
	me = s;
	return s;
}

/*
 * Emit @p smp of thread slot @p s with the weight the ring refused before added (up to the u32 a weight
 * holds; the rest waits for the next sample).  A sample the full ring refuses hands its weight on the same
 * way: when the flusher falls behind (the guests at -icount shift 5: 422465 of 801995 samples dropped, all
 * in the parallel sweeps), the accesses those samples stood for still count, on the thread's next sample,
 * instead of the serial phases weighing twice their share (prof_trio's initialisation: 29.9 % of the
 * writes for 14.3 %).  Only the thread itself.  AS-safe.
 */
static void emit_weighed(struct slot *s, struct nk__nkp_sample *smp, int wait)
{
	uint64_t w = (uint64_t)smp->weight + s->carry;
	smp->weight = (uint32_t)(w > UINT32_MAX ? UINT32_MAX : w);
	s->carry = w - smp->weight;
	if ((wait ? nkp_emit_wait(smp) : nkp_emit(smp)) == NKP_DROP_RING) {
		s->carry += smp->weight;
		s->carried++;
	}
}

/* Emit the waiting first-touch sample of @p s, now that its access is done.  AS-safe. */
static void flush_pending(struct slot *s, struct slot *asker)
{
	int one = 1;
	if (!atomic_compare_exchange_strong(&s->pending_state, &one, 2))
		return;
	struct nk__nkp_sample smp = s->pending;
	uint64_t pn = page_number((uintptr_t)smp.addr), st = ST_ZERO;
	if (query_pages(asker, (uintptr_t)(pn * (uint64_t)nkp.page_size), 1, &st) == 0 && st != ST_NONE &&
	    st != ST_ZERO) {
		smp.page_node = (int16_t)(st - 1);
		smp.flags |= NK__SF_FIRST_TOUCH;
		s->first_touch++;
	}
	/* From the thread itself, a refused sample's weight goes to its next one (emit_weighed); a pending
	 * sample emitted by another thread at the stop is simply lost. */
	if (asker == s)
		emit_weighed(s, &smp, 0);
	else
		nkp_emit(&smp);
	atomic_store_explicit(&s->pending_state, 0, memory_order_release);
}

static void maybe_refresh(struct slot *s)
{
	if (s->slow % REFRESH_CHECK)
		return;
	uint64_t now = nkp_now(), next = atomic_load_explicit(&tr_next_refresh, memory_order_relaxed);
	if (now >= next &&
	    atomic_compare_exchange_strong(&tr_next_refresh, &next, now + REFRESH_NS))
		atomic_fetch_add_explicit(&tr_epoch, 1, memory_order_relaxed);
}

/*
 * Is @p addr in tracked memory?  Asking the registry costs two atomic RMWs
 * on a shared counter, so each thread keeps the last answer: the tracked
 * range or untracked gap around the address (nkp_tracked_span), else the
 * page (nkp_tracked_contains, which only knows whole pages), while the
 * tracked set's generation (when alloc.c gives one) and the cache epoch
 * stay the same.
 */
static int tracked(struct slot *s, uintptr_t addr, uintptr_t page)
{
	uint64_t gen = nkp_tracked_generation ? nkp_tracked_generation() : 0;
	uint32_t ep = atomic_load_explicit(&tr_epoch, memory_order_relaxed);
	uintptr_t lo = 0, hi = 0;
	int hit;

	if (gen != s->tk_gen || ep != s->tk_epoch) {
		memset(s->tk, 0, sizeof s->tk);
		s->tk_gen = gen;
		s->tk_epoch = ep;
	}
	for (int k = 0; k < TK_WAYS; k++)
		if (addr >= s->tk[k].lo && addr < s->tk[k].hi)
			return s->tk[k].hit;
	if (nkp_tracked_span) {
		hit = nkp_tracked_span(addr, &lo, &hi);
		if (lo > addr || hi <= addr) /* a bad span: remember nothing */
			lo = hi = 0;
	} else {
		hit = nkp_tracked_contains(page);
		lo = page;
		hi = page + (uintptr_t)nkp.page_size;
	}
	unsigned k = s->tk_next++ % TK_WAYS;
	s->tk[k].lo = lo;
	s->tk[k].hi = hi;
	s->tk[k].hit = hit;
	return hit;
}

static void record(struct slot *s, uintptr_t addr, int kind, uintptr_t ip, uint64_t weight)
{
	uintptr_t page = addr & ~((uintptr_t)nkp.page_size - 1);

	if (atomic_load_explicit(&s->pending_state, memory_order_acquire) == 1)
		flush_pending(s, s);
	if (!tracked(s, addr, page)) {
		s->outside++;
		return;
	}
	uint16_t phase = atomic_load_explicit(&nkp.phase, memory_order_relaxed);
	/* A block freed and another allocated at its address change the
	 * generation: a sample never carries a time from before such a change. */
	if (!s->clock_left || s->clock_gen != s->tk_gen || s->clock_phase != phase) {
		s->clock_ns = nkp_now();
		s->clock_gen = s->tk_gen;
		s->clock_phase = phase;
		s->clock_left = CLOCK_EVERY;
	}
	s->clock_left--;
	struct nk__nkp_sample smp = {
		.time_ns = s->clock_ns,
		.addr = addr,
		.ip = ip,
		.tid = s->tid,
		.weight = (uint32_t)(weight > UINT32_MAX ? UINT32_MAX : weight),
		.cpu = -1,
		.cpu_node = -1,
		.page_node = -1,
		.phase = phase,
		.access = kind == ST ? NK__ACC_WRITE : NK__ACC_READ,
		.sampler = NK__SAMPLER_TRACE,
	};
	int cpu = sched_getcpu();
	if (cpu >= 0) {
		smp.cpu = (int16_t)cpu;
		smp.cpu_node = (int16_t)nkp_cpu_node(cpu);
	}
	uint64_t pn = page_number(page);
	int node = cache_get(pn);
	if (node == NODE_MISS) {
		uint64_t st;
		s->cache_miss++;
		if (query_pages(s, page, QUERY_BATCH, &st) == 0)
			node = st == ST_NONE ? NODE_UNTOUCHED : st == ST_ZERO ? NODE_ZERO : (int)st - 1;
	}
	s->recorded++;
	if (node >= 0) {
		smp.page_node = (int16_t)node;
	} else if (node == NODE_UNTOUCHED || (node == NODE_ZERO && kind == ST)) {
		/* This access may place the page: ask again once it happened.  The
		 * cache entry is dropped so that the next access asks too.  (A read
		 * of the zero page places nothing: it stays -1 without a query.) */
		int none = 0;
		cache_put(pn, ST_UNKNOWN);
		/* 3 while written: nkp_trace_stop, emitting pendings from another
		 * thread, takes only complete ones (1). */
		if (atomic_compare_exchange_strong(&s->pending_state, &none, 3)) {
			s->pending = smp;
			atomic_store_explicit(&s->pending_state, 1, memory_order_release);
			return;
		}
	}
	emit_weighed(s, &smp, 1);
}

static __attribute__((noinline)) void slow_path(struct slot *s, uintptr_t addr, int kind, uintptr_t ip)
{
	if (!s) {
		if (!atomic_load_explicit(&tr_on, memory_order_relaxed))
			return;
		s = claim_slot();
		s->n[kind]++;
		if (--s->left)
			return;
	}
	if (s->busy) { /* a signal handler of the program interrupted us: count only */
		s->left = 1;
		return;
	}
	s->busy = 1;
	s->slow++;
	uint64_t weight = s->period; /* the countdown that ended here */
	s->left = next_period(s);
	if (atomic_load_explicit(&tr_on, memory_order_relaxed)) {
		maybe_refresh(s);
		if (atomic_load_explicit(&nkp.sampling, memory_order_relaxed))
			record(s, addr, kind, ip, weight);
	} else {
		s->left = UINT64_MAX; /* stopped: keep counting, never come back */
	}
	s->busy = 0;
}

static inline __attribute__((always_inline)) void on_access(const void *p, int kind, uintptr_t ip)
{
	struct slot *s = me;

	if (__builtin_expect(s != NULL, 1)) {
		s->n[kind]++;
		if (__builtin_expect(--s->left != 0, 1))
			return;
	} else if (!atomic_load_explicit(&tr_on, memory_order_relaxed)) {
		return; /* inactive runtime, or not recording */
	}
	slow_path(s, (uintptr_t)p, kind, ip);
}

#define RA() ((uintptr_t)__builtin_return_address(0))

NKP_API void __sanitizer_cov_load1(uint8_t *p);
NKP_API void __sanitizer_cov_load2(uint16_t *p);
NKP_API void __sanitizer_cov_load4(uint32_t *p);
NKP_API void __sanitizer_cov_load8(uint64_t *p);
NKP_API void __sanitizer_cov_load16(__int128 *p);
NKP_API void __sanitizer_cov_store1(uint8_t *p);
NKP_API void __sanitizer_cov_store2(uint16_t *p);
NKP_API void __sanitizer_cov_store4(uint32_t *p);
NKP_API void __sanitizer_cov_store8(uint64_t *p);
NKP_API void __sanitizer_cov_store16(__int128 *p);
NKP_API void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop);
NKP_API void __sanitizer_cov_trace_pc_guard(uint32_t *guard);
NKP_API void __sanitizer_cov_trace_pc(void);
NKP_API void __sanitizer_cov_8bit_counters_init(char *start, char *end);
NKP_API void __sanitizer_cov_bool_flag_init(char *start, char *end);
NKP_API void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end);

void __sanitizer_cov_load1(uint8_t *p) { on_access(p, LD, RA()); }
void __sanitizer_cov_load2(uint16_t *p) { on_access(p, LD, RA()); }
void __sanitizer_cov_load4(uint32_t *p) { on_access(p, LD, RA()); }
void __sanitizer_cov_load8(uint64_t *p) { on_access(p, LD, RA()); }
void __sanitizer_cov_load16(__int128 *p) { on_access(p, LD, RA()); }
void __sanitizer_cov_store1(uint8_t *p) { on_access(p, ST, RA()); }
void __sanitizer_cov_store2(uint16_t *p) { on_access(p, ST, RA()); }
void __sanitizer_cov_store4(uint32_t *p) { on_access(p, ST, RA()); }
void __sanitizer_cov_store8(uint64_t *p) { on_access(p, ST, RA()); }
void __sanitizer_cov_store16(__int128 *p) { on_access(p, ST, RA()); }

/* The coverage kinds clang requires alongside trace-loads/trace-stores: nothing to do. */
void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) { }
void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { }
void __sanitizer_cov_trace_pc(void) { }
void __sanitizer_cov_8bit_counters_init(char *start, char *end) { }
void __sanitizer_cov_bool_flag_init(char *start, char *end) { }
void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end) { }

/* ---- the runtime's side ---- */

void nkp_trace_start(void)
{
	double r = nkp.rate;

	if (!nkp.active || nkp.page_size <= 0)
		return;
	if (nkp.page_size & (nkp.page_size - 1))
		return; /* not a power of two: no Linux page size */
	page_shift = (unsigned)__builtin_ctz((unsigned)nkp.page_size);
	tr_period = r >= 1.0 && r < 4e9 ? (uint64_t)(r + 0.5) : 1;
	atomic_store(&tr_next_refresh, nkp_now() + REFRESH_NS);
	atomic_store(&tr_ran, 1);
	atomic_store(&tr_on, 1);
}

void nkp_trace_stop(void)
{
	uint32_t n = atomic_load(&nslots);
	struct slot *s = me ? me : &tls_overflow;

	atomic_store(&tr_on, 0);
	if (n > NSLOTS)
		n = NSLOTS;
	for (uint32_t i = 0; i < n; i++)
		flush_pending(&slots[i], s);
	if (me == &tls_overflow)
		flush_pending(&tls_overflow, s);
}

void nkp_trace_moved(uintptr_t addr, size_t len)
{
	if (nkp.page_size <= 0 || !len)
		return;
	uint64_t first = page_number(addr), last = page_number(addr + len - 1);
	if (last - first >= 4096) {
		atomic_fetch_add_explicit(&tr_epoch, 1, memory_order_relaxed);
		return;
	}
	for (uint64_t pn = first; pn <= last; pn++)
		if (cache_get(pn) != NODE_MISS)
			cache_put(pn, ST_UNKNOWN);
}

void nkp_trace_after_fork(void)
{
	struct slot *s = me;

	/* Only the forking thread lives on; it keeps its slot, as slot 0, with counters from zero. */
	atomic_fetch_add(&tr_epoch, 1);
	if (!s)
		return;
	memset(slots, 0, sizeof slots);
	atomic_store(&nslots, 0);
	me = NULL;
	if (atomic_load(&tr_on))
		claim_slot();
}

/* ---- END counters, formatted by hand (AS-safe) ---- */

struct out {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct out *o, const char *t)
{
	size_t n = strlen(t);
	if (o->full || o->len + n >= o->cap) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->len, t, n);
	o->len += n;
	o->p[o->len] = 0;
}

static void put_u(struct out *o, uint64_t v)
{
	char b[24];
	int i = sizeof b - 1;
	b[i] = 0;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(o, b + i);
}

static void put_kv(struct out *o, const char *k, uint64_t v)
{
	put(o, ", \"");
	put(o, k);
	put(o, "\": ");
	put_u(o, v);
}

size_t nkp_trace_end_json(char *buf, size_t cap)
{
	uint64_t tot[2] = { 0, 0 }, slow = 0, rec = 0, outside = 0, q = 0, miss = 0, ft = 0, carried = 0;
	uint32_t n = atomic_load(&nslots), listed = n > NSLOTS ? NSLOTS : n;
	struct out o = { buf, 0, cap, false };

	if (!atomic_load(&tr_ran) || cap < 256)
		return 0;
	for (uint32_t i = 0; i < listed; i++) {
		const struct slot *s = &slots[i];
		tot[LD] += s->n[LD];
		tot[ST] += s->n[ST];
		slow += s->slow;
		rec += s->recorded;
		outside += s->outside;
		q += s->queries;
		miss += s->cache_miss;
		ft += s->first_touch;
		carried += s->carried;
	}
	uint64_t period = nkp_budget_period(tr_period);
	put(&o, "\"trace\": {\"rate\": ");
	put_u(&o, tr_period);
	put_kv(&o, "period", period);
	put_kv(&o, "doublings", nk__budget_doublings(tr_period, period));
	put_kv(&o, "loads", tot[LD]);
	put_kv(&o, "stores", tot[ST]);
	put_kv(&o, "slow_paths", slow);
	put_kv(&o, "recorded", rec);
	put_kv(&o, "outside_tracked", outside);
	put_kv(&o, "node_queries", q);
	put_kv(&o, "node_cache_misses", miss);
	put_kv(&o, "first_touch", ft);
	put_kv(&o, "ring_carried", carried);
	put_kv(&o, "epoch", atomic_load(&tr_epoch));
	put_kv(&o, "threads_uncounted", n - listed);
	put(&o, ", \"threads\": [");
	uint32_t shown = 0;
	for (uint32_t i = 0; i < listed; i++) {
		const struct slot *s = &slots[i];
		struct out t = o;
		/* leave room for the closing text */
		t.cap = cap > 64 ? cap - 64 : 0;
		put(&t, shown ? ", {\"tid\": " : "{\"tid\": ");
		put_u(&t, s->tid);
		put_kv(&t, "loads", s->n[LD]);
		put_kv(&t, "stores", s->n[ST]);
		put(&t, "}");
		if (t.full)
			break;
		o.len = t.len;
		shown++;
	}
	put(&o, "]");
	put_kv(&o, "threads_listed", shown);
	put(&o, "}");
	if (o.full)
		return 0;
	return o.len;
}
