/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, diagnosis: a variable's verdict (too few samples, fine, hot spot, partition mismatch,
 * uniform sharing), its fix (the Minas heuristic) and the sentence explaining both; enum names.
 * Reads the aggregated variable only: never the samples.
 */
#include "profile/analysis_impl.h"

/* ---------------------------------------------------------------- diagnosis */

const char *nk__an_kind_name(int kind)
{
	static const char *const n[] = { "named", "heap", "static", "stack", "file", "anonymous", "mpi" };
	return kind >= 0 && kind < 7 ? n[kind] : "?";
}

const char *nk__an_diag_name(int diag)
{
	static const char *const n[] = { "too-few-samples", "fine", "hot-spot", "partition-mismatch", "uniform-sharing" };
	return diag >= 0 && diag < 5 ? n[diag] : "?";
}

const char *nk__an_fix_name(int fix)
{
	static const char *const n[] = { "none", "leave", "not-worth-it", "parallel-init", "cyclic", "weighted" };
	return fix >= 0 && fix < 6 ? n[fix] : "?";
}

int nk__an_diagnose(struct nk__analysis *a, struct nk__an_var *v)
{
	uint64_t known = v->local + v->remote;
	double rshare = known ? (double)v->remote / (double)known : 0;
	uint64_t pages_known = 0, top = 0;
	for (int n = 0; n < a->n_nodes; n++) {
		pages_known += v->pages_on[n];
		if (v->pages_on[n] > top) {
			top = v->pages_on[n];
			v->dominant_node = a->node_ids[n];
		}
	}
	v->dominant_share = pages_known ? (double)top / (double)pages_known : 0;
	double cross = v->pages ? (double)v->pages_cross_shared / (double)v->pages : 0;
	uint64_t typed = v->reads + v->writes;
	int read_mostly = typed && (double)v->reads / (double)typed >= NK__AN_READ_MOSTLY;
	int regular = v->regularity >= NK__AN_REGULAR;
	v->small = a->l2_size && v->size && v->size < a->l2_size;

	if (!known || !nk__an_decided(v))
		v->diag = NK__DIAG_FEW_SAMPLES;
	else if (rshare <= NK__AN_FINE_REMOTE)
		v->diag = NK__DIAG_FINE;
	else if (v->dominant_share >= NK__AN_HOTSPOT_NODE && a->n_nodes > 1)
		v->diag = NK__DIAG_HOTSPOT;
	else if (cross >= NK__AN_SHARED_PAGES)
		v->diag = NK__DIAG_SHARING;
	else if (v->samples < 2 * v->pages && v->regularity >= 0 && v->regularity < NK__AN_IRREGULAR &&
		 v->threads > 1)
		/* Too few samples per page to see two threads on one page, but the threads' sampled
		 * pages interleave all through the variable: they share it (a partition, even on the
		 * wrong nodes, leaves each thread long runs of its own pages). */
		v->diag = NK__DIAG_SHARING;
	else
		v->diag = NK__DIAG_PARTITION;

	char ft[512] = "", ci[64];
	snprintf(ci, sizeof ci, "%.1f%% [%.1f, %.1f]", 100 * rshare, 100 * v->ci_lo, 100 * v->ci_hi);
	if (v->ft_where) {
		const char *tl = v->ft_thread >= 0 ? a->threads[v->ft_thread].label : "an unknown thread";
		snprintf(ft, sizeof(ft), "; initialised by %s at %s%s%s", tl, v->ft_where, v->ft_inside ? ", inside " : "",
			 v->ft_inside ? v->ft_inside : "");
	}
	v->policy = NULL;
	if (v->diag == NK__DIAG_FEW_SAMPLES || v->diag == NK__DIAG_FINE)
		v->fix = NK__FIX_NONE;
	else if (a->numa_factor > 0 && a->numa_factor < NK__AN_MIN_NUMA_FACTOR)
		v->fix = NK__FIX_NOT_WORTH;
	else if (v->small || v->threads == 1)
		v->fix = NK__FIX_LEAVE;
	else if (regular && v->diag != NK__DIAG_SHARING)
		v->fix = NK__FIX_PARALLEL_INIT;
	else
		v->fix = a->bandwidth_measured ? NK__FIX_WEIGHTED : NK__FIX_CYCLIC;
	if (v->fix == NK__FIX_PARALLEL_INIT)
		v->policy = "block";
	else if (v->fix == NK__FIX_CYCLIC)
		v->policy = "cyclic";
	else if (v->fix == NK__FIX_WEIGHTED)
		v->policy = "weighted";

	switch (v->diag) {
	case NK__DIAG_FEW_SAMPLES:
		if (!known)
			v->explain = nk__aprintf("no sample with both the cpu's and the page's node known: cannot judge");
		else
			v->explain = nk__aprintf("%s remote, too wide to judge (more than +-%.0f points): %llu samples "
					     "in %llu %s, %.1f effective",
					     ci, 100 * NK__AN_CI_HALF,
					     (unsigned long long)v->known_samples, (unsigned long long)v->clusters,
					     v->ci_grouped ? (v->clusters == 1 ? "page group" : "page groups")
							   : (v->clusters == 1 ? "cluster" : "clusters"),
					     v->n_eff);
		break;
	case NK__DIAG_FINE:
		v->explain = nk__aprintf("%s of its accesses are remote: fine", ci);
		break;
	case NK__DIAG_HOTSPOT:
		v->explain = nk__aprintf("hot spot: %.0f%% of its pages are on node %d, %s of accesses remote%s",
				     100 * v->dominant_share, v->dominant_node, ci, ft);
		break;
	case NK__DIAG_SHARING:
		v->explain = nk__aprintf("uniform sharing: %.0f%% of its pages are used by threads of several nodes, "
				     "%s of accesses remote%s",
				     100 * cross, ci, read_mostly ? " (read-mostly)" : "");
		break;
	default:
		v->explain = nk__aprintf("partition mismatch: pages spread over nodes, but threads use other nodes' pages "
				     "(%s of accesses remote, regularity %.2f)%s",
				     ci, v->regularity < 0 ? 0 : v->regularity, ft);
		break;
	}
	return v->explain ? 0 : NK_ENOMEM;
}
