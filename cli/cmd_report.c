/* SPDX-License-Identifier: BSD-3-Clause
 * numakit report: what a profile written by `numakit profile` means.  The
 * loading, attribution, analysis and formatting are the library's
 * (nk_profile_load / nk_profile_report / nk_profile_sharing); this file
 * chooses the outputs and writes them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_report_usage[] =
	"usage: numakit report [--json] [--html OUT.html] [--sharing OUT.txt] PROFILE.nkp...\n"
	"       numakit report [--json] [--html OUT.html] JOB | JOB/rank-R.nkp...\n"
	"\n"
	"Analyse a profile written by `numakit profile`: every sampled access is\n"
	"attributed to a variable (named range, heap allocation site, static\n"
	"variable, thread stack, file mapping); the report shows, per node, the\n"
	"variables by remote accesses with their source lines, page classes\n"
	"(private, shared within a node, shared across nodes), the thread x node\n"
	"and thread x thread matrices, and a diagnosis with a suggested fix per\n"
	"variable.  The program's binaries must still be where they were when it\n"
	"was profiled (missing ones are named in the warnings).\n"
	"\n"
	"Several profiles (or one written by `numakit profile --runs N`) are runs of\n"
	"one program: variables are matched by their allocation site or symbol, not\n"
	"their address, their samples pooled, accesses shown as means per run.  Runs\n"
	"of different programs or machines are refused.\n"
	"\n"
	"A job (the folder `numakit profile -o JOB` writes under an MPI or Slurm\n"
	"launcher, or its rank files) is read as one job: totals, a rank x node\n"
	"table per host, the ranks that differ from the others, the variables\n"
	"across ranks and each rank's top variables.  Files of different programs,\n"
	"jobs or launchers, or a rank twice, are refused; missing ranks are warned.\n"
	"\n"
	"Options:\n"
	"  --json           print the report as JSON (docs/report.md) instead of text\n"
	"  --html OUT.html  also write the report as one self-contained HTML page\n"
	"  --sharing OUT    also write the thread x thread sharing matrix, for\n"
	"                   `numakit run --pin sharing:OUT`\n"
	"  -h, --help       show this help\n"
	"\n"
	"Exit status: 0 success, 1 runtime failure (out of memory, writing an output\n"
	"failed), 2 bad usage or bad input (missing, corrupt or truncated profile,\n"
	"no sharing matrix in a profile with fewer than two threads or a job,\n"
	"files that are not one job; an output that is a folder, in a missing\n"
	"folder or one of the profiles, checked before any work).\n"
	"See numakit-report(1).\n";

static int write_out(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		cli_error("report", "%s: %s", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	size_t n = strlen(text);
	int bad = fwrite(text, 1, n, f) != n;
	if (fclose(f) || bad) {
		cli_error("report", "%s: cannot write: %s", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cli_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "html", required_argument, NULL, 'H' },
		{ "sharing", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *html = NULL, *sharing = NULL, *path;
	int json = 0, c, rc;
	nk_profile *p = NULL;
	nk_error err = { 0, "" };
	char *text = NULL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'H':
			html = optarg;
			break;
		case 's':
			sharing = optarg;
			break;
		case 'h':
			return cli_finish_stdout("report", cli_print_help("report"));
		default:
			return cli_bad_option("report", c, argv);
		}
	}
	if (optind == argc)
		return cli_usage_error("report", "no profile given");
	path = argv[optind];
	if ((html && !*html) || (sharing && !*sharing))
		return cli_usage_error("report", "empty output file name");
	/* before any work: a report must not overwrite a profile, and a bad output must not cost the analysis */
	const char *const *in = (const char *const *)&argv[optind];
	size_t nin = (size_t)(argc - optind);
	for (size_t i = 0; i < nin; i++)
		if ((rc = cli_check_input("report", NULL, in[i], CLI_INPUT_DIR)))
			return rc;
	if (html && ((rc = cli_check_output("report", "--html", html)) ||
		     (rc = cli_check_distinct("report", "--html", html, in, nin, "--sharing", sharing))))
		return rc;
	if (sharing && ((rc = cli_check_output("report", "--sharing", sharing)) ||
			(rc = cli_check_distinct("report", "--sharing", sharing, in, nin, NULL, NULL))))
		return rc;

	rc = nk_profile_load_many((const char *const *)&argv[optind], (size_t)(argc - optind), &p, &err);
	if (rc) {
		/* the library's messages name the file */
		cli_error("report", "%s", err.message[0] ? err.message : nk_strerror(rc));
		return cli_exit_status(rc, 0);
	}
	if (sharing) {
		rc = nk_profile_sharing(p, &text, &err);
		if (rc) {
			cli_error("report", "%s: %s", path, err.message[0] ? err.message : nk_strerror(rc));
			nk_profile_free(p);
			return cli_exit_status(rc, 0);
		}
		rc = write_out(sharing, text);
		free(text);
		if (rc) {
			nk_profile_free(p);
			return rc;
		}
	}
	if (html) {
		rc = nk_profile_report(p, NK_REPORT_HTML, &text, &err);
		if (rc) {
			cli_error("report", "%s", err.message[0] ? err.message : nk_strerror(rc));
			nk_profile_free(p);
			return CLI_EXIT_FAIL;
		}
		rc = write_out(html, text);
		free(text);
		if (rc) {
			nk_profile_free(p);
			return rc;
		}
	}
	rc = nk_profile_report(p, json ? NK_REPORT_JSON : NK_REPORT_TEXT, &text, &err);
	nk_profile_free(p);
	if (rc) {
		cli_error("report", "%s", err.message[0] ? err.message : nk_strerror(rc));
		return CLI_EXIT_FAIL;
	}
	fputs(text, stdout);
	free(text);
	return cli_finish_stdout("report", CLI_EXIT_OK);
}
