/* SPDX-License-Identifier: BSD-3-Clause
 * nk_advice_pin: an advice's thread pinning in the words of `numakit run --pin`
 * (the CLI uses only the public API and cannot see struct nk__aplan_pin).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "util/error.h"

/* Append to a growing buffer; -1 out of memory. */
static int cat(char **b, size_t *len, size_t *cap, const char *fmt, double v, int iv, int use_int)
{
	char tmp[64];
	int k = use_int ? snprintf(tmp, sizeof tmp, fmt, iv) : snprintf(tmp, sizeof tmp, fmt, v);
	if (k < 0)
		return -1;
	if (*len + (size_t)k + 1 > *cap) {
		size_t nc = (*cap ? *cap * 2 : 256) + (size_t)k;
		char *nb = realloc(*b, nc);
		if (!nb)
			return -1;
		*b = nb;
		*cap = nc;
	}
	memcpy(*b + *len, tmp, (size_t)k + 1);
	*len += (size_t)k;
	return 0;
}

int nk_advice_pin(const nk_advice *a, char **spec, int *threads, char **sharing, nk_error *err)
{
	const struct nk__aplan_pin *p;
	char *s = NULL, *m = NULL;
	size_t len = 0, cap = 0, mlen = 0, mcap = 0;

	if (!a || !spec)
		return nk__error(err, NK_EINVAL, "nk_advice_pin: NULL argument");
	p = &a->pin;
	if (!p->strategy || !strcmp(p->strategy, "none")) {
		*spec = NULL;
		if (sharing)
			*sharing = NULL;
		if (threads)
			*threads = p->threads > 0 ? p->threads : 0;
		return 0;
	}
	if (!strcmp(p->strategy, "compact") || !strcmp(p->strategy, "scatter") || !strcmp(p->strategy, "sharing")) {
		s = strdup(p->strategy);
		if (!s)
			goto nomem;
	} else if (!strcmp(p->strategy, "cpus")) {
		if (!p->cpus || !p->n_cpus)
			return nk__error(err, NK_EINVAL, "plan pinning \"cpus\" without a cpu list");
		for (size_t i = 0; i < p->n_cpus; i++)
			if (cat(&s, &len, &cap, i ? ",%d" : "%d", 0, p->cpus[i], 1))
				goto nomem;
	} else {
		return nk__error(err, NK_EINVAL, "plan pinning: unknown strategy \"%s\"", p->strategy);
	}
	if (!strcmp(p->strategy, "sharing")) {
		int n = p->threads;
		if (!p->sharing || n <= 0) {
			free(s);
			return nk__error(err, NK_EINVAL, "plan pinning \"sharing\" without its matrix");
		}
		if (cat(&m, &mlen, &mcap, "# numakit plan: thread x thread sharing, %d threads\n", 0, n, 1))
			goto nomem;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				if (cat(&m, &mlen, &mcap, j == n - 1 ? "%.17g\n" : "%.17g ",
					p->sharing[(size_t)i * (size_t)n + (size_t)j], 0, 0))
					goto nomem;
	}
	*spec = s;
	if (sharing)
		*sharing = m;
	else
		free(m);
	if (threads)
		*threads = p->threads > 0 ? p->threads : 0;
	return 0;
nomem:
	free(s);
	free(m);
	return nk__error(err, NK_ENOMEM, "out of memory");
}
