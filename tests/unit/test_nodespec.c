/* SPDX-License-Identifier: BSD-3-Clause
 * numactl's node and cpu specs (cli/nodespec.c, the grammar of numakit run's
 * numactl options): all, +N relative to the allowed set, !N inverse, same,
 * ranges and lists, and every refusal as one printable line.
 */
#include "testutil.h"

#include <ctype.h>
#include <string.h>

#include "nodespec.h"

/* Sparse ids, as on machines with holes: 0,1,4,9 allowed. */
static const int sparse[] = { 0, 1, 4, 9 };
static const int four[] = { 0, 1, 2, 3 };

static void expect_spec(const char *text, const int *allowed, size_t n, const int *want, int nwant)
{
	int out[16];
	char why[200] = "";
	int k = cli_spec_parse(text, "node", allowed, n, out, why, sizeof why);

	if (k != nwant)
		fail_msg("'%s': %d ids, expected %d (%s)", text, k, nwant, why);
	for (int i = 0; i < k; i++)
		if (out[i] != want[i])
			fail_msg("'%s': id %d is %d, expected %d", text, i, out[i], want[i]);
}

static void expect_refusal(const char *text, const int *allowed, size_t n, const char *needle)
{
	int out[16];
	char why[200] = "";
	int k = cli_spec_parse(text, "node", allowed, n, out, why, sizeof why);

	if (k != -1)
		fail_msg("'%s': expected a refusal, got %d ids", text, k);
	if (!strstr(why, needle))
		fail_msg("'%s': message \"%s\" lacks \"%s\"", text, why, needle);
	for (const char *c = why; *c; c++)
		if (!isprint((unsigned char)*c))
			fail_msg("'%s': message has a non-printable byte", text);
}

static void test_plain(void **state)
{
	(void)state;
	expect_spec("0", four, 4, (int[]){ 0 }, 1);
	expect_spec("3,1", four, 4, (int[]){ 1, 3 }, 2);
	expect_spec("0-1,3", four, 4, (int[]){ 0, 1, 3 }, 3);
	expect_spec("1-1", four, 4, (int[]){ 1 }, 1);
	/* a range takes the allowed ids between its ends, as numactl's does */
	expect_spec("0-9", sparse, 4, (int[]){ 0, 1, 4, 9 }, 4);
	expect_spec("1-4", sparse, 4, (int[]){ 1, 4 }, 2);
}

static void test_all(void **state)
{
	(void)state;
	expect_spec("all", sparse, 4, (int[]){ 0, 1, 4, 9 }, 4);
	expect_spec("+all", four, 4, (int[]){ 0, 1, 2, 3 }, 4);
	expect_spec("!all", four, 4, NULL, 0);
}

static void test_relative(void **state)
{
	(void)state;
	/* +N: the N-th allowed id, counted from 0 */
	expect_spec("+0", sparse, 4, (int[]){ 0 }, 1);
	expect_spec("+2", sparse, 4, (int[]){ 4 }, 1);
	expect_spec("+1-3", sparse, 4, (int[]){ 1, 4, 9 }, 3);
	expect_spec("+0,3", sparse, 4, (int[]){ 0, 9 }, 2);
	expect_refusal("+4", sparse, 4, "+4 is past the 4 nodes this process may use (0-1,4,9)");
}

static void test_inverse(void **state)
{
	(void)state;
	expect_spec("!0", four, 4, (int[]){ 1, 2, 3 }, 3);
	expect_spec("!1-2", four, 4, (int[]){ 0, 3 }, 2);
	expect_spec("!4", sparse, 4, (int[]){ 0, 1, 9 }, 3);
	/* "!+N": the inverse of a relative list */
	expect_spec("!+1", sparse, 4, (int[]){ 0, 4, 9 }, 3);
	expect_refusal("+!1", sparse, 4, "expected a node number at '!1'");
}

static void test_refusals(void **state)
{
	(void)state;
	expect_refusal("", four, 4, "an empty node list");
	expect_refusal("5", four, 4, "node 5 is not one this process may use (nodes: 0-3)");
	expect_refusal("2", sparse, 4, "node 2 is not one this process may use (nodes: 0-1,4,9)");
	expect_refusal("0-5", four, 4, "node 5 is not one this process may use");
	expect_refusal("3-1", four, 4, "goes backwards");
	expect_refusal("0,", four, 4, "missing at the end");
	expect_refusal("0-", four, 4, "missing at the end");
	expect_refusal("0x3", four, 4, "unexpected 'x'");
	expect_refusal("a", four, 4, "expected a node number at 'a'");
	expect_refusal("all,1", four, 4, "expected a node number at 'all,1'");
	expect_refusal("99999999999", four, 4, "too large");
	expect_refusal("netdev:eth0", four, 4, "device forms");
	expect_refusal("pci:0000:00:1f.0", four, 4, "give node numbers");
	expect_refusal("0\n1", four, 4, "unexpected '?'");
	expect_refusal("0", NULL, 0, "(nodes: none)");
}

static void test_cpus(void **state)
{
	int out[8];
	char why[200] = "";
	static const int cpus[] = { 0, 1, 2, 3, 6, 7 };

	(void)state;
	assert_int_equal(cli_spec_parse("+4-5", "cpu", cpus, 6, out, why, sizeof why), 2);
	assert_int_equal(out[0], 6);
	assert_int_equal(out[1], 7);
	assert_int_equal(cli_spec_parse("!0-3", "cpu", cpus, 6, out, why, sizeof why), 2);
	assert_int_equal(cli_spec_parse("4", "cpu", cpus, 6, out, why, sizeof why), -1);
	assert_non_null(strstr(why, "cpu 4 is not one this process may use (cpus: 0-3,6-7)"));
}

static void test_same(void **state)
{
	const char *last = NULL;

	(void)state;
	assert_null(cli_spec_same("same", &last));
	assert_string_equal(cli_spec_same("0-1", &last), "0-1");
	assert_string_equal(cli_spec_same("same", &last), "0-1");
	assert_string_equal(cli_spec_same("+1", &last), "+1");
	assert_string_equal(cli_spec_same("same", &last), "+1");
}

static void test_is_numactl(void **state)
{
	(void)state;
	assert_true(cli_spec_is_numactl("all"));
	assert_true(cli_spec_is_numactl("+0"));
	assert_true(cli_spec_is_numactl("!0-1"));
	assert_false(cli_spec_is_numactl("0-1"));
	assert_false(cli_spec_is_numactl("rank:0"));
	assert_false(cli_spec_is_numactl("allx"));
	assert_true(cli_spec_is_numactl("netdev:eth0"));
	assert_false(cli_spec_is_numactl(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),   cmocka_unit_test(test_all),       cmocka_unit_test(test_relative),
		cmocka_unit_test(test_inverse), cmocka_unit_test(test_refusals),  cmocka_unit_test(test_cpus),
		cmocka_unit_test(test_same),    cmocka_unit_test(test_is_numactl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
