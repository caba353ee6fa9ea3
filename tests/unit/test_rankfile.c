/* SPDX-License-Identifier: BSD-3-Clause
 * Rank maps (cli/rankfile.c, `numakit run --rank-map` and `numakit whatif --rank-map`): Open MPI's
 * rankfile as `numakit advise --ranks -o` writes it, numakit's numakit-rank-map JSON, and every refusal
 * of malformed input as one printable line naming where.
 */
#include "testutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "rankfile.h"

static void parse_ok(const char *text, struct cli_rankfile *f)
{
	char why[512] = "";
	size_t len = strlen(text);
	char *copy = malloc(len ? len : 1); /* no terminator, as for refusals */
	assert_non_null(copy);
	memcpy(copy, text, len);
	int rc = cli_rankfile_parse(copy, len, f, why, sizeof why);
	free(copy);
	if (rc)
		fail_msg("'%s': refused: %s", text, why);
}

static void expect_refusal(const char *text, size_t len, const char *needle)
{
	struct cli_rankfile f = { 1, (void *)1, 7 };
	char why[512] = "";
	/* exactly len bytes, no terminator: a read past the end shows under ASan */
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, text, len);
	int rc = cli_rankfile_parse(copy, len, &f, why, sizeof why);
	free(copy);
	if (!rc)
		fail_msg("'%.*s': accepted", (int)len, text);
	if (!strstr(why, needle))
		fail_msg("'%.*s': message \"%s\" lacks \"%s\"", (int)len, text, why, needle);
	for (const char *c = why; *c; c++)
		if (!isprint((unsigned char)*c))
			fail_msg("'%.*s': message has a non-printable byte", (int)len, text);
	/* nothing left behind on failure */
	assert_int_equal(f.n, 0);
	assert_null(f.slots);
}

#define REFUSE(text, needle) expect_refusal(text, strlen(text), needle)

static void test_openmpi(void **state)
{
	(void)state;
	struct cli_rankfile f;
	/* what numakit advise --ranks -o writes (tests/cli/expected/ring.rankfile), ranks out of order */
	parse_ok("# numakit advise --ranks: job of ./ring\n"
		 "# slots are physical cpus\n"
		 "rank 1=n0 slot=0-1\n"
		 "rank 0=n0 slot=2-3\n"
		 "\n"
		 "  rank 3 = n1.example.org   slot = 2,3   # spaces around '=' and a comment\r\n"
		 "rank\t2=+n1 slot=0-1,4",
		 &f);
	assert_int_equal(f.json, 0);
	assert_int_equal(f.n, 4);
	for (int r = 0; r < 4; r++)
		assert_int_equal(f.slots[r].rank, r);
	assert_string_equal(f.slots[0].host, "n0");
	assert_int_equal(f.slots[0].node, -1);
	assert_int_equal(f.slots[0].ncpus, 2);
	assert_int_equal(f.slots[0].cpus[0], 2);
	assert_int_equal(f.slots[0].line, 4);
	assert_string_equal(f.slots[3].host, "n1.example.org");
	assert_int_equal(f.slots[3].line, 6);
	assert_string_equal(f.slots[2].host, "+n1");
	assert_int_equal(f.slots[2].ncpus, 3);
	assert_int_equal(f.slots[2].cpus[2], 4);
	assert_ptr_equal(cli_rankfile_find(&f, 3), &f.slots[3]);
	assert_null(cli_rankfile_find(&f, 4));
	assert_null(cli_rankfile_find(&f, -1));
	char *ranks = cli_rankfile_ranks(&f);
	assert_string_equal(ranks, "0-3");
	free(ranks);
	cli_rankfile_free(&f);
	cli_rankfile_free(&f); /* zeroed: twice is harmless */
	cli_rankfile_free(NULL);

	parse_ok("rank 9=h slot=1\nrank 16777215=h slot=0\nrank 7=h slot=0\nrank 8=h slot=0\n", &f);
	ranks = cli_rankfile_ranks(&f);
	assert_string_equal(ranks, "7-9,16777215");
	free(ranks);
	cli_rankfile_free(&f);
}

static void test_json(void **state)
{
	(void)state;
	struct cli_rankfile f;
	/* the members advise --ranks --json writes; the others (cpus, traffic) are not read */
	parse_ok(" {\"format\": \"numakit-rank-map\", \"version\": 1, \"program\": \"./ring\", \"map\": ["
		 "{\"rank\": 1, \"host\": \"n0\", \"node\": 0, \"cpus\": \"0-1\"},"
		 "{\"rank\": 0, \"host\": \"n0\", \"node\": 1},"
		 "{\"rank\": 2, \"node\": 3, \"host\": null}]}",
		 &f);
	assert_int_equal(f.json, 1);
	assert_int_equal(f.n, 3);
	assert_int_equal(f.slots[0].rank, 0);
	assert_int_equal(f.slots[0].node, 1);
	assert_null(f.slots[0].cpus);
	assert_int_equal(f.slots[0].line, 2);
	assert_string_equal(f.slots[2].host, "");
	assert_int_equal(f.slots[2].node, 3);
	cli_rankfile_free(&f);
}

static void test_refusals(void **state)
{
	(void)state;
	REFUSE("", "the map has no rank");
	REFUSE("# only a comment\n\n", "the map has no rank");
	REFUSE("ranks 0=h slot=0", "line 1: expected \"rank N=HOST slot=CPUS\"");
	REFUSE("rank x=h slot=0", "line 1: expected \"rank N=HOST slot=CPUS\": the rank is not a number");
	REFUSE("rank -1=h slot=0", "the rank is not a number");
	REFUSE("rank 16777216=h slot=0", "line 1: the rank is larger than 16777215");
	REFUSE("rank 99999999999999999999=h slot=0", "larger than");
	REFUSE("rank 0 h slot=0", "no '=' after the rank");
	REFUSE("rank 0= slot=0", "no host after '='");
	REFUSE("rank 0=", "no host after '='");
	/* found by fuzz_rankfile: a host at the end of the text (read past it before) */
	expect_refusal("rank 0=slo", 10, "no slot");
	REFUSE("rank 0=h", "no slot");
	REFUSE("rank 0=h slot", "no slot");
	REFUSE("rank 0=h slots=0", "no '=' after slot");
	REFUSE("rank 0=h slot=", "the slot is empty");
	REFUSE("rank 0=h slot=1:0-2", "line 1: slot=1:0-2: Open MPI's socket:core form (logical numbering) is not read");
	REFUSE("rank 0=h slot=a", "expected a cpu list");
	REFUSE("rank 0=h slot=0-1:2", "socket:core");
	REFUSE("rank 0=h slot=3-1", "slot=3-1");
	REFUSE("rank 0=h slot=70000", "slot=70000");
	REFUSE("rank 0=h slot=,", "slot=,");
	REFUSE("rank 0=h slot=0 extra", "unexpected text after the slot");
	REFUSE("rank 0=h slot=0\nrank 1=h slot=1\nrank 0=g slot=2\n", "line 3: rank 0 is given twice (also line 1)");
	REFUSE("rank 0=h\x01x slot=0", "the host has a character");
	expect_refusal("rank 0=h slot=0\0\n", 17, "a NUL byte");
	/* JSON */
	REFUSE("{", "not JSON");
	REFUSE("[]", "expected \"rank N=HOST slot=CPUS\"");
	REFUSE("{\"format\": \"numakit-plan\", \"version\": 1, \"map\": []}", "\"format\" is not \"numakit-rank-map\"");
	REFUSE("{\"format\": \"numakit-rank-map\", \"map\": []}", "\"version\" is not a positive integer");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 2, \"map\": []}", "version 2: this numakit reads version 1");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1}", "\"map\" is not an array");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": []}", "the map has no rank");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": [3]}", "map[0]: not an object");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": [{\"node\": 0}]}",
	       "map[0]: \"rank\" is not an integer in 0..16777215");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": [{\"rank\": 0, \"node\": -1}]}",
	       "map[0]: \"node\" is not an integer in 0..65535");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": [{\"rank\": 0, \"node\": 0, \"host\": 3}]}",
	       "map[0]: \"host\" is not a string");
	REFUSE("{\"format\": \"numakit-rank-map\", \"version\": 1, \"map\": [{\"rank\": 0, \"node\": 0}, "
	       "{\"rank\": 0, \"node\": 1}]}",
	       "map entry 2: rank 0 is given twice (also map entry 1)");
	REFUSE("{\"format\": \"numakit-rank-map\", \"format\": \"numakit-rank-map\", \"version\": 1, \"map\": []}",
	       "not JSON");
}

static void test_load(void **state)
{
	(void)state;
	struct cli_rankfile f;
	char why[512] = "";
	assert_int_equal(cli_rankfile_load("/no/such/rank.map", &f, why, sizeof why), -1);
	assert_non_null(strstr(why, "No such file"));
	assert_int_equal(f.n, 0);
	assert_int_equal(cli_rankfile_load("/", &f, why, sizeof why), -1);
	assert_int_equal(f.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openmpi),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
