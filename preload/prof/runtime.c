/*
 * libnumakit_prof.so runtime core (prof.h): environment, the part file, the
 * sample ring and its flusher, threads, fork/exec/exit, fatal signals and the
 * signal interposers, the hook table libnumakit pulls (runtime/runtime.h).
 *
 * Locking: one writer lock (an atomic owner tid, not a pthread mutex, so a
 * fatal-signal handler can try it and tell whether it interrupted its own
 * thread inside a record) serialises every record and is the ring's single
 * consumer.  The sampler functions of pagefault.c/trace.c are weak: the
 * runtime works (sampler none) while they are absent.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "prof.h"
#include "profile/budget.h"
#include "runtime/runtime.h"
#include "util/list.h"

#define NKP_EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* Weak: pagefault.c / trace.c may be missing in a build; then those samplers are unavailable. */
#pragma weak nkp_pf_start
#pragma weak nkp_pf_stop
#pragma weak nkp_pf_fault
#pragma weak nkp_pf_after_fork
#pragma weak nkp_pf_moved
#pragma weak nkp_pf_hold
#pragma weak nkp_pf_io_end
#pragma weak nkp_trace_start
#pragma weak nkp_trace_stop
#pragma weak nkp_trace_moved
#pragma weak nkp_trace_after_fork
#pragma weak nkp_trace_end_json
#pragma weak nkp_pf_end_json
#pragma weak nkp_timer_start
#pragma weak nkp_timer_stop
#pragma weak nkp_timer_thread_begin
#pragma weak nkp_timer_after_fork
#pragma weak nkp_timer_end_json

struct nkp_state nkp;

static struct nk__nkp_writer wr = { .fd = -1 };
static _Atomic uint32_t wr_owner;    /* tid holding the writer lock, 0 free */
static atomic_int closed;            /* END written (or being written) */
static uint64_t start_ns;            /* CLOCK_MONOTONIC of the part's start */
static uint64_t start_unix_ns;
static pid_t part_pid; /* the process the open part belongs to: a vfork child must not write into it */
static char part_dir[PATH_MAX];
static char part_path[PATH_MAX];
static _Atomic uint64_t n_samples, n_dropped;
/* The accesses the samples kept stand for (their weights: the trace sampler's period follows it, see
 * src/profile/budget.h), the samples dropped because the budget was spent (the rest of n_dropped found the
 * ring full) and when that began. */
static _Atomic uint64_t n_weighted;
static _Atomic uint64_t n_budget_dropped, budget_spent_ns;
/* fork()s and vfork children's execs of this process: its END record says how many, so that `numakit
 * profile` waits for children's parts only when there can be any */
static _Atomic uint64_t n_forks;
static _Atomic uint32_t thread_index; /* last index handed out */
static atomic_int exit_status = -1;   /* from exit()/return from main, -1 unknown */

static TLS int busy;
static TLS uint32_t my_tid;

/* ---------------------------------------------------------------- basics */

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

uint32_t nkp_tid(void)
{
	if (!my_tid)
		my_tid = (uint32_t)gettid();
	return my_tid;
}

int nkp_cpu_node(int cpu)
{
	if (cpu < 0 || cpu >= nkp.ncpus || !nkp.cpu_node)
		return -1;
	return nkp.cpu_node[cpu];
}

/* NK_PROF_CPUS: the cpus `numakit profile` was given, for the runtime's own threads. */
static cpu_set_t own_cpus;
static int have_own_cpus;

static void load_own_cpus(void)
{
	const char *p = getenv("NK_PROF_CPUS");
	nk__ilist cpus = { 0 };
	CPU_ZERO(&own_cpus);
	have_own_cpus = 0;
	/* Malformed or empty: leave the threads where they start. */
	if (p && nk__parse_list(p, &cpus, NULL, 0) == 0)
		for (size_t i = 0; i < cpus.n; i++)
			if (cpus.v[i] < CPU_SETSIZE) {
				CPU_SET(cpus.v[i], &own_cpus);
				have_own_cpus = 1;
			}
	nk__ilist_free(&cpus);
}

/* Let the calling runtime thread (the flusher, the pagefault sampler) run on every cpu of NK_PROF_CPUS,
 * not only on the one an OpenMP runtime bound the main thread to before the runtime started its threads. */
void nkp_own_thread_cpus(void)
{
	if (have_own_cpus)
		(void)sched_setaffinity(0, sizeof own_cpus, &own_cpus);
}

int nkp_busy(void)
{
	return busy;
}

void nkp_enter(void)
{
	busy++;
}

void nkp_leave(void)
{
	busy--;
}

static void wr_lock(void)
{
	uint32_t me = nkp_tid(), zero = 0;
	while (!atomic_compare_exchange_weak(&wr_owner, &zero, me)) {
		zero = 0;
		sched_yield();
	}
}

static void wr_unlock(void)
{
	atomic_store(&wr_owner, 0);
}

/* From a signal handler: 1 when taken, 0 when this thread holds it or it stays busy for ~0.5 s. */
static int wr_trylock_signal(void)
{
	uint32_t me = nkp_tid();
	if (atomic_load(&wr_owner) == me)
		return 0;
	for (int i = 0; i < 500; i++) {
		uint32_t zero = 0;
		if (atomic_compare_exchange_strong(&wr_owner, &zero, me))
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int mine(void)
{
	return getpid() == part_pid;
}

int nkp_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	if (!nkp.active || !mine())
		return -EBADF;
	wr_lock();
	int rc = closed ? -EBADF : nk__nkp_write2(&wr, type, a, alen, b, blen);
	wr_unlock();
	return rc;
}

/* ---------------------------------------------------------------- ring */

#define RING_CAP (64u * 1024u)
#define EMIT_WAIT_NS 200000000u /* nkp_emit_wait: the longest a sample waits for room */
static atomic_int emit_stuck;      /* a wait ran out: no waiting until the flusher drained again */
struct slot {
	_Atomic uint64_t seq;
	struct nk__nkp_sample s;
};
static struct slot ring[RING_CAP];
static _Atomic uint64_t ring_head; /* next enqueue position */
static uint64_t ring_tail;         /* next dequeue position (consumer holds the writer lock) */
static struct nk__nkp_sample drain_buf[RING_CAP];

static void ring_reset(void)
{
	for (uint32_t i = 0; i < RING_CAP; i++)
		atomic_store_explicit(&ring[i].seq, i, memory_order_relaxed);
	atomic_store(&ring_head, 0);
	ring_tail = 0;
}

/* Put @p s in the ring: 0, or -1 when the ring is full.  AS-safe, lock-free. */
static int ring_put(const struct nk__nkp_sample *s)
{
	uint64_t pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
	struct slot *sl;
	for (;;) {
		sl = &ring[pos & (RING_CAP - 1)];
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&ring_head, &pos, pos + 1, memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (dif < 0) { /* full */
			return -1;
		} else {
			pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
		}
	}
	sl->s = *s;
	if (!sl->s.time_ns)
		sl->s.time_ns = nkp_now();
	if (!sl->s.phase)
		sl->s.phase = atomic_load_explicit(&nkp.phase, memory_order_relaxed);
	if (!sl->s.sampler)
		sl->s.sampler = (uint8_t)nkp.sampler;
	atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
	return 0;
}

static void emit(const struct nk__nkp_sample *s, int wait)
{
	if (!nkp.active || closed)
		return;
	uint64_t used = atomic_fetch_add(&n_samples, 1);
	if (used >= nkp.budget) {
		uint64_t never = 0;
		atomic_fetch_sub(&n_samples, 1);
		atomic_fetch_add(&n_dropped, 1);
		if (!atomic_fetch_add(&n_budget_dropped, 1))
			atomic_compare_exchange_strong(&budget_spent_ns, &never, nkp_now() | 1);
		return;
	}
	atomic_fetch_add_explicit(&n_weighted, s->weight ? s->weight : 1, memory_order_relaxed);
	/* Waiting: 100 us naps until the flusher made room, at most EMIT_WAIT_NS, and never inside the
	 * runtime (a signal handler may have interrupted this thread while it held the writer lock the
	 * flusher needs).  A wait that ran out stops the others until the flusher drains again. */
	for (unsigned naps = 0; ring_put(s); naps++) {
		if (naps >= EMIT_WAIT_NS / 100000u)
			atomic_store_explicit(&emit_stuck, 1, memory_order_relaxed);
		if (!wait || busy || closed || atomic_load_explicit(&emit_stuck, memory_order_relaxed)) {
			atomic_fetch_sub(&n_samples, 1);
			atomic_fetch_sub_explicit(&n_weighted, s->weight ? s->weight : 1, memory_order_relaxed);
			atomic_fetch_add(&n_dropped, 1);
			return;
		}
		struct timespec ts = { 0, 100000L };
		nanosleep(&ts, NULL);
	}
}

uint64_t nkp_budget_period(uint64_t p0)
{
	return nk__budget_period(p0, nkp.budget, atomic_load_explicit(&n_samples, memory_order_relaxed),
				 atomic_load_explicit(&n_weighted, memory_order_relaxed));
}

uint32_t nkp_budget_halvings(void)
{
	return nk__budget_halvings(nkp.budget, atomic_load_explicit(&n_samples, memory_order_relaxed));
}

void nkp_emit(const struct nk__nkp_sample *s)
{
	emit(s, 0);
}

void nkp_emit_wait(const struct nk__nkp_sample *s)
{
	emit(s, 1);
}

/* Move published samples to the part; returns how many.  Caller holds the writer lock.  AS-safe. */
static size_t ring_drain(void)
{
	size_t total = 0;
	for (;;) {
		size_t n = 0;
		while (n < RING_CAP) {
			struct slot *sl = &ring[ring_tail & (RING_CAP - 1)];
			uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
			if (seq != ring_tail + 1)
				break;
			drain_buf[n++] = sl->s;
			atomic_store_explicit(&sl->seq, ring_tail + RING_CAP, memory_order_release);
			ring_tail++;
		}
		if (!n)
			return total;
		total += n;
		(void)nk__nkp_write(&wr, NK__NKP_SAMPLES, drain_buf, n * sizeof drain_buf[0]);
	}
}

/* ---------------------------------------------------------------- real functions */

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef void (*exit_fn)(int);
typedef void *(*dlopen_fn)(const char *, int);

static void *real(const char *name)
{
	nkp_enter();
	void *p = dlsym(RTLD_NEXT, name);
	nkp_leave();
	return p;
}

#define REAL(type, name)                                                                                            \
	static type real_##name;                                                                                    \
	if (!real_##name)                                                                                           \
		real_##name = (type)real(#name)

static int sys_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	REAL(sigaction_fn, sigaction);
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction(sig, sa, old);
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

static void part_close(int fd)
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
	(void)nk__nkp_write2(&wr, NK__NKP_MAPS, &m, sizeof m, t, n);
	nkp_enter();
	free(t);
	nkp_leave();
}

void nkp_write_maps(void)
{
	if (!nkp.active)
		return;
	wr_lock();
	if (!closed)
		write_maps_locked();
	wr_unlock();
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
		(void)nk__nkp_write(&wr, NK__NKP_META, s.p, s.len);
	free(s.p);
	free(cmd);
	nkp_leave();
}

static void write_thread_locked(uint32_t index)
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
	(void)nk__nkp_write(&wr, NK__NKP_THREAD, &t, sizeof t);
}

/* Open <dir>/<pid>.part; a new image after exec keeps the pid: then <pid>.<n>.part. */
static int open_part(void)
{
	int pid = (int)getpid();
	for (int i = 0; i < 1000; i++) {
		int n = i ? snprintf(part_path, sizeof part_path, "%s/%d.%d.part", part_dir, pid, i)
			  : snprintf(part_path, sizeof part_path, "%s/%d.part", part_dir, pid);
		if (n < 0 || (size_t)n >= sizeof part_path) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int fd = open(part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
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

/* Begin a part: header, PROCESS, META, MAPS, THREAD of the calling thread (index 0).  Writer lock held. */
static int begin_part(void)
{
	int fd = open_part();
	if (fd < 0)
		return -1;
	if (nk__nkp_writer_init(&wr, fd)) {
		close(fd);
		wr.fd = -1;
		return -1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	start_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	start_ns = mono_ns();
	part_pid = getpid();
	struct nk__nkp_process p = { .pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(), .start_ns = start_ns };
	(void)nk__nkp_write(&wr, NK__NKP_PROCESS, &p, sizeof p);
	write_meta_locked();
	write_maps_locked();
	write_thread_locked(0);
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
	u64_to(&p, atomic_load(&n_samples));
	str_to(&p, ", \"dropped\": ");
	u64_to(&p, atomic_load(&n_dropped));
	str_to(&p, ", \"budget\": ");
	u64_to(&p, nkp.budget);
	str_to(&p, ", \"budget_halvings\": ");
	u64_to(&p, nkp_budget_halvings());
	str_to(&p, ", \"budget_dropped\": ");
	u64_to(&p, atomic_load(&n_budget_dropped));
	str_to(&p, ", \"budget_spent_ns\": ");
	u64_to(&p, atomic_load(&budget_spent_ns));
	str_to(&p, ", \"threads\": ");
	u64_to(&p, (uint64_t)atomic_load(&thread_index) + 1);
	str_to(&p, ", \"forks\": ");
	u64_to(&p, atomic_load(&n_forks));
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
	(void)nk__nkp_write(&wr, NK__NKP_END, b, (size_t)(p - b));
}

/* ---------------------------------------------------------------- flusher */

static pthread_t flusher;
static atomic_int flusher_run;

static void *flusher_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	busy = 1; /* the flusher's own allocations are never tracked */
	nkp_own_thread_cpus();
	size_t last = 0;
	while (atomic_load(&flusher_run)) {
		/* Every 50 ms; every 2 ms while samples come fast enough to fill an eighth of the ring between drains
		 * (the trace sampler at rate 1), so that the ring does not overflow. */
		struct timespec ts = { 0, (last > RING_CAP / 8 ? 2 : 50) * 1000000L };
		nanosleep(&ts, NULL);
		wr_lock();
		last = closed ? 0 : ring_drain();
		wr_unlock();
		if (last)
			atomic_store_explicit(&emit_stuck, 0, memory_order_relaxed);
	}
	return NULL;
}

/*
 * Only samplers fill the ring (sampler none, i.e. hw, records allocations directly): without one no thread is
 * started, so a single-threaded program stays single-threaded (glibc's malloc keeps its lock-free fast path).
 * Samples that still arrive are written at close.
 */
static void start_flusher(void)
{
	if (!nkp.sampler)
		return;
	REAL(pthread_create_fn, pthread_create);
	if (!real_pthread_create)
		return;
	atomic_store(&flusher_run, 1);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (real_pthread_create(&flusher, &at, flusher_main, NULL))
		atomic_store(&flusher_run, 0);
	pthread_attr_destroy(&at);
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

/* Close the part for good (exit paths, not AS-safe). */
static void close_part(const char *how, int status, int sig)
{
	if (!nkp.active || !mine())
		return;
	if (atomic_load(&closed))
		return;
	samplers_stop();
	nkp_alloc_flush(0);
	wr_lock();
	if (!atomic_exchange(&closed, 1)) {
		atomic_store(&flusher_run, 0);
		ring_drain();
		write_maps_locked();
		write_end_locked(how, status, sig);
		part_close(wr.fd);
		wr.fd = -1;
	}
	wr_unlock();
}

static void at_exit_handler(void)
{
	close_part("exit", atomic_load(&exit_status), 0);
}

__attribute__((destructor)) static void nkp_fini(void)
{
	close_part("exit", atomic_load(&exit_status), 0);
}

/* ---------------------------------------------------------------- signals */

static const int fatal_sigs[] = { SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGSEGV };
#define NSIG_TAB 65
static struct sigaction prog_sa[NSIG_TAB]; /* the program's view of our signals */
static unsigned char owned[NSIG_TAB];      /* 1: our dispatcher is installed for it */
static atomic_int sig_lock;
static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER; /* nkp_hook_phase's name table */

static void dispatcher(int sig, siginfo_t *info, void *uctx);

static int is_sync_fault(int sig, const siginfo_t *info)
{
	return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && info && info->si_code > 0;
}

static void install_ours(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = dispatcher;
	/* The program's flags and mask, our SA_SIGINFO; SA_RESETHAND is done by the dispatcher. */
	sa.sa_flags = (prog_sa[sig].sa_flags & ~(SA_RESETHAND | SA_SIGINFO)) | SA_SIGINFO | SA_ONSTACK;
	if (prog_sa[sig].sa_handler == SIG_DFL || prog_sa[sig].sa_handler == SIG_IGN)
		sa.sa_flags |= SA_RESTART;
	sa.sa_mask = prog_sa[sig].sa_mask;
	(void)sys_sigaction(sig, &sa, NULL);
}

/* Fatal default action: flush the part AS-safely, END how=signal, die by @p sig. */
static void die_by(int sig, siginfo_t *info)
{
	if (nkp.active && nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
		nkp_trace_stop(); /* AS-safe: emits the first touches still pending */
	if (nkp.active && mine() && !atomic_load(&closed))
		nkp_alloc_flush(1);
	if (nkp.active && mine() && !atomic_load(&closed) && wr_trylock_signal()) {
		if (!atomic_exchange(&closed, 1)) {
			ring_drain();
			write_end_locked("signal", 128 + sig, sig);
			part_close(wr.fd);
			wr.fd = -1;
		}
		wr_unlock();
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	(void)sys_sigaction(sig, &dfl, NULL);
	owned[sig] = 0;
	if (!is_sync_fault(sig, info)) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, sig);
		raise(sig);
		pthread_sigmask(SIG_UNBLOCK, &u, NULL);
	}
	/* A real fault re-executes the instruction on return and dies with the default action. */
}

static void dispatcher(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno;
	if (sig == SIGSEGV && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_fault && nkp_pf_fault(sig, info, uctx)) {
		errno = saved;
		return;
	}
	struct sigaction p = prog_sa[sig];
	if (!(p.sa_flags & SA_SIGINFO) && p.sa_handler == SIG_IGN && !is_sync_fault(sig, info)) {
		errno = saved;
		return;
	}
	if (!(p.sa_flags & SA_SIGINFO) && (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN)) {
		die_by(sig, info);
		errno = saved;
		return;
	}
	if (p.sa_flags & SA_RESETHAND) {
		memset(&prog_sa[sig], 0, sizeof prog_sa[sig]);
		prog_sa[sig].sa_handler = SIG_DFL;
	}
	sigset_t old;
	int masked = pthread_sigmask(SIG_BLOCK, &p.sa_mask, &old) == 0;
	if (p.sa_flags & SA_NODEFER) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, sig);
		pthread_sigmask(SIG_UNBLOCK, &u, NULL);
	}
	errno = saved;
	if (p.sa_flags & SA_SIGINFO)
		p.sa_sigaction(sig, info, uctx);
	else
		p.sa_handler(sig);
	saved = errno;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
}

static int owned_sig(int sig)
{
	return nkp.active && sig > 0 && sig < NSIG_TAB && owned[sig];
}

NKP_EXPORT int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (!owned_sig(sig))
		return sys_sigaction(sig, sa, old);
	/* Signals blocked while the table changes: a handler calling sigaction() must not spin on our lock. */
	sigset_t all, saved;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	int z = 0;
	while (!atomic_compare_exchange_weak(&sig_lock, &z, 1)) {
		z = 0;
		sched_yield();
	}
	if (old)
		*old = prog_sa[sig];
	if (sa) {
		prog_sa[sig] = *sa;
		install_ours(sig);
	}
	atomic_store(&sig_lock, 0);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return 0;
}

NKP_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART; /* glibc's BSD semantics */
	sigemptyset(&sa.sa_mask);
	if (sig > 0 && sig < NSIG_TAB)
		sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old))
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

static void install_signals(void)
{
	for (size_t i = 0; i < sizeof fatal_sigs / sizeof fatal_sigs[0]; i++) {
		int sig = fatal_sigs[i];
		if (sys_sigaction(sig, NULL, &prog_sa[sig]))
			continue;
		owned[sig] = 1;
		install_ours(sig);
	}
}

/* ---------------------------------------------------------------- threads */

struct tstart {
	void *(*fn)(void *);
	void *arg;
	uint32_t index;
};

static void *thread_tramp(void *a)
{
	struct tstart t = *(struct tstart *)a;
	nkp_enter();
	free(a);
	nkp_leave();
	if (nkp.active) {
		wr_lock();
		if (!closed)
			write_thread_locked(t.index);
		wr_unlock();
		if (nkp.sampler == NK__SAMPLER_TIMER && nkp_timer_thread_begin)
			nkp_timer_thread_begin();
	}
	return t.fn(t.arg);
}

NKP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	REAL(pthread_create_fn, pthread_create);
	if (!real_pthread_create)
		return ENOSYS;
	if (!nkp.active || busy)
		return real_pthread_create(th, attr, fn, arg);
	nkp_enter();
	struct tstart *t = malloc(sizeof *t);
	nkp_leave();
	if (!t)
		return real_pthread_create(th, attr, fn, arg);
	t->fn = fn;
	t->arg = arg;
	t->index = atomic_fetch_add(&thread_index, 1) + 1;
	int rc = real_pthread_create(th, attr, thread_tramp, t);
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
	atomic_fetch_add(&n_forks, 1);
	nkp_alloc_fork_prepare();
	wr_lock();
}

static void fork_parent(void)
{
	if (!nkp.active)
		return;
	wr_unlock();
	nkp_alloc_fork_parent();
}

static void fork_child(void)
{
	if (!nkp.active)
		return;
	my_tid = 0;
	atomic_store(&wr_owner, 0);
	atomic_store(&sig_lock, 0);                /* a thread of the parent may have held them */
	pthread_mutex_init(&phase_lock, NULL);
	nkp_alloc_fork_child();
	if (wr.fd >= 0)
		part_close(wr.fd); /* the parent's part */
	wr.fd = -1;
	if (atomic_load(&closed)) {
		nkp.active = 0;
		return;
	}
	ring_reset();
	atomic_store(&n_samples, 0);
	atomic_store(&n_dropped, 0);
	atomic_store(&n_weighted, 0);
	atomic_store(&n_budget_dropped, 0);
	atomic_store(&budget_spent_ns, 0);
	atomic_store(&thread_index, 0);
	atomic_store(&exit_status, -1);
	wr_lock();
	if (begin_part()) {
		wr_unlock();
		nkp.active = 0;
		atomic_store(&closed, 1);
		return;
	}
	wr_unlock();
	nkp_alloc_replay(); /* the inherited blocks, as ALLOC records of this part */
	start_flusher();
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

static void save_env(void)
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
static char **env_with_ours(char *const envp[], char **r)
{
	size_t n = env_count(envp), add = 0;
	for (size_t k = 0; k < n_keep_env; k++) {
		size_t kl = strcspn(keep_env[k], "=") + 1, i;
		for (i = 0; i < n; i++)
			if (!strncmp(envp[i], keep_env[k], kl))
				break;
		if (i == n)
			add++;
	}
	if (!add)
		return NULL;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		r[m++] = envp[i];
	for (size_t k = 0; k < n_keep_env; k++) {
		size_t kl = strcspn(keep_env[k], "=") + 1, i;
		for (i = 0; i < n; i++)
			if (!strncmp(envp[i], keep_env[k], kl))
				break;
		if (i == n)
			r[m++] = keep_env[k];
	}
	r[m] = NULL;
	return r;
}

static off_t exec_mark = -1;

/* Before an exec: samples, MAPS, END how=exec; keep the writer lock so nothing follows END. */
static void exec_begin(void)
{
	if (!nkp.active || !mine() || atomic_load(&closed))
		return;
	if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
		nkp_trace_stop();
	nkp_alloc_flush(0);
	wr_lock();
	ring_drain();
	write_maps_locked();
	exec_mark = lseek(wr.fd, 0, SEEK_CUR);
	write_end_locked("exec", 0, 0);
	atomic_store(&closed, 1);
}

/* The exec failed: take END back and go on. */
static void exec_failed(void)
{
	if (exec_mark < 0)
		return;
	int e = errno;
	if (!ftruncate(wr.fd, exec_mark) && lseek(wr.fd, exec_mark, SEEK_SET) == exec_mark) {
		wr.records--;
		wr.bytes = (uint64_t)exec_mark;
		atomic_store(&closed, 0);
	}
	exec_mark = -1;
	wr_unlock();
	if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_start && !atomic_load(&closed))
		nkp_trace_start();
	errno = e;
}

static int do_execve(const char *path, char *const argv[], char *const envp[], int search)
{
	typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
	REAL(execve_fn, execve);
	REAL(execvpe_fn, execvpe);
	char *room[nkp.active ? env_count(envp) + n_keep_env + 1 : 1];
	char **env2 = nkp.active ? env_with_ours(envp, room) : NULL;
	char *const *use = env2 ? env2 : envp;
	if (nkp.active && getpid() != part_pid)
		atomic_fetch_add(&n_forks, 1); /* a vfork child (it shares the parent's memory): a child to wait for */
	exec_begin();
	int rc = search ? real_execvpe(path, argv, use) : real_execve(path, argv, use);
	exec_failed();
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
	return fn(pid, path, fa, at, argv, env2 ? env2 : envp);
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
	if (nkp.active && mine() && !atomic_load(&closed)) {
		if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
			nkp_trace_stop();
		if (wr_trylock_signal()) {
			if (!atomic_exchange(&closed, 1)) {
				ring_drain();
				write_end_locked("exit", status & 0xff, 0);
				part_close(wr.fd);
				wr.fd = -1;
			}
			wr_unlock();
		}
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

/* ---------------------------------------------------------------- descriptors */

/*
 * Programs that close every descriptor (daemons, closefrom/close_range before exec) must not close the part,
 * or a later open() would reuse its number and the runtime would write into the program's file.  The part's
 * descriptor is O_CLOEXEC, so pretending it was closed is invisible to an exec'ed image.
 */
static int is_part_fd(int fd)
{
	return nkp.active && fd >= 0 && fd == wr.fd;
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
	int fd = wr.fd;
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
	wr_lock();
	int n = fcntl(wr.fd, F_DUPFD_CLOEXEC, 512);
	if (n >= 0 && n != wr.fd)
		wr.fd = n; /* the old number is then replaced by the program's dup2, which closes it */
	wr_unlock();
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

/* ---------------------------------------------------------------- dlopen */

NKP_EXPORT void *dlopen(const char *file, int mode)
{
	REAL(dlopen_fn, dlopen);
	void *h = real_dlopen(file, mode);
	if (h && nkp.active && !busy) {
		nkp_alloc_rescan();
		nkp_write_maps();
	}
	return h;
}

/* ---------------------------------------------------------------- hooks */

#define MAX_PHASES 4096
static char *phase_names[MAX_PHASES]; /* id - 1 */
static size_t n_phases;

static int nkp_hook_active(void)
{
	return nkp.active && !atomic_load(&closed);
}

static int nkp_hook_phase(const char *name)
{
	if (!name || !*name)
		return NK_EINVAL;
	if (!nkp.active)
		return 0;
	size_t len = strlen(name);
	if (len > 4096)
		return NK_EINVAL;
	pthread_mutex_lock(&phase_lock);
	size_t id = 0;
	for (size_t i = 0; i < n_phases; i++)
		if (!strcmp(phase_names[i], name)) {
			id = i + 1;
			break;
		}
	if (!id) {
		if (n_phases == MAX_PHASES) {
			pthread_mutex_unlock(&phase_lock);
			return NK_ENOMEM;
		}
		nkp_enter();
		char *c = strdup(name);
		nkp_leave();
		if (!c) {
			pthread_mutex_unlock(&phase_lock);
			return NK_ENOMEM;
		}
		phase_names[n_phases++] = c;
		id = n_phases;
	}
	atomic_store(&nkp.phase, (uint16_t)id);
	struct nk__nkp_phase p = { .time_ns = nkp_now(), .tid = nkp_tid(), .id = (uint16_t)id, .kind = 0 };
	(void)nkp_record(NK__NKP_PHASE, &p, sizeof p, name, len);
	pthread_mutex_unlock(&phase_lock);
	return 0;
}

static int roi(int on)
{
	if (!nkp.active)
		return 0;
	atomic_store(&nkp.sampling, on);
	struct nk__nkp_phase p = {
		.time_ns = nkp_now(), .tid = nkp_tid(), .id = atomic_load(&nkp.phase), .kind = (uint16_t)(on ? 1 : 2)
	};
	(void)nkp_record(NK__NKP_PHASE, &p, sizeof p, NULL, 0);
	return 0;
}

static int nkp_hook_start(void)
{
	return roi(1);
}

static int nkp_hook_stop(void)
{
	return roi(0);
}

static int nkp_hook_name(const void *addr, size_t len, const char *name)
{
	if (!addr || !len || !name || !*name)
		return NK_EINVAL;
	if (!nkp.active)
		return 0;
	size_t nl = strlen(name);
	if (nl > 4096)
		return NK_EINVAL;
	struct nk__nkp_name n = { .addr = (uintptr_t)addr, .size = len, .time_ns = nkp_now() };
	(void)nkp_record(NK__NKP_NAME, &n, sizeof n, name, nl);
	return 0;
}

static void nkp_hook_alloc(const void *addr, size_t len, const char *name)
{
	if (!nkp.active || !addr || !len)
		return;
	nkp_alloc_track_numakit((uintptr_t)addr, len);
	if (name && *name)
		(void)nkp_hook_name(addr, len, name);
}

static void nkp_hook_free(const void *addr, size_t len)
{
	if (!nkp.active || !addr)
		return;
	nkp_alloc_untrack_numakit((uintptr_t)addr, len);
}

static void nkp_hook_moved(const void *addr, size_t len)
{
	if (!nkp.active || !addr || !len)
		return;
	if (nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_moved)
		nkp_pf_moved((uintptr_t)addr, len);
	else if (nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_moved)
		nkp_trace_moved((uintptr_t)addr, len);
}

/* nk_apply is about to place [addr, addr+len): no page there may stay revoked meanwhile.  A token for
 * nkp_hook_unhold, or -1. */
static int nkp_hook_hold(const void *addr, size_t len)
{
	if (!nkp.active || !addr || !len || nkp.sampler != NK__SAMPLER_PAGEFAULT || !nkp_pf_hold)
		return -1;
	uintptr_t a = (uintptr_t)addr;
	return nkp_pf_hold(a, a + len < a ? UINTPTR_MAX : a + len);
}

static void nkp_hook_unhold(int token)
{
	if (token >= 0 && nkp_pf_io_end)
		nkp_pf_io_end(token);
}

/* The table libnumakit pulls (runtime/runtime.h): nk_profile_*, nk_array, nk_apply reach the hooks above. */
NK__RUNTIME_DEFINE(NK__RUNTIME_SYM_PROF) = {
	NK__RUNTIME_HOOKS_HEADER,
	.active = nkp_hook_active,
	.start = nkp_hook_start,
	.stop = nkp_hook_stop,
	.phase = nkp_hook_phase,
	.name = nkp_hook_name,
	.array_alloc = nkp_hook_alloc,
	.array_free = nkp_hook_free,
	.hold = nkp_hook_hold,
	.unhold = nkp_hook_unhold,
	.moved = nkp_hook_moved,
};

/* ---------------------------------------------------------------- start */

static void load_cpu_nodes(void)
{
	DIR *d = opendir("/sys/devices/system/cpu");
	if (!d)
		return;
	int max = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		int c;
		char x;
		if (sscanf(e->d_name, "cpu%d%c", &c, &x) == 1 && c > max && c < 65536)
			max = c;
	}
	closedir(d);
	if (max < 0)
		return;
	/* mmap'd, not malloc'd: the SIGSEGV handler reads it, and heap pages may be revoked (small blocks). */
	int16_t *t = mmap(NULL, (size_t)(max + 1) * sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return;
	for (int c = 0; c <= max; c++) {
		t[c] = -1;
		char path[64];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", c);
		DIR *cd = opendir(path);
		if (!cd)
			continue;
		while ((e = readdir(cd))) {
			int n;
			char x;
			if (sscanf(e->d_name, "node%d%c", &n, &x) == 1 && n >= 0 && n < 32768) {
				t[c] = (int16_t)n;
				break;
			}
		}
		closedir(cd);
	}
	nkp.cpu_node = t;
	nkp.ncpus = max + 1;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end || v[0] == '-')
		return def;
	return x;
}

__attribute__((constructor(101))) static void nkp_init(void)
{
	real_exit_now = (void (*)(int))real("_exit"); /* here: dlsym is not AS-safe, _exit is */
	real_close_part = (int (*)(int))real("close");
	const char *dir = getenv("NK_PROF_DIR");
	if (!dir || !*dir || strlen(dir) >= sizeof part_dir - 32)
		return;
	nkp_enter();
	/* Absolute: a child forked after the program changed directory opens its part in the same folder. */
	if (dir[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd) || strlen(cwd) + 1 + strlen(dir) >= sizeof part_dir - 32) {
			nkp_leave();
			return;
		}
		size_t cl = strlen(cwd), dl = strlen(dir);
		memcpy(part_dir, cwd, cl);
		part_dir[cl] = '/';
		memcpy(part_dir + cl + 1, dir, dl + 1);
	} else {
		strcpy(part_dir, dir);
	}
	const char *s = getenv("NK_PROF_SAMPLER");
	if (!s || !*s || !strcmp(s, "none") || !strcmp(s, "hw"))
		nkp.sampler = 0;
	else if (!strcmp(s, "pagefault"))
		nkp.sampler = nkp_pf_start ? NK__SAMPLER_PAGEFAULT : 0;
	else if (!strcmp(s, "trace"))
		nkp.sampler = nkp_trace_start ? NK__SAMPLER_TRACE : 0;
	else if (!strcmp(s, "timer"))
		nkp.sampler = nkp_timer_start ? NK__SAMPLER_TIMER : 0;
	const char *r = getenv("NK_PROF_RATE");
	double rate = nkp.sampler == NK__SAMPLER_TRACE ? 1 : 1000;
	if (r && *r) {
		char *end;
		double x = strtod(r, &end);
		if (!*end && x > 0)
			rate = x;
	}
	nkp.rate = rate;
	nkp.min_size = env_u64("NK_PROF_MIN_SIZE", 65536);
	nkp.small_blocks = env_u64("NK_PROF_SMALL_BLOCKS", 0) == 1;
	nkp.budget = env_u64("NK_PROF_BUDGET", 4u << 20);
	nkp.seed = env_u64("NK_PROF_SEED", (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	nkp.page_size = (int)sysconf(_SC_PAGESIZE);
	atomic_store(&nkp.sampling, env_u64("NK_PROF_ROI", 0) == 1 ? 0 : 1);
	load_cpu_nodes();
	load_own_cpus();
	save_env();
	ring_reset();
	wr_lock();
	int rc = begin_part();
	wr_unlock();
	if (rc) {
		/* The one message the runtime prints: the program runs unprofiled and `numakit profile` finds no part. */
		char msg[PATH_MAX + 128];
		int n = snprintf(msg, sizeof msg, "libnumakit_prof: cannot write %s: %s; not profiling this process\n",
				 part_path, strerror(errno));
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
		nkp_leave();
		return;
	}
	nkp.active = 1;
	nkp_alloc_start();
	install_signals();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit_handler);
	start_flusher();
	nkp_leave();
	if (nkp.sampler == NK__SAMPLER_PAGEFAULT)
		nkp_pf_start();
	else if (nkp.sampler == NK__SAMPLER_TRACE)
		nkp_trace_start();
	else if (nkp.sampler == NK__SAMPLER_TIMER)
		nkp_timer_start();
}
