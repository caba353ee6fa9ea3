/* SPDX-License-Identifier: BSD-3-Clause
 * What the program does to its own process: threads it starts (a THREAD record each), fork (a new part in
 * the child), exec and posix_spawn (our environment kept, END how=exec before the image goes), exit and the
 * return from main (the status END reports), dlopen (statics and MAPS again), dlclose (the statics of
 * objects it unloaded untracked, the pagefault sampler held meanwhile).  It decides when a part ends
 * or begins but writes no record itself (part.c does) and touches no sample (ring.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "prof.h"
#include "runtime_impl.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef void (*exit_fn)(int);
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

/* fork()s and vfork children's execs of this process: its END record says how many, so that `numakit
 * profile` waits for children's parts only when there can be any */
_Atomic uint64_t nkp_n_forks;
_Atomic uint32_t nkp_thread_index; /* last index handed out */
static atomic_int exit_status = -1;   /* from exit()/return from main, -1 unknown */

/* ---------------------------------------------------------------- threads */

struct tstart {
	void *(*fn)(void *);
	void *arg;
	uint32_t index;
	int segv_view; /* the creator's view of SIGSEGV in its mask, which the new thread inherits */
};

static void *thread_tramp(void *a)
{
	struct tstart t = *(struct tstart *)a;
	nkp_segv_view = t.segv_view;
	nkp_enter();
	free(a);
	nkp_leave();
	if (nkp.active) {
		nkp_wr_lock();
		if (!nkp_closed)
			nkp_write_thread_locked(t.index);
		nkp_wr_unlock();
		if (nkp.sampler == NK__SAMPLER_TIMER && nkp_timer_thread_begin)
			nkp_timer_thread_begin();
	}
	return t.fn(t.arg);
}

/*
 * glibc's pthread_create blocks every signal before it reads the attribute and the cpu set and signal mask
 * the attribute points to (malloc'd by pthread_attr_setaffinity_np, often on a heap page beside the
 * program's small blocks): a revoked page there cannot fault into the sampler's handler and kills the
 * process.  Hold the pagefault sampler, then touch that memory here, where faults are handled: it stays
 * accessible until the hold ends.  The token, or -1.
 */
static int hold_for_create(pthread_t *th, const pthread_attr_t *attr)
{
	if (nkp.sampler != NK__SAMPLER_PAGEFAULT || !nkp_pf_hold_all)
		return -1;
	int token = nkp_pf_hold_all(0);
	if (token < 0)
		return -1;
	(void)*(volatile pthread_t *)th;
	if (attr) {
		const volatile unsigned char *a = (const volatile unsigned char *)attr;
		(void)a[0];
		(void)a[sizeof *attr - 1];
		unsigned char set[1024]; /* reads all of the attribute's set, whatever its size (EINVAL when larger) */
		(void)pthread_attr_getaffinity_np(attr, sizeof set, (cpu_set_t *)(void *)set);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
		sigset_t mask;
		(void)pthread_attr_getsigmask_np(attr, &mask);
#endif
	}
	return token;
}

NKP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	REAL(pthread_create_fn, pthread_create);
	if (!real_pthread_create)
		return ENOSYS;
	if (!nkp.active || nkp_tls_busy)
		return real_pthread_create(th, attr, fn, arg);
	nkp_enter();
	struct tstart *t = malloc(sizeof *t);
	nkp_leave();
	if (!t)
		return real_pthread_create(th, attr, fn, arg);
	t->fn = fn;
	t->arg = arg;
	t->index = atomic_fetch_add(&nkp_thread_index, 1) + 1;
	t->segv_view = nkp_segv_view;
	int hold = hold_for_create(th, attr);
	int rc = real_pthread_create(th, attr, thread_tramp, t);
	if (hold >= 0)
		nkp_pf_io_end(hold);
	if (rc) {
		nkp_enter();
		free(t);
		nkp_leave();
	}
	return rc;
}

/* ---------------------------------------------------------------- fork */

static void fork_prepare(void)
{
	if (!nkp.active)
		return;
	atomic_fetch_add(&nkp_n_forks, 1);
	nkp_alloc_fork_prepare();
	nkp_wr_lock();
}

static void fork_parent(void)
{
	if (!nkp.active)
		return;
	nkp_wr_unlock();
	nkp_alloc_fork_parent();
}

static void fork_child(void)
{
	if (!nkp.active)
		return;
	nkp_tls_tid = 0;
	/* A thread of the parent may have held them: the writer lock, the signal table's, the phase table's. */
	atomic_store(&nkp_wr_owner, 0);
	nkp_signals_after_fork();
	nkp_hooks_after_fork();
	nkp_alloc_fork_child();
	nkp_part_drop_inherited();
	if (atomic_load(&nkp_closed)) {
		nkp.active = 0;
		return;
	}
	nkp_ring_after_fork();
	atomic_store(&nkp_thread_index, 0);
	atomic_store(&exit_status, -1);
	nkp_wr_lock();
	if (nkp_begin_part()) {
		nkp_wr_unlock();
		nkp.active = 0;
		atomic_store(&nkp_closed, 1);
		return;
	}
	nkp_wr_unlock();
	nkp_alloc_replay(); /* the inherited blocks, as ALLOC records of this part */
	nkp_flusher_start();
	if (nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_after_fork)
		nkp_pf_after_fork();
	else if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_after_fork)
		nkp_trace_after_fork();
	else if (nkp.sampler == NK__SAMPLER_TIMER && nkp_timer_after_fork)
		nkp_timer_after_fork();
}

/* ---------------------------------------------------------------- exec */

extern char **environ;
static char **keep_env; /* NK_PROF_* and LD_PRELOAD entries at start, malloc'ed copies */
static size_t n_keep_env;

void nkp_save_env(void)
{
	size_t n = 0;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "NK_PROF_", 8) || !strncmp(*e, "LD_PRELOAD=", 11))
			n++;
	keep_env = calloc(n + 1, sizeof *keep_env);
	if (!keep_env)
		return;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "NK_PROF_", 8) || !strncmp(*e, "LD_PRELOAD=", 11))
			if ((keep_env[n_keep_env] = strdup(*e)))
				n_keep_env++;
}

static size_t env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

/*
 * @p envp plus what it lacks of keep_env into @p r (room for env_count(envp) + n_keep_env + 1 entries,
 * borrowed), or NULL when nothing is missing.  No allocation: it also runs in vfork children.
 */
/* Whether envp[0..n) sets the variable of @p kv ("NAME=value"). */
static int env_has(char *const envp[], size_t n, const char *kv)
{
	size_t kl = strcspn(kv, "=") + 1;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(envp[i], kv, kl))
			return 1;
	return 0;
}

static char **env_with_ours(char *const envp[], char **r)
{
	size_t n = env_count(envp), add = 0;
	for (size_t k = 0; k < n_keep_env; k++)
		add += !env_has(envp, n, keep_env[k]);
	if (!add)
		return NULL;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		r[m++] = envp[i];
	for (size_t k = 0; k < n_keep_env; k++)
		if (!env_has(envp, n, keep_env[k]))
			r[m++] = keep_env[k];
	r[m] = NULL;
	return r;
}

static int do_execve(const char *path, char *const argv[], char *const envp[], int search)
{
	typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
	REAL(execve_fn, execve);
	REAL(execvpe_fn, execvpe);
	char *room[nkp.active ? env_count(envp) + n_keep_env + 1 : 1];
	char **env2 = nkp.active ? env_with_ours(envp, room) : NULL;
	char *const *use = env2 ? env2 : envp;
	if (nkp.active && !nkp_mine())
		atomic_fetch_add(&nkp_n_forks, 1); /* a vfork child (it shares the parent's memory): a child to wait for */
	nkp_part_exec_begin();
	int rc = search ? real_execvpe(path, argv, use) : real_execve(path, argv, use);
	nkp_part_exec_failed();
	return rc;
}

NKP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return do_execve(path, argv, envp, 0);
}

NKP_EXPORT int execv(const char *path, char *const argv[])
{
	return do_execve(path, argv, environ, 0);
}

NKP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return do_execve(file, argv, envp, 1);
}

NKP_EXPORT int execvp(const char *file, char *const argv[])
{
	return do_execve(file, argv, environ, 1);
}

/* execl*: collect the arguments (on the stack, as glibc does) and call the v forms above. */
#define COLLECT_ARGS(arg0, ap, argv)                                                                                \
	size_t argc_ = 1;                                                                                           \
	va_start(ap, arg0);                                                                                         \
	while (va_arg(ap, char *))                                                                                  \
		argc_++;                                                                                            \
	va_end(ap);                                                                                                 \
	char *argv[argc_ + 1];                                                                                      \
	argv[0] = (char *)(arg0);                                                                                   \
	va_start(ap, arg0);                                                                                         \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                                                      \
		argv[i_] = va_arg(ap, char *)

NKP_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, av);
	va_end(ap);
	return do_execve(path, av, environ, 0);
}

NKP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, av);
	va_end(ap);
	return do_execve(file, av, environ, 1);
}

NKP_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, av);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return do_execve(path, av, envp, 0);
}

/* posix_spawn, posix_spawnp, system, popen: the child reads the path, arguments, environment and file actions
 * with every signal blocked (see hold_for_create), from memory we cannot all name: every page given back and
 * none revoked until the call returns.  The token for nkp_pf_io_end, or -1. */
static int hold_for_spawn(void)
{
	return nkp.active && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_hold_all ? nkp_pf_hold_all(1) : -1;
}

/* posix_spawn* do not replace this process: only make sure the child keeps our environment. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			char *const[], char *const[]);

static int do_spawn(spawn_fn fn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		    const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	if (!fn)
		return ENOSYS;
	char *room[nkp.active ? env_count(envp) + n_keep_env + 1 : 1];
	char **env2 = nkp.active ? env_with_ours(envp, room) : NULL;
	int hold = hold_for_spawn();
	int rc = fn(pid, path, fa, at, argv, env2 ? env2 : envp);
	if (hold >= 0)
		nkp_pf_io_end(hold);
	return rc;
}

NKP_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(spawn_fn, posix_spawn);
	return do_spawn(real_posix_spawn, pid, path, fa, at, argv, envp);
}

NKP_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(spawn_fn, posix_spawnp);
	return do_spawn(real_posix_spawnp, pid, file, fa, at, argv, envp);
}

/* system() and popen() spawn through glibc's internal posix_spawn, which the interposers above do not see:
 * the same hold around them (system's lasts until the command has run: no page is revoked meanwhile). */
NKP_EXPORT int system(const char *cmd)
{
	typedef int (*system_fn)(const char *);
	REAL(system_fn, system);
	if (!real_system)
		return -1;
	int hold = hold_for_spawn();
	int rc = real_system(cmd);
	if (hold >= 0)
		nkp_pf_io_end(hold);
	return rc;
}

NKP_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	typedef FILE *(*popen_fn)(const char *, const char *);
	REAL(popen_fn, popen);
	if (!real_popen) {
		errno = ENOSYS;
		return NULL;
	}
	int hold = hold_for_spawn();
	FILE *f = real_popen(cmd, mode);
	int e = errno;
	if (hold >= 0)
		nkp_pf_io_end(hold);
	errno = e;
	return f;
}

/* ---------------------------------------------------------------- exit */

NKP_EXPORT void exit(int status)
{
	REAL(exit_fn, exit);
	atomic_store(&exit_status, status & 0xff);
	real_exit(status);
	__builtin_unreachable();
}

static void (*real_exit_now)(int); /* libc's _exit, resolved by the constructor */

/* _exit is AS-safe and often called from signal handlers and fork children: no MAPS (it allocates), the
 * writer lock only tried, and libc's _exit resolved beforehand (no dlsym here). */
NKP_EXPORT void _exit(int status)
{
	if (nkp.active && nkp_mine() && !atomic_load(&nkp_closed)) {
		if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
			nkp_trace_stop();
		nkp_part_end_async("exit", status & 0xff, 0);
	}
	if (real_exit_now)
		real_exit_now(status);
	for (;;)
		syscall(SYS_exit_group, status); /* only if dlsym found no _exit */
}

NKP_EXPORT void _Exit(int status)
{
	_exit(status);
	__builtin_unreachable();
}

/* Return from main: wrap main to see its status (libc then calls exit internally). */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn user_main;
NKP_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
				 void (*rtld_fini)(void), void *stack_end);

static int main_wrapper(int argc, char **argv, char **envp)
{
	int rc = user_main(argc, argv, envp);
	atomic_store(&exit_status, rc & 0xff);
	return rc;
}

NKP_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
				 void (*rtld_fini)(void), void *stack_end)
{
	REAL(start_main_fn, __libc_start_main);
	user_main = main;
	return real___libc_start_main(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

static void at_exit_handler(void)
{
	nkp_close_part("exit", atomic_load(&exit_status), 0);
}

__attribute__((destructor)) static void nkp_fini(void)
{
	nkp_close_part("exit", atomic_load(&exit_status), 0);
}

void nkp_process_resolve(void)
{
	real_exit_now = (void (*)(int))nkp_real("_exit"); /* here: dlsym is not AS-safe, _exit is */
}

void nkp_process_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit_handler);
}

/* ---------------------------------------------------------------- dlopen */

NKP_EXPORT void *dlopen(const char *file, int mode)
{
	REAL(dlopen_fn, dlopen);
	void *h = real_dlopen(file, mode);
	if (h && nkp.active && !nkp_tls_busy) {
		nkp_alloc_rescan();
		if (nkp.sampler == NK__SAMPLER_PAGEFAULT)
			nkp_callers_scan_objects();
		nkp_write_maps();
	}
	return h;
}

/*
 * dlclose may unmap objects whose static segments we track: the pagefault sampler gives back every page it
 * revoked and revokes none while the loader unmaps (a page of ours left revoked there would be a stale key
 * over whatever is mapped there next), then the segments of the objects gone are untracked.
 */
NKP_EXPORT int dlclose(void *h)
{
	REAL(dlclose_fn, dlclose);
	if (!real_dlclose)
		return -1;
	if (!nkp.active || nkp_tls_busy)
		return real_dlclose(h);
	int hold = nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_hold_all ? nkp_pf_hold_all(1) : -1;
	int rc = real_dlclose(h);
	nkp_alloc_unloaded();
	if (hold >= 0)
		nkp_pf_io_end(hold);
	return rc;
}
