/* SPDX-License-Identifier: BSD-3-Clause */
/* Policy values: setters, the text form (parse, canonical format, round trips) and every bad input. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_impl.h"

static nk_policy *parse(const char *text)
{
	nk_policy *p = NULL;
	nk_error err = { 0 };
	int rc = nk_policy_parse(text, &p, &err);
	if (rc)
		fail_msg("\"%s\": %d %s", text, rc, err.message);
	assert_non_null(p);
	return p;
}

static char *format(const nk_policy *p)
{
	int need = nk_policy_format(p, NULL, 0);
	char *s;
	assert_true(need > 0);
	s = malloc((size_t)need + 1);
	assert_non_null(s);
	assert_int_equal(nk_policy_format(p, s, (size_t)need + 1), need);
	assert_int_equal(strlen(s), need);
	return s;
}

/* text parses, formats as @p canon, and canon parses back to an equal policy. */
static void expect_canon(const char *text, const char *canon)
{
	nk_policy *p = parse(text), *q;
	char *s = format(p), *s2;
	if (strcmp(s, canon))
		fail_msg("\"%s\": formatted \"%s\", expected \"%s\"", text, s, canon);
	q = parse(s);
	assert_true(nk__policy_equal(p, q));
	s2 = format(q);
	assert_string_equal(s, s2);
	free(s);
	free(s2);
	nk_policy_free(p);
	nk_policy_free(q);
}

/* text must fail with NK_EPARSE, leave *out alone, and mention @p needle. */
static void expect_error(const char *text, const char *needle)
{
	nk_policy *sentinel = (nk_policy *)&sentinel;
	nk_policy *p = sentinel;
	nk_error err = { 0 };
	int rc = nk_policy_parse(text, &p, &err);
	if (rc != NK_EPARSE)
		fail_msg("\"%s\": expected NK_EPARSE, got %d (%s)", text, rc, err.message);
	assert_int_equal(err.code, NK_EPARSE);
	assert_ptr_equal(p, sentinel);
	if (strncmp(err.message, "policy: ", 8) || !strstr(err.message, needle))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", text, err.message, needle);
	assert_int_equal(nk_policy_parse(text, &p, NULL), NK_EPARSE);
	assert_ptr_equal(p, sentinel);
}

static void test_kinds_and_defaults(void **state)
{
	static const char *const names[NK_POLICY_KIND_COUNT] = {
		"bind", "block", "cyclic", "cyclic_block", "cyclic_neighbors", "skew_mapp",
		"prime_mapp", "random", "block_cyclic", "block_exclusive", "weighted", "next_touch",
	};
	(void)state;
	for (int k = 0; k < NK_POLICY_KIND_COUNT; k++) {
		nk_policy *p = NULL, *q = parse(names[k]);
		char buf[64];
		assert_int_equal(nk_policy_create(k, &p), 0);
		assert_int_equal(nk_policy_kind(p), k);
		assert_int_equal(nk_policy_kind(q), k);
		assert_true(nk__policy_equal(p, q));
		assert_int_equal(nk_policy_format(p, buf, sizeof buf), (int)strlen(names[k]));
		assert_string_equal(buf, names[k]);
		nk_policy_free(p);
		nk_policy_free(q);
	}
	nk_policy *p = (nk_policy *)&p;
	assert_int_equal(nk_policy_create(-1, &p), NK_EINVAL);
	assert_int_equal(nk_policy_create(NK_POLICY_KIND_COUNT, &p), NK_EINVAL);
	assert_ptr_equal(p, (nk_policy *)&p);
	assert_int_equal(nk_policy_create(0, NULL), NK_EINVAL);
	assert_int_equal(nk_policy_kind(NULL), NK_EINVAL);
	nk_policy_free(NULL);
	/* white space around the text is fine */
	p = parse("  cyclic\n");
	assert_int_equal(nk_policy_kind(p), NK_POLICY_CYCLIC);
	nk_policy_free(p);
}

static void test_canonical(void **state)
{
	(void)state;
	expect_canon("cyclic:nodes=0-3", "cyclic:nodes=0-3");
	expect_canon("cyclic:nodes=0,1,2,3", "cyclic:nodes=0-3");
	expect_canon("cyclic:nodes=3,2,1,0", "cyclic:nodes=3,2,1,0");
	expect_canon("cyclic:nodes=0-6:2", "cyclic:nodes=0,2,4,6");
	expect_canon("cyclic:nodes=4-5,0-1,9", "cyclic:nodes=4-5,0-1,9");
	expect_canon("cyclic_block:block=64K", "cyclic_block:block=64K");
	expect_canon("cyclic_block:block=65536", "cyclic_block:block=64K");
	expect_canon("cyclic_block:block=1000", "cyclic_block:block=1000");
	expect_canon("cyclic_block:block=1GiB", "cyclic_block:block=1G");
	expect_canon("cyclic_block:block=2T", "cyclic_block:block=2T");
	expect_canon("cyclic_block:block=1536K", "cyclic_block:block=1536K");
	expect_canon("bind:nodes=2", "bind:nodes=2");
	expect_canon("block:split=rows", "block:split=rows");
	expect_canon("block:split=pages", "block");
	expect_canon("block:split=cols,threads=0,0,1,1", "block:threads=0*2,1*2,split=cols");
	expect_canon("block:threads=0*4,1-3,2*2", "block:threads=0*4,1-3,2*2");
	expect_canon("block:threads=0,1,1,2", "block:threads=0,1*2,2");
	expect_canon("block:threads=5,6,7,8", "block:threads=5-8");
	expect_canon("skew_mapp", "skew_mapp");
	expect_canon("prime_mapp:prime=7", "prime_mapp:prime=7");
	expect_canon("random:seed=42", "random:seed=42");
	expect_canon("random:seed=0", "random");
	expect_canon("random:seed=18446744073709551615", "random:seed=18446744073709551615");
	expect_canon("block_cyclic:block=1M,nodes=0,2", "block_cyclic:nodes=0,2,block=1M");
	expect_canon("weighted:weights=0=3/1=1", "weighted:weights=0=3/1=1");
	expect_canon("weighted:weights=1=1/0=255,nodes=1,0,2", "weighted:nodes=1,0,2,weights=1=1/0=255");
	expect_canon("cyclic_neighbors:home=1,count=2", "cyclic_neighbors:home=1,count=2");
	expect_canon("block_exclusive", "block_exclusive");
	expect_canon("block_exclusive:nodes=1,3", "block_exclusive:nodes=1,3");
	expect_canon("next_touch", "next_touch");
	expect_canon("prime_mapp:nodes=0-3,prime=5", "prime_mapp:nodes=0-3,prime=5");
}

static void test_parse_values(void **state)
{
	nk_policy *p;
	(void)state;

	p = parse("block_cyclic:block=1M,nodes=0,2");
	assert_int_equal(p->block, 1u << 20);
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->nodes[0], 0);
	assert_int_equal(p->nodes[1], 2);
	nk_policy_free(p);

	p = parse("block:threads=3*2,0-1,split=cols");
	assert_int_equal(p->nthreads, 4);
	assert_int_equal(p->threads[0], 3);
	assert_int_equal(p->threads[1], 3);
	assert_int_equal(p->threads[2], 0);
	assert_int_equal(p->threads[3], 1);
	assert_int_equal(p->split, NK_SPLIT_COLS);
	nk_policy_free(p);

	p = parse("weighted:weights=0=3/1=1");
	assert_int_equal(p->nweights, 2);
	assert_int_equal(p->wnodes[0], 0);
	assert_int_equal(p->weights[0], 3);
	assert_int_equal(p->wnodes[1], 1);
	assert_int_equal(p->weights[1], 1);
	nk_policy_free(p);

	p = parse("cyclic_neighbors:count=2,home=1");
	assert_int_equal(p->home, 1);
	assert_int_equal(p->count, 2);
	nk_policy_free(p);

	p = parse("cyclic:nodes=65535");
	assert_int_equal(p->nodes[0], 65535);
	nk_policy_free(p);

	/* the largest sets stay linear to check */
	p = parse("cyclic:nodes=0-65535");
	assert_int_equal(p->nnodes, 65536);
	assert_int_equal(nk_policy_set_nodes(p, p->nodes, p->nnodes), 0);
	nk_policy_free(p);
	expect_error("cyclic:nodes=0-65535,17", "node 17 listed twice");

	p = parse("prime_mapp:prime=2147483647");
	assert_int_equal(p->prime, 2147483647);
	nk_policy_free(p);
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_error("", "empty text");
	expect_error("   ", "empty text");
	expect_error("bogus", "\"bogus\": unknown policy");
	expect_error("Cyclic", "\"Cyclic\": unknown policy");
	expect_error("cyclic:", "empty parameter list");
	expect_error("cyclic:nodes=", "\"nodes=\": empty list");
	expect_error("cyclic:nodes=0,0", "\"nodes=0,0\": node 0 listed twice");
	expect_error("cyclic:nodes=0-3,2", "node 2 listed twice");
	expect_error("cyclic:nodes=a", "\"nodes=a\": bad node id");
	expect_error("cyclic:nodes=-1", "bad range");
	expect_error("cyclic:nodes=3-1", "\"nodes=3-1\": bad range");
	expect_error("cyclic:nodes=0-4:0", "bad range");
	expect_error("cyclic:nodes=65536", "bad node id");
	expect_error("cyclic:nodes=99999999999999999999", "bad node id");
	expect_error("cyclic:nodes=0,,1", "empty item");
	expect_error("cyclic:nodes=0,", "empty item");
	expect_error("cyclic:,nodes=0", "empty item");
	expect_error("cyclic:nodes=0 ,1", "bad node id");
	expect_error("cyclic:nodes=0-3,nodes=1", "\"nodes=1\": key \"nodes\" given twice");
	expect_error("cyclic:seed=1", "\"seed=1\": key \"seed\" does not apply to cyclic");
	expect_error("cyclic:bogus=1", "\"bogus=1\": unknown key \"bogus\"");
	expect_error("cyclic:nodes", "\"nodes\": expected key=value");
	expect_error("next_touch:nodes=0", "does not apply to next_touch");
	expect_error("cyclic_block:block=0", "\"block=0\": the block size must be > 0");
	expect_error("cyclic_block:block=", "not a size");
	expect_error("cyclic_block:block=4X", "\"block=4X\": not a size");
	expect_error("cyclic_block:block=99999999999T", "not a size");
	expect_error("cyclic_block:block=9223372036854775808", "too large");
	expect_error("cyclic_block:block=1M,2", "unexpected ','");
	expect_error("prime_mapp:prime=4", "\"prime=4\": not a prime");
	expect_error("prime_mapp:prime=1", "not a prime");
	expect_error("prime_mapp:prime=0", "not a prime");
	expect_error("prime_mapp:prime=2147483648", "not a prime");
	expect_error("prime_mapp:nodes=0-4,prime=3", "prime 3 is smaller than the 5 nodes");
	expect_error("weighted:weights=0=0", "\"weights=0=0\": weight \"0\" of node 0 is not in 1..255");
	expect_error("weighted:weights=0=256", "not in 1..255");
	expect_error("weighted:weights=0=1/0=2", "node 0 weighted twice");
	expect_error("weighted:weights=0", "expected NODE=WEIGHT");
	expect_error("weighted:weights=0=1/", "expected NODE=WEIGHT");
	expect_error("weighted:weights=", "empty list");
	expect_error("weighted:weights=0=3,1=1", "unknown key \"1\"");
	expect_error("block:split=diag", "\"split=diag\": expected pages, rows or cols");
	expect_error("block:threads=0*0", "expected NODE*COUNT");
	expect_error("block:threads=0*65537", "expected NODE*COUNT");
	expect_error("block:threads=0*65536,1", "more than 65536 entries");
	expect_error("random:seed=18446744073709551616", "not an unsigned 64-bit integer");
	expect_error("random:seed=-1", "not an unsigned 64-bit integer");
	expect_error("random:seed=0x10", "not an unsigned 64-bit integer");
	expect_error("cyclic_neighbors:count=0", "\"count=0\": not a node count");
	expect_error("cyclic_neighbors:home=x", "not a node id");

	nk_policy *p = (nk_policy *)&p;
	assert_int_equal(nk_policy_parse(NULL, &p, NULL), NK_EINVAL);
	assert_int_equal(nk_policy_parse("cyclic", NULL, NULL), NK_EINVAL);
	assert_ptr_equal(p, (nk_policy *)&p);
}

static void test_setters(void **state)
{
	nk_policy *p = NULL, *c = NULL;
	const int nodes[] = { 3, 1, 2 }, dup[] = { 1, 1 }, neg[] = { -1 };
	const unsigned w[] = { 2, 1, 255 }, bad_w[] = { 0 }, big_w[] = { 256 };
	char *s;
	(void)state;

	assert_int_equal(nk_policy_create(NK_POLICY_CYCLIC, &p), 0);
	assert_int_equal(nk_policy_set_nodes(p, nodes, 3), 0);
	s = format(p);
	assert_string_equal(s, "cyclic:nodes=3,1-2");
	free(s);
	assert_int_equal(nk_policy_set_nodes(p, dup, 2), NK_EINVAL);
	assert_int_equal(nk_policy_set_nodes(p, neg, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_nodes(p, NULL, 1), NK_EINVAL);
	assert_int_equal(p->nnodes, 3); /* unchanged */
	/* keys of other kinds are refused, nothing changes */
	assert_int_equal(nk_policy_set_seed(p, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_block(p, 4096), NK_EINVAL);
	assert_int_equal(nk_policy_set_home(p, 0), NK_EINVAL);
	assert_int_equal(nk_policy_set_count(p, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_prime(p, 5), NK_EINVAL);
	assert_int_equal(nk_policy_set_split(p, NK_SPLIT_ROWS), NK_EINVAL);
	assert_int_equal(nk_policy_set_threads(p, nodes, 3), NK_EINVAL);
	assert_int_equal(nk_policy_set_weights(p, nodes, w, 3), NK_EINVAL);
	s = format(p);
	assert_string_equal(s, "cyclic:nodes=3,1-2");
	free(s);
	assert_int_equal(nk_policy_copy(p, &c), 0);
	assert_true(nk__policy_equal(p, c));
	assert_int_equal(nk_policy_set_nodes(p, NULL, 0), 0); /* back to the default set */
	assert_false(nk__policy_equal(p, c));
	s = format(p);
	assert_string_equal(s, "cyclic");
	free(s);
	nk_policy_free(p);
	nk_policy_free(c);

	assert_int_equal(nk_policy_create(NK_POLICY_WEIGHTED, &p), 0);
	assert_int_equal(nk_policy_set_weights(p, nodes, w, 3), 0);
	assert_int_equal(nk_policy_set_weights(p, nodes, bad_w, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_weights(p, nodes, big_w, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_weights(p, dup, w, 2), NK_EINVAL);
	assert_int_equal(nk_policy_set_weights(p, nodes, NULL, 3), NK_EINVAL);
	s = format(p);
	assert_string_equal(s, "weighted:weights=3=2/1=1/2=255");
	free(s);
	assert_int_equal(nk_policy_copy(p, &c), 0);
	assert_true(nk__policy_equal(p, c));
	nk_policy_free(c);
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_PRIME_MAPP, &p), 0);
	assert_int_equal(nk_policy_set_prime(p, 4), NK_EINVAL);
	assert_int_equal(nk_policy_set_prime(p, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_prime(p, 2), 0);
	assert_int_equal(nk_policy_set_nodes(p, nodes, 3), NK_EINVAL); /* 3 nodes > prime 2 */
	assert_int_equal(nk_policy_set_prime(p, 3), 0);
	assert_int_equal(nk_policy_set_nodes(p, nodes, 3), 0);
	assert_int_equal(nk_policy_set_prime(p, 2), NK_EINVAL);
	assert_int_equal(p->prime, 3);
	assert_int_equal(nk_policy_set_prime(p, 0), 0); /* default */
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_BLOCK, &p), 0);
	assert_int_equal(nk_policy_set_split(p, 3), NK_EINVAL);
	assert_int_equal(nk_policy_set_split(p, -1), NK_EINVAL);
	assert_int_equal(nk_policy_set_split(p, NK_SPLIT_COLS), 0);
	assert_int_equal(nk_policy_set_threads(p, neg, 1), NK_EINVAL);
	assert_int_equal(nk_policy_set_threads(p, dup, 2), 0); /* threads may share a node */
	assert_int_equal(nk_policy_set_threads(p, dup, 65537), NK_EINVAL);
	s = format(p);
	assert_string_equal(s, "block:threads=1*2,split=cols");
	free(s);
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_CYCLIC_BLOCK, &p), 0);
	assert_int_equal(nk_policy_set_block(p, 0), NK_EINVAL);
	assert_int_equal(nk_policy_set_block(p, 3 << 20), 0);
	s = format(p);
	assert_string_equal(s, "cyclic_block:block=3M");
	free(s);
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_CYCLIC_NEIGHBORS, &p), 0);
	assert_int_equal(nk_policy_set_home(p, -2), NK_EINVAL);
	assert_int_equal(nk_policy_set_count(p, -1), NK_EINVAL);
	assert_int_equal(nk_policy_set_home(p, 4), 0);
	assert_int_equal(nk_policy_set_count(p, 3), 0);
	s = format(p);
	assert_string_equal(s, "cyclic_neighbors:home=4,count=3");
	free(s);
	assert_int_equal(nk_policy_set_home(p, -1), 0);
	assert_int_equal(nk_policy_set_count(p, 0), 0);
	s = format(p);
	assert_string_equal(s, "cyclic_neighbors");
	free(s);
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_RANDOM, &p), 0);
	assert_int_equal(nk_policy_set_seed(p, 7), 0);
	s = format(p);
	assert_string_equal(s, "random:seed=7");
	free(s);
	nk_policy_free(p);

	assert_int_equal(nk_policy_create(NK_POLICY_NEXT_TOUCH, &p), 0);
	assert_int_equal(nk_policy_set_nodes(p, nodes, 1), NK_EINVAL);
	nk_policy_free(p);

	assert_int_equal(nk_policy_set_nodes(NULL, nodes, 1), NK_EINVAL);
	assert_int_equal(nk_policy_copy(NULL, &p), NK_EINVAL);
}

static void test_format_buffer(void **state)
{
	nk_policy *p = parse("block_cyclic:nodes=0,2,block=1M");
	char buf[64];
	const char *full = "block_cyclic:nodes=0,2,block=1M";
	int n = (int)strlen(full);
	(void)state;

	for (size_t cap = 0; cap <= (size_t)n + 1; cap++) {
		memset(buf, 'x', sizeof buf);
		assert_int_equal(nk_policy_format(p, cap ? buf : NULL, cap), n);
		if (cap) {
			assert_int_equal(strlen(buf), cap - 1 < (size_t)n ? cap - 1 : (size_t)n);
			assert_memory_equal(buf, full, strlen(buf));
		}
		assert_int_equal(buf[cap + 1], cap ? 'x' : 'x');
	}
	assert_int_equal(nk_policy_format(NULL, buf, sizeof buf), NK_EINVAL);
	assert_int_equal(nk_policy_format(p, NULL, 4), NK_EINVAL);
	nk_policy_free(p);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Random policies built through the setters survive format -> parse unchanged. */
static void test_random_round_trips(void **state)
{
	uint64_t x = 88172645463325252ULL;
	(void)state;
#define RND() xorshift(&x)
	for (int iter = 0; iter < 3000; iter++) {
		int kind = (int)(RND() % NK_POLICY_KIND_COUNT), ids[40];
		unsigned w[40];
		size_t n = RND() % 12;
		nk_policy *p = NULL, *q = NULL;
		char *s;
		nk_error err;
		unsigned keys = nk__policy_keys(kind);

		assert_int_equal(nk_policy_create(kind, &p), 0);
		for (size_t i = 0; i < n; i++) { /* distinct ids, some runs, any order */
			int id;
			size_t j;
			do {
				id = (int)(RND() % 3 ? RND() % 24 : RND() % 65536);
				for (j = 0; j < i && ids[j] != id; j++)
					;
			} while (j < i);
			ids[i] = id;
			w[i] = 1 + (unsigned)(RND() % 255);
		}
		if (keys & NK__KEY_NODES && RND() % 2) {
			if (kind == NK_POLICY_PRIME_MAPP)
				nk_policy_set_prime(p, 0);
			assert_int_equal(nk_policy_set_nodes(p, ids, n), 0);
		}
		if (keys & NK__KEY_BLOCK && RND() % 2) {
			uint64_t bits = RND() % 50;
			assert_int_equal(nk_policy_set_block(p, 1 + RND() % (1ULL << bits)), 0);
		}
		if (keys & NK__KEY_WEIGHTS)
			assert_int_equal(nk_policy_set_weights(p, ids, w, n), 0);
		if (keys & NK__KEY_SEED)
			assert_int_equal(nk_policy_set_seed(p, RND()), 0);
		if (keys & NK__KEY_HOME && RND() % 2)
			assert_int_equal(nk_policy_set_home(p, (int)(RND() % 100)), 0);
		if (keys & NK__KEY_COUNT && RND() % 2)
			assert_int_equal(nk_policy_set_count(p, (int)(1 + RND() % 100)), 0);
		if (keys & NK__KEY_PRIME && RND() % 2) {
			static const int primes[] = { 2, 3, 5, 7, 11, 13, 31, 101, 65537 };
			int pr = primes[RND() % 9];
			assert_int_equal(nk_policy_set_prime(p, pr), (size_t)pr < p->nnodes ? NK_EINVAL : 0);
		}
		if (keys & NK__KEY_SPLIT)
			assert_int_equal(nk_policy_set_split(p, (int)(RND() % 3)), 0);
		if (keys & NK__KEY_THREADS && RND() % 2) {
			int t[60];
			size_t nt = 1 + RND() % 60;
			for (size_t i = 0; i < nt; i++)
				t[i] = RND() % 2 && i ? t[i - 1] + (int)(RND() % 2) : (int)(RND() % 8);
			assert_int_equal(nk_policy_set_threads(p, t, nt), 0);
		}
		s = format(p);
		if (nk_policy_parse(s, &q, &err))
			fail_msg("\"%s\" does not parse back: %s", s, err.message);
		if (!nk__policy_equal(p, q))
			fail_msg("\"%s\" parses back to a different policy", s);
		free(s);
		nk_policy_free(p);
		nk_policy_free(q);
	}
#undef RND
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_defaults), cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_parse_values),	   cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_setters),		   cmocka_unit_test(test_format_buffer),
		cmocka_unit_test(test_random_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
