/* SPDX-License-Identifier: BSD-3-Clause
 * Guest test (tests/vm/tests/heap_place): heaps placed by a policy (numakit/heap.h) on a machine with
 * several nodes, every page of every object checked with move_pages (nk_where) against the policy's plan
 * over the heap's range (nk_heap_region + nk_plan_build), and the heap's per-node statistics against the
 * same pages:
 *   - a heap bound to the second node with memory (node 1 on the guests): every page there;
 *   - a heap interleaved over every node with memory ("cyclic": one mbind when the heap is made);
 *   - cyclic_block, block_cyclic, random, skew_mapp, weighted (placed extent by extent as the heap commits
 *     them), a cyclic set in decreasing order (the kernel's interleave cannot express it: runs too);
 *   - bind over two nodes (every page on one of them);
 * each without and with NK_HEAP_STRICT, objects of 16-256 B and 4-64 KiB, allocated by four threads, freed
 * and allocated again (reused and recommitted extents keep their placement), realloc'ed larger.
 * Exit 77 when the build has no heaps (jemalloc) or the machine fewer than two nodes with memory.
 * Usage: heap_place [-v]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numakit.h"
#include "numakit/heap.h"

static nk_machine *machine;
static int mem[64], nmem, verbose;
static size_t ps;

enum { THREADS = 4, PER_THREAD = 400, N = THREADS * PER_THREAD };
static void *objs[N];
static size_t sizes[N];

struct job {
	nk_heap *h;
	int t;
	int failed;
};

static size_t size_of(size_t i)
{
	return i % 3 ? 16 + (i * 53) % 241 : ps * (1 + i % 16); /* 16-256 B, 4-64 KiB */
}

static void *worker(void *arg)
{
	struct job *j = arg;
	for (size_t k = 0; k < PER_THREAD; k++) {
		size_t i = (size_t)j->t * PER_THREAD + k;
		sizes[i] = size_of(i);
		if (nk_heap_alloc(j->h, sizes[i], &objs[i])) {
			j->failed = 1;
			return NULL;
		}
		memset(objs[i], (int)(i & 0xff), sizes[i]); /* the first touch is this thread's */
	}
	return NULL;
}

/* Pages of the objects where the plan says (bind over a set: on a node of the set).  0 or -1. */
static int check(nk_heap *h, const nk_policy *p, const char *what)
{
	nk_region r = { 0 };
	nk_plan *pl = NULL;
	nk_error err = { 0, "" };
	size_t pages = 0, wrong = 0, per_node[64] = { 0 };

	nk_heap_region(h, &r.addr, &r.len);
	if (nk_plan_build(machine, p, &r, &pl, &err)) {
		fprintf(stderr, "FAIL %s: plan: %s\n", what, err.message);
		return -1;
	}
	for (size_t i = 0; i < N; i++) {
		const unsigned char *c = objs[i];
		if (c[0] != (i & 0xff) || c[sizes[i] - 1] != (i & 0xff)) {
			fprintf(stderr, "FAIL %s: object %zu lost its contents\n", what, i);
			nk_plan_free(pl);
			return -1;
		}
		/* one residency query per object (its pages: at most 3 x 64 KiB + 1) */
		uintptr_t first = (uintptr_t)objs[i] / ps * ps, end = (uintptr_t)objs[i] + sizes[i];
		size_t np = (end - first + ps - 1) / ps;
		int nodes[64];
		if (np > 64 || nk_where(machine, (void *)first, np * ps, nodes, NULL)) {
			fprintf(stderr, "FAIL %s: residency of object %zu (%zu pages)\n", what, i, np);
			nk_plan_free(pl);
			return -1;
		}
		for (uintptr_t a = first; a < end; a += ps, pages++) {
			int node = nodes[(a - first) / ps], want = nk_plan_node(pl, (a - (uintptr_t)r.addr) / ps);
			if (node < 0) {
				fprintf(stderr, "FAIL %s: page %#lx not resident\n", what, (unsigned long)a);
				nk_plan_free(pl);
				return -1;
			}
			if (node != want) {
				if (wrong++ < 5)
					fprintf(stderr, "FAIL %s: page %#lx of object %zu on node %d, the plan says %d\n", what,
						(unsigned long)a, i, node, want);
			}
			int idx = nk_machine_node_index(machine, node);
			if (idx >= 0 && idx < 64)
				per_node[idx]++;
		}
	}
	nk_plan_free(pl);
	if (verbose) {
		printf("%-34s %6zu pages:", what, pages);
		for (int k = 0; k < nk_machine_num_nodes(machine) && k < 64; k++)
			printf(" N%d=%zu", nk_machine_node_id(machine, k), per_node[k]);
		printf("\n");
	}
	return wrong ? -1 : 0;
}

/* For bind over a set: every page on a node of the set (the kernel picks which). */
static int check_set(const int *set, int n)
{
	for (size_t i = 0; i < N; i++)
		for (uintptr_t a = (uintptr_t)objs[i] / ps * ps; a < (uintptr_t)objs[i] + sizes[i]; a += ps) {
			int node = -1, in = 0;
			if (nk_where(machine, (void *)a, ps, &node, NULL))
				return -1;
			for (int k = 0; k < n; k++)
				in |= node == set[k];
			if (!in) {
				fprintf(stderr, "FAIL bind set: page %#lx on node %d\n", (unsigned long)a, node);
				return -1;
			}
		}
	return 0;
}

static int one_case(const char text[96], unsigned flags)
{
	char what[160];
	nk_policy *p = NULL;
	nk_heap *h = NULL;
	nk_error err = { 0, "" };
	pthread_t th[THREADS];
	struct job jobs[THREADS];
	int rc = 0;

	snprintf(what, sizeof what, "%.96s%s", text, flags & NK_HEAP_STRICT ? " strict" : "");
	if (nk_policy_parse(text, &p, &err) || nk_heap_create(machine, p, flags, &h, &err)) {
		fprintf(stderr, "FAIL %s: %s\n", what, err.message);
		nk_policy_free(p);
		return -1;
	}
	for (int round = 0; round < 2 && !rc; round++) {
		for (int t = 0; t < THREADS; t++) {
			jobs[t] = (struct job){ .h = h, .t = t };
			pthread_create(&th[t], NULL, worker, &jobs[t]);
		}
		for (int t = 0; t < THREADS; t++) {
			pthread_join(th[t], NULL);
			rc |= jobs[t].failed ? -1 : 0;
		}
		if (rc) {
			fprintf(stderr, "FAIL %s: an allocation failed\n", what);
			break;
		}
		/* realloc some objects larger: their new pages follow the policy too */
		for (size_t i = 0; i < N; i += 7) {
			void *q = NULL;
			size_t n = sizes[i] * 3;
			if (nk_heap_realloc(h, objs[i], n, &q)) {
				rc = -1;
				break;
			}
			memset((char *)q + sizes[i], (int)(i & 0xff), n - sizes[i]);
			objs[i] = q;
			sizes[i] = n;
		}
		if (!rc && nk_policy_kind(p) == NK_POLICY_BIND && strchr(text, ',')) {
			int set[2] = { mem[0], mem[1] };
			rc = check_set(set, 2);
			if (!rc && verbose)
				printf("%-34s on nodes %d,%d\n", what, set[0], set[1]);
		} else if (!rc) {
			rc = check(h, p, what);
		}
		nk_heap_stats st;
		if (!rc && nk_heap_stats_get(h, &st) == 0) {
			uint64_t sum = 0;
			for (size_t k = 0; k < st.nnodes; k++)
				sum += st.node_bytes[k];
			if (sum != st.resident || st.objects != N || st.unplaced) {
				fprintf(stderr, "FAIL %s: stats: resident %llu, nodes %llu, objects %llu, unplaced %llu\n", what,
					(unsigned long long)st.resident, (unsigned long long)sum,
					(unsigned long long)st.objects, (unsigned long long)st.unplaced);
				rc = -1;
			}
		}
		for (size_t i = 0; i < N; i++) /* freed: the second round reuses their extents */
			nk_heap_free(h, objs[i]);
	}
	nk_heap_destroy(h);
	nk_policy_free(p);
	return rc;
}

int main(int argc, char **argv)
{
	nk_error err = { 0, "" };
	char texts[16][96];
	int n = 0, failed = 0;

	verbose = argc > 1 && !strcmp(argv[1], "-v");
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (nk_machine_load_live(&machine, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.message);
		return 1;
	}
	for (int k = 0; k < nk_machine_num_nodes(machine) && nmem < 64; k++) {
		int id = nk_machine_node_id(machine, k);
		uint64_t total = 0;
		if (!nk_machine_node_memory(machine, id, &total, NULL) && total > 0)
			mem[nmem++] = id;
	}
	if (nmem < 2) {
		printf("SKIP: fewer than two nodes with memory\n");
		return 77;
	}
	nk_policy *probe = NULL;
	nk_heap *h = NULL;
	nk_policy_parse("bind", &probe, NULL);
	int rc = nk_heap_create(machine, probe, 0, &h, &err);
	nk_policy_free(probe);
	if (rc == NK_ENOSYS) {
		printf("SKIP: %s\n", err.message);
		return 77;
	}
	nk_heap_destroy(h);

	snprintf(texts[n++], 96, "bind:nodes=%d", mem[1]);
	snprintf(texts[n++], 96, "cyclic");
	snprintf(texts[n++], 96, "cyclic_block:block=16K");
	snprintf(texts[n++], 96, "block_cyclic:block=24K");
	snprintf(texts[n++], 96, "random:seed=5");
	snprintf(texts[n++], 96, "skew_mapp");
	snprintf(texts[n++], 96, "weighted:weights=%d=3/%d=1", mem[0], mem[1]);
	snprintf(texts[n++], 96, "cyclic:nodes=%d,%d", mem[nmem - 1], mem[0]);
	snprintf(texts[n++], 96, "bind:nodes=%d,%d", mem[0], mem[1]);
	for (int i = 0; i < n; i++)
		for (unsigned f = 0; f <= NK_HEAP_STRICT; f += NK_HEAP_STRICT)
			failed |= one_case(texts[i], f) != 0;
	nk_machine_free(machine);
	printf("%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
