/* SPDX-License-Identifier: BSD-3-Clause
 * A program of small blocks for the plan runtime's arena test (check_plan.py, scenario blocks): four
 * threads allocate 20000 blocks of mixed sizes (16 B to 2 KiB, a few of three pages) at four sites
 * (malloc, calloc, aligned_alloc, posix_memalign: one key each), fill each with a pattern; the main thread
 * checks every block bit for bit, frees half, reallocs a quarter (grow and shrink), checks again; a fork
 * child runs one more worker (same call stacks, so the same keys; its blocks go to ADDRFILE too), reallocs
 * and frees, frees blocks it inherited; a fifth site the plan leaves alone allocates 1000 blocks that glibc must serve (mallinfo2
 * counts them).  Before the threads, the main thread allocates 2048 blocks at a sixth site (a plan's
 * first-parallel entry moves them).  Everything printed is the same with and without a plan.
 *
 *   plan_blocks [ADDRFILE]   ADDRFILE: "site ADDR" per planned block, "plain ADDR" per unplanned one
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define PER_THREAD 5000
#define CHILD_BLOCKS 2000
#define PLAIN 1000
#define EARLY 2048

enum { S_MALLOC, S_CALLOC, S_ALIGNED, S_MEMALIGN, NSITES };

struct blk {
	unsigned char *p;
	size_t n;
	uint32_t seed;
};

struct worker {
	int t;
	size_t count;
	struct blk *b;
	size_t per_site[NSITES];
	int errors;
};

/* The allocation sites the plan names: not inlined, each called from one place, so each is one key. */
__attribute__((noinline)) static void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *site_calloc(size_t a, size_t b)
{
	void *p = calloc(a, b);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *site_aligned(size_t al, size_t n)
{
	void *p = aligned_alloc(al, n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *site_memalign(size_t al, size_t n)
{
	void *p = NULL;
	int rc = posix_memalign(&p, al, n);
	__asm__ volatile("" ::: "memory");
	return rc ? NULL : p;
}

__attribute__((noinline)) static void *site_early(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

/* Not in the plan. */
__attribute__((noinline)) static void *plain_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static unsigned char pattern(uint32_t seed, size_t i)
{
	return (unsigned char)((seed * 2654435761u + (uint32_t)i * 40503u) >> 13);
}

static void fill(struct blk *b, size_t from)
{
	for (size_t i = from; i < b->n; i++)
		b->p[i] = pattern(b->seed, i);
}

static int check(const struct blk *b, size_t upto)
{
	for (size_t i = 0; i < upto && i < b->n; i++)
		if (b->p[i] != pattern(b->seed, i))
			return 1;
	return 0;
}

static int aligned(const void *p, size_t al)
{
	return ((uintptr_t)p & (al - 1)) == 0;
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	uint32_t s = 0x9e3779b9u * (uint32_t)(w->t + 1);
	for (size_t i = 0; i < w->count; i++) {
		struct blk *b = &w->b[i];
		uint32_t r = rnd(&s);
		size_t n = i % 997 == 5 ? 3 * 4096 + 17 : 16 + r % 2033; /* a few blocks of more than a page */
		int site = i % 7 == 3 ? S_CALLOC : i % 11 == 4 ? S_ALIGNED : i % 13 == 6 ? S_MEMALIGN : S_MALLOC;
		b->n = n;
		b->seed = r;
		switch (site) {
		case S_CALLOC:
			b->p = site_calloc(1, n);
			if (b->p)
				for (size_t k = 0; k < n; k++)
					w->errors += b->p[k] != 0;
			break;
		case S_ALIGNED:
			b->n = n = (n + 63) & ~(size_t)63; /* C11: a multiple of the alignment */
			b->p = site_aligned(64, n);
			w->errors += b->p && !aligned(b->p, 64);
			break;
		case S_MEMALIGN:
			b->p = site_memalign(256, n);
			w->errors += b->p && !aligned(b->p, 256);
			break;
		default:
			b->p = site_malloc(n);
		}
		if (!b->p) {
			w->errors++;
			b->n = 0;
			continue;
		}
		w->per_site[site]++;
		fill(b, 0);
	}
	return NULL;
}

static int run_workers(struct worker *w, int n)
{
	pthread_t th[THREADS];
	for (int t = 0; t < n; t++)
		if (pthread_create(&th[t], NULL, worker, &w[t]))
			return -1;
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	return 0;
}

/* Free the odd blocks, realloc every fourth (grow, shrink), check everything left; returns the errors. */
static int churn(struct blk *b, size_t count, size_t *reallocs)
{
	int errors = 0;
	for (size_t i = 0; i < count; i++) {
		if (!b[i].p)
			continue;
		errors += check(&b[i], b[i].n);
		if (malloc_usable_size(b[i].p) < b[i].n)
			errors++;
		if (i % 2) {
			free(b[i].p);
			b[i].p = NULL;
		} else if (i % 4 == 0) {
			size_t n = i % 8 ? b[i].n / 2 + 1 : 2 * b[i].n + 100, keep = n < b[i].n ? n : b[i].n;
			unsigned char *q = realloc(b[i].p, n);
			if (!q) {
				errors++;
				continue;
			}
			b[i].p = q;
			errors += check(&b[i], keep);
			b[i].n = n;
			fill(&b[i], keep);
			(*reallocs)++;
		}
	}
	for (size_t i = 0; i < count; i++)
		if (b[i].p)
			errors += check(&b[i], b[i].n);
	return errors;
}

static int child(struct worker *parent, const char *addrfile)
{
	struct worker w = { .t = THREADS, .count = CHILD_BLOCKS };
	size_t reallocs = 0;
	w.b = calloc(CHILD_BLOCKS, sizeof *w.b);
	if (!w.b || run_workers(&w, 1))
		return 1;
	FILE *addrs = addrfile ? fopen(addrfile, "a") : NULL; /* the parent writes no more to it */
	for (size_t i = 0; addrs && i < CHILD_BLOCKS; i++)
		if (w.b[i].p)
			fprintf(addrs, "site %p\n", (void *)w.b[i].p);
	if (addrs)
		fclose(addrs);
	int errors = w.errors + churn(w.b, CHILD_BLOCKS, &reallocs);
	for (size_t i = 0; i < CHILD_BLOCKS; i++)
		free(w.b[i].p);
	/* blocks the parent allocated: still there, and freeable here */
	for (size_t i = 0; i < parent->count; i += 2)
		if (parent->b[i].p) {
			errors += check(&parent->b[i], parent->b[i].n);
			free(parent->b[i].p);
		}
	free(w.b);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	FILE *addrs = argc > 1 ? fopen(argv[1], "w") : NULL;
	struct worker w[THREADS];
	size_t per_site[NSITES] = { 0 }, reallocs = 0, total = 0;
	int errors = 0;

	if (argc > 1 && !addrs) {
		perror(argv[1]);
		return 2;
	}
	struct blk early[EARLY];
	for (size_t i = 0; i < EARLY; i++) {
		early[i] = (struct blk){ .n = 100 + i % 1000, .seed = (uint32_t)i * 7919u + 1 };
		early[i].p = site_early(early[i].n);
		if (!early[i].p)
			return 2;
		fill(&early[i], 0);
		if (addrs)
			fprintf(addrs, "site %p\n", (void *)early[i].p);
	}
	for (int t = 0; t < THREADS; t++) {
		w[t] = (struct worker){ .t = t, .count = PER_THREAD };
		w[t].b = calloc(PER_THREAD, sizeof *w[t].b);
		if (!w[t].b)
			return 2;
	}
	if (run_workers(w, THREADS)) {
		fprintf(stderr, "plan_blocks: cannot create threads\n");
		return 2;
	}
	for (int t = 0; t < THREADS; t++) {
		errors += w[t].errors;
		for (int s = 0; s < NSITES; s++)
			per_site[s] += w[t].per_site[s];
		for (size_t i = 0; i < PER_THREAD; i++) {
			total += w[t].b[i].n;
			if (addrs && w[t].b[i].p)
				fprintf(addrs, "site %p\n", (void *)w[t].b[i].p);
		}
	}
	/* a few sweeps over every block: the profiler's sampler sees each site */
	unsigned long sum = 0;
	for (int sweep = 0; sweep < 3; sweep++) {
		for (size_t i = 0; i < EARLY; i++)
			for (size_t k = 0; k < early[i].n; k += 64)
				sum += early[i].p[k];
		for (int t = 0; t < THREADS; t++)
			for (size_t i = 0; i < PER_THREAD; i++)
				for (size_t k = 0; k < w[t].b[i].n; k += 64)
					sum += w[t].b[i].p[k];
	}

	/* the unplanned site: glibc's blocks (its own count grows by them) */
	void *plain[PLAIN];
	struct mallinfo2 before = mallinfo2();
	for (int i = 0; i < PLAIN; i++) {
		plain[i] = plain_malloc(200);
		if (!plain[i])
			return 2;
		memset(plain[i], i, 200);
	}
	struct mallinfo2 after = mallinfo2();
	int glibc = after.uordblks >= before.uordblks + (size_t)PLAIN * 200;
	for (int i = 0; i < PLAIN; i++) {
		if (addrs)
			fprintf(addrs, "plain %p\n", plain[i]);
	}

	for (int t = 0; t < THREADS; t++)
		errors += churn(w[t].b, PER_THREAD, &reallocs);

	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(child(&w[0], argc > 1 ? argv[1] : NULL));
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "plan_blocks: the fork child failed (status %#x)\n", status);
		errors++;
	}
	for (int t = 0; t < THREADS; t++) {
		for (size_t i = 0; i < PER_THREAD; i++)
			free(w[t].b[i].p);
		free(w[t].b);
	}
	for (int i = 0; i < PLAIN; i++)
		free(plain[i]);
	for (size_t i = 0; i < EARLY; i++) {
		errors += check(&early[i], early[i].n);
		free(early[i].p);
	}
	if (addrs)
		fclose(addrs);
	printf("sites malloc %zu calloc %zu aligned %zu memalign %zu early %d\n", per_site[S_MALLOC], per_site[S_CALLOC],
	       per_site[S_ALIGNED], per_site[S_MEMALIGN], EARLY);
	printf("bytes %zu reallocs %zu sum %lu\n", total, reallocs, sum);
	printf("unplanned blocks from glibc: %s\n", glibc ? "yes" : "no");
	printf("errors %d\n", errors);
	return errors != 0;
}
