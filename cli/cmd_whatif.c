/*
 * numakit whatif: what a placement plan would do to a profiled run.  The
 * model is the library's (nk_profile_whatif, docs/whatif.md); this file
 * loads the profile, the plan (--plan FILE, or an empty one) and the
 * --policy overrides (nk_advice_set), the machine when another one is asked
 * for, and prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_whatif_usage[] =
	"usage: numakit whatif PROFILE.nkp... [--plan PLAN.json] [--policy VAR=POLICY ...]\n"
	"                      [--machine FILE | --synthetic DESC] [--json] [--force]\n"
	"\n"
	"Predict what a placement plan would do to the run a profile recorded: per\n"
	"variable and overall, the remote-access fraction and an estimated memory-stall\n"
	"time as profiled and under the plan, and the migration volume the plan implies.\n"
	"Every sampled access is re-placed: its page gets the node the plan gives that\n"
	"page, its thread the node the plan's pinning gives it.  Stall times are\n"
	"estimates for comparing plans, not predictions of run time (docs/whatif.md).\n"
	"Several profiles (or one of `numakit profile --runs N`) are runs of one\n"
	"program, replayed together: counts and stall times are means per run.\n"
	"A job's profile (`numakit profile` under an MPI launcher) is its ranks as runs.\n"
	"\n"
	"Options:\n"
	"  --plan FILE       the plan (`numakit advise -o FILE`, format numakit-plan)\n"
	"  --policy VAR=POLICY\n"
	"                    give variable VAR (its name as `numakit report` shows it,\n"
	"                    or its key) the policy POLICY (e.g. block, cyclic,\n"
	"                    bind:nodes=1, or none); repeatable; overrides --plan\n"
	"  --machine FILE    predict for the machine in FILE (`numakit topo --save`,\n"
	"                    `numakit bench --save`) instead of the profiled one\n"
	"  --synthetic DESC  predict for a synthetic machine (numakit-topo(1))\n"
	"  --json            print JSON (format numakit-whatif) instead of text\n"
	"  --force           predict also from a profile that does not cover the whole\n"
	"                    run (samples dropped, a process killed), which is refused\n"
	"                    otherwise (a warning on stderr then says so)\n"
	"  -h, --help        show this help\n"
	"\n"
	"At least one of --plan and --policy is needed.\n"
	"Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input (missing\n"
	"or corrupt profile or plan, unknown variable, bad policy, a node or cpu the\n"
	"machine lacks, a profile that does not cover the whole run without --force).\n"
	"See numakit-whatif(1).\n";

int cli_cmd_whatif(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plan", required_argument, NULL, 'p' },
		{ "policy", required_argument, NULL, 'P' },
		{ "machine", required_argument, NULL, 'm' },
		{ "synthetic", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_source src = CLI_SOURCE_INIT;
	const char *plan_path = NULL;
	char **policies = NULL;
	size_t n_policies = 0;
	int json = 0, force = 0, complete = 1, c, rc, status = CLI_EXIT_FAIL;
	char *why = NULL;
	nk_profile *p = NULL;
	nk_advice *a = NULL;
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	char *text = NULL;

	policies = calloc((size_t)argc, sizeof(*policies));
	if (!policies) {
		cli_error("whatif", "out of memory");
		return CLI_EXIT_FAIL;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (plan_path) {
				status = cli_usage_error("whatif", "--plan given twice");
				goto out;
			}
			plan_path = optarg;
			break;
		case 'P':
			policies[n_policies++] = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'm':
			if ((rc = cli_source_set(&src, "whatif", NK_SOURCE_FILE, "--machine", optarg))) {
				status = rc;
				goto out;
			}
			break;
		case 's':
			if ((rc = cli_source_set(&src, "whatif", NK_SOURCE_SYNTHETIC, "--synthetic", optarg))) {
				status = rc;
				goto out;
			}
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			status = cli_finish_stdout("whatif", cli_print_help("whatif"));
			goto out;
		default:
			status = cli_bad_option("whatif", c, argv);
			goto out;
		}
	}
	if (optind == argc) {
		status = cli_usage_error("whatif", "no profile given");
		goto out;
	}
	if (!plan_path && !n_policies) {
		status = cli_usage_error("whatif", "no plan: give --plan FILE or --policy VAR=POLICY");
		goto out;
	}
	if (plan_path && !*plan_path) {
		status = cli_usage_error("whatif", "empty plan file name");
		goto out;
	}
	for (size_t i = 0; i < n_policies; i++) {
		const char *eq = strchr(policies[i], '=');
		if (!eq || eq == policies[i] || !eq[1]) {
			status = cli_usage_error("whatif", "--policy '%s': expected VAR=POLICY", policies[i]);
			goto out;
		}
	}

	for (int i = optind; i < argc; i++)
		if ((status = cli_check_input("whatif", NULL, argv[i], CLI_INPUT_DIR)))
			goto out;
	if (plan_path && (status = cli_check_input("whatif", "--plan", plan_path, 0)))
		goto out;
	rc = nk_profile_load_pooled((const char *const *)&argv[optind], (size_t)(argc - optind), &p, &err);
	if (rc) {
		cli_error("whatif", "%s", err.message[0] ? err.message : nk_strerror(rc));
		status = cli_exit_status(rc, CLI_MACHINE_INPUT);
		goto out;
	}
	const char *path = argc - optind > 1 ? "the profiles" : argv[optind];
	if (!nk_profile_coverage(p, &complete, &why, NULL) && !complete) {
		if (!force) {
			cli_error("whatif", "%s: the profile does not cover the whole run (%s): refusing to predict from "
				  "it; profile again (a larger NK_PROF_BUDGET, a lower --rate) or use --force", path, why);
			status = CLI_EXIT_USAGE;
			goto out;
		}
		fprintf(stderr, "numakit whatif: warning: %s does not cover the whole run (%s): predicting from it "
			"anyway (--force)\n", path, why);
	}
	rc = plan_path ? nk_advice_load(plan_path, &a, &err) : nk_advice_create(&a);
	if (rc) {
		cli_error("whatif", "%s", err.message[0] ? err.message : nk_strerror(rc));
		status = cli_exit_status(rc, CLI_MACHINE_INPUT);
		goto out;
	}
	for (size_t i = 0; i < n_policies; i++) {
		char *var = strdup(policies[i]);
		if (!var) {
			cli_error("whatif", "out of memory");
			goto out;
		}
		char *eq = strchr(var, '=');
		*eq = 0;
		rc = nk_advice_set(a, p, var, eq + 1, &err);
		free(var);
		if (rc) {
			cli_error("whatif", "--policy %s: %s", policies[i], err.message[0] ? err.message : nk_strerror(rc));
			status = cli_exit_status(rc, CLI_MACHINE_INPUT);
			goto out;
		}
	}
	if (src.kind >= 0 && (rc = cli_load_machine(&src, "whatif", &m))) {
		status = rc;
		goto out;
	}
	rc = nk_profile_whatif(p, m, a, json ? NK_REPORT_JSON : NK_REPORT_TEXT, &text, &err);
	if (rc) {
		cli_error("whatif", "%s", err.message[0] ? err.message : nk_strerror(rc));
		status = cli_exit_status(rc, CLI_MACHINE_INPUT);
		goto out;
	}
	fputs(text, stdout);
	status = cli_finish_stdout("whatif", CLI_EXIT_OK);
out:
	free(why);
	free(text);
	nk_machine_free(m);
	nk_advice_free(a);
	nk_profile_free(p);
	free(policies);
	return status;
}
