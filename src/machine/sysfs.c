/* SPDX-License-Identifier: BSD-3-Clause
 * Machine discovery from Linux sysfs/procfs, live or from a captured tree.
 *
 * Why our own reader rather than hwloc's: the machine model needs facts
 * hwloc does not carry (automatic NUMA balancing, THP, weighted-interleave
 * weights, has-memory vs memoryless, the cpuset/cgroup of the process), and
 * hwloc 2 accepts another fsroot only through a process-wide environment
 * variable, which a library must not set.  Every read goes through the OS
 * layer's fsroot helper, so the real-machine dumps in tests exercise exactly
 * the code that runs on the live system; hwloc serves as the tests' oracle.
 *
 * Real dumps are messy: has_cpu/has_normal_memory lists that are stale or
 * empty, nodes without cpulist (only cpumap), files with embedded NULs,
 * a distance row longer than the number of online nodes.  Each rule below
 * says which fact wins and why.
 *
 * Older kernels lack files newer ones have (cpu/online, node/online,
 * nodeN/cpulist, thread_siblings_list...).  Where one is missing the reader
 * falls back as hwloc's Linux backend does (topology-linux.c; the rules are
 * ours, written from its behaviour) and records which fallback it used as a
 * note of the machine (nk_machine_note), one line per kind with the nodes or
 * cpus concerned, so that `numakit topo` says how each fact was found.
 */
#include "machine/machine_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "util/error.h"

#define NODE_DIR "/sys/devices/system/node"
#define CPU_DIR "/sys/devices/system/cpu"

struct reader {
	const char *root; /* NULL = live */
	const char *what; /* "fsroot DIR" or "live system" for messages */
	nk_error *err;
	/* The fallbacks used, per node or cpu, for the machine's notes (add_notes). */
	const char *cpus_from;  /* where the online cpus came from when cpu/online is missing, else NULL */
	int nodes_from_dirs;    /* node/online missing: every nodeN directory is a node */
	nk__ilist cpumap;       /* nodes whose cpus came from nodeN/cpumap */
	nk__ilist cpulinks;     /* nodes with neither cpulist nor cpumap: cpus from the cpuN/nodeM links */
	nk__ilist nodist;       /* nodes without a distance file: no distances at all */
	nk__ilist nomeminfo;    /* nodes without meminfo */
	int meminfo_from_proc;  /* one node, its meminfo missing: /proc/meminfo */
	int meminfo_from_flags; /* several nodes without meminfo: has memory per node/has_memory */
	int no_proc_meminfo;    /* no node directories and no /proc/meminfo */
	nk__ilist siblings_map; /* cpus whose core came from topology/thread_siblings (a mask) */
};

/* Read an optional file: 0 with *out NULL when it does not exist. */
static int rd_opt(struct reader *r, const char *path, char **out)
{
	*out = NULL;
	int rc = nk__os_read_file(r->root, path, out);
	if (rc == NK_ENOENT) {
		*out = NULL;
		return 0;
	}
	if (rc)
		return nk__error(r->err, rc, "%s%s: %s", r->root ? r->root : "", path, nk_strerror(rc));
	return 0;
}

static int bad(struct reader *r, const char *path, const char *why)
{
	return nk__error(r->err, NK_EPARSE, "%s%s: %s", r->root ? r->root : "", path, why);
}

/* Parse an optional list file into @p l; absent -> l->n = 0 and *present = 0. */
static int rd_list(struct reader *r, const char *path, nk__ilist *l, int *present)
{
	char *txt, why[160];
	int rc = rd_opt(r, path, &txt);
	if (rc)
		return rc;
	if (present)
		*present = txt != NULL;
	l->n = 0;
	if (!txt)
		return 0;
	rc = nk__parse_list(txt, l, why, sizeof why);
	free(txt);
	if (rc == NK_EPARSE)
		return bad(r, path, why);
	return rc ? nk__error(r->err, rc, "out of memory") : 0;
}

/* An optional number (with K/M/G suffix) file: *v = 0 when absent or unparsable
 * (cache attributes are informative; a garbled one must not fail discovery). */
static int rd_size_opt(struct reader *r, const char *path, unsigned long long *v)
{
	char *txt;
	int rc = rd_opt(r, path, &txt);
	*v = 0;
	if (rc || !txt)
		return rc;
	if (nk__parse_size(txt, v))
		*v = 0;
	free(txt);
	return 0;
}

/* "nodeNN"/"cpuNN" -> NN, -1 when the name is not exactly prefix+digits. */
static int suffix_id(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) || !name[pl])
		return -1;
	long v = 0;
	for (const char *p = name + pl; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (*p - '0');
		if (v > NK__MAX_ID)
			return -1;
	}
	return (int)v;
}

/* Ids of directory entries prefix<N> under @p dir, normalised. */
static int list_ids(struct reader *r, const char *dir, const char *prefix, nk__ilist *out, int *dir_exists)
{
	char **names = NULL;
	size_t n = 0;
	int rc = nk__os_list_dir(r->root, dir, prefix, &names, &n);
	out->n = 0;
	if (rc == NK_ENOENT) {
		*dir_exists = 0;
		return 0;
	}
	if (rc)
		return nk__error(r->err, rc, "%s%s: %s", r->root ? r->root : "", dir, nk_strerror(rc));
	*dir_exists = 1;
	for (size_t i = 0; i < n && !rc; i++) {
		int id = suffix_id(names[i], prefix);
		if (id >= 0 && nk__ilist_push(out, id))
			rc = nk__error(r->err, NK_ENOMEM, "out of memory");
	}
	nk__os_free_names(names, n);
	nk__ilist_normalize(out);
	return rc;
}

/* Find "KEY:   123 kB" in a meminfo text (per-node lines start "Node N KEY:"). */
static int meminfo_kb(const char *text, const char *key, uint64_t *kb)
{
	size_t kl = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *p = line;
		if (!strncmp(p, "Node ", 5)) { /* skip "Node N " */
			p += 5;
			while (isdigit((unsigned char)*p))
				p++;
			while (*p == ' ')
				p++;
		}
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			char *end;
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			if (!isdigit((unsigned char)*p)) /* strtoull would take "-1" */
				return NK_EPARSE;
			errno = 0;
			unsigned long long v = strtoull(p, &end, 10);
			if (errno == ERANGE || v > (uint64_t)INT64_MAX / 1024)
				return NK_EPARSE;
			*kb = v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return NK_ENOENT;
}

/* A node's total and free memory from a meminfo text (MemFree optional): 0, else MemTotal's error. */
static int set_node_memory(struct nk__node *nd, const char *txt)
{
	uint64_t kb;
	int rc = meminfo_kb(txt, "MemTotal", &kb);
	if (rc)
		return rc;
	nd->mem_total = kb * 1024;
	if (meminfo_kb(txt, "MemFree", &kb) == 0)
		nd->mem_free = kb * 1024;
	return 0;
}

static int read_node_memory(struct reader *r, struct nk__node *nd)
{
	char path[128], *txt;
	snprintf(path, sizeof path, NODE_DIR "/node%d/meminfo", nd->id);
	int rc = rd_opt(r, path, &txt);
	if (rc)
		return rc;
	if (!txt) /* some dumps and old kernels: see fix_missing_meminfo */
		return nk__ilist_push(&r->nomeminfo, nd->id) ? nk__error(r->err, NK_ENOMEM, "out of memory") : 0;
	rc = set_node_memory(nd, txt);
	free(txt);
	return rc ? bad(r, path, "no valid MemTotal line") : 0;
}

/* Cpus of a node: cpulist, else cpumap (some kernels/dumps lack cpulist). */
static int read_node_cpus(struct reader *r, int node, nk__ilist *cpus, int *found)
{
	char path[128], *txt, why[160];
	int present;
	snprintf(path, sizeof path, NODE_DIR "/node%d/cpulist", node);
	int rc = rd_list(r, path, cpus, &present);
	if (rc || present) {
		*found = present;
		return rc;
	}
	snprintf(path, sizeof path, NODE_DIR "/node%d/cpumap", node);
	rc = rd_opt(r, path, &txt);
	if (rc)
		return rc;
	*found = txt != NULL;
	if (nk__ilist_push(txt ? &r->cpumap : &r->cpulinks, node)) {
		free(txt);
		return nk__error(r->err, NK_ENOMEM, "out of memory");
	}
	if (!txt)
		return 0;
	rc = nk__parse_mask(txt, cpus, why, sizeof why);
	free(txt);
	if (rc == NK_EPARSE)
		return bad(r, path, why);
	return rc;
}

/*
 * Distance rows list one value per online node in increasing id order.  A
 * row may be longer (a node went offline after the row was written, as in a
 * real dump); then it is indexed by the `possible` list, and failing that by
 * node id.  Anything else is corrupt.
 */
static int read_distances(struct reader *r, struct nk_machine *m, const nk__ilist *possible)
{
	int n = m->nnodes;
	int *d = malloc((size_t)n * (size_t)n * sizeof *d);
	nk__ilist row = { 0 };
	int rc = 0;
	if (!d)
		return nk__error(r->err, NK_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		char path[128], *txt;
		snprintf(path, sizeof path, NODE_DIR "/node%d/distance", m->nodes[i].id);
		rc = rd_opt(r, path, &txt);
		if (rc)
			goto out;
		if (!txt) {
			/* As hwloc: one row missing and the matrix is unknown, so none of it is used (a
			 * matrix half from firmware, half made up, would mislead more than the default). */
			if (nk__ilist_push(&r->nodist, m->nodes[i].id)) {
				rc = nk__error(r->err, NK_ENOMEM, "out of memory");
				goto out;
			}
			continue;
		}
		row.n = 0;
		char *p = txt, *end;
		for (;;) {
			while (*p && isspace((unsigned char)*p))
				p++;
			if (!*p)
				break;
			long v = strtol(p, &end, 10);
			if (end == p || v <= 0 || v > 1000 || (*end && !isspace((unsigned char)*end))) {
				free(txt);
				rc = bad(r, path, "expected positive integers separated by spaces");
				goto out;
			}
			if (nk__ilist_push(&row, (int)v)) {
				free(txt);
				rc = nk__error(r->err, NK_ENOMEM, "out of memory");
				goto out;
			}
			p = end;
		}
		free(txt);
		for (int j = 0; j < n; j++) {
			int id = m->nodes[j].id;
			long col = -1;
			if (row.n == (size_t)n) {
				col = j;
			} else if (possible->n && row.n == possible->n) {
				for (size_t k = 0; k < possible->n; k++)
					if (possible->v[k] == id)
						col = (long)k;
			} else if (row.n > (size_t)id) {
				col = id;
			}
			if (col < 0) {
				char why[160];
				snprintf(why, sizeof why, "%zu values for %d online nodes", row.n, n);
				rc = bad(r, path, why);
				goto out;
			}
			d[i * n + j] = row.v[col];
		}
	}
	if (!r->nodist.n) { /* else no distances: nk__machine_finalize's default, 10 local and 20 remote */
		m->dist = d;
		d = NULL;
	}
out:
	free(d);
	nk__ilist_free(&row);
	return rc;
}

/* "processor : N" lines of /proc/cpuinfo (old ARM kernels write "Processor : ARMv7 ...": skipped). */
static int cpuinfo_cpus(struct reader *r, nk__ilist *cpus, int *present)
{
	char *txt;
	int rc = rd_opt(r, "/proc/cpuinfo", &txt);
	*present = txt != NULL;
	cpus->n = 0;
	if (rc || !txt)
		return rc;
	for (const char *line = txt; line && *line && !rc;) {
		if (!strncmp(line, "processor", 9)) {
			const char *p = line + 9;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == ':') {
				char *end;
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				long v = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
				if (v >= 0 && v <= NK__MAX_ID && nk__ilist_push(cpus, (int)v))
					rc = nk__error(r->err, NK_ENOMEM, "out of memory");
			}
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	free(txt);
	nk__ilist_normalize(cpus);
	return rc;
}

/*
 * Online cpus: the "online" list.  Kernels before it (and dumps that did not
 * capture it) fall back in hwloc's order: the cpuN directories less those
 * whose cpuN/online says 0 (cpu0 usually has no such file: it cannot be taken
 * offline); without cpuN directories cpu/present, then cpu/possible; last the
 * processor lines of /proc/cpuinfo.  r->cpus_from says which was used.
 */
static int read_online_cpus(struct reader *r, nk__ilist *cpus)
{
	int present, exists;
	int rc = rd_list(r, CPU_DIR "/online", cpus, &present);
	if (rc || present)
		return rc;
	rc = list_ids(r, CPU_DIR, "cpu", cpus, &exists);
	if (rc)
		return rc;
	if (cpus->n) {
		size_t j = 0;
		for (size_t i = 0; i < cpus->n; i++) {
			char path[128], *txt;
			snprintf(path, sizeof path, CPU_DIR "/cpu%d/online", cpus->v[i]);
			rc = rd_opt(r, path, &txt);
			if (rc)
				return rc;
			int on = !txt || atoi(txt) != 0;
			free(txt);
			if (on)
				cpus->v[j++] = cpus->v[i];
		}
		cpus->n = j;
		r->cpus_from = "online cpus from the cpuN directories and their online files";
		return 0;
	}
	if ((rc = rd_list(r, CPU_DIR "/present", cpus, &present)))
		return rc;
	if (present && cpus->n) {
		r->cpus_from = "online cpus from cpu/present (no cpuN directories)";
		return 0;
	}
	if ((rc = rd_list(r, CPU_DIR "/possible", cpus, &present)))
		return rc;
	if (present && cpus->n) {
		r->cpus_from = "online cpus from cpu/possible (no cpuN directories)";
		return 0;
	}
	if ((rc = cpuinfo_cpus(r, cpus, &present)))
		return rc;
	if (cpus->n) {
		r->cpus_from = "online cpus from the processor lines of /proc/cpuinfo (no cpuN directories)";
		return 0;
	}
	return bad(r, CPU_DIR "/online",
		   "missing, and no cpuN directory, cpu/present, cpu/possible or /proc/cpuinfo names a cpu");
}

static long first_of_list_file(struct reader *r, const char *path, int *err_rc)
{
	nk__ilist l = { 0 };
	int present;
	long v = -1;
	*err_rc = rd_list(r, path, &l, &present);
	if (!*err_rc && l.n)
		v = l.v[0];
	nk__ilist_free(&l);
	return v;
}

static int read_cpu_topology(struct reader *r, struct nk__cpu *c)
{
	char path[160], *txt;
	int rc;
	snprintf(path, sizeof path, CPU_DIR "/cpu%d/topology/physical_package_id", c->id);
	rc = rd_opt(r, path, &txt);
	if (rc)
		return rc;
	if (txt) {
		c->package = atoi(txt);
		if (c->package < 0) /* -1 on some architectures: unknown */
			c->package = -1;
		free(txt);
	}
	/* A core is the set of hardware threads that share it: its lowest cpu is
	 * a key that is unique machine-wide, unlike core_id (which repeats per
	 * package, and per cluster on some ARM machines). */
	snprintf(path, sizeof path, CPU_DIR "/cpu%d/topology/thread_siblings_list", c->id);
	c->core_key = first_of_list_file(r, path, &rc);
	if (rc)
		return rc;
	if (c->core_key < 0) {
		snprintf(path, sizeof path, CPU_DIR "/cpu%d/topology/core_cpus_list", c->id);
		c->core_key = first_of_list_file(r, path, &rc);
	}
	if (rc || c->core_key >= 0)
		return rc;
	/* Kernels before the _list files: the thread_siblings mask. */
	snprintf(path, sizeof path, CPU_DIR "/cpu%d/topology/thread_siblings", c->id);
	if ((rc = rd_opt(r, path, &txt)) || !txt)
		return rc;
	nk__ilist sib = { 0 };
	char why[160];
	rc = nk__parse_mask(txt, &sib, why, sizeof why);
	free(txt);
	if (rc == NK_EPARSE) {
		rc = 0; /* informative, as a garbled cache attribute: the cpu is its own core */
	} else if (!rc && sib.n) {
		c->core_key = sib.v[0];
		rc = nk__ilist_push(&r->siblings_map, c->id);
	}
	nk__ilist_free(&sib);
	return rc ? nk__error(r->err, rc, "out of memory") : 0;
}

static int cache_type(const char *t)
{
	if (!strncmp(t, "Data", 4))
		return NK_CACHE_DATA;
	if (!strncmp(t, "Instruction", 11))
		return NK_CACHE_INSTRUCTION;
	if (!strncmp(t, "Unified", 7))
		return NK_CACHE_UNIFIED;
	return -1;
}

/*
 * Caches of one cpu.  A cache instance is recorded once, by the lowest online
 * cpu sharing it, which avoids comparing every pair of cpu sets.
 */
static int read_cpu_caches(struct reader *r, struct nk_machine *m, int cpu, const nk__ilist *online)
{
	char dir[128], path[192], *txt, why[160];
	nk__ilist idx = { 0 }, shared = { 0 };
	int exists, rc;
	snprintf(dir, sizeof dir, CPU_DIR "/cpu%d/cache", cpu);
	rc = list_ids(r, dir, "index", &idx, &exists);
	if (rc || !exists)
		goto out;
	for (size_t k = 0; k < idx.n; k++) {
		int level, type, present;
		snprintf(path, sizeof path, "%s/index%d/level", dir, idx.v[k]);
		if ((rc = rd_opt(r, path, &txt)))
			goto out;
		if (!txt)
			continue;
		level = atoi(txt);
		free(txt);
		if (level < 1 || level > 9) {
			rc = bad(r, path, "cache level out of range");
			goto out;
		}
		snprintf(path, sizeof path, "%s/index%d/type", dir, idx.v[k]);
		if ((rc = rd_opt(r, path, &txt)))
			goto out;
		type = txt ? cache_type(txt) : NK_CACHE_UNIFIED;
		free(txt);
		if (type < 0) {
			rc = bad(r, path, "unknown cache type");
			goto out;
		}
		snprintf(path, sizeof path, "%s/index%d/shared_cpu_list", dir, idx.v[k]);
		if ((rc = rd_list(r, path, &shared, &present)))
			goto out;
		if (!present) {
			snprintf(path, sizeof path, "%s/index%d/shared_cpu_map", dir, idx.v[k]);
			if ((rc = rd_opt(r, path, &txt)))
				goto out;
			if (txt) {
				rc = nk__parse_mask(txt, &shared, why, sizeof why);
				free(txt);
				if (rc) {
					rc = rc == NK_EPARSE ? bad(r, path, why) : rc;
					goto out;
				}
			} else if ((rc = nk__ilist_push(&shared, cpu))) {
				goto out;
			}
		}
		/* the lowest online sharer records the instance */
		int owner = -1;
		for (size_t s = 0; s < shared.n; s++)
			if (nk__ilist_contains(online, shared.v[s])) {
				owner = shared.v[s];
				break;
			}
		if (owner != cpu && owner != -1)
			continue;
		struct nk__cache *c;
		if ((rc = nk__machine_add_cache(m, &c)))
			goto out;
		c->level = level;
		c->type = type;
		if ((rc = nk__ilist_copy(&c->cpus, shared.v, shared.n)))
			goto out;
		if (!nk__ilist_contains(&c->cpus, cpu) && (rc = nk__ilist_push(&c->cpus, cpu)))
			goto out;
		nk__ilist_normalize(&c->cpus);
		unsigned long long v;
		snprintf(path, sizeof path, "%s/index%d/size", dir, idx.v[k]);
		if ((rc = rd_size_opt(r, path, &v)))
			goto out;
		c->size = v;
		snprintf(path, sizeof path, "%s/index%d/coherency_line_size", dir, idx.v[k]);
		if ((rc = rd_size_opt(r, path, &v)))
			goto out;
		c->line_size = v <= 65536 ? (int)v : 0;
		snprintf(path, sizeof path, "%s/index%d/ways_of_associativity", dir, idx.v[k]);
		if ((rc = rd_size_opt(r, path, &v)))
			goto out;
		c->ways = v <= 65536 ? (int)v : 0;
	}
out:
	if (rc == NK_ENOMEM)
		nk__error(r->err, rc, "out of memory");
	nk__ilist_free(&idx);
	nk__ilist_free(&shared);
	return rc;
}

/* Huge page sizes: "hugepages-2048kB" entries, machine-wide and per node. */
static int read_hugepages(struct reader *r, struct nk_machine *m, const char *dir)
{
	char **names = NULL;
	size_t n = 0;
	int rc = nk__os_list_dir(r->root, dir, "hugepages-", &names, &n);
	if (rc == NK_ENOENT)
		return 0;
	if (rc)
		return nk__error(r->err, rc, "%s%s: %s", r->root ? r->root : "", dir, nk_strerror(rc));
	for (size_t i = 0; i < n && !rc; i++) {
		char *end;
		long kb = strtol(names[i] + 10, &end, 10);
		if (kb > 0 && !strcmp(end, "kB"))
			rc = nk__ilist_push(&m->huge_kb, (int)kb);
	}
	nk__os_free_names(names, n);
	if (rc)
		return nk__error(r->err, rc, "out of memory");
	return 0;
}

/* "always [madvise] never" -> the bracketed choice. */
static int thp_mode(const char *txt)
{
	const char *b = strchr(txt, '['), *e = b ? strchr(b, ']') : NULL;
	if (!b || !e)
		return NK_THP_UNKNOWN;
	size_t len = (size_t)(e - b - 1);
	b++;
	if (len == 6 && !strncmp(b, "always", 6))
		return NK_THP_ALWAYS;
	if (len == 5 && !strncmp(b, "defer", 5))
		return NK_THP_DEFER;
	if (len == 13 && !strncmp(b, "defer+madvise", 13))
		return NK_THP_DEFER_MADVISE;
	if (len == 7 && !strncmp(b, "madvise", 7))
		return NK_THP_MADVISE;
	if (len == 5 && !strncmp(b, "never", 5))
		return NK_THP_NEVER;
	return NK_THP_UNKNOWN;
}

static int read_kernel(struct reader *r, struct nk_machine *m)
{
	char *txt;
	int rc = rd_opt(r, "/proc/sys/kernel/numa_balancing", &txt);
	if (rc)
		return rc;
	if (txt) {
		char *end;
		long v = strtol(txt, &end, 10);
		/* 0 off, 1 normal, 2 memory tiering, 3 both; anything else is unknown */
		m->kernel.numa_balancing = (end != txt && v >= 0 && v <= 3) ? (int)v : -1;
		free(txt);
	}
	if ((rc = rd_opt(r, "/sys/kernel/mm/transparent_hugepage/enabled", &txt)))
		return rc;
	if (txt) {
		m->kernel.thp_enabled = thp_mode(txt);
		free(txt);
	}
	if ((rc = rd_opt(r, "/sys/kernel/mm/transparent_hugepage/defrag", &txt)))
		return rc;
	if (txt) {
		m->kernel.thp_defrag = thp_mode(txt);
		free(txt);
	}
	/* Weighted interleave (Linux >= 6.9): one weight file per node. */
	const char *wdir = "/sys/kernel/mm/mempolicy/weighted_interleave";
	if (nk__os_exists(r->root, wdir)) {
		m->kernel.weighted_interleave = 1;
		for (int i = 0; i < m->nnodes; i++) {
			char path[128];
			snprintf(path, sizeof path, "%s/node%d", wdir, m->nodes[i].id);
			if ((rc = rd_opt(r, path, &txt)))
				return rc;
			if (txt) {
				int w = atoi(txt);
				m->nodes[i].wi_weight = (w >= 1 && w <= 255) ? w : 0;
				free(txt);
			}
		}
	} else if (r->root == NULL) {
		m->kernel.weighted_interleave = 0;
	} /* a captured tree may simply not have recorded it: unknown */
	return 0;
}

/* Value of "Key:\tvalue" in /proc/self/status, as a list. */
static int status_list(struct reader *r, const char *status, const char *key, nk__ilist *out, int *found)
{
	size_t kl = strlen(key);
	char why[160];
	*found = 0;
	for (const char *line = status; line && *line;) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			const char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			char *val = strndup(line + kl + 1, len - kl - 1);
			if (!val)
				return nk__error(r->err, NK_ENOMEM, "out of memory");
			int rc = nk__parse_list(val, out, why, sizeof why);
			free(val);
			if (rc == NK_EPARSE)
				return bad(r, "/proc/self/status", why);
			if (rc)
				return rc;
			*found = 1;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 0;
}

/*
 * The cpuset of the process when /proc/self/status is not available (as in
 * captured trees): the cgroup path from /proc/self/cpuset, the mount point
 * of the cpuset (v1) or unified (v2) hierarchy from /proc/mounts.
 */
static int cgroup_sets(struct reader *r, nk__ilist *cpus, nk__ilist *mems)
{
	char *cg = NULL, *mounts = NULL;
	int rc = rd_opt(r, "/proc/self/cpuset", &cg);
	if (rc || !cg)
		goto out;
	cg[strcspn(cg, "\n")] = '\0';
	if ((rc = rd_opt(r, "/proc/mounts", &mounts)) || !mounts)
		goto out;
	for (char *line = mounts; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char dev[256], mnt[512], type[64], opts[512];
		if (sscanf(line, "%255s %511s %63s %511s", dev, mnt, type, opts) == 4) {
			const char *v2[] = { "cpuset.cpus.effective", "cpuset.mems.effective" };
			const char *v1[] = { "cpuset.cpus", "cpuset.mems" };
			const char *v1old[] = { "cpus", "mems" };
			const char **names = NULL, **alt = NULL;
			if (!strcmp(type, "cgroup2")) {
				names = v2;
			} else if (!strcmp(type, "cpuset") || (!strcmp(type, "cgroup") && strstr(opts, "cpuset"))) {
				names = v1;
				alt = v1old;
			}
			if (names) {
				char path[1200];
				int p1 = 0, p2 = 0;
				snprintf(path, sizeof path, "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", names[0]);
				if ((rc = rd_list(r, path, cpus, &p1)))
					goto out;
				snprintf(path, sizeof path, "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", names[1]);
				if ((rc = rd_list(r, path, mems, &p2)))
					goto out;
				if (alt && !p1 && !p2) {
					snprintf(path, sizeof path, "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", alt[0]);
					if ((rc = rd_list(r, path, cpus, &p1)))
						goto out;
					snprintf(path, sizeof path, "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", alt[1]);
					if ((rc = rd_list(r, path, mems, &p2)))
						goto out;
				}
				if (p1 || p2)
					goto out;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
out:
	free(cg);
	free(mounts);
	return rc;
}

static int read_allowed(struct reader *r, struct nk_machine *m, int live)
{
	char *status = NULL;
	int found_c = 0, found_m = 0;
	int rc = rd_opt(r, "/proc/self/status", &status);
	if (rc)
		return rc;
	if (status) {
		rc = status_list(r, status, "Cpus_allowed_list", &m->allowed_cpus, &found_c);
		if (!rc)
			rc = status_list(r, status, "Mems_allowed_list", &m->allowed_nodes, &found_m);
		free(status);
		if (rc)
			return rc;
	}
	if (!found_c && !found_m) {
		if ((rc = cgroup_sets(r, &m->allowed_cpus, &m->allowed_nodes)))
			return rc;
	}
	if (live) {
		/* The cpuset alone, for nk_machine_cpuset_cpus: a launcher that bound this rank narrowed only
		 * the affinity.  No cpuset found: every online cpu. */
		nk__ilist mems = { 0 };
		if (cgroup_sets(r, &m->cpuset_cpus, &mems)) /* unreadable: as without one (never fatal) */
			nk__ilist_free(&m->cpuset_cpus);
		nk__ilist_free(&mems);
		m->cpuset_all = 1;
	}
	if (live) {
		/* The thread's affinity can be narrower than the cpuset (taskset). */
		nk__ilist aff = { 0 };
		if (nk__os_affinity(&aff) == 0 && aff.n) {
			if (m->allowed_cpus.n) {
				size_t j = 0;
				for (size_t i = 0; i < m->allowed_cpus.n; i++)
					if (nk__ilist_contains(&aff, m->allowed_cpus.v[i]))
						m->allowed_cpus.v[j++] = m->allowed_cpus.v[i];
				m->allowed_cpus.n = j;
				nk__ilist_free(&aff);
			} else {
				nk__ilist_free(&m->allowed_cpus);
				m->allowed_cpus = aff;
			}
		} else {
			nk__ilist_free(&aff);
		}
	}
	return 0;
}

/* No /sys/devices/system/node: one node 0 holding every cpu and all memory. */
static int single_node(struct reader *r, struct nk_machine *m)
{
	struct nk__node *nd;
	char *txt;
	int rc = nk__machine_add_node(m, 0, &nd);
	if (rc)
		return nk__error(r->err, rc, "out of memory");
	if ((rc = rd_opt(r, "/proc/meminfo", &txt)))
		return rc;
	if (txt) {
		rc = set_node_memory(nd, txt);
		free(txt);
		if (rc)
			return bad(r, "/proc/meminfo", "no valid MemTotal line");
	} else {
		r->no_proc_meminfo = 1;
	}
	nd->has_memory_hint = 1; /* the machine has memory even if meminfo was not captured */
	return 0;
}

/*
 * Nodes without nodeN/meminfo.  One node: the machine's /proc/meminfo is its
 * memory.  Several: their size is unknown (0); whether they have memory comes
 * from node/has_memory when the kernel has it (2.6.23 and later), else they
 * count as without memory, the old rule (nothing says they have any).
 */
static int fix_missing_meminfo(struct reader *r, struct nk_machine *m)
{
	nk__ilist has = { 0 };
	char *txt;
	int rc, present;

	if (!r->nomeminfo.n)
		return 0;
	if (m->nnodes == 1) {
		if ((rc = rd_opt(r, "/proc/meminfo", &txt)) || !txt)
			return rc;
		rc = set_node_memory(&m->nodes[0], txt);
		free(txt);
		if (rc)
			return bad(r, "/proc/meminfo", "no valid MemTotal line");
		r->meminfo_from_proc = 1;
		return 0;
	}
	if ((rc = rd_list(r, NODE_DIR "/has_memory", &has, &present)))
		return rc;
	if (present) {
		for (size_t i = 0; i < r->nomeminfo.n; i++) {
			int k = nk__node_idx(m, r->nomeminfo.v[i]);
			if (k >= 0)
				m->nodes[k].has_memory_hint = nk__ilist_contains(&has, r->nomeminfo.v[i]);
		}
		r->meminfo_from_flags = 1;
	}
	nk__ilist_free(&has);
	return 0;
}

/* "WHAT missing (node 3)" / "(nodes 0-2,5)": one note for a fallback used for several nodes or cpus. */
static int note_ids(struct nk_machine *m, const nk__ilist *ids, const char *what, const char *kind, const char *how)
{
	if (!ids->n)
		return 0;
	char *list = nk__format_list_alloc(ids->v, ids->n);
	if (!list)
		return NK_ENOMEM;
	int rc = nk__machine_add_note(m, "%s missing (%s%s %s): %s", what, kind, ids->n == 1 ? "" : "s", list, how);
	free(list);
	return rc;
}

/* The notes of the fallbacks used, in the order they are read. */
static int add_notes(struct reader *r, struct nk_machine *m)
{
	int rc = 0;

	nk__ilist_normalize(&r->cpumap);
	nk__ilist_normalize(&r->cpulinks);
	nk__ilist_normalize(&r->nodist);
	nk__ilist_normalize(&r->nomeminfo);
	nk__ilist_normalize(&r->siblings_map);
	if (r->cpus_from)
		rc = nk__machine_add_note(m, "cpu/online missing: %s", r->cpus_from);
	if (!rc && r->nodes_from_dirs)
		rc = nk__machine_add_note(m, "node/online missing: nodes from the nodeN directories");
	if (!rc && r->no_proc_meminfo)
		rc = nk__machine_add_note(m, "/proc/meminfo missing: memory size unknown");
	if (!rc)
		rc = note_ids(m, &r->nomeminfo, "nodeN/meminfo", "node",
			      r->meminfo_from_proc ? "memory from /proc/meminfo" :
			      r->meminfo_from_flags ? "memory size unknown, whether it has any from node/has_memory" :
			      "memory unknown, counted as without memory");
	if (!rc)
		rc = note_ids(m, &r->nodist, "nodeN/distance", "node",
			      "no distances, 10 local and 20 remote assumed");
	if (!rc)
		rc = note_ids(m, &r->cpumap, "nodeN/cpulist", "node", "cpus from nodeN/cpumap");
	if (!rc)
		rc = note_ids(m, &r->cpulinks, "nodeN/cpulist and cpumap", "node", "cpus from the cpuN/nodeM links");
	if (!rc)
		rc = note_ids(m, &r->siblings_map, "cpuN/topology/thread_siblings_list", "cpu",
			      "cores from the thread_siblings masks");
	return rc ? nk__error(r->err, rc, "out of memory") : 0;
}

static void reader_free(struct reader *r)
{
	nk__ilist_free(&r->cpumap);
	nk__ilist_free(&r->cpulinks);
	nk__ilist_free(&r->nodist);
	nk__ilist_free(&r->nomeminfo);
	nk__ilist_free(&r->siblings_map);
}

int nk__machine_from_sysfs(const char *root, int live, nk_machine **out, nk_error *err)
{
	struct reader r = { .root = live ? NULL : root, .what = live ? "live system" : root, .err = err };
	struct nk_machine *m = nk__machine_new(live ? NK_SOURCE_LIVE : NK_SOURCE_FSROOT, live ? "" : root);
	nk__ilist node_ids = { 0 }, online_nodes = { 0 }, possible = { 0 }, online_cpus = { 0 }, tmp = { 0 };
	int rc, exists, present;

	if (!m)
		return nk__error(err, NK_ENOMEM, "out of memory");
	if (!live && !nk__os_exists(root, "/")) {
		rc = nk__error(err, NK_ENOENT, "%s: no such directory", root);
		goto fail;
	}
	if (!nk__os_exists(r.root, CPU_DIR)) {
		rc = nk__error(err, NK_ENOENT, "%s: no %s (not a sysfs tree)", live ? "/" : root, CPU_DIR);
		goto fail;
	}

	if ((rc = read_online_cpus(&r, &online_cpus)))
		goto fail;
	if (!online_cpus.n) {
		rc = bad(&r, CPU_DIR "/online", "no online cpu");
		goto fail;
	}

	/* Nodes: the nodeN directories (never probe 0,1,2.. until a gap: ids
	 * can be sparse), restricted to the online list when there is one. */
	if ((rc = list_ids(&r, NODE_DIR, "node", &node_ids, &exists)))
		goto fail;
	if (!exists || !node_ids.n) {
		if ((rc = single_node(&r, m)))
			goto fail;
		for (size_t i = 0; i < online_cpus.n; i++) {
			struct nk__cpu *c;
			if ((rc = nk__machine_add_cpu(m, online_cpus.v[i], &c))) {
				nk__error(err, rc, "out of memory");
				goto fail;
			}
			c->node = 0;
		}
	} else {
		if ((rc = rd_list(&r, NODE_DIR "/online", &online_nodes, &present)))
			goto fail;
		r.nodes_from_dirs = !present;
		if ((rc = rd_list(&r, NODE_DIR "/possible", &possible, NULL)))
			goto fail;
		for (size_t i = 0; i < node_ids.n; i++) {
			struct nk__node *nd;
			if (present && !nk__ilist_contains(&online_nodes, node_ids.v[i]))
				continue;
			if ((rc = nk__machine_add_node(m, node_ids.v[i], &nd))) {
				nk__error(err, rc, rc == NK_ERANGE ? "too many NUMA nodes" : "out of memory");
				goto fail;
			}
			if ((rc = read_node_memory(&r, nd)))
				goto fail;
		}
		if (!m->nnodes) {
			rc = bad(&r, NODE_DIR, "no online node directory");
			goto fail;
		}
		if ((rc = fix_missing_meminfo(&r, m)))
			goto fail;
		if ((rc = read_distances(&r, m, &possible)))
			goto fail;
		/* cpu -> node from the node's cpu list, restricted to online cpus.
		 * Nodes and cpus are added in increasing id order, so the binary
		 * searches of nk__node_idx/nk__cpu_idx work before finalize. */
		for (size_t i = 0; i < online_cpus.n; i++) {
			struct nk__cpu *c;
			if ((rc = nk__machine_add_cpu(m, online_cpus.v[i], &c))) {
				nk__error(err, rc, "out of memory");
				goto fail;
			}
		}
		for (int i = 0; i < m->nnodes; i++) {
			int found;
			if ((rc = read_node_cpus(&r, m->nodes[i].id, &tmp, &found)))
				goto fail;
			for (size_t k = 0; k < tmp.n; k++) {
				int c = nk__cpu_idx(m, tmp.v[k]); /* offline cpus are not in m */
				if (c >= 0)
					m->cpus[c].node = m->nodes[i].id;
			}
		}
		/* cpus left without a node: the cpuN/nodeM link, if its node is online */
		for (int c = 0; c < m->ncpus; c++) {
			if (m->cpus[c].node >= 0)
				continue;
			char dir[96];
			snprintf(dir, sizeof dir, CPU_DIR "/cpu%d", m->cpus[c].id);
			if ((rc = list_ids(&r, dir, "node", &tmp, &exists)))
				goto fail;
			for (size_t k = 0; k < tmp.n; k++)
				if (nk__node_idx(m, tmp.v[k]) >= 0)
					m->cpus[c].node = tmp.v[k];
		}
	}

	for (int c = 0; c < m->ncpus; c++)
		if ((rc = read_cpu_topology(&r, &m->cpus[c])))
			goto fail;
	for (int c = 0; c < m->ncpus; c++)
		if ((rc = read_cpu_caches(&r, m, m->cpus[c].id, &online_cpus)))
			goto fail;

	if ((rc = read_hugepages(&r, m, "/sys/kernel/mm/hugepages")))
		goto fail;
	for (int i = 0; i < m->nnodes && !m->huge_kb.n; i++) {
		char dir[96];
		snprintf(dir, sizeof dir, NODE_DIR "/node%d/hugepages", m->nodes[i].id);
		if ((rc = read_hugepages(&r, m, dir)))
			goto fail;
	}
	m->page_size = live ? nk__os_page_size() : 4096;
	if ((rc = read_kernel(&r, m)))
		goto fail;
	if ((rc = read_allowed(&r, m, live)))
		goto fail;
	if ((rc = add_notes(&r, m)))
		goto fail;
	if ((rc = nk__machine_finalize(m, live ? "live system" : root, err)))
		goto fail;

	nk__ilist_free(&node_ids);
	nk__ilist_free(&online_nodes);
	nk__ilist_free(&possible);
	nk__ilist_free(&online_cpus);
	nk__ilist_free(&tmp);
	reader_free(&r);
	*out = m;
	return 0;
fail:
	reader_free(&r);
	nk__ilist_free(&node_ids);
	nk__ilist_free(&online_nodes);
	nk__ilist_free(&possible);
	nk__ilist_free(&online_cpus);
	nk__ilist_free(&tmp);
	nk_machine_free(m);
	return rc;
}

int nk_machine_load_live(nk_machine **out, nk_error *err)
{
	if (!out)
		return nk__error(err, NK_EINVAL, "nk_machine_load_live: NULL argument");
	return nk__machine_from_sysfs("/", 1, out, err);
}

int nk_machine_load_fsroot(const char *fsroot, nk_machine **out, nk_error *err)
{
	if (!out || !fsroot || !*fsroot)
		return nk__error(err, NK_EINVAL, "nk_machine_load_fsroot: NULL or empty argument");
	return nk__machine_from_sysfs(fsroot, 0, out, err);
}
