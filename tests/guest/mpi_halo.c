/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` inside an MPI job (tests/vm/tests/mpi_profile): an MPI + OpenMP
 * halo exchange.  Every rank allocates one large array (`field`, named so for the report), initialises
 * it serially from its master thread (the pages land on the master's node), moves a known share of its
 * pages to the node farthest from it (rank r: r mod 4 of every 4 pages, a weighted interleave, so that
 * every part of the array has that share: the halos, which the transports copy and the rank checks, are
 * visited more than the rest, and a sampler estimates a share of visits), then sweeps it with its OpenMP
 * threads, exchanging halos with its ring neighbours (MPI_Sendrecv straight out of and into the array,
 * messages large enough for a transport's single-copy path) before each sweep.  The halos are checked
 * value by value: a transport that failed or delivered wrong data fails the rank (exit 3).
 *
 * The truth each rank writes (one JSON object, to DIR/truth-R.json, or stdout without DIR): its cpus and
 * their nodes, the array's address and size, and the node of every page of the array after the sweeps,
 * as runs [first page, pages, node] (move_pages queries through nk_where), so that the test can check
 * the profile page by page.
 *
 *   mpi_halo [MiB per rank (8)] [sweeps (20)] [halo KiB (1024)] [DIR]
 *
 * For rank mapping (tests/vm/tests/mpi_rankmap): MPI_HALO_RING="0,2,1,3" orders the ring (each rank's
 * neighbours are the ranks before and after it in that list, a permutation of 0..size-1; default: rank
 * order), and MPI_HALO_MOVE=0 leaves every page where the initialisation put it.
 */
#include <errno.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <numakit.h>

static volatile double sink;

static long arg(int argc, char **argv, int i, long def, long lo, long hi)
{
	if (argc <= i || !strcmp(argv[i], "-"))
		return def;
	char *end;
	errno = 0;
	long v = strtol(argv[i], &end, 10);
	if (errno || end == argv[i] || *end || v < lo || v > hi) {
		fprintf(stderr, "mpi_halo: argument %d: expected %ld..%ld, found '%s'\n"
				"usage: mpi_halo [MiB per rank] [sweeps] [halo KiB] [DIR]\n", i, lo, hi, argv[i]);
		exit(2);
	}
	return v;
}

/* Rank @p rank's neighbours in the ring MPI_HALO_RING gives (rank order without it).  0, or -1 (message). */
static int ring_neighbours(int rank, int size, int *left, int *right)
{
	const char *env = getenv("MPI_HALO_RING");
	int order[256], n = 0, seen[256] = { 0 };

	*left = (rank + size - 1) % size;
	*right = (rank + 1) % size;
	if (!env || !*env)
		return 0;
	if (size > 256)
		goto bad;
	for (const char *p = env; *p;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end == p || v < 0 || v >= size || seen[v] || n >= size)
			goto bad;
		seen[v] = 1;
		order[n++] = (int)v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			goto bad;
	}
	if (n != size)
		goto bad;
	for (int i = 0; i < n; i++)
		if (order[i] == rank) {
			*left = order[(i + n - 1) % n];
			*right = order[(i + 1) % n];
		}
	return 0;
bad:
	fprintf(stderr, "mpi_halo: MPI_HALO_RING='%s' is not a permutation of the %d ranks (e.g. 0,2,1,3)\n", env, size);
	return -1;
}

/* The value element i of rank r's interior holds: exact in a double for the sizes allowed. */
static double value(int r, size_t i)
{
	return (double)r * 1e9 + (double)i;
}

/* The node farthest from @p node among the nodes with memory (ties: the next id after it), -1 if none. */
static int farthest(const nk_machine *m, int node)
{
	int best = -1, bestd = -1, n = nk_machine_num_nodes(m);
	for (int k = 1; k <= n; k++) {
		int id = nk_machine_node_id(m, (nk_machine_node_index(m, node) + k) % n);
		uint64_t total = 0;
		if (id == node || nk_machine_node_memory(m, id, &total, NULL) || !total)
			continue;
		int d = nk_machine_distance(m, node, id);
		if (d > bestd) {
			best = id;
			bestd = d;
		}
	}
	return best;
}

int main(int argc, char **argv)
{
	size_t mib = (size_t)arg(argc, argv, 1, 8, 1, 1024);
	int sweeps = (int)arg(argc, argv, 2, 20, 1, 100000);
	size_t halo = (size_t)arg(argc, argv, 3, 1024, 1, 1 << 20) * 1024 / sizeof(double);
	const char *dir = argc > 4 ? argv[4] : NULL;
	size_t n = mib * (1u << 20) / sizeof(double);
	int provided, rank, size, rc = 0;
	nk_machine *m = NULL;
	nk_error err;

	if (4 * halo > n) {
		fprintf(stderr, "mpi_halo: the halo (%zu doubles) must be at most a quarter of the array (%zu)\n", halo, n);
		return 2;
	}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (nk_machine_load_live(&m, &err)) {
		fprintf(stderr, "mpi_halo: rank %d: %s\n", rank, err.message);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	int cpu = -1, node = -1;
	nk_thread_where(m, &cpu, &node);

	/* [0, halo) and [n - halo, n) are the ghosts, filled by the neighbours; the interior is the rank's. */
	double *field = malloc(n * sizeof *field); /* TRUTH:alloc */
	if (!field)
		MPI_Abort(MPI_COMM_WORLD, 1);
	nk_profile_name(field, n * sizeof *field, "field");
	for (size_t i = 0; i < n; i++) /* the master alone: every page on its node */
		field[i] = i < halo || i >= n - halo ? -1.0 : value(rank, i); /* TRUTH:init */

	/* Rank r moves r mod 4 of every 4 whole pages of the array to the farthest node. */
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)field, hi = lo + n * sizeof *field;
	uintptr_t plo = lo & ~(uintptr_t)(ps - 1), phi = (hi + (uintptr_t)ps - 1) & ~(uintptr_t)(ps - 1);
	uintptr_t a = (lo + (uintptr_t)ps - 1) & ~(uintptr_t)(ps - 1), e = hi & ~(uintptr_t)(ps - 1);
	size_t npages = (phi - plo) / (size_t)ps, moved = 0;
	const char *mv = getenv("MPI_HALO_MOVE");
	int far = node >= 0 ? farthest(m, node) : -1, share = mv && !strcmp(mv, "0") ? 0 : rank % 4;
	if (far >= 0 && share && a < e) {
		char text[96];
		nk_policy *pol = NULL;
		nk_plan *pl = NULL;
		nk_apply_result res;
		snprintf(text, sizeof text, "weighted:weights=%d=%d/%d=%d", node, 4 - share, far, share);
		nk_region r = { .addr = (void *)a, .len = e - a };
		if (nk_policy_parse(text, &pol, &err) || nk_plan_build(m, pol, &r, &pl, &err) ||
		    nk_apply(m, pl, (void *)a, 0, &res, &err)) {
			fprintf(stderr, "mpi_halo: rank %d: %s on the array: %s\n", rank, text, err.message);
			rc = 1;
		} else {
			moved = res.pages_moved;
		}
		nk_plan_free(pl);
		nk_policy_free(pol);
	}

	int left, right;
	if (ring_neighbours(rank, size, &left, &right))
		MPI_Abort(MPI_COMM_WORLD, 2);
	double sum = 0;
	size_t bad = 0;
	for (int s = 0; s < sweeps; s++) {
		/* my last interior halo to the right, the left's into my low ghosts; then the other way */
		MPI_Sendrecv(field + n - 2 * halo, (int)halo, MPI_DOUBLE, right, 1, field, (int)halo, MPI_DOUBLE, left, 1,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* TRUTH:halo */
		MPI_Sendrecv(field + halo, (int)halo, MPI_DOUBLE, left, 2, field + n - halo, (int)halo, MPI_DOUBLE, right,
			     2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (size_t i = 0; i < halo; i++) {
			bad += field[i] != value(left, n - 2 * halo + i);
			bad += field[n - halo + i] != value(right, halo + i);
		}
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t i = 0; i < n; i++)
			sum += field[i] * 0.5; /* TRUTH:sweep */
	}
	sink = sum;
	if (bad) {
		fprintf(stderr, "mpi_halo: rank %d: %zu halo values wrong\n", rank, bad);
		rc = 3;
	}

	/* The truth: where every page of the array is now. */
	int *nodes = malloc(npages * sizeof *nodes);
	if (!nodes || nk_where(m, (void *)plo, phi - plo, nodes, NULL)) {
		fprintf(stderr, "mpi_halo: rank %d: nk_where failed\n", rank);
		rc = rc ? rc : 1;
	}
	FILE *out = stdout;
	char path[4096];
	if (dir) {
		snprintf(path, sizeof path, "%s/truth-%d.json", dir, rank);
		out = fopen(path, "w");
		if (!out) {
			fprintf(stderr, "mpi_halo: rank %d: %s: %s\n", rank, path, strerror(errno));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof set, &set);
	fprintf(out, "{\"rank\": %d, \"size\": %d, \"threads\": %d, \"cpu\": %d, \"node\": %d, \"cpus\": [", rank, size,
		omp_get_max_threads(), cpu, node);
	for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			nk_cpu_info ci = { .node = -1 };
			nk_machine_cpu_info(m, c, &ci);
			fprintf(out, "%s[%d, %d]", k++ ? ", " : "", c, ci.node);
		}
	fprintf(out, "], \"addr\": %llu, \"bytes\": %zu, \"page_size\": %ld, \"first_page\": %llu, \"far\": %d, "
		     "\"moved_pages\": %zu, \"halo_bad\": %zu, \"sweeps\": %d, \"pages\": [",
		(unsigned long long)lo, n * sizeof *field, ps, (unsigned long long)plo, far, moved, bad, sweeps);
	for (size_t i = 0, k = 0; nodes && i < npages;) {
		size_t j = i;
		while (j < npages && nodes[j] == nodes[i])
			j++;
		fprintf(out, "%s[%zu, %zu, %d]", k++ ? ", " : "", i, j - i, nodes[i]);
		i = j;
	}
	fprintf(out, "]}\n");
	if (out != stdout)
		fclose(out);
	else
		fflush(out);
	free(nodes);
	free(field);
	nk_machine_free(m);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return rc;
}
