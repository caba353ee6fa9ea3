/* SPDX-License-Identifier: BSD-3-Clause
 * nk_profile_*: the program's side of `numakit profile`.  The profiler
 * runtime (preload/prof/, libnumakit_prof.so) offers its hook table
 * (runtime/runtime.h); outside the profiler there is none and every call
 * here is a no-op returning 0.  The plan runtime (preload/advice/,
 * libnumakit_plan.so, `numakit run --plan`) takes phases and names too:
 * nk_profile_phase and nk_profile_name call every runtime's hook, so a
 * planned run can be profiled again.
 */
#include <stddef.h>

#include "numakit.h"
#include "runtime/runtime.h"

#define EACH_RUNTIME(h)                                                                                             \
	for (int s_ = 0; s_ < NK__RUNTIME_NSLOTS; s_++)                                                            \
		if (((h) = nk__runtime_hook(s_)) != NULL)

int nk_profile_active(void)
{
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);
	return p && p->active ? p->active() : 0;
}

int nk_profile_phase(const char *name)
{
	if (!name || !*name)
		return NK_EINVAL;
	const struct nk__runtime_hooks *h;
	int rc = 0;
	EACH_RUNTIME(h)
	{
		int r = h->phase ? h->phase(name) : 0;
		if (!rc)
			rc = r;
	}
	return rc;
}

int nk_profile_start(void)
{
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);
	return p && p->start ? p->start() : 0;
}

int nk_profile_stop(void)
{
	const struct nk__runtime_hooks *p = nk__runtime_hook(NK__RUNTIME_PROF);
	return p && p->stop ? p->stop() : 0;
}

int nk_profile_name(const void *addr, size_t len, const char *name)
{
	if (!addr || !len || !name || !*name)
		return NK_EINVAL;
	const struct nk__runtime_hooks *h;
	int rc = 0;
	EACH_RUNTIME(h)
	{
		int r = h->name ? h->name(addr, len, name) : 0;
		if (!rc)
			rc = r;
	}
	return rc;
}
