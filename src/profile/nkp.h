/* SPDX-License-Identifier: BSD-3-Clause
 * The profile file (.nkp): one sample format for every sampler, and the
 * records that let `numakit report` attribute samples offline.
 *
 * Contract between the profiler runtime (preload/prof/, writes one *part*
 * file per process), `numakit profile` (merges the parts into one .nkp) and
 * the readers (report, advise, whatif).  Documented for users in
 * docs/formats.md ("Profile file").
 *
 * Layout, all integers little-endian (the hosts we build on), no padding
 * between records:
 *
 *   file header   nk__nkp_file_header (16 bytes): magic "NKPROF\r\n", version, header size
 *   record*       nk__nkp_record_header (16 bytes) + payload
 *
 * A *part* (one process, written by the runtime) is: file header, PROCESS,
 * META, MACHINE?, then any of MAPS THREAD SITE ALLOC FREE NAME PHASE SAMPLES
 * in time order, and END when the process closed it (exit, exec, fatal
 * signal).  A part without END belongs to a process that was killed before
 * it could close it.
 *
 * A *merged* profile (what `numakit profile -o run.nkp` writes) is: file
 * header, RUN (JSON about the whole run), MACHINE, then for each process the
 * records of its part from PROCESS to END (END synthesised by the merger
 * with "complete": false when the part had none), and TRAILER last.  Readers
 * reject a merged file without TRAILER as truncated.
 *
 * Records a reader does not know are skipped when their type has
 * NK__NKP_OPTIONAL set, and rejected otherwise (NK_EVERSION).
 */
#ifndef NK_PROFILE_NKP_H
#define NK_PROFILE_NKP_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

#define NK__NKP_MAGIC "NKPROF\r\n" /* 8 bytes, no NUL */
#define NK__NKP_VERSION 1u
/* Version 2: several runs of one program in one file (`numakit profile --runs N`, nk_profile_combine):
 * each run is RUN, MACHINE?, its processes; one TRAILER counts the whole file.  A file of one run is
 * always written as version 1, so version-1 readers read every single-run profile. */
#define NK__NKP_VERSION_RUNS 2u
#define NK__NKP_OPTIONAL 0x8000u /* record type bit: skip if unknown */
/* No payload is larger than this (a SAMPLES record holds at most 64 Ki samples). */
#define NK__NKP_MAX_PAYLOAD (16u << 20)

struct nk__nkp_file_header {
	char magic[8];        /* NK__NKP_MAGIC */
	uint32_t version;     /* NK__NKP_VERSION */
	uint32_t header_size; /* 16; a later version may grow it, readers skip the rest */
};

struct nk__nkp_record_header {
	uint32_t type;   /* enum nk__nkp_type, maybe | NK__NKP_OPTIONAL */
	uint32_t flags;  /* 0 in version 1 */
	uint64_t length; /* payload bytes that follow, <= NK__NKP_MAX_PAYLOAD */
};

enum nk__nkp_type {
	NK__NKP_RUN = 1,      /* JSON text: the whole run (merged files only), see below */
	NK__NKP_MACHINE = 2,  /* JSON text: the machine file (nk_machine_to_json) of the profiled machine */
	NK__NKP_PROCESS = 3,  /* struct nk__nkp_process: begins one process's records */
	NK__NKP_META = 4,     /* JSON text: this process (argv, sampler, rate, page size, ...) */
	NK__NKP_MAPS = 5,     /* struct nk__nkp_maps + text of /proc/PID/maps at that time */
	NK__NKP_THREAD = 6,   /* struct nk__nkp_thread */
	NK__NKP_SITE = 7,     /* struct nk__nkp_site + depth uint64_t return addresses */
	NK__NKP_ALLOC = 8,    /* struct nk__nkp_alloc */
	NK__NKP_FREE = 9,     /* struct nk__nkp_free */
	NK__NKP_NAME = 10,    /* struct nk__nkp_name + name bytes (no NUL) */
	NK__NKP_PHASE = 11,   /* struct nk__nkp_phase + name bytes (no NUL) */
	NK__NKP_SAMPLES = 12, /* an array of struct nk__nkp_sample (length a multiple of its size) */
	NK__NKP_END = 13,     /* JSON text: how the process ended, runtime counters */
	NK__NKP_TRAILER = 14, /* struct nk__nkp_trailer: last record of a merged file */
	NK__NKP_BLOCKS = 15,  /* an array of struct nk__nkp_block: small blocks' allocations and frees, batched;
			       * written with NK__NKP_OPTIONAL (a reader without it loses only the small blocks) */
	NK__NKP_COMM = 16,    /* struct nk__nkp_comm + n struct nk__nkp_comm_peer: what an MPI process sent to each
			       * peer (the PMPI wrappers, preload/mpi/pmpi.c); at most one per process, before END,
			       * written with NK__NKP_OPTIONAL (a reader without it loses only the traffic) */
	NK__NKP_CALLERS = 17, /* an array of struct nk__nkp_caller: the return addresses on the stack of first touches
			       * made inside a library (pagefault sampler), batched; written with NK__NKP_OPTIONAL (a
			       * reader without it names the library's line, as before) */
};

/*
 * RUN JSON (merged files): {"numakit": "0.1.0", "command": ["prog", "arg"],
 *   "sampler": "pagefault|hw|trace", "requested_sampler": "auto|...",
 *   "fallback": "why hw was not used" (optional), "rate": 1000,
 *   "start_unix_ns": N, "wall_ns": N, "exit_status": 0, "signal": 0,
 *   "processes": K, "samples": N}
 * META JSON (each process): {"pid": N, "ppid": N, "argv": [...], "exe": "/path",
 *   "sampler": "...", "rate": R, "page_size": 4096, "min_size": bytes tracked,
 *   "start_unix_ns": N}
 * END JSON: {"complete": true, "how": "exit|exec|signal|killed", "status": N,
 *   "signal": N, "time_ns": N, "samples": N, "dropped": N, "faults": N, ...}
 */

struct nk__nkp_process {
	uint32_t pid, ppid;
	uint64_t start_ns; /* CLOCK_MONOTONIC when the part began; every time_ns below is relative to it */
};

struct nk__nkp_maps {
	uint64_t time_ns; /* followed by the text of /proc/PID/maps (length - sizeof this) */
};

struct nk__nkp_thread {
	uint32_t tid;       /* kernel thread id */
	uint32_t index;     /* 0 for the main thread, then creation order (the "thread number" of reports) */
	uint64_t time_ns;   /* when it started */
	uint64_t stack_lo;  /* its stack [lo, hi), 0 0 when unknown */
	uint64_t stack_hi;
	int32_t cpu;        /* cpu when it started, -1 unknown */
	uint32_t reserved;
};

/* An allocation site: the return addresses of the allocating call stack,
 * innermost first, starting at the caller of malloc (the interposer's own
 * frames removed).  Sites are numbered from 1 within a process. */
struct nk__nkp_site {
	uint32_t id;
	uint32_t depth; /* <= NK__NKP_MAX_DEPTH; followed by depth uint64_t */
};
#define NK__NKP_MAX_DEPTH 32

enum nk__nkp_alloc_kind {
	NK__ALLOC_MALLOC = 1,
	NK__ALLOC_CALLOC = 2,
	NK__ALLOC_REALLOC = 3,
	NK__ALLOC_MEMALIGN = 4, /* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
	NK__ALLOC_MMAP = 5,     /* anonymous mmap called by the program */
	NK__ALLOC_NUMAKIT = 6,  /* numakit's own allocators (nk_array, ...) */
	NK__ALLOC_STATIC = 7,   /* a writable segment of a loaded object (.data/.bss), site 0 */
};

struct nk__nkp_alloc {
	uint64_t addr;
	uint64_t size;
	uint64_t time_ns;
	uint32_t tid;
	uint32_t site;  /* nk__nkp_site.id, 0 when none (statics) */
	uint32_t kind;  /* enum nk__nkp_alloc_kind */
	uint32_t id;    /* allocation number within the process, from 1 */
};

struct nk__nkp_free {
	uint64_t addr; /* address an earlier ALLOC returned */
	uint64_t time_ns;
	uint32_t tid;
	uint32_t id;   /* that ALLOC's id, 0 if unknown */
};

/*
 * Heap blocks smaller than META min_size (issue 19), in the compact form the runtime batches: one event per
 * allocation (kind != 0) or free (kind 0) of a block it recorded.  A reader turns them into allocs[] (id 0)
 * and frees[] (id 0): attribution matches a free to the block of its address live at its time.  Events
 * of a record are in the order they happened in the process; records of small blocks may come after
 * records written later (a batch is written when full or when the part closes).
 */
struct nk__nkp_block {
	uint64_t addr;
	uint64_t time_ns;
	uint32_t size;  /* bytes asked for (0 for a free) */
	uint32_t site;  /* nk__nkp_site.id (0 for a free) */
	uint32_t tid;
	uint16_t kind;  /* enum nk__nkp_alloc_kind; 0: a free */
	uint16_t reserved;
};

/*
 * MPI traffic of one process (issue 14 §2): messages and bytes it sent to each peer, by the peers' ranks in
 * MPI_COMM_WORLD.  Point-to-point sends count what the call sends; a collective counts what the MPI
 * standard says this rank's data contributes to each other rank (docs/profile.md, "Communication").
 */
struct nk__nkp_comm {
	uint32_t rank;     /* this process's rank in MPI_COMM_WORLD */
	uint32_t size;     /* MPI_COMM_WORLD's size, >= 1 */
	uint32_t n;        /* struct nk__nkp_comm_peer that follow, <= 2 * size */
	uint32_t flags;    /* NK__COMM_* */
	uint64_t time_ns;  /* when it was written */
};
#define NK__COMM_FINALIZED 1u /* MPI_Finalize was called before it was written */
#define NK__COMM_P2P 0u
#define NK__COMM_COLL 1u
struct nk__nkp_comm_peer {
	uint32_t peer;     /* rank in MPI_COMM_WORLD, < size */
	uint32_t kind;     /* NK__COMM_P2P or NK__COMM_COLL; at most one entry per peer and kind */
	uint64_t messages;
	uint64_t bytes;
};

/*
 * The callers of a first touch made outside the program's own code (memset, memcpy, a Fortran runtime copy
 * writing a fresh page): return addresses found on the faulting thread's stack, innermost first, that each
 * follow a call instruction (docs/profile.md, "Who first touched it").  An entry belongs to the sample of its
 * process with the same tid, time_ns and addr; an entry without one (its sample dropped) is ignored.  The
 * analysis names the first of them in the program's own code.
 */
#define NK__NKP_CALLER_DEPTH 6
struct nk__nkp_caller {
	uint64_t time_ns; /* the sample's */
	uint64_t addr;    /* the sample's */
	uint32_t tid;     /* the sample's */
	uint16_t depth;   /* 1..NK__NKP_CALLER_DEPTH: ret[0 .. depth-1] are non-zero, the rest 0 */
	uint16_t reserved; /* 0 */
	uint64_t ret[NK__NKP_CALLER_DEPTH];
};

/* A name given to a range by the program (nk_profile_name) or by numakit (arrays). */
struct nk__nkp_name {
	uint64_t addr;
	uint64_t size;
	uint64_t time_ns;
};

/* Phase @id begins now (nk_profile_phase); id 0 is "before any phase".
 * Also used for the region of interest: kind 1 = collection resumed, 2 = paused. */
struct nk__nkp_phase {
	uint64_t time_ns;
	uint32_t tid;
	uint16_t id;
	uint16_t kind; /* 0 phase begins, 1 ROI start, 2 ROI stop */
};

/* Where an access was served, when the sampler knows (hw); otherwise derived
 * from page and cpu nodes by the reader (LOCAL_DRAM / REMOTE_DRAM). */
enum nk__nkp_source {
	NK__SRC_UNKNOWN = 0,
	NK__SRC_L1 = 1,
	NK__SRC_LFB = 2, /* line fill buffer / miss address buffer */
	NK__SRC_L2 = 3,
	NK__SRC_L3 = 4,
	NK__SRC_LOCAL_DRAM = 5,
	NK__SRC_REMOTE_DRAM = 6,
	NK__SRC_REMOTE_CACHE = 7, /* another socket's cache (hit or HITM) */
	NK__SRC_PMEM = 8,         /* persistent / CXL memory */
	NK__SRC_IO = 9,
	NK__SRC_UNCACHED = 10,
};

enum nk__nkp_access { NK__ACC_UNKNOWN = 0, NK__ACC_READ = 1, NK__ACC_WRITE = 2 };

enum nk__nkp_sample_flags {
	NK__SF_FIRST_TOUCH = 1, /* the page was not yet populated: this access placed it */
	NK__SF_IO = 2,          /* the kernel accessed the page for a read(2)/write(2)-like call */
	NK__SF_TLB = 4,         /* hw: the access missed the TLB */
	NK__SF_NEW_BLOCK = 8,   /* pagefault: the page was armed because its block was new, not picked at random */
};

enum nk__nkp_sampler { NK__SAMPLER_PAGEFAULT = 1, NK__SAMPLER_HW = 2, NK__SAMPLER_TRACE = 3, NK__SAMPLER_TIMER = 4 };

/* One sample, 48 bytes, the same from every sampler. */
struct nk__nkp_sample {
	uint64_t time_ns;   /* since the process's start_ns */
	uint64_t addr;      /* data address */
	uint64_t ip;        /* instruction address, 0 unknown */
	uint32_t tid;
	uint32_t weight;    /* accesses this sample stands for (>= 1); trace: the sampling period */
	uint32_t latency;   /* hw: load latency in core cycles; pagefault: arm-to-access delay in us (>= 1); 0 unknown */
	int16_t cpu;        /* -1 unknown */
	int16_t cpu_node;   /* node of cpu, -1 unknown */
	int16_t page_node;  /* node the page lived on at the access (after it for first touch), -1 unknown */
	uint16_t phase;     /* phase id current in the process at the access */
	uint8_t access;     /* enum nk__nkp_access */
	uint8_t source;     /* enum nk__nkp_source */
	uint8_t sampler;    /* enum nk__nkp_sampler */
	uint8_t flags;      /* enum nk__nkp_sample_flags */
};

struct nk__nkp_trailer {
	uint64_t records;   /* records in the file before this one */
	uint64_t processes;
	uint64_t samples;
};

#ifdef __cplusplus
static_assert(sizeof(struct nk__nkp_sample) == 48, "sample layout");
#else
_Static_assert(sizeof(struct nk__nkp_sample) == 48, "sample layout");
_Static_assert(sizeof(struct nk__nkp_thread) == 40, "thread layout");
_Static_assert(sizeof(struct nk__nkp_alloc) == 40, "alloc layout");
_Static_assert(sizeof(struct nk__nkp_free) == 24, "free layout");
_Static_assert(sizeof(struct nk__nkp_block) == 32, "block layout");
_Static_assert(sizeof(struct nk__nkp_phase) == 16, "phase layout");
_Static_assert(sizeof(struct nk__nkp_caller) == 72, "caller layout");
#endif

/* ------------------------------------------------------------------------
 * Writing (src/profile/nkp_write.c).  Async-signal-safe: a writer is an fd
 * and write(2) calls, no allocation, no stdio, no locks, so the runtime may
 * close a part from a fatal-signal handler.  Callers serialise calls on one
 * writer themselves.  All return 0 or -errno.
 * ------------------------------------------------------------------------ */
struct nk__nkp_writer {
	int fd;
	uint64_t records; /* records written so far */
	uint64_t bytes;   /* bytes written so far, header included */
};

/** Write the file header to @p fd and set up @p w.  AS-safe. */
int nk__nkp_writer_init(struct nk__nkp_writer *w, int fd);
/** One record: header + @p len bytes of @p payload.  AS-safe. */
int nk__nkp_write(struct nk__nkp_writer *w, uint32_t type, const void *payload, size_t len);
/** One record whose payload is @p a (@p alen bytes) followed by @p b (@p blen bytes).  AS-safe. */
int nk__nkp_write2(struct nk__nkp_writer *w, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);

/* ------------------------------------------------------------------------
 * Reading (src/profile/nkp_read.c): a whole merged file into memory.
 * Validates everything (lengths, record order, ids referenced, JSON texts)
 * and rejects corrupt or truncated input with NK_EPARSE and a message naming
 * the byte offset and the record; unknown version NK_EVERSION.
 * ------------------------------------------------------------------------ */
struct nk__nkp_process_data {
	struct nk__nkp_process info;
	char *meta_json;   /* META text, NUL-terminated */
	char *end_json;    /* END text, NUL-terminated */
	int complete;      /* END says "complete": true */
	char *maps;        /* the last MAPS text (NUL-terminated), NULL when none */
	char **all_maps;   /* every MAPS text in order (n_maps), for objects loaded and unloaded */
	size_t n_maps;
	struct nk__nkp_thread *threads;
	size_t n_threads;
	struct nk__nkp_site_data { uint32_t id, depth; uint64_t *ips; } *sites; /* sorted by id */
	size_t n_sites;
	struct nk__nkp_alloc *allocs; /* in record order */
	size_t n_allocs;
	struct nk__nkp_free *frees;
	size_t n_frees;
	struct nk__nkp_name_data { struct nk__nkp_name n; char *name; } *names;
	size_t n_names;
	struct nk__nkp_phase_data { struct nk__nkp_phase p; char *name; } *phases;
	size_t n_phases;
	struct nk__nkp_sample *samples; /* in record order */
	size_t n_samples;
	struct nk__nkp_caller *callers; /* CALLERS entries, sorted by (tid, time_ns, addr) */
	size_t n_callers;
	int has_comm;                   /* a COMM record was read: */
	struct nk__nkp_comm comm;
	struct nk__nkp_comm_peer *peers; /* comm.n of them */
};

/* One run of a profile (version 2 files hold several; nk__nkp_join makes one profile of several files). */
struct nk__nkp_run_data {
	char *run_json;     /* its RUN text */
	char *machine_json; /* its MACHINE text, NULL none */
	char *source;       /* the file it was read from (for messages), NULL for a buffer */
	size_t first_proc;  /* its processes are procs[first_proc .. first_proc + n_procs - 1] */
	size_t n_procs;
};

struct nk__nkp_profile {
	uint32_t version;
	char *run_json;     /* RUN text (of the first run) */
	char *machine_json; /* MACHINE text (of the first run), NULL when the file has none */
	/* every run, the first included (its texts are copies of run_json and machine_json); n_runs 0 in a
	 * profile built by hand means one run holding every process */
	struct nk__nkp_run_data *runs;
	size_t n_runs;
	struct nk__nkp_process_data *procs;
	size_t n_procs;
	uint64_t n_samples; /* over all processes */
};

/** Read and validate a merged profile from memory.  NK_EPARSE, NK_EVERSION, NK_ENOMEM. */
int nk__nkp_parse(const void *data, size_t len, struct nk__nkp_profile **out, nk_error *err);
/** Read and validate a merged profile file (NK_ENOENT, NK_EIO, and as nk__nkp_parse). */
int nk__nkp_load(const char *path, struct nk__nkp_profile **out, nk_error *err);
void nk__nkp_free(struct nk__nkp_profile *p);
/** The CALLERS entry of sample @p s of process @p pd (same tid, time_ns, addr), NULL when none. */
const struct nk__nkp_caller *nk__nkp_find_caller(const struct nk__nkp_process_data *pd,
						 const struct nk__nkp_sample *s);

/** Number of runs of @p p (1 for a profile built by hand with n_runs 0). */
size_t nk__nkp_n_runs(const struct nk__nkp_profile *p);
/** The run holding process @p proc of @p p (0 for a profile built by hand). */
size_t nk__nkp_run_of(const struct nk__nkp_profile *p, size_t proc);

/** The topology of a machine text (node ids with their cpus, and distances) as one canonical JSON text,
 * for comparing machines; malloc'ed, NULL when out of memory. */
char *nk__nkp_topology(const char *machine_json);
/**
 * Whether run @p r of @p p may be combined with run 0: the same program (the first process's
 * executable, else command[0]) and the same machine topology (node ids, each node's cpus, the
 * distances).  0 when it may; NK_EINVAL with @p why filled (one sentence) when not.  Differences
 * that do not stop the combination (arguments, a machine description missing from one run) are
 * written to @p warn (empty when none).
 */
int nk__nkp_runs_compatible(const struct nk__nkp_profile *p, size_t r, char *why, size_t nwhy, char *warn,
			    size_t nwarn);

/**
 * One profile of the runs of @p in (n >= 1 profiles, taken over and freed whatever the result; each
 * may hold several runs): processes and runs in order.  Every run is checked against the first with
 * nk__nkp_runs_compatible (NK_EINVAL naming both files).  Warnings are appended to *warn (malloc'ed,
 * "; "-separated; NULL when none).  Errors: NK_EINVAL, NK_ENOMEM.
 */
int nk__nkp_join(struct nk__nkp_profile **in, const char *const *names, size_t n, struct nk__nkp_profile **out,
		 char **warn, nk_error *err);

/**
 * Write the profiles @p paths (each valid, of one or several runs) as one file of all their runs at
 * @p out_path (atomically): version 1 when there is one run in all, else version 2.  The runs are
 * checked as by nk__nkp_join.  Errors: NK_ENOENT, NK_EIO, NK_EPARSE, NK_EVERSION, NK_EINVAL (runs of
 * different programs or machines), NK_ENOMEM.
 */
int nk__nkp_combine_files(const char *const *paths, size_t n, const char *out_path, char **warn, nk_error *err);

/**
 * Merge the part files @p parts (written by the runtime, one per process,
 * any order) into one merged profile at @p out_path (written atomically),
 * with @p run_json as RUN and @p machine_json as MACHINE (may be NULL), and
 * @p extra samples per pid (hw samples read by `numakit profile`, may be
 * NULL/0; their time_ns is absolute CLOCK_MONOTONIC and is rebased on the
 * process's start_ns) appended to the matching process.  A part that ends without END
 * gets one synthesised ("complete": false, "how": "killed"); a part that is
 * corrupt in its middle is cut at the last whole record, and the cut is
 * reported in *warn (malloc'ed text, NULL when none).  Parts sorted by
 * process start.  Errors: NK_EIO, NK_EPARSE (a part with no valid header),
 * NK_ENOMEM.
 */
int nk__nkp_merge(const char *const *parts, size_t n_parts, const char *run_json, const char *machine_json,
		  const struct nk__nkp_sample *extra, const uint32_t *extra_pid, size_t n_extra,
		  const char *out_path, char **warn, nk_error *err);

#endif
