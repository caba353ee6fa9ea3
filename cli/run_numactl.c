/* SPDX-License-Identifier: BSD-3-Clause
 * numakit run's numactl options (numactl(8), issue 16): what the command
 * prints for -H/--hardware and -s/--show, in numactl's format so that the
 * scripts that grep numactl's output read ours, the sets numactl's node and
 * cpu forms are resolved against, -N's nodes turned into cpus, and the
 * refusals of the numactl options numakit does not honour.  The grammar
 * itself is nodespec.c's (pure); the differences from numactl are listed in
 * numakit-run(1), NUMACTL OPTIONS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nodespec.h"

/* The nodes of @p m whose property bits include all of @p want, increasing; count or NK_E*. */
static int nodes_with(const nk_machine *m, unsigned want, int **out)
{
	int n = nk_machine_num_nodes(m), k = 0;
	int *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);

	*out = NULL;
	if (!ids)
		return NK_ENOMEM;
	for (int i = 0; i < n; i++) {
		int id = nk_machine_node_id(m, i);
		int f = nk_machine_node_flags(m, id);

		if (f >= 0 && ((unsigned)f & want) == want)
			ids[k++] = id;
	}
	*out = ids;
	return k;
}

int cli_numactl_mem_nodes(const nk_machine *m, int **out)
{
	return nodes_with(m, NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED, out);
}

int cli_numactl_cpu_nodes(const nk_machine *m, int **out)
{
	return nodes_with(m, NK_NODE_CPUS_ALLOWED, out);
}

static int allowed_cpus(const nk_machine *m, int arg, int *ids, size_t cap)
{
	(void)arg;
	return nk_machine_allowed_cpus(m, ids, cap);
}

int cli_numactl_cpus(const nk_machine *m, int **out)
{
	return cli_get_ids(m, allowed_cpus, 0, out);
}

int cli_numactl_node_cpus(const nk_machine *m, const int *nodes, size_t n, int **out, size_t *ncpus)
{
	int total = nk_machine_num_cpus(m), k = 0;
	int *cpus = malloc((size_t)(total > 0 ? total : 1) * sizeof *cpus);

	if (!cpus) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (int i = 0; i < total; i++) {
		nk_cpu_info ci;
		int cpu = nk_machine_cpu_id(m, i);

		if (nk_machine_cpu_info(m, cpu, &ci) || !ci.allowed)
			continue;
		for (size_t j = 0; j < n; j++)
			if (ci.node == nodes[j]) {
				cpus[k++] = cpu;
				break;
			}
	}
	for (size_t j = 0; j < n; j++) {
		int f = nk_machine_node_flags(m, nodes[j]);
		char *all = NULL;

		if (f < 0 || !(f & NK_NODE_HAS_CPUS)) {
			int *ids = NULL, c = nodes_with(m, NK_NODE_HAS_CPUS, &ids);

			all = c >= 0 ? cli_list_alloc(ids, (size_t)c) : NULL;
			cli_error("run", "--cpunodebind: node %d %s (nodes with cpus: %s)", nodes[j],
				  f < 0 ? "does not exist" : "has no cpus", all ? all : "?");
			free(ids);
			free(all);
			free(cpus);
			return CLI_EXIT_USAGE;
		}
		if (!(f & NK_NODE_CPUS_ALLOWED)) {
			int *ids = NULL, c = cli_numactl_cpu_nodes(m, &ids);

			all = c >= 0 ? cli_list_alloc(ids, (size_t)c) : NULL;
			cli_error("run", "--cpunodebind: no cpu of node %d is allowed to this process (nodes with "
					 "allowed cpus: %s)", nodes[j], all ? all : "?");
			free(ids);
			free(all);
			free(cpus);
			return CLI_EXIT_FAIL; /* as a disallowed cpu of --cpus */
		}
	}
	*out = cpus;
	*ncpus = (size_t)k;
	return 0;
}

/* numactl's "available: 4 nodes (0-3)", the node blocks and the distance table. */
int cli_numactl_hardware(const nk_machine *m)
{
	int n = nk_machine_num_nodes(m);
	int *ids = malloc((size_t)n * sizeof *ids);
	char *list;

	if (!ids) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++)
		ids[i] = nk_machine_node_id(m, i);
	list = cli_list_alloc(ids, (size_t)n);
	printf("available: %d nodes (%s)\n", n, list ? list : "?");
	free(list);
	for (int i = 0; i < n; i++) {
		uint64_t total = 0, free_bytes = 0;
		int *cpus = NULL, k = cli_get_ids(m, nk_machine_node_cpus, ids[i], &cpus);

		printf("node %d cpus:", ids[i]);
		for (int c = 0; c < k; c++)
			printf(" %d", cpus[c]);
		printf("\n");
		free(cpus);
		nk_machine_node_memory(m, ids[i], &total, &free_bytes);
		printf("node %d size: %llu MB\n", ids[i], (unsigned long long)(total >> 20));
		printf("node %d free: %llu MB\n", ids[i], (unsigned long long)(free_bytes >> 20));
	}
	printf("node distances:\n");
	printf("node ");
	for (int i = 0; i < n; i++)
		printf("% 3d ", ids[i]);
	printf("\n");
	for (int i = 0; i < n; i++) {
		printf("% 3d: ", ids[i]);
		for (int j = 0; j < n; j++)
			printf("% 3d ", nk_machine_distance(m, ids[i], ids[j]));
		printf("\n");
	}
	free(ids);
	return cli_finish_stdout("run", CLI_EXIT_OK);
}

/* numactl's "name: 0 1 " lines: each id followed by a space. */
static void mask_line(const char *name, const int *ids, int n)
{
	printf("%s: ", name);
	for (int i = 0; i < n; i++)
		printf("%d ", ids[i]);
	printf("\n");
}

static const char *numactl_policy_name(int kind)
{
	switch (kind) {
	case NK_PROCESS_DEFAULT:
		return "default";
	case NK_PROCESS_MEMBIND:
		return "bind";
	case NK_PROCESS_INTERLEAVE:
		return "interleave";
	case NK_PROCESS_WEIGHTED:
		return "weighted interleave";
	case NK_PROCESS_PREFERRED:
		return "preferred";
	case NK_PROCESS_PREFERRED_MANY:
		return "preferred-many";
	case NK_PROCESS_LOCAL:
		return "local";
	default:
		return "unknown";
	}
}

int cli_numactl_show(void)
{
	nk_error err = { 0, "" };
	nk_machine *m = NULL;
	int *pol = NULL, *cpus = NULL, *cnodes = NULL, *mnodes = NULL;
	int kind = -1, np, nc, ncn, nmn, rc = CLI_EXIT_FAIL;

	/* loaded now: the cpu set numakit run has just set is part of it */
	if ((rc = nk_machine_load_live(&m, &err))) {
		cli_error("run", "--show: %s", err.message[0] ? err.message : nk_strerror(rc));
		return CLI_EXIT_FAIL;
	}
	rc = CLI_EXIT_FAIL;
	np = nk_process_get_policy(&kind, NULL, 0, &err);
	if (np > 0 && !(pol = malloc((size_t)np * sizeof *pol)))
		goto out_nomem;
	if (np > 0)
		np = nk_process_get_policy(&kind, pol, (size_t)np, &err);
	if (np < 0) {
		cli_error("run", "--show: %s", err.message[0] ? err.message : nk_strerror(np));
		goto out;
	}
	nc = cli_numactl_cpus(m, &cpus);
	ncn = cli_numactl_cpu_nodes(m, &cnodes);
	nmn = cli_numactl_mem_nodes(m, &mnodes);
	if (nc < 0 || ncn < 0 || nmn < 0)
		goto out_nomem;
	printf("policy: %s\n", numactl_policy_name(kind));
	printf("preferred node: ");
	switch (kind) {
	case NK_PROCESS_PREFERRED:
	case NK_PROCESS_MEMBIND:
		printf("%d\n", np ? pol[0] : -1);
		break;
	case NK_PROCESS_INTERLEAVE:
	case NK_PROCESS_WEIGHTED:
		/* numactl prints the kernel's next interleave node; numakit the first of the set */
		printf("%d (interleave next)\n", np ? pol[0] : -1);
		break;
	case NK_PROCESS_PREFERRED_MANY:
		printf("%d (preferred-many)\n", np ? pol[0] : -1);
		break;
	default:
		printf("current\n");
		break;
	}
	if (kind == NK_PROCESS_INTERLEAVE || kind == NK_PROCESS_WEIGHTED) {
		mask_line("interleavemask", pol, np);
		printf("interleavenode: %d\n", np ? pol[0] : -1);
	}
	mask_line("physcpubind", cpus, nc);
	mask_line("cpubind", cnodes, ncn);
	mask_line("nodebind", cnodes, ncn);
	if (kind == NK_PROCESS_MEMBIND)
		mask_line("membind", pol, np);
	else
		mask_line("membind", mnodes, nmn);
	mask_line("preferred", pol, np);
	rc = cli_finish_stdout("run", CLI_EXIT_OK);
	goto out;
out_nomem:
	cli_error("run", "out of memory");
out:
	free(pol);
	free(cpus);
	free(cnodes);
	free(mnodes);
	nk_machine_free(m);
	return rc;
}

int cli_numactl_refuse(const char *opt)
{
	static const struct {
		const char *opt, *why;
	} refused[] = {
		{ "--all", "numakit checks nodes and cpus against this process's cpuset and refuses what it may "
			   "not use; run numakit outside the cpuset to use the others" },
		{ "--balancing", "numakit does not set MPOL_F_NUMA_BALANCING; automatic NUMA balancing is the "
				 "system's setting (numakit topo shows it), and numakit run --membind keeps pages on "
				 "the nodes given" },
		{ "--cpubind", "it is numactl's deprecated name of -N/--cpunodebind: use that" },
	};
	static const char shm[] =
		"numactl's shared-memory policy options (--shm, --shmid, --file, --offset, --length, --strict, "
		"--shmmode, --huge, --touch, --dump, --dump-nodes) are not supported: numakit run places the "
		"program's own memory; place a shared segment or a tmpfs file from the program that maps it "
		"(nk_policy_parse, nk_plan_build, nk_apply: numakit(3)) and see where its pages are with "
		"numakit maps PID";

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if (!strcmp(opt, refused[i].opt))
			return cli_usage_error("run", "numactl's %s is not supported: %s", opt, refused[i].why);
	return cli_usage_error("run", "%s: %s", opt, shm);
}
