/* SPDX-License-Identifier: BSD-3-Clause
 * Accessors of a plan (nk_advice) for the plan runtime (contract: runtime/runtime.h): the runtime reads
 * entries through these, so the layout of struct nk_advice (advise/aplan.h) stays inside libnumakit.
 */
#include <string.h>

#include "advise/advice.h"
#include "runtime/runtime.h"

size_t nk__advice_num_entries(const nk_advice *a)
{
	return a ? a->n_entries : 0;
}

int nk__advice_entry(const nk_advice *a, size_t i, struct nk__advice_entry_info *out)
{
	if (!a || !out || i >= a->n_entries)
		return NK_EINVAL;
	const struct nk__aplan_entry *e = &a->entries[i];
	out->key = e->key;
	out->variable = e->variable;
	out->policy = e->policy;
	out->phase = e->phase;
	out->when = e->when == NK__WHEN_FIRST_PARALLEL ? NK__ADVICE_AT_FIRST_PARALLEL
		    : e->when == NK__WHEN_PHASE	       ? NK__ADVICE_AT_PHASE
							       : NK__ADVICE_AT_ALLOC;
	out->page_size = e->page_size;
	out->n_ranges = e->n_ranges;
	out->site_bytes = e->site_bytes;
	return 0;
}

int nk__advice_entry_range(const nk_advice *a, size_t i, size_t r, uint64_t *first, uint64_t *count, int *node)
{
	if (!a || i >= a->n_entries || r >= a->entries[i].n_ranges || !first || !count || !node)
		return NK_EINVAL;
	const struct nk__aplan_range *g = &a->entries[i].ranges[r];
	*first = g->first;
	*count = g->count;
	*node = g->node;
	return 0;
}

int nk__advice_check_entries(const nk_advice *a, const nk_machine *m, nk_error *err)
{
	if (!a)
		return nk_advice_check(a, m, err);
	/* a shallow copy without the pin: the caller's plan is not touched (another thread may read it) */
	nk_advice c = *a;
	memset(&c.pin, 0, sizeof c.pin);
	return nk_advice_check(&c, m, err);
}
