/* SPDX-License-Identifier: BSD-3-Clause
 * Machines from hwloc: an hwloc XML file (nk_machine_load_xml) or any loaded
 * hwloc topology (nk__machine_from_hwloc).  The mapping rules are written
 * once, in hwloc_import.h.
 */
#include "machine/hwloc_import.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "util/error.h"

/* An id from hwloc's unsigned os_index; unknown or huge ids become -1 so
 * that nk__machine_finalize() rejects them with its own message. */
static int os_id(unsigned idx)
{
	return (idx == HWLOC_UNKNOWN_INDEX || idx > (unsigned)NK__MAX_ID) ? -1 : (int)idx;
}

static int push_bitmap(nk__ilist *l, hwloc_const_bitmap_t set)
{
	int i;

	if (!set)
		return 0;
	if (hwloc_bitmap_weight(set) < 0)
		return NK_EPARSE; /* infinite set: never from a sane topology */
	hwloc_bitmap_foreach_begin(i, set) {
		if (i > NK__MAX_ID)
			break;
		if (nk__ilist_push(l, i))
			return NK_ENOMEM;
	}
	hwloc_bitmap_foreach_end();
	return 0;
}

/*
 * The NUMA node a PU belongs to.  In hwloc 2 memory hangs off the tree as
 * "memory children", several nodes may cover a PU (a package's NVM node and
 * a group's DRAM node), while nk_machine gives each cpu one node, as Linux
 * does: the most local one (smallest cpuset), ordinary memory over special
 * memory (subtype "NVM", "MCDRAM", "HBM"...), then the lowest id.
 */
static hwloc_obj_t pu_node(hwloc_topology_t topo, hwloc_obj_t pu)
{
	hwloc_obj_t best = NULL, n = NULL;
	int bw = 0;

	while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL) {
		if (!n->cpuset || !hwloc_bitmap_isset(n->cpuset, pu->os_index))
			continue;
		int w = hwloc_bitmap_weight(n->cpuset);
		if (w < 0)
			continue;
		if (best) {
			if (w > bw)
				continue;
			if (w == bw) {
				int sb = best->subtype != NULL, sn = n->subtype != NULL;
				if (sn > sb || (sn == sb && n->os_index >= best->os_index))
					continue;
			}
		}
		best = n;
		bw = w;
	}
	return best;
}

static int cache_type(hwloc_obj_cache_type_t t)
{
	switch (t) {
	case HWLOC_OBJ_CACHE_DATA:
		return NK_CACHE_DATA;
	case HWLOC_OBJ_CACHE_INSTRUCTION:
		return NK_CACHE_INSTRUCTION;
	default:
		return NK_CACHE_UNIFIED;
	}
}

static int add_nodes(hwloc_topology_t topo, struct nk_machine *m, const char *what, nk_error *err)
{
	hwloc_obj_t n = NULL;
	uint64_t base = 0;

	/* Nodes are added in logical order: the distance matrix below is
	 * built in the same order, which is what finalize expects. */
	while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL) {
		struct nk__node *nd;
		int rc = nk__machine_add_node(m, os_id(n->os_index), &nd);
		if (rc)
			return nk__error(err, rc, "%s: %s", what,
					 rc == NK_ENOMEM ? "out of memory" : "too many NUMA nodes");
		nd->mem_total = n->attr->numanode.local_memory;
		/* hwloc records no free memory: 0 means "not known" here. */
		nd->mem_free = 0;
		for (unsigned k = 0; k < n->attr->numanode.page_types_len; k++) {
			uint64_t sz = n->attr->numanode.page_types[k].size;
			if (sz && (!base || sz < base))
				base = sz;
		}
	}
	if (!m->nnodes)
		return nk__error(err, NK_EPARSE, "%s: no NUMA node found", what);

	/* The smallest page type is the base page; every larger one is a huge
	 * page size, whether or not pages of it are reserved now. */
	m->page_size = base;
	n = NULL;
	while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != NULL)
		for (unsigned k = 0; k < n->attr->numanode.page_types_len; k++) {
			uint64_t sz = n->attr->numanode.page_types[k].size;
			if (sz <= base || sz / 1024 > (uint64_t)INT_MAX)
				continue;
			if (nk__ilist_push(&m->huge_kb, (int)(sz / 1024)))
				return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		}
	return 0;
}

static int add_cpus(hwloc_topology_t topo, struct nk_machine *m, const char *what, nk_error *err)
{
	hwloc_obj_t pu = NULL;

	while ((pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu)) != NULL) {
		struct nk__cpu *c;
		hwloc_obj_t node = pu_node(topo, pu), core, pkg;

		if (nk__machine_add_cpu(m, os_id(pu->os_index), &c))
			return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		/* A PU in no node's cpuset: its node is offline (the
		 * offline-cpu0-node0 machine); node -1 as documented. */
		c->node = node ? os_id(node->os_index) : -1;
		core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
		if (core)
			c->core_key = (long)core->logical_index;
		pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
		if (pkg)
			c->package = os_id(pkg->os_index);
	}
	return 0;
}

static int add_caches(hwloc_topology_t topo, struct nk_machine *m, const char *what, nk_error *err)
{
	int depth = hwloc_topology_get_depth(topo);

	for (int d = 0; d < depth; d++) {
		hwloc_obj_t o = NULL;
		if (!hwloc_obj_type_is_cache(hwloc_get_depth_type(topo, d)))
			continue;
		while ((o = hwloc_get_next_obj_by_depth(topo, d, o)) != NULL) {
			struct nk__cache *c;
			int rc;
			if (nk__machine_add_cache(m, &c))
				return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
			c->level = (int)o->attr->cache.depth;
			c->type = cache_type(o->attr->cache.type);
			c->size = o->attr->cache.size;
			c->line_size = (int)o->attr->cache.linesize;
			/* hwloc says -1 for fully associative; nk has no word for
			 * that and 0 ("unknown") is the honest approximation. */
			c->ways = o->attr->cache.associativity > 0 ? o->attr->cache.associativity : 0;
			rc = push_bitmap(&c->cpus, o->cpuset);
			if (rc)
				return nk__error(err, rc, "%s: %s", what,
						 rc == NK_ENOMEM ? "out of memory" : "cache with an infinite cpuset");
		}
	}
	return 0;
}

/* Fill m->dist (node order = logical order) from hwloc's OS latency matrix. */
static int add_distances(hwloc_topology_t topo, struct nk_machine *m, const char *what, nk_error *err)
{
	struct hwloc_distances_s *dists[8];
	unsigned nr = 8, use = 0;
	int n = m->nnodes, rc = 0;

	if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, dists,
					HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0)
		return 0; /* none readable: finalize supplies 10/20 */
	if (nr > 8)
		nr = 8;
	if (!nr)
		return 0;
	for (unsigned k = 0; k < nr; k++) {
		const char *name = hwloc_distances_get_name(topo, dists[k]);
		if (name && !strcmp(name, "NUMALatency")) {
			use = k;
			break;
		}
	}

	m->dist = malloc((size_t)n * (size_t)n * sizeof *m->dist);
	if (!m->dist) {
		rc = nk__error(err, NK_ENOMEM, "%s: out of memory", what);
		goto out_release;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			m->dist[i * n + j] = i == j ? 10 : 20;

	struct hwloc_distances_s *d = dists[use];
	for (unsigned i = 0; i < d->nbobjs; i++)
		for (unsigned j = 0; j < d->nbobjs; j++) {
			hwloc_obj_t a = d->objs[i], b = d->objs[j];
			uint64_t v = d->values[i * d->nbobjs + j];
			if (!a || !b || a->type != HWLOC_OBJ_NUMANODE || b->type != HWLOC_OBJ_NUMANODE ||
			    a->logical_index >= (unsigned)n || b->logical_index >= (unsigned)n)
				continue;
			/* out-of-range values are kept out of range (0), so that
			 * finalize rejects the file rather than inventing one */
			m->dist[a->logical_index * (unsigned)n + b->logical_index] = v > 1000 ? 0 : (int)v;
		}

out_release:
	for (unsigned k = 0; k < nr; k++)
		hwloc_distances_release(topo, dists[k]);
	return rc;
}

int nk__machine_from_hwloc(hwloc_topology_t topo, int source, const char *detail, nk_machine **out,
			   nk_error *err)
{
	struct nk_machine *m = NULL;
	const char *what = detail && *detail ? detail : "hwloc topology";
	int rc;

	m = nk__machine_new(source, detail);
	if (!m)
		return nk__error(err, NK_ENOMEM, "%s: out of memory", what);
	rc = add_nodes(topo, m, what, err);
	if (rc)
		goto out_free;
	rc = add_cpus(topo, m, what, err);
	if (rc)
		goto out_free;
	rc = add_caches(topo, m, what, err);
	if (rc)
		goto out_free;
	rc = add_distances(topo, m, what, err);
	if (rc)
		goto out_free;

	rc = push_bitmap(&m->allowed_cpus, hwloc_topology_get_allowed_cpuset(topo));
	if (!rc)
		rc = push_bitmap(&m->allowed_nodes, hwloc_topology_get_allowed_nodeset(topo));
	if (rc) {
		rc = nk__error(err, rc, "%s: %s", what, rc == NK_ENOMEM ? "out of memory" : "infinite allowed set");
		goto out_free;
	}

	rc = nk__machine_finalize(m, what, err);
	if (rc)
		goto out_free;
	*out = m;
	return 0;

out_free:
	nk_machine_free(m);
	return rc;
}

/*
 * Checks made on the text before hwloc sees it.  hwloc 2.9's built-in XML
 * parser (used when libxml2 support is not installed, as on Debian by
 * default) and its importer trust their input: a file cut inside the
 * <topology> tag dereferences NULL, and an object whose complete_cpuset
 * attribute is lost (a damaged attribute name makes the parser drop the
 * rest of the tag's attributes silently) crashes when children are sorted.
 * So the text must first be well-formed in the subset of XML hwloc writes:
 * balanced tags, attributes name="value" with names of [a-z_], values
 * without raw '<', '>' or newlines and only the escapes hwloc writes, every
 * object with a type and, unless it is an I/O or Misc object, well-formed
 * cpuset, complete_cpuset, nodeset and complete_nodeset.  hwloc accepts a
 * file cut inside its last closing tag; we do not.  A newer format (lstopo
 * 3.x writes version="3.0", which hwloc 2 refuses) gets its own message.
 */

#define XML_MAX_DEPTH 64

/* hwloc's bitmap text: an optional "0xf...f," then 0x-prefixed hex words of
 * at most 8 digits separated by commas; zero words between the first and the
 * last may be empty. */
static int valid_bitmap(const char *v, size_t n)
{
	size_t i = 0;

	if (n >= 7 && !strncmp(v, "0xf...f", 7)) {
		if (n == 7)
			return 1;
		if (v[7] != ',')
			return 0;
		i = 8;
	}
	if (i == n || v[i] == ',')
		return 0;
	for (;;) {
		size_t d = 0;
		/* hwloc writes a zero word in the middle as nothing: "0x1,,0x0" */
		if (i < n && v[i] != ',') {
			if (i + 2 > n || v[i] != '0' || v[i + 1] != 'x')
				return 0;
			i += 2;
			while (i < n && v[i] && strchr("0123456789abcdefABCDEF", v[i])) {
				i++;
				d++;
			}
			if (!d || d > 8)
				return 0;
		}
		if (i == n)
			return d > 0;
		if (v[i++] != ',')
			return 0;
	}
}

static int valid_value(const char *v, size_t n)
{
	static const char *const esc[] = { "&#10;", "&#13;", "&#9;", "&quot;", "&lt;", "&gt;", "&amp;" };

	for (size_t i = 0; i < n; i++) {
		if (v[i] == '<' || v[i] == '>' || v[i] == '\n')
			return 0;
		if (v[i] == '&') {
			size_t k;
			for (k = 0; k < sizeof esc / sizeof esc[0]; k++)
				if (!strncmp(v + i, esc[k], strlen(esc[k])) && i + strlen(esc[k]) <= n)
					break;
			if (k == sizeof esc / sizeof esc[0])
				return 0;
		}
	}
	return 1;
}

/* One start tag's name and attributes, [p, end) without the '<' and the
 * closing '>' or '/>'.  Objects must carry their sets. */
static int valid_tag(const char *p, const char *end)
{
	static const char *const sets[] = { "cpuset", "complete_cpuset", "nodeset", "complete_nodeset" };
	unsigned have = 0;
	int is_object, io = 0, typed = 0;
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");

	if (!n || p + n > end)
		return 0;
	is_object = n == 6 && !strncmp(p, "object", 6);
	p += n;
	while (p < end) {
		if (*p != ' ')
			return 0;
		p += strspn(p, " ");
		if (p >= end)
			break;
		const char *name = p;
		n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
		if (!n || p + n + 2 > end || p[n] != '=' || p[n + 1] != '"')
			return 0;
		const char *v = p + n + 2, *q = memchr(v, '"', (size_t)(end - v));
		if (!q || !valid_value(v, (size_t)(q - v)))
			return 0;
		/* every set attribute (also initiator_cpuset of memattrs) */
		if (((n >= 6 && !strncmp(name + n - 6, "cpuset", 6)) || (n >= 7 && !strncmp(name + n - 7, "nodeset", 7))) &&
		    !valid_bitmap(v, (size_t)(q - v)))
			return 0;
		for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
			if (strlen(sets[k]) == n && !strncmp(name, sets[k], n))
				have |= 1u << k;
		if (n == 4 && !strncmp(name, "type", 4)) {
			typed = 1;
			io = (q - v == 6 && !strncmp(v, "Bridge", 6)) || (q - v == 6 && !strncmp(v, "PCIDev", 6)) ||
			     (q - v == 5 && !strncmp(v, "OSDev", 5)) || (q - v == 4 && !strncmp(v, "Misc", 4));
		}
		p = q + 1;
	}
	if (is_object && (!typed || (!io && have != (1u << (sizeof sets / sizeof sets[0])) - 1)))
		return 0;
	return 1;
}

static int well_formed(const char *t)
{
	const char *stack[XML_MAX_DEPTH];
	size_t len[XML_MAX_DEPTH];
	int depth = 0, seen_root = 0;

	while (*t) {
		if (*t != '<') {
			if (*t == '>')
				return 0;
			t++;
			continue;
		}
		const char *e = strchr(t, '>');
		if (!e)
			return 0;
		if (t[1] == '?' || t[1] == '!') {
			if (seen_root)
				return 0;
			t = e + 1;
			continue;
		}
		if (t[1] == '/') {
			size_t n = (size_t)(e - t - 2);
			if (!depth || n != len[depth - 1] || strncmp(t + 2, stack[depth - 1], n))
				return 0;
			depth--;
			if (!depth)
				return !e[1 + strspn(e + 1, " \t\n")]; /* nothing after the root */
			t = e + 1;
			continue;
		}
		if (seen_root && !depth)
			return 0;
		int selfclose = e[-1] == '/';
		if (!valid_tag(t + 1, selfclose ? e - 1 : e))
			return 0;
		seen_root = 1;
		if (!selfclose) {
			if (depth == XML_MAX_DEPTH)
				return 0;
			stack[depth] = t + 1;
			len[depth++] = strspn(t + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
		}
		t = e + 1;
	}
	return 0; /* the root was never closed */
}

static int precheck(const char *path, const char *text, nk_error *err)
{
	const char *t = text;

	/* the header lines hwloc skips, as it skips them */
	while (!strncmp(t, "<?xml ", 6) || !strncmp(t, "<!DOCTYPE ", 10)) {
		t = strchr(t, '\n');
		if (!t)
			goto bad;
		t++;
	}
	if (strncmp(t, "<topology", 9))
		goto bad;
	const char *e = strchr(t, '>');
	const char *v = strstr(t, " version=\"");
	if (e && v && v < e) {
		char *end;
		unsigned long major = strtoul(v + 10, &end, 10);
		unsigned supported = hwloc_get_api_version() >> 16;
		if (end != v + 10 && major > supported)
			return nk__error(err, NK_EVERSION, "%s: hwloc XML version %lu is newer than this hwloc (%u.x) reads",
					 path, major, supported);
	}
	if (!well_formed(t))
		goto bad;
	return 0;
bad:
	return nk__error(err, NK_EPARSE, "%s: not a valid hwloc XML topology", path);
}

int nk_machine_load_xml(const char *path, nk_machine **out, nk_error *err)
{
	hwloc_topology_t topo;
	nk_machine *m = NULL;
	char *text = NULL;
	int rc;

	if (!path || !out)
		return nk__error(err, NK_EINVAL, "xml: no file or output given");
	/* Read the file ourselves: hwloc reports a missing file and a corrupt
	 * one alike, and the text needs a look first (precheck). */
	rc = nk__os_read_file(NULL, path, &text);
	switch (rc) {
	case 0:
		break;
	case NK_ENOENT:
		return nk__error(err, rc, "%s: no such file", path);
	case NK_EPERM:
		return nk__error(err, rc, "%s: permission denied", path);
	case NK_ENOMEM:
		return nk__error(err, rc, "%s: out of memory", path);
	default:
		return nk__error(err, NK_EIO, "%s: cannot be read (not a regular file, or larger than %u MiB)", path,
				 NK__OS_MAX_FILE >> 20);
	}
	rc = precheck(path, text, err);
	if (rc)
		goto out_text;

	if (hwloc_topology_init(&topo)) {
		rc = nk__error(err, NK_ENOMEM, "%s: out of memory", path);
		goto out_text;
	}
	/* Disallowed nodes and cpus are kept in the machine, and the allowed
	 * sets are hwloc's (the root's allowed_cpuset/nodeset in the file). */
	if (hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED)) {
		rc = nk__error(err, NK_ENOSYS, "%s: this hwloc cannot keep disallowed resources", path);
		goto out_destroy;
	}
	/* hwloc drops instruction caches on import unless asked to keep them */
	if (hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL) ||
	    hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL)) {
		rc = nk__error(err, NK_ENOSYS, "%s: this hwloc cannot keep caches", path);
		goto out_destroy;
	}
	/* the size hwloc wants counts the terminating NUL */
	/* With libhwloc-plugins (pulled in by Open MPI, for one) hwloc parses with libxml2, and parses here:
	 * a corrupt file fails now rather than at the load, and is a parse error, not a missing feature. */
	errno = 0;
	if (hwloc_topology_set_xmlbuffer(topo, text, (int)strlen(text) + 1)) {
		if (errno == ENOSYS)
			rc = nk__error(err, NK_ENOSYS, "%s: this hwloc has no XML support", path);
		else
			rc = nk__error(err, NK_EPARSE, "%s: not a valid hwloc XML topology", path);
		goto out_destroy;
	}
	/* hwloc's XML parsers are silent unless HWLOC_XML_VERBOSE is set by
	 * the user, so a corrupt file is reported only through err. */
	if (hwloc_topology_load(topo)) {
		rc = nk__error(err, NK_EPARSE, "%s: not a valid hwloc XML topology", path);
		goto out_destroy;
	}
	rc = nk__machine_from_hwloc(topo, NK_SOURCE_XML, path, &m, err);
	if (rc)
		goto out_destroy;
	*out = m;

out_destroy:
	hwloc_topology_destroy(topo);
out_text:
	free(text);
	return rc;
}
