/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/advice.h: automatic placement: placement plans ("numakit-plan" files), advising one from a
 * profile, predicting its effect (whatif).  Part of the public API; include <numakit.h>, which includes it
 * (it also compiles alone).  Conventions (errors, identifiers, thread safety, API tiers): the top of
 * <numakit.h>.
 *
 * API TIER: experimental.  Declared only when NUMAKIT_EXPERIMENTAL is defined before <numakit.h> (or this
 * header) is included.  The functions are exported by libnumakit.so like the stable ones, but their
 * signatures, types and behaviour may change in any release, even a patch release: use them from code
 * built together with the numakit it links.  @since on each function names the release that introduced it.
 */
#ifndef NUMAKIT_ADVICE_H
#define NUMAKIT_ADVICE_H

#include "numakit/profile.h"

#endif /* NUMAKIT_ADVICE_H */

/* The declarations exist only with NUMAKIT_EXPERIMENTAL.  They have their own guard, outside
 * the header's, so that including the header again with the macro defined adds them after a
 * first inclusion without it (as zstd.h does with ZSTD_STATIC_LINKING_ONLY). */
#if defined(NUMAKIT_EXPERIMENTAL) && !defined(NUMAKIT_ADVICE_EXPERIMENTAL_H)
#define NUMAKIT_ADVICE_EXPERIMENTAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================ automatic placement
 * profile -> plan -> prediction -> run (docs/plan.md).  A placement plan
 * ("plan.json", format "numakit-plan") names variables by a key stable across
 * runs and ASLR (a static's object and symbol, a heap allocation site's
 * call-stack signature) and gives each a numakit policy, the phase it applies
 * to and the evidence that chose it, plus a thread pinning.  It is plain,
 * versioned JSON a person may edit.  Not to be confused with nk_plan, the
 * node of every page of one region under one policy.
 */

/** A placement plan for a whole program. */
typedef struct nk_advice nk_advice;

/** Options of nk_profile_advise(); zero-initialise for the defaults. */
typedef struct nk_advise_opts {
	uint64_t min_size;  /**< variables smaller than this are left alone; 0: the machine's L2 size (256 KiB unknown) */
	int no_pages;       /**< 1: never per-page placement entries */
	int no_pin;         /**< 1: no thread pinning in the plan */
	int no_phases;      /**< 1: one policy per variable, no phase changes */
	int force;          /**< 1: advise also from a profile that does not cover the whole run (the plan says so) */
	int reserved[4];    /**< must be 0 */
} nk_advise_opts;

/**
 * Advise a plan from the analysis of @p p for machine @p m (NULL: the
 * machine the profile was taken on).  A profile that does not cover the
 * whole run (nk_profile_coverage()) is refused unless @p o->force; with it,
 * the plan's warnings say so.  Errors: NK_EINVAL, NK_ENODATA (no variable had
 * enough samples to decide anything: the plan would be empty; or the profile
 * does not cover the run, the message says why), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_advise(const nk_profile *p, const nk_machine *m, const nk_advise_opts *o, nk_advice **out,
			     nk_error *err);
/**
 * An empty plan (no entries, no pinning), to be filled with nk_advice_set(). Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_create(nk_advice **out);
/**
 * Parse a plan from JSON text.  Everything is checked that can be without a
 * machine: format and version, types, known policy kinds (nk_policy_parse),
 * page ranges.  Errors: NK_EPARSE (the message names the entry and field),
 * NK_EVERSION, NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_parse(const char *json, size_t len, nk_advice **out, nk_error *err);
/**
 * Load nk_advice_parse() of a file.  Errors: those of nk_advice_parse(), NK_ENOENT, NK_EIO.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_load(const char *path, nk_advice **out, nk_error *err);
/**
 * The plan as JSON text, malloc'ed (free() it); parses back to an equal plan.  Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_format(const nk_advice *a, char **out, nk_error *err);
/**
 * Check @p a against machine @p m: every node exists and has memory, every
 * policy builds there, the pinning's cpus exist.  Errors: NK_ENODEV (naming
 * the entry and node), NK_EINVAL, NK_EPERM.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_check(const nk_advice *a, const nk_machine *m, nk_error *err);
/**
 * Set the policy of variable @p var (its name as the report shows it, or its
 * key) to @p policy (nk_policy_parse text, or "none" to leave it as it is),
 * adding an entry when the plan has none for it.  @p p resolves names to keys
 * and may be NULL only when @p var is a key.  Errors: NK_EPARSE (policy),
 * NK_ENOENT (no such variable in the profile), NK_EINVAL, NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_set(nk_advice *a, const nk_profile *p, const char *var, const char *policy, nk_error *err);
/**
 * The plan's thread pinning as `numakit run --pin` would take it.  *spec:
 * malloc'ed "compact", "scatter", "sharing" (the matrix is then in
 * *sharing, malloc'ed, in the text format of nk_sharing_parse(); give it to
 * --pin as sharing:FILE) or the cpus in thread order ("3,1,0,2"); NULL when
 * the plan pins nothing (no pinning, strategy "none").  *threads: the team
 * size the plan was made for, 0 unknown.  @p sharing and @p threads may be
 * NULL.  Errors: NK_EINVAL (NULL plan or spec, a "sharing" or "cpus" pinning
 * without its matrix or list, an unknown strategy), NK_ENOMEM; nothing is
 * returned then.
 * @since 0.1 (experimental)
 */
NK_API int nk_advice_pin(const nk_advice *a, char **spec, int *threads, char **sharing, nk_error *err);
/**
 * The share of the machine a plan's node ids refer to: a plan advised from
 * a job whose ranks ran on different shares of the machine (each rank on
 * its own nodes, `numakit run --cpus rank`) is written in the frame of the
 * first rank's share (docs/plan.md "Plans for the ranks of a job").  Writes
 * at most @p cap node ids (increasing) to @p nodes and returns the count:
 * 0 for a plan that applies as written.  Errors: NK_EINVAL.
 * @since 0.2 (experimental)
 */
NK_API int nk_advice_share(const nk_advice *a, int *nodes, size_t cap);
/**
 * Carry a share-relative plan onto another share: @p nodes (@p n ids, any
 * order) are the share of the rank that will apply it.  The share's i-th
 * node (by id) takes the place of the plan's i-th, the machine's other
 * nodes those of the plan's other nodes in id order; every node id of the
 * plan (policies, page ranges, the evidence, a pinning's cpus: the k-th cpu
 * of a node becomes the k-th of its image, which needs @p m) is replaced.
 * A plan without a share is left as it is.  Errors: NK_EINVAL (a share of
 * another size, a node the plan's machine lacks, cpus that do not
 * correspond; the message says which), NK_EPARSE, NK_ENOMEM; the plan is
 * unchanged then.
 * @since 0.2 (experimental)
 */
NK_API int nk_advice_resolve_share(nk_advice *a, const nk_machine *m, const int *nodes, size_t n, nk_error *err);
/** Number of variable entries.  @since 0.1 (experimental) */
NK_API size_t nk_advice_num_entries(const nk_advice *a);
/** Free a plan; NULL is a no-op.  @since 0.1 (experimental) */
NK_API void nk_advice_free(nk_advice *a);

/**
 * Predict the effect of @p a on the run profiled in @p p: per variable and
 * overall, the remote-access fraction and an estimated memory-stall time as
 * profiled and under the plan, from the profile's per-page, per-thread
 * accesses and @p m's latency and bandwidth (NULL: the profile's machine; any
 * machine description: "what would this do on a 4-socket box?"), and the
 * migration volume the plan implies.  @p format: NK_REPORT_TEXT or
 * NK_REPORT_JSON; *out is malloc'ed.  Errors: NK_EINVAL, NK_ENODEV (a plan
 * node @p m lacks), NK_ENOMEM.
 * @since 0.1 (experimental)
 */
NK_API int nk_profile_whatif(const nk_profile *p, const nk_machine *m, const nk_advice *a, int format, char **out,
			     nk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_EXPERIMENTAL && !NUMAKIT_ADVICE_EXPERIMENTAL_H */
