/* SPDX-License-Identifier: BSD-3-Clause
 * Job profiles: the rank files of a parallel job found, checked and read as one job (job.h; docs/report.md
 * "Jobs", docs/formats.md "RUN").
 *
 * Why each rank is analysed alone and summarised, rather than joined with the others as runs: the ranks of
 * a job are not draws of one experiment but parts of one, so the job's counts are sums, not means; ranks
 * may run on hosts whose node numbers mean other nodes (a 2-node and a 4-node machine in one job); and a
 * job of many ranks does not fit in memory sample by sample.  Each rank's analysis is exactly its own
 * report's (`numakit report RANK.nkp`); what crosses ranks is a summary per rank and per variable, with
 * the sums that the pooled remote share's interval needs (struct nk__cl_stats): a cluster (a page group,
 * a round, a sample) never spans two ranks, so the clusters of all ranks together are the union of each
 * rank's.  `numakit advise` and `whatif` want the other view, one plan for every rank of an SPMD code:
 * they load the rank files as runs (nk_profile_load_pooled, report.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "profile/job.h"
#include "profile/nkp.h"
#include "util/cmp.h"
#include "util/error.h"
#include "util/list.h"
#include "util/strbuf.h"

#define PEEK_MAX_RECORDS 64 /* RUN, MACHINE, PROCESS and META come first; more is not a profile's start */

/* ---------------------------------------------------------------- the peek */

struct src {
	const unsigned char *buf; /* a buffer, or */
	const char *path;         /* a file */
	uint64_t size;
};

static int src_read(const struct src *s, uint64_t off, void *out, size_t n)
{
	if (off > s->size || s->size - off < n)
		return -1;
	if (s->buf) {
		memcpy(out, s->buf + off, n);
		return 0;
	}
	return nk__os_read_at(s->path, off, out, n, NULL) == (long)n ? 0 : -1;
}

void nk__job_peek_free(struct nk__job_peek *p)
{
	if (!p)
		return;
	free(p->exe);
	free(p->command);
	free(p->host);
	free(p->id);
	free(p->cpus);
	memset(p, 0, sizeof *p);
}

static int launcher_of(const char *s)
{
	static const char *const keys[] = { "openmpi", "pmi", "pmix", "slurm" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, keys[i]))
			return i + 1;
	return -1;
}

/* An integer member in [lo, hi], or null / absent (-1) when @p optional.  0 or -1 (why in @p why). */
static int job_int(json_t *job, const char *name, long lo, long hi, int optional, int *out, char *why, size_t nwhy)
{
	json_t *v = json_object_get(job, name);
	*out = -1;
	if ((!v || json_is_null(v)) && optional)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(why, nwhy, "job: %s: expected an integer %ld..%ld%s", name, lo, hi, optional ? " or null" : "");
		return -1;
	}
	*out = (int)json_integer_value(v);
	return 0;
}

static int job_str(json_t *job, const char *name, size_t max, char **out, char *why, size_t nwhy)
{
	json_t *v = json_object_get(job, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) > max || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(why, nwhy, "job: %s: expected a string of 1..%zu bytes or null", name, max);
		return -1;
	}
	*out = strdup(json_string_value(v));
	return *out ? 0 : -2;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

/* RUN job "cpus" (optional): the rank's cpus at its start, distinct numbers below NK__JOB_MAX_CPUS. */
static int job_cpus(json_t *job, struct nk__job_peek *pk, char *why, size_t nwhy)
{
	json_t *a = json_object_get(job, "cpus"), *v;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > NK__JOB_MAX_CPUS) {
		snprintf(why, nwhy, "job: cpus: expected an array of 1 to %d cpu numbers", NK__JOB_MAX_CPUS);
		return -1;
	}
	if (!(pk->cpus = malloc(json_array_size(a) * sizeof(*pk->cpus))))
		return -2;
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= NK__JOB_MAX_CPUS) {
			snprintf(why, nwhy, "job: cpus[%zu]: expected a cpu number from 0 to %d", i, NK__JOB_MAX_CPUS - 1);
			return -1;
		}
		pk->cpus[i] = (int)json_integer_value(v);
	}
	pk->n_cpus = json_array_size(a);
	qsort(pk->cpus, pk->n_cpus, sizeof(*pk->cpus), cmp_int);
	for (i = 1; i < pk->n_cpus; i++)
		if (pk->cpus[i] == pk->cpus[i - 1]) {
			snprintf(why, nwhy, "job: cpus: cpu %d twice", pk->cpus[i]);
			return -1;
		}
	return 0;
}

/* The RUN record's members the job reader needs.  0, -1 (why), -2 (out of memory). */
static int peek_run(const char *text, size_t len, struct nk__job_peek *pk, char *why, size_t nwhy)
{
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *job, *cmd, *v;
	struct nk__strbuf b = { 0 };
	size_t i;
	int rc = -1;

	if (!json_is_object(o)) {
		snprintf(why, nwhy, "%s", o ? "not a JSON object" : je.text);
		goto out;
	}
	cmd = json_object_get(o, "command");
	json_array_foreach(cmd, i, v) nk__strbuf_printf(&b, "%s%s", i ? " " : "", json_is_string(v) ? json_string_value(v) : "?");
	pk->command = nk__strbuf_take(&b);
	v = json_array_get(cmd, 0);
	pk->exe = strdup(json_is_string(v) ? json_string_value(v) : "?");
	if (!pk->command || !pk->exe) {
		rc = -2;
		goto out;
	}
	if (!pk->command[0]) {
		free(pk->command);
		if (!(pk->command = strdup("?"))) {
			rc = -2;
			goto out;
		}
	}
	v = json_object_get(o, "start_unix_ns");
	pk->start_unix_ns = json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
	job = json_object_get(o, "job");
	if (!job || json_is_null(job)) {
		rc = 0;
		goto out;
	}
	if (!json_is_object(job)) {
		snprintf(why, nwhy, "job: expected an object");
		goto out;
	}
	v = json_object_get(job, "launcher");
	if (!json_is_string(v) || (pk->launcher = launcher_of(json_string_value(v))) < 0) {
		snprintf(why, nwhy, "job: launcher: expected \"openmpi\", \"pmi\", \"pmix\" or \"slurm\"");
		goto out;
	}
	if (job_int(job, "rank", 0, NK__JOB_MAX_RANKS - 1, 0, &pk->rank, why, nwhy) ||
	    job_int(job, "size", 1, NK__JOB_MAX_RANKS, 1, &pk->size, why, nwhy) ||
	    job_int(job, "local_rank", 0, NK__JOB_MAX_RANKS - 1, 1, &pk->local_rank, why, nwhy) ||
	    job_int(job, "local_size", 1, NK__JOB_MAX_RANKS, 1, &pk->local_size, why, nwhy))
		goto out;
	if (pk->size >= 0 && pk->rank >= pk->size) {
		snprintf(why, nwhy, "job: rank %d is not below the job's size %d", pk->rank, pk->size);
		goto out;
	}
	if ((pk->local_rank < 0) != (pk->local_size < 0) || (pk->local_size >= 0 && pk->local_rank >= pk->local_size)) {
		snprintf(why, nwhy, "job: local rank %d of %d: expected 0 <= local_rank < local_size, or both null",
			 pk->local_rank, pk->local_size);
		goto out;
	}
	if ((rc = job_str(job, "host", 255, &pk->host, why, nwhy)) || (rc = job_str(job, "id", NK_JOB_ID_MAX, &pk->id, why, nwhy)))
		goto out;
	if ((rc = job_cpus(job, pk, why, nwhy)))
		goto out;
	pk->has_job = 1;
	rc = 0;
out:
	json_decref(o);
	return rc;
}

static int peek_meta(const char *text, size_t len, struct nk__job_peek *pk)
{
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *exe = json_object_get(o, "exe");
	int rc = 0;
	if (json_is_string(exe) && json_string_length(exe)) {
		char *e = strdup(json_string_value(exe));
		if (e) {
			free(pk->exe);
			pk->exe = e;
		} else {
			rc = -2;
		}
	}
	json_decref(o);
	return rc;
}

/* @p job_err (may be NULL): set to 1 when the error is in RUN's "job" object (the file names a job). */
static int peek(const struct src *s, const char *name, struct nk__job_peek *out, int *job_err, nk_error *err)
{
	struct nk__nkp_file_header fh;
	struct nk__job_peek pk;
	char why[256] = "", *payload = NULL;
	uint64_t off;
	int rc = 0, seen_run = 0;

	if (job_err)
		*job_err = 0;
	memset(&pk, 0, sizeof pk);
	pk.rank = pk.size = pk.local_rank = pk.local_size = -1;
	char magic[8];
	if (src_read(s, 0, magic, sizeof magic) || memcmp(magic, NK__NKP_MAGIC, 8))
		return nk__error(err, NK_EPARSE, "%s: not a numakit profile (bad magic)", name);
	if (src_read(s, 0, &fh, sizeof fh))
		return nk__error(err, NK_EPARSE, "%s: truncated: %" PRIu64 " bytes, the file header has %zu", name, s->size,
				 sizeof fh);
	if (fh.version != NK__NKP_VERSION && fh.version != NK__NKP_VERSION_RUNS)
		return nk__error(err, NK_EVERSION, "%s: profile version %" PRIu32 "; this numakit reads versions %u and %u",
				 name, fh.version, NK__NKP_VERSION, NK__NKP_VERSION_RUNS);
	if (fh.header_size < sizeof fh)
		return nk__error(err, NK_EPARSE, "%s: file header size %" PRIu32 ", less than %zu", name, fh.header_size,
				 sizeof fh);
	off = fh.header_size;
	for (int k = 0; k < PEEK_MAX_RECORDS; k++) {
		struct nk__nkp_record_header h;
		if (src_read(s, off, &h, sizeof h)) {
			rc = nk__error(err, NK_EPARSE, "%s: offset %" PRIu64 ": truncated: the file ends %s", name, off,
				       seen_run ? "before its first process's META record" : "before the RUN record");
			goto out;
		}
		uint32_t type = h.type & ~NK__NKP_OPTIONAL;
		if (h.length > NK__NKP_MAX_PAYLOAD || off + sizeof h + h.length > s->size) {
			rc = nk__error(err, NK_EPARSE, "%s: offset %" PRIu64 ": %s", name, off,
				       h.length > NK__NKP_MAX_PAYLOAD ? "record length over 16 MiB" : "truncated record");
			goto out;
		}
		if (!seen_run && type != NK__NKP_RUN) {
			rc = nk__error(err, NK_EPARSE, "%s: offset %" PRIu64 ": the first record is not RUN (type %" PRIu32 ")",
				       name, off, h.type);
			goto out;
		}
		if ((type == NK__NKP_RUN && !seen_run) || type == NK__NKP_META) {
			payload = malloc(h.length ? h.length : 1);
			if (!payload) {
				rc = nk__error(err, NK_ENOMEM, "%s: out of memory", name);
				goto out;
			}
			if (src_read(s, off + sizeof h, payload, h.length)) {
				rc = nk__error(err, NK_EIO, "%s: offset %" PRIu64 ": cannot read the record", name, off);
				goto out;
			}
			int r = type == NK__NKP_RUN ? peek_run(payload, h.length, &pk, why, sizeof why)
						    : peek_meta(payload, h.length, &pk);
			free(payload);
			payload = NULL;
			if (r == -2) {
				rc = nk__error(err, NK_ENOMEM, "%s: out of memory", name);
				goto out;
			}
			if (r) {
				if (job_err)
					*job_err = !strncmp(why, "job", 3);
				rc = nk__error(err, NK_EPARSE, "%s: offset %" PRIu64 ": RUN record: %s", name, off, why);
				goto out;
			}
			if (type == NK__NKP_META)
				break;
			seen_run = 1;
		} else if (type == NK__NKP_TRAILER) {
			break; /* a run without processes: the program is RUN's command */
		}
		off += sizeof h + h.length;
	}
	*out = pk;
	memset(&pk, 0, sizeof pk);
out:
	free(payload);
	nk__job_peek_free(&pk);
	return rc;
}

int nk__job_peek_buffer(const void *data, size_t len, const char *name, struct nk__job_peek *out, nk_error *err)
{
	if (!data || !out)
		return nk__error(err, NK_EINVAL, "nk__job_peek_buffer: NULL argument");
	struct src s = { data, NULL, len };
	return peek(&s, name ? name : "profile", out, NULL, err);
}

static int peek_file(const char *path, struct nk__job_peek *out, int *job_err, nk_error *err)
{
	struct src s = { NULL, path, 0 };
	int rc, e;
	if (job_err)
		*job_err = 0;
	if (!path || !out)
		return nk__error(err, NK_EINVAL, "nk__job_peek_file: NULL argument");
	if ((rc = nk__os_file_size(path, &s.size, &e)))
		return nk__error(err, e == ENOENT ? NK_ENOENT : NK_EIO, "%s: %s", path,
				 e == ENOENT ? "no such file" : strerror(e));
	return peek(&s, path, out, job_err, err);
}

int nk__job_peek_file(const char *path, struct nk__job_peek *out, nk_error *err)
{
	return peek_file(path, out, NULL, err);
}

/* ---------------------------------------------------------------- the inputs */

static int add_warning(char ***w, size_t *n, char *s)
{
	if (!s)
		return NK_ENOMEM;
	char **nw = realloc(*w, (*n + 1) * sizeof *nw);
	if (!nw) {
		free(s);
		return NK_ENOMEM;
	}
	*w = nw;
	nw[(*n)++] = s;
	return 0;
}

void nk__job_inputs_free(struct nk__job_inputs *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < in->n; i++) {
		free(in->paths[i]);
		if (in->peeks)
			nk__job_peek_free(&in->peeks[i]);
	}
	free(in->paths);
	free(in->peeks);
	free(in->id);
	free(in->missing);
	for (size_t i = 0; i < in->n_warnings; i++)
		free(in->warnings[i]);
	free(in->warnings);
	memset(in, 0, sizeof *in);
}

/* "rank-<digits>.nkp": the rank, else -1. */
static long rank_file(const char *name)
{
	size_t len = strlen(name);
	long v = 0;
	if (strncmp(name, "rank-", 5) || len < 10 || strcmp(name + len - 4, ".nkp"))
		return -1;
	for (const char *p = name + 5; p < name + len - 4; p++) {
		if (*p < '0' || *p > '9' || v >= NK__JOB_MAX_RANKS)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

static int push_path(struct nk__job_inputs *in, size_t *cap, char *p)
{
	if (!p)
		return NK_ENOMEM;
	if (in->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 8;
		char **np = realloc(in->paths, nc * sizeof *np);
		if (!np) {
			free(p);
			return NK_ENOMEM;
		}
		in->paths = np;
		*cap = nc;
	}
	in->paths[in->n++] = p;
	return 0;
}

struct named {
	long rank;
	char *name;
};

static int cmp_named(const void *x, const void *y)
{
	const struct named *a = x, *b = y;
	int c = NK__CMP(a->rank, b->rank);
	return c ? c : strcmp(a->name, b->name);
}

/* The rank files of folder @p dir, by rank; parts left by a rank whose profile was not written are warned about. */
static int expand_dir(const char *dir, struct nk__job_inputs *in, size_t *cap, nk_error *err)
{
	char **names = NULL;
	size_t n = 0, k = 0, found = 0;
	struct named *v = NULL;
	int rc = nk__os_list_dir(NULL, dir, NULL, &names, &n);
	size_t dl = strlen(dir);
	const char *sep = dl && dir[dl - 1] == '/' ? "" : "/";

	if (rc == NK_ENOMEM)
		return nk__error(err, NK_ENOMEM, "%s: out of memory", dir);
	if (rc)
		return nk__error(err, rc, "%s: cannot list the folder", dir);
	v = calloc(n ? n : 1, sizeof *v);
	if (!v) {
		rc = nk__error(err, NK_ENOMEM, "%s: out of memory", dir);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		if (len > 6 && !strcmp(names[i] + len - 6, ".parts") && !strncmp(names[i], "rank-", 5)) {
			if (add_warning(&in->warnings, &in->n_warnings,
					nk__aprintf("%s%s%s: parts left by a rank whose profile was not written (its numakit "
						    "profile said why)", dir, sep, names[i]))) {
				rc = nk__error(err, NK_ENOMEM, "%s: out of memory", dir);
				goto out;
			}
			continue;
		}
		long r = rank_file(names[i]);
		if (r < 0)
			continue;
		char *p = nk__aprintf("%s%s%s", dir, sep, names[i]);
		if (!p) {
			rc = nk__error(err, NK_ENOMEM, "%s: out of memory", dir);
			goto out;
		}
		if (nk__os_is_dir(p, NULL) == 1) {
			free(p);
			continue;
		}
		v[k].rank = r;
		v[k++].name = p;
	}
	qsort(v, k, sizeof *v, cmp_named);
	for (size_t i = 0; i < k; i++) {
		rc = push_path(in, cap, v[i].name);
		v[i].name = NULL;
		if (rc) {
			rc = nk__error(err, NK_ENOMEM, "%s: out of memory", dir);
			goto out;
		}
		found++;
	}
	if (!found)
		rc = nk__error(err, NK_ENOENT, "%s: no rank profile (rank-N.nkp) in this folder: a job's profile is the "
			       "folder `numakit profile -o` makes under a launcher", dir);
out:
	for (size_t i = 0; v && i < k; i++)
		free(v[i].name);
	free(v);
	nk__os_free_names(names, n);
	return rc;
}

struct item {
	struct nk__job_peek *pk;
	char *path;
};

static int cmp_peek_rank(const void *x, const void *y)
{
	const struct item *a = x, *b = y;
	int c = NK__CMP(a->pk->rank, b->pk->rank);
	return c ? c : strcmp(a->path, b->path);
}

int nk__job_check(struct nk__job_inputs *in, nk_error *err)
{
	struct item *it = NULL;
	int rc = 0;
	size_t first_id = SIZE_MAX;

	if (!in || !in->n || !in->peeks)
		return nk__error(err, NK_EINVAL, "nk__job_check: no rank");
	for (size_t i = 0; i < in->n; i++)
		if (!in->peeks[i].has_job) {
			size_t j = 0;
			while (j < in->n && !in->peeks[j].has_job)
				j++;
			if (j == in->n)
				return nk__error(err, NK_EINVAL, "%s: not a rank of a job (its RUN record has no \"job\"): "
						 "a job's profile is the folder `numakit profile -o` makes under a launcher",
						 in->paths[i]);
			return nk__error(err, NK_EINVAL,
					 "%s is rank %d of a job and %s is not a rank of a job: a job's rank files do not "
					 "combine with other profiles", in->paths[j], in->peeks[j].rank, in->paths[i]);
		}
	it = malloc(in->n * sizeof *it);
	if (!it)
		return nk__error(err, NK_ENOMEM, "job: out of memory");
	for (size_t i = 0; i < in->n; i++)
		it[i] = (struct item){ &in->peeks[i], in->paths[i] };
	const struct item *a = &it[0];
	in->launcher = a->pk->launcher;
	in->size = -1;
	for (size_t i = 0; i < in->n; i++) {
		const struct item *b = &it[i];
		if (strcmp(a->pk->exe, b->pk->exe)) {
			rc = nk__error(err, NK_EINVAL,
				       "%s (rank %d) is of program %s and %s (rank %d) of %s: the ranks of one job run one "
				       "program (an MPMD job: report each program's ranks apart)",
				       b->path, b->pk->rank, b->pk->exe, a->path, a->pk->rank, a->pk->exe);
			goto out;
		}
		if (b->pk->launcher != a->pk->launcher) {
			rc = nk__error(err, NK_EINVAL, "%s (rank %d) was started by %s and %s (rank %d) by %s: parts of "
				       "different jobs do not combine", b->path, b->pk->rank, nk_launcher_name(b->pk->launcher),
				       a->path, a->pk->rank, nk_launcher_name(a->pk->launcher));
			goto out;
		}
		if (b->pk->id) {
			if (first_id == SIZE_MAX) {
				first_id = i;
			} else if (strcmp(b->pk->id, it[first_id].pk->id)) {
				rc = nk__error(err, NK_EINVAL, "%s (rank %d) is of job %s and %s (rank %d) of job %s: parts of "
					       "different jobs do not combine", b->path, b->pk->rank, b->pk->id,
					       it[first_id].path, it[first_id].pk->rank, it[first_id].pk->id);
				goto out;
			}
		}
		if (b->pk->size >= 0) {
			if (in->size < 0) {
				in->size = b->pk->size;
			} else if (b->pk->size != in->size) {
				size_t j = 0;
				while (it[j].pk->size != in->size)
					j++;
				rc = nk__error(err, NK_EINVAL, "%s (rank %d) is of a job of %d ranks and %s (rank %d) of one of "
					       "%d: parts of different jobs do not combine", b->path, b->pk->rank,
					       b->pk->size, it[j].path, it[j].pk->rank, in->size);
				goto out;
			}
		}
	}
	qsort(it, in->n, sizeof *it, cmp_peek_rank);
	for (size_t i = 1; i < in->n; i++)
		if (it[i].pk->rank == it[i - 1].pk->rank) {
			rc = nk__error(err, NK_EINVAL, "%s and %s are both rank %d%s%s: one profile per rank (a rank "
				       "profiled twice, or two jobs in one folder?)", it[i - 1].path, it[i].path,
				       it[i].pk->rank, it[i].pk->id ? " of job " : "", it[i].pk->id ? it[i].pk->id : "");
			goto out;
		}
	for (size_t i = 0; i < in->n; i++)
		if (in->size >= 0 && it[i].pk->rank >= in->size) {
			rc = nk__error(err, NK_EINVAL, "%s: rank %d in a job of %d ranks", it[i].path, it[i].pk->rank,
				       in->size);
			goto out;
		}
	/* the order of the ranks: paths and peeks together */
	{
		char **paths = malloc(in->n * sizeof *paths);
		struct nk__job_peek *peeks = malloc(in->n * sizeof *peeks);
		if (!paths || !peeks) {
			free(paths);
			free(peeks);
			rc = nk__error(err, NK_ENOMEM, "job: out of memory");
			goto out;
		}
		for (size_t i = 0; i < in->n; i++) {
			paths[i] = it[i].path;
			peeks[i] = *it[i].pk;
		}
		free(in->paths);
		free(in->peeks);
		in->paths = paths;
		in->peeks = peeks;
	}
	free(it);
	it = NULL;
	/* warnings: missing ranks, ranks without an id, ranks without an id started far apart */
	if (in->size > 0 && (size_t)in->size > in->n) {
		in->missing = malloc(((size_t)in->size - in->n) * sizeof *in->missing);
		if (!in->missing) {
			rc = nk__error(err, NK_ENOMEM, "job: out of memory");
			goto out;
		}
		size_t k = 0;
		for (int r = 0, i = 0; r < in->size; r++) {
			while ((size_t)i < in->n && in->peeks[i].rank < r)
				i++;
			if ((size_t)i == in->n || in->peeks[i].rank != r)
				in->missing[k++] = r;
		}
		in->n_missing = k;
		char *l = nk__format_list_alloc(in->missing, k);
		if (!l || add_warning(&in->warnings, &in->n_warnings,
				      nk__aprintf("%zu of the job's %d ranks %s no profile here (rank%s %s): the job's "
						  "totals are those of the %zu present", k, in->size, k == 1 ? "has" : "have",
						  k == 1 ? "" : "s", l, in->n))) {
			free(l);
			rc = nk__error(err, NK_ENOMEM, "job: out of memory");
			goto out;
		}
		free(l);
	} else if (in->size < 0 &&
		   add_warning(&in->warnings, &in->n_warnings,
			       strdup("the launcher did not say how many ranks the job has: missing ranks cannot be named"))) {
		rc = nk__error(err, NK_ENOMEM, "job: out of memory");
		goto out;
	}
	if (first_id != SIZE_MAX) {
		for (size_t i = 0; i < in->n; i++)
			if (in->peeks[i].id && !in->id && !(in->id = strdup(in->peeks[i].id))) {
				rc = nk__error(err, NK_ENOMEM, "job: out of memory");
				goto out;
			}
		int *noid = malloc(in->n * sizeof *noid);
		size_t k = 0;
		if (!noid) {
			rc = nk__error(err, NK_ENOMEM, "job: out of memory");
			goto out;
		}
		for (size_t i = 0; i < in->n; i++)
			if (!in->peeks[i].id)
				noid[k++] = in->peeks[i].rank;
		if (k) {
			char *l = nk__format_list_alloc(noid, k);
			if (!l || add_warning(&in->warnings, &in->n_warnings,
					      nk__aprintf("rank%s %s carr%s no job id, the others job %s: taken as one job",
							  k > 1 ? "s" : "", l, k > 1 ? "y" : "ies", in->id))) {
				free(l);
				free(noid);
				rc = nk__error(err, NK_ENOMEM, "job: out of memory");
				goto out;
			}
			free(l);
		}
		free(noid);
	} else {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (size_t i = 0; i < in->n; i++) {
			uint64_t t = in->peeks[i].start_unix_ns;
			if (!t)
				continue;
			lo = t < lo ? t : lo;
			hi = t > hi ? t : hi;
		}
		if (lo != UINT64_MAX && hi - lo > (uint64_t)NK__JOB_SPREAD_S * 1000000000ull &&
		    add_warning(&in->warnings, &in->n_warnings,
				nk__aprintf("the ranks carry no job id (%s gives none) and started %.0f s apart: are they of "
					    "one job?", nk_launcher_name(in->launcher), (double)(hi - lo) / 1e9))) {
			rc = nk__error(err, NK_ENOMEM, "job: out of memory");
			goto out;
		}
	}
out:
	free(it);
	return rc;
}

int nk__job_inputs(const char *const *paths, size_t n, struct nk__job_inputs *out, nk_error *err)
{
	struct nk__job_inputs in;
	size_t cap = 0;
	int rc = 0, dirs = 0;

	if (!paths || !n || !out)
		return nk__error(err, NK_EINVAL, "nk__job_inputs: no profile");
	memset(&in, 0, sizeof in);
	for (size_t i = 0; i < n; i++) {
		if (!paths[i]) {
			rc = nk__error(err, NK_EINVAL, "nk__job_inputs: NULL path");
			goto fail;
		}
		if (nk__os_is_dir(paths[i], NULL) == 1) {
			dirs++;
			if ((rc = expand_dir(paths[i], &in, &cap, err)))
				goto fail;
		} else if ((rc = push_path(&in, &cap, strdup(paths[i])))) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto fail;
		}
	}
	in.peeks = calloc(in.n, sizeof *in.peeks);
	if (!in.peeks) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto fail;
	}
	/* Whether it is a job: a folder, or a file whose RUN has a job.  A file that cannot be peeked at is left
	 * to the loader when no folder was given: its messages are the ones `numakit report FILE` always gave. */
	int jobs = 0, bad = 0;
	nk_error first = { 0, "" };
	for (size_t i = 0; i < in.n; i++) {
		nk_error e = { 0, "" };
		int job_err = 0;
		int r = peek_file(in.paths[i], &in.peeks[i], &job_err, &e);
		if (r == NK_ENOMEM) {
			rc = nk__error(err, NK_ENOMEM, "%s: out of memory", in.paths[i]);
			goto fail;
		}
		if (r) {
			if (!bad++)
				first = e;
			/* a RUN whose job object is wrong names a job: that is the error to give */
			if (job_err) {
				rc = nk__error(err, r, "%s", e.message);
				goto fail;
			}
			continue;
		}
		jobs += in.peeks[i].has_job;
	}
	/* One rank file alone is the complete profile of that rank: its own report, as before */
	in.is_job = dirs || (jobs && n > 1);
	if (!in.is_job) {
		for (size_t i = 0; i < in.n; i++)
			nk__job_peek_free(&in.peeks[i]);
		free(in.peeks);
		in.peeks = NULL;
		*out = in;
		return 0;
	}
	if (bad) {
		rc = nk__error(err, first.code, "%s", first.message);
		goto fail;
	}
	if ((rc = nk__job_check(&in, err)))
		goto fail;
	*out = in;
	return 0;
fail:
	nk__job_inputs_free(&in);
	return rc;
}

/* ---------------------------------------------------------------- the interval sums */

/*
 * The sums of the rank's samples with both nodes known: in total (@p total) and per variable (@p vars,
 * a->n_vars of them).  Clusters as the analysis makes them: pagefault samples in 16-page groups counted
 * from the first page of their variable instance and in 10 ms rounds, every other sample its own
 * cluster (the sampler of a rank's run is its RUN sampler): nk__an_pf_clusters, the analysis's rule.
 * Returns 0 or NK_ENOMEM.
 */
static int rank_sums(const struct nk__analysis *a, struct nk__cl_stats *total, struct nk__cl_stats *vars)
{
	size_t n = 0;
	uint64_t ps = a->page_size ? a->page_size : 4096;
	int grouped = a->sampler && !strcmp(a->sampler, "pagefault");
	struct nk__cl_rec *cr = malloc((a->n_attr ? a->n_attr : 1) * sizeof *cr);
	if (!cr)
		return NK_ENOMEM;
	for (size_t i = 0; i < a->n_attr; i++) {
		const struct nk__an_sample *s = &a->attr[i];
		if (s->cpu_node < 0 || s->page_node < 0 || s->var >= a->n_vars)
			continue;
		struct nk__cl_rec *c = &cr[n];
		c->var = s->var;
		c->proc = s->proc;
		c->w = s->weight ? s->weight : 1;
		c->remote = s->cpu_node != s->page_node;
		c->grouped = (uint8_t)grouped;
		if (grouped)
			nk__an_pf_clusters(s->addr, s->lo, s->hi, ps, s->time_ns, &c->cl, &c->round);
		else
			c->cl = c->round = n;
		n++;
	}
	nk__cl_sums(cr, n, total, vars, a->n_vars);
	free(cr);
	return 0;
}

/* The share and interval of the pooled sums @p st[0..n) (docs/report.md, "What the numbers estimate"). */
static void pool(const struct nk__cl_stats *const *st, size_t n, struct nk__job_share *out)
{
	struct nk__an_ci ci;
	double r;
	uint64_t clusters, known = 0;
	double sw = 0;

	memset(out, 0, sizeof *out);
	out->hi = 1;
	for (size_t i = 0; i < n; i++) {
		known += st[i]->known;
		sw += st[i]->sw;
	}
	if (!known || sw <= 0)
		return;
	nk__cl_pool(st, n, &r, &clusters, &ci);
	out->known = 1;
	out->r = r;
	out->lo = ci.lo;
	out->hi = ci.hi;
	out->n_eff = ci.n_eff;
	out->clusters = clusters;
	out->samples = known;
	out->decided = clusters >= NK__AN_MIN_CLUSTERS && (ci.hi - ci.lo) / 2 <= NK__AN_CI_HALF + 1e-12;
}

/* ---------------------------------------------------------------- the job */

/* The job's variable of @p key, created when new (-1: out of memory).  Linear in the rank's variables is too
 * slow for many ranks: a small open-addressing table over the job's variables. */
struct vtab {
	size_t *slot; /* index + 1, 0 empty */
	size_t cap;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static long var_of(struct nk__job *j, struct vtab *t, size_t *cap, const struct nk__an_var *v)
{
	if (2 * (j->n_vars + 1) > t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 64;
		size_t *ns = calloc(nc, sizeof *ns);
		if (!ns)
			return -1;
		for (size_t i = 0; i < j->n_vars; i++) {
			size_t h = hash_str(j->vars[i].key) & (nc - 1);
			while (ns[h])
				h = (h + 1) & (nc - 1);
			ns[h] = i + 1;
		}
		free(t->slot);
		t->slot = ns;
		t->cap = nc;
	}
	size_t h = hash_str(v->key) & (t->cap - 1);
	while (t->slot[h]) {
		if (!strcmp(j->vars[t->slot[h] - 1].key, v->key))
			return (long)(t->slot[h] - 1);
		h = (h + 1) & (t->cap - 1);
	}
	if (j->n_vars == *cap) {
		size_t nc = *cap ? 2 * *cap : 32;
		struct nk__job_var *nv = realloc(j->vars, nc * sizeof *nv);
		if (!nv)
			return -1;
		j->vars = nv;
		*cap = nc;
	}
	struct nk__job_var *jv = &j->vars[j->n_vars];
	memset(jv, 0, sizeof *jv);
	jv->key = strdup(v->key);
	jv->name = strdup(v->name);
	jv->kind = v->kind;
	jv->median = -1;
	if (!jv->key || !jv->name) {
		free(jv->key);
		free(jv->name);
		return -1;
	}
	t->slot[h] = ++j->n_vars;
	return (long)(j->n_vars - 1);
}

struct nk__job_build {
	struct vtab t;
	size_t cap_vars, cap_ranks;
};

static void build_free(struct nk__job *j)
{
	if (j->build) {
		free(j->build->t.slot);
		free(j->build);
		j->build = NULL;
	}
}

static void free_rank(struct nk__job_rank *r)
{
	free(r->path);
	free(r->host);
	free(r->command);
	free(r->sampler);
	free(r->node_ids);
	free(r->acc_page);
	free(r->samples_page);
	free(r->coverage);
	for (size_t i = 0; i < r->n_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->differs);
	free(r->machine_json);
	free(r->comm);
}

void nk__job_free(struct nk__job *j)
{
	if (!j)
		return;
	build_free(j);
	free(j->program);
	free(j->exe);
	free(j->sampler);
	free(j->id);
	for (size_t i = 0; i < j->n_ranks; i++)
		free_rank(&j->ranks[i]);
	free(j->ranks);
	for (size_t i = 0; i < j->n_hosts; i++) {
		free(j->hosts[i].name);
		free(j->hosts[i].ranks);
		free(j->hosts[i].node_ids);
	}
	free(j->hosts);
	for (size_t i = 0; i < j->n_vars; i++) {
		free(j->vars[i].key);
		free(j->vars[i].name);
		free(j->vars[i].per);
	}
	free(j->vars);
	free(j->order);
	free(j->missing);
	free(j->pairs);
	for (size_t i = 0; i < j->n_warnings; i++)
		free(j->warnings[i]);
	free(j->warnings);
	free(j);
}

int nk__job_begin(const struct nk__job_inputs *in, struct nk__job **out)
{
	struct nk__job *j = calloc(1, sizeof *j);
	if (!j)
		return NK_ENOMEM;
	if (!(j->build = calloc(1, sizeof *j->build))) {
		free(j);
		return NK_ENOMEM;
	}
	j->launcher = in ? in->launcher : NK_LAUNCHER_NONE;
	j->size = in ? in->size : -1;
	j->median = j->median_load = -1;
	if (in && in->id && !(j->id = strdup(in->id)))
		goto oom;
	if (in && in->n && in->peeks && !(j->exe = strdup(in->peeks[0].exe)))
		goto oom;
	if (in && in->n_missing) {
		if (!(j->missing = malloc(in->n_missing * sizeof *j->missing)))
			goto oom;
		memcpy(j->missing, in->missing, in->n_missing * sizeof *j->missing);
		j->n_missing = in->n_missing;
	}
	for (size_t i = 0; in && i < in->n_warnings; i++)
		if (add_warning(&j->warnings, &j->n_warnings, strdup(in->warnings[i])))
			goto oom;
	*out = j;
	return 0;
oom:
	nk__job_free(j);
	return NK_ENOMEM;
}

static int text_share(const struct nk__an_var *v, struct nk__job_share *s)
{
	memset(s, 0, sizeof *s);
	s->hi = 1;
	if (!v->known_samples)
		return 0;
	uint64_t k = v->local + v->remote;
	s->known = 1;
	s->r = k ? (double)v->remote / (double)k : (v->ci_lo + v->ci_hi) / 2;
	s->lo = v->ci_lo;
	s->hi = v->ci_hi;
	s->n_eff = v->n_eff;
	s->clusters = v->clusters;
	s->samples = v->known_samples;
	s->decided = nk__an_decided(v);
	return 0;
}

/* The number of cpus of a machine text (its cpus array), 0 unknown. */
static int machine_cpus(const char *machine_json)
{
	json_t *m = machine_json ? json_loads(machine_json, 0, NULL) : NULL;
	int n = (int)json_array_size(json_object_get(m, "cpus"));
	json_decref(m);
	return n;
}

int nk__job_add_rank(struct nk__job *j, const struct nk__job_peek *pk, const char *path, const struct nk__analysis *a)
{
	struct nk__job_build *jb = j->build;
	struct nk__cl_stats *vst = NULL;
	int rc = NK_ENOMEM;

	if (!jb)
		return NK_EINVAL;
	if (j->n_ranks == jb->cap_ranks) {
		size_t nc = jb->cap_ranks ? 2 * jb->cap_ranks : 16;
		struct nk__job_rank *nr = realloc(j->ranks, nc * sizeof *nr);
		if (!nr)
			return NK_ENOMEM;
		j->ranks = nr;
		jb->cap_ranks = nc;
	}
	size_t ri = j->n_ranks;
	struct nk__job_rank *r = &j->ranks[ri];
	memset(r, 0, sizeof *r);
	j->n_ranks++; /* freed with the job from here on */
	r->rank = pk->rank;
	r->local_rank = pk->local_rank;
	r->local_size = pk->local_size;
	r->path = strdup(path);
	r->host = strdup(pk->host ? pk->host : "");
	r->command = strdup(pk->command ? pk->command : "?");
	r->sampler = strdup(a->sampler ? a->sampler : "?");
	if (!r->path || !r->host || !r->command || !r->sampler)
		goto out;
	if (a->machine_json && !(r->machine_json = strdup(a->machine_json)))
		goto out;
	if (!j->program && !(j->program = strdup(a->program ? a->program : "?")))
		goto out;
	r->wall_ns = a->wall_ns;
	r->processes = a->n_procs;
	r->runs = a->runs > 1 ? a->runs : 1;
	r->samples = a->samples;
	r->acc = a->acc;
	r->local = a->local;
	r->remote = a->remote;
	r->unknown = a->unknown;
	r->n_nodes = a->n_nodes;
	size_t nn = a->n_nodes > 0 ? (size_t)a->n_nodes : 1;
	r->node_ids = calloc(nn, sizeof *r->node_ids);
	r->acc_page = calloc(nn, sizeof *r->acc_page);
	r->samples_page = calloc(nn, sizeof *r->samples_page);
	if (!r->node_ids || !r->acc_page || !r->samples_page)
		goto out;
	uint64_t served = 0;
	for (int i = 0; i < a->n_nodes; i++) {
		r->node_ids[i] = a->node_ids[i];
		r->acc_page[i] = a->node_pages_acc ? a->node_pages_acc[i] : 0;
		served += r->acc_page[i];
	}
	r->acc_page_unknown = a->acc > served ? a->acc - served : 0;
	r->cpu_node = -1;
	uint64_t most = 0;
	for (int i = 0; i < a->n_nodes; i++) {
		uint64_t from = (a->node_local ? a->node_local[i] : 0) + (a->node_remote ? a->node_remote[i] : 0);
		if (from > most) {
			most = from;
			r->cpu_node = a->node_ids[i];
		}
	}
	for (size_t i = 0; i < a->n_attr; i++) {
		int k = a->attr[i].page_node >= 0 ? nk__an_node_index(a, a->attr[i].page_node) : -1;
		if (k >= 0)
			r->samples_page[k]++;
		else
			r->samples_page_unknown++;
	}
	r->covered = a->covered;
	if (!a->covered && nk__coverage_text(a, &r->coverage))
		goto out;
	if (a->comm_procs) {
		r->comm_procs = a->comm_procs;
		r->comm_size = a->comm_size;
		r->n_comm = a->n_comm;
		if (!(r->comm = malloc((a->n_comm ? a->n_comm : 1) * sizeof *r->comm)))
			goto out;
		memcpy(r->comm, a->comm, a->n_comm * sizeof *r->comm);
	}
	for (size_t i = 0; i < a->n_warnings; i++)
		if (add_warning(&r->warnings, &r->n_warnings, strdup(a->warnings[i])))
			goto out;
	vst = calloc(a->n_vars ? a->n_vars : 1, sizeof *vst);
	if (!vst || rank_sums(a, &r->st, vst))
		goto out;
	{
		const struct nk__cl_stats *one = &r->st;
		pool(&one, 1, &r->share);
	}
	for (size_t v = 0; v < a->n_vars; v++) {
		const struct nk__an_var *av = &a->vars[v];
		long k = var_of(j, &jb->t, &jb->cap_vars, av);
		if (k < 0)
			goto out;
		struct nk__job_var *jv = &j->vars[k];
		struct nk__job_vrank *np = realloc(jv->per, (jv->n_per + 1) * sizeof *np);
		if (!np)
			goto out;
		jv->per = np;
		struct nk__job_vrank *p = &np[jv->n_per++];
		memset(p, 0, sizeof *p);
		p->rank = ri;
		p->samples = av->samples;
		p->acc = av->acc;
		p->local = av->local;
		p->remote = av->remote;
		text_share(av, &p->share);
		p->st = vst[v];
		p->diag = av->diag;
		p->fix = av->fix;
		p->policy = av->policy;
		if (av->size > jv->size)
			jv->size = av->size;
		jv->samples += av->samples;
		jv->acc += av->acc;
		jv->local += av->local;
		jv->remote += av->remote;
		jv->unknown += av->unknown;
		if (av->diag >= 0 && av->diag < 5)
			jv->diag_count[av->diag]++;
		if (r->n_top < NK__JOB_TOP && av->acc) {
			r->top[r->n_top] = (size_t)k;
			r->top_per[r->n_top++] = jv->n_per - 1;
		}
	}
	rc = 0;
out:
	free(vst);
	return rc;
}

static int cmp_double(double a, double b)
{
	return (a > b) - (a < b);
}

struct vord {
	uint64_t remote, acc;
	const char *key;
	size_t i;
};

static int cmp_vord(const void *x, const void *y)
{
	const struct vord *a = x, *b = y;
	int c;
	if ((c = NK__CMP(b->remote, a->remote)) || (c = NK__CMP(b->acc, a->acc)))
		return c;
	return strcmp(a->key, b->key);
}

struct kv {
	double v;
	size_t i;
};

static int cmp_kv(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;
	int c = cmp_double(a->v, b->v);
	return c ? c : NK__CMP(a->i, b->i);
}

/* Whether share @p s differs from the median's @p m: intervals apart and at least NK__JOB_DIFF apart. */
static int share_differs(const struct nk__job_share *s, const struct nk__job_share *m)
{
	return s->known && m->known && (s->hi < m->lo || s->lo > m->hi) && fabs(s->r - m->r) >= NK__JOB_DIFF - 1e-12;
}

static int pct_round(double x)
{
	return (int)floor(100 * x + 0.5);
}

/* The ranks that differ from the others: remote share, then load. */
static int decide_ranks(struct nk__job *j)
{
	struct kv *kv = malloc((j->n_ranks ? j->n_ranks : 1) * sizeof *kv);
	size_t n = 0;
	if (!kv)
		return NK_ENOMEM;
	for (size_t i = 0; i < j->n_ranks; i++)
		if (j->ranks[i].share.known)
			kv[n++] = (struct kv){ j->ranks[i].share.r, i };
	if (n >= NK__JOB_MIN_RANKS) {
		qsort(kv, n, sizeof *kv, cmp_kv);
		j->median = (int)kv[(n - 1) / 2].i;
	}
	n = 0;
	for (size_t i = 0; i < j->n_ranks; i++)
		if (j->ranks[i].acc)
			kv[n++] = (struct kv){ (double)j->ranks[i].acc, i };
	if (n >= NK__JOB_MIN_RANKS) {
		qsort(kv, n, sizeof *kv, cmp_kv);
		j->median_load = (int)kv[(n - 1) / 2].i;
	}
	free(kv);
	for (size_t i = 0; i < j->n_ranks; i++) {
		struct nk__job_rank *r = &j->ranks[i];
		struct nk__strbuf b = { 0 };
		if (j->median >= 0 && (int)i != j->median) {
			const struct nk__job_rank *m = &j->ranks[j->median];
			if (share_differs(&r->share, &m->share))
				nk__strbuf_printf(&b, "%.1f%% [%d,%d] of its accesses remote, the median rank (%d) %.1f%% "
						  "[%d,%d]", 100 * r->share.r, pct_round(r->share.lo), pct_round(r->share.hi),
						  m->rank, 100 * m->share.r, pct_round(m->share.lo), pct_round(m->share.hi));
		}
		if (j->median_load >= 0 && (int)i != j->median_load) {
			const struct nk__job_rank *m = &j->ranks[j->median_load];
			double f = m->acc ? (double)r->acc / (double)m->acc : 0;
			if (m->acc && (f > NK__JOB_LOAD || f < 1 / NK__JOB_LOAD))
				nk__strbuf_printf(&b, "%s%.2fx the accesses of the median rank (%d)", b.len ? "; " : "", f,
						  m->rank);
		}
		if (b.oom) {
			free(b.s);
			return NK_ENOMEM;
		}
		if (b.len) {
			r->differs = nk__strbuf_take(&b);
			if (!r->differs)
				return NK_ENOMEM;
			j->n_differ++;
		}
		free(b.s);
	}
	return 0;
}

/* A variable's ranks whose share differs from its median rank's. */
static int decide_var(struct nk__job_var *v)
{
	struct kv *kv = malloc((v->n_per ? v->n_per : 1) * sizeof *kv);
	size_t n = 0;
	if (!kv)
		return NK_ENOMEM;
	for (size_t i = 0; i < v->n_per; i++)
		if (v->per[i].share.known)
			kv[n++] = (struct kv){ v->per[i].share.r, i };
	if (n >= NK__JOB_MIN_RANKS) {
		qsort(kv, n, sizeof *kv, cmp_kv);
		v->median = (int)kv[(n - 1) / 2].i;
		for (size_t i = 0; i < v->n_per; i++)
			if ((int)i != v->median && share_differs(&v->per[i].share, &v->per[v->median].share)) {
				v->per[i].differs = 1;
				v->n_differ++;
			}
	}
	free(kv);
	return 0;
}

/*
 * Hosts: the ranks grouped by host name and machine.  A host name with two machines (containers that all
 * call themselves "localhost", a name reused) is two hosts, and said: its ranks are not on one machine.
 */
static int hosts_build(struct nk__job *j)
{
	char **topo = calloc(j->n_ranks ? j->n_ranks : 1, sizeof *topo); /* per rank */
	char **kinds = calloc(j->n_ranks ? j->n_ranks : 1, sizeof *kinds); /* distinct topologies (borrowed) */
	int rc = NK_ENOMEM, reused = 0;
	j->hosts = calloc(j->n_ranks ? j->n_ranks : 1, sizeof *j->hosts);
	if (!j->hosts || !topo || !kinds)
		goto out;
	for (size_t i = 0; i < j->n_ranks; i++)
		if (!(topo[i] = nk__nkp_topology(j->ranks[i].machine_json ? j->ranks[i].machine_json : "{}")))
			goto out;
	for (size_t i = 0; i < j->n_ranks; i++) {
		struct nk__job_rank *r = &j->ranks[i];
		size_t h = 0;
		while (h < j->n_hosts && (strcmp(j->hosts[h].name, r->host) || strcmp(topo[j->hosts[h].ranks[0]], topo[i])))
			h++;
		if (h == j->n_hosts) {
			struct nk__job_host *nh = &j->hosts[j->n_hosts++];
			if (!(nh->name = strdup(r->host)) || !(nh->ranks = malloc(j->n_ranks * sizeof *nh->ranks)) ||
			    !(nh->node_ids = malloc((r->n_nodes > 0 ? (size_t)r->n_nodes : 1) * sizeof *nh->node_ids)))
				goto out;
			nh->n_nodes = r->n_nodes;
			memcpy(nh->node_ids, r->node_ids, (size_t)(r->n_nodes > 0 ? r->n_nodes : 0) * sizeof *nh->node_ids);
			nh->cpus = machine_cpus(r->machine_json);
			int g = 0;
			while (g < j->topologies && strcmp(kinds[g], topo[i]))
				g++;
			if (g == j->topologies)
				kinds[j->topologies++] = topo[i];
			nh->topology = g;
			for (size_t k = 0; k + 1 < j->n_hosts; k++)
				reused |= !strcmp(j->hosts[k].name, nh->name);
		}
		j->hosts[h].ranks[j->hosts[h].n_ranks++] = i;
		r->host_index = h;
	}
	if (reused && add_warning(&j->warnings, &j->n_warnings,
				  strdup("ranks with one host name ran on different machines (containers that share a "
					 "name?): they are listed as several hosts of that name")))
		goto out;
	if (j->topologies > 1 &&
	    add_warning(&j->warnings, &j->n_warnings,
			nk__aprintf("the hosts are %d kinds of machine (nodes, cpus or distances differ): a node number means "
				    "another node on another kind; the rank x node table is per host", j->topologies)))
		goto out;
	rc = 0;
out:
	for (size_t i = 0; topo && i < j->n_ranks; i++)
		free(topo[i]);
	free(topo);
	free(kinds);
	return rc;
}

/* The ranks' warnings, each text once with the ranks that gave it ("ranks 0-3: ..."), after the job's own:
 * a job of a thousand ranks falling back to the same sampler says so once. */
static int group_warnings(struct nk__job *j)
{
	int *ranks = malloc((j->n_ranks ? j->n_ranks : 1) * sizeof *ranks);
	int rc = NK_ENOMEM;
	if (!ranks)
		return NK_ENOMEM;
	for (size_t i = 0; i < j->n_ranks; i++)
		for (size_t k = 0; k < j->ranks[i].n_warnings; k++) {
			const char *w = j->ranks[i].warnings[k];
			int seen = 0;
			for (size_t i2 = 0; i2 <= i && !seen; i2++)
				for (size_t k2 = 0; k2 < j->ranks[i2].n_warnings && !seen; k2++)
					seen = (i2 < i || k2 < k) && !strcmp(j->ranks[i2].warnings[k2], w);
			if (seen)
				continue;
			size_t n = 0;
			for (size_t i2 = i; i2 < j->n_ranks; i2++)
				for (size_t k2 = 0; k2 < j->ranks[i2].n_warnings; k2++)
					if (!strcmp(j->ranks[i2].warnings[k2], w)) {
						ranks[n++] = j->ranks[i2].rank;
						break;
					}
			char *l = nk__format_list_alloc(ranks, n);
			int wl = (int)strlen(w);
			while (wl > 0 && (w[wl - 1] == '\n' || w[wl - 1] == ' '))
				wl--;
			int bad = !l || add_warning(&j->warnings, &j->n_warnings,
						    nk__aprintf("rank%s %s: %.*s", n > 1 ? "s" : "", l, wl, w));
			free(l);
			if (bad)
				goto out;
		}
	rc = 0;
out:
	free(ranks);
	return rc;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct nk__job_pair *a = x, *b = y;
	return a->from != b->from ? (a->from > b->from) - (a->from < b->from) : (a->to > b->to) - (a->to < b->to);
}

/*
 * The job's MPI traffic from its ranks' COMM sums: every (from, to) pair, means per run of the sender.  A rank
 * whose MPI_COMM_WORLD rank or size is not the launcher's, and ranks without traffic among ranks with it,
 * are warned about (the first: its traffic is left out).  0 or NK_ENOMEM.
 */
static int comm_build(struct nk__job *j)
{
	size_t n = 0, without = 0;
	int first_without = -1;
	for (size_t i = 0; i < j->n_ranks; i++)
		n += j->ranks[i].n_comm;
	if (!(j->pairs = calloc(n ? n : 1, sizeof *j->pairs)))
		return NK_ENOMEM;
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *r = &j->ranks[i];
		if (!r->comm_procs) {
			if (!without++)
				first_without = r->rank;
			continue;
		}
		uint32_t other = r->rank;
		for (size_t k = 0; k < r->n_comm && other == (uint32_t)r->rank; k++)
			other = r->comm[k].from;
		if (r->rank < 0 || other != (uint32_t)r->rank || (j->size >= 0 && r->comm_size != (uint32_t)j->size)) {
			if (add_warning(&j->warnings, &j->n_warnings,
					nk__aprintf("rank %d is rank %u of %u in MPI_COMM_WORLD: its MPI traffic is left out",
						    r->rank, other, r->comm_size)))
				return NK_ENOMEM;
			continue;
		}
		j->comm_ranks++;
		uint64_t runs = r->runs > 1 ? (uint64_t)r->runs : 1;
		for (size_t k = 0; k < r->n_comm; k++) {
			const struct nk__an_comm_peer *c = &r->comm[k];
			struct nk__job_pair *p = NULL;
			if (j->n_pairs && j->pairs[j->n_pairs - 1].from == (int)c->from &&
			    j->pairs[j->n_pairs - 1].to == (int)c->peer)
				p = &j->pairs[j->n_pairs - 1]; /* the comm sums come by peer, then kind */
			else
				p = &j->pairs[j->n_pairs++];
			p->from = (int)c->from;
			p->to = (int)c->peer;
			uint64_t m = (c->messages + runs / 2) / runs, b = (c->bytes + runs / 2) / runs;
			if (c->kind == NK__COMM_COLL) {
				p->coll_messages += m;
				p->coll_bytes += b;
			} else {
				p->p2p_messages += m;
				p->p2p_bytes += b;
			}
			j->comm_bytes += b;
		}
	}
	qsort(j->pairs, j->n_pairs, sizeof *j->pairs, cmp_pair);
	if (j->comm_ranks && without &&
	    add_warning(&j->warnings, &j->n_warnings,
			nk__aprintf("%zu of %zu ranks recorded no MPI traffic (rank %d first): the traffic is that of the "
				    "others", without, j->n_ranks, first_without)))
		return NK_ENOMEM;
	return 0;
}

int nk__job_finish(struct nk__job *j)
{
	const struct nk__cl_stats **sts = NULL;
	int rc = NK_ENOMEM;

	build_free(j);
	if (!j->program && !(j->program = strdup("?")))
		return NK_ENOMEM;
	if (!j->exe && !(j->exe = strdup(j->program)))
		return NK_ENOMEM;
	/* totals */
	j->covered = 1;
	for (size_t i = 0; i < j->n_ranks; i++) {
		const struct nk__job_rank *r = &j->ranks[i];
		j->samples += r->samples;
		j->acc += r->acc;
		j->local += r->local;
		j->remote += r->remote;
		j->unknown += r->unknown;
		j->processes += r->processes;
		j->wall_ns = r->wall_ns > j->wall_ns ? r->wall_ns : j->wall_ns;
		j->covered &= r->covered;
		if (!j->sampler) {
			if (!(j->sampler = strdup(r->sampler)))
				return NK_ENOMEM;
		} else if (strcmp(j->sampler, r->sampler) && strcmp(j->sampler, "mixed")) {
			free(j->sampler);
			if (!(j->sampler = strdup("mixed")) ||
			    add_warning(&j->warnings, &j->n_warnings,
					nk__aprintf("the ranks used different samplers (rank %d %s, rank %d %s): their counts "
						    "estimate different things", j->ranks[0].rank, j->ranks[0].sampler, r->rank,
						    r->sampler)))
				return NK_ENOMEM;
		}
	}
	if (!j->sampler && !(j->sampler = strdup("?")))
		return NK_ENOMEM;
	size_t most = j->n_ranks;
	for (size_t i = 0; i < j->n_vars; i++)
		most = j->vars[i].n_per > most ? j->vars[i].n_per : most;
	sts = malloc((most ? most : 1) * sizeof *sts);
	if (!sts)
		return NK_ENOMEM;
	for (size_t i = 0; i < j->n_ranks; i++)
		sts[i] = &j->ranks[i].st;
	pool(sts, j->n_ranks, &j->share);
	for (size_t v = 0; v < j->n_vars; v++) {
		struct nk__job_var *jv = &j->vars[v];
		for (size_t i = 0; i < jv->n_per; i++)
			sts[i] = &jv->per[i].st;
		pool(sts, jv->n_per, &jv->share);
		if (decide_var(jv))
			goto out;
	}
	j->order = malloc((j->n_vars ? j->n_vars : 1) * sizeof *j->order);
	struct vord *vo = malloc((j->n_vars ? j->n_vars : 1) * sizeof *vo);
	if (!j->order || !vo) {
		free(vo);
		goto out;
	}
	for (size_t v = 0; v < j->n_vars; v++)
		vo[v] = (struct vord){ j->vars[v].remote, j->vars[v].acc, j->vars[v].key, v };
	qsort(vo, j->n_vars, sizeof *vo, cmp_vord);
	for (size_t v = 0; v < j->n_vars; v++)
		j->order[v] = vo[v].i;
	free(vo);
	if (hosts_build(j) || decide_ranks(j) || group_warnings(j) || comm_build(j))
		goto out;
	rc = 0;
out:
	free(sts);
	return rc;
}

int nk__job_load(const struct nk__job_inputs *in, struct nk__job **out, nk_error *err)
{
	struct nk__job *j = NULL;
	int rc;

	if (!in || !in->is_job || !in->n || !out)
		return nk__error(err, NK_EINVAL, "nk__job_load: no job");
	if (nk__job_begin(in, &j))
		return nk__error(err, NK_ENOMEM, "job: out of memory");
	for (size_t i = 0; i < in->n; i++) {
		struct nk__analysis *a = NULL;
		const char *p = in->paths[i];
		if ((rc = nk__profile_analyse_files(&p, 1, &a, err)))
			goto fail;
		rc = nk__job_add_rank(j, &in->peeks[i], p, a);
		nk__analysis_free(a);
		if (rc) {
			rc = nk__error(err, NK_ENOMEM, "%s: out of memory", p);
			goto fail;
		}
	}
	if (nk__job_finish(j)) {
		rc = nk__error(err, NK_ENOMEM, "job: out of memory");
		goto fail;
	}
	*out = j;
	return 0;
fail:
	nk__job_free(j);
	return rc;
}

int nk__job_coverage_text(const struct nk__job *j, char **why)
{
	struct nk__strbuf b = { 0 };
	nk__strbuf_printf(&b, "%s", "");
	for (size_t i = 0; i < j->n_ranks; i++)
		if (!j->ranks[i].covered)
			nk__strbuf_printf(&b, "%srank %d: %s", b.len ? "; " : "", j->ranks[i].rank,
					  j->ranks[i].coverage ? j->ranks[i].coverage : "incomplete");
	*why = nk__strbuf_take(&b);
	return *why ? 0 : NK_ENOMEM;
}
