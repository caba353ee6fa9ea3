/* SPDX-License-Identifier: BSD-3-Clause
 * Internal representation of nk_machine, shared by the builders (sysfs,
 * hwloc XML, synthetic, machine file) and the accessors.  Builders fill a
 * struct nk_machine loosely, then call nk__machine_finalize(), the one place
 * that sorts, derives and checks every invariant, so no source can hand the
 * rest of the library an inconsistent machine.
 */
#ifndef NK_MACHINE_IMPL_H
#define NK_MACHINE_IMPL_H

#include <stdint.h>

#include "numakit.h"
#include "util/list.h"

/** Largest node count a machine may have (ids may be larger, up to NK__MAX_ID). */
#define NK__MAX_NODES 4096

struct nk__node {
	int id;              /* OS node id */
	uint64_t mem_total;  /* bytes */
	uint64_t mem_free;   /* bytes */
	nk__ilist cpus;      /* OS cpu ids, normalised (derived from cpus[] by finalize) */
	unsigned flags;      /* NK_NODE_* (derived by finalize) */
	int wi_weight;       /* weighted-interleave weight, 0 = none */
	int has_memory_hint; /* builder's view: -1 unknown (derive from mem_total), 0/1 */
};

struct nk__cpu {
	int id;      /* OS cpu id */
	int node;    /* OS node id */
	int core;    /* machine-wide core index (derived by finalize from core_key) */
	int package; /* OS package id or -1 */
	long core_key; /* builder's core identity: cpus with equal (package, core_key) share a core; -1 = own core */
	int allowed;
};

struct nk__cache {
	int level;
	int type;
	uint64_t size;
	int line_size;
	int ways;
	nk__ilist cpus;
};

struct nk_machine {
	int source;
	char *source_detail;

	int nnodes;
	struct nk__node *nodes; /* sorted by id */
	int *dist;              /* nnodes x nnodes, row = from */

	int ncpus;
	struct nk__cpu *cpus; /* sorted by id */
	int ncores;

	int ncaches;
	struct nk__cache *caches;

	nk__ilist allowed_cpus;
	nk__ilist allowed_nodes;
	/* the cgroup cpuset's cpus before the affinity mask (nk_machine_cpuset_cpus); builders may leave
	 * it empty: finalize makes it all online cpus when cpuset_all, else the allowed cpus */
	nk__ilist cpuset_cpus;
	int cpuset_all;

	uint64_t page_size;
	nk__ilist huge_kb; /* huge page sizes in KiB, normalised */

	nk_kernel_settings kernel;

	double *matrix[NK_MATRIX_KIND_COUNT]; /* nnodes x nnodes or NULL; NAN = not measured */

	/* How facts were found when the usual source was missing ("cpu/online missing: online cpus from
	 * the cpuN/online files"): one line each, in the order found; kept by copies and machine files. */
	char **notes;
	int nnotes;
};

/** A zeroed machine with kernel settings "unknown". NULL on ENOMEM. */
struct nk_machine *nk__machine_new(int source, const char *detail);

/** Grow helpers for builders; return 0 or NK_ENOMEM. */
int nk__machine_add_node(struct nk_machine *m, int id, struct nk__node **out);
int nk__machine_add_cpu(struct nk_machine *m, int id, struct nk__cpu **out);
int nk__machine_add_cache(struct nk_machine *m, struct nk__cache **out);
/** Append a note (printf format, one line); 0 or NK_ENOMEM (nothing added). */
int nk__machine_add_note(struct nk_machine *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Sort, derive and validate.  Fills: node cpus and flags, core indices, node
 * flags for allowed sets, default distances when dist is NULL (10 local, 20
 * remote), default allowed sets (everything) when empty.  Checks: unique ids,
 * every cpu on an existing node, distances positive and local <= remote... not
 * enforced (firmware lies) but diagonal must be present; cache cpus exist.
 * On failure writes a message prefixed by @p what and returns NK_EPARSE.
 */
int nk__machine_finalize(struct nk_machine *m, const char *what, nk_error *err);

/** A deep copy of a finalized machine, or NULL (ENOMEM). */
struct nk_machine *nk__machine_copy(const struct nk_machine *m);

/** Index of node id in m->nodes or -1. */
int nk__node_idx(const struct nk_machine *m, int id);
/** Index of cpu id in m->cpus or -1. */
int nk__cpu_idx(const struct nk_machine *m, int id);

/* Builders (each returns 0 or NK_E*, fills *out only on success). */
int nk__machine_from_sysfs(const char *root, int live, nk_machine **out, nk_error *err);

#endif
