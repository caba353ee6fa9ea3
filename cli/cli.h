/* SPDX-License-Identifier: BSD-3-Clause
 * The numakit command: what the subcommands share.
 *
 * The command is a front end: it parses arguments, calls the public API of
 * libnumakit (include/numakit.h, nothing else) and prints.  It holds no
 * placement logic.  Results go to stdout, diagnostics to stderr, each
 * diagnostic one line starting with "numakit SUBCMD: ".
 */
#ifndef NK_CLI_H
#define NK_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

/* Exit statuses (documented in numakit(1), EXIT STATUS). */
#define CLI_EXIT_OK 0      /* success */
#define CLI_EXIT_FAIL 1    /* runtime failure: the system or the library failed */
#define CLI_EXIT_USAGE 2   /* bad usage or bad input: option, missing/corrupt file, bad description */

/** One subcommand.  run() gets argv with argv[0] = the subcommand's name. */
struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line for `numakit --help` */
	const char *usage;   /* full help text for `numakit help NAME` / `NAME --help` */
};

/* Subcommands (one file each: cmd_NAME.c). */
int cli_cmd_topo(int argc, char **argv);
extern const char cli_topo_usage[];
int cli_cmd_bench(int argc, char **argv);
extern const char cli_bench_usage[];
int cli_cmd_maps(int argc, char **argv);
extern const char cli_maps_usage[];
int cli_cmd_run(int argc, char **argv);
extern const char cli_run_usage[];
int cli_cmd_report(int argc, char **argv);
extern const char cli_report_usage[];
int cli_cmd_profile(int argc, char **argv);
extern const char cli_profile_usage[];
int cli_cmd_cc(int argc, char **argv);
extern const char cli_cc_usage[];
int cli_cmd_advise(int argc, char **argv);
extern const char cli_advise_usage[];
int cli_cmd_whatif(int argc, char **argv);
extern const char cli_whatif_usage[];

/** Print the help of subcommand @p name to stdout; CLI_EXIT_USAGE when there is none. */
int cli_print_help(const char *name);

/* ---- diagnostics ---- */

/** "numakit CMD: MESSAGE\n" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** As cli_error, adding the hint "(see 'numakit CMD --help')"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Report the option getopt_long() rejected (it returned '?' or ':') for
 * argv; returns CLI_EXIT_USAGE.  Call with opterr = 0 and ':' leading the
 * short-option string.
 */
int cli_bad_option(const char *cmd, int ret, char **argv);

/**
 * The exit status for a library error code of a command that reads a profile, an advice or a machine
 * file: CLI_EXIT_USAGE where the code says the input the user named is wrong (NK_ENOENT, NK_EIO,
 * NK_EPARSE, NK_EVERSION, NK_EINVAL, NK_ENODATA; with CLI_MACHINE_INPUT in @p flags also NK_ENODEV and
 * NK_EPERM, a node or cpu the given machine lacks), else CLI_EXIT_FAIL.
 */
#define CLI_MACHINE_INPUT 1
int cli_exit_status(int code, int flags);

/* ---- the user's files: checked before any work (util.c) ---- */

/** What a file that is not a regular file is, for messages: "a folder", "a character device", ... */
const char *cli_file_kind(unsigned mode);

/**
 * An input file the command reads (a profile, plan, machine file): it must exist and be a regular file
 * (with @p allow_dir also a folder: a job's profile).  Devices, fifos and sockets are refused up front,
 * so that `numakit report /dev/zero` does not read gigabytes before refusing.  0, or CLI_EXIT_USAGE with
 * one line naming @p opt (NULL: none) and the file.  A missing file is left to the reader, whose message
 * is the documented one.
 */
#define CLI_INPUT_DIR 1
int cli_check_input(const char *cmd, const char *opt, const char *path, int flags);

/**
 * An output file the command will write, checked before any work: it is not a folder, its folder exists
 * and is writable, and an existing file is writable.  0, or CLI_EXIT_USAGE with one line naming @p opt.
 */
int cli_check_output(const char *cmd, const char *opt, const char *path);

/**
 * Whether @p a and @p b name the same file: by identity (st_dev, st_ino) when both exist, else by the
 * real path of their folder plus their name (so "./p.nkp" and "p.nkp", or a symlink, match).
 */
int cli_same_file(const char *a, const char *b);

/**
 * Refuse an output that names the same file as one of @p n inputs (or as @p other, another output of
 * the same command, when not NULL; @p other_opt names it), or a rank-R.nkp file inside an input that is
 * a job's folder: one line naming both, CLI_EXIT_USAGE.  NULL inputs are skipped; an output that exists
 * and is not a regular file (/dev/null, /dev/stdout) is not checked.
 */
int cli_check_distinct(const char *cmd, const char *opt, const char *out, const char *const *inputs, size_t n,
		       const char *other_opt, const char *other);

/** Flush stdout; on a write error (full disk, closed pipe) report it and return CLI_EXIT_FAIL. */
int cli_finish_stdout(const char *cmd, int status);

/* ---- machine sources: --fsroot / --xml / --synthetic / --machine ---- */

/** Which machine a subcommand looks at; the default (kind -1) is the live machine. */
struct cli_source {
	int kind;        /* enum nk_machine_source, or -1 for "not chosen" = live */
	const char *arg; /* directory, file or description */
	const char *opt; /* the option that chose it, for messages */
};

#define CLI_SOURCE_INIT { -1, NULL, NULL }

/**
 * Record a source option; a second, different one is a usage error.
 * Returns 0 or CLI_EXIT_USAGE (message printed).
 */
int cli_source_set(struct cli_source *src, const char *cmd, int kind, const char *opt, const char *arg);

/**
 * Load the machine chosen by @p src.  On failure prints one line
 * "numakit CMD: <message>" and returns CLI_EXIT_USAGE for bad input (a file
 * or directory that is missing or corrupt, a description that does not
 * parse) or CLI_EXIT_FAIL for anything else (live discovery failed, out of
 * memory).  Returns 0 on success.
 */
int cli_load_machine(const struct cli_source *src, const char *cmd, nk_machine **out);

/**
 * The default machine file, where `numakit bench --save` writes measured
 * matrices: $XDG_CONFIG_HOME/numakit/machine.json, else
 * ~/.config/numakit/machine.json, else ./numakit-machine.json.  With @p create
 * the folder is made.  malloc'ed; NULL on ENOMEM.  (The library never reads
 * the environment: the command decides where its files live.)
 */
char *cli_default_machine_file(int create);

/* ---- formatting ---- */

/**
 * Format @p bytes in binary units: "0 B", "512 B", "32 KiB", "15.6 GiB"
 * (exact multiples print without a fraction).  Writes into @p buf.
 */
const char *cli_fmt_size(uint64_t bytes, char *buf, size_t cap);

/** "512M", "1G", "4096", "64KiB" (K, M, G, T; optional i/B) -> bytes in *out; -1 when it does not parse or overflows. */
int cli_parse_size(const char *s, uint64_t *out);

/** As cli_fmt_size, but always one decimal above bytes ("8.0 GiB"), so that columns line up. */
const char *cli_fmt_mem(uint64_t bytes, char *buf, size_t cap);

/** Compact list "0-3,8" of increasing ids into a malloc'ed string ("-" when empty); NULL on ENOMEM. */
char *cli_list_alloc(const int *ids, size_t n);

/**
 * Call a count/capacity getter (see numakit.h) and return a malloc'ed array
 * of its ids through @p out (NULL when there are none) with the count as
 * return value, or a negative NK_E* code.
 */
typedef int (*cli_ids_fn)(const nk_machine *m, int arg, int *ids, size_t cap);
int cli_get_ids(const nk_machine *m, cli_ids_fn fn, int arg, int **out);

/* ---- numakit run's numactl options (run_numactl.c; their grammar: nodespec.h) ---- */

/** What numactl's node forms count in: for a memory policy the allowed nodes with memory, for
 *  -N/--cpunodebind the nodes with an allowed cpu; for -C the allowed cpus.  Increasing, malloc'ed
 *  into *out (NULL when none); count or NK_ENOMEM. */
int cli_numactl_mem_nodes(const nk_machine *m, int **out);
int cli_numactl_cpu_nodes(const nk_machine *m, int **out);
int cli_numactl_cpus(const nk_machine *m, int **out);

/**
 * -N/--cpunodebind: the allowed cpus of @p nodes, increasing, malloc'ed into *out.  A node that does
 * not exist or has no cpus: CLI_EXIT_USAGE; one none of whose cpus is allowed: CLI_EXIT_FAIL (as a
 * disallowed cpu of --cpus); message printed.
 */
int cli_numactl_node_cpus(const nk_machine *m, const int *nodes, size_t n, int **out, size_t *ncpus);

/** -H/--hardware: @p m as numactl --hardware prints a machine; exit status. */
int cli_numactl_hardware(const nk_machine *m);

/** -s/--show: the calling process's memory policy and cpus as numactl --show prints them; exit status. */
int cli_numactl_show(void);

/** Refuse numactl's option @p opt (its long name), which numakit does not honour, naming the numakit
 *  way where there is one; CLI_EXIT_USAGE. */
int cli_numactl_refuse(const char *opt);

/* ---- numakit run in a parallel job (run_job.c) ---- */

/** A rank's view of its job: who it is, the host's layout, its share. */
struct cli_job {
	nk_job_info info;
	nk_job_layout *layout;
	int row;                  /* this rank's row of layout */
	int lead;                 /* local rank 0: prints the job-wide messages */
	int bound;                /* the launcher bound this rank: its share is its binding */
	int *cpus;                /* the share's cpus, core order */
	size_t ncpus;
	int *mem;                 /* the share's memory nodes, own first node first */
	size_t nmem;
	nk_machine *share_machine; /* the machine restricted to the share (--pin inside it) */
};

/** Whether a spec is rank-relative: "rank" or "rank:...". */
int cli_job_is_relative(const char *spec);
/** Detect the launcher and compute the layout; messages (unless @p quiet) once per host.  0 or exit status. */
int cli_job_resolve(struct cli_job *j, const nk_machine *m, int quiet);
/** "rank" / "rank:LIST" of a node option into OS node ids (malloc'ed).  0 or exit status (message printed). */
int cli_job_nodes(const struct cli_job *j, const char *opt, const char *spec, int **out, size_t *n);
/** The same for --cpus. */
int cli_job_cpus(const struct cli_job *j, const char *opt, const char *spec, int **out, size_t *n);
/** --weighted "rank", "rank:LIST" or "rank:POS=W,...". */
int cli_job_weighted(const struct cli_job *j, const char *spec, int **nodes, unsigned **weights, size_t *n);
/**
 * --pin inside the share: *pm the machine restricted to the share's cpus; *strategy (malloc'ed) the
 * strategy for it ("rank" alone: compact; positions become the share's cpus); @p spec NULL: only *pm.
 */
int cli_job_pin(struct cli_job *j, const nk_machine *m, const char *spec, char **strategy, const nk_machine **pm);
/** Print the layout: text lines, or (json) one JSON object without a newline. */
void cli_job_print(const struct cli_job *j, int json);
/** Ids as text: ranges when increasing, else comma-separated in order (malloc'ed, NULL on ENOMEM). */
char *cli_job_ids(const int *ids, size_t n);
void cli_job_free(struct cli_job *j);
/**
 * --rank-map FILE (run_rankmap.c): find this rank (the launcher's environment; without one, the map's only
 * rank) in the map and fill @p j->info, ->cpus (the slot's) and ->mem (their nodes' memory, else the
 * nearest); @p live: the machine is this host's (the map's host is then checked).  A line on stderr says
 * what the rank gets unless @p quiet.  0 or exit status (message printed).
 */
int cli_rankmap_resolve(const char *path, const nk_machine *m, int live, int quiet, struct cli_job *j);

#endif /* NK_CLI_H */
