/* SPDX-License-Identifier: BSD-3-Clause
 * numakit cc: build a program for the `trace` sampler of `numakit profile`.
 * Runs the compiler with clang's SanitizerCoverage load/store callbacks,
 * debug information and frame pointers, and links the profiler runtime
 * (libnumakit_prof.so, which implements the callbacks) when the compiler
 * links.  --print-flags / --print-ldflags print the same for Makefiles.
 *
 * Why these flags: clang 14 emits __sanitizer_cov_load / _store callbacks
 * only together with a coverage kind; `func,inline-bool-flag` is the
 * cheapest one (one byte store per function, no call).  SanitizerCoverage
 * runs after the vectorizer and skips accesses wider than 16 bytes, so
 * -mprefer-vector-width=128 keeps AVX loops visible.  GCC implements only
 * trace-pc and trace-cmp: it is refused with a clear message.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

const char cli_cc_usage[] =
	"usage: numakit cc [--print-flags] [--print-ldflags]\n"
	"       numakit cc [--] COMPILER [ARG...]\n"
	"\n"
	"Build a program for 'numakit profile --sampler trace': run COMPILER (clang)\n"
	"with the instrumentation flags and, when it links, the profiler runtime\n"
	"libnumakit_prof.so, which records the program's loads and stores.\n"
	"\n"
	"Options:\n"
	"  --print-flags     print the compile flags and exit\n"
	"  --print-ldflags   print the link flags (runtime library, rpath) and exit\n"
	"  -h, --help        show this help\n"
	"\n"
	"Example: numakit cc clang -O2 -fopenmp prog.c -o prog\n"
	"         CFLAGS += $(shell numakit cc --print-flags)\n"
	"         LDFLAGS += $(shell numakit cc --print-ldflags)\n"
	"\n"
	"Exit status: COMPILER's status; 1 the runtime library was not found,\n"
	"2 bad usage or a compiler without these flags (gcc), 126 COMPILER could not\n"
	"be run, 127 COMPILER was not found.  See numakit-cc(1).\n";

static const char *const cc_flags[] = {
	"-fsanitize-coverage=func,inline-bool-flag,trace-loads,trace-stores",
	"-mprefer-vector-width=128",
	"-g",
	"-fno-omit-frame-pointer",
};
#define N_CC_FLAGS (sizeof cc_flags / sizeof cc_flags[0])

#define PROF_LIB "libnumakit_prof.so"

static int has_runtime(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if (!dir || !*dir || snprintf(path, sizeof path, "%s/%s", dir, PROF_LIB) >= (int)sizeof path)
		return 0;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Where libnumakit_prof.so is, in a static buffer: next to the libnumakit
 * this command runs with (an installed tree), the build tree when that
 * libnumakit is the build tree's, the configured libdir, then the build tree
 * this command was built in.  NULL when none has it.
 */
static const char *runtime_dir(void)
{
	static char dir[PATH_MAX];
	Dl_info info;

	if (dladdr((void *)nk_version, &info) && info.dli_fname && info.dli_fname[0] == '/') {
		snprintf(dir, sizeof dir, "%s", info.dli_fname);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			if (has_runtime(dir))
				return dir;
#if defined(NK_BUILD_LIBDIR) && defined(NK_PROF_BUILD_DIR)
			/* this command runs from its build tree: that tree's runtime, not an installed one */
			if (!strcmp(dir, NK_BUILD_LIBDIR) && has_runtime(NK_PROF_BUILD_DIR))
				return NK_PROF_BUILD_DIR;
#endif
		}
	}
#ifdef NK_INSTALL_LIBDIR
	if (has_runtime(NK_INSTALL_LIBDIR))
		return NK_INSTALL_LIBDIR;
#endif
#ifdef NK_PROF_BUILD_DIR
	if (has_runtime(NK_PROF_BUILD_DIR))
		return NK_PROF_BUILD_DIR;
#endif
	return NULL;
}

/* The link flags for @p dir, one per entry of @p out (5 entries); malloc'ed strings in out[0], out[1]. */
static int ldflags(const char *dir, char *out[5])
{
	if (asprintf(&out[0], "-L%s", dir) < 0)
		return -1;
	if (asprintf(&out[1], "-Wl,-rpath,%s", dir) < 0) {
		free(out[0]);
		return -1;
	}
	/* Linked even when the objects do not reference it (--as-needed), so
	 * that its allocation interposers see every block. */
	out[2] = "-Wl,--push-state,--no-as-needed";
	out[3] = "-lnumakit_prof";
	out[4] = "-Wl,--pop-state";
	return 0;
}

static int not_found(void)
{
	cli_error("cc", "cannot find %s next to libnumakit"
#ifdef NK_INSTALL_LIBDIR
		  ", in " NK_INSTALL_LIBDIR
#endif
#ifdef NK_PROF_BUILD_DIR
		  " or in the build tree " NK_PROF_BUILD_DIR
#endif
		  " (is numakit installed completely?)", PROF_LIB);
	return CLI_EXIT_FAIL;
}

/* Does the compiler link?  Not with -c, -S, -E, -fsyntax-only, -M or -MM. */
static int links(char *const *args)
{
	for (; *args; args++) {
		const char *a = *args;
		if (!strcmp(a, "-c") || !strcmp(a, "-S") || !strcmp(a, "-E") || !strcmp(a, "-fsyntax-only") ||
		    !strcmp(a, "-M") || !strcmp(a, "-MM"))
			return 0;
	}
	return 1;
}

/*
 * 0 when @p cc accepts the coverage flag, CLI_EXIT_USAGE (message printed)
 * when it rejects it, 126/127 when it cannot be run.  clang by name is
 * trusted; anything else (cc, gcc, a wrapper) is asked once.
 */
static int check_compiler(const char *cc)
{
	const char *base = strrchr(cc, '/');
	base = base ? base + 1 : cc;
	if (strstr(base, "clang"))
		return 0;

	char *probe[] = { (char *)cc, (char *)cc_flags[0], "-fsyntax-only", "-x", "c", "/dev/null", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	if (posix_spawn_file_actions_init(&fa))
		return CLI_EXIT_FAIL;
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, cc, &fa, NULL, probe, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		cli_error("cc", "cannot run '%s': %s", cc, strerror(rc));
		return rc == ENOENT ? 127 : 126;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CLI_EXIT_FAIL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		cli_error("cc", "cannot run '%s'", cc);
		return 127;
	}
	cli_error("cc", "'%s' does not support -fsanitize-coverage=trace-loads,trace-stores (gcc does not): "
		  "build with clang >= 14", cc);
	return CLI_EXIT_USAGE;
}

int cli_cmd_cc(int argc, char **argv)
{
	enum { OPT_PRINT_FLAGS = 256, OPT_PRINT_LDFLAGS };
	static const struct option opts[] = {
		{ "print-flags", no_argument, NULL, OPT_PRINT_FLAGS },
		{ "print-ldflags", no_argument, NULL, OPT_PRINT_LDFLAGS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, print_flags = 0, print_ldflags = 0, link, rc;
	char *ld[5] = { NULL, NULL, NULL, NULL, NULL };
	char **args = NULL;
	const char *dir = NULL;

	opterr = 0;
	/* '+': the compiler's options are its own. */
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_PRINT_FLAGS:
			print_flags = 1;
			break;
		case OPT_PRINT_LDFLAGS:
			print_ldflags = 1;
			break;
		case 'h':
			return cli_finish_stdout("cc", cli_print_help("cc"));
		default:
			return cli_bad_option("cc", c, argv);
		}
	}
	if (print_flags || print_ldflags) {
		if (optind < argc)
			return cli_usage_error("cc", "--print-flags and --print-ldflags take no command ('%s')",
					       argv[optind]);
		if (print_ldflags && !(dir = runtime_dir()))
			return not_found();
		if (print_flags)
			for (size_t i = 0; i < N_CC_FLAGS; i++)
				printf("%s%s", i ? " " : "", cc_flags[i]);
		if (print_ldflags) {
			if (ldflags(dir, ld)) {
				cli_error("cc", "out of memory");
				return CLI_EXIT_FAIL;
			}
			for (size_t i = 0; i < 5; i++)
				printf("%s%s", i || print_flags ? " " : "", ld[i]);
			free(ld[0]);
			free(ld[1]);
		}
		putchar('\n');
		return cli_finish_stdout("cc", CLI_EXIT_OK);
	}
	if (optind == argc)
		return cli_usage_error("cc", "no compiler given");
	rc = check_compiler(argv[optind]);
	if (rc)
		return rc;
	link = links(argv + optind + 1);
	if (link) {
		if (!(dir = runtime_dir()))
			return not_found();
		if (ldflags(dir, ld)) {
			cli_error("cc", "out of memory");
			return CLI_EXIT_FAIL;
		}
	}
	/* COMPILER FLAGS ARGS... [LDFLAGS]: libraries after the objects that need them. */
	size_t nargs = (size_t)(argc - optind), k = 0;
	args = calloc(nargs + N_CC_FLAGS + 5 + 1, sizeof *args);
	if (!args) {
		cli_error("cc", "out of memory");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	args[k++] = argv[optind];
	for (size_t i = 0; i < N_CC_FLAGS; i++)
		args[k++] = (char *)cc_flags[i];
	for (int i = optind + 1; i < argc; i++)
		args[k++] = argv[i];
	if (link)
		for (size_t i = 0; i < 5; i++)
			args[k++] = ld[i];
	args[k] = NULL;
	fflush(stdout);
	execvp(args[0], args);
	rc = errno == ENOENT ? 127 : 126;
	cli_error("cc", "cannot run '%s': %s", args[0], strerror(errno));
out:
	free(args);
	free(ld[0]);
	free(ld[1]);
	return rc;
}
