/* SPDX-License-Identifier: BSD-3-Clause
 * Rank maps for `numakit run --rank-map FILE` and `numakit whatif --rank-map FILE` (issue 14 §3): which
 * host and node (or which cpus) each rank of a job gets.  Two formats, told apart by their first
 * character:
 *   - an Open MPI rankfile (rankfile(5) of mpirun -rf), as `numakit advise --ranks -o FILE` writes it:
 *         # comment
 *         rank 0=n0 slot=2-3
 *     the slots physical cpu lists (mpirun --mca rmaps_rank_file_physical 1);
 *   - numakit's JSON mapping, as `numakit advise --ranks --json` prints it: {"format":
 *     "numakit-rank-map", "version": 1, "map": [{"rank": 0, "host": "n0", "node": 1, ...}]}.
 * Pure text handling (no machine, no system call), so that tests/unit/test_rankfile.c and
 * fuzz/fuzz_rankfile.c reach every case; reading the file is cli_rankfile_load's.
 */
#ifndef NK_CLI_RANKFILE_H
#define NK_CLI_RANKFILE_H

#include <stddef.h>

#define CLI_RANKFILE_MAX_RANK ((1 << 24) - 1) /* as a job's ranks (NK__JOB_MAX_RANKS) */
#define CLI_RANKFILE_MAX_BYTES (64u << 20)    /* a larger file is refused */

/** Where one rank goes. */
struct cli_rank_slot {
	int rank;       /* 0 .. CLI_RANKFILE_MAX_RANK */
	char *host;     /* as written ("" none given; Open MPI's "+n1" relative forms kept as they are) */
	int node;       /* the node (JSON), -1 when the slot names cpus */
	int *cpus;      /* the slot's physical cpus, increasing (rankfile), NULL when it names a node */
	size_t ncpus;
	int line;       /* where it was given: the rankfile's line, the JSON map's index + 1 */
};

/** A parsed map: its slots sorted by rank, each rank once. */
struct cli_rankfile {
	int json;       /* 1: numakit-rank-map JSON, 0: Open MPI rankfile */
	struct cli_rank_slot *slots;
	size_t n;
};

/**
 * Parse @p len bytes of @p text (NUL bytes are an error, no terminator needed) into @p out.  Returns 0, or
 * -1 with one printable line in @p why ("line 3: ...", "map[2]: ...") and @p out zeroed: empty map, a
 * line that is not "rank N=HOST slot=CPUS", Open MPI's socket:core slots (logical numbering: refused,
 * the message names the physical form), a rank given twice, numbers out of range, JSON that is not a
 * numakit-rank-map of version 1, out of memory.
 */
int cli_rankfile_parse(const char *text, size_t len, struct cli_rankfile *out, char *why, size_t whycap);

/** cli_rankfile_parse of the file @p path (at most CLI_RANKFILE_MAX_BYTES); -1 with @p why on error. */
int cli_rankfile_load(const char *path, struct cli_rankfile *out, char *why, size_t whycap);

/** The slot of rank @p rank, NULL when the map does not have it. */
const struct cli_rank_slot *cli_rankfile_find(const struct cli_rankfile *f, int rank);

/** The map's ranks as a compact list ("0-3,8"), malloc'ed; NULL on ENOMEM. */
char *cli_rankfile_ranks(const struct cli_rankfile *f);

/** Free what @p f holds and zero it; NULL-safe. */
void cli_rankfile_free(struct cli_rankfile *f);

#endif
