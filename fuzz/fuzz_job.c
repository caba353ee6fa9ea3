/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the job reader's parsers (src/profile/job.c): the peek at a profile's first records
 * (nk__job_peek_buffer: file header, RUN and its "job" object, META's executable) and the checks that
 * rank files are one job (nk__job_check).
 *
 * The input is up to 8 profiles' starts separated by "\n--RANK--\n".  Each is peeked at: rejected with
 * a code and a message and its output untouched, or accepted with a job whose values are in range.
 * The peeks that name a job are then checked together as rank files: refused with NK_EINVAL and a
 * message, or accepted sorted by rank, each rank once, none at or beyond the size, and the missing
 * ranks exactly the ranks below the size without a file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char sep[] = "\n--RANK--\n";
#define MAX_PARTS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nk__job_inputs in;
	size_t n = 0;

	memset(&in, 0, sizeof in);
	in.paths = calloc(MAX_PARTS, sizeof *in.paths);
	in.peeks = calloc(MAX_PARTS, sizeof *in.peeks);
	if (!in.paths || !in.peeks)
		abort();
	while (n < MAX_PARTS) {
		const uint8_t *cut = memmem(data, size, sep, sizeof sep - 1);
		size_t len = cut ? (size_t)(cut - data) : size;
		uint8_t *copy = malloc(len ? len : 1); /* an exact-size copy: a read past the end is caught */
		struct nk__job_peek pk;
		nk_error err = { 0, "" };
		if (!copy)
			abort();
		memcpy(copy, data, len);
		memset(&pk, 0x5a, sizeof pk);
		int rc = nk__job_peek_buffer(copy, len, "rank.nkp", &pk, &err);
		free(copy);
		if (rc) {
			unsigned char sentinel[sizeof pk];
			memset(sentinel, 0x5a, sizeof sentinel);
			if ((rc != NK_EPARSE && rc != NK_EVERSION && rc != NK_ENOMEM) || err.code != rc || !err.message[0] ||
			    memcmp(&pk, sentinel, sizeof pk))
				abort();
		} else {
			if (!pk.exe || !pk.command)
				abort();
			if (pk.has_job) {
				if (pk.launcher < NK_LAUNCHER_OPENMPI || pk.launcher > NK_LAUNCHER_SLURM || pk.rank < 0 ||
				    pk.rank >= NK__JOB_MAX_RANKS || (pk.size >= 0 && pk.rank >= pk.size) || pk.size == 0 ||
				    (pk.local_rank < 0) != (pk.local_size < 0) ||
				    (pk.local_size >= 0 && pk.local_rank >= pk.local_size) || (pk.host && !pk.host[0]) ||
				    (pk.id && !pk.id[0]))
					abort();
				in.peeks[n] = pk;
				in.paths[n] = malloc(16);
				if (!in.paths[n])
					abort();
				memcpy(in.paths[n], "rank-file-", 10);
				in.paths[n][10] = (char)('0' + n);
				in.paths[n][11] = '\0';
				n++;
			} else {
				nk__job_peek_free(&pk);
			}
		}
		if (!cut)
			break;
		size -= len + sizeof sep - 1;
		data = cut + sizeof sep - 1;
	}
	in.n = n;
	in.is_job = 1;
	if (n) {
		nk_error err = { 0, "" };
		int rc = nk__job_check(&in, &err);
		if (rc) {
			if ((rc != NK_EINVAL && rc != NK_ENOMEM) || err.code != rc || !err.message[0])
				abort();
		} else {
			size_t below = 0;
			for (size_t i = 0; i < in.n; i++) {
				if (i && in.peeks[i].rank <= in.peeks[i - 1].rank)
					abort();
				if (in.size >= 0 && in.peeks[i].rank >= in.size)
					abort();
				below++;
			}
			if (in.size >= 0 && in.n_missing + below != (size_t)in.size)
				abort();
			for (size_t k = 0; k < in.n_missing; k++)
				for (size_t i = 0; i < in.n; i++)
					if (in.peeks[i].rank == in.missing[k])
						abort();
		}
	}
	nk__job_inputs_free(&in);
	return 0;
}
