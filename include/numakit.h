/* SPDX-License-Identifier: BSD-3-Clause
 * numakit — NUMA memory-affinity toolkit.  The umbrella header: including it declares the whole stable
 * API, and the experimental one where NUMAKIT_EXPERIMENTAL is defined.  The declarations and their
 * documentation (what, returns, errors, thread safety) live in the topic headers it includes,
 * include/numakit/TOPIC.h, one topic each; include this one, not them (numakit/omp.h, which it does not
 * include, excepted: see OPENMP).
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
 * API TIERS
 *   Stable (numakit/common.h, machine.h, policy.h, memory.h, process.h,
 *   nexttouch.h, bench.h, threads.h, omp.h): always declared.  A stable
 *   function keeps its signature, documented behaviour and exported symbol
 *   while the soname (libnumakit.so.0) lasts; one that is to go is first
 *   marked NK_DEPRECATED("what to use instead") for at least a minor release,
 *   and a program using it gets a compiler warning, which defining
 *   NUMAKIT_DISABLE_DEPRECATE_WARNINGS before the include silences.
 *   Experimental (numakit/job.h, profile.h, advice.h: jobs and rank
 *   layouts, the profiler and its hooks, rank mappings, placement plans,
 *   advise, whatif; and numakit/heap.h, below): declared only when NUMAKIT_EXPERIMENTAL is defined before the
 *   include (`#define NUMAKIT_EXPERIMENTAL` or -DNUMAKIT_EXPERIMENTAL), as
 *   zstd.h does with ZSTD_STATIC_LINKING_ONLY.  They are exported like the
 *   stable ones, but may change in any release: use them from code built
 *   with the numakit it runs with.  Each function's doc comment says
 *   "@since X.Y", the release that introduced it, and "(experimental)" for
 *   that tier.  Its symbol carries the version node NUMAKIT_X.Y
 *   (abi/libnumakit.map).
 *
 * OPENMP
 *   The nk_omp_* conveniences are in <numakit/omp.h>, which includes
 *   <omp.h> and this header; include it yourself in code built with OpenMP.
 *
 * HEAPS
 *   The heaps placed by a policy (nk_heap_*, experimental) are a library of
 *   their own, libnumakit_heap, built only with jemalloc: include
 *   <numakit/heap.h> yourself and link -lnumakit_heap (pkg-config
 *   numakit-heap, CMake numakit::heap).  This header does not include it.
 *
 * The library never prints, never reads the environment and never exits.
 */
#ifndef NUMAKIT_H
#define NUMAKIT_H

#include "numakit/common.h"
#include "numakit/machine.h"
#include "numakit/policy.h"
#include "numakit/memory.h"
#include "numakit/process.h"
#include "numakit/nexttouch.h"
#include "numakit/bench.h"
#include "numakit/threads.h"

#endif /* NUMAKIT_H */

/* Outside the guard: the experimental headers keep guards of their own, so that including numakit.h
 * again with NUMAKIT_EXPERIMENTAL defined declares their functions. */
#include "numakit/job.h"
#include "numakit/profile.h"
#include "numakit/advice.h"
