/* SPDX-License-Identifier: BSD-3-Clause
 * Internal view of an advice, the profile-derived placement file (nk_advice,
 * issue 7; docs/plan.md; the JSON format is still called "numakit-plan").
 * nk_plan is something else: the page-to-node map of one policy on one region.
 *
 * Who does what:
 *   advice.c        the struct: create/free/num_entries, entries added, found,
 *                   set by hand (nk_advice_set), warnings, left-alone records,
 *                   keys, evidence from an analysis variable.
 *   advice_read.c   JSON -> struct (nk_advice_parse/load), strict, without a machine.
 *   advice_write.c  struct -> JSON (nk_advice_format), read back before returning.
 *   advice_check.c  nk_advice_check against a machine.
 *   advice_pin.c    nk_advice_pin: the pinning in `numakit run --pin` words.
 *   advise.c        nk_profile_advise: analysis (profile/analysis.h) -> advice.
 *   whatif.c        nk_profile_whatif: analysis + advice + machine -> prediction.
 *   preload/advice/ (libnumakit_plan.so) + cli/cmd_run.c `--plan`: apply an
 *             advice to an unmodified program.
 *
 * Variables are matched by key, exactly the nk__an_var.key of the analysis:
 *   "static:OBJECT:SYMBOL"          a static variable (OBJECT: basename of the ELF file)
 *   "heap:OBJ+0xOFF;OBJ+0xOFF;..."  a heap allocation site: up to 4 return addresses minus 1,
 *                                   innermost first, each as its object's basename and offset
 *                                   from the object's load base (stable under ASLR)
 *   "name:NAME"                     a range named with nk_profile_name / a numakit array
 * Keys with "pid" in them (unsymbolised sites) are process-local: advise
 * never writes them, and the runtime cannot match them.
 */
#ifndef NK_ADVISE_ADVICE_H
#define NK_ADVISE_ADVICE_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

#define NK__APLAN_FORMAT "numakit-plan"
#define NK__APLAN_VERSION 1

/** When an entry's policy is applied. */
enum nk__aplan_when {
	NK__WHEN_ALLOC = 0,         /* at allocation (heap) / at program start (statics): future first touches follow it */
	NK__WHEN_FIRST_PARALLEL = 1, /* at the first OpenMP parallel region, migrating what is resident */
	NK__WHEN_PHASE = 2,          /* when the program enters phase `phase` (nk_profile_phase), migrating */
};

/** Pages [first, first + count) of the variable instance (page 0 holds its first byte) go to node. */
struct nk__aplan_range {
	uint64_t first, count;
	int node;
};

/** A placement advise priced with whatif's model (src/advise/whatif.h) for an entry, chosen or not. */
struct nk__aplan_cand {
	char *policy;            /* a policy text, "pages" (the entry's own ranges) or "none" (as profiled) */
	double remote_fraction;  /* predicted, -1 unknown */
	double stall_ms;         /* predicted stall estimate, ms */
};

/** Why an entry was chosen: copied from the analysis, informative only (never needed to apply). */
struct nk__aplan_evidence {
	uint64_t size;           /* bytes */
	uint64_t samples;
	uint64_t threads;        /* distinct threads that accessed it */
	double remote_fraction;  /* of its accesses, as profiled */
	double ci_lo, ci_hi;     /* its 95 % interval (docs/report.md); -1, -1 unknown */
	double samples_effective; /* effective sample size behind the interval, -1 unknown */
	double read_fraction;    /* reads among typed accesses, -1 unknown */
	double regularity;       /* -1 unknown */
	double shared_pages;     /* share of sampled pages shared across nodes */
	int dominant_node;       /* -1 none */
	double dominant_share;
	char *diagnosis;         /* nk__an_diag_name(), NULL unknown */
	struct nk__aplan_cand *cands; /* the candidates advise priced, in the order it considered them */
	size_t n_cands;
	double noise_ms;         /* the stall difference advise took for a near-tie, -1 unknown */
};

struct nk__aplan_entry {
	char *variable;          /* display name, e.g. "grid (prog.c:12)"; informative */
	char *key;               /* match key (see above); required, unique per (key, phase) */
	char *policy;            /* nk_policy_parse text, or "pages" (use ranges), or "none" */
	int when;                /* enum nk__aplan_when */
	char *phase;             /* phase name when when == NK__WHEN_PHASE, else NULL */
	struct nk__aplan_range *ranges; /* policy "pages": sorted, disjoint */
	size_t n_ranges;
	uint64_t page_size;      /* of ranges; 0 when none */
	uint64_t site_bytes;     /* "layout": "blocks": the heap site's blocks laid end to end in allocation order
				  * are the variable, this many bytes ("size"); 0: one instance (the default) */
	char *reason;            /* one sentence, human-readable; NULL none */
	struct nk__aplan_evidence ev;
};

/** Thread pinning: strategy "none", "compact", "scatter", "sharing" (matrix given) or "cpus" (list given). */
struct nk__aplan_pin {
	char *strategy;          /* NULL: no pinning */
	int threads;             /* team size, 0 unknown */
	int *cpus;               /* "cpus": per thread */
	size_t n_cpus;
	double *sharing;         /* "sharing": threads x threads */
	char *reason;
};

/** A variable advise looked at and decided to leave as it is (listed so the user sees why). */
struct nk__aplan_skip {
	char *key;               /* its key (may be process-local: then it could not be placed anyway) */
	char *variable;          /* display name; NULL none */
	char *reason;            /* one sentence; NULL none */
	struct nk__aplan_cand *cands; /* the placements advise priced before leaving it, NULL none */
	size_t n_cands;
};

struct nk_advice {
	int version;             /* NK__APLAN_VERSION */
	char *program;           /* informative: the profiled command */
	char *profile;           /* informative: the profile it came from */
	uint64_t runs;           /* informative: runs of the program the evidence pools (0/1: one) */
	double numa_factor;      /* of the machine advised for, 0 unknown */
	int *node_ids;           /* nodes of that machine */
	int n_nodes;
	/* A plan for the ranks of a job that ran on shares of the machine (docs/plan.md "Plans for the ranks
	 * of a job"): the node ids of every entry refer to this share (the first rank's), and each rank
	 * applies them to its own share (nk_advice_resolve_share, job/share.h).  NULL/0: absolute. */
	int *share;
	size_t n_share;
	struct nk__aplan_pin pin;
	struct nk__aplan_entry *entries;
	size_t n_entries;
	char **warnings;         /* e.g. "migrating X in phase Y costs more than it saves" */
	size_t n_warnings;
	struct nk__aplan_skip *left_alone; /* "left_alone": variables without an entry, and why */
	size_t n_left_alone;
};

/** Deep-free the contents of one entry (not the entry itself). */
void nk__aplan_entry_clear(struct nk__aplan_entry *e);
/** Append a copy of @p e (deep) to @p a.  Errors: NK_ENOMEM. */
int nk__aplan_add(nk_advice *a, const struct nk__aplan_entry *e);
/** Entry of @p key applied when @p when / @p phase, NULL none. */
struct nk__aplan_entry *nk__aplan_find(nk_advice *a, const char *key, int when, const char *phase);
/** Append a copy of the message to a->warnings.  Errors: NK_ENOMEM. */
int nk__aplan_warn(nk_advice *a, const char *msg);
/** Append a left-alone record (copies).  Errors: NK_ENOMEM. */
int nk__aplan_skip(nk_advice *a, const char *key, const char *variable, const char *reason);
/** The same, with the candidates advise priced (copied; @p n 0: none).  Errors: NK_ENOMEM. */
int nk__aplan_skip_priced(nk_advice *a, const char *key, const char *variable, const char *reason,
			  const struct nk__aplan_cand *cands, size_t n);
/** 1 when @p key is one a plan may carry: "static:", "heap:" or "name:" and something after it. */
int nk__aplan_key_valid(const char *key);
/** 1 when @p key names a process-local variable (":pid" followed by a digit): no later run matches it. */
int nk__aplan_key_local(const char *key);
struct nk__an_var;
/** Evidence of an analysis variable (profile/analysis.h): counts, fractions, diagnosis (copied). */
void nk__aplan_evidence_of(struct nk__aplan_evidence *ev, const struct nk__an_var *v);
/** Evidence meaning "nothing known" (read_fraction, regularity, dominant_node, noise_ms -1; the rest 0). */
void nk__aplan_evidence_unknown(struct nk__aplan_evidence *ev);
/** Free what @p ev owns (diagnosis, candidates); it is then "nothing known". */
void nk__aplan_evidence_clear(struct nk__aplan_evidence *ev);
/** Append a candidate (the policy copied) to @p *cands (@p *n of them).  Errors: NK_ENOMEM. */
int nk__aplan_cands_add(struct nk__aplan_cand **cands, size_t *n, const char *policy, double remote_fraction,
			double stall_ms);
/** nk__aplan_cands_add to @p ev's candidates. */
int nk__aplan_cand_add(struct nk__aplan_evidence *ev, const char *policy, double remote_fraction, double stall_ms);
/** Free @p n candidates and their array. */
void nk__aplan_cands_free(struct nk__aplan_cand *cands, size_t n);
/** "alloc", "first-parallel", "phase"; NULL when out of range. */
const char *nk__aplan_when_name(int when);
/** "entries[I] (key \"KEY\")" into @p buf: how the reader's and the machine check's messages name entry @p i. */
void nk__aplan_entry_where(char *buf, size_t cap, size_t i, const char *key);
#endif
