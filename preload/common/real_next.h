/* SPDX-License-Identifier: BSD-3-Clause
 * The next definition of a libc function after the calling library, for the I/O interposers of
 * libnumakit_nt_io.so (preload/nt_io.c) and of the profiler runtime (preload/prof/io.c).  Header-only
 * and static: each object keeps its own cache slots.  Not for malloc & co, whose lookup must not
 * allocate (preload/common/interpose.h has that bootstrap).
 */
#ifndef NK_PRELOAD_REAL_NEXT_H
#define NK_PRELOAD_REAL_NEXT_H

#include <dlfcn.h>
#include <errno.h>

/* dlsym(RTLD_NEXT, name), cached in *slot; threads may race to fill it, all with the same value. */
static inline void *nk_real_next(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* Declares real_, the next definition of @p name (function type @p T); when it is missing (a libc
 * without the symbol) the wrapper sets ENOSYS and returns @p fail rather than calling NULL. */
#define NK_REAL_NEXT(T, name, fail)                           \
	static void *slot_;                                   \
	T *real_ = (T *)nk_real_next(&slot_, #name);          \
	if (!real_) {                                         \
		errno = ENOSYS;                               \
		return fail;                                  \
	}

#endif
