/* SPDX-License-Identifier: BSD-3-Clause
 * The `hw` sampler (src/profile/hw.c + src/os/linux_perf.c): precise memory
 * sampling of another process through perf_event_open, Intel PEBS (the
 * mem-loads event with a load-latency threshold, and mem-stores) or AMD IBS
 * op, decoded into nk__nkp_sample.  Used by nk_profile_run (session.c);
 * the decoding is pure and unit-tested on synthesised perf records.
 */
#ifndef NK_PROFILE_HW_H
#define NK_PROFILE_HW_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "profile/nkp.h"

struct nk__hw;

/**
 * Sample process @p pid and every thread and child it creates later
 * (inherit), on every cpu of @p m; counting starts when @p pid calls exec
 * (enable_on_exec), so open it between fork and exec.  @p rate: one sample
 * per RATE events (0: a default giving about 1-4 k samples/s).
 * Errors: NK_ENOSYS with a message saying why there is no precise memory
 * sampling here (no PMU: perf_event_open ENOENT/EOPNOTSUPP; no mem-loads or
 * ibs_op event in sysfs; perf_event_paranoid too high: EACCES), NK_ENOMEM.
 */
int nk__hw_open(int pid, const nk_machine *m, double rate, struct nk__hw **out, nk_error *err);

/** One line saying what is sampled, e.g. "Intel PEBS: cpu/mem-loads,ldlat=30/P + cpu/mem-stores/P". */
const char *nk__hw_describe(const struct nk__hw *h);

/** Growable output of nk__hw_drain: s[i] was taken in process pid[i]. */
struct nk__hw_samples {
	struct nk__nkp_sample *s; /* time_ns is CLOCK_MONOTONIC (absolute); the merger rebases it */
	uint32_t *pid;
	size_t n, cap;
	uint64_t lost;            /* PERF_RECORD_LOST counts */
};

/**
 * Append what the ring buffers hold to @p out (page_node left -1; the caller
 * resolves residency).  Call often enough that the buffers do not overflow
 * (every 100 ms is plenty) and once more after the process exited.
 * Errors: NK_ENOMEM.
 */
int nk__hw_drain(struct nk__hw *h, struct nk__hw_samples *out, nk_error *err);
void nk__hw_close(struct nk__hw *h);
void nk__hw_samples_free(struct nk__hw_samples *out);

#endif
