/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the hw sampler's decoders (src/profile/perf_decode.c): the perf ring
 * buffer walker with PERF_RECORD_SAMPLE bodies of any sample_type it can
 * walk (PEBS and IBS layouts), and the sysfs format and event-text parsers.
 * The ring walker must never read outside the area, must end with the tail
 * at head on success or corruption, and every sample it hands out must be
 * a hw sample with an access and source in range.
 *
 * Input: byte 0 chooses the target; for the ring, bytes 1-8 the sample_type,
 * byte 9 the kind, bytes 10-11 the tail's offset (its top bit: head - tail
 * is half the area, else all of it), the rest the data area (cut to a power
 * of two).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/perf_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int emit(void *ctx, const struct nk__nkp_sample *s, uint32_t pid)
{
	size_t *n = ctx;
	(void)pid;
	if (s->sampler != NK__SAMPLER_HW || s->access > NK__ACC_WRITE || s->source > NK__SRC_UNCACHED ||
	    s->page_node != -1)
		abort();
	++*n;
	return 0;
}

static void fuzz_ring(const uint8_t *data, size_t size)
{
	struct nk__perf_layout lay;
	struct nk__perf_stats st = { 0 };
	uint64_t area = 8, tail, head, t0;
	size_t n = 0;
	uint16_t off;
	uint8_t *copy;
	int rc;

	if (size < 12 + 8)
		return;
	memcpy(&lay.sample_type, data + 1, 8);
	lay.sample_type &= NK__PERF_SAMPLE_DECODABLE;
	lay.kind = 1 + data[9] % 3;
	memcpy(&off, data + 10, 2);
	data += 12;
	size -= 12;
	while (area * 2 <= size && area < (1u << 20))
		area *= 2;
	/* an exact-size heap copy so ASan sees any read past the area */
	copy = malloc(area);
	if (!copy)
		return;
	memcpy(copy, data, area);
	t0 = tail = (uint64_t)off + 3 * area; /* a wrapped ring: offsets far past the area */
	head = tail + ((off & 0x8000) ? area / 2 : area);
	rc = nk__perf_ring_decode(copy, area, &tail, head, &lay, emit, &n, &st);
	if (rc != 0 && rc != NK_EPARSE)
		abort();
	if (tail != head || st.samples != n || (rc == NK_EPARSE) != (st.corrupt == 1) || tail < t0)
		abort();
	free(copy);
}

static void fuzz_formats(const uint8_t *data, size_t size)
{
	struct nk__perf_format f;
	struct nk__perf_pmu_format pf = { 0 };
	uint64_t cfg[NK__PERF_NREGS] = { 0 };
	char *text = malloc(size + 1);
	const char *nl;

	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!nk__perf_format_parse(text, size, &f, NULL)) {
		unsigned w = nk__perf_format_width(&f);
		if (f.n == 0 || w == 0 || w > 64 * NK__PERF_FMT_MAX_RANGES)
			abort();
		if (nk__perf_format_apply(&f, 1, cfg))
			abort();
	}
	/* first line: a format for term "a"; the rest: an event text using it and fixed terms */
	nl = memchr(text, '\n', size);
	nk__perf_pmu_add_term(&pf, "event", "config:0-7", 10, NULL);
	nk__perf_pmu_add_term(&pf, "umask", "config:8-15", 11, NULL);
	nk__perf_pmu_add_term(&pf, "ldlat", "config1:0-15", 12, NULL);
	if (nl) {
		nk_error err = { 0 };
		nk__perf_pmu_add_term(&pf, "a", text, (size_t)(nl - text), NULL);
		memset(cfg, 0x5a, sizeof cfg);
		int rc = nk__perf_event_encode(&pf, nl + 1, "ldlat=30", cfg, &err);
		if (rc == 0 && (cfg[1] & 0xffff) != 30)
			abort();
		if (rc && (rc != err.code || !err.message[0] || cfg[0] != 0x5a5a5a5a5a5a5a5aull))
			abort();
	}
	free(text);
}

static void fuzz_ibs(const uint8_t *data, size_t size)
{
	struct nk__nkp_sample s;
	memset(&s, 0, sizeof s);
	int rc = nk__perf_ibs_decode(data, size, &s);
	if (rc != 0 && rc != 1 && rc != NK_EPARSE)
		abort();
	if (rc == 1 && (s.access == NK__ACC_UNKNOWN || s.source > NK__SRC_UNCACHED))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: fuzz_ring(data, size); break;
	case 1: fuzz_formats(data + 1, size - 1); break;
	default: fuzz_ibs(data + 1, size - 1); break;
	}
	return 0;
}
