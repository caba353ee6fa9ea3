/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source, the pure half (cli/srcadv.c): the decisions on
 * hand-written scan facts (no libclang), the unified diff (hunks, context,
 * line numbers, a file without a final newline), the JSON document.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srcadv.h"

#define MIN_SIZE (256u * 1024)

static struct srcadv_array *arr(struct srcadv_scan *s, const char *name, int kind, uint64_t bytes)
{
	struct srcadv_array *a = srcadv_add_array(s, name);
	assert_non_null(a);
	a->kind = kind;
	a->bytes = bytes;
	a->decl_line = 3;
	snprintf(a->type, sizeof a->type, "double[%llu]", (unsigned long long)(bytes / 8));
	snprintf(a->size_expr, sizeof a->size_expr, "sizeof(%s)", name);
	return a;
}

static struct srcadv_access *acc(struct srcadv_array *a, unsigned line, int mode, int shape, int sched,
				 const char *chunk, int sharing)
{
	struct srcadv_access *x = srcadv_add_access(a);
	assert_non_null(x);
	x->line = line;
	x->mode = mode;
	x->shape = shape;
	x->sched = sched;
	x->in_loop = 1;
	x->pragma_line = line - 2;
	snprintf(x->chunk, sizeof x->chunk, "%s", chunk);
	x->sharing = sharing;
	return x;
}

static void test_decide_rules(void **state)
{
	struct srcadv_scan s;
	memset(&s, 0, sizeof s);

	/* 0: regular, static, serial init -> block, with the hot-spot note */
	struct srcadv_array *a = arr(&s, "grid", SRCADV_STATIC, 8 << 20);
	acc(a, 20, SRCADV_R, SRCADV_REGULAR, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	acc(a, 24, SRCADV_W, SRCADV_REGULAR, SRCADV_SCHED_NONE, "", SRCADV_SHARED_CLAUSE);
	assert_int_equal(srcadv_add_init(a, 12), 0);
	assert_int_equal(srcadv_add_init(a, 12), 0); /* once per line */
	/* 1: small -> leave */
	a = arr(&s, "coef", SRCADV_GLOBAL, 64);
	acc(a, 20, SRCADV_R, SRCADV_REGULAR, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	/* 2: private everywhere -> leave, even when large */
	a = arr(&s, "scratch", SRCADV_STATIC, 1 << 20);
	acc(a, 20, SRCADV_W, SRCADV_REGULAR, SRCADV_SCHED_STATIC, "", SRCADV_PRIVATE);
	acc(a, 21, SRCADV_R, SRCADV_SHARED, SRCADV_SCHED_STATIC, "", SRCADV_FIRSTPRIVATE);
	/* 3: irregular -> cyclic */
	a = arr(&s, "table", SRCADV_MAIN_HEAP, 0);
	acc(a, 30, SRCADV_R, SRCADV_IRREGULAR, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	/* 4: regular but dynamic -> cyclic, chunk in the reason */
	a = arr(&s, "out", SRCADV_MAIN_HEAP, 1 << 20);
	acc(a, 30, SRCADV_W, SRCADV_REGULAR, SRCADV_SCHED_DYNAMIC, "64", SRCADV_SHARED_DEFAULT);
	/* 5: read by every thread -> cyclic, read-mostly */
	a = arr(&s, "lut", SRCADV_GLOBAL, 1 << 20);
	acc(a, 30, SRCADV_R, SRCADV_SHARED, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	/* 6: one thread (single) -> leave */
	a = arr(&s, "log", SRCADV_GLOBAL, 1 << 20);
	acc(a, 40, SRCADV_W, SRCADV_SHARED, SRCADV_SCHED_NONE, "", SRCADV_SHARED_DEFAULT)->single = 1;
	/* 7: no parallel access -> leave */
	a = arr(&s, "cold", SRCADV_GLOBAL, 1 << 20);
	assert_int_equal(srcadv_add_init(a, 5), 0);
	/* 8: static with a chunk -> cyclic */
	a = arr(&s, "rr", SRCADV_GLOBAL, 1 << 20);
	acc(a, 50, SRCADV_RW, SRCADV_REGULAR, SRCADV_SCHED_STATIC, "4", SRCADV_SHARED_DEFAULT);
	/* 9: columns -> cyclic */
	a = arr(&s, "mat", SRCADV_GLOBAL, 1 << 20);
	acc(a, 50, SRCADV_R, SRCADV_COLUMNS, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	/* 10: used as a whole -> leave */
	a = arr(&s, "buf", SRCADV_GLOBAL, 1 << 20);
	acc(a, 50, SRCADV_R, SRCADV_WHOLE, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);
	/* 11: unknown size (0) is not small: block */
	a = arr(&s, "heap", SRCADV_MAIN_HEAP, 0);
	acc(a, 60, SRCADV_W, SRCADV_REGULAR, SRCADV_SCHED_STATIC, "", SRCADV_SHARED_DEFAULT);

	srcadv_decide(&s, MIN_SIZE);
	static const struct {
		int action;
		const char *policy, *reason;
	} want[] = {
		{ SRCADV_PLACE, "block", "serial initialisation (line 12)" },
		{ SRCADV_LEAVE, "", "small (64 B < 256 KiB)" },
		{ SRCADV_LEAVE, "", "private in every parallel construct" },
		{ SRCADV_PLACE, "cyclic", "irregular accesses (line 30" },
		{ SRCADV_PLACE, "cyclic", "schedule(dynamic, 64)" },
		{ SRCADV_PLACE, "cyclic", "read-mostly shared" },
		{ SRCADV_LEAVE, "", "used by one thread" },
		{ SRCADV_LEAVE, "", "not accessed in an OpenMP parallel construct" },
		{ SRCADV_PLACE, "cyclic", "schedule(static, 4)" },
		{ SRCADV_PLACE, "cyclic", "partitioned by columns" },
		{ SRCADV_LEAVE, "", "used as a whole" },
		{ SRCADV_PLACE, "block", "line 60" },
	};
	assert_int_equal(s.n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < s.n; i++) {
		if (s.arr[i].action != want[i].action || strcmp(s.arr[i].policy, want[i].policy) ||
		    !strstr(s.arr[i].reason, want[i].reason))
			fail_msg("%s: %d %s '%s'", s.arr[i].name, s.arr[i].action, s.arr[i].policy, s.arr[i].reason);
	}
	assert_non_null(strstr(s.arr[0].reason, "lines 20, 24"));
	/* a larger threshold makes the 1 MiB arrays small too */
	srcadv_decide(&s, 2u << 20);
	assert_int_equal(s.arr[4].action, SRCADV_LEAVE);
	assert_int_equal(s.arr[0].action, SRCADV_PLACE);
	srcadv_scan_clear(&s);
}

/* A 20-line program: includes at 1-2, global at 4, main's '{' at 7, malloc at 8. */
static char *program(void)
{
	static const char *const lines[] = {
		"#include <stdio.h>",         "#include <stdlib.h>", "",
		"static double g[1 << 20];",  "",                    "int main(void)",
		"{",                          "\tdouble *p = malloc(1 << 23);", "\tdouble s = 0;",
		"",                           "\tfor (int i = 0; i < 1 << 20; i++)", "\t\tg[i] = p[i] = i;",
		"#pragma omp parallel for",   "\tfor (int i = 0; i < 1 << 20; i++)", "\t\tp[i] += g[i];",
		"\tfor (int i = 0; i < 1 << 20; i++)", "\t\ts += p[i];", "\tprintf(\"%f\\n\", s);", "\treturn 0;",
		"}",
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		n += strlen(lines[i]) + 1;
	char *t = malloc(n + 1), *p = t;
	assert_non_null(t);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		p += sprintf(p, "%s\n", lines[i]);
	return t;
}

static void scan_of_program(struct srcadv_scan *s)
{
	memset(s, 0, sizeof *s);
	snprintf(s->file, sizeof s->file, "prog.c");
	s->has_main = 1;
	s->main_body_line = 7;
	snprintf(s->main_indent, sizeof s->main_indent, "\t");
	s->include_after = 2;
	struct srcadv_array *g = arr(s, "g", SRCADV_STATIC, 8 << 20);
	acc(g, 15, SRCADV_R, SRCADV_REGULAR, SRCADV_SCHED_NONE, "", SRCADV_SHARED_DEFAULT);
	struct srcadv_array *p = arr(s, "p", SRCADV_MAIN_HEAP, 8 << 20);
	acc(p, 15, SRCADV_RW, SRCADV_REGULAR, SRCADV_SCHED_NONE, "", SRCADV_SHARED_DEFAULT);
	p->insert_after = 8;
	snprintf(p->indent, sizeof p->indent, "\t");
	snprintf(p->size_expr, sizeof p->size_expr, "(1 << 23)");
	snprintf(p->alloc, sizeof p->alloc, "malloc");
}

/* The file after applying a diff of pure insertions, by its hunk headers (a tiny `patch`). */
static char *apply(const char *src, const char *diff)
{
	size_t cap = strlen(src) + strlen(diff) + 1, n = 0;
	char *out = malloc(cap);
	const char *s = src, *d = strstr(diff, "@@ ");
	unsigned line = 1;

	assert_non_null(out);
	while (d && *d) {
		unsigned os, ol, ns, nl;
		assert_int_equal(sscanf(d, "@@ -%u,%u +%u,%u @@", &os, &ol, &ns, &nl), 4);
		/* copy original lines before the hunk */
		while (line < os) {
			const char *e = strchr(s, '\n') + 1;
			memcpy(out + n, s, (size_t)(e - s));
			n += (size_t)(e - s);
			s = e;
			line++;
		}
		/* the new side starts where the output is */
		unsigned out_lines = 0;
		for (size_t i = 0; i < n; i++)
			out_lines += out[i] == '\n';
		assert_int_equal(ns, out_lines + 1);
		d = strchr(d, '\n') + 1;
		unsigned seen_old = 0, seen_new = 0;
		while (*d && strncmp(d, "@@ ", 3)) {
			const char *e = strchr(d, '\n') + 1;
			seen_new++;
			seen_old += *d == ' ';
			if (*d == '+') {
				memcpy(out + n, d + 1, (size_t)(e - d - 1));
				n += (size_t)(e - d - 1);
			} else {
				assert_int_equal(*d, ' ');
				const char *se = strchr(s, '\n') + 1;
				/* the context matches the original */
				assert_true((size_t)(se - s) == (size_t)(e - d - 1) && !memcmp(s, d + 1, (size_t)(se - s)));
				memcpy(out + n, s, (size_t)(se - s));
				n += (size_t)(se - s);
				s = se;
				line++;
			}
			d = e;
		}
		/* the header's counts are the hunk's */
		assert_int_equal(seen_old, ol);
		assert_int_equal(seen_new, nl);
	}
	strcpy(out + n, s);
	return out;
}

static void test_patch(void **state)
{
	struct srcadv_scan s;
	char *src = program(), *diff = NULL;

	scan_of_program(&s);
	srcadv_decide(&s, MIN_SIZE);
	assert_int_equal(s.arr[0].action, SRCADV_PLACE);
	assert_string_equal(s.arr[0].policy, "block");
	assert_int_equal(srcadv_patch(&s, src, strlen(src), &diff), 0);
	assert_non_null(diff);
	/* one hunk: the helpers after line 2 and the setup after line 7 are 5 lines apart (< 2 x 3 of context) */
	assert_true(!strncmp(diff, "--- a/prog.c\n+++ b/prog.c\n@@ -1,11 +1,", 38));
	assert_null(strstr(diff + 30, "\n@@ "));
	assert_non_null(strstr(diff, " {\n+\tnk_src_setup();\n+\tnk_src_place(g, sizeof(g), \"block\", \"g\");\n"
				   " \tdouble *p = malloc(1 << 23);\n"
				   "+\tnk_src_place(p, (1 << 23), \"block\", \"p\");\n \tdouble s = 0;\n"));
	char *patched = apply(src, diff);
	assert_non_null(strstr(patched, "#include <stdlib.h>\n\n#include <numakit.h>"));
	/* the file has stdio.h and stdlib.h already: not added again */
	assert_null(strstr(strstr(patched, "#include <stdio.h>") + 1, "#include <stdio.h>"));
	assert_null(strstr(strstr(patched, "#include <stdlib.h>") + 1, "#include <stdlib.h>"));
	assert_non_null(strstr(patched, "{\n\tnk_src_setup();\n\tnk_src_place(g, sizeof(g), \"block\", \"g\");\n"
					"\tdouble *p = malloc(1 << 23);\n\tnk_src_place(p, (1 << 23), \"block\", \"p\");\n"
					"\tdouble s = 0;\n"));
	free(patched);
	free(diff);

	/* nothing to place: an empty patch */
	for (size_t i = 0; i < s.n; i++)
		s.arr[i].action = SRCADV_LEAVE;
	assert_int_equal(srcadv_patch(&s, src, strlen(src), &diff), 0);
	assert_string_equal(diff, "");
	free(diff);
	/* a placed array the scan could not patch stays out of it */
	srcadv_decide(&s, MIN_SIZE);
	snprintf(s.arr[1].nopatch, sizeof s.arr[1].nopatch, "the allocation's line goes on after it");
	assert_int_equal(srcadv_patch(&s, src, strlen(src), &diff), 0);
	assert_null(strstr(diff, "nk_src_place(p"));
	assert_non_null(strstr(diff, "nk_src_place(g"));
	free(diff);
	/* no main: no patch */
	s.has_main = 0;
	assert_int_equal(srcadv_patch(&s, src, strlen(src), &diff), 0);
	assert_string_equal(diff, "");
	free(diff);
	srcadv_scan_clear(&s);
	free(src);
}

static void test_patch_no_final_newline(void **state)
{
	struct srcadv_scan s;
	char *src = program(), *diff = NULL;
	size_t len = strlen(src) - 1; /* drop the last '\n': "}" ends the file */

	scan_of_program(&s);
	s.main_body_line = 17; /* pretend: the setup goes late, near the end */
	srcadv_decide(&s, MIN_SIZE);
	assert_int_equal(srcadv_patch(&s, src, len, &diff), 0);
	assert_non_null(strstr(diff, " }\n\\ No newline at end of file\n"));
	free(diff);
	/* an insertion after the unterminated last line cannot be written: no patch */
	s.main_body_line = 20;
	assert_int_equal(srcadv_patch(&s, src, len, &diff), 0);
	assert_string_equal(diff, "");
	free(diff);
	srcadv_scan_clear(&s);
	free(src);
}

static void test_no_includes(void **state)
{
	struct srcadv_scan s;
	char *src = program(), *diff = NULL;

	scan_of_program(&s);
	s.include_after = 0;
	srcadv_decide(&s, MIN_SIZE);
	assert_int_equal(srcadv_patch(&s, src, strlen(src), &diff), 0);
	assert_true(!strncmp(diff, "--- a/prog.c\n+++ b/prog.c\n@@ -1,3 +1,", 37));
	assert_non_null(strstr(diff, "@@\n+#include <numakit.h>"));
	char *patched = apply(src, diff);
	assert_true(!strncmp(patched, "#include <numakit.h>", 20));
	free(patched);
	free(diff);
	srcadv_scan_clear(&s);
	free(src);
}

static void test_json(void **state)
{
	struct srcadv_scan s;
	json_error_t je;

	scan_of_program(&s);
	assert_int_equal(srcadv_add_init(&s.arr[0], 12), 0);
	srcadv_decide(&s, MIN_SIZE);
	char *text = srcadv_format_json(&s, "PATCH");
	assert_non_null(text);
	json_t *root = json_loads(text, 0, &je);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "format")), "numakit-source-advice");
	assert_int_equal(json_integer_value(json_object_get(root, "version")), 1);
	assert_string_equal(json_string_value(json_object_get(root, "patch")), "PATCH");
	json_t *arrs = json_object_get(root, "arrays");
	assert_int_equal(json_array_size(arrs), 2);
	json_t *g = json_array_get(arrs, 0);
	assert_string_equal(json_string_value(json_object_get(g, "name")), "g");
	assert_string_equal(json_string_value(json_object_get(g, "kind")), "static");
	assert_int_equal(json_integer_value(json_object_get(g, "bytes")), 8 << 20);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "serial_writes"), 0)), 12);
	json_t *a0 = json_array_get(json_object_get(g, "accesses"), 0);
	assert_string_equal(json_string_value(json_object_get(a0, "mode")), "R");
	assert_string_equal(json_string_value(json_object_get(a0, "index")), "regular");
	assert_string_equal(json_string_value(json_object_get(a0, "schedule")), "none");
	assert_true(json_is_null(json_object_get(a0, "chunk")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(g, "advice"), "policy")), "block");
	assert_true(json_is_true(json_object_get(json_object_get(g, "advice"), "patched")));
	json_t *p = json_array_get(arrs, 1);
	assert_string_equal(json_string_value(json_object_get(p, "alloc")), "malloc");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(p, "accesses"), 0),
							      "mode")), "RW");
	json_decref(root);
	free(text);

	text = srcadv_format_text(&s);
	assert_non_null(text);
	assert_non_null(strstr(text, "prog.c: 2 arrays, 0 OpenMP directives, 2 to place\n"));
	assert_non_null(strstr(text, "  advice: block: regular accesses"));
	free(text);
	srcadv_scan_clear(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_rules),
		cmocka_unit_test(test_patch),
		cmocka_unit_test(test_patch_no_final_newline),
		cmocka_unit_test(test_no_includes),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
