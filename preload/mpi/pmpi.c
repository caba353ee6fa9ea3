/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_pmpi_<mpi>.so: PMPI wrappers that count what an MPI process sends to each peer (issue 14 §2,
 * docs/profile.md "Communication").  Built once per MPI whose mpi.h is found (Open MPI, MPICH), since their
 * handles differ (pointers, ints); never linked to an MPI library: the PMPI_* functions come from the
 * program's own libmpi, which `numakit profile` checked it links (DT_NEEDED) before preloading this.
 *
 * After MPI_Init the wrappers allocate a table of [2 x size] counters (point-to-point and collectives per
 * peer, by rank in MPI_COMM_WORLD) and hand it to the profiler runtime (../common/comm_abi.h), which
 * writes it as the part's COMM record when the process ends.  Without the runtime (preloaded alone) they
 * count nothing and only pass the calls on.
 *
 * What is counted, bytes as MPI_Type_size x count:
 *  - point-to-point: every send (MPI_Send, Bsend, Ssend, Rsend, their I- forms, Sendrecv,
 *    Sendrecv_replace) to its destination; MPI_PROC_NULL is not a peer;
 *  - collectives on intra-communicators, as what this rank's data is to each other rank by the standard's
 *    definition, not by the algorithm the library picks (a tree or a ring moves other bytes): Bcast and
 *    Scatter(v) the root to each other rank; Reduce and Gather(v) each rank to the root; Allreduce,
 *    Allgather(v) each rank to every other; Alltoall(v) each rank its block to each.  One message per
 *    peer and call.
 * Not counted: collectives on inter-communicators, non-blocking and persistent collectives and persistent
 * sends, one-sided communication (MPI_Put & co.), the Fortran 2008 bindings, and calls made through the
 * Fortran bindings where the MPI library routes them straight to PMPI_*.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/comm_abi.h"

#define NK_EXPORT __attribute__((visibility("default")))
#define XL_CACHE 16

static struct nk_comm_table tab;
static int live; /* the runtime took the table: count */

/* Rank translation of communicators other than MPI_COMM_WORLD: rank in the group (the remote group of an
 * inter-communicator) -> rank in MPI_COMM_WORLD, -1 none.  A few recent ones; MPI_Comm_free drops one. */
static struct xl {
	MPI_Comm comm;
	int used;
	int inter;
	int n;
	int *world;
} xl[XL_CACHE];
static unsigned xl_next;
static pthread_mutex_t xl_lock = PTHREAD_MUTEX_INITIALIZER;

static void setup(void)
{
	int r, n;
	if (PMPI_Comm_rank(MPI_COMM_WORLD, &r) != MPI_SUCCESS || PMPI_Comm_size(MPI_COMM_WORLD, &n) != MPI_SUCCESS ||
	    n < 1)
		return;
	nk_comm_attach_fn attach = (nk_comm_attach_fn)(uintptr_t)dlsym(RTLD_DEFAULT, NK_COMM_ATTACH);
	if (!attach)
		return;
	struct nk_comm_cell *cell = calloc(2 * (size_t)n, sizeof *cell);
	if (!cell)
		return;
	tab = (struct nk_comm_table){ .abi = NK_COMM_ABI, .rank = (uint32_t)r, .size = (uint32_t)n, .cell = cell };
	if (attach(&tab) == 0)
		live = 1;
	else
		free(cell);
}

static void add(int world, int coll, uint64_t bytes)
{
	if (world < 0 || (uint32_t)world >= tab.size)
		return;
	struct nk_comm_cell *c = &tab.cell[NK_COMM_CELL(world, coll)];
	atomic_fetch_add_explicit(&c->messages, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
}

static uint64_t bytes_of(int count, MPI_Datatype dt)
{
	int s = 0;
	if (count <= 0 || PMPI_Type_size(dt, &s) != MPI_SUCCESS || s <= 0)
		return 0;
	return (uint64_t)count * (uint64_t)s;
}

/* Under xl_lock: the translation of @p comm (built on first use), NULL when it cannot be had. */
static struct xl *xl_get(MPI_Comm comm)
{
	for (unsigned i = 0; i < XL_CACHE; i++)
		if (xl[i].used && xl[i].comm == comm)
			return &xl[i];
	int inter = 0, n = 0, ok = 0;
	MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
	int *in = NULL, *out = NULL;
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
		return NULL;
	if ((inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) == MPI_SUCCESS &&
	    PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS && PMPI_Group_size(g, &n) == MPI_SUCCESS && n > 0 &&
	    (in = malloc((size_t)n * sizeof *in)) && (out = malloc((size_t)n * sizeof *out))) {
		for (int i = 0; i < n; i++)
			in[i] = i;
		ok = PMPI_Group_translate_ranks(g, n, in, wg, out) == MPI_SUCCESS;
	}
	if (g != MPI_GROUP_NULL)
		PMPI_Group_free(&g);
	if (wg != MPI_GROUP_NULL)
		PMPI_Group_free(&wg);
	free(in);
	if (!ok) {
		free(out);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (out[i] == MPI_UNDEFINED)
			out[i] = -1;
	struct xl *e = &xl[xl_next++ % XL_CACHE];
	free(e->world);
	*e = (struct xl){ .comm = comm, .used = 1, .inter = inter, .n = n, .world = out };
	return e;
}

/* Count @p bytes from this rank to rank @p r of @p comm. */
static void to_peer(MPI_Comm comm, int r, int coll, uint64_t bytes)
{
	if (!live || r == MPI_PROC_NULL || r < 0)
		return;
	if (comm == MPI_COMM_WORLD) {
		add(r, coll, bytes);
		return;
	}
	pthread_mutex_lock(&xl_lock);
	struct xl *e = xl_get(comm);
	if (e && r < e->n)
		add(e->world[r], coll, bytes);
	pthread_mutex_unlock(&xl_lock);
}

/*
 * A collective on @p comm: this rank sends to each other rank i (to @p only alone when >= 0) the bytes of
 * counts[i] (or @p count when @p counts is NULL) elements of @p dt.  Inter-communicators: nothing.
 */
static void to_others(MPI_Comm comm, int only, int count, const int *counts, MPI_Datatype dt)
{
	int me, n;
	if (!live || PMPI_Comm_rank(comm, &me) != MPI_SUCCESS || PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
		return;
	uint64_t each = counts ? 0 : bytes_of(count, dt);
	int s = 0;
	if (counts && (PMPI_Type_size(dt, &s) != MPI_SUCCESS || s <= 0))
		return;
	struct xl *e = NULL;
	if (comm != MPI_COMM_WORLD) {
		pthread_mutex_lock(&xl_lock);
		e = xl_get(comm);
		if (!e || e->inter || e->n != n) {
			pthread_mutex_unlock(&xl_lock);
			return;
		}
	}
	for (int i = only >= 0 ? only : 0; i < (only >= 0 ? only + 1 : n); i++) {
		if (i == me || i >= n)
			continue;
		uint64_t b = counts ? (counts[i] > 0 ? (uint64_t)counts[i] * (uint64_t)s : 0) : each;
		add(e ? e->world[i] : i, 1, b);
	}
	if (e)
		pthread_mutex_unlock(&xl_lock);
}

static int is_root(MPI_Comm comm, int root)
{
	int me;
	return PMPI_Comm_rank(comm, &me) == MPI_SUCCESS && me == root;
}

/* ---------------------------------------------------------------- set-up and end */

NK_EXPORT int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		setup();
	return rc;
}

NK_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		setup();
	return rc;
}

NK_EXPORT int MPI_Finalize(void)
{
	if (live)
		atomic_store(&tab.finalized, 1);
	return PMPI_Finalize();
}

NK_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
	if (comm) {
		pthread_mutex_lock(&xl_lock);
		for (unsigned i = 0; i < XL_CACHE; i++)
			if (xl[i].used && xl[i].comm == *comm) {
				free(xl[i].world);
				xl[i] = (struct xl){ 0 };
			}
		pthread_mutex_unlock(&xl_lock);
	}
	return PMPI_Comm_free(comm);
}

/* ---------------------------------------------------------------- point-to-point */

#define SEND_LIKE(name)                                                                                        \
	NK_EXPORT int MPI_##name(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) \
	{                                                                                                      \
		to_peer(comm, dest, 0, bytes_of(count, dt));                                                   \
		return PMPI_##name(buf, count, dt, dest, tag, comm);                                           \
	}
#define ISEND_LIKE(name)                                                                                       \
	NK_EXPORT int MPI_##name(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, \
				 MPI_Request *req)                                                             \
	{                                                                                                      \
		to_peer(comm, dest, 0, bytes_of(count, dt));                                                   \
		return PMPI_##name(buf, count, dt, dest, tag, comm, req);                                      \
	}
SEND_LIKE(Send)
SEND_LIKE(Bsend)
SEND_LIKE(Ssend)
SEND_LIKE(Rsend)
ISEND_LIKE(Isend)
ISEND_LIKE(Ibsend)
ISEND_LIKE(Issend)
ISEND_LIKE(Irsend)

NK_EXPORT int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void *rbuf,
			   int rcount, MPI_Datatype rdt, int source, int rtag, MPI_Comm comm, MPI_Status *st)
{
	to_peer(comm, dest, 0, bytes_of(scount, sdt));
	return PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st);
}

NK_EXPORT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int source,
				   int rtag, MPI_Comm comm, MPI_Status *st)
{
	to_peer(comm, dest, 0, bytes_of(count, dt));
	return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, st);
}

/* ---------------------------------------------------------------- collectives */

NK_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	if (live && is_root(comm, root))
		to_others(comm, -1, count, NULL, dt);
	return PMPI_Bcast(buf, count, dt, root, comm);
}

NK_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
			 MPI_Comm comm)
{
	if (live && !is_root(comm, root))
		to_others(comm, root, count, NULL, dt);
	return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
}

NK_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	to_others(comm, -1, count, NULL, dt);
	return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

NK_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
			 MPI_Datatype rdt, int root, MPI_Comm comm)
{
	if (live && !is_root(comm, root))
		to_others(comm, root, scount, NULL, sdt);
	return PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

NK_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int *rcounts,
			  const int *displs, MPI_Datatype rdt, int root, MPI_Comm comm)
{
	if (live && !is_root(comm, root))
		to_others(comm, root, scount, NULL, sdt);
	return PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
}

NK_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
			  MPI_Datatype rdt, int root, MPI_Comm comm)
{
	if (live && is_root(comm, root))
		to_others(comm, -1, scount, NULL, sdt);
	return PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

NK_EXPORT int MPI_Scatterv(const void *sbuf, const int *scounts, const int *displs, MPI_Datatype sdt, void *rbuf,
			   int rcount, MPI_Datatype rdt, int root, MPI_Comm comm)
{
	if (live && is_root(comm, root) && scounts)
		to_others(comm, -1, 0, scounts, sdt);
	return PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
}

/* Each rank's block to every other: the send arguments, or the receive ones with MPI_IN_PLACE. */
static void block_to_all(MPI_Comm comm, const void *sbuf, int scount, MPI_Datatype sdt, int rcount, MPI_Datatype rdt)
{
	if (sbuf == MPI_IN_PLACE)
		to_others(comm, -1, rcount, NULL, rdt);
	else
		to_others(comm, -1, scount, NULL, sdt);
}

NK_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
			    MPI_Datatype rdt, MPI_Comm comm)
{
	block_to_all(comm, sbuf, scount, sdt, rcount, rdt);
	return PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

NK_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int *rcounts,
			     const int *displs, MPI_Datatype rdt, MPI_Comm comm)
{
	int me;
	if (sbuf != MPI_IN_PLACE)
		to_others(comm, -1, scount, NULL, sdt);
	else if (live && rcounts && PMPI_Comm_rank(comm, &me) == MPI_SUCCESS)
		to_others(comm, -1, rcounts[me], NULL, rdt);
	return PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

NK_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
			   MPI_Datatype rdt, MPI_Comm comm)
{
	block_to_all(comm, sbuf, scount, sdt, rcount, rdt);
	return PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

NK_EXPORT int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype sdt,
			    void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rdt, MPI_Comm comm)
{
	if (sbuf == MPI_IN_PLACE) {
		if (rcounts)
			to_others(comm, -1, 0, rcounts, rdt);
	} else if (scounts) {
		to_others(comm, -1, 0, scounts, sdt);
	}
	return PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}
