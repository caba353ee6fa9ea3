/* SPDX-License-Identifier: BSD-3-Clause
 * Process-wide placement: the memory policy and cpu set of the calling
 * thread, checked against the machine model first so that a mistake is
 * reported by node or cpu id ("node 7 does not exist (nodes: 0-3)") rather
 * than as the kernel's bare EINVAL.  This is what `numakit run` does before
 * exec: both survive fork and exec.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "os/os.h"
#include "util/list.h"
#include "util/error.h"

typedef int (*ids_fn)(const nk_machine *m, int *ids, size_t cap);

static int machine_nodes(const nk_machine *m, int *ids, size_t cap)
{
	int n = nk_machine_num_nodes(m);

	for (int i = 0; i < n && (size_t)i < cap; i++)
		ids[i] = nk_machine_node_id(m, i);
	return n;
}

static int machine_cpus(const nk_machine *m, int *ids, size_t cap)
{
	int n = nk_machine_num_cpus(m);

	for (int i = 0; i < n && (size_t)i < cap; i++)
		ids[i] = nk_machine_cpu_id(m, i);
	return n;
}

/* A set of the machine's ids as compact text, for messages ("?" when out of memory). */
static void ids_text(const nk_machine *m, ids_fn fn, char *buf, size_t cap)
{
	int n = fn(m, NULL, 0);
	int *ids;

	snprintf(buf, cap, "?");
	if (n < 0)
		return;
	if (n == 0) {
		snprintf(buf, cap, "none");
		return;
	}
	ids = malloc((size_t)n * sizeof *ids);
	if (!ids)
		return;
	fn(m, ids, (size_t)n);
	nk__format_list(ids, (size_t)n, buf, cap);
	free(ids);
}

static const char *kind_name(int kind)
{
	static const char *const names[] = { "default", "membind", "interleave", "weighted interleave",
					     "preferred", "preferred-many", "local" };

	return kind >= 0 && kind <= NK_PROCESS_LOCAL ? names[kind] : "?";
}

static int check_nodes(const nk_machine *m, const int *nodes, size_t n, nk_error *err)
{
	char list[160];

	for (size_t i = 0; i < n; i++) {
		int f = nk_machine_node_flags(m, nodes[i]);

		for (size_t j = 0; j < i; j++)
			if (nodes[j] == nodes[i])
				return nk__error(err, NK_EINVAL, "node %d is given twice", nodes[i]);
		if (nodes[i] < 0 || f < 0) {
			ids_text(m, machine_nodes, list, sizeof list);
			return nk__error(err, NK_ENODEV, "node %d does not exist (nodes: %s)", nodes[i], list);
		}
		if (!(f & NK_NODE_HAS_MEMORY))
			return nk__error(err, NK_EINVAL, "node %d has no memory (a memoryless node): nothing can be placed there",
					 nodes[i]);
		if (!(f & NK_NODE_MEM_ALLOWED)) {
			ids_text(m, nk_machine_allowed_nodes, list, sizeof list);
			return nk__error(err, NK_EPERM, "node %d is not allowed to this process (allowed nodes: %s)",
					 nodes[i], list);
		}
	}
	return 0;
}

/* "0=3,1=1" into buf (truncated with "..." when it does not fit). */
static void weights_text(const int *nodes, const unsigned *w, size_t n, char *buf, size_t cap)
{
	size_t k = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int r = snprintf(buf + k, cap - k, "%s%d=%u", i ? "," : "", nodes[i], w[i]);
		if (r < 0 || (size_t)r >= cap - k) {
			if (cap > 4)
				strcpy(buf + cap - 4, "...");
			return;
		}
		k += (size_t)r;
	}
}

static int check_weights(const nk_machine *m, const int *nodes, const unsigned *weights, size_t n,
			 nk_error *err)
{
	nk_kernel_settings ks;
	unsigned *sys;
	char want[96], have[96];
	int rc = 0, differ = 0, first = -1;

	if (nk_machine_kernel_settings(m, &ks) == 0 && ks.weighted_interleave == 0)
		return nk__error(err, NK_ENOSYS,
				 "weighted interleave is not supported by this kernel (needs Linux >= 6.9)");
	if (!weights)
		return 0;
	sys = calloc(n, sizeof *sys);
	if (!sys)
		return nk__error(err, NK_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int w = nk_machine_wi_weight(m, nodes[i]);

		if (weights[i] < 1 || weights[i] > 255) {
			rc = nk__error(err, NK_EINVAL, "weight %u of node %d is outside 1..255", weights[i], nodes[i]);
			goto out;
		}
		if (w < 0) {
			rc = nk__error(err, NK_ENOSYS,
				       "the system's weighted-interleave weight of node %d is unknown", nodes[i]);
			goto out;
		}
		sys[i] = (unsigned)w;
		if (sys[i] != weights[i] && !differ) {
			differ = 1;
			first = (int)i;
		}
	}
	if (differ) {
		weights_text(nodes, weights, n, want, sizeof want);
		weights_text(nodes, sys, n, have, sizeof have);
		rc = nk__error(err, NK_EINVAL,
			       "weights %s differ from the system's (%s): the kernel's weights are system-wide and "
			       "numakit does not change them (as root: echo %u > "
			       "/sys/kernel/mm/mempolicy/weighted_interleave/node%d, and so on)",
			       want, have, weights[first], nodes[first]);
	}
out:
	free(sys);
	return rc;
}

int nk_process_set_policy(const nk_machine *m, int kind, const int *nodes, const unsigned *weights,
			  size_t n, unsigned flags, nk_error *err)
{
	static const int modes[] = { NK__MPOL_DEFAULT, NK__MPOL_BIND, NK__MPOL_INTERLEAVE,
				     NK__MPOL_WEIGHTED_INTERLEAVE, NK__MPOL_PREFERRED, NK__MPOL_PREFERRED_MANY,
				     NK__MPOL_LOCAL };
	int rc, e, maj = 0, min = 0;

	if (!m || kind < NK_PROCESS_DEFAULT || kind > NK_PROCESS_LOCAL)
		return nk__error(err, NK_EINVAL, "unknown process policy %d", kind);
	if (flags & ~NK_PROCESS_ALLFLAGS)
		return nk__error(err, NK_EINVAL, "unknown flags 0x%x", flags);
	if (kind == NK_PROCESS_DEFAULT || kind == NK_PROCESS_LOCAL) {
		n = 0;
	} else {
		if (!n || !nodes)
			return nk__error(err, NK_EINVAL, "%s: no node given", kind_name(kind));
		if (n > NK__MAX_ID + 1)
			return nk__error(err, NK_EINVAL, "%s: too many nodes", kind_name(kind));
		if (kind == NK_PROCESS_PREFERRED && n != 1)
			return nk__error(err, NK_EINVAL, "preferred takes one node (preferred-many takes a set)");
		rc = check_nodes(m, nodes, n, err);
		if (rc)
			return rc;
	}
	if (kind == NK_PROCESS_WEIGHTED) {
		rc = check_weights(m, nodes, weights, n, err);
		if (rc)
			return rc;
	}
	if (flags & NK_PROCESS_DRY_RUN)
		return 0;
	rc = nk__os_set_mempolicy(modes[kind], nodes, n, &e);
	if (!rc)
		return 0;
	switch (e) {
	case ENOSYS:
		return nk__error(err, NK_ENOSYS, "this kernel has no memory-policy system calls (no NUMA support)");
	case EPERM:
	case EACCES:
		return nk__error(err, NK_EPERM, "%s: the kernel refused: %s", kind_name(kind), strerror(e));
	case ENOMEM:
		return nk__error(err, NK_ENOMEM, "out of memory");
	case EINVAL:
		/* The nodes passed the model's checks: an unknown mode is the likely cause. */
		if (kind == NK_PROCESS_PREFERRED_MANY || kind == NK_PROCESS_WEIGHTED) {
			nk__os_kernel_version(&maj, &min);
			return nk__error(err, NK_ENOSYS, "%s is not supported by this kernel (Linux %d.%d; needs %s)",
					 kind_name(kind), maj, min,
					 kind == NK_PROCESS_WEIGHTED ? "Linux >= 6.9" : "Linux >= 5.15");
		}
		return nk__error(err, NK_EINVAL, "%s: the kernel refused the node set: %s", kind_name(kind),
				 strerror(e));
	default:
		return nk__error(err, NK_EPERM, "%s: the kernel refused: %s", kind_name(kind), strerror(e));
	}
}

int nk_process_set_cpus(const nk_machine *m, const int *cpus, size_t n, unsigned flags, nk_error *err)
{
	char list[160];
	int rc, e;

	if (!m || !cpus || !n)
		return nk__error(err, NK_EINVAL, "no cpu given");
	if (flags & ~NK_PROCESS_ALLFLAGS)
		return nk__error(err, NK_EINVAL, "unknown flags 0x%x", flags);
	for (size_t i = 0; i < n; i++) {
		nk_cpu_info ci;

		for (size_t j = 0; j < i; j++)
			if (cpus[j] == cpus[i])
				return nk__error(err, NK_EINVAL, "cpu %d is given twice", cpus[i]);
		if (cpus[i] < 0 || nk_machine_cpu_info(m, cpus[i], &ci) < 0) {
			ids_text(m, machine_cpus, list, sizeof list);
			return nk__error(err, NK_ENODEV, "cpu %d does not exist or is offline (cpus: %s)", cpus[i],
					 list);
		}
		if (!ci.allowed) {
			ids_text(m, nk_machine_allowed_cpus, list, sizeof list);
			return nk__error(err, NK_EPERM, "cpu %d is not allowed to this process (allowed cpus: %s)",
					 cpus[i], list);
		}
	}
	if (flags & NK_PROCESS_DRY_RUN)
		return 0;
	rc = nk__os_set_affinity(0, cpus, n, &e);
	if (rc && e == ENOMEM)
		return nk__error(err, NK_ENOMEM, "out of memory");
	if (rc)
		return nk__error(err, NK_EPERM, "the kernel refused cpus: %s", strerror(e));
	return 0;
}

int nk_process_get_policy(int *kind, int *nodes, size_t cap, nk_error *err)
{
	/* the kernel's MPOL_* modes, by value, as enum nk_process_policy */
	static const int kinds[] = { NK_PROCESS_DEFAULT, NK_PROCESS_PREFERRED, NK_PROCESS_MEMBIND,
				     NK_PROCESS_INTERLEAVE, NK_PROCESS_LOCAL, NK_PROCESS_PREFERRED_MANY,
				     NK_PROCESS_WEIGHTED };
	nk__ilist set = { 0 };
	int mode = 0, rc, e;

	if (!kind)
		return nk__error(err, NK_EINVAL, "no place for the policy's kind");
	rc = nk__os_get_mempolicy(&mode, &set, NULL, 0, &e);
	if (rc && e == ENOSYS)
		return nk__error(err, NK_ENOSYS, "this kernel has no memory-policy system calls (no NUMA support)");
	if (rc && e == ENOMEM)
		return nk__error(err, NK_ENOMEM, "out of memory");
	if (rc)
		return nk__error(err, NK_ENOSYS, "get_mempolicy: %s", strerror(e));
	mode &= 0xff; /* the mode flags live in the high bits (MPOL_F_STATIC_NODES, ...) */
	if (mode < 0 || (size_t)mode >= sizeof kinds / sizeof kinds[0]) {
		nk__ilist_free(&set);
		*kind = -1;
		return nk__error(err, NK_ENODATA, "unknown memory policy mode %d", mode);
	}
	*kind = kinds[mode];
	if (*kind == NK_PROCESS_DEFAULT || *kind == NK_PROCESS_LOCAL)
		set.n = 0;
	for (size_t i = 0; i < set.n && i < cap; i++)
		nodes[i] = set.v[i];
	rc = (int)set.n;
	nk__ilist_free(&set);
	return rc;
}
