/* SPDX-License-Identifier: BSD-3-Clause
 * Job profiles (issue 14 §2, docs/profile.md "Profiling an MPI job", docs/report.md "Jobs"): the
 * profiles of a parallel job's ranks, one file per rank (`numakit profile` under a launcher writes
 * DIR/rank-R.nkp, the rank in the RUN record's "job" object), read as one job.
 *
 * job.c finds the rank files (a folder's rank-N.nkp), reads what each says about itself from its
 * first records (the peek: RUN and the first META, no more), refuses what is not one job, then
 * analyses each rank as the single profile it is (the same loading and analysis as `numakit report
 * RANK.nkp`, one rank in memory at a time) and keeps a summary per rank: totals, the rank x page-node
 * counts, each variable's counts and the sums the interval of a pooled remote share needs.
 * report_job.c writes the job's report (text, JSON, HTML).  Private to src/profile/.
 */
#ifndef NK_PROFILE_JOB_H
#define NK_PROFILE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "profile/analysis.h"

/* Ranks that differ from the others (docs/report.md, "Ranks that differ"). */
#define NK__JOB_MIN_RANKS 3       /* ranks with a known remote share needed before one is called out */
#define NK__JOB_DIFF 0.10         /* a remote share at least this far from the median rank's ... */
#define NK__JOB_LOAD 2.0          /* accesses more than this many times the median rank's, or less than 1/this */
#define NK__JOB_SPREAD_S 120      /* ranks without a job id started further apart than this: warned about */
#define NK__JOB_TOP 3             /* top variables kept per rank */
#define NK__JOB_MAX_RANKS (1 << 24)
#define NK__JOB_MAX_CPUS (1 << 16) /* cpu numbers of a rank's cpus (RUN job "cpus") */

/** What a profile says about itself in its first records. */
struct nk__job_peek {
	char *exe;            /* the first process's META exe, else RUN command[0], else "?" */
	char *command;        /* RUN command, joined by spaces ("?" none) */
	int has_job;          /* RUN has a "job" object */
	int launcher;         /* enum nk_launcher (has_job) */
	int rank, size, local_rank, local_size; /* -1 unknown */
	char *host, *id;      /* NULL unknown */
	uint64_t start_unix_ns;
	int *cpus;            /* the cpus the rank was given at its start (RUN job "cpus"), sorted; NULL unknown */
	size_t n_cpus;
};

/**
 * The peek of the profile in @p data (@p len bytes, named @p name in messages): the file header, RUN
 * (required first), and the records up to the first META (MACHINE and PROCESS skipped).  A "job"
 * object, when RUN has one, must hold a known launcher and ranks in range.  Returns 0, NK_EPARSE /
 * NK_EVERSION (the message names @p name, the offset and the record, as the reader's do), NK_ENOMEM.
 * For the fuzzer and nk__job_peek_file.
 */
int nk__job_peek_buffer(const void *data, size_t len, const char *name, struct nk__job_peek *out, nk_error *err);
/** nk__job_peek_buffer of the file @p path, reading only its first records.  Adds NK_ENOENT, NK_EIO. */
int nk__job_peek_file(const char *path, struct nk__job_peek *out, nk_error *err);
void nk__job_peek_free(struct nk__job_peek *p);

/** The inputs of a load: files, directories expanded, each file's peek; a job or not. */
struct nk__job_inputs {
	char **paths;         /* the files: a folder's rank-N.nkp by rank, other paths as given */
	struct nk__job_peek *peeks; /* [n] (when is_job) */
	size_t n;
	int is_job;           /* a folder was given, or the files' RUN records have "job" objects */
	/* a job (is_job): sorted by rank */
	int launcher, size;   /* size -1 unknown */
	char *id;             /* NULL none */
	int *missing;         /* ranks below size without a file */
	size_t n_missing;
	char **warnings;
	size_t n_warnings;
};

/**
 * Expand and check @p paths (@p n of them): a folder stands for its rank-N.nkp files.  When they form
 * a job, peek every file and check that they are one job: every file a rank (no other profile mixed
 * in), one program, one launcher, one job id where given, one size, no rank twice and none beyond the
 * size.  Missing ranks, ranks without an id among ranks with one, ranks without an id started far
 * apart, and parts left in the folder are warnings.  Not a job: the paths are kept as given and
 * nothing is read (the loader's own errors then speak).  Returns 0; NK_EINVAL (not one job: the
 * message names the files and why), NK_ENOENT (a folder without rank files), NK_EPARSE /
 * NK_EVERSION / NK_EIO (a rank file's first records), NK_ENOMEM.
 */
int nk__job_inputs(const char *const *paths, size_t n, struct nk__job_inputs *out, nk_error *err);
/** The checks of nk__job_inputs on @p in->peeks and paths (sorted by rank on success); for the fuzzer. */
int nk__job_check(struct nk__job_inputs *in, nk_error *err);
void nk__job_inputs_free(struct nk__job_inputs *in);

/** A share and its interval. */
struct nk__job_share {
	int known;            /* samples with both nodes known */
	double r, lo, hi, n_eff;
	uint64_t clusters, samples;
	int decided;          /* nk__an_decided's rule */
};

/** One variable in one rank. */
struct nk__job_vrank {
	size_t rank;          /* index into nk__job.ranks */
	uint64_t samples, acc, local, remote;
	struct nk__job_share share;  /* the rank's own (its report's interval) */
	struct nk__cl_stats st;     /* for the pooled share */
	int diag, fix;
	const char *policy;
	int differs;          /* its share differs from the median rank's (the job's rule) */
};

/** A variable of the job: the same key in several ranks. */
struct nk__job_var {
	char *key, *name;
	int kind;
	uint64_t size;        /* the largest of the ranks' */
	uint64_t samples, acc, local, remote, unknown; /* summed over the ranks */
	struct nk__job_share share; /* pooled over the ranks */
	struct nk__job_vrank *per; /* by rank */
	size_t n_per;
	int diag_count[5];    /* ranks per enum nk__diag */
	int median;           /* index into per of the median rank's share, -1 fewer than NK__JOB_MIN_RANKS */
	size_t n_differ;
};

/** One rank. */
struct nk__job_rank {
	char *path;
	int rank, local_rank, local_size; /* -1 unknown */
	char *host;           /* "" unknown */
	size_t host_index;
	char *command, *sampler;
	uint64_t wall_ns;
	int processes, runs;
	uint64_t samples, acc, local, remote, unknown;
	struct nk__cl_stats st;
	struct nk__job_share share;
	/* accesses (means per run, as its report) and samples by the node of the page; the analysis's nodes */
	int n_nodes;
	int *node_ids;
	uint64_t *acc_page, *samples_page;
	uint64_t acc_page_unknown, samples_page_unknown;
	int covered;
	char *coverage;       /* the reasons, "; "-joined, NULL when covered */
	char **warnings;
	size_t n_warnings;
	size_t top[NK__JOB_TOP]; /* indices into nk__job.vars, by the rank's remote accesses */
	size_t top_per[NK__JOB_TOP]; /* and into that variable's per[] */
	size_t n_top;
	char *differs;        /* why it differs from the others, NULL when it does not */
	char *machine_json;   /* the machine it ran on (host topology), NULL unknown */
	int cpu_node;         /* the node its threads made most of their accesses from, -1 unknown */
	/* MPI traffic (the analysis's COMM sums): what it sent, totals over its runs; comm_procs 0: none */
	int comm_procs;
	uint32_t comm_size;
	struct nk__an_comm_peer *comm; /* by from (its MPI_COMM_WORLD rank, normally the launcher's), peer, kind */
	size_t n_comm;
};

/** What one rank sent another (MPI traffic), means per run of the sender. */
struct nk__job_pair {
	int from, to;         /* ranks in MPI_COMM_WORLD */
	uint64_t p2p_messages, p2p_bytes, coll_messages, coll_bytes;
};

struct nk__job_host {
	char *name;           /* "" unknown */
	size_t *ranks;        /* indices into nk__job.ranks, by rank */
	size_t n_ranks;
	int n_nodes;          /* of its machine (the first rank's) */
	int *node_ids;
	int cpus;             /* of its machine, 0 unknown */
	int topology;         /* hosts with one topology (node ids, cpus, distances) share the number, from 0 */
};

struct nk__job_build; /* job.c: the state of a job while its ranks are added */

struct nk__job {
	struct nk__job_build *build; /* NULL once finished */
	char *program, *exe;  /* the first rank's RUN command[0], the checked executable */
	char *sampler;        /* the ranks', or "mixed" */
	int launcher, size;   /* size -1 unknown */
	char *id;             /* NULL none */
	struct nk__job_rank *ranks;
	size_t n_ranks;
	struct nk__job_host *hosts;
	size_t n_hosts;
	int topologies;       /* distinct host topologies */
	struct nk__job_var *vars;
	size_t n_vars;
	size_t *order;        /* vars by summed remote accesses, then accesses, then key */
	uint64_t samples, acc, local, remote, unknown, wall_ns; /* wall: the longest rank's */
	int processes;
	struct nk__cl_stats st;
	struct nk__job_share share;
	int *missing;
	size_t n_missing;
	int median;           /* index into ranks of the median rank (remote share), -1: fewer than NK__JOB_MIN_RANKS */
	int median_load;      /* index into ranks of the median rank by accesses, -1 likewise */
	size_t n_differ;
	int covered;
	char **warnings;
	size_t n_warnings;
	/* MPI traffic: ranks that recorded it, and every (from, to) with traffic, by from then to */
	size_t comm_ranks;
	struct nk__job_pair *pairs;
	size_t n_pairs;
	uint64_t comm_bytes;  /* sum over the pairs (point-to-point + collectives) */
};

/** Load the job of @p in (nk__job_inputs with is_job): each rank analysed alone, summarised. */
int nk__job_load(const struct nk__job_inputs *in, struct nk__job **out, nk_error *err);

/* The loader in pieces, for tests that build analyses in memory: */
int nk__job_begin(const struct nk__job_inputs *in, struct nk__job **out);
/** Add rank @p pk (file @p path) analysed as @p a; ranks in any order.  0 or NK_ENOMEM. */
int nk__job_add_rank(struct nk__job *j, const struct nk__job_peek *pk, const char *path,
		     const struct nk__analysis *a);
/** Sort, pool, decide which ranks differ.  0 or NK_ENOMEM. */
int nk__job_finish(struct nk__job *j);
void nk__job_free(struct nk__job *j);

/**
 * The rank mapping of @p j (rank_map.c, issue 14 §3): the ranks' slots (host, node) as profiled given to the
 * ranks so that the heaviest communicators sit closest (src/job/rankmap.h), as text, JSON ("numakit-rank-map"
 * version 1) or an Open MPI rankfile (NK__RANKMAP_OPENMPI).  0; NK_EINVAL (no traffic recorded, a rank whose
 * host, node or machine is unknown, more than NK__RM_MAX_RANKS ranks: the message says which), NK_ENOMEM.
 */
#define NK__RANKMAP_OPENMPI NK_RANKMAP_OPENMPI
int nk__job_rankmap(const struct nk__job *j, int format, char **out, nk_error *err);
/*
 * What a mapping of the job's ranks is priced with (rank_map.c; also whatif's, src/advise/whatif_ranks.c):
 * each host's machine (its first rank's), the cost of a byte between hosts (100, or twice the largest SLIT
 * distance of a host when larger), the MPI traffic as edges between job rank indices (a peer without a
 * rank file left out), and each rank's traffic (bytes sent and received).
 */
struct nk__rm_edge;
struct nk__job_rm_env {
	nk_machine **m;            /* [n_hosts] */
	double host_dist;
	struct nk__rm_edge *edges; /* job rank indices */
	size_t n_edges;
	double *traffic;           /* [n_ranks] */
};
/** 0; NK_EINVAL (no traffic, a host's machine missing or unreadable), NK_ENOMEM; @p e zeroed on error. */
int nk__job_rm_env_load(const struct nk__job *j, struct nk__job_rm_env *e, nk_error *err);
void nk__job_rm_env_free(struct nk__job_rm_env *e, size_t n_hosts);
/** The cost of a byte between node @p na of host @p ha and node @p nb of host @p hb: their SLIT distance
 *  on one host, host_dist between hosts; -1 when a node is not in its host's machine. */
double nk__job_rm_dist(const struct nk__job_rm_env *e, size_t ha, int na, size_t hb, int nb);
/** The job of a profile, NULL when it is not a job's (report.c). */
const struct nk__job *nk__profile_job(const nk_profile *p);

/** The job's coverage reasons joined by "; " into *why (malloc'ed; "" when covered).  0 or NK_ENOMEM. */
int nk__job_coverage_text(const struct nk__job *j, char **why);

/* ---- report_job.c ---- */
#define NK__JOB_REPORT_VERSION 1
/** The report of @p j in @p format (enum nk_report_format).  0, NK_EINVAL, NK_ENOMEM. */
int nk__job_report(const struct nk__job *j, int format, char **out, nk_error *err);

/* ---- report.c ---- */
/**
 * Load, symbolise and analyse the profiles @p paths (one, or several runs joined) exactly as
 * nk_profile_load_many does for profiles that are not a job; @p extra (may be NULL) are warnings
 * added to the analysis (taken over on success).  For the job loader (one rank file) and the pooled
 * loader (a job's rank files as runs).
 */
int nk__profile_analyse_files(const char *const *paths, size_t n, struct nk__analysis **out, nk_error *err);
/**
 * As nk__profile_analyse_files for a job's rank files @p paths pooled as runs, @p pk their peeks (in the
 * same order, lowest rank first): ranks on different shares of the same size are first carried into
 * the first rank's frame (job_share.c); the analysis's share and a warning say so.
 */
int nk__profile_analyse_ranks(const char *const *paths, const struct nk__job_peek *pk, size_t n,
			      struct nk__analysis **out, nk_error *err);

/* ---- job_share.c ---- */
/** What pooling a job's ranks relative to their shares did. */
struct nk__job_frame {
	int *share;      /* the first rank's share (node ids, increasing) every rank was carried into; NULL: none */
	size_t n_share;
	char *note;      /* one sentence for the analysis's warnings; NULL when the ranks shared their nodes */
};
struct nk__nkp_profile;
/**
 * Carry the @p n loaded rank profiles @p ps (the peeks @p pk, same order) into the frame of the first
 * one's share: each sample's cpu, cpu node and page node, each thread's cpu (job/share.h's rule; the k-th
 * cpu of a node becomes the k-th of its image).  Done only when every rank names its cpus, the shares
 * differ, have the same number of nodes and correspond in cpus per node; otherwise nothing changes and
 * @p out->note may say why.  0, NK_EINVAL, NK_ENOMEM (nothing carried then).
 */
int nk__job_frame_apply(struct nk__nkp_profile *const *ps, const struct nk__job_peek *pk, size_t n,
			struct nk__job_frame *out, nk_error *err);
void nk__job_frame_clear(struct nk__job_frame *f);

#endif
