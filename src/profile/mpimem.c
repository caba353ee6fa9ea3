/* SPDX-License-Identifier: BSD-3-Clause
 * MPI's own memory among file mappings (mpimem.h).  Each row is a file name the MPI library (or its
 * launcher) gives a shared-memory segment, as seen in /proc/PID/maps of ranks on this project's host
 * (Debian 12: Open MPI 4.1.4, MPICH 4.0.2 with UCX 1.13, PMIx 4.2) or read in the library's source (Open
 * MPI 5's sm segment).  Names no MPI library owns alone are not here: /SYSV00000000 (UCX's sysv
 * transport, but any System V segment), /dev/zero (deleted) (any shared anonymous mapping).
 */
#include "profile/mpimem.h"

#include <string.h>

enum { BASE = 0, DIR = 1 }; /* the file name begins with, or a folder of the path begins with */

static const struct {
	int where;
	const char *prefix;
	struct nk__mpi_mem mem;
} rows[] = {
	/* Open MPI 1.8-4.1, BTL vader: one per local rank, DIR/vader_segment.HOST[.UID].JOBID.RANK */
	{ BASE, "vader_segment.", { "openmpi-vader", "MPI shared memory (Open MPI vader segment)" } },
	/* Open MPI 5, BTL sm: DIR/sm_segment.HOST.UID.JOBID.RANK */
	{ BASE, "sm_segment.", { "openmpi-sm", "MPI shared memory (Open MPI sm segment)" } },
	/* Open MPI, one-sided component sm (MPI_Win_allocate_shared): /dev/shm/osc_sm.HOST.JOBID.RANK.N */
	{ BASE, "osc_sm.", { "openmpi-osc-sm", "MPI shared window (Open MPI osc sm)" } },
	/* MPICH (MPL_shm): shared windows, intranode collectives: /dev/shm/mpich_shar_tmpXXXXXX */
	{ BASE, "mpich_shar_tmp", { "mpich-shm", "MPI shared memory (MPICH)" } },
	/* UCX's posix shared-memory transport (MPICH ch4:ucx, Open MPI's pml ucx): /dev/shm/ucx_shm_posix_X */
	{ BASE, "ucx_shm_posix_", { "ucx-posix", "MPI shared memory (UCX posix transport)" } },
	/* PMIx's key-value store (Open MPI's launcher): SESSION/pmix_dstor_ds21_PID/smseg-..., dstore_sm.lock */
	{ DIR, "pmix_dstor_", { "pmix-dstore", "MPI launcher's shared memory (PMIx key-value store)" } },
};

/* 1 when a folder of @p path, the file name excluded, begins with @p prefix. */
static int dir_starts(const char *path, const char *base, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *p = path; (p = strchr(p, '/')) && p + 1 < base; p++)
		if (!strncmp(p + 1, prefix, n))
			return 1;
	return 0;
}

const struct nk__mpi_mem *nk__mpi_mapping(const char *path)
{
	if (!path || path[0] != '/')
		return NULL;
	const char *base = strrchr(path, '/') + 1;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *pre = rows[i].prefix;
		if (rows[i].where == BASE ? !strncmp(base, pre, strlen(pre)) : dir_starts(path, base, pre))
			return &rows[i].mem;
	}
	return NULL;
}

const char *nk__mpi_abi_of_library(const char *soname)
{
	if (!soname || strncmp(soname, "libmpi", 6))
		return NULL;
	const char *so = strstr(soname, ".so.");
	if (!so)
		return NULL;
	const char *v = so + 4;
	if (!strncmp(soname, "libmpich", 8) || (!strncmp(v, "12", 2) && (v[2] == 0 || v[2] == '.')))
		return "mpich";
	if (!strncmp(v, "40", 2) && (v[2] == 0 || v[2] == '.'))
		return "openmpi";
	return NULL;
}
