/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so runtime core (prof.h): the environment and the start of the runtime, its global state,
 * the per-thread basics (tid, re-entrancy guard, own cpus, real libc functions), and the hook table
 * libnumakit pulls (runtime/runtime.h: phases, ROI, names, nk_array, nk_apply).  The part file is part.c's,
 * the sample ring ring.c's, signals signal.c's, threads/fork/exec/exit process.c's (runtime_impl.h): it
 * writes records only through nkp_record and holds no interposer of libc.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "prof.h"
#include "runtime/runtime.h"
#include "runtime_impl.h"
#include "util/list.h"

struct nkp_state nkp;

TLS int nkp_tls_busy;
TLS uint32_t nkp_tls_tid;

/* ---------------------------------------------------------------- basics */

uint32_t nkp_tid(void)
{
	if (!nkp_tls_tid)
		nkp_tls_tid = (uint32_t)gettid();
	return nkp_tls_tid;
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

int nkp_own_cpu_random(uint64_t *rng)
{
	cpu_set_t set;
	int n = 0;

	if (have_own_cpus)
		set = own_cpus;
	else if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	int count = CPU_COUNT(&set);
	if (count < 2)
		return -1;
	int pick = (int)(nkp_rand(rng) % (uint64_t)count);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set) || n++ != pick)
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		return sched_setaffinity(0, sizeof one, &one) == 0 ? c : -1;
	}
	return -1;
}

int nkp_busy(void)
{
	return nkp_tls_busy;
}

void nkp_enter(void)
{
	nkp_tls_busy++;
}

void nkp_leave(void)
{
	nkp_tls_busy--;
}

void *nkp_real(const char *name)
{
	nkp_enter();
	void *p = dlsym(RTLD_NEXT, name);
	nkp_leave();
	return p;
}

/* ---------------------------------------------------------------- hooks */

static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER; /* nkp_hook_phase's name table */
#define MAX_PHASES 4096
static char *phase_names[MAX_PHASES]; /* id - 1 */
static size_t n_phases;

static int nkp_hook_active(void)
{
	return nkp.active && !atomic_load(&nkp_closed);
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

void nkp_hooks_after_fork(void)
{
	pthread_mutex_init(&phase_lock, NULL);
}

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
	nkp_process_resolve(); /* libc's _exit and close, here: dlsym is not AS-safe, they are */
	nkp_part_resolve();
	const char *dir = getenv("NK_PROF_DIR");
	if (!dir || !*dir || strlen(dir) >= sizeof nkp_part_dir - 32)
		return;
	nkp_enter();
	/* Absolute: a child forked after the program changed directory opens its part in the same folder. */
	if (dir[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd) || strlen(cwd) + 1 + strlen(dir) >= sizeof nkp_part_dir - 32) {
			nkp_leave();
			return;
		}
		size_t cl = strlen(cwd), dl = strlen(dir);
		memcpy(nkp_part_dir, cwd, cl);
		nkp_part_dir[cl] = '/';
		memcpy(nkp_part_dir + cl + 1, dir, dl + 1);
	} else {
		strcpy(nkp_part_dir, dir);
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
	nkp_save_env();
	nkp_ring_reset();
	nkp_wr_lock();
	int rc = nkp_begin_part();
	nkp_wr_unlock();
	if (rc) {
		/* The one message the runtime prints: the program runs unprofiled and `numakit profile` finds no part. */
		char msg[PATH_MAX + 128];
		int n = snprintf(msg, sizeof msg, "libnumakit_prof: cannot write %s: %s; not profiling this process\n",
				 nkp_part_path, strerror(errno));
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
		nkp_leave();
		return;
	}
	nkp.active = 1;
	nkp_alloc_start();
	nkp_signals_install();
	nkp_process_install(); /* fork handlers, atexit */
	nkp_flusher_start();
	nkp_leave();
	if (nkp.sampler == NK__SAMPLER_PAGEFAULT) {
		nkp_callers_scan_objects();
		nkp_pf_start();
	}
	else if (nkp.sampler == NK__SAMPLER_TRACE)
		nkp_trace_start();
	else if (nkp.sampler == NK__SAMPLER_TIMER)
		nkp_timer_start();
}
