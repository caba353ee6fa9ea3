/* SPDX-License-Identifier: BSD-3-Clause
 * Saved measurements onto the live machine.  The live machine is rebuilt
 * from /sys on every start and carries no measurements; `numakit bench
 * --save` stores them in a machine file.  Merging copies them back, but only
 * when the file describes this machine (same node ids, same cpus per node):
 * figures measured elsewhere would mislead every policy that reads them.
 */
#include "bench/bench_impl.h"

#include <math.h>
#include <stdlib.h>

#include "machine/machine_impl.h"
#include "util/error.h"

/* 0 when node @p id has the same cpus in both machines. */
static int same_cpus(const nk_machine *a, const nk_machine *b, int id)
{
	int na = nk_machine_node_cpus(a, id, NULL, 0), nb = nk_machine_node_cpus(b, id, NULL, 0), rc = 0;
	int *ca, *cb;

	if (na != nb)
		return 1;
	if (na <= 0)
		return 0;
	ca = malloc((size_t)na * sizeof *ca);
	cb = malloc((size_t)na * sizeof *cb);
	if (!ca || !cb) {
		rc = NK_ENOMEM;
		goto out;
	}
	nk_machine_node_cpus(a, id, ca, (size_t)na);
	nk_machine_node_cpus(b, id, cb, (size_t)na);
	for (int i = 0; i < na && !rc; i++)
		rc = ca[i] != cb[i];
out:
	free(ca);
	free(cb);
	return rc;
}

int nk_machine_merge_measurements(nk_machine *live, const nk_machine *saved, unsigned flags, nk_error *err)
{
	int n, copied = 0, rc;
	double *vals = NULL, *fresh[NK_MATRIX_KIND_COUNT] = { 0 };
	size_t nn;

	if (!live || !saved || flags)
		return nk__error(err, NK_EINVAL, "merge: %s", flags ? "unknown flags" : "NULL machine");
	n = nk_machine_num_nodes(live);
	if (n != nk_machine_num_nodes(saved))
		return nk__error(err, NK_ENODEV, "the saved machine has %d nodes, this one %d",
				 nk_machine_num_nodes(saved), n);
	for (int i = 0; i < n; i++) {
		int id = nk_machine_node_id(live, i);

		if (nk_machine_node_id(saved, i) != id)
			return nk__error(err, NK_ENODEV, "the saved machine has node %d where this one has node %d",
					 nk_machine_node_id(saved, i), id);
		rc = same_cpus(live, saved, id);
		if (rc < 0)
			return nk__error(err, rc, "out of memory");
		if (rc)
			return nk__error(err, NK_ENODEV, "node %d has other cpus in the saved machine", id);
	}

	/* Gather first, then store: a failure part-way must not leave a half-merged machine. */
	nn = (size_t)n * (size_t)n;
	vals = malloc(NK_MATRIX_KIND_COUNT * nn * sizeof *vals);
	if (!vals)
		return nk__error(err, NK_ENOMEM, "out of memory");
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				double *v = &vals[(size_t)k * nn + (size_t)i * (size_t)n + (size_t)j];

				if (nk_machine_get_matrix(saved, k, nk_machine_node_id(saved, i), nk_machine_node_id(saved, j),
							  v))
					*v = 0;
			}
	/* The live machine's missing matrices are allocated before any value is stored. */
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++) {
		int any = 0;

		for (size_t x = 0; x < nn && !any; x++)
			any = vals[(size_t)k * nn + x] > 0;
		if (!any || live->matrix[k])
			continue;
		fresh[k] = malloc(nn * sizeof *fresh[k]);
		if (!fresh[k]) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto out;
		}
		for (size_t x = 0; x < nn; x++)
			fresh[k][x] = NAN;
	}
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++) {
		if (fresh[k]) {
			live->matrix[k] = fresh[k];
			fresh[k] = NULL;
		}
		/* Both machines list nodes in increasing id order (checked above): same indices. */
		for (size_t x = 0; x < nn; x++) {
			double v = vals[(size_t)k * nn + x];

			if (v <= 0)
				continue;
			live->matrix[k][x] = v;
			copied++;
		}
	}
	rc = copied;
out:
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++)
		free(fresh[k]);
	free(vals);
	return rc;
}
