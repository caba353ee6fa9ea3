/* SPDX-License-Identifier: BSD-3-Clause
 * numakit run --rank-map FILE (issue 14 §3, docs/run.md "A rank map"): the rank finds itself in the map
 * that `numakit advise --ranks` wrote (an Open MPI rankfile or numakit's JSON, cli/rankfile.c) and takes
 * its slot as its share: the slot's cpus (a rankfile) or the allowed cpus of its node (JSON), and the
 * memory of the nodes of those cpus.  cmd_run.c then binds them as --cpus and --membind would, through the
 * same library calls.  Who the rank is comes from the launcher's environment (nk_job_detect), as for the
 * rank-relative options; only the world rank is needed here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rankfile.h"

extern char **environ;

/* The short host name: up to the first dot. */
static size_t short_len(const char *h)
{
	const char *dot = strchr(h, '.');
	return dot ? (size_t)(dot - h) : strlen(h);
}

/* Whether the map's host @p want names this host: short names compared; "", "localhost" and Open MPI's
 * relative forms ("+n1") are not checked. */
static int host_matches(const char *want, char *self, size_t cap)
{
	size_t a, b;
	if (!want[0] || want[0] == '+' || !strcmp(want, "localhost"))
		return 1;
	if (gethostname(self, cap - 1))
		return 1; /* nothing to compare with: not refused for that */
	self[cap - 1] = 0;
	a = short_len(want);
	b = short_len(self);
	return a == b && !strncmp(want, self, a);
}

/* The node of @p cpu, -1 when the machine does not have it. */
static int cpu_node(const nk_machine *m, int cpu)
{
	nk_cpu_info ci;
	return nk_machine_cpu_info(m, cpu, &ci) ? -1 : ci.node;
}

/* @p node when this process may allocate on it, else the nearest node it may (nk_machine_neighbors: by
 * distance, ties to the lower id), -1 none. */
static int nearest_memory(const nk_machine *m, int node)
{
	int n = nk_machine_neighbors(m, node, NULL, 0);
	int *v = n > 0 ? malloc((size_t)n * sizeof *v) : NULL, best = -1;
	if (v && nk_machine_neighbors(m, node, v, (size_t)n) == n)
		for (int i = 0; i < n && best < 0; i++)
			if (nk_machine_node_flags(m, v[i]) & NK_NODE_MEM_ALLOWED)
				best = v[i];
	free(v);
	return best;
}

static void add_id(int *v, size_t *n, int id)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i] == id)
			return;
	size_t i = *n;
	for (; i > 0 && v[i - 1] > id; i--)
		v[i] = v[i - 1];
	v[i] = id;
	(*n)++;
}

int cli_rankmap_resolve(const char *path, const nk_machine *m, int live, int quiet, struct cli_job *j)
{
	struct cli_rankfile f;
	const struct cli_rank_slot *s;
	char why[NK_ERROR_MSG_MAX], self[256] = "";
	int rc, status = CLI_EXIT_USAGE, rank, only = 0;
	int *nodes = NULL;
	size_t nn = 0;
	char *cl = NULL, *ml = NULL, *nl = NULL;

	if (cli_rankfile_load(path, &f, why, sizeof why)) {
		cli_error("run", "--rank-map %s: %s", path, why);
		return CLI_EXIT_USAGE;
	}
	rc = nk_job_detect((const char *const *)environ, &j->info);
	rank = j->info.rank;
	if (rc == NK_ENODATA || rank < 0) {
		if (f.n != 1) {
			char *ranks = cli_rankfile_ranks(&f);
			if (rc == NK_ENODATA)
				cli_error("run", "--rank-map %s: no MPI launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK, "
						 "PMIX_RANK, SLURM_PROCID): this process cannot tell which of the map's %zu "
						 "ranks (%s) it is; run it under the launcher (mpirun ... numakit run --rank-map %s -- APP)",
					  path, f.n, ranks ? ranks : "?", path);
			else
				cli_error("run", "--rank-map %s: the %s launcher gives no rank%s%s", path,
					  nk_launcher_name(j->info.launcher), j->info.problems[0] ? ": " : "", j->info.problems);
			free(ranks);
			goto out;
		}
		only = 1;
		rank = f.slots[0].rank;
	}
	if (!(s = cli_rankfile_find(&f, rank))) {
		char *ranks = cli_rankfile_ranks(&f);
		cli_error("run", "--rank-map %s: %s rank %d is not in the map (its ranks: %s)", path,
			  nk_launcher_name(j->info.launcher), rank, ranks ? ranks : "?");
		free(ranks);
		goto out;
	}
	if (live && !host_matches(s->host, self, sizeof self)) {
		cli_error("run", "--rank-map %s: rank %d is mapped to host %s but runs on %s: start the ranks on their "
				 "hosts (Open MPI: mpirun --mca rmaps_rank_file_physical 1 -rf %s)",
			  path, rank, s->host, self, path);
		goto out;
	}
	int total = nk_machine_num_cpus(m), nnodes = nk_machine_num_nodes(m);
	if (!(j->cpus = malloc((size_t)(total > 0 ? total : 1) * sizeof *j->cpus)) ||
	    !(nodes = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *nodes)) ||
	    !(j->mem = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *j->mem)))
		goto nomem;
	if (s->cpus) {
		/* a rankfile's slot: its physical cpus, each on this machine and allowed to this process */
		for (size_t i = 0; i < s->ncpus; i++) {
			nk_cpu_info ci;
			int node = cpu_node(m, s->cpus[i]);
			if (node < 0) {
				cli_error("run", "--rank-map %s: line %d: rank %d's slot names cpu %d, which this machine does "
						 "not have (%d cpus)", path, s->line, rank, s->cpus[i], total);
				goto out;
			}
			nk_machine_cpu_info(m, s->cpus[i], &ci);
			if (!ci.allowed) {
				int nc = nk_machine_cpuset_cpus(m, NULL, 0), na = nk_machine_allowed_cpus(m, NULL, 0);
				cli_error("run", "--rank-map %s: line %d: rank %d's slot names cpu %d, which this process may not "
						 "use%s", path, s->line, rank, s->cpus[i],
					  na < nc ? " (the launcher bound it: start the job with mpirun --bind-to none or "
						    "srun --cpu-bind=none, or let mpirun bind it with -rf FILE)" : "");
				goto out;
			}
			j->cpus[j->ncpus++] = s->cpus[i];
			add_id(nodes, &nn, node);
		}
	} else {
		/* a JSON slot: the node's allowed cpus, as --cpunodebind */
		int fl = nk_machine_node_flags(m, s->node);
		int *ids = NULL, k;
		char *all = NULL;
		if (fl < 0 || !(fl & NK_NODE_HAS_CPUS) || !(fl & NK_NODE_CPUS_ALLOWED)) {
			k = cli_numactl_cpu_nodes(m, &ids);
			all = k >= 0 ? cli_list_alloc(ids, (size_t)k) : NULL;
			cli_error("run", "--rank-map %s: map entry %d: rank %d's node %d %s (nodes this process may run on: "
					 "%s)", path, s->line, rank, s->node,
				  fl < 0 ? "does not exist on this machine" : !(fl & NK_NODE_HAS_CPUS) ? "has no cpus"
													  : "has no cpu this process may use",
				  all ? all : "?");
			free(ids);
			free(all);
			goto out;
		}
		int *cpus = NULL;
		size_t nc = 0;
		if ((status = cli_numactl_node_cpus(m, &s->node, 1, &cpus, &nc)))
			goto out;
		status = CLI_EXIT_USAGE;
		memcpy(j->cpus, cpus, nc * sizeof *cpus);
		j->ncpus = nc;
		free(cpus);
		nodes[nn++] = s->node;
	}
	/* memory: the slot's nodes that have memory this process may use, else the nearest such node */
	for (size_t i = 0; i < nn; i++) {
		int mem = nearest_memory(m, nodes[i]);
		if (mem < 0) {
			cli_error("run", "--rank-map %s: rank %d: no node this process may allocate on", path, rank);
			goto out;
		}
		add_id(j->mem, &j->nmem, mem);
	}
	j->lead = 1;
	j->row = rank;
	if (!quiet) {
		cl = cli_list_alloc(j->cpus, j->ncpus);
		ml = cli_list_alloc(j->mem, j->nmem);
		nl = cli_list_alloc(nodes, nn);
		if (!cl || !ml || !nl)
			goto nomem;
		if (only)
			fprintf(stderr, "numakit run: no MPI launcher: the map's only rank, %d", rank);
		else
			fprintf(stderr, "numakit run: %s rank %d", nk_launcher_name(j->info.launcher), rank);
		fprintf(stderr, ": %s puts it on %s%s%snode%s %s: cpus %s, memory bound to node%s %s\n", path,
			s->host[0] ? "host " : "", s->host, s->host[0] ? ", " : "", nn == 1 ? "" : "s", nl, cl,
			j->nmem == 1 ? "" : "s", ml);
	}
	status = 0;
	goto out;
nomem:
	cli_error("run", "out of memory");
	status = CLI_EXIT_FAIL;
out:
	free(nodes);
	free(cl);
	free(ml);
	free(nl);
	cli_rankfile_free(&f);
	return status;
}
