/* SPDX-License-Identifier: BSD-3-Clause
 * Several runs of one program as one profile (issue 13, docs/profile.md "Several runs"):
 * the compatibility rule (same program, same machine topology), joining loaded profiles in
 * memory (nk_profile_load_many) and writing one file of several runs (nk_profile_combine,
 * `numakit profile --runs N`).
 *
 * Why runs are joined as processes rather than merged sample by sample: every record of a
 * process (maps, allocations, sites, names) holds addresses of that process's address space,
 * which ASLR makes differ from run to run.  Kept as processes of their own, each run's samples
 * are attributed in its own address space, and the analysis pools them by the variable keys
 * that are stable across runs (docs/report.md, "Variables").
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "profile/nkp.h"
#include "util/error.h"

size_t nk__nkp_n_runs(const struct nk__nkp_profile *p)
{
	return p && p->n_runs ? p->n_runs : 1;
}

size_t nk__nkp_run_of(const struct nk__nkp_profile *p, size_t proc)
{
	for (size_t i = 0; p && i < p->n_runs; i++)
		if (proc >= p->runs[i].first_proc && proc - p->runs[i].first_proc < p->runs[i].n_procs)
			return i;
	return 0;
}

/* The program of run @p r: its first process's executable (META exe), else RUN command[0]. */
static char *program_of(const struct nk__nkp_profile *p, size_t r)
{
	const struct nk__nkp_run_data *run = &p->runs[r];
	char *out = NULL;
	if (run->n_procs) {
		json_t *meta = json_loads(p->procs[run->first_proc].meta_json, 0, NULL);
		json_t *exe = json_object_get(meta, "exe");
		if (json_is_string(exe))
			out = strdup(json_string_value(exe));
		json_decref(meta);
		if (out)
			return out;
	}
	json_t *rj = json_loads(run->run_json, 0, NULL);
	json_t *cmd0 = json_array_get(json_object_get(rj, "command"), 0);
	out = strdup(json_is_string(cmd0) ? json_string_value(cmd0) : "?");
	json_decref(rj);
	return out;
}

char *nk__nkp_topology(const char *machine_json)
{
	json_t *m = machine_json ? json_loads(machine_json, 0, NULL) : NULL;
	json_t *t = json_object(), *nodes = json_array();
	json_t *mn = json_object_get(m, "nodes");
	size_t i;
	json_t *n;
	json_array_foreach(mn, i, n)
	{
		json_t *e = json_object();
		json_object_set(e, "id", json_object_get(n, "id"));
		json_object_set(e, "cpus", json_object_get(n, "cpus"));
		json_array_append_new(nodes, e);
	}
	json_object_set_new(t, "nodes", nodes);
	json_object_set(t, "distances", json_object_get(m, "distances"));
	char *s = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(t);
	json_decref(m);
	return s;
}

static const char *src_of(const struct nk__nkp_profile *p, size_t r)
{
	return p->runs[r].source ? p->runs[r].source : "profile";
}

int nk__nkp_runs_compatible(const struct nk__nkp_profile *p, size_t r, char *why, size_t nwhy, char *warn,
			    size_t nwarn)
{
	int rc = 0;
	if (nwarn)
		warn[0] = 0;
	if (!p || r >= p->n_runs) {
		snprintf(why, nwhy, "no run %zu", r);
		return NK_EINVAL;
	}
	char *p0 = program_of(p, 0), *pr = program_of(p, r);
	char *t0 = nk__nkp_topology(p->runs[0].machine_json), *tr = nk__nkp_topology(p->runs[r].machine_json);
	json_t *r0 = json_loads(p->runs[0].run_json, 0, NULL), *rr = json_loads(p->runs[r].run_json, 0, NULL);
	if (!p0 || !pr || !t0 || !tr) {
		snprintf(why, nwhy, "out of memory");
		rc = NK_ENOMEM;
	} else if (strcmp(p0, pr)) {
		snprintf(why, nwhy, "run %zu (%s) is of program %s, run 1 (%s) of %s: only runs of one program combine",
			 r + 1, src_of(p, r), pr, src_of(p, 0), p0);
		rc = NK_EINVAL;
	} else if (p->runs[0].machine_json && p->runs[r].machine_json && strcmp(t0, tr)) {
		snprintf(why, nwhy,
			 "run %zu (%s) was taken on another machine than run 1 (%s) (nodes, cpus or distances "
			 "differ): only runs on one machine combine",
			 r + 1, src_of(p, r), src_of(p, 0));
		rc = NK_EINVAL;
	} else if (!p->runs[0].machine_json != !p->runs[r].machine_json) {
		snprintf(warn, nwarn, "run %zu (%s) %s a machine description and run 1 (%s) %s: the machines are "
			 "assumed to be the same", r + 1, src_of(p, r), p->runs[r].machine_json ? "has" : "has no",
			 src_of(p, 0), p->runs[0].machine_json ? "has" : "has none");
	} else if (!json_equal(json_object_get(r0, "command"), json_object_get(rr, "command"))) {
		snprintf(warn, nwarn, "run %zu (%s) ran %s with other arguments than run 1 (%s)", r + 1, src_of(p, r),
			 p0, src_of(p, 0));
	}
	json_decref(r0);
	json_decref(rr);
	free(p0);
	free(pr);
	free(t0);
	free(tr);
	return rc;
}

static int add_warn(char **warn, const char *w)
{
	if (!warn || !*w)
		return 0;
	size_t old = *warn ? strlen(*warn) : 0, n = strlen(w);
	char *s = realloc(*warn, old + n + 3);
	if (!s)
		return NK_ENOMEM;
	if (old)
		memcpy(s + old, "; ", 2), old += 2;
	memcpy(s + old, w, n + 1);
	*warn = s;
	return 0;
}

/* Give a hand-built profile (n_runs 0) its one run. */
static int ensure_runs(struct nk__nkp_profile *p, const char *name)
{
	if (p->n_runs)
		return 0;
	p->runs = calloc(1, sizeof *p->runs);
	if (!p->runs)
		return NK_ENOMEM;
	p->runs[0].run_json = strdup(p->run_json ? p->run_json : "{}");
	p->runs[0].machine_json = p->machine_json ? strdup(p->machine_json) : NULL;
	p->runs[0].source = name ? strdup(name) : NULL;
	p->runs[0].n_procs = p->n_procs;
	p->n_runs = 1;
	if (!p->runs[0].run_json || (p->machine_json && !p->runs[0].machine_json) || (name && !p->runs[0].source))
		return NK_ENOMEM;
	return 0;
}

int nk__nkp_join(struct nk__nkp_profile **in, const char *const *names, size_t n, struct nk__nkp_profile **out,
		 char **warn, nk_error *err)
{
	struct nk__nkp_profile *p = NULL;
	int rc = 0;
	char why[1024], w[1024];

	if (!in || !n || !out) {
		rc = nk__error(err, NK_EINVAL, "nk__nkp_join: no profile");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (!in[i] || ensure_runs(in[i], names ? names[i] : NULL)) {
			rc = nk__error(err, in[i] ? NK_ENOMEM : NK_EINVAL, "profiles: %s", in[i] ? "out of memory" :
				       "NULL profile");
			goto out;
		}
	p = in[0];
	in[0] = NULL;
	for (size_t i = 1; i < n; i++) {
		struct nk__nkp_profile *q = in[i];
		struct nk__nkp_process_data *procs = realloc(p->procs, (p->n_procs + q->n_procs + 1) * sizeof *procs);
		if (procs)
			p->procs = procs;
		struct nk__nkp_run_data *runs = realloc(p->runs, (p->n_runs + q->n_runs) * sizeof *runs);
		if (runs)
			p->runs = runs;
		if (!procs || !runs) {
			rc = nk__error(err, NK_ENOMEM, "profiles: out of memory");
			goto out;
		}
		for (size_t k = 0; k < q->n_runs; k++) {
			p->runs[p->n_runs] = q->runs[k];
			p->runs[p->n_runs++].first_proc += p->n_procs;
		}
		if (q->n_procs) /* a run whose program wrote no part has none (and no array) */
			memcpy(p->procs + p->n_procs, q->procs, q->n_procs * sizeof *q->procs);
		p->n_procs += q->n_procs;
		p->n_samples += q->n_samples;
		q->n_procs = 0; /* the processes and runs are p's now */
		q->n_runs = 0;
		if (q->version > p->version)
			p->version = q->version;
	}
	for (size_t r = 1; r < p->n_runs; r++) {
		rc = nk__nkp_runs_compatible(p, r, why, sizeof why, w, sizeof w);
		if (rc) {
			rc = nk__error(err, rc, "%s", why);
			goto out;
		}
		if (add_warn(warn, w)) {
			rc = nk__error(err, NK_ENOMEM, "profiles: out of memory");
			goto out;
		}
	}
out:
	for (size_t i = 0; in && i < n; i++) {
		nk__nkp_free(in[i]);
		in[i] = NULL;
	}
	if (rc) {
		nk__nkp_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int nk__nkp_combine_files(const char *const *paths, size_t n, const char *out_path, char **warn, nk_error *err)
{
	struct nk__nkp_profile **ps = NULL, *all = NULL;
	char *buf = NULL, *data = NULL;
	size_t len = 0, total = sizeof(struct nk__nkp_file_header);
	uint64_t records = 0;
	int rc = 0, e = 0;

	if (!paths || !n || !out_path)
		return nk__error(err, NK_EINVAL, "nk__nkp_combine_files: no profile or no output");
	ps = calloc(n, sizeof *ps);
	if (!ps)
		return nk__error(err, NK_ENOMEM, "profiles: out of memory");
	for (size_t i = 0; i < n; i++)
		if ((rc = nk__nkp_load(paths[i], &ps[i], err)))
			goto out;
	if ((rc = nk__nkp_join(ps, paths, n, &all, warn, err)))
		goto out;
	/* The runs' records are copied as they are: everything between the file header and the TRAILER
	 * (the last 40 bytes of a valid file), then one TRAILER counting the whole file. */
	for (size_t i = 0; i < n; i++) {
		struct nk__nkp_file_header fh;
		struct nk__nkp_trailer tr;
		rc = nk__os_read_whole(paths[i], 1u << 30, &buf, &len, &e);
		if (rc || len < sizeof fh + 40) {
			rc = nk__error(err, rc ? rc : NK_EIO, "%s: cannot read it again", paths[i]);
			goto out;
		}
		memcpy(&fh, buf, sizeof fh);
		memcpy(&tr, buf + len - sizeof tr, sizeof tr);
		size_t body = len - fh.header_size - 40;
		if (total + body + 40 > (1u << 30)) {
			rc = nk__error(err, NK_EIO, "%s: the runs would make a profile larger than 1 GiB", out_path);
			goto out;
		}
		char *nd = realloc(data, total + body + 40);
		if (!nd) {
			rc = nk__error(err, NK_ENOMEM, "profiles: out of memory");
			goto out;
		}
		data = nd;
		memcpy(data + total, buf + fh.header_size, body);
		total += body;
		records += tr.records;
		free(buf);
		buf = NULL;
	}
	struct nk__nkp_file_header fh = { .version = all->n_runs > 1 ? NK__NKP_VERSION_RUNS : NK__NKP_VERSION,
					  .header_size = sizeof fh };
	memcpy(fh.magic, NK__NKP_MAGIC, 8);
	memcpy(data, &fh, sizeof fh);
	struct nk__nkp_record_header rh = { NK__NKP_TRAILER, 0, sizeof(struct nk__nkp_trailer) };
	struct nk__nkp_trailer tr = { records, all->n_procs, all->n_samples };
	memcpy(data + total, &rh, sizeof rh);
	memcpy(data + total + sizeof rh, &tr, sizeof tr);
	total += sizeof rh + sizeof tr;
	const char *stage = "write";
	if ((rc = nk__os_write_atomic(out_path, data, total, &stage, &e)))
		rc = nk__error(err, rc, "%s: %s: %s", out_path, stage, strerror(e));
out:
	for (size_t i = 0; i < n; i++)
		nk__nkp_free(ps[i]);
	free(ps);
	nk__nkp_free(all);
	free(buf);
	free(data);
	return rc;
}
