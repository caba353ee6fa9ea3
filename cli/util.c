/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the subcommands: diagnostics, machine sources, formatting. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"

static void vreport(const char *cmd, const char *fmt, va_list ap, int hint)
{
	int top = !cmd || !*cmd;

	fprintf(stderr, top ? "numakit: " : "numakit %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	if (hint)
		fprintf(stderr, top ? " (see 'numakit --help')" : " (see 'numakit %s --help')", cmd);
	fputc('\n', stderr);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap, 0);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap, 1);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, int ret, char **argv)
{
	/* getopt leaves optind past the offending word (or its missing argument). */
	const char *word = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = { '-', (char)optopt, '\0' };

	/* A short option inside a cluster ("-xq") is named by optopt alone. */
	if (optopt && strncmp(word, "--", 2) != 0)
		word = shortopt;
	if (ret == ':')
		return cli_usage_error(cmd, "option '%s' needs an argument", word);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}

int cli_finish_stdout(const char *cmd, int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(cmd, "cannot write the output: %s", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return status;
}

/* ---- machine sources ---- */

int cli_source_set(struct cli_source *src, const char *cmd, int kind, const char *opt, const char *arg)
{
	if (src->kind >= 0)
		return cli_usage_error(cmd, "%s and %s cannot be combined: choose one machine",
				       src->opt, opt);
	src->kind = kind;
	src->opt = opt;
	src->arg = arg;
	return 0;
}

int cli_exit_status(int code, int flags)
{
	switch (code) {
	case NK_ENOENT:
	case NK_EIO:
	case NK_EPARSE:
	case NK_EVERSION:
	case NK_EINVAL:
	case NK_ENODATA:
		return CLI_EXIT_USAGE;
	case NK_ENODEV:
	case NK_EPERM:
		return (flags & CLI_MACHINE_INPUT) ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	default:
		return CLI_EXIT_FAIL;
	}
}

/* Codes that mean "the input you named is wrong", as opposed to a failure of ours. */
static int is_input_error(int code)
{
	switch (code) {
	case NK_EINVAL:
	case NK_ENOENT:
	case NK_EIO:
	case NK_EPARSE:
	case NK_EVERSION:
		return 1;
	default:
		return 0;
	}
}

char *cli_default_machine_file(int create)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *dir = NULL, *path = NULL;

	if (xdg && *xdg == '/') {
		if (asprintf(&dir, "%s/numakit", xdg) < 0)
			return NULL;
	} else if (home && *home) {
		if (asprintf(&dir, "%s/.config/numakit", home) < 0)
			return NULL;
	} else {
		return strdup("numakit-machine.json");
	}
	if (create) { /* mkdir -p of the last two levels is enough for ~/.config/numakit */
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			mkdir(dir, 0777);
			*slash = '/';
		}
		mkdir(dir, 0777);
	}
	if (asprintf(&path, "%s/machine.json", dir) < 0)
		path = NULL;
	free(dir);
	return path;
}

/*
 * Measured matrices saved by `numakit bench --save` belong to this machine:
 * every command looking at the live machine picks them up, so policies such
 * as cyclic_neighbors use measured NUMA factors.  A file from another machine
 * (different nodes or cpus) is reported once and ignored.
 */
static void merge_saved_measurements(const char *cmd, nk_machine *live)
{
	char *path = cli_default_machine_file(0);
	nk_machine *saved = NULL;
	nk_error err = { 0, "" };

	if (!path)
		return;
	if (access(path, F_OK) == 0) {
		if (nk_machine_load_file(path, &saved, &err) < 0)
			cli_error(cmd, "ignoring saved measurements: %s", err.message);
		else if (nk_machine_merge_measurements(live, saved, 0, &err) < 0)
			cli_error(cmd, "ignoring saved measurements in %s: %s", path, err.message);
	}
	nk_machine_free(saved);
	free(path);
}

int cli_load_machine(const struct cli_source *src, const char *cmd, nk_machine **out)
{
	nk_error err = { 0, "" };
	int rc;

	if ((src->kind == NK_SOURCE_FILE || src->kind == NK_SOURCE_XML) &&
	    (rc = cli_check_input(cmd, src->opt, src->arg, 0)))
		return rc;
	switch (src->kind) {
	case NK_SOURCE_FSROOT:
		rc = nk_machine_load_fsroot(src->arg, out, &err);
		break;
	case NK_SOURCE_XML:
		rc = nk_machine_load_xml(src->arg, out, &err);
		break;
	case NK_SOURCE_SYNTHETIC:
		rc = nk_machine_load_synthetic(src->arg, out, &err);
		break;
	case NK_SOURCE_FILE:
		rc = nk_machine_load_file(src->arg, out, &err);
		break;
	default:
		rc = nk_machine_load_live(out, &err);
		break;
	}
	if (rc >= 0) {
		if (src->kind < 0)
			merge_saved_measurements(cmd, *out);
		return 0;
	}
	if (err.message[0])
		cli_error(cmd, "%s", err.message);
	else if (src->kind >= 0)
		cli_error(cmd, "%s: %s", src->arg, nk_strerror(rc));
	else
		cli_error(cmd, "live machine: %s", nk_strerror(rc));
	/* The live machine is not user input: any failure there is a runtime failure. */
	return src->kind >= 0 && is_input_error(rc) ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

/* ---- formatting ---- */

static const char *fmt_size(uint64_t bytes, char *buf, size_t cap, int exact)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	uint64_t div = 1;

	while (u + 1 < sizeof units / sizeof units[0] && bytes / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (u == 0 || (exact && bytes % div == 0))
		snprintf(buf, cap, "%" PRIu64 " %s", bytes / div, units[u]);
	else
		snprintf(buf, cap, "%.1f %s", (double)bytes / (double)div, units[u]);
	return buf;
}

const char *cli_fmt_size(uint64_t bytes, char *buf, size_t cap)
{
	return fmt_size(bytes, buf, cap, 1);
}

const char *cli_fmt_mem(uint64_t bytes, char *buf, size_t cap)
{
	return fmt_size(bytes, buf, cap, 0);
}

char *cli_list_alloc(const int *ids, size_t n)
{
	int len;
	char *s;

	if (n == 0)
		return strdup("-");
	len = nk_format_list(ids, n, NULL, 0);
	if (len < 0)
		return NULL;
	s = malloc((size_t)len + 1);
	if (s)
		nk_format_list(ids, n, s, (size_t)len + 1);
	return s;
}

int cli_get_ids(const nk_machine *m, cli_ids_fn fn, int arg, int **out)
{
	int *ids = NULL;
	int n, again;

	*out = NULL;
	n = fn(m, arg, NULL, 0);
	if (n <= 0)
		return n;
	ids = malloc((size_t)n * sizeof *ids);
	if (!ids)
		return NK_ENOMEM;
	again = fn(m, arg, ids, (size_t)n);
	if (again < 0 || again > n) {
		free(ids);
		return again < 0 ? again : NK_ERANGE;
	}
	*out = ids;
	return again;
}

/* "512M", "1G", "4096", "64KiB" -> bytes; -1 when it does not parse. */
int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (shift && v > (~0ull >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* ---- the user's files ---- */

const char *cli_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a folder";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFIFO: return "a fifo (named pipe)";
	case S_IFSOCK: return "a socket";
	default: return "not a regular file";
	}
}

/* "opt path" or "path", for messages. */
static const char *named(char *buf, size_t cap, const char *opt, const char *path)
{
	if (opt)
		snprintf(buf, cap, "%s %s", opt, path);
	else
		snprintf(buf, cap, "%s", path);
	return buf;
}

int cli_check_input(const char *cmd, const char *opt, const char *path, int flags)
{
	struct stat st;
	char what[PATH_MAX + 64];

	if (stat(path, &st))
		return 0; /* missing or unreadable: the reader says so, in its words */
	if (S_ISREG(st.st_mode) || (S_ISDIR(st.st_mode) && (flags & CLI_INPUT_DIR)))
		return 0;
	cli_error(cmd, "%s is %s, not a file to read", named(what, sizeof what, opt, path), cli_file_kind(st.st_mode));
	return CLI_EXIT_USAGE;
}

/* The folder of @p path ("." when it has none), malloc'ed; NULL on ENOMEM. */
static char *folder_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int cli_check_output(const char *cmd, const char *opt, const char *path)
{
	struct stat st;
	char what[PATH_MAX + 64];
	char *dir;
	int rc = 0;

	named(what, sizeof what, opt, path);
	if (!*path) {
		cli_error(cmd, "%s: empty file name", opt ? opt : "output");
		return CLI_EXIT_USAGE;
	}
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			cli_error(cmd, "%s is a folder: give a file name", what);
			return CLI_EXIT_USAGE;
		}
		if (access(path, W_OK)) {
			cli_error(cmd, "%s: cannot write it: %s", what, strerror(errno));
			return CLI_EXIT_USAGE;
		}
		return 0;
	}
	if (path[strlen(path) - 1] == '/') {
		cli_error(cmd, "%s names a folder: give a file name", what);
		return CLI_EXIT_USAGE;
	}
	dir = folder_of(path);
	if (!dir) {
		cli_error(cmd, "out of memory");
		return CLI_EXIT_FAIL;
	}
	if (stat(dir, &st)) {
		cli_error(cmd, "%s: the folder %s %s", what, dir,
			  errno == ENOENT ? "does not exist" : strerror(errno));
		rc = CLI_EXIT_USAGE;
	} else if (!S_ISDIR(st.st_mode)) {
		cli_error(cmd, "%s: %s is %s, not a folder", what, dir, cli_file_kind(st.st_mode));
		rc = CLI_EXIT_USAGE;
	} else if (access(dir, W_OK | X_OK)) {
		cli_error(cmd, "%s: cannot write in the folder %s: %s", what, dir, strerror(errno));
		rc = CLI_EXIT_USAGE;
	}
	free(dir);
	return rc;
}

/* realpath of the folder + "/" + the last name; NULL when the folder cannot be resolved. */
static char *canonical(const char *path)
{
	char *dir = folder_of(path), *real = NULL, *out = NULL;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

	if (dir && (real = realpath(dir, NULL)) != NULL &&
	    asprintf(&out, "%s/%s", strcmp(real, "/") ? real : "", name) < 0)
		out = NULL;
	free(real);
	free(dir);
	return out;
}

int cli_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	char *ca, *cb;
	int same;

	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	ca = canonical(a);
	cb = canonical(b);
	same = ca && cb && !strcmp(ca, cb);
	if (!ca || !cb)
		same = !strcmp(a, b);
	free(ca);
	free(cb);
	return same;
}

/*
 * A job's profile is a folder of rank-R.nkp files (numakit profile under a launcher): an output named
 * like one of them inside an input folder would replace a rank's profile, or add a rank to the job.
 */
static int in_job_folder(const char *out, const char *input)
{
	struct stat st;
	const char *slash = strrchr(out, '/'), *name = slash ? slash + 1 : out;
	size_t len = strlen(name);
	char *dir, *real_dir = NULL, *real_in = NULL;
	int inside;

	if (stat(input, &st) || !S_ISDIR(st.st_mode) || strncmp(name, "rank-", 5) || len < 9 ||
	    strcmp(name + len - 4, ".nkp"))
		return 0;
	dir = folder_of(out);
	inside = dir && (real_dir = realpath(dir, NULL)) && (real_in = realpath(input, NULL)) &&
		 !strcmp(real_dir, real_in);
	free(real_in);
	free(real_dir);
	free(dir);
	return inside;
}

int cli_check_distinct(const char *cmd, const char *opt, const char *out, const char *const *inputs, size_t n,
		       const char *other_opt, const char *other)
{
	struct stat st;

	/* /dev/null, /dev/stdout, a fifo: writing one twice destroys nothing (inputs of that kind are
	 * refused by cli_check_input) */
	if (stat(out, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (inputs[i] && in_job_folder(out, inputs[i])) {
			cli_error(cmd, "%s %s is named as a rank's profile inside the job %s, whose rank files it "
				  "would replace or join (give another output file)", opt, out, inputs[i]);
			return CLI_EXIT_USAGE;
		}
		if (inputs[i] && cli_same_file(out, inputs[i])) {
			cli_error(cmd, "%s %s names the same file as the input %s: refusing to overwrite it (give another output file)", opt,
				  out, inputs[i]);
			return CLI_EXIT_USAGE;
		}
	}
	if (other && cli_same_file(out, other)) {
		cli_error(cmd, "%s %s and %s %s are the same file: give each output its own", opt, out, other_opt,
			  other);
		return CLI_EXIT_USAGE;
	}
	return 0;
}
