/*
 * libnumakit_plan.so: the runtime that `numakit run --plan` preloads to
 * apply a placement plan (docs/plan.md, docs/plan-runtime.md) to an
 * unmodified program.  Internal contract between its files:
 *
 *   key.c      pure logic, unit-tested (tests/unit/test_plan_runtime.c):
 *              the heap key of a call stack, exactly as the analysis
 *              writes it (src/profile/analysis.c site_var); page arithmetic
 *              of variables and plan ranges.
 *   elfsym.c   a small ELF reader: the address and size of a data symbol
 *              (STT_OBJECT, .symtab first, then .dynsym) of one file.
 *   runtime.c  environment, the plan, the machine, the log and the summary,
 *              statics, applying entries (nk_plan_build + nk_apply), the
 *              phase hook, the first-thread trigger (pthread_create), fork.
 *   alloc.c    malloc family interposers: allocations whose site is in the
 *              plan are served from page-aligned anonymous mappings the
 *              runtime tracks (free, realloc, malloc_usable_size know them).
 *
 * Environment (set by `numakit run --plan`; without NK_PLAN the runtime
 * stays inactive and every interposer just forwards):
 *   NK_PLAN      path of the plan (JSON, format "numakit-plan")
 *   NK_PLAN_LOG  path of the action log (appended; optional)
 *
 * Rule: a failure never changes what the program sees; it is logged and the
 * allocation or variable is left as the program asked.
 */
#ifndef NK_PRELOAD_PLAN_H
#define NK_PRELOAD_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NKPL_API __attribute__((visibility("default")))

/* ---- key.c (pure) ---- */

/** A loaded object, as the key needs it. */
struct nkpl_obj {
	const char *name; /* basename of its file (the main program's real file too) */
	uintptr_t bias;   /* run-time address - link-time address (dlpi_addr; 0 for non-PIE executables) */
	uintptr_t lo, hi; /* extent of its PT_LOAD segments */
	int runtime;      /* one of numakit's runtimes (libnumakit_*.so*): its frames are dropped */
};

#define NKPL_KEY_FRAMES 4
#define NKPL_KEY_MAX 1024

/** 1 when @p base (a file's basename) is one of numakit's preloaded runtimes (libnumakit_*.so*). */
int nkpl_is_runtime_name(const char *base);
/** Basename of @p path. */
const char *nkpl_basename(const char *path);
/** The object holding @p addr among @p objs, NULL none. */
const struct nkpl_obj *nkpl_obj_of(const struct nkpl_obj *objs, size_t n, uintptr_t addr);
/**
 * The heap key of call stack @p ips (return addresses, innermost first):
 * "heap:" then up to NKPL_KEY_FRAMES frames "OBJ+0xOFF" joined by ';', each
 * the return address minus 1 located in its object; frames of no object are
 * skipped, frames of numakit's runtimes dropped.  Returns the number of
 * frames written (0: no key; @p buf then holds "").
 */
int nkpl_key_format(const uintptr_t *ips, size_t n, const struct nkpl_obj *objs, size_t nobj, char *buf, size_t cap);
/** The whole pages of [addr, addr + len): *lo, *hi (*lo == *hi when none). */
void nkpl_inner_pages(uintptr_t addr, uint64_t len, uint64_t ps, uintptr_t *lo, uintptr_t *hi);
/**
 * Bytes of plan range [first, first + count) (pages of @p eps bytes, page 0
 * holding the variable's first byte at @p addr) clipped to the pages
 * [plo, phi) the runtime may touch, in system pages of @p ps: *lo, *hi
 * (page-aligned; *lo == *hi when nothing is left).
 */
void nkpl_range_bytes(uintptr_t addr, uint64_t first, uint64_t count, uint64_t eps, uintptr_t plo, uintptr_t phi,
		      uint64_t ps, uintptr_t *lo, uintptr_t *hi);
/** 1 when symbol name @p sym (from .symtab) names variable @p want ("count.1" names "count"). */
int nkpl_sym_matches(const char *sym, const char *want);

/* ---- elfsym.c ---- */
/** libstdc++'s __cxa_demangle. */
typedef char *(*nkpl_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
/**
 * Look up data symbol @p name (nkpl_sym_matches) in ELF file @p path: its
 * link-time address and size.  A C++ name as the analysis shows it
 * ("ns::grid", demangled) matches a mangled symbol ("_ZN2ns4gridE") through
 * @p demangle (NULL: mangled names match only as they are).  Returns 0, -1
 * when not found or unreadable (@p why then says which, a static string).
 * Allocates only inside @p demangle.
 */
int nkpl_elf_symbol(const char *path, const char *name, nkpl_demangle_fn demangle, uint64_t *value, uint64_t *size,
		    const char **why);

/* ---- runtime.c ---- */
/** Page size (0 before the runtime started). */
extern uint64_t nkpl_page_size;
/** Plan loaded and it has heap entries: allocations are worth a look. */
int nkpl_heap_active(void);
/** Thread-local re-entrancy guard: nonzero while the runtime itself is at work (its allocations forward). */
int nkpl_busy(void);
void nkpl_enter(void);
void nkpl_leave(void);
/**
 * The key group (entries sharing one key) of the current call stack, -1 none.
 * @p ra: the return address of the interposer (its caller): when it lies in
 * the program's objects and is no key's first frame, the answer is -1
 * without unwinding the stack (backtrace() costs microseconds).
 */
int nkpl_site_group(uintptr_t ra);
/** 1 when @p ra lies in one of numakit's runtimes (libnumakit_*.so*). */
int nkpl_in_runtime(uintptr_t ra);
/** How a tracked block came to be (the log says it). */
enum { NKPL_HEAP = 0, NKPL_REALLOC = 1, NKPL_MMAP = 2 };
/**
 * A tracked block of key group @p group was created: served to malloc & co
 * (@p how NKPL_HEAP), the new mapping of a grown one (NKPL_REALLOC), or an
 * anonymous mapping the program made itself (NKPL_MMAP).  Apply the group's
 * entries due now (at allocation; first-parallel after the first thread; the
 * current phase's).
 */
void nkpl_block_born(int group, void *addr, size_t len, int how);
/* runtime.c's hook table (src/runtime/runtime.h) takes nk_profile_phase (entries of that phase apply now)
 * and nk_profile_name (entries of key "name:NAME" apply to the range). */
/** Tracked block @p addr of @p group is freed (unmapped: @p how NKPL_MMAP): with a log, log where its pages are (nk_where). */
void nkpl_block_dies(int group, void *addr, size_t len, int how);
/** One line to the log (NK_PLAN_LOG), prefixed with the pid; no-op without a log. */
void nkpl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- alloc.c ---- */
/** Resolve the real allocator and mapping calls (first thing the runtime does). */
void nkpl_alloc_resolve(void);
void *nkpl_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int nkpl_real_munmap(void *addr, size_t len);
/** Call @p fn for every live tracked block of @p group, under the block lock (fn must not allocate through it). */
void nkpl_alloc_each(int group, void (*fn)(void *addr, size_t len, void *arg), void *arg);
void nkpl_alloc_fork_prepare(void);
void nkpl_alloc_fork_parent(void);
void nkpl_alloc_fork_child(void);

#endif
