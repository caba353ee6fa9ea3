/* SPDX-License-Identifier: BSD-3-Clause
 * The library's side of the runtime hook tables (contract: runtime/runtime.h).  The only place in
 * libnumakit that looks a runtime up by name: one dlsym(RTLD_DEFAULT) per slot, once per process.
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "runtime/runtime.h"

static const char *const slot_sym[NK__RUNTIME_NSLOTS] = {
#define NK__STR2(x) #x
#define NK__STR(x) NK__STR2(x)
	[NK__RUNTIME_PROF] = NK__STR(NK__RUNTIME_SYM_PROF),
	[NK__RUNTIME_PLAN] = NK__STR(NK__RUNTIME_SYM_PLAN),
};

static const struct nk__runtime_hooks *tables[NK__RUNTIME_NSLOTS];
static atomic_int looked_up;

static void look_up(void)
{
	/* Two threads may both get here: both find the same tables and store the same pointers, so there is
	 * no lock (and no spinning, which a thread interrupted by a signal handler that calls in could not end).
	 * Every access to tables[] is atomic: a thread past looked_up may read while a late one still stores. */
	for (int s = 0; s < NK__RUNTIME_NSLOTS; s++) {
		const struct nk__runtime_hooks *t = dlsym(RTLD_DEFAULT, slot_sym[s]);
		if (t && (t->version != NK__RUNTIME_HOOKS_VERSION || t->size != sizeof *t))
			t = NULL; /* a runtime of another build: its table cannot be read as ours */
		__atomic_store_n(&tables[s], t, __ATOMIC_RELAXED);
	}
	atomic_store_explicit(&looked_up, 1, memory_order_release);
}

const struct nk__runtime_hooks *nk__runtime_hook(int slot)
{
	if (slot < 0 || slot >= NK__RUNTIME_NSLOTS)
		return NULL;
	if (!atomic_load_explicit(&looked_up, memory_order_acquire))
		look_up();
	return __atomic_load_n(&tables[slot], __ATOMIC_RELAXED);
}
