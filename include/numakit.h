/* SPDX-License-Identifier: BSD-3-Clause
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
#if defined(_OPENMP)
#include <omp.h> /* the nk_omp_* conveniences at the end */
#endif

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
 * A file an older kernel lacks (cpu/online, node/online, nodeN/cpulist,
 * nodeN/distance, ...) is not an error: the fact is found another way, as
 * hwloc finds it, and the machine says which way in its notes
 * (nk_machine_note(); docs/formats.md, "Older sysfs layouts"); the same holds
 * for nk_machine_load_live().
 * Errors: NK_ENOENT when @p fsroot does not exist or has no
 * sys/devices/system/cpu; NK_EPARSE/NK_EIO for a corrupt or unreadable file
 * (the message names it), or when no source names an online cpu; NK_ENOMEM.
 * On error *out is unchanged.
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

/**
 * Notes on how the machine was found where its usual source was missing, one
 * line each, e.g. "cpu/online missing: online cpus from the cpuN/online
 * files" for a captured tree of an older kernel (docs/formats.md, "Older
 * sysfs layouts").  A machine file keeps them; `numakit topo` prints them.
 * nk_machine_num_notes() returns the count (0 for most machines), or
 * NK_EINVAL for NULL; nk_machine_note() the @p i-th note, or NULL when out of
 * range.  The string lives as long as the machine.
 */
NK_API int nk_machine_num_notes(const nk_machine *m);
NK_API const char *nk_machine_note(const nk_machine *m, int i);

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
 * Count/capacity semantics as nk_machine_node_cpus().  O(n log n) in the
 * node count (a call with cap 0 is O(n)); it allocates a scratch array and,
 * when that fails, falls back to an O(n^2) selection, so it never fails for
 * memory.  Errors: NK_ENODEV.
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

/* =============================================================== policies
 *
 * A policy is a value: a kind, a node set and parameters.  Given a machine
 * and a region (an address range with optional geometry) it yields a plan,
 * the node of every page, without touching memory.  Policies are pure and
 * deterministic (random takes a seed).  Applying a plan is separate
 * (nk_apply), so a policy can be re-applied at every program phase.
 *
 * Page i below is the i-th page of the region counted from the page that
 * holds its first byte; M is the size of the policy's node set.
 */
typedef struct nk_policy nk_policy;

enum nk_policy_kind {
	NK_POLICY_BIND = 0,             /**< all pages on the node set, filling nodes in order (Minas bind_all) */
	NK_POLICY_BLOCK = 1,            /**< one contiguous block per thread (or per node), block t on thread t's node */
	NK_POLICY_CYCLIC = 2,           /**< page i -> node[i mod M] */
	NK_POLICY_CYCLIC_BLOCK = 3,     /**< block of b pages j -> node[j mod M] */
	NK_POLICY_CYCLIC_NEIGHBORS = 4, /**< cyclic over the home node and its nearest neighbours by NUMA factor */
	NK_POLICY_SKEW_MAPP = 5,        /**< page i -> node[(i + floor(i/M) + 1) mod M] */
	NK_POLICY_PRIME_MAPP = 6,       /**< cyclic over P >= M virtual banks (P prime), then virtual -> real cyclic */
	NK_POLICY_RANDOM = 7,           /**< seeded, reproducible uniform choice per page */
	NK_POLICY_BLOCK_CYCLIC = 8,     /**< blocks of a given byte size round robin (Majo & Gross) */
	NK_POLICY_BLOCK_EXCLUSIVE = 9,  /**< 2D latin square: block (r,c) of a p x p grid -> node[(r + c) mod p] */
	NK_POLICY_WEIGHTED = 10,        /**< weighted interleave: node k gets w_k of every sum(w) pages */
	NK_POLICY_NEXT_TOUCH = 11,      /**< each page moves to the node of the next thread touching it */
	NK_POLICY_KIND_COUNT = 12
};

/** How NK_POLICY_BLOCK cuts a region with geometry. */
enum nk_split {
	NK_SPLIT_PAGES = 0,  /**< equal runs of pages (any region) */
	NK_SPLIT_ROWS = 1,   /**< whole rows (2D) or planes (3D) per block: dims[0] is divided */
	NK_SPLIT_COLS = 2,   /**< whole columns (2D, row-major): dims[1] is divided, page-granular */
};

/**
 * Parse a policy from text, the form used by the CLI and plans:
 *   KIND[:key=value[,key=value...]]   e.g.
 *   "cyclic:nodes=0-3"   "cyclic_block:block=64K"   "bind:nodes=2"
 *   "block:split=rows"   "skew_mapp"   "prime_mapp:prime=7"   "random:seed=42"
 *   "block_cyclic:block=1M,nodes=0,2"   "weighted:weights=0=3/1=1"
 *   "cyclic_neighbors:home=1,count=2"   "block_exclusive"   "next_touch"
 * Keys not given keep their defaults (nodes: every node with memory that the
 * process may use).  Errors: NK_EPARSE naming the token, NK_ENOMEM.
 */
NK_API int nk_policy_parse(const char *text, nk_policy **out, nk_error *err);
/** A policy of @p kind with default parameters.  Errors: NK_EINVAL, NK_ENOMEM. */
NK_API int nk_policy_create(int kind, nk_policy **out);
/** Deep copy.  Errors: NK_EINVAL, NK_ENOMEM. */
NK_API int nk_policy_copy(const nk_policy *p, nk_policy **out);
NK_API void nk_policy_free(nk_policy *p);
/** The kind, or NK_EINVAL. */
NK_API int nk_policy_kind(const nk_policy *p);
/** Canonical text form (parses back to an equal policy); snprintf semantics. */
NK_API int nk_policy_format(const nk_policy *p, char *buf, size_t cap);

/*
 * Setters: each returns NK_EINVAL for a kind it does not apply to, and
 * 0/-1 values reset to the default (nodes n = 0, home -1, count 0, prime 0).
 */
/** Node set, in the order the policy uses (n = 0: the default set). Errors: NK_EINVAL (negative id, duplicate). */
NK_API int nk_policy_set_nodes(nk_policy *p, const int *nodes, size_t n);
/** Block size in bytes for cyclic_block / block_cyclic (rounded up to whole pages). Errors: NK_EINVAL (0). */
NK_API int nk_policy_set_block(nk_policy *p, uint64_t bytes);
/** Weights (1..255) per node for NK_POLICY_WEIGHTED.  Errors: NK_EINVAL. */
NK_API int nk_policy_set_weights(nk_policy *p, const int *nodes, const unsigned *weights, size_t n);
/** Seed of NK_POLICY_RANDOM. */
NK_API int nk_policy_set_seed(nk_policy *p, uint64_t seed);
/** Home node of cyclic_neighbors (default: the caller's node when the plan is built). */
NK_API int nk_policy_set_home(nk_policy *p, int node);
/** How many nodes cyclic_neighbors uses, home included (default: home + nodes at the smallest remote factor). */
NK_API int nk_policy_set_count(nk_policy *p, int count);
/** Prime P of prime_mapp (default: the smallest prime >= M).  Errors: NK_EINVAL (not prime, < M). */
NK_API int nk_policy_set_prime(nk_policy *p, int prime);
/**
 * Threads of NK_POLICY_BLOCK: block t goes to @p thread_nodes[t] (default: one
 * block per node of the set).  A thread on a memoryless or disallowed node
 * gets the nearest usable node.  Giving both threads and nodes is NK_EINVAL.
 */
NK_API int nk_policy_set_threads(nk_policy *p, const int *thread_nodes, size_t nthreads);
/** enum nk_split of NK_POLICY_BLOCK.  Errors: NK_EINVAL. */
NK_API int nk_policy_set_split(nk_policy *p, int split);

/** An address range and, optionally, its geometry (row-major, outermost first). */
typedef struct nk_region {
	void *addr;       /**< first byte */
	size_t len;       /**< bytes (> 0) */
	size_t elem_size; /**< bytes per element, 0 = no geometry */
	int ndims;        /**< 0 (flat), 1, 2 or 3 */
	size_t dims[3];   /**< extents, outermost first; product * elem_size == len */
} nk_region;

/** The node of every page of a region under a policy. */
typedef struct nk_plan nk_plan;

/**
 * Build the plan of @p p over @p r on @p m.  Compact: memory is O(nodes +
 * blocks), never O(pages), except for policies that are genuinely per page
 * (random keeps only its seed and recomputes).
 * The plan is tied to r->addr (nk_apply refuses another address); addr may be
 * NULL for an address-free plan (page 0 = the region's first byte).  The
 * default node set leaves out nodes without memory; a memoryless node named
 * explicitly is an error.
 * Errors: NK_EINVAL (bad region, geometry the policy needs is missing, a
 * memoryless node in the set, an empty default set); NK_ENODEV (a node the
 * machine lacks); NK_EPERM (a node the process may not use); NK_ENOMEM.
 */
NK_API int nk_plan_build(const nk_machine *m, const nk_policy *p, const nk_region *r, nk_plan **out, nk_error *err);
NK_API void nk_plan_free(nk_plan *pl);
/** Number of pages the plan covers. */
NK_API size_t nk_plan_num_pages(const nk_plan *pl);
/** Page size the plan was built for. */
NK_API uint64_t nk_plan_page_size(const nk_plan *pl);
/** Node of page @p page (0-based); NK_EINVAL when out of range; NK_ENODATA for next_touch (no fixed node). */
NK_API int nk_plan_node(const nk_plan *pl, size_t page);
/**
 * Nodes of pages [first, first + n) into @p nodes, in O(n) without per-call
 * allocation (the fast path for appliers and tests).  Errors: NK_EINVAL;
 * NK_ENODATA for next_touch (nothing written).
 */
NK_API int nk_plan_nodes(const nk_plan *pl, size_t first, size_t n, int *nodes);

/* ============================================================ placement
 * Applying a plan to memory and asking where memory is (Linux: mbind,
 * move_pages).  These are the only calls of this part that touch the system.
 */

/** Flags of nk_apply(). */
#define NK_APPLY_STRICT 0x1u   /**< fail with NK_ENOMEM instead of falling back to another node */
#define NK_APPLY_NO_MOVE 0x2u  /**< set the policy for future faults only; leave resident pages (misplaced
				  resident pages are then counted in no field) */
#define NK_APPLY_ALLFLAGS 0x3u

/** What an application did. */
typedef struct nk_apply_result {
	size_t pages;           /**< pages in the region */
	size_t pages_untouched; /**< not yet faulted in: placed by policy at first touch */
	size_t pages_in_place;  /**< resident on their target already */
	size_t pages_moved;     /**< migrated to their target */
	size_t pages_fallback;  /**< placed on another node than planned (full or refused node) */
	size_t pages_failed;    /**< could not be placed (busy, pinned); the data is intact */
	size_t syscalls;        /**< system calls made (range check, residency queries, madvise, mbind, move_pages) */
	int fallback_node;      /**< a node that received fallback pages, -1 if none */
} nk_apply_result;

/**
 * Make the region's pages follow @p pl: untouched pages through the fewest
 * mbind calls the kernel can express; resident pages through batched
 * move_pages carrying only the pages not already on their target.  A target
 * without free memory or not allowed falls back to the nearest allowed node
 * with room, counted in the result (NK_APPLY_STRICT refuses instead).
 * Contents are preserved bit for bit.  @p res may be NULL.
 * Errors: NK_EINVAL (flags, plan not built for this address, a next_touch
 * plan: use nk_next_touch_arm), NK_ENOSYS
 * (kernel without NUMA system calls), NK_EPERM, NK_ENOMEM (strict and a
 * target node is full).
 * Thread safety: concurrent calls on disjoint regions are safe.
 */
NK_API int nk_apply(const nk_machine *m, const nk_plan *pl, void *addr, unsigned flags, nk_apply_result *res,
		    nk_error *err);

/**
 * Residency: the node of each page of [addr, addr+len) into @p nodes (one
 * entry per page; -1 for a page never touched) and/or the page count per node
 * into @p counts indexed like nk_machine_node_id() with one extra last slot
 * for untouched pages (either may be NULL).  Batched move_pages queries.
 * Errors: NK_EINVAL (a hole in the range), NK_ENODEV (a page on a node the
 * machine does not have), NK_ENOSYS, NK_ENOMEM.
 */
NK_API int nk_where(const nk_machine *m, const void *addr, size_t len, int *nodes, size_t *counts);

/* ================= bench (machine characterisation)
 *
 * `numakit bench` measures, for every (cpu node, memory node) pair, idle
 * load latency (dependent loads chasing a random single-cycle permutation
 * over a buffer larger than the last-level cache), bandwidth of read, write,
 * copy and triad kernels with one thread and with every allowed cpu of the
 * cpu node (plus non-temporal-store variants where the cpu has them),
 * access patterns (sequential, cache-line stride, page stride, random),
 * loaded latency (every cpu node hitting one memory node vs each its own)
 * and thread spread (two writers on one node vs on two nodes, Guo & Han
 * §III.C).  Memory is bound to its node before the first touch and its
 * residency checked with a move_pages query; every thread is pinned and
 * checks with getcpu where it runs.  A pair whose placement cannot be
 * verified fails the run: no figure is reported for memory that is not
 * where it was asked to be.  See docs/bench.md for the JSON form.
 *
 * Statistics: each figure is measured `repetitions` times after `warmups`
 * unmeasured runs; the median and the spread (min, max, quartiles) are kept.
 *
 * Thread safety: nk_bench_run() creates and joins its own threads; it must
 * not run concurrently with another benchmark if the figures are to mean
 * anything, but nothing breaks if it does.  Results are immutable.
 */

/** What to measure and how.  Initialise with nk_bench_options_init(). */
typedef struct nk_bench_options {
	uint64_t size;       /**< bytes of the buffer per memory node; 0 = automatic (4 x LLC, 64 MiB..1 GiB; quick: 4 MiB) */
	int repetitions;     /**< measured runs per figure (>= 1); 0 = default (5, quick 3) */
	int warmups;         /**< unmeasured runs first (>= 0); -1 = default (1) */
	int quick;           /**< 1: small buffer and short chases, for a fast look */
	const int *nodes;    /**< node subset (OS ids), NULL = every node */
	size_t nnodes;       /**< entries of @p nodes */
	uint64_t seed;       /**< seed of the random chase and random pattern (same seed, same order) */
} nk_bench_options;

/** Defaults: automatic size, default repetitions, all nodes, seed 1. */
NK_API void nk_bench_options_init(nk_bench_options *o);

/**
 * Check @p o against @p m without measuring.  Errors: NK_EINVAL (size below
 * one page, negative counts; the message says which), NK_ENODEV (a node the
 * machine lacks, named), NK_ENOMEM (the size does not fit a node's free
 * memory: a bound buffer would meet the out-of-memory killer), NK_ENODATA
 * (the subset leaves no cpu node or no memory node to measure).
 */
NK_API int nk_bench_options_check(const nk_machine *m, const nk_bench_options *o, nk_error *err);

/** Progress report passed to the callback before each step. */
typedef struct nk_bench_progress {
	int step;         /**< 0-based index of the step starting now */
	int steps;        /**< total steps of the run */
	const char *what; /**< e.g. "latency cpu node 0 -> memory node 1" */
} nk_bench_progress;
typedef void (*nk_bench_progress_fn)(void *user, const nk_bench_progress *p);

/** Results of a run; opaque, freed with nk_bench_results_free(). */
typedef struct nk_bench_results nk_bench_results;

/**
 * Measure the live machine @p m (loaded with nk_machine_load_live; other
 * sources are refused with NK_EINVAL).  @p progress (may be NULL) is called
 * from the calling thread before each step.  The library prints nothing.
 * Errors: those of nk_bench_options_check(); NK_EPERM (memory could not be
 * bound or pages were found on another node, or a thread could not be
 * pinned or ran on another node: the message names the pair, the pages or
 * cpu and what the kernel said); NK_ENOSYS (kernel without NUMA system
 * calls); NK_ENOMEM.
 */
NK_API int nk_bench_run(const nk_machine *m, const nk_bench_options *o, nk_bench_progress_fn progress,
			void *user, nk_bench_results **out, nk_error *err);

NK_API void nk_bench_results_free(nk_bench_results *r);

/** Which nodes a run measured. */
enum nk_bench_role {
	NK_BENCH_CPU_NODES = 0, /**< nodes threads ran on (rows) */
	NK_BENCH_MEM_NODES = 1, /**< nodes memory was bound to (columns) */
};
/** Node ids of a role, increasing; count/capacity semantics.  Errors: NK_EINVAL. */
NK_API int nk_bench_nodes(const nk_bench_results *r, int role, int *ids, size_t cap);

/** Figures of a pair.  Bandwidths in MB/s (10^6 bytes/s), latency in ns per access. */
enum nk_bench_metric {
	NK_BENCH_LATENCY = 0,      /**< idle latency, ns (one thread) */
	NK_BENCH_READ = 1,         /**< sum of 8-byte loads, 8 B/element */
	NK_BENCH_WRITE = 2,        /**< 8-byte stores, 8 B/element */
	NK_BENCH_COPY = 3,         /**< c[i] = a[i], 16 B/element */
	NK_BENCH_TRIAD = 4,        /**< a[i] = b[i] + s*c[i], 24 B/element (STREAM counting) */
	NK_BENCH_WRITE_NT = 5,     /**< write with non-temporal stores */
	NK_BENCH_COPY_NT = 6,      /**< copy with non-temporal stores */
	NK_BENCH_TRIAD_NT = 7,     /**< triad with non-temporal stores */
	NK_BENCH_STRIDE_LINE = 8,  /**< one load per cache line, 64 B counted per load (one thread) */
	NK_BENCH_STRIDE_PAGE = 9,  /**< loads a page apart, 64 B per load (one thread) */
	NK_BENCH_RANDOM = 10,      /**< independent loads at random lines, 64 B per load (one thread) */
	NK_BENCH_LOADED_ALL = 11,  /**< latency, ns, while every cpu node hits the memory node */
	NK_BENCH_LOADED_OWN = 12,  /**< latency, ns, while every cpu node hits its own (nearest) memory node */
	NK_BENCH_METRIC_COUNT = 13
};
/** Thread counts of bandwidth figures. */
enum nk_bench_threads { NK_BENCH_ONE = 0, NK_BENCH_ALL = 1 };

/** Median and spread of the repetitions of one figure. */
typedef struct nk_bench_stat {
	double median, min, max, q1, q3; /**< q1/q3: quartiles (linear interpolation) */
	int n;                           /**< repetitions */
} nk_bench_stat;

/**
 * One figure: @p threads is NK_BENCH_ONE or NK_BENCH_ALL (only READ..TRIAD_NT
 * have NK_BENCH_ALL).  NK_BENCH_LOADED_OWN exists for (c, the memory node
 * that was c's own).  Errors: NK_EINVAL, NK_ENODEV (pair not measured),
 * NK_ENODATA (not measured: no non-temporal stores on this cpu, ...).
 */
NK_API int nk_bench_get(const nk_bench_results *r, int metric, int threads, int cpu_node, int mem_node,
			nk_bench_stat *out);

/** How a pair was run and what was verified. */
typedef struct nk_bench_pair {
	int cpu;                /**< cpu of the one-thread figures */
	int threads;            /**< threads of the all-cpus figures */
	size_t pages;           /**< pages of the buffer checked with move_pages */
	int placement_verified; /**< 1: every page was on the memory node, before and after */
	int cpu_verified;       /**< 1: every thread ran on a cpu of the cpu node (getcpu) */
} nk_bench_pair;
/** Errors: NK_EINVAL, NK_ENODEV (pair not measured). */
NK_API int nk_bench_pair_info(const nk_bench_results *r, int cpu_node, int mem_node, nk_bench_pair *out);

/**
 * Derived: remote/local latency (local = the cpu node's own memory, or its
 * nearest measured memory node when it has none).  Errors: NK_ENODEV, NK_ENODATA.
 */
NK_API int nk_bench_numa_factor(const nk_bench_results *r, int cpu_node, int mem_node, double *factor);

/**
 * Derived: local read bandwidth of memory node @p node with all cpus (MB/s),
 * measured from @p *from: the node itself, or its nearest cpu node when it
 * has no cpus.  Errors: NK_ENODEV, NK_ENODATA.
 */
NK_API int nk_bench_local_bandwidth(const nk_bench_results *r, int node, int *from, double *mbs);

/** Thread spread (two writers, each on its own local data). */
enum nk_bench_spread_kind { NK_BENCH_SPREAD_ONE_NODE = 0, NK_BENCH_SPREAD_TWO_NODES = 1 };
typedef struct nk_bench_spread {
	int cpus[2];        /**< the writers' cpus */
	int nodes[2];       /**< their nodes (= their data's nodes) */
	nk_bench_stat mbs;  /**< aggregate write bandwidth, MB/s */
} nk_bench_spread;
/** Errors: NK_EINVAL, NK_ENODATA (the machine or subset cannot host this layout). */
NK_API int nk_bench_get_spread(const nk_bench_results *r, int kind, nk_bench_spread *out);

/** Notes of the run ("node 1 has no memory: not a memory target"). */
NK_API int nk_bench_num_notes(const nk_bench_results *r);
/** The @p i-th note, or NULL. */
NK_API const char *nk_bench_note(const nk_bench_results *r, int i);

/** Options in effect (size and repetitions resolved), or NULL. */
NK_API const nk_bench_options *nk_bench_used_options(const nk_bench_results *r);

/** The results as JSON (docs/bench.md); flags as nk_machine_to_json.  Errors: NK_EINVAL, NK_ENOMEM. */
NK_API int nk_bench_results_to_json(const nk_bench_results *r, unsigned flags, char **out);

/**
 * Store the measured matrices in @p m: NK_MATRIX_LATENCY_NS (idle latency),
 * NK_MATRIX_BANDWIDTH_MBS (read, all cpus of the cpu node) and
 * NK_MATRIX_NUMA_FACTOR, for every measured pair.  Returns the number of
 * values stored.  Errors: NK_EINVAL, NK_ENODEV (a node @p m lacks; nothing
 * stored), NK_ENOMEM.
 */
NK_API int nk_bench_results_to_machine(const nk_bench_results *r, nk_machine *m);

/**
 * Let a machine carry measurements saved earlier: copy every measured
 * matrix value of @p saved (a machine file, nk_machine_load_file) into
 * @p live, for pairs of node ids present in both.  Refused with NK_ENODEV
 * (nothing copied; the message says what differs) unless both machines
 * have the same node ids with the same cpus, i.e. the file describes this
 * machine.  @p flags must be 0.  Returns the number of values copied.
 * Errors: NK_EINVAL, NK_ENODEV, NK_ENOMEM.  Needs exclusive access to @p live.
 */
NK_API int nk_machine_merge_measurements(nk_machine *live, const nk_machine *saved, unsigned flags,
					 nk_error *err);

/* ================= arrays (NUMA arrays, Minas MAi)
 *
 * An nk_array is a 1D, 2D or 3D array of fixed-size elements in its own
 * anonymous mapping, so no two arrays (and nothing else) share a page and a
 * policy placed on one array never moves another's data.  Storage is
 * contiguous and row-major; for 2D and 3D arrays a separate small table of
 * row pointers lets C code write a[i][j] (2D: an array of dims[0] pointers
 * into the data; 3D: dims[0] plane pointers to tables of dims[1] row
 * pointers).  The tables are not in the data mapping: placing the data never
 * moves them, and residency queries of the data never count them.
 *
 * Alignment: the first data page's absolute page number is a multiple of
 * lcm(1..N) pages, N = the machine's node count (or of N alone when that lcm
 * exceeds 64 MiB of address space), so the kernel's interleave, which
 * follows absolute page numbers, places page i of the array on node
 * i mod M of any M-node set in one mbind call.  Only address space is
 * over-reserved, and it is returned at once.
 *
 * The array remembers its geometry, so row, column, plane and
 * block_exclusive policies need no extra arguments: nk_array_apply() builds
 * the plan over nk_array_region() and applies it, and keeps per-array
 * statistics (policy history, pages moved, fallbacks).
 *
 * Transparent huge pages: with THP "always" the kernel may back the array
 * with 2 MiB pages at first touch, and a policy then places 512 base pages
 * at a time.  NK_ARRAY_NO_THP asks the kernel for base pages in this array
 * (madvise MADV_NOHUGEPAGE), so every page follows its policy exactly.
 *
 * Thread safety: allocation, free and nk_array_from() may run concurrently
 * in any threads (a lock guards the registry of live arrays, the one piece
 * of process-wide state of this part).  nk_array_apply() on different arrays
 * runs in parallel; on the same array calls are serialised by a per-array
 * lock.  Reading and writing the elements is the program's business.  An
 * array must not be freed while another thread still uses it, as with free().
 * The machine passed to nk_array_alloc() must outlive the array.
 */
typedef struct nk_array nk_array;

/** Flags of nk_array_alloc(). */
#define NK_ARRAY_NO_THP 0x1u   /**< base pages only (madvise MADV_NOHUGEPAGE) */
#define NK_ARRAY_ALLFLAGS 0x1u

/**
 * Allocate an array of @p ndims (1..3) dimensions @p dims (outermost first)
 * of @p elem_size-byte elements on machine @p m.  The memory is untouched
 * (no page is resident, contents read as zero), so a policy applied before
 * the first write places pages without migrating them.
 * Errors: NK_EINVAL (NULL argument, elem_size 0, ndims outside 1..3, a zero
 * dimension, a size that overflows size_t, an unknown flag); NK_ENOMEM (the
 * mapping or the tables could not be allocated).  Nothing is allocated on
 * failure.
 */
NK_API int nk_array_alloc(const nk_machine *m, size_t elem_size, int ndims, const size_t dims[],
			  unsigned flags, nk_array **out);

/** Free the array, its tables and its mapping; NULL is a no-op. */
NK_API void nk_array_free(nk_array *a);

/** First element (page-aligned), or NULL for a NULL array. */
NK_API void *nk_array_data(const nk_array *a);

/**
 * The pointer a C program indexes: for 1D the data itself (T *), for 2D the
 * row table (T **, a[i][j]), for 3D the plane table (T ***, a[i][j][k]).
 * Assign it to a pointer of the right type; NULL for a NULL array.
 */
NK_API void *nk_array_rows(const nk_array *a);

/** The data as a region with its geometry (addr, len, elem_size, ndims, dims).  Errors: NK_EINVAL. */
NK_API int nk_array_region(const nk_array *a, nk_region *out);

/**
 * The live array whose data or pointer tables contain @p addr, or NULL when
 * @p addr belongs to no numakit array (memory from malloc, mmap, the stack,
 * a freed array).  Use it where geometry is needed for memory known only by
 * a pointer: nk_array_apply(nk_array_from(p), ...) fails with NK_EINVAL for a
 * pointer that is not a numakit array.
 */
NK_API nk_array *nk_array_from(const void *addr);

/**
 * Build the plan of @p p over the array's region on the array's machine and
 * apply it (nk_plan_build() + nk_apply(); @p flags and @p res as nk_apply()),
 * then record it in the array's statistics.  May be called again at any time
 * (a new program phase): resident pages are migrated as needed.
 * Errors: NK_EINVAL (@p a or @p p NULL: "not a numakit array"), and those of
 * nk_plan_build() and nk_apply().  A failed call records nothing.
 */
NK_API int nk_array_apply(nk_array *a, const nk_policy *p, unsigned flags, nk_apply_result *res, nk_error *err);

/** Residency of the array's data: as nk_where() over nk_array_region(). */
NK_API int nk_array_where(const nk_array *a, int *nodes, size_t *counts);

/** How many policies an array remembers in its history (the most recent ones). */
#define NK_ARRAY_HISTORY_MAX 64

/** Per-array statistics, summed over every successful nk_array_apply(). */
typedef struct nk_array_stats {
	size_t applications;   /**< successful nk_array_apply() calls */
	size_t history;        /**< policies kept in the history: min(applications, NK_ARRAY_HISTORY_MAX) */
	size_t pages_moved;    /**< pages migrated */
	size_t pages_fallback; /**< pages placed on another node than planned */
	size_t pages_failed;   /**< pages that could not be placed */
	size_t syscalls;       /**< mbind + move_pages calls made */
	int last_fallback_node; /**< the last node that received fallback pages, -1 if none */
} nk_array_stats;

/** Fill @p out.  Errors: NK_EINVAL. */
NK_API int nk_array_stats_get(const nk_array *a, nk_array_stats *out);

/**
 * The canonical text (nk_policy_format) of history entry @p idx, 0 = the
 * oldest kept, stats.history - 1 = the current policy; snprintf semantics.
 * Errors: NK_EINVAL (NULL array, idx out of range).
 */
NK_API int nk_array_history(const nk_array *a, size_t idx, char *buf, size_t cap);

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
 */
NK_API int nk_numamaps_parse(const char *text, size_t len, nk_numamaps **out, nk_error *err);

/**
 * Read and parse /proc/PID/numa_maps (@p pid 0: the calling process).
 * Errors: NK_ENOENT (no such process); NK_EPERM (not ours to read: ptrace
 * access is required); NK_ENOSYS (the process exists but the kernel has no
 * numa_maps: built without NUMA); NK_EIO; NK_EPARSE; NK_ENOMEM.
 */
NK_API int nk_numamaps_read(int pid, nk_numamaps **out, nk_error *err);

NK_API void nk_numamaps_free(nk_numamaps *nm);

/** Number of mappings (0 for NULL). */
NK_API size_t nk_numamaps_count(const nk_numamaps *nm);

/** Describe mapping @p idx.  Errors: NK_EINVAL. */
NK_API int nk_numamaps_entry(const nk_numamaps *nm, size_t idx, nk_maps_entry *out);

/**
 * Resident bytes per node over every mapping: node ids (increasing) into
 * @p nodes and bytes into @p bytes (either may be NULL when @p cap is 0);
 * returns the number of nodes with memory, count/capacity semantics.
 * Errors: NK_EINVAL.
 */
NK_API int nk_numamaps_totals(const nk_numamaps *nm, int *nodes, uint64_t *bytes, size_t cap);

/**
 * The parsed maps as JSON ("numakit-numamaps" version 1, see
 * docs/formats.md); @p pid is recorded (0: unknown / from a file).  Flags:
 * 0 or NK_JSON_COMPACT.  *out is freed with free().  Errors: NK_EINVAL, NK_ENOMEM.
 */
NK_API int nk_numamaps_to_json(const nk_numamaps *nm, int pid, unsigned flags, char **out);

/* ================= next-touch
 *
 * Next-touch placement (NK_POLICY_NEXT_TOUCH): every page of an armed range
 * moves to the node of the next thread that touches it, read or write.
 * Arming revokes access to the pages (mprotect PROT_NONE); the touch faults,
 * numakit's SIGSEGV handler gives that one page back its access (PROT_READ |
 * PROT_WRITE), moves it to the toucher's node (getcpu, move_pages) and
 * returns, so the instruction restarts and never notices.
 * Contents are preserved bit for bit.  See docs/next_touch.md.
 *
 * GRANULARITY
 *   One base page per fault.  A page that is part of a transparent huge page
 *   moves with its whole huge page (the kernel migrates folios): arm memory
 *   marked MADV_NOHUGEPAGE when page-exact next-touch matters.  A page never
 *   written before (not yet backed) is not moved: its first write places it
 *   by the range's memory policy, which by default is the toucher's node.
 *   Ranges are widened to whole pages: every page holding a byte of the
 *   range is armed, together with whatever else that page holds.
 *
 * SIGNALS (the one global side effect of numakit)
 *   The first nk_next_touch_arm() installs a process-wide SIGSEGV handler
 *   (SA_SIGINFO | SA_ONSTACK | SA_RESTART) and keeps it for the life of the
 *   process.  A SIGSEGV that is not a next-touch fault goes to the handler
 *   that was installed before (called as the kernel would have called it;
 *   SIG_DFL / SIG_IGN: the default action, the process dies as it would
 *   have).  A program that installs its own SIGSEGV handler after arming
 *   must either call nk_next_touch_handle_fault() first in it, or arm again:
 *   every nk_next_touch_arm() puts numakit's handler back on top and chains
 *   the newcomer.  A handler that calls back into the one it replaced is
 *   detected, so a fault neither wants ends in the default action, not in
 *   endless recursion.  The handler is async-signal-safe: system calls and
 *   lock-free reads of a fixed registry of NK_NEXT_TOUCH_MAX_REGIONS regions.
 *
 * SYSTEM CALLS AND I/O
 *   The kernel does not fault on a program's behalf: read(2), recv(2) and
 *   every other system call that writes into an armed page fail with EFAULT
 *   ("Bad address") instead of touching it.  Call nk_next_touch_prepare() on
 *   the buffer first (it makes the calling thread the next toucher), or
 *   preload libnumakit_nt_io.so, which does so for read, pread, readv,
 *   preadv, recv, recvfrom, recvmsg and fread.  Other processes
 *   (process_vm_writev), io_uring and O_DIRECT DMA into armed memory are not
 *   covered: prepare the buffer yourself.
 *
 * RESTRICTIONS
 *   Arm only private, readable and writable memory (touching restores
 *   PROT_READ | PROT_WRITE, whatever the protection was).  Disarm a range
 *   before unmapping or freeing it, and do not change the protection of armed
 *   pages yourself: the registry would take a later PROT_NONE page at the
 *   same address for an armed one.  Pages shared with another process (after
 *   fork, shared mappings) are not moved (move_pages refuses; counted in
 *   move_failures), but still get their access back.
 *
 * THREAD SAFETY
 *   Any number of threads may touch armed memory at once, on different pages
 *   or on the same page (one of the simultaneous touchers wins the page;
 *   nothing is lost).  Arm and disarm serialise on an internal mutex and may
 *   be called from any thread, but not from a signal handler; prepare takes
 *   no lock.
 */

/** Capacity of the region registry (merged, disjoint ranges armed at once). */
#define NK_NEXT_TOUCH_MAX_REGIONS 256

/** Counters since the process started (all threads). */
typedef struct nk_next_touch_counts {
	uint64_t faults;          /**< next-touch faults resolved (one page each) */
	uint64_t pages_moved;     /**< pages migrated to the toucher's node */
	uint64_t pages_local;     /**< pages already on the toucher's node: access restored, nothing moved */
	uint64_t pages_unbacked;  /**< pages not yet written (no memory yet): placed by their first write */
	uint64_t move_failures;   /**< pages the kernel would not move (shared, busy, node full); data intact */
	uint64_t wide_unprotects; /**< access could not be restored to one page alone (vm.max_map_count):
				       a larger aligned span was given back without moving its pages */
	uint64_t foreign_faults;  /**< SIGSEGVs that were not next-touch faults, passed on */
	uint64_t pages_prepared;  /**< pages of armed ranges read by prepare/disarm (they fault when armed) */
	size_t regions;           /**< ranges in the registry now */
	size_t capacity;          /**< NK_NEXT_TOUCH_MAX_REGIONS */
} nk_next_touch_counts;

/**
 * Arm [addr, addr+len) (widened to whole pages) for next-touch.  Pages
 * already armed stay armed; ranges that overlap or abut are merged in the
 * registry.  @p m is the live machine: a toucher on a node without memory,
 * or whose memory the process may not use, gets its pages on the nearest
 * node that it may use (nk_machine_neighbors); NULL moves pages to the
 * toucher's own node.  The first call installs the SIGSEGV handler (see
 * SIGNALS above); every call reinstalls it if another handler replaced it.
 * Errors: NK_EINVAL (NULL @p addr, @p len 0 or wrapping the address space);
 * NK_ENOMEM (the registry is full: disarm something first; a range that is
 * not entirely mapped; the kernel's mapping limit vm.max_map_count: the
 * message says which);
 * NK_EPERM (the mapping cannot be protected, e.g. a file opened read-only);
 * NK_ENOSYS (signals or mprotect unavailable).  On failure the range is not
 * armed (pages of it that were armed before may have been given back their
 * access, without moving).
 * Thread safety: see THREAD SAFETY above.
 */
NK_API int nk_next_touch_arm(const nk_machine *m, void *addr, size_t len, nk_error *err);

/**
 * Make the calling thread the next toucher of every still-armed page of
 * [addr, addr+len) now: each such page moves to the caller's node and gets
 * its access back; pages already touched stay where they are.  The range
 * stays registered (other pages of the region remain armed).  Call it before
 * a system call writes into next-touch memory (read, recv, ...: they fail
 * with EFAULT on armed pages).  A range not armed costs a registry scan.
 * Lock-free; safe from any thread, not from a signal handler.
 * Returns 0 (len 0 included).  Errors: NK_EINVAL (NULL @p addr with @p len
 * > 0, a range wrapping the address space).
 */
NK_API int nk_next_touch_prepare(void *addr, size_t len);

/**
 * Prepare [addr, addr+len) (the caller becomes the next toucher of its
 * still-armed pages) and take it out of the registry, splitting a region
 * armed beyond it.  Call it before freeing or unmapping armed memory, or to
 * stop next-touch on a range.  Returns 0.  Errors: NK_EINVAL (as prepare);
 * NK_ENOMEM (splitting needs a registry slot and none is free; nothing
 * changed).
 */
NK_API int nk_next_touch_disarm(void *addr, size_t len);

/** Fill @p out with the counters.  Errors: NK_EINVAL (NULL). */
NK_API int nk_next_touch_stats(nk_next_touch_counts *out);

/**
 * For a program's own SIGSEGV handler installed after arming: resolve the
 * fault described by @p info (a siginfo_t *) if it is a next-touch fault.
 * Returns 1 when it was one and has been resolved (the handler must return
 * at once: the instruction restarts), 0 when the fault is the program's.
 * Async-signal-safe; @p uctx (the ucontext_t *) is unused today.
 */
NK_API int nk_next_touch_handle_fault(int sig, void *info, void *uctx);

/* ================= threads and loops
 *
 * Data placement is half of memory affinity: the thread that works on a
 * page must run on that page's node, and the work split must follow the
 * data (Minas §5.2.5; Majo & Gross §4.2; Slavin & Freeman).  See
 * docs/threads.md.
 *
 * PLACEMENT
 *   An nk_placement is the cpu of each thread of a team of n threads,
 *   computed once from the machine and a strategy; threads then pin
 *   themselves with nk_thread_pin().  Only cpus this process may use
 *   (allowed cpus) are ever chosen.
 *
 * SCHEDULES
 *   Functions that return the calling thread's iterations of a loop, for a
 *   thread id and team size, so that the iterations follow a distribution
 *   of the data.  Usable inside `#pragma omp parallel` from C, C++ and
 *   Fortran (module numakit in fortran/numakit.f90).  Pure and lock-free:
 *   nothing is allocated, nothing is remembered (the owner schedule is
 *   built once, then only read).  Formulas and the schedule <-> distribution
 *   table: docs/schedules.md.
 *
 * FEEDBACK-GUIDED SCHEDULING (nk_fgdls)
 *   An outer-loop scheduler after Bull and Slavin & Freeman: contiguous
 *   slices whose boundaries move every outer iteration to equalise the
 *   measured cost, and whose pages then migrate to their thread's node.
 */

/** A half-open iteration range [begin, end); empty when begin == end. */
typedef struct nk_range {
	long begin;
	long end;
} nk_range;

/* --- thread placement --- */

typedef struct nk_placement nk_placement;

/**
 * Where each of @p nthreads threads runs, by @p strategy:
 *   "compact"       one thread per core, cores in cache-sharing order (node by
 *                   node, within a node last-level cache by last-level cache,
 *                   then L2 by L2), so consecutive threads share the most
 *                   cache; when every core has a thread, the cores' other
 *                   hardware threads (SMT) follow in the same order.
 *   "scatter"       threads spread evenly over the nodes that have allowed
 *                   cpus, in contiguous groups (thread t on node index
 *                   floor(t * N / T) when T <= N, else group t of T cut in
 *                   N parts as evenly as possible, the first parts one
 *                   larger, like OpenMP's spread); within a node spread over
 *                   its last-level caches, then cores, then SMT siblings.
 *   "LIST"          an explicit cpu list in thread order: "3,1,0-2" gives
 *                   thread 0 cpu 3, thread 1 cpu 1, threads 2-4 cpus 0-2.
 *   "file:PATH"     the same list read from a file (separated by commas,
 *                   blanks or newlines; '#' starts a comment).
 *   "sharing:PATH"  from a thread x thread sharing matrix file
 *                   (nk_sharing_load): groups of threads that share the most
 *                   data go to the same node, then to cores sharing a cache.
 * @p nthreads 0 means one thread per cpu the strategy uses (LIST: its
 * length; sharing: the matrix size).  More threads than the strategy's cpus
 * is allowed: thread t takes the strategy's cpu t mod C (C its cpu count;
 * for scatter the order it gives C threads), so cpus are shared round robin
 * and nk_placement_oversubscribed() says so; sharing gives every node
 * floor(n / C) threads per allowed cpu plus its share of the rest, so every
 * cpu runs floor(n / C) or ceil(n / C) threads.  Ties go to the lower id: the
 * result is deterministic.  The exact rules, with worked examples, are in
 * docs/threads.md.
 * Errors: NK_EPARSE (unknown strategy, bad list or file; the message names
 * it), NK_EVERSION (a JSON sharing matrix of another version),
 * NK_ENOENT/NK_EIO (a file), NK_ENODEV (a listed cpu the machine lacks),
 * NK_EPERM (a listed cpu this process may not use), NK_EINVAL (NULL
 * argument, nthreads < 0 or > 65536, sharing matrix size != nthreads),
 * NK_ENOMEM.
 */
NK_API int nk_placement_build(const nk_machine *m, const char *strategy, int nthreads, nk_placement **out,
			      nk_error *err);

/**
 * The "sharing" strategy from a matrix in memory: @p matrix is n x n,
 * row-major, entry [i][j] how much threads i and j share (any non-negative
 * unit: bytes, pages, sampled accesses); the diagonal is ignored and
 * [i][j] + [j][i] is used, so the matrix need not be symmetric.
 * Errors: NK_EINVAL (NULL, n < 1 or > 65536, a negative or non-finite entry), NK_ENOMEM.
 */
NK_API int nk_placement_from_sharing(const nk_machine *m, const double *matrix, int n, nk_placement **out,
				     nk_error *err);

/**
 * Parse a sharing matrix (docs/formats.md): either text, n lines of n
 * non-negative numbers ('#' comments, blank lines ignored), or JSON
 * {"format": "numakit-sharing", "version": 1, "matrix": [[...], ...]}.
 * Numbers are decimal ("12", "0.5", "3e6"); signs, inf, nan and hex are
 * rejected.  On success *matrix (freed with free()) holds n*n values, row-major.
 * Errors: NK_EPARSE ("sharing matrix: line 3: 4 values, expected 5"; the JSON
 * path for JSON), NK_EVERSION (a JSON "version" other than 1), NK_EINVAL
 * (NULL), NK_ENOMEM.
 */
NK_API int nk_sharing_parse(const char *text, size_t len, double **matrix, int *n, nk_error *err);
/** nk_sharing_parse() of a file (messages name it).  Errors: those, and NK_ENOENT, NK_EIO (also larger than 256 MiB). */
NK_API int nk_sharing_load(const char *path, double **matrix, int *n, nk_error *err);

NK_API void nk_placement_free(nk_placement *p);
/** Number of threads (> 0), or NK_EINVAL. */
NK_API int nk_placement_num_threads(const nk_placement *p);
/** Cpu of thread @p thread, or NK_EINVAL (NULL, thread out of range). */
NK_API int nk_placement_cpu(const nk_placement *p, int thread);
/** Node of thread @p thread's cpu, or NK_EINVAL. */
NK_API int nk_placement_node(const nk_placement *p, int thread);
/** Cpus of every thread in thread order; count/capacity semantics (returns the thread count). */
NK_API int nk_placement_cpus(const nk_placement *p, int *cpus, size_t cap);
/** 1 when some cpu has more than one thread, 0 when not, NK_EINVAL. */
NK_API int nk_placement_oversubscribed(const nk_placement *p);
/**
 * The cpus in thread order as a list, "0,2,1,3" (every thread, no ranges);
 * snprintf semantics, except that a buffer too small holds only whole items.
 * Errors: NK_EINVAL (NULL @p p, or NULL @p buf with cap > 0).
 */
NK_API int nk_placement_format(const nk_placement *p, char *buf, size_t cap);
/** The cpus as OpenMP places, "{0},{2},{1},{3}" (numakit run --pin's OMP_PLACES); as nk_placement_format(). */
NK_API int nk_placement_omp_places(const nk_placement *p, char *buf, size_t cap);

/**
 * Pin the calling thread to the cpu of thread @p thread of @p p (a thread
 * id >= the placement's size wraps: thread mod size).  Threads created
 * afterwards by this thread inherit the pinning.
 * Thread-safe: every team member calls it concurrently with its own id (and
 * its own @p err, or NULL).
 * Errors: NK_EINVAL (NULL, thread < 0), NK_EPERM (the cpu is no longer
 * allowed: cpuset changed; the message names it), NK_ENOSYS.
 */
NK_API int nk_thread_pin(const nk_placement *p, int thread, nk_error *err);

/**
 * Where the calling thread runs now (getcpu; it may move right after unless
 * pinned): its cpu, and that cpu's node on @p m (@p m NULL: the kernel's
 * node).  Either pointer may be NULL.  Thread-safe.
 * Errors: NK_ENOSYS (getcpu unavailable), NK_ENODEV (a cpu @p m lacks).
 */
NK_API int nk_thread_where(const nk_machine *m, int *cpu, int *node);

/* --- loop schedules ---
 * All of them (docs/schedules.md): pure, lock-free, safe to call from every
 * thread of a team at once; a failing call writes nothing.  Iterations are
 * C ones: a loop is [begin, end).  Bands are cut as the policies cut them
 * (docs/policies.md): n items in t parts, the first n mod t one larger,
 * part k starting at k*floor(n/t) + min(k, n mod t).
 */

/**
 * OpenMP's schedule(static) without a chunk: [begin, end) cut into
 * @p nthreads contiguous parts, the first ((end - begin) mod nthreads) one
 * iteration longer; thread @p tid gets part tid.  This is the part
 * "block:split=rows" (threads = the team's nodes in thread order) places on
 * thread tid's node.  begin >= end gives every thread an empty range;
 * more threads than iterations give the last threads empty ranges at end.
 * Any long bounds work (end - begin may exceed LONG_MAX).
 * Errors: NK_EINVAL (NULL @p out, nthreads < 1, tid outside 0..nthreads-1).
 */
NK_API int nk_sched_static(long begin, long end, int tid, int nthreads, nk_range *out);

/**
 * Majo & Gross' static-inverse: thread tid gets the part static gives
 * thread nthreads-1-tid (for loops that run "upwards" over data placed by a
 * downward loop, lu's upper triangle; or the second half of a
 * block_exclusive array with p = 2).  Errors and empty ranges as
 * nk_sched_static().
 */
NK_API int nk_sched_static_inverse(long begin, long end, int tid, int nthreads, nk_range *out);

/** The most ranges nk_sched_block_exclusive() gives one thread: a @p cap of 2 always suffices. */
#define NK_SCHED_BE_MAX_RANGES 2

/** Which dimension of a 2D block_exclusive array a schedule hands out. */
enum nk_sched_view {
	NK_VIEW_ROWS = 0, /**< the loop runs over rows; the phase is the column band being processed */
	NK_VIEW_COLS = 1, /**< the loop runs over columns; the phase is the row band being processed */
};

/**
 * Majo & Gross' block-exclusive schedule for an array placed with
 * block_exclusive over p nodes: rows cut into p row bands, columns into p
 * column bands, block (r, c) on node[(r + c) mod p] (docs/policies.md).
 * @p rows and @p cols are the array's dimensions; @p view says which one
 * the loop runs over; @p phase (0..p-1) is the band of the other dimension
 * being processed (an x-wise sweep over rows runs p phases, one per column
 * band, with a barrier between them).
 *
 * Groups: the team forms p groups, group g being the threads "scatter"
 * places on node index g.  With T = @p nthreads >= p, thread t is in group
 * part_of(T, p, t) (T cut in p contiguous parts, the first T mod p one
 * larger).  With T < p, thread t runs on node index floor(t p / T) and
 * serves the groups floor(t p / T) .. floor((t+1) p / T) - 1, so every
 * group has exactly one thread.  Group g gets the band b of the loop
 * dimension with (b + phase) mod p == g — the block on node[g] in this
 * phase — clipped to [begin, end), and, when the group has k > 1 threads,
 * split among them as nk_sched_static() splits it.  Every iteration of
 * [begin, end) goes to exactly one thread.
 *
 * A thread's ranges are sorted, non-empty and not adjacent (touching bands
 * are merged): at most NK_SCHED_BE_MAX_RANGES (two only when T < p and its
 * bands wrap past the last band).  Writes min(count, @p cap) ranges to
 * @p out and returns the count (0: nothing to do in this phase).
 * begin >= end is an empty loop (returns 0).
 * Errors: NK_EINVAL (NULL @p out with cap > 0, p < 1, phase outside
 * 0..p-1, an unknown view, tid outside 0..nthreads-1, nthreads < 1, rows or
 * cols < p, a non-empty [begin, end) outside 0..rows (ROWS) or 0..cols (COLS)).
 */
NK_API int nk_sched_block_exclusive(long rows, long cols, int p, int view, int phase, long begin, long end,
				    int tid, int nthreads, nk_range *out, size_t cap);

/** The owner schedule of an array: built once, queried by every thread. */
typedef struct nk_owner_sched nk_owner_sched;

/**
 * "owner": the rows (outermost dimension: rows of a 2D array, planes of a
 * 3D one, elements of a 1D one) of @p a whose memory is on each thread's
 * node, whatever policy placed them.  Row r belongs to the node holding
 * most of its resident bytes (residency now, nk_array_where; ties to the
 * lowest node id); rows on a node without threads go to the nearest node
 * with threads (SLIT distance, ties to the lowest id), and rows with no
 * resident byte are shared statically among all threads.  A node's rows,
 * in increasing order, are cut into as many contiguous shares as the node
 * has threads (@p thread_nodes[t], from nk_placement_node() or
 * nk_thread_where()), the first shares one row larger; threads take them
 * in thread order.  Every row goes to exactly one thread.  The schedule is
 * a snapshot: build it again after pages move.  Cost: one residency query
 * and O(rows + pages) time; memory O(threads + ranges).
 * Errors: NK_EINVAL (NULL argument, nthreads < 1, @p a not a numakit
 * array), NK_ENODEV (a thread node or a page on a node the array's machine
 * lacks; the message names it), NK_ENOSYS (no residency query), NK_ENOMEM.
 * Nothing is written to @p out on failure.
 */
NK_API int nk_sched_owner_build(const nk_array *a, const int *thread_nodes, int nthreads, nk_owner_sched **out,
				nk_error *err);
/**
 * Thread @p tid's rows: sorted, non-adjacent ranges; writes min(count,
 * @p cap) of them and returns the count.  Safe from many threads at once.
 * Errors: NK_EINVAL (NULL @p s, tid out of range, NULL @p out with cap > 0).
 */
NK_API int nk_sched_owner(const nk_owner_sched *s, int tid, nk_range *out, size_t cap);
/** Free an owner schedule; NULL is a no-op. */
NK_API void nk_sched_owner_free(nk_owner_sched *s);

/* --- feedback-guided dynamic loop scheduling with migration --- */

/*
 * Use (docs/fgdls.md; examples/spmv_gaussian.c):
 *   nk_fgdls_create(m, 0, n, T, &f);  nk_fgdls_attach*(f, ...);
 *   for each outer iteration:
 *     in parallel, thread tid: nk_fgdls_slice(f, tid, &r); work on r; nk_fgdls_record(f, tid, cost);
 *     one thread, the others waiting: nk_fgdls_update(f); nk_fgdls_migrate(f, 0, &res, &err);
 * THREAD SAFETY: nk_fgdls_slice() and nk_fgdls_record() may be called by the
 * team concurrently (record: each thread its own tid, nothing shared, no
 * lock).  Every other call needs the scheduler to itself, between outer
 * iterations; the caller's barrier orders the records before the update.
 */
typedef struct nk_fgdls nk_fgdls;

/**
 * A scheduler of the iterations [begin, end) of a parallel loop executed
 * again and again (an outer loop) by @p nthreads threads, starting from an
 * equipartition (nk_sched_static: the first (end - begin) mod nthreads
 * slices one iteration longer).  @p m (the live machine for migration; any
 * machine otherwise) must outlive the scheduler.  FGDLS does not pin:
 * nthreads may exceed the machine's cpus.
 * Errors: NK_EINVAL (NULL, begin >= end, nthreads < 1 or > end - begin), NK_ENOMEM.
 */
NK_API int nk_fgdls_create(const nk_machine *m, long begin, long end, int nthreads, nk_fgdls **out);
NK_API void nk_fgdls_free(nk_fgdls *f);

/**
 * Damping d in (0, 1]: each update moves every boundary d of the way from
 * where it is to where the cost estimate says it should be (default 0.5).
 * 0.5 trades speed for robustness: with an exact work measure (e.g. the
 * non-zeros of a slice) d = 1 converges fastest (Gaussian SpMV, T = 2..16:
 * imbalance < 5% within 4 updates, against 10 for 0.5), but with measured
 * times d = 1 passes the timing noise on undamped (10% noise: a steady
 * imbalance of 13-18% against 8-12% for 0.5); docs/fgdls.md has the table.
 * Errors: NK_EINVAL (d outside (0, 1], NaN).
 */
NK_API int nk_fgdls_set_damping(nk_fgdls *f, double d);

/** Thread @p tid's slice for the coming iteration (never empty).  Errors: NK_EINVAL (NULL, tid out of range). */
NK_API int nk_fgdls_slice(const nk_fgdls *f, int tid, nk_range *out);

/**
 * Record the cost of thread @p tid's slice in the iteration just run: a
 * time in seconds, or any work measure proportional to time.  Also records
 * the node the calling thread runs on (getcpu and @p m's cpu -> node map;
 * a cpu @p m lacks, or no getcpu, keeps the node an earlier record found) as
 * the thread's node, unless nk_fgdls_set_thread_node() fixed it.  A second
 * record in the same iteration replaces the first.  Threads may record
 * concurrently (each its own tid).  Errors: NK_EINVAL (NULL, tid out of
 * range, a negative or non-finite cost).
 */
NK_API int nk_fgdls_record(nk_fgdls *f, int tid, double cost);

/** Fix thread @p tid's node (tests, a known placement).  Errors: NK_EINVAL (NULL, tid, node < 0), NK_ENODEV (a node @p m lacks). */
NK_API int nk_fgdls_set_thread_node(nk_fgdls *f, int tid, int node);

/**
 * Between outer iterations (one thread, the others waiting): move the slice
 * boundaries to equalise the recorded costs.  The cost of a slice is spread
 * evenly over its iterations (a piecewise-constant cost density), the
 * cumulative cost is cut into nthreads equal parts (the cut k at the
 * iteration where the cumulative cost reaches k/nthreads of the total,
 * interpolated within its slice; slices of cost 0 hold no cut), and each
 * inner boundary b moves to b + round(d (cut - b)), or to round(cut) when
 * that damped step rounds to 0; boundaries are then clamped to stay
 * increasing, every slice keeping at least one iteration.  All costs 0:
 * nothing moves.  Clears the recorded costs (the thread nodes stay).
 * Errors: NK_EINVAL (NULL, a thread has recorded no cost this iteration;
 * nothing changes).
 */
NK_API int nk_fgdls_update(nk_fgdls *f);

/**
 * Load imbalance max cost / mean cost - 1 (0 = perfect; all costs 0 gives
 * 0): of the current iteration when every thread has recorded, else of the
 * iteration the last nk_fgdls_update() consumed.
 * Errors: NK_EINVAL, NK_ENODATA (no complete iteration recorded yet).
 */
NK_API int nk_fgdls_imbalance(const nk_fgdls *f, double *imbalance);

/**
 * Data that follows the slices: iteration i owns the @p bytes_per_iter
 * bytes at @p base + (i - begin) * bytes_per_iter (a vector, rows of a
 * dense matrix).  Up to 16 attachments in all.
 * Errors: NK_EINVAL (NULL, 0 bytes, a size that overflows), NK_ENOMEM (too many).
 */
NK_API int nk_fgdls_attach(nk_fgdls *f, void *base, size_t bytes_per_iter);
/**
 * Data with irregular rows (CSR): iteration i owns elements
 * [offsets[i - begin], offsets[i - begin + 1]) of @p elem_size bytes at
 * @p base; @p offsets has end - begin + 1 non-decreasing, non-negative
 * entries (empty rows allowed) and must outlive the scheduler, unchanged.
 * Errors: NK_EINVAL (NULL, elem_size 0, decreasing or negative offsets,
 * overflow), NK_ENOMEM (too many).
 */
NK_API int nk_fgdls_attach_offsets(nk_fgdls *f, void *base, size_t elem_size, const long *offsets);

/**
 * Move every slice's pages of every attached region to its thread's node
 * (nk_apply: only the pages not already there move; untouched pages get the
 * policy for their first touch).  A page shared by two slices goes with the
 * slice holding its first byte.  A thread on a node without memory (or not
 * allowed) gets its nearest usable node.  @p flags and @p res (summed over
 * attachments; may be NULL) as nk_apply().  Regions are applied one after
 * the other: a failure leaves the regions before it migrated.
 * Errors: NK_EINVAL (NULL, flags), NK_ENODATA (a thread's node is unknown:
 * no record, no set node; nothing moved), and those of nk_apply().
 */
NK_API int nk_fgdls_migrate(nk_fgdls *f, unsigned flags, nk_apply_result *res, nk_error *err);

/* ====================================================================
 * Jobs: placement of the ranks of a parallel job (issue 14, docs/run.md
 * "MPI jobs", numakit-run(1)).  numakit links no MPI library: a rank learns
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
 */
NK_API int nk_job_detect(const char *const *envp, nk_job_info *out);

/** "Open MPI", "PMI (MPICH Hydra)", "PMIx", "Slurm", "none"; never NULL. */
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
 */
NK_API int nk_job_layout_build(const nk_machine *m, const int *cpus, size_t ncpus, int local_size,
			       nk_job_layout **out, nk_error *err);
NK_API void nk_job_layout_free(nk_job_layout *l);
/** Number of local ranks (> 0), or NK_EINVAL. */
NK_API int nk_job_layout_size(const nk_job_layout *l);
/** Number of cpu nodes shared out, or NK_EINVAL. */
NK_API int nk_job_layout_num_nodes(const nk_job_layout *l);
/** Cpu nodes of local rank @p r, increasing; count/capacity semantics.  Errors: NK_EINVAL. */
NK_API int nk_job_layout_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap);
/** Memory nodes of local rank @p r, in the order above (own first node first); count/capacity.  NK_EINVAL. */
NK_API int nk_job_layout_mem_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap);
/** Cpus of local rank @p r in core order (its compact order); count/capacity.  Errors: NK_EINVAL. */
NK_API int nk_job_layout_cpus(const nk_job_layout *l, int r, int *cpus, size_t cap);
/** NK_JOB_* bits of local rank @p r, or NK_EINVAL. */
NK_API int nk_job_layout_flags(const nk_job_layout *l, int r);

/**
 * A copy of @p m in which this process may use only @p cpus and allocate
 * only on @p nodes (NULL, 0: the allowed nodes unchanged): what placement
 * strategies (nk_placement_build) see as the allowed set, so that a
 * strategy works inside a rank's share.  Both sets must lie within the
 * allowed sets of @p m (a restriction never widens).
 * Errors: NK_EINVAL (NULL, empty cpu set), NK_ENODEV (a cpu or node @p m
 * lacks), NK_EPERM (one @p m does not allow; the message names it), NK_ENOMEM.
 */
NK_API int nk_machine_restrict(const nk_machine *m, const int *cpus, size_t ncpus, const int *nodes, size_t nnodes,
			       nk_machine **out, nk_error *err);

/**
 * The cpus of the process's cpuset (cgroup) on the live machine, before its
 * affinity mask narrows them to nk_machine_allowed_cpus(); all online cpus
 * when there is no cpuset.  For other sources, the allowed cpus.  When the
 * two differ, something (taskset, a launcher binding its ranks) bound the
 * process.  Count/capacity semantics.
 */
NK_API int nk_machine_cpuset_cpus(const nk_machine *m, int *cpus, size_t cap);

/* ====================================================================
 * Profiling hooks (issue 6; docs/profile.md, numakit-profile(1))
 *
 * A program run under `numakit profile` can bracket what is measured and
 * name what it does.  Outside the profiler every function here does
 * nothing and returns 0, so the calls can stay in production code.  They
 * are thread-safe and cheap (one indirect call when profiled).
 * ==================================================================== */

/** 1 when the calling process is being profiled by `numakit profile`, else 0. */
NK_API int nk_profile_active(void);

/**
 * Begin phase @p name (at most 63 bytes are kept); the previous phase ends.
 * Samples carry the phase current in the process, and `numakit report`
 * (and `numakit advise`) show and use phases separately.  Under
 * `numakit run --plan`, the plan's entries for phase @p name are applied
 * (their pages migrated) before this returns.
 * Errors: NK_EINVAL (NULL or empty name), NK_ERANGE (more than 65535 phases).
 */
NK_API int nk_profile_phase(const char *name);

/**
 * Region of interest, like Memphis' memphis_mark: with `numakit profile
 * --roi`, nothing is sampled until nk_profile_start() and after
 * nk_profile_stop(); they may alternate any number of times.  Without
 * --roi, sampling runs from start to exit and these only record marks.
 */
NK_API int nk_profile_start(void);
NK_API int nk_profile_stop(void);

/**
 * Give [addr, addr+len) a name for reports (e.g. "A" for a heap array that
 * would otherwise be known by its allocation site).  NUMA arrays are named
 * by numakit itself.  Under `numakit run --plan`, the plan's entries for
 * key "name:NAME" apply to the whole pages of the range (at once for "alloc"
 * entries, migrating).  Errors: NK_EINVAL.
 */
NK_API int nk_profile_name(const void *addr, size_t len, const char *name);

/* ====================================================================
 * The profiler (issue 6): run a program under a sampler, load the profile,
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
 */
NK_API int nk_profile_combine(const char *const *paths, size_t n, const char *output, nk_error *err);
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
 */
NK_API int nk_profile_report(const nk_profile *p, int format, char **out, nk_error *err);

/**
 * The thread x thread sharing matrix of @p p as the text format of
 * nk_sharing_parse() (docs/formats.md), for `numakit run --pin sharing:FILE`.
 * Errors: NK_EINVAL (also: a job's profile, whose ranks are processes of
 * their own), NK_ENODATA (fewer than two threads sampled), NK_ENOMEM.
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
 */
NK_API int nk_profile_coverage(const nk_profile *p, int *complete, char **why, nk_error *err);

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
 */
NK_API int nk_profile_advise(const nk_profile *p, const nk_machine *m, const nk_advise_opts *o, nk_advice **out,
			     nk_error *err);
/** An empty plan (no entries, no pinning), to be filled with nk_advice_set(). Errors: NK_EINVAL, NK_ENOMEM. */
NK_API int nk_advice_create(nk_advice **out);
/**
 * Parse a plan from JSON text.  Everything is checked that can be without a
 * machine: format and version, types, known policy kinds (nk_policy_parse),
 * page ranges.  Errors: NK_EPARSE (the message names the entry and field),
 * NK_EVERSION, NK_EINVAL, NK_ENOMEM.
 */
NK_API int nk_advice_parse(const char *json, size_t len, nk_advice **out, nk_error *err);
/** Load nk_advice_parse() of a file.  Errors: those of nk_advice_parse(), NK_ENOENT, NK_EIO. */
NK_API int nk_advice_load(const char *path, nk_advice **out, nk_error *err);
/** The plan as JSON text, malloc'ed (free() it); parses back to an equal plan.  Errors: NK_EINVAL, NK_ENOMEM. */
NK_API int nk_advice_format(const nk_advice *a, char **out, nk_error *err);
/**
 * Check @p a against machine @p m: every node exists and has memory, every
 * policy builds there, the pinning's cpus exist.  Errors: NK_ENODEV (naming
 * the entry and node), NK_EINVAL, NK_EPERM.
 */
NK_API int nk_advice_check(const nk_advice *a, const nk_machine *m, nk_error *err);
/**
 * Set the policy of variable @p var (its name as the report shows it, or its
 * key) to @p policy (nk_policy_parse text, or "none" to leave it as it is),
 * adding an entry when the plan has none for it.  @p p resolves names to keys
 * and may be NULL only when @p var is a key.  Errors: NK_EPARSE (policy),
 * NK_ENOENT (no such variable in the profile), NK_EINVAL, NK_ENOMEM.
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
 */
NK_API int nk_advice_pin(const nk_advice *a, char **spec, int *threads, char **sharing, nk_error *err);
/**
 * The share of the machine a plan's node ids refer to: a plan advised from
 * a job whose ranks ran on different shares of the machine (each rank on
 * its own nodes, `numakit run --cpus rank`) is written in the frame of the
 * first rank's share (docs/plan.md "Plans for the ranks of a job").  Writes
 * at most @p cap node ids (increasing) to @p nodes and returns the count:
 * 0 for a plan that applies as written.  Errors: NK_EINVAL.
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
 */
NK_API int nk_advice_resolve_share(nk_advice *a, const nk_machine *m, const int *nodes, size_t n, nk_error *err);
/** Number of variable entries. */
NK_API size_t nk_advice_num_entries(const nk_advice *a);
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
 */
NK_API int nk_profile_whatif(const nk_profile *p, const nk_machine *m, const nk_advice *a, int format, char **out,
			     nk_error *err);

/* --- OpenMP conveniences (header-only; compiled only with -fopenmp) ---
 * Call from inside a parallel region, by every thread of the team.  They
 * only combine omp_get_thread_num()/omp_get_num_threads() with the
 * functions above, so they work with GCC's libgomp and LLVM's libomp alike.
 * Pass a per-thread nk_error (or NULL): the team runs them concurrently.
 */
#if defined(_OPENMP)
/** Pin the calling team member to its placement cpu. */
static inline int nk_omp_pin(const nk_placement *p, nk_error *err)
{
	return nk_thread_pin(p, omp_get_thread_num(), err);
}
/** The calling team member's static range. */
static inline int nk_omp_static(long begin, long end, nk_range *out)
{
	return nk_sched_static(begin, end, omp_get_thread_num(), omp_get_num_threads(), out);
}
/** The calling team member's static-inverse range. */
static inline int nk_omp_static_inverse(long begin, long end, nk_range *out)
{
	return nk_sched_static_inverse(begin, end, omp_get_thread_num(), omp_get_num_threads(), out);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_H */
