/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/profile.h: the profiler: the hooks a profiled program calls, running a program under a sampler,
 * loading, reporting, sharing matrices and rank mappings of profiles.  Part of the public API; include
 * <numakit.h>, which includes it (it also compiles alone).  Conventions (errors, identifiers, thread
 * safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: experimental.  Declared only when NUMAKIT_EXPERIMENTAL is defined before <numakit.h> (or this
 * header) is included.  The functions are exported by libnumakit.so like the stable ones, but their
 * signatures, types and behaviour may change in any release, even a patch release: use them from code
 * built together with the numakit it links.  @since on each function names the release that introduced it.
 */
#ifndef NUMAKIT_PROFILE_H
#define NUMAKIT_PROFILE_H

#include "numakit/job.h"

#endif /* NUMAKIT_PROFILE_H */

/* The declarations exist only with NUMAKIT_EXPERIMENTAL.  They have their own guard, outside
 * the header's, so that including the header again with the macro defined adds them after a
 * first inclusion without it (as zstd.h does with ZSTD_STATIC_LINKING_ONLY). */
#if defined(NUMAKIT_EXPERIMENTAL) && !defined(NUMAKIT_PROFILE_EXPERIMENTAL_H)
#define NUMAKIT_PROFILE_EXPERIMENTAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================
 * Profiling hooks (docs/profile.md, numakit-profile(1))
 *
 * A program run under `numakit profile` can bracket what is measured and
 * name what it does.  Outside the profiler every function here does
 * nothing and returns 0, so the calls can stay in production code.  They
 * are thread-safe and cheap (one indirect call when profiled).
 * ==================================================================== */

/** 1 when the calling process is being profiled by `numakit profile`, else 0.  @since 0.1 (experimental) */
NK_API int nk_profile_active(void);

/**
 * Begin phase @p name (at most 63 bytes are kept); the previous phase ends.
 * Samples carry the phase current in the process, and `numakit report`
 * (and `numakit advise`) show and use phases separately.  Under
 * `numakit run --plan`, the plan's entries for phase @p name are applied
 * (their pages migrated) before this returns.
 * Errors: NK_EINVAL (NULL or empty name), NK_ERANGE (more than 65535 phases).
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_phase(const char *name);

/**
 * Region of interest, like Memphis' memphis_mark: with `numakit profile
 * --roi`, nothing is sampled until nk_profile_start() and after
 * nk_profile_stop(); they may alternate any number of times.  Without
 * --roi, sampling runs from start to exit and these only record marks.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_start(void);
NK_API int nk_profile_stop(void);

/**
 * Give [addr, addr+len) a name for reports (e.g. "A" for a heap array that
 * would otherwise be known by its allocation site).  NUMA arrays are named
 * by numakit itself.  Under `numakit run --plan`, the plan's entries for
 * key "name:NAME" apply to the whole pages of the range (at once for "alloc"
 * entries, migrating).  Errors: NK_EINVAL.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_name(const void *addr, size_t len, const char *name);

/* ====================================================================
 * The profiler: run a program under a sampler, load the profile,
 * report which variables cause remote accesses.  docs/profile.md.
 * ==================================================================== */

/** Samplers of nk_profile_run(). */
enum nk_sampler {
	NK_SAMPLER_AUTO = 0,      /**< hw when the machine has precise memory sampling, else pagefault */
	NK_SAMPLER_HW = 1,        /**< perf_event_open: Intel PEBS load latency / stores, AMD IBS op */
	NK_SAMPLER_PAGEFAULT = 2, /**< software: access revoked on random pages, faults are samples */
	NK_SAMPLER_TRACE = 3,     /**< every access of a program built with `numakit cc` (ground truth) */
	NK_SAMPLER_TIMER = 4,     /**< software: the instruction each thread runs every period of its CPU time, decoded (x86-64, Zydis) */
};

/** What nk_profile_run() reports while the program runs (about twice a second). */
typedef struct nk_profile_progress {
	double elapsed_s;    /**< since the program started */
	unsigned long long samples; /**< samples taken so far (hw: read so far), over all processes */
	int child_pid;       /**< the program's pid (for forwarding signals) */
	int sampler;         /**< the sampler in use (enum nk_sampler, never AUTO) */
} nk_profile_progress;

/**
 * A rank of a parallel job, as nk_profile_run() records it in the profile
 * (RUN "job", docs/formats.md) so that the profiles of a job's ranks are read
 * as one job (nk_profile_load_many).  `numakit profile` fills it from
 * nk_job_detect(), nk_job_id() and gethostname().
 */
typedef struct nk_profile_job {
	int launcher;       /**< enum nk_launcher, not NK_LAUNCHER_NONE */
	int rank;           /**< rank in the job, 0 .. 2^24 */
	int size;           /**< ranks in the job, > rank; -1 unknown */
	int local_rank;     /**< rank on its host, below local_size; -1 unknown */
	int local_size;     /**< ranks of the job on the host; -1 unknown */
	const char *host;   /**< the host's name (at most 255 bytes); NULL or "": unknown */
	const char *id;     /**< the job's id (nk_job_id(), at most NK_JOB_ID_MAX bytes); NULL or "": none given */
} nk_profile_job;

typedef struct nk_profile_opts {
	int sampler;             /**< enum nk_sampler */
	double rate;             /**< pagefault: samples/s per process; hw: one sample per RATE events; trace: one access in RATE; 0 = default */
	size_t min_size;         /**< allocations smaller than this are not tracked (0 = 64 KiB) */
	int roi;                 /**< 1: sample only between nk_profile_start() and nk_profile_stop() */
	const char *output;      /**< the profile to write (required) */
	const char *runtime;     /**< path of libnumakit_prof.so; NULL: next to libnumakit, then the build tree */
	char *const *envp;       /**< the program's environment; NULL: this process's */
	unsigned long long seed; /**< sampler randomness; 0: from the clock */
	void (*progress)(void *arg, const nk_profile_progress *p); /**< may be NULL */
	void *progress_arg;
	double max_overhead;     /**< pagefault: the sampler's own cost cap, % of wall time; 0 = 5; >= 100 = no cap (limit studies, emulators) */
	int small_blocks;        /**< 1: also record heap blocks smaller than min_size, by allocation site (each such malloc then costs its call stack: 2-30x); 0: off */
	const nk_profile_job *job; /**< the rank of a job this run is (recorded in the profile); NULL: not a job's rank */
	/**
	 * "NAME=VALUE" entries, NULL-terminated (NULL: none), added to the program's environment only when it
	 * runs under the pagefault sampler (with NK_SAMPLER_AUTO, only when it falls back to it), each one
	 * whose NAME the environment lacks.  For settings that must not apply under other samplers: `numakit
	 * profile` under a launcher passes the MPI transport settings that keep peers from reading this rank's
	 * memory (docs/profile.md, "Profiling an MPI job").
	 */
	const char *const *pagefault_env;
	/**
	 * 0 (default): when the program links an MPI library (Open MPI, or one of MPICH's ABI) and numakit was
	 * built with its PMPI wrappers, preload them too: each process's profile then holds what it sent to
	 * each peer (docs/profile.md, "Communication").  1: do not (another PMPI tool preloaded by the user
	 * would be bypassed: PMPI wrappers do not chain).
	 */
	int no_mpi_traffic;
} nk_profile_opts;

typedef struct nk_profile_run_result {
	int exit_status;     /**< the program's exit status, or -1 when killed by a signal */
	int term_signal;     /**< the signal that killed it, 0 if none */
	int sampler;         /**< the sampler used (enum nk_sampler) */
	char fallback[256];  /**< why the hw sampler was not used ("" when it was, or was not asked for) */
	unsigned long long samples;
	int processes;       /**< processes profiled (the program and its children) */
	char warnings[512];  /**< e.g. a child killed before closing its part; "" when none */
} nk_profile_run_result;

/**
 * Run @p argv (argv[0] looked up in PATH) under the profiler and write the
 * profile to @p o->output, also when the program fails or is killed.  Blocks
 * until the program and its children have exited.  @p m (may be NULL: the
 * live machine) is stored in the profile.  Returns 0 when the profile was
 * written, whatever the program's exit status (see @p res).
 * With @p o->job the profile records the rank (nothing else changes: the
 * caller chooses an output per rank).
 * Errors: NK_EINVAL (no output, empty argv, bad option or job), NK_ENOENT (program
 * or runtime library not found: the message names it), NK_ENOSYS (sampler
 * hw asked for explicitly and unavailable: the message says why), NK_EIO
 * (cannot write the profile), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_run(const nk_machine *m, const nk_profile_opts *o, char *const argv[],
			  nk_profile_run_result *res, nk_error *err);

/** A loaded, attributed and analysed profile. */
typedef struct nk_profile nk_profile;

/**
 * Load a profile written by nk_profile_run, symbolise it (the program's ELF
 * files must still be where they were; missing ones are warned about in the
 * report) and analyse it.  Errors: NK_ENOENT, NK_EIO, NK_EPARSE (corrupt or
 * truncated: the message names the offset and record), NK_EVERSION, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_load(const char *path, nk_profile **out, nk_error *err);
/**
 * A job (docs/report.md "Jobs"): when a path is a folder (`numakit profile
 * -o DIR` under a launcher writes DIR/rank-R.nkp) or the profiles are ranks
 * of a job (their RUN record names the job), they are loaded as one job:
 * each rank analysed alone, the report (nk_profile_report) the job's.  They
 * must be ranks of one job: one program, launcher, job id and size, no rank
 * twice, no other profile among them (else NK_EINVAL naming the files; a
 * folder without rank files NK_ENOENT); missing ranks are a warning of the
 * report.  A job's profile has no one sharing matrix (nk_profile_sharing:
 * NK_EINVAL) and no one analysis for nk_profile_advise()/whatif (NK_EINVAL:
 * load it with nk_profile_load_pooled()).
 *
 * Otherwise: load the @p n profiles @p paths (each of one run or several: `numakit
 * profile --runs N`) as independent runs of one program and analyse them
 * together (docs/report.md, "Several runs"): a variable of every run is
 * matched by its key (stable under ASLR, not its address) and its samples
 * are pooled; access counts are the mean per run; threads are matched by
 * process ordinal and thread index, phases by name.  One path of one run
 * is exactly nk_profile_load().  Errors: those of nk_profile_load(), and
 * NK_EINVAL when the runs are of different programs (the first process's
 * executable, else the command) or of machines whose node ids, cpus per
 * node or distances differ (the message names both files); runs with other
 * arguments, or one without a machine description, only add a warning to
 * the report.  Thread safety: as nk_profile_load().
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_load_many(const char *const *paths, size_t n, nk_profile **out, nk_error *err);
/**
 * As nk_profile_load_many(), except for a job: its ranks are loaded as
 * runs of one program (an SPMD code: each variable's samples pooled by key
 * over the ranks, counts the mean per rank), one analysis that
 * nk_profile_advise() and nk_profile_whatif() take, so that one plan serves
 * every rank.  Not a job: exactly nk_profile_load_many().  The job's
 * warnings (missing ranks, ...) and a line saying the ranks are pooled are
 * in the report's warnings.  Errors: those of nk_profile_load_many(), and
 * NK_EINVAL when the ranks ran on machines whose node ids, cpus per node or
 * distances differ (pass the rank files of one kind of host).
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_load_pooled(const char *const *paths, size_t n, nk_profile **out, nk_error *err);
/**
 * Write one profile file at @p output holding every run of the @p n
 * profiles @p paths (docs/formats.md: version 1 when that is one run,
 * version 2 for several), after checking that they are runs of one program
 * on one machine as nk_profile_load_many() does.  The file is written
 * atomically; @p paths are left as they are.  Errors: NK_ENOENT, NK_EIO,
 * NK_EPARSE, NK_EVERSION, NK_EINVAL (different programs or machines),
 * NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_combine(const char *const *paths, size_t n, const char *output, nk_error *err);
/** Free a loaded profile; NULL is a no-op.  @since 0.1 (experimental) */
NK_API void nk_profile_free(nk_profile *p);

/** Report formats of nk_profile_report(). */
enum nk_report_format { NK_REPORT_TEXT = 0, NK_REPORT_JSON = 1, NK_REPORT_HTML = 2 };

/**
 * The report of @p p in @p format as one malloc'ed NUL-terminated string in
 * *out (free() it): per node, variables by remote samples with their top
 * source lines; page classes; thread x node and thread x thread (sharing)
 * matrices; a diagnosis and a suggested policy per variable.  HTML is one
 * self-contained file.  A job's profile (nk_profile_load_many of a job's
 * ranks) gives the job's report instead: totals, a rank x node table per
 * host, the ranks that differ, the variables across ranks (JSON format
 * "numakit-job-report"; docs/report.md "Jobs").  Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_report(const nk_profile *p, int format, char **out, nk_error *err);

/**
 * The thread x thread sharing matrix of @p p as the text format of
 * nk_sharing_parse() (docs/formats.md), for `numakit run --pin sharing:FILE`.
 * Errors: NK_EINVAL (also: a job's profile, whose ranks are processes of
 * their own), NK_ENODATA (fewer than two threads sampled), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_sharing(const nk_profile *p, char **out, nk_error *err);

/** nk_profile_rankmap's format for an Open MPI rankfile (the other formats: NK_REPORT_TEXT, NK_REPORT_JSON). */
#define NK_RANKMAP_OPENMPI 16

/**
 * The rank mapping of a job's profile @p p (nk_profile_load_many of a job whose ranks recorded their MPI
 * traffic; docs/profile.md "Rank mapping"): the slots the ranks ran in (a host and a node each) given to
 * the ranks so that the pairs that exchange the most bytes sit closest, each node and host keeping its
 * number of ranks; never worse than as profiled.  @p format: NK_REPORT_TEXT (the costs and each rank's
 * move), NK_REPORT_JSON ("numakit-rank-map" version 1) or NK_RANKMAP_OPENMPI (a rankfile for
 * `mpirun --mca rmaps_rank_file_physical 1 -rf`).  Errors: NK_EINVAL (not a job, no MPI traffic recorded,
 * a rank whose host, node or machine is unknown: the message says which), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_rankmap(const nk_profile *p, int format, char **out, nk_error *err);

/** One rank's slot in a proposed rank mapping (nk_profile_rankmap_whatif). */
typedef struct nk_rank_slot {
	int rank;         /**< the rank (MPI_COMM_WORLD) */
	const char *host; /**< a host of the job, as its profile names it; NULL or "": the rank's own host */
	int node;         /**< a node of that host, or -1: the node of @p cpus */
	const int *cpus;  /**< with node -1: the slot's cpus (physical ids), all on one node of the host */
	size_t ncpus;
} nk_rank_slot;

/**
 * What a proposed rank mapping would do to the job of @p p (a job's profile with MPI traffic, as for
 * nk_profile_rankmap; docs/whatif.md "A rank mapping"): communication x distance as profiled and under
 * the mapping, in total and per pair of ranks, and each rank's remote-access fraction and stall estimate
 * as profiled and under the mapping, by whatif's model, under two assumptions on where a moved rank's
 * memory ends up: it follows the rank (re-run with its memory bound there, `numakit run --rank-map`, or
 * first touched by its threads now on that node) or it stays where it was (memory the program binds
 * itself).  @p slots (@p n of them, each rank at most once) give the ranks their slots; ranks of the job
 * without one stay where they ran.  @p format: NK_REPORT_TEXT or NK_REPORT_JSON
 * ("numakit-rankmap-whatif" version 1).  The rank files are read again, one at a time.
 * Errors: NK_EINVAL (not a job, no traffic, a slot naming a rank the job lacks, a rank twice, a host of
 * no rank of the job, a node or cpu its machine lacks, cpus on several nodes: the message says which),
 * NK_ENOMEM, and the errors of reading a rank's file again (NK_ENOENT, NK_EIO, NK_EPARSE).
 * Nothing is changed on error.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_rankmap_whatif(const nk_profile *p, const nk_rank_slot *slots, size_t n, int format,
				     char **out, nk_error *err);

/**
 * Whether the samples of @p p cover the whole run: *complete is 1, or 0 when
 * a process did not close its profile (killed) or samples were dropped (the
 * sample budget spent, the runtime's ring full), which leaves part of the run
 * unsampled or under-sampled.  @p why may be NULL; else *why is NULL when
 * complete, or the reasons, malloc'ed, one line each ("process 4242: 3
 * samples dropped"), separated by "; " (free() it).  The report says the same
 * (docs/report.md, "Coverage").  A job covers its run when every rank's
 * profile does; its reasons start with the rank ("rank 3: process ...").
 * Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_coverage(const nk_profile *p, int *complete, char **why, nk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_EXPERIMENTAL && !NUMAKIT_PROFILE_EXPERIMENTAL_H */
