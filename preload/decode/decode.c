/* SPDX-License-Identifier: BSD-3-Clause
 * The data accesses of one x86-64 instruction (decode.h).  Owns the Zydis
 * decoder and the effective-address arithmetic; must not allocate, lock or
 * make system calls (it runs in the timer sampler's signal handler).
 * Without Zydis at build time (or off x86-64) every call fails and
 * nkd_available() says 0.
 */
#include "decode.h"

#if defined(NK_HAVE_ZYDIS) && defined(__x86_64__)
#include <Zydis/Zydis.h>

int nkd_available(void)
{
	return 1;
}

/* The value of a general register as the instruction reads it (64 or 32 bits), or -1 if not a GPR. */
static int reg_value(ZydisRegister r, const uint64_t gpr[NKD_NGPR], uint64_t *v)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);

	if (big < ZYDIS_REGISTER_RAX || big > ZYDIS_REGISTER_R15)
		return -1;
	*v = gpr[big - ZYDIS_REGISTER_RAX];
	if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D)
		*v &= 0xffffffffu;
	return 0;
}

int nkd_accesses(const void *code, size_t len, uint64_t ip, const uint64_t gpr[NKD_NGPR], struct nkd_access *out,
		 int *n)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	int k = 0, unsupported = 0;

	*n = 0;
	if (!code || !gpr || !out)
		return NKD_UNDECODED;
	if (len > ZYDIS_MAX_INSTRUCTION_LENGTH)
		len = ZYDIS_MAX_INSTRUCTION_LENGTH;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code, len, &in, op)))
		return NKD_UNDECODED;
	for (unsigned i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *o = &op[i];
		uint64_t a = 0, v;
		if (o->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (o->mem.type == ZYDIS_MEMOP_TYPE_AGEN || o->mem.type == ZYDIS_MEMOP_TYPE_MIB)
			continue; /* an address computed, nothing accessed (lea, bndmk) */
		if (o->mem.type != ZYDIS_MEMOP_TYPE_MEM || o->mem.segment == ZYDIS_REGISTER_FS ||
		    o->mem.segment == ZYDIS_REGISTER_GS) {
			unsupported = 1; /* VSIB gathers/scatters; thread-local (fs:) and gs: bases are not known */
			continue;
		}
		if (o->mem.base == ZYDIS_REGISTER_RIP || o->mem.base == ZYDIS_REGISTER_EIP) {
			a = ip + in.length;
		} else if (o->mem.base != ZYDIS_REGISTER_NONE) {
			if (reg_value(o->mem.base, gpr, &v)) {
				unsupported = 1;
				continue;
			}
			a = v;
		}
		if (o->mem.index != ZYDIS_REGISTER_NONE) {
			if (reg_value(o->mem.index, gpr, &v)) {
				unsupported = 1;
				continue;
			}
			a += v * (o->mem.scale ? o->mem.scale : 1);
		}
		if (o->mem.disp.has_displacement)
			a += (uint64_t)o->mem.disp.value;
		if (in.address_width == 32)
			a &= 0xffffffffu;
		int stack = o->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT &&
			    (o->mem.base == ZYDIS_REGISTER_RSP || o->mem.base == ZYDIS_REGISTER_ESP);
		uint16_t size = (uint16_t)(o->size / 8);
		if ((o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && k < NKD_MAX_ACCESS)
			out[k++] = (struct nkd_access){ .addr = a, .size = size, .write = 0, .stack = (uint8_t)stack };
		if ((o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && k < NKD_MAX_ACCESS)
			out[k++] = (struct nkd_access){ .addr = a, .size = size, .write = 1, .stack = (uint8_t)stack };
	}
	*n = k;
	return k == 0 && unsupported ? NKD_UNSUPPORTED : NKD_OK;
}

#else

int nkd_available(void)
{
	return 0;
}

int nkd_accesses(const void *code, size_t len, uint64_t ip, const uint64_t gpr[NKD_NGPR], struct nkd_access *out,
		 int *n)
{
	(void)code;
	(void)len;
	(void)ip;
	(void)gpr;
	(void)out;
	*n = 0;
	return NKD_UNDECODED;
}

#endif
