/* SPDX-License-Identifier: BSD-3-Clause
 * Internal interface of the next-touch runtime (next_touch.c), for the
 * placement code that applies NK_POLICY_NEXT_TOUCH and for tests.  The
 * public calls are in numakit.h (nk_next_touch_*).
 */
#ifndef NK_MEMORY_NEXT_TOUCH_H
#define NK_MEMORY_NEXT_TOUCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * When access to a single page cannot be restored (mprotect fails with
 * ENOMEM: splitting the mapping would pass vm.max_map_count), the handler
 * gives back this aligned span around it, clipped to the region, then the
 * whole region.  2 MiB: one page-table page, where the split mappings of
 * neighbouring touches merge back into one.
 */
#define NK__NT_WIDE_SPAN ((uintptr_t)2 << 20)

/* Node ids with a fallback entry (Linux MAX_NUMNODES is at most 1024). */
#define NK__NT_MAX_NODE 1024

/**
 * The registered region holding @p addr: 1 and its bounds [*start, *end), or
 * 0.  Lock-free and async-signal-safe.
 */
int nk__next_touch_lookup(const void *addr, uintptr_t *start, uintptr_t *end);

/** Node pages touched from @p node go to (the fallback table), @p node itself when it has none. */
int nk__next_touch_target(int node);

#endif
