/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/job.h: jobs: the launcher and rank of a parallel job, the layout of its ranks on one host,
 * restricted machines.  Part of the public API; include <numakit.h>, which includes it (it also compiles
 * alone).  Conventions (errors, identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: experimental.  Declared only when NUMAKIT_EXPERIMENTAL is defined before <numakit.h> (or this
 * header) is included.  The functions are exported by libnumakit.so like the stable ones, but their
 * signatures, types and behaviour may change in any release, even a patch release: use them from code
 * built together with the numakit it links.  @since on each function names the release that introduced it.
 */
#ifndef NUMAKIT_JOB_H
#define NUMAKIT_JOB_H

#include "numakit/machine.h"

#endif /* NUMAKIT_JOB_H */

/* The declarations exist only with NUMAKIT_EXPERIMENTAL.  They have their own guard, outside
 * the header's, so that including the header again with the macro defined adds them after a
 * first inclusion without it (as zstd.h does with ZSTD_STATIC_LINKING_ONLY). */
#if defined(NUMAKIT_EXPERIMENTAL) && !defined(NUMAKIT_JOB_EXPERIMENTAL_H)
#define NUMAKIT_JOB_EXPERIMENTAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================
 * Jobs: placement of the ranks of a parallel job (docs/run.md "MPI jobs",
 * numakit-run(1)).  numakit links no MPI library: a rank learns
 * who it is from the variables its launcher sets, and the ranks of one host
 * share its NUMA nodes and cpus out without talking to each other, because
 * every rank computes the same layout from the same inputs.  Pure: the
 * caller passes the environment and the machine.
 * ==================================================================== */

/** Launchers nk_job_detect() recognises. */
enum nk_launcher {
	NK_LAUNCHER_NONE = 0,    /**< no launcher variable: a single process */
	NK_LAUNCHER_OPENMPI = 1, /**< Open MPI (mpirun/prterun): OMPI_COMM_WORLD_* */
	NK_LAUNCHER_PMI = 2,     /**< PMI-1/2: MPICH and Intel MPI Hydra (mpiexec): PMI_RANK, MPI_LOCALRANKID; srun --mpi=pmi2 */
	NK_LAUNCHER_PMIX = 3,    /**< a PMIx server (srun --mpi=pmix, PALS): PMIX_RANK */
	NK_LAUNCHER_SLURM = 4,   /**< a Slurm step (srun): SLURM_PROCID, SLURM_LOCALID */
};

/** Who the calling rank is, as its launcher's environment says. */
typedef struct nk_job_info {
	int launcher;   /**< enum nk_launcher */
	int rank;       /**< rank in the job (world), -1 when not given */
	int size;       /**< ranks in the job, -1 when not given */
	int local_rank; /**< rank among the job's ranks on this host, -1 when unusable */
	int local_size; /**< ranks of the job on this host, -1 when unusable */
	/** "" or the problems found, "; "-separated, each naming the variable and its value. */
	char problems[NK_ERROR_MSG_MAX];
} nk_job_info;

/**
 * Recognise the launcher of the calling process from @p envp, a
 * NULL-terminated array of "NAME=VALUE" strings (environ, or a recorded
 * one).  Launchers are tried in the order Open MPI, PMI, PMIx, Slurm:
 * a launcher started inside another's job (mpirun in an sbatch script)
 * sets its own variables and the outer ones stay stale.  Where a PMI or
 * PMIx launcher gives no local rank or size, those of a Slurm step with
 * the same rank are taken (srun --mpi=pmi2/pmix).  Slurm's local size is
 * SLURM_STEP_TASKS_PER_NODE ("2(x3),1") at SLURM_NODEID, else
 * SLURM_NTASKS_PER_NODE.  Fills @p out in every case.
 * Returns 0 when a launcher was recognised with a usable local rank and
 * size (@p out->problems may still name a variable that was ignored, e.g. a
 * rank >= size); NK_ENODATA when no launcher variable is set (launcher
 * NK_LAUNCHER_NONE, local rank 0 of 1); NK_EPARSE when a launcher was
 * recognised but its local rank or size is missing, not a number, or
 * inconsistent (local rank >= local size): @p out->problems says which;
 * NK_EINVAL (NULL).
 * @since 0.1 (experimental)
 */
NK_API int nk_job_detect(const char *const *envp, nk_job_info *out);

/** "Open MPI", "PMI (MPICH Hydra)", "PMIx", "Slurm", "none"; never NULL.  @since 0.1 (experimental) */
NK_API const char *nk_launcher_name(int launcher);

/** The longest job id nk_job_id() gives, in bytes (without the NUL). */
#define NK_JOB_ID_MAX 255

/**
 * The id of the calling rank's job as launcher @p launcher (nk_job_info.launcher
 * of the same @p envp) gives it: a text every rank of one job shares and
 * another job does not, so that profiles of the ranks can be told to belong
 * together (docs/profile.md, "Profiling an MPI job").  Read, first found:
 * Open MPI OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE; PMI PMI_JOBID
 * (srun --mpi=pmi2), else PMI_KVSNAME, else the Slurm step; PMIx
 * PMIX_NAMESPACE; Slurm, and PMI without its own: SLURM_JOB_ID (or
 * SLURM_JOBID) and SLURM_STEP_ID (or SLURM_STEPID) as "JOB.STEP", JOB alone
 * without a step.  A value with blanks, control or non-ASCII bytes is
 * skipped.  MPICH and Intel MPI Hydra started without Slurm give none.
 * Writes the id and a NUL into @p buf (@p cap bytes); @p var (may be NULL)
 * receives the variable's name (static; "SLURM_JOB_ID.SLURM_STEP_ID" for the
 * pair).  Returns the id's length (> 0), NK_ENODATA when the launcher gives
 * none (and for NK_LAUNCHER_NONE), NK_ERANGE when it is longer than
 * @p cap - 1 or NK_JOB_ID_MAX, NK_EINVAL (NULL, @p cap 0, unknown
 * launcher); on failure @p buf and @p var are left as they were.  Pure;
 * thread-safe.
 * @since 0.1 (experimental)
 */
NK_API int nk_job_id(const char *const *envp, int launcher, char *buf, size_t cap, const char **var);

/**
 * The layout of a job on one host: for every local rank its share of the
 * machine.  Immutable once built; concurrent reads are safe.
 */
typedef struct nk_job_layout nk_job_layout;

/** Flags of one rank's share (nk_job_layout_flags()). */
#define NK_JOB_SHARES_NODE 0x1u     /**< other local ranks have cpus on this rank's node */
#define NK_JOB_OVERSUBSCRIBED 0x2u  /**< some of its cpus belong to another local rank too */

/**
 * Share the cpus @p cpus (@p ncpus of them, OS ids; NULL: the machine's
 * allowed cpus) of @p m out among @p local_size ranks, evenly and without
 * overlap.  The cpu nodes K are the nodes holding some of the cpus, in id
 * order.  When local_size <= K, rank r gets K / local_size consecutive
 * nodes, the first K % local_size ranks one more, and all of their cpus.
 * When local_size > K, node j gets local_size / K consecutive ranks, the
 * first local_size % K nodes one more, and its cpus (in core order, SMT
 * siblings together) are cut into that many consecutive groups, the first
 * ones one cpu larger; a node with fewer cpus than ranks gives rank i of
 * it cpu i mod C (NK_JOB_OVERSUBSCRIBED).  A rank's memory nodes are its
 * cpu nodes that have memory, each followed by the memory-only nodes that
 * follow it: a node with memory and no cpus follows the nearest of the
 * cpu nodes shared out (distance from the cpu node, ties to the lower id);
 * a cpu node without memory (or whose memory this process may not use)
 * contributes the nearest node it may allocate on instead.  Only nodes this
 * process may allocate on are listed.
 * Deterministic: every rank of the host computes the same layout.
 * Errors: NK_EINVAL (NULL @p m, local_size < 1 or > 65536, empty set),
 * NK_ENODEV (a cpu @p m lacks; message names it), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_job_layout_build(const nk_machine *m, const int *cpus, size_t ncpus, int local_size,
			       nk_job_layout **out, nk_error *err);
/** Free a layout; NULL is a no-op.  @since 0.1 (experimental) */
NK_API void nk_job_layout_free(nk_job_layout *l);
/** Number of local ranks (> 0), or NK_EINVAL.  @since 0.1 (experimental) */
NK_API int nk_job_layout_size(const nk_job_layout *l);
/** Number of cpu nodes shared out, or NK_EINVAL.  @since 0.1 (experimental) */
NK_API int nk_job_layout_num_nodes(const nk_job_layout *l);
/**
 * Cpu nodes of local rank @p r, increasing; count/capacity semantics.  Errors: NK_EINVAL.
 * @since 0.1 (experimental)
 */
NK_API int nk_job_layout_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap);
/**
 * Memory nodes of local rank @p r, in the order above (own first node first); count/capacity.  NK_EINVAL.
 * @since 0.1 (experimental)
 */
NK_API int nk_job_layout_mem_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap);
/**
 * Cpus of local rank @p r in core order (its compact order); count/capacity.  Errors: NK_EINVAL.
 * @since 0.1 (experimental)
 */
NK_API int nk_job_layout_cpus(const nk_job_layout *l, int r, int *cpus, size_t cap);
/** NK_JOB_* bits of local rank @p r, or NK_EINVAL.  @since 0.1 (experimental) */
NK_API int nk_job_layout_flags(const nk_job_layout *l, int r);

/**
 * A copy of @p m in which this process may use only @p cpus and allocate
 * only on @p nodes (NULL, 0: the allowed nodes unchanged): what placement
 * strategies (nk_placement_build) see as the allowed set, so that a
 * strategy works inside a rank's share.  Both sets must lie within the
 * allowed sets of @p m (a restriction never widens).
 * Errors: NK_EINVAL (NULL, empty cpu set), NK_ENODEV (a cpu or node @p m
 * lacks), NK_EPERM (one @p m does not allow; the message names it), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_machine_restrict(const nk_machine *m, const int *cpus, size_t ncpus, const int *nodes, size_t nnodes,
			       nk_machine **out, nk_error *err);

/**
 * The cpus of the process's cpuset (cgroup) on the live machine, before its
 * affinity mask narrows them to nk_machine_allowed_cpus(); all online cpus
 * when there is no cpuset.  For other sources, the allowed cpus.  When the
 * two differ, something (taskset, a launcher binding its ranks) bound the
 * process.  Count/capacity semantics.
 * @since 0.1 (experimental)
 */
NK_API int nk_machine_cpuset_cpus(const nk_machine *m, int *cpus, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_EXPERIMENTAL && !NUMAKIT_JOB_EXPERIMENTAL_H */
