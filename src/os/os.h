/* SPDX-License-Identifier: BSD-3-Clause
 * The OS layer contract.  Everything numakit asks of the kernel goes through
 * here: files of /sys and /proc (always relative to an fsroot, so captured
 * machine dumps exercise the same code as the live system) and system calls.
 * Functions return 0 or a negative NK_E* code; they decide nothing.
 */
#ifndef NK_OS_H
#define NK_OS_H

#include <stddef.h>

#include "numakit.h"
#include "util/list.h"

/** Files larger than this are refused (sysfs values are tiny; /proc/cpuinfo on 1k cpus is < 1 MiB). */
#define NK__OS_MAX_FILE (8u << 20)

/**
 * Read the file @p path (absolute, e.g. "/sys/devices/system/node/online")
 * under @p root ("/" or NULL for the live system) into a malloc'ed buffer.
 * Embedded NUL bytes (seen in captured dumps) end the text: the result is a C
 * string.  Returns 0, NK_ENOENT (no such file), NK_EIO (unreadable/too large),
 * NK_ENOMEM.
 */
int nk__os_read_file(const char *root, const char *path, char **out);

/**
 * Read a whole user file (a machine file, a plan) byte for byte, NULs
 * included, refusing more than @p max bytes.  *out is NUL-terminated for
 * convenience; *len is the byte count.  Returns 0, NK_ENOENT, NK_EPERM,
 * NK_EIO (unreadable, a directory, larger than max), NK_ENOMEM; *sys_errno
 * (may be NULL) receives errno for messages.
 */
int nk__os_read_whole(const char *path, size_t max, char **out, size_t *len, int *sys_errno);

/**
 * Open @p path read-only for a reader that needs a descriptor (libelf maps ELF and debug files itself):
 * close-on-exec, never a controlling terminal, never blocking on a FIFO.  Returns the descriptor, or -1
 * with errno set.  The caller closes it.
 */
int nk__os_open_read(const char *path);

/**
 * Replace @p path atomically with @p len bytes: write a sibling temporary
 * file (mode 0666 less the umask), fsync, rename over.  A failure leaves the
 * old file intact and no temporary behind.  Returns 0 or NK_EIO/NK_ENOMEM;
 * *stage names the step that failed ("create", "write", "replace") and
 * *sys_errno its errno.
 */
int nk__os_write_atomic(const char *path, const void *data, size_t len, const char **stage, int *sys_errno);

/** 1 when @p path exists under @p root, 0 otherwise. */
int nk__os_exists(const char *root, const char *path);

/**
 * List the entries of directory @p path under @p root whose names start with
 * @p prefix; "." and ".." are skipped.  *names is a malloc'ed array of
 * malloc'ed strings (free with nk__os_free_names).  Returns 0, NK_ENOENT,
 * NK_EIO, NK_ENOMEM.
 */
int nk__os_list_dir(const char *root, const char *path, const char *prefix, char ***names, size_t *n);
void nk__os_free_names(char **names, size_t n);

/** Base page size of the running system. */
unsigned long nk__os_page_size(void);

/** Cpus the calling thread may run on (sched_getaffinity). Returns 0, NK_ENOSYS, NK_ENOMEM. */
int nk__os_affinity(nk__ilist *cpus);

/* ------------------------------------------------------------------ syscalls
 * Thin wrappers, one per system call.  They return 0 (or a count) on success
 * and -errno on failure, untranslated: the caller knows the context needed
 * for a useful message.  -ENOSYS where the kernel or libc lacks the call.
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

/** mbind(2) over [addr, addr+len) with the node set @p nodes (ids, any order). */
int nk__os_mbind(void *addr, size_t len, int mode, const int *nodes, size_t n, unsigned flags);

/** Node ids nk__os_mbind_node() takes: below 1024, the kernel's usual MAX_NUMNODES. */
#define NK__OS_MBIND_NODE_MAX 1024
/**
 * mbind(2) of [addr, addr+len) to the one node @p node, with no allocation and no lock (its mask on the
 * stack): for the runtimes, which call it inside the program's allocator (preload/advice/arena.c, inside
 * jemalloc's hooks).  -EINVAL for a node outside [0, NK__OS_MBIND_NODE_MAX).
 */
int nk__os_mbind_node(void *addr, size_t len, int mode, int node);

/** set_mempolicy(2) for the calling thread. */
int nk__os_set_mempolicy(int mode, const int *nodes, size_t n);

/**
 * get_mempolicy(2).  With NK__MPOL_F_ADDR|NK__MPOL_F_NODE, *mode receives the
 * node of the page at @p addr.  @p nodes (may be NULL) receives the node set.
 */
int nk__os_get_mempolicy(int *mode, nk__ilist *nodes, void *addr, unsigned flags);

/**
 * move_pages(2) on the calling process.  @p nodes NULL queries: status[i]
 * receives the node of pages[i] or -errno (-ENOENT: never touched).  With
 * nodes, moves and status[i] receives the node reached or -errno.
 * Returns 0, a positive count of pages not moved, or -errno.
 */
long nk__os_move_pages(unsigned long count, void **pages, const int *nodes, int *status, int flags);

/** sched_setaffinity(2) of thread @p tid (0 = caller) to @p cpus. */
int nk__os_set_affinity(int tid, const int *cpus, size_t n);

/** getcpu(2): the cpu and node the caller runs on now (either may be NULL). */
int nk__os_getcpu(int *cpu, int *node);

/** gettid(2). */
int nk__os_gettid(void);

/* ---- alloc ---- */

/**
 * Map @p len bytes (a multiple of the page size, > 0) of private anonymous
 * read-write memory, not populated, whose first byte lies at an address
 * that is a multiple of @p align (a multiple of the page size; over-reserves
 * and returns the excess at once), between two inaccessible guard pages.
 * The guards keep the kernel from merging the mapping with a neighbour, so
 * it stays its own line in /proc/PID/numa_maps, and trap overruns.
 * Returns 0 or -errno.
 */
int nk__os_map_aligned(size_t len, size_t align, void **out);

/** Unmap what nk__os_map_aligned() returned, guards included.  Returns 0 or -errno. */
int nk__os_unmap_aligned(void *addr, size_t len);

/** madvise(MADV_NOHUGEPAGE) over the range.  Returns 0 or -errno (-EINVAL: kernel without THP). */
int nk__os_no_huge_pages(void *addr, size_t len);

/** numa_maps files larger than this are refused (about two million mappings). */
#define NK__OS_MAX_NUMA_MAPS (256u << 20)

/**
 * Read /proc/PID/numa_maps (@p pid 0: /proc/self) into a malloc'ed,
 * NUL-terminated buffer of *len bytes.  Returns 0, NK_ENOENT (no such
 * process, or it exited while being read), NK_ENOSYS (the process exists but
 * has no numa_maps: a kernel without NUMA), NK_EPERM (ptrace access denied),
 * NK_EIO, NK_ENOMEM; *sys_errno (may be NULL) receives errno for messages.
 */
int nk__os_read_numa_maps(int pid, char **out, size_t *len, int *sys_errno);

/** Kernel release numbers (uname -r "6.12.3-..." -> 6, 12).  Returns 0 or NK_EIO. */
int nk__os_kernel_version(int *major, int *minor);

/* ---- memory ---- (src/os/linux_memory.c) */

/**
 * madvise(MADV_POPULATE_WRITE): fault every page of [addr, addr+len) in as a
 * write would, without changing contents (Linux >= 5.14).  @p addr page
 * aligned.  Returns 0 or -errno (-EINVAL: kernel too old or a mapping that
 * cannot be populated; -EFAULT/-ENOMEM: not writable, not mapped, no memory).
 */
int nk__os_populate_write(void *addr, size_t len);

/** 0 when every page of [addr, addr+len) (@p addr page aligned) is mapped, else -ENOMEM (or -errno). */
int nk__os_range_mapped(const void *addr, size_t len);

/**
 * Total and free memory of node @p node right now (bytes, from
 * /sys/devices/system/node/nodeN/meminfo of the live system); either pointer
 * may be NULL.  Returns 0, NK_ENOENT (no such node), NK_EPARSE, NK_EIO, NK_ENOMEM.
 */
int nk__os_node_meminfo(int node, uint64_t *total, uint64_t *free_bytes);
/* ---- signals / protection ---- (src/os/linux_signals.c, for memory/next_touch.c)
 * Functions marked AS-safe are async-signal-safe: they make system calls and
 * nothing else (no locks, no allocation) and may run inside a SIGSEGV handler.
 */
struct sigaction;

/* Access levels of nk__os_protect (the only two next-touch needs). */
#define NK__PROT_NONE 0 /* no access: every touch faults */
#define NK__PROT_RW 1   /* PROT_READ | PROT_WRITE */

/** mprotect(2) of [addr, addr+len), @p addr page aligned.  0 or -errno.  AS-safe. */
int nk__os_protect(void *addr, size_t len, int access);

/** A SIGSEGV handler: (signal, siginfo_t *, ucontext_t *) as SA_SIGINFO passes them. */
typedef void (*nk__os_fault_fn)(int sig, void *info, void *uctx);

/**
 * Install @p fn as the process's SIGSEGV handler (SA_SIGINFO | SA_ONSTACK |
 * SA_RESTART, empty mask); the handler it replaces goes to *old (may be NULL)
 * so faults that are not the caller's can be chained to it.  0 or -errno.
 */
int nk__os_fault_install(nk__os_fault_fn fn, struct sigaction *old);

/** The installed SIGSEGV disposition into *cur.  0 or -errno. */
int nk__os_fault_query(struct sigaction *cur);

/** 1 when @p fn is the installed SIGSEGV handler, 0 when another one is, or -errno. */
int nk__os_fault_current(nk__os_fault_fn fn);

/* What nk__os_fault_decode found. */
enum {
	NK__FAULT_ACCESS = 0,   /* SEGV_ACCERR: a mapped page the access is not allowed on */
	NK__FAULT_UNMAPPED = 1, /* SEGV_MAPERR: no mapping at the address */
	NK__FAULT_SENT = 2,     /* sent by kill/raise/sigqueue: no fault at all */
	NK__FAULT_OTHER = 3,    /* any other si_code (bounds, protection keys, tags) */
};
/** The kind of a SIGSEGV from its siginfo_t, and the faulting address in *addr.  AS-safe. */
int nk__os_fault_decode(const void *info, void **addr);

/**
 * Hand a SIGSEGV that is not ours to @p prev, the handler that was installed
 * before: call it as the kernel would (its SA_SIGINFO form or not, its
 * sa_mask blocked meanwhile); for SIG_DFL and SIG_IGN restore the default
 * action so the fault kills the process as it would have without numakit
 * (see nk__os_fault_default).  SA_RESETHAND and SA_NODEFER of @p prev are not
 * emulated.  AS-safe (as long as the chained handler is).
 */
void nk__os_fault_chain(int sig, void *info, void *uctx, const struct sigaction *prev);

/**
 * Restore SIG_DFL for SIGSEGV so that returning from the handler lets the
 * fault kill the process (a sent signal is raised again).  AS-safe.
 */
void nk__os_fault_default(const void *info);


/* ---- bench ---- (src/os/linux_bench.c: what `numakit bench` needs of the kernel) */

#include <stdint.h>

/**
 * A private anonymous read-write mapping of @p len bytes, not yet touched, so
 * that nk__os_mbind() decides where its pages go at first touch.  Page
 * aligned.  Returns 0 or -errno (-ENOMEM).
 */
int nk__os_map_anon(size_t len, void **out);

/** Unmap what nk__os_map_anon() returned (NULL is a no-op).  Returns 0 or -errno. */
int nk__os_unmap(void *addr, size_t len);

/** CLOCK_MONOTONIC in nanoseconds. */
uint64_t nk__os_now_ns(void);


/* ---- perf ---- (src/os/linux_perf.c, for the hw sampler src/profile/hw.c)
 * perf_event_open(2) and its ring buffers.  -errno returns, untranslated:
 * the caller turns ENOENT/EOPNOTSUPP ("no PMU") or EACCES ("paranoid") into
 * a message.
 */
struct perf_event_attr;

/** perf_event_open(2) with PERF_FLAG_FD_CLOEXEC added to @p flags.  The fd, or -errno (-ENOSYS without the call). */
int nk__os_perf_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags);

/** mmap(2) @p len bytes (1 + 2^n pages) of perf fd @p fd read-write, shared.  0 or -errno. */
int nk__os_perf_mmap(int fd, size_t len, void **out);

/** Unmap what nk__os_perf_mmap() returned (NULL is a no-op).  0 or -errno. */
int nk__os_perf_munmap(void *addr, size_t len);

/** close(2) of a perf fd (negative fds are ignored).  0 or -errno. */
int nk__os_perf_close(int fd);
/* ---- process ---- (src/os/linux_process.c: what nk_profile_run needs to start and watch a program) */

/**
 * Find program @p name as execvp would: a name with a '/' is taken as is,
 * otherwise each folder of @p path_var (the PATH value, NULL or "" means
 * "/usr/local/bin:/usr/bin:/bin") is tried for an executable regular file.
 * *out is malloc'ed.  Returns 0, NK_ENOENT (not found), NK_EPERM (found but
 * not executable), NK_ENOMEM.
 */
int nk__os_find_program(const char *name, const char *path_var, char **out);

/**
 * Called by nk__os_spawn in the parent after fork, while the child waits
 * before exec (e.g. to attach perf events to it).  Returns the index of the
 * environment the child execs with (0 <= i < n_envp), or a negative NK_E*
 * code to abort: the child is then killed and reaped.
 */
typedef int (*nk__os_spawn_hook)(int pid, void *arg);

/**
 * fork; the child waits on a pipe until @p hook (may be NULL: environment 0)
 * returned, then execve(@p path, @p argv, envps[i]).  Returns the child pid
 * (> 0) once it has exec'd, -errno of execve when it could not (the child
 * is reaped), the hook's negative code (child killed and reaped), or -errno
 * of fork/pipe.  The child keeps this process's group, signal mask reset.
 */
int nk__os_spawn(const char *path, char *const argv[], char *const *const *envps, size_t n_envp,
		 nk__os_spawn_hook hook, void *arg);

/**
 * Wait for child @p pid at most @p timeout_ms (0: just poll).  Returns 1 and
 * the wait status in *status when it ended, 0 when it still runs, -errno.
 */
int nk__os_wait(int pid, int timeout_ms, int *status);

/** Sleep @p ms milliseconds (interruptions resumed). */
void nk__os_sleep_ms(int ms);

/** kill(2).  0 or -errno. */
int nk__os_kill(int pid, int sig);

/** 1 when process @p pid exists (zombies included), 0 when not. */
int nk__os_alive(int pid);

/**
 * move_pages(2) query of process @p pid (0 = caller): status[i] receives the
 * node of pages[i] or -errno (-ENOENT never touched, -EFAULT unmapped).
 * Needs the same rights as ptrace read access.  Returns 0 or -errno.
 */
long nk__os_query_pages(int pid, unsigned long count, void **pages, int *status);

/** mkdir(2) with mode 0700; an existing folder is fine.  0 or -errno. */
int nk__os_mkdir(const char *path);

/** Remove @p path, a file or an empty folder.  0 or -errno. */
int nk__os_remove(const char *path);

/** Size of file @p path in *size.  0 or -errno. */
int nk__os_file_size(const char *path, uint64_t *size);

/** 1 when @p path is a folder (following links), 0 when it is something else, -errno when stat fails. */
int nk__os_is_dir(const char *path);

/** pread(2) of up to @p len bytes at @p off of file @p path.  Bytes read or -errno. */
long nk__os_read_at(const char *path, uint64_t off, void *buf, size_t len);

/** Folder of the loaded object that holds address @p fn (dladdr); malloc'ed.  0, NK_ENOENT, NK_ENOMEM. */
int nk__os_object_dir(const void *fn, char **out);

/** CLOCK_REALTIME in nanoseconds. */
uint64_t nk__os_realtime_ns(void);

#endif
