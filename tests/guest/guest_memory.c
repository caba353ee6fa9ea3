/* SPDX-License-Identifier: BSD-3-Clause
 * Guest tests of nk_apply / nk_where (run inside NUMA guests by
 * tests/vm/tests/memory_*; usage: guest_memory MODE).
 *
 * Every placement is checked independently of numakit: page by page with a
 * raw move_pages(2) query, and per node against /proc/self/numa_maps.  Every
 * region is checksummed (or compared with a shadow copy) before and after.
 * Modes:
 *   policies     every policy on untouched and on touched memory, with the
 *                system calls each application made
 *   phases       one region re-placed through a sequence of policies
 *   lost         randomised policies, sub-ranges, flags, writes and
 *                MADV_DONTNEED over random data: zero differences allowed
 *   fallback     a region larger than a node's free memory bound there:
 *                fallback to its nearest neighbour reported, data intact;
 *                NK_APPLY_STRICT refuses up front and changes nothing
 *   hetero       memoryless and CPU-less nodes
 *   threads      threads applying to disjoint regions and to one region
 *   thp          transparent huge pages (run with thp=always)
 * Exit status 0 pass, 1 fail, 77 skip (not a multi-node machine).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "numakit.h"

static int failures;
static size_t ps;
static nk_machine *M;
static int mem_nodes[64], nmem;

#define CHECK(cond, ...)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			failures++;                                                   \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                   \
			printf(__VA_ARGS__);                                          \
			printf("\n");                                                 \
		}                                                                     \
	} while (0)

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* ---- independent checks ---- */

/* Node of every page of [p, p + n pages), -1 untouched, by raw move_pages. */
static void raw_where(const char *p, size_t n, int *out)
{
	void *pages[1024];
	for (size_t f = 0; f < n; f += 1024) {
		size_t k = n - f < 1024 ? n - f : 1024;
		for (size_t i = 0; i < k; i++)
			pages[i] = (void *)(p + (f + i) * ps);
		if (syscall(SYS_move_pages, 0, k, pages, NULL, out + f, 0) < 0)
			die("move_pages: %s", strerror(errno));
		for (size_t i = 0; i < k; i++)
			if (out[f + i] < 0)
				out[f + i] = -1;
	}
}

/* Pages per node of the VMAs starting inside [lo, hi), from /proc/self/numa_maps. */
static void numa_maps_counts(uintptr_t lo, uintptr_t hi, size_t *counts, int maxnode)
{
	FILE *f = fopen("/proc/self/numa_maps", "r");
	char line[4096];
	memset(counts, 0, (size_t)maxnode * sizeof *counts);
	if (!f)
		die("numa_maps: %s", strerror(errno));
	while (fgets(line, sizeof line, f)) {
		uintptr_t a = (uintptr_t)strtoull(line, NULL, 16);
		if (a < lo || a >= hi)
			continue;
		for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n")) {
			int node;
			unsigned long pages;
			if (sscanf(t, "N%d=%lu", &node, &pages) == 2 && node >= 0 && node < maxnode)
				counts[node] += pages;
		}
	}
	fclose(f);
}

/* A region with PROT_NONE guard pages around it, so its VMAs never merge with another's. */
struct region {
	char *guard;  /* the whole reservation */
	size_t total;
	char *p;
	size_t npages;
};

static struct region region_new(size_t npages, size_t align)
{
	struct region r = { 0 };
	size_t total = npages * ps + 2 * ps + align;
	r.guard = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r.total = total;
	if (r.guard == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	uintptr_t p = (uintptr_t)r.guard + ps;
	if (align)
		p = (p + align - 1) & ~(uintptr_t)(align - 1);
	r.p = (char *)p;
	r.npages = npages;
	if (mprotect(r.p, npages * ps, PROT_READ | PROT_WRITE))
		die("mprotect: %s", strerror(errno));
	return r;
}

static void region_free(struct region *r)
{
	munmap(r->guard, r->total);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill_random(char *p, size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = rnd();
		memcpy(p + i, &v, 8);
	}
}

static uint64_t checksum(const char *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	const uint64_t *q = (const uint64_t *)p;
	for (size_t i = 0; i < len / 8; i++)
		h = (h ^ q[i]) * 1099511628211ull;
	return h;
}

static nk_plan *plan_text(const char *text, void *addr, size_t len, size_t elem, size_t rows, size_t cols,
			  nk_error *e)
{
	nk_policy *pol = NULL;
	nk_plan *pl = NULL;
	if (nk_policy_parse(text, &pol, e))
		return NULL;
	nk_region r = { .addr = addr, .len = len };
	if (elem) {
		r.elem_size = elem;
		r.ndims = 2;
		r.dims[0] = rows;
		r.dims[1] = cols;
	}
	int rc = nk_plan_build(M, pol, &r, &pl, e);
	nk_policy_free(pol);
	return rc ? NULL : pl;
}

/*
 * Check that every page of the region is where the plan says (touched pages),
 * by move_pages and by numa_maps.  @p allow_untouched: untouched pages are fine.
 */
static void check_placed(const char *what, const struct region *r, const nk_plan *pl, int allow_untouched)
{
	size_t n = r->npages, bad = 0, first_bad = 0;
	int *nodes = malloc(n * sizeof *nodes), *want = malloc(n * sizeof *want);
	size_t exp[256] = { 0 }, got[256];
	raw_where(r->p, n, nodes);
	if (nk_plan_nodes(pl, 0, n, want))
		die("nk_plan_nodes");
	for (size_t i = 0; i < n; i++) {
		if (nodes[i] < 0 && allow_untouched)
			continue;
		if (nodes[i] >= 0 && nodes[i] < 256)
			exp[want[i]]++;
		if (nodes[i] != want[i] && !bad++)
			first_bad = i;
	}
	CHECK(!bad, "%s: %zu of %zu pages off target (first: page %zu on %d, planned %d)", what, bad, n, first_bad,
	      nodes[first_bad], want[first_bad]);
	/* numa_maps: per node counts of the region's VMAs */
	numa_maps_counts((uintptr_t)r->guard, (uintptr_t)r->p + n * ps + ps, got, 256);
	if (!bad)
		for (int k = 0; k < 256; k++)
			CHECK(got[k] == exp[k], "%s: numa_maps N%d=%zu, expected %zu", what, k, got[k], exp[k]);
	/* nk_where agrees with the raw query */
	int *w = malloc(n * sizeof *w);
	CHECK(nk_where(M, r->p, n * ps, w, NULL) == 0, "%s: nk_where", what);
	CHECK(!memcmp(w, nodes, n * sizeof *w), "%s: nk_where differs from move_pages", what);
	free(w);
	free(nodes);
	free(want);
}

static void result_sum(const char *what, const nk_apply_result *r)
{
	CHECK(r->pages == r->pages_untouched + r->pages_in_place + r->pages_moved + r->pages_fallback +
				  r->pages_failed,
	      "%s: result does not add up", what);
}

/* ---- modes ---- */

static int policy_list(char list[][96], void **geom)
{
	int n = 0;
	(void)geom;
	const char *fixed[] = { "bind", "block", "cyclic", "cyclic_block:block=64K", "cyclic_neighbors",
				"skew_mapp", "prime_mapp", "random:seed=42", "block_cyclic:block=1M",
				"block_exclusive", NULL };
	for (int i = 0; fixed[i]; i++)
		snprintf(list[n++], 96, "%s", fixed[i]);
	snprintf(list[n++], 96, "bind:nodes=%d", mem_nodes[nmem - 1]);
	if (nmem >= 2) {
		snprintf(list[n++], 96, "cyclic:nodes=%d,%d", mem_nodes[nmem - 1], mem_nodes[0]);
		snprintf(list[n++], 96, "weighted:weights=%d=3/%d=1", mem_nodes[0], mem_nodes[1]);
	}
	return n;
}

#define ROWS 512
#define COLS 1024 /* doubles: 8 KiB rows, 4 MiB, 1024 pages */

static void one_policy(const char text[96], int touched, int aligned)
{
	size_t len = (size_t)ROWS * COLS * 8, np = len / ps;
	struct region r = region_new(np, aligned ? 4 * ps * 64 : 0);
	if (!aligned) {
		/* start at page number 1 (mod 4): the kernel's interleave cannot express cyclic */
		if (((uintptr_t)r.p / ps) % 4 != 1) {
			region_free(&r);
			r = region_new(np + 8, 0);
			while (((uintptr_t)r.p / ps) % 4 != 1)
				r.p += ps;
			r.npages = np;
		}
	}
	int geo = !strncmp(text, "block_exclusive", 15);
	nk_error e;
	nk_plan *pl = plan_text(text, r.p, len, geo ? 8 : 0, ROWS, COLS, &e);
	char what[256];
	snprintf(what, sizeof what, "%.96s (%s, %s)", text, touched ? "touched" : "untouched",
		 aligned ? "aligned" : "start page = 1 mod 4");
	if (!pl) {
		CHECK(0, "%s: plan: %s", what, e.message);
		region_free(&r);
		return;
	}
	uint64_t sum = 0;
	if (touched) {
		fill_random(r.p, len);
		sum = checksum(r.p, len);
	}
	nk_apply_result res;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = nk_apply(M, pl, r.p, 0, &res, &e);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(rc == 0, "%s: nk_apply: %s", what, rc ? e.message : "");
	result_sum(what, &res);
	if (!touched) {
		CHECK(res.pages_untouched == np, "%s: %zu untouched of %zu", what, res.pages_untouched, np);
		fill_random(r.p, len); /* first touch */
		sum = checksum(r.p, len);
	} else {
		CHECK(res.pages_failed == 0 && res.pages_fallback == 0, "%s: %zu failed, %zu fallback", what,
		      res.pages_failed, res.pages_fallback);
	}
	check_placed(what, &r, pl, 0);
	CHECK(checksum(r.p, len) == sum, "%s: contents changed", what);
	printf("  %-44s %-9s %-6s syscalls %4zu  moved %5zu  in place %5zu  untouched %5zu  %.1f ms\n", text,
	       touched ? "touched" : "untouched", aligned ? "align" : "page1", res.syscalls, res.pages_moved,
	       res.pages_in_place, res.pages_untouched,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	nk_plan_free(pl);
	region_free(&r);
}

static void mode_policies(void)
{
	char list[32][96];
	int n = policy_list(list, NULL);
	printf("%zu-page regions (4 MiB), %d memory nodes\n", (size_t)ROWS * COLS * 8 / ps, nmem);
	for (int i = 0; i < n; i++)
		for (int touched = 0; touched < 2; touched++)
			for (int aligned = 1; aligned >= 0; aligned--)
				one_policy(list[i], touched, aligned);
}

static void mode_phases(void)
{
	char list[32][96];
	int n = policy_list(list, NULL);
	size_t len = (size_t)ROWS * COLS * 8, np = len / ps;
	struct region r = region_new(np, 0);
	fill_random(r.p, len);
	uint64_t sum = checksum(r.p, len);
	const int order[] = { 2, 1, 7, 10, 5, 0, 3, 6, 8, 9, 4, 2 };
	for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
		const char *text = list[order[s] % n];
		nk_error e;
		nk_plan *pl = plan_text(text, r.p, len, 8, ROWS, COLS, &e);
		if (!pl) {
			CHECK(0, "phase %s: %s", text, e.message);
			continue;
		}
		nk_apply_result res;
		int rc = nk_apply(M, pl, r.p, 0, &res, &e);
		CHECK(rc == 0, "phase %s: %s", text, rc ? e.message : "");
		char what[128];
		snprintf(what, sizeof what, "phase %zu %s", s, text);
		result_sum(what, &res);
		check_placed(what, &r, pl, 0);
		CHECK(checksum(r.p, len) == sum, "%s: contents changed", what);
		printf("  phase %2zu %-40s moved %5zu in place %5zu syscalls %zu\n", s, text, res.pages_moved,
		       res.pages_in_place, res.syscalls);
		nk_plan_free(pl);
	}
	region_free(&r);
}

static void mode_lost(int steps)
{
	char list[32][96];
	int n = policy_list(list, NULL);
	size_t np = 8192, len = np * ps; /* 32 MiB */
	struct region r = region_new(np, 0);
	char *shadow = malloc(len);
	memset(shadow, 0, len);
	size_t moved = 0, checked = 0;
	for (int s = 0; s < steps; s++) {
		/* writes: random pages get random data */
		for (int k = 0; k < 200; k++) {
			size_t pg = rnd() % np, off = rnd() % (ps - 64);
			uint64_t v = rnd();
			memcpy(r.p + pg * ps + off, &v, 8);
			memcpy(shadow + pg * ps + off, &v, 8);
		}
		/* now and then drop a stretch (it reads as zero again, untouched) */
		if (rnd() % 4 == 0) {
			size_t a = rnd() % np, b = a + rnd() % 256;
			if (b > np)
				b = np;
			madvise(r.p + a * ps, (b - a) * ps, MADV_DONTNEED);
			memset(shadow + a * ps, 0, (b - a) * ps);
		}
		/* a policy over a random sub-range with a random unaligned start */
		size_t off = rnd() % (len / 2), sub = 1 + rnd() % (len - off);
		const char *text = list[rnd() % (unsigned)n];
		if (!strncmp(text, "block_exclusive", 15))
			text = "cyclic";
		unsigned flags = rnd() % 5 == 0 ? NK_APPLY_NO_MOVE : 0;
		nk_error e;
		nk_plan *pl = plan_text(text, r.p + off, sub, 0, 0, 0, &e);
		if (!pl) {
			CHECK(0, "step %d %s: %s", s, text, e.message);
			continue;
		}
		nk_apply_result res;
		int rc = nk_apply(M, pl, r.p + off, flags, &res, &e);
		CHECK(rc == 0, "step %d %s: %s", s, text, rc ? e.message : "");
		moved += res.pages_moved;
		CHECK(!memcmp(r.p, shadow, len), "step %d %s: contents differ", s, text);
		if (!flags) {
			/* resident pages of the sub-range are on their targets */
			size_t first = ((uintptr_t)r.p + off) / ps - (uintptr_t)r.p / ps, cnt = nk_plan_num_pages(pl);
			int *nodes = malloc(cnt * sizeof *nodes);
			raw_where(r.p + first * ps, cnt, nodes);
			for (size_t i = 0; i < cnt; i++) {
				if (nodes[i] < 0)
					continue;
				checked++;
				if (nodes[i] != nk_plan_node(pl, i)) {
					CHECK(0, "step %d %s: page %zu on %d, planned %d", s, text, i, nodes[i],
					      nk_plan_node(pl, i));
					break;
				}
			}
			free(nodes);
		}
		nk_plan_free(pl);
	}
	CHECK(!memcmp(r.p, shadow, len), "final contents differ");
	printf("  %d steps over %zu pages: %zu pages moved, %zu resident pages checked, 0 bytes differ\n", steps,
	       np, moved, checked);
	free(shadow);
	region_free(&r);
}

/* The node with the least free memory, and a region larger than what it has free. */
static void mode_fallback(void)
{
	int target = -1;
	uint64_t tfree = UINT64_MAX, total = 0;
	for (int i = 0; i < nmem; i++) {
		uint64_t t, f;
		nk_machine_node_memory(M, mem_nodes[i], &t, &f);
		if (t < tfree) {
			tfree = t;
			target = mem_nodes[i];
		}
		total += t;
	}
	size_t len = (size_t)(tfree + (tfree / 2)), np;
	len &= ~(ps - 1);
	np = len / ps;
	int nbr[64];
	int nn = nk_machine_neighbors(M, target, nbr, 64);
	printf("  node %d (%" PRIu64 " MiB): region of %zu MiB bound there; neighbours:", target, tfree >> 20,
	       len >> 20);
	for (int i = 0; i < nn; i++)
		printf(" %d", nbr[i]);
	printf("\n");
	char text[64];
	snprintf(text, sizeof text, "bind:nodes=%d", target);

	/* STRICT on untouched memory: refused up front */
	struct region r = region_new(np, 0);
	nk_error e;
	nk_plan *pl = plan_text(text, r.p, len, 0, 0, 0, &e);
	if (!pl)
		die("plan: %s", e.message);
	nk_apply_result res;
	int rc = nk_apply(M, pl, r.p, NK_APPLY_STRICT, &res, &e);
	CHECK(rc == NK_ENOMEM, "strict, untouched: %d", rc);
	printf("  strict, untouched: %s\n", rc ? e.message : "accepted");
	size_t *after = calloc((size_t)nk_machine_num_nodes(M) + 1, sizeof *after);
	fill_random(r.p, len);
	uint64_t sum = checksum(r.p, len);
	/* Compare page by page, not the per-node totals: on this nearly full node
	 * kcompactd migrates pages within the node at any time, and a page caught
	 * in migration reads as "not present" (-ENOENT) for a moment.  That once
	 * made the totals differ by a page (CI, stop 9) although nothing crossed
	 * a node.  What a refused strict call must never do is put a page on
	 * another node; a transient unknown state on either side is tolerated. */
	int *pbefore = malloc(np * sizeof *pbefore), *pafter = malloc(np * sizeof *pafter);
	if (!pbefore || !pafter)
		die("out of memory");
	raw_where(r.p, np, pbefore);
	rc = nk_apply(M, pl, r.p, NK_APPLY_STRICT, &res, &e);
	CHECK(rc == NK_ENOMEM, "strict, touched: %d", rc);
	raw_where(r.p, np, pafter);
	size_t crossed = 0, transient = 0, first_crossed = np;
	for (size_t i = 0; i < np; i++) {
		if (pbefore[i] < 0 || pafter[i] < 0)
			transient += pbefore[i] != pafter[i];
		else if (pbefore[i] != pafter[i] && crossed++ == 0)
			first_crossed = i;
	}
	CHECK(crossed == 0, "strict: %zu pages moved although the call failed (first: page %zu, node %d -> %d)",
	      crossed, first_crossed, first_crossed < np ? pbefore[first_crossed] : -1,
	      first_crossed < np ? pafter[first_crossed] : -1);
	CHECK(transient < np / 100 + 16, "strict: %zu pages changed state during the refused call", transient);
	free(pbefore);
	free(pafter);
	CHECK(res.pages_moved == 0, "strict: moved %zu", res.pages_moved);
	printf("  strict, touched: %s; nothing moved\n", rc ? e.message : "accepted");

	/* not strict: fallback to the nearest neighbour(s), reported, data intact */
	rc = nk_apply(M, pl, r.p, 0, &res, &e);
	CHECK(rc == 0, "fallback: %s", rc ? e.message : "");
	result_sum("fallback", &res);
	CHECK(res.pages_fallback > 0, "no fallback reported");
	CHECK(res.fallback_node >= 0 && res.fallback_node != target, "fallback node %d", res.fallback_node);
	CHECK(nn > 1 && res.fallback_node == nbr[1], "fallback went to %d, nearest neighbour is %d",
	      res.fallback_node, nn > 1 ? nbr[1] : -1);
	CHECK(res.pages_failed == 0, "%zu pages failed", res.pages_failed);
	CHECK(checksum(r.p, len) == sum, "fallback: contents changed");
	nk_where(M, r.p, len, NULL, after);
	int ti = nk_machine_node_index(M, target);
	/* A page that the kernel is migrating at the moment of the query (kcompactd
	 * compacts the nearly full node, within the node) has a migration entry,
	 * and move_pages reports it as never touched: nk_apply counts it in
	 * pages_untouched and it stays on the target.  Seen once in this test
	 * (3 pages of 22815); so node 1 holds in_place + moved, plus at most the
	 * pages reported untouched.  The same holds for the query here: a page
	 * caught in migration by it reads as untouched (CI of ee27d70: node 3 held
	 * 49486 pages for 49487 placed), so those count for the target too. */
	size_t in_migration = after[nk_machine_num_nodes(M)];
	CHECK(after[ti] + in_migration >= res.pages_in_place + res.pages_moved &&
		      after[ti] <= res.pages_in_place + res.pages_moved + res.pages_untouched,
	      "node %d holds %zu pages, result says %zu in place + moved (+ %zu untouched)", target, after[ti],
	      res.pages_in_place + res.pages_moved, res.pages_untouched);
	CHECK(res.pages_untouched + res.pages_in_place + res.pages_moved + res.pages_fallback + res.pages_failed ==
		      res.pages,
	      "result fields add up to %zu, not %zu pages",
	      res.pages_untouched + res.pages_in_place + res.pages_moved + res.pages_fallback + res.pages_failed,
	      res.pages);
	printf("  fallback: %zu pages: %zu in place, %zu moved to %d, %zu fell back (last to node %d), %zu failed, "
	       "%zu untouched, %zu syscalls\n",
	       res.pages, res.pages_in_place, res.pages_moved, target, res.pages_fallback, res.fallback_node,
	       res.pages_failed, res.pages_untouched, res.syscalls);
	free(after);
	nk_plan_free(pl);
	region_free(&r);
	(void)total;
}

static void mode_hetero(void)
{
	int nn = nk_machine_num_nodes(M), memless = -1, cpuless = -1;
	for (int i = 0; i < nn; i++) {
		int id = nk_machine_node_id(M, i), f = nk_machine_node_flags(M, id);
		if (!(f & NK_NODE_HAS_MEMORY))
			memless = id;
		if ((f & NK_NODE_HAS_MEMORY) && !(f & NK_NODE_HAS_CPUS))
			cpuless = id;
	}
	if (memless < 0 || cpuless < 0) {
		printf("SKIP: no memoryless or no CPU-less node here\n");
		exit(77);
	}
	printf("  memoryless node %d, CPU-less node %d\n", memless, cpuless);
	size_t np = 1024, len = np * ps;
	char text[64];
	nk_error e;
	/* bind to the memoryless node alone: refused by the plan */
	snprintf(text, sizeof text, "bind:nodes=%d", memless);
	struct region r = region_new(np, 0);
	nk_plan *pl = plan_text(text, r.p, len, 0, 0, 0, &e);
	CHECK(!pl, "a plan binding to memoryless node %d was built", memless);
	if (!pl)
		printf("  %s: refused: %s\n", text, e.message);
	nk_plan_free(pl);
	/* cyclic over every node: the memoryless one is left out; placement exact */
	for (int touched = 0; touched < 2; touched++) {
		pl = plan_text("cyclic", r.p, len, 0, 0, 0, &e);
		if (!pl)
			die("cyclic: %s", e.message);
		for (size_t i = 0; i < np; i++)
			CHECK(nk_plan_node(pl, i) != memless, "page %zu planned on the memoryless node", i);
		if (touched)
			fill_random(r.p, len);
		nk_apply_result res;
		CHECK(nk_apply(M, pl, r.p, 0, &res, &e) == 0, "cyclic: %s", e.message);
		if (!touched)
			fill_random(r.p, len);
		check_placed(touched ? "cyclic touched" : "cyclic untouched", &r, pl, 0);
		nk_plan_free(pl);
	}
	/* everything to the CPU-less node, from a thread running elsewhere */
	snprintf(text, sizeof text, "bind:nodes=%d", cpuless);
	pl = plan_text(text, r.p, len, 0, 0, 0, &e);
	if (!pl)
		die("%s: %s", text, e.message);
	uint64_t sum = checksum(r.p, len);
	nk_apply_result res;
	CHECK(nk_apply(M, pl, r.p, 0, &res, &e) == 0, "%s: %s", text, e.message);
	check_placed(text, &r, pl, 0);
	CHECK(checksum(r.p, len) == sum, "contents changed");
	printf("  %s: %zu moved, %zu in place\n", text, res.pages_moved, res.pages_in_place);
	nk_plan_free(pl);
	region_free(&r);
}

struct job {
	struct region *r;
	size_t off, len;
	char text[96];
	int rc, reps;
	nk_plan *pl;
};

static void *job_run(void *arg)
{
	struct job *j = arg;
	nk_apply_result res;
	nk_error e;
	for (int k = 0; k < j->reps && !j->rc; k++)
		j->rc = nk_apply(M, j->pl, j->r->p + j->off, 0, &res, &e);
	return NULL;
}

static void mode_threads(void)
{
	enum { T = 4 };
	char list[32][96];
	int n = policy_list(list, NULL);
	size_t np = 2048, len = np * ps;
	struct region own[T], shared = region_new(np, 0);
	struct job jobs[2 * T];
	pthread_t th[2 * T];
	fill_random(shared.p, len);
	uint64_t sums[T], ssum = checksum(shared.p, len);
	for (int t = 0; t < T; t++) {
		own[t] = region_new(np, 0);
		fill_random(own[t].p, len);
		sums[t] = checksum(own[t].p, len);
	}
	for (int t = 0; t < 2 * T; t++) {
		struct job *j = &jobs[t];
		memset(j, 0, sizeof *j);
		j->r = t < T ? &own[t] : &shared;
		snprintf(j->text, sizeof j->text, "%s", list[(t * 3 + 1) % n]);
		if (!strncmp(j->text, "block_exclusive", 15))
			snprintf(j->text, sizeof j->text, "skew_mapp");
		j->reps = 3;
		nk_error e;
		j->pl = plan_text(j->text, j->r->p, len, 0, 0, 0, &e);
		if (!j->pl)
			die("%s: %s", j->text, e.message);
		pthread_create(&th[t], NULL, job_run, j);
	}
	for (int t = 0; t < 2 * T; t++) {
		pthread_join(th[t], NULL);
		CHECK(jobs[t].rc == 0, "thread %d (%s): %d", t, jobs[t].text, jobs[t].rc);
	}
	for (int t = 0; t < T; t++) {
		char what[128];
		snprintf(what, sizeof what, "thread %d %s (own region)", t, jobs[t].text);
		check_placed(what, &own[t], jobs[t].pl, 0);
		CHECK(checksum(own[t].p, len) == sums[t], "%s: contents changed", what);
	}
	/* the shared region: every page on the target of one of the plans racing for it */
	int *nodes = malloc(np * sizeof *nodes);
	raw_where(shared.p, np, nodes);
	size_t bad = 0;
	for (size_t i = 0; i < np; i++) {
		int ok = 0;
		for (int t = T; t < 2 * T; t++)
			ok |= nodes[i] == nk_plan_node(jobs[t].pl, i);
		bad += !ok;
	}
	CHECK(!bad, "shared region: %zu pages on no plan's target", bad);
	CHECK(checksum(shared.p, len) == ssum, "shared region: contents changed");
	printf("  %d threads on own regions, %d on one region: placement and contents checked\n", T, T);
	free(nodes);
	for (int t = 0; t < 2 * T; t++)
		nk_plan_free(jobs[t].pl);
	for (int t = 0; t < T; t++)
		region_free(&own[t]);
	region_free(&shared);
}

static size_t anon_huge_kb(const char *p, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	size_t kb = 0;
	int in = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') == line + strcspn(line, "-")) {
			in = a < (uintptr_t)p + len && b > (uintptr_t)p;
			continue;
		}
		size_t v;
		if (in && sscanf(line, "AnonHugePages: %zu kB", &v) == 1)
			kb += v;
	}
	if (f)
		fclose(f);
	return kb;
}

static void mode_thp(void)
{
	size_t huge = 2u << 20, len = 32 * huge, np = len / ps;
	struct region r = region_new(np, huge);
	madvise(r.p, len, MADV_HUGEPAGE);
	fill_random(r.p, len);
	uint64_t sum = checksum(r.p, len);
	size_t thp = anon_huge_kb(r.p, len);
	printf("  64 MiB region, %zu KiB in transparent huge pages\n", thp);
	if (!thp) {
		printf("SKIP: no transparent huge pages (thp=%s)\n", getenv("NK_THP") ? getenv("NK_THP") : "?");
		exit(77);
	}
	/* block: each node's block is whole huge pages, which move as units */
	nk_error e;
	nk_plan *pl = plan_text("block", r.p, len, 0, 0, 0, &e);
	if (!pl)
		die("block: %s", e.message);
	nk_apply_result res;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(nk_apply(M, pl, r.p, 0, &res, &e) == 0, "block: %s", e.message);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	result_sum("thp block", &res);
	check_placed("thp block", &r, pl, 0);
	CHECK(checksum(r.p, len) == sum, "thp block: contents changed");
	printf("  block: moved %zu in place %zu failed %zu, %zu syscalls, %.1f ms; %zu KiB still huge\n",
	       res.pages_moved, res.pages_in_place, res.pages_failed, res.syscalls,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, anon_huge_kb(r.p, len));
	nk_plan_free(pl);
	/* cyclic: pages of one huge page want different nodes; nothing may be lost and the result
	 * must say how many pages are not on target */
	pl = plan_text("cyclic", r.p, len, 0, 0, 0, &e);
	if (!pl)
		die("cyclic: %s", e.message);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(nk_apply(M, pl, r.p, 0, &res, &e) == 0, "cyclic: %s", e.message);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	result_sum("thp cyclic", &res);
	CHECK(checksum(r.p, len) == sum, "thp cyclic: contents changed");
	int *nodes = malloc(np * sizeof *nodes);
	raw_where(r.p, np, nodes);
	size_t off = 0;
	for (size_t i = 0; i < np; i++)
		off += nodes[i] != nk_plan_node(pl, i);
	CHECK(off == res.pages_failed, "thp cyclic: %zu pages off target, result says %zu failed", off,
	      res.pages_failed);
	printf("  cyclic: moved %zu in place %zu failed (off target) %zu, %zu syscalls, %.1f ms; %zu KiB still huge\n",
	       res.pages_moved, res.pages_in_place, res.pages_failed, res.syscalls,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, anon_huge_kb(r.p, len));
	free(nodes);
	nk_plan_free(pl);
	region_free(&r);
}

int main(int argc, char **argv)
{
	nk_error e;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		die("usage: guest_memory policies|phases|lost|fallback|hetero|threads|thp");
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (nk_machine_load_live(&M, &e))
		die("nk_machine_load_live: %s", e.message);
	for (int i = 0; i < nk_machine_num_nodes(M) && nmem < 64; i++) {
		int id = nk_machine_node_id(M, i);
		if (nk_machine_node_flags(M, id) & NK_NODE_HAS_MEMORY)
			mem_nodes[nmem++] = id;
	}
	if (nmem < 2) {
		printf("SKIP: %d node(s) with memory; guest tests need 2 or more\n", nmem);
		return 77;
	}
	nk_kernel_settings ks;
	nk_machine_kernel_settings(M, &ks);
	printf("%s: %d nodes with memory, numa_balancing=%d, thp=%d\n", argv[1], nmem, ks.numa_balancing,
	       ks.thp_enabled);
	const char *mode = argv[1];
	if (!strcmp(mode, "policies"))
		mode_policies();
	else if (!strcmp(mode, "phases"))
		mode_phases();
	else if (!strcmp(mode, "lost"))
		mode_lost(argc > 2 ? atoi(argv[2]) : 60);
	else if (!strcmp(mode, "fallback"))
		mode_fallback();
	else if (!strcmp(mode, "hetero"))
		mode_hetero();
	else if (!strcmp(mode, "threads"))
		mode_threads();
	else if (!strcmp(mode, "thp"))
		mode_thp();
	else
		die("unknown mode %s", mode);
	nk_machine_free(M);
	printf("%s: %s (%d failures)\n", mode, failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
