/* SPDX-License-Identifier: BSD-3-Clause
 * The numa_maps parser on recorded text: a capture from this project's host
 * (cat /proc/self/numa_maps, kernel 6.18), hand-written multi-node samples
 * following proc(5) and fs/proc/task_mmu.c (huge pages, file mappings,
 * policies with spaces, weird spacing, unknown counters), every error that
 * names a line, the JSON form, and the live /proc/self/numa_maps of this test.
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "os/os.h"

/* Captured on the host: `cat /proc/self/numa_maps` (trimmed to keep every kind of line). */
static const char host_capture[] =
	"55baa8279000 default file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4\n"
	"55baa827b000 default file=/usr/bin/cat mapped=5 N0=5 kernelpagesize_kB=4\n"
	"55baa8283000 default file=/usr/bin/cat anon=1 dirty=1 active=0 N0=1 kernelpagesize_kB=4\n"
	"55babafab000 default heap anon=4 dirty=4 active=0 N0=4 kernelpagesize_kB=4\n"
	"7f86cfac0000 default anon=1 dirty=1 active=0 N0=1 kernelpagesize_kB=4\n"
	"7f86cfae2000 default file=/usr/lib/locale/C.utf8/LC_CTYPE mapped=32 mapmax=23 N0=32 kernelpagesize_kB=4\n"
	"7f86cfb6a000 default file=/usr/lib/x86_64-linux-gnu/libc.so.6 mapped=198 mapmax=25 N0=198 kernelpagesize_kB=4\n"
	"7f86cfd32000 default\n"
	"7f86cfd36000 default\n"
	"7f86cfd3b000 default file=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 mapped=37 mapmax=17 N0=37 kernelpagesize_kB=4\n"
	"7ffe84621000 default stack anon=3 dirty=3 active=1 N0=3 kernelpagesize_kB=4\n";

/* Hand-written, four nodes: what a NUMA program's maps look like. */
static const char four_nodes[] =
	"00400000 interleave:0-3 file=/opt/app/bin/solver mapped=12 N0=3 N1=3 N2=3 N3=3 kernelpagesize_kB=4\n"
	"7f0000000000 bind:1 anon=1024 dirty=1024 N1=1024 kernelpagesize_kB=4\n"
	/* hugetlbfs file with a space in its name (seq_path writes \040) */
	"7f0040000000 default file=/dev/hugepages/seg\\040one huge dirty=4 N0=2 N2=2 kernelpagesize_kB=2048\n"
	/* policy names with a space */
	"7f0080000000 prefer (many):0,2 anon=10 dirty=10 active=3 N2=10 kernelpagesize_kB=4\n"
	"7f00c0000000 weighted interleave=static:0-1 anon=6 dirty=6 N0=4 N1=2 kernelpagesize_kB=4\n"
	/* weird spacing (tabs, doubled blanks, trailing blanks, CRLF), nodes out of order, a counter from the future */
	"7f0100000000\tdefault   anon=2  dirty=2\tswapcache=1 N3=1 N1=1 kernelpagesize_kB=4 newcounter=5   \r\n"
	"\n"
	/* gigantic pages, anonymous hugetlb */
	"7f4000000000 bind:3 huge anon=1 dirty=1 N3=1 kernelpagesize_kB=1048576\n"
	/* thread stack the way kernels before 4.5 wrote it; last line without newline */
	"7ffc00000000 default stack:1234 anon=3 dirty=3 N0=3 kernelpagesize_kB=4";

static nk_numamaps *parse_ok(const char *text)
{
	nk_numamaps *nm = NULL;
	nk_error err = { 0, "" };
	int rc = nk_numamaps_parse(text, strlen(text), &nm, &err);

	if (rc)
		fail_msg("parse failed: %s", err.message);
	assert_non_null(nm);
	return nm;
}

static void test_host_capture(void **state)
{
	nk_numamaps *nm = parse_ok(host_capture);
	nk_maps_entry e;
	int nodes[4];
	uint64_t bytes[4];

	assert_int_equal(nk_numamaps_count(nm), 11);
	assert_int_equal(nk_numamaps_entry(nm, 0, &e), 0);
	assert_true(e.addr == 0x55baa8279000ull);
	assert_string_equal(e.policy, "default");
	assert_int_equal(e.type, NK_MAPS_FILE);
	assert_string_equal(e.path, "/usr/bin/cat");
	assert_true(e.page_size == 4096);
	assert_true(e.pages == 2 && e.mapped == 2);
	assert_int_equal(e.nnodes, 1);
	assert_int_equal(e.nodes[0], 0);

	assert_int_equal(nk_numamaps_entry(nm, 3, &e), 0);
	assert_int_equal(e.type, NK_MAPS_HEAP);
	assert_string_equal(e.path, "[heap]");
	assert_true(e.anon == 4 && e.dirty == 4 && e.active == 0 && e.pages == 4);

	assert_int_equal(nk_numamaps_entry(nm, 4, &e), 0);
	assert_int_equal(e.type, NK_MAPS_ANON);
	assert_string_equal(e.path, "");

	/* a mapping without resident pages: no counters, no page size */
	assert_int_equal(nk_numamaps_entry(nm, 7, &e), 0);
	assert_true(e.addr == 0x7f86cfd32000ull);
	assert_true(e.pages == 0 && e.page_size == 0 && e.nnodes == 0);

	assert_int_equal(nk_numamaps_entry(nm, 10, &e), 0);
	assert_int_equal(e.type, NK_MAPS_STACK);
	assert_string_equal(e.path, "[stack]");

	assert_int_equal(nk_numamaps_totals(nm, nodes, bytes, 4), 1);
	assert_int_equal(nodes[0], 0);
	assert_true(bytes[0] == (2 + 5 + 1 + 4 + 1 + 32 + 198 + 37 + 3) * 4096ull);
	assert_int_equal(nk_numamaps_entry(nm, 11, &e), NK_EINVAL);
	nk_numamaps_free(nm);
}

static uint64_t node_pages(const nk_maps_entry *e, int node)
{
	for (size_t k = 0; k < e->nnodes; k++)
		if (e->nodes[k] == node)
			return e->node_pages[k];
	return 0;
}

static void test_four_nodes(void **state)
{
	nk_numamaps *nm = parse_ok(four_nodes);
	nk_maps_entry e;
	int nodes[8];
	uint64_t bytes[8];

	assert_int_equal(nk_numamaps_count(nm), 8); /* the blank line is not a mapping */

	assert_int_equal(nk_numamaps_entry(nm, 0, &e), 0);
	assert_true(e.addr == 0x400000);
	assert_string_equal(e.policy, "interleave:0-3");
	assert_int_equal(e.nnodes, 4);
	for (int n = 0; n < 4; n++)
		assert_true(node_pages(&e, n) == 3);
	assert_true(e.pages == 12);

	assert_int_equal(nk_numamaps_entry(nm, 2, &e), 0);
	assert_int_equal(e.type, NK_MAPS_HUGE);
	assert_string_equal(e.path, "/dev/hugepages/seg one");
	assert_true(e.page_size == 2u << 20);
	assert_true(e.pages == 4 && node_pages(&e, 0) == 2 && node_pages(&e, 2) == 2);

	assert_int_equal(nk_numamaps_entry(nm, 3, &e), 0);
	assert_string_equal(e.policy, "prefer (many):0,2");
	assert_true(e.anon == 10 && e.active == 3 && node_pages(&e, 2) == 10);

	assert_int_equal(nk_numamaps_entry(nm, 4, &e), 0);
	assert_string_equal(e.policy, "weighted interleave=static:0-1");
	assert_true(node_pages(&e, 0) == 4 && node_pages(&e, 1) == 2);

	assert_int_equal(nk_numamaps_entry(nm, 5, &e), 0);
	assert_string_equal(e.policy, "default");
	assert_true(e.swapcache == 1 && e.pages == 2);
	assert_int_equal(e.nnodes, 2);
	assert_int_equal(e.nodes[0], 1); /* sorted */
	assert_int_equal(e.nodes[1], 3);

	assert_int_equal(nk_numamaps_entry(nm, 6, &e), 0);
	assert_int_equal(e.type, NK_MAPS_HUGE);
	assert_true(e.page_size == 1ull << 30);

	assert_int_equal(nk_numamaps_entry(nm, 7, &e), 0);
	assert_int_equal(e.type, NK_MAPS_STACK);

	/* totals: bytes, so huge pages count at their size */
	assert_int_equal(nk_numamaps_totals(nm, NULL, NULL, 0), 4);
	assert_int_equal(nk_numamaps_totals(nm, nodes, bytes, 8), 4);
	for (int n = 0; n < 4; n++)
		assert_int_equal(nodes[n], n);
	assert_true(bytes[0] == 3 * 4096ull + 2 * (2ull << 20) + 4 * 4096ull + 3 * 4096ull);
	assert_true(bytes[1] == 3 * 4096ull + 1024 * 4096ull + 2 * 4096ull + 1 * 4096ull);
	assert_true(bytes[2] == 3 * 4096ull + 2 * (2ull << 20) + 10 * 4096ull);
	assert_true(bytes[3] == 3 * 4096ull + 1 * 4096ull + (1ull << 30));
	/* capacity smaller than the count: count returned, only cap written */
	nodes[1] = -7;
	assert_int_equal(nk_numamaps_totals(nm, nodes, bytes, 1), 4);
	assert_int_equal(nodes[1], -7);
	nk_numamaps_free(nm);
}

static void test_empty(void **state)
{
	nk_numamaps *nm = parse_ok("");

	assert_int_equal(nk_numamaps_count(nm), 0);
	assert_int_equal(nk_numamaps_totals(nm, NULL, NULL, 0), 0);
	nk_numamaps_free(nm);
	nk_numamaps_free(NULL);
	assert_int_equal(nk_numamaps_count(NULL), 0);
}

struct bad_case {
	const char *text;
	const char *message; /* expected as a substring */
};

static void test_errors_name_the_line(void **state)
{
	static const struct bad_case cases[] = {
		{ "zz default\n", "numa_maps line 1: expected a hexadecimal address, found 'zz'" },
		{ "0x1000 default\n", "line 1: expected a hexadecimal address" },
		{ "1000\n", "line 1: no memory policy after the address" },
		{ "1000   \n", "line 1: no memory policy" },
		{ "1000 default N0=3\n", "line 1: page counts without kernelpagesize_kB (truncated line?)" },
		/* a file cut in the middle of its last line */
		{ "1000 default N0=3 kernelpagesize_kB=4\n2000 default anon=1 N0=1 kernelpag",
		  "line 2: cut-off word (truncated line?) 'kernelpag'" },
		{ "1000 default anon=1 N", "line 1: cut-off word (truncated line?) 'N'" },
		{ "1000 default anon=1 N12", "line 1: cut-off word (truncated line?) 'N12'" },
		{ "1000 default dir", "line 1: cut-off word (truncated line?) 'dir'" },
		{ "1000 default N0=1 kernelpagesize_kB=4\n2000 default N0=1 kernelpagesize_kB=\n",
		  "line 2: bad page size in 'kernelpagesize_kB='" },
		{ "1000 default\n\n3000 default N0=x kernelpagesize_kB=4\n", "line 3: bad page count in 'N0=x'" },
		{ "1000 default N0= kernelpagesize_kB=4\n", "line 1: bad page count in 'N0='" },
		{ "1000 default future=x kernelpagesize_kB=4\n", "line 1: unknown word 'future=x'" },
		{ "1000 default N1a=1 kernelpagesize_kB=4\n", "line 1: bad node id in 'N1a=1'" },
		{ "1000 default N99999=1 kernelpagesize_kB=4\n", "line 1: bad node id" },
		{ "1000 default N0=1 N0=2 kernelpagesize_kB=4\n", "line 1: node counted twice: 'N0=2'" },
		{ "1000 default bogus\n", "line 1: unknown word 'bogus'" },
		{ "1000 default anon=99999999999999999999999 N0=1 kernelpagesize_kB=4\n", "line 1: bad count in 'anon=" },
		{ "1000 default anon=-1\n", "line 1: bad count in 'anon=-1'" },
		{ "1000 default kernelpagesize_kB=0\n", "line 1: bad page size" },
		{ "1000 default file= N0=1 kernelpagesize_kB=4\n", "line 1: empty file name" },
		{ "1000 default =5\n", "line 1: malformed word '=5'" },
		{ "1000 default N0=9223372036854775807 kernelpagesize_kB=4\n", "line 1: page counts too large" },
		{ "1000 default N0=4611686018427387904 N1=4611686018427387904 kernelpagesize_kB=1\n",
		  "line 1: page counts too large" },
		{ "11112222333344445 default\n", "line 1: expected a hexadecimal address" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		nk_numamaps *nm = (nk_numamaps *)0x1;
		nk_error err = { 0, "" };
		int rc = nk_numamaps_parse(cases[i].text, strlen(cases[i].text), &nm, &err);

		if (rc != NK_EPARSE || !strstr(err.message, cases[i].message))
			fail_msg("case %zu: rc %d, message \"%s\", expected \"%s\"", i, rc, err.message,
				 cases[i].message);
		assert_int_equal(err.code, NK_EPARSE);
		assert_ptr_equal(nm, (nk_numamaps *)0x1); /* untouched on failure */
	}
	/* an embedded NUL byte */
	{
		static const char nul[] = "1000 default\n2000 def\0ault\n";
		nk_numamaps *nm = NULL;
		nk_error err = { 0, "" };
		assert_int_equal(nk_numamaps_parse(nul, sizeof nul - 1, &nm, &err), NK_EPARSE);
		assert_non_null(strstr(err.message, "line 2: NUL byte"));
		assert_null(nm);
	}
	assert_int_equal(nk_numamaps_parse(NULL, 0, NULL, NULL), NK_EINVAL);
}

static void test_json(void **state)
{
	nk_numamaps *nm = parse_ok(four_nodes);
	char *s = NULL;
	json_error_t je;
	json_t *root, *maps, *m, *tot;

	assert_int_equal(nk_numamaps_to_json(nm, 4242, 0, &s), 0);
	root = json_loads(s, 0, &je);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "format")), "numakit-numamaps");
	assert_int_equal(json_integer_value(json_object_get(root, "version")), 1);
	assert_int_equal(json_integer_value(json_object_get(root, "pid")), 4242);
	maps = json_object_get(root, "mappings");
	assert_int_equal(json_array_size(maps), 8);
	m = json_array_get(maps, 2);
	assert_string_equal(json_string_value(json_object_get(m, "address")), "0x7f0040000000");
	assert_string_equal(json_string_value(json_object_get(m, "type")), "huge");
	assert_string_equal(json_string_value(json_object_get(m, "path")), "/dev/hugepages/seg one");
	assert_int_equal(json_integer_value(json_object_get(m, "page_size")), 2 << 20);
	assert_int_equal(json_integer_value(json_object_get(m, "bytes")), 4 * (2 << 20));
	assert_int_equal(json_array_size(json_object_get(m, "nodes")), 2);
	tot = json_object_get(root, "totals");
	assert_int_equal(json_array_size(json_object_get(tot, "nodes")), 4);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(tot, "nodes"), 3), "bytes")),
			 3 * 4096 + 4096 + (1 << 30));
	json_decref(root);
	free(s);
	/* compact is one line; pid 0 is null */
	assert_int_equal(nk_numamaps_to_json(nm, 0, NK_JSON_COMPACT, &s), 0);
	assert_null(strchr(s, '\n'));
	assert_non_null(strstr(s, "\"pid\":null"));
	free(s);
	assert_int_equal(nk_numamaps_to_json(nm, 0, 0x80, &s), NK_EINVAL);
	nk_numamaps_free(nm);
}

/* Non-UTF-8 bytes in a path still make valid JSON. */
static void test_json_bytes(void **state)
{
	nk_numamaps *nm = parse_ok("1000 default file=/tmp/\xff\xfe N0=1 kernelpagesize_kB=4\n");
	char *s = NULL;

	assert_int_equal(nk_numamaps_to_json(nm, 0, 0, &s), 0);
	json_t *root = json_loads(s, 0, NULL);
	assert_non_null(root);
	json_decref(root);
	free(s);
	nk_numamaps_free(nm);
}

/* This process: a mapping we bound ourselves shows up with its policy and pages. */
static void test_live_self(void **state)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 16 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int node0 = 0, found = 0;
	nk_numamaps *nm = NULL;
	nk_error err = { 0, "" };

	assert_true(p != MAP_FAILED);
	/* a policy of its own keeps the kernel from merging it with neighbours */
	if (nk__os_mbind(p, 16 * ps, NK__MPOL_BIND, &node0, 1, 0, NULL) == NK_ENOSYS) {
		munmap(p, 16 * ps);
		skip();
	}
	memset(p, 7, 16 * ps);
	assert_int_equal(nk_numamaps_read(0, &nm, &err), 0);
	for (size_t i = 0; i < nk_numamaps_count(nm); i++) {
		nk_maps_entry e;
		nk_numamaps_entry(nm, i, &e);
		if (e.addr != (uintptr_t)p)
			continue;
		found = 1;
		assert_string_equal(e.policy, "bind:0");
		assert_true(e.pages == 16 && e.anon == 16 && e.page_size == (uint64_t)ps);
		assert_int_equal(e.nnodes, 1);
		assert_int_equal(e.nodes[0], 0);
	}
	assert_true(found);
	nk_numamaps_free(nm);
	munmap(p, 16 * ps);

	/* errors */
	assert_int_equal(nk_numamaps_read(-1, &nm, &err), NK_EINVAL);
	assert_int_equal(nk_numamaps_read(0x7ffffff0, &nm, &err), NK_ENOENT);
	assert_non_null(strstr(err.message, "does not exist"));
	/* our own pid explicitly */
	assert_int_equal(nk_numamaps_read(getpid(), &nm, &err), 0);
	assert_true(nk_numamaps_count(nm) > 0);
	nk_numamaps_free(nm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_capture),
		cmocka_unit_test(test_four_nodes),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors_name_the_line),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_bytes),
		cmocka_unit_test(test_live_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
