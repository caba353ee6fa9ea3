/* SPDX-License-Identifier: BSD-3-Clause
 * Program run under libnumakit_prof.so by check_runtime.py: each argv[1]
 * is one scenario of the runtime (threads, allocations, fork, exec, ways to
 * end, the program's own signal handlers).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char big_bss[1 << 20];              /* a static: must be registered (ALLOC kind STATIC) */
static char big_data[1 << 16] = { 1, 2, 3 }; /* .data */

static void *worker(void *arg)
{
	volatile uint64_t s = 0;
	for (int i = 0; i < 100000; i++)
		s += (uint64_t)i * (uintptr_t)arg;
	return NULL;
}

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++) {
		void *volatile p = malloc(1 << 17);
		void *volatile q = malloc(64);
		free(p);
		free(q);
		if (i % 50 == 0) {
			void *m = mmap(NULL, 1 << 17, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m != MAP_FAILED)
				munmap(m, 1 << 17);
		}
	}
	return NULL;
}

__attribute__((noinline)) static void *alloc_here(size_t n)
{
	void *p = malloc(n);
	memset(p, 1, n);
	return p;
}

static sigjmp_buf jb;
static volatile sig_atomic_t handled;

static void on_segv_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	handled = sig == SIGSEGV && si && si->si_addr == (void *)16;
	siglongjmp(jb, 1);
}

static void on_segv(int sig)
{
	handled = sig == SIGSEGV;
	siglongjmp(jb, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	_exit(5);
}

static int segv_once(void)
{
	handled = 0;
	if (!sigsetjmp(jb, 1))
		*(volatile int *)16 = 1;
	return handled;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "threads")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
				return 2;
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (!strcmp(m, "stress")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, churn, NULL))
				return 2;
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (!strcmp(m, "alloc")) {
		void *p = alloc_here(1 << 20);
		void *small = malloc(100);
		void *c = calloc(1, 200000);
		void *q = NULL;
		if (posix_memalign(&q, 4096, 1 << 18))
			return 2;
		void *mm = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mm == MAP_FAILED)
			return 2;
		void *r0 = malloc(1 << 17);
		uintptr_t r0_addr = (uintptr_t)r0; /* printed after realloc: only the number */
		void *r = realloc(r0, 1 << 19);
		if (!r)
			return 2;
		printf("%lu %lu %lu %lu %lu %lu %lu %lu\n", (unsigned long)(uintptr_t)p, (unsigned long)(uintptr_t)small,
		       (unsigned long)(uintptr_t)c, (unsigned long)(uintptr_t)q, (unsigned long)(uintptr_t)mm,
		       (unsigned long)(uintptr_t)big_bss, (unsigned long)r0_addr, (unsigned long)(uintptr_t)r);
		free(r);
		fflush(stdout);
		big_bss[5] = big_data[1];
		free(p);
		free(small);
		free(c);
		free(q);
		munmap(mm, 1 << 20);
		return 0;
	}
	if (!strcmp(m, "fork")) {
		void *p = alloc_here(1 << 20);
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0) {
			free(p);
			exit(3);
		}
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
			return 4;
		printf("%d\n", (int)c);
		return 0;
	}
	if (!strcmp(m, "exec")) {
		execl("/proc/self/exe", argv[0], "exit", (char *)NULL);
		return 9;
	}
	if (!strcmp(m, "exec_env")) {
		/* An empty environment: the runtime adds NK_PROF_* and LD_PRELOAD back so the new image profiles. */
		char *const env[] = { "FOO=bar", NULL };
		execle("/proc/self/exe", argv[0], "exit", (char *)NULL, env);
		return 9;
	}
	if (!strcmp(m, "closeall")) {
		/* A daemon-like program: dup2 onto the part's descriptor, close everything, reuse low numbers. */
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;
		int part = -1;
		while (d && (e = readdir(d))) {
			char path[300], target[512];
			snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
			ssize_t n = readlink(path, target, sizeof target - 1);
			if (n > 5 && (target[n] = 0, !strcmp(target + n - 5, ".part")))
				part = atoi(e->d_name);
		}
		if (d)
			closedir(d);
		if (part < 0)
			return 10;
		if (dup2(2, part) != part)
			return 11;
		close(part);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		close_range(3, ~0u, 0);
		char tmpl[] = "/tmp/nkprof-closeallXXXXXX";
		int fd = mkstemp(tmpl);
		if (fd < 0)
			return 12;
		unlink(tmpl);
		if (write(fd, "hello", 5) != 5)
			return 13;
		alloc_here(1 << 17); /* ALLOC must go to the part, not to fd */
		if (lseek(fd, 0, SEEK_END) != 5)
			return 14;
		return 0;
	}
	if (!strcmp(m, "exec_fail")) {
		if (execl("/nonexistent/prog", "prog", (char *)NULL) != -1)
			return 9;
		alloc_here(1 << 17);
		return 0;
	}
	if (!strcmp(m, "touch")) {
		/* ~0.6 s of accesses to 8 MiB, for a sampler to see. */
		size_t n = 8u << 20;
		volatile char *p = alloc_here(n);
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			for (size_t i = 0; i < n; i += 4096)
				p[i]++;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 600000000L);
		free((void *)p);
		return 0;
	}
	if (!strcmp(m, "dlopen")) {
		void *h = dlopen("libz.so.1", RTLD_NOW);
		if (!h)
			h = dlopen("libm.so.6", RTLD_NOW);
		return h ? 0 : 2;
	}
	if (!strcmp(m, "vfork")) {
		pid_t c = vfork();
		if (c == 0) {
			execl("/proc/self/exe", "prof_prog", "exit", (char *)NULL);
			_exit(9);
		}
		int st;
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
			return 4;
		alloc_here(1 << 17); /* the parent's part is still open */
		return 0;
	}
	if (!strcmp(m, "exit"))
		exit(3);
	if (!strcmp(m, "_exit_handler")) {
		/* _exit from a signal handler (AS-safe path): END how=exit with its status. */
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
		return 1;
	}
	if (!strcmp(m, "return"))
		return 7;
	if (!strcmp(m, "abort"))
		abort();
	if (!strcmp(m, "segv_sigaction")) {
		struct sigaction sa, cur;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_segv_info;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGSEGV, NULL, &cur))
			return 2;
		/* The program sees its own handler. */
		if (cur.sa_sigaction != on_segv_info)
			return 5;
		if (!segv_once() || !segv_once())
			return 6;
		return 0;
	}
	if (!strcmp(m, "segv_signal")) {
		if (signal(SIGSEGV, on_segv) == SIG_ERR)
			return 2;
		if (signal(SIGSEGV, on_segv) != on_segv)
			return 5;
		if (!segv_once())
			return 6;
		return 0;
	}
	if (!strcmp(m, "segv_resethand")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_segv;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigaction(SIGSEGV, &sa, NULL);
		if (!segv_once())
			return 6;
		*(volatile int *)16 = 1; /* now the default action: dies by SIGSEGV */
		return 0;
	}
	if (!strcmp(m, "kill_term")) {
		raise(SIGTERM);
		return 0;
	}
	fprintf(stderr, "unknown scenario %s\n", m);
	return 2;
}
