/* SPDX-License-Identifier: BSD-3-Clause
 * The boundary between numakit's preloaded runtimes (libnumakit_prof.so, libnumakit_plan.so) where
 * threads are concerned: a runtime starts its own threads (the profiler's flusher and pagefault
 * sampler) with libc's pthread_create itself, never through the pthread_create of an interposer
 * loaded after it.  So every pthread_create an interposer sees is the program's, whichever runtime
 * forwarded it: the plan runtime counts the program's first thread (its `first-parallel` entries) the
 * same under `numakit profile` as without it, and needs no guess about who called it.
 * Header-only and static: each runtime keeps its own cache slot.
 */
#ifndef NK_PRELOAD_OWN_THREAD_H
#define NK_PRELOAD_OWN_THREAD_H

#include <dlfcn.h>
#include <pthread.h>

typedef int nk_rt_pthread_create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/*
 * libc's own pthread_create (libpthread's before glibc 2.34), looked up in that library rather than
 * after the caller (dlsym(RTLD_NEXT) would find the next runtime's interposer).  NULL if neither
 * library is loaded, which a process that has threads cannot be.
 */
static inline nk_rt_pthread_create_fn *nk_rt_libc_pthread_create(void)
{
	static nk_rt_pthread_create_fn *slot;
	nk_rt_pthread_create_fn *f = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
	static const char *const libs[] = {"libc.so.6", "libpthread.so.0"};

	for (unsigned i = 0; !f && i < sizeof libs / sizeof libs[0]; i++) {
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		f = (nk_rt_pthread_create_fn *)dlsym(h, "pthread_create");
		dlclose(h);
	}
	if (f)
		__atomic_store_n(&slot, f, __ATOMIC_RELEASE);
	return f;
}

#endif
