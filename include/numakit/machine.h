/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/machine.h: the machine model: loading a machine (live, captured tree, hwloc XML, synthetic,
 * file), its nodes, cpus, caches, allowed sets, page sizes, kernel settings and measured matrices.  Part
 * of the public API; include <numakit.h>, which includes it (it also compiles alone).  Conventions
 * (errors, identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_MACHINE_H
#define NUMAKIT_MACHINE_H

#include "numakit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- machine model */

/**
 * An nk_machine is a snapshot of a machine's memory topology (Minas' numArch):
 * NUMA nodes with their memory and cpus, cores and hardware threads (PUs),
 * caches and the cpus sharing each, the SLIT distance matrix, kernel settings
 * that move pages behind a program's back, what the calling process may use,
 * page sizes, and optional measured latency/bandwidth/NUMA-factor matrices.
 */
typedef struct nk_machine nk_machine;

/**
 * Load the live machine as this process sees it (reads /sys and /proc).
 * A kernel without NUMA support (no /sys/devices/system/node) yields one
 * node 0 holding all cpus and memory.
 * Errors: NK_ENOMEM; NK_EIO/NK_EPARSE when a sysfs file is unreadable or corrupt.
 * @since 0.1
 */
NK_API int nk_machine_load_live(nk_machine **out, nk_error *err);

/**
 * Load a machine from a captured sysfs/procfs tree rooted at @p fsroot (for
 * example a directory made by hwloc-gather-topology).  Every file is read
 * relative to the root; nothing of the running system is used, and the
 * "allowed" sets are those of the captured process (its cpuset/cgroup).
 * A file an older kernel lacks (cpu/online, node/online, nodeN/cpulist,
 * nodeN/distance, ...) is not an error: the fact is found another way, as
 * hwloc finds it, and the machine says which way in its notes
 * (nk_machine_note(); docs/formats.md, "Older sysfs layouts"); the same holds
 * for nk_machine_load_live().
 * Errors: NK_ENOENT when @p fsroot does not exist or has no
 * sys/devices/system/cpu; NK_EPARSE/NK_EIO for a corrupt or unreadable file
 * (the message names it), or when no source names an online cpu; NK_ENOMEM.
 * On error *out is unchanged.
 * @since 0.1
 */
NK_API int nk_machine_load_fsroot(const char *fsroot, nk_machine **out, nk_error *err);

/**
 * Load a machine from an hwloc XML topology file (lstopo foo.xml).
 * Kernel settings are unknown for such a machine and free memory reads 0.
 * The file is checked for well-formedness before hwloc parses it (hwloc 2.9's
 * own XML parser crashes on some corrupt files).
 * Errors: NK_ENOENT; NK_EPARSE (not hwloc XML, or inconsistent); NK_EVERSION
 * (an XML version this hwloc does not read, e.g. hwloc 3 output); NK_EIO
 * (unreadable, a directory, or larger than 8 MiB); NK_EPERM; NK_ENOSYS (hwloc
 * built without XML support); NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_machine_load_xml(const char *path, nk_machine **out, nk_error *err);

/**
 * Build a machine from a synthetic description: space-separated key=value
 * tokens, documented in numakit-topo(1) and docs/formats.md, e.g.
 *   "nodes=4 cores=2 smt=2 mem=4G dist=10:21 l3=16M l2=1M l1=32K"
 *   "nodes=3 ids=0,4,9 cpuless=2 dist=10,20,30/20,10,30/30,30,10"
 * Errors: NK_EPARSE with a message naming the offending token; NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_machine_load_synthetic(const char *desc, nk_machine **out, nk_error *err);

/**
 * Load a machine file written by nk_machine_save() (versioned JSON, see
 * docs/formats.md).  Errors: NK_ENOENT, NK_EPARSE (corrupt, truncated or
 * inconsistent), NK_EVERSION (a version this library does not read), NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_machine_load_file(const char *path, nk_machine **out, nk_error *err);

/** Parse a machine file held in memory (@p len bytes).  Errors as nk_machine_load_file.  @since 0.1 */
NK_API int nk_machine_load_buffer(const char *buf, size_t len, nk_machine **out, nk_error *err);

/**
 * Serialise the machine as a machine file (JSON text).  On success *out is a
 * NUL-terminated string the caller frees with free().  Flags: 0, or
 * NK_JSON_COMPACT for one line.  Errors: NK_EINVAL, NK_ENOMEM.
 * @since 0.1
 */
NK_API int nk_machine_to_json(const nk_machine *m, unsigned flags, char **out);

/** Write the machine file to @p path (replaced atomically).  Errors: NK_EIO, NK_EINVAL, NK_ENOMEM.  @since 0.1 */
NK_API int nk_machine_save(const nk_machine *m, const char *path, nk_error *err);

/** Free a machine; NULL is a no-op.  @since 0.1 */
NK_API void nk_machine_free(nk_machine *m);

/** Where the machine came from. */
enum nk_machine_source {
	NK_SOURCE_LIVE = 0,
	NK_SOURCE_FSROOT = 1,
	NK_SOURCE_XML = 2,
	NK_SOURCE_SYNTHETIC = 3,
	NK_SOURCE_FILE = 4,
};
/** The source kind and its argument (fsroot dir, file name, description; "" for live).  @since 0.1 */
NK_API int nk_machine_source(const nk_machine *m, const char **detail);

/**
 * Notes on how the machine was found where its usual source was missing, one
 * line each, e.g. "cpu/online missing: online cpus from the cpuN/online
 * files" for a captured tree of an older kernel (docs/formats.md, "Older
 * sysfs layouts").  A machine file keeps them; `numakit topo` prints them.
 * nk_machine_num_notes() returns the count (0 for most machines), or
 * NK_EINVAL for NULL; nk_machine_note() the @p i-th note, or NULL when out of
 * range.  The string lives as long as the machine.
 * @since 0.1
 */
NK_API int nk_machine_num_notes(const nk_machine *m);
NK_API const char *nk_machine_note(const nk_machine *m, int i);

/* --- nodes --- */

/** Number of NUMA nodes (online nodes; at least 1).  @since 0.1 */
NK_API int nk_machine_num_nodes(const nk_machine *m);
/** OS id of the @p idx-th node in increasing id order, or NK_EINVAL.  @since 0.1 */
NK_API int nk_machine_node_id(const nk_machine *m, int idx);
/** Position of node @p node in the iteration order, or NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_node_index(const nk_machine *m, int node);

/** Node property bits returned by nk_machine_node_flags(). */
#define NK_NODE_HAS_CPUS 0x1u       /**< has at least one cpu (else CPU-less memory node) */
#define NK_NODE_HAS_MEMORY 0x2u     /**< has memory (else memoryless node) */
#define NK_NODE_MEM_ALLOWED 0x4u    /**< this process may allocate on it (cpuset/cgroup) */
#define NK_NODE_CPUS_ALLOWED 0x8u   /**< at least one of its cpus is allowed to this process */
/** Property bits of node @p node (>= 0), or NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_node_flags(const nk_machine *m, int node);

/** Memory of node @p node in bytes; either pointer may be NULL.  Free is a snapshot. Errors: NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_node_memory(const nk_machine *m, int node, uint64_t *total, uint64_t *free_bytes);

/**
 * The cpus of node @p node, increasing.  Writes at most @p cap ids to @p cpus
 * (which may be NULL when cap is 0) and returns the total count, so a call
 * with cap 0 sizes the buffer.  Errors: NK_ENODEV.
 * @since 0.1
 */
NK_API int nk_machine_node_cpus(const nk_machine *m, int node, int *cpus, size_t cap);

/** SLIT distance from node @p from to node @p to (10 = local).  Errors: NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_distance(const nk_machine *m, int from, int to);

/**
 * Nodes ordered by distance from @p node: @p node first when it has memory,
 * then increasing distance, ties by id.  Only nodes with memory are listed.
 * Count/capacity semantics as nk_machine_node_cpus().  O(n log n) in the
 * node count (a call with cap 0 is O(n)); it allocates a scratch array and,
 * when that fails, falls back to an O(n^2) selection, so it never fails for
 * memory.  Errors: NK_ENODEV.
 * @since 0.1
 */
NK_API int nk_machine_neighbors(const nk_machine *m, int node, int *nodes, size_t cap);

/* --- cpus --- */

/** Number of cpus (PUs, hardware threads) that are online.  @since 0.1 */
NK_API int nk_machine_num_cpus(const nk_machine *m);
/** OS id of the @p idx-th online cpu in increasing order, or NK_EINVAL.  @since 0.1 */
NK_API int nk_machine_cpu_id(const nk_machine *m, int idx);

/** Where a cpu sits. */
typedef struct nk_cpu_info {
	int node;    /**< NUMA node id; -1 when the cpu is online but its node is offline */
	int core;    /**< core index, unique machine-wide (not the OS core_id, which repeats per package) */
	int package; /**< OS physical_package_id, -1 when unknown */
	int allowed; /**< 1 when this process may run on it */
} nk_cpu_info;
/** Fill @p info for cpu @p cpu.  Errors: NK_ENODEV, NK_EINVAL.  @since 0.1 */
NK_API int nk_machine_cpu_info(const nk_machine *m, int cpu, nk_cpu_info *info);

/** Number of cores (distinct core indices).  @since 0.1 */
NK_API int nk_machine_num_cores(const nk_machine *m);

/* --- caches --- */

enum nk_cache_type { NK_CACHE_UNIFIED = 0, NK_CACHE_DATA = 1, NK_CACHE_INSTRUCTION = 2 };

/** One cache instance. */
typedef struct nk_cache_info {
	int level;          /**< 1, 2, 3, ... */
	int type;           /**< enum nk_cache_type */
	uint64_t size;      /**< bytes, 0 when unknown */
	int line_size;      /**< bytes, 0 when unknown */
	int ways;           /**< associativity, 0 when unknown */
	int num_cpus;       /**< how many cpus share it */
} nk_cache_info;

/** Number of cache instances (every L1d of every core counts).  @since 0.1 */
NK_API int nk_machine_num_caches(const nk_machine *m);
/** Describe cache instance @p idx (0-based).  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_machine_cache(const nk_machine *m, int idx, nk_cache_info *info);
/** The cpus sharing cache instance @p idx; count/capacity as nk_machine_node_cpus().  @since 0.1 */
NK_API int nk_machine_cache_cpus(const nk_machine *m, int idx, int *cpus, size_t cap);

/* --- what this process may use --- */

/** Cpus this process may run on (cpuset/cgroup/affinity); count/capacity semantics.  @since 0.1 */
NK_API int nk_machine_allowed_cpus(const nk_machine *m, int *cpus, size_t cap);
/** Nodes this process may allocate memory on (cpuset/cgroup mems); count/capacity semantics.  @since 0.1 */
NK_API int nk_machine_allowed_nodes(const nk_machine *m, int *nodes, size_t cap);

/* --- pages and kernel settings --- */

/** Base page size in bytes.  @since 0.1 */
NK_API uint64_t nk_machine_page_size(const nk_machine *m);
/** Huge page sizes in bytes, increasing; count/capacity semantics.  @since 0.1 */
NK_API int nk_machine_huge_page_sizes(const nk_machine *m, uint64_t *sizes, size_t cap);

/** Transparent huge pages mode ("enabled" setting). */
enum nk_thp_mode {
	NK_THP_UNKNOWN = -1,
	NK_THP_NEVER = 0,
	NK_THP_MADVISE = 1,
	NK_THP_ALWAYS = 2,
	NK_THP_DEFER = 3,         /**< defrag only: reclaim/compact in the background for every fault */
	NK_THP_DEFER_MADVISE = 4, /**< defrag only: direct for madvised regions, background for the rest */
};

/** Kernel settings that change placement behind the program's back. */
typedef struct nk_kernel_settings {
	int numa_balancing;   /**< /proc/sys/kernel/numa_balancing value (0 off, 1 on, 2 tiering, 3 both); -1 unknown */
	int thp_enabled;      /**< enum nk_thp_mode */
	int thp_defrag;       /**< enum nk_thp_mode for the "defrag" setting; -1 unknown */
	int weighted_interleave; /**< 1 when the kernel exposes weighted-interleave weights, 0 when not, -1 unknown */
} nk_kernel_settings;
/** Fill @p out.  Errors: NK_EINVAL.  @since 0.1 */
NK_API int nk_machine_kernel_settings(const nk_machine *m, nk_kernel_settings *out);
/** Weighted-interleave weight of @p node (1..255), NK_ENODATA when the kernel has none, NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_wi_weight(const nk_machine *m, int node);

/* --- measured matrices --- */

/** Matrices a benchmark can measure; indexed [cpu node][memory node]. */
enum nk_matrix_kind {
	NK_MATRIX_LATENCY_NS = 0,   /**< idle load latency, ns */
	NK_MATRIX_BANDWIDTH_MBS = 1, /**< read bandwidth, MB/s */
	NK_MATRIX_NUMA_FACTOR = 2,  /**< remote/local latency ratio */
	NK_MATRIX_KIND_COUNT = 3
};

/**
 * Store a measured value.  Errors: NK_EINVAL (kind, or a non-finite or
 * non-positive value), NK_ENODEV.
 * @since 0.1
 */
NK_API int nk_machine_set_matrix(nk_machine *m, int kind, int from, int to, double value);

/** Read a measured value.  Errors: NK_ENODATA when not measured, NK_EINVAL, NK_ENODEV.  @since 0.1 */
NK_API int nk_machine_get_matrix(const nk_machine *m, int kind, int from, int to, double *value);

/**
 * NUMA factor from @p from to @p to: the measured one when there is one,
 * else distance(from,to)/10 (so 1.0 for local with a standard SLIT).
 * Errors: NK_ENODEV, NK_EINVAL.
 * @since 0.1
 */
NK_API int nk_machine_numa_factor(const nk_machine *m, int from, int to, double *factor);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_MACHINE_H */
