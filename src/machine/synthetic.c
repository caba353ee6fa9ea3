/* SPDX-License-Identifier: BSD-3-Clause
 * Synthetic machines: a one-line description ("nodes=4 cores=2 smt=2
 * dist=10:21 l3=16M") turned into an nk_machine.  They let tests and the CLI
 * describe any topology (sparse ids, memoryless and CPU-less nodes,
 * asymmetric distances) without owning such a machine.  The grammar is
 * documented in docs/formats.md; every error names the offending token.
 */
#include "machine/machine_impl.h"
#include "util/error.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Upper bounds that keep a typo from asking for gigabytes: real machines
 * stay far below them (Linux's NR_CPUS is at most 8192 on common configs).
 */
#define SYN_MAX_CORES 4096
#define SYN_MAX_SMT 64
#define SYN_MAX_CPUS 65536
#define SYN_MAX_DIST 1000 /* nk__machine_finalize's range */

enum syn_key {
	K_NODES,
	K_CORES,
	K_SMT,
	K_PACKAGES,
	K_MEM,
	K_MEMLESS,
	K_CPULESS,
	K_IDS,
	K_DIST,
	K_L1,
	K_L2,
	K_L3,
	K_PAGESIZE,
	K_HUGEPAGES,
	K_NUMA_BALANCING,
	K_THP,
	K_WI,
	K_ALLOWED_CPUS,
	K_ALLOWED_NODES,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	[K_NODES] = "nodes",
	[K_CORES] = "cores",
	[K_SMT] = "smt",
	[K_PACKAGES] = "packages",
	[K_MEM] = "mem",
	[K_MEMLESS] = "memless",
	[K_CPULESS] = "cpuless",
	[K_IDS] = "ids",
	[K_DIST] = "dist",
	[K_L1] = "l1",
	[K_L2] = "l2",
	[K_L3] = "l3",
	[K_PAGESIZE] = "pagesize",
	[K_HUGEPAGES] = "hugepages",
	[K_NUMA_BALANCING] = "numa_balancing",
	[K_THP] = "thp",
	[K_WI] = "wi",
	[K_ALLOWED_CPUS] = "allowed_cpus",
	[K_ALLOWED_NODES] = "allowed_nodes",
};

/* The parsed description: for each key the whole token (for messages) and its value. */
struct syn_desc {
	const char *tok[K_COUNT];
	const char *val[K_COUNT];
};

static int syn_fail(nk_error *err, int code, const char *tok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One message shape for every error: synthetic: "TOKEN": problem. */
static int syn_fail(nk_error *err, int code, const char *tok, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (!tok)
		return nk__error(err, code, "synthetic: %s", why);
	return nk__error(err, code, "synthetic: \"%.120s%s\": %s", tok, strlen(tok) > 120 ? "..." : "", why);
}

/* Strict decimal in [lo, hi] covering [s, e): no sign, no spaces, no overflow. */
static int parse_num(const char *s, const char *e, long lo, long hi, long *out)
{
	long v = 0;

	if (s >= e)
		return -1;
	for (; s < e; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		if (v > (LONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int num_value(const struct syn_desc *d, int k, long lo, long hi, long dflt, long *out, nk_error *err)
{
	if (!d->val[k]) {
		*out = dflt;
		return 0;
	}
	if (parse_num(d->val[k], d->val[k] + strlen(d->val[k]), lo, hi, out))
		return syn_fail(err, NK_EPARSE, d->tok[k], "expected an integer in %ld..%ld", lo, hi);
	return 0;
}

/* A size in bytes; 0 when the key is absent.  Sizes must fit JSON's int64. */
static int size_value(const struct syn_desc *d, int k, unsigned long long dflt, unsigned long long *out,
		      nk_error *err)
{
	unsigned long long v;

	if (!d->val[k]) {
		*out = dflt;
		return 0;
	}
	if (nk__parse_size(d->val[k], &v) || v > (unsigned long long)INT64_MAX)
		return syn_fail(err, NK_EPARSE, d->tok[k], "expected a size such as 4096, 64K, 2M or 1G");
	if (!v)
		return syn_fail(err, NK_EPARSE, d->tok[k], "size must be positive");
	*out = v;
	return 0;
}

/* A list of node indices (0..n-1) as a 0/1 mark per index. */
static int index_set(const struct syn_desc *d, int k, int n, char *mark, nk_error *err)
{
	nk__ilist l = { 0 };
	char why[200];
	int rc;

	if (!d->val[k])
		return 0;
	rc = nk__parse_list(d->val[k], &l, why, sizeof why);
	if (rc)
		return syn_fail(err, rc, d->tok[k], "%s", why);
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i] >= n) {
			rc = syn_fail(err, NK_EPARSE, d->tok[k], "node index %d out of range 0..%d", l.v[i], n - 1);
			goto out;
		}
		mark[l.v[i]] = 1;
	}
out:
	nk__ilist_free(&l);
	return rc;
}

/* Split the description into key=value tokens; rejects unknown and repeated keys. */
static int tokenize(char *s, struct syn_desc *d, nk_error *err)
{
	char *p = s;

	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		char *tok = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = '\0';
		char *eq = strchr(tok, '=');
		if (!eq)
			return syn_fail(err, NK_EPARSE, tok, "expected key=value");
		size_t klen = (size_t)(eq - tok);
		int k;
		for (k = 0; k < K_COUNT; k++)
			if (strlen(key_names[k]) == klen && !memcmp(key_names[k], tok, klen))
				break;
		if (k == K_COUNT)
			return syn_fail(err, NK_EPARSE, tok, "unknown key \"%.*s\"", (int)(klen > 40 ? 40 : klen), tok);
		if (d->tok[k])
			return syn_fail(err, NK_EPARSE, tok, "key \"%s\" given twice", key_names[k]);
		if (!eq[1])
			return syn_fail(err, NK_EPARSE, tok, "empty value");
		d->tok[k] = tok;
		d->val[k] = eq + 1;
	}
	if (!d->tok[K_NODES])
		return syn_fail(err, NK_EPARSE, NULL, "\"nodes=N\" is required");
	return 0;
}

/* No distance from a node to another below its distance to itself: memory elsewhere is never nearer
 * (ACPI's SLIT: 10 to itself, more to others; the kernel and hwloc take what they are given). */
static int check_dist(const char *tok, int n, const int *dist, nk_error *err)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && dist[i * n + j] < dist[i * n + i])
				return syn_fail(err, NK_EPARSE, tok, "from node index %d to %d: distance %d is below "
						"its distance to itself, %d (a remote distance is at least the local one)",
						i, j, dist[i * n + j], dist[i * n + i]);
	return 0;
}

/* dist=L:R (uniform) or dist=a,b,c/d,e,f/... (full matrix, row = from, index order). */
static int parse_dist(const struct syn_desc *d, int n, int *dist, nk_error *err)
{
	const char *tok = d->tok[K_DIST], *v = d->val[K_DIST];
	const char *colon = strchr(v, ':');
	long x, y;

	if (colon) {
		if (parse_num(v, colon, 1, SYN_MAX_DIST, &x) ||
		    parse_num(colon + 1, colon + strlen(colon), 1, SYN_MAX_DIST, &y))
			return syn_fail(err, NK_EPARSE, tok, "expected LOCAL:REMOTE, each in 1..%d", SYN_MAX_DIST);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				dist[i * n + j] = (int)(i == j ? x : y);
		return check_dist(tok, n, dist, err);
	}

	long rows = 1;
	for (const char *p = v; *p; p++)
		rows += *p == '/';
	if (rows != n)
		return syn_fail(err, NK_EPARSE, tok, "expected %d row%s, found %ld", n, n == 1 ? "" : "s", rows);
	const char *p = v;
	for (int i = 0; i < n; i++) {
		const char *re = strchr(p, '/');
		if (!re)
			re = p + strlen(p);
		long cols = 1;
		for (const char *q = p; q < re; q++)
			cols += *q == ',';
		if (cols != n)
			return syn_fail(err, NK_EPARSE, tok, "row %d: expected %d value%s, found %ld", i + 1, n,
					n == 1 ? "" : "s", cols);
		const char *q = p;
		for (int j = 0; j < n; j++) {
			const char *ce = memchr(q, ',', (size_t)(re - q));
			if (!ce)
				ce = re;
			if (parse_num(q, ce, 1, SYN_MAX_DIST, &x))
				return syn_fail(err, NK_EPARSE, tok, "row %d value %d: \"%.*s\" is not a distance in 1..%d",
						i + 1, j + 1, (int)(ce - q > 20 ? 20 : ce - q), q, SYN_MAX_DIST);
			dist[i * n + j] = (int)x;
			q = ce + 1;
		}
		p = re + 1;
	}
	return check_dist(tok, n, dist, err);
}

/* A list of OS ids that must all name existing cpus (is_cpu) or nodes. */
static int allowed_set(const struct syn_desc *d, int k, const struct nk_machine *m, int is_cpu, nk__ilist *out,
		       nk_error *err)
{
	char why[200];
	int rc;

	if (!d->val[k])
		return 0;
	rc = nk__parse_list(d->val[k], out, why, sizeof why);
	if (rc)
		return syn_fail(err, rc, d->tok[k], "%s", why);
	for (size_t i = 0; i < out->n; i++) {
		/* cpus and nodes were created in increasing id order, so the
		 * binary searches work before finalize has sorted anything */
		int id = out->v[i];
		if ((is_cpu ? nk__cpu_idx(m, id) : nk__node_idx(m, id)) < 0)
			return syn_fail(err, NK_EPARSE, d->tok[k], "no %s %d on this machine", is_cpu ? "cpu" : "node",
					id);
	}
	return 0;
}

static int add_cache(struct nk_machine *m, int level, int type, unsigned long long size, int first, int count)
{
	struct nk__cache *c;
	int rc = nk__machine_add_cache(m, &c);

	if (rc)
		return rc;
	c->level = level;
	c->type = type;
	c->size = size;
	c->line_size = 64;
	c->ways = 0; /* a description has no associativity to offer */
	for (int i = 0; i < count; i++)
		if (nk__ilist_push(&c->cpus, first + i))
			return NK_ENOMEM;
	return 0;
}

static int build(const struct syn_desc *d, struct nk_machine *m, nk_error *err)
{
	long n, cores, smt, packages, nb;
	unsigned long long mem, l1, l2, l3, pagesize;
	char *memless = NULL, *cpuless = NULL;
	nk__ilist ids = { 0 };
	char why[200];
	int rc;

	if ((rc = num_value(d, K_NODES, 1, NK__MAX_NODES, 1, &n, err)))
		return rc;
	/* One package per node unless told otherwise: that is what most
	 * two-socket machines without sub-NUMA clustering look like. */
	if ((rc = num_value(d, K_CORES, 0, SYN_MAX_CORES, 1, &cores, err)) ||
	    (rc = num_value(d, K_SMT, 1, SYN_MAX_SMT, 1, &smt, err)) ||
	    (rc = num_value(d, K_PACKAGES, 1, n, n, &packages, err)) ||
	    (rc = size_value(d, K_MEM, 1ULL << 30, &mem, err)) ||
	    (rc = size_value(d, K_L1, 0, &l1, err)) || (rc = size_value(d, K_L2, 0, &l2, err)) ||
	    (rc = size_value(d, K_L3, 0, &l3, err)) || (rc = size_value(d, K_PAGESIZE, 4096, &pagesize, err)) ||
	    (rc = num_value(d, K_NUMA_BALANCING, 0, 3, -1, &nb, err)))
		return rc;
	if (n % packages)
		return syn_fail(err, NK_EPARSE, d->tok[K_PACKAGES], "%ld nodes do not split evenly into %ld packages", n,
				packages);
	if (pagesize & (pagesize - 1))
		return syn_fail(err, NK_EPARSE, d->tok[K_PAGESIZE], "page size must be a power of two");

	memless = calloc((size_t)n, 1);
	cpuless = calloc((size_t)n, 1);
	if (!memless || !cpuless) {
		rc = nk__error(err, NK_ENOMEM, "synthetic: out of memory");
		goto out;
	}
	if ((rc = index_set(d, K_MEMLESS, (int)n, memless, err)) || (rc = index_set(d, K_CPULESS, (int)n, cpuless, err)))
		goto out;
	long ncpu_nodes = 0;
	for (long i = 0; i < n; i++) {
		if (memless[i] && cpuless[i]) {
			rc = syn_fail(err, NK_EPARSE, d->tok[K_CPULESS],
				      "node index %ld is also memless: a node needs cpus or memory", i);
			goto out;
		}
		ncpu_nodes += !cpuless[i];
	}
	long nmem_nodes = 0;
	for (long i = 0; i < n; i++)
		nmem_nodes += !memless[i];
	if (!nmem_nodes) {
		rc = syn_fail(err, NK_EPARSE, d->tok[K_MEMLESS], "every node is memless: a machine needs memory on one "
				"node at least");
		goto out;
	}
	if (cores == 0 && ncpu_nodes) {
		rc = syn_fail(err, NK_EPARSE, d->tok[K_CORES],
			      "nodes without cores must be listed in cpuless= instead");
		goto out;
	}
	if (!ncpu_nodes) {
		rc = syn_fail(err, NK_EPARSE, d->tok[K_CPULESS], "every node is CPU-less; a machine needs a cpu");
		goto out;
	}
	if (ncpu_nodes * cores * smt > SYN_MAX_CPUS) {
		rc = syn_fail(err, NK_EPARSE, d->tok[K_CORES] ? d->tok[K_CORES] : d->tok[K_NODES],
			      "%ld cpus is more than the limit of %d", ncpu_nodes * cores * smt, SYN_MAX_CPUS);
		goto out;
	}

	if (d->val[K_IDS]) {
		rc = nk__parse_list(d->val[K_IDS], &ids, why, sizeof why);
		if (rc) {
			rc = syn_fail(err, rc, d->tok[K_IDS], "%s", why);
			goto out;
		}
		if (ids.n != (size_t)n) {
			rc = syn_fail(err, NK_EPARSE, d->tok[K_IDS], "expected %ld distinct node ids, found %zu", n,
				      ids.n);
			goto out;
		}
	}

	/* Nodes in index order; finalize keeps that order because ids increase. */
	int cpu = 0;
	for (long i = 0; i < n; i++) {
		struct nk__node *nd;
		rc = nk__machine_add_node(m, ids.n ? ids.v[i] : (int)i, &nd);
		if (rc) {
			rc = nk__error(err, rc, "synthetic: out of memory");
			goto out;
		}
		nd->mem_total = memless[i] ? 0 : mem;
		nd->mem_free = nd->mem_total;
		nd->has_memory_hint = !memless[i];
		if (cpuless[i])
			continue;
		int package = (int)(i / (n / packages));
		int node_first = cpu;
		for (long c = 0; c < cores; c++) {
			int core_first = cpu;
			for (long t = 0; t < smt; t++) {
				struct nk__cpu *pc;
				rc = nk__machine_add_cpu(m, cpu++, &pc);
				if (rc) {
					rc = nk__error(err, rc, "synthetic: out of memory");
					goto out;
				}
				pc->node = nd->id;
				pc->package = package;
				/* Without SMT every cpu is its own core, which is what
				 * core_key -1 says, and it spares finalize a search. */
				pc->core_key = smt > 1 ? (long)i * cores + c : -1;
			}
			if ((l1 && (rc = add_cache(m, 1, NK_CACHE_DATA, l1, core_first, (int)smt))) ||
			    (l2 && (rc = add_cache(m, 2, NK_CACHE_UNIFIED, l2, core_first, (int)smt)))) {
				rc = nk__error(err, rc, "synthetic: out of memory");
				goto out;
			}
		}
		if (l3 && (rc = add_cache(m, 3, NK_CACHE_UNIFIED, l3, node_first, cpu - node_first))) {
			rc = nk__error(err, rc, "synthetic: out of memory");
			goto out;
		}
	}

	if (d->val[K_DIST]) {
		m->dist = malloc((size_t)n * (size_t)n * sizeof *m->dist);
		if (!m->dist) {
			rc = nk__error(err, NK_ENOMEM, "synthetic: out of memory");
			goto out;
		}
		if ((rc = parse_dist(d, (int)n, m->dist, err)))
			goto out;
	}
	/* else finalize's default, 10 local and 20 remote */

	m->page_size = pagesize;
	if (!d->val[K_HUGEPAGES]) {
		rc = nk__ilist_push(&m->huge_kb, 2048);
	} else if (strcmp(d->val[K_HUGEPAGES], "none")) {
		const char *p = d->val[K_HUGEPAGES];
		for (;;) {
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);
			char buf[32];
			unsigned long long v = 0;
			int bad = len >= sizeof buf;
			if (!bad) {
				memcpy(buf, p, len);
				buf[len] = '\0';
				bad = nk__parse_size(buf, &v) || v % 1024 || v / 1024 > INT_MAX || v <= pagesize;
			}
			if (bad) {
				rc = syn_fail(err, NK_EPARSE, d->tok[K_HUGEPAGES],
					      "\"%.*s\" is not a huge page size (a multiple of 1K above the page size)",
					      (int)(len > 20 ? 20 : len), p);
				goto out;
			}
			if ((rc = nk__ilist_push(&m->huge_kb, (int)(v / 1024))))
				break;
			if (!e)
				break;
			p = e + 1;
		}
	}
	if (rc) {
		rc = nk__error(err, rc, "synthetic: out of memory");
		goto out;
	}

	m->kernel.numa_balancing = (int)nb;
	if (d->val[K_THP]) {
		const char *t = d->val[K_THP];
		if (!strcmp(t, "always"))
			m->kernel.thp_enabled = NK_THP_ALWAYS;
		else if (!strcmp(t, "madvise"))
			m->kernel.thp_enabled = NK_THP_MADVISE;
		else if (!strcmp(t, "never"))
			m->kernel.thp_enabled = NK_THP_NEVER;
		else {
			rc = syn_fail(err, NK_EPARSE, d->tok[K_THP], "expected always, madvise or never");
			goto out;
		}
	}
	if (d->val[K_WI]) {
		const char *p = d->val[K_WI];
		long found = 1;
		for (const char *q = p; *q; q++)
			found += *q == ',';
		if (found != n) {
			rc = syn_fail(err, NK_EPARSE, d->tok[K_WI], "expected %ld weight%s, found %ld", n,
				      n == 1 ? "" : "s", found);
			goto out;
		}
		for (long i = 0; i < n; i++) {
			const char *e = strchr(p, ',');
			long w;
			if (!e)
				e = p + strlen(p);
			if (parse_num(p, e, 1, 255, &w)) {
				rc = syn_fail(err, NK_EPARSE, d->tok[K_WI], "weight %ld: expected an integer in 1..255",
					      i + 1);
				goto out;
			}
			m->nodes[i].wi_weight = (int)w;
			p = e + 1;
		}
		m->kernel.weighted_interleave = 1;
	}

	if ((rc = allowed_set(d, K_ALLOWED_CPUS, m, 1, &m->allowed_cpus, err)) ||
	    (rc = allowed_set(d, K_ALLOWED_NODES, m, 0, &m->allowed_nodes, err)))
		goto out;

	rc = nk__machine_finalize(m, "synthetic", err);
out:
	nk__ilist_free(&ids);
	free(memless);
	free(cpuless);
	return rc;
}

int nk_machine_load_synthetic(const char *desc, nk_machine **out, nk_error *err)
{
	struct syn_desc d = { 0 };
	struct nk_machine *m = NULL;
	char *copy = NULL;
	int rc;

	if (!desc || !out)
		return nk__error(err, NK_EINVAL, "synthetic: NULL argument");
	copy = strdup(desc);
	m = nk__machine_new(NK_SOURCE_SYNTHETIC, desc);
	if (!copy || !m) {
		rc = nk__error(err, NK_ENOMEM, "synthetic: out of memory");
		goto out;
	}
	rc = tokenize(copy, &d, err);
	if (rc)
		goto out;
	rc = build(&d, m, err);
	if (rc)
		goto out;
	*out = m;
	m = NULL;
out:
	nk_machine_free(m);
	free(copy);
	return rc;
}
