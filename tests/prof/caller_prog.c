/* SPDX-License-Identifier: BSD-3-Clause
 * First touches made inside a library (issue 16): each array is first written by a libc call or by the
 * program itself, and the report must name the program's own line for each (caller_check.py).  The lines are
 * found by their markers: "alloc:NAME" on the allocation, "touch:NAME" on the first touch.  The size is read
 * through a volatile so that the compiler calls memset and memcpy rather than expanding them inline.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile size_t n_bytes = 32u << 20;

static void *thread_main(void *arg)
{
	size_t n = n_bytes;
	char *t = malloc(n); /* alloc:thread_memset */
	memset(t, 3, n);     /* touch:thread_memset */
	*(char **)arg = t;
	return NULL;
}

int main(void)
{
	size_t n = n_bytes;
	char *m = malloc(n); /* alloc:memset */
	memset(m, 1, n);     /* touch:memset */
	char *c = calloc(n, 1); /* alloc:calloc */
	for (size_t i = 0; i < n; i += 64)
		c[i] = 2; /* touch:calloc */
	char *d = malloc(n); /* alloc:memcpy */
	memcpy(d, m, n);     /* touch:memcpy */
	char *t = NULL;
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, &t) || pthread_join(th, NULL))
		return 1;
	long s = 0;
	for (size_t i = 0; i < n; i += 4096)
		s += m[i] + c[i] + d[i] + t[i];
	printf("%ld\n", s);
	free(m);
	free(c);
	free(d);
	free(t);
	return 0;
}
