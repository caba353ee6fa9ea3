/* SPDX-License-Identifier: BSD-3-Clause
 * numakit: git-style dispatcher.  `numakit [--version] [--help] CMD [ARGS]`.
 *
 * Adding a subcommand: write cmd_NAME.c with cli_cmd_NAME() and its usage
 * text, declare both in cli.h, add a row to the table below and the file to
 * cli/CMakeLists.txt, and write man/numakit-NAME.1.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_help(int argc, char **argv);

static const char help_usage[] =
	"usage: numakit help [COMMAND]\n"
	"\n"
	"Show the help of COMMAND, or the list of commands.\n";

static const struct cli_cmd commands[] = {
	{ "topo", cli_cmd_topo,
	  "show the machine: NUMA nodes, distances, caches, what this process may use",
	  cli_topo_usage },
	{ "maps", cli_cmd_maps, "show where a running process's memory is, per mapping and node", cli_maps_usage },
	{ "run", cli_cmd_run, "run a command under a memory policy and cpu set", cli_run_usage },
	{ "profile", cli_cmd_profile, "run a program under the NUMA profiler: which variables are accessed remotely",
	  cli_profile_usage },
	{ "bench", cli_cmd_bench, "measure latency and bandwidth between nodes (NUMA factor)", cli_bench_usage },
	{ "report", cli_cmd_report, "explain a profile: variables with remote accesses, diagnosis, fixes",
	  cli_report_usage },
	{ "advise", cli_cmd_advise, "write a placement plan (plan.json) from a profile, or check one", cli_advise_usage },
	{ "whatif", cli_cmd_whatif, "predict what a placement plan does to a profiled run",
	  cli_whatif_usage },
	{ "cc", cli_cmd_cc, "build a program for the trace sampler of numakit profile (clang)", cli_cc_usage },
	{ "help", cmd_help, "show the help of a command", help_usage },
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void print_main_help(void)
{
	printf("usage: numakit [--version] [--help] COMMAND [ARGS]\n"
	       "\n"
	       "numakit %s: see and control where a program's memory and threads live on a\n"
	       "NUMA machine.\n"
	       "\n"
	       "Commands:\n", nk_version());
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("  %-8s %s\n", commands[i].name, commands[i].summary);
	printf("\n"
	       "Run 'numakit help COMMAND' or 'numakit COMMAND --help' for a command's options.\n"
	       "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n");
}

int cli_print_help(const char *name)
{
	const struct cli_cmd *c = find_command(name);

	if (!c) {
		cli_error("help", "'%s' is not a numakit command (see 'numakit --help')", name);
		return CLI_EXIT_USAGE;
	}
	fputs(c->usage, stdout);
	return CLI_EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_finish_stdout("help", cli_print_help("help"));
		default:
			return cli_bad_option("help", c, argv);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error("help", "unexpected argument '%s'", argv[optind + 1]);
	if (optind == argc) {
		print_main_help();
		return cli_finish_stdout("help", CLI_EXIT_OK);
	}
	return cli_finish_stdout("help", cli_print_help(argv[optind]));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_cmd *cmd;
	int c;

	opterr = 0;
	/* '+': stop at the subcommand, its options are its own. */
	while ((c = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_main_help();
			return cli_finish_stdout("", CLI_EXIT_OK);
		case 'V':
			printf("numakit %s\n", nk_version());
			return cli_finish_stdout("", CLI_EXIT_OK);
		default:
			return cli_bad_option("", c, argv);
		}
	}
	if (optind == argc) {
		fprintf(stderr, "numakit: no command given (see 'numakit --help')\n");
		return CLI_EXIT_USAGE;
	}
	cmd = find_command(argv[optind]);
	if (!cmd) {
		fprintf(stderr, "numakit: '%s' is not a numakit command (see 'numakit --help')\n",
			argv[optind]);
		return CLI_EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	optind = 0; /* glibc: 0 restarts the scan from scratch for the subcommand */
	return cmd->run(argc, argv);
}
