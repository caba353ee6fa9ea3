/* SPDX-License-Identifier: BSD-3-Clause
 * MPI traffic: the table the PMPI wrappers attach (../common/comm_abi.h) and its COMM record.
 *
 * The wrappers (preload/mpi/pmpi.c) count what the process sends, by peer; this file only keeps their table
 * and writes it when the part closes.  The record's buffer is mapped at attach time, so writing it takes
 * no allocation (a fatal signal may be what closes the part).  Only the process that attached writes it:
 * a child forked after MPI_Init inherits the table and would write its parent's traffic again.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/comm_abi.h"
#include "alloc_impl.h"
#include "prof.h"
#include "runtime_impl.h"

static struct nk_comm_table *_Atomic comm_table;
static pid_t comm_pid;
static unsigned char *comm_buf; /* nk__nkp_comm + 2 * size peers */

NKP_EXPORT int nk__prof_comm_attach(struct nk_comm_table *t)
{
	if (!nkp.active || !t || t->abi != NK_COMM_ABI || !t->size || t->rank >= t->size || !t->cell ||
	    atomic_load(&comm_table))
		return -1;
	size_t len = sizeof(struct nk__nkp_comm) + 2 * (size_t)t->size * sizeof(struct nk__nkp_comm_peer);
	void *b = nkp_real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return -1;
	comm_buf = b;
	comm_pid = getpid();
	atomic_store(&comm_table, t);
	return 0;
}

size_t nkp_comm_record(const void **out)
{
	struct nk_comm_table *t = atomic_load(&comm_table);
	if (!t || getpid() != comm_pid)
		return 0;
	struct nk__nkp_comm h = { .rank = t->rank, .size = t->size, .time_ns = nkp_now(),
				  .flags = atomic_load_explicit(&t->finalized, memory_order_relaxed) ? NK__COMM_FINALIZED : 0 };
	unsigned char *p = comm_buf + sizeof h;
	for (uint32_t i = 0; i < 2 * t->size; i++) {
		struct nk__nkp_comm_peer e = {
			.peer = i / 2, .kind = i % 2,
			.messages = atomic_load_explicit(&t->cell[i].messages, memory_order_relaxed),
			.bytes = atomic_load_explicit(&t->cell[i].bytes, memory_order_relaxed) };
		if (!e.messages && !e.bytes)
			continue;
		memcpy(p, &e, sizeof e);
		p += sizeof e;
		h.n++;
	}
	memcpy(comm_buf, &h, sizeof h);
	*out = comm_buf;
	return (size_t)(p - comm_buf);
}
