/* SPDX-License-Identifier: BSD-3-Clause
 * The part file (src/profile/nkp.h) of this process: its writer and the writer lock, the records that frame it
 * (PROCESS, META, MAPS, THREAD, END), its closing on every path, and the descriptor interposers that keep the
 * program from closing or overwriting its descriptor.  It does not decide when a process ends or forks
 * (process.c, signal.c call in here) and holds no samples (ring.c drains them into nkp_wr under the lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "prof.h"
#include "runtime_impl.h"

struct nk__nkp_writer nkp_wr = { .fd = -1 };
_Atomic uint32_t nkp_wr_owner;
atomic_int nkp_closed;
static uint64_t start_ns;            /* CLOCK_MONOTONIC of the part's start */
static uint64_t start_unix_ns;
static pid_t part_pid; /* the process the open part belongs to: a vfork child must not write into it */
char nkp_part_dir[PATH_MAX];
char nkp_part_path[PATH_MAX];

/* ---------------------------------------------------------------- clock, writer lock */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nkp_now(void)
{
	uint64_t t = mono_ns();
	return t > start_ns ? t - start_ns : 0;
}

void nkp_wr_lock(void)
{
	uint32_t me = nkp_tid(), zero = 0;
	while (!atomic_compare_exchange_weak(&nkp_wr_owner, &zero, me)) {
		zero = 0;
		sched_yield();
	}
}

void nkp_wr_unlock(void)
{
	atomic_store(&nkp_wr_owner, 0);
}

/* From a signal handler: 1 when taken, 0 when this thread holds it or it stays busy for ~0.5 s. */
static int wr_trylock_signal(void)
{
	uint32_t me = nkp_tid();
	if (atomic_load(&nkp_wr_owner) == me)
		return 0;
	for (int i = 0; i < 500; i++) {
		uint32_t zero = 0;
		if (atomic_compare_exchange_strong(&nkp_wr_owner, &zero, me))
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

int nkp_mine(void)
{
	return getpid() == part_pid;
}

int nkp_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	if (!nkp.active || !nkp_mine())
		return -EBADF;
	nkp_wr_lock();
	int rc = nkp_closed ? -EBADF : nk__nkp_write2(&nkp_wr, type, a, alen, b, blen);
	nkp_wr_unlock();
	return rc;
}
/* ---------------------------------------------------------------- part file */

static int buf_grow(char **b, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 256;
	while (c < need)
		c *= 2;
	char *n = realloc(*b, c);
	if (!n)
		return -1;
	*b = n;
	*cap = c;
	return 0;
}

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_add(struct sbuf *s, const char *d, size_t n)
{
	if (s->err || buf_grow(&s->p, &s->cap, s->len + n + 1)) {
		s->err = 1;
		return;
	}
	memcpy(s->p + s->len, d, n);
	s->len += n;
	s->p[s->len] = 0;
}

static void sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		s->err = 1;
		return;
	}
	sb_add(s, tmp, (size_t)n);
}

/* A JSON string of @p n bytes of @p d (control characters and invalid bytes escaped). */
static void sb_json_str(struct sbuf *s, const char *d, size_t n)
{
	sb_add(s, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)d[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			sb_add(s, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			/* Bytes >= 0x80 as \u00XX (Latin-1): argv is not guaranteed UTF-8 and the JSON must stay valid. */
			sb_printf(s, "\\u%04x", c);
		} else {
			sb_add(s, (const char *)&d[i], 1);
		}
	}
	sb_add(s, "\"", 1);
}

/* Whole file (small /proc files) into a malloc'ed buffer; NULL on error. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *b = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (buf_grow(&b, &cap, n + 4096)) {
			free(b);
			close(fd);
			return NULL;
		}
		ssize_t r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(b);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = 0;
	*len = n;
	return b;
}

/* The part's own descriptor really closed (our close() interposer keeps it open for the program).  AS-safe:
 * libc's close is resolved by the constructor. */
static int (*real_close_part)(int);

void nkp_part_resolve(void)
{
	real_close_part = (int (*)(int))nkp_real("close");
}

void nkp_part_fd_close(int fd)
{
	if (real_close_part)
		real_close_part(fd);
	else
		syscall(SYS_close, fd);
}

static const char *sampler_name(int s)
{
	switch (s) {
	case NK__SAMPLER_PAGEFAULT:
		return "pagefault";
	case NK__SAMPLER_TRACE:
		return "trace";
	case NK__SAMPLER_HW:
		return "hw";
	case NK__SAMPLER_TIMER:
		return "timer";
	default:
		return "none";
	}
}

static void write_maps_locked(void)
{
	size_t n = 0;
	nkp_enter();
	char *t = slurp("/proc/self/maps", &n);
	nkp_leave();
	if (!t)
		return;
	struct nk__nkp_maps m = { .time_ns = nkp_now() };
	if (n > NK__NKP_MAX_PAYLOAD - sizeof m)
		n = NK__NKP_MAX_PAYLOAD - sizeof m;
	(void)nk__nkp_write2(&nkp_wr, NK__NKP_MAPS, &m, sizeof m, t, n);
	nkp_enter();
	free(t);
	nkp_leave();
}

void nkp_write_maps(void)
{
	if (!nkp.active)
		return;
	nkp_wr_lock();
	if (!nkp_closed)
		write_maps_locked();
	nkp_wr_unlock();
}

static void write_meta_locked(void)
{
	struct sbuf s = { 0 };
	size_t n = 0;
	nkp_enter();
	char *cmd = slurp("/proc/self/cmdline", &n);
	char exe[PATH_MAX];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (el < 0)
		el = 0;
	sb_printf(&s, "{\"pid\": %d, \"ppid\": %d, \"argv\": [", (int)getpid(), (int)getppid());
	if (cmd) {
		size_t i = 0, first = 1;
		while (i < n) {
			size_t l = strnlen(cmd + i, n - i);
			if (!first)
				sb_add(&s, ", ", 2);
			sb_json_str(&s, cmd + i, l);
			first = 0;
			i += l + 1;
		}
	}
	sb_add(&s, "], \"exe\": ", 10);
	sb_json_str(&s, exe, (size_t)el);
	sb_printf(&s, ", \"sampler\": \"%s\", \"rate\": %.17g, \"page_size\": %d, \"min_size\": %llu", sampler_name(nkp.sampler),
		  nkp.rate, nkp.page_size, (unsigned long long)nkp.min_size);
	sb_printf(&s, ", \"budget\": %llu, \"seed\": %llu, \"roi\": %s, \"start_unix_ns\": %llu}",
		  (unsigned long long)nkp.budget, (unsigned long long)nkp.seed, nkp.sampling ? "false" : "true",
		  (unsigned long long)start_unix_ns);
	if (!s.err)
		(void)nk__nkp_write(&nkp_wr, NK__NKP_META, s.p, s.len);
	free(s.p);
	free(cmd);
	nkp_leave();
}

void nkp_write_thread_locked(uint32_t index)
{
	struct nk__nkp_thread t = { .tid = nkp_tid(), .index = index, .time_ns = nkp_now(), .cpu = sched_getcpu() };
	pthread_attr_t at;
	nkp_enter();
	if (!pthread_getattr_np(pthread_self(), &at)) {
		void *lo;
		size_t sz;
		if (!pthread_attr_getstack(&at, &lo, &sz)) {
			t.stack_lo = (uintptr_t)lo;
			t.stack_hi = (uintptr_t)lo + sz;
		}
		pthread_attr_destroy(&at);
	}
	nkp_leave();
	(void)nk__nkp_write(&nkp_wr, NK__NKP_THREAD, &t, sizeof t);
}

/* Open <dir>/<pid>.part; a new image after exec keeps the pid: then <pid>.<n>.part. */
static int open_part(void)
{
	int pid = (int)getpid();
	for (int i = 0; i < 1000; i++) {
		int n = i ? snprintf(nkp_part_path, sizeof nkp_part_path, "%s/%d.%d.part", nkp_part_dir, pid, i)
			  : snprintf(nkp_part_path, sizeof nkp_part_path, "%s/%d.part", nkp_part_dir, pid);
		if (n < 0 || (size_t)n >= sizeof nkp_part_path) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int fd = open(nkp_part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			/* Out of the way of programs that expect the lowest free descriptors for themselves. */
			int hi = fcntl(fd, F_DUPFD_CLOEXEC, 512);
			if (hi >= 0) {
				close(fd);
				fd = hi;
			}
			return fd;
		}
		if (errno != EEXIST)
			return fd;
	}
	return -1;
}

int nkp_begin_part(void)
{
	int fd = open_part();
	if (fd < 0)
		return -1;
	if (nk__nkp_writer_init(&nkp_wr, fd)) {
		close(fd);
		nkp_wr.fd = -1;
		return -1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	start_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	start_ns = mono_ns();
	part_pid = getpid();
	struct nk__nkp_process p = { .pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(), .start_ns = start_ns };
	(void)nk__nkp_write(&nkp_wr, NK__NKP_PROCESS, &p, sizeof p);
	write_meta_locked();
	write_maps_locked();
	nkp_write_thread_locked(0);
	return 0;
}

/* The END record and close.  Writer lock held.  AS-safe (snprintf-free formatting). */
static void u64_to(char **p, uint64_t v)
{
	char t[24];
	int n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*(*p)++ = t[--n];
}

static void str_to(char **p, const char *s)
{
	while (*s)
		*(*p)++ = *s++;
}

static void i64_to(char **p, int64_t v)
{
	if (v < 0) {
		*(*p)++ = '-';
		u64_to(p, (uint64_t)(-v));
	} else {
		u64_to(p, (uint64_t)v);
	}
}

static void write_end_locked(const char *how, int status, int sig)
{
	static char b[8192]; /* under the writer lock; not on a (maybe small alternate) signal stack */
	char *p = b;
	str_to(&p, "{\"complete\": true, \"how\": \"");
	str_to(&p, how);
	str_to(&p, "\", \"status\": ");
	i64_to(&p, status);
	str_to(&p, ", \"signal\": ");
	i64_to(&p, sig);
	str_to(&p, ", \"time_ns\": ");
	u64_to(&p, nkp_now());
	str_to(&p, ", \"samples\": ");
	u64_to(&p, atomic_load(&nkp_n_samples));
	str_to(&p, ", \"dropped\": ");
	u64_to(&p, atomic_load(&nkp_n_dropped));
	str_to(&p, ", \"budget\": ");
	u64_to(&p, nkp.budget);
	str_to(&p, ", \"budget_halvings\": ");
	u64_to(&p, nkp_budget_halvings());
	str_to(&p, ", \"budget_dropped\": ");
	u64_to(&p, atomic_load(&nkp_n_budget_dropped));
	str_to(&p, ", \"budget_spent_ns\": ");
	u64_to(&p, atomic_load(&nkp_budget_spent_ns));
	str_to(&p, ", \"threads\": ");
	u64_to(&p, (uint64_t)atomic_load(&nkp_thread_index) + 1);
	str_to(&p, ", \"forks\": ");
	u64_to(&p, atomic_load(&nkp_n_forks));
	{
		size_t room = (size_t)(b + sizeof b - p);
		if (room > 300) {
			*p++ = ',';
			*p++ = ' ';
			size_t n = nkp_alloc_end_json(p, room - 300);
			p = n ? p + n : p - 2;
		}
	}
	size_t (*extra)(char *, size_t) = nkp.sampler == NK__SAMPLER_TRACE ? nkp_trace_end_json
					  : nkp.sampler == NK__SAMPLER_PAGEFAULT ? nkp_pf_end_json
					  : nkp.sampler == NK__SAMPLER_TIMER	  ? nkp_timer_end_json
										  : NULL;
	if (extra) {
		size_t room = (size_t)(b + sizeof b - p) - 2;
		if (room >= 258) {
			*p++ = ',';
			*p++ = ' ';
			size_t n = extra(p, room - 2);
			if (n)
				p += n;
			else
				p -= 2;
		}
	}
	str_to(&p, "}");
	(void)nk__nkp_write(&nkp_wr, NK__NKP_END, b, (size_t)(p - b));
}

/* ---------------------------------------------------------------- closing */

static void samplers_stop(void)
{
	if (nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_stop)
		nkp_pf_stop();
	else if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
		nkp_trace_stop();
	else if (nkp.sampler == NK__SAMPLER_TIMER && nkp_timer_stop)
		nkp_timer_stop();
}

void nkp_close_part(const char *how, int status, int sig)
{
	if (!nkp.active || !nkp_mine())
		return;
	if (atomic_load(&nkp_closed))
		return;
	samplers_stop();
	nkp_alloc_flush(0);
	nkp_wr_lock();
	if (!atomic_exchange(&nkp_closed, 1)) {
		nkp_flusher_stop();
		nkp_ring_drain();
		write_maps_locked();
		const void *comm;
		size_t comm_len = nkp_comm_record(&comm);
		if (comm_len)
			(void)nk__nkp_write(&nkp_wr, NK__NKP_COMM | NK__NKP_OPTIONAL, comm, comm_len);
		write_end_locked(how, status, sig);
		nkp_part_fd_close(nkp_wr.fd);
		nkp_wr.fd = -1;
	}
	nkp_wr_unlock();
}

void nkp_part_end_async(const char *how, int status, int sig)
{
	if (wr_trylock_signal()) {
		if (!atomic_exchange(&nkp_closed, 1)) {
			nkp_ring_drain();
			write_end_locked(how, status, sig);
			nkp_part_fd_close(nkp_wr.fd);
			nkp_wr.fd = -1;
		}
		nkp_wr_unlock();
	}
}

void nkp_part_drop_inherited(void)
{
	if (nkp_wr.fd >= 0)
		nkp_part_fd_close(nkp_wr.fd); /* the parent's part */
	nkp_wr.fd = -1;
}

/* ---------------------------------------------------------------- exec */

static off_t exec_mark = -1;

/* Before an exec: samples, MAPS, END how=exec; keep the writer lock so nothing follows END. */
void nkp_part_exec_begin(void)
{
	if (!nkp.active || !nkp_mine() || atomic_load(&nkp_closed))
		return;
	if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
		nkp_trace_stop();
	nkp_alloc_flush(0);
	nkp_wr_lock();
	nkp_ring_drain();
	write_maps_locked();
	exec_mark = lseek(nkp_wr.fd, 0, SEEK_CUR);
	write_end_locked("exec", 0, 0);
	atomic_store(&nkp_closed, 1);
}

/* The exec failed: take END back and go on. */
void nkp_part_exec_failed(void)
{
	if (exec_mark < 0)
		return;
	int e = errno;
	if (!ftruncate(nkp_wr.fd, exec_mark) && lseek(nkp_wr.fd, exec_mark, SEEK_SET) == exec_mark) {
		nkp_wr.records--;
		nkp_wr.bytes = (uint64_t)exec_mark;
		atomic_store(&nkp_closed, 0);
	}
	exec_mark = -1;
	nkp_wr_unlock();
	if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_start && !atomic_load(&nkp_closed))
		nkp_trace_start();
	errno = e;
}

/* ---------------------------------------------------------------- descriptors */

/*
 * Programs that close every descriptor (daemons, closefrom/close_range before exec) must not close the part,
 * or a later open() would reuse its number and the runtime would write into the program's file.  The part's
 * descriptor is O_CLOEXEC, so pretending it was closed is invisible to an exec'ed image.
 */
static int is_part_fd(int fd)
{
	return nkp.active && fd >= 0 && fd == nkp_wr.fd;
}

typedef int (*close_fn)(int);
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
typedef int (*dup3_fn)(int, int, int);

NKP_EXPORT int close(int fd)
{
	REAL(close_fn, close);
	if (is_part_fd(fd))
		return 0;
	return real_close(fd);
}

NKP_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	REAL(close_range_fn, close_range);
	int fd = nkp_wr.fd;
	if (!nkp.active || fd < 0 || (unsigned)fd < first || (unsigned)fd > last || (flags & CLOSE_RANGE_CLOEXEC))
		return real_close_range(first, last, flags);
	int rc = 0;
	if ((unsigned)fd > first)
		rc = real_close_range(first, (unsigned)fd - 1, flags);
	if (!rc && (unsigned)fd < last)
		rc = real_close_range((unsigned)fd + 1, last, flags);
	return rc;
}

NKP_EXPORT void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	(void)close_range((unsigned)lowfd, ~0u, 0);
}

/* dup2/dup3 onto the part's number: move the part out of the way first. */
static void part_fd_move(int fd)
{
	if (!is_part_fd(fd))
		return;
	nkp_wr_lock();
	int n = fcntl(nkp_wr.fd, F_DUPFD_CLOEXEC, 512);
	if (n >= 0 && n != nkp_wr.fd)
		nkp_wr.fd = n; /* the old number is then replaced by the program's dup2, which closes it */
	nkp_wr_unlock();
}

NKP_EXPORT int dup2(int oldfd, int newfd)
{
	typedef int (*dup2_fn)(int, int);
	REAL(dup2_fn, dup2);
	if (oldfd != newfd)
		part_fd_move(newfd);
	return real_dup2(oldfd, newfd);
}

NKP_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	REAL(dup3_fn, dup3);
	part_fd_move(newfd);
	return real_dup3(oldfd, newfd, flags);
}
