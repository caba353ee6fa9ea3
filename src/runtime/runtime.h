/* SPDX-License-Identifier: BSD-3-Clause
 * The one interface between libnumakit and the runtimes numakit preloads into a program
 * (preload/prof: libnumakit_prof.so, `numakit profile`; preload/advice: libnumakit_plan.so,
 * `numakit run --plan`).  Internal: included by src/ and preload/, never installed.
 *
 * Two directions, nothing else crosses:
 *
 *   library calls runtime: A runtime offers the library one table of callbacks,
 *                        struct nk__runtime_hooks (below).  The library calls a runtime only through
 *                        it (src/runtime/hooks.c is the one place that finds tables; every caller goes
 *                        through nk__runtime_hook()).
 *   runtime calls library: A runtime uses the public API of the shared libnumakit it links, the
 *                        accessors declared at the end of this header (exported by libnumakit.so under
 *                        nk__ names: the runtime never sees a private struct layout of the library), and
 *                        the internal static archive numakit_rtsupport (src/CMakeLists.txt: the part-file
 *                        writer nkp_write.c, the fault helpers linux_signals.c, the memory-policy
 *                        calls linux_mempolicy.c, the id-list parser list.c), whose objects are compiled once and also make up those parts of
 *                        libnumakit.  The runtime's copies stay private (--exclude-libs).
 *
 * How a runtime registers: by defining its table as a constant, exported object named by its slot,
 *     NK__RUNTIME_DEFINE(NK__RUNTIME_SYM_PROF) = { NK__RUNTIME_HOOKS_HEADER, .phase = ..., ... };
 * and the library pulls it at its first use with dlsym(RTLD_DEFAULT, slot name), caching the result.
 * Why pull rather than a constructor calling a registration function of the library:
 *   - a program may carry its own static copy of libnumakit (numakit_static, or the tests' numakit_internal,
 *     as the guest programs do) besides the libnumakit.so the runtime brings in.  A push from the runtime
 *     reaches only the copy its reference binds to (libnumakit.so); a pull from each copy finds the table in
 *     the process's global scope, whichever copy asks.  A program that does not link libnumakit at all never
 *     asks, and the runtime needs nothing from it to "register".
 *   - no ordering between constructors: the table is constant data, valid once the runtime is relocated, so
 *     a hook reached from another object's constructor before the runtime's own ran still finds it (the
 *     runtime's callbacks then see their state inactive and do nothing, as before).
 *   - two runtimes may be loaded at once (a planned run profiled again): one symbol per slot.
 * A table whose version or size does not match this header (a runtime of another build) counts as absent.
 *
 * Contract of the callbacks (every field may be NULL: that runtime does not take that event).
 *   - No runtime loaded (the usual case): every slot is NULL; nk_profile_* return 0, nk_apply holds
 *     nothing, arrays and moves are reported to no one.  Cost: one cached lookup per process.
 *   - A runtime that is loaded but inactive (its environment unset) must accept every call and do nothing.
 *   - Callbacks are called from any thread of the program, with no library lock held, never from a signal
 *     handler of the library (the next-touch handler reports nothing here).  They may take their own locks,
 *     allocate and call the public API (the plan runtime's phase calls nk_apply, which calls the profiler's
 *     hold/unhold), but must not call back into the caller's operation (no nk_profile_* from a callback).
 *   - active/start/stop/phase/name: the public nk_profile_* of the same names (include/numakit.h), with the
 *     same arguments (already validated by the library) and return codes; 0 or a negative NK_E* code.
 *     phase and name go to every runtime (prof first, then plan); the first nonzero code is returned.
 *   - array_alloc/array_free: an nk_array's mapping [addr, addr+len) was made / is about to be unmapped;
 *     name is "nk_array#N" (N counts arrays reported in this process).
 *   - hold(addr, len): nk_apply is about to place [addr, addr+len) (and separately its own status buffer):
 *     until unhold(token) the runtime must leave that memory accessible (the pagefault sampler revokes pages:
 *     MADV_POPULATE_WRITE fails on them, move_pages cannot write statuses into them).  Returns a token >= 0,
 *     or -1 when nothing was held (then unhold is not called).  Holds nest; each token is given back once.
 *   - moved(addr, len): pages of [addr, addr+len) may be on other nodes now: forget cached nodes.
 */
#ifndef NK_RUNTIME_RUNTIME_H
#define NK_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

/** Bumped whenever struct nk__runtime_hooks or the meaning of a field changes. */
#define NK__RUNTIME_HOOKS_VERSION 1u

struct nk__runtime_hooks {
	uint32_t version; /* NK__RUNTIME_HOOKS_VERSION */
	uint32_t size;    /* sizeof(struct nk__runtime_hooks) */
	int (*active)(void);
	int (*start)(void);
	int (*stop)(void);
	int (*phase)(const char *name);
	int (*name)(const void *addr, size_t len, const char *name);
	void (*array_alloc)(const void *addr, size_t len, const char *name);
	void (*array_free)(const void *addr, size_t len);
	int (*hold)(const void *addr, size_t len);
	void (*unhold)(int token);
	void (*moved)(const void *addr, size_t len);
};

#define NK__RUNTIME_HOOKS_HEADER .version = NK__RUNTIME_HOOKS_VERSION, .size = sizeof(struct nk__runtime_hooks)

/** The slots, in the order the library calls them; each runtime defines the table of its slot's symbol. */
enum nk__runtime_slot { NK__RUNTIME_PROF = 0, NK__RUNTIME_PLAN = 1, NK__RUNTIME_NSLOTS = 2 };
#define NK__RUNTIME_SYM_PROF nk__runtime_hooks_prof
#define NK__RUNTIME_SYM_PLAN nk__runtime_hooks_plan

/** In a runtime: the definition of its exported table (a runtime builds with hidden visibility). */
#define NK__RUNTIME_DEFINE(sym) __attribute__((visibility("default"))) const struct nk__runtime_hooks sym

/**
 * In the library: the table of the runtime in @p slot (enum nk__runtime_slot), NULL when none is loaded.
 * All slots are looked up once per process (dlsym, so not async-signal-safe the first time); then two
 * atomic loads.  Thread-safe without a lock: concurrent first calls look up the same answer.
 */
const struct nk__runtime_hooks *nk__runtime_hook(int slot);

/* ---- what libnumakit exports to its runtimes (and to nothing else) ----
 * Default visibility in libnumakit.so under nk__ names; not part of the public API (no compatibility
 * promise beyond one build).  A runtime and the libnumakit.so it links come from one build. */
#if defined(NK_BUILDING_LIBRARY)
#define NK__RUNTIME_API __attribute__((visibility("default")))
#else
#define NK__RUNTIME_API
#endif

/** When a plan entry applies (the plan's "when", docs/plan.md). */
enum nk__advice_when { NK__ADVICE_AT_ALLOC = 0, NK__ADVICE_AT_FIRST_PARALLEL = 1, NK__ADVICE_AT_PHASE = 2 };

/** One entry of a plan as a runtime sees it.  The strings belong to the plan (valid until nk_advice_free). */
struct nk__advice_entry_info {
	const char *key;      /* match key (src/advise/aplan.h) */
	const char *variable; /* display name, NULL none */
	const char *policy;   /* nk_policy_parse text, "pages" (ranges) or "none" */
	const char *phase;    /* when == NK__ADVICE_AT_PHASE, else NULL */
	int when;             /* enum nk__advice_when */
	uint64_t page_size;   /* of the ranges, 0 none */
	size_t n_ranges;      /* policy "pages": nk__advice_entry_range 0 .. n_ranges-1 */
	uint64_t site_bytes;  /* "layout": "blocks" (a heap key): the variable is the site's blocks laid end to end in
			       * allocation order, this many bytes, and the policy's pages are that array's; 0: an
			       * instance (each block on its own, page 0 its first byte) */
};

/** Number of entries of @p a (0 for NULL). */
NK__RUNTIME_API size_t nk__advice_num_entries(const nk_advice *a);
/** Entry @p i of @p a into @p out.  NK_EINVAL when @p i is out of range or an argument NULL. */
NK__RUNTIME_API int nk__advice_entry(const nk_advice *a, size_t i, struct nk__advice_entry_info *out);
/** Range @p r of entry @p i (policy "pages"): pages [first, first+count) of the entry's page size on @p node. */
NK__RUNTIME_API int nk__advice_entry_range(const nk_advice *a, size_t i, size_t r, uint64_t *first, uint64_t *count,
					   int *node);
/** nk_advice_check without the plan's pinning (a runtime does not pin: `numakit run` does, before exec). */
NK__RUNTIME_API int nk__advice_check_entries(const nk_advice *a, const nk_machine *m, nk_error *err);

#endif
