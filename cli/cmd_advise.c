/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise: a placement plan (plan.json, docs/plan.md) from a profile,
 * and the check of a plan against a machine.  The decisions are the
 * library's (nk_profile_advise, nk_advice_check); this file reads the
 * options, writes the plan and prints a short table of it, which it reads
 * back from the plan's own JSON text (the public API has no entry accessors:
 * the JSON is the plan's interface).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "srcadv.h"

const char cli_advise_usage[] =
	"usage: numakit advise [-o PLAN.json] [--machine FILE] [--min-size SIZE]\n"
	"                      [--no-pages] [--no-pin] [--no-phases] [--force] PROFILE.nkp...\n"
	"       numakit advise --check PLAN.json [--machine FILE]\n"
	"       numakit advise --source FILE.c [--json] [-o PATCH] [--min-size SIZE]\n"
	"                      [--machine FILE] [-- CLANG_ARGS...]\n"
	"       numakit advise --ranks [--json] [-o RANKFILE] JOB\n"
	"\n"
	"Write a placement plan for the program profiled in PROFILE.nkp (written by\n"
	"`numakit profile`): for each variable worth placing, a numakit policy that\n"
	"follows how its threads used it (a block per thread in the observed order,\n"
	"per-page ranges, interleaving over the nodes that share it), when to apply\n"
	"it (at allocation, or when a marked phase starts), the evidence and the\n"
	"reason; the variables left alone, with why; and a thread pinning.  The\n"
	"plan is JSON a person may edit (docs/plan.md); `numakit run --plan` applies\n"
	"it to the unmodified program.\n"
	"\n"
	"Several profiles (or one written by `numakit profile --runs N`) are runs of\n"
	"one program: advise decides from their pooled samples (variables matched by\n"
	"allocation site or symbol) and the plan says how many runs it came from.\n"
	"A job's profile (`numakit profile` under an MPI launcher) is its ranks as\n"
	"runs: one plan every rank can use.\n"
	"\n"
	"Without -o the plan is printed; with -o it is written to PLAN.json and a\n"
	"short table (variable, policy, when, reason) is printed.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE  write the plan to FILE\n"
	"  --machine FILE     advise for this machine file (`numakit topo --save`)\n"
	"                     instead of the machine the profile was taken on; with\n"
	"                     --check, check for it instead of this machine; with\n"
	"                     --source, its L2 size is the default --min-size\n"
	"  --min-size SIZE    leave variables smaller than SIZE alone (e.g. 1M;\n"
	"                     default: the machine's L2 cache, 256K when unknown)\n"
	"  --no-pages         never per-page placement (\"pages\" entries)\n"
	"  --no-pin           no thread pinning in the plan\n"
	"  --no-phases        one policy per variable, no changes between phases\n"
	"  --force            decide also from a profile that does not cover the whole\n"
	"                     run (samples dropped, a process killed), which is refused\n"
	"                     otherwise; the plan's warnings then say so\n"
	"  --check PLAN.json  validate a plan for this machine (or --machine's):\n"
	"                     prints OK, or exactly what is wrong\n"
	"  --source FILE.c    read an OpenMP C program instead (libclang): its global,\n"
	"                     static and main-scope arrays, their accesses in parallel\n"
	"                     loops (R/W/RW, line, index), schedules and sharing\n"
	"                     clauses, the serial initialisation, a policy per array\n"
	"                     with the reason, and a unified diff adding the numakit\n"
	"                     calls (to stdout after the table, or to -o PATCH);\n"
	"                     arguments after -- go to clang (-I, -D)\n"
	"  --ranks JOB        a rank mapping for a job whose ranks recorded their MPI\n"
	"                     traffic: the slots (host, node) the ranks ran in, given\n"
	"                     so that the pairs that exchange the most bytes sit\n"
	"                     closest, each node keeping its number of ranks; prints\n"
	"                     the costs and the moves; with -o, also writes an Open\n"
	"                     MPI rankfile (mpirun --mca rmaps_rank_file_physical 1\n"
	"                     -rf RANKFILE)\n"
	"  --json             with --source: one JSON document (numakit-source-advice\n"
	"                     version 1, docs/source-advisor.md), the diff included;\n"
	"                     with --ranks: the mapping as JSON (numakit-rank-map)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 success (the plan is OK); 1 runtime failure; 2 bad usage or\n"
	"bad input (missing or corrupt profile or machine file; a plan given to\n"
	"--check that is missing, corrupt or not valid for the machine, as for\n"
	"`run --plan`; an output that is a folder, in a missing folder or an input;\n"
	"a profile with too few samples to decide anything, or one that does not\n"
	"cover the whole run without --force; a source file that is missing or does\n"
	"not parse, or numakit built without libclang).\n"
	"See numakit-advise(1).\n";

static int write_text(const char *path, const char *text, int newline)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		cli_error("advise", "%s: %s", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	size_t n = strlen(text);
	int bad = fwrite(text, 1, n, f) != n || (newline && fputc('\n', f) == EOF);
	if (fclose(f) || bad) {
		cli_error("advise", "%s: cannot write: %s", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int write_out(const char *path, const char *text)
{
	return write_text(path, text, 1);
}

static const char *jstr(const json_t *o, const char *k, const char *dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* The short table of a plan, from its JSON text. */
static void print_table(const char *path, const char *text)
{
	json_t *root = json_loads(text, 0, NULL);
	if (!root)
		return;
	const json_t *entries = json_object_get(root, "entries");
	const json_t *left = json_object_get(root, "left_alone");
	const json_t *pin = json_object_get(root, "pin");
	const json_t *warn = json_object_get(root, "warnings");
	size_t ne = json_array_size(entries), nl = json_array_size(left);

	printf("%s: %zu entr%s, %zu variable%s left alone", path, ne, ne == 1 ? "y" : "ies", nl, nl == 1 ? "" : "s");
	if (json_is_object(pin))
		printf(", pinning: %s (%lld threads)", jstr(pin, "strategy", "?"),
		       (long long)json_integer_value(json_object_get(pin, "threads")));
	printf("\n");
	if (ne) {
		int wv = 8, wp = 6, ww = 4;
		char when[128];
		for (size_t i = 0; i < ne; i++) {
			const json_t *e = json_array_get(entries, i);
			int a = (int)strlen(jstr(e, "variable", jstr(e, "key", "?")));
			int b = (int)strlen(jstr(e, "policy", "?"));
			int c = (int)strlen(jstr(e, "when", "alloc")) + (json_object_get(e, "phase") ? 1 + (int)strlen(jstr(e, "phase", "")) : 0);
			wv = a > wv ? (a > 40 ? 40 : a) : wv;
			wp = b > wp ? (b > 40 ? 40 : b) : wp;
			ww = c > ww ? (c > 24 ? 24 : c) : ww;
		}
		printf("\n%-*s  %-*s  %-*s  %s\n", wv, "variable", wp, "policy", ww, "when", "reason");
		for (size_t i = 0; i < ne; i++) {
			const json_t *e = json_array_get(entries, i);
			if (json_object_get(e, "phase"))
				snprintf(when, sizeof when, "%s:%s", jstr(e, "when", "phase"), jstr(e, "phase", ""));
			else
				snprintf(when, sizeof when, "%s", jstr(e, "when", "alloc"));
			printf("%-*s  %-*s  %-*s  %s\n", wv, jstr(e, "variable", jstr(e, "key", "?")), wp,
			       jstr(e, "policy", "?"), ww, when, jstr(e, "reason", ""));
		}
	}
	if (nl) {
		printf("\nleft alone:\n");
		for (size_t i = 0; i < nl; i++) {
			const json_t *s = json_array_get(left, i);
			const char *name = jstr(s, "variable", NULL);
			/* a name several variables share (heap sites allocating on one line) gets its key */
			int dup = 0;
			for (size_t k = 0; name && k < nl && !dup; k++)
				dup = k != i && !strcmp(name, jstr(json_array_get(left, k), "variable", ""));
			if (!name || dup)
				printf("  %s%s%s%s: %s\n", name ? name : "", name ? " [" : "", jstr(s, "key", "?"), name ? "]" : "",
				       jstr(s, "reason", ""));
			else
				printf("  %s: %s\n", name, jstr(s, "reason", ""));
		}
	}
	for (size_t i = 0; i < json_array_size(warn); i++)
		printf("%swarning: %s\n", i ? "" : "\n", json_string_value(json_array_get(warn, i)));
	json_decref(root);
}

static int check_plan(const char *plan_path, const char *machine_file)
{
	struct cli_source src = CLI_SOURCE_INIT;
	nk_machine *m = NULL;
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	int rc;

	if ((rc = cli_check_input("advise", "--check", plan_path, 0)))
		return rc;
	rc = nk_advice_load(plan_path, &a, &err);
	if (rc) {
		cli_error("advise", "%s", err.message[0] ? err.message : nk_strerror(rc));
		/* a plan that does not parse is bad input, as for `run --plan` and `whatif --plan` */
		return cli_exit_status(rc, 0);
	}
	if (machine_file && (rc = cli_source_set(&src, "advise", NK_SOURCE_FILE, "--machine", machine_file))) {
		nk_advice_free(a);
		return rc;
	}
	if ((rc = cli_load_machine(&src, "advise", &m))) {
		nk_advice_free(a);
		return rc;
	}
	rc = nk_advice_check(a, m, &err);
	if (rc) {
		cli_error("advise", "%s: %s", plan_path, err.message[0] ? err.message : nk_strerror(rc));
		/* a plan that does not fit the machine is bad input, as for `run --plan` */
		rc = cli_exit_status(rc, CLI_MACHINE_INPUT);
	} else {
		size_t n = nk_advice_num_entries(a);
		printf("%s: OK for %s (%zu entr%s)\n", plan_path, machine_file ? machine_file : "this machine", n,
		       n == 1 ? "y" : "ies");
		rc = CLI_EXIT_OK;
	}
	nk_advice_free(a);
	nk_machine_free(m);
	return cli_finish_stdout("advise", rc);
}

/* The smallest L2 of the machine (--machine, else the live one), or 256 KiB. */
static uint64_t l2_size(const char *machine)
{
	struct cli_source src = CLI_SOURCE_INIT;
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	uint64_t l2 = 0;

	if (machine) {
		if (cli_source_set(&src, "advise", NK_SOURCE_FILE, "--machine", machine) ||
		    cli_load_machine(&src, "advise", &m))
			return 0;
	} else if (nk_machine_load_live(&m, &err)) {
		return 256 * 1024;
	}
	for (int i = 0, n = nk_machine_num_caches(m); i < n; i++) {
		nk_cache_info ci;
		if (!nk_machine_cache(m, i, &ci) && ci.level == 2 && ci.size && (!l2 || ci.size < l2))
			l2 = ci.size;
	}
	nk_machine_free(m);
	return l2 ? l2 : 256 * 1024;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			char *p = realloc(buf, cap);
			if (!p) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = p;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;
		free(buf);
		fclose(f);
		errno = e ? e : EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int advise_source(const char *path, int json, const char *out, uint64_t min_size, const char *machine,
			 char **cargs, int ncargs)
{
	struct srcadv_scan s;
	char msg[1024], *src = NULL, *patch = NULL, *text = NULL;
	size_t len = 0;
	int rc;

	memset(&s, 0, sizeof s);
	if ((rc = cli_check_input("advise", "--source", path, 0)))
		return rc;
	if (out) {
		const char *in[] = { path, machine };
		if ((rc = cli_check_output("advise", "-o", out)) ||
		    (rc = cli_check_distinct("advise", "-o", out, in, 2, NULL, NULL)))
			return rc;
	}
	if (!srcadv_have_libclang()) {
		cli_error("advise", "numakit was built without libclang (install libclang-dev and rebuild)");
		return CLI_EXIT_USAGE;
	}
	src = read_all(path, &len);
	if (!src) {
		cli_error("advise", "%s: %s", path, strerror(errno));
		return errno == ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	}
	if (memchr(src, '\0', len)) {
		cli_error("advise", "%s: not a C source file (it holds NUL bytes)", path);
		free(src);
		return CLI_EXIT_USAGE;
	}
	snprintf(s.file, sizeof s.file, "%s", path);
	rc = srcadv_scan_file(path, src, len, (const char *const *)cargs, ncargs, &s, msg, sizeof msg);
	if (rc) {
		if (rc == SRCADV_EPARSE)
			cli_error("advise", "%s does not parse: %s", path, msg);
		else if (rc == SRCADV_ENOLIBCLANG)
			cli_error("advise", "%s", msg);
		else
			cli_error("advise", "%s: out of memory", path);
		srcadv_scan_clear(&s);
		free(src);
		return rc == SRCADV_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	}
	srcadv_decide(&s, min_size ? min_size : l2_size(machine));
	rc = CLI_EXIT_FAIL;
	if (srcadv_patch(&s, src, len, &patch)) {
		cli_error("advise", "out of memory");
		goto out;
	}
	text = json ? srcadv_format_json(&s, out ? NULL : patch) : srcadv_format_text(&s);
	if (!text) {
		cli_error("advise", "out of memory");
		goto out;
	}
	if (out && (rc = write_text(out, patch, 0)))
		goto out;
	fputs(text, stdout);
	if (json)
		putchar('\n');
	else if (!out && patch[0])
		printf("\n%s", patch);
	else if (out)
		printf("\n%s: %s\n", out, patch[0] ? "the patch (apply with patch -p1 or git apply)" :
				       "empty: nothing to place");
	else
		printf("\nno patch: nothing to place\n");
	rc = cli_finish_stdout("advise", CLI_EXIT_OK);
out:
	free(text);
	free(patch);
	free(src);
	srcadv_scan_clear(&s);
	return rc;
}

/* --ranks: the rank mapping of a job (nk_profile_rankmap); with -o its Open MPI rankfile too. */
static int advise_ranks(const char *const *paths, size_t n, const char *out, int json)
{
	int rc;
	if (!n)
		return cli_usage_error("advise", "--ranks: no job given (the folder `numakit profile -o JOB` wrote under "
				       "a launcher, or its rank files)");
	for (size_t i = 0; i < n; i++)
		if ((rc = cli_check_input("advise", NULL, paths[i], CLI_INPUT_DIR)))
			return rc;
	if (out && ((rc = cli_check_output("advise", "-o", out)) ||
		    (rc = cli_check_distinct("advise", "-o", out, paths, n, NULL, NULL))))
		return rc;
	nk_profile *p = NULL;
	nk_error err = { 0, "" };
	char *text = NULL, *rankfile = NULL;
	rc = nk_profile_load_many(paths, n, &p, &err);
	if (!rc)
		rc = nk_profile_rankmap(p, json ? NK_REPORT_JSON : NK_REPORT_TEXT, &text, &err);
	if (!rc && out)
		rc = nk_profile_rankmap(p, NK_RANKMAP_OPENMPI, &rankfile, &err);
	nk_profile_free(p);
	if (rc) {
		cli_error("advise", "--ranks %s: %s", paths[0], err.message[0] ? err.message : nk_strerror(rc));
		return cli_exit_status(rc, 0);
	}
	if (out)
		rc = write_text(out, rankfile, 0);
	if (!rc) {
		/* the text's numakit run line names the rankfile just written */
		static const char word[] = "--rank-map RANKFILE";
		const char *at = out && !json ? strstr(text, word) : NULL;
		if (at) {
			fwrite(text, 1, (size_t)(at - text), stdout);
			printf("--rank-map %s%s", out, at + strlen(word));
		} else {
			fputs(text, stdout);
		}
	}
	free(text);
	free(rankfile);
	return rc ? rc : cli_finish_stdout("advise", CLI_EXIT_OK);
}

int cli_cmd_advise(int argc, char **argv)
{
	enum { OPT_MACHINE = 256, OPT_MIN_SIZE, OPT_NO_PAGES, OPT_NO_PIN, OPT_NO_PHASES, OPT_CHECK, OPT_SOURCE, OPT_JSON,
	       OPT_FORCE, OPT_RANKS };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "machine", required_argument, NULL, OPT_MACHINE },
		{ "min-size", required_argument, NULL, OPT_MIN_SIZE },
		{ "no-pages", no_argument, NULL, OPT_NO_PAGES },
		{ "no-pin", no_argument, NULL, OPT_NO_PIN },
		{ "no-phases", no_argument, NULL, OPT_NO_PHASES },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "ranks", no_argument, NULL, OPT_RANKS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *machine = NULL, *check = NULL, *path;
	const char *advise_only = NULL; /* an option that makes no sense with --check */
	const char *profile_only = NULL; /* an option that makes no sense with --source */
	const char *source = NULL;
	int json = 0, ranks = 0, nopts = argc;
	nk_advise_opts o;
	int c, rc;

	/* with --source, what follows "--" goes to clang */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nopts = i;
			break;
		}
	memset(&o, 0, sizeof(o));
	opterr = 0;
	while ((c = getopt_long(nopts, argv, ":ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			advise_only = "-o";
			break;
		case OPT_MACHINE:
			machine = optarg;
			break;
		case OPT_MIN_SIZE:
			if (cli_parse_size(optarg, &o.min_size) || !o.min_size)
				return cli_usage_error("advise", "--min-size: '%s' is not a size such as 256K or 1M", optarg);
			advise_only = "--min-size";
			break;
		case OPT_NO_PAGES:
			o.no_pages = 1;
			advise_only = profile_only = "--no-pages";
			break;
		case OPT_NO_PIN:
			o.no_pin = 1;
			advise_only = profile_only = "--no-pin";
			break;
		case OPT_NO_PHASES:
			o.no_phases = 1;
			advise_only = profile_only = "--no-phases";
			break;
		case OPT_FORCE:
			o.force = 1;
			advise_only = profile_only = "--force";
			break;
		case OPT_CHECK:
			check = optarg;
			profile_only = "--check";
			break;
		case OPT_SOURCE:
			source = optarg;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_RANKS:
			ranks = 1;
			break;
		case 'h':
			return cli_finish_stdout("advise", cli_print_help("advise"));
		default:
			return cli_bad_option("advise", c, argv);
		}
	}
	if ((out && !*out) || (machine && !*machine) || (check && !*check) || (source && !*source))
		return cli_usage_error("advise", "empty file name");
	if (ranks) {
		if (source || check || machine || o.min_size || o.no_pages || o.no_pin || o.no_phases || o.force)
			return cli_usage_error("advise", "--ranks takes only -o and --json");
		if (nopts < argc)
			return cli_usage_error("advise", "unexpected argument '--'");
		return advise_ranks((const char *const *)&argv[optind], (size_t)(argc - optind), out, json);
	}
	if (source) {
		if (profile_only)
			return cli_usage_error("advise", "%s cannot be used with --source", profile_only);
		if (optind < nopts)
			return cli_usage_error("advise", "unexpected argument '%s' (clang's arguments go after --)",
					       argv[optind]);
		return advise_source(source, json, out, o.min_size, machine, argv + nopts + (nopts < argc),
				     argc - nopts - (nopts < argc));
	}
	if (json)
		return cli_usage_error("advise", "--json goes with --source (the plan is JSON already)");
	if (nopts < argc)
		return cli_usage_error("advise", "unexpected argument '--' (clang's arguments go with --source)");
	if (check) {
		if (advise_only)
			return cli_usage_error("advise", "%s cannot be used with --check", advise_only);
		if (optind < argc)
			return cli_usage_error("advise", "unexpected argument '%s' (--check takes the plan)", argv[optind]);
		return check_plan(check, machine);
	}
	if (optind == argc)
		return cli_usage_error("advise", "no profile given");
	path = argv[optind];
	for (int i = optind; i < argc; i++)
		if ((rc = cli_check_input("advise", NULL, argv[i], CLI_INPUT_DIR)))
			return rc;
	if (out) {
		if ((rc = cli_check_output("advise", "-o", out)) ||
		    (rc = cli_check_distinct("advise", "-o", out, (const char *const *)&argv[optind],
					     (size_t)(argc - optind), NULL, NULL)) ||
		    (rc = cli_check_distinct("advise", "-o", out, &machine, 1, NULL, NULL)))
			return rc;
	}

	nk_machine *m = NULL;
	if (machine) {
		struct cli_source src = CLI_SOURCE_INIT;
		if ((rc = cli_source_set(&src, "advise", NK_SOURCE_FILE, "--machine", machine)) ||
		    (rc = cli_load_machine(&src, "advise", &m)))
			return rc;
	}
	nk_profile *p = NULL;
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	char *text = NULL;
	rc = nk_profile_load_pooled((const char *const *)&argv[optind], (size_t)(argc - optind), &p, &err);
	if (rc) {
		cli_error("advise", "%s", err.message[0] ? err.message : nk_strerror(rc));
		nk_machine_free(m);
		return cli_exit_status(rc, 0);
	}
	int complete = 1;
	char *why = NULL;
	if (!o.force && !nk_profile_coverage(p, &complete, &why, NULL) && !complete) {
		cli_error("advise", "%s: the profile does not cover the whole run (%s): refusing to decide from it; "
			  "profile again (a larger NK_PROF_BUDGET, a lower --rate) or use --force", path, why);
		free(why);
		nk_profile_free(p);
		nk_machine_free(m);
		return CLI_EXIT_USAGE;
	}
	free(why);
	rc = nk_profile_advise(p, m, &o, &a, &err);
	nk_profile_free(p);
	nk_machine_free(m);
	if (rc) {
		cli_error("advise", "%s: %s", path, err.message[0] ? err.message : nk_strerror(rc));
		return cli_exit_status(rc, 0);
	}
	rc = nk_advice_format(a, &text, &err);
	nk_advice_free(a);
	if (rc) {
		cli_error("advise", "%s", err.message[0] ? err.message : nk_strerror(rc));
		return CLI_EXIT_FAIL;
	}
	if (!out) {
		puts(text);
		free(text);
		return cli_finish_stdout("advise", CLI_EXIT_OK);
	}
	rc = write_out(out, text);
	if (!rc)
		print_table(out, text);
	free(text);
	return rc ? rc : cli_finish_stdout("advise", CLI_EXIT_OK);
}
