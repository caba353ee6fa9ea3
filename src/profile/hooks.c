/*
 * nk_profile_*: the program's side of `numakit profile`.  The profiler
 * runtime (preload/prof/, libnumakit_prof.so) exports nkp_hook_* functions;
 * outside the profiler they do not exist and every call here is a no-op
 * returning 0.  Looked up once with dlsym(RTLD_DEFAULT) and cached.
 * The plan runtime (preload/plan/, libnumakit_plan.so, `numakit run --plan`)
 * exports nkplan_hook_phase and nkplan_hook_name: nk_profile_phase and
 * nk_profile_name call both runtimes' hooks, so a planned run can be
 * profiled again.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "numakit.h"

typedef int (*hook_void)(void);
typedef int (*hook_name)(const char *);
typedef int (*hook_range)(const void *, size_t, const char *);

struct hooks {
	hook_void active, start, stop;
	hook_name phase, plan_phase;
	hook_range name, plan_name;
};

static struct hooks hk;
static atomic_int hk_state; /* 0 not looked up, 1 looking, 2 done */

static const struct hooks *hooks(void)
{
	int s = atomic_load_explicit(&hk_state, memory_order_acquire);
	if (s == 2)
		return &hk;
	int expected = 0;
	if (atomic_compare_exchange_strong(&hk_state, &expected, 1)) {
		/* POSIX allows converting dlsym's void * to a function pointer. */
		hk.active = (hook_void)dlsym(RTLD_DEFAULT, "nkp_hook_active");
		hk.start = (hook_void)dlsym(RTLD_DEFAULT, "nkp_hook_start");
		hk.stop = (hook_void)dlsym(RTLD_DEFAULT, "nkp_hook_stop");
		hk.phase = (hook_name)dlsym(RTLD_DEFAULT, "nkp_hook_phase");
		hk.name = (hook_range)dlsym(RTLD_DEFAULT, "nkp_hook_name");
		hk.plan_phase = (hook_name)dlsym(RTLD_DEFAULT, "nkplan_hook_phase");
		hk.plan_name = (hook_range)dlsym(RTLD_DEFAULT, "nkplan_hook_name");
		atomic_store_explicit(&hk_state, 2, memory_order_release);
		return &hk;
	}
	while (atomic_load_explicit(&hk_state, memory_order_acquire) != 2)
		;
	return &hk;
}

int nk_profile_active(void)
{
	const struct hooks *h = hooks();
	return h->active ? h->active() : 0;
}

int nk_profile_phase(const char *name)
{
	if (!name || !*name)
		return NK_EINVAL;
	const struct hooks *h = hooks();
	int rc = h->phase ? h->phase(name) : 0;
	if (h->plan_phase) {
		int prc = h->plan_phase(name);
		if (!rc)
			rc = prc;
	}
	return rc;
}

int nk_profile_start(void)
{
	const struct hooks *h = hooks();
	return h->start ? h->start() : 0;
}

int nk_profile_stop(void)
{
	const struct hooks *h = hooks();
	return h->stop ? h->stop() : 0;
}

int nk_profile_name(const void *addr, size_t len, const char *name)
{
	if (!addr || !len || !name || !*name)
		return NK_EINVAL;
	const struct hooks *h = hooks();
	int rc = h->name ? h->name(addr, len, name) : 0;
	if (h->plan_name) {
		int prc = h->plan_name(addr, len, name);
		if (!rc)
			rc = prc;
	}
	return rc;
}
