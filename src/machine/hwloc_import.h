/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: build an nk_machine from a loaded hwloc topology. */
#ifndef NK_MACHINE_HWLOC_IMPORT_H
#define NK_MACHINE_HWLOC_IMPORT_H

#include <hwloc.h>

#include "machine/machine_impl.h"

/**
 * Convert @p topo (already loaded, ideally with
 * HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED so disallowed nodes and cpus are
 * still present) into a finalised machine of source kind @p source whose
 * source detail is @p detail; @p detail also prefixes error messages.
 *
 * Mapping: NUMANode objects become nodes (free memory is unknown to hwloc
 * and left 0); PUs become cpus, each on the NUMA node with the smallest
 * cpuset containing it (ties: a node without subtype, i.e. ordinary DRAM,
 * then the lowest id), so memory attached higher up (NVM, HBM, CXL) shows as
 * CPU-less; a PU in no node's cpuset (its node is offline) gets node -1; Core logical index and Package os_index give the core identity;
 * every cache object (not memory-side caches) becomes a cache instance;
 * the "from OS, means latency" NUMA distance matrix gives distances (10/20
 * when there is none, and for node pairs it does not cover); page sizes come
 * from the NUMA nodes' page types (smallest = base page, the others huge).
 * Kernel settings are unknown (-1).
 *
 * Returns 0 and sets *out, or NK_ENOMEM / NK_EPARSE (inconsistent topology,
 * message via @p err); *out is untouched on failure.
 */
int nk__machine_from_hwloc(hwloc_topology_t topo, int source, const char *detail, nk_machine **out,
			   nk_error *err);

#endif
