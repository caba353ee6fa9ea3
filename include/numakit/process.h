/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/process.h: process-wide memory policies and cpu sets, and /proc/PID/numa_maps.  Part of the
 * public API; include <numakit.h>, which includes it (it also compiles alone).  Conventions (errors,
 * identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_PROCESS_H
#define NUMAKIT_PROCESS_H

#include "numakit/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================= process policies and numa_maps
 *
 * Process-wide placement, as `numakit run` applies it to an unmodified
 * program: a memory policy (set_mempolicy) and a cpu set
 * (sched_setaffinity) for the calling thread, inherited by every thread it
 * creates and kept across fork and exec.  And the other direction: where a
 * running process's memory is, from /proc/PID/numa_maps.
 */

/** Process-wide memory policies (the kernel's MPOL_* modes). */
enum nk_process_policy {
	NK_PROCESS_DEFAULT = 0,        /**< the system default: local allocation (node set ignored) */
	NK_PROCESS_MEMBIND = 1,        /**< only the nodes given (MPOL_BIND) */
	NK_PROCESS_INTERLEAVE = 2,     /**< page round robin over the nodes (MPOL_INTERLEAVE) */
	NK_PROCESS_WEIGHTED = 3,       /**< weighted interleave (MPOL_WEIGHTED_INTERLEAVE, Linux >= 6.9) */
	NK_PROCESS_PREFERRED = 4,      /**< one preferred node, others when it is full (MPOL_PREFERRED) */
	NK_PROCESS_PREFERRED_MANY = 5, /**< a preferred node set (MPOL_PREFERRED_MANY, Linux >= 5.15) */
	NK_PROCESS_LOCAL = 6,          /**< the node the thread runs on (MPOL_LOCAL, numactl --localalloc; node set ignored) */
};

/** Flags of nk_process_set_policy() and nk_process_set_cpus(). */
#define NK_PROCESS_DRY_RUN 0x1u /**< check everything against the machine, change nothing */
#define NK_PROCESS_ALLFLAGS 0x1u

/**
 * Set the memory policy of the calling thread (and so of the threads and
 * processes it starts afterwards) to @p kind over @p nodes (OS ids, @p n of
 * them), after checking every node against @p m (normally the live machine;
 * with NK_PROCESS_DRY_RUN any machine, and nothing is set).
 * Membind, interleave and preferred-many take a set; preferred exactly one
 * node; default and local none (@p nodes is ignored); weighted a set and, in @p weights (may be NULL: the system's), the
 * weight of each node.  The kernel's weighted interleave uses system-wide
 * weights (/sys/kernel/mm/mempolicy/weighted_interleave/nodeN) and has no
 * per-process ones; numakit never writes them (that needs root and changes
 * every process of the system), so weights that differ from the system's
 * are refused with NK_EINVAL and a message giving both.
 * Errors: NK_EINVAL (unknown kind or flag, empty or oversized set, several nodes for
 * preferred, a duplicate, a node without memory, weights outside 1..255 or
 * different from the system's); NK_ENODEV ("node 7 does not exist (nodes:
 * 0-3)"); NK_EPERM (a node this process may not use, or the kernel refused);
 * NK_ENOSYS (the kernel lacks the mode: weighted interleave before 6.9,
 * preferred-many before 5.15, or no NUMA support).  The message names the
 * node.  Nothing changes on failure.
 * @since 0.1
 */
NK_API int nk_process_set_policy(const nk_machine *m, int kind, const int *nodes, const unsigned *weights,
				 size_t n, unsigned flags, nk_error *err);

/**
 * Restrict the calling thread (and the threads and processes it starts
 * afterwards) to @p cpus, after checking each against @p m (flags as
 * nk_process_set_policy()).
 * Errors: NK_EINVAL (empty set, a duplicate, an unknown flag); NK_ENODEV ("cpu 9 does not exist (cpus:
 * 0-7)", offline cpus included); NK_EPERM (a cpu outside this process's
 * allowed set, or the kernel refused).
 * @since 0.1
 */
NK_API int nk_process_set_cpus(const nk_machine *m, const int *cpus, size_t n, unsigned flags, nk_error *err);

/**
 * The memory policy of the calling thread, as the kernel holds it (get_mempolicy(2)): its kind into
 * @p kind (enum nk_process_policy; NK_PROCESS_DEFAULT when none was set) and its node set, increasing,
 * into @p nodes: at most @p cap ids (@p nodes may be NULL when cap is 0); returns the count (0 for
 * default and local).  The mode flags (static or relative nodes, NUMA balancing) are not reported.
 * Thread safety: reads the calling thread's own policy only.
 * Errors: NK_EINVAL (@p kind NULL), NK_ENOSYS (no memory-policy system calls), NK_ENODATA (a mode
 * this numakit does not know; *kind is set to -1), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_process_get_policy(int *kind, int *nodes, size_t cap, nk_error *err);

/**
 * A parsed /proc/PID/numa_maps: one entry per mapping with its policy and
 * resident pages per node.  Immutable once built; concurrent reads are safe.
 */
typedef struct nk_numamaps nk_numamaps;

/** Kind of a mapping in numa_maps. */
enum nk_maps_type {
	NK_MAPS_ANON = 0,  /**< anonymous memory */
	NK_MAPS_FILE = 1,  /**< a mapped file (file=PATH) */
	NK_MAPS_HEAP = 2,  /**< the brk heap */
	NK_MAPS_STACK = 3, /**< the main thread's stack */
	NK_MAPS_HUGE = 4,  /**< hugetlbfs memory ("huge"); path set when it is a file */
};

/** One mapping.  Pointers belong to the nk_numamaps and live as long as it. */
typedef struct nk_maps_entry {
	uint64_t addr;              /**< start address of the mapping */
	const char *policy;         /**< as the kernel writes it: "default", "bind:1", "interleave:0-3", "prefer (many):0-1" */
	int type;                   /**< enum nk_maps_type */
	const char *path;           /**< file path (octal escapes decoded), "[heap]", "[stack]", or "" */
	uint64_t page_size;         /**< bytes per page (kernelpagesize_kB); 0 when no page is resident */
	uint64_t pages;             /**< resident pages: the sum of the per-node counts */
	uint64_t anon, dirty, mapped, mapmax, swapcache, active, writeback; /**< the kernel's counters, 0 if absent */
	size_t nnodes;              /**< number of nodes with pages of this mapping */
	const int *nodes;           /**< their ids, increasing */
	const uint64_t *node_pages; /**< pages on each */
} nk_maps_entry;

/**
 * Parse numa_maps text (@p len bytes; see proc(5)).  Lenient where the
 * kernel varies (spacing, counters it may add as key=value, a missing final
 * newline), strict where a value is corrupt: a line without policy, a
 * number that does not parse or overflows, a duplicate node, page counts
 * without kernelpagesize_kB (a truncated line), an unknown bare word.
 * Errors: NK_EPARSE "numa_maps line 3: ..." naming the line and the token;
 * NK_EINVAL; NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_numamaps_parse(const char *text, size_t len, nk_numamaps **out, nk_error *err);

/**
 * Read and parse /proc/PID/numa_maps (@p pid 0: the calling process).
 * Errors: NK_ENOENT (no such process); NK_EPERM (not ours to read: ptrace
 * access is required); NK_ENOSYS (the process exists but the kernel has no
 * numa_maps: built without NUMA); NK_EIO; NK_EPARSE; NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_numamaps_read(int pid, nk_numamaps **out, nk_error *err);

/** Free parsed maps; NULL is a no-op.  @since 0.1 */
NK_API void nk_numamaps_free(nk_numamaps *nm);

/** Number of mappings (0 for NULL).  @since 0.1 */
NK_API size_t nk_numamaps_count(const nk_numamaps *nm);

/** Describe mapping @p idx.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_numamaps_entry(const nk_numamaps *nm, size_t idx, nk_maps_entry *out);

/**
 * Resident bytes per node over every mapping: node ids (increasing) into
 * @p nodes and bytes into @p bytes (either may be NULL when @p cap is 0);
 * returns the number of nodes with memory, count/capacity semantics.
 * Errors: NK_EINVAL.
 * @since 0.1
 */
NK_API int nk_numamaps_totals(const nk_numamaps *nm, int *nodes, uint64_t *bytes, size_t cap);

/**
 * The parsed maps as JSON ("numakit-numamaps" version 1, see
 * docs/formats.md); @p pid is recorded (0: unknown / from a file).  Flags:
 * 0 or NK_JSON_COMPACT.  *out is freed with free().  Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_numamaps_to_json(const nk_numamaps *nm, int pid, unsigned flags, char **out);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_PROCESS_H */
