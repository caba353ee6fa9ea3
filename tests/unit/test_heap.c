/* SPDX-License-Identifier: BSD-3-Clause
 * Heaps placed by a policy (numakit/heap.h, src/heap/heap.c): every function, its refusals (NULL, zero
 * sizes, foreign pointers, sizes no heap can hold), realloc keeping contents bit for bit, threads
 * allocating and freeing each other's objects (run under TSan by scripts/test.sh), statistics, and the
 * placement of every page of the objects checked with nk_where against the policy's plan over the heap's
 * range (on one node: every page on node 0; the multi-node check is tests/guest/heap_place.c in the
 * guests).  Links the heap library's object (numakit_heap_internal); a numakit built without jemalloc has
 * no heap library, and tests/CMakeLists.txt registers unit.heap as a test that says so and skips.
 */
#include "testutil.h"
#include "heap/heap.h"
#include "numakit/heap.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static nk_machine *machine;
static int have_heaps;

static nk_policy *policy(const char *text)
{
	nk_policy *p = NULL;
	nk_error err = { 0, "" };
	if (nk_policy_parse(text, &p, &err))
		fail_msg("%s: %s", text, err.message);
	return p;
}

static nk_heap *heap_of(const char *text, unsigned flags)
{
	nk_heap *h = NULL;
	nk_error err = { 0, "" };
	nk_policy *p = policy(text);
	int rc = nk_heap_create(machine, p, flags, &h, &err);
	nk_policy_free(p);
	if (rc)
		fail_msg("nk_heap_create(%s): %s", text, err.message);
	return h;
}

static int setup(void **state)
{
	nk_error err = { 0, "" };
	nk_heap *h = NULL;
	nk_policy *p = NULL;

	if (nk_machine_load_live(&machine, &err))
		return -1;
	if (nk_policy_parse("bind", &p, &err))
		return -1;
	int rc = nk_heap_create(machine, p, 0, &h, &err);
	nk_policy_free(p);
	if (rc) {
		fprintf(stderr, "test_heap: nk_heap_create: %s\n", err.message);
		return -1;
	}
	nk_heap_destroy(h);
	have_heaps = 1;
	return 0;
}

static int teardown(void **state)
{
	nk_machine_free(machine);
	return 0;
}

#define NEED_HEAPS()                                                                                             \
	do {                                                                                                     \
		if (!have_heaps)                                                                                 \
			skip();                                                                                  \
	} while (0)

static void test_create_errors(void **state)
{
	NEED_HEAPS();
	nk_heap *h = (nk_heap *)0x1;
	nk_error err = { 0, "" };
	nk_policy *p = policy("bind");

	assert_int_equal(nk_heap_create(NULL, p, 0, &h, &err), NK_EINVAL);
	assert_int_equal(nk_heap_create(machine, NULL, 0, &h, &err), NK_EINVAL);
	assert_int_equal(nk_heap_create(machine, p, 0, NULL, &err), NK_EINVAL);
	assert_int_equal(nk_heap_create(machine, p, 0x80, &h, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "flags"));
	assert_ptr_equal(h, (nk_heap *)0x1);
	nk_policy_free(p);
	/* kinds whose map needs the region's length, or that name no node */
	static const char *const refused[] = { "block", "block_exclusive", "next_touch" };
	for (size_t i = 0; i < 3; i++) {
		p = policy(refused[i]);
		err.message[0] = 0;
		assert_int_equal(nk_heap_create(machine, p, 0, &h, &err), NK_EINVAL);
		assert_non_null(strstr(err.message, "heap"));
		assert_ptr_equal(h, (nk_heap *)0x1);
		nk_policy_free(p);
	}
	/* a node the machine lacks */
	p = policy("bind:nodes=1000");
	assert_true(nk_heap_create(machine, p, 0, &h, &err) < 0);
	assert_ptr_equal(h, (nk_heap *)0x1);
	nk_policy_free(p);
	nk_heap_destroy(NULL);
}

static void test_object_errors(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("bind", 0), *other = heap_of("cyclic", 0);
	void *p = (void *)0x1234, *q = NULL;
	size_t n = 7;
	int local = 0;
	char *foreign = malloc(64);

	assert_non_null(foreign);
	assert_int_equal(nk_heap_alloc(NULL, 8, &p), NK_EINVAL);
	assert_int_equal(nk_heap_alloc(h, 8, NULL), NK_EINVAL);
	assert_int_equal(nk_heap_alloc(h, 0, &p), NK_EINVAL);
	assert_int_equal(nk_heap_alloc(h, SIZE_MAX, &p), NK_ENOMEM);
	assert_int_equal(nk_heap_alloc(h, (size_t)1 << 46, &p), NK_ENOMEM);
	assert_int_equal(nk_heap_calloc(h, 0, 8, &p), NK_EINVAL);
	assert_int_equal(nk_heap_calloc(h, 8, 0, &p), NK_EINVAL);
	assert_int_equal(nk_heap_calloc(h, SIZE_MAX / 2, 4, &p), NK_ENOMEM);
	assert_int_equal(nk_heap_aligned_alloc(h, 0, 8, &p), NK_EINVAL);
	assert_int_equal(nk_heap_aligned_alloc(h, 48, 8, &p), NK_EINVAL);
	assert_int_equal(nk_heap_aligned_alloc(h, 64, 0, &p), NK_EINVAL);
	assert_int_equal(nk_heap_aligned_alloc(h, (size_t)1 << 62, 8, &p), NK_ENOMEM);
	assert_ptr_equal(p, (void *)0x1234);

	assert_int_equal(nk_heap_alloc(h, 100, &q), 0);
	/* foreign pointers: refused, nothing happens (the object of another heap stays usable) */
	assert_int_equal(nk_heap_free(h, foreign), NK_EINVAL);
	assert_int_equal(nk_heap_free(h, &local), NK_EINVAL);
	assert_int_equal(nk_heap_free(other, q), NK_EINVAL);
	assert_int_equal(nk_heap_free(NULL, q), NK_EINVAL);
	assert_int_equal(nk_heap_usable_size(h, foreign, &n), NK_EINVAL);
	assert_int_equal(nk_heap_usable_size(other, q, &n), NK_EINVAL);
	assert_int_equal(nk_heap_usable_size(h, NULL, &n), NK_EINVAL);
	assert_int_equal(nk_heap_usable_size(h, q, NULL), NK_EINVAL);
	assert_int_equal(n, 7);
	p = (void *)0x1234;
	assert_int_equal(nk_heap_realloc(h, foreign, 10, &p), NK_EINVAL);
	assert_int_equal(nk_heap_realloc(other, q, 10, &p), NK_EINVAL);
	assert_int_equal(nk_heap_realloc(h, q, 0, &p), NK_EINVAL);
	assert_int_equal(nk_heap_realloc(h, q, 10, NULL), NK_EINVAL);
	assert_int_equal(nk_heap_realloc(h, q, SIZE_MAX, &p), NK_ENOMEM);
	assert_ptr_equal(p, (void *)0x1234);
	assert_ptr_equal(nk_heap_from(q), h);
	assert_ptr_equal(nk_heap_from((char *)q + 50), h);
	assert_null(nk_heap_from(foreign));
	assert_null(nk_heap_from(&local));
	assert_null(nk_heap_from(NULL));
	assert_int_equal(nk_heap_owns(h, q), 1);
	assert_int_equal(nk_heap_owns(other, q), 0);
	assert_int_equal(nk_heap_owns(h, foreign), 0);
	assert_int_equal(nk_heap_owns(h, NULL), 0);
	assert_int_equal(nk_heap_owns(NULL, q), NK_EINVAL);
	assert_int_equal(nk_heap_region(NULL, NULL, NULL), NK_EINVAL);
	assert_int_equal(nk_heap_stats_get(NULL, NULL), NK_EINVAL);
	assert_int_equal(nk_heap_stats_get(h, NULL), NK_EINVAL);
	assert_int_equal(nk_heap_free(h, NULL), 0);
	memset(q, 0x5a, 100); /* still ours after all the refusals */
	assert_int_equal(nk_heap_free(h, q), 0);
	free(foreign);
	nk_heap_destroy(other);
	nk_heap_destroy(h);
}

static void test_alloc_free(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("bind", 0);
	enum { N = 2000 };
	static void *objs[N];
	static size_t sizes[N];
	nk_heap_stats st;
	void *lo = NULL;
	size_t len = 0, u, usable = 0;

	assert_int_equal(nk_heap_region(h, &lo, &len), 0);
	assert_true(len >= ((size_t)1 << 30));
	assert_int_equal((uintptr_t)lo % (size_t)sysconf(_SC_PAGESIZE), 0);
	for (size_t i = 0; i < N; i++) {
		sizes[i] = i % 7 == 6 ? 4096 * (1 + i % 16) : 16 + (i * 37) % 1000; /* small and medium */
		assert_int_equal(nk_heap_alloc(h, sizes[i], &objs[i]), 0);
		assert_int_equal(nk_heap_owns(h, objs[i]), 1);
		assert_true((char *)objs[i] >= (char *)lo && (char *)objs[i] + sizes[i] <= (char *)lo + len);
		assert_int_equal((uintptr_t)objs[i] % 8, 0);
		assert_int_equal(nk_heap_usable_size(h, objs[i], &u), 0);
		assert_true(u >= sizes[i]);
		usable += u;
		memset(objs[i], (int)(i & 0xff), sizes[i]);
	}
	assert_int_equal(nk_heap_stats_get(h, &st), 0);
	assert_int_equal(st.objects, N);
	assert_int_equal(st.allocs, N);
	assert_int_equal(st.frees, 0);
	assert_true(st.usable >= usable); /* and the thread's cached free objects */
	assert_true(st.usable <= usable + (8u << 20));
	assert_int_equal(st.usable_total, usable);
	assert_true(st.requested_total <= usable);
	assert_true(st.reserved == len);
	assert_true(st.mapped >= st.committed);
	assert_true(st.resident >= st.usable / 2); /* every object was written */
	assert_true(st.fragmentation >= 0.0 && st.fragmentation < 1.0);
	uint64_t sum = 0;
	for (size_t k = 0; k < st.nnodes; k++)
		sum += st.node_bytes[k];
	assert_int_equal(sum, st.resident);
	for (size_t i = 0; i < N; i++) {
		const unsigned char *c = objs[i];
		assert_int_equal(c[0], i & 0xff);
		assert_int_equal(c[sizes[i] - 1], i & 0xff);
		assert_int_equal(nk_heap_free(h, objs[i]), 0);
	}
	assert_int_equal(nk_heap_stats_get(h, &st), 0);
	assert_int_equal(st.objects, 0);
	assert_true(st.usable < usable); /* what the thread's cache holds */
	assert_int_equal(st.frees, N);
	nk_heap_destroy(h);
}

/* Every size up to 4 KiB: the usable size counted at allocation (inline size classes) is the object's. */
static void test_usable_counts(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("bind", 0);
	nk_heap_stats a, b;
	void *p = NULL;
	size_t u;

	for (size_t n = 1; n <= 5000; n++) {
		assert_int_equal(nk_heap_stats_get(h, &a), 0);
		assert_int_equal(nk_heap_alloc(h, n, &p), 0);
		assert_int_equal(nk_heap_stats_get(h, &b), 0);
		assert_int_equal(nk_heap_usable_size(h, p, &u), 0);
		if (b.usable_total - a.usable_total != u)
			fail_msg("size %zu: counted %llu usable bytes, the object has %zu", n,
				 (unsigned long long)(b.usable_total - a.usable_total), u);
		assert_int_equal(b.requested_total - a.requested_total, n);
		assert_int_equal(nk_heap_free(h, p), 0);
		n += n > 600 ? 7 : 0; /* every size up to 600, then a sample */
	}
	nk_heap_destroy(h);
}

static void test_calloc_aligned(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("cyclic", 0);
	void *p = NULL;
	/* dirty memory first, so that calloc must clear what it reuses */
	for (int i = 0; i < 64; i++) {
		assert_int_equal(nk_heap_alloc(h, 4096, &p), 0);
		memset(p, 0xff, 4096);
		assert_int_equal(nk_heap_free(h, p), 0);
	}
	for (int i = 0; i < 64; i++) {
		assert_int_equal(nk_heap_calloc(h, 512, 8, &p), 0);
		const unsigned char *c = p;
		for (size_t k = 0; k < 4096; k++)
			if (c[k])
				fail_msg("calloc: byte %zu is %d", k, c[k]);
		assert_int_equal(nk_heap_free(h, p), 0);
	}
	for (size_t a = 1; a <= ((size_t)1 << 21); a <<= 1) {
		assert_int_equal(nk_heap_aligned_alloc(h, a, 24, &p), 0);
		assert_int_equal((uintptr_t)p % a, 0);
		memset(p, 1, 24);
		assert_int_equal(nk_heap_free(h, p), 0);
	}
	nk_heap_destroy(h);
}

static void test_realloc_contents(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("bind", 0);
	static const size_t steps[] = { 1, 17, 256, 4000, 70000, 3 << 20, 100, 9000, 5 };
	unsigned char *p = NULL, *q;
	size_t have = 0;
	uint32_t x = 12345;

	/* NULL: an allocation */
	assert_int_equal(nk_heap_realloc(h, NULL, steps[0], (void **)&p), 0);
	p[0] = 0xa5;
	have = 1;
	for (size_t s = 1; s < sizeof steps / sizeof steps[0]; s++) {
		size_t n = steps[s], keep = n < have ? n : have;
		unsigned char *want = malloc(keep);
		assert_non_null(want);
		memcpy(want, p, keep);
		assert_int_equal(nk_heap_realloc(h, p, n, (void **)&q), 0);
		assert_memory_equal(q, want, keep);
		free(want);
		for (size_t k = 0; k < n; k++) { /* new contents for the next step */
			x = x * 1103515245u + 12345u;
			q[k] = (unsigned char)(x >> 16);
		}
		p = q;
		have = n;
	}
	nk_heap_stats st;
	assert_int_equal(nk_heap_stats_get(h, &st), 0);
	assert_int_equal(st.objects, 1);
	assert_int_equal(nk_heap_free(h, p), 0);
	nk_heap_destroy(h);
}

/*
 * A full heap: under an address-space limit the heap reserves less (an eighth of the limit: 1 GiB under
 * 12 GiB), and allocations past its capacity fail with NK_ENOMEM, the heap staying usable.  In a child
 * process (the limit is the process's); not under the sanitizers, whose shadow memory needs the address space.
 */
static void test_full(void **state)
{
	NEED_HEAPS();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	skip();
#endif
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 12ull << 30, .rlim_max = RLIM_INFINITY };
		nk_policy *p = NULL;
		nk_heap *h = NULL;
		void *a = NULL, *b = NULL, *c = NULL;
		size_t len = 0;
		if (setrlimit(RLIMIT_AS, &rl) || nk_policy_parse("bind", &p, NULL) ||
		    nk_heap_create(machine, p, 0, &h, NULL))
			_exit(10);
		if (nk_heap_region(h, NULL, &len) || len != (1u << 30))
			_exit(11);
		if (nk_heap_alloc(h, 700u << 20, &a)) /* untouched: costs address space only */
			_exit(12);
		if (nk_heap_alloc(h, 700u << 20, &b) != NK_ENOMEM || b)
			_exit(13);
		if (nk_heap_alloc(h, 100, &c) || nk_heap_free(h, c)) /* still usable */
			_exit(14);
		if (nk_heap_free(h, a) || nk_heap_alloc(h, 700u << 20, &b) || nk_heap_free(h, b))
			_exit(15); /* the space came back */
		nk_heap_destroy(h);
		nk_policy_free(p);
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st))
		fail_msg("the full-heap child failed at step %d", WEXITSTATUS(st));
}

/* ---------------------------------------------------------------- threads */

enum { THREADS = 4, PER_THREAD = 20000, HANDOFF = 512 };

struct worker {
	nk_heap *h;
	int id;
	void *handoff[HANDOFF]; /* objects this thread leaves for another one to free */
	int failed;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	void *live[64] = { 0 };

	for (int i = 0; i < PER_THREAD; i++) {
		int slot = i % 64;
		if (live[slot]) {
			if (((unsigned char *)live[slot])[0] != (unsigned char)w->id || nk_heap_free(w->h, live[slot]))
				w->failed = 1;
			live[slot] = NULL;
		}
		size_t n = 16 + (size_t)((i * 131 + w->id * 7) % 2000);
		if (nk_heap_alloc(w->h, n, &live[slot])) {
			w->failed = 1;
			break;
		}
		memset(live[slot], w->id, n);
	}
	for (int s = 0; s < 64; s++)
		if (live[s] && nk_heap_free(w->h, live[s]))
			w->failed = 1;
	for (int i = 0; i < HANDOFF; i++)
		if (nk_heap_alloc(w->h, 64 + (size_t)i, &w->handoff[i]))
			w->failed = 1;
		else
			memset(w->handoff[i], w->id, 64);
	return NULL;
}

/* Frees what another worker left: objects allocated by one thread, freed by another. */
static void *freer_main(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < HANDOFF; i++) {
		if (((unsigned char *)w->handoff[i])[63] != (unsigned char)w->id || nk_heap_free(w->h, w->handoff[i]))
			w->failed = 1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	NEED_HEAPS();
	nk_heap *h = heap_of("cyclic", 0);
	static struct worker w[THREADS];
	pthread_t t[THREADS];
	nk_heap_stats st;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .h = h, .id = i + 1 };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(nk_heap_stats_get(h, &st), 0);
	assert_int_equal(st.objects, THREADS * HANDOFF);
	/* each worker's objects freed by a thread that did not allocate them */
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, freer_main, &w[(i + 1) % THREADS]), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < THREADS; i++)
		assert_false(w[i].failed);
	assert_int_equal(nk_heap_stats_get(h, &st), 0);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.allocs, (uint64_t)THREADS * (PER_THREAD + HANDOFF));
	nk_heap_destroy(h);
}

/* Many heaps at once (more than a thread's table of caches), made and destroyed again and again. */
static void test_many_heaps(void **state)
{
	NEED_HEAPS();
	enum { H = 12 };
	nk_heap *hs[H];
	void *p[H];

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < H; i++)
			hs[i] = heap_of(i % 2 ? "cyclic" : "bind", 0);
		for (int k = 0; k < 200; k++)
			for (int i = 0; i < H; i++) {
				assert_int_equal(nk_heap_alloc(hs[i], 32 + (size_t)k, &p[i]), 0);
				memset(p[i], i, 32);
				for (int j = 0; j < H; j++)
					assert_int_equal(nk_heap_owns(hs[j], p[i]), i == j);
				assert_ptr_equal(nk_heap_from(p[i]), hs[i]);
				assert_int_equal(nk_heap_free(hs[i], p[i]), 0);
			}
		for (int i = 0; i < H; i++) {
			nk_heap_stats st;
			assert_int_equal(nk_heap_stats_get(hs[i], &st), 0);
			assert_int_equal(st.objects, 0);
			assert_int_equal(st.allocs, 200);
			nk_heap_destroy(hs[i]);
		}
	}
}

/* ---------------------------------------------------------------- placement */

/*
 * Every page of the objects is where the policy's plan over the heap's range says (a bind over several
 * nodes: on one of them).  Returns the pages checked.
 */
static size_t check_placement(nk_heap *h, const char *text, void **objs, const size_t *sizes, size_t n)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), checked = 0;
	nk_region r = { 0 };
	nk_plan *pl = NULL;
	nk_policy *p = policy(text);
	nk_error err = { 0, "" };

	assert_int_equal(nk_heap_region(h, &r.addr, &r.len), 0);
	if (nk_plan_build(machine, p, &r, &pl, &err))
		fail_msg("%s: %s", text, err.message);
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)objs[i] / ps * ps, end = (uintptr_t)objs[i] + sizes[i];
		for (; a < end; a += ps, checked++) {
			int node = -2, want = nk_plan_node(pl, (a - (uintptr_t)r.addr) / ps);
			assert_int_equal(nk_where(machine, (void *)a, ps, &node, NULL), 0);
			if (node != want && !(nk_policy_kind(p) == NK_POLICY_BIND && node >= 0))
				fail_msg("%s: page %#lx of object %zu on node %d, the plan says %d", text, (unsigned long)a,
					 i, node, want);
		}
	}
	nk_plan_free(pl);
	nk_policy_free(p);
	return checked;
}

static void test_placement(void **state)
{
	NEED_HEAPS();
	/* kernel mode (one mbind at creation) and runs mode (placed at each commit) */
	static const char *const texts[] = { "bind",      "bind:nodes=0",         "cyclic",       "cyclic:nodes=0",
					     "cyclic_block:block=16K", "block_cyclic:block=24K", "skew_mapp", "random:seed=3" };
	enum { N = 300 };
	static void *objs[N];
	static size_t sizes[N];

	for (size_t c = 0; c < 4 * sizeof texts / sizeof texts[0]; c++) {
		size_t t = c / 4;
		unsigned flags = c % 2 ? NK_HEAP_STRICT : 0;
		{
			nk__heap_test_runs = (c / 2) % 2; /* the runs path too, which a one-node host never takes */
			nk_heap *h = heap_of(texts[t], flags);
			nk__heap_test_runs = 0;
			for (size_t i = 0; i < N; i++) {
				sizes[i] = i % 3 ? 16 + (i * 53) % 256 : 4096 * (1 + i % 16); /* 16-256 B, 4-64 KiB */
				assert_int_equal(nk_heap_alloc(h, sizes[i], &objs[i]), 0);
				memset(objs[i], 0x3c, sizes[i]); /* first touch */
			}
			size_t pages = check_placement(h, texts[t], objs, sizes, N);
			assert_true(pages > N);
			nk_heap_stats st;
			assert_int_equal(nk_heap_stats_get(h, &st), 0);
			assert_int_equal(st.unplaced, 0);
			assert_true(st.resident > 0);
			if (nk_machine_num_nodes(machine) == 1) /* this host: everything on its one node */
				assert_int_equal(st.node_bytes[0], st.resident);
			for (size_t i = 0; i < N; i++)
				assert_int_equal(nk_heap_free(h, objs[i]), 0);
			nk_heap_destroy(h);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_object_errors),    cmocka_unit_test(test_alloc_free),
		cmocka_unit_test(test_usable_counts),    cmocka_unit_test(test_calloc_aligned),
		cmocka_unit_test(test_realloc_contents), cmocka_unit_test(test_full),
		cmocka_unit_test(test_threads),          cmocka_unit_test(test_many_heaps),
		cmocka_unit_test(test_placement),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
