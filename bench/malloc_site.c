/* SPDX-License-Identifier: BSD-3-Clause
 * Issue 19 §3: the cost of serving a site's allocations from its arena (numakit run --plan, layout blocks)
 * against the program's own malloc.  One allocation site (site(), not inlined, called from one place: one
 * key) in one of two loops: N malloc+free pairs, or N mallocs kept then freed; prints ns per malloc+free.
 * bench/malloc_site.sh runs it plain, under the plan runtime with the site not planned, and with it
 * planned, and prints the ratios.  Usage: malloc_site pairs|kept N SIZE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) static char *site(size_t n)
{
	char *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* keep: the blocks stay until the end (p has n slots), else each is freed at once */
__attribute__((noinline)) static double loop(int keep, char **p, size_t n, size_t size)
{
	double a = now();
	for (size_t i = 0; i < n; i++) {
		char *b = site(size);
		if (!b)
			exit(1);
		b[0] = (char)i;
		__asm__ volatile("" ::: "memory");
		if (keep)
			p[i] = b;
		else
			free(b);
	}
	for (size_t i = 0; keep && i < n; i++)
		free(p[i]);
	return (now() - a) / (double)n;
}

int main(int argc, char **argv)
{
	int keep = argc > 1 && !strcmp(argv[1], "kept");
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000, size = argc > 3 ? strtoul(argv[3], NULL, 10) : 64;
	char **p = calloc(n, sizeof *p);
	if (!p)
		return 1;
	printf("%.1f ns per malloc+free (%s, %zu blocks of %zu bytes)\n", loop(keep, p, n, size), keep ? "kept" : "pairs",
	       n, size);
	free(p);
	return 0;
}
