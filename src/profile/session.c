/* SPDX-License-Identifier: BSD-3-Clause
 * nk_profile_run: one profiling session (docs/profile.md).
 *
 * The program runs with the runtime libnumakit_prof.so preloaded; each of
 * its processes writes <OUTPUT>.parts/<pid>.part (preload/prof/prof.h).  For
 * the hw sampler the perf events are opened here, on the child between fork
 * and exec (nk__os_spawn's hook), and drained while it runs; the runtime then
 * records allocations, threads and maps only.  When the program and its
 * children are gone the parts are merged into OUTPUT (nk__nkp_merge).
 *
 * The library neither prints nor handles signals: the caller forwards them
 * to the child (its pid comes with the first progress call) and decides what
 * the user sees.
 */
#include <errno.h>
#include <gelf.h>
#include <jansson.h>
#include <libelf.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "os/os.h"
#include "profile/hw.h"
#include "profile/mpimem.h"
#include "profile/nkp.h"
#include "util/list.h"
#include "util/error.h"
#include "util/strbuf.h"

extern char **environ;

#define RUNTIME_NAME "libnumakit_prof.so"
#define POLL_MS 100          /* drain hw buffers and check the child this often */
#define PROGRESS_NS 500000000ull
#define STRAGGLER_MS 2000    /* how long processes the program left behind may take to close their parts */
#define SETTLE_MS 100       /* before looking for them */
#define SETTLE_MAX_MS 2000  /* at most this long for the parts of children the END records announce */
#define QUERY_BATCH 1024     /* move_pages batch of the residency query */
#define DEFAULT_PF_RATE 1000

/*
 * The software sampler `auto` uses where hw is unavailable: pagefault.  Not yet timer, although its shares
 * do not depend on the program's speed: on real processors its interrupts land after a stalled instruction
 * (skid), so a stalled access is counted to the instruction after it, and its accuracy against the trace
 * sampler could not be checked in the guests (QEMU delivers a virtual cpu's interrupts between translated
 * blocks): docs/profile.md.
 */
#define AUTO_FALLBACK NK_SAMPLER_PAGEFAULT
#define MAX_ELF_CHECK (512u << 20)

struct part {
	char *path;
	int pid;
	uint64_t off;     /* next record to scan */
	uint64_t samples; /* SAMPLES seen so far */
	int ended;        /* END seen */
	int bad;          /* not a part or corrupt: scanning stopped */
	long forks;       /* the END record's "forks" (children the process made), -1 not said */
};

struct session {
	const nk_profile_opts *o;
	const nk_machine *m; /* never NULL */
	int requested;       /* enum nk_sampler */
	int sampler;         /* in use */
	struct nk__hw *hw;
	struct nk__hw_samples hws;
	size_t resolved;     /* hws.s[0..resolved) have page_node looked up */
	char fallback[256];
	char *dir;           /* absolute parts folder */
	struct part *parts;
	size_t n_parts;
	nk_error hw_err;
	int hook_rc;         /* the hook's NK_E* code when it aborted the start */
	const char *mpi;     /* the MPI ABI whose PMPI wrappers are preloaded ("openmpi", "mpich"), NULL none */
	char mpi_note[256];  /* why the program's MPI traffic is not recorded, "" when it is or not MPI */
};

static const char *sampler_name(int s)
{
	switch (s) {
	case NK_SAMPLER_AUTO:
		return "auto";
	case NK_SAMPLER_HW:
		return "hw";
	case NK_SAMPLER_PAGEFAULT:
		return "pagefault";
	case NK_SAMPLER_TRACE:
		return "trace";
	case NK_SAMPLER_TIMER:
		return "timer";
	}
	return "?";
}

/* ---- the runtime library ---- */

static char *path_join(const char *dir, const char *name)
{
	size_t len = strlen(dir) + 1 + strlen(name) + 1;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%s/%s", dir, name);
	return p;
}

static int find_runtime(const char *given, char **out, nk_error *err)
{
	const char *dirs[3] = { NULL, NULL, NULL };
	char *self = NULL;
	char build_dir[4200];
	char looked[600] = "";
	size_t used = 0;
	int rc;

	if (given) {
		if (!nk__os_exists(NULL, given))
			return nk__error(err, NK_ENOENT, "profiler runtime %s: no such file", given);
		*out = strdup(given);
		return *out ? 0 : nk__error(err, NK_ENOMEM, "out of memory");
	}
	rc = nk__os_object_dir((const void *)nk_profile_run, &self);
	if (rc == NK_ENOMEM)
		return nk__error(err, NK_ENOMEM, "out of memory");
	dirs[0] = self;
	/* A libnumakit still in its build tree (BUILD/src/) finds the runtime built beside it
	 * (BUILD/preload/prof/): derived from where the library is, so that no build-tree path is compiled
	 * into the installed library (whose folder is a libdir, never named src). */
	size_t sl = self ? strlen(self) : 0;
	if (sl > 4 && !strcmp(self + sl - 4, "/src")) {
		snprintf(build_dir, sizeof build_dir, "%.*s/preload/prof", (int)(sl - 4), self);
		dirs[1] = build_dir;
	}
#ifdef NK_INSTALL_LIBDIR
	dirs[2] = NK_INSTALL_LIBDIR;
#endif
	for (size_t i = 0; i < 3; i++) {
		char *cand;

		if (!dirs[i])
			continue;
		cand = path_join(dirs[i], RUNTIME_NAME);
		if (!cand) {
			free(self);
			return nk__error(err, NK_ENOMEM, "out of memory");
		}
		if (nk__os_exists(NULL, cand)) {
			free(self);
			*out = cand;
			return 0;
		}
		free(cand);
		if (used < sizeof looked) {
			int k = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", dirs[i]);
			if (k > 0)
				used += (size_t)k;
		}
	}
	free(self);
	return nk__error(err, NK_ENOENT, "profiler runtime %s not found (looked in %s)", RUNTIME_NAME,
			 used ? looked : "no folder");
}

/* ---- the trace sampler needs an instrumented program ---- */

/* 1 when the ELF file has a symbol of the load/store coverage callbacks, 0 when not, -1 unknown. */
static int has_trace_callbacks(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	int found = 0;

	if (nk__os_read_whole(path, MAX_ELF_CHECK, &data, &len, NULL) != 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_memory(data, len);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		free(data);
		return -1;
	}
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && (!strncmp(name, "__sanitizer_cov_load", 20) ||
				     !strncmp(name, "__sanitizer_cov_store", 21))) {
				found = 1;
				break;
			}
		}
	}
	elf_end(e);
	free(data);
	return found;
}

/* ---- MPI traffic: the PMPI wrappers (preload/mpi/pmpi.c) ---- */

/*
 * The MPI ABI of the libraries @p path needs directly (DT_NEEDED: mpicc, mpif90 and mpicxx link them so),
 * NULL when none.  A program that reaches MPI only through another library of its own (or dlopen, as
 * mpi4py does) is not seen: its traffic is not recorded.
 */
static const char *mpi_abi_of(const char *path)
{
	const char *abi = NULL;
	int fd = nk__os_open_read(path, NULL);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	while (e && elf_kind(e) == ELF_K_ELF && !abi && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && !abi && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_NEEDED)
				abi = nk__mpi_abi_of_library(elf_strptr(e, sh.sh_link, dyn.d_un.d_val));
		}
	}
	if (e)
		elf_end(e);
	nk__os_close(fd, NULL);
	return abi;
}

/*
 * The PMPI wrappers for @p prog beside @p runtime (libnumakit_pmpi_ABI.so), malloc'ed; NULL when the
 * program needs no MPI, or when they were not built for its MPI (s->mpi_note says so).
 */
static char *pmpi_for(struct session *s, const char *prog, const char *runtime)
{
	const char *abi = mpi_abi_of(prog);
	if (!abi)
		return NULL;
	const char *slash = strrchr(runtime, '/');
	char *path = nk__aprintf("%.*slibnumakit_pmpi_%s.so", slash ? (int)(slash - runtime + 1) : 0, runtime, abi);
	if (path && !nk__os_exists(NULL, path)) {
		snprintf(s->mpi_note, sizeof s->mpi_note,
			 "MPI traffic not recorded: the program uses %s, and numakit was built without its wrappers (%s)",
			 strcmp(abi, "mpich") ? "Open MPI" : "an MPI of MPICH's ABI", path);
		free(path);
		return NULL;
	}
	s->mpi = abi;
	return path;
}

/* ---- the child's environment ---- */

static void free_env(char **env)
{
	if (!env)
		return;
	for (char **p = env; *p; p++)
		free(*p);
	free(env);
}

static int env_push(char ***env, size_t *n, size_t *cap, char *s)
{
	if (!s)
		return -1;
	if (*n + 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		char **nv = realloc(*env, ncap * sizeof *nv);
		if (!nv) {
			free(s);
			return -1;
		}
		*env = nv;
		*cap = ncap;
	}
	(*env)[(*n)++] = s;
	(*env)[*n] = NULL;
	return 0;
}

/* 1 when @p env has the variable named by the first @p len bytes of @p name. */
static int env_has(char *const *env, const char *name, size_t len)
{
	for (char *const *p = env; p && *p; p++)
		if (!strncmp(*p, name, len) && (*p)[len] == '=')
			return 1;
	return 0;
}

/*
 * @p base without LD_PRELOAD and NK_PROF_*, plus LD_PRELOAD (the runtime
 * first, then what was preloaded), the runtime's variables and, for the
 * pagefault sampler, o->pagefault_env where @p base lacks them.
 */
static char **build_env(char *const *base, const char *runtime, const char *dir, const char *sampler,
			const nk_profile_opts *o, unsigned long long seed)
{
	char **env = NULL;
	size_t n = 0, cap = 0;
	const char *old_preload = NULL;
	int ok = 1;

	for (char *const *p = base; p && *p; p++) {
		if (!strncmp(*p, "LD_PRELOAD=", 11)) {
			old_preload = *p + 11;
			continue;
		}
		if (!strncmp(*p, "NK_PROF_", 8))
			continue;
		if (env_push(&env, &n, &cap, strdup(*p)))
			goto fail;
	}
	if (old_preload && *old_preload)
		ok = !env_push(&env, &n, &cap, nk__aprintf("LD_PRELOAD=%s:%s", runtime, old_preload));
	else
		ok = !env_push(&env, &n, &cap, nk__aprintf("LD_PRELOAD=%s", runtime));
	ok = ok && !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_DIR=%s", dir));
	ok = ok && !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_SAMPLER=%s", sampler));
	if (ok && o->rate > 0)
		ok = !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_RATE=%.17g", o->rate));
	if (ok && o->min_size)
		ok = !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_MIN_SIZE=%zu", o->min_size));
	if (ok && o->roi)
		ok = !env_push(&env, &n, &cap, strdup("NK_PROF_ROI=1"));
	if (ok && o->small_blocks)
		ok = !env_push(&env, &n, &cap, strdup("NK_PROF_SMALL_BLOCKS=1"));
	ok = ok && !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_SEED=%llu", seed));
	if (ok && o->max_overhead > 0)
		ok = !env_push(&env, &n, &cap, nk__aprintf("NK_PROF_MAX_OVERHEAD=%.17g", o->max_overhead));
	/* Settings for the pagefault sampler only, where the program's environment does not have them. */
	for (const char *const *e = o->pagefault_env; ok && e && *e && !strcmp(sampler, "pagefault"); e++) {
		const char *eq = strchr(*e, '='); /* NAME=VALUE: checked by check_opts */
		if (env_has(base, *e, (size_t)(eq - *e)))
			continue;
		ok = !env_push(&env, &n, &cap, strdup(*e));
	}
	/* The cpus the program was given: the runtime's flusher runs on all of them, not on the one an
	 * OpenMP runtime bound the main thread to before it was started. */
	nk__ilist cpus = { 0 };
	if (ok && nk__os_affinity(&cpus) == 0 && cpus.n) {
		size_t len = cpus.n * 12 + 16;
		char *v = malloc(len);
		ok = v != NULL;
		if (ok) {
			size_t at = (size_t)snprintf(v, len, "NK_PROF_CPUS=");
			for (size_t i = 0; i < cpus.n; i++)
				at += (size_t)snprintf(v + at, len - at, "%s%d", i ? "," : "", cpus.v[i]);
			ok = !env_push(&env, &n, &cap, v);
		}
	}
	nk__ilist_free(&cpus);
	if (ok)
		return env;
fail:
	free_env(env);
	return NULL;
}

static const char *env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (char *const *p = env; p && *p; p++)
		if (!strncmp(*p, name, len) && (*p)[len] == '=')
			return *p + len + 1;
	return NULL;
}

/* ---- the parts folder ---- */

/*
 * "<pid>.part", or "<pid>.<anything>.part": a process that calls exec keeps
 * its pid and the new image writes a second part, which the runtime must
 * name apart from the first.
 */
static int is_part_name(const char *name, int *pid)
{
	size_t len = strlen(name);
	char *end;
	long v = strtol(name, &end, 10);

	if (name[0] < '0' || name[0] > '9' || *end != '.' || v <= 0 || v > INT_MAX || len < 6 || strcmp(name + len - 5, ".part"))
		return 0;
	*pid = (int)v;
	return 1;
}

/* Read the records added to one part since the last scan (headers only, payloads skipped). */
/* The END record at @p off: the part is complete; how many children the process made, if it says. */
static void end_seen(struct part *p, uint64_t off, uint64_t len)
{
	char b[1024];
	size_t n = len < sizeof b - 1 ? (size_t)len : sizeof b - 1;

	p->ended = 1;
	p->forks = -1;
	if (nk__os_read_at(p->path, off, b, n, NULL) != (long)n)
		return;
	b[n] = '\0';
	const char *f = strstr(b, "\"forks\": ");
	if (f) {
		char *e;
		long v = strtol(f + 9, &e, 10);
		if (e != f + 9 && v >= 0)
			p->forks = v;
	}
}

static void scan_part(struct part *p)
{
	uint64_t size;

	if (p->bad || nk__os_file_size(p->path, &size, NULL))
		return;
	if (p->off == 0) {
		struct nk__nkp_file_header fh;

		if (size < sizeof fh)
			return;
		if (nk__os_read_at(p->path, 0, &fh, sizeof fh, NULL) != (long)sizeof fh ||
		    memcmp(fh.magic, NK__NKP_MAGIC, sizeof fh.magic) || fh.header_size < sizeof fh) {
			p->bad = 1;
			return;
		}
		p->off = fh.header_size;
	}
	while (p->off + sizeof(struct nk__nkp_record_header) <= size) {
		struct nk__nkp_record_header h;

		if (nk__os_read_at(p->path, p->off, &h, sizeof h, NULL) != (long)sizeof h)
			return;
		if (h.length > NK__NKP_MAX_PAYLOAD) {
			p->bad = 1;
			return;
		}
		if (p->off + sizeof h + h.length > size)
			return; /* being written */
		if ((h.type & ~NK__NKP_OPTIONAL) == NK__NKP_SAMPLES)
			p->samples += h.length / sizeof(struct nk__nkp_sample);
		else if (h.type == NK__NKP_END)
			end_seen(p, p->off + sizeof h, h.length);
		p->off += sizeof h + h.length;
	}
}

/* Find new parts and scan all.  Returns 0 or NK_ENOMEM. */
static int scan_parts(struct session *s)
{
	char **names = NULL;
	size_t n = 0;

	if (nk__os_list_dir(NULL, s->dir, NULL, &names, &n) == NK_ENOMEM)
		return NK_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int pid, known = 0;
		size_t dlen = strlen(s->dir);

		if (!is_part_name(names[i], &pid))
			continue;
		for (size_t j = 0; j < s->n_parts && !known; j++)
			known = !strncmp(s->parts[j].path, s->dir, dlen) && s->parts[j].path[dlen] == '/' &&
				!strcmp(s->parts[j].path + dlen + 1, names[i]);
		if (known)
			continue;
		struct part *np = realloc(s->parts, (s->n_parts + 1) * sizeof *np);
		if (!np)
			goto oom;
		s->parts = np;
		memset(&np[s->n_parts], 0, sizeof *np);
		np[s->n_parts].pid = pid;
		np[s->n_parts].path = path_join(s->dir, names[i]);
		if (!np[s->n_parts].path)
			goto oom;
		s->n_parts++;
	}
	nk__os_free_names(names, n);
	for (size_t j = 0; j < s->n_parts; j++)
		scan_part(&s->parts[j]);
	return 0;
oom:
	nk__os_free_names(names, n);
	return NK_ENOMEM;
}

/*
 * Whether every process the ended parts announce has a part: 1 + the forks their END records count
 * distinct pids (a part of each forked child; an exec'd image writes under the same pid).  A part
 * that did not say its forks, or has not ended, cannot tell: then 1 (nothing more to wait for here).
 */
static int parts_announced_present(const struct session *s)
{
	long want = 1;
	size_t pids = 0;

	for (size_t i = 0; i < s->n_parts; i++) {
		if (!s->parts[i].ended || s->parts[i].forks < 0)
			return 1;
		want += s->parts[i].forks;
		int seen = 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = s->parts[k].pid == s->parts[i].pid;
		pids += !seen;
	}
	return (long)pids >= want;
}

static uint64_t total_samples(const struct session *s)
{
	uint64_t t = s->hws.n;

	for (size_t i = 0; i < s->n_parts; i++)
		t += s->parts[i].samples;
	return t;
}

static void remove_parts(struct session *s)
{
	char **names = NULL;
	size_t n = 0;

	/* Only what the runtime writes there: <pid>.part. */
	if (nk__os_list_dir(NULL, s->dir, NULL, &names, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			int pid;
			char *p;

			if (!is_part_name(names[i], &pid) || !(p = path_join(s->dir, names[i])))
				continue;
			nk__os_remove(p, NULL);
			free(p);
		}
		nk__os_free_names(names, n);
	}
}

/* ---- hw samples ---- */

static int spawn_hook(int pid, void *arg)
{
	struct session *s = arg;
	int rc;

	if (s->requested != NK_SAMPLER_HW && s->requested != NK_SAMPLER_AUTO)
		return 0;
	rc = nk__hw_open(pid, s->m, s->o->rate, &s->hw, &s->hw_err);
	if (rc == 0) {
		s->sampler = NK_SAMPLER_HW;
		return 0; /* environment 0: NK_PROF_SAMPLER=none */
	}
	if (s->requested == NK_SAMPLER_HW || rc == NK_ENOMEM) {
		s->hook_rc = rc;
		return rc;
	}
	snprintf(s->fallback, sizeof s->fallback, "%.250s", s->hw_err.message[0] ? s->hw_err.message : nk_strerror(rc));
	s->sampler = AUTO_FALLBACK;
	return 1; /* environment 1: the software fallback */
}

/* page_node of the samples drained since the last call, batched move_pages queries per process. */
static void resolve_pages(struct session *s)
{
	uintptr_t mask = ~(uintptr_t)(nk__os_page_size() - 1);
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];
	size_t idx[QUERY_BATCH];
	size_t next = s->resolved;

	/* One pass per distinct process among the new samples (usually one). */
	while (next < s->hws.n) {
		uint32_t pid = s->hws.pid[next];
		size_t k = 0, first_other = s->hws.n;

		for (size_t j = next; j < s->hws.n; j++) {
			if (s->hws.s[j].page_node != -1)
				continue;
			if (s->hws.pid[j] != pid) {
				if (first_other == s->hws.n)
					first_other = j;
				continue;
			}
			pages[k] = (void *)((uintptr_t)s->hws.s[j].addr & mask);
			idx[k++] = j;
			if (k == QUERY_BATCH || j + 1 == s->hws.n) {
				long rc = nk__os_query_pages((int)pid, k, pages, status, NULL);
				/* Unknown pages (process gone, page never touched) get -3, fixed to -1 below. */
				for (size_t q = 0; q < k; q++)
					s->hws.s[idx[q]].page_node =
						(int16_t)(rc == 0 && status[q] >= 0 ? status[q] : -3);
				k = 0;
			}
		}
		if (k) {
			long rc = nk__os_query_pages((int)pid, k, pages, status, NULL);
			for (size_t q = 0; q < k; q++)
				s->hws.s[idx[q]].page_node = (int16_t)(rc == 0 && status[q] >= 0 ? status[q] : -3);
		}
		next = first_other;
	}
	for (size_t j = s->resolved; j < s->hws.n; j++)
		if (s->hws.s[j].page_node == -3)
			s->hws.s[j].page_node = -1;
	s->resolved = s->hws.n;
}

static int drain_hw(struct session *s, nk_error *err)
{
	size_t before;
	int rc;

	if (!s->hw)
		return 0;
	before = s->hws.n;
	rc = nk__hw_drain(s->hw, &s->hws, err);
	if (rc)
		return rc;
	/* The drain leaves page_node -1; query only the new samples. */
	if (s->hws.n > before) {
		s->resolved = before;
		resolve_pages(s);
	}
	return 0;
}

/* ---- a rank of a job (RUN "job", docs/formats.md) ---- */

static const char *launcher_key(int l)
{
	switch (l) {
	case NK_LAUNCHER_OPENMPI:
		return "openmpi";
	case NK_LAUNCHER_PMI:
		return "pmi";
	case NK_LAUNCHER_PMIX:
		return "pmix";
	case NK_LAUNCHER_SLURM:
		return "slurm";
	}
	return NULL;
}

#define MAX_JOB_RANKS (1 << 24)
#define MAX_HOST_NAME 255

/* A text the report can print: printable, no quote or backslash games needed beyond JSON's own. */
static int job_text_ok(const char *s, size_t max)
{
	size_t n = 0;
	for (; s && *s; s++, n++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return 0;
	return n <= max;
}

static int check_job(const nk_profile_job *j, nk_error *err)
{
	if (!launcher_key(j->launcher))
		return nk__error(err, NK_EINVAL, "job: unknown launcher %d", j->launcher);
	if (j->rank < 0 || j->rank >= MAX_JOB_RANKS)
		return nk__error(err, NK_EINVAL, "job: rank %d out of range 0..%d", j->rank, MAX_JOB_RANKS - 1);
	if (j->size != -1 && (j->size <= j->rank || j->size > MAX_JOB_RANKS))
		return nk__error(err, NK_EINVAL, "job: size %d: expected -1 or more than rank %d", j->size, j->rank);
	if ((j->local_rank == -1) != (j->local_size == -1) || j->local_rank < -1 ||
	    (j->local_size != -1 && (j->local_size < 1 || j->local_rank >= j->local_size || j->local_size > MAX_JOB_RANKS)))
		return nk__error(err, NK_EINVAL, "job: local rank %d of %d: expected 0 <= local rank < local size, or both -1",
				 j->local_rank, j->local_size);
	if (!job_text_ok(j->host, MAX_HOST_NAME))
		return nk__error(err, NK_EINVAL, "job: host name longer than %d bytes or with control characters",
				 MAX_HOST_NAME);
	if (!job_text_ok(j->id, NK_JOB_ID_MAX))
		return nk__error(err, NK_EINVAL, "job: id longer than %d bytes or with control characters", NK_JOB_ID_MAX);
	return 0;
}

static json_t *job_json(const nk_profile_job *j)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "launcher", json_string(launcher_key(j->launcher)));
	json_object_set_new(o, "rank", json_integer(j->rank));
	json_object_set_new(o, "size", j->size >= 0 ? json_integer(j->size) : json_null());
	json_object_set_new(o, "local_rank", j->local_rank >= 0 ? json_integer(j->local_rank) : json_null());
	json_object_set_new(o, "local_size", j->local_size >= 0 ? json_integer(j->local_size) : json_null());
	json_object_set_new(o, "host", j->host && *j->host ? json_string(j->host) : json_null());
	json_object_set_new(o, "id", j->id && *j->id ? json_string(j->id) : json_null());
	/* The cpus the rank was given when it started (its share: `numakit run --cpus rank`, or the
	 * launcher's binding).  A job's ranks on different shares are pooled relative to them (job.c). */
	nk__ilist cpus = { 0 };
	json_t *a = json_array();
	if (a && nk__os_affinity(&cpus) == 0)
		for (size_t i = 0; i < cpus.n; i++)
			json_array_append_new(a, json_integer(cpus.v[i]));
	nk__ilist_free(&cpus);
	if (a && json_array_size(a))
		json_object_set_new(o, "cpus", a);
	else
		json_decref(a);
	return o;
}

/* ---- the RUN record ---- */

static char *run_json(const struct session *s, char *const argv[], uint64_t start_unix, uint64_t wall,
		      const nk_profile_run_result *r, unsigned long long seed)
{
	json_t *o = json_object(), *cmd = json_array();
	double rate = s->o->rate;
	char *text = NULL;

	if (!o || !cmd)
		goto out;
	for (size_t i = 0; argv[i]; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	if (rate <= 0 && (s->sampler == NK_SAMPLER_PAGEFAULT || s->sampler == NK_SAMPLER_TIMER))
		rate = DEFAULT_PF_RATE;
	if (rate <= 0 && s->sampler == NK_SAMPLER_TRACE)
		rate = 1;
	json_object_set_new(o, "numakit", json_string(nk_version()));
	json_object_set(o, "command", cmd);
	json_object_set_new(o, "sampler", json_string(sampler_name(s->sampler)));
	json_object_set_new(o, "requested_sampler", json_string(sampler_name(s->requested)));
	if (s->fallback[0])
		json_object_set_new(o, "fallback", json_string(s->fallback));
	if (s->hw)
		json_object_set_new(o, "hw_events", json_string(nk__hw_describe(s->hw)));
	if (s->mpi)
		json_object_set_new(o, "mpi_traffic", json_string(s->mpi));
	json_object_set_new(o, "rate", json_real(rate));
	json_object_set_new(o, "seed", json_integer((json_int_t)(seed & 0x7fffffffffffffffull)));
	json_object_set_new(o, "start_unix_ns", json_integer((json_int_t)start_unix));
	json_object_set_new(o, "wall_ns", json_integer((json_int_t)wall));
	json_object_set_new(o, "exit_status", json_integer(r->exit_status));
	json_object_set_new(o, "signal", json_integer(r->term_signal));
	json_object_set_new(o, "processes", json_integer(r->processes));
	json_object_set_new(o, "samples", json_integer((json_int_t)r->samples));
	if (s->hws.lost)
		json_object_set_new(o, "hw_lost", json_integer((json_int_t)s->hws.lost));
	if (s->o->job) {
		json_t *j = job_json(s->o->job);
		if (!j)
			goto out;
		json_object_set_new(o, "job", j);
	}
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
out:
	json_decref(cmd);
	json_decref(o);
	return text;
}

static void add_warning(nk_profile_run_result *r, const char *w)
{
	size_t used = strlen(r->warnings);

	if (!w || !*w || used + 3 >= sizeof r->warnings)
		return;
	snprintf(r->warnings + used, sizeof r->warnings - used, "%s%s", used ? "; " : "", w);
}

/* ---- the session ---- */

static int check_opts(const nk_profile_opts *o, char *const argv[], nk_error *err)
{
	if (!o || !argv || !argv[0] || !argv[0][0])
		return nk__error(err, NK_EINVAL, "no program to profile");
	if (!o->output || !o->output[0])
		return nk__error(err, NK_EINVAL, "no output file given");
	if (o->sampler < NK_SAMPLER_AUTO || o->sampler > NK_SAMPLER_TIMER)
		return nk__error(err, NK_EINVAL, "unknown sampler %d", o->sampler);
#ifndef NK_HAVE_TIMER_SAMPLER
	if (o->sampler == NK_SAMPLER_TIMER)
		return nk__error(err, NK_ENOSYS,
				 "the timer sampler is not in this build (it needs the Zydis decoder, Debian package "
				 "libzydis-dev, on x86-64): use --sampler pagefault");
#endif
	if (!isfinite(o->rate) || o->rate < 0 || o->rate > 1e9)
		return nk__error(err, NK_EINVAL, "rate %g: expected a positive number (0 = default)", o->rate);
	if (o->sampler == NK_SAMPLER_TRACE && o->rate != 0 && (o->rate < 1 || o->rate != floor(o->rate)))
		return nk__error(err, NK_EINVAL,
				 "rate %g: the trace sampler records one access in RATE, an integer >= 1",
				 o->rate);
	if (o->small_blocks != 0 && o->small_blocks != 1)
		return nk__error(err, NK_EINVAL, "small_blocks must be 0 or 1");
	if (o->roi != 0 && o->roi != 1)
		return nk__error(err, NK_EINVAL, "roi must be 0 or 1");
	for (size_t i = 0; o->pagefault_env && o->pagefault_env[i]; i++) {
		const char *e = o->pagefault_env[i], *eq = strchr(e, '=');
		if (!eq || eq == e)
			return nk__error(err, NK_EINVAL, "pagefault_env entry %zu '%s': expected NAME=VALUE", i, e);
	}
	return o->job ? check_job(o->job, err) : 0;
}

int nk_profile_run(const nk_machine *m, const nk_profile_opts *o, char *const argv[], nk_profile_run_result *res,
		   nk_error *err)
{
	struct session s;
	nk_profile_run_result r;
	nk_machine *live = NULL;
	char *const *base;
	char *runtime = NULL, *prog = NULL, *dir_rel = NULL, *machine_json = NULL, *run = NULL, *warn = NULL;
	char **env_a = NULL, **env_b = NULL;
	const char **part_paths = NULL;
	unsigned long long seed;
	uint64_t t0, start_unix, last_progress;
	int rc, pid, status = 0, ended = 0, e = 0;

	memset(&s, 0, sizeof s);
	memset(&r, 0, sizeof r);
	rc = check_opts(o, argv, err);
	if (rc)
		return rc;
	s.o = o;
	s.requested = o->sampler;
	s.sampler = o->sampler == NK_SAMPLER_AUTO ? AUTO_FALLBACK : o->sampler;
	base = o->envp ? o->envp : environ;

	/* Find the program in the program's own PATH, as its shell would. */
	rc = nk__os_find_program(argv[0], env_get(base, "PATH"), &prog);
	if (rc == NK_ENOMEM) {
		rc = nk__error(err, rc, "out of memory");
		goto out;
	}
	if (rc) {
		rc = nk__error(err, rc == NK_EPERM ? NK_EPERM : NK_ENOENT, "%s: %s", argv[0],
			       rc == NK_EPERM ? "not an executable file" : "command not found");
		goto out;
	}
	if (o->sampler == NK_SAMPLER_TRACE && has_trace_callbacks(prog) == 0) {
		rc = nk__error(err, NK_EINVAL,
			       "%s was not built for the trace sampler (no __sanitizer_cov_load/store callbacks): "
			       "rebuild it with `numakit cc`",
			       prog);
		goto out;
	}
	rc = find_runtime(o->runtime, &runtime, err);
	if (rc)
		goto out;
	if (!o->no_mpi_traffic) {
		char *pmpi = pmpi_for(&s, prog, runtime);
		if (pmpi) {
			/* the wrappers after the runtime, whose table they look for; both before the program's libmpi */
			char *both = nk__aprintf("%s:%s", runtime, pmpi);
			free(pmpi);
			if (!both) {
				rc = nk__error(err, NK_ENOMEM, "out of memory");
				goto out;
			}
			free(runtime);
			runtime = both;
		}
	}
	if (!m) {
		rc = nk_machine_load_live(&live, err);
		if (rc)
			goto out;
		m = live;
	}
	s.m = m;
	rc = nk_machine_to_json(m, NK_JSON_COMPACT, &machine_json);
	if (rc) {
		rc = nk__error(err, rc, "cannot describe the machine: %s", nk_strerror(rc));
		goto out;
	}

	/* The parts folder next to the output, absolute: the program may change folders. */
	dir_rel = nk__aprintf("%s.parts", o->output);
	if (!dir_rel) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out;
	}
	rc = nk__os_mkdir(dir_rel, &e);
	if (rc) {
		rc = nk__error(err, e == ENOENT ? NK_ENOENT : NK_EIO, "cannot create %s: %s", dir_rel, strerror(e));
		goto out;
	}
	if (nk__os_realpath(dir_rel, &s.dir, &e)) {
		rc = nk__error(err, NK_EIO, "%s: %s", dir_rel, strerror(e));
		goto out_rmdir;
	}
	remove_parts(&s); /* a previous run that failed to merge left them */

	seed = o->seed ? o->seed : (unsigned long long)nk__os_realtime_ns();
	if (s.requested == NK_SAMPLER_HW || s.requested == NK_SAMPLER_AUTO) {
		env_a = build_env(base, runtime, s.dir, "none", o, seed);
		env_b = build_env(base, runtime, s.dir, sampler_name(AUTO_FALLBACK), o, seed);
	} else {
		env_a = build_env(base, runtime, s.dir, sampler_name(s.sampler), o, seed);
	}
	if (!env_a || (s.requested <= NK_SAMPLER_HW && !env_b)) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out_rmdir;
	}

	char *const *const envps[2] = { env_a, env_b };
	start_unix = nk__os_realtime_ns();
	t0 = nk__os_now_ns();
	pid = nk__os_spawn(prog, argv, envps, env_b ? 2 : 1, spawn_hook, &s, &e);
	if (pid < 0) {
		if (s.hook_rc == NK_ENOSYS)
			rc = nk__error(err, NK_ENOSYS, "hw sampler unavailable: %s", s.hw_err.message);
		else if (s.hook_rc)
			rc = nk__error(err, s.hook_rc, "%s",
				       s.hw_err.message[0] ? s.hw_err.message : nk_strerror(s.hook_rc));
		else
			rc = nk__error(err, e == ENOENT ? NK_ENOENT : e == EACCES ? NK_EPERM : NK_EIO,
				       "cannot run %s: %s", prog, strerror(e));
		goto out_rmdir;
	}
	if (o->progress) {
		nk_profile_progress p = { 0, 0, pid, s.sampler };
		o->progress(o->progress_arg, &p);
	}
	last_progress = t0;
	while (!ended) {
		int w = nk__os_wait(pid, POLL_MS, &status, NULL);
		uint64_t now;

		if (w < 0) {
			/* ECHILD: someone else reaped it (a SIGCHLD handler set to SIG_IGN). */
			add_warning(&r, "the program's exit status is unknown (reaped elsewhere)");
			status = -1;
			ended = 1;
		} else if (w == 1) {
			ended = 1;
		}
		rc = drain_hw(&s, err);
		if (rc)
			goto out_kill;
		now = nk__os_now_ns();
		if (!ended && now - last_progress >= PROGRESS_NS) {
			if (scan_parts(&s)) {
				rc = nk__error(err, NK_ENOMEM, "out of memory");
				goto out_kill;
			}
			if (o->progress) {
				nk_profile_progress p = { (double)(now - t0) / 1e9, total_samples(&s), pid, s.sampler };
				o->progress(o->progress_arg, &p);
			}
			last_progress = now;
		}
	}
	uint64_t wall = nk__os_now_ns() - t0;

	/*
	 * Processes the program forked may outlive it: give them a moment to
	 * close their parts.  A child forked just before the program exited may
	 * not have created its part yet: settle a little first, unless the
	 * program's parts are complete and say it made no children (the END
	 * record's "forks"; children of posix_spawn are not counted: one that
	 * outlives the program may be missed, as it could before).
	 */
	if (scan_parts(&s)) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out_rmdir;
	}
	int may_have_children = 0;
	for (size_t i = 0; i < s.n_parts; i++)
		may_have_children |= !s.parts[i].ended || s.parts[i].forks != 0 || s.parts[i].pid != pid;
	if (may_have_children || !s.n_parts)
		nk__os_sleep_ms(SETTLE_MS);
	/* The END records count the forks: a child's part is created in the child right after its fork, but
	 * on a loaded machine that took longer than SETTLE_MS (the session test's child came 30 ms late and
	 * was missed under a parallel sanitizer run).  Wait while fewer processes than announced have parts. */
	for (int waited = SETTLE_MS; may_have_children && waited < SETTLE_MAX_MS; waited += 20) {
		if (scan_parts(&s)) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto out_rmdir;
		}
		if (parts_announced_present(&s))
			break;
		nk__os_sleep_ms(20);
	}
	for (int waited = 0;; waited += 50) {
		int running = 0;

		if (scan_parts(&s)) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto out_rmdir;
		}
		for (size_t i = 0; i < s.n_parts; i++)
			if (!s.parts[i].ended && s.parts[i].pid != pid && nk__os_alive(s.parts[i].pid))
				running++;
		if (!running)
			break;
		if (waited >= STRAGGLER_MS) {
			char w[160];
			snprintf(w, sizeof w, "%d process(es) of the program still ran %d s after it exited; "
				 "their profile is incomplete", running, STRAGGLER_MS / 1000);
			add_warning(&r, w);
			break;
		}
		drain_hw(&s, NULL);
		nk__os_sleep_ms(50);
	}
	if (s.hw) {
		drain_hw(&s, NULL);
		nk__hw_close(s.hw);
		s.hw = NULL;
	}
	if (s.hws.lost) {
		char w[96];
		snprintf(w, sizeof w, "hw: %llu samples lost (ring buffers overflowed)",
			 (unsigned long long)s.hws.lost);
		add_warning(&r, w);
	}

	if (status == -1) {
		r.exit_status = -1;
	} else if (WIFSIGNALED(status)) {
		r.exit_status = -1;
		r.term_signal = WTERMSIG(status);
	} else {
		r.exit_status = WEXITSTATUS(status);
	}
	r.sampler = s.sampler;
	snprintf(r.fallback, sizeof r.fallback, "%s", s.fallback);
	r.samples = total_samples(&s);
	/* Processes, not parts: an image started by exec writes a second part under the same pid. */
	for (size_t i = 0; i < s.n_parts; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = s.parts[j].pid == s.parts[i].pid;
		r.processes += !seen;
	}
	for (size_t i = 0; i < s.n_parts; i++)
		if (!s.parts[i].ended) {
			char w[128];
			snprintf(w, sizeof w, "process %d ended without closing its part (killed?)", s.parts[i].pid);
			add_warning(&r, w);
		}
	if (s.mpi_note[0])
		add_warning(&r, s.mpi_note);
	if (s.n_parts == 0)
		add_warning(&r, "no process wrote a part: was the runtime preloaded? (static or setuid programs "
				"cannot be profiled)");

	run = run_json(&s, argv, start_unix, wall, &r, seed);
	part_paths = calloc(s.n_parts ? s.n_parts : 1, sizeof *part_paths);
	if (!run || !part_paths) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out_keep;
	}
	for (size_t i = 0; i < s.n_parts; i++)
		part_paths[i] = s.parts[i].path;
	rc = nk__nkp_merge(part_paths, s.n_parts, run, machine_json, s.hws.s, s.hws.pid, s.hws.n, o->output, &warn,
			   err);
	if (rc) {
		if (err) {
			char tail[sizeof err->message];
			snprintf(tail, sizeof tail, "%.300s (the parts are kept in %.180s)", err->message, s.dir);
			snprintf(err->message, sizeof err->message, "%s", tail);
		}
		goto out_keep;
	}
	add_warning(&r, warn);
	remove_parts(&s);
	nk__os_remove(s.dir, NULL);
	if (res)
		*res = r;
	rc = 0;
	goto out;

out_kill:
	nk__os_kill(pid, SIGKILL, NULL);
	nk__os_wait(pid, 1000, NULL, NULL);
out_rmdir:
	if (s.dir) {
		remove_parts(&s);
		nk__os_remove(s.dir, NULL);
	} else if (dir_rel) {
		nk__os_remove(dir_rel, NULL);
	}
out_keep:
out:
	if (s.hw) /* opened on a child that then failed to exec, or an error while it ran */
		nk__hw_close(s.hw);
	free(warn);
	free(part_paths);
	free(run);
	free_env(env_a);
	free_env(env_b);
	for (size_t i = 0; i < s.n_parts; i++)
		free(s.parts[i].path);
	free(s.parts);
	nk__hw_samples_free(&s.hws);
	free(s.dir);
	free(dir_rel);
	free(machine_json);
	free(runtime);
	free(prog);
	nk_machine_free(live);
	return rc;
}
