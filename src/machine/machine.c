/* SPDX-License-Identifier: BSD-3-Clause */
/* The machine model: construction helpers, the one invariant checker, accessors. */
#include "machine/machine_impl.h"
#include "util/cmp.h"
#include "util/error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nk_machine *nk__machine_new(int source, const char *detail)
{
	struct nk_machine *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->source = source;
	m->source_detail = strdup(detail ? detail : "");
	if (!m->source_detail) {
		free(m);
		return NULL;
	}
	m->kernel.numa_balancing = -1;
	m->kernel.thp_enabled = NK_THP_UNKNOWN;
	m->kernel.thp_defrag = NK_THP_UNKNOWN;
	m->kernel.weighted_interleave = -1;
	return m;
}

void nk_machine_free(nk_machine *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nnodes; i++)
		nk__ilist_free(&m->nodes[i].cpus);
	for (int i = 0; i < m->ncaches; i++)
		nk__ilist_free(&m->caches[i].cpus);
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++)
		free(m->matrix[k]);
	nk__ilist_free(&m->allowed_cpus);
	nk__ilist_free(&m->allowed_nodes);
	nk__ilist_free(&m->cpuset_cpus);
	nk__ilist_free(&m->huge_kb);
	for (int i = 0; i < m->nnotes; i++)
		free(m->notes[i]);
	free(m->notes);
	free(m->nodes);
	free(m->dist);
	free(m->cpus);
	free(m->caches);
	free(m->source_detail);
	free(m);
}

/* Grow an array by one zeroed element; capacity doubles at powers of two. */
static void *grow(void *arr, int n, size_t elem)
{
	if (n & (n - 1) && n > 0)
		return arr; /* not a power of two: room is left */
	size_t ncap = n ? (size_t)n * 2 : 4;
	return realloc(arr, ncap * elem);
}

int nk__machine_add_node(struct nk_machine *m, int id, struct nk__node **out)
{
	if (m->nnodes >= NK__MAX_NODES)
		return NK_ERANGE;
	struct nk__node *v = grow(m->nodes, m->nnodes, sizeof *v);
	if (!v)
		return NK_ENOMEM;
	m->nodes = v;
	struct nk__node *n = &v[m->nnodes++];
	memset(n, 0, sizeof *n);
	n->id = id;
	n->has_memory_hint = -1;
	if (out)
		*out = n;
	return 0;
}

int nk__machine_add_cpu(struct nk_machine *m, int id, struct nk__cpu **out)
{
	struct nk__cpu *v = grow(m->cpus, m->ncpus, sizeof *v);
	if (!v)
		return NK_ENOMEM;
	m->cpus = v;
	struct nk__cpu *c = &v[m->ncpus++];
	memset(c, 0, sizeof *c);
	c->id = id;
	c->node = -1;
	c->package = -1;
	c->core_key = -1;
	if (out)
		*out = c;
	return 0;
}

int nk__machine_add_cache(struct nk_machine *m, struct nk__cache **out)
{
	struct nk__cache *v = grow(m->caches, m->ncaches, sizeof *v);
	if (!v)
		return NK_ENOMEM;
	m->caches = v;
	struct nk__cache *c = &v[m->ncaches++];
	memset(c, 0, sizeof *c);
	if (out)
		*out = c;
	return 0;
}

int nk__machine_add_note(struct nk_machine *m, const char *fmt, ...)
{
	va_list ap;
	char *line, **nv;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0 || !(line = malloc((size_t)len + 1)))
		return NK_ENOMEM;
	va_start(ap, fmt);
	vsnprintf(line, (size_t)len + 1, fmt, ap);
	va_end(ap);
	nv = realloc(m->notes, ((size_t)m->nnotes + 1) * sizeof *nv);
	if (!nv) {
		free(line);
		return NK_ENOMEM;
	}
	m->notes = nv;
	m->notes[m->nnotes++] = line;
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	return NK__CMP(((const struct nk__node *)a)->id, ((const struct nk__node *)b)->id);
}

static int cmp_cpu(const void *a, const void *b)
{
	return NK__CMP(((const struct nk__cpu *)a)->id, ((const struct nk__cpu *)b)->id);
}

/* nodes[] and cpus[] are sorted by id (finalize) */
/* Both lookups try the index equal to the id first: ids are usually dense, and the reports look up
 * every pair of nodes (n^2 lookups), where the binary search was most of the time at 4096 nodes. */
int nk__node_idx(const struct nk_machine *m, int id)
{
	if (id >= 0 && id < m->nnodes && m->nodes[id].id == id)
		return id;
	const struct nk__node key = { .id = id };
	const struct nk__node *n = m->nnodes > 0 ? bsearch(&key, m->nodes, (size_t)m->nnodes, sizeof key, cmp_node) : NULL;
	return n ? (int)(n - m->nodes) : -1;
}

int nk__cpu_idx(const struct nk_machine *m, int id)
{
	if (id >= 0 && id < m->ncpus && m->cpus[id].id == id)
		return id;
	const struct nk__cpu key = { .id = id };
	const struct nk__cpu *c = m->ncpus > 0 ? bsearch(&key, m->cpus, (size_t)m->ncpus, sizeof key, cmp_cpu) : NULL;
	return c ? (int)(c - m->cpus) : -1;
}

/* C11 qsort has no context argument: the array being sorted is passed
 * through a thread-local, so concurrent loads in different threads are safe. */
static _Thread_local const struct nk__cpu *core_sort_base;

static int same_core(const struct nk__cpu *x, const struct nk__cpu *y)
{
	return x->core_key >= 0 && x->core_key == y->core_key && x->package == y->package && x->node == y->node;
}

static int cmp_core_key(const void *a, const void *b)
{
	const struct nk__cpu *x = &core_sort_base[*(const int *)a], *y = &core_sort_base[*(const int *)b];
	int c;
	if ((c = NK__CMP(x->node, y->node)) || (c = NK__CMP(x->package, y->package)) ||
	    (c = NK__CMP(x->core_key, y->core_key)))
		return c;
	return NK__CMP(x->id, y->id);
}

static int cmp_cache(const void *a, const void *b)
{
	const struct nk__cache *x = a, *y = b;
	if (x->level != y->level)
		return x->level - y->level;
	int fx = x->cpus.n ? x->cpus.v[0] : -1, fy = y->cpus.n ? y->cpus.v[0] : -1;
	if (fx != fy)
		return (fx > fy) - (fx < fy);
	return x->type - y->type;
}

/* Keep only the ids of @p l present in @p m (cpus when is_cpu, nodes otherwise). */
static void keep_present(const struct nk_machine *m, nk__ilist *l, int is_cpu)
{
	size_t j = 0;
	for (size_t i = 0; i < l->n; i++)
		if ((is_cpu ? nk__cpu_idx(m, l->v[i]) : nk__node_idx(m, l->v[i])) >= 0)
			l->v[j++] = l->v[i];
	l->n = j;
}

int nk__machine_finalize(struct nk_machine *m, const char *what, nk_error *err)
{
	int n = m->nnodes;

	if (n <= 0)
		return nk__error(err, NK_EPARSE, "%s: no NUMA node found", what);
	if (m->ncpus <= 0)
		return nk__error(err, NK_EPARSE, "%s: no online cpu found", what);

	/* Sorting permutes nodes, so a distance matrix given in builder order
	 * must be permuted too: builders always hand nodes in the order their
	 * matrix uses, and we remember it. */
	int *order = malloc((size_t)n * sizeof *order);
	if (!order)
		return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	for (int i = 0; i < n; i++)
		order[i] = m->nodes[i].id;
	qsort(m->nodes, (size_t)n, sizeof *m->nodes, cmp_node);
	for (int i = 0; i < n; i++) {
		if (m->nodes[i].id < 0 || m->nodes[i].id > NK__MAX_ID) {
			free(order);
			return nk__error(err, NK_EPARSE, "%s: node id %d out of range", what, m->nodes[i].id);
		}
		if (i && m->nodes[i].id == m->nodes[i - 1].id) {
			free(order);
			return nk__error(err, NK_EPARSE, "%s: node %d listed twice", what, m->nodes[i].id);
		}
	}
	if (m->dist) {
		int *nd = malloc((size_t)n * (size_t)n * sizeof *nd);
		if (!nd) {
			free(order);
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		}
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				int a = nk__node_idx(m, order[i]), b = nk__node_idx(m, order[j]);
				nd[a * n + b] = m->dist[i * n + j];
			}
		free(m->dist);
		m->dist = nd;
		for (int i = 0; i < n * n; i++)
			if (m->dist[i] <= 0 || m->dist[i] > 1000) {
				free(order);
				return nk__error(err, NK_EPARSE, "%s: distance %d from node %d to node %d is out of range 1..1000",
						 what, m->dist[i], m->nodes[i / n].id, m->nodes[i % n].id);
			}
	} else {
		m->dist = malloc((size_t)n * (size_t)n * sizeof *m->dist);
		if (!m->dist) {
			free(order);
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		}
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				m->dist[i * n + j] = i == j ? 10 : 20;
	}
	free(order);

	/* cpus */
	qsort(m->cpus, (size_t)m->ncpus, sizeof *m->cpus, cmp_cpu);
	for (int i = 0; i < m->ncpus; i++) {
		struct nk__cpu *c = &m->cpus[i];
		if (c->id < 0 || c->id > NK__MAX_ID)
			return nk__error(err, NK_EPARSE, "%s: cpu id %d out of range", what, c->id);
		if (i && c->id == m->cpus[i - 1].id)
			return nk__error(err, NK_EPARSE, "%s: cpu %d listed twice", what, c->id);
		/* node -1: the cpu is online but its node is not (seen on real
		 * machines with an offline node); it runs threads but has no local memory */
		if (c->node != -1 && nk__node_idx(m, c->node) < 0)
			return nk__error(err, NK_EPARSE, "%s: cpu %d belongs to node %d, which does not exist", what, c->id,
					 c->node);
	}
	for (int i = 0; i < n; i++)
		m->nodes[i].cpus.n = 0;
	for (int i = 0; i < m->ncpus; i++)
		if (m->cpus[i].node >= 0 &&
		    nk__ilist_push(&m->nodes[nk__node_idx(m, m->cpus[i].node)].cpus, m->cpus[i].id))
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);

	/* cores: cpus with equal (node, package, core_key) share a core.  Sort
	 * cpu indices by that key so the grouping is O(n log n) even for the
	 * 65536-cpu machines a synthetic description can make. */
	{
		int *ord = malloc(2 * (size_t)m->ncpus * sizeof *ord), *leader = ord + m->ncpus;
		if (!ord)
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		for (int i = 0; i < m->ncpus; i++)
			ord[i] = i;
		core_sort_base = m->cpus;
		qsort(ord, (size_t)m->ncpus, sizeof *ord, cmp_core_key);
		core_sort_base = NULL;
		/* id is the last sort key, so a group's first element is its lowest cpu */
		for (int i = 0; i < m->ncpus; i++)
			leader[ord[i]] = (i && same_core(&m->cpus[ord[i - 1]], &m->cpus[ord[i]])) ? leader[ord[i - 1]]
												     : ord[i];
		/* cpus are sorted by id: a leader is numbered before its followers,
		 * so core indices follow cpu order */
		m->ncores = 0;
		for (int i = 0; i < m->ncpus; i++)
			m->cpus[i].core = leader[i] == i ? m->ncores++ : m->cpus[leader[i]].core;
		free(ord);
	}

	/* allowed sets: intersect with what exists; empty means "everything" */
	nk__ilist_normalize(&m->allowed_cpus);
	keep_present(m, &m->allowed_cpus, 1);
	if (!m->allowed_cpus.n)
		for (int i = 0; i < m->ncpus; i++)
			if (nk__ilist_push(&m->allowed_cpus, m->cpus[i].id))
				return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	nk__ilist_normalize(&m->allowed_nodes);
	keep_present(m, &m->allowed_nodes, 0);
	if (!m->allowed_nodes.n)
		for (int i = 0; i < n; i++)
			if (nk__ilist_push(&m->allowed_nodes, m->nodes[i].id))
				return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	/* the cpuset holds at least the allowed cpus (the affinity mask lies inside it) */
	nk__ilist_normalize(&m->cpuset_cpus);
	keep_present(m, &m->cpuset_cpus, 1);
	if (!m->cpuset_cpus.n && m->cpuset_all) {
		for (int i = 0; i < m->ncpus; i++)
			if (nk__ilist_push(&m->cpuset_cpus, m->cpus[i].id))
				return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	}
	for (size_t i = 0; i < m->allowed_cpus.n; i++)
		if (nk__ilist_push(&m->cpuset_cpus, m->allowed_cpus.v[i]))
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	nk__ilist_normalize(&m->cpuset_cpus);
	m->cpuset_all = 0;
	for (int i = 0; i < m->ncpus; i++)
		m->cpus[i].allowed = nk__ilist_contains(&m->allowed_cpus, m->cpus[i].id);

	for (int i = 0; i < n; i++) {
		struct nk__node *nd = &m->nodes[i];
		unsigned f = 0;
		if (nd->cpus.n)
			f |= NK_NODE_HAS_CPUS;
		if (nd->has_memory_hint == 1 || (nd->has_memory_hint < 0 && nd->mem_total > 0))
			f |= NK_NODE_HAS_MEMORY;
		if (nk__ilist_contains(&m->allowed_nodes, nd->id))
			f |= NK_NODE_MEM_ALLOWED;
		for (size_t k = 0; k < nd->cpus.n; k++)
			if (nk__ilist_contains(&m->allowed_cpus, nd->cpus.v[k])) {
				f |= NK_NODE_CPUS_ALLOWED;
				break;
			}
		/* the machine file stores sizes as JSON integers (int64): refuse
		 * what could not be saved instead of failing at save time */
		if (nd->mem_total > (uint64_t)INT64_MAX)
			return nk__error(err, NK_EPARSE, "%s: memory size of node %d out of range", what, nd->id);
		if (nd->mem_free > nd->mem_total)
			nd->mem_free = nd->mem_total;
		if (nd->wi_weight < 0 || nd->wi_weight > 255)
			return nk__error(err, NK_EPARSE, "%s: weighted-interleave weight %d of node %d out of range", what,
					 nd->wi_weight, nd->id);
		nd->flags = f;
	}

	/* caches: keep only present cpus, drop instances left empty */
	int kept = 0;
	for (int i = 0; i < m->ncaches; i++) {
		struct nk__cache *c = &m->caches[i];
		nk__ilist_normalize(&c->cpus);
		keep_present(m, &c->cpus, 1);
		if (c->level < 1 || c->level > 9)
			return nk__error(err, NK_EPARSE, "%s: cache level %d out of range", what, c->level);
		if (c->type < NK_CACHE_UNIFIED || c->type > NK_CACHE_INSTRUCTION)
			return nk__error(err, NK_EPARSE, "%s: bad cache type %d", what, c->type);
		if (c->size > (uint64_t)INT64_MAX)
			return nk__error(err, NK_EPARSE, "%s: cache size out of range", what);
		if (!c->cpus.n) {
			nk__ilist_free(&c->cpus);
			continue;
		}
		m->caches[kept++] = *c;
	}
	m->ncaches = kept;
	if (kept)
		qsort(m->caches, (size_t)kept, sizeof *m->caches, cmp_cache);

	if (m->kernel.numa_balancing < -1 || m->kernel.numa_balancing > 3)
		return nk__error(err, NK_EPARSE, "%s: numa_balancing %d is not -1 (unknown) or 0..3", what,
				 m->kernel.numa_balancing);
	if (m->kernel.thp_enabled < NK_THP_UNKNOWN || m->kernel.thp_enabled > NK_THP_ALWAYS ||
	    m->kernel.thp_defrag < NK_THP_UNKNOWN || m->kernel.thp_defrag > NK_THP_DEFER_MADVISE)
		return nk__error(err, NK_EPARSE, "%s: bad transparent huge page mode", what);
	if (!m->page_size)
		m->page_size = 4096;
	if (m->page_size & (m->page_size - 1))
		return nk__error(err, NK_EPARSE, "%s: page size %llu is not a power of two", what,
				 (unsigned long long)m->page_size);
	nk__ilist_normalize(&m->huge_kb);
	for (size_t i = 0; i < m->huge_kb.n; i++)
		if (m->huge_kb.v[i] <= 0)
			return nk__error(err, NK_EPARSE, "%s: bad huge page size", what);
	return 0;
}

/* ---------------------------------------------------------------- accessors */

int nk_machine_source(const nk_machine *m, const char **detail)
{
	if (!m)
		return NK_EINVAL;
	if (detail)
		*detail = m->source_detail;
	return m->source;
}

int nk_machine_num_notes(const nk_machine *m)
{
	return m ? m->nnotes : NK_EINVAL;
}

const char *nk_machine_note(const nk_machine *m, int i)
{
	return m && i >= 0 && i < m->nnotes ? m->notes[i] : NULL;
}

int nk_machine_num_nodes(const nk_machine *m)
{
	return m ? m->nnodes : NK_EINVAL;
}

int nk_machine_node_id(const nk_machine *m, int idx)
{
	if (!m || idx < 0 || idx >= m->nnodes)
		return NK_EINVAL;
	return m->nodes[idx].id;
}

int nk_machine_node_index(const nk_machine *m, int node)
{
	if (!m)
		return NK_EINVAL;
	int i = nk__node_idx(m, node);
	return i < 0 ? NK_ENODEV : i;
}

static const struct nk__node *node_of(const nk_machine *m, int node)
{
	if (!m)
		return NULL;
	int i = nk__node_idx(m, node);
	return i < 0 ? NULL : &m->nodes[i];
}

int nk_machine_node_flags(const nk_machine *m, int node)
{
	const struct nk__node *n = node_of(m, node);
	if (!m)
		return NK_EINVAL;
	return n ? (int)n->flags : NK_ENODEV;
}

int nk_machine_node_memory(const nk_machine *m, int node, uint64_t *total, uint64_t *free_bytes)
{
	const struct nk__node *n = node_of(m, node);
	if (!m)
		return NK_EINVAL;
	if (!n)
		return NK_ENODEV;
	if (total)
		*total = n->mem_total;
	if (free_bytes)
		*free_bytes = n->mem_free;
	return 0;
}

static int copy_out(const int *v, size_t n, int *out, size_t cap)
{
	if (cap && !out)
		return NK_EINVAL;
	for (size_t i = 0; i < n && i < cap; i++)
		out[i] = v[i];
	return (int)n;
}

int nk_machine_node_cpus(const nk_machine *m, int node, int *cpus, size_t cap)
{
	const struct nk__node *n = node_of(m, node);
	if (!m)
		return NK_EINVAL;
	if (!n)
		return NK_ENODEV;
	return copy_out(n->cpus.v, n->cpus.n, cpus, cap);
}

int nk_machine_distance(const nk_machine *m, int from, int to)
{
	if (!m)
		return NK_EINVAL;
	int a = nk__node_idx(m, from), b = nk__node_idx(m, to);
	if (a < 0 || b < 0)
		return NK_ENODEV;
	return m->dist[a * m->nnodes + b];
}

_Static_assert(NK__MAX_ID < (1 << 20), "nk_machine_neighbors packs an id into 20 bits");

static int cmp_u64(const void *x, const void *y)
{
	return NK__CMP(*(const uint64_t *)x, *(const uint64_t *)y);
}

/* The order of nk_machine_neighbors by repeated selection: O(n^2) per call but allocation-free, the
 * path taken only when the O(n log n) sort cannot get its key array. */
static int neighbors_select(const nk_machine *m, int a, int *nodes, size_t cap)
{
	int count = 0, n = m->nnodes;
	int last_d = -1, last_id = -1, last_self = -1;
	for (;;) {
		int best = -1, bd = 0, bself = 0;
		for (int j = 0; j < n; j++) {
			if (!(m->nodes[j].flags & NK_NODE_HAS_MEMORY))
				continue;
			int d = m->dist[a * n + j], self = (j == a) ? 0 : 1, id = m->nodes[j].id;
			/* keys (self, d, id) strictly after the last emitted key */
			if (last_self >= 0 && (self < last_self || (self == last_self && (d < last_d ||
					(d == last_d && id <= last_id)))))
				continue;
			if (best < 0 || self < bself || (self == bself && (d < bd || (d == bd && id < m->nodes[best].id)))) {
				best = j;
				bd = d;
				bself = self;
			}
		}
		if (best < 0)
			break;
		if ((size_t)count < cap)
			nodes[count] = m->nodes[best].id;
		count++;
		last_d = bd;
		last_self = bself;
		last_id = m->nodes[best].id;
	}
	return count;
}

int nk_machine_neighbors(const nk_machine *m, int node, int *nodes, size_t cap)
{
	if (!m)
		return NK_EINVAL;
	int a = nk__node_idx(m, node);
	if (a < 0)
		return NK_ENODEV;
	if (cap && !nodes)
		return NK_EINVAL;
	int count = 0, n = m->nnodes;
	for (int j = 0; j < n; j++)
		count += (m->nodes[j].flags & NK_NODE_HAS_MEMORY) != 0;
	if (!cap || !count)
		return count;
	/* Sorted by the key (self-first, distance, id) packed into one integer: distances are 1..1000 and
	 * ids 0..NK__MAX_ID (finalize's ranges), so the packing keeps the order.  A report asks for every
	 * node's neighbours, so one call must be O(n log n), not the selection's O(n^2) (issue 16 §2:
	 * 2048 nodes took 30 s).  Self comes first even when firmware reports a remote distance below the
	 * local one. */
	uint64_t *keys = malloc((size_t)count * sizeof *keys);
	if (!keys)
		return neighbors_select(m, a, nodes, cap);
	int k = 0;
	for (int j = 0; j < n; j++) {
		if (!(m->nodes[j].flags & NK_NODE_HAS_MEMORY))
			continue;
		keys[k++] = (uint64_t)(j != a) << 48 | (uint64_t)m->dist[a * n + j] << 20 | (uint64_t)m->nodes[j].id;
	}
	qsort(keys, (size_t)count, sizeof *keys, cmp_u64);
	for (int i = 0; i < count && (size_t)i < cap; i++)
		nodes[i] = (int)(keys[i] & 0xfffff);
	free(keys);
	return count;
}

int nk_machine_num_cpus(const nk_machine *m)
{
	return m ? m->ncpus : NK_EINVAL;
}

int nk_machine_cpu_id(const nk_machine *m, int idx)
{
	if (!m || idx < 0 || idx >= m->ncpus)
		return NK_EINVAL;
	return m->cpus[idx].id;
}

int nk_machine_cpu_info(const nk_machine *m, int cpu, nk_cpu_info *info)
{
	if (!m || !info)
		return NK_EINVAL;
	int i = nk__cpu_idx(m, cpu);
	if (i < 0)
		return NK_ENODEV;
	info->node = m->cpus[i].node;
	info->core = m->cpus[i].core;
	info->package = m->cpus[i].package;
	info->allowed = m->cpus[i].allowed;
	return 0;
}

int nk_machine_num_cores(const nk_machine *m)
{
	return m ? m->ncores : NK_EINVAL;
}

int nk_machine_num_caches(const nk_machine *m)
{
	return m ? m->ncaches : NK_EINVAL;
}

int nk_machine_cache(const nk_machine *m, int idx, nk_cache_info *info)
{
	if (!m || !info || idx < 0 || idx >= m->ncaches)
		return NK_EINVAL;
	const struct nk__cache *c = &m->caches[idx];
	info->level = c->level;
	info->type = c->type;
	info->size = c->size;
	info->line_size = c->line_size;
	info->ways = c->ways;
	info->num_cpus = (int)c->cpus.n;
	return 0;
}

int nk_machine_cache_cpus(const nk_machine *m, int idx, int *cpus, size_t cap)
{
	if (!m || idx < 0 || idx >= m->ncaches)
		return NK_EINVAL;
	return copy_out(m->caches[idx].cpus.v, m->caches[idx].cpus.n, cpus, cap);
}

int nk_machine_allowed_cpus(const nk_machine *m, int *cpus, size_t cap)
{
	if (!m)
		return NK_EINVAL;
	return copy_out(m->allowed_cpus.v, m->allowed_cpus.n, cpus, cap);
}

int nk_machine_cpuset_cpus(const nk_machine *m, int *cpus, size_t cap)
{
	if (!m)
		return NK_EINVAL;
	return copy_out(m->cpuset_cpus.v, m->cpuset_cpus.n, cpus, cap);
}

static int dup_ilist(nk__ilist *dst, const nk__ilist *src)
{
	*dst = (nk__ilist){ 0 };
	return src->n ? nk__ilist_copy(dst, src->v, src->n) : 0;
}

static void *dup_mem(const void *p, size_t n)
{
	void *q;

	if (!p || !n)
		return NULL;
	q = malloc(n);
	if (q)
		memcpy(q, p, n);
	return q;
}

struct nk_machine *nk__machine_copy(const struct nk_machine *m)
{
	struct nk_machine *c = nk__machine_new(m->source, m->source_detail);
	size_t nn = (size_t)m->nnodes;
	int bad = 0;

	if (!c)
		return NULL;
	c->nnodes = m->nnodes;
	c->ncpus = m->ncpus;
	c->ncores = m->ncores;
	c->ncaches = m->ncaches;
	c->page_size = m->page_size;
	c->kernel = m->kernel;
	c->nodes = dup_mem(m->nodes, nn * sizeof *m->nodes);
	c->cpus = dup_mem(m->cpus, (size_t)m->ncpus * sizeof *m->cpus);
	c->caches = dup_mem(m->caches, (size_t)m->ncaches * sizeof *m->caches);
	c->dist = dup_mem(m->dist, nn * nn * sizeof *m->dist);
	if (!c->nodes || !c->cpus || (m->ncaches && !c->caches) || (m->dist && !c->dist)) {
		/* the lists inside still belong to m: forget them before freeing */
		free(c->nodes);
		free(c->caches);
		c->nodes = NULL;
		c->caches = NULL;
		c->nnodes = c->ncaches = 0;
		nk_machine_free(c);
		return NULL;
	}
	for (int i = 0; i < m->nnodes; i++)
		bad |= dup_ilist(&c->nodes[i].cpus, &m->nodes[i].cpus);
	for (int i = 0; i < m->ncaches; i++)
		bad |= dup_ilist(&c->caches[i].cpus, &m->caches[i].cpus);
	bad |= dup_ilist(&c->allowed_cpus, &m->allowed_cpus);
	bad |= dup_ilist(&c->allowed_nodes, &m->allowed_nodes);
	bad |= dup_ilist(&c->cpuset_cpus, &m->cpuset_cpus);
	bad |= dup_ilist(&c->huge_kb, &m->huge_kb);
	for (int k = 0; k < NK_MATRIX_KIND_COUNT; k++)
		if (m->matrix[k] && !(c->matrix[k] = dup_mem(m->matrix[k], nn * nn * sizeof *m->matrix[k])))
			bad = 1;
	for (int i = 0; i < m->nnotes && !bad; i++)
		bad |= nk__machine_add_note(c, "%s", m->notes[i]) != 0;
	if (bad) {
		nk_machine_free(c);
		return NULL;
	}
	return c;
}

int nk_machine_restrict(const nk_machine *m, const int *cpus, size_t ncpus, const int *nodes, size_t nnodes,
			nk_machine **out, nk_error *err)
{
	struct nk_machine *c;

	if (!m || !out || !cpus || !ncpus || (nnodes && !nodes))
		return nk__error(err, NK_EINVAL, "restrict: no cpus given");
	for (size_t i = 0; i < ncpus; i++) {
		int k = nk__cpu_idx(m, cpus[i]);
		if (k < 0)
			return nk__error(err, NK_ENODEV, "cpu %d does not exist", cpus[i]);
		if (!m->cpus[k].allowed)
			return nk__error(err, NK_EPERM, "cpu %d is not allowed to this process", cpus[i]);
	}
	for (size_t i = 0; i < nnodes; i++) {
		if (nk__node_idx(m, nodes[i]) < 0)
			return nk__error(err, NK_ENODEV, "node %d does not exist", nodes[i]);
		if (!nk__ilist_contains(&m->allowed_nodes, nodes[i]))
			return nk__error(err, NK_EPERM, "node %d is not allowed to this process", nodes[i]);
	}
	c = nk__machine_copy(m);
	if (!c)
		return nk__error(err, NK_ENOMEM, "out of memory");
	c->allowed_cpus.n = 0;
	if (nk__ilist_copy(&c->allowed_cpus, cpus, ncpus) ||
	    (nnodes && (c->allowed_nodes.n = 0, nk__ilist_copy(&c->allowed_nodes, nodes, nnodes)))) {
		nk_machine_free(c);
		return nk__error(err, NK_ENOMEM, "out of memory");
	}
	nk__ilist_normalize(&c->allowed_cpus);
	nk__ilist_normalize(&c->allowed_nodes);
	for (int i = 0; i < c->ncpus; i++)
		c->cpus[i].allowed = nk__ilist_contains(&c->allowed_cpus, c->cpus[i].id);
	for (int i = 0; i < c->nnodes; i++) {
		struct nk__node *nd = &c->nodes[i];
		nd->flags &= ~(NK_NODE_MEM_ALLOWED | NK_NODE_CPUS_ALLOWED);
		if (nk__ilist_contains(&c->allowed_nodes, nd->id))
			nd->flags |= NK_NODE_MEM_ALLOWED;
		for (size_t k = 0; k < nd->cpus.n; k++)
			if (nk__ilist_contains(&c->allowed_cpus, nd->cpus.v[k])) {
				nd->flags |= NK_NODE_CPUS_ALLOWED;
				break;
			}
	}
	*out = c;
	return 0;
}

int nk_machine_allowed_nodes(const nk_machine *m, int *nodes, size_t cap)
{
	if (!m)
		return NK_EINVAL;
	return copy_out(m->allowed_nodes.v, m->allowed_nodes.n, nodes, cap);
}

uint64_t nk_machine_page_size(const nk_machine *m)
{
	return m ? m->page_size : 0;
}

int nk_machine_huge_page_sizes(const nk_machine *m, uint64_t *sizes, size_t cap)
{
	if (!m || (cap && !sizes))
		return NK_EINVAL;
	for (size_t i = 0; i < m->huge_kb.n && i < cap; i++)
		sizes[i] = (uint64_t)m->huge_kb.v[i] * 1024u;
	return (int)m->huge_kb.n;
}

int nk_machine_kernel_settings(const nk_machine *m, nk_kernel_settings *out)
{
	if (!m || !out)
		return NK_EINVAL;
	*out = m->kernel;
	return 0;
}

int nk_machine_wi_weight(const nk_machine *m, int node)
{
	const struct nk__node *n = node_of(m, node);
	if (!m)
		return NK_EINVAL;
	if (!n)
		return NK_ENODEV;
	return n->wi_weight > 0 ? n->wi_weight : NK_ENODATA;
}

int nk_machine_set_matrix(nk_machine *m, int kind, int from, int to, double value)
{
	if (!m || kind < 0 || kind >= NK_MATRIX_KIND_COUNT || !isfinite(value) || value <= 0)
		return NK_EINVAL;
	int a = nk__node_idx(m, from), b = nk__node_idx(m, to);
	if (a < 0 || b < 0)
		return NK_ENODEV;
	if (!m->matrix[kind]) {
		size_t nn = (size_t)m->nnodes * (size_t)m->nnodes;
		double *v = malloc(nn * sizeof *v);
		if (!v)
			return NK_ENOMEM;
		for (size_t i = 0; i < nn; i++)
			v[i] = NAN;
		m->matrix[kind] = v;
	}
	m->matrix[kind][a * m->nnodes + b] = value;
	return 0;
}

int nk_machine_get_matrix(const nk_machine *m, int kind, int from, int to, double *value)
{
	if (!m || !value || kind < 0 || kind >= NK_MATRIX_KIND_COUNT)
		return NK_EINVAL;
	int a = nk__node_idx(m, from), b = nk__node_idx(m, to);
	if (a < 0 || b < 0)
		return NK_ENODEV;
	if (!m->matrix[kind] || isnan(m->matrix[kind][a * m->nnodes + b]))
		return NK_ENODATA;
	*value = m->matrix[kind][a * m->nnodes + b];
	return 0;
}

int nk_machine_numa_factor(const nk_machine *m, int from, int to, double *factor)
{
	double v;
	if (!m || !factor)
		return NK_EINVAL;
	int rc = nk_machine_get_matrix(m, NK_MATRIX_NUMA_FACTOR, from, to, &v);
	if (rc == NK_ENODATA) {
		int d = nk_machine_distance(m, from, to);
		if (d < 0)
			return d;
		v = d / 10.0;
		rc = 0;
	}
	if (rc)
		return rc;
	*factor = v;
	return 0;
}

/* ------------------------------------------------------------ misc public */

const char *nk_version(void)
{
	return NK_VERSION_STRING;
}

const char *nk_strerror(int code)
{
	switch (code) {
	case NK_OK: return "success";
	case NK_EINVAL: return "invalid argument";
	case NK_ENOMEM: return "out of memory";
	case NK_ENOENT: return "no such file or directory";
	case NK_EIO: return "input/output error";
	case NK_EPARSE: return "corrupt or malformed input";
	case NK_EVERSION: return "unsupported format version";
	case NK_ENOSYS: return "not supported by this kernel or build";
	case NK_ENODEV: return "no such node or cpu";
	case NK_ERANGE: return "result does not fit";
	case NK_ENODATA: return "no data (not measured or not known)";
	case NK_EPERM: return "operation not permitted";
	default: return "unknown error";
	}
}
