/* SPDX-License-Identifier: BSD-3-Clause
 * The data accesses of one x86-64 instruction, from its bytes and the
 * registers it is about to run with (the `timer` sampler of
 * libnumakit_prof.so: preload/prof/timer.c).  Owns the use of the Zydis
 * decoder; knows nothing of samples, signals or the profile.  Pure: no
 * allocation, no lock, no system call, so it may run in a signal handler,
 * and it is unit-tested with hand-assembled instructions
 * (tests/prof/decode_unit.c).
 */
#ifndef NK_PRELOAD_DECODE_H
#define NK_PRELOAD_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* General registers as the decoder wants them, in the order of the ModRM encoding. */
enum nkd_gpr {
	NKD_RAX, NKD_RCX, NKD_RDX, NKD_RBX, NKD_RSP, NKD_RBP, NKD_RSI, NKD_RDI,
	NKD_R8, NKD_R9, NKD_R10, NKD_R11, NKD_R12, NKD_R13, NKD_R14, NKD_R15,
	NKD_NGPR
};

struct nkd_access {
	uint64_t addr;  /* effective address */
	uint16_t size;  /* bytes (0 when the decoder does not say) */
	uint8_t write;  /* 1 store, 0 load */
	uint8_t stack;  /* an implicit stack access (push, pop, call, ret): its address is rsp-based, not exact */
};

#define NKD_MAX_ACCESS 4

/* Why an instruction gave no access (counted by the sampler for its END record). */
enum nkd_status {
	NKD_OK = 0,        /* n accesses in out[] (n may be 0: no memory operand) */
	NKD_UNDECODED = -1, /* not a valid instruction in the bytes given (or too few bytes) */
	NKD_UNSUPPORTED = -2 /* memory operands whose address is not computed: FS/GS-relative, VSIB (gathers) */
};

/** 1 when the decoder is built in (Zydis present at build time, x86-64), else 0: nkd_accesses then always fails. */
int nkd_available(void);

/**
 * The data accesses of the instruction at @p code (@p len readable bytes, at most 15 used) that runs at
 * address @p ip with general registers @p gpr (enum nkd_gpr order).  Explicit and implicit memory
 * operands; an operand both read and written (add [m], r) is one load and one store, as the trace
 * sampler counts them; LEA-like address computations are no access.  Fills out[0..*n) (at most
 * NKD_MAX_ACCESS) and returns NKD_OK, or a negative enum nkd_status with *n = 0.  AS-safe.
 */
int nkd_accesses(const void *code, size_t len, uint64_t ip, const uint64_t gpr[NKD_NGPR], struct nkd_access *out,
		 int *n);

#endif
