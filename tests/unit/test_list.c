/* SPDX-License-Identifier: BSD-3-Clause */
/* Id lists, hex masks and sizes: the text forms every reader depends on. */
#include "testutil.h"

#include <ctype.h>

#include <stdlib.h>
#include <string.h>

#include "util/list.h"

/* Parse @p text with the internal parser and compare with @p want (n ids). */
static void expect_list(const char *text, const int *want, size_t n)
{
	nk__ilist l = { 0 };
	char why[200] = "";
	int rc = nk__parse_list(text, &l, why, sizeof why);
	if (rc)
		fail_msg("\"%s\": unexpected error %d (%s)", text, rc, why);
	assert_int_equal(l.n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(l.v[i], want[i]);
	nk__ilist_free(&l);
}

/* Expect a parse error whose explanation contains @p needle. */
static void expect_list_error(const char *text, const char *needle)
{
	nk__ilist l = { 0 };
	char why[200] = "";
	int rc = nk__parse_list(text, &l, why, sizeof why);
	if (rc != NK_EPARSE)
		fail_msg("\"%s\": expected NK_EPARSE, got %d", text, rc);
	assert_int_equal(l.n, 0);
	if (!strstr(why, needle))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", text, why, needle);
	/* a message is one line of printable text whatever the input held
	 * (fuzz_fsroot found raw input bytes, newline included, quoted in it) */
	for (const char *c = why; *c; c++)
		if (!isprint((unsigned char)*c))
			fail_msg("\"%s\": message has a non-printable byte 0x%02x", text, (unsigned char)*c);
	nk__ilist_free(&l);
}

static void test_list_basic(void **state)
{
	(void)state;
	expect_list("", NULL, 0);
	expect_list("   \n", NULL, 0);
	expect_list("0", (const int[]){ 0 }, 1);
	expect_list("0-3", (const int[]){ 0, 1, 2, 3 }, 4);
	expect_list("0-3,8,10-11", (const int[]){ 0, 1, 2, 3, 8, 10, 11 }, 7);
	expect_list("5-5", (const int[]){ 5 }, 1);
	/* sysfs values end with a newline */
	expect_list("2-4\n", (const int[]){ 2, 3, 4 }, 3);
	expect_list(" 7 ", (const int[]){ 7 }, 1);
}

static void test_list_normalises(void **state)
{
	(void)state;
	/* out of order and repeated ids come back sorted, once each */
	expect_list("3,1,2,1", (const int[]){ 1, 2, 3 }, 3);
	expect_list("4-6,0,5", (const int[]){ 0, 4, 5, 6 }, 4);
}

static void test_list_strides(void **state)
{
	(void)state;
	expect_list("0-10:3", (const int[]){ 0, 3, 6, 9 }, 4);
	expect_list("1-9:4", (const int[]){ 1, 5, 9 }, 3);
	expect_list("0-2:5", (const int[]){ 0 }, 1);
	expect_list("0-10:3,1", (const int[]){ 0, 1, 3, 6, 9 }, 5);
	expect_list_error("0-10:0", "stride");
	expect_list_error("0-10:", "stride");
	/* a stride needs a range */
	expect_list_error("5:2", "unexpected character ':'");
}

static void test_list_errors(void **state)
{
	(void)state;
	expect_list_error("0-", "range end");
	expect_list_error("3-1", "reversed");
	expect_list_error("1,,2", "expected a number");
	expect_list_error("\xff\n0-1", "expected a number at \"?");
	expect_list_error("1-\x01\n", "range end");
	expect_list_error("1,", "ends with ','");
	expect_list_error(",1", "expected a number");
	expect_list_error("-1", "expected a number");
	expect_list_error("1-2-3", "unexpected character '-'");
	expect_list_error("1 ,2", "unexpected character ' '");
	expect_list_error("0x10", "unexpected character 'x'");
	expect_list_error("a", "expected a number");
	expect_list_error("1\t2", "unexpected character '?'");
}

static void test_list_huge_ids(void **state)
{
	nk__ilist l = { 0 };
	char why[200];

	(void)state;
	expect_list("65535", (const int[]){ NK__MAX_ID }, 1);
	expect_list_error("65536", "too large");
	expect_list_error("0-65536", "too large");
	/* must not overflow a long on the way to the limit */
	expect_list_error("99999999999999999999999999", "too large");
	expect_list_error("2147483648", "too large");
	/* the largest range the limit allows is parsed exactly */
	assert_int_equal(nk__parse_list("65531-65535", &l, why, sizeof why), 0);
	assert_int_equal(l.n, 5);
	assert_int_equal(l.v[4], 65535);
	/* repeating the full range costs no more than one copy of it */
	char *big = malloc(60 * 10);
	big[0] = '\0';
	for (int i = 0; i < 60; i++)
		strcat(big, i ? ",0-65535" : "0-65535");
	assert_int_equal(nk__parse_list(big, &l, why, sizeof why), 0);
	assert_int_equal(l.n, 65536);
	free(big);
	nk__ilist_free(&l);
}

static void test_list_nul_bytes(void **state)
{
	static const char text[] = "1,2\0garbage";
	int ids[4];

	(void)state;
	/* C strings end at the first NUL: what follows it is never read */
	expect_list(text, (const int[]){ 1, 2 }, 2);
	assert_int_equal(nk_parse_list(text, ids, 4, NULL), 2);
	assert_int_equal(ids[1], 2);
	expect_list("\0" "5", NULL, 0);
}

static void test_list_failure_leaves_out_empty(void **state)
{
	nk__ilist l = { 0 };
	char why[200];

	(void)state;
	assert_int_equal(nk__parse_list("1-3", &l, why, sizeof why), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(nk__parse_list("1-", &l, why, sizeof why), NK_EPARSE);
	assert_int_equal(l.n, 0);
	/* NULL text and a NULL reason buffer are tolerated */
	assert_int_equal(nk__parse_list(NULL, &l, NULL, 0), NK_EPARSE);
	assert_int_equal(nk__parse_list("x", &l, NULL, 0), NK_EPARSE);
	nk__ilist_free(&l);
}

static void test_public_parse_list(void **state)
{
	int ids[3] = { -1, -1, -1 };
	nk_error err = { 0 };

	(void)state;
	/* count/capacity: the full count comes back, only cap ids are written */
	assert_int_equal(nk_parse_list("0-9", ids, 2, NULL), 10);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], -1);
	assert_int_equal(nk_parse_list("0-9", NULL, 0, NULL), 10);
	assert_int_equal(nk_parse_list("", NULL, 0, NULL), 0);
	assert_int_equal(nk_parse_list("0-9", NULL, 1, &err), NK_EINVAL);
	assert_int_equal(err.code, NK_EINVAL);
	assert_int_equal(nk_parse_list(NULL, ids, 3, NULL), NK_EINVAL);

	assert_int_equal(nk_parse_list("3-1", ids, 3, &err), NK_EPARSE);
	assert_int_equal(err.code, NK_EPARSE);
	assert_non_null(strstr(err.message, "\"3-1\""));
	assert_non_null(strstr(err.message, "reversed"));
}

static void expect_mask(const char *text, const int *want, size_t n)
{
	nk__ilist l = { 0 };
	char why[200] = "";
	int rc = nk__parse_mask(text, &l, why, sizeof why);
	if (rc)
		fail_msg("mask \"%s\": unexpected error %d (%s)", text, rc, why);
	assert_int_equal(l.n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(l.v[i], want[i]);
	nk__ilist_free(&l);
}

static void test_mask(void **state)
{
	nk__ilist l = { 0 };
	char why[200];

	(void)state;
	expect_mask("00000000,0000ff00", (const int[]){ 8, 9, 10, 11, 12, 13, 14, 15 }, 8);
	expect_mask("1", (const int[]){ 0 }, 1);
	expect_mask("f\n", (const int[]){ 0, 1, 2, 3 }, 4);
	expect_mask("A", (const int[]){ 1, 3 }, 2);
	expect_mask("a", (const int[]){ 1, 3 }, 2);
	/* the highest word comes first; bit 63 sits in the first word */
	expect_mask("80000000,00000001", (const int[]){ 0, 63 }, 2);
	expect_mask("00000001,00000000,00000000", (const int[]){ 64 }, 1);
	expect_mask("0", NULL, 0);
	expect_mask("", NULL, 0);
	expect_mask("00000000,00000000", NULL, 0);

	assert_int_equal(nk__parse_mask("0x1", &l, why, sizeof why), NK_EPARSE);
	assert_non_null(strstr(why, "'x'"));
	assert_int_equal(nk__parse_mask("g", &l, why, sizeof why), NK_EPARSE);
	assert_int_equal(nk__parse_mask("ff ff", &l, why, sizeof why), NK_EPARSE);
	assert_int_equal(nk__parse_mask(NULL, &l, why, sizeof why), NK_EPARSE);
	assert_int_equal(l.n, 0);
	nk__ilist_free(&l);
}

static void test_mask_too_long(void **state)
{
	/* (NK__MAX_ID+1)/4 digits reach the limit exactly; one more digit passes it */
	size_t n = (NK__MAX_ID + 1) / 4 + 1;
	char *text = malloc(n + 1);
	nk__ilist l = { 0 };
	char why[200] = "";

	(void)state;
	assert_non_null(text);
	memset(text, '0', n);
	text[0] = '1';
	text[n] = '\0';
	assert_int_equal(nk__parse_mask(text, &l, why, sizeof why), NK_EPARSE);
	assert_non_null(strstr(why, "too long"));
	free(text);
	nk__ilist_free(&l);
}

static void expect_format(const int *ids, size_t n, const char *want)
{
	char buf[128];
	int len = nk__format_list(ids, n, buf, sizeof buf);
	assert_string_equal(buf, want);
	assert_int_equal(len, (int)strlen(want));
	/* the public wrapper agrees on valid input */
	assert_int_equal(nk_format_list(ids, n, buf, sizeof buf), (int)strlen(want));
	assert_string_equal(buf, want);
}

static void test_format(void **state)
{
	(void)state;
	expect_format(NULL, 0, "");
	expect_format((const int[]){ 5 }, 1, "5");
	expect_format((const int[]){ 0, 1, 2, 3, 8 }, 5, "0-3,8");
	expect_format((const int[]){ 1, 2 }, 2, "1-2");
	expect_format((const int[]){ 0, 2, 4 }, 3, "0,2,4");
	expect_format((const int[]){ 0, 1, 3, 4, 6 }, 5, "0-1,3-4,6");
	expect_format((const int[]){ 65534, 65535 }, 2, "65534-65535");
}

static void test_format_capacity(void **state)
{
	const int ids[] = { 0, 1, 2, 3, 8, 10, 11 }; /* "0-3,8,10-11": 11 chars */
	char buf[16];

	(void)state;
	/* sizing call: nothing written */
	assert_int_equal(nk__format_list(ids, 7, NULL, 0), 11);
	assert_int_equal(nk_format_list(ids, 7, NULL, 0), 11);
	/* exact fit */
	memset(buf, 'x', sizeof buf);
	assert_int_equal(nk_format_list(ids, 7, buf, 12), 11);
	assert_string_equal(buf, "0-3,8,10-11");
	/* one byte short: truncated but always terminated, and a prefix of the full text */
	memset(buf, 'x', sizeof buf);
	assert_int_equal(nk_format_list(ids, 7, buf, 11), 11);
	assert_string_equal(buf, "0-3,8,10-1"); /* cut like snprintf: by character */
	memset(buf, 'x', sizeof buf);
	assert_int_equal(nk_format_list(ids, 7, buf, 1), 11);
	assert_string_equal(buf, "");
	/* nothing may be written past cap */
	memset(buf, 'x', sizeof buf);
	nk_format_list(ids, 7, buf, 4);
	assert_string_equal(buf, "0-3");
	assert_int_equal(buf[4], 'x');
}

static void test_format_rejects(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(nk_format_list((const int[]){ 3, 1 }, 2, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_format_list((const int[]){ 1, 1 }, 2, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_format_list((const int[]){ -1 }, 1, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_format_list(NULL, 1, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_format_list((const int[]){ 1 }, 1, NULL, 4), NK_EINVAL);
}

static void test_format_alloc(void **state)
{
	char *s = nk__format_list_alloc((const int[]){ 2, 3, 4, 9 }, 4);

	(void)state;
	assert_string_equal(s, "2-4,9");
	free(s);
	s = nk__format_list_alloc(NULL, 0);
	assert_string_equal(s, "");
	free(s);
}

/* format then parse gives the same set, for many pseudo-random sets */
static void test_round_trip(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (int iter = 0; iter < 500; iter++) {
		int ids[64];
		size_t n = 0;
		int x = 0;
		seed = seed * 1103515245u + 12345u;
		size_t want = (seed >> 16) % 64;
		for (size_t i = 0; i < want; i++) {
			seed = seed * 1103515245u + 12345u;
			x += 1 + (int)((seed >> 16) % 3); /* gaps of 0..2 make runs and singles */
			ids[n++] = x;
		}
		char *s = nk__format_list_alloc(ids, n);
		nk__ilist l = { 0 };
		char why[200];
		assert_non_null(s);
		assert_int_equal(nk__parse_list(s, &l, why, sizeof why), 0);
		assert_int_equal(l.n, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(l.v[i], ids[i]);
		nk__ilist_free(&l);
		free(s);
	}
}

static void expect_size(const char *text, unsigned long long want)
{
	unsigned long long v = 0;
	if (nk__parse_size(text, &v))
		fail_msg("size \"%s\": unexpected error", text);
	if (v != want)
		fail_msg("size \"%s\": got %llu, want %llu", text, v, want);
}

static void expect_size_error(const char *text)
{
	unsigned long long v = 777;
	if (nk__parse_size(text, &v) != NK_EPARSE)
		fail_msg("size \"%s\": expected NK_EPARSE", text);
	assert_int_equal(v, 777); /* untouched on failure */
}

static void test_size(void **state)
{
	(void)state;
	expect_size("4096", 4096);
	expect_size("0", 0);
	expect_size("512M", 536870912ULL);
	expect_size("2k", 2048);
	expect_size("1G", 1073741824ULL);
	expect_size("1g", 1073741824ULL);
	expect_size("1GiB", 1073741824ULL);
	expect_size("1GB", 1073741824ULL);
	expect_size("1Ki", 1024);
	expect_size("3T", 3ULL << 40);
	expect_size("5B", 5);
	expect_size(" 8K\n", 8192);
	expect_size("18446744073709551615", 18446744073709551615ULL);
	expect_size("16777215T", 16777215ULL << 40);

	expect_size_error("");
	expect_size_error("   ");
	expect_size_error(NULL);
	expect_size_error("M");
	expect_size_error("-1");
	expect_size_error("1.5G");
	expect_size_error("1X");
	expect_size_error("1KK");
	expect_size_error("1 K");
	expect_size_error("5iB");
	expect_size_error("1KBx");
	/* overflow in the digits and in the multiplication */
	expect_size_error("18446744073709551616");
	expect_size_error("99999999999999999999999");
	expect_size_error("16777216T");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_basic),
		cmocka_unit_test(test_list_normalises),
		cmocka_unit_test(test_list_strides),
		cmocka_unit_test(test_list_errors),
		cmocka_unit_test(test_list_huge_ids),
		cmocka_unit_test(test_list_nul_bytes),
		cmocka_unit_test(test_list_failure_leaves_out_empty),
		cmocka_unit_test(test_public_parse_list),
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_mask_too_long),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_capacity),
		cmocka_unit_test(test_format_rejects),
		cmocka_unit_test(test_format_alloc),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
