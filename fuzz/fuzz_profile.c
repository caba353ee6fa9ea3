/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the profile reader (nk__nkp_parse) and the part merger.
 *
 * The input is a merged profile, optionally followed by the separator
 * "\n--PART--\n" and the bytes of one part file.  The profile must be
 * rejected with a code and a message, leaving the output untouched, or
 * accepted with counts that agree with what it holds.  The part is written to
 * a temporary file and merged: a merge may fail only with NK_EPARSE (no
 * usable part), and what it writes must parse, with as many processes and
 * samples as RUN claims.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/nkp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char sep[] = "\n--PART--\n";

static void check_profile(const uint8_t *data, size_t size)
{
	struct nk__nkp_profile *p = (struct nk__nkp_profile *)&p;
	nk_error err = { 0, "" };
	int rc = nk__nkp_parse(data, size, &p, &err);

	if (rc) {
		if ((rc != NK_EPARSE && rc != NK_EVERSION && rc != NK_ENOMEM) || err.code != rc || !err.message[0] ||
		    p != (struct nk__nkp_profile *)&p)
			abort();
		return;
	}
	uint64_t n = 0;
	if (!p->run_json || (p->version != NK__NKP_VERSION && p->version != NK__NKP_VERSION_RUNS))
		abort();
	for (size_t i = 0; i < p->n_procs; i++) {
		const struct nk__nkp_process_data *pd = &p->procs[i];
		if (!pd->meta_json || !pd->end_json)
			abort();
		for (size_t k = 1; k < pd->n_sites; k++)
			if (pd->sites[k - 1].id >= pd->sites[k].id)
				abort();
		for (size_t k = 0; k < pd->n_samples; k++) {
			if (pd->samples[k].sampler < 1 || pd->samples[k].sampler > NK__SAMPLER_TIMER)
				abort();
			/* a CALLERS entry found is the sample's own */
			const struct nk__nkp_caller *e = nk__nkp_find_caller(pd, &pd->samples[k]);
			if (e && (e->tid != pd->samples[k].tid || e->time_ns != pd->samples[k].time_ns ||
				  e->addr != pd->samples[k].addr))
				abort();
		}
		/* CALLERS entries: sorted by (tid, time_ns, addr), depth 1..6, exactly depth addresses set */
		for (size_t k = 0; k < pd->n_callers; k++) {
			const struct nk__nkp_caller *e = &pd->callers[k], *q = k ? e - 1 : NULL;
			if (e->depth < 1 || e->depth > NK__NKP_CALLER_DEPTH || e->reserved)
				abort();
			for (unsigned d = 0; d < NK__NKP_CALLER_DEPTH; d++)
				if ((d < e->depth) != (e->ret[d] != 0))
					abort();
			if (q && (q->tid > e->tid || (q->tid == e->tid && (q->time_ns > e->time_ns ||
									   (q->time_ns == e->time_ns && q->addr > e->addr)))))
				abort();
		}
		n += pd->n_samples;
	}
	if (n != p->n_samples)
		abort();
	nk__nkp_free(p);
}

static char dir[64];

static void cleanup(void)
{
	rmdir(dir);
}

static void check_merge(const uint8_t *part, size_t size)
{
	char in[96], out[96];
	char *warn = NULL;
	nk_error err = { 0, "" };

	if (!dir[0]) {
		/* tmpfs when there is one: the merger fsyncs what it writes */
		strcpy(dir, "/dev/shm/nk-fuzz-profile-XXXXXX");
		if (!mkdtemp(dir)) {
			strcpy(dir, "/tmp/nk-fuzz-profile-XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
		atexit(cleanup);
	}
	snprintf(in, sizeof in, "%s/1.part", dir);
	snprintf(out, sizeof out, "%s/run.nkp", dir);
	FILE *f = fopen(in, "wb");
	if (!f || (size && fwrite(part, 1, size, f) != size) || fclose(f))
		abort();
	const char *parts[] = { in };
	struct nk__nkp_sample extra[2] = {
		{ .time_ns = 5, .weight = 1, .cpu = -1, .cpu_node = -1, .page_node = -1, .sampler = NK__SAMPLER_HW },
		{ .time_ns = 1u << 30, .weight = 1, .cpu = 0, .cpu_node = 0, .page_node = 0,
		  .sampler = NK__SAMPLER_HW },
	};
	uint32_t pids[2];
	memcpy(&pids[0], part + (size > 20 ? 16 + 16 : 0), size > 36 ? 4 : 0); /* PROCESS pid, when there */
	pids[1] = pids[0];
	int rc = nk__nkp_merge(parts, 1, "{\"sampler\": \"pagefault\"}", NULL, extra, pids, size > 36 ? 2 : 0, out,
			       &warn, &err);
	if (rc) {
		if (rc != NK_EPARSE || err.code != rc || !err.message[0] || warn)
			abort();
	} else {
		struct nk__nkp_profile *p = NULL;
		if (nk__nkp_load(out, &p, &err) || p->n_procs != 1)
			abort();
		nk__nkp_free(p);
		free(warn);
		unlink(out);
	}
	unlink(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut = memmem(data, size, sep, sizeof sep - 1);
	size_t head = cut ? (size_t)(cut - data) : size;

	/* an exact-size copy, so that any read past the end is caught */
	uint8_t *copy = malloc(head ? head : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, head);
	check_profile(copy, head);
	free(copy);
	if (cut) {
		size_t off = head + sizeof sep - 1;
		check_merge(data + off, size - off);
	}
	return 0;
}
