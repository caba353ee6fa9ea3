/* SPDX-License-Identifier: BSD-3-Clause
 * The machine model built from each real-machine dump (`test_dumps NAME`,
 * one ctest case per dump), checked against facts found without numakit:
 *   1. the dump's own files, read here with deliberately simple parsing
 *      (node directories, cpulist or cpumap, meminfo, distance rows, cpu
 *      online list, cache index directories, cpuset/cgroup files);
 *   2. hwloc itself, loading the same dump (HWLOC_FSROOT);
 *   3. literal facts per machine, read off the dumps and hwloc's expected
 *      outputs (tests/data/topologies/NAME.lstopo.txt or .xml), for each point of issue 2.
 * Where the sources disagree with each other (a few dumps are deliberately
 * odd) the comment says which one wins and why.
 */
#include "testutil.h"

#include <dirent.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXID 1024

static const char *dump_name;
static char root[4096];
static nk_machine *mach;

typedef unsigned char idset[MAXID];

/* ---------------------------------------------- test-side sysfs reading */

/* Whole file under the dump root, or NULL when missing. NULs become spaces. */
static char *readf(const char *fmt, ...)
{
	char rel[1024], path[5200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof rel, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s%s", root, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	size_t k;
	while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (n + 1 == cap)
			s = realloc(s, cap *= 2);
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!s[i])
			s[i] = ' ';
	s[n] = '\0';
	return s;
}

static int exists(const char *fmt, ...)
{
	char rel[1024], path[5200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof rel, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s%s", root, rel);
	FILE *f = fopen(path, "r");
	if (f)
		fclose(f);
	DIR *d = f ? NULL : opendir(path);
	if (d)
		closedir(d);
	return f || d;
}

/* "0-3,8,10-11" into a set; returns the number of ids. */
static int list_set(const char *s, unsigned char *set)
{
	int n = 0;
	memset(set, 0, MAXID);
	while (s && *s) {
		while (*s == ' ' || *s == '\n' || *s == ',')
			s++;
		if (!*s)
			break;
		char *e;
		long a = strtol(s, &e, 10), b = a;
		assert_true(e != s);
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long i = a; i <= b; i++) {
			assert_true(i >= 0 && i < MAXID);
			n += !set[i];
			set[i] = 1;
		}
		s = e;
	}
	return n;
}

/* Kernel hex mask "0000,0000003f" (32-bit words, highest first). */
static int mask_set(const char *s, unsigned char *set)
{
	int words = 1, n = 0;
	memset(set, 0, MAXID);
	for (const char *p = s; *p; p++)
		words += *p == ',';
	for (int w = words - 1; w >= 0; w--) {
		unsigned long v = strtoul(s, (char **)&s, 16);
		for (int b = 0; b < 32; b++)
			if (v >> b & 1) {
				assert_true(w * 32 + b < MAXID);
				set[w * 32 + b] = 1;
				n++;
			}
		if (*s == ',')
			s++;
	}
	return n;
}

static int count(const unsigned char *set)
{
	int n = 0;
	for (int i = 0; i < MAXID; i++)
		n += set[i];
	return n;
}

static void set_and(unsigned char *a, const unsigned char *b)
{
	for (int i = 0; i < MAXID; i++)
		a[i] &= b[i];
}

/* The ids of an nk list as a set. */
static void ids_set(const int *v, int n, unsigned char *set)
{
	memset(set, 0, MAXID);
	for (int i = 0; i < n; i++) {
		assert_true(v[i] >= 0 && v[i] < MAXID);
		set[v[i]] = 1;
	}
}

static void fmt_set(const unsigned char *set, char *buf, size_t cap)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < MAXID && k + 8 < cap; i++)
		if (set[i])
			k += (size_t)snprintf(buf + k, cap - k, "%s%d", k ? "," : "", i);
}

#define assert_set_equal(got, want)                                                                   \
	do {                                                                                          \
		char _g[4096], _w[4096];                                                              \
		fmt_set(got, _g, sizeof _g);                                                          \
		fmt_set(want, _w, sizeof _w);                                                         \
		assert_string_equal(_g, _w);                                                          \
	} while (0)

static void node_cpus_set(int node, unsigned char *set)
{
	int v[MAXID];
	int n = nk_machine_node_cpus(mach, node, v, MAXID);
	assert_true(n >= 0);
	ids_set(v, n, set);
}

/* What the dump says, gathered once per run. */
struct facts {
	int numa;             /* has /sys/devices/system/node */
	idset nodes;          /* online node ids (with a directory) */
	idset possible;
	idset cpus;           /* online cpus */
	idset node_cpus[MAXID / 8]; /* by node id (ids < 128 here) */
	unsigned long long mem[MAXID / 8];
	int dist[MAXID / 8][MAXID / 8];
	idset allowed_cpus, allowed_nodes;
	idset orphan;         /* online cpus in no online node */
	unsigned long long huge[16];
	int nhuge;
};
static struct facts F;

static unsigned long long meminfo_total(const char *text)
{
	const char *p = text ? strstr(text, "MemTotal:") : NULL;
	assert_non_null(p);
	return strtoull(p + 9, NULL, 10) * 1024ull;
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return (x > y) - (x < y);
}

static void add_huge_dir(const char *rel)
{
	char path[5200];
	snprintf(path, sizeof path, "%s%s", root, rel);
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		unsigned long long kb;
		if (sscanf(e->d_name, "hugepages-%llukB", &kb) != 1)
			continue;
		int k;
		for (k = 0; k < F.nhuge && F.huge[k] != kb * 1024; k++)
			;
		if (k == F.nhuge)
			F.huge[F.nhuge++] = kb * 1024;
	}
	closedir(d);
}

/* The cgroup path of controller @p ctl ("" = the v2 line "0::") in
 * /proc/self/cgroup, else the path in /proc/self/cpuset (older dumps). */
static void cg_path(const char *cg, const char *cs, const char *ctl, char *path, size_t cap)
{
	char key[64];
	const char *p = NULL;
	snprintf(key, sizeof key, "%s:", ctl);
	for (const char *l = cg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		const char *c = strchr(l, ':');
		if (c && !strncmp(c + 1, key, strlen(key))) {
			p = c + 1 + strlen(key);
			break;
		}
	}
	if (!p)
		p = cs ? cs : "/";
	size_t n = strcspn(p, "\n ");
	if (n >= cap)
		n = cap - 1;
	memcpy(path, p, n);
	path[n] = '\0';
	if (!strcmp(path, "/"))
		path[0] = '\0';
}

/* The process's cpuset: cgroup v2 effective files where the dump has them,
 * else the cgroup-v1 or legacy cpuset files. */
static void read_allowed(void)
{
	char *cg = readf("/proc/self/cgroup"), *mounts = readf("/proc/mounts"), *cs = readf("/proc/self/cpuset");
	char *cpus = NULL, *mems = NULL;
	char mnt[512], dev[512], type[64], opts[1024], path[1024];

	for (int pass = 0; pass < 2 && !cpus && mounts; pass++)
		for (const char *l = mounts; *l && !cpus; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
			if (sscanf(l, "%511s %511s %63s %1023s", dev, mnt, type, opts) != 4)
				continue;
			if (pass == 0 && !strcmp(type, "cgroup2")) {
				cg_path(cg, cs, "", path, sizeof path);
				cpus = readf("%s%s/cpuset.cpus.effective", mnt, path);
				mems = readf("%s%s/cpuset.mems.effective", mnt, path);
			} else if (pass == 1 && !strcmp(type, "cpuset")) {
				cg_path(cg, cs, "cpuset", path, sizeof path);
				cpus = readf("%s%s/cpus", mnt, path);
				mems = readf("%s%s/mems", mnt, path);
			} else if (pass == 1 && !strcmp(type, "cgroup") && strstr(opts, "cpuset")) {
				cg_path(cg, cs, "cpuset", path, sizeof path);
				cpus = readf("%s%s/cpuset.cpus", mnt, path);
				mems = readf("%s%s/cpuset.mems", mnt, path);
			}
			if (!cpus) {
				free(mems);
				mems = NULL;
			}
		}
	if (cpus) {
		list_set(cpus, F.allowed_cpus);
		set_and(F.allowed_cpus, F.cpus);
	} else {
		memcpy(F.allowed_cpus, F.cpus, MAXID);
	}
	if (mems) {
		list_set(mems, F.allowed_nodes);
		set_and(F.allowed_nodes, F.nodes);
	} else {
		memcpy(F.allowed_nodes, F.nodes, MAXID);
	}
	free(cg);
	free(mounts);
	free(cs);
	free(cpus);
	free(mems);
}

static void gather(void)
{
	char *s;

	memset(&F, 0, sizeof F);
	s = readf("/sys/devices/system/cpu/online");
	assert_non_null(s);
	list_set(s, F.cpus);
	free(s);

	F.numa = exists("/sys/devices/system/node");
	if (!F.numa) {
		/* a kernel without NUMA: one node 0 with everything */
		F.nodes[0] = F.possible[0] = 1;
		memcpy(F.node_cpus[0], F.cpus, MAXID);
		s = readf("/proc/meminfo");
		F.mem[0] = meminfo_total(s);
		free(s);
		F.dist[0][0] = 10;
	} else {
		s = readf("/sys/devices/system/node/online");
		assert_non_null(s);
		list_set(s, F.nodes);
		free(s);
		s = readf("/sys/devices/system/node/possible");
		if (s)
			list_set(s, F.possible);
		else
			memcpy(F.possible, F.nodes, MAXID);
		free(s);
		int online_ids[MAXID], nonline = 0, possible_ids[MAXID], npossible = 0;
		for (int i = 0; i < MAXID; i++) {
			if (F.nodes[i])
				online_ids[nonline++] = i;
			if (F.possible[i])
				possible_ids[npossible++] = i;
		}
		for (int k = 0; k < nonline; k++) {
			int n = online_ids[k];
			assert_true(n < MAXID / 8);
			/* cpulist, or cpumap where a dump has no cpulist */
			s = readf("/sys/devices/system/node/node%d/cpulist", n);
			if (s) {
				list_set(s, F.node_cpus[n]);
			} else {
				free(s);
				s = readf("/sys/devices/system/node/node%d/cpumap", n);
				assert_non_null(s);
				mask_set(s, F.node_cpus[n]);
			}
			free(s);
			set_and(F.node_cpus[n], F.cpus);
			s = readf("/sys/devices/system/node/node%d/meminfo", n);
			F.mem[n] = meminfo_total(s);
			free(s);
			/* a distance row lists the online nodes in id order; a
			 * row as long as the possible list (offline-cpu0-node0)
			 * lists the possible ones */
			s = readf("/sys/devices/system/node/node%d/distance", n);
			assert_non_null(s);
			int row[MAXID], len = 0;
			for (char *p = s, *e;; p = e) {
				long v = strtol(p, &e, 10);
				if (e == p)
					break;
				row[len++] = (int)v;
			}
			free(s);
			const int *ids = len == nonline ? online_ids : possible_ids;
			assert_true(len == nonline || len == npossible);
			for (int j = 0; j < len; j++)
				if (F.nodes[ids[j]])
					F.dist[n][ids[j]] = row[j];
			char rel[256];
			snprintf(rel, sizeof rel, "/sys/devices/system/node/node%d/hugepages", n);
			add_huge_dir(rel);
		}
	}
	add_huge_dir("/sys/kernel/mm/hugepages");
	qsort(F.huge, (size_t)F.nhuge, sizeof F.huge[0], cmp_ull);

	memcpy(F.orphan, F.cpus, MAXID);
	for (int n = 0; n < MAXID / 8; n++)
		if (F.nodes[n])
			for (int c = 0; c < MAXID; c++)
				if (F.node_cpus[n][c])
					F.orphan[c] = 0;
	read_allowed();
}

/* ------------------------------------------------ 1. the dump's own files */

static void test_nodes_and_memory(void **state)
{
	(void)state;
	int v[MAXID];
	idset got;
	int n = nk_machine_num_nodes(mach);
	assert_int_equal(n, count(F.nodes));
	for (int i = 0; i < n; i++)
		v[i] = nk_machine_node_id(mach, i);
	ids_set(v, n, got);
	assert_set_equal(got, F.nodes);
	for (int i = 1; i < n; i++)
		assert_true(v[i] > v[i - 1]); /* increasing id order */
	for (int id = 0; id < MAXID / 8; id++) {
		if (!F.nodes[id])
			continue;
		uint64_t total = 0;
		assert_int_equal(nk_machine_node_memory(mach, id, &total, NULL), 0);
		assert_int_equal(total, F.mem[id]);
		int fl = nk_machine_node_flags(mach, id);
		assert_true(fl >= 0);
		assert_int_equal(!!(fl & NK_NODE_HAS_MEMORY), F.mem[id] > 0);
	}
}

static void test_cpus_per_node(void **state)
{
	(void)state;
	idset got, all;
	assert_int_equal(nk_machine_num_cpus(mach), count(F.cpus));
	memset(all, 0, sizeof all);
	for (int id = 0; id < MAXID / 8; id++) {
		if (!F.nodes[id])
			continue;
		node_cpus_set(id, got);
		assert_set_equal(got, F.node_cpus[id]);
		for (int c = 0; c < MAXID; c++) {
			assert_false(got[c] && all[c]);
			all[c] |= got[c];
		}
		int fl = nk_machine_node_flags(mach, id);
		assert_int_equal(!!(fl & NK_NODE_HAS_CPUS), count(got) > 0);
	}
	/* every online cpu is on its node, except those whose node is
	 * offline: they are online cpus with node -1 (numakit.h) */
	for (int c = 0; c < MAXID; c++) {
		assert_int_equal(all[c], F.cpus[c] && !F.orphan[c]);
		if (!F.cpus[c])
			continue;
		nk_cpu_info ci;
		assert_int_equal(nk_machine_cpu_info(mach, c, &ci), 0);
		if (F.orphan[c]) {
			assert_int_equal(ci.node, -1);
			continue;
		}
		node_cpus_set(ci.node, got);
		assert_true(got[c]);
	}
}

static void test_distances(void **state)
{
	(void)state;
	for (int a = 0; a < MAXID / 8; a++)
		for (int b = 0; b < MAXID / 8; b++)
			if (F.nodes[a] && F.nodes[b]) {
				if (nk_machine_distance(mach, a, b) != F.dist[a][b])
					fail_msg("distance %d->%d: got %d, dump says %d", a, b,
						 nk_machine_distance(mach, a, b), F.dist[a][b]);
			}
}

static void test_allowed(void **state)
{
	(void)state;
	int v[MAXID];
	idset got;
	int n = nk_machine_allowed_cpus(mach, v, MAXID);
	ids_set(v, n, got);
	assert_set_equal(got, F.allowed_cpus);
	n = nk_machine_allowed_nodes(mach, v, MAXID);
	ids_set(v, n, got);
	assert_set_equal(got, F.allowed_nodes);
	for (int id = 0; id < MAXID / 8; id++) {
		if (!F.nodes[id])
			continue;
		int fl = nk_machine_node_flags(mach, id);
		assert_int_equal(!!(fl & NK_NODE_MEM_ALLOWED), F.allowed_nodes[id]);
	}
	for (int c = 0; c < MAXID; c++)
		if (F.cpus[c]) {
			nk_cpu_info ci;
			assert_int_equal(nk_machine_cpu_info(mach, c, &ci), 0);
			assert_int_equal(ci.allowed, F.allowed_cpus[c]);
		}
}

/* For every online cpu and every cache index directory of it: the machine
 * has a cache of that level and type containing the cpu, shared by exactly
 * the online cpus of shared_cpu_list (or shared_cpu_map). */
static void test_caches(void **state)
{
	(void)state;
	int ncache = nk_machine_num_caches(mach), checked = 0;
	assert_true(ncache >= 0);
	for (int c = 0; c < MAXID; c++) {
		if (!F.cpus[c])
			continue;
		for (int k = 0; k < 16; k++) {
			char *lvl = readf("/sys/devices/system/cpu/cpu%d/cache/index%d/level", c, k);
			if (!lvl)
				break;
			char *type = readf("/sys/devices/system/cpu/cpu%d/cache/index%d/type", c, k);
			char *shared = readf("/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", c, k);
			idset want, got;
			if (shared) {
				list_set(shared, want);
			} else {
				shared = readf("/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_map", c, k);
				assert_non_null(shared);
				mask_set(shared, want);
			}
			set_and(want, F.cpus);
			int level = atoi(lvl);
			int t = !strncmp(type, "Data", 4) ? NK_CACHE_DATA :
				!strncmp(type, "Instruction", 11) ? NK_CACHE_INSTRUCTION : NK_CACHE_UNIFIED;
			int found = -1;
			for (int i = 0; i < ncache; i++) {
				nk_cache_info ci;
				int v[MAXID];
				assert_int_equal(nk_machine_cache(mach, i, &ci), 0);
				if (ci.level != level || ci.type != t)
					continue;
				int n = nk_machine_cache_cpus(mach, i, v, MAXID);
				ids_set(v, n, got);
				if (got[c]) {
					assert_int_equal(found, -1); /* one cache per cpu per level and type */
					found = i;
					assert_set_equal(got, want);
				}
			}
			if (found < 0)
				fail_msg("cpu %d: no L%d %s cache", c, level, type);
			checked++;
			free(lvl);
			free(type);
			free(shared);
		}
	}
	print_message("%d cache index directories checked\n", checked);
}

static void test_pages(void **state)
{
	(void)state;
	uint64_t hp[16];
	int n = nk_machine_huge_page_sizes(mach, hp, 16);
	assert_int_equal(n, F.nhuge);
	for (int i = 0; i < n; i++)
		assert_int_equal(hp[i], F.huge[i]);
	assert_true(nk_machine_page_size(mach) >= 4096);
	const char *detail = NULL;
	assert_int_equal(nk_machine_source(mach, &detail), NK_SOURCE_FSROOT);
}

/* ------------------------------------------------------------ 2. hwloc */

static hwloc_topology_t topo;

static int hwloc_setup(void **state)
{
	(void)state;
	setenv("HWLOC_FSROOT", root, 1);
	setenv("HWLOC_COMPONENTS", "linux,stop", 1);
	unsetenv("HWLOC_XMLFILE");
	unsetenv("HWLOC_SYNTHETIC");
	if (hwloc_topology_init(&topo))
		return -1;
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	return hwloc_topology_load(topo) ? -1 : 0;
}

static int hwloc_teardown(void **state)
{
	(void)state;
	hwloc_topology_destroy(topo);
	return 0;
}

static void bitmap_set(hwloc_const_bitmap_t b, unsigned char *set)
{
	int i;
	memset(set, 0, MAXID);
	hwloc_bitmap_foreach_begin(i, b) {
		assert_true(i < MAXID);
		set[i] = 1;
	}
	hwloc_bitmap_foreach_end();
}

/* hwloc shows the nodes that have memory (it hides memoryless ones and
 * attaches their cpus to the memory they reach; disallowed ones show up,
 * empty, with INCLUDE_DISALLOWED): same ids, same memory. */
static void test_hwloc_nodes(void **state)
{
	(void)state;
	hwloc_obj_t o = NULL;
	int nmem = 0;
	while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) != NULL) {
		uint64_t total = 0;
		int id = (int)o->os_index;
		assert_int_equal(nk_machine_node_memory(mach, id, &total, NULL), 0);
		assert_int_equal(total, o->attr->numanode.local_memory);
		/* disallowed memoryless nodes do show, with no memory */
		assert_int_equal(!!(nk_machine_node_flags(mach, id) & NK_NODE_HAS_MEMORY), total > 0);
		nmem += total > 0;
	}
	int n = 0;
	for (int i = 0; i < nk_machine_num_nodes(mach); i++)
		n += !!(nk_machine_node_flags(mach, nk_machine_node_id(mach, i)) & NK_NODE_HAS_MEMORY);
	assert_int_equal(n, nmem);
	assert_int_equal(nk_machine_num_cpus(mach), hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
}

/* Where every node with cpus has memory, hwloc's node cpusets are the
 * nodes' cpus (cpus of an offline node are in neither). */
static void test_hwloc_cpus(void **state)
{
	(void)state;
	for (int i = 0; i < nk_machine_num_nodes(mach); i++) {
		int id = nk_machine_node_id(mach, i);
		int fl = nk_machine_node_flags(mach, id);
		if ((fl & NK_NODE_HAS_CPUS) && !(fl & NK_NODE_HAS_MEMORY)) {
			print_message("skipped: memoryless node %d (hwloc hides it)\n", id);
			return;
		}
	}
	hwloc_obj_t o = NULL;
	while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) != NULL) {
		idset want, got;
		bitmap_set(o->cpuset, want);
		node_cpus_set((int)o->os_index, got);
		assert_set_equal(got, want);
	}
}

static void test_hwloc_distances(void **state)
{
	(void)state;
	struct hwloc_distances_s *d[4];
	unsigned nr = 4;
	assert_int_equal(hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, d,
						     HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0),
			 0);
	if (nr > 4)
		nr = 4;
	if (!nr)
		print_message("hwloc has no distance matrix for this machine\n");
	for (unsigned k = 0; k < nr; k++) {
		for (unsigned i = 0; i < d[k]->nbobjs; i++)
			for (unsigned j = 0; j < d[k]->nbobjs; j++) {
				int a = (int)d[k]->objs[i]->os_index, b = (int)d[k]->objs[j]->os_index;
				assert_int_equal(nk_machine_distance(mach, a, b), d[k]->values[i * d[k]->nbobjs + j]);
			}
		hwloc_distances_release(topo, d[k]);
	}
}

static void test_hwloc_allowed(void **state)
{
	(void)state;
	int v[MAXID];
	idset got, want, hn;
	int n = nk_machine_allowed_cpus(mach, v, MAXID);
	ids_set(v, n, got);
	bitmap_set(hwloc_topology_get_allowed_cpuset(topo), want);
	assert_set_equal(got, want);
	/* hwloc knows only the nodes with memory */
	n = nk_machine_allowed_nodes(mach, v, MAXID);
	ids_set(v, n, got);
	bitmap_set(hwloc_topology_get_topology_nodeset(topo), hn);
	set_and(got, hn);
	bitmap_set(hwloc_topology_get_allowed_nodeset(topo), want);
	assert_set_equal(got, want);
}

/* L2 and L3 sharing: the same cpu sets, instance for instance. */
static void test_hwloc_caches(void **state)
{
	(void)state;
	for (int level = 2; level <= 3; level++) {
		hwloc_obj_type_t t = level == 2 ? HWLOC_OBJ_L2CACHE : HWLOC_OBJ_L3CACHE;
		int nh = 0, nn = 0;
		hwloc_obj_t o = NULL;
		while ((o = hwloc_get_next_obj_by_type(topo, t, o)) != NULL) {
			idset want, got;
			bitmap_set(o->cpuset, want);
			if (!count(want))
				continue;
			nh++;
			int found = 0;
			for (int i = 0; i < nk_machine_num_caches(mach) && !found; i++) {
				nk_cache_info ci;
				int v[MAXID];
				assert_int_equal(nk_machine_cache(mach, i, &ci), 0);
				if (ci.level != level)
					continue;
				ids_set(v, nk_machine_cache_cpus(mach, i, v, MAXID), got);
				if (!memcmp(got, want, MAXID)) {
					found = 1;
					assert_int_equal(ci.size, o->attr->cache.size);
				}
			}
			assert_true(found);
		}
		for (int i = 0; i < nk_machine_num_caches(mach); i++) {
			nk_cache_info ci;
			assert_int_equal(nk_machine_cache(mach, i, &ci), 0);
			nn += ci.level == level;
		}
		assert_int_equal(nn, nh);
	}
}

/* --------------------------------------------- 3. literal facts, per dump */

static void expect_list(const char *what, int n, const int *v, const char *want)
{
	char buf[2048];
	assert_true(n >= 0);
	assert_true(nk_format_list(v, (size_t)n, buf, sizeof buf) >= 0);
	if (strcmp(buf, want))
		fail_msg("%s: got \"%s\", expected \"%s\"", what, buf, want);
}

static void expect_node_cpus(int node, const char *want)
{
	int v[MAXID];
	char what[64];
	snprintf(what, sizeof what, "cpus of node %d", node);
	expect_list(what, nk_machine_node_cpus(mach, node, v, MAXID), v, want);
}

static void expect_flags(int node, unsigned has)
{
	int fl = nk_machine_node_flags(mach, node);
	assert_true(fl >= 0);
	if ((unsigned)(fl & (NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY)) != has)
		fail_msg("node %d: flags %#x, expected cpus/memory bits %#x", node, fl, has);
}

static void test_literal(void **state)
{
	(void)state;
	int v[MAXID];
	uint64_t total;

	if (!strcmp(dump_name, "48amd64-4pa2n6c-sparse")) {
		/* node dirs 0,1,2,33,34,45,72,73; each row has 8 entries in that order */
		int n = nk_machine_num_nodes(mach);
		for (int i = 0; i < n; i++)
			v[i] = nk_machine_node_id(mach, i);
		expect_list("nodes", n, v, "0-2,33-34,45,72-73");
		expect_node_cpus(33, "18-23");
		expect_node_cpus(73, "42-47");
		assert_int_equal(nk_machine_distance(mach, 33, 0), 22);
		assert_int_equal(nk_machine_distance(mach, 2, 34), 16);
		assert_int_equal(nk_machine_distance(mach, 45, 73), 16);
		assert_int_equal(nk_machine_distance(mach, 73, 45), 16);
		assert_int_equal(nk_machine_node_flags(mach, 3), NK_ENODEV);
		assert_int_equal(nk_machine_node_memory(mach, 1, &total, NULL), 0);
		assert_int_equal(total, 16777216ull << 10);
	} else if (!strcmp(dump_name, "128arm-2pa2n8cluster4co")) {
		static const int d[4][4] = { { 10, 16, 32, 33 }, { 16, 10, 25, 32 }, { 32, 25, 10, 16 }, { 33, 32, 16, 10 } };
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				assert_int_equal(nk_machine_distance(mach, i, j), d[i][j]);
		uint64_t hp[8];
		assert_int_equal(nk_machine_huge_page_sizes(mach, hp, 8), 4);
		assert_int_equal(hp[0], 64ull << 10);
		assert_int_equal(hp[1], 2ull << 20);
		assert_int_equal(hp[2], 32ull << 20);
		assert_int_equal(hp[3], 1ull << 30);
		expect_node_cpus(2, "64-95");
		assert_int_equal(nk_machine_node_memory(mach, 3, &total, NULL), 0);
		assert_int_equal(total, 131062408ull << 10);
		/* L3 32 MiB per node (lstopo: "L3 L#0 (32MB)"), L2 512 KiB per core */
		for (int i = 0; i < nk_machine_num_caches(mach); i++) {
			nk_cache_info ci;
			assert_int_equal(nk_machine_cache(mach, i, &ci), 0);
			if (ci.level == 3)
				assert_int_equal(ci.num_cpus, 32);
			if (ci.level == 2) {
				assert_int_equal(ci.num_cpus, 1);
				assert_int_equal(ci.size, 512u << 10);
			}
		}
		assert_int_equal(nk_machine_num_cores(mach), 128);
	} else if (!strcmp(dump_name, "fakememinitiators-1np2c+1npp+gi")) {
		/* Nodes 0-3: cpus, MemTotal 0.  Their cpus come from cpumap
		 * (there is no cpulist).  The cpu/cpuN/nodeM links of this
		 * synthetic dump disagree (cpu5 -> node1, cpumap puts 5 in
		 * node2); cpumap is what hwloc uses, and it agrees with the
		 * packages and distances (node0-node2 13, same package). */
		expect_node_cpus(0, "0-1");
		expect_node_cpus(1, "2-3");
		expect_node_cpus(2, "4-5");
		expect_node_cpus(3, "6-7");
		for (int n = 0; n < 4; n++)
			expect_flags(n, NK_NODE_HAS_CPUS);
		expect_flags(4, 0); /* generic initiator: neither */
		for (int n = 5; n <= 10; n++)
			expect_flags(n, NK_NODE_HAS_MEMORY);
		expect_list("allowed nodes", nk_machine_allowed_nodes(mach, v, MAXID), v, "5-10");
		assert_int_equal(nk_machine_distance(mach, 4, 7), 13);
		assert_int_equal(nk_machine_distance(mach, 0, 5), 11);
		/* neighbours of memoryless node 0: memory nodes by distance */
		assert_int_equal(nk_machine_neighbors(mach, 0, v, MAXID), 6);
		assert_int_equal(v[0], 5);
		assert_int_equal(v[1], 6);
		assert_int_equal(v[2], 7);
	} else if (!strcmp(dump_name, "16amd64-8n2c-cpusets")) {
		/* /proc/self/cpuset = /dummy; /dev/cpuset/dummy: cpus 0-6,12-15, mems 1-4;
		 * cpu 4 offline; hwloc's expected output shows nodes 1-4 */
		expect_list("allowed nodes", nk_machine_allowed_nodes(mach, v, MAXID), v, "1-4");
		expect_list("allowed cpus", nk_machine_allowed_cpus(mach, v, MAXID), v, "0-3,5-6,12-15");
		assert_int_equal(nk_machine_num_nodes(mach), 8);
		assert_int_equal(nk_machine_num_cpus(mach), 15);
		expect_node_cpus(2, "5");
		int fl = nk_machine_node_flags(mach, 0);
		assert_false(fl & NK_NODE_MEM_ALLOWED);
		assert_true(fl & NK_NODE_CPUS_ALLOWED);
		fl = nk_machine_node_flags(mach, 5); /* cpus 10-11 */
		assert_false(fl & (NK_NODE_MEM_ALLOWED | NK_NODE_CPUS_ALLOWED));
		fl = nk_machine_node_flags(mach, 7); /* cpus 14-15 */
		assert_int_equal(fl & (NK_NODE_MEM_ALLOWED | NK_NODE_CPUS_ALLOWED), NK_NODE_CPUS_ALLOWED);
	} else if (!strcmp(dump_name, "32amd64-4s2n4c-cgroup2")) {
		/* cgroup v2: cpuset.mems.effective 0-5, cpuset.cpus.effective 0-5 */
		expect_list("allowed nodes", nk_machine_allowed_nodes(mach, v, MAXID), v, "0-5");
		expect_list("allowed cpus", nk_machine_allowed_cpus(mach, v, MAXID), v, "0-5");
		assert_int_equal(nk_machine_num_nodes(mach), 8);
		assert_int_equal(nk_machine_num_cpus(mach), 32);
		assert_false(nk_machine_node_flags(mach, 6) & NK_NODE_MEM_ALLOWED);
		assert_true(nk_machine_node_flags(mach, 1) & NK_NODE_CPUS_ALLOWED);
		assert_false(nk_machine_node_flags(mach, 2) & NK_NODE_CPUS_ALLOWED);
		assert_int_equal(nk_machine_distance(mach, 0, 3), 22);
	} else if (!strcmp(dump_name, "offline-cpu0-node0")) {
		/* node/online = 1; cpu/online = 4-20; node1/cpulist names
		 * offline cpus too; has_memory says 0-1 although node 0 is
		 * offline; node1/distance "21 10" indexes the possible nodes */
		int n = nk_machine_num_nodes(mach);
		assert_int_equal(n, 1);
		assert_int_equal(nk_machine_node_id(mach, 0), 1);
		assert_int_equal(nk_machine_distance(mach, 1, 1), 10);
		assert_int_equal(nk_machine_num_cpus(mach), 17);
		/* online cpus of node1's list; 4,6,...,20 link to node0 (offline) */
		expect_node_cpus(1, "5,7,9,11,13,15,17,19");
		nk_cpu_info ci;
		assert_int_equal(nk_machine_cpu_info(mach, 4, &ci), 0);
		assert_int_equal(ci.node, -1);
		assert_int_equal(ci.package, 0);
		assert_int_equal(nk_machine_cpu_info(mach, 5, &ci), 0);
		assert_int_equal(ci.node, 1);
		assert_int_equal(ci.package, 1);
		/* has_cpu is empty and has_memory says 0-1: the node's own files win */
		expect_flags(1, NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY);
		assert_int_equal(nk_machine_node_flags(mach, 0), NK_ENODEV);
		expect_list("allowed cpus", nk_machine_allowed_cpus(mach, v, MAXID), v, "4-20");
		expect_list("allowed nodes", nk_machine_allowed_nodes(mach, v, MAXID), v, "1");
	} else if (!strcmp(dump_name, "2arm-2c")) {
		/* no /sys/devices/system/node: node 0 with all cpus and /proc/meminfo */
		assert_int_equal(nk_machine_num_nodes(mach), 1);
		assert_int_equal(nk_machine_node_id(mach, 0), 0);
		expect_node_cpus(0, "0-1");
		assert_int_equal(nk_machine_node_memory(mach, 0, &total, NULL), 0);
		assert_int_equal(total, 280840ull << 10);
		assert_int_equal(nk_machine_distance(mach, 0, 0), 10);
		expect_flags(0, NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY);
	} else if (!strcmp(dump_name, "16amd64-8n2c")) {
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 8; j++)
				assert_int_equal(nk_machine_distance(mach, i, j), i == j ? 10 : 20);
		expect_node_cpus(7, "14-15");
		assert_int_equal(nk_machine_node_memory(mach, 0, &total, NULL), 0);
		assert_int_equal(total, 8386704ull << 10);
		assert_int_equal(nk_machine_num_cores(mach), 16);
	} else {
		fail_msg("no literal facts for dump %s: add them", dump_name);
	}
}

/* ------------------------------------------------------------------ driver */

static int load_machine(void **state)
{
	(void)state;
	nk_error err = { 0 };
	int rc = nk_machine_load_fsroot(root, &mach, &err);
	if (rc) {
		print_error("%s: nk_machine_load_fsroot: %d (%s): %s\n", dump_name, rc, nk_strerror(rc), err.message);
		return -1;
	}
	return 0;
}

static int free_machine(void **state)
{
	(void)state;
	nk_machine_free(mach);
	mach = NULL;
	return 0;
}

static void test_gather(void **state)
{
	(void)state;
	gather();
	assert_true(count(F.nodes) >= 1);
	assert_true(count(F.cpus) >= 1);
}

/* The hwloc group runs after the first, whose test_gather filled F. */
static int hw_setup(void **state)
{
	if (load_machine(state))
		return -1;
	if (hwloc_setup(state)) {
		free_machine(state);
		return -1;
	}
	return 0;
}

static int hw_teardown(void **state)
{
	hwloc_teardown(state);
	return free_machine(state);
}

static void test_errors(void **state)
{
	(void)state;
	nk_machine *m = (nk_machine *)0x1;
	nk_error err = { 0 };
	assert_int_equal(nk_machine_load_fsroot("/nonexistent/numakit/dump", &m, &err), NK_ENOENT);
	assert_ptr_equal(m, (nk_machine *)0x1);
	assert_non_null(strstr(err.message, "/nonexistent/numakit/dump"));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DUMPNAME (one of tests/data/topologies/*.tar.bz2)\n", argv[0]);
		return 2;
	}
	dump_name = argv[1];
	snprintf(root, sizeof root, "%s", nk_test_dump(dump_name));

	const struct CMUnitTest files[] = {
		cmocka_unit_test(test_gather),
		cmocka_unit_test(test_nodes_and_memory),
		cmocka_unit_test(test_cpus_per_node),
		cmocka_unit_test(test_distances),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_caches),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_literal),
		cmocka_unit_test(test_errors),
	};
	const struct CMUnitTest hw[] = {
		cmocka_unit_test(test_hwloc_nodes),
		cmocka_unit_test(test_hwloc_cpus),
		cmocka_unit_test(test_hwloc_distances),
		cmocka_unit_test(test_hwloc_allowed),
		cmocka_unit_test(test_hwloc_caches),
	};
	int rc = _cmocka_run_group_tests(dump_name, files, sizeof files / sizeof files[0], load_machine, free_machine);
	rc += _cmocka_run_group_tests("hwloc", hw, sizeof hw / sizeof hw[0], hw_setup, hw_teardown);
	return rc;
}
