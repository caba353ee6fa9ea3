/* SPDX-License-Identifier: BSD-3-Clause */
/* Sharing matrices: the text and JSON forms, files, and every malformed input (docs/formats.md). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_ok(const char *text, int n, const double *values)
{
	double *a = NULL;
	int got = 0;
	nk_error err = { 0 };
	int rc = nk_sharing_parse(text, strlen(text), &a, &got, &err);

	if (rc)
		fail_msg("\"%s\": %d %s", text, rc, err.message);
	assert_int_equal(got, n);
	for (int i = 0; i < n * n; i++)
		if (a[i] != values[i])
			fail_msg("\"%s\": value %d is %g, expected %g", text, i, a[i], values[i]);
	free(a);
}

static void expect_err(const char *text, size_t len, int code, const char *message)
{
	double *sentinel = (double *)&sentinel, *a = sentinel;
	int n = -7;
	nk_error err = { 0 };
	int rc = nk_sharing_parse(text, len, &a, &n, &err);

	if (rc != code)
		fail_msg("\"%s\": expected %d, got %d (%s)", text, code, rc, err.message);
	assert_int_equal(err.code, code);
	assert_ptr_equal(a, sentinel);
	assert_int_equal(n, -7);
	if (!strstr(err.message, message))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", text, err.message, message);
}
#define EXPECT_ERR(text, code, msg) expect_err(text, strlen(text), code, msg)

static void test_text(void **state)
{
	(void)state;
	expect_ok("0 1\n1 0\n", 2, (double[]){ 0, 1, 1, 0 });
	expect_ok("5", 1, (double[]){ 5 });
	expect_ok("# threads 0-2\n\n0, 2 ,3.5\n1 0 0 # row 1\r\n0 0 1e3\n\n", 3,
		  (double[]){ 0, 2, 3.5, 1, 0, 0, 0, 0, 1000 });
	expect_ok("\t0\t7\n\t0.25 0", 2, (double[]){ 0, 7, 0.25, 0 });
	expect_ok("0 1E+2\n2.e1 0\n", 2, (double[]){ 0, 100, 20, 0 });
}

static void test_text_errors(void **state)
{
	(void)state;
	EXPECT_ERR("0 1 2\n1 0\n0 0 0\n", NK_EPARSE, "sharing matrix: line 2: 2 values, expected 3");
	EXPECT_ERR("0 1\n1 0 4\n", NK_EPARSE, "line 2: more than 2 values, expected 2");
	EXPECT_ERR("0 1\n", NK_EPARSE, "sharing matrix: 1 rows, expected 2");
	EXPECT_ERR("0 1\n1 0\n2 2\n", NK_EPARSE, "line 3: more than 2 rows");
	EXPECT_ERR("", NK_EPARSE, "no values");
	EXPECT_ERR("# only a comment\n\n", NK_EPARSE, "no values");
	EXPECT_ERR("0 -1\n1 0\n", NK_EPARSE, "line 1: \"-1\" is not a non-negative number");
	EXPECT_ERR("0 nan\n1 0\n", NK_EPARSE, "\"nan\"");
	EXPECT_ERR("0 inf\n1 0\n", NK_EPARSE, "\"inf\"");
	EXPECT_ERR("0 1e999\n1 0\n", NK_EPARSE, "\"1e999\"");
	EXPECT_ERR("0 0x10\n1 0\n", NK_EPARSE, "\"0x10\"");
	EXPECT_ERR("0 1e\n1 0\n", NK_EPARSE, "\"1e\"");
	EXPECT_ERR("0 .\n1 0\n", NK_EPARSE, "\".\"");
	EXPECT_ERR("0 1;\n1 0\n", NK_EPARSE, "\"1;\"");
	expect_err("0 1\n1\0 0\n", 9, NK_EPARSE, "line 2: a NUL byte");
	EXPECT_ERR("0 123456789012345678901234567890123456789012345678901234567890123456789\n", NK_EPARSE,
		   "is not a non-negative number");
	assert_int_equal(nk_sharing_parse(NULL, 3, NULL, NULL, NULL), NK_EINVAL);
	{
		double *a;
		int n;
		assert_int_equal(nk_sharing_parse("1", 1, NULL, &n, NULL), NK_EINVAL);
		assert_int_equal(nk_sharing_parse("1", 1, &a, NULL, NULL), NK_EINVAL);
		assert_int_equal(nk_sharing_parse(NULL, 0, &a, &n, NULL), NK_EPARSE);
	}
}

static void test_json(void **state)
{
	(void)state;
	expect_ok("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": [[0, 1.5], [2, 0]]}", 2,
		  (double[]){ 0, 1.5, 2, 0 });
	expect_ok("  \n{\"matrix\": [[3]], \"version\": 1, \"format\": \"numakit-sharing\", \"extra\": true}", 1,
		  (double[]){ 3 });
	EXPECT_ERR("{\"format\": \"numakit-machine\", \"version\": 1, \"matrix\": [[0]]}", NK_EPARSE,
		   "format: expected \"numakit-sharing\"");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"matrix\": [[0]]}", NK_EPARSE, "version: expected an integer");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 2, \"matrix\": [[0]]}", NK_EVERSION,
		   "version 2 is not supported");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1}", NK_EPARSE, "matrix: expected a non-empty");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": []}", NK_EPARSE,
		   "matrix: expected a non-empty");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": [[0, 1], [1]]}", NK_EPARSE,
		   "matrix[1]: expected 2 values, found 1");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": [[0, 1], 3]}", NK_EPARSE,
		   "matrix[1]: expected an array");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": [[0, \"1\"], [1, 0]]}", NK_EPARSE,
		   "matrix[0][1]: expected a non-negative number");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"matrix\": [[0, -1], [1, 0]]}", NK_EPARSE,
		   "matrix[0][1]");
	EXPECT_ERR("{\"format\": \"numakit-sharing\", \"version\": 1, \"version\": 1, \"matrix\": [[0]]}", NK_EPARSE,
		   "sharing matrix:1:");
	EXPECT_ERR("{\"format\": ", NK_EPARSE, "sharing matrix:1:");
	EXPECT_ERR("{} x", NK_EPARSE, "sharing matrix:1:");
}

static void test_load(void **state)
{
	const char *text = "0 4\n4 0\n";
	char *path = nk_test_tmpfile(text, strlen(text));
	double *a = NULL;
	int n = 0;
	nk_error err = { 0 };

	(void)state;
	assert_int_equal(nk_sharing_load(path, &a, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_true(a[1] == 4 && a[2] == 4 && a[0] == 0);
	free(a);
	unlink(path);
	free(path);

	path = nk_test_tmpfile("0 4\n4\n", 6);
	assert_int_equal(nk_sharing_load(path, &a, &n, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, path));
	assert_non_null(strstr(err.message, ": line 2: 1 values, expected 2"));
	unlink(path);
	free(path);

	assert_int_equal(nk_sharing_load("/no/such/matrix", &a, &n, &err), NK_ENOENT);
	assert_string_equal(err.message, "/no/such/matrix: no such file");
	assert_int_equal(nk_sharing_load("/tmp", &a, &n, &err), NK_EIO);
	assert_int_equal(nk_sharing_load(NULL, &a, &n, &err), NK_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_text_errors),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
