/* SPDX-License-Identifier: BSD-3-Clause
 * MPI's own memory among a process's file mappings (issue 14): the shared-memory segments of MPI
 * transports and of their launchers, by the names their libraries give the files.  A table, pure: the
 * analysis (analysis_attr.c) asks it about every file mapping a sample lands in, and a match becomes one
 * variable of kind "mpi" per table entry (key "mpi:ID", pooled over a job's ranks) instead of a file
 * mapping named by its path (vader_segment.vm.0.3e620001.1 differs per job and rank).
 */
#ifndef NK_PROFILE_MPIMEM_H
#define NK_PROFILE_MPIMEM_H

/** What a mapping is: @p id stable (the variable's key is "mpi:" id), @p name what the report shows. */
struct nk__mpi_mem {
	const char *id;
	const char *name;
};

/**
 * The entry of the mapping of file @p path (as /proc/PID/maps writes it, " (deleted)" included), NULL when
 * it is not MPI's.  Pure, thread-safe.
 */
const struct nk__mpi_mem *nk__mpi_mapping(const char *path);

/**
 * The MPI ABI of a library a program needs (a DT_NEEDED name, "libmpi.so.40"): "openmpi" for Open MPI's
 * libraries (libmpi*.so.40: C, C++, Fortran bindings), "mpich" for the MPICH ABI (libmpich*.so.12,
 * libmpi.so.12, libmpifort.so.12, libmpicxx.so.12: MPICH, Intel MPI, MVAPICH), NULL otherwise.  Chooses the
 * profiler's PMPI wrappers (libnumakit_pmpi_<abi>.so).  Pure, thread-safe.
 */
const char *nk__mpi_abi_of_library(const char *soname);

#endif
