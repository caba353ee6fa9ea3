/* SPDX-License-Identifier: BSD-3-Clause
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
 *              the key groups (accessors for site.c), statics, applying
 *              entries (nk_plan_build + nk_apply), the phase hook, the
 *              first-thread trigger (pthread_create), fork.
 *   site.c     site matching: the table of loaded objects (dl_iterate_phdr,
 *              scanned again after a dlopen) and its lock, the key group of
 *              a call stack (nkpl_site_group: the caller's return address,
 *              then the unwound stack, with a per-thread memo of the last
 *              answers), the caller filter of small allocations.
 *   alloc.c    malloc family interposers: allocations whose site is in the
 *              plan are served from page-aligned anonymous mappings the
 *              runtime tracks (free, realloc, malloc_usable_size know them),
 *              or, for a site of small blocks (layout blocks), from its arena.
 *   arena.c    sites of small blocks: one jemalloc arena per site, its
 *              extents carved from one reserved region, each extent's pages
 *              placed when jemalloc commits it, after the position in the
 *              site's array of the block being allocated (built with
 *              jemalloc, NK_HAVE_JEMALLOC; built without it, the same calls serve
 *              nothing and runtime.c logs each layout-blocks entry as not served).
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
/**
 * The first frame of heap key @p key ("heap:OBJ+0xOFF;..."): OBJ into @p obj (@p cap bytes with the NUL), OFF into
 * *off.  0, or -1 when @p key is not a heap key or OBJ does not fit.
 */
int nkpl_key_first_frame(const char *key, char *obj, size_t cap, uint64_t *off);
/**
 * Layout blocks: the page of a site's array that page @p j of a fresh extent stands for.  The extent's first block
 * sits at byte @p pos of the array (the bytes the site was asked for before that block) and the blocks after it in
 * allocation order fill the extent @p ratio as densely as the array (the block's requested size / the size the
 * allocator gives it; clamped to [0, 1]): floor((pos + j * ps * ratio) / ps), the array's last page (@p npages - 1)
 * for anything beyond it.  0 when @p npages or @p ps is 0.
 */
uint64_t nkpl_site_page(uint64_t pos, uint64_t j, uint64_t ps, double ratio, uint64_t npages);
/**
 * The system pages [*lo, *hi) (of @p ps bytes, page 0 at byte 0) whose first byte lies in plan pages
 * [first, first + count) of @p eps bytes: the pages a "pages" range gives its node.  *lo == *hi when none.
 */
void nkpl_plan_pages_sys(uint64_t first, uint64_t count, uint64_t eps, uint64_t ps, uint64_t *lo, uint64_t *hi);

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
/*
 * The key groups (entries sharing one key), numbered from 0, as site.c sees them; set at start, before any
 * allocation is matched, and never changed after.
 */
size_t nkpl_num_groups(void);
/** The key of group @p group (the plan's string: "heap:...", "static:...", "name:..."), NULL for no group. */
const char *nkpl_group_key(int group);
/** 1 when group @p group is a heap key (one site.c may match a call stack to). */
int nkpl_group_heap(int group);
/** 1 when key group @p group is a site of small blocks served from an arena (layout blocks, jemalloc built in). */
int nkpl_group_blocks(int group);
/**
 * The arena of site of small blocks @p group was made (its first block): count and log the entry whose layout
 * it follows.  Called by arena.c outside jemalloc.
 */
void nkpl_blocks_matched(int group);
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

/* ---- site.c ---- */
/**
 * The key group (entries sharing one key) of the current call stack, -1 none.
 * @p ra: the return address of the interposer (its caller): when it lies in
 * the program's objects and is no key's first frame, the answer is -1
 * without unwinding the stack (unwinding costs microseconds).  @p cfa: the
 * interposer's CFA (__builtin_dwarf_cfa(); 0 unknown): with it, a thread
 * asking again from the same call path gets its last answer without
 * unwinding (x86-64).
 */
int nkpl_site_group(uintptr_t ra, uintptr_t cfa);
/** 1 when @p ra lies in one of numakit's runtimes (libnumakit_*.so*). */
int nkpl_in_runtime(uintptr_t ra);
/** A dlopen loaded an object: scan the objects again before the next match. */
void nkpl_objs_changed(void);
/**
 * Scan the loaded objects now (at start, after a dlopen: statics), rebuild the caller filter below, then call
 * @p fn (NULL: none) with the object table's lock held, where it may look objects up with nkpl_obj_named (an
 * allocation of @p fn's that reaches nkpl_site_group outside nkpl_enter() would wait for that lock).
 */
void nkpl_objs_rescan(void (*fn)(void *arg), void *arg);
/**
 * The first loaded object whose basename is @p name[0, @p len), its file's path into *path; NULL none.  Only from
 * nkpl_objs_rescan's fn: both stay valid while it runs.
 */
const struct nkpl_obj *nkpl_obj_named(const char *name, size_t len, const char **path);
/* Entries of the caller filter below (0: no site of small blocks, the usual case: one load). */
extern size_t nkpl_small_n;
int nkpl_small_lookup(uintptr_t ra);
/**
 * An allocation of less than a page returning to @p ra may be at a site of small blocks: @p ra starts the key of
 * one (or lies in a runtime, whose caller is unknown).  Lock-free and cheap: every small malloc asks.
 */
static inline int nkpl_small_candidate(uintptr_t ra)
{
	return __atomic_load_n(&nkpl_small_n, __ATOMIC_RELAXED) && nkpl_small_lookup(ra);
}
/** The unwinder's first use, at start rather than in a malloc. */
void nkpl_site_start(void);
/* The object table's lock around fork (runtime.c's atfork handlers, in their order). */
void nkpl_site_fork_prepare(void);
void nkpl_site_fork_parent(void);
void nkpl_site_fork_child(void);

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

/* ---- arena.c ---- */
/** A site's array laid out: the node of each of its pages (-1: left to the kernel); nodes NULL: none ("none"). */
struct nkpl_layout {
	const int *nodes;
	uint64_t npages;
};
/** 1 when this build serves sites of small blocks (linked with jemalloc). */
int nkpl_arena_built(void);
/**
 * At start, before any allocation is served: the @p n sites of small blocks, their key groups @p groups and keys
 * @p keys (the plan's strings), @p npages the pages of each one's array.  Reserves nothing yet.  0, -1 (no memory).
 */
int nkpl_arena_setup(size_t n, const int *groups, const char *const *keys, const uint64_t *npages);
/** Extents of @p group handed out from now on follow @p l (NULL: not placed).  @p l must stay valid. */
void nkpl_arena_set_layout(int group, const struct nkpl_layout *l);
/**
 * A block of @p n bytes for site @p group from its arena (made at the first call): aligned to @p align (a power
 * of two; 0 default), zeroed when @p zero.  NULL: not served (the arena could not be made or is full: counted,
 * logged once), the caller forwards to the allocator.  Call inside nkpl_enter().
 */
void *nkpl_arena_alloc(int group, size_t n, size_t align, int zero);
/* The region every arena's extents come from: [nkpl_region_lo, nkpl_region_lo + nkpl_region_len), len 0 none. */
extern uintptr_t nkpl_region_lo;
extern size_t nkpl_region_len;
/** 1 when @p p lies in the arenas' region (a block one of them served).  One subtraction and compare. */
static inline int nkpl_in_region(const void *p)
{
	size_t len = __atomic_load_n(&nkpl_region_len, __ATOMIC_ACQUIRE);
	return len && (uintptr_t)p - __atomic_load_n(&nkpl_region_lo, __ATOMIC_RELAXED) < len;
}
/** free / realloc / malloc_usable_size of a block in the region (nkpl_in_region). */
void nkpl_arena_free(void *p);
void *nkpl_arena_realloc(void *p, size_t n);
size_t nkpl_arena_usable(const void *p);
/**
 * The pages of @p group's arena handed out to blocks, as runs [lo, hi) of one node under @p l (node -1 for pages
 * @p l leaves alone or whose position is unknown; @p l NULL: every run with node -1): fn(lo, hi, node, arg).
 * Lock-free; pages handed out meanwhile may be missed.
 */
void nkpl_arena_runs(int group, const struct nkpl_layout *l, void (*fn)(uintptr_t lo, uintptr_t hi, int node, void *arg),
		     void *arg);
/** What @p group's arena did (for the exit log). */
struct nkpl_arena_stats {
	int made;          /* 1 made, 0 not (no block yet), -1 failed */
	unsigned arena;    /* jemalloc's index */
	uintptr_t lo, hi;  /* its slice of the region */
	uint64_t blocks, bytes, left, frees, reallocs;
	uint64_t extents;  /* extents committed (each placed, unless no layout applies) */
	uint64_t grows;    /* extents jemalloc took from the slice (alloc hook calls) */
	uint64_t unplaced; /* pages whose policy could not be set (mbind failed) */
};
/** 0, -1 when @p group is no site of small blocks. */
int nkpl_arena_stats(int group, struct nkpl_arena_stats *out);
void nkpl_arena_fork_child(void);

#endif
