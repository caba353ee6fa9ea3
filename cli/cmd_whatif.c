/* SPDX-License-Identifier: BSD-3-Clause
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
#include "rankfile.h"

const char cli_whatif_usage[] =
	"usage: numakit whatif PROFILE.nkp... [--plan PLAN.json] [--policy VAR=POLICY ...]\n"
	"                      [--machine FILE | --synthetic DESC] [--json] [--force]\n"
	"       numakit whatif --rank-map FILE JOB [--json] [--force]\n"
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
	"  --rank-map FILE   a rank mapping for the job JOB (`numakit advise --ranks`:\n"
	"                    an Open MPI rankfile or its --json): communication x\n"
	"                    distance as profiled and mapped (total, heaviest pairs)\n"
	"                    and each rank's remote fraction and stall, its memory\n"
	"                    following it to its node (numakit run --rank-map binds\n"
	"                    it there) or staying where it was\n"
	"  --json            print JSON (format numakit-whatif, numakit-rankmap-whatif\n"
	"                    with --rank-map) instead of text"
	"  --force           predict also from a profile that does not cover the whole\n"
	"                    run (samples dropped, a process killed), which is refused\n"
	"                    otherwise (a warning on stderr then says so)\n"
	"  -h, --help        show this help\n"
	"\n"
	"At least one of --plan, --policy and --rank-map is needed.\n"
	"Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input (missing\n"
	"or corrupt profile or plan, unknown variable, bad policy, a node or cpu the\n"
	"machine lacks, a profile that does not cover the whole run without --force).\n"
	"See numakit-whatif(1).\n";

/* --rank-map FILE JOB: the mapping priced against the job as profiled (nk_profile_rankmap_whatif). */
static int whatif_rank_map(const char *map, const char *const *paths, size_t n, int json, int force)
{
	struct cli_rankfile f = { 0 };
	nk_rank_slot *slots = NULL;
	nk_profile *p = NULL;
	nk_error err = { 0, "" };
	char why[NK_ERROR_MSG_MAX], *text = NULL, *cov = NULL;
	int rc, complete = 1, status;

	if (!*map)
		return cli_usage_error("whatif", "--rank-map: empty file name");
	if (!n)
		return cli_usage_error("whatif", "--rank-map: no job given (the folder `numakit profile -o JOB` wrote "
				       "under a launcher, or its rank files)");
	if ((status = cli_check_input("whatif", "--rank-map", map, 0)))
		return status;
	for (size_t i = 0; i < n; i++)
		if ((status = cli_check_input("whatif", NULL, paths[i], CLI_INPUT_DIR)))
			return status;
	if (cli_rankfile_load(map, &f, why, sizeof why)) {
		cli_error("whatif", "--rank-map %s: %s", map, why);
		return CLI_EXIT_USAGE;
	}
	status = CLI_EXIT_FAIL;
	if (!(slots = calloc(f.n, sizeof *slots))) {
		cli_error("whatif", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < f.n; i++)
		slots[i] = (nk_rank_slot){ f.slots[i].rank, f.slots[i].host[0] == '+' ? NULL : f.slots[i].host,
					   f.slots[i].node, f.slots[i].cpus, f.slots[i].ncpus };
	rc = nk_profile_load_many(paths, n, &p, &err);
	if (rc) {
		cli_error("whatif", "%s", err.message[0] ? err.message : nk_strerror(rc));
		status = cli_exit_status(rc, 0);
		goto out;
	}
	if (!nk_profile_coverage(p, &complete, &cov, NULL) && !complete) {
		if (!force) {
			cli_error("whatif", "%s: the profile does not cover the whole run (%s): refusing to predict from it; "
				  "profile again (a larger NK_PROF_BUDGET, a lower --rate) or use --force", paths[0], cov);
			status = CLI_EXIT_USAGE;
			goto out;
		}
		fprintf(stderr, "numakit whatif: warning: %s does not cover the whole run (%s): predicting from it "
			"anyway (--force)\n", paths[0], cov);
	}
	rc = nk_profile_rankmap_whatif(p, slots, f.n, json ? NK_REPORT_JSON : NK_REPORT_TEXT, &text, &err);
	if (rc) {
		cli_error("whatif", "--rank-map %s: %s", map, err.message[0] ? err.message : nk_strerror(rc));
		status = cli_exit_status(rc, 0);
		goto out;
	}
	fputs(text, stdout);
	status = cli_finish_stdout("whatif", CLI_EXIT_OK);
out:
	free(text);
	free(cov);
	free(slots);
	nk_profile_free(p);
	cli_rankfile_free(&f);
	return status;
}

int cli_cmd_whatif(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plan", required_argument, NULL, 'p' },
		{ "policy", required_argument, NULL, 'P' },
		{ "machine", required_argument, NULL, 'm' },
		{ "synthetic", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "rank-map", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_source src = CLI_SOURCE_INIT;
	const char *plan_path = NULL, *rank_map = NULL;
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
		case 'r':
			rank_map = optarg;
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
	if (rank_map && (plan_path || n_policies || src.kind >= 0)) {
		status = cli_usage_error("whatif", "--rank-map cannot go with %s: it prices where the ranks run, on the "
				 "job's own hosts", plan_path ? "--plan" : n_policies ? "--policy" : src.opt);
		goto out;
	}
	if (rank_map) {
		status = whatif_rank_map(rank_map, (const char *const *)&argv[optind], (size_t)(argc - optind), json,
					 force);
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
