/* SPDX-License-Identifier: BSD-3-Clause
 * Data-centric analysis of a profile (issue 6): every sample attributed to a
 * variable (named range, heap allocation site, static, thread stack, file
 * mapping, anonymous), per-variable and whole-profile counts, page classes,
 * thread x node and thread x thread matrices, and a diagnosis with a
 * suggested fix per variable.  Pure data: the report (report.c) formats it,
 * `numakit advise` / `whatif` (issue 7) reuse it.  The rules and thresholds
 * are documented in docs/report.md and tested in tests/unit/test_analysis.c.
 * Computed by analysis.c and its steps analysis_*.c (analysis_impl.h).
 *
 * Counts named "acc" are accesses (sum of sample weights); "samples" are
 * samples.  Node arrays are indexed like nk__analysis.node_ids.
 */
#ifndef NK_PROFILE_ANALYSIS_H
#define NK_PROFILE_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "profile/nkp.h"
#include "profile/symbols.h"

/* Diagnosis thresholds (docs/report.md, "Diagnosis"). */
#define NK__AN_CI_HALF 0.10         /* too few samples: the remote share's 95 % interval is wider than +-this */
#define NK__AN_MIN_CLUSTERS 2       /* too few samples: fewer clusters than this (no variance between them) */
#define NK__AN_GROUP_PAGES 16       /* pages per cluster of pagefault samples (the sampler's member groups) */
#define NK__AN_ROUND_NS 10000000ull /* the other cluster of pagefault samples: the sampler's round (10 ms) */
#define NK__AN_MIN_ROUNDS 20         /* fewer pagefault rounds in a profile, spaced out by the cost cap: not covered */
#define NK__AN_Z95 1.959963984540054 /* the normal quantile of a two-sided 95 % interval */

/*
 * The two clusters of a pagefault sample (docs/report.md, "What the numbers estimate"): its 16-page group,
 * counted from the first page of its variable instance [@p lo, @p hi) (0 when unknown), and its 10 ms
 * round by its time.  The one rule for the analysis (analysis_attr.c) and a job's pooled sums (job.c).
 */
static inline void nk__an_pf_clusters(uint64_t addr, uint64_t lo, uint64_t hi, uint64_t ps, uint64_t time_ns,
				      uint64_t *cl, uint64_t *round)
{
	uint64_t page = addr / ps, first = hi > lo && lo / ps <= page ? lo / ps : 0;
	*cl = first + (page - first) / NK__AN_GROUP_PAGES * NK__AN_GROUP_PAGES;
	*round = time_ns / NK__AN_ROUND_NS;
}
#define NK__AN_FINE_REMOTE 0.10     /* remote share at most this: fine */
#define NK__AN_HOTSPOT_NODE 0.70    /* this share of a variable's pages on one node: hot spot */
#define NK__AN_SHARED_PAGES 0.50    /* this share of its pages cross-node shared: uniform sharing */
#define NK__AN_REGULAR 0.80         /* regularity at least this: regular (each thread one contiguous slice) */
#define NK__AN_IRREGULAR 0.50       /* below this, with < 2 samples per page: threads interleave, i.e. share */
#define NK__AN_READ_MOSTLY 0.90     /* reads at least this share of the typed accesses: read-mostly */
#define NK__AN_MIN_NUMA_FACTOR 1.20 /* largest NUMA factor below this: placement is not worth changing */
#define NK__AN_TOP_LINES 5          /* source lines kept per variable */

enum nk__var_kind {
	NK__VAR_NAMED = 0,  /* nk_profile_name / numakit arrays */
	NK__VAR_HEAP = 1,   /* heap blocks of one allocation site */
	NK__VAR_STATIC = 2, /* a static variable (or a writable segment when unsymbolised) */
	NK__VAR_STACK = 3,  /* a thread's stack */
	NK__VAR_FILE = 4,   /* a file mapping */
	NK__VAR_ANON = 5,   /* anything else: "[anonymous]" */
	NK__VAR_MPI = 6,    /* a file mapping that is MPI's own shared memory (mpimem.h), one per kind of segment */
};

enum nk__diag {
	NK__DIAG_FEW_SAMPLES = 0, /* remote share's interval wider than +-NK__AN_CI_HALF (nk__an_decided) */
	NK__DIAG_FINE = 1,        /* remote share <= NK__AN_FINE_REMOTE */
	NK__DIAG_HOTSPOT = 2,     /* most pages on one node, accessed remotely from the others */
	NK__DIAG_PARTITION = 3,   /* pages spread over nodes, but threads work on other nodes' pages */
	NK__DIAG_SHARING = 4,     /* pages shared by threads of several nodes */
};

enum nk__fix {
	NK__FIX_NONE = 0,          /* nothing to do (fine, too few samples) */
	NK__FIX_LEAVE = 1,         /* small (< L2) or used by one thread only: leave it */
	NK__FIX_NOT_WORTH = 2,     /* NUMA factor < NK__AN_MIN_NUMA_FACTOR */
	NK__FIX_PARALLEL_INIT = 3, /* regular + partitioned: initialise in parallel with the compute partition, or `block` */
	NK__FIX_CYCLIC = 4,        /* shared or irregular: `cyclic` */
	NK__FIX_WEIGHTED = 5,      /* as cyclic, bandwidth measured: `weighted` */
};

/** One source line (or instruction address when unsymbolised). */
struct nk__an_line {
	char *where;        /* "file.c:42 (function)" or "0x401234" */
	uint64_t acc, remote;
};

#define NK__AN_TOP_USERS 8 /* threads listed as users of a heap site */

struct nk__an_var {
	int kind;             /* enum nk__var_kind */
	char *name;           /* what the report shows: "grid", "main.c:12 (init)", "stack of thread 3" */
	char *key;            /* stable across runs and ASLR when symbolised (object+offsets), else pid-local */
	char *type;           /* DWARF type of a static, NULL unknown */
	uint64_t size;        /* bytes: the range, or the largest block of a heap site */
	uint64_t blocks;      /* heap: allocations of the site that samples hit */
	uint64_t samples, acc, local, remote, unknown; /* local/remote/unknown: accesses */
	uint64_t reads, writes;
	/* The remote share's 95 % interval (nk__an_ratio_ci), from the samples with both nodes known:
	 * known_samples of them in clusters (pagefault: 16-page groups; hw, trace: one per sample). */
	double ci_lo, ci_hi;  /* 0..1; 0 and 1 when no sample has both nodes known */
	double n_eff;         /* effective sample size behind the interval, 0 none */
	uint64_t known_samples, clusters;
	int ci_grouped;       /* 1 when some clusters are page groups (pagefault samples) */
	uint64_t *acc_cpu;    /* [n_nodes] accesses by the node of the accessing cpu */
	uint64_t *remote_cpu; /* [n_nodes] remote accesses by the node of the accessing cpu */
	uint64_t *acc_page;   /* [n_nodes] accesses by the node of the page */
	uint64_t *pages_on;   /* [n_nodes] distinct sampled pages by node (last node seen) */
	uint64_t pages;       /* distinct pages sampled */
	uint64_t threads;     /* distinct threads that accessed it (1: private to a thread, leave it) */
	uint64_t pages_private, pages_node_shared, pages_cross_shared;
	/* first touch: the most common instruction among NK__SF_FIRST_TOUCH samples */
	uint64_t ft_samples;  /* first-touch samples of the variable */
	uint64_t ft_top;      /* of them at ft_where */
	char *ft_where;       /* NULL when no first-touch sample; when the instruction was in a library (memset),
			       * the program's own line that called it, from the CALLERS records (issue 16) */
	char *ft_inside;      /* that library function, "memset (libc)"; NULL when ft_where is the instruction */
	char *ft_inside_where; /* the instruction's own text then ("memset-vec-unaligned-erms.S:336 (...)") */
	int ft_thread;        /* index into nk__analysis.threads, -1 unknown */
	int ft_node;          /* node id the first touches placed pages on, -1 unknown */
	struct nk__an_line lines[NK__AN_TOP_LINES]; /* by remote accesses, descending */
	int n_lines;
	double regularity;    /* 0..1, share of each thread's pages inside its dominant contiguous block; -1 unknown */
	int dominant_node;    /* node id holding most of the pages, -1 none */
	double dominant_share;
	int small;            /* 1 when size < L2 (and L2 known) */
	int diag;             /* enum nk__diag */
	int fix;              /* enum nk__fix */
	const char *policy;   /* numakit policy for the fix ("block", "cyclic", "weighted"), NULL none */
	char *explain;        /* one sentence: why the diagnosis, naming the first-touch site */
	size_t created;       /* order of creation (internal: keeps per-phase counts aligned after sorting) */
	/* Heap sites (issue 19), over every block of the site's allocations in the profile, sampled or not
	 * (summed over processes and site ids of the key; whole profile only, 0 in phases): */
	int site;                       /* 1: these members are filled (a heap variable of ALLOC records) */
	uint64_t site_blocks;           /* blocks allocated */
	uint64_t site_live, site_peak;  /* blocks live at the end of the run / at most at once */
	uint64_t site_bytes_live, site_bytes_peak; /* their bytes (peak: at the time of most bytes live) */
	int alloc_thread;               /* thread (index into threads) that allocated most blocks, -1 unknown */
	uint64_t alloc_thread_blocks;   /* blocks it allocated */
	struct { int thread; uint64_t acc; } users[NK__AN_TOP_USERS]; /* threads using it, by accesses */
	int n_users;
	/* A site of small blocks (all under --min-size, two or more) is one array: its blocks laid end to end in
	 * allocation order (nk__an_site_space).  size is then that array's bytes (the most of any process), and
	 * the attributed samples (nk__analysis.attr) carry addresses in it: page i is page i of the array. */
	int site_space;
};

struct nk__an_thread {
	uint32_t pid, tid;
	int index;     /* THREAD index (0 main), -1 when the thread has no THREAD record */
	int node;      /* node id it mostly ran on, -1 unknown */
	uint64_t samples, acc, remote;
	char *label;   /* "thread 3" (or "pid 12 thread 3" with several processes) */
};

struct nk__an_phase {
	char *name;
	uint64_t samples, acc, local, remote;
	uint64_t *var_acc, *var_remote; /* [n_vars] accesses (remote ones) of each variable in the phase */
	/* The variables the phase's samples touched, analysed on those samples alone by the same code and
	 * rules as the whole profile (counts, page classes, regularity, first touch, lines, diagnosis, fix):
	 * a variable initialised in one phase and swept in another gets one diagnosis per phase.  Sorted
	 * like nk__analysis.vars; node arrays follow nk__analysis.node_ids, ft_thread indexes
	 * nk__analysis.threads; size, type and name are the whole-profile variable's.  Empty (NULL, 0)
	 * for a phase without samples. */
	struct nk__an_var *vars;
	size_t n_vars;
};

/**
 * One sample as attributed (the whole profile's samples, in file order by
 * process): what `numakit advise` and `whatif` need to re-place pages.  The
 * instance is the heap block, static, named range, stack or mapping the
 * address fell in ([lo, hi), both 0 when unknown: anonymous memory); the
 * offset of the access inside its variable instance is addr - lo.
 */
struct nk__an_sample {
	uint64_t addr;     /* data address */
	uint64_t lo, hi;   /* the variable instance holding it */
	uint64_t time_ns;  /* since its process's start */
	uint32_t var;      /* index into nk__analysis.vars (after sorting) */
	uint32_t thread;   /* index into nk__analysis.threads */
	uint32_t weight;   /* accesses it stands for (>= 1) */
	uint32_t proc;     /* process index in the profile */
	int16_t cpu_node;  /* node id of the accessing cpu, -1 unknown */
	int16_t page_node; /* node id of the page at the access, -1 unknown */
	int16_t phase;     /* index into nk__analysis.phases, -1 none */
	uint8_t access;    /* enum nk__nkp_access */
	uint8_t first_touch; /* 1: the access that first touched the page */
	uint8_t init;        /* 1: a site of small blocks' initialisation (nk__an_site_space): an access by the
			      * block's allocating thread before its next allocation at the site */
	uint8_t fini;        /* 1: a site of small blocks' teardown (nk__an_site_space): an access by the thread
			      * that allocated and frees the block, after its previous free at the site */
};

/** One run of a combined profile (nk__analysis.run_info). */
struct nk__an_run {
	char *command;       /* the RUN command, arguments joined by spaces */
	char *source;        /* the file it came from, NULL unknown */
	uint64_t wall_ns;    /* 0 unknown */
	int exit_status;     /* -1 unknown */
	int signal;
	int processes;
	uint64_t samples;
};

struct nk__analysis {
	/* header */
	char *program;       /* RUN command[0], "?" unknown */
	char *sampler;       /* RUN sampler */
	uint64_t wall_ns;    /* RUN wall_ns, 0 unknown; several runs: their mean */
	int n_procs;         /* processes; several runs: of the run with most (process k of every run is one) */
	/* Several runs of one program combined (nk__nkp_join): runs > 1, run_info[runs].  Samples are
	 * pooled: samples counts are over all runs, every access count (acc, local, remote, ...,
	 * matrices, phases) is the mean per run (the sum over the runs / runs, rounded).  Threads are
	 * (process ordinal, THREAD index), one over the runs; attr keeps every sample with its weight
	 * as recorded (its proc indexes the joined profile's processes).  runs 1: run_info NULL. */
	int runs;
	struct nk__an_run *run_info;
	int exit_status;     /* one run: RUN's exit status (-1 unknown), signal (0 none); several: run_info's */
	int signal;
	uint64_t samples, acc, local, remote, unknown;
	/* nodes */
	int n_nodes;
	int *node_ids;
	uint64_t *node_local, *node_remote; /* [n_nodes] accesses by cpu node */
	uint64_t *node_pages_acc;           /* [n_nodes] accesses served by each page node */
	/* A job's ranks pooled relative to their shares (src/profile/job_share.c): the first rank's share,
	 * whose frame every rank's nodes and cpus were carried into; NULL/0: pooled as placed (or not a job) */
	int *share;
	size_t n_share;
	/* A job's rank files pooled as runs (nk_profile_load_pooled): the world rank of each run, [runs];
	 * NULL otherwise (whatif then gives each rank's prediction) */
	int *run_rank;
	uint64_t l2_size;                   /* bytes, 0 unknown */
	double numa_factor;                 /* largest between nodes of the machine, 0 unknown */
	int bandwidth_measured;
	/* variables, by remote accesses descending */
	struct nk__an_var *vars;
	size_t n_vars;
	uint64_t pages_private, pages_node_shared, pages_cross_shared;
	/* threads, by pid then index */
	struct nk__an_thread *threads;
	size_t n_threads;
	uint64_t *thread_node;  /* [n_threads][n_nodes] accesses of thread to pages on node */
	double *sharing;        /* [n_threads][n_threads] sum over pages of min(acc_i, acc_j); diagonal 0 */
	struct nk__an_phase *phases;
	size_t n_phases;
	/* every sample, attributed (n_attr == samples unless the profile is empty) */
	struct nk__an_sample *attr;
	size_t n_attr;
	uint64_t page_size;     /* bytes, of the first process (4096 when unknown) */
	char *machine_json;     /* the profile's MACHINE record (nk_machine_load_buffer), NULL none */
	char **warnings;
	size_t n_warnings;
	/* Coverage (docs/report.md): whether the samples describe the whole run.  Not covered when a process did
	 * not close its profile or dropped samples (budget spent, or the ring full); advise and whatif refuse
	 * such a profile without --force.  Reasons are one line each, naming the process. */
	int covered;
	uint64_t dropped, budget_dropped; /* all processes; budget_dropped as far as END says (0 from older runtimes) */
	size_t procs_incomplete;
	char **coverage_reasons;
	size_t n_coverage_reasons;
	/* MPI traffic (COMM records, issue 14 §2): what the processes sent to each peer, by (from, peer, kind),
	 * summed over the processes and runs (totals, not means per run; a rank's runs add up, a job's ranks
	 * pooled as runs keep their own rows).  comm_procs 0: nothing recorded. */
	int comm_procs;
	uint32_t comm_size; /* MPI_COMM_WORLD's, of the first process that recorded */
	struct nk__an_comm_peer {
		uint32_t from, peer, kind; /* ranks in MPI_COMM_WORLD; kind: NK__COMM_P2P or NK__COMM_COLL */
		uint64_t messages, bytes;
	} *comm;
	size_t n_comm;
};

/**
 * Analyse @p p.  @p m may be NULL: built from the profile's MACHINE JSON,
 * else nodes are taken from the samples.  @p syms may be NULL, else one per
 * process of @p p (entries may be NULL): without one, names fall back to
 * site ids and addresses.  Errors: NK_EINVAL, NK_ENOMEM.
 */
int nk__analyze(const struct nk__nkp_profile *p, const nk_machine *m, nk__symtab *const *syms,
		struct nk__analysis **out, nk_error *err);
void nk__analysis_free(struct nk__analysis *a);
/** The coverage reasons of @p a joined by "; " into *why (malloc'ed, "" when covered).  0 or NK_ENOMEM. */
int nk__coverage_text(const struct nk__analysis *a, char **why);

/** The symboliser calls nk__analyze makes (tests give fakes). */
struct nk__an_symops {
	int (*ip)(nk__symtab *s, uint64_t ip, struct nk__sym_loc *out);
	int (*data)(nk__symtab *s, uint64_t addr, struct nk__sym_var *out);
	int (*mapping)(nk__symtab *s, uint64_t addr, const char **name, uint64_t *lo, uint64_t *hi);
	const char *(*warnings)(const nk__symtab *s);
};
/** nk__analyze through @p ops (NULL: the nk__sym_* functions). */
int nk__analyze_ops(const struct nk__nkp_profile *p, const nk_machine *m, nk__symtab *const *syms,
		    const struct nk__an_symops *ops, struct nk__analysis **out, nk_error *err);

/** A weighted ratio's estimate and 95 % interval (docs/report.md, "What the numbers estimate"). */
struct nk__an_ci {
	double r;      /* sum(w y) / sum(w) */
	double lo, hi; /* Wilson interval on n_eff, clipped to [0, 1] */
	double n_eff;  /* r (1 - r) / Var(r), at most Kish's (sum w)^2 / sum w^2; see below */
};

/**
 * The ratio r = sum(w y) / sum(w) of @p n clusters (cluster c: W[c] = sum of
 * its samples' weights, Y[c] = sum of w y, y in {0, 1}) and its interval.
 * Var(r) = sum_c (Y[c] - r W[c])^2 / (sum W)^2 * n / (n - 1) (the
 * linearised, cluster-robust variance of a ratio); n_eff = r (1 - r) /
 * Var(r), at most Kish's effective size (sum w)^2 / @p sum_w2; when Var(r)
 * is 0 (r is 0 or 1, or every cluster has exactly the share r) or n < 2,
 * n_eff is the smaller of n and Kish's size.  The interval is Wilson's on
 * n_eff.  No cluster or no weight: r 0, interval [0, 1], n_eff 0.
 */
void nk__an_ratio_ci(const double *W, const double *Y, size_t n, double sum_w2, struct nk__an_ci *out);
/** nk__an_ratio_ci's last step: the interval of share @p r with variance @p var (0: no spread seen) over @p n
 * clusters, the effective size capped by Kish's @p kish (the job report pools shares over ranks with it). */
/*
 * The clustered samples of remote shares and their sums (analysis_interval.c; docs/report.md, "What the
 * numbers estimate"): the one computation behind a variable's interval in a report and the pooled
 * intervals of a job's ranks (job.c).
 *
 * One sample with both nodes known, as the interval clusters it: pagefault samples in their 16-page group
 * and 10 ms round (nk__an_pf_clusters, grouped 1), any other sample its own cluster (cl = round = its index).
 */
struct nk__cl_rec {
	uint32_t var, proc;
	uint64_t cl, round;
	uint32_t w;
	uint8_t grouped, remote;
};

/*
 * The sums an interval needs, centred on the share @p rc of the samples they came from, so that sums of
 * several sources (a job's ranks, whose clusters never span two ranks) pool without loss: for each of the
 * three clusterings (group, round, both) the clusters' A = sum (Y - rc W)^2, B = sum (Y - rc W) W,
 * C = sum W^2 and their number.
 */
struct nk__cl_stats {
	double sw, sy, sw2;   /* sum of weights, of remote weights, of squared weights (Kish) */
	double rc;            /* the centre */
	double A[3], B[3], C[3];
	uint64_t n[3];        /* clusters */
	uint64_t known;       /* samples */
};

/*
 * The sums of @p cr[0..n) (reordered): into @p total (all of them; NULL: not wanted) and into @p vars[var]
 * (each variable's own clusters; NULL: not wanted; zeroed here, as is total).
 */
void nk__cl_sums(struct nk__cl_rec *cr, size_t n, struct nk__cl_stats *total, struct nk__cl_stats *vars, size_t n_vars);

/* The share of the pooled sums @p st[0..n) and its interval (the two-way cluster-robust variance, Wilson
 * interval); *@p share 0 and ci [0, 1] without samples.  @p clusters: the page-group clusters. */
void nk__cl_pool(const struct nk__cl_stats *const *st, size_t n, double *share, uint64_t *clusters,
		 struct nk__an_ci *ci);

/** 1 when @p v's remote share is decided: samples with both nodes known in at least NK__AN_MIN_CLUSTERS
 * clusters and an interval no wider than +-NK__AN_CI_HALF. */
int nk__an_decided(const struct nk__an_var *v);

/** Index of node @p id in a->node_ids, -1 when absent. */
int nk__an_node_index(const struct nk__analysis *a, int id);

/** Names of enum values, for text and JSON ("hot-spot", "cyclic", ...). */
const char *nk__an_kind_name(int kind);
const char *nk__an_diag_name(int diag);
const char *nk__an_fix_name(int fix);

/* ---- report.c: the reports of an analysis (docs/report.md) ---- */
#define NK__REPORT_JSON_VERSION 1

/** nk_profile_report() of an analysis (tests build analyses without a file). */
int nk__report_analysis(const struct nk__analysis *a, int format, char **out, nk_error *err);
/** nk_profile_sharing() of an analysis. */
int nk__sharing_analysis(const struct nk__analysis *a, char **out, nk_error *err);
/** Wrap @p a (taken over on success) as an nk_profile. */
int nk__profile_from_analysis(struct nk__analysis *a, nk_profile **out, nk_error *err);
/** The analysis of a loaded profile (for advise/whatif). */
const struct nk__analysis *nk__profile_analysis(const nk_profile *p);

#endif
