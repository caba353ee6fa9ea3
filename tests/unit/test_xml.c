/* SPDX-License-Identifier: BSD-3-Clause
 * nk_machine_load_xml() on hwloc XML files: hwloc's own expected output for
 * a real machine (tests/data/topologies/32amd64-4s2n4c-cgroup2.lstopo.xml),
 * XML that lstopo-no-graphics wrote from the real-machine dumps
 * (tests/data/xml/, see the README there) and a hand-edited fixture with a
 * memoryless node.  Expected facts come from the XML text itself, read by
 * the small attribute scanner below (not by hwloc and not by numakit), and
 * from literal values checked against the dumps' sysfs files.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XML_DIR NK_TEST_SRC "/data/xml"
#define MAXN 64
#define MAXC 512

/* ------------------------------------------------------ test-side scanner */

struct xcache {
	int level, type, ways;
	unsigned long long size;
	int line;
	unsigned char cpus[MAXC];
};

struct xfacts {
	int nnodes;
	int node_id[MAXN];
	unsigned long long node_mem[MAXN];
	int node_subtype[MAXN];
	unsigned char node_cpus[MAXN][MAXC]; /* the node's cpuset attribute */
	unsigned long long page_sizes[16];
	int npage_sizes;
	unsigned char pu[MAXC];
	int npus;
	unsigned char allowed_cpus[MAXC];
	unsigned char allowed_nodes[MAXC];
	int ndist;
	int dist_id[MAXN];
	long dist[MAXN * MAXN];
	int ncaches;
	struct xcache caches[4 * MAXC];
};

/* Value of attribute @p name inside the tag [tag, end) into buf; 0 when absent. */
static int attr(const char *tag, const char *end, const char *name, char *buf, size_t cap)
{
	char key[64];
	snprintf(key, sizeof key, " %s=\"", name);
	const char *p = tag;
	while ((p = strstr(p, key)) != NULL && p < end) {
		p += strlen(key);
		const char *q = strchr(p, '"');
		assert_non_null(q);
		size_t n = (size_t)(q - p);
		assert_true(n < cap);
		memcpy(buf, p, n);
		buf[n] = '\0';
		return 1;
	}
	return 0;
}

/* hwloc bitmap text "0x0000ffff,0xffffffff" (highest 32-bit word first). */
static void mask(const char *text, unsigned char *bits)
{
	memset(bits, 0, MAXC);
	int nwords = 1;
	for (const char *p = text; *p; p++)
		nwords += *p == ',';
	int w = nwords - 1;
	const char *p = text;
	while (*p) {
		unsigned long v = strtoul(p, NULL, 16);
		for (int b = 0; b < 32; b++)
			if (v & (1ul << b)) {
				assert_true(w * 32 + b < MAXC);
				bits[w * 32 + b] = 1;
			}
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
		w--;
	}
}

static void scan(const char *path, struct xfacts *f)
{
	char *xml = nk_test_slurp(path);
	char v[4096];
	const char *p = xml;

	memset(f, 0, sizeof *f);
	while ((p = strstr(p, "<object ")) != NULL) {
		const char *end = strchr(p, '>');
		assert_non_null(end);
		assert_true(attr(p, end, "type", v, sizeof v));
		if (!strcmp(v, "Machine")) {
			assert_true(attr(p, end, "allowed_cpuset", v, sizeof v));
			mask(v, f->allowed_cpus);
			assert_true(attr(p, end, "allowed_nodeset", v, sizeof v));
			mask(v, f->allowed_nodes);
		} else if (!strcmp(v, "NUMANode")) {
			int i = f->nnodes++;
			assert_true(i < MAXN);
			assert_true(attr(p, end, "os_index", v, sizeof v));
			f->node_id[i] = atoi(v);
			f->node_mem[i] = attr(p, end, "local_memory", v, sizeof v) ? strtoull(v, NULL, 10) : 0;
			f->node_subtype[i] = attr(p, end, "subtype", v, sizeof v);
			assert_true(attr(p, end, "cpuset", v, sizeof v));
			mask(v, f->node_cpus[i]);
			/* page types follow until this object's end */
			const char *close = end[-1] == '/' ? end : strstr(end, "</object>");
			for (const char *q = strstr(end, "<page_type "); q && q < close; q = strstr(q + 1, "<page_type ")) {
				const char *qe = strchr(q, '>');
				assert_true(attr(q, qe, "size", v, sizeof v));
				unsigned long long sz = strtoull(v, NULL, 10);
				int k;
				for (k = 0; k < f->npage_sizes && f->page_sizes[k] != sz; k++)
					;
				if (k == f->npage_sizes)
					f->page_sizes[f->npage_sizes++] = sz;
			}
		} else if (!strcmp(v, "PU")) {
			assert_true(attr(p, end, "os_index", v, sizeof v));
			f->pu[atoi(v)] = 1;
			f->npus++;
		} else if (strstr(v, "Cache") && v[0] == 'L') {
			struct xcache *c = &f->caches[f->ncaches++];
			assert_true(attr(p, end, "depth", v, sizeof v));
			c->level = atoi(v);
			assert_true(attr(p, end, "cache_type", v, sizeof v));
			c->type = atoi(v);
			assert_true(attr(p, end, "cache_size", v, sizeof v));
			c->size = strtoull(v, NULL, 10);
			assert_true(attr(p, end, "cache_linesize", v, sizeof v));
			c->line = atoi(v);
			assert_true(attr(p, end, "cache_associativity", v, sizeof v));
			c->ways = atoi(v) > 0 ? atoi(v) : 0;
			assert_true(attr(p, end, "cpuset", v, sizeof v));
			mask(v, c->cpus);
		}
		p = end;
	}

	/* the OS latency matrix: <distances2 ... kind="5" indexing="os"> */
	for (p = strstr(xml, "<distances2 "); p; p = strstr(p + 1, "<distances2 ")) {
		const char *end = strchr(p, '>');
		assert_true(attr(p, end, "type", v, sizeof v));
		if (strcmp(v, "NUMANode"))
			continue;
		assert_true(attr(p, end, "kind", v, sizeof v));
		if ((atoi(v) & 5) != 5)
			continue;
		assert_true(attr(p, end, "indexing", v, sizeof v));
		assert_string_equal(v, "os");
		assert_true(attr(p, end, "nbobjs", v, sizeof v));
		f->ndist = atoi(v);
		const char *q = strstr(end, "<indexes");
		q = strchr(q, '>') + 1;
		for (int i = 0; i < f->ndist; i++)
			f->dist_id[i] = (int)strtol(q, (char **)&q, 10);
		int k = 0;
		const char *close = strstr(end, "</distances2>");
		for (q = strstr(end, "<u64values"); q && q < close; q = strstr(q, "<u64values")) {
			q = strchr(q, '>') + 1;
			const char *qe = strchr(q, '<');
			while (q < qe) {
				char *e;
				long x = strtol(q, &e, 10);
				if (e == q)
					break;
				f->dist[k++] = x;
				q = e;
				while (*q == ' ' || *q == '\n')
					q++;
			}
		}
		assert_int_equal(k, f->ndist * f->ndist);
		break;
	}
	free(xml);
}

static int count(const unsigned char *bits)
{
	int n = 0;
	for (int i = 0; i < MAXC; i++)
		n += bits[i];
	return n;
}

/* ----------------------------------------------------- generic agreement */

/*
 * nk_machine_load_xml() with stderr sent to a file: the library must not
 * print, whatever hwloc would like to say about a bad file.
 */
static int load_quiet(const char *path, nk_machine **m, nk_error *err)
{
	char tmp[] = "/tmp/nkstderrXXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	dup2(fd, 2);
	int rc = nk_machine_load_xml(path, m, err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	unlink(tmp);
	if (st.st_size)
		fail_msg("%s: the library printed %lld bytes to stderr", path, (long long)st.st_size);
	return rc;
}

static nk_machine *load(const char *path)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	int rc = load_quiet(path, &m, &err);
	if (rc)
		fail_msg("%s: rc %d: %s", path, rc, err.message);
	assert_non_null(m);
	const char *detail = NULL;
	assert_int_equal(nk_machine_source(m, &detail), NK_SOURCE_XML);
	assert_string_equal(detail, path);
	return m;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return (x > y) - (x < y);
}

/* Everything the XML text says must be what the machine says. */
static void check_against_xml(const char *path)
{
	struct xfacts *f = calloc(1, sizeof *f);
	assert_non_null(f);
	scan(path, f);
	nk_machine *m = load(path);

	/* nodes, memory, memory flag */
	assert_int_equal(nk_machine_num_nodes(m), f->nnodes);
	for (int i = 0; i < f->nnodes; i++) {
		uint64_t total = 1, fr = 1;
		int id = f->node_id[i];
		assert_int_equal(nk_machine_node_memory(m, id, &total, &fr), 0);
		assert_int_equal(total, f->node_mem[i]);
		assert_int_equal(fr, 0); /* XML carries no free memory */
		int fl = nk_machine_node_flags(m, id);
		assert_true(fl >= 0);
		assert_int_equal(!!(fl & NK_NODE_HAS_MEMORY), f->node_mem[i] > 0);
		assert_int_equal(!!(fl & NK_NODE_MEM_ALLOWED), f->allowed_nodes[id]);
	}

	/* cpus: exactly the PUs; each on the node with the smallest cpuset
	 * containing it, ordinary memory before special (subtype), then id */
	assert_int_equal(nk_machine_num_cpus(m), f->npus);
	int nallowed = 0;
	for (int cpu = 0; cpu < MAXC; cpu++) {
		if (!f->pu[cpu])
			continue;
		nk_cpu_info ci;
		assert_int_equal(nk_machine_cpu_info(m, cpu, &ci), 0);
		int best = -1;
		for (int i = 0; i < f->nnodes; i++) {
			if (!f->node_cpus[i][cpu])
				continue;
			if (best < 0 || count(f->node_cpus[i]) < count(f->node_cpus[best]) ||
			    (count(f->node_cpus[i]) == count(f->node_cpus[best]) &&
			     (f->node_subtype[i] < f->node_subtype[best] ||
			      (f->node_subtype[i] == f->node_subtype[best] && f->node_id[i] < f->node_id[best]))))
				best = i;
		}
		/* in no node's cpuset: its node is offline, node -1 */
		assert_int_equal(ci.node, best < 0 ? -1 : f->node_id[best]);
		assert_int_equal(ci.allowed, f->allowed_cpus[cpu]);
		nallowed += f->allowed_cpus[cpu];
	}
	assert_int_equal(nk_machine_allowed_cpus(m, NULL, 0), nallowed);

	/* distances */
	for (int i = 0; i < f->nnodes; i++)
		for (int j = 0; j < f->nnodes; j++) {
			int a = f->node_id[i], b = f->node_id[j];
			long want = a == b ? 10 : 20;
			int ia = -1, ib = -1;
			for (int k = 0; k < f->ndist; k++) {
				if (f->dist_id[k] == a)
					ia = k;
				if (f->dist_id[k] == b)
					ib = k;
			}
			if (ia >= 0 && ib >= 0)
				want = f->dist[ia * f->ndist + ib];
			assert_int_equal(nk_machine_distance(m, a, b), want);
		}

	/* caches: the same multiset of (level, type, size, line, ways, cpus) */
	char **want = calloc((size_t)f->ncaches + 1, sizeof *want);
	int nwant = 0;
	for (int i = 0; i < f->ncaches; i++) {
		const struct xcache *c = &f->caches[i];
		int cpus[MAXC], n = 0;
		for (int k = 0; k < MAXC; k++)
			if (c->cpus[k] && f->pu[k])
				cpus[n++] = k;
		if (!n)
			continue; /* no present cpu (restricted topology) */
		char list[2048];
		assert_true(nk_format_list(cpus, (size_t)n, list, sizeof list) >= 0);
		want[nwant] = malloc(2200);
		snprintf(want[nwant++], 2200, "L%d t%d %llu %d %d [%s]", c->level, c->type, c->size, c->line, c->ways,
			 list);
	}
	assert_int_equal(nk_machine_num_caches(m), nwant);
	char **got = calloc((size_t)nwant + 1, sizeof *got);
	for (int i = 0; i < nwant; i++) {
		nk_cache_info ci;
		int cpus[MAXC];
		char list[2048];
		assert_int_equal(nk_machine_cache(m, i, &ci), 0);
		int n = nk_machine_cache_cpus(m, i, cpus, MAXC);
		assert_int_equal(n, ci.num_cpus);
		assert_true(nk_format_list(cpus, (size_t)n, list, sizeof list) >= 0);
		got[i] = malloc(2200);
		snprintf(got[i], 2200, "L%d t%d %llu %d %d [%s]", ci.level, ci.type, (unsigned long long)ci.size,
			 ci.line_size, ci.ways, list);
	}
	qsort(want, (size_t)nwant, sizeof *want, cmp_str);
	qsort(got, (size_t)nwant, sizeof *got, cmp_str);
	for (int i = 0; i < nwant; i++) {
		assert_string_equal(got[i], want[i]);
		free(got[i]);
		free(want[i]);
	}
	free(got);
	free(want);

	/* page sizes: smallest page type is the base, the others huge */
	qsort(f->page_sizes, (size_t)f->npage_sizes, sizeof f->page_sizes[0], cmp_u64);
	uint64_t hp[16];
	assert_int_equal(nk_machine_page_size(m), f->npage_sizes ? f->page_sizes[0] : 4096);
	int nh = nk_machine_huge_page_sizes(m, hp, 16);
	assert_int_equal(nh, f->npage_sizes ? f->npage_sizes - 1 : 0);
	for (int i = 0; i < nh; i++)
		assert_int_equal(hp[i], f->page_sizes[i + 1]);

	/* kernel settings are not in XML */
	nk_kernel_settings ks;
	assert_int_equal(nk_machine_kernel_settings(m, &ks), 0);
	assert_int_equal(ks.numa_balancing, -1);
	assert_int_equal(ks.thp_enabled, NK_THP_UNKNOWN);
	assert_int_equal(ks.thp_defrag, NK_THP_UNKNOWN);
	assert_int_equal(ks.weighted_interleave, -1);

	nk_machine_free(m);
	free(f);
}

static const char *const xml_files[] = {
	XML_DIR "/32amd64-4s2n4c-cgroup2.lstopo-v2.xml",
	XML_DIR "/128arm-2pa2n8cluster4co.xml",
	XML_DIR "/16amd64-8n2c.xml",
	XML_DIR "/16amd64-8n2c-cpusets-disallowed.xml",
	XML_DIR "/2arm-2c.xml",
	XML_DIR "/32amd64-4s2n4c-cgroup2-disallowed.xml",
	XML_DIR "/48amd64-4pa2n6c-sparse.xml",
	XML_DIR "/fakememinitiators-1np2c+1npp+gi.xml",
	XML_DIR "/offline-cpu0-node0.xml",
	XML_DIR "/memoryless-mcdram.xml",
};

static void test_all_agree_with_xml_text(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof xml_files / sizeof xml_files[0]; i++)
		check_against_xml(xml_files[i]);
}

/* ------------------------------------------ literal facts, machine by machine */

static void expect_cpus(const nk_machine *m, int node, const char *list)
{
	int cpus[MAXC];
	char buf[1024];
	int n = nk_machine_node_cpus(m, node, cpus, MAXC);
	assert_true(n >= 0);
	assert_true(nk_format_list(cpus, (size_t)n, buf, sizeof buf) >= 0);
	assert_string_equal(buf, list);
}

static void expect_list(int n, const int *v, const char *list)
{
	char buf[1024];
	assert_true(n >= 0);
	assert_true(nk_format_list(v, (size_t)n, buf, sizeof buf) >= 0);
	assert_string_equal(buf, list);
}

/*
 * hwloc's expected output for the cgroup-v2 machine comes from hwloc 3
 * (<topology version="3.0">), which hwloc 2 refuses: we say so clearly.
 * The copy in tests/data/xml differs only in that attribute ("2.0"); its
 * content is what hwloc 2 writes too.
 */
static void test_newer_xml_version(void **state)
{
	(void)state;
	const char *path = NK_TOPO_DATA "/32amd64-4s2n4c-cgroup2.lstopo.xml";
	nk_machine *m = NULL;
	nk_error err = { 0 };
	char want[600];
	assert_int_equal(load_quiet(path, &m, &err), NK_EVERSION);
	assert_null(m);
	snprintf(want, sizeof want, "%s: hwloc XML version 3 is newer than this hwloc (2.x) reads", path);
	assert_string_equal(err.message, want);
}

/* hwloc's expected output for the cgroup-v2 machine: the process sees nodes
 * 0-5 (cpuset.mems.effective) and cpus 0-5; the XML was written without
 * disallowed resources, so nodes 2-5 keep their memory but show no cpu. */
static void test_cgroup2_expected(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/32amd64-4s2n4c-cgroup2.lstopo-v2.xml");
	int v[64];
	uint64_t total;

	assert_int_equal(nk_machine_num_nodes(m), 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(nk_machine_node_id(m, i), i);
	expect_cpus(m, 0, "0-3");
	expect_cpus(m, 1, "4-5");
	for (int n = 2; n < 6; n++) {
		expect_cpus(m, n, "");
		assert_int_equal(nk_machine_node_flags(m, n) & (NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY),
				 NK_NODE_HAS_MEMORY);
		assert_int_equal(nk_machine_node_memory(m, n, &total, NULL), 0);
		assert_int_equal(total, 17179869184ull);
	}
	assert_int_equal(nk_machine_node_memory(m, 0, &total, NULL), 0);
	assert_int_equal(total, 17177686016ull);
	/* node0/distance in the dump: 10 16 16 22 16 22 16 22 */
	static const int row0[] = { 10, 16, 16, 22, 16, 22 };
	for (int j = 0; j < 6; j++)
		assert_int_equal(nk_machine_distance(m, 0, j), row0[j]);
	expect_list(nk_machine_allowed_nodes(m, v, 64), v, "0-5");
	expect_list(nk_machine_allowed_cpus(m, v, 64), v, "0-5");
	/* L3 5118 KiB shared by cpus 0-3, L2 512 KiB private (cache/index3, index2) */
	int found_l3 = 0;
	for (int i = 0; i < nk_machine_num_caches(m); i++) {
		nk_cache_info ci;
		assert_int_equal(nk_machine_cache(m, i, &ci), 0);
		if (ci.level == 3 && nk_machine_cache_cpus(m, i, v, 64) == 4 && v[0] == 0) {
			assert_int_equal(ci.size, 5240832);
			assert_int_equal(ci.ways, 48);
			found_l3 = 1;
		}
		if (ci.level == 2)
			assert_int_equal(ci.num_cpus, 1);
	}
	assert_true(found_l3);
	assert_int_equal(nk_machine_num_cores(m), 6);
	nk_machine_free(m);
}

static void test_cgroup2_disallowed(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/32amd64-4s2n4c-cgroup2-disallowed.xml");
	int v[64];
	assert_int_equal(nk_machine_num_nodes(m), 8);
	assert_int_equal(nk_machine_num_cpus(m), 32);
	expect_list(nk_machine_allowed_nodes(m, v, 64), v, "0-5");
	expect_list(nk_machine_allowed_cpus(m, v, 64), v, "0-5");
	for (int n = 0; n < 8; n++) {
		int fl = nk_machine_node_flags(m, n);
		assert_int_equal(!!(fl & NK_NODE_MEM_ALLOWED), n < 6);
		assert_int_equal(!!(fl & NK_NODE_CPUS_ALLOWED), n < 2);
		assert_true(fl & NK_NODE_HAS_CPUS);
	}
	nk_machine_free(m);
}

/* Kunpeng 920: the nodeN/distance rows and the four hugepages-* directories. */
static void test_kunpeng(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/128arm-2pa2n8cluster4co.xml");
	static const int d[4][4] = { { 10, 16, 32, 33 }, { 16, 10, 25, 32 }, { 32, 25, 10, 16 }, { 33, 32, 16, 10 } };
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 4; j++)
			assert_int_equal(nk_machine_distance(m, i, j), d[i][j]);
		assert_int_equal(nk_machine_node_cpus(m, i, NULL, 0), 32);
	}
	expect_cpus(m, 0, "0-31");
	expect_cpus(m, 3, "96-127");
	uint64_t hp[8];
	assert_int_equal(nk_machine_huge_page_sizes(m, hp, 8), 4);
	assert_int_equal(hp[0], 64ull << 10);
	assert_int_equal(hp[1], 2ull << 20);
	assert_int_equal(hp[2], 32ull << 20);
	assert_int_equal(hp[3], 1ull << 30);
	/* neighbours by distance: from node 0 row 10 16 32 33, from node 2 row 32 25 10 16 */
	int nb[4];
	assert_int_equal(nk_machine_neighbors(m, 0, nb, 4), 4);
	assert_int_equal(nb[0], 0);
	assert_int_equal(nb[1], 1);
	assert_int_equal(nb[2], 2);
	assert_int_equal(nb[3], 3);
	assert_int_equal(nk_machine_neighbors(m, 2, nb, 4), 4);
	assert_int_equal(nb[0], 2);
	assert_int_equal(nb[1], 3);
	assert_int_equal(nb[2], 1);
	assert_int_equal(nb[3], 0);
	nk_machine_free(m);
}

static void test_sparse(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/48amd64-4pa2n6c-sparse.xml");
	static const int ids[] = { 0, 1, 2, 33, 34, 45, 72, 73 };
	assert_int_equal(nk_machine_num_nodes(m), 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(nk_machine_node_id(m, i), ids[i]);
		assert_int_equal(nk_machine_node_cpus(m, ids[i], NULL, 0), 6);
	}
	expect_cpus(m, 33, "18-23");
	expect_cpus(m, 73, "42-47");
	assert_int_equal(nk_machine_node_flags(m, 3), NK_ENODEV);
	nk_machine_free(m);
}

/* hwloc hides the memoryless cpu nodes 0-3 and the generic initiator 4:
 * cpus land on the DRAM nodes of their group, NVM nodes 7 and 10 are CPU-less. */
static void test_fakememinitiators(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/fakememinitiators-1np2c+1npp+gi.xml");
	int v[16];
	assert_int_equal(nk_machine_num_nodes(m), 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(nk_machine_node_id(m, i), 5 + i);
	expect_cpus(m, 5, "0-1");
	expect_cpus(m, 6, "4-5");
	expect_cpus(m, 8, "2-3");
	expect_cpus(m, 9, "6-7");
	expect_cpus(m, 7, "");
	expect_cpus(m, 10, "");
	assert_int_equal(nk_machine_node_flags(m, 7) & (NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY), NK_NODE_HAS_MEMORY);
	expect_list(nk_machine_allowed_nodes(m, v, 16), v, "5-10");
	assert_int_equal(nk_machine_distance(m, 5, 10), 28);
	assert_int_equal(nk_machine_distance(m, 7, 5), 17);
	nk_machine_free(m);
}

/* Node 0 offline: hwloc leaves its online cpus 4,6,...,20 outside every
 * node (the XML's Package 0 has nodeset 0x0); they get node -1. */
static void test_offline_node(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/offline-cpu0-node0.xml");
	nk_cpu_info ci;
	assert_int_equal(nk_machine_num_nodes(m), 1);
	assert_int_equal(nk_machine_num_cpus(m), 17);
	expect_cpus(m, 1, "5,7,9,11,13,15,17,19");
	assert_int_equal(nk_machine_cpu_info(m, 4, &ci), 0);
	assert_int_equal(ci.node, -1);
	assert_int_equal(ci.package, 0);
	assert_int_equal(nk_machine_cpu_info(m, 5, &ci), 0);
	assert_int_equal(ci.node, 1);
	assert_int_equal(nk_machine_distance(m, 1, 1), 10);
	nk_machine_free(m);
}

/* Hand-made: node 1 has cpus and no memory, MCDRAM node 2 shares node 0's
 * cpuset, node 1 is disallowed, distances are asymmetric and logical order
 * (0, 2, 1) differs from id order. */
static void test_memoryless(void **state)
{
	(void)state;
	nk_machine *m = load(XML_DIR "/memoryless-mcdram.xml");
	int v[16];
	assert_int_equal(nk_machine_num_nodes(m), 3);
	expect_cpus(m, 0, "0-3");
	expect_cpus(m, 1, "4-7");
	expect_cpus(m, 2, "");
	assert_int_equal(nk_machine_node_flags(m, 0), NK_NODE_HAS_CPUS | NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED |
							   NK_NODE_CPUS_ALLOWED);
	assert_int_equal(nk_machine_node_flags(m, 1), NK_NODE_HAS_CPUS | NK_NODE_CPUS_ALLOWED);
	assert_int_equal(nk_machine_node_flags(m, 2), NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED);
	static const int d[3][3] = { { 10, 21, 31 }, { 22, 10, 32 }, { 33, 23, 10 } };
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			assert_int_equal(nk_machine_distance(m, i, j), d[i][j]);
	/* memoryless node 1 is not listed among its own neighbours: row 22 10 32 */
	assert_int_equal(nk_machine_neighbors(m, 1, v, 16), 2);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 2);
	assert_int_equal(nk_machine_num_cores(m), 4);
	uint64_t hp[4];
	assert_int_equal(nk_machine_huge_page_sizes(m, hp, 4), 1);
	assert_int_equal(hp[0], 2ull << 20);
	nk_machine_free(m);
}

/* ------------------------------------------------------------------ errors */

static void test_missing_file(void **state)
{
	(void)state;
	nk_machine *m = (nk_machine *)0x1;
	nk_error err = { 0 };
	assert_int_equal(nk_machine_load_xml("/nonexistent/dir/x.xml", &m, &err), NK_ENOENT);
	assert_int_equal(err.code, NK_ENOENT);
	assert_string_equal(err.message, "/nonexistent/dir/x.xml: no such file");
	assert_ptr_equal(m, (nk_machine *)0x1);
	assert_int_equal(nk_machine_load_xml(NULL, &m, NULL), NK_EINVAL);
	assert_int_equal(nk_machine_load_xml(XML_DIR "/2arm-2c.xml", NULL, NULL), NK_EINVAL);
}

static void expect_parse_error(const char *text, size_t len)
{
	char *path = nk_test_tmpfile(text, len);
	nk_machine *m = NULL;
	nk_error err = { 0 };
	int rc = load_quiet(path, &m, &err);
	if (rc != NK_EPARSE)
		fail_msg("length %zu: rc %d (%s)", len, rc, err.message);
	assert_null(m);
	char want[600];
	snprintf(want, sizeof want, "%s: not a valid hwloc XML topology", path);
	assert_string_equal(err.message, want);
	unlink(path);
	free(path);
}

static void test_not_xml(void **state)
{
	(void)state;
	expect_parse_error("", 0);
	expect_parse_error("hello\n", 6);
	expect_parse_error("<?xml version=\"1.0\"?>\n<notatopology/>\n", 38);
	expect_parse_error("{\"version\": 1}", 14);
	expect_parse_error("\0\0\0\0", 4);
	/* a directory exists but cannot be read as a file */
	nk_machine *m = NULL;
	assert_int_equal(nk_machine_load_xml(XML_DIR, &m, NULL), NK_EIO);
	assert_null(m);
}

/* Every cut before the closing </topology> must fail cleanly; cuts after it
 * (only trailing whitespace lost) must load. */
static void truncations(const char *file, size_t step)
{
	char *xml = nk_test_slurp(file);
	size_t len = strlen(xml);
	const char *close = strstr(xml, "</topology>");
	assert_non_null(close);
	size_t valid_from = (size_t)(close - xml) + strlen("</topology>");
	for (size_t n = 0; n < len; n++) {
		if (n < valid_from) {
			if (n % step && n + 1 != valid_from)
				continue;
			expect_parse_error(xml, n);
		} else {
			char *path = nk_test_tmpfile(xml, n);
			nk_machine *m = NULL;
			assert_int_equal(load_quiet(path, &m, NULL), 0);
			nk_machine_free(m);
			unlink(path);
			free(path);
		}
	}
	free(xml);
}

static void test_truncated_small_every_length(void **state)
{
	(void)state;
	truncations(XML_DIR "/2arm-2c.xml", 1);
	truncations(XML_DIR "/memoryless-mcdram.xml", 1);
}

static void test_truncated_large(void **state)
{
	(void)state;
	truncations(XML_DIR "/128arm-2pa2n8cluster4co.xml", 397);
	truncations(XML_DIR "/32amd64-4s2n4c-cgroup2.lstopo-v2.xml", 13);
}

/* Byte flips and inconsistent values: any result but a crash or a print;
 * a failure is NK_EPARSE and leaves the output alone. */
static void test_corrupt(void **state)
{
	(void)state;
	char *xml = nk_test_slurp(XML_DIR "/memoryless-mcdram.xml");
	size_t len = strlen(xml);
	static const char flips[] = { '<', '>', '"', '0', 'f', '/', ' ', 'x', '-', '9' };
	unsigned seed = 12345;
	for (int it = 0; it < 600; it++) {
		char *copy = malloc(len);
		memcpy(copy, xml, len);
		for (int k = 0; k < 1 + it % 3; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t pos = (seed >> 8) % len;
			copy[pos] = flips[(seed >> 4) % sizeof flips];
		}
		char *path = nk_test_tmpfile(copy, len);
		nk_machine *m = NULL;
		int rc = load_quiet(path, &m, NULL);
		if (rc) {
			assert_int_equal(rc, NK_EPARSE);
			assert_null(m);
		} else {
			assert_true(nk_machine_num_nodes(m) >= 1);
			nk_machine_free(m);
		}
		unlink(path);
		free(path);
		free(copy);
	}

	/* targeted inconsistencies */
	static const struct {
		const char *from, *to;
	} edits[] = {
		{ "<u64values length=\"27\">10 21 31", "<u64values length=\"27\">0 21 31" },
		{ "<u64values length=\"27\">10 21 31", "<u64values length=\"27\">10 2100 31" },
		{ "<page_type size=\"4096\"", "<page_type size=\"4095\"" },
		{ "os_index=\"2\" subtype", "os_index=\"0\" subtype" },
		{ "os_index=\"2\" subtype", "os_index=\"99999999\" subtype" },
		{ "depth=\"2\"", "depth=\"42\"" },
		/* each of these crashed hwloc 2.9's importer before numakit's precheck */
		{ "<object type=\"Core\" os_index=\"1\" cpuset=\"0x0000000c\" complete_cpuset",
		  "<object type=\"Core\" os_index=\"1\" cpuset=\"0x0000000c\" complfte_cpuset" },
		{ "<object type=\"PU\" os_index=\"3\" cpuset=\"0x00000008\" complete_cpuset=\"0x00000008\"",
		  "<object type=\"PU\" os_index=\"3\" cpuset=\"0x00000008\" complete_cpuset=\"0x00000\n008\"" },
		{ "<object type=\"PU\" os_index=\"3\" cpuset=\"0x00000008\"",
		  "<object type=\"PU\" os_index=\"3\" cpuset=\",x00000008\"" },
		{ "<topology version=\"2.0\">", "<topology version=\"2.0\"" },
	};
	for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
		const char *at = strstr(xml, edits[i].from);
		assert_non_null(at);
		size_t pre = (size_t)(at - xml), fl = strlen(edits[i].from), tl = strlen(edits[i].to);
		char *copy = malloc(len - fl + tl + 1);
		memcpy(copy, xml, pre);
		memcpy(copy + pre, edits[i].to, tl);
		memcpy(copy + pre + tl, at + fl, len - pre - fl);
		char *path = nk_test_tmpfile(copy, len - fl + tl);
		nk_machine *m = NULL;
		nk_error err = { 0 };
		int rc = load_quiet(path, &m, &err);
		if (rc != NK_EPARSE)
			fail_msg("edit %zu: rc %d", i, rc);
		assert_null(m);
		assert_non_null(strstr(err.message, path));
		unlink(path);
		free(path);
		free(copy);
	}
	free(xml);
}

int main(void)
{
	/* hwloc consults these when a topology is loaded; the tests want only
	 * the XML file they name. */
	unsetenv("HWLOC_XMLFILE");
	unsetenv("HWLOC_FSROOT");
	unsetenv("HWLOC_SYNTHETIC");
	unsetenv("HWLOC_COMPONENTS");
	unsetenv("HWLOC_XML_VERBOSE");
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_all_agree_with_xml_text),
		cmocka_unit_test(test_newer_xml_version),
		cmocka_unit_test(test_cgroup2_expected),
		cmocka_unit_test(test_cgroup2_disallowed),
		cmocka_unit_test(test_kunpeng),
		cmocka_unit_test(test_sparse),
		cmocka_unit_test(test_fakememinitiators),
		cmocka_unit_test(test_offline_node),
		cmocka_unit_test(test_memoryless),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_xml),
		cmocka_unit_test(test_truncated_small_every_length),
		cmocka_unit_test(test_truncated_large),
		cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
