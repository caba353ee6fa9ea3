/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz numactl's node and cpu specs of numakit run (cli/nodespec.c): the
 * first byte picks an allowed set, the rest is the spec.  Besides "never
 * crash", the result is a subset of the allowed set, increasing, and every
 * refusal is one printable line.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nodespec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int sets[][6] = { { 0, 1, 2, 3 }, { 0, 1, 4, 9 }, { 2 }, { 0, 1, 2, 3, 6, 7 } };
	static const size_t lens[] = { 4, 4, 1, 6 };
	const char *last = NULL;
	size_t pick;
	char *s, why[200];
	int out[6], k;

	if (size < 1)
		return 0;
	pick = data[0] % 5; /* 4: the empty set */
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	why[0] = '\0';
	k = cli_spec_parse(s, "node", pick < 4 ? sets[pick] : NULL, pick < 4 ? lens[pick] : 0, out, why, sizeof why);
	if (k < -1 || k > (int)(pick < 4 ? lens[pick] : 0))
		abort();
	if (k < 0) {
		if (!why[0])
			abort();
		for (const char *c = why; *c; c++)
			if (!isprint((unsigned char)*c))
				abort();
	}
	for (int i = 0; i < k; i++) {
		int found = 0;

		if (i && out[i] <= out[i - 1])
			abort();
		for (size_t j = 0; j < lens[pick]; j++)
			found |= out[i] == sets[pick][j];
		if (!found)
			abort();
	}
	(void)cli_spec_is_numactl(s);
	if (cli_spec_same(s, &last) == NULL && strcmp(s, "same"))
		abort();
	free(s);
	return 0;
}
