/* SPDX-License-Identifier: BSD-3-Clause
 * Pure decoding for the hw sampler (src/profile/perf_decode.c): sysfs PMU
 * format and event texts, the perf mmap ring buffer, PERF_RECORD_SAMPLE
 * bodies, perf_mem_data_src and AMD IBS op raw data.  No system calls, no
 * global state: everything here is unit-tested on synthesised records and
 * fuzzed (fuzz/fuzz_perf.c).  Numeric ABI values are written out here (not
 * taken from linux/perf_event.h) so decoding does not depend on the age of
 * the build host's kernel headers; docs/hw-sampling.md lists the sources.
 */
#ifndef NK_PROFILE_PERF_DECODE_H
#define NK_PROFILE_PERF_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"
#include "profile/nkp.h"

/* ------------------------------------------------------------ sysfs formats */

/** Registers a format can name: perf_event_attr config, config1, config2, config3. */
#define NK__PERF_NREGS 4
#define NK__PERF_FMT_MAX_RANGES 8

/* "config:0-7,32-35": the value's low bits fill the first range, the next bits the second, ... */
struct nk__perf_format {
	unsigned n;
	struct {
		uint8_t reg; /* 0..3: config, config1, config2, config3 */
		uint8_t lo, hi;
	} r[NK__PERF_FMT_MAX_RANGES];
};

/**
 * Parse the text of a sysfs format file (/sys/bus/event_source/devices/PMU/
 * format/NAME): "config:0-7", "config1:0-15", "config:21" (one bit),
 * "config:0-7,32-35" (a field split over ranges); trailing whitespace is
 * ignored.  Errors: NK_EPARSE with a message naming the problem.
 */
int nk__perf_format_parse(const char *text, size_t len, struct nk__perf_format *f, nk_error *err);

/** Total width of a format in bits (0..256). */
unsigned nk__perf_format_width(const struct nk__perf_format *f);

/**
 * Store @p value in the field @p f of @p cfg (the bits of the field are
 * cleared first, so a later assignment wins).  Errors: NK_ERANGE when
 * @p value does not fit the field (cfg unchanged).
 */
int nk__perf_format_apply(const struct nk__perf_format *f, uint64_t value, uint64_t cfg[NK__PERF_NREGS]);

/** The format directory of one PMU: term name -> field. */
#define NK__PERF_MAX_TERMS 48
struct nk__perf_pmu_format {
	unsigned n;
	struct {
		char name[32];
		struct nk__perf_format f;
	} t[NK__PERF_MAX_TERMS];
};

/** Add term @p name (its format text in @p text) to @p pf.  NK_EPARSE, NK_ERANGE (too many terms / long name). */
int nk__perf_pmu_add_term(struct nk__perf_pmu_format *pf, const char *name, const char *text, size_t len,
			  nk_error *err);

/**
 * Encode an event text as sysfs gives it ("event=0xcd,umask=0x1,ldlat=3";
 * a term without "=" means 1; "config", "config1", ... name a whole
 * register unless the format directory says otherwise), then the terms of
 * @p extra (may be NULL, same syntax; they override the event's, e.g.
 * "ldlat=30"), into @p cfg, which is zeroed first.  Errors: NK_EPARSE (an
 * unknown term, a bad number), NK_ERANGE (a value wider than its field).
 */
int nk__perf_event_encode(const struct nk__perf_pmu_format *pf, const char *event, const char *extra,
			  uint64_t cfg[NK__PERF_NREGS], nk_error *err);

/* -------------------------------------------------------------- ABI values */

/* perf_event_header.type */
enum {
	NK__PERF_RECORD_LOST = 2,
	NK__PERF_RECORD_EXIT = 4,
	NK__PERF_RECORD_THROTTLE = 5,
	NK__PERF_RECORD_UNTHROTTLE = 6,
	NK__PERF_RECORD_SAMPLE = 9,
};

/* perf_event_attr.sample_type bits */
#define NK__PERF_SAMPLE_IP (1ull << 0)
#define NK__PERF_SAMPLE_TID (1ull << 1)
#define NK__PERF_SAMPLE_TIME (1ull << 2)
#define NK__PERF_SAMPLE_ADDR (1ull << 3)
#define NK__PERF_SAMPLE_READ (1ull << 4)
#define NK__PERF_SAMPLE_CALLCHAIN (1ull << 5)
#define NK__PERF_SAMPLE_ID (1ull << 6)
#define NK__PERF_SAMPLE_CPU (1ull << 7)
#define NK__PERF_SAMPLE_PERIOD (1ull << 8)
#define NK__PERF_SAMPLE_STREAM_ID (1ull << 9)
#define NK__PERF_SAMPLE_RAW (1ull << 10)
#define NK__PERF_SAMPLE_BRANCH_STACK (1ull << 11)
#define NK__PERF_SAMPLE_REGS_USER (1ull << 12)
#define NK__PERF_SAMPLE_STACK_USER (1ull << 13)
#define NK__PERF_SAMPLE_WEIGHT (1ull << 14)
#define NK__PERF_SAMPLE_DATA_SRC (1ull << 15)
#define NK__PERF_SAMPLE_IDENTIFIER (1ull << 16)
#define NK__PERF_SAMPLE_TRANSACTION (1ull << 17)
#define NK__PERF_SAMPLE_REGS_INTR (1ull << 18)
#define NK__PERF_SAMPLE_PHYS_ADDR (1ull << 19)
#define NK__PERF_SAMPLE_AUX (1ull << 20)
#define NK__PERF_SAMPLE_CGROUP (1ull << 21)
#define NK__PERF_SAMPLE_DATA_PAGE_SIZE (1ull << 22)
#define NK__PERF_SAMPLE_CODE_PAGE_SIZE (1ull << 23)
#define NK__PERF_SAMPLE_WEIGHT_STRUCT (1ull << 24)

/** The sample_type bits the decoder can walk; nk__hw never asks for others. */
#define NK__PERF_SAMPLE_DECODABLE                                                                                     \
	(NK__PERF_SAMPLE_IP | NK__PERF_SAMPLE_TID | NK__PERF_SAMPLE_TIME | NK__PERF_SAMPLE_ADDR |                     \
	 NK__PERF_SAMPLE_CALLCHAIN | NK__PERF_SAMPLE_ID | NK__PERF_SAMPLE_CPU | NK__PERF_SAMPLE_PERIOD |               \
	 NK__PERF_SAMPLE_STREAM_ID | NK__PERF_SAMPLE_RAW | NK__PERF_SAMPLE_WEIGHT | NK__PERF_SAMPLE_DATA_SRC |         \
	 NK__PERF_SAMPLE_IDENTIFIER | NK__PERF_SAMPLE_TRANSACTION | NK__PERF_SAMPLE_PHYS_ADDR |                        \
	 NK__PERF_SAMPLE_CGROUP | NK__PERF_SAMPLE_DATA_PAGE_SIZE | NK__PERF_SAMPLE_CODE_PAGE_SIZE |                    \
	 NK__PERF_SAMPLE_WEIGHT_STRUCT)

/* ------------------------------------------------------------ data source */

/** perf_mem_data_src split into its fields (little-endian bit layout of linux/perf_event.h). */
struct nk__perf_data_src {
	unsigned op;      /* bits 0-4:   NA 1, LOAD 2, STORE 4, PFETCH 8, EXEC 16 */
	unsigned lvl;     /* bits 5-18:  NA 1, HIT 2, MISS 4, L1 8, LFB 16, L2 32, L3 64, LOC_RAM 128,
			     REM_RAM1 256, REM_RAM2 512, REM_CCE1 1024, REM_CCE2 2048, IO 4096, UNC 8192 */
	unsigned snoop;   /* bits 19-23: NA 1, NONE 2, HIT 4, MISS 8, HITM 16 */
	unsigned lock;    /* bits 24-25 */
	unsigned dtlb;    /* bits 26-32: NA 1, HIT 2, MISS 4, L1 8, L2 16, WK 32, OS 64 */
	unsigned lvl_num; /* bits 33-36: L1 1, L2 2, L3 3, L4 4, CXL 9, IO 10, ANY_CACHE 11, LFB 12, RAM 13,
			     PMEM 14, NA 15 */
	unsigned remote;  /* bit 37 */
	unsigned snoopx;  /* bits 38-39: FWD 1, PEER 2 */
	unsigned blk;     /* bits 40-42 */
	unsigned hops;    /* bits 43-45: 0 none, 1 other core same node, 2 other node same socket,
			     3 other socket, 4 other board */
};

void nk__perf_data_src_split(uint64_t v, struct nk__perf_data_src *d);
/** Where the access was served (enum nk__nkp_source). */
int nk__perf_data_src_source(uint64_t v);
/** NK__ACC_READ / NK__ACC_WRITE from mem_op, @p fallback when it says neither. */
int nk__perf_data_src_access(uint64_t v, int fallback);
/** 1 when the data TLB missed (mem_dtlb has MISS). */
int nk__perf_data_src_tlb_miss(uint64_t v);

/* -------------------------------------------------------------- AMD IBS op */

/*
 * PERF_SAMPLE_RAW of an ibs_op event (arch/x86/events/amd/ibs.c,
 * perf_ibs_handle_irq): a u32 copy of the IBS capabilities (CPUID
 * 0x8000001B EAX), then the MSRs as u64 in MSR order starting at
 * IBS_OP_CTL (C001_1033): OP_CTL, OP_RIP, OP_DATA, OP_DATA2, OP_DATA3,
 * DC_LINADDR, DC_PHYSADDR, then BR_TARGET when caps has BRNTRGT and OP_DATA4
 * when caps has OPDATA4, then 8 bytes of no meaning (the kernel's raw size
 * counts caps as a u64: 4 + 8 * (1 + registers)).  Offsets below are byte
 * offsets in the raw data (after the record's u32 size); the u64s are not
 * 8-aligned there, so they are read with memcpy.
 */
#define NK__IBS_RAW_CAPS 0
#define NK__IBS_RAW_REG(i) (4 + 8 * (i))
enum { NK__IBS_OP_CTL, NK__IBS_OP_RIP, NK__IBS_OP_DATA, NK__IBS_OP_DATA2, NK__IBS_OP_DATA3, NK__IBS_DC_LINADDR,
       NK__IBS_DC_PHYSADDR };
/** Smallest raw payload holding everything we read (caps + OP_CTL .. DC_LINADDR). */
#define NK__IBS_RAW_MIN NK__IBS_RAW_REG(NK__IBS_DC_LINADDR + 1)
#define NK__IBS_CAPS_ZEN4 (1u << 11) /* extended data source (OP_DATA2 bits 6-7) and OP_DATA3 l2_miss */

/**
 * Decode IBS op raw data into @p s: addr (DC_LINADDR), ip (OP_RIP unless
 * rip_invalid), access, source, latency (dc_miss_lat), NK__SF_TLB.  Returns 1
 * for a load or store with a valid linear address, 0 for any other op (the
 * sample is not a memory access: drop it), NK_EPARSE when @p len is too short.
 */
int nk__perf_ibs_decode(const uint8_t *raw, size_t len, struct nk__nkp_sample *s);

/* ------------------------------------------------------------ ring buffer */

/* What an event samples: decides how a PERF_RECORD_SAMPLE is read. */
enum nk__perf_kind {
	NK__PERF_PEBS_LOAD = 1,  /* data_src + weight, access READ unless data_src says otherwise */
	NK__PERF_PEBS_STORE = 2, /* access WRITE unless data_src says otherwise */
	NK__PERF_IBS_OP = 3,     /* everything from RAW */
};

struct nk__perf_layout {
	uint64_t sample_type; /* within NK__PERF_SAMPLE_DECODABLE */
	int kind;             /* enum nk__perf_kind */
};

/* Counters of one or many ring buffers. */
struct nk__perf_stats {
	uint64_t records;    /* records walked */
	uint64_t samples;    /* samples produced */
	uint64_t dropped;    /* PERF_RECORD_SAMPLE without a usable data access (IBS non-memory op, no address) */
	uint64_t lost;       /* sum of PERF_RECORD_LOST counts */
	uint64_t throttled;  /* PERF_RECORD_THROTTLE records */
	uint64_t exits;      /* PERF_RECORD_EXIT records */
	uint64_t skipped;    /* other record types, skipped by size */
	uint64_t corrupt;    /* buffers abandoned on a corrupt record (size 0, unaligned, past head, bad body) */
};

/**
 * Decode one PERF_RECORD_SAMPLE body (@p rec points at the perf_event_header,
 * @p len is header.size) laid out per @p lay into @p s (sampler HW,
 * page_node/cpu_node -1, time_ns absolute) and its process id into *pid.
 * Returns 1 (a sample), 0 (not a memory access: drop), NK_EPARSE (the
 * record is shorter than its sample_type says, or unknown sample_type bits).
 */
int nk__perf_sample_decode(const uint8_t *rec, size_t len, const struct nk__perf_layout *lay,
			   struct nk__nkp_sample *s, uint32_t *pid);

/** Receives each sample; a negative return stops the walk (the record is not consumed). */
typedef int (*nk__perf_emit_fn)(void *ctx, const struct nk__nkp_sample *s, uint32_t pid);

/**
 * Walk the records of a ring buffer's data area @p data (@p size bytes, a
 * power of two) from *tail to @p head (free-running offsets as in
 * perf_event_mmap_page), handing samples to @p emit and counting the rest
 * in @p st.  Records may wrap around the end of the area.  On return *tail
 * is where reading stopped.  Returns 0; the emit's negative code (e.g.
 * NK_ENOMEM; *tail at that record so it is read again next time); NK_EPARSE
 * when the buffer is corrupt (head - tail larger than the area, a record
 * size below 8, not a multiple of 8 or reaching past head, a sample body
 * that does not parse): *tail is set to @p head (the rest is abandoned) and
 * st->corrupt counts it.  Never reads outside data[0, size).
 */
int nk__perf_ring_decode(const uint8_t *data, uint64_t size, uint64_t *tail, uint64_t head,
			 const struct nk__perf_layout *lay, nk__perf_emit_fn emit, void *ctx,
			 struct nk__perf_stats *st);

#endif
