/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the id-list, hex-mask and size parsers (the text of every sysfs
 * cpulist, every --cpus option and every list in a machine file).  Besides
 * "never crash", it checks that a parsed list formats to text that parses
 * back to the same ids.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const nk__ilist *l)
{
	nk__ilist back = { 0 };
	char *text = nk__format_list_alloc(l->v, l->n);

	if (!text)
		return;
	if (nk__parse_list(text, &back, NULL, 0) || back.n != l->n ||
	    (l->n && memcmp(back.v, l->v, l->n * sizeof *l->v)))
		abort();
	/* the public formatter agrees and respects its capacity */
	char small[8];
	int need = nk_format_list(l->v, l->n, small, sizeof small);
	if (need != (int)strlen(text) || strlen(small) >= sizeof small || strncmp(small, text, strlen(small)))
		abort();
	nk__ilist_free(&back);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	nk__ilist l = { 0 };
	char why[64];
	unsigned long long v;
	int ids[4];

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (nk__parse_list(s, &l, why, sizeof why) == 0)
		check_round_trip(&l);
	if (nk__parse_mask(s, &l, why, sizeof why) == 0)
		check_round_trip(&l);
	nk__parse_size(s, &v);
	nk_parse_list(s, ids, 4, NULL);
	nk__ilist_free(&l);
	free(s);
	return 0;
}
