/* SPDX-License-Identifier: BSD-3-Clause
 * Starting and watching another program (nk_profile_run): PATH lookup, a
 * fork whose child waits for the parent before exec (the hw sampler attaches
 * perf events to it in between), waiting with a timeout, residency queries of
 * another process, and the few file operations on the parts folder.  Errors
 * per os.h: NK_E* codes, the errno in *sys_errno.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"

static int executable_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	return access(path, X_OK) == 0 ? 0 : -errno;
}

int nk__os_find_program(const char *name, const char *path_var, char **out)
{
	int seen_denied = 0;

	if (!name || !*name || !out)
		return NK_EINVAL;
	if (strchr(name, '/')) {
		int rc = executable_file(name);
		if (rc)
			return rc == -ENOENT || rc == -ENOTDIR ? NK_ENOENT : NK_EPERM;
		*out = strdup(name);
		return *out ? 0 : NK_ENOMEM;
	}
	if (!path_var || !*path_var)
		path_var = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path_var;;) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);
		size_t len = (dlen ? dlen : 1) + 1 + strlen(name) + 1;
		char *cand = malloc(len);

		if (!cand)
			return NK_ENOMEM;
		/* An empty PATH element is the current folder, as for execvp. */
		if (dlen)
			snprintf(cand, len, "%.*s/%s", (int)dlen, p, name);
		else
			snprintf(cand, len, "./%s", name);
		int rc = executable_file(cand);
		if (rc == 0) {
			*out = cand;
			return 0;
		}
		free(cand);
		if (rc == -EACCES)
			seen_denied = 1;
		if (!end)
			break;
		p = end + 1;
	}
	return seen_denied ? NK_EPERM : NK_ENOENT;
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (int)got;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int nk__os_spawn(const char *path, char *const argv[], char *const *const *envps, size_t n_envp,
		 nk__os_spawn_hook hook, void *arg, int *sys_errno)
{
	int go[2], report[2];
	pid_t pid;

	if (!path || !argv || !argv[0] || !envps || n_envp == 0 || n_envp > 255)
		return nk__os_sys(EINVAL, sys_errno);
	if (pipe2(go, O_CLOEXEC))
		return nk__os_sys(errno, sys_errno);
	if (pipe2(report, O_CLOEXEC)) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return nk__os_sys(e, sys_errno);
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		close(report[0]);
		close(report[1]);
		return nk__os_sys(e, sys_errno);
	}
	if (pid == 0) {
		/* Child: only async-signal-safe calls until exec. */
		unsigned char which = 0;
		sigset_t none;
		int e;

		close(go[1]);
		close(report[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (read_full(go[0], &which, 1) != 1 || which >= n_envp)
			_exit(127); /* the parent gave up */
		execve(path, argv, envps[which]);
		e = errno;
		(void)!write(report[1], &e, sizeof e);
		_exit(127);
	}
	close(go[0]);
	close(report[1]);

	int which = hook ? hook(pid, arg) : 0;
	if (which < 0 || (size_t)which >= n_envp) {
		close(go[1]); /* EOF: the child exits */
		close(report[0]);
		kill(pid, SIGKILL);
		reap(pid);
		return which < 0 ? (int)nk__os_ret(which, ECANCELED, sys_errno) : nk__os_sys(EINVAL, sys_errno);
	}
	unsigned char b = (unsigned char)which;
	ssize_t w;
	do
		w = write(go[1], &b, 1);
	while (w < 0 && errno == EINTR);
	close(go[1]);
	/* The report pipe closes on exec (O_CLOEXEC): EOF means exec succeeded. */
	int child_errno = 0;
	int n = read_full(report[0], &child_errno, sizeof child_errno);
	close(report[0]);
	if (n == (int)sizeof child_errno) {
		reap(pid);
		return nk__os_sys(child_errno ? child_errno : EIO, sys_errno);
	}
	return nk__os_ok((int)pid, sys_errno);
}

int nk__os_wait(int pid, int timeout_ms, int *status, int *sys_errno)
{
	struct timespec slice = { 0, 5 * 1000000L };
	int waited = 0;

	if (pid <= 0 || timeout_ms < 0)
		return nk__os_sys(EINVAL, sys_errno);
	for (;;) {
		int st = 0;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			if (status)
				*status = st;
			return nk__os_ok(1, sys_errno);
		}
		if (r < 0 && errno != EINTR)
			return errno == ECHILD ? (int)nk__os_ret(NK_EIO, ECHILD, sys_errno) : nk__os_sys(errno, sys_errno);
		if (waited >= timeout_ms)
			return nk__os_ok(0, sys_errno);
		/* A short sleep rather than SIGCHLD: the library installs no signal handlers. */
		nanosleep(&slice, NULL);
		waited += 5;
	}
}

void nk__os_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int nk__os_kill(int pid, int sig, int *sys_errno)
{
	return kill(pid, sig) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_alive(int pid)
{
	if (pid <= 0)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}

long nk__os_query_pages(int pid, unsigned long count, void **pages, int *status, int *sys_errno)
{
#ifdef SYS_move_pages
	long rc = syscall(SYS_move_pages, pid, count, pages, NULL, status, 0);
	return rc < 0 ? nk__os_sys(errno, sys_errno) : nk__os_ret(rc, 0, sys_errno);
#else
	(void)pid;
	(void)count;
	(void)pages;
	(void)status;
	return nk__os_sys(ENOSYS, sys_errno);
#endif
}

/* A file call's failure (os.h's files table). */
static int file_fail(int e, int *sys_errno)
{
	return (int)nk__os_ret(nk__os_file_code(e), e, sys_errno);
}

int nk__os_mkdir(const char *path, int *sys_errno)
{
	struct stat st;

	if (mkdir(path, 0700) == 0)
		return nk__os_ok(0, sys_errno);
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return nk__os_ok(0, sys_errno);
	return file_fail(errno, sys_errno);
}

int nk__os_remove(const char *path, int *sys_errno)
{
	return remove(path) ? file_fail(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_file_size(const char *path, uint64_t *size, int *sys_errno)
{
	struct nk__os_stat st;
	int rc = nk__os_stat(path, &st, sys_errno);

	if (rc)
		return rc;
	*size = st.size;
	return 0;
}

int nk__os_is_dir(const char *path, int *sys_errno)
{
	struct nk__os_stat st;
	int rc = nk__os_stat(path, &st, sys_errno);

	return rc ? rc : st.is_dir;
}

long nk__os_read_at(const char *path, uint64_t off, void *buf, size_t len, int *sys_errno)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return file_fail(errno, sys_errno);
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			/* EISDIR, EIO, EINVAL: the file exists but cannot be read */
			return (int)nk__os_ret(NK_EIO, e, sys_errno);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return nk__os_ret((long)got, 0, sys_errno);
}

int nk__os_object_dir(const void *fn, char **out)
{
	Dl_info info;
	char *dir, *slash;

	if (!dladdr(fn, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
		return NK_ENOENT;
	dir = realpath(info.dli_fname, NULL);
	if (!dir)
		dir = strdup(info.dli_fname);
	if (!dir)
		return NK_ENOMEM;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	*out = dir;
	return 0;
}

uint64_t nk__os_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
