/* SPDX-License-Identifier: BSD-3-Clause
 * Internal: what the unit tests reach of src/heap/heap.c (the public interface is numakit/heap.h).
 */
#ifndef NK_HEAP_HEAP_H
#define NK_HEAP_HEAP_H

/*
 * Tests only: while non-zero, a new heap places its pages by the runs of its plan at every commit, the path
 * of policies the kernel cannot express in one call, even where it could (on a one-node host every policy
 * is one node, so the runs path would be reached only in the guests).  Not thread-safe; 0 by default.
 */
extern int nk__heap_test_runs;

#endif
