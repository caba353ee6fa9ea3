/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, aggregation: the nodes, and the attributed samples summed per variable, thread,
 * node and phase; page classes, sharing matrix and regularity; top source lines and first-touch site.
 * Counts only: intervals are analysis_interval.c's, verdicts analysis_diagnose.c's.
 */
#include "profile/analysis_impl.h"

/* ---------------------------------------------------------------- nodes */

int nk__an_setup_nodes(struct ctx *c, const nk_machine *m)
{
	struct nk__analysis *a = c->a;
	unsigned char *seen = calloc(MAX_NODE_ID, 1);
	if (!seen)
		return NK_ENOMEM;
	if (c->parent) { /* a phase: the whole profile's nodes (node arrays comparable), no machine */
		for (int i = 0; i < c->parent->n_nodes; i++)
			seen[c->parent->node_ids[i]] = 1;
		m = NULL;
		a->l2_size = c->parent->l2_size;
		a->numa_factor = c->parent->numa_factor;
		a->bandwidth_measured = c->parent->bandwidth_measured;
	}
	if (m) {
		int n = nk_machine_num_nodes(m);
		for (int i = 0; i < n; i++) {
			int id = nk_machine_node_id(m, i);
			if (id >= 0 && id < MAX_NODE_ID)
				seen[id] = 1;
		}
	}
	for (size_t i = 0; !c->parent && i < c->n_recs; i++) {
		if (c->recs[i].cnode >= 0 && c->recs[i].cnode < MAX_NODE_ID)
			seen[c->recs[i].cnode] = 1;
		if (c->recs[i].pnode >= 0 && c->recs[i].pnode < MAX_NODE_ID)
			seen[c->recs[i].pnode] = 1;
	}
	int n = 0;
	for (int i = 0; i < MAX_NODE_ID; i++)
		n += seen[i];
	a->node_ids = malloc((n ? (size_t)n : 1) * sizeof(int));
	if (!a->node_ids) {
		free(seen);
		return NK_ENOMEM;
	}
	for (int i = 0; i < MAX_NODE_ID; i++)
		if (seen[i])
			a->node_ids[a->n_nodes++] = i;
	free(seen);
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1;
	a->node_local = calloc(nn, sizeof(uint64_t));
	a->node_remote = calloc(nn, sizeof(uint64_t));
	a->node_pages_acc = calloc(nn, sizeof(uint64_t));
	if (!a->node_local || !a->node_remote || !a->node_pages_acc)
		return NK_ENOMEM;
	if (m) {
		int nc = nk_machine_num_caches(m);
		for (int i = 0; i < nc; i++) {
			nk_cache_info ci;
			if (!nk_machine_cache(m, i, &ci) && ci.level == 2 && ci.type != NK_CACHE_INSTRUCTION && ci.size) {
				a->l2_size = ci.size;
				break;
			}
		}
		int mn = nk_machine_num_nodes(m);
		for (int i = 0; i < mn; i++)
			for (int j = 0; j < mn; j++) {
				double f;
				double bw;
				int from = nk_machine_node_id(m, i), to = nk_machine_node_id(m, j);
				if (i != j && !nk_machine_numa_factor(m, from, to, &f) && f > a->numa_factor)
					a->numa_factor = f;
				if (!nk_machine_get_matrix(m, NK_MATRIX_BANDWIDTH_MBS, from, to, &bw))
					a->bandwidth_measured = 1;
			}
	}
	return 0;
}

int nk__an_node_index(const struct nk__analysis *a, int id)
{
	for (int i = 0; i < a->n_nodes; i++)
		if (a->node_ids[i] == id)
			return i;
	return -1;
}

/* ---------------------------------------------------------------- aggregation */

int nk__an_cmp_rec(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->proc, b->proc)) || (c = NK__CMP(a->page, b->page)))
		return c;
	return NK__CMP(a->thread, b->thread);
}

int nk__an_cmp_ip(const void *x, const void *y)
{
	const struct iprec *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->proc, b->proc)) || (c = NK__CMP(a->ip, b->ip)))
		return c;
	return NK__CMP(a->thread, b->thread);
}

int nk__an_alloc_var_arrays(struct nk__analysis *a)
{
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1;
	for (size_t i = 0; i < a->n_vars; i++) {
		struct nk__an_var *v = &a->vars[i];
		v->acc_cpu = calloc(nn, sizeof(uint64_t));
		v->remote_cpu = calloc(nn, sizeof(uint64_t));
		v->acc_page = calloc(nn, sizeof(uint64_t));
		v->pages_on = calloc(nn, sizeof(uint64_t));
		if (!v->acc_cpu || !v->remote_cpu || !v->acc_page || !v->pages_on)
			return NK_ENOMEM;
	}
	return 0;
}

int nk__an_count(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	size_t nn = a->n_nodes ? (size_t)a->n_nodes : 1, nt = a->n_threads ? a->n_threads : 1;
	uint64_t *tcpu = calloc(nt * nn, sizeof(uint64_t));
	a->thread_node = calloc(nt * nn, sizeof(uint64_t));
	a->sharing = calloc(nt * nt, sizeof(double));
	if (!tcpu || !a->thread_node || !a->sharing) {
		free(tcpu);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < a->n_phases; i++) {
		a->phases[i].var_acc = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		a->phases[i].var_remote = calloc(a->n_vars ? a->n_vars : 1, sizeof(uint64_t));
		if (!a->phases[i].var_acc || !a->phases[i].var_remote) {
			free(tcpu);
			return NK_ENOMEM;
		}
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *r = &c->recs[i];
		struct nk__an_var *v = &a->vars[r->var];
		struct nk__an_thread *t = &a->threads[r->thread];
		int ci = r->cnode >= 0 && r->cnode < MAX_NODE_ID ? nidx[r->cnode] : -1;
		int pi = r->pnode >= 0 && r->pnode < MAX_NODE_ID ? nidx[r->pnode] : -1;
		v->samples++;
		v->acc += r->w;
		a->samples++;
		a->acc += r->w;
		t->samples++;
		t->acc += r->w;
		if (r->where == 0) {
			v->local += r->w;
			a->local += r->w;
		} else if (r->where == 1) {
			v->remote += r->w;
			a->remote += r->w;
			t->remote += r->w;
		} else {
			v->unknown += r->w;
			a->unknown += r->w;
		}
		if (r->access == NK__ACC_READ)
			v->reads += r->w;
		else if (r->access == NK__ACC_WRITE)
			v->writes += r->w;
		if (ci >= 0) {
			v->acc_cpu[ci] += r->w;
			tcpu[r->thread * nn + (size_t)ci]++;
			if (r->where == 1) {
				v->remote_cpu[ci] += r->w;
				a->node_remote[ci] += r->w;
			} else if (r->where == 0) {
				a->node_local[ci] += r->w;
			}
		}
		if (pi >= 0) {
			v->acc_page[pi] += r->w;
			a->node_pages_acc[pi] += r->w;
			a->thread_node[r->thread * nn + (size_t)pi] += r->w;
		}
		if (r->phase) {
			struct nk__an_phase *ph = &a->phases[r->phase - 1];
			ph->samples++;
			ph->acc += r->w;
			if (r->where == 0)
				ph->local += r->w;
			else if (r->where == 1)
				ph->remote += r->w;
			ph->var_acc[r->var] += r->w;
			if (r->where == 1)
				ph->var_remote[r->var] += r->w;
		}
	}
	for (size_t t = 0; t < a->n_threads; t++) {
		uint64_t best = 0;
		for (size_t k = 0; k < (size_t)a->n_nodes; k++)
			if (tcpu[t * nn + k] > best) {
				best = tcpu[t * nn + k];
				a->threads[t].node = a->node_ids[k];
			}
	}
	free(tcpu);
	return 0;
}

struct pth {
	uint32_t thread;
	uint64_t w;
	int cnode;
};

/* Pages: classes, sharing, regularity. recs sorted by (var, proc, page, thread). */
int nk__an_pages(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	size_t nt = a->n_threads ? a->n_threads : 1;
	struct pth *pt = malloc(nt * sizeof(*pt));
	uint32_t *owner = malloc((c->n_recs ? c->n_recs : 1) * sizeof(uint32_t));
	uint64_t *tot = calloc(nt, sizeof(uint64_t)), *run = calloc(nt, sizeof(uint64_t)),
		 *best = calloc(nt, sizeof(uint64_t));
	int64_t *lastpos = malloc(nt * sizeof(int64_t));
	unsigned char *seen = calloc(nt, 1);
	if (!pt || !owner || !tot || !run || !best || !lastpos || !seen) {
		free(seen);
		free(pt);
		free(owner);
		free(tot);
		free(run);
		free(best);
		free(lastpos);
		return NK_ENOMEM;
	}
	size_t i = 0;
	while (i < c->n_recs) {
		uint32_t var = c->recs[i].var;
		struct nk__an_var *v = &a->vars[var];
		size_t n_owner = 0;
		while (i < c->n_recs && c->recs[i].var == var) {
			/* one page */
			size_t j = i, npt = 0, e = i;
			int pnode = -1, later = 0;
			/* The page's users, its class, owner and sharing come from the accesses that are not its
			 * initialisation when there are any (mark_init): the initialisation placed the page (the
			 * hot-spot and first-touch views report it); counting it as a user made a partition
			 * mismatch (threads initialise their blocks, others compute on them) read as pages shared
			 * across nodes. */
			while (e < c->n_recs && c->recs[e].var == var && c->recs[e].proc == c->recs[i].proc &&
			       c->recs[e].page == c->recs[i].page)
				later |= !c->recs[e++].init;
			while (j < e) {
				const struct rec *r = &c->recs[j];
				if (r->pnode >= 0)
					pnode = r->pnode;
				if (later && r->init) {
					if (!seen[r->thread]) {
						seen[r->thread] = 1;
						v->threads++;
					}
					j++;
					continue;
				}
				if (npt && pt[npt - 1].thread == r->thread) {
					pt[npt - 1].w += r->w;
					if (pt[npt - 1].cnode < 0)
						pt[npt - 1].cnode = r->cnode;
				} else {
					pt[npt++] = (struct pth){ r->thread, r->w, r->cnode };
				}
				j++;
			}
			v->pages++;
			int pi = pnode >= 0 && pnode < MAX_NODE_ID ? nidx[pnode] : -1;
			if (pi >= 0)
				v->pages_on[pi]++;
			int cross = 0, cn = -1;
			for (size_t k = 0; k < npt; k++) {
				if (!seen[pt[k].thread]) {
					seen[pt[k].thread] = 1;
					v->threads++;
				}
				if (pt[k].cnode < 0)
					continue;
				if (cn < 0)
					cn = pt[k].cnode;
				else if (pt[k].cnode != cn)
					cross = 1;
			}
			if (npt == 1)
				v->pages_private++;
			else if (cross)
				v->pages_cross_shared++;
			else
				v->pages_node_shared++;
			size_t ow = 0;
			for (size_t k = 0; k < npt; k++) {
				if (pt[k].w > pt[ow].w)
					ow = k;
				for (size_t l = k + 1; l < npt; l++) {
					double m = (double)(pt[k].w < pt[l].w ? pt[k].w : pt[l].w);
					a->sharing[pt[k].thread * nt + pt[l].thread] += m;
					a->sharing[pt[l].thread * nt + pt[k].thread] += m;
				}
			}
			owner[n_owner++] = pt[ow].thread;
			i = j;
		}
		/* regularity: each thread's owned pages, the share inside its longest run of consecutive
		 * sampled pages (in address order) */
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			tot[t] = run[t] = best[t] = 0;
			lastpos[t] = -2;
		}
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			tot[t]++;
			run[t] = lastpos[t] == (int64_t)k - 1 ? run[t] + 1 : 1;
			if (run[t] > best[t])
				best[t] = run[t];
			lastpos[t] = (int64_t)k;
		}
		uint64_t inside = 0;
		for (size_t k = 0; k < n_owner; k++) {
			uint32_t t = owner[k];
			if (tot[t]) {
				inside += best[t];
				tot[t] = 0;
			}
		}
		v->regularity = n_owner ? (double)inside / (double)n_owner : -1;
		memset(seen, 0, nt);
		a->pages_private += v->pages_private;
		a->pages_node_shared += v->pages_node_shared;
		a->pages_cross_shared += v->pages_cross_shared;
	}
	free(pt);
	free(owner);
	free(tot);
	free(run);
	free(best);
	free(lastpos);
	free(seen);
	return 0;
}

struct ipagg {
	uint64_t ip, acc, remote;
	uint32_t proc;
};

static int cmp_ipagg(const void *x, const void *y)
{
	const struct ipagg *a = x, *b = y;
	int c;
	if ((c = NK__CMP(b->remote, a->remote)) || (c = NK__CMP(b->acc, a->acc)))
		return c;
	return NK__CMP(a->ip, b->ip);
}

/* Top lines and the first-touch site.  ips sorted by (var, proc, ip, thread). */
int nk__an_lines(struct ctx *c, int *nidx)
{
	struct nk__analysis *a = c->a;
	struct ipagg *ag = malloc((c->n_ips ? c->n_ips : 1) * sizeof(*ag));
	uint64_t *nodecnt = calloc(a->n_nodes ? (size_t)a->n_nodes : 1, sizeof(uint64_t));
	if (!ag || !nodecnt) {
		free(ag);
		free(nodecnt);
		return NK_ENOMEM;
	}
	size_t i = 0;
	int rc = 0;
	while (i < c->n_ips && !rc) {
		uint32_t var = c->ips[i].var;
		struct nk__an_var *v = &a->vars[var];
		size_t nag = 0, j = i;
		/* first touch: best (proc, ip) by samples, then its most common thread */
		uint64_t ft_best = 0;
		size_t ft_at = 0;
		while (j < c->n_ips && c->ips[j].var == var) {
			size_t k = j;
			uint64_t acc = 0, rem = 0, ft = 0;
			while (k < c->n_ips && c->ips[k].var == var && c->ips[k].proc == c->ips[j].proc &&
			       c->ips[k].ip == c->ips[j].ip) {
				acc += c->ips[k].w;
				rem += c->ips[k].remote ? c->ips[k].w : 0;
				ft += c->ips[k].ft;
				k++;
			}
			v->ft_samples += ft;
			if (ft > ft_best) {
				ft_best = ft;
				ft_at = j;
			}
			ag[nag++] = (struct ipagg){ c->ips[j].ip, acc, rem, c->ips[j].proc };
			j = k;
		}
		if (ft_best) {
			uint32_t proc = c->ips[ft_at].proc;
			uint64_t ip = c->ips[ft_at].ip, tbest = 0, tcur = 0;
			memset(nodecnt, 0, (a->n_nodes ? (size_t)a->n_nodes : 1) * sizeof(uint64_t));
			for (size_t k = ft_at; k < j && c->ips[k].proc == proc && c->ips[k].ip == ip; k++) {
				if (!c->ips[k].ft)
					continue;
				tcur = k > ft_at && c->ips[k - 1].thread == c->ips[k].thread && c->ips[k - 1].ft ? tcur + 1 : 1;
				if (tcur > tbest) {
					tbest = tcur;
					v->ft_thread = (int)c->ips[k].thread;
				}
				int pn = c->ips[k].pnode;
				if (pn >= 0 && pn < MAX_NODE_ID && nidx[pn] >= 0)
					nodecnt[nidx[pn]]++;
			}
			uint64_t nb = 0;
			for (int n = 0; n < a->n_nodes; n++)
				if (nodecnt[n] > nb) {
					nb = nodecnt[n];
					v->ft_node = a->node_ids[n];
				}
			v->ft_top = ft_best;
			v->ft_where = nk__an_ip_text(c->ops, c->syms ? c->syms[proc] : NULL, ip);
			if (!v->ft_where)
				rc = NK_ENOMEM;
			else
				rc = nk__an_ft_caller(c, ft_at, j, v);
		}
		qsort(ag, nag, sizeof(*ag), cmp_ipagg);
		/* symbolise the first 4*TOP, merge equal texts, keep TOP */
		struct nk__an_line tmp[4 * NK__AN_TOP_LINES];
		int nt = 0;
		for (size_t k = 0; k < nag && k < 4 * NK__AN_TOP_LINES && !rc; k++) {
			if (!ag[k].remote && !ag[k].acc)
				continue;
			char *w = nk__an_ip_text(c->ops, c->syms ? c->syms[ag[k].proc] : NULL, ag[k].ip);
			if (!w) {
				rc = NK_ENOMEM;
				break;
			}
			int found = -1;
			for (int q = 0; q < nt; q++)
				if (!strcmp(tmp[q].where, w))
					found = q;
			if (found >= 0) {
				tmp[found].acc += ag[k].acc;
				tmp[found].remote += ag[k].remote;
				free(w);
			} else {
				tmp[nt++] = (struct nk__an_line){ w, ag[k].acc, ag[k].remote };
			}
		}
		/* order again after merging (insertion sort, small) */
		for (int q = 1; q < nt; q++)
			for (int r = q; r > 0 && (tmp[r].remote > tmp[r - 1].remote ||
						  (tmp[r].remote == tmp[r - 1].remote && tmp[r].acc > tmp[r - 1].acc));
			     r--) {
				struct nk__an_line x = tmp[r];
				tmp[r] = tmp[r - 1];
				tmp[r - 1] = x;
			}
		for (int q = 0; q < nt; q++) {
			if (q < NK__AN_TOP_LINES)
				v->lines[v->n_lines++] = tmp[q];
			else
				free(tmp[q].where);
		}
		i = j;
	}
	free(ag);
	free(nodecnt);
	return rc;
}
