/* SPDX-License-Identifier: BSD-3-Clause
 * Share frames (share.h): the one rule that carries a node of one rank's share to the same position in
 * another's.
 */
#include <stdlib.h>

#include "job/share.h"
#include "numakit.h"

static int sorted_distinct(const int *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i] <= v[i - 1])
			return 0;
	return 1;
}

static long index_of(const int *v, size_t n, int x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return (long)i;
	return -1;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

int nk__share_node_map(const int *all, size_t n_all, const int *from, const int *to, size_t n, int *map)
{
	if (!all || !from || !to || !map || !n || n > n_all || !sorted_distinct(from, n) || !sorted_distinct(to, n))
		return NK_EINVAL;
	int *sorted = malloc(n_all * sizeof(*sorted)), *rest_from = malloc(n_all * sizeof(int)),
	    *rest_to = malloc(n_all * sizeof(int)), *out = malloc(n_all * sizeof(int));
	int rc = NK_EINVAL;
	if (!sorted || !rest_from || !rest_to || !out) {
		rc = NK_ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < n_all; i++)
		sorted[i] = all[i];
	qsort(sorted, n_all, sizeof(*sorted), cmp_int);
	if (!sorted_distinct(sorted, n_all))
		goto done;
	for (size_t i = 0; i < n; i++)
		if (index_of(all, n_all, from[i]) < 0 || index_of(all, n_all, to[i]) < 0)
			goto done;
	size_t nf = 0, nt = 0;
	for (size_t i = 0; i < n_all; i++) {
		if (index_of(from, n, sorted[i]) < 0)
			rest_from[nf++] = sorted[i];
		if (index_of(to, n, sorted[i]) < 0)
			rest_to[nt++] = sorted[i];
	}
	/* nf == nt == n_all - n: both shares are n distinct nodes of all */
	for (size_t i = 0; i < n_all; i++) {
		long k = index_of(from, n, all[i]);
		if (k >= 0) {
			out[i] = to[k];
		} else {
			k = index_of(rest_from, nf, all[i]);
			out[i] = rest_to[k];
		}
	}
	for (size_t i = 0; i < n_all; i++)
		map[i] = out[i];
	rc = 0;
done:
	free(sorted);
	free(rest_from);
	free(rest_to);
	free(out);
	return rc;
}

int nk__share_map_node(const int *all, const int *map, size_t n_all, int node)
{
	long k = index_of(all, n_all, node);
	return k < 0 ? node : map[k];
}
