/* SPDX-License-Identifier: BSD-3-Clause
 * numakit run inside a parallel job (issue 14, docs/run.md "MPI jobs"):
 * which rank this is (nk_job_detect on the environment), the host's
 * share-out among the local ranks (nk_job_layout_build), and the
 * rank-relative specs ("rank", "rank:LIST") of --membind, --interleave,
 * --weighted, --preferred, --preferred-many, --cpus and --pin mapped into
 * this rank's share.  The ranks do not talk to each other: every rank
 * computes the same layout, so job-wide messages are printed by local rank
 * 0 alone, once per host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

extern char **environ;

void cli_job_free(struct cli_job *j)
{
	nk_job_layout_free(j->layout);
	nk_machine_free(j->share_machine);
	free(j->cpus);
	free(j->mem);
	memset(j, 0, sizeof *j);
}

int cli_job_is_relative(const char *spec)
{
	return spec && !strncmp(spec, "rank", 4) && (spec[4] == 0 || spec[4] == ':');
}

/* The ids as text: compact ranges when increasing, else in order. */
char *cli_job_ids(const int *ids, size_t n)
{
	size_t cap = 16 * n + 2, len = 0;
	char *s;
	int inc = 1;

	for (size_t i = 1; i < n; i++)
		inc &= ids[i] > ids[i - 1];
	if (inc)
		return cli_list_alloc(ids, n);
	if (!(s = malloc(cap)))
		return NULL;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "", ids[i]);
	return s;
}

static int *get_ids(const nk_job_layout *l, int r, int (*get)(const nk_job_layout *, int, int *, size_t), size_t *n)
{
	int k = get(l, r, NULL, 0);
	int *v = malloc(((size_t)(k > 0 ? k : 0) + 1) * sizeof *v);

	if (!v || k < 0) {
		free(v);
		return NULL;
	}
	get(l, r, v, (size_t)k);
	*n = (size_t)k;
	return v;
}

static int same_set(const int *a, size_t na, const int *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		size_t k = 0;
		while (k < nb && b[k] != a[i])
			k++;
		if (k == nb)
			return 0;
	}
	return 1;
}

int cli_job_resolve(struct cli_job *j, const nk_machine *m, int quiet)
{
	nk_error err = { 0, "" };
	int rc, nallowed, ncpuset, *allowed = NULL, *cpuset = NULL, status = CLI_EXIT_FAIL;

	rc = nk_job_detect((const char *const *)environ, &j->info);
	if (rc == NK_EPARSE) {
		cli_error("run", "rank-relative placement: the %s launcher's variables are unusable: %s",
			  nk_launcher_name(j->info.launcher), j->info.problems);
		return CLI_EXIT_USAGE;
	}
	if (rc == NK_ENODATA && !quiet)
		fprintf(stderr, "numakit run: no MPI launcher variables (OMPI_COMM_WORLD_*, PMI_RANK, PMIX_RANK, "
				"SLURM_PROCID): rank-relative options place a single process (local rank 0 of 1)\n");
	j->lead = j->info.local_rank == 0;
	if (rc == 0 && j->info.problems[0] && j->lead && !quiet)
		fprintf(stderr, "numakit run: %s launcher: %s\n", nk_launcher_name(j->info.launcher), j->info.problems);

	nallowed = nk_machine_allowed_cpus(m, NULL, 0);
	ncpuset = nk_machine_cpuset_cpus(m, NULL, 0);
	allowed = malloc((size_t)nallowed * sizeof *allowed);
	cpuset = malloc((size_t)ncpuset * sizeof *cpuset);
	if (!allowed || !cpuset)
		goto nomem;
	nk_machine_allowed_cpus(m, allowed, (size_t)nallowed);
	nk_machine_cpuset_cpus(m, cpuset, (size_t)ncpuset);
	/*
	 * A rank whose affinity is narrower than its cpuset was bound by the launcher: each rank has its
	 * own cpus already, so its share is its binding, never more (the other ranks' are unknown here).
	 */
	j->bound = j->info.local_size > 1 && nallowed < ncpuset;
	rc = nk_job_layout_build(m, allowed, (size_t)nallowed, j->bound ? 1 : j->info.local_size, &j->layout, &err);
	if (rc) {
		cli_error("run", "rank-relative placement: %s", err.message[0] ? err.message : nk_strerror(rc));
		status = rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		goto out;
	}
	j->row = j->bound ? 0 : j->info.local_rank;
	if (!(j->cpus = get_ids(j->layout, j->row, nk_job_layout_cpus, &j->ncpus)) ||
	    !(j->mem = get_ids(j->layout, j->row, nk_job_layout_mem_nodes, &j->nmem)))
		goto nomem;

	if (j->lead && !quiet) {
		int nn = nk_job_layout_num_nodes(j->layout), ls = j->info.local_size;
		if (j->bound) {
			nk_job_layout *even = NULL;
			int *mine = NULL;
			size_t nmine = 0;
			/* what numakit would have given local rank 0 over the whole cpuset */
			if (!nk_job_layout_build(m, cpuset, (size_t)ncpuset, ls, &even, NULL))
				mine = get_ids(even, 0, nk_job_layout_cpus, &nmine);
			if (!mine || !same_set(mine, nmine, allowed, (size_t)nallowed)) {
				char *b = cli_list_alloc(allowed, (size_t)nallowed), *c = cli_list_alloc(cpuset, (size_t)ncpuset);
				fprintf(stderr,
					"numakit run: the launcher bound the ranks (local rank 0 to cpus %s of %s): each of the %d "
					"local ranks is placed inside its own binding, not in numakit's share-out; start the job "
					"without binding (mpirun --bind-to none, srun --cpu-bind=none) to let numakit share the "
					"host out\n",
					b ? b : "?", c ? c : "?", ls);
				free(b);
				free(c);
			}
			free(mine);
			nk_job_layout_free(even);
		} else {
			if (ls > nn)
				fprintf(stderr, "numakit run: %d local ranks on %d node%s: ranks share a node\n", ls, nn,
					nn == 1 ? "" : "s");
			if (ls > nallowed)
				fprintf(stderr, "numakit run: %d local ranks on %d cpu%s: cpus are oversubscribed\n", ls,
					nallowed, nallowed == 1 ? "" : "s");
		}
	}
	if (!j->nmem) {
		cli_error("run", "rank-relative placement: local rank %d's share has no node this process may "
				 "allocate on",
			  j->info.local_rank);
		status = CLI_EXIT_USAGE;
		goto out;
	}
	status = 0;
	goto out;
nomem:
	cli_error("run", "out of memory");
out:
	free(allowed);
	free(cpuset);
	return status;
}

/* "rank:LIST": positions into @p v (n of them), in LIST's (increasing) order; exit status on error. */
static int pick(const char *opt, const char *spec, const int *v, size_t n, const char *what, int **out, size_t *nout)
{
	nk_error err = { 0, "" };
	const char *list = spec[4] == ':' ? spec + 5 : NULL;
	int k, *pos;

	if (!list) {
		if (!(*out = malloc(n * sizeof **out)))
			goto nomem;
		memcpy(*out, v, n * sizeof *v);
		*nout = n;
		return 0;
	}
	k = nk_parse_list(list, NULL, 0, &err);
	if (k < 0)
		return cli_usage_error("run", "%s %s: %s", opt, spec, err.message);
	if (k == 0)
		return cli_usage_error("run", "%s %s: empty list", opt, spec);
	if (!(pos = malloc((size_t)k * sizeof *pos)))
		goto nomem;
	nk_parse_list(list, pos, (size_t)k, NULL);
	if ((size_t)pos[k - 1] >= n) {
		int last = pos[k - 1];
		free(pos);
		return cli_usage_error("run", "%s %s: this rank's share has %zu %s (rank:0-%zu): position %d is beyond it",
				       opt, spec, n, what, n - 1, last);
	}
	for (int i = 0; i < k; i++)
		pos[i] = v[pos[i]];
	*out = pos;
	*nout = (size_t)k;
	return 0;
nomem:
	cli_error("run", "out of memory");
	return CLI_EXIT_FAIL;
}

int cli_job_nodes(const struct cli_job *j, const char *opt, const char *spec, int **out, size_t *n)
{
	return pick(opt, spec, j->mem, j->nmem, "memory nodes", out, n);
}

int cli_job_cpus(const struct cli_job *j, const char *opt, const char *spec, int **out, size_t *n)
{
	return pick(opt, spec, j->cpus, j->ncpus, "cpus", out, n);
}

int cli_job_weighted(const struct cli_job *j, const char *spec, int **nodes, unsigned **weights, size_t *n)
{
	const char *p = spec + 5;
	size_t cap = 1;

	if (spec[4] == 0 || !strchr(spec, '='))
		return pick("--weighted", spec, j->mem, j->nmem, "memory nodes", nodes, n);
	for (const char *q = p; *q; q++)
		cap += *q == ',';
	*nodes = calloc(cap, sizeof **nodes);
	*weights = calloc(cap, sizeof **weights);
	if (!*nodes || !*weights) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	*n = 0;
	for (;;) {
		const char *end = strchr(p, ',');
		char *e1, *e2;
		long pos, w;

		if (!end)
			end = p + strlen(p);
		pos = strtol(p, &e1, 10);
		if (e1 == p || *e1 != '=' || pos < 0 || (w = strtol(e1 + 1, &e2, 10), e2 == e1 + 1) || e2 != end || w < 1 ||
		    w > 1000)
			return cli_usage_error("run", "--weighted %s: expected rank:POSITION=WEIGHT,..., found '%.*s'", spec,
					       (int)(end - p), p);
		if ((size_t)pos >= j->nmem)
			return cli_usage_error("run", "--weighted %s: this rank's share has %zu memory nodes (rank:0-%zu): "
						      "position %ld is beyond it",
					       spec, j->nmem, j->nmem - 1, pos);
		for (size_t i = 0; i < *n; i++)
			if ((*nodes)[i] == j->mem[pos])
				return cli_usage_error("run", "--weighted %s: position %ld given twice", spec, pos);
		(*nodes)[*n] = j->mem[pos];
		(*weights)[*n] = (unsigned)w;
		(*n)++;
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

int cli_job_pin(struct cli_job *j, const nk_machine *m, const char *spec, char **strategy, const nk_machine **pm)
{
	nk_error err = { 0, "" };
	const char *s = spec && spec[4] == ':' ? spec + 5 : "compact";
	int rc;

	if (!j->share_machine) {
		rc = nk_machine_restrict(m, j->cpus, j->ncpus, NULL, 0, &j->share_machine, &err);
		if (rc) {
			cli_error("run", "rank-relative placement: %s", err.message[0] ? err.message : nk_strerror(rc));
			return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		}
	}
	*pm = j->share_machine;
	*strategy = NULL;
	if (!spec)
		return 0;
	if (*s >= '0' && *s <= '9') {
		/* positions in the share, in thread order ("rank:1,0"): nk_parse_list would sort them */
		char *text = malloc(strlen(s) * 8 + 16), *out = text;
		const char *p = s;
		if (!text)
			goto nomem;
		*out = 0;
		while (*p) {
			char *e;
			long a = strtol(p, &e, 10), b = a;
			if (e == p || a < 0)
				goto bad;
			if (*e == '-') {
				const char *q = e + 1;
				b = strtol(q, &e, 10);
				if (e == q || b < a)
					goto bad;
			}
			if (*e && *e != ',')
				goto bad;
			for (long x = a; x <= b; x++) {
				if ((size_t)x >= j->ncpus) {
					free(text);
					return cli_usage_error("run", "--pin %s: this rank's share has %zu cpus (rank:0-%zu): position %ld is beyond it",
							       spec, j->ncpus, j->ncpus - 1, x);
				}
				out += sprintf(out, "%s%d", out == text ? "" : ",", j->cpus[x]);
				if ((size_t)(out - text) > strlen(s) * 8)
					goto bad; /* a range far beyond the share is caught above; keep the bound anyway */
			}
			p = *e ? e + 1 : e;
		}
		*strategy = text;
		return 0;
bad:
		free(text);
		return cli_usage_error("run", "--pin %s: expected rank:compact, rank:scatter, rank:sharing:FILE, "
					      "rank:file:FILE or rank:POSITIONS (\"1,0-2\")",
				       spec);
	}
	if (!(*strategy = strdup(s)))
		goto nomem;
	return 0;
nomem:
	cli_error("run", "out of memory");
	return CLI_EXIT_FAIL;
}

static void json_list(const int *v, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? ", " : "", v[i]);
	printf("]");
}

void cli_job_print(const struct cli_job *j, int json)
{
	int n = nk_job_layout_size(j->layout);
	const nk_job_info *in = &j->info;

	if (json) {
		printf("{\"launcher\": \"%s\", \"rank\": %d, \"size\": %d, \"local_rank\": %d, \"local_size\": %d, "
		       "\"bound\": %s, \"ranks\": [",
		       in->launcher == NK_LAUNCHER_NONE ? "none" : in->launcher == NK_LAUNCHER_OPENMPI ? "openmpi"
								 : in->launcher == NK_LAUNCHER_PMI    ? "pmi"
								 : in->launcher == NK_LAUNCHER_PMIX   ? "pmix"
												      : "slurm",
		       in->rank, in->size, in->local_rank, in->local_size, j->bound ? "true" : "false");
	} else {
		printf("job: %s", in->launcher == NK_LAUNCHER_NONE ? "no launcher, a single process"
								   : nk_launcher_name(in->launcher));
		if (in->rank >= 0)
			printf(", rank %d", in->rank);
		if (in->size >= 0)
			printf(" of %d", in->size);
		printf(", local rank %d of %d on this host\n", in->local_rank, in->local_size);
		if (j->bound)
			printf("bound by the launcher: each rank is placed inside its own binding (the others' are not "
			       "known here)\n");
	}
	for (int r = 0; r < n; r++) {
		size_t nn = 0, nm = 0, nc = 0;
		int *nodes = get_ids(j->layout, r, nk_job_layout_nodes, &nn);
		int *mem = get_ids(j->layout, r, nk_job_layout_mem_nodes, &nm);
		int *cpus = get_ids(j->layout, r, nk_job_layout_cpus, &nc);
		int f = nk_job_layout_flags(j->layout, r), lr = j->bound ? in->local_rank : r;

		if (!nodes || !mem || !cpus) {
			free(nodes);
			free(mem);
			free(cpus);
			continue;
		}
		if (json) {
			printf("%s{\"local_rank\": %d, \"nodes\": ", r ? ", " : "", lr);
			json_list(nodes, nn);
			printf(", \"memory_nodes\": ");
			json_list(mem, nm);
			printf(", \"cpus\": ");
			json_list(cpus, nc);
			printf(", \"shares_node\": %s, \"oversubscribed\": %s}", f & NK_JOB_SHARES_NODE ? "true" : "false",
			       f & NK_JOB_OVERSUBSCRIBED ? "true" : "false");
		} else {
			char *a = cli_job_ids(nodes, nn), *b = cli_job_ids(mem, nm), *c;
			/* cpus as a set: sorted copy */
			for (size_t i = 1; i < nc; i++)
				for (size_t k = i; k > 0 && cpus[k - 1] > cpus[k]; k--) {
					int t = cpus[k];
					cpus[k] = cpus[k - 1];
					cpus[k - 1] = t;
				}
			c = cli_list_alloc(cpus, nc);
			printf("local rank %d: nodes %s, memory %s, cpus %s%s%s%s\n", lr, a ? a : "?", b ? b : "?",
			       c ? c : "?", f & NK_JOB_SHARES_NODE ? " (shares its node)" : "",
			       f & NK_JOB_OVERSUBSCRIBED ? " (oversubscribed)" : "", lr == in->local_rank ? " <- this rank" : "");
			free(a);
			free(b);
			free(c);
		}
		free(nodes);
		free(mem);
		free(cpus);
	}
	if (json)
		printf("]}");
}
