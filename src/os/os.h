/* SPDX-License-Identifier: BSD-3-Clause
 * The OS layer contract.  Everything the library (src/) asks of the kernel
 * goes through here: files of /sys and /proc, the user's files, and system
 * calls.  One file per concern implements it (src/os/linux_*.c).
 *
 * ERRORS (one convention for every function of this header)
 *   A function that can fail returns >= 0 on success (0, or the count, the
 *   descriptor, the pid or the 1/0 answer its comment names) and a negative
 *   NK_E* code of numakit.h on failure; never -errno, never -1 with errno.
 *   The code comes from one of two tables:
 *     system calls (nk__os_code): ENOENT, ENOTDIR, ESRCH -> NK_ENOENT;
 *       ENOMEM -> NK_ENOMEM; EPERM, EACCES -> NK_EPERM; ENOSYS, EOPNOTSUPP
 *       -> NK_ENOSYS; EINVAL -> NK_EINVAL; ENODEV -> NK_ENODEV; any other
 *       errno -> NK_EIO;
 *     files (nk__os_file_code, the calls whose comment starts "File."):
 *       ENOENT, ENOTDIR -> NK_ENOENT; EPERM, EACCES -> NK_EPERM; ENOMEM ->
 *       NK_ENOMEM; any other -> NK_EIO (the file exists but could not be
 *       read or written).
 *   Each call's comment lists its codes, and says where it departs from its
 *   table (NK_EPARSE for a value that does not parse, NK_EIO for every
 *   failed step of an atomic write, NK_ENOSYS for a process without
 *   numa_maps).  The code is coarse on purpose; the kernel's precise reason
 *   (ENOMEM from mbind is a full node to apply.c's fallback; EPERM and
 *   EINVAL of set_mempolicy get different messages) is the caller's to
 *   interpret.  So a call whose callers need it takes a last parameter
 *   `int *sys_errno` (may be NULL), written on every return: 0 on success;
 *   on failure the errno of the system call that failed, or, when the call
 *   refused before reaching the kernel, the errno that says why (EINVAL for
 *   an argument it rejects, ENOMEM when its own allocation failed, EFBIG
 *   for a file over the size limit, EISDIR for a folder read as a file,
 *   ECANCELED for a spawn hook's refusal): never 0 on failure.  Callers
 *   keep their messages by printing strerror(*sys_errno) and by switching on
 *   it where the errno matters, never on the code alone.
 *   Arrays a call fills for the kernel (move_pages' status[]) hold the
 *   kernel's per-item -errno values: those are data, not a return.
 *
 * OUTPUTS
 *   Out-parameters are written only on success, unless a call says
 *   otherwise (the status[] of move_pages, the buffer of nk__os_read_at, the
 *   *stage of nk__os_write_atomic); on failure they keep what the caller
 *   put there.  What a call returns through a pointer (a malloc'ed buffer, a
 *   descriptor, a mapping, a name list) belongs to the caller, who frees,
 *   closes or unmaps it with the function named beside the call.  Pointer
 *   arguments are non-NULL unless the comment says "may be NULL".
 *
 * NO POLICY
 *   The layer decides nothing: it does not retry a refused call, fall back
 *   to another node, print, read the environment or exit.  What to do about
 *   a failure is the caller's decision (src/memory/apply.c's fallback, the
 *   messages of src/alloc/process.c).
 *
 * THREAD SAFETY
 *   Every function may be called from any thread at once: none keeps state
 *   of its own (the per-thread ones, set_mempolicy, set_affinity, getcpu,
 *   act on the calling thread; the SIGSEGV disposition is the process's).
 *   Functions marked AS-safe make system calls only (no lock, no
 *   allocation) and may run inside a signal handler; they still change
 *   errno, which a handler saves itself.
 *
 * FSROOT
 *   Every read of /sys and /proc that describes the machine takes a @p root
 *   ("/" or NULL: the live system; else the folder of a captured tree) and
 *   joins it in front of an absolute path, so real-machine dumps and
 *   synthetic trees exercise the same code as the live system (hwloc's
 *   hwloc_openat).  Calls without a root are about the running system
 *   itself (the caller's process, its memory, its children) or the user's
 *   own files, named as the user gave them.
 */
#ifndef NK_OS_H
#define NK_OS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "util/list.h"

/** The NK_E* code of a system call's errno @p e (> 0), per the table above.  AS-safe. */
static inline int nk__os_code(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
	case ESRCH:
		return NK_ENOENT;
	case ENOMEM:
		return NK_ENOMEM;
	case EPERM:
	case EACCES:
		return NK_EPERM;
	case ENOSYS:
	case EOPNOTSUPP:
		return NK_ENOSYS;
	case EINVAL:
		return NK_EINVAL;
	case ENODEV:
		return NK_ENODEV;
	default:
		return NK_EIO;
	}
}

/** The NK_E* code of a file call's errno @p e (> 0), per the files table above.  AS-safe. */
static inline int nk__os_file_code(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return NK_ENOENT;
	case ENOMEM:
		return NK_ENOMEM;
	case EPERM:
	case EACCES:
		return NK_EPERM;
	default:
		return NK_EIO;
	}
}

/*
 * How the layer's own files return (not for its callers): write *sys_errno (may be NULL) and return
 * @p code; nk__os_sys for a failed system call's errno @p e (> 0), nk__os_ok for a success that
 * returns @p v (>= 0).  AS-safe.
 */
static inline long nk__os_ret(long code, int e, int *sys_errno)
{
	if (sys_errno)
		*sys_errno = e;
	return code;
}
static inline int nk__os_sys(int e, int *sys_errno)
{
	return (int)nk__os_ret(nk__os_code(e), e, sys_errno);
}
static inline int nk__os_ok(int v, int *sys_errno)
{
	return (int)nk__os_ret(v, 0, sys_errno);
}

/* ---- files ---- (src/os/linux_files.c) */

/** Files larger than this are refused (sysfs values are tiny; /proc/cpuinfo on 1k cpus is < 1 MiB). */
#define NK__OS_MAX_FILE (8u << 20)

/**
 * File.  Read @p path (absolute, e.g. "/sys/devices/system/node/online") under @p root ("/" or NULL:
 * the live system) into a malloc'ed C string *out (the caller frees it).  Embedded NUL bytes (seen in
 * captured dumps) end the text.  Returns 0; NK_EINVAL (root + path longer than PATH_MAX), NK_ENOENT,
 * NK_EPERM, NK_EIO (unreadable, a folder, over NK__OS_MAX_FILE), NK_ENOMEM.  No errno: its callers, the
 * machine builders, name the file and the code.
 */
int nk__os_read_file(const char *root, const char *path, char **out);

/**
 * File.  Read a whole user file (a machine file, a plan, a profile) byte for byte, NULs included,
 * refusing more than @p max bytes: *out is malloc'ed (the caller frees it) and NUL-terminated for
 * convenience, *len its byte count.  Returns 0; NK_ENOENT, NK_EPERM, NK_EIO (unreadable; a folder:
 * EISDIR; larger than max: EFBIG), NK_ENOMEM; *sys_errno (may be NULL) per the convention.
 */
int nk__os_read_whole(const char *path, size_t max, char **out, size_t *len, int *sys_errno);

/**
 * File.  Open @p path read-only for a reader that needs a descriptor (libelf maps ELF and debug files
 * itself): close-on-exec, never a controlling terminal, never blocking on a FIFO.  Returns the
 * descriptor (>= 0; the caller closes it with nk__os_close), or NK_ENOENT, NK_EPERM, NK_EIO, NK_ENOMEM;
 * *sys_errno (may be NULL).
 */
int nk__os_open_read(const char *path, int *sys_errno);

/**
 * File.  write(2) all @p len bytes of @p buf to descriptor @p fd (the caller's), retrying short writes
 * and EINTR.  AS-safe (src/os/linux_fd.c, in numakit_rtsupport: the profile writer runs in fatal-signal
 * handlers).  Returns 0; NK_EIO (EBADF, ENOSPC, EPIPE ...; a write that made no progress: EIO),
 * NK_EPERM, NK_ENOENT; *sys_errno (may be NULL).  Part of the bytes may be written on failure.
 */
int nk__os_write_all(int fd, const void *buf, size_t len, int *sys_errno);

/** File.  close(2) of a descriptor this layer returned (negative @p fd: a no-op, 0).  0 or NK_EIO; *sys_errno (may be NULL). */
int nk__os_close(int fd, int *sys_errno);

/**
 * File.  Replace @p path atomically with @p len bytes of @p data: write a sibling temporary file
 * (mode 0666 less the umask), fsync, rename over.  A failure leaves the old file intact and no
 * temporary behind.  Returns 0; NK_EIO (any step; also EPERM/ENOENT from the kernel: what failed is
 * *stage), NK_ENOMEM.  *stage (written on every return) names the step that failed or ran last:
 * "create", "write", "replace"; *sys_errno (may be NULL) its errno.
 */
int nk__os_write_atomic(const char *path, const void *data, size_t len, const char **stage, int *sys_errno);

/** 1 when @p path exists under @p root (stat(2) succeeds, links followed), 0 otherwise (cannot fail). */
int nk__os_exists(const char *root, const char *path);

/**
 * File.  The entries of folder @p path under @p root whose names start with @p prefix (may be NULL:
 * all), "." and ".." left out, in the order the kernel gives.  *names is a malloc'ed array of *n
 * malloc'ed strings (NULL when *n is 0; free with nk__os_free_names).  Returns 0; NK_EINVAL (path too
 * long), NK_ENOENT, NK_EPERM, NK_EIO, NK_ENOMEM.
 */
int nk__os_list_dir(const char *root, const char *path, const char *prefix, char ***names, size_t *n);
/** Free what nk__os_list_dir() returned (@p names may be NULL). */
void nk__os_free_names(char **names, size_t n);

/** What nk__os_stat() tells of a file. */
struct nk__os_stat {
	uint64_t size;        /* bytes */
	uint64_t ino;         /* inode number */
	unsigned dev_major;   /* the device holding it */
	unsigned dev_minor;
	int is_reg;           /* 1 for a regular file */
	int is_dir;           /* 1 for a folder */
};

/** File.  stat(2) of @p path (links followed) into *st.  Returns 0, NK_ENOENT, NK_EPERM, NK_EIO; *sys_errno (may be NULL). */
int nk__os_stat(const char *path, struct nk__os_stat *st, int *sys_errno);

/**
 * File.  The canonical absolute path of @p path (realpath(3): links and "..", "." resolved) in *out,
 * malloc'ed (the caller frees it).  Returns 0, NK_ENOENT, NK_EPERM, NK_EIO, NK_ENOMEM; *sys_errno (may be NULL).
 */
int nk__os_realpath(const char *path, char **out, int *sys_errno);

/** Base page size of the running system (cannot fail: 4096 if sysconf does not say). */
unsigned long nk__os_page_size(void);

/**
 * Cpus the calling thread may run on (sched_getaffinity, the mask sized from the kernel's answer):
 * *cpus (an initialised list) is replaced on success.  Returns 0, NK_ENOSYS, NK_EIO, NK_ENOMEM.
 */
int nk__os_affinity(nk__ilist *cpus);

/* ---- memory policy and affinity system calls ---- (src/os/linux_mempolicy.c)
 * Thin wrappers, one per system call, -ENOSYS (NK_ENOSYS, sys_errno ENOSYS)
 * where the kernel or libc lacks the call.  Their callers need the kernel's
 * reason (EPERM vs EINVAL vs ENOMEM vs ENODEV mean different things for a
 * placement), so each takes *sys_errno.
 */

/* Kernel memory-policy modes (linux/mempolicy.h; 5 and 6 postdate older headers). */
enum {
	NK__MPOL_DEFAULT = 0,
	NK__MPOL_PREFERRED = 1,
	NK__MPOL_BIND = 2,
	NK__MPOL_INTERLEAVE = 3,
	NK__MPOL_LOCAL = 4,
	NK__MPOL_PREFERRED_MANY = 5,   /* Linux >= 5.15 */
	NK__MPOL_WEIGHTED_INTERLEAVE = 6, /* Linux >= 6.9 */
};
#define NK__MPOL_MF_STRICT (1u << 0)
#define NK__MPOL_MF_MOVE (1u << 1)
#define NK__MPOL_MF_MOVE_ALL (1u << 2)
#define NK__MPOL_F_NODE (1u << 0)
#define NK__MPOL_F_ADDR (1u << 1)
#define NK__MPOL_F_MEMS_ALLOWED (1u << 2)
#define NK__MPOL_F_STATIC_NODES (1u << 15)

/**
 * mbind(2) over [addr, addr+len) (@p addr page aligned) with mode @p mode and the node set @p nodes
 * (@p n ids in [0, NK__MAX_ID], any order, duplicates fine; may be NULL when @p n is 0) and MPOL_MF_*
 * @p flags.  Returns 0; NK_EINVAL (a node id out of range: sys_errno EINVAL, nothing asked of the
 * kernel), NK_ENOMEM (the mask's allocation, or the kernel's ENOMEM: sys_errno tells), or the code of
 * the kernel's errno (EINVAL, ENODEV, EPERM, EIO from MPOL_MF_STRICT, ...).
 */
int nk__os_mbind(void *addr, size_t len, int mode, const int *nodes, size_t n, unsigned flags, int *sys_errno);

/** Node ids nk__os_mbind_node() takes: below 1024, the kernel's usual MAX_NUMNODES. */
#define NK__OS_MBIND_NODE_MAX 1024
/**
 * mbind(2) of [addr, addr+len) to the one node @p node, with no allocation and no lock (its mask on the
 * stack): for the runtimes, which call it inside the program's allocator (preload/advice/arena.c, inside
 * jemalloc's hooks).  AS-safe.  Returns 0; NK_EINVAL for a node outside [0, NK__OS_MBIND_NODE_MAX)
 * (sys_errno EINVAL); else as nk__os_mbind.
 */
int nk__os_mbind_node(void *addr, size_t len, int mode, int node, int *sys_errno);

/** set_mempolicy(2) for the calling thread; @p nodes as for nk__os_mbind.  Returns 0 or as nk__os_mbind. */
int nk__os_set_mempolicy(int mode, const int *nodes, size_t n, int *sys_errno);

/**
 * get_mempolicy(2).  *mode (may be NULL) receives the mode; with NK__MPOL_F_ADDR|NK__MPOL_F_NODE, the
 * node of the page at @p addr.  @p nodes (an initialised list, may be NULL) is replaced by the node
 * set.  Both are left as they were on failure.  Returns 0; NK_ENOMEM (sys_errno ENOMEM), or the code
 * of the kernel's errno (EINVAL for flags or an address it refuses, EFAULT -> NK_EIO).
 */
int nk__os_get_mempolicy(int *mode, nk__ilist *nodes, void *addr, unsigned flags, int *sys_errno);

/**
 * move_pages(2) on the calling process, @p count pages (addresses in @p pages, any alignment inside
 * the page).  @p nodes NULL queries: status[i] receives the node of pages[i] or the kernel's -errno
 * (-ENOENT: never touched; -EFAULT: unmapped or the zero page).  With @p nodes (count entries), moves
 * and status[i] receives the node reached or -errno (-EBUSY, -ENOMEM, -EACCES ...).  status[] belongs
 * to the kernel: it may be partly written on failure.  AS-safe.  Returns 0, a positive count of pages
 * not moved, or the code of the kernel's errno (ENODEV: a target node that does not exist; EACCES,
 * EPERM: a node not allowed; E2BIG -> NK_EIO).
 */
long nk__os_move_pages(unsigned long count, void **pages, const int *nodes, int *status, int flags,
		       int *sys_errno);

/**
 * sched_setaffinity(2) of thread @p tid (0: the caller) to the @p n cpus @p cpus (ids in [0,
 * NK__MAX_ID]).  Returns 0; NK_EINVAL (no cpu, or an id out of range: sys_errno EINVAL, nothing asked
 * of the kernel), NK_ENOMEM, or the code of the kernel's errno (EINVAL: no allowed cpu in the set,
 * EPERM, ESRCH -> NK_ENOENT).
 */
int nk__os_set_affinity(int tid, const int *cpus, size_t n, int *sys_errno);

/** getcpu(2): the cpu and node the caller runs on now (either may be NULL).  AS-safe.  Returns 0 or NK_ENOSYS. */
int nk__os_getcpu(int *cpu, int *node, int *sys_errno);

/** gettid(2): the caller's thread id (cannot fail).  AS-safe. */
int nk__os_gettid(void);

/* ---- alloc ---- (src/os/linux_alloc.c: NUMA arrays, numa_maps, the kernel version) */

/**
 * Map @p len bytes (a multiple of the page size, > 0) of private anonymous read-write memory, not
 * populated, whose first byte lies at an address that is a multiple of @p align (a multiple of the
 * page size; over-reserves and returns the excess at once), between two inaccessible guard pages.
 * The guards keep the kernel from merging the mapping with a neighbour, so it stays its own line in
 * /proc/PID/numa_maps, and trap overruns.  *out (unmap with nk__os_unmap_aligned) on success.
 * Returns 0; NK_EINVAL (len or align not page multiples, zero, or too large: sys_errno EINVAL),
 * NK_ENOMEM (mmap, mprotect).
 */
int nk__os_map_aligned(size_t len, size_t align, void **out, int *sys_errno);

/** Unmap what nk__os_map_aligned() returned (the same @p len), guards included.  Returns 0 or NK_EINVAL; *sys_errno. */
int nk__os_unmap_aligned(void *addr, size_t len, int *sys_errno);

/** madvise(MADV_NOHUGEPAGE) over the range.  Returns 0, NK_EINVAL (kernel without THP), NK_ENOSYS, NK_ENOMEM; *sys_errno. */
int nk__os_no_huge_pages(void *addr, size_t len, int *sys_errno);

/** numa_maps files larger than this are refused (about two million mappings). */
#define NK__OS_MAX_NUMA_MAPS (256u << 20)

/**
 * File.  Read /proc/PID/numa_maps (@p pid 0: /proc/self) into a malloc'ed, NUL-terminated buffer *out
 * of *len bytes (the caller frees it).  Returns 0; NK_EINVAL (pid < 0), NK_ENOENT (no such process, or
 * it exited while being read), NK_ENOSYS (the process exists but has no numa_maps: a kernel without
 * NUMA), NK_EPERM (ptrace access denied), NK_EIO, NK_ENOMEM; *sys_errno (may be NULL).
 */
int nk__os_read_numa_maps(int pid, char **out, size_t *len, int *sys_errno);

/** Kernel release numbers (uname -r "6.12.3-..." -> 6, 12) into *major, *minor.  Returns 0 or NK_EIO. */
int nk__os_kernel_version(int *major, int *minor);

/* ---- memory ---- (src/os/linux_memory.c) */

/**
 * madvise(MADV_POPULATE_WRITE): fault every page of [addr, addr+len) in as a write would, without
 * changing contents (Linux >= 5.14).  @p addr page aligned.  Returns 0 or the code of the kernel's
 * errno: NK_EINVAL (kernel too old, or a mapping that cannot be populated), NK_EIO (EFAULT: not
 * writable, or a revoked page), NK_ENOMEM (not mapped, or no memory); *sys_errno tells which.
 */
int nk__os_populate_write(void *addr, size_t len, int *sys_errno);

/** 0 when every page of [addr, addr+len) (@p addr page aligned) is mapped, else NK_ENOMEM (sys_errno ENOMEM) or another code. */
int nk__os_range_mapped(const void *addr, size_t len, int *sys_errno);

/**
 * Reserve @p len bytes (a multiple of the page size, > 0) of private anonymous address space whose first
 * byte is a multiple of @p align (a page multiple; the excess is returned at once), not accounted
 * (MAP_NORESERVE): read-write when @p rw, else inaccessible until nk__os_protect opens parts of it (under
 * strict overcommit accounting, a read-write mapping would be charged whole).  For the heaps
 * (src/heap/heap.c).  *out (release with nk__os_release) on success.  Returns 0; NK_EINVAL (len or align
 * not page multiples, zero or too large: sys_errno EINVAL), NK_ENOMEM (mmap).
 */
int nk__os_reserve(size_t len, size_t align, int rw, void **out, int *sys_errno);

/** Unmap what nk__os_reserve() returned (the same @p len).  Returns 0 or NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_release(void *addr, size_t len, int *sys_errno);

/**
 * madvise(MADV_DONTNEED) of [addr, addr+len) (@p addr page aligned): the pages are dropped, read as zero
 * again and keep their memory policy.  AS-safe (the heaps call it inside jemalloc's hooks).  Returns 0 or
 * the code of the kernel's errno; *sys_errno (may be NULL).
 */
int nk__os_discard(void *addr, size_t len, int *sys_errno);

/**
 * Whether the kernel accounts commit strictly (vm.overcommit_memory = 2): 1 yes, 0 no (also when the file
 * cannot be read: the kernel's default heuristic mode).  Cannot fail.
 */
int nk__os_overcommit_strict(void);

/** The soft limit on the process's address space (RLIMIT_AS) in *out, UINT64_MAX when unlimited.  Returns 0 or NK_EIO. */
int nk__os_as_limit(uint64_t *out);

/**
 * File.  Total and free memory of node @p node right now (bytes, from
 * /sys/devices/system/node/nodeN/meminfo of the live system); either pointer may be NULL.  Returns 0,
 * NK_EINVAL (node out of range), NK_ENOENT (no such node), NK_EPARSE, NK_EIO, NK_ENOMEM.
 */
int nk__os_node_meminfo(int node, uint64_t *total, uint64_t *free_bytes);

/* ---- signals / protection ---- (src/os/linux_signals.c, for memory/next_touch.c and the runtimes) */
struct sigaction;

/* Access levels of nk__os_protect (the only two next-touch needs). */
#define NK__PROT_NONE 0 /* no access: every touch faults */
#define NK__PROT_RW 1   /* PROT_READ | PROT_WRITE */

/**
 * mprotect(2) of [addr, addr+len), @p addr page aligned, to @p access (NK__PROT_NONE or NK__PROT_RW).
 * AS-safe.  Returns 0; NK_EINVAL (another access level, or what the kernel refuses), NK_ENOMEM (part
 * of the range unmapped, or splitting the mapping would pass vm.max_map_count), NK_EPERM; *sys_errno.
 */
int nk__os_protect(void *addr, size_t len, int access, int *sys_errno);

/** A SIGSEGV handler: (signal, siginfo_t *, ucontext_t *) as SA_SIGINFO passes them. */
typedef void (*nk__os_fault_fn)(int sig, void *info, void *uctx);

/**
 * Install @p fn as the process's SIGSEGV handler (SA_SIGINFO | SA_ONSTACK | SA_RESTART, empty mask);
 * the handler it replaces goes to *old (may be NULL) so faults that are not the caller's can be
 * chained to it.  Returns 0 or NK_EINVAL; *sys_errno (may be NULL).
 */
int nk__os_fault_install(nk__os_fault_fn fn, struct sigaction *old, int *sys_errno);

/** The installed SIGSEGV disposition into *cur.  Returns 0 or NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_fault_query(struct sigaction *cur, int *sys_errno);

/** 1 when @p fn is the installed SIGSEGV handler, 0 when another one is, or NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_fault_current(nk__os_fault_fn fn, int *sys_errno);

/* What nk__os_fault_decode found. */
enum {
	NK__FAULT_ACCESS = 0,   /* SEGV_ACCERR: a mapped page the access is not allowed on */
	NK__FAULT_UNMAPPED = 1, /* SEGV_MAPERR: no mapping at the address */
	NK__FAULT_SENT = 2,     /* sent by kill/raise/sigqueue: no fault at all */
	NK__FAULT_OTHER = 3,    /* any other si_code (bounds, protection keys, tags) */
};
/** The kind of a SIGSEGV (NK__FAULT_*) from its siginfo_t, and the faulting address in *addr (cannot fail).  AS-safe. */
int nk__os_fault_decode(const void *info, void **addr);

/**
 * Hand a SIGSEGV that is not ours to @p prev, the handler that was installed before: call it as the
 * kernel would (its SA_SIGINFO form or not, its sa_mask blocked meanwhile); for SIG_DFL and SIG_IGN
 * restore the default action so the fault kills the process as it would have without numakit (see
 * nk__os_fault_default).  SA_RESETHAND and SA_NODEFER of @p prev are not emulated.  No return value:
 * sigaction and pthread_sigmask cannot fail with the arguments it passes.  AS-safe (as long as the
 * chained handler is).
 */
void nk__os_fault_chain(int sig, void *info, void *uctx, const struct sigaction *prev);

/**
 * Restore SIG_DFL for SIGSEGV so that returning from the handler lets the fault kill the process (a
 * sent signal is raised again).  Cannot fail (SIGSEGV and SIG_DFL are valid).  AS-safe.
 */
void nk__os_fault_default(const void *info);

/* ---- bench ---- (src/os/linux_bench.c: what `numakit bench` needs of the kernel) */

/**
 * A private anonymous read-write mapping of @p len (> 0) bytes, not yet touched, so that
 * nk__os_mbind() decides where its pages go at first touch; page aligned, in *out (unmap with
 * nk__os_unmap).  Returns 0; NK_EINVAL (len 0), NK_ENOMEM; *sys_errno (may be NULL).
 */
int nk__os_map_anon(size_t len, void **out, int *sys_errno);

/** Unmap what nk__os_map_anon() returned (NULL is a no-op).  Returns 0 or NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_unmap(void *addr, size_t len, int *sys_errno);

/** CLOCK_MONOTONIC in nanoseconds (cannot fail). */
uint64_t nk__os_now_ns(void);

/* ---- perf ---- (src/os/linux_perf.c, for the hw sampler src/profile/hw.c)
 * perf_event_open(2) and its ring buffers.  The caller turns the errno
 * (ENOENT/EOPNOTSUPP "no PMU", EACCES "paranoid", EINVAL "settings") into a
 * message: each takes *sys_errno.
 */
struct perf_event_attr;

/**
 * perf_event_open(2) with PERF_FLAG_FD_CLOEXEC added to @p flags.  Returns the descriptor (>= 0; close
 * with nk__os_perf_close), or the code of the kernel's errno (NK_ENOSYS without the call).
 */
int nk__os_perf_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags,
		     int *sys_errno);

/** mmap(2) @p len bytes (1 + 2^n pages) of perf descriptor @p fd read-write, shared, into *out.  0 or the code (EPERM: mlock limit). */
int nk__os_perf_mmap(int fd, size_t len, void **out, int *sys_errno);

/** Unmap what nk__os_perf_mmap() returned (NULL is a no-op).  0 or NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_perf_munmap(void *addr, size_t len, int *sys_errno);

/** close(2) of a perf descriptor (negative ones are ignored).  0 or NK_EIO; *sys_errno (may be NULL). */
int nk__os_perf_close(int fd, int *sys_errno);

/* ---- process ---- (src/os/linux_process.c: what nk_profile_run needs to start and watch a program) */

/**
 * Find program @p name as execvp would: a name with a '/' is taken as is, otherwise each folder of
 * @p path_var (the PATH value, NULL or "" means "/usr/local/bin:/usr/bin:/bin") is tried for an
 * executable regular file.  *out is malloc'ed (the caller frees it).  Returns 0; NK_EINVAL (no name),
 * NK_ENOENT (not found), NK_EPERM (found but not executable), NK_ENOMEM.
 */
int nk__os_find_program(const char *name, const char *path_var, char **out);

/**
 * Called by nk__os_spawn in the parent after fork, while the child waits before exec (e.g. to attach
 * perf events to it).  Returns the index of the environment the child execs with (0 <= i < n_envp),
 * or a negative NK_E* code to abort: the child is then killed and reaped.
 */
typedef int (*nk__os_spawn_hook)(int pid, void *arg);

/**
 * fork; the child waits on a pipe until @p hook (may be NULL: environment 0) returned, then
 * execve(@p path, @p argv, envps[i]).  @p argv is NULL-terminated with argv[0] set; 1 <= n_envp <=
 * 255.  Returns the child pid (> 0) once it has exec'd; NK_EINVAL (bad argument, or a hook index out of
 * range: sys_errno EINVAL); the code of execve's errno when it could not exec (the child reaped;
 * sys_errno: ENOENT, EACCES -> NK_EPERM, ENOEXEC -> NK_EIO, ...); the hook's negative code as it gave
 * it (child killed and reaped; sys_errno ECANCELED); or the code of fork's or pipe's errno.  The child
 * keeps this process's group, signal mask reset.
 */
int nk__os_spawn(const char *path, char *const argv[], char *const *const *envps, size_t n_envp,
		 nk__os_spawn_hook hook, void *arg, int *sys_errno);

/**
 * Wait for child @p pid (> 0) at most @p timeout_ms (>= 0; 0: just poll).  Returns 1 and the wait
 * status in *status (may be NULL) when it ended, 0 when it still runs; NK_EINVAL (bad argument), or
 * the code of waitpid's errno (ECHILD, not a child of ours or already reaped: NK_EIO); *sys_errno.
 */
int nk__os_wait(int pid, int timeout_ms, int *status, int *sys_errno);

/** Sleep @p ms milliseconds (interruptions resumed; cannot fail). */
void nk__os_sleep_ms(int ms);

/** kill(2).  Returns 0; NK_ENOENT (ESRCH), NK_EPERM, NK_EINVAL; *sys_errno (may be NULL). */
int nk__os_kill(int pid, int sig, int *sys_errno);

/** 1 when process @p pid exists (zombies included), 0 when not (cannot fail). */
int nk__os_alive(int pid);

/**
 * move_pages(2) query of process @p pid (0: the caller): status[i] receives the node of pages[i] or the
 * kernel's -errno (-ENOENT never touched, -EFAULT unmapped).  Needs the same rights as ptrace read
 * access.  Returns 0, or the code of the kernel's errno (NK_ENOENT: ESRCH, the process is gone;
 * NK_EPERM); *sys_errno (may be NULL).  status[] may be partly written on failure.
 */
long nk__os_query_pages(int pid, unsigned long count, void **pages, int *status, int *sys_errno);

/** File.  mkdir(2) with mode 0700; an existing folder is fine.  0, NK_ENOENT, NK_EPERM, NK_EIO (EEXIST: not a folder); *sys_errno. */
int nk__os_mkdir(const char *path, int *sys_errno);

/** File.  Remove @p path, a file or an empty folder.  0, NK_ENOENT, NK_EPERM, NK_EIO (ENOTEMPTY ...); *sys_errno (may be NULL). */
int nk__os_remove(const char *path, int *sys_errno);

/** File.  Size of file @p path (links followed) in *size.  0, NK_ENOENT, NK_EPERM, NK_EIO; *sys_errno (may be NULL). */
int nk__os_file_size(const char *path, uint64_t *size, int *sys_errno);

/** File.  1 when @p path is a folder (links followed), 0 when it is something else; NK_ENOENT, NK_EPERM, NK_EIO; *sys_errno. */
int nk__os_is_dir(const char *path, int *sys_errno);

/**
 * File.  pread(2) of up to @p len bytes at @p off of file @p path into @p buf.  Returns the bytes read
 * (fewer than len at the end of the file); NK_ENOENT, NK_EPERM, NK_EIO (a folder: EISDIR; a failed
 * read: @p buf may then hold part of the bytes); *sys_errno (may be NULL).
 */
long nk__os_read_at(const char *path, uint64_t off, void *buf, size_t len, int *sys_errno);

/** Folder of the loaded object that holds address @p fn (dladdr); *out malloc'ed.  0, NK_ENOENT, NK_ENOMEM. */
int nk__os_object_dir(const void *fn, char **out);

/** CLOCK_REALTIME in nanoseconds (cannot fail). */
uint64_t nk__os_realtime_ns(void);

#endif
