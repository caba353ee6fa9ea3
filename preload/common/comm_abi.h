/* SPDX-License-Identifier: BSD-3-Clause
 * What the PMPI wrappers (preload/mpi/pmpi.c, libnumakit_pmpi_<mpi>.so) hand the profiler runtime
 * (libnumakit_prof.so, preload/prof/comm.c): the traffic table of one MPI process (issue 14 §2).  Both are
 * preloaded by `numakit profile`; after MPI_Init the wrappers look up NK_COMM_ATTACH with dlsym and give the
 * runtime their table, which they keep for the life of the process.  The runtime writes it as the part's
 * COMM record when the part closes (exit, exec, fatal signal).  Only this header is shared: the wrappers
 * know nothing else of the runtime, the runtime nothing of MPI.
 */
#ifndef NK_PRELOAD_COMM_ABI_H
#define NK_PRELOAD_COMM_ABI_H

#include <stdatomic.h>
#include <stdint.h>

#define NK_COMM_ABI 1u
#define NK_COMM_ATTACH "nk__prof_comm_attach"

/* Messages and bytes sent to one peer, by any thread (relaxed atomics). */
struct nk_comm_cell {
	_Atomic uint64_t messages, bytes;
};

struct nk_comm_table {
	uint32_t abi;                /* NK_COMM_ABI */
	uint32_t rank, size;         /* this process's rank in MPI_COMM_WORLD and its size (>= 1) */
	_Atomic uint32_t finalized;  /* MPI_Finalize was called */
	struct nk_comm_cell *cell;   /* [2 * size]: peer p's point-to-point at 2p, its collectives at 2p + 1 */
};

/* The runtime's entry: 0 when it will record @p t, -1 when not (no part open, another table, a bad one). */
typedef int (*nk_comm_attach_fn)(struct nk_comm_table *t);
int nk__prof_comm_attach(struct nk_comm_table *t);

/* The cell of peer @p p: point-to-point (@p coll 0) or collectives (1). */
#define NK_COMM_CELL(p, coll) (2 * (size_t)(p) + (coll))

#endif
