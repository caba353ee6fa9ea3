/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the sharing matrix reader (text and JSON) and the placements built
 * from what it accepts, and the cpu-list strategy text of
 * nk_placement_build.  An accepted matrix must be n x n of finite,
 * non-negative values; the sharing placement built from it on small
 * synthetic machines must give every thread an allowed cpu, fill every node
 * within its share, be oversubscribed exactly when n exceeds the allowed
 * cpus, and be the same when built twice.  A failure must carry its code and
 * a message and leave the output untouched.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const machines[] = {
	"nodes=1 cores=2",
	"nodes=2 cores=2 smt=2 l3=16M l2=1M",
	"nodes=4 ids=0,1,4,9 cores=2 smt=2 memless=3 cpuless=2 allowed_cpus=1-4,8-9",
};

static nk_machine *machine(int i)
{
	static nk_machine *m[sizeof machines / sizeof *machines];

	if (!m[i] && nk_machine_load_synthetic(machines[i], &m[i], NULL))
		abort();
	return m[i];
}

static void check_placement(const nk_machine *m, const nk_placement *p, int n)
{
	int ncpus = nk_machine_num_cpus(m), allowed = nk_machine_allowed_cpus(m, NULL, 0);
	int *cpus = malloc((size_t)n * sizeof *cpus), dup = 0;

	if (!cpus)
		return;
	if (nk_placement_num_threads(p) != n || nk_placement_cpus(p, cpus, (size_t)n) != n)
		abort();
	for (int t = 0; t < n; t++) {
		nk_cpu_info ci;

		if (nk_machine_cpu_info(m, cpus[t], &ci) || !ci.allowed || nk_placement_node(p, t) != ci.node)
			abort();
		for (int u = 0; u < t && !dup; u++)
			dup = cpus[u] == cpus[t];
	}
	if (nk_placement_oversubscribed(p) != dup || dup != (n > allowed))
		abort();
	(void)ncpus;
	free(cpus);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	double *a = (double *)&a;
	int n = -1;
	nk_error err = { 0, "" };
	int rc = nk_sharing_parse((const char *)data, size, &a, &n, &err);

	if (rc) {
		if (rc >= 0 || err.code != rc || !err.message[0] || a != (double *)&a || n != -1)
			abort();
	} else {
		if (n < 1 || n > 65536)
			abort();
		for (size_t i = 0; i < (size_t)n * (size_t)n; i++)
			if (!isfinite(a[i]) || a[i] < 0)
				abort();
		if (n <= 64)
			for (int k = 0; k < (int)(sizeof machines / sizeof *machines); k++) {
				nk_placement *p = NULL, *q = NULL;
				int *c1, *c2;

				if (nk_placement_from_sharing(machine(k), a, n, &p, NULL) ||
				    nk_placement_from_sharing(machine(k), a, n, &q, NULL))
					abort();
				check_placement(machine(k), p, n);
				c1 = malloc((size_t)n * sizeof *c1);
				c2 = malloc((size_t)n * sizeof *c2);
				if (c1 && c2) {
					nk_placement_cpus(p, c1, (size_t)n);
					nk_placement_cpus(q, c2, (size_t)n);
					if (memcmp(c1, c2, (size_t)n * sizeof *c1))
						abort();
				}
				free(c1);
				free(c2);
				nk_placement_free(p);
				nk_placement_free(q);
			}
		free(a);
	}

	/* the same bytes as a strategy (not file: or sharing:, which would read files) */
	if (size < 4096 && !memchr(data, 0, size)) {
		char *s = malloc(size + 1);
		nk_placement *p = (nk_placement *)&p;

		if (!s)
			return 0;
		memcpy(s, data, size);
		s[size] = 0;
		if (strncmp(s, "file:", 5) && strncmp(s, "sharing:", 8)) {
			int threads = size ? data[0] % 8 : 0;

			for (int k = 0; k < (int)(sizeof machines / sizeof *machines); k++) {
				rc = nk_placement_build(machine(k), s, threads, &p, &err);
				if (rc) {
					if (rc >= 0 || err.code != rc || !err.message[0] || p != (nk_placement *)&p)
						abort();
					continue;
				}
				if (threads && nk_placement_num_threads(p) != threads)
					abort();
				nk_placement_free(p);
				p = (nk_placement *)&p;
			}
		}
		free(s);
	}
	return 0;
}
