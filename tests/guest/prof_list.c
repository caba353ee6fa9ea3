/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for profiling by allocation site (issue 19; tests/vm/tests/profile_sites): a linked list of
 * small nodes (one malloc each, TRUTH:list-alloc) built and filled by the master (TRUTH:list-init), then
 * walked by every thread, each summing the nodes of its share (TRUTH:list-walk).  Every node was first
 * written by thread 0: a hot-spot of the site, all pages on the master's node, 3/4 of the walks remote with
 * 4 threads on 4 nodes.
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

struct node {
	struct node *next;
	double v[31]; /* 256 bytes a node */
};

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 8) * (1u << 20) / sizeof(struct node);
	struct node *head = NULL, **index = malloc(n * sizeof *index);
	double sum = 0;

	if (!index)
		return 1;
#pragma omp parallel
	{
		(void)0;
	}
	for (size_t i = 0; i < n; i++) {
		struct node *e = malloc(sizeof *e); /* TRUTH:list-alloc */
		if (!e)
			return 1;
		for (int k = 0; k < 31; k++)
			e->v[k] = (double)(i + (size_t)k); /* TRUTH:list-init */
		e->next = head;
		head = e;
		index[n - 1 - i] = e;
	}
	/* each thread walks its share, nodes lo .. hi-1 in allocation order, from its last one down the next
	 * pointers (node i's next is node i-1): index[] gives the start only */
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel reduction(+ : sum)
		{
			size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
			size_t lo = n * t / nt, hi = n * (t + 1) / nt;
			const struct node *e = lo < hi ? index[n - 1 - (hi - 1)] : NULL;
			for (size_t i = lo; i < hi && e; i++, e = e->next)
				for (int k = 0; k < 31; k++)
					sum += e->v[k]; /* TRUTH:list-walk */
		}
	}
	prof_sink = sum;
	while (head) {
		struct node *e = head->next;
		free(head);
		head = e;
	}
	free(index);
	return 0;
}
