/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, input: what the profile says about its run, read from the RUN, META and END JSON
 * records (program, sampler, wall time, several runs, warnings, coverage, page size, min_size).
 * Reads records only: no sample is attributed or counted here.
 */
#include <jansson.h>

#include "profile/analysis_impl.h"

static int json_u64(json_t *o, const char *k, uint64_t *out)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

/*
 * The COMM records of the processes (MPI traffic, issue 14 §2) summed by (from, peer, kind) into a->comm.  A
 * process whose MPI_COMM_WORLD size is not the first one's is left out with a warning.  0 or NK_ENOMEM.
 */
static int cmp_comm(const void *x, const void *y)
{
	const struct nk__an_comm_peer *a = x, *b = y;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	if (a->peer != b->peer)
		return a->peer < b->peer ? -1 : 1;
	return (a->kind > b->kind) - (a->kind < b->kind);
}

static int read_comm(struct nk__analysis *a, const struct nk__nkp_profile *p)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < p->n_procs; i++)
		n += p->procs[i].has_comm ? p->procs[i].comm.n : 0;
	struct nk__an_comm_peer *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return NK_ENOMEM;
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		if (!pd->has_comm)
			continue;
		if (!a->comm_procs) {
			a->comm_size = pd->comm.size;
		} else if (pd->comm.size != a->comm_size) {
			if (nk__an_warn(a, nk__aprintf("process %u: MPI rank %u of %u, where an earlier process was of a job "
						       "of %u: its traffic is left out", pd->info.pid, pd->comm.rank,
						       pd->comm.size, a->comm_size))) {
				free(v);
				return NK_ENOMEM;
			}
			continue;
		}
		for (uint32_t e = 0; e < pd->comm.n; e++)
			v[k++] = (struct nk__an_comm_peer){ pd->comm.rank, pd->peers[e].peer, pd->peers[e].kind,
							    pd->peers[e].messages, pd->peers[e].bytes };
		a->comm_procs++;
	}
	if (!k) {
		free(v);
		return 0;
	}
	qsort(v, k, sizeof *v, cmp_comm);
	n = 0;
	for (size_t i = 0; i < k; i++) {
		if (n && !cmp_comm(&v[n - 1], &v[i])) {
			v[n - 1].messages += v[i].messages;
			v[n - 1].bytes += v[i].bytes;
		} else {
			v[n++] = v[i];
		}
	}
	a->comm = v;
	a->n_comm = n;
	return 0;
}

/* Several runs: what each run was (the report lists them), and the mean wall time. */
static int read_runs(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	const struct nk__nkp_profile *p = c->p;
	a->runs = (int)nk__nkp_n_runs(p);
	a->exit_status = -1;
	if (a->runs < 2) {
		json_t *run = p->run_json ? json_loads(p->run_json, 0, NULL) : NULL;
		json_t *st = json_object_get(run, "exit_status"), *sg = json_object_get(run, "signal");
		if (json_is_integer(st))
			a->exit_status = (int)json_integer_value(st);
		if (json_is_integer(sg))
			a->signal = (int)json_integer_value(sg);
		json_decref(run);
		return 0;
	}
	a->run_info = calloc((size_t)a->runs, sizeof(*a->run_info));
	if (!a->run_info)
		return NK_ENOMEM;
	uint64_t wall = 0, nwall = 0;
	for (int r = 0; r < a->runs; r++) {
		struct nk__an_run *ri = &a->run_info[r];
		json_t *run = json_loads(p->runs[r].run_json, 0, NULL), *cmd = json_object_get(run, "command"), *arg;
		size_t i, len = 1;
		json_array_foreach(cmd, i, arg) len += json_is_string(arg) ? strlen(json_string_value(arg)) + 1 : 0;
		ri->command = calloc(1, len);
		json_array_foreach(cmd, i, arg) if (ri->command && json_is_string(arg))
		{
			if (*ri->command)
				strcat(ri->command, " ");
			strcat(ri->command, json_string_value(arg));
		}
		ri->exit_status = -1;
		json_u64(run, "wall_ns", &ri->wall_ns);
		json_t *st = json_object_get(run, "exit_status"), *sg = json_object_get(run, "signal");
		if (json_is_integer(st))
			ri->exit_status = (int)json_integer_value(st);
		if (json_is_integer(sg))
			ri->signal = (int)json_integer_value(sg);
		json_decref(run);
		ri->processes = (int)p->runs[r].n_procs;
		for (size_t k = 0; k < p->runs[r].n_procs; k++)
			ri->samples += p->procs[p->runs[r].first_proc + k].n_samples;
		if (p->runs[r].source && !(ri->source = xstrdup(p->runs[r].source)))
			return NK_ENOMEM;
		if (!ri->command)
			return NK_ENOMEM;
		if (ri->wall_ns) {
			wall += ri->wall_ns;
			nwall++;
		}
	}
	a->wall_ns = nwall ? (wall + nwall / 2) / nwall : 0;
	return 0;
}

/* Several runs: each process's ordinal in its run and the pid it is shown with, its threads by tid. */
int nk__an_setup_runs(struct ctx *c)
{
	const struct nk__nkp_profile *p = c->p;
	size_t runs = nk__nkp_n_runs(p);
	if (runs < 2 || !p->n_procs)
		return 0;
	c->proc_ord = calloc(p->n_procs, sizeof(*c->proc_ord));
	c->canon_pid = calloc(p->n_procs, sizeof(*c->canon_pid));
	c->tids = calloc(p->n_procs, sizeof(*c->tids));
	c->n_tids = calloc(p->n_procs, sizeof(*c->n_tids));
	if (!c->proc_ord || !c->canon_pid || !c->tids || !c->n_tids)
		return NK_ENOMEM;
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		size_t r = nk__nkp_run_of(p, i), ord = i - p->runs[r].first_proc;
		c->proc_ord[i] = (uint32_t)ord;
		c->canon_pid[i] = ord < p->runs[0].n_procs ? p->procs[p->runs[0].first_proc + ord].info.pid : pd->info.pid;
		c->tids[i] = malloc((pd->n_threads ? pd->n_threads : 1) * sizeof(**c->tids));
		if (!c->tids[i])
			return NK_ENOMEM;
		for (size_t t = 0; t < pd->n_threads; t++)
			c->tids[i][t] = (struct tid_index){ pd->threads[t].tid, pd->threads[t].index };
		qsort(c->tids[i], pd->n_threads, sizeof(**c->tids), cmp_tid_index);
		c->n_tids[i] = pd->n_threads;
	}
	return 0;
}

static int coverage_reason(struct nk__analysis *a, char *text)
{
	char **r = text ? realloc(a->coverage_reasons, (a->n_coverage_reasons + 1) * sizeof(*r)) : NULL;
	if (!r) {
		free(text);
		return NK_ENOMEM;
	}
	a->coverage_reasons = r;
	r[a->n_coverage_reasons++] = text;
	a->covered = 0;
	return 0;
}

/*
 * Does process @p pd's part cover its run?  Not when it was not closed (killed: its samples end wherever it
 * died) or when samples were dropped: spent budget drops the end of the run, a full ring drops bursts (a
 * parallel phase), either biases every fraction.  The time the budget ran out is said when END has it.
 */
static int coverage_of(struct nk__analysis *a, const struct nk__nkp_process_data *pd, json_t *end, uint64_t dropped)
{
	uint64_t budget = 0, bdropped = 0, spent = 0, t_end = 0;
	if (!pd->complete) {
		a->procs_incomplete++;
		if (coverage_reason(a, nk__aprintf("process %u did not finish its profile (killed?): its samples end where "
					       "it stopped", pd->info.pid)))
			return NK_ENOMEM;
	}
	if (!dropped)
		return 0;
	a->dropped += dropped;
	if (end) {
		json_u64(end, "budget", &budget);
		json_u64(end, "budget_dropped", &bdropped);
		json_u64(end, "budget_spent_ns", &spent);
		json_u64(end, "time_ns", &t_end);
	}
	if (bdropped > dropped)
		bdropped = dropped;
	a->budget_dropped += bdropped;
	char *text;
	if (bdropped && spent && t_end >= spent)
		text = nk__aprintf("process %u: sample budget (%llu) spent at %.2f s of %.2f s: %llu samples dropped",
			       pd->info.pid, (unsigned long long)budget, (double)spent / 1e9, (double)t_end / 1e9,
			       (unsigned long long)bdropped);
	else if (bdropped)
		text = nk__aprintf("process %u: sample budget (%llu) spent: %llu samples dropped", pd->info.pid,
			       (unsigned long long)budget, (unsigned long long)bdropped);
	else
		text = nk__aprintf("process %u: %llu samples dropped", pd->info.pid, (unsigned long long)dropped);
	if (coverage_reason(a, text))
		return NK_ENOMEM;
	if (bdropped && bdropped < dropped &&
	    coverage_reason(a, nk__aprintf("process %u: %llu samples dropped with the ring full", pd->info.pid,
				       (unsigned long long)(dropped - bdropped))))
		return NK_ENOMEM;
	return 0;
}

int nk__an_read_header(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	json_t *run = c->p->run_json ? json_loads(c->p->run_json, 0, NULL) : NULL;
	const char *prog = "?", *sampler = "?";
	if (json_is_object(run)) {
		json_t *cmd = json_object_get(run, "command");
		if (json_is_array(cmd) && json_is_string(json_array_get(cmd, 0)))
			prog = json_string_value(json_array_get(cmd, 0));
		if (json_is_string(json_object_get(run, "sampler")))
			sampler = json_string_value(json_object_get(run, "sampler"));
		json_u64(run, "wall_ns", &a->wall_ns);
		json_t *fb = json_object_get(run, "fallback");
		if (json_is_string(fb) && nk__an_warn(a, nk__aprintf("sampler fallback: %s", json_string_value(fb)))) {
			json_decref(run);
			return NK_ENOMEM;
		}
	}
	a->program = xstrdup(prog);
	a->sampler = xstrdup(sampler);
	json_decref(run);
	if (!a->program || !a->sampler)
		return NK_ENOMEM;
	if (read_runs(c))
		return NK_ENOMEM;
	a->covered = 1;
	if (read_comm(a, c->p))
		return NK_ENOMEM;
	uint64_t pf_rounds = 0, pf_stretched = 0, pf_period = 0;
	for (size_t i = 0; i < c->p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &c->p->procs[i];
		if (!pd->complete && nk__an_warn(a, nk__aprintf("process %u did not finish its profile (killed?): its data is "
						     "incomplete", pd->info.pid)))
			return NK_ENOMEM;
		json_t *end = pd->end_json ? json_loads(pd->end_json, 0, NULL) : NULL;
		uint64_t dropped = 0;
		if (json_is_object(end) && json_u64(end, "dropped", &dropped) && dropped &&
		    nk__an_warn(a, nk__aprintf("process %u: %llu samples dropped", pd->info.pid, (unsigned long long)dropped))) {
			json_decref(end);
			return NK_ENOMEM;
		}
		int rc = coverage_of(a, pd, json_is_object(end) ? end : NULL, dropped);
		json_t *pf = json_is_object(end) ? json_object_get(end, "pagefault") : NULL;
		uint64_t r = 0, st = 0, per = 0;
		if (json_is_object(pf) && json_u64(pf, "rounds", &r) && json_u64(pf, "stretched", &st)) {
			json_u64(pf, "period_ns", &per);
			pf_rounds += r;
			pf_stretched += st;
			pf_period = per > pf_period ? per : pf_period;
		}
		/* The weights scaled for the profiler's own time (issue 13, END pagefault.selftime): say how much when
		 * it took a tenth of the weight or more (the profiler slowed some thread that much). */
		json_t *self = json_is_object(pf) ? json_object_get(pf, "selftime") : NULL;
		uint64_t w_in = 0, w_out = 0, n_self = 0, f_max = 0;
		if (json_is_object(self) && json_u64(self, "weight_before", &w_in) && json_u64(self, "weight_after", &w_out) &&
		    json_u64(self, "samples", &n_self) && json_u64(self, "max_f_ppm", &f_max) && w_in && w_out * 10 < w_in * 9 &&
		    nk__an_warn(a, nk__aprintf("process %u: the profiler's own work (recording small blocks, handling faults) "
					       "slowed its threads: %llu pagefault samples weigh %.0f %% less for it, up to "
					       "%.0f %% for one (docs/profile.md, \"The profiler's own time\")",
					       pd->info.pid, (unsigned long long)n_self, 100.0 * (double)(w_in - w_out) / (double)w_in,
					       (double)f_max / 1e4))) {
			json_decref(end);
			return NK_ENOMEM;
		}
		json_decref(end);
		if (rc)
			return rc;
		nk__symtab *s = c->syms ? c->syms[i] : NULL;
		const char *sw = s ? c->ops->warnings(s) : "";
		if (sw && *sw && nk__an_warn(a, nk__aprintf("process %u: %s", pd->info.pid, sw)))
			return NK_ENOMEM;
	}
	/*
	 * The pagefault sampler samples the moments right after its rounds.  When its cost cap spaced them out
	 * (END stretched) and the whole profile holds few of them, its samples come from a few moments of the
	 * program, whatever their number: say so (combined runs add moments: their rounds fall at random times).
	 */
	if (pf_stretched && pf_rounds < NK__AN_MIN_ROUNDS &&
	    coverage_reason(a, nk__aprintf("the pagefault sampler made %llu rounds in all, up to %.0f ms apart to stay "
					   "under its cost cap: its samples come from that few moments of the run; "
					   "combine more runs (numakit profile --runs N) or raise --max-overhead",
					   (unsigned long long)pf_rounds, (double)pf_period / 1e6)))
		return NK_ENOMEM;
	return 0;
}

/* The META record's number @p key of a process, @p dflt when it has none. */
static uint64_t meta_u64(const struct nk__nkp_process_data *pd, const char *key, uint64_t dflt)
{
	uint64_t v = dflt;
	json_t *meta = pd->meta_json ? json_loads(pd->meta_json, 0, NULL) : NULL;
	if (json_is_object(meta))
		json_u64(meta, key, &v);
	json_decref(meta);
	return v;
}

uint64_t nk__an_page_size_of(const struct nk__nkp_process_data *pd)
{
	uint64_t ps = meta_u64(pd, "page_size", 4096);
	return ps && !(ps & (ps - 1)) ? ps : 4096;
}

uint64_t nk__an_min_size_of(const struct nk__nkp_process_data *pd)
{
	return meta_u64(pd, "min_size", 0);
}
