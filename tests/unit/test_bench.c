/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark: the pure parts (Sattolo cycle, statistics, splitting, option checks, results) and the
 * measured-matrix merge; plus one tiny real run on whatever machine runs the tests. */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_impl.h"


/* Follow the chase from line 0: it must come back after exactly n steps, visiting every line once. */
static void check_cycle(size_t n, size_t stride, uint64_t seed)
{
	char *buf = aligned_alloc(64, (n * stride + 63) / 64 * 64);
	unsigned char *seen = calloc(n, 1);
	void **p;
	size_t steps = 0;

	assert_non_null(buf);
	assert_non_null(seen);
	nk__bench_chase_init(buf, n, stride, seed);
	p = (void **)buf;
	do {
		size_t off = (size_t)((char *)p - buf);

		assert_true(off % stride == 0);
		assert_true(off / stride < n);
		if (seen[off / stride])
			fail_msg("n=%zu seed=%llu: line %zu visited twice after %zu steps", n, (unsigned long long)seed,
				 off / stride, steps);
		seen[off / stride] = 1;
		p = (void **)*p;
		steps++;
	} while ((char *)p != buf && steps <= n);
	assert_int_equal(steps, n);
	/* The kernel itself agrees: n hops from the start come back to it. */
	assert_ptr_equal(nk__bench_chase(buf, n), buf);
	free(seen);
	free(buf);
}

static void test_sattolo_single_cycle(void **state)
{
	for (size_t n = 1; n <= 257; n++)
		for (uint64_t seed = 1; seed <= 5; seed++)
			check_cycle(n, 64, seed);
	check_cycle(4096, 8, 42);
	check_cycle(100003, 64, 7);
	check_cycle(65536, 128, 99);
}

static void test_sattolo_seeded(void **state)
{
	size_t n = 1000;
	char *a = aligned_alloc(64, n * 64), *b = aligned_alloc(64, n * 64);
	int differ = 0;

	nk__bench_chase_init(a, n, 64, 5);
	nk__bench_chase_init(b, n, 64, 5);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(*(char **)(a + i * 64) - a, *(char **)(b + i * 64) - b);
	nk__bench_chase_init(b, n, 64, 6);
	for (size_t i = 0; i < n; i++)
		differ |= (*(char **)(a + i * 64) - a) != (*(char **)(b + i * 64) - b);
	assert_true(differ);
	free(a);
	free(b);
}

static void test_stats(void **state)
{
	const double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 10, 40, 20, 30 }, one[] = { 7 };
	nk_bench_stat s;

	assert_int_equal(nk__bench_stats(odd, 5, &s), 0);
	assert_int_equal(s.n, 5);
	assert_true(s.median == 3 && s.min == 1 && s.max == 5 && s.q1 == 2 && s.q3 == 4);
	assert_int_equal(nk__bench_stats(even, 4, &s), 0);
	assert_true(s.median == 25 && s.min == 10 && s.max == 40);
	assert_true(fabs(s.q1 - 17.5) < 1e-12 && fabs(s.q3 - 32.5) < 1e-12);
	assert_int_equal(nk__bench_stats(one, 1, &s), 0);
	assert_true(s.median == 7 && s.q1 == 7 && s.q3 == 7 && s.min == 7 && s.max == 7);
	assert_int_equal(nk__bench_stats(odd, 0, &s), NK_EINVAL);
	assert_int_equal(nk__bench_stats(NULL, 3, &s), NK_EINVAL);
	/* the input is not reordered */
	assert_true(odd[0] == 5 && odd[1] == 1);
}

static void test_split(void **state)
{
	const size_t sizes[] = { 0, 8, 64, 1000, 4096, 123456 };

	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
		for (int t = 1; t <= 9; t++) {
			size_t next = 0, total = 0;

			for (int i = 0; i < t; i++) {
				size_t first, n;

				nk__bench_split(sizes[si], t, i, &first, &n);
				assert_int_equal(first, next);
				assert_int_equal(first % 8, 0);
				assert_int_equal(n % 8, 0);
				next = first + n;
				total += n;
			}
			assert_int_equal(total, sizes[si] / 8 * 8);
		}
}

static void test_patterns_count(void **state)
{
	size_t len = 64 * 4096;
	char *buf = aligned_alloc(4096, len);
	uint64_t loads = 0;

	memset(buf, 1, len);
	nk__bench_stride(buf, len, 64, &loads);
	assert_int_equal(loads, len / 64);
	nk__bench_stride(buf, len, 4096, &loads);
	assert_int_equal(loads, len / 64); /* every line once, a page apart */
	nk__bench_random(buf, len, 3, &loads);
	assert_int_equal(loads, len / 64);
	free(buf);
}

static void test_kernels_compute(void **state)
{
	int nk;
	const struct nk__bench_kernel *k = nk__bench_kernels(&nk);
	double *a = aligned_alloc(64, 64 * sizeof(double)), *b = aligned_alloc(64, 64 * sizeof(double));
	double *c = aligned_alloc(64, 64 * sizeof(double));

	assert_int_equal(nk, NK_BENCH_TRIAD_NT - NK_BENCH_READ + 1);
	for (int i = 0; i < nk; i++) {
		assert_int_equal(k[i].metric, NK_BENCH_READ + i);
		assert_true(k[i].bytes_per_elem == 8 * (k[i].arrays));
		if (!k[i].fn || (k[i].nt && !nk__bench_have_nt()))
			continue;
		for (int j = 0; j < 64; j++) {
			a[j] = 0;
			b[j] = 2;
			c[j] = 5;
		}
		double r = k[i].fn(a, b, c, 64);

		switch (k[i].metric) {
		case NK_BENCH_READ: assert_true(r == 128); break;
		case NK_BENCH_WRITE: case NK_BENCH_WRITE_NT: assert_true(a[63] == 1.0); break;
		case NK_BENCH_COPY: case NK_BENCH_COPY_NT: assert_true(a[63] == 2.0); break;
		default: assert_true(a[63] == 17.0); break;
		}
	}
	free(a);
	free(b);
	free(c);
}

static int plan(nk_machine *m, nk_bench_options *o, struct nk_bench_results **out, nk_error *err)
{
	struct nk_bench_results *r = calloc(1, sizeof *r);
	int rc;

	assert_non_null(r);
	rc = nk__bench_plan(m, o, r, err);
	*out = r;
	return rc;
}

static void test_options(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 ids=0,4 cores=2 mem=1G");
	nk_bench_options o;
	nk_error err = { 0 };
	int bad[] = { 0, 7 }, two[] = { 4 };

	nk_bench_options_init(&o);
	assert_int_equal(nk_bench_options_check(m, &o, &err), 0);

	o.nodes = bad;
	o.nnodes = 2;
	assert_int_equal(nk_bench_options_check(m, &o, &err), NK_ENODEV);
	assert_string_equal(err.message, "no node 7 on this machine (nodes: 0,4)");

	nk_bench_options_init(&o);
	o.size = 100;
	assert_int_equal(nk_bench_options_check(m, &o, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "smaller than a page"));

	nk_bench_options_init(&o);
	o.repetitions = -1;
	assert_int_equal(nk_bench_options_check(m, &o, &err), NK_EINVAL);

	nk_bench_options_init(&o);
	o.nodes = two;
	o.nnodes = 1;
	struct nk_bench_results *r;
	assert_int_equal(plan(m, &o, &r, &err), 0);
	assert_int_equal(r->ncpu, 1);
	assert_int_equal(r->cpu_nodes[0], 4);
	assert_int_equal(r->nmem, 1);
	assert_int_equal(r->opts.repetitions, 5);
	assert_int_equal(r->opts.warmups, 1);
	assert_true(r->opts.size >= 64ull << 20);
	nk_bench_results_free(r);

	/* quick and an odd size: rounded down to whole pages */
	nk_bench_options_init(&o);
	o.quick = 1;
	o.size = 3 * 4096 + 5;
	assert_int_equal(plan(m, &o, &r, &err), 0);
	assert_int_equal(r->opts.size, 3 * 4096);
	assert_int_equal(r->opts.repetitions, 3);
	nk_bench_results_free(r);

	/* only the live machine is measured */
	nk_bench_results *res = NULL;
	nk_bench_options_init(&o);
	assert_int_equal(nk_bench_run(m, &o, NULL, NULL, &res, &err), NK_EINVAL);
	assert_null(res);
	nk_machine_free(m);
}

static int has_note(const struct nk_bench_results *r, const char *text)
{
	for (int i = 0; i < r->nnotes; i++)
		if (strstr(r->notes[i], text))
			return 1;
	return 0;
}

/* Node 1 memoryless (cpus), node 2 cpu-less (memory): like the "hetero" guest. */
static void test_plan_hetero(void **state)
{
	nk_machine *m = nk_test_synth("nodes=3 cores=2 mem=1G memless=1 cpuless=2 dist=10,21,31/21,10,41/31,41,10");
	struct nk_bench_results *r;
	nk_bench_options o;
	nk_error err = { 0 };
	int only2[] = { 2 }, only1[] = { 1 };

	nk_bench_options_init(&o);
	assert_int_equal(plan(m, &o, &r, &err), 0);
	assert_int_equal(r->ncpu, 2);
	assert_int_equal(r->cpu_nodes[0], 0);
	assert_int_equal(r->cpu_nodes[1], 1);
	assert_int_equal(r->nmem, 2);
	assert_int_equal(r->mem_nodes[0], 0);
	assert_int_equal(r->mem_nodes[1], 2);
	assert_true(has_note(r, "node 1 has no memory: skipped as a memory target"));
	assert_true(has_note(r, "node 2 has no cpus to run on: measured from node 0"));
	/* own memory of memoryless node 1 = nearest = 0; cpu node local to 2 = nearest with cpus = 0 */
	assert_int_equal(r->mem_nodes[r->own_mem[1]], 0);
	assert_int_equal(r->cpu_nodes[r->own_cpu[1]], 0);
	nk_bench_results_free(r);

	o.nodes = only2;
	o.nnodes = 1;
	assert_int_equal(plan(m, &o, &r, &err), 0);
	assert_int_equal(r->ncpu, 1);
	assert_int_equal(r->cpu_nodes[0], 0);
	assert_int_equal(r->nmem, 1);
	assert_int_equal(r->mem_nodes[0], 2);
	nk_bench_results_free(r);

	o.nodes = only1;
	assert_int_equal(plan(m, &o, &r, &err), 0);
	assert_int_equal(r->ncpu, 1);
	assert_int_equal(r->cpu_nodes[0], 1);
	assert_int_equal(r->nmem, 1);
	assert_int_equal(r->mem_nodes[0], 0);
	assert_true(has_note(r, "memory node 0 added: the nearest memory of node 1"));
	nk_bench_results_free(r);
	nk_machine_free(m);
}

/* Hand-filled results: derived figures, JSON and the matrices stored into a machine. */
static void test_results_derived(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=1 mem=1G");
	struct nk_bench_results *r;
	nk_bench_options o;
	nk_error err = { 0 };
	const double lat[2][2] = { { 80, 130 }, { 140, 90 } };
	double f;
	int from;
	char *js = NULL;

	nk_bench_options_init(&o);
	assert_int_equal(plan(m, &o, &r, &err), 0);
	r->cells = calloc(4, sizeof *r->cells);
	for (int c = 0; c < 2; c++)
		for (int mm = 0; mm < 2; mm++) {
			struct nk__bench_cell *ce = nk__bench_cell(r, c, mm);
			double v = lat[c][mm], bw = 1000.0 * (c == mm ? 10 : 4);

			ce->measured = 1;
			ce->info.placement_verified = ce->info.cpu_verified = 1;
			assert_int_equal(nk__bench_stats(&v, 1, &ce->stat[NK_BENCH_LATENCY][NK_BENCH_ONE]), 0);
			assert_int_equal(nk__bench_stats(&bw, 1, &ce->stat[NK_BENCH_READ][NK_BENCH_ALL]), 0);
		}
	assert_int_equal(nk_bench_numa_factor(r, 0, 1, &f), 0);
	assert_true(fabs(f - 130.0 / 80) < 1e-12);
	assert_int_equal(nk_bench_numa_factor(r, 1, 0, &f), 0);
	assert_true(fabs(f - 140.0 / 90) < 1e-12);
	assert_int_equal(nk_bench_local_bandwidth(r, 1, &from, &f), 0);
	assert_int_equal(from, 1);
	assert_true(f == 10000);
	assert_int_equal(nk_bench_numa_factor(r, 0, 3, &f), NK_ENODEV);

	assert_int_equal(nk_bench_results_to_json(r, 0, &js), 0);
	json_error_t je;
	json_t *root = json_loads(js, 0, &je);
	assert_non_null(root);
	assert_int_equal(json_array_size(json_object_get(root, "pairs")), 4);
	json_t *nf = json_object_get(json_object_get(root, "matrices"), "numa_factor");
	assert_true(fabs(json_real_value(json_array_get(json_array_get(nf, 0), 1)) - 130.0 / 80) < 1e-5);
	assert_true(json_is_null(json_array_get(json_array_get(
		json_object_get(json_object_get(root, "matrices"), "interconnect_mbs"), 0), 0)));
	json_decref(root);
	free(js);

	assert_int_equal(nk_bench_results_to_machine(r, m), 12);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, 1, 0, &f), 0);
	assert_true(f == 140);
	assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 0, &f), 0);
	assert_true(f == 1);
	nk_bench_results_free(r);
	nk_machine_free(m);
}

/* Save measurements in a machine file, load it, merge into a fresh "live" machine: values round trip. */
static void test_merge_round_trip(void **state)
{
	const char *desc = "nodes=3 ids=0,2,5 cores=2 mem=1G dist=10,21,31/21,10,21/31,21,10";
	nk_machine *m = nk_test_synth(desc), *saved = NULL, *live = nk_test_synth(desc), *other = nk_test_synth("nodes=2 cores=2 mem=1G");
	nk_machine *other_cpus = nk_test_synth("nodes=3 ids=0,2,5 cores=3 mem=1G");
	char path[] = "/tmp/nkbenchXXXXXX";
	nk_error err = { 0 };
	double v;
	int fd = mkstemp(path), n = 0;

	assert_true(fd >= 0);
	close(fd);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			int a = nk_machine_node_id(m, i), b = nk_machine_node_id(m, j);

			if (a == 5 && b == 0)
				continue; /* one pair left unmeasured */
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, a, b, 80.5 + 10 * i + j), 0);
			assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, a, b, 9000 - 100 * i - j), 0);
			n += 2;
		}
	assert_int_equal(nk_machine_save(m, path, &err), 0);
	assert_int_equal(nk_machine_load_file(path, &saved, &err), 0);

	assert_int_equal(nk_machine_merge_measurements(live, saved, 0, &err), n);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			int a = nk_machine_node_id(m, i), b = nk_machine_node_id(m, j);
			double w;

			if (a == 5 && b == 0) {
				assert_int_equal(nk_machine_get_matrix(live, NK_MATRIX_LATENCY_NS, a, b, &v), NK_ENODATA);
				continue;
			}
			assert_int_equal(nk_machine_get_matrix(live, NK_MATRIX_LATENCY_NS, a, b, &v), 0);
			assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_LATENCY_NS, a, b, &w), 0);
			assert_true(v == w);
			assert_int_equal(nk_machine_get_matrix(live, NK_MATRIX_BANDWIDTH_MBS, a, b, &v), 0);
			assert_int_equal(nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, a, b, &w), 0);
			assert_true(v == w);
		}
	assert_int_equal(nk_machine_get_matrix(live, NK_MATRIX_NUMA_FACTOR, 0, 2, &v), NK_ENODATA);

	/* another machine: refused, nothing copied */
	assert_int_equal(nk_machine_merge_measurements(other, saved, 0, &err), NK_ENODEV);
	assert_non_null(strstr(err.message, "nodes"));
	assert_int_equal(nk_machine_get_matrix(other, NK_MATRIX_LATENCY_NS, 0, 0, &v), NK_ENODATA);
	assert_int_equal(nk_machine_merge_measurements(other_cpus, saved, 0, &err), NK_ENODEV);
	assert_non_null(strstr(err.message, "other cpus"));
	assert_int_equal(nk_machine_get_matrix(other_cpus, NK_MATRIX_LATENCY_NS, 0, 0, &v), NK_ENODATA);
	assert_int_equal(nk_machine_merge_measurements(live, saved, 1, &err), NK_EINVAL);

	unlink(path);
	nk_machine_free(m);
	nk_machine_free(saved);
	nk_machine_free(live);
	nk_machine_free(other);
	nk_machine_free(other_cpus);
}

static void count_progress(void *user, const nk_bench_progress *p)
{
	int *calls = user;

	assert_int_equal(p->step, *calls);
	assert_true(p->step < p->steps);
	assert_non_null(p->what);
	(*calls)++;
}

/* A tiny real run on this machine: every pair verified, every step reported. */
static void test_run_live_tiny(void **state)
{
	nk_machine *m = NULL;
	nk_bench_results *r = NULL;
	nk_bench_options o;
	nk_error err = { 0 };
	int calls = 0, rc, nc, nm;
	char *js = NULL;

	if (nk_machine_load_live(&m, &err))
		skip();
	nk_bench_options_init(&o);
	o.quick = 1;
	o.size = 256 * 1024;
	o.repetitions = 1;
	o.warmups = 0;
	rc = nk_bench_run(m, &o, count_progress, &calls, &r, &err);
	if (rc == NK_ENOSYS) {
		nk_machine_free(m);
		skip();
	}
	if (rc)
		fail_msg("nk_bench_run: %s", err.message);
	nc = nk_bench_nodes(r, NK_BENCH_CPU_NODES, NULL, 0);
	nm = nk_bench_nodes(r, NK_BENCH_MEM_NODES, NULL, 0);
	assert_true(nc >= 1 && nm >= 1);
	assert_int_equal(calls, 3 * nm + 2 * nc * nm + 3);
	for (int i = 0; i < nc; i++)
		for (int j = 0; j < nm; j++) {
			int cn, mn;
			nk_bench_pair info;
			nk_bench_stat s;

			nk_bench_nodes(r, NK_BENCH_CPU_NODES, &cn, 0);
			int *ci = malloc(sizeof(int) * (size_t)nc), *mi = malloc(sizeof(int) * (size_t)nm);
			nk_bench_nodes(r, NK_BENCH_CPU_NODES, ci, (size_t)nc);
			nk_bench_nodes(r, NK_BENCH_MEM_NODES, mi, (size_t)nm);
			cn = ci[i];
			mn = mi[j];
			free(ci);
			free(mi);
			assert_int_equal(nk_bench_pair_info(r, cn, mn, &info), 0);
			assert_true(info.placement_verified && info.cpu_verified);
			assert_int_equal(info.pages, o.size / nk_machine_page_size(m));
			assert_int_equal(nk_bench_get(r, NK_BENCH_LATENCY, NK_BENCH_ONE, cn, mn, &s), 0);
			assert_true(s.median > 0 && s.n == 1);
			assert_int_equal(nk_bench_get(r, NK_BENCH_TRIAD, NK_BENCH_ALL, cn, mn, &s), 0);
			assert_true(s.median > 0);
			assert_int_equal(nk_bench_get(r, NK_BENCH_RANDOM, NK_BENCH_ONE, cn, mn, &s), 0);
			assert_int_equal(nk_bench_get(r, NK_BENCH_LATENCY, NK_BENCH_ALL, cn, mn, &s), NK_ENODATA);
		}
	assert_int_equal(nk_bench_results_to_json(r, NK_JSON_COMPACT, &js), 0);
	assert_null(strchr(js, '\n'));
	free(js);
	nk_bench_results_free(r);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sattolo_single_cycle),
		cmocka_unit_test(test_sattolo_seeded),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_patterns_count),
		cmocka_unit_test(test_kernels_compute),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_plan_hetero),
		cmocka_unit_test(test_results_derived),
		cmocka_unit_test(test_merge_round_trip),
		cmocka_unit_test(test_run_live_tiny),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
