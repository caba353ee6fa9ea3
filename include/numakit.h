/*
 * numakit — NUMA memory-affinity toolkit.  The one public header.
 *
 * ERROR CONVENTION (stated once, followed everywhere)
 *   Every fallible function returns an int: 0 (NK_OK) or a non-negative
 *   count on success, a negative NK_E* code on failure.  Functions that
 *   create an object return it through an out-parameter, which is left
 *   untouched on failure.  A failing call changes nothing observable.
 *   Functions that can fail for reasons worth telling a person (a file that
 *   is corrupt, a description that does not parse) also take an optional
 *   `nk_error *` that receives the code and a one-line message naming the
 *   file or input and the problem; pass NULL when you do not need it.
 *   nk_strerror() turns a code into a static message.
 *
 * IDENTIFIERS
 *   Node and cpu arguments are the operating system's ids (what numactl and
 *   /sys call node 3, cpu 17).  They need not be contiguous; use the
 *   nk_machine_node_id()/nk_machine_cpu_id() iterators, never 0..n-1.
 *
 * THREAD SAFETY
 *   An nk_machine is immutable once loaded, except for the measurement
 *   setters (nk_machine_set_matrix); concurrent reads are safe, a setter
 *   needs exclusive access.  Functions never keep global mutable state.
 *
 * The library never prints, never reads the environment and never exits.
 */
#ifndef NUMAKIT_H
#define NUMAKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NK_VERSION_MAJOR 0
#define NK_VERSION_MINOR 1
#define NK_VERSION_PATCH 0
#define NK_VERSION_STRING "0.1.0"

#if defined(NK_BUILDING_LIBRARY)
#define NK_API __attribute__((visibility("default")))
#else
#define NK_API
#endif

/* ---------------------------------------------------------------- errors */

/** Error codes.  Values are stable and part of the ABI. */
enum nk_errcode {
	NK_OK = 0,
	NK_EINVAL = -1,    /**< bad argument (NULL, out of range, unknown flag bit) */
	NK_ENOMEM = -2,    /**< out of memory in the library itself */
	NK_ENOENT = -3,    /**< a file or directory does not exist */
	NK_EIO = -4,       /**< a file exists but could not be read */
	NK_EPARSE = -5,    /**< input is corrupt, truncated or does not parse */
	NK_EVERSION = -6,  /**< a file's format version is not supported */
	NK_ENOSYS = -7,    /**< not supported by this kernel or build */
	NK_ENODEV = -8,    /**< no such node or cpu on this machine */
	NK_ERANGE = -9,    /**< result does not fit the buffer supplied */
	NK_ENODATA = -10,  /**< the value was never measured / is not known */
	NK_EPERM = -11,    /**< the operating system refused (permissions, cpuset) */
};

/** Maximum length of an nk_error message, including the terminating NUL. */
#define NK_ERROR_MSG_MAX 512

/** Details of a failure: the code and a one-line message. */
typedef struct nk_error {
	int code;                       /**< the NK_E* code returned */
	char message[NK_ERROR_MSG_MAX]; /**< e.g. "node3/distance: expected 4 values, found 3" */
} nk_error;

/** Static English message for an NK_E* code; never NULL. */
NK_API const char *nk_strerror(int code);

/** Library version "MAJOR.MINOR.PATCH" (of the library loaded, not of this header). */
NK_API const char *nk_version(void);

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
 */
NK_API int nk_machine_load_live(nk_machine **out, nk_error *err);

/**
 * Load a machine from a captured sysfs/procfs tree rooted at @p fsroot (for
 * example a directory made by hwloc-gather-topology).  Every file is read
 * relative to the root; nothing of the running system is used, and the
 * "allowed" sets are those of the captured process (its cpuset/cgroup).
 * Errors: NK_ENOENT when @p fsroot does not exist; NK_EPARSE/NK_EIO for a
 * corrupt or unreadable file (the message names it); NK_ENOMEM.
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
 */
NK_API int nk_machine_load_xml(const char *path, nk_machine **out, nk_error *err);

/**
 * Build a machine from a synthetic description: space-separated key=value
 * tokens, documented in numakit-topo(1) and docs/formats.md, e.g.
 *   "nodes=4 cores=2 smt=2 mem=4G dist=10:21 l3=16M l2=1M l1=32K"
 *   "nodes=3 ids=0,4,9 cpuless=2 dist=10,20,30/20,10,30/30,30,10"
 * Errors: NK_EPARSE with a message naming the offending token; NK_ENOMEM.
 */
NK_API int nk_machine_load_synthetic(const char *desc, nk_machine **out, nk_error *err);

/**
 * Load a machine file written by nk_machine_save() (versioned JSON, see
 * docs/formats.md).  Errors: NK_ENOENT, NK_EPARSE (corrupt, truncated or
 * inconsistent), NK_EVERSION (a version this library does not read), NK_ENOMEM.
 */
NK_API int nk_machine_load_file(const char *path, nk_machine **out, nk_error *err);

/** Parse a machine file held in memory (@p len bytes).  Errors as nk_machine_load_file. */
NK_API int nk_machine_load_buffer(const char *buf, size_t len, nk_machine **out, nk_error *err);

/**
 * Serialise the machine as a machine file (JSON text).  On success *out is a
 * NUL-terminated string the caller frees with free().  Flags: 0, or
 * NK_JSON_COMPACT for one line.  Errors: NK_EINVAL, NK_ENOMEM.
 */
#define NK_JSON_COMPACT 0x1u
#define NK_JSON_ALLFLAGS 0x1u
NK_API int nk_machine_to_json(const nk_machine *m, unsigned flags, char **out);

/** Write the machine file to @p path (replaced atomically).  Errors: NK_EIO, NK_EINVAL, NK_ENOMEM. */
NK_API int nk_machine_save(const nk_machine *m, const char *path, nk_error *err);

/** Free a machine; NULL is a no-op. */
NK_API void nk_machine_free(nk_machine *m);

/** Where the machine came from. */
enum nk_machine_source {
	NK_SOURCE_LIVE = 0,
	NK_SOURCE_FSROOT = 1,
	NK_SOURCE_XML = 2,
	NK_SOURCE_SYNTHETIC = 3,
	NK_SOURCE_FILE = 4,
};
/** The source kind and its argument (fsroot dir, file name, description; "" for live). */
NK_API int nk_machine_source(const nk_machine *m, const char **detail);

/* --- nodes --- */

/** Number of NUMA nodes (online nodes; at least 1). */
NK_API int nk_machine_num_nodes(const nk_machine *m);
/** OS id of the @p idx-th node in increasing id order, or NK_EINVAL. */
NK_API int nk_machine_node_id(const nk_machine *m, int idx);
/** Position of node @p node in the iteration order, or NK_ENODEV. */
NK_API int nk_machine_node_index(const nk_machine *m, int node);

/** Node property bits returned by nk_machine_node_flags(). */
#define NK_NODE_HAS_CPUS 0x1u       /**< has at least one cpu (else CPU-less memory node) */
#define NK_NODE_HAS_MEMORY 0x2u     /**< has memory (else memoryless node) */
#define NK_NODE_MEM_ALLOWED 0x4u    /**< this process may allocate on it (cpuset/cgroup) */
#define NK_NODE_CPUS_ALLOWED 0x8u   /**< at least one of its cpus is allowed to this process */
/** Property bits of node @p node (>= 0), or NK_ENODEV. */
NK_API int nk_machine_node_flags(const nk_machine *m, int node);

/** Memory of node @p node in bytes; either pointer may be NULL.  Free is a snapshot. Errors: NK_ENODEV. */
NK_API int nk_machine_node_memory(const nk_machine *m, int node, uint64_t *total, uint64_t *free_bytes);

/**
 * The cpus of node @p node, increasing.  Writes at most @p cap ids to @p cpus
 * (which may be NULL when cap is 0) and returns the total count, so a call
 * with cap 0 sizes the buffer.  Errors: NK_ENODEV.
 */
NK_API int nk_machine_node_cpus(const nk_machine *m, int node, int *cpus, size_t cap);

/** SLIT distance from node @p from to node @p to (10 = local).  Errors: NK_ENODEV. */
NK_API int nk_machine_distance(const nk_machine *m, int from, int to);

/**
 * Nodes ordered by distance from @p node: @p node first when it has memory,
 * then increasing distance, ties by id.  Only nodes with memory are listed.
 * Count/capacity semantics as nk_machine_node_cpus().  Errors: NK_ENODEV.
 */
NK_API int nk_machine_neighbors(const nk_machine *m, int node, int *nodes, size_t cap);

/* --- cpus --- */

/** Number of cpus (PUs, hardware threads) that are online. */
NK_API int nk_machine_num_cpus(const nk_machine *m);
/** OS id of the @p idx-th online cpu in increasing order, or NK_EINVAL. */
NK_API int nk_machine_cpu_id(const nk_machine *m, int idx);

/** Where a cpu sits. */
typedef struct nk_cpu_info {
	int node;    /**< NUMA node id; -1 when the cpu is online but its node is offline */
	int core;    /**< core index, unique machine-wide (not the OS core_id, which repeats per package) */
	int package; /**< OS physical_package_id, -1 when unknown */
	int allowed; /**< 1 when this process may run on it */
} nk_cpu_info;
/** Fill @p info for cpu @p cpu.  Errors: NK_ENODEV, NK_EINVAL. */
NK_API int nk_machine_cpu_info(const nk_machine *m, int cpu, nk_cpu_info *info);

/** Number of cores (distinct core indices). */
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

/** Number of cache instances (every L1d of every core counts). */
NK_API int nk_machine_num_caches(const nk_machine *m);
/** Describe cache instance @p idx (0-based).  Errors: NK_EINVAL. */
NK_API int nk_machine_cache(const nk_machine *m, int idx, nk_cache_info *info);
/** The cpus sharing cache instance @p idx; count/capacity as nk_machine_node_cpus(). */
NK_API int nk_machine_cache_cpus(const nk_machine *m, int idx, int *cpus, size_t cap);

/* --- what this process may use --- */

/** Cpus this process may run on (cpuset/cgroup/affinity); count/capacity semantics. */
NK_API int nk_machine_allowed_cpus(const nk_machine *m, int *cpus, size_t cap);
/** Nodes this process may allocate memory on (cpuset/cgroup mems); count/capacity semantics. */
NK_API int nk_machine_allowed_nodes(const nk_machine *m, int *nodes, size_t cap);

/* --- pages and kernel settings --- */

/** Base page size in bytes. */
NK_API uint64_t nk_machine_page_size(const nk_machine *m);
/** Huge page sizes in bytes, increasing; count/capacity semantics. */
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
/** Fill @p out.  Errors: NK_EINVAL. */
NK_API int nk_machine_kernel_settings(const nk_machine *m, nk_kernel_settings *out);
/** Weighted-interleave weight of @p node (1..255), NK_ENODATA when the kernel has none, NK_ENODEV. */
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
 */
NK_API int nk_machine_set_matrix(nk_machine *m, int kind, int from, int to, double value);

/** Read a measured value.  Errors: NK_ENODATA when not measured, NK_EINVAL, NK_ENODEV. */
NK_API int nk_machine_get_matrix(const nk_machine *m, int kind, int from, int to, double *value);

/**
 * NUMA factor from @p from to @p to: the measured one when there is one,
 * else distance(from,to)/10 (so 1.0 for local with a standard SLIT).
 * Errors: NK_ENODEV, NK_EINVAL.
 */
NK_API int nk_machine_numa_factor(const nk_machine *m, int from, int to, double *factor);

/* --- lists --- */

/**
 * Parse a list such as "0-3,8,10-15:2" (ranges, with an optional stride)
 * into increasing, duplicate-free ids.  Count/capacity semantics as above.
 * Errors: NK_EPARSE (message names the problem), NK_EINVAL.
 */
NK_API int nk_parse_list(const char *text, int *ids, size_t cap, nk_error *err);

/**
 * Format increasing ids as a compact list ("0-3,8").  Writes at most @p cap
 * bytes including the NUL and returns the length the full text needs
 * (excluding the NUL), like snprintf.  Errors: NK_EINVAL.
 */
NK_API int nk_format_list(const int *ids, size_t n, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_H */
