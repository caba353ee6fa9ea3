/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz policy texts and plans.  The input is a policy text, optionally
 * followed by a NUL byte and up to 8 bytes choosing the region (page offset,
 * length, geometry).  A text that parses must format canonically, parse back
 * to an equal policy and format to the same text; a plan built from it on
 * small synthetic machines must agree with itself (nk_plan_node,
 * nk_plan_nodes, run lengths, run lists, the kernel hint).  A failure must
 * carry its code and a message, and change nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "os/os.h"
#include "policy/plan.h"
#include "policy/policy_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const machines[] = {
	"nodes=1",
	"nodes=4 dist=10,20,30,30/20,10,30,30/30,30,10,20/30,30,20,10 wi=2,1,1,3",
	"nodes=5 ids=0,4,9,10,12 memless=1 allowed_nodes=0,4,10,12 mem=64K",
};

static void check_plan(const nk_machine *m, const nk_plan *pl)
{
	size_t n = nk_plan_num_pages(pl), count, hn;
	int *nodes = malloc((n ? n : 1) * sizeof *nodes), mode;
	const struct nk__plan_run *runs;
	const int *hnodes;

	if (!nodes)
		return;
	if (nk_plan_nodes(pl, 0, n, nodes) == NK_ENODATA) {
		if (nk__plan_kind(pl) != NK_POLICY_NEXT_TOUCH || nk_plan_node(pl, 0) != NK_ENODATA)
			abort();
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		if (nodes[i] != nk_plan_node(pl, i) || nodes[i] < 0 || nk_machine_node_index(m, nodes[i]) < 0)
			abort();
		if (nk__plan_run_at(pl, i, &len) != nodes[i] || !len || len > n - i)
			abort();
		for (size_t j = i + 1; j < i + len; j++)
			if (nk_plan_node(pl, j) != nodes[i])
				abort();
	}
	if (nk__plan_runs(pl, &count, &runs) == 0) {
		size_t at = 0;
		for (size_t k = 0; k < count; k++) {
			if (runs[k].first != at || !runs[k].npages)
				abort();
			for (size_t j = 0; j < runs[k].npages; j++)
				if (nodes[at + j] != runs[k].node)
					abort();
			at += runs[k].npages;
		}
		if (at != n)
			abort();
	}
	if (nk__plan_kernel_hint(pl, &mode, &hnodes, &hn) == 0) {
		uint64_t vpn0 = nk__plan_base(pl) / nk_plan_page_size(pl);
		for (size_t i = 0; i < n; i++) {
			int want = -1;
			if (mode == NK__MPOL_BIND)
				want = hnodes[0];
			else if (mode == NK__MPOL_INTERLEAVE)
				want = hnodes[(vpn0 + i) % hn];
			else if (mode == NK__MPOL_WEIGHTED_INTERLEAVE) {
				uint64_t w = 0, t;
				size_t k = 0;
				for (size_t j = 0; j < hn; j++)
					w += (uint64_t)nk_machine_wi_weight(m, hnodes[j]);
				t = (vpn0 + i) % w;
				while (t >= (uint64_t)nk_machine_wi_weight(m, hnodes[k]))
					t -= (uint64_t)nk_machine_wi_weight(m, hnodes[k++]);
				want = hnodes[k];
			}
			if (want != nodes[i])
				abort();
		}
	}
out:
	free(nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static nk_machine *m[sizeof machines / sizeof machines[0]];
	nk_policy *p = NULL, *q = NULL, *sentinel = (nk_policy *)&sentinel;
	nk_error err = { 0 };
	size_t tlen = strnlen((const char *)data, size);
	char *text = malloc(tlen + 1), *s1 = NULL, *s2 = NULL;
	uint8_t g[8] = { 0 };
	int rc, n1;

	if (!text)
		return 0;
	for (size_t i = 0; i < sizeof machines / sizeof machines[0]; i++)
		if (!m[i] && nk_machine_load_synthetic(machines[i], &m[i], NULL))
			abort();
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	if (tlen + 1 < size)
		memcpy(g, data + tlen + 1, size - tlen - 1 < sizeof g ? size - tlen - 1 : sizeof g);

	p = sentinel;
	rc = nk_policy_parse(text, &p, &err);
	if (rc) {
		if (p != sentinel || err.code != rc || (rc == NK_EPARSE && strncmp(err.message, "policy: ", 8)))
			abort();
		goto out;
	}
	n1 = nk_policy_format(p, NULL, 0);
	if (n1 < 0 || !(s1 = malloc((size_t)n1 + 1)) || nk_policy_format(p, s1, (size_t)n1 + 1) != n1)
		abort();
	if (nk_policy_parse(s1, &q, &err) || !nk__policy_equal(p, q))
		abort(); /* everything we write, we read, unchanged */
	if (!(s2 = malloc((size_t)n1 + 1)) || nk_policy_format(q, s2, (size_t)n1 + 1) != n1 || strcmp(s1, s2))
		abort();

	for (size_t i = 0; i < sizeof machines / sizeof machines[0]; i++) {
		uint64_t ps = nk_machine_page_size(m[i]);
		size_t rows = 1 + g[2] % 64, cols = 1 + (size_t)(g[3] | g[4] << 8) % 4096, elem = 1u << (g[5] % 4);
		nk_region r = { 0 };
		nk_plan *pl = (nk_plan *)&pl;
		r.addr = (void *)(uintptr_t)((1000 + g[0]) * ps + (g[6] % 2 ? g[7] * 16u : 0));
		if (g[1] & 0x80) { /* 2D geometry */
			r.elem_size = elem;
			r.ndims = 2;
			r.dims[0] = rows;
			r.dims[1] = cols;
			r.len = rows * cols * elem;
		} else {
			r.len = (size_t)(1 + g[1] % 64) * ps - (g[6] % 3 ? g[7] : 0);
		}
		rc = nk_plan_build(m[i], p, &r, &pl, &err);
		if (rc) {
			if (pl != (nk_plan *)&pl || err.code != rc ||
			    (rc != NK_EINVAL && rc != NK_ENODEV && rc != NK_EPERM) || strncmp(err.message, "policy ", 7))
				abort();
			continue;
		}
		check_plan(m[i], pl);
		nk_plan_free(pl);
	}
out:
	free(s1);
	free(s2);
	nk_policy_free(p == sentinel ? NULL : p);
	nk_policy_free(q);
	free(text);
	return 0;
}
