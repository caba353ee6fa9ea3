/* SPDX-License-Identifier: BSD-3-Clause
 * The timer sampler's instruction decoder (preload/decode/decode.c): data accesses of hand-assembled
 * x86-64 instructions with known registers.  Skipped (every case) in builds without Zydis.
 */
#include "testutil.h"

#include <string.h>

#include "decode.h"

static uint64_t regs[NKD_NGPR];

static int setup(void **state)
{
	(void)state;
	memset(regs, 0, sizeof regs);
	regs[NKD_RDI] = 0x10000;
	regs[NKD_RSI] = 3;
	regs[NKD_RSP] = 0x7ff000;
	regs[NKD_RAX] = 0xdead00000000beefull;
	return 0;
}

/* Decode @p code (len bytes) at @p ip: the status, the accesses in out/n. */
static int dec(const unsigned char *code, size_t len, uint64_t ip, struct nkd_access *out, int *n)
{
	if (!nkd_available())
		skip();
	return nkd_accesses(code, len, ip, regs, out, n);
}

static void test_load_sib(void **state)
{
	/* mov rax, [rdi + rsi*8 + 0x10] */
	static const unsigned char c[] = { 0x48, 0x8b, 0x44, 0xf7, 0x10 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n;
	(void)state;
	assert_int_equal(dec(c, sizeof c, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].addr, 0x10000 + 3 * 8 + 0x10);
	assert_int_equal(a[0].write, 0);
	assert_int_equal(a[0].size, 8);
	assert_int_equal(a[0].stack, 0);
}

static void test_store(void **state)
{
	/* mov [rdi], eax */
	static const unsigned char c[] = { 0x89, 0x07 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n;
	(void)state;
	assert_int_equal(dec(c, sizeof c, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].addr, 0x10000);
	assert_int_equal(a[0].write, 1);
	assert_int_equal(a[0].size, 4);
}

static void test_read_modify_write(void **state)
{
	/* add [rdi + 8], eax: a load and a store of the same address, as trace counts them */
	static const unsigned char c[] = { 0x01, 0x47, 0x08 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n;
	(void)state;
	assert_int_equal(dec(c, sizeof c, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 2);
	assert_int_equal(a[0].addr, 0x10008);
	assert_int_equal(a[1].addr, 0x10008);
	assert_int_not_equal(a[0].write, a[1].write);
}

static void test_rip_relative(void **state)
{
	/* mov rax, [rip + 0x100]: relative to the next instruction (7 bytes on) */
	static const unsigned char c[] = { 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n;
	(void)state;
	assert_int_equal(dec(c, sizeof c, 0x401000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].addr, 0x401000 + 7 + 0x100);
}

static void test_no_access(void **state)
{
	/* lea rax, [rdi + 8]; add rax, rsi; div rsi: addresses computed or none, nothing accessed */
	static const unsigned char lea[] = { 0x48, 0x8d, 0x47, 0x08 };
	static const unsigned char add[] = { 0x48, 0x01, 0xf0 };
	static const unsigned char div[] = { 0x48, 0xf7, 0xf6 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n = -1;
	(void)state;
	assert_int_equal(dec(lea, sizeof lea, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 0);
	assert_int_equal(dec(add, sizeof add, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 0);
	assert_int_equal(dec(div, sizeof div, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 0);
}

static void test_index32(void **state)
{
	/* mov eax, [rdi + rcx*4] with rcx's upper half set: a 64-bit index reads all of it;
	 * mov eax, [edi] (0x67 prefix, 32-bit addressing) keeps the low 32 bits only */
	static const unsigned char c64[] = { 0x8b, 0x04, 0x8f };
	static const unsigned char c32[] = { 0x67, 0x8b, 0x07 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n;
	(void)state;
	regs[NKD_RCX] = 2;
	assert_int_equal(dec(c64, sizeof c64, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].addr, 0x10000 + 8);
	regs[NKD_RDI] = 0x1234500010000ull;
	assert_int_equal(dec(c32, sizeof c32, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].addr, 0x10000);
}

static void test_string_and_stack(void **state)
{
	/* movsb: a load at [rsi], a store at [rdi]; push rax: an implicit stack store */
	static const unsigned char movsb[] = { 0xa4 };
	static const unsigned char push[] = { 0x50 };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n, loads = 0, stores = 0;
	(void)state;
	regs[NKD_RSI] = 0x20000;
	assert_int_equal(dec(movsb, sizeof movsb, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++) {
		if (a[i].write) {
			stores++;
			assert_int_equal(a[i].addr, 0x10000);
		} else {
			loads++;
			assert_int_equal(a[i].addr, 0x20000);
		}
		assert_int_equal(a[i].stack, 0);
	}
	assert_int_equal(loads, 1);
	assert_int_equal(stores, 1);
	assert_int_equal(dec(push, sizeof push, 0x400000, a, &n), NKD_OK);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].write, 1);
	assert_int_equal(a[0].stack, 1);
	/* the address of an implicit stack operand is not exact (push stores below rsp): only the flag counts */
}

static void test_unsupported_and_bad(void **state)
{
	/* mov rax, fs:[0x28] (thread-local: base unknown); a truncated instruction; an invalid one */
	static const unsigned char fs[] = { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00 };
	static const unsigned char cut[] = { 0x48, 0x8b, 0x44 };
	static const unsigned char bad[] = { 0x0f, 0xff };
	struct nkd_access a[NKD_MAX_ACCESS];
	int n = -1;
	(void)state;
	assert_int_equal(dec(fs, sizeof fs, 0x400000, a, &n), NKD_UNSUPPORTED);
	assert_int_equal(n, 0);
	assert_int_equal(dec(cut, sizeof cut, 0x400000, a, &n), NKD_UNDECODED);
	assert_int_equal(n, 0);
	assert_int_equal(dec(bad, sizeof bad, 0x400000, a, &n), NKD_UNDECODED);
	assert_int_equal(nkd_accesses(NULL, 4, 0, regs, a, &n), NKD_UNDECODED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_load_sib, setup),
		cmocka_unit_test_setup(test_store, setup),
		cmocka_unit_test_setup(test_read_modify_write, setup),
		cmocka_unit_test_setup(test_rip_relative, setup),
		cmocka_unit_test_setup(test_no_access, setup),
		cmocka_unit_test_setup(test_index32, setup),
		cmocka_unit_test_setup(test_string_and_stack, setup),
		cmocka_unit_test_setup(test_unsupported_and_bad, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
