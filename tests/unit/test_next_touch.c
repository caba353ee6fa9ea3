/* SPDX-License-Identifier: BSD-3-Clause
 * Next-touch runtime (src/memory/next_touch.c) on the live kernel.
 *
 * On a one-node host the mechanics are all there (faults, registry, chaining,
 * threads racing on pages); every page lands on node 0.  The same binary runs
 * in the NUMA guests (tests/vm/tests/next_touch) with --require-nodes N: the
 * threads then sit on N nodes and every page must follow its toucher.
 *
 * Signal-handler scenarios run in a fresh copy of this program
 * (/proc/self/exe --child NAME): the handler, once installed, stays for the
 * life of a process, so "a handler installed before numakit's" needs a
 * process where numakit has not armed anything yet.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memory/next_touch.h"
#include "os/os.h"

static nk_machine *machine;
static int require_nodes; /* --require-nodes N: the quarters test must see N toucher nodes */
static long ps;

/* ------------------------------------------------------------- helpers */

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	/* Page-exact next-touch: a THP would move as one 2 MiB folio. */
	madvise(p, n * ps, MADV_NOHUGEPAGE);
	return p;
}

static uint32_t pattern(size_t i)
{
	return (uint32_t)(i * 2654435761u) ^ 0x5bd1e995u;
}

/* 1 when the kernel cannot read the page: a system call gets EFAULT (armed). */
static int is_armed(const void *p)
{
	int fds[2], armed;
	char c;
	assert_int_equal(pipe(fds), 0);
	ssize_t w = write(fds[1], p, 1);
	armed = w < 0 && errno == EFAULT;
	if (w == 1)
		assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	close(fds[1]);
	return armed;
}

static void page_nodes(const char *p, size_t n, int *nodes)
{
	void **pages = malloc(n * sizeof *pages);
	assert_non_null(pages);
	for (size_t i = 0; i < n; i++)
		pages[i] = (void *)(p + i * ps);
	assert_int_equal(nk__os_move_pages(n, pages, NULL, nodes, 0, NULL), 0);
	free(pages);
}

static nk_next_touch_counts counts(void)
{
	nk_next_touch_counts c;
	assert_int_equal(nk_next_touch_stats(&c), 0);
	return c;
}

/* The node a thread pinned to @p cpu runs on, as getcpu says after pinning. */
static int pin(int cpu)
{
	int node = -1;
	assert_int_equal(nk__os_set_affinity(0, &cpu, 1, NULL), 0);
	assert_int_equal(nk__os_getcpu(NULL, &node, NULL), 0);
	return node;
}

/* ------------------------------------------------ child-process scenarios */

static sigjmp_buf child_jmp;
static volatile sig_atomic_t child_faults, child_sent;
static struct sigaction child_saved; /* the handler a late handler replaced */

static void h_longjmp(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code <= 0) {
		child_sent++;
		return;
	}
	child_faults++;
	siglongjmp(child_jmp, 1);
}

/* A well-behaved handler installed after arming: numakit first, then its own. */
static void h_late(int sig, siginfo_t *si, void *uc)
{
	if (nk_next_touch_handle_fault(sig, si, uc))
		return;
	child_faults++;
	siglongjmp(child_jmp, 1);
}

/* A handler that passes everything to the one it replaced (numakit's). */
static void h_passback(int sig, siginfo_t *si, void *uc)
{
	child_faults++;
	child_saved.sa_sigaction(sig, si, uc);
}

static void install(void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, old))
		_exit(90);
}

/* Touch the foreign page; 1 when the program's handler jumped back. */
static int foreign_fault(volatile char *f)
{
	if (sigsetjmp(child_jmp, 1))
		return 1;
	f[0] = 1;
	return 0;
}

#define CHECK(cond, code)                  \
	do {                               \
		if (!(cond))               \
			_exit(code);       \
	} while (0)

static int child(const char *name)
{
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core); /* some scenarios end in SIGSEGV on purpose */
	alarm(30);                       /* a loop would otherwise hang the test */
	ps = sysconf(_SC_PAGESIZE);
	char *a = mmap(NULL, 8 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *f = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(a != MAP_FAILED && f != MAP_FAILED, 91);
	for (int i = 0; i < 8 * ps; i++)
		a[i] = (char)(i * 7);

	if (!strcmp(name, "before")) {
		install(h_longjmp, NULL);
		CHECK(nk_next_touch_arm(NULL, a, 8 * ps, NULL) == 0, 1);
		CHECK(foreign_fault(f) && child_faults == 1, 2);
		for (int i = 0; i < 8 * ps; i++)
			CHECK(a[i] == (char)(i * 7), 3);
		CHECK(child_faults == 1, 4);
		CHECK(foreign_fault(f) && child_faults == 2, 5);
		/* After an unregistration a miss is retried once, then passed on. */
		CHECK(nk_next_touch_arm(NULL, a, 8 * ps, NULL) == 0, 6);
		CHECK(nk_next_touch_disarm(a, ps) == 0, 7);
		CHECK(foreign_fault(f) && child_faults == 3, 8);
		raise(SIGSEGV); /* a sent signal, not a fault: to the program's handler, once */
		CHECK(child_sent == 1 && child_faults == 3, 9);
		for (int i = 0; i < 8 * ps; i++)
			CHECK(a[i] == (char)(i * 7), 10);
		nk_next_touch_counts c;
		CHECK(nk_next_touch_stats(&c) == 0 && c.foreign_faults >= 4, 11);
		return 0;
	}
	if (!strcmp(name, "after")) {
		CHECK(nk_next_touch_arm(NULL, a, 4 * ps, NULL) == 0, 1);
		install(h_late, &child_saved);
		for (int i = 0; i < 4 * ps; i++) /* through h_late -> nk_next_touch_handle_fault */
			CHECK(a[i] == (char)(i * 7), 2);
		CHECK(foreign_fault(f) && child_faults == 1, 3);
		/* Arming again puts numakit's handler back on top, h_late behind it. */
		CHECK(nk_next_touch_arm(NULL, a + 4 * ps, 4 * ps, NULL) == 0, 4);
		struct sigaction cur;
		sigaction(SIGSEGV, NULL, &cur);
		CHECK(cur.sa_sigaction != h_late, 5);
		CHECK(foreign_fault(f) && child_faults == 2, 6);
		for (int i = 4 * ps; i < 8 * ps; i++)
			CHECK(a[i] == (char)(i * 7), 7);
		CHECK(child_faults == 2, 8);
		return 0;
	}
	if (!strcmp(name, "passback")) {
		/* numakit -> h_passback -> numakit again: must end, with SIGSEGV. */
		CHECK(nk_next_touch_arm(NULL, a, 4 * ps, NULL) == 0, 1);
		install(h_passback, &child_saved);
		CHECK(nk_next_touch_arm(NULL, a + 4 * ps, 4 * ps, NULL) == 0, 2);
		f[0] = 1;
		return 3; /* not reached */
	}
	if (!strcmp(name, "default")) {
		CHECK(nk_next_touch_arm(NULL, a, 8 * ps, NULL) == 0, 1);
		CHECK(a[5] == 5 * 7, 2);
		f[0] = 1; /* no handler of the program's: dies as without numakit */
		return 3;
	}
	if (!strcmp(name, "ignored")) {
		signal(SIGSEGV, SIG_IGN);
		CHECK(nk_next_touch_arm(NULL, a, 8 * ps, NULL) == 0, 1);
		CHECK(a[5] == 5 * 7, 2);
		f[0] = 1; /* an ignored synchronous SIGSEGV still kills */
		return 3;
	}
	return 99;
}

/* Run a scenario in a fresh process; its wait status. */
static int run_child(const char *name)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_next_touch", "--child", name, (char *)NULL);
		_exit(92);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NK_SANITIZED 1
#else
#define NK_SANITIZED 0
#endif

/*
 * The child ended the way an unhandled SIGSEGV ends.  Under a sanitizer that
 * is its deadly-signal report and exit (the sanitizer keeps its own handler
 * in the kernel and treats our SIG_DFL as "report and die").
 */
static void assert_died_of_segv(int st)
{
	if (NK_SANITIZED && WIFEXITED(st) && WEXITSTATUS(st) != 0)
		return;
	if (WIFEXITED(st))
		fail_msg("child exited with %d instead of dying of SIGSEGV", WEXITSTATUS(st));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV); /* SIGALRM would mean endless recursion or a loop */
}

static void test_chain_before(void **state)
{
	int st = run_child("before");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_chain_after(void **state)
{
	int st = run_child("after");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_chain_passback_ends(void **state)
{
	assert_died_of_segv(run_child("passback"));
}

static void test_chain_default_and_ignored(void **state)
{
	assert_died_of_segv(run_child("default"));
	assert_died_of_segv(run_child("ignored"));
}

/* ------------------------------------------------------------ in process */

static void test_bad_arguments(void **state)
{
	char *p = map_pages(2);
	nk_error err;
	size_t before = counts().regions;
	assert_int_equal(nk_next_touch_arm(machine, NULL, 10, &err), NK_EINVAL);
	assert_int_equal(err.code, NK_EINVAL);
	assert_int_equal(nk_next_touch_arm(machine, p, 0, NULL), NK_EINVAL);
	assert_int_equal(nk_next_touch_arm(machine, (void *)(UINTPTR_MAX - 10), 100, NULL), NK_EINVAL);
	assert_int_equal(nk_next_touch_prepare(NULL, 1), NK_EINVAL);
	assert_int_equal(nk_next_touch_prepare(NULL, 0), 0);
	assert_int_equal(nk_next_touch_prepare((void *)(UINTPTR_MAX - 10), 100), NK_EINVAL);
	assert_int_equal(nk_next_touch_disarm(NULL, 4), NK_EINVAL);
	assert_int_equal(nk_next_touch_stats(NULL), NK_EINVAL);
	/* Not mapped: refused, nothing registered, the mapped part untouched. */
	munmap(p + ps, ps);
	assert_int_equal(nk_next_touch_arm(machine, p, 2 * ps, &err), NK_ENOMEM);
	assert_non_null(strstr(err.message, "mapped"));
	assert_int_equal(counts().regions, before);
	assert_false(is_armed(p));
	p[0] = 1;
	munmap(p, ps);
}

static void test_single_thread(void **state)
{
	const size_t n = 64;
	uint32_t *a = (uint32_t *)map_pages(n);
	size_t words = n * ps / sizeof *a;
	for (size_t i = 0; i < words; i++)
		a[i] = pattern(i);
	nk_next_touch_counts c0 = counts();
	assert_int_equal(nk_next_touch_arm(machine, a, n * ps, NULL), 0);
	assert_int_equal(counts().regions, c0.regions + 1);
	for (size_t i = 0; i < n; i++)
		assert_true(is_armed((char *)a + i * ps));
	/* Touch every page once, reading: the contents are the ones written. */
	for (size_t i = 0; i < words; i++)
		assert_int_equal(a[i], pattern(i));
	nk_next_touch_counts c1 = counts();
	assert_int_equal(c1.faults - c0.faults, n);
	assert_int_equal((c1.pages_moved + c1.pages_local) - (c0.pages_moved + c0.pages_local), n);
	assert_int_equal(c1.move_failures, c0.move_failures);
	int node = -1, nodes[64];
	assert_int_equal(nk__os_getcpu(NULL, &node, NULL), 0);
	page_nodes((char *)a, n, nodes);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(nodes[i], nk__next_touch_target(node));
	/* Never-written pages: nothing to move, first write places them. */
	char *u = map_pages(8);
	assert_int_equal(nk_next_touch_arm(machine, u, 8 * ps, NULL), 0);
	u[3 * ps] = 42;
	assert_int_equal(counts().pages_unbacked, c1.pages_unbacked + 1);
	assert_int_equal(u[3 * ps], 42);
	assert_int_equal(nk_next_touch_disarm(u, 8 * ps), 0);
	assert_int_equal(nk_next_touch_disarm(a, n * ps), 0);
	assert_int_equal(counts().regions, c0.regions);
	munmap(u, 8 * ps);
	munmap(a, n * ps);
}

struct quarter {
	uint32_t *a;
	size_t first, count; /* words */
	int cpu, node;
	pthread_barrier_t *go;
};

static void *quarter_main(void *arg)
{
	struct quarter *q = arg;
	q->node = pin(q->cpu);
	pthread_barrier_wait(q->go);
	/* The first access of each page is this thread's: read-check, then write. */
	for (size_t i = q->first; i < q->first + q->count; i++) {
		if (q->a[i] != pattern(i))
			return (void *)1;
		q->a[i] = pattern(i) + 1;
	}
	return NULL;
}

/* Threads pinned round robin over the allowed cpus touch one part each. */
static void test_threads_parts(void **state)
{
	nk__ilist cpus = { 0 };
	assert_int_equal(nk__os_affinity(&cpus), 0);
	size_t nt = cpus.n > 4 ? cpus.n : 4, per = 16; /* pages per thread */
	size_t n = nt * per, wpp = ps / sizeof(uint32_t);
	uint32_t *a = (uint32_t *)map_pages(n);
	for (size_t i = 0; i < n * wpp; i++)
		a[i] = pattern(i);
	int *before = calloc(n, sizeof *before), *after = calloc(n, sizeof *after);
	struct quarter *q = calloc(nt, sizeof *q);
	pthread_t *th = calloc(nt, sizeof *th);
	pthread_barrier_t go;
	assert_true(before && after && q && th);
	page_nodes((char *)a, n, before);
	pthread_barrier_init(&go, NULL, (unsigned)nt);
	nk_next_touch_counts c0 = counts();
	assert_int_equal(nk_next_touch_arm(machine, a, n * ps, NULL), 0);
	for (size_t t = 0; t < nt; t++) {
		q[t] = (struct quarter){ a, t * per * wpp, per * wpp, cpus.v[t % cpus.n], -1, &go };
		assert_int_equal(pthread_create(&th[t], NULL, quarter_main, &q[t]), 0);
	}
	for (size_t t = 0; t < nt; t++) {
		void *r;
		pthread_join(th[t], &r);
		assert_null(r);
	}
	nk_next_touch_counts c1 = counts();
	page_nodes((char *)a, n, after);
	size_t expect_moves = 0;
	int seen[NK__NT_MAX_NODE] = { 0 }, distinct = 0;
	for (size_t t = 0; t < nt; t++) {
		int want = nk__next_touch_target(q[t].node);
		if (q[t].node >= 0 && q[t].node < NK__NT_MAX_NODE && !seen[q[t].node]++)
			distinct++;
		print_message("  thread %zu: cpu %d, node %d -> pages to node %d (first page was on %d)\n", t, q[t].cpu,
			      q[t].node, want, before[t * per]);
		for (size_t p = t * per; p < (t + 1) * per; p++) {
			if (after[p] != want)
				fail_msg("page %zu of thread %zu (cpu %d, node %d): on node %d, expected %d", p, t,
					 q[t].cpu, q[t].node, after[p], want);
			expect_moves += before[p] != want;
		}
	}
	for (size_t i = 0; i < n * wpp; i++)
		assert_int_equal(a[i], pattern(i) + 1);
	assert_int_equal(c1.faults - c0.faults, n);
	assert_int_equal(c1.pages_moved - c0.pages_moved, expect_moves);
	assert_int_equal(c1.move_failures - c0.move_failures, 0);
	print_message("next-touch: %zu threads on %d node(s), %zu pages, %zu moved\n", nt, distinct, n,
		      expect_moves);
	if (require_nodes)
		assert_true(distinct >= require_nodes);
	assert_int_equal(nk_next_touch_disarm(a, n * ps), 0);
	pthread_barrier_destroy(&go);
	munmap(a, n * ps);
	free(before);
	free(after);
	free(q);
	free(th);
	nk__ilist_free(&cpus);
}

/* Many threads incrementing their own counter on the same few pages while
 * the main thread re-arms them over and over: no increment may be lost. */
#define RACE_THREADS 8
#define RACE_PAGES 4
#define RACE_ROUNDS 2000

struct racer {
	_Atomic uint64_t *pages; /* RACE_PAGES pages of counters */
	int id, cpu;
	atomic_int *stop;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	size_t per_page = ps / sizeof(uint64_t);
	pin(r->cpu);
	for (int round = 0; round < RACE_ROUNDS; round++)
		for (int p = 0; p < RACE_PAGES; p++)
			atomic_fetch_add_explicit(&r->pages[p * per_page + (size_t)r->id], 1, memory_order_relaxed);
	return NULL;
}

static void test_same_page_race(void **state)
{
	nk__ilist cpus = { 0 };
	assert_int_equal(nk__os_affinity(&cpus), 0);
	_Atomic uint64_t *pages = (_Atomic uint64_t *)map_pages(RACE_PAGES);
	memset((void *)pages, 0, RACE_PAGES * ps);
	struct racer r[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	nk_next_touch_counts c0 = counts();
	assert_int_equal(nk_next_touch_arm(machine, (void *)pages, RACE_PAGES * ps, NULL), 0);
	for (int t = 0; t < RACE_THREADS; t++) {
		r[t] = (struct racer){ pages, t, cpus.v[(size_t)t % cpus.n], NULL };
		assert_int_equal(pthread_create(&th[t], NULL, racer_main, &r[t]), 0);
	}
	for (int k = 0; k < 200; k++) {
		assert_int_equal(nk_next_touch_arm(machine, (void *)pages, RACE_PAGES * ps, NULL), 0);
		usleep(100);
	}
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_join(th[t], NULL);
	size_t per_page = ps / sizeof(uint64_t);
	for (int p = 0; p < RACE_PAGES; p++)
		for (int t = 0; t < RACE_THREADS; t++)
			assert_int_equal(atomic_load(&pages[p * per_page + (size_t)t]), RACE_ROUNDS);
	nk_next_touch_counts c1 = counts();
	assert_true(c1.faults > c0.faults);
	assert_int_equal(c1.regions, c0.regions + 1); /* re-arming reuses the region */
	assert_int_equal(nk_next_touch_disarm((void *)pages, RACE_PAGES * ps), 0);
	munmap((void *)pages, RACE_PAGES * ps);
	nk__ilist_free(&cpus);
}

static void test_registry(void **state)
{
	char *p = map_pages(12);
	size_t base = counts().regions;
	memset(p, 7, 12 * ps);
	/* Abutting and overlapping arms merge. */
	assert_int_equal(nk_next_touch_arm(machine, p, 4 * ps, NULL), 0);
	assert_int_equal(nk_next_touch_arm(machine, p + 4 * ps, 4 * ps, NULL), 0);
	assert_int_equal(counts().regions, base + 1);
	assert_int_equal(nk_next_touch_arm(machine, p + 2 * ps, 4 * ps, NULL), 0);
	assert_int_equal(counts().regions, base + 1);
	assert_int_equal(nk_next_touch_arm(machine, p + 10 * ps, 2 * ps, NULL), 0);
	assert_int_equal(counts().regions, base + 2);
	uintptr_t s, e;
	assert_true(nk__next_touch_lookup(p + 5 * ps, &s, &e));
	assert_true(s == (uintptr_t)p && e == (uintptr_t)(p + 8 * ps));
	assert_false(nk__next_touch_lookup(p + 9 * ps, &s, &e));
	/* An unaligned range arms every page it touches. */
	assert_int_equal(nk_next_touch_arm(machine, p + 8 * ps + 100, 10, NULL), 0);
	assert_int_equal(counts().regions, base + 2); /* [0,9) and [10,12): page 9 is not armed */
	assert_true(is_armed(p + 8 * ps));
	assert_false(is_armed(p + 9 * ps));

	/* prepare: the caller touches, the registry stays. */
	assert_int_equal(nk_next_touch_prepare(p + ps + 1, ps), 0);
	assert_false(is_armed(p + ps));
	assert_false(is_armed(p + 2 * ps));
	assert_true(is_armed(p + 3 * ps));
	assert_int_equal(counts().regions, base + 2);
	/* disarm splits. */
	assert_int_equal(nk_next_touch_disarm(p + 4 * ps, 2 * ps), 0);
	assert_int_equal(counts().regions, base + 3);
	assert_false(is_armed(p + 4 * ps));
	assert_false(is_armed(p + 5 * ps));
	assert_true(is_armed(p + 6 * ps));
	assert_false(nk__next_touch_lookup(p + 5 * ps, &s, &e));
	assert_true(nk__next_touch_lookup(p + 6 * ps, &s, &e));
	assert_int_equal(nk_next_touch_disarm(p, 12 * ps), 0);
	assert_int_equal(counts().regions, base);
	for (int i = 0; i < 12 * ps; i++)
		assert_int_equal(p[i], 7);
	munmap(p, 12 * ps);
}

static void test_registry_full(void **state)
{
	/* Regions of two pages with a gap of two: they never merge. */
	const size_t n = 4 * (NK_NEXT_TOUCH_MAX_REGIONS + 1);
	char *p = map_pages(n);
	size_t base = counts().regions, ok = 0;
	nk_error err;
	int rc = 0;
	memset(p, 3, n * ps);
	for (size_t i = 0; i < n; i += 4) {
		rc = nk_next_touch_arm(machine, p + i * ps, 2 * ps, &err);
		if (rc)
			break;
		ok++;
	}
	assert_int_equal(rc, NK_ENOMEM);
	assert_non_null(strstr(err.message, "registry is full"));
	assert_int_equal(ok, NK_NEXT_TOUCH_MAX_REGIONS - base);
	assert_int_equal(counts().regions, NK_NEXT_TOUCH_MAX_REGIONS);
	/* Re-arming inside a region needs no slot. */
	assert_int_equal(nk_next_touch_arm(machine, p + ps, ps, NULL), 0);
	/* Merging needs a slot for the union before its parts are freed. */
	assert_int_equal(nk_next_touch_arm(machine, p + ps, 4 * ps, NULL), NK_ENOMEM);
	assert_false(is_armed(p + 2 * ps));
	/* Trimming a region needs one too: refused, nothing changed. */
	assert_int_equal(nk_next_touch_disarm(p + ps, 1), NK_ENOMEM);
	assert_true(is_armed(p + ps));
	assert_int_equal(counts().regions, NK_NEXT_TOUCH_MAX_REGIONS);
	/* Whole regions free their slots. */
	assert_int_equal(nk_next_touch_disarm(p, n * ps), 0);
	assert_int_equal(counts().regions, base);
	for (size_t i = 0; i < n * ps; i++)
		assert_int_equal(p[i], 3);
	munmap(p, n * ps);
}

static char *alt_area;

static void *alt_main(void *arg)
{
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0 };
	stack_t old;
	if (!ss.ss_sp || sigaltstack(&ss, &old))
		return (void *)1;
	for (int i = 0; i < 4 * ps; i++)
		if (alt_area[i] != 9)
			return (void *)2;
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	free(ss.ss_sp);
	return NULL;
}

/* A thread with an alternate signal stack: the handler runs there (SA_ONSTACK). */
static void test_altstack_thread(void **state)
{
	alt_area = map_pages(4);
	memset(alt_area, 9, 4 * ps);
	assert_int_equal(nk_next_touch_arm(machine, alt_area, 4 * ps, NULL), 0);
	pthread_t th;
	void *r;
	assert_int_equal(pthread_create(&th, NULL, alt_main, NULL), 0);
	pthread_join(th, &r);
	assert_null(r);
	assert_int_equal(nk_next_touch_disarm(alt_area, 4 * ps), 0);
	munmap(alt_area, 4 * ps);
}

static int setup(void **state)
{
	if (nk_machine_load_live(&machine, NULL))
		machine = NULL; /* arm works without: pages go to the toucher's own node */
	return 0;
}

static int teardown(void **state)
{
	nk_machine_free(machine);
	return 0;
}

int main(int argc, char **argv)
{
	ps = sysconf(_SC_PAGESIZE);
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--require-nodes"))
		require_nodes = atoi(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_before),
		cmocka_unit_test(test_chain_after),
		cmocka_unit_test(test_chain_passback_ends),
		cmocka_unit_test(test_chain_default_and_ignored),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_threads_parts),
		cmocka_unit_test(test_same_page_race),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_registry_full),
		cmocka_unit_test(test_altstack_thread),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
