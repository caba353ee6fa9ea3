/* SPDX-License-Identifier: BSD-3-Clause
 * Internal view of the FGDLS scheduler for tests: the run construction that
 * nk_fgdls_migrate() hands to nk__plan_from_runs(), exposed so the
 * slice -> page -> node rule can be checked on machines we do not have.
 */
#ifndef NK_THREADS_FGDLS_H
#define NK_THREADS_FGDLS_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "policy/plan.h"

/** Maximum number of attached regions (nk_fgdls_attach*). */
#define NK__FGDLS_MAX_ATTACH 16

/** Number of attached regions. */
size_t nk__fgdls_num_attached(const nk_fgdls *f);

/**
 * The region of attachment @p att (*addr, *len: the bytes of iterations
 * [begin, end)) and its runs for pages of @p page_size bytes: slice t's
 * pages go to @p tnodes[t], a page shared by two slices going with the
 * slice holding its first byte, slices without pages skipped, adjacent runs
 * on one node merged.  @p runs needs room for nthreads entries; *nruns
 * receives the count.  Returns 0, NK_ENODATA (the region is empty: len 0,
 * nothing written to runs), NK_EINVAL (bad argument or page size).
 */
int nk__fgdls_runs(const nk_fgdls *f, size_t att, uint64_t page_size, const int *tnodes, void **addr, size_t *len,
		   struct nk__plan_run *runs, size_t *nruns);

/** Thread @p tid's node as recorded or set, -1 when unknown; NK_EINVAL. */
int nk__fgdls_thread_node(const nk_fgdls *f, int tid);

#endif
