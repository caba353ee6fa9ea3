/* SPDX-License-Identifier: BSD-3-Clause
 * Internals of the hw sampler (src/profile/hw.c) that unit tests reach:
 * event discovery from a sysfs tree under an fsroot, the perf_event_attr
 * built for each event, and nk__hw_open on another fsroot.
 */
#ifndef NK_PROFILE_HW_IMPL_H
#define NK_PROFILE_HW_IMPL_H

#include <stdint.h>

#include "profile/hw.h"
#include "profile/perf_decode.h"
#include "util/list.h"

struct perf_event_attr;

/** Load-latency threshold in core cycles (ldlat) of the mem-loads event. */
#define NK__HW_LDLAT 30
/** Samples per second per event asked for when the rate is 0 (perf_event_attr.freq). */
#define NK__HW_DEFAULT_FREQ 1000
/** Data pages of each ring buffer (a power of two), halved down to NK__HW_MIN_PAGES when mmap is refused. */
#define NK__HW_RING_PAGES 64
#define NK__HW_MIN_PAGES 4

enum nk__hw_vendor { NK__HW_INTEL = 1, NK__HW_AMD = 2 };

/* One core PMU of Intel ("cpu", or "cpu_core"/"cpu_atom" on hybrid parts). */
struct nk__hw_pmu {
	char name[32];
	uint32_t type;               /* .../devices/NAME/type */
	nk__ilist cpus;              /* .../devices/NAME/cpus, empty: every cpu */
	uint64_t load[NK__PERF_NREGS];  /* mem-loads with ldlat */
	uint64_t store[NK__PERF_NREGS]; /* mem-stores */
	uint64_t aux[NK__PERF_NREGS];   /* mem-loads-aux: the group leader mem-loads needs (Sapphire Rapids, hybrid) */
	int has_store, has_aux;
};

struct nk__hw_plan {
	int vendor;             /* enum nk__hw_vendor */
	struct nk__hw_pmu pmu[4]; /* Intel */
	unsigned n_pmu;
	uint32_t ibs_type;      /* AMD: .../devices/ibs_op/type */
	uint64_t ibs[NK__PERF_NREGS]; /* AMD: cnt_ctl=1 when the PMU has it */
	int ibs_l3missonly;     /* the PMU offers l3missonly (not set: every memory op is sampled) */
};

/**
 * Find the precise memory events under @p fsroot ("/" or NULL: live):
 * Intel mem-loads (ldlat @p ldlat) and mem-stores on "cpu" or "cpu_*" PMUs,
 * else AMD ibs_op.  Errors: NK_ENOSYS ("no precise memory sampling here: no
 * mem-loads event ... and no ibs_op PMU ..."), NK_EPARSE (a corrupt format
 * or event file, named), NK_ENOMEM.
 */
int nk__hw_discover(const char *fsroot, unsigned ldlat, struct nk__hw_plan *plan, nk_error *err);
void nk__hw_plan_free(struct nk__hw_plan *plan);

/* Event kinds of nk__hw_attr. */
enum { NK__HW_EV_LOAD, NK__HW_EV_STORE, NK__HW_EV_AUX, NK__HW_EV_IBS };

/**
 * Fill @p attr for event @p ev of @p plan (pmu index @p pmu for Intel) at
 * @p rate (one sample per RATE events; 0: NK__HW_DEFAULT_FREQ per second),
 * with precise_ip @p precise and WEIGHT_STRUCT when @p weight_struct (else
 * WEIGHT).  Pure.
 */
void nk__hw_attr(const struct nk__hw_plan *plan, unsigned pmu, int ev, double rate, int precise, int weight_struct,
		 struct perf_event_attr *attr);

/**
 * The NK_ENOSYS message for perf_event_open of event @p ev on @p cpu failing
 * with errno @p e (perf_event_paranoid read under @p root for EACCES/EPERM).
 */
int nk__hw_open_error(const char *root, int ev, int cpu, int e, nk_error *err);

/** nk__hw_open reading sysfs and /proc/sys under @p fsroot ("/" or NULL: live). */
int nk__hw_open_at(const char *fsroot, int pid, const nk_machine *m, double rate, struct nk__hw **out,
		   nk_error *err);

/**
 * A sampler over @p n ring buffers the caller mapped (tests: memory laid out
 * as a perf_event_mmap_page, data_offset/data_size set or the data in the
 * pages after the first, @p lens[i] a multiple of the page size); cpu nodes
 * from @p m (may be NULL).  nk__hw_close leaves the memory to the caller.
 * Errors: NK_ENOMEM.
 */
int nk__hw_from_rings(void *const *maps, const size_t *lens, const struct nk__perf_layout *lays, size_t n,
		      const nk_machine *m, struct nk__hw **out);

/** Counters of everything drained so far. */
void nk__hw_stats(const struct nk__hw *h, struct nk__perf_stats *st);

#endif
