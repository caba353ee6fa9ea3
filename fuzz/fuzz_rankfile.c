/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the rank maps of `numakit run --rank-map` and `numakit whatif --rank-map` (cli/rankfile.c): Open
 * MPI rankfiles and numakit-rank-map JSON.  Besides "never crash", an accepted map has its ranks sorted,
 * each once and in range, every slot either a node or a non-empty increasing cpu list; a refusal is one
 * printable line and leaves the output zeroed.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rankfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cli_rankfile f;
	char why[512];

	if (cli_rankfile_parse((const char *)data, size, &f, why, sizeof why)) {
		if (!why[0] || f.n || f.slots)
			abort();
		for (const char *c = why; *c; c++)
			if (!isprint((unsigned char)*c))
				abort();
		return 0;
	}
	if (!f.n)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		const struct cli_rank_slot *s = &f.slots[i];
		if (s->rank < 0 || s->rank > CLI_RANKFILE_MAX_RANK || (i && s->rank <= f.slots[i - 1].rank) || !s->host)
			abort();
		if (cli_rankfile_find(&f, s->rank) != s)
			abort();
		if (s->cpus) {
			if (s->node != -1 || !s->ncpus)
				abort();
			for (size_t k = 1; k < s->ncpus; k++)
				if (s->cpus[k] <= s->cpus[k - 1])
					abort();
		} else if (s->node < 0 || s->ncpus) {
			abort();
		}
	}
	char *ranks = cli_rankfile_ranks(&f);
	free(ranks);
	cli_rankfile_free(&f);
	return 0;
}
