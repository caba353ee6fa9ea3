/* SPDX-License-Identifier: BSD-3-Clause
 * numakit maps: where a running process's memory is, per mapping and node,
 * from /proc/PID/numa_maps (or a saved copy of it, --file).  The parsing is
 * the library's (nk_numamaps_*); this file lays the table out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char cli_maps_usage[] =
	"usage: numakit maps [--json] [--all] PID|self\n"
	"       numakit maps [--json] [--all] --file FILE\n"
	"\n"
	"Show where the memory of process PID lives: for every mapping of\n"
	"/proc/PID/numa_maps its memory policy, page size and resident bytes on each\n"
	"NUMA node, then the total per node.  Mappings without resident pages are\n"
	"left out unless --all is given.  \"self\" is numakit's own process.\n"
	"\n"
	"Options:\n"
	"  --json       print the parsed maps as JSON (see docs/formats.md)\n"
	"  --all        list mappings without resident pages too\n"
	"  --file FILE  read a saved copy of a numa_maps file instead of a process\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0 success, 1 runtime failure (permission denied, a kernel\n"
	"without NUMA), 2 bad usage or bad input (no such process, a corrupt file).\n"
	"See numakit-maps(1).\n";

#define MAX_FILE (256u << 20)

/* Read a whole file for --file; message printed on failure. */
static int slurp(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		cli_error("maps", "%s: %s", path, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	for (;;) {
		if (cap - n < 65536) {
			char *nb;
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_FILE + 65536 || !(nb = realloc(buf, cap + 1))) {
				cli_error("maps", "%s: %s", path, cap > MAX_FILE ? "file too large" : strerror(ENOMEM));
				free(buf);
				fclose(f);
				return cap > MAX_FILE ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
			}
			buf = nb;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		cli_error("maps", "%s: cannot read: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return CLI_EXIT_USAGE;
	}
	fclose(f);
	if (!buf && !(buf = malloc(1))) {
		cli_error("maps", "out of memory");
		return CLI_EXIT_FAIL;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static const char *mapping_name(const nk_maps_entry *e)
{
	if (e->path && *e->path)
		return e->path;
	return e->type == NK_MAPS_HUGE ? "[huge]" : "[anon]";
}

static const char *size_or_dash(uint64_t bytes, char *buf, size_t cap)
{
	if (!bytes) {
		snprintf(buf, cap, "-");
		return buf;
	}
	return cli_fmt_size(bytes, buf, cap);
}

/* Bytes of entry @p e on node @p node. */
static uint64_t on_node(const nk_maps_entry *e, int node)
{
	for (size_t k = 0; k < e->nnodes; k++)
		if (e->nodes[k] == node)
			return e->node_pages[k] * e->page_size;
	return 0;
}

static int print_table(const nk_numamaps *nm, const char *what, int all)
{
	size_t n = nk_numamaps_count(nm), shown = 0, hidden = 0;
	int nn = nk_numamaps_totals(nm, NULL, NULL, 0);
	int *nodes = NULL;
	uint64_t *bytes = NULL, sum = 0;
	int pw = 6, col = 8, rc = CLI_EXIT_FAIL;
	char b[32];

	if (nn < 0) {
		cli_error("maps", "%s", nk_strerror(nn));
		return CLI_EXIT_FAIL;
	}
	nodes = calloc((size_t)nn + 1, sizeof *nodes);
	bytes = calloc((size_t)nn + 1, sizeof *bytes);
	if (!nodes || !bytes) {
		cli_error("maps", "out of memory");
		goto out;
	}
	nk_numamaps_totals(nm, nodes, bytes, (size_t)nn);
	for (int k = 0; k < nn; k++)
		sum += bytes[k];
	/* the policy column is as wide as the widest policy shown */
	for (size_t i = 0; i < n; i++) {
		nk_maps_entry e;
		nk_numamaps_entry(nm, i, &e);
		if (!e.pages && !all)
			continue;
		if ((int)strlen(e.policy) > pw)
			pw = (int)strlen(e.policy);
	}
	if (pw > 40)
		pw = 40;
	for (size_t i = 0; i < n; i++) {
		nk_maps_entry e;
		nk_numamaps_entry(nm, i, &e);
		if (e.pages || all)
			shown++;
		else
			hidden++;
	}
	printf("%s: %zu mappings, %s resident", what, n, cli_fmt_size(sum, b, sizeof b));
	if (nn) {
		printf(" on node%s", nn > 1 ? "s" : "");
		for (int k = 0; k < nn; k++)
			printf("%s%d", k ? "," : " ", nodes[k]);
	}
	printf("\n\n");
	printf("%-16s  %-*s  %-7s", "ADDRESS", pw, "POLICY", "PAGE");
	for (int k = 0; k < nn; k++) {
		snprintf(b, sizeof b, "N%d", nodes[k]);
		printf("  %*s", col, b);
	}
	printf("  %*s  %s\n", col, "TOTAL", "MAPPING");
	for (size_t i = 0; i < n; i++) {
		nk_maps_entry e;
		char ps[32];

		nk_numamaps_entry(nm, i, &e);
		if (!e.pages && !all)
			continue;
		printf("%-16" PRIx64 "  %-*.*s  %-7s", e.addr, pw, pw, e.policy,
		       e.page_size ? cli_fmt_size(e.page_size, ps, sizeof ps) : "-");
		for (int k = 0; k < nn; k++)
			printf("  %*s", col, size_or_dash(on_node(&e, nodes[k]), b, sizeof b));
		printf("  %*s  %s\n", col, size_or_dash(e.pages * e.page_size, b, sizeof b), mapping_name(&e));
	}
	printf("%-16s  %-*s  %-7s", "total", pw, "", "");
	for (int k = 0; k < nn; k++)
		printf("  %*s", col, size_or_dash(bytes[k], b, sizeof b));
	printf("  %*s\n", col, size_or_dash(sum, b, sizeof b));
	if (hidden)
		printf("\n%zu mapping%s without resident pages not shown (--all shows them)\n", hidden,
		       hidden > 1 ? "s" : "");
	rc = CLI_EXIT_OK;
out:
	free(nodes);
	free(bytes);
	return rc;
}

static int parse_pid(const char *s, int *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (int)v;
	return 0;
}

int cli_cmd_maps(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL;
	int json = 0, all = 0, pid = 0, c, rc;
	nk_numamaps *nm = NULL;
	nk_error err = { 0, "" };
	char what[PATH_MAX + 32];

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'a':
			all = 1;
			break;
		case 'f':
			file = optarg;
			break;
		case 'h':
			return cli_finish_stdout("maps", cli_print_help("maps"));
		default:
			return cli_bad_option("maps", c, argv);
		}
	}
	if (file && optind < argc)
		return cli_usage_error("maps", "give a PID or --file, not both");
	if (!file && optind == argc)
		return cli_usage_error("maps", "no process id given");
	if (argc - optind > 1)
		return cli_usage_error("maps", "unexpected argument '%s'", argv[optind + 1]);
	if (file) {
		char *text = NULL;
		size_t len = 0;

		rc = slurp(file, &text, &len);
		if (rc)
			return rc;
		rc = nk_numamaps_parse(text, len, &nm, &err);
		free(text);
		if (rc) {
			cli_error("maps", "%s: %s", file, err.message[0] ? err.message : nk_strerror(rc));
			return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		}
		snprintf(what, sizeof what, "%s", file);
	} else {
		if (strcmp(argv[optind], "self") == 0)
			pid = (int)getpid(); /* numakit itself: a quick look at the format */
		else if (parse_pid(argv[optind], &pid))
			return cli_usage_error("maps", "'%s' is not a process id", argv[optind]);
		rc = nk_numamaps_read(pid, &nm, &err);
		if (rc) {
			cli_error("maps", "%s", err.message[0] ? err.message : nk_strerror(rc));
			/* a process that is not there (or corrupt text) is bad input; the rest is the system */
			return rc == NK_ENOENT || rc == NK_EPARSE ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
		}
		snprintf(what, sizeof what, "process %d", pid);
	}
	if (json) {
		char *s = NULL;

		rc = nk_numamaps_to_json(nm, pid, 0, &s);
		if (rc) {
			cli_error("maps", "%s", nk_strerror(rc));
			rc = CLI_EXIT_FAIL;
		} else {
			puts(s);
			free(s);
			rc = CLI_EXIT_OK;
		}
	} else {
		rc = print_table(nm, what, all);
	}
	nk_numamaps_free(nm);
	return cli_finish_stdout("maps", rc);
}
