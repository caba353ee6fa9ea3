/* SPDX-License-Identifier: BSD-3-Clause
 * trace.c alone, with test doubles of the rest of the runtime (nkp state,
 * nkp_emit collecting samples, a tracked set of one mmap'ed region): the
 * test calls the SanitizerCoverage callbacks directly, as instrumented code
 * would, and then makes the access itself.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "prof.h"

void __sanitizer_cov_load8(uint64_t *p);
void __sanitizer_cov_store8(uint64_t *p);
void __sanitizer_cov_load4(uint32_t *p);

/* ---- doubles ---- */
struct nkp_state nkp;
static struct nk__nkp_sample got[1 << 16];
static size_t n_got;
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t tr_lo, tr_hi; /* the tracked range */
static uint64_t gen = 1;
static int span_calls;
static int raise_in_emit; /* nkp_emit raises SIGUSR1 once: a program's handler inside our slow path */

uint64_t nkp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t nkp_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

int nkp_cpu_node(int cpu)
{
	return cpu >= 0 ? 0 : -1;
}

static int refuse_ring; /* nkp_emit_wait refuses this many samples as a full ring would */
int nkp_emit(const struct nk__nkp_sample *s)
{
	pthread_mutex_lock(&got_lock);
	if (n_got < sizeof got / sizeof got[0])
		got[n_got++] = *s;
	pthread_mutex_unlock(&got_lock);
	if (raise_in_emit) {
		raise_in_emit = 0;
		raise(SIGUSR1);
	}
	return 0;
}

static uint32_t stage; /* nkp_budget_period() is p0 2^stage: the test sets it */
uint64_t nkp_budget_period(uint64_t p0)
{
	return p0 << stage;
}

static unsigned n_waited; /* samples that came through nkp_emit_wait */
int nkp_emit_wait(const struct nk__nkp_sample *s)
{
	n_waited++;
	if (refuse_ring > 0) {
		refuse_ring--;
		return NKP_DROP_RING;
	}
	return nkp_emit(s);
}

int nkp_tracked_contains(uintptr_t page)
{
	return page >= tr_lo && page + (uintptr_t)nkp.page_size <= tr_hi;
}

uint64_t nkp_tracked_generation(void)
{
	return gen;
}

int nkp_tracked_span(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	span_calls++;
	if (addr >= tr_lo && addr < tr_hi) {
		*lo = tr_lo;
		*hi = tr_hi;
		return 1;
	}
	*lo = addr < tr_lo ? 0 : tr_hi;
	*hi = addr < tr_lo ? tr_lo : UINTPTR_MAX;
	return 0;
}

/* ---- helpers ---- */
#define PAGES 16
static uint64_t *region; /* PAGES fresh pages, tracked from byte 16 (a malloc header) */

static void reset(double rate)
{
	nkp_trace_stop();
	n_got = 0;
	stage = 0;
	nkp.active = 1;
	nkp.sampler = NK__SAMPLER_TRACE;
	nkp.rate = rate;
	nkp.page_size = (int)sysconf(_SC_PAGESIZE);
	nkp.seed = 42;
	atomic_store(&nkp.sampling, 1);
	if (region) {
		nkp_trace_moved((uintptr_t)region, (size_t)PAGES * (size_t)nkp.page_size); /* as the runtime's munmap */
		munmap(region, (size_t)PAGES * (size_t)nkp.page_size);
	}
	region = mmap(NULL, (size_t)PAGES * (size_t)nkp.page_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(region != MAP_FAILED);
	tr_lo = (uintptr_t)region + 16;
	tr_hi = (uintptr_t)region + (size_t)PAGES * (size_t)nkp.page_size;
	gen++;
	nkp_trace_start();
	nkp_trace_after_fork(); /* forget the earlier tests' threads and counters */
}

static json_t *end_json(size_t cap)
{
	char *buf = malloc(cap + 2), *doc = malloc(cap + 8);
	size_t n = nkp_trace_end_json(buf, cap);
	json_error_t e;
	json_t *j = NULL;

	assert_true(n > 0 && n < cap);
	assert_int_equal(strlen(buf), n);
	snprintf(doc, cap + 8, "{%s}", buf);
	j = json_loads(doc, 0, &e);
	if (!j)
		fail_msg("END member is not JSON: %s: %s", e.text, doc);
	free(buf);
	free(doc);
	json_t *t = json_incref(json_object_get(j, "trace"));
	json_decref(j);
	assert_non_null(t);
	return t;
}

static uint64_t jget(json_t *t, const char *k)
{
	json_t *v = json_object_get(t, k);
	if (!json_is_integer(v))
		fail_msg("END trace.%s missing", k);
	return (uint64_t)json_integer_value(v);
}

static size_t words(void)
{
	return (size_t)PAGES * (size_t)nkp.page_size / 8;
}

/* ---- tests ---- */

static void test_inactive(void **state)
{
	uint64_t x = 0;
	char buf[512];

	nkp.active = 0;
	nkp_trace_start(); /* refused: no part */
	for (int i = 0; i < 1000; i++)
		__sanitizer_cov_load8(&x);
	assert_int_equal(n_got, 0);
	assert_int_equal(nkp_trace_end_json(buf, sizeof buf), 0);
}

static void test_every_access(void **state)
{
	reset(1);
	size_t n = words();
	uint64_t local = 0;
	/* stores to every word, the first two words outside the block (header) */
	for (size_t i = 0; i < n; i++) {
		__sanitizer_cov_store8(&region[i]);
		region[i] = i;
	}
	for (size_t i = 0; i < n; i++) {
		__sanitizer_cov_load8(&region[i]);
		local += region[i];
	}
	__sanitizer_cov_load8(&local); /* the stack: not tracked */
	nkp_trace_stop();
	assert_int_equal(n_got, 2 * (n - 2));
	size_t ft = 0, w = 0;
	uint32_t me = nkp_tid();
	for (size_t i = 0; i < n_got; i++) {
		const struct nk__nkp_sample *s = &got[i];
		assert_true(s->addr >= tr_lo && s->addr < tr_hi);
		assert_int_equal(s->weight, 1);
		assert_int_equal(s->tid, me);
		assert_int_equal(s->sampler, NK__SAMPLER_TRACE);
		assert_true(s->ip != 0);
		assert_true(s->cpu >= 0);
		assert_int_equal(s->cpu_node, 0);
		assert_true(s->page_node >= 0); /* first touches resolved after the access */
		w += s->access == NK__ACC_WRITE;
		if (s->flags & NK__SF_FIRST_TOUCH) {
			/* the first store of each page but the first, which the untracked header placed */
			assert_int_equal(s->access, NK__ACC_WRITE);
			assert_int_equal((s->addr - (uintptr_t)region) % (uintptr_t)nkp.page_size, 0);
			ft++;
		}
	}
	assert_int_equal(w, n - 2);
	assert_int_equal(ft, PAGES - 1);
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "rate"), 1);
	assert_int_equal(jget(t, "loads"), n + 1);
	assert_int_equal(jget(t, "stores"), n);
	assert_int_equal(jget(t, "recorded"), 2 * (n - 2));
	assert_int_equal(jget(t, "outside_tracked"), 5);
	assert_int_equal(jget(t, "first_touch"), PAGES - 1);
	/* one query per page: the first access asks 64 pages, each later page once more after its touch */
	assert_true(jget(t, "node_queries") <= 2 * PAGES + 1);
	json_t *th = json_object_get(t, "threads");
	assert_int_equal(json_array_size(th), 1);
	assert_int_equal(jget(json_array_get(th, 0), "tid"), me);
	json_decref(t);
}

static void test_rate(void **state)
{
	reset(7);
	n_waited = 0;
	size_t n = words(), rounds = 4;
	for (size_t r = 0; r < rounds; r++)
		for (size_t i = 2; i < n; i++) {
			__sanitizer_cov_store8(&region[i]);
			region[i] = i;
		}
	nkp_trace_stop();
	double want = (double)(rounds * (n - 2)) / 7;
	assert_true(n_got > 0.9 * want && n_got < 1.1 * want);
	/* Recorded accesses wait for room in the ring (nkp_emit_wait), they are not dropped. */
	assert_true(n_waited > 0 && n_waited <= n_got);
	for (size_t i = 0; i < n_got; i++)
		assert_int_equal(got[i].weight, 7);
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "stores"), rounds * (n - 2));
	assert_int_equal(jget(t, "rate"), 7);
	json_decref(t);
}

/*
 * A full ring refuses samples (the flusher fell behind): their weight goes to the thread's next sample, so
 * that the weights still add up to the accesses of every phase, and END counts them.  Before, they were
 * dropped: the phases whose samples met a full ring weighed less.
 */
static void test_ring_carry(void **state)
{
	reset(1);
	memset(region, 1, (size_t)PAGES * (size_t)nkp.page_size); /* no first touches */
	size_t n = words(), acc = 0;
	uint64_t wsum = 0;
	refuse_ring = 100;
	for (size_t i = 2; i < n; i++) {
		__sanitizer_cov_load8(&region[i]);
		acc++;
	}
	nkp_trace_stop();
	assert_int_equal(refuse_ring, 0);
	assert_int_equal(n_got, acc - 100);
	for (size_t i = 0; i < n_got; i++)
		wsum += got[i].weight;
	assert_int_equal(wsum, acc);
	assert_int_equal(got[0].weight, 101); /* the 100 refused, then the first that got through */
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "ring_carried"), 100);
	json_decref(t);
}

/*
 * The budget (src/profile/budget.h) makes the period grow: a countdown drawn before a change keeps its
 * period as its sample's weight, later ones have the new one, and the weights still add up to the accesses.
 */
static void test_stages(void **state)
{
	stage = 0;
	reset(4);
	size_t n = words(), rounds = 16, acc[2] = { 0, 0 };
	uint64_t wsum[2] = { 0, 0 };
	size_t split = 0;
	memset(region, 1, (size_t)PAGES * (size_t)nkp.page_size); /* no first touches: samples in access order */
	for (size_t r = 0; r < rounds; r++) {
		if (r == rounds / 4) {
			stage = 3; /* period 32 from the next countdown on */
			split = n_got;
		}
		for (size_t i = 2; i < n; i++) {
			__sanitizer_cov_load8(&region[i]);
			acc[r >= rounds / 4]++;
		}
	}
	nkp_trace_stop();
	for (size_t i = 0; i < n_got; i++) {
		uint32_t w = got[i].weight;
		if (i < split)
			assert_int_equal(w, 4);
		else if (i == split)
			assert_true(w == 4 || w == 32); /* the countdown drawn before the change */
		else
			assert_int_equal(w, 32);
		wsum[i >= split] += w;
	}
	/* each part's weights estimate its accesses (the countdown across the change counts in the first) */
	for (int k = 0; k < 2; k++)
		assert_true(wsum[k] > 0.9 * (double)acc[k] && wsum[k] < 1.1 * (double)acc[k]);
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "rate"), 4);
	assert_int_equal(jget(t, "period"), 32);
	assert_int_equal(jget(t, "doublings"), 3);
	json_decref(t);
	stage = 0;
}

static void test_paused(void **state)
{
	reset(1);
	atomic_store(&nkp.sampling, 0);
	for (size_t i = 2; i < 100; i++)
		__sanitizer_cov_load8(&region[i]);
	assert_int_equal(n_got, 0);
	atomic_store(&nkp.sampling, 1);
	__sanitizer_cov_load8(&region[5]);
	nkp_trace_stop();
	assert_int_equal(n_got, 1);
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "loads"), 99);
	json_decref(t);
}

/* Cached nodes and tracked spans: no query per access; nkp_trace_moved forgets. */
static void test_caches(void **state)
{
	reset(1);
	for (size_t i = 0; i < words(); i++)
		region[i] = 1; /* populated, not by us */
	span_calls = 0;
	for (int r = 0; r < 100; r++)
		__sanitizer_cov_load8(&region[600]);
	json_t *t = end_json(4096);
	uint64_t q = jget(t, "node_queries");
	json_decref(t);
	assert_int_equal(q, 1);
	assert_int_equal(span_calls, 1);
	nkp_trace_moved((uintptr_t)&region[600], 8);
	__sanitizer_cov_load8(&region[600]);
	__sanitizer_cov_load8(&region[601]);
	t = end_json(4096);
	assert_int_equal(jget(t, "node_queries"), 2);
	json_decref(t);
	gen++; /* the tracked set changed: asked again */
	__sanitizer_cov_load8(&region[600]);
	assert_int_equal(span_calls, 2);
	nkp_trace_stop();
	assert_int_equal(n_got, 103);
	for (size_t i = 0; i < n_got; i++)
		assert_int_equal(got[i].flags, 0);
}

/* A read of a never-written page maps the zero page: no node, no first touch, no query per access. */
static void test_zero_page(void **state)
{
	reset(1);
	volatile uint64_t v = 0;
	for (int r = 0; r < 50; r++) {
		__sanitizer_cov_load8(&region[1000]);
		v += region[1000];
	}
	json_t *t = end_json(4096);
	uint64_t q = jget(t, "node_queries");
	json_decref(t);
	assert_true(q <= 3);
	nkp_trace_stop();
	assert_int_equal(n_got, 50);
	for (size_t i = 0; i < n_got; i++) {
		assert_int_equal(got[i].page_node, -1);
		assert_int_equal(got[i].flags, 0);
	}
}

static void on_usr1(int sig)
{
	for (int i = 0; i < 5; i++)
		__sanitizer_cov_load8(&region[100 + i]); /* instrumented handler code */
}

/* A signal handler of the program that runs while we record: its accesses are counted, not recorded. */
static void test_reentrant(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old;

	reset(1);
	region[50] = 1;
	sigaction(SIGUSR1, &sa, &old);
	raise_in_emit = 1;
	__sanitizer_cov_load8(&region[50]);
	__sanitizer_cov_load8(&region[51]);
	sigaction(SIGUSR1, &old, NULL);
	nkp_trace_stop();
	assert_int_equal(n_got, 2);
	assert_int_equal(got[0].addr, (uintptr_t)&region[50]);
	assert_int_equal(got[1].addr, (uintptr_t)&region[51]);
	json_t *t = end_json(4096);
	assert_int_equal(jget(t, "loads"), 7);
	assert_int_equal(jget(t, "recorded"), 2);
	json_decref(t);
}

#define NTHREADS 300
static void *one_load(void *arg)
{
	__sanitizer_cov_load4(arg);
	return NULL;
}

/* Threads get their own counters; END's list is cut to fit the buffer and stays JSON. */
static void test_threads_end(void **state)
{
	static pthread_t th[NTHREADS];
	uint32_t x = 0;
	char small[255];

	reset(1);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, one_load, &x), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	json_t *t = end_json(64 * 1024);
	assert_int_equal(jget(t, "loads"), NTHREADS);
	assert_int_equal(jget(t, "threads_listed"), NTHREADS + 1); /* and the main thread */
	json_decref(t);
	t = end_json(2048);
	uint64_t listed = jget(t, "threads_listed");
	assert_true(listed > 5 && listed < NTHREADS);
	assert_int_equal(json_array_size(json_object_get(t, "threads")), listed);
	assert_int_equal(jget(t, "loads"), NTHREADS); /* the totals count every thread */
	json_decref(t);
	assert_int_equal(nkp_trace_end_json(small, sizeof small), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inactive),
		cmocka_unit_test(test_every_access),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_ring_carry),
		cmocka_unit_test(test_stages),
		cmocka_unit_test(test_paused),
		cmocka_unit_test(test_caches),
		cmocka_unit_test(test_zero_page),
		cmocka_unit_test(test_reentrant),
		cmocka_unit_test(test_threads_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
