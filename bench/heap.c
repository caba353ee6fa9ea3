/* SPDX-License-Identifier: BSD-3-Clause
 * heap_bench: the heaps of numakit/heap.h against the alternatives, as ratios measured in one run.
 *
 *   heap_bench [ROUNDS]     (default 20; built as BUILD/bench/heap_bench, run by bench/heap.sh)
 *
 * Two workloads, each a round of N allocations of cycling sizes, the first byte of every page written, then
 * N frees in allocation order; ns per allocation+free pair (the thread's cpu time: the figures hold on a
 * shared machine, where wall time measures the other jobs), the best of the rounds, and page faults per
 * pair over all rounds (a heap that gives its pages back pays them again at the next round):
 *   small   16-256 B (N = 20000)       medium  4-64 KiB (N = 2000)
 * and the medium one again without writing ("untouched": the allocator's own cost, without the page faults
 * that returned pages cost again, which vary with jemalloc's decay from run to run).
 * Allocators:
 *   glibc          malloc/free (checked to be libc's: jemalloc is linked after libc here);
 *   je-arena       jemalloc used directly: mallocx/dallocx on an arena of its own (arenas.create, default
 *                  hooks) with MALLOCX_TCACHE_NONE, the usual way to use an arena (every call takes its
 *                  bin's lock);
 *   je-arena+tc    the same arena with an explicit thread cache (tcache.create, MALLOCX_TCACHE): the
 *                  fastest jemalloc can serve an arena, and what an nk_heap does underneath;
 *   nk_heap        nk_heap_alloc/nk_heap_free, heap bound to the first node ("bind:nodes=N");
 *   nk_heap-cyc    an nk_heap interleaved over every node with memory ("cyclic");
 *   numa_onnode    libnuma's numa_alloc_onnode/numa_free (an mmap and an mbind per allocation).
 * The nk_heap uses a private jemalloc inside libnumakit_heap, the je-* rows the system's libjemalloc.so.2: the
 * same version (Debian 5.3), two copies.  Ratios are to je-arena+tc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#include <numa.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "numakit.h"
#include "numakit/heap.h"

enum { A_GLIBC, A_JE, A_JETC, A_NK, A_NKCYC, A_NUMA, A_COUNT };
static const char *const names[A_COUNT] = { "glibc", "je-arena", "je-arena+tc", "nk_heap", "nk_heap-cyc", "numa_onnode" };

static unsigned je_arena, je_tc;
static nk_heap *heap_bind, *heap_cyc;
static int first_node;
static size_t page;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *do_alloc(int a, size_t n)
{
	void *p = NULL;
	switch (a) {
	case A_GLIBC:
		return malloc(n);
	case A_JE:
		return mallocx(n, (int)MALLOCX_ARENA(je_arena) | MALLOCX_TCACHE_NONE);
	case A_JETC:
		return mallocx(n, (int)MALLOCX_ARENA(je_arena) | (int)MALLOCX_TCACHE(je_tc));
	case A_NK:
		return nk_heap_alloc(heap_bind, n, &p) ? NULL : p;
	case A_NKCYC:
		return nk_heap_alloc(heap_cyc, n, &p) ? NULL : p;
	default:
		return numa_alloc_onnode(n, first_node);
	}
}

static void do_free(int a, void *p, size_t n)
{
	switch (a) {
	case A_GLIBC:
		free(p);
		break;
	case A_JE:
		dallocx(p, MALLOCX_TCACHE_NONE);
		break;
	case A_JETC:
		dallocx(p, (int)MALLOCX_TCACHE(je_tc));
		break;
	case A_NK:
		nk_heap_free(heap_bind, p);
		break;
	case A_NKCYC:
		nk_heap_free(heap_cyc, p);
		break;
	default:
		numa_free(p, n);
	}
}

static long faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/*
 * ns per allocation+free pair: the best of @p rounds rounds of @p n objects of sizes lo..hi (step); page
 * faults per pair over all rounds into *pf.
 */
static double run(int a, size_t n, size_t lo, size_t hi, size_t step, int rounds, void **objs, size_t *sizes,
		  double *pf, int touch)
{
	double best = 1e30;
	long f0 = faults();
	for (size_t i = 0; i < n; i++)
		sizes[i] = lo + (i * step) % (hi - lo + 1);
	for (int r = 0; r < rounds; r++) {
		double t0 = now();
		for (size_t i = 0; i < n; i++) {
			char *p = do_alloc(a, sizes[i]);
			if (!p) {
				fprintf(stderr, "heap_bench: %s: allocation of %zu bytes failed\n", names[a], sizes[i]);
				exit(1);
			}
			for (size_t k = 0; touch && k < sizes[i]; k += page)
				p[k] = (char)i;
			objs[i] = p;
		}
		for (size_t i = 0; i < n; i++)
			do_free(a, objs[i], sizes[i]);
		double ns = (now() - t0) / (double)n;
		if (ns < best)
			best = ns;
	}
	*pf = (double)(faults() - f0) / ((double)n * rounds);
	return best;
}

static nk_heap *make_heap(nk_machine *m, const char *text)
{
	nk_policy *p = NULL;
	nk_heap *h = NULL;
	nk_error err = { 0, "" };
	if (nk_policy_parse(text, &p, &err) || nk_heap_create(m, p, 0, &h, &err)) {
		fprintf(stderr, "heap_bench: %s: %s\n", text, err.message);
		exit(err.code == NK_ENOSYS ? 77 : 1);
	}
	nk_policy_free(p);
	return h;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	char text[64];
	Dl_info di;

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (rounds < 1)
		rounds = 1;
	if (numa_available() < 0) {
		fprintf(stderr, "heap_bench: libnuma: no NUMA support here\n");
		return 77;
	}
	if (nk_machine_load_live(&m, &err)) {
		fprintf(stderr, "heap_bench: %s\n", err.message);
		return 1;
	}
	first_node = nk_machine_node_id(m, 0);
	snprintf(text, sizeof text, "bind:nodes=%d", first_node);
	heap_bind = make_heap(m, text);
	heap_cyc = make_heap(m, "cyclic");
	size_t sz = sizeof je_arena;
	if (mallctl("arenas.create", &je_arena, &sz, NULL, 0) || mallctl("tcache.create", &je_tc, &sz, NULL, 0)) {
		fprintf(stderr, "heap_bench: jemalloc: cannot create an arena and a cache\n");
		return 1;
	}
	if (dladdr((void *)malloc, &di) && di.dli_fname && strstr(di.dli_fname, "jemalloc")) {
		fprintf(stderr, "heap_bench: malloc is jemalloc's (%s), the glibc row would not be glibc\n", di.dli_fname);
		return 1;
	}

	enum { NSMALL = 20000, NMED = 2000 };
	void **objs = malloc(NSMALL * sizeof *objs);
	size_t *sizes = malloc(NSMALL * sizeof *sizes);
	if (!objs || !sizes)
		return 1;
	printf("heap_bench: %d node(s), best of %d rounds, ns per allocation+free (first byte of each page written)\n",
	       nk_machine_num_nodes(m), rounds);
	printf("%-12s %10s %7s %7s %10s %7s %7s %10s %7s\n", "allocator", "small ns", "ratio", "faults", "medium ns",
	       "ratio", "faults", "untouched", "ratio");
	double small[A_COUNT], med[A_COUNT], fs[A_COUNT], fm[A_COUNT], mu[A_COUNT], fu;
	for (int a = 0; a < A_COUNT; a++) {
		/* numa_alloc_onnode costs microseconds: fewer objects, the same per-pair figure */
		size_t ns = a == A_NUMA ? NSMALL / 10 : NSMALL, nm = a == A_NUMA ? NMED / 4 : NMED;
		int r = a == A_NUMA ? (rounds + 4) / 5 : rounds;
		small[a] = run(a, ns, 16, 256, 16, r, objs, sizes, &fs[a], 1);
		med[a] = run(a, nm, 4096, 65536, 4096, r, objs, sizes, &fm[a], 1);
		mu[a] = run(a, nm, 4096, 65536, 4096, r, objs, sizes, &fu, 0);
	}
	for (int a = 0; a < A_COUNT; a++)
		printf("%-12s %10.1f %7.2f %7.3f %10.1f %7.2f %7.2f %10.1f %7.2f\n", names[a], small[a],
		       small[a] / small[A_JETC], fs[a], med[a], med[a] / med[A_JETC], fm[a], mu[a], mu[a] / mu[A_JETC]);
	printf("nk_heap / je-arena+tc: small %.2fx, medium %.2fx, untouched %.2fx; nk_heap / je-arena: small %.2fx, "
	       "medium %.2fx; numa_alloc_onnode / nk_heap: small %.0fx, medium %.0fx\n",
	       small[A_NK] / small[A_JETC], med[A_NK] / med[A_JETC], mu[A_NK] / mu[A_JETC], small[A_NK] / small[A_JE],
	       med[A_NK] / med[A_JE], small[A_NUMA] / small[A_NK], med[A_NUMA] / med[A_NK]);
	nk_heap_destroy(heap_cyc);
	nk_heap_destroy(heap_bind);
	nk_machine_free(m);
	free(objs);
	free(sizes);
	return 0;
}
