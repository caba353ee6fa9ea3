/* SPDX-License-Identifier: BSD-3-Clause
 * Pure decoding of what perf_event_open gives the hw sampler: sysfs format
 * texts, the mmap ring buffer and its records, perf_mem_data_src, AMD IBS op
 * raw data.  See perf_decode.h and docs/hw-sampling.md.
 */
#include "profile/perf_decode.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* ------------------------------------------------------------ sysfs formats */

static int parse_uint(const char **p, const char *end, unsigned long long max, unsigned long long *out)
{
	const char *s = *p;
	unsigned long long v = 0;
	int base = 10;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (s >= end || !isxdigit((unsigned char)*s))
		return NK_EPARSE;
	for (; s < end && isxdigit((unsigned char)*s); s++) {
		int c = tolower((unsigned char)*s);
		unsigned d = isdigit(c) ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
		if (d >= (unsigned)base)
			return NK_EPARSE;
		if (v > (max - d) / (unsigned)base)
			return NK_ERANGE;
		v = v * (unsigned)base + d;
	}
	*p = s;
	*out = v;
	return 0;
}

int nk__perf_format_parse(const char *text, size_t len, struct nk__perf_format *f, nk_error *err)
{
	struct nk__perf_format r = { 0 };
	const char *p = text, *end = text + len;
	unsigned reg = 0;
	unsigned long long lo, hi;

	while (end > p && (isspace((unsigned char)end[-1]) || end[-1] == '\0'))
		end--;
	if (end - p < 6 || memcmp(p, "config", 6))
		return nk__error(err, NK_EPARSE, "format \"%.*s\": expected config, config1, config2 or config3",
				 (int)(end - p > 40 ? 40 : end - p), text);
	p += 6;
	if (p < end && *p >= '1' && *p <= '3')
		reg = (unsigned)(*p++ - '0');
	if (p >= end || *p++ != ':')
		return nk__error(err, NK_EPARSE, "format \"%.*s\": expected ':' after the register",
				 (int)(end - text > 40 ? 40 : end - text), text);
	for (;;) {
		if (parse_uint(&p, end, 63, &lo))
			return nk__error(err, NK_EPARSE, "format \"%.*s\": expected a bit number 0-63",
					 (int)(end - text > 40 ? 40 : end - text), text);
		hi = lo;
		if (p < end && *p == '-') {
			p++;
			if (parse_uint(&p, end, 63, &hi) || hi < lo)
				return nk__error(err, NK_EPARSE, "format \"%.*s\": bad bit range",
						 (int)(end - text > 40 ? 40 : end - text), text);
		}
		if (r.n == NK__PERF_FMT_MAX_RANGES)
			return nk__error(err, NK_EPARSE, "format \"%.*s\": more than %d ranges",
					 (int)(end - text > 40 ? 40 : end - text), text, NK__PERF_FMT_MAX_RANGES);
		r.r[r.n].reg = (uint8_t)reg;
		r.r[r.n].lo = (uint8_t)lo;
		r.r[r.n].hi = (uint8_t)hi;
		r.n++;
		if (p == end)
			break;
		if (*p++ != ',')
			return nk__error(err, NK_EPARSE, "format \"%.*s\": unexpected character",
					 (int)(end - text > 40 ? 40 : end - text), text);
	}
	*f = r;
	return 0;
}

unsigned nk__perf_format_width(const struct nk__perf_format *f)
{
	unsigned w = 0;
	for (unsigned i = 0; i < f->n; i++)
		w += (unsigned)(f->r[i].hi - f->r[i].lo) + 1;
	return w;
}

static uint64_t mask_bits(unsigned n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

int nk__perf_format_apply(const struct nk__perf_format *f, uint64_t value, uint64_t cfg[NK__PERF_NREGS])
{
	uint64_t out[NK__PERF_NREGS];
	unsigned shift = 0, w = nk__perf_format_width(f);

	if (f->n == 0 || (w < 64 && (value >> w)))
		return NK_ERANGE;
	memcpy(out, cfg, sizeof out);
	for (unsigned i = 0; i < f->n; i++) {
		unsigned n = (unsigned)(f->r[i].hi - f->r[i].lo) + 1;
		uint64_t part = shift >= 64 ? 0 : (value >> shift) & mask_bits(n);
		uint64_t m = mask_bits(n) << f->r[i].lo;

		if (f->r[i].reg >= NK__PERF_NREGS)
			return NK_ERANGE;
		out[f->r[i].reg] = (out[f->r[i].reg] & ~m) | (part << f->r[i].lo);
		shift += n;
	}
	memcpy(cfg, out, sizeof out);
	return 0;
}

int nk__perf_pmu_add_term(struct nk__perf_pmu_format *pf, const char *name, const char *text, size_t len,
			  nk_error *err)
{
	struct nk__perf_format f;
	int rc;

	if (pf->n == NK__PERF_MAX_TERMS || strlen(name) >= sizeof pf->t[0].name)
		return nk__error(err, NK_ERANGE, "format term \"%.40s\": too many terms or too long a name", name);
	rc = nk__perf_format_parse(text, len, &f, err);
	if (rc)
		return rc;
	strcpy(pf->t[pf->n].name, name);
	pf->t[pf->n].f = f;
	pf->n++;
	return 0;
}

static const struct nk__perf_format *find_term(const struct nk__perf_pmu_format *pf, const char *name, size_t len)
{
	for (unsigned i = 0; i < pf->n; i++)
		if (strlen(pf->t[i].name) == len && !memcmp(pf->t[i].name, name, len))
			return &pf->t[i].f;
	return NULL;
}

/* "config=0x..", "config1=.." name a whole register, as perf's event syntax allows. */
static const struct nk__perf_format *whole_register(const char *name, size_t len)
{
	static const struct nk__perf_format regs[NK__PERF_NREGS] = {
		{ 1, { { 0, 0, 63 } } }, { 1, { { 1, 0, 63 } } }, { 1, { { 2, 0, 63 } } }, { 1, { { 3, 0, 63 } } },
	};
	static const char *const names[NK__PERF_NREGS] = { "config", "config1", "config2", "config3" };

	for (int i = 0; i < NK__PERF_NREGS; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			return &regs[i];
	return NULL;
}

static int encode_terms(const struct nk__perf_pmu_format *pf, const char *text, uint64_t cfg[NK__PERF_NREGS],
			nk_error *err)
{
	const char *p = text;

	while (*p) {
		const char *start, *name_end, *end;
		unsigned long long v = 1;
		const struct nk__perf_format *f;
		int rc;

		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != '=' && *p != ',' && !isspace((unsigned char)*p))
			p++;
		name_end = p;
		if (*p == '=') {
			p++;
			end = p;
			while (*end && *end != ',' && !isspace((unsigned char)*end))
				end++;
			rc = parse_uint(&p, end, ~0ull, &v);
			if (rc || p != end)
				return nk__error(err, NK_EPARSE, "event term \"%.*s\": bad value",
						 (int)(end - start > 60 ? 60 : end - start), start);
		}
		if (name_end == start)
			return nk__error(err, NK_EPARSE, "event \"%.60s\": empty term", text);
		f = find_term(pf, start, (size_t)(name_end - start));
		if (!f)
			f = whole_register(start, (size_t)(name_end - start));
		if (!f)
			return nk__error(err, NK_EPARSE, "event term \"%.*s\": not in the PMU's format directory",
					 (int)(name_end - start > 40 ? 40 : name_end - start), start);
		if (nk__perf_format_apply(f, v, cfg))
			return nk__error(err, NK_ERANGE, "event term \"%.*s\": value %llu does not fit its %u bits",
					 (int)(name_end - start > 40 ? 40 : name_end - start), start, v,
					 nk__perf_format_width(f));
	}
	return 0;
}

int nk__perf_event_encode(const struct nk__perf_pmu_format *pf, const char *event, const char *extra,
			  uint64_t cfg[NK__PERF_NREGS], nk_error *err)
{
	uint64_t out[NK__PERF_NREGS] = { 0 };
	int rc = encode_terms(pf, event, out, err);

	if (!rc && extra)
		rc = encode_terms(pf, extra, out, err);
	if (rc)
		return rc;
	memcpy(cfg, out, sizeof out);
	return 0;
}

/* ------------------------------------------------------------ data source */

enum {
	LVL_NA = 0x01, LVL_HIT = 0x02, LVL_MISS = 0x04, LVL_L1 = 0x08, LVL_LFB = 0x10, LVL_L2 = 0x20, LVL_L3 = 0x40,
	LVL_LOC_RAM = 0x80, LVL_REM_RAM1 = 0x100, LVL_REM_RAM2 = 0x200, LVL_REM_CCE1 = 0x400, LVL_REM_CCE2 = 0x800,
	LVL_IO = 0x1000, LVL_UNC = 0x2000,
};
enum {
	LVLNUM_L1 = 1, LVLNUM_L2 = 2, LVLNUM_L3 = 3, LVLNUM_L4 = 4, LVLNUM_CXL = 9, LVLNUM_IO = 10,
	LVLNUM_ANY_CACHE = 11, LVLNUM_LFB = 12, LVLNUM_RAM = 13, LVLNUM_PMEM = 14, LVLNUM_NA = 15,
};
#define SNOOP_HITM 0x10
#define HOPS_SAME_NODE 1

void nk__perf_data_src_split(uint64_t v, struct nk__perf_data_src *d)
{
	d->op = (unsigned)(v & 0x1f);
	d->lvl = (unsigned)((v >> 5) & 0x3fff);
	d->snoop = (unsigned)((v >> 19) & 0x1f);
	d->lock = (unsigned)((v >> 24) & 0x3);
	d->dtlb = (unsigned)((v >> 26) & 0x7f);
	d->lvl_num = (unsigned)((v >> 33) & 0xf);
	d->remote = (unsigned)((v >> 37) & 0x1);
	d->snoopx = (unsigned)((v >> 38) & 0x3);
	d->blk = (unsigned)((v >> 40) & 0x7);
	d->hops = (unsigned)((v >> 43) & 0x7);
}

/*
 * The order matters because kernels fill the fields differently: Intel's
 * tables (arch/x86/events/intel/ds.c, pebs_data_source) set the legacy
 * mem_lvl bits and, since 4.x, mem_lvl_num too, not always consistently
 * (an L3 miss served by remote DRAM is REM_RAM1 with LEVEL(L3)); the newer
 * server tables set only mem_lvl_num + mem_remote (LEVEL(RAM) | REM).  So:
 * a MISS says only where the data was not; then the legacy bits that name
 * memory or a remote cache, which are the most specific; then the numbered
 * level with mem_remote; then the legacy cache levels.
 */
int nk__perf_data_src_source(uint64_t v)
{
	struct nk__perf_data_src d;
	int remote;

	nk__perf_data_src_split(v, &d);
	if (d.lvl & LVL_MISS)
		return NK__SRC_UNKNOWN;
	if (d.lvl & (LVL_REM_CCE1 | LVL_REM_CCE2))
		return NK__SRC_REMOTE_CACHE;
	if (d.lvl & (LVL_REM_RAM1 | LVL_REM_RAM2))
		return (d.snoop & SNOOP_HITM) ? NK__SRC_REMOTE_CACHE : NK__SRC_REMOTE_DRAM;
	if (d.lvl & LVL_LOC_RAM)
		return NK__SRC_LOCAL_DRAM;
	if (d.lvl & LVL_IO)
		return NK__SRC_IO;
	if (d.lvl & LVL_UNC)
		return NK__SRC_UNCACHED;
	/* mem_remote with hops 1 is another core of the same node: not a NUMA-remote access */
	remote = d.remote && d.hops != HOPS_SAME_NODE;
	switch (d.lvl_num) {
	case LVLNUM_L1: return NK__SRC_L1;
	case LVLNUM_LFB: return NK__SRC_LFB;
	case LVLNUM_L2: return remote ? NK__SRC_REMOTE_CACHE : NK__SRC_L2;
	case LVLNUM_L3:
	case LVLNUM_L4:
	case LVLNUM_ANY_CACHE: return remote ? NK__SRC_REMOTE_CACHE : NK__SRC_L3;
	case LVLNUM_RAM: return remote ? NK__SRC_REMOTE_DRAM : NK__SRC_LOCAL_DRAM;
	case LVLNUM_CXL:
	case LVLNUM_PMEM: return NK__SRC_PMEM;
	case LVLNUM_IO: return NK__SRC_IO;
	default: break; /* 0 (unset), NA, reserved */
	}
	if (d.lvl & LVL_NA)
		return NK__SRC_UNKNOWN;
	if (d.lvl & LVL_L3)
		return NK__SRC_L3;
	if (d.lvl & LVL_L2)
		return NK__SRC_L2;
	if (d.lvl & LVL_LFB)
		return NK__SRC_LFB;
	if (d.lvl & LVL_L1)
		return NK__SRC_L1;
	return NK__SRC_UNKNOWN;
}

int nk__perf_data_src_access(uint64_t v, int fallback)
{
	unsigned op = (unsigned)(v & 0x1f);
	if (op & 0x02)
		return NK__ACC_READ;
	if (op & 0x04)
		return NK__ACC_WRITE;
	return fallback;
}

int nk__perf_data_src_tlb_miss(uint64_t v)
{
	return (((v >> 26) & 0x7f) & 0x04) != 0;
}

/* -------------------------------------------------------------- AMD IBS op */

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

#define BIT(v, n) (((v) >> (n)) & 1u)

/*
 * Where an IBS op's data came from, in the order of the kernel's own decoding
 * (arch/x86/events/amd/ibs.c, perf_ibs_get_mem_lvl): uncached first (the other
 * fields are invalid then), L1 from dc_miss, then OP_DATA2's data source
 * (valid for loads only; Zen 4 adds two high bits), L2 from l2_miss.  One
 * deviation: a data source that names a level wins over l2_miss, so a CPU
 * whose OP_DATA3 lacks the l2_miss bit (reads 0) is not taken for all-L2.
 */
static int ibs_source(uint32_t caps, int load, uint64_t data2, uint64_t data3)
{
	unsigned src = (unsigned)(data2 & 7), rmt = BIT(data2, 4);
	int zen4 = (caps & NK__IBS_CAPS_ZEN4) != 0;

	if (zen4)
		src |= (unsigned)((data2 >> 6) & 3) << 3;
	if (!load)
		src = 0;
	if (BIT(data3, 14) && src != 7) /* dc_uc_mem_acc */
		return NK__SRC_UNCACHED;
	if (!BIT(data3, 7)) /* dc_miss clear: an L1 hit */
		return NK__SRC_L1;
	if (zen4) {
		switch (src) {
		case 1: return NK__SRC_L3;                              /* the local CCX's L3 */
		case 2: return rmt ? NK__SRC_REMOTE_CACHE : NK__SRC_L3; /* a near CCX's cache */
		case 3: return rmt ? NK__SRC_REMOTE_DRAM : NK__SRC_LOCAL_DRAM;
		case 5: return NK__SRC_REMOTE_CACHE;                    /* a far CCX's cache */
		case 6: return NK__SRC_PMEM;
		case 7: return NK__SRC_IO;
		case 8: return NK__SRC_PMEM;                            /* extension memory (CXL) */
		case 12: return NK__SRC_IO;                             /* peer agent memory */
		default: break;
		}
	} else {
		switch (src) {
		case 2: return rmt ? NK__SRC_REMOTE_CACHE : NK__SRC_L3; /* local cache: L3 or another core's */
		case 3: return rmt ? NK__SRC_REMOTE_DRAM : NK__SRC_LOCAL_DRAM;
		case 4: return NK__SRC_REMOTE_CACHE;
		case 7: return NK__SRC_IO;
		default: break;
		}
	}
	if (!BIT(data3, 20)) /* l2_miss clear */
		return NK__SRC_L2;
	return NK__SRC_UNKNOWN;
}

int nk__perf_ibs_decode(const uint8_t *raw, size_t len, struct nk__nkp_sample *s)
{
	uint32_t caps;
	uint64_t data, data2, data3, lin;
	int ld, st;

	if (len < NK__IBS_RAW_MIN)
		return NK_EPARSE;
	caps = rd32(raw + NK__IBS_RAW_CAPS);
	data = rd64(raw + NK__IBS_RAW_REG(NK__IBS_OP_DATA));
	data2 = rd64(raw + NK__IBS_RAW_REG(NK__IBS_OP_DATA2));
	data3 = rd64(raw + NK__IBS_RAW_REG(NK__IBS_OP_DATA3));
	lin = rd64(raw + NK__IBS_RAW_REG(NK__IBS_DC_LINADDR));
	ld = (int)BIT(data3, 0);
	st = (int)BIT(data3, 1);
	if (!(ld || st) || !BIT(data3, 17)) /* not a memory op, or dc_lin_addr_valid clear */
		return 0;
	s->addr = lin;
	s->ip = BIT(data, 38) ? 0 : rd64(raw + NK__IBS_RAW_REG(NK__IBS_OP_RIP));
	s->access = ld ? NK__ACC_READ : NK__ACC_WRITE;
	s->source = (uint8_t)ibs_source(caps, ld, data2, data3);
	s->latency = (ld && BIT(data3, 7)) ? (uint32_t)((data3 >> 32) & 0xffff) : 0;
	if (BIT(data3, 3)) /* dc_l2tlb_miss: missed every level of the data TLB */
		s->flags |= NK__SF_TLB;
	return 1;
}

/* ------------------------------------------------------------ ring buffer */

struct cursor {
	const uint8_t *p, *end;
};

static int take(struct cursor *c, size_t n, const uint8_t **at)
{
	if ((size_t)(c->end - c->p) < n)
		return NK_EPARSE;
	*at = c->p;
	c->p += n;
	return 0;
}

static int take64(struct cursor *c, uint64_t *v)
{
	const uint8_t *at;
	if (take(c, 8, &at))
		return NK_EPARSE;
	*v = rd64(at);
	return 0;
}

int nk__perf_sample_decode(const uint8_t *rec, size_t len, const struct nk__perf_layout *lay,
			   struct nk__nkp_sample *s, uint32_t *pid)
{
	struct cursor c = { rec + 8, rec + len };
	const uint64_t t = lay->sample_type;
	struct nk__nkp_sample o;
	const uint8_t *raw = NULL, *at;
	uint32_t rawlen = 0, p = 0;
	uint64_t v, ds = 0, weight = 0, period = 1;
	int have_ds = 0, have_addr = 0, rc;

	if (len < 8 || (t & ~NK__PERF_SAMPLE_DECODABLE))
		return NK_EPARSE;
	memset(&o, 0, sizeof o);
	o.cpu = -1;
	o.cpu_node = -1;
	o.page_node = -1;
	o.sampler = NK__SAMPLER_HW;
	/* The order of the fields is the one of linux/perf_event.h, PERF_RECORD_SAMPLE. */
	if ((t & NK__PERF_SAMPLE_IDENTIFIER) && take64(&c, &v))
		return NK_EPARSE;
	if ((t & NK__PERF_SAMPLE_IP) && take64(&c, &o.ip))
		return NK_EPARSE;
	if (t & NK__PERF_SAMPLE_TID) {
		if (take(&c, 8, &at))
			return NK_EPARSE;
		p = rd32(at);
		o.tid = rd32(at + 4);
	}
	if ((t & NK__PERF_SAMPLE_TIME) && take64(&c, &o.time_ns))
		return NK_EPARSE;
	if (t & NK__PERF_SAMPLE_ADDR) {
		if (take64(&c, &o.addr))
			return NK_EPARSE;
		have_addr = 1;
	}
	if ((t & NK__PERF_SAMPLE_ID) && take64(&c, &v))
		return NK_EPARSE;
	if ((t & NK__PERF_SAMPLE_STREAM_ID) && take64(&c, &v))
		return NK_EPARSE;
	if (t & NK__PERF_SAMPLE_CPU) {
		if (take(&c, 8, &at))
			return NK_EPARSE;
		v = rd32(at);
		o.cpu = v > INT16_MAX ? -1 : (int16_t)v;
	}
	if ((t & NK__PERF_SAMPLE_PERIOD) && take64(&c, &period))
		return NK_EPARSE;
	if (t & NK__PERF_SAMPLE_CALLCHAIN) {
		if (take64(&c, &v) || v > (uint64_t)(c.end - c.p) / 8 || take(&c, (size_t)v * 8, &at))
			return NK_EPARSE;
	}
	if (t & NK__PERF_SAMPLE_RAW) {
		if (take(&c, 4, &at))
			return NK_EPARSE;
		rawlen = rd32(at);
		if (take(&c, rawlen, &raw))
			return NK_EPARSE;
	}
	if (t & (NK__PERF_SAMPLE_WEIGHT | NK__PERF_SAMPLE_WEIGHT_STRUCT)) {
		if (take64(&c, &weight))
			return NK_EPARSE;
		if (t & NK__PERF_SAMPLE_WEIGHT_STRUCT)
			weight &= 0xffffffffu; /* var1_dw, the access latency (var2_w/var3_w: instruction's) */
	}
	if (t & NK__PERF_SAMPLE_DATA_SRC) {
		if (take64(&c, &ds))
			return NK_EPARSE;
		have_ds = 1;
	}
	/* TRANSACTION, PHYS_ADDR, CGROUP, page sizes: present but unused, not checked further */
	o.weight = period == 0 ? 1 : period > UINT32_MAX ? UINT32_MAX : (uint32_t)period;
	if (lay->kind == NK__PERF_IBS_OP) {
		if (!raw)
			return NK_EPARSE;
		rc = nk__perf_ibs_decode(raw, rawlen, &o);
		if (rc <= 0)
			return rc;
	} else {
		int fallback = lay->kind == NK__PERF_PEBS_STORE ? NK__ACC_WRITE : NK__ACC_READ;
		if (!have_addr || !o.addr)
			return 0;
		o.latency = weight > UINT32_MAX ? UINT32_MAX : (uint32_t)weight;
		if (have_ds) {
			o.source = (uint8_t)nk__perf_data_src_source(ds);
			o.access = (uint8_t)nk__perf_data_src_access(ds, fallback);
			if (nk__perf_data_src_tlb_miss(ds))
				o.flags |= NK__SF_TLB;
		} else {
			o.access = (uint8_t)fallback;
		}
	}
	*s = o;
	*pid = p;
	return 1;
}

int nk__perf_ring_decode(const uint8_t *data, uint64_t size, uint64_t *tail, uint64_t head,
			 const struct nk__perf_layout *lay, nk__perf_emit_fn emit, void *ctx,
			 struct nk__perf_stats *st)
{
	uint64_t t = *tail;
	uint8_t buf[65536]; /* a record is at most 64 KiB (u16 size) */

	if (size == 0 || (size & (size - 1)) || head - t > size)
		goto corrupt;
	while (t != head) {
		uint64_t off = t & (size - 1), avail = head - t;
		const uint8_t *rec;
		uint32_t type;
		uint16_t rsize;
		uint8_t hdr[8]; /* struct perf_event_header: u32 type, u16 misc, u16 size */

		if (avail < 8)
			goto corrupt;
		for (unsigned i = 0; i < 8; i++)
			hdr[i] = data[(off + i) & (size - 1)];
		memcpy(&type, hdr, 4);
		memcpy(&rsize, hdr + 6, 2);
		if (rsize < 8 || (rsize & 7) || rsize > avail)
			goto corrupt;
		if (off + rsize <= size) {
			rec = data + off;
		} else { /* wraps around the end of the area: copy it out whole */
			uint64_t first = size - off;
			memcpy(buf, data + off, (size_t)first);
			memcpy(buf + first, data, (size_t)(rsize - first));
			rec = buf;
		}
		switch (type) {
		case NK__PERF_RECORD_SAMPLE: {
			struct nk__nkp_sample s;
			uint32_t pid;
			int rc = nk__perf_sample_decode(rec, rsize, lay, &s, &pid);

			if (rc < 0)
				goto corrupt;
			if (rc == 0) {
				st->dropped++;
				break;
			}
			rc = emit(ctx, &s, pid);
			if (rc < 0) {
				*tail = t;
				return rc;
			}
			st->samples++;
			break;
		}
		case NK__PERF_RECORD_LOST:
			if (rsize < 24)
				goto corrupt;
			st->lost += rd64(rec + 16);
			break;
		case NK__PERF_RECORD_THROTTLE:
			st->throttled++;
			break;
		case NK__PERF_RECORD_EXIT:
			st->exits++;
			break;
		case NK__PERF_RECORD_UNTHROTTLE:
		default:
			st->skipped++;
			break;
		}
		st->records++;
		t += rsize;
	}
	*tail = t;
	return 0;
corrupt:
	st->corrupt++;
	*tail = head;
	return NK_EPARSE;
}
