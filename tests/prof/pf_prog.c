/* SPDX-License-Identifier: BSD-3-Clause
 * Program run under libnumakit_prof.so with the pagefault sampler at a high
 * rate by pf_check.py: each argv[1] is one scenario; it checks its own
 * results (exit 0) and prints facts the checker compares with the part file
 * ("tid N", "array ADDR SIZE").
 *
 *   io FILE     read FILE (8 MiB) into a tracked malloc'ed array with read(2),
 *               fread, readv and pread, again and again while sampling; every
 *               byte must match, no call may fail (EFAULT)
 *   write FILE  write a tracked array with write(2), fwrite, writev; the file must match; then send,
 *               sendmsg, recv, recvmsg between tracked arrays over a socketpair
 *   threads     4 threads write their own array and read a shared one; sums checked
 *   fork FILE   parent and child both sample after fork; the child writes its array to FILE
 *   altstack    signals delivered on a malloc'ed alternate stack while it could be sampled
 *   churn       threads allocate, fill and free blocks (malloc, realloc, mmap, mremap) while sampled
 *   segv        the program's own SIGSEGV handler catches NULL dereferences via
 *               sigsetjmp while the sampler faults the program's arrays
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB (1u << 20)
#define FILE_SIZE (8 * MB)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
	fprintf(stderr, "pf_prog: %s: %s\n", what, strerror(errno));
	return 1;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

/* Touch everything so the sampler's revoked pages get hit by user-space accesses too. */
static uint64_t sweep(volatile unsigned char *a, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i += 64)
		s += a[i];
	return s;
}

static int check(const unsigned char *a, size_t n, const char *how)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != pattern(i)) {
			fprintf(stderr, "pf_prog: %s: byte %zu is %u, want %u\n", how, i, a[i], pattern(i));
			return 1;
		}
	return 0;
}

static int scenario_io(const char *path)
{
	unsigned char *a = malloc(FILE_SIZE);
	if (!a)
		return fail("malloc");
	printf("array %lu %u\n", (unsigned long)(uintptr_t)a, FILE_SIZE);
	double end = now_s() + 1.5;
	for (int round = 0; round < 4 || now_s() < end; round++) {
		memset(a, 0, FILE_SIZE);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			return fail("open");
		ssize_t r;
		size_t got;
		switch (round % 4) {
		case 0: /* read(2) in 1 MiB pieces */
			for (got = 0; got < FILE_SIZE; got += (size_t)r) {
				r = read(fd, a + got, MB);
				if (r <= 0)
					return fail("read");
			}
			break;
		case 1: { /* fread: large requests go straight to read(2) inside libc */
			FILE *f = fdopen(fd, "rb");
			if (!f)
				return fail("fdopen");
			if (fread(a, 1, FILE_SIZE, f) != FILE_SIZE)
				return fail("fread");
			fclose(f);
			fd = -1;
			break;
		}
		case 2: { /* readv: 8 pieces in reverse order of address */
			struct iovec iov[8];
			for (int i = 0; i < 8; i++) {
				iov[i].iov_base = a + (size_t)i * MB;
				iov[i].iov_len = MB;
			}
			for (got = 0; got < FILE_SIZE; got += (size_t)r) {
				r = readv(fd, iov, 8);
				if (r <= 0)
					return fail("readv");
				size_t skip = (size_t)r;
				for (int i = 0; i < 8 && skip; i++) {
					size_t k = skip < iov[i].iov_len ? skip : iov[i].iov_len;
					iov[i].iov_base = (char *)iov[i].iov_base + k;
					iov[i].iov_len -= k;
					skip -= k;
				}
			}
			break;
		}
		default: /* pread */
			for (got = 0; got < FILE_SIZE; got += (size_t)r) {
				r = pread(fd, a + got, FILE_SIZE - got, (off_t)got);
				if (r <= 0)
					return fail("pread");
			}
		}
		if (fd >= 0)
			close(fd);
		static const char *const how[4] = { "read", "fread", "readv", "pread" };
		if (check(a, FILE_SIZE, how[round % 4]))
			return 1;
		sweep(a, FILE_SIZE);
	}
	free(a);
	return 0;
}

static int scenario_write(const char *path)
{
	unsigned char *a = malloc(FILE_SIZE), *b = malloc(FILE_SIZE);
	if (!a || !b)
		return fail("malloc");
	for (size_t i = 0; i < FILE_SIZE; i++)
		a[i] = pattern(i);
	double end = now_s() + 1.0;
	for (int round = 0; round < 3 || now_s() < end; round++) {
		sweep(a, FILE_SIZE);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			return fail("open");
		if (round % 3 == 0) {
			for (size_t put = 0; put < FILE_SIZE;) {
				ssize_t w = write(fd, a + put, FILE_SIZE - put);
				if (w <= 0)
					return fail("write");
				put += (size_t)w;
			}
		} else if (round % 3 == 1) {
			FILE *f = fdopen(fd, "wb");
			if (!f || fwrite(a, 1, FILE_SIZE, f) != FILE_SIZE || fflush(f))
				return fail("fwrite");
			fclose(f);
			fd = -1;
		} else {
			struct iovec iov[2] = { { a, FILE_SIZE / 2 }, { a + FILE_SIZE / 2, FILE_SIZE / 2 } };
			if (writev(fd, iov, 2) != (ssize_t)FILE_SIZE)
				return fail("writev");
		}
		if (fd >= 0)
			close(fd);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return fail("open");
		for (size_t got = 0; got < FILE_SIZE;) {
			ssize_t r = read(fd, b + got, FILE_SIZE - got);
			if (r <= 0)
				return fail("read back");
			got += (size_t)r;
		}
		close(fd);
		if (check(b, FILE_SIZE, "write"))
			return 1;
	}
	/* Sockets: send/sendmsg from and recv/recvmsg into tracked memory, several buffers per call. */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return fail("socketpair");
	for (int round = 0; round < 40; round++) {
		size_t chunk = 64 * 1024, off = (size_t)round * chunk * 2;
		memset(b + off, 0, 2 * chunk);
		struct iovec out[2] = { { a + off + chunk, chunk }, { a + off, chunk } }; /* reversed halves */
		struct msghdr mo = { .msg_iov = out, .msg_iovlen = 2 };
		ssize_t w = round % 2 ? sendmsg(sv[0], &mo, 0) : send(sv[0], a + off, 2 * chunk, 0);
		if (w != (ssize_t)(2 * chunk))
			return fail("send");
		struct iovec in[2] = { { b + off + chunk, chunk }, { b + off, chunk } };
		struct sockaddr_un from;
		struct msghdr mi = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = in, .msg_iovlen = 2 };
		size_t got = 0;
		while (got < 2 * chunk) {
			ssize_t r;
			if (round % 2) {
				r = recvmsg(sv[1], &mi, 0);
				for (size_t k = (size_t)(r > 0 ? r : 0); k && mi.msg_iovlen;) {
					size_t t = k < mi.msg_iov->iov_len ? k : mi.msg_iov->iov_len;
					mi.msg_iov->iov_base = (char *)mi.msg_iov->iov_base + t;
					mi.msg_iov->iov_len -= t;
					k -= t;
					if (!mi.msg_iov->iov_len) {
						mi.msg_iov++;
						mi.msg_iovlen--;
					}
				}
			} else {
				r = recv(sv[1], b + off + got, 2 * chunk - got, 0);
			}
			if (r <= 0)
				return fail("recv");
			got += (size_t)r;
		}
		for (size_t i = off; i < off + 2 * chunk; i++)
			if (b[i] != pattern(i)) {
				fprintf(stderr, "pf_prog: socket round %d: byte %zu differs\n", round, i);
				return 1;
			}
	}
	close(sv[0]);
	close(sv[1]);
	free(a);
	free(b);
	return 0;
}

#define NT 4
#define OWN (2 * MB / sizeof(uint64_t))
static uint64_t *shared_arr;
static size_t shared_n = 4 * MB / sizeof(uint64_t);

struct worker {
	pthread_t th;
	int index;
	uint64_t *own;
	uint64_t sum;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->own = malloc(OWN * sizeof(uint64_t));
	if (!w->own) {
		w->bad = 1;
		return NULL;
	}
	printf("tid %ld %lu %lu\n", (long)syscall(SYS_gettid), (unsigned long)(uintptr_t)w->own,
	       (unsigned long)(OWN * sizeof(uint64_t)));
	fflush(stdout);
	double end = now_s() + 1.5;
	for (uint64_t it = 1; now_s() < end; it++) {
		/* Writes to its own array, each checked right away: a visit to one of its pages begins with a
		 * write, so the samples there are writes (the sampler samples visits). */
		for (size_t i = 0; i < OWN; i++) {
			w->own[i] = it * (uint64_t)(w->index + 1) + i;
			if (i % 97 == 0 && ((volatile uint64_t *)w->own)[i] != it * (uint64_t)(w->index + 1) + i)
				w->bad = 1;
		}
		uint64_t s = 0;
		for (size_t i = 0; i < shared_n; i += 8) /* reads of the shared one */
			s += shared_arr[i];
		w->sum = s;
	}
	return NULL;
}

static int scenario_threads(void)
{
	struct worker w[NT];
	uint64_t want = 0;

	shared_arr = malloc(shared_n * sizeof(uint64_t));
	if (!shared_arr)
		return fail("malloc");
	for (size_t i = 0; i < shared_n; i++)
		shared_arr[i] = i * 3;
	for (size_t i = 0; i < shared_n; i += 8)
		want += i * 3;
	printf("shared %lu %lu\n", (unsigned long)(uintptr_t)shared_arr, (unsigned long)(shared_n * sizeof(uint64_t)));
	fflush(stdout);
	for (int i = 0; i < NT; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].index = i;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]))
			return fail("pthread_create");
	}
	int bad = 0;
	for (int i = 0; i < NT; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].bad || w[i].sum != want) {
			fprintf(stderr, "pf_prog: thread %d: bad %d sum %llu want %llu\n", i, w[i].bad,
				(unsigned long long)w[i].sum, (unsigned long long)want);
			bad = 1;
		}
	}
	return bad;
}

static sigjmp_buf jb;
static volatile sig_atomic_t caught;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_addr == NULL || (uintptr_t)si->si_addr < 4096) {
		caught++;
		siglongjmp(jb, 1);
	}
	_exit(3); /* a fault of the sampler's pages must never reach us */
}

static int scenario_segv(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return fail("sigaction");
	size_t n = 4 * MB / sizeof(uint64_t);
	uint64_t *a = malloc(n * sizeof *a);
	if (!a)
		return fail("malloc");
	for (size_t i = 0; i < n; i++)
		a[i] = i;
	double end = now_s() + 1.0;
	static volatile int tries;
	while (now_s() < end) {
		uint64_t s = 0;
		for (size_t i = 0; i < n; i++)
			s += a[i];
		if (s != (uint64_t)n * (n - 1) / 2) {
			fprintf(stderr, "pf_prog: segv: bad sum\n");
			return 1;
		}
		if (sigsetjmp(jb, 1) == 0) {
			tries++;
			volatile int *volatile null = NULL;
			(void)*null;
			fprintf(stderr, "pf_prog: segv: NULL read did not fault\n");
			return 1;
		}
	}
	if (caught != tries) {
		fprintf(stderr, "pf_prog: segv: caught %d of %d\n", (int)caught, tries);
		return 1;
	}
	printf("caught %d\n", (int)caught);
	free(a);
	return 0;
}

/* Both sides of a fork keep sampling (the child restarts the sampler thread) and keep their data. */
static int scenario_fork(const char *path)
{
	size_t n = 4 * MB / sizeof(uint64_t);
	uint64_t *a = malloc(n * sizeof *a);
	if (!a)
		return fail("malloc");
	for (size_t i = 0; i < n; i++)
		a[i] = i;
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork");
	uint64_t mul = pid == 0 ? 3 : 5;
	double end = now_s() + 1.0;
	for (uint64_t it = 1; now_s() < end; it++) {
		for (size_t i = 0; i < n; i++)
			a[i] = i * mul + it;
		for (size_t i = 0; i < n; i += 61)
			if (a[i] != i * mul + it) {
				fprintf(stderr, "pf_prog: fork: %s: bad data\n", pid ? "parent" : "child");
				return 1;
			}
	}
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, a, n * sizeof *a) != (ssize_t)(n * sizeof *a))
			return fail("child write");
		close(fd);
		printf("child %ld\n", (long)getpid());
		return 0;
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "pf_prog: fork: child status %d\n", st);
		return 1;
	}
	printf("parent %ld\n", (long)getpid());
	free(a);
	return 0;
}

/* Signals delivered on a malloc'ed (tracked) alternate stack while the sampler runs: the kernel pushes the
 * frames itself and would kill the process if the page were revoked. */
static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	volatile char scratch[2048];
	(void)sig;
	for (size_t i = 0; i < sizeof scratch; i += 64)
		scratch[i] = (char)i;
	usr1++;
}

static int scenario_altstack(void)
{
	size_t size = 256 * 1024;
	stack_t ss = { .ss_sp = malloc(size), .ss_size = size, .ss_flags = 0 };
	struct sigaction sa;

	if (!ss.ss_sp || sigaltstack(&ss, NULL))
		return fail("sigaltstack");
	memset(ss.ss_sp, 0, size);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return fail("sigaction");
	int sent = 0;
	double end = now_s() + 1.0;
	while (now_s() < end) {
		raise(SIGUSR1);
		sent++;
		struct timespec ts = { 0, 200 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (usr1 != sent) {
		fprintf(stderr, "pf_prog: altstack: %d of %d signals handled\n", (int)usr1, sent);
		return 1;
	}
	printf("signals %d\n", sent);
	return 0;
}

/* Threads allocate, fill, check and free blocks (malloc, realloc, mmap/munmap/mremap) as fast as they can
 * while the sampler revokes pages in them: freed memory must never stay revoked (the allocator's own
 * writes, a new mapping at the same address, a read(2) into it all have to work). */
static atomic_int mremap_efault;

static void *churn_main(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	int *bad = malloc(sizeof *bad);
	int zero = open("/dev/zero", O_RDONLY);
	*bad = zero < 0;
	double end = now_s() + 1.5;
	for (uint64_t it = 0; now_s() < end && !*bad; it++) {
		size_t n = (size_t)(64 + (it * 37 + k * 11) % 960) * 1024;
		unsigned char *p;
		if (it % 3 == 0) {
			p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				*bad = 1;
				break;
			}
		} else {
			p = malloc(n);
			if (!p) {
				*bad = 1;
				break;
			}
		}
		memset(p, (int)(it & 0xff), n);
		for (size_t i = 0; i < n; i += 4096)
			if (p[i] != (unsigned char)(it & 0xff))
				*bad = 2;
		if (read(zero, p, n < MB ? n : MB) < 0) /* the kernel writes into it */
			*bad = 3;
		if (it % 3 == 0) {
			/*
			 * Revoking pages of a fresh mapping splits it into several VMAs, and pieces first
			 * written while a revoked page separated them get different anon_vmas and never
			 * merge again: the kernel's mremap of a range spanning them fails with EFAULT.  The
			 * runtime's mremap interposer copies instead (as glibc's realloc does), so every
			 * mremap here must work and keep the bytes.
			 */
			memset(p, 0x5a, n);
			unsigned char *q = mremap(p, n, 2 * n, MREMAP_MAYMOVE);
			if (q == MAP_FAILED) {
				if (errno == EFAULT)
					mremap_efault++;
				fprintf(stderr, "pf_prog: churn: mremap: %s\n", strerror(errno));
				munmap(p, n);
				*bad = 4;
			} else {
				for (size_t i = 0; i < n; i += 4096)
					if (q[i] != 0x5a || q[n - 1] != 0x5a)
						*bad = 6;
				memset(q + n, 1, n);
				munmap(q, 2 * n);
			}
		} else if (it % 3 == 1) {
			unsigned char *q = realloc(p, n + 128 * 1024);
			if (!q)
				*bad = 5;
			else
				p = q;
			memset(p, 2, n + 128 * 1024);
			free(p);
		} else {
			free(p);
		}
	}
	close(zero);
	return bad;
}

static int scenario_churn(void)
{
	pthread_t th[3];
	int bad = 0;

	for (uintptr_t i = 0; i < 3; i++)
		if (pthread_create(&th[i], NULL, churn_main, (void *)i))
			return fail("pthread_create");
	for (int i = 0; i < 3; i++) {
		void *r;
		pthread_join(th[i], &r);
		if (!r || *(int *)r) {
			fprintf(stderr, "pf_prog: churn: thread %d failed (%d)\n", i, r ? *(int *)r : -1);
			bad = 1;
		}
		free(r);
	}
	printf("mremap_efault %d\n", atomic_load(&mremap_efault));
	return bad;
}

/* Threads created with an affinity attribute while the sampler revokes heap pages holding small blocks (run
 * with NK_PROF_SMALL_BLOCKS=1): glibc mallocs the attribute's cpu set beside the program's small blocks and
 * reads it in pthread_create with every signal blocked, where a revoked page killed the program (prof_list
 * in the 4n-slit-ic4 guest: SIGSEGV in create_thread).  Each thread checks that it runs where it was put. */
static void *spawn_main(void *arg)
{
	int want = *(int *)arg;
	return (void *)(intptr_t)(sched_getcpu() == want ? 0 : 1);
}

static int scenario_spawn(void)
{
	enum { KEEP = 16384 };
	static char *keep[KEEP];
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], ncpu = 0, created = 0, bad = 0;

	if (sched_getaffinity(0, sizeof allowed, &allowed))
		return fail("sched_getaffinity");
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;
	double end = now_s() + 1.5;
	for (size_t i = 0; now_s() < end; i++) {
		char *b = malloc(200 + i % 64); /* the program's small blocks, on the pages of the attributes */
		if (!b)
			return fail("malloc");
		memset(b, (int)i, 200);
		free(keep[i % KEEP]);
		keep[i % KEEP] = b;
		pthread_attr_t a;
		cpu_set_t one;
		int cpu = cpus[i % (size_t)ncpu];
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (pthread_attr_init(&a) || pthread_attr_setaffinity_np(&a, sizeof one, &one))
			return fail("pthread_attr");
		pthread_t th;
		void *r;
		if (pthread_create(&th, &a, spawn_main, &cpu))
			return fail("pthread_create");
		pthread_join(th, &r);
		bad += r != NULL;
		created++;
		pthread_attr_destroy(&a);
	}
	/* posix_spawn's child reads its arguments (here small blocks) with every signal blocked, too */
	int spawned = 0, failed = 0;
	extern char **environ;
	for (size_t i = 0; i < 100; i++) {
		char *argv[3] = { malloc(8), malloc(8), NULL };
		if (!argv[0] || !argv[1])
			return fail("malloc");
		strcpy(argv[0], "true");
		strcpy(argv[1], "x");
		free(keep[i % KEEP]);
		keep[i % KEEP] = argv[0];
		pid_t pid;
		int st;
		if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid) {
			spawned++;
			failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		} else {
			failed++;
		}
		free(argv[1]);
		if (i % 5)
			continue;
		/* system() and popen() spawn through glibc's own posix_spawn: a heap command */
		char *cmd = malloc(16);
		if (!cmd)
			return fail("malloc");
		strcpy(cmd, i % 10 ? "exit 0" : "echo x");
		if (i % 10) {
			failed += system(cmd) != 0;
		} else {
			FILE *f = popen(cmd, "r");
			char line[8] = "";
			failed += !f || !fgets(line, sizeof line, f) || line[0] != 'x' || pclose(f) != 0;
		}
		spawned++;
		free(keep[(i + 7) % KEEP]);
		keep[(i + 7) % KEEP] = cmd;
	}
	for (size_t i = 0; i < KEEP; i++)
		free(keep[i]);
	printf("threads %d misplaced %d spawned %d failed %d\n", created, bad, spawned, failed);
	return bad != 0 || failed != 0;
}

/* SIGSEGV blocked by the program (a thread that blocks every signal, a handler whose sa_mask is full) while
 * the sampler revokes pages it touches: the runtime keeps SIGSEGV unblocked and the program's view of its
 * masks (else the first revoked page it touched killed it).  A real fault with SIGSEGV blocked in the
 * program's view still kills, as the kernel would, without calling the program's handler. */
static uint64_t *masked_arr;
static size_t masked_n = 4 * MB / sizeof(uint64_t);
static volatile sig_atomic_t masked_usr1, masked_segv_handled;

static uint64_t masked_sweep(void)
{
	uint64_t s = 0;
	for (size_t i = 0; i < masked_n; i += 64)
		s += masked_arr[i]++;
	return s;
}

static void masked_on_usr1(int sig)
{
	(void)sig;
	masked_sweep();
	masked_usr1++;
}

static void masked_on_segv(int sig)
{
	(void)sig;
	masked_segv_handled = 1;
	_exit(3);
}

static void *masked_thread(void *arg)
{
	sigset_t all, old;
	(void)arg;
	sigfillset(&all);
	if (pthread_sigmask(SIG_BLOCK, &all, NULL) || pthread_sigmask(SIG_BLOCK, NULL, &old) ||
	    sigismember(&old, SIGSEGV) != 1)
		return (void *)1; /* the program's view: SIGSEGV blocked */
	double end = now_s() + 0.7;
	while (now_s() < end)
		masked_sweep();
	return NULL;
}

static int scenario_masked(void)
{
	masked_arr = calloc(masked_n, sizeof(uint64_t));
	if (!masked_arr)
		return fail("calloc");
	/* 1. a thread with every signal blocked */
	pthread_t th;
	void *r = (void *)1;
	if (pthread_create(&th, NULL, masked_thread, NULL) || pthread_join(th, &r) || r)
		return fail("thread with every signal blocked");
	/* 2. a handler with a full sa_mask, raised again and again */
	struct sigaction sa, back;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = masked_on_usr1;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR1, NULL, &back) || sigismember(&back.sa_mask, SIGSEGV) != 1)
		return fail("sigaction view");
	int sent = 0;
	double end = now_s() + 0.7;
	while (now_s() < end) {
		raise(SIGUSR1);
		sent++;
	}
	if (masked_usr1 != sent)
		return fail("SIGUSR1 handled");
	/* 3. a real fault with SIGSEGV blocked (the program's handler installed) still kills by SIGSEGV */
	pid_t pid = fork();
	if (pid == 0) {
		struct sigaction sg;
		memset(&sg, 0, sizeof sg);
		sg.sa_handler = masked_on_segv;
		sigemptyset(&sg.sa_mask);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, SIGSEGV);
		if (sigaction(SIGSEGV, &sg, NULL) || sigprocmask(SIG_BLOCK, &one, NULL))
			_exit(4);
		masked_sweep();
		volatile int *volatile null = NULL;
		(void)*null;
		_exit(5);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return fail("fork");
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
		fprintf(stderr, "pf_prog: masked: the child's fault with SIGSEGV blocked: status %#x\n", st);
		return 1;
	}
	printf("usr1 %d sum %lu\n", sent, (unsigned long)masked_sweep());
	free(masked_arr);
	return 0;
}

/* Small blocks 8 KiB apart (each merging with the range before) or 128 KiB (a range each), made and freed: the
 * set grows and shrinks, retired sets are unmapped, and adding a range read the set it had just retired
 * (prof_vecvec died in nkp_heap_cover under the plan runtime, whose arena spread its blocks). */
static int scenario_ranges(void)
{
	enum { N = 600 };
	static void *keep[N];
	for (int round = 0; round < 30; round++) {
		int n = round % 2 ? N : N / 3 + round;
		for (int i = 0; i < n; i++) {
			/* 8 KiB apart: each block's page merges with the range before it; 128 KiB: a range of its own */
			if (posix_memalign(&keep[i], (size_t)1 << (round % 3 ? 13 : 17), 64 + (size_t)(i % 7) * 8))
				return fail("posix_memalign");
			memset(keep[i], i, 64);
		}
		for (int i = 0; i < n; i++) {
			if (((unsigned char *)keep[i])[63] != (unsigned char)i)
				return fail("contents");
			free(keep[i]);
		}
	}
	printf("ranges ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "io") && argc > 2)
		return scenario_io(argv[2]);
	if (!strcmp(argv[1], "write") && argc > 2)
		return scenario_write(argv[2]);
	if (!strcmp(argv[1], "threads"))
		return scenario_threads();
	if (!strcmp(argv[1], "fork") && argc > 2)
		return scenario_fork(argv[2]);
	if (!strcmp(argv[1], "altstack"))
		return scenario_altstack();
	if (!strcmp(argv[1], "churn"))
		return scenario_churn();
	if (!strcmp(argv[1], "segv"))
		return scenario_segv();
	if (!strcmp(argv[1], "spawn"))
		return scenario_spawn();
	if (!strcmp(argv[1], "masked"))
		return scenario_masked();
	if (!strcmp(argv[1], "ranges"))
		return scenario_ranges();
	return 2;
}
