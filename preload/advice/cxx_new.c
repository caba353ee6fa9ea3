/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so: C++ operator new and delete, handed to libstdc++'s own.
 *
 * jemalloc (arena.c) exports the whole operator new/delete family too.  As a DT_NEEDED of this preloaded
 * runtime it comes before libstdc++ in the process's search order whenever libstdc++ is not a direct
 * dependency of the program: a C program that loads a C++ library (the numakit command itself, through
 * libclang and LLVM) then got jemalloc's operator new for the library's C++ code while the rest of it used
 * glibc's malloc and free, and died in glibc's free on a jemalloc block (a trace run under the plan
 * runtime, plan_sites).  These definitions come before jemalloc's (this object is preloaded) and call what
 * the program would have called without the runtime: libstdc++'s operator new, which calls malloc (ours,
 * then glibc's), so planned sites reached through `new` stay planned.  Built with or without jemalloc:
 * without it they only forward.
 *
 * Found by dlopen(RTLD_NOLOAD) of libstdc++ and dlsym on that handle (RTLD_NEXT would find jemalloc's).
 * No libstdc++ loaded means no C++ code to call these; then they fall back to malloc and free (a
 * throwing new that gets no memory aborts: there is no C++ runtime to throw with).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#define NKPL_EXPORT __attribute__((visibility("default")))

enum {
	NEW, NEW_NT, NEW_AL, NEW_AL_NT, ANEW, ANEW_NT, ANEW_AL, ANEW_AL_NT,
	DEL, DEL_NT, DEL_AL, DEL_AL_NT, DEL_SZ, DEL_SZ_AL,
	ADEL, ADEL_NT, ADEL_AL, ADEL_AL_NT, ADEL_SZ, ADEL_SZ_AL,
	NFN
};

static const char *const names[NFN] = {
	"_Znwm", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_Znam", "_ZnamRKSt9nothrow_t", "_ZnamSt11align_val_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdlPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdlPvm", "_ZdlPvmSt11align_val_t",
	"_ZdaPv", "_ZdaPvRKSt9nothrow_t", "_ZdaPvSt11align_val_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvm", "_ZdaPvmSt11align_val_t",
};

static _Atomic(void *) fns[NFN];
static atomic_int looked[NFN];

/* libstdc++'s definition of operator @p k, NULL when libstdc++ is not loaded. */
static void *cxx(int k)
{
	void *f = atomic_load_explicit(&fns[k], memory_order_acquire);
	if (f || atomic_load_explicit(&looked[k], memory_order_acquire))
		return f;
	void *h = dlopen("libstdc++.so.6", RTLD_NOLOAD | RTLD_LAZY);
	if (h) {
		f = dlsym(h, names[k]);
		dlclose(h); /* RTLD_NOLOAD: only the reference taken here */
	}
	atomic_store_explicit(&fns[k], f, memory_order_release);
	atomic_store_explicit(&looked[k], 1, memory_order_release);
	return f;
}

static void *fallback_new(size_t n, size_t align, int nothrow)
{
	void *p = NULL;
	if (!n)
		n = 1;
	if (align > sizeof(void *)) {
		if (posix_memalign(&p, align, n))
			p = NULL;
	} else {
		p = malloc(n);
	}
	if (!p && !nothrow)
		abort();
	return p;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_x_fn)(void *, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);

#define NEWS(K, KNT, KAL, KALNT, name, name_nt, name_al, name_al_nt)                                             \
	void *name(size_t n);                                                                                      \
	void *name_nt(size_t n, const void *nt);                                                                   \
	void *name_al(size_t n, size_t al);                                                                        \
	void *name_al_nt(size_t n, size_t al, const void *nt);                                                     \
	NKPL_EXPORT void *name(size_t n)                                                                          \
	{                                                                                                          \
		new_fn f = (new_fn)cxx(K);                                                                         \
		return f ? f(n) : fallback_new(n, 0, 0);                                                           \
	}                                                                                                          \
	NKPL_EXPORT void *name_nt(size_t n, const void *nt)                                                       \
	{                                                                                                          \
		new_nt_fn f = (new_nt_fn)cxx(KNT);                                                                 \
		return f ? f(n, nt) : fallback_new(n, 0, 1);                                                       \
	}                                                                                                          \
	NKPL_EXPORT void *name_al(size_t n, size_t al)                                                            \
	{                                                                                                          \
		new_al_fn f = (new_al_fn)cxx(KAL);                                                                 \
		return f ? f(n, al) : fallback_new(n, al, 0);                                                      \
	}                                                                                                          \
	NKPL_EXPORT void *name_al_nt(size_t n, size_t al, const void *nt)                                         \
	{                                                                                                          \
		new_al_nt_fn f = (new_al_nt_fn)cxx(KALNT);                                                         \
		return f ? f(n, al, nt) : fallback_new(n, al, 1);                                                  \
	}

NEWS(NEW, NEW_NT, NEW_AL, NEW_AL_NT, _Znwm, _ZnwmRKSt9nothrow_t, _ZnwmSt11align_val_t,
     _ZnwmSt11align_val_tRKSt9nothrow_t)
NEWS(ANEW, ANEW_NT, ANEW_AL, ANEW_AL_NT, _Znam, _ZnamRKSt9nothrow_t, _ZnamSt11align_val_t,
     _ZnamSt11align_val_tRKSt9nothrow_t)

#define DELS(K, KNT, KAL, KALNT, KSZ, KSZAL, name, name_nt, name_al, name_al_nt, name_sz, name_sz_al)              \
	void name(void *p);                                                                                        \
	void name_nt(void *p, const void *nt);                                                                     \
	void name_al(void *p, size_t al);                                                                          \
	void name_al_nt(void *p, size_t al, const void *nt);                                                       \
	void name_sz(void *p, size_t n);                                                                           \
	void name_sz_al(void *p, size_t n, size_t al);                                                             \
	NKPL_EXPORT void name(void *p)                                                                             \
	{                                                                                                          \
		del_fn f = (del_fn)cxx(K);                                                                         \
		f ? f(p) : free(p);                                                                                \
	}                                                                                                          \
	NKPL_EXPORT void name_nt(void *p, const void *nt)                                                         \
	{                                                                                                          \
		del_nt_fn f = (del_nt_fn)cxx(KNT);                                                                 \
		f ? f(p, nt) : free(p);                                                                            \
	}                                                                                                          \
	NKPL_EXPORT void name_al(void *p, size_t al)                                                              \
	{                                                                                                          \
		del_x_fn f = (del_x_fn)cxx(KAL);                                                                   \
		f ? f(p, al) : free(p);                                                                            \
	}                                                                                                          \
	NKPL_EXPORT void name_al_nt(void *p, size_t al, const void *nt)                                           \
	{                                                                                                          \
		del_al_nt_fn f = (del_al_nt_fn)cxx(KALNT);                                                         \
		f ? f(p, al, nt) : free(p);                                                                        \
	}                                                                                                          \
	NKPL_EXPORT void name_sz(void *p, size_t n)                                                               \
	{                                                                                                          \
		del_x_fn f = (del_x_fn)cxx(KSZ);                                                                   \
		f ? f(p, n) : free(p);                                                                             \
	}                                                                                                          \
	NKPL_EXPORT void name_sz_al(void *p, size_t n, size_t al)                                                 \
	{                                                                                                          \
		del_sz_al_fn f = (del_sz_al_fn)cxx(KSZAL);                                                         \
		f ? f(p, n, al) : free(p);                                                                         \
	}

DELS(DEL, DEL_NT, DEL_AL, DEL_AL_NT, DEL_SZ, DEL_SZ_AL, _ZdlPv, _ZdlPvRKSt9nothrow_t, _ZdlPvSt11align_val_t,
     _ZdlPvSt11align_val_tRKSt9nothrow_t, _ZdlPvm, _ZdlPvmSt11align_val_t)
DELS(ADEL, ADEL_NT, ADEL_AL, ADEL_AL_NT, ADEL_SZ, ADEL_SZ_AL, _ZdaPv, _ZdaPvRKSt9nothrow_t, _ZdaPvSt11align_val_t,
     _ZdaPvSt11align_val_tRKSt9nothrow_t, _ZdaPvm, _ZdaPvmSt11align_val_t)
