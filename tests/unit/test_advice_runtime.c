/* SPDX-License-Identifier: BSD-3-Clause
 * Pure parts of the plan runtime (preload/advice/key.c, elfsym.c): the heap
 * key of a call stack on synthetic objects (must equal the analysis's key,
 * src/profile/analysis_attr.c site_var), runtime-frame dropping, page
 * arithmetic of statics and plan ranges, the array page an arena page stands
 * for (layout blocks), key first frames, symbol-name matching, and the ELF
 * reader on this test's own executable; nk_advice_pin (the plan's pinning as
 * `numakit run --pin` takes it).  The end-to-end key equality
 * (profile -> report key == runtime key) is tests/plan/.
 */
#include "testutil.h"

#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "advice_rt.h" /* preload/advice: key.c and elfsym.c come from the archive numakit_plan_pure */

/* elfsym.c maps through the runtime's real mmap: here the ordinary one. */
void *nkpl_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

int nkpl_real_munmap(void *addr, size_t len)
{
	return munmap(addr, len);
}

static const struct nkpl_obj objs[] = {
	{ "prog", 0x555500000000u, 0x555500000000u, 0x555500010000u, 0 },
	{ "libnumakit_plan.so.0", 0x7f0000000000u, 0x7f0000000000u, 0x7f0000020000u, 1 },
	{ "libnumakit_prof.so.0.1.0", 0x7f1000000000u, 0x7f1000000000u, 0x7f1000020000u, 1 },
	{ "libc.so.6", 0x7f2000000000u, 0x7f2000000000u, 0x7f2000200000u, 0 },
	{ "static_prog", 0, 0x400000u, 0x500000u, 0 }, /* non-PIE: bias 0 */
};
#define NOBJ (sizeof objs / sizeof objs[0])

static void test_key_basic(void **state)
{
	(void)state;
	const uintptr_t ips[] = {
		0x7f0000001234u,    /* the plan runtime's malloc: dropped */
		0x7f1000000100u,    /* the profiler's malloc (both loaded): dropped */
		0x555500001235u,    /* main+... : 0x1234 */
		0x1000u,            /* no object: skipped */
		0x7f2000029d90u,    /* __libc_start_call_main */
		0x555500000101u, 0x555500000201u,
		0x555500000301u,    /* fifth frame with an object: beyond four */
	};
	char key[NKPL_KEY_MAX];
	int n = nkpl_key_format(ips, sizeof ips / sizeof ips[0], objs, NOBJ, key, sizeof key);
	assert_int_equal(n, 4);
	assert_string_equal(key, "heap:prog+0x1234;libc.so.6+0x29d8f;prog+0x100;prog+0x200");
}

static void test_key_nonpie_and_short(void **state)
{
	(void)state;
	const uintptr_t ips[] = { 0x401a2bu, 0x7f2000029d90u };
	char key[NKPL_KEY_MAX];
	assert_int_equal(nkpl_key_format(ips, 2, objs, NOBJ, key, sizeof key), 2);
	assert_string_equal(key, "heap:static_prog+0x401a2a;libc.so.6+0x29d8f");
	/* one frame */
	assert_int_equal(nkpl_key_format(ips, 1, objs, NOBJ, key, sizeof key), 1);
	assert_string_equal(key, "heap:static_prog+0x401a2a");
}

static void test_key_none(void **state)
{
	(void)state;
	const uintptr_t only_runtime[] = { 0x7f0000001234u, 0x7f1000000100u, 0x10u, 0 };
	char key[NKPL_KEY_MAX];
	strcpy(key, "junk");
	assert_int_equal(nkpl_key_format(only_runtime, 4, objs, NOBJ, key, sizeof key), 0);
	assert_string_equal(key, "");
	assert_int_equal(nkpl_key_format(only_runtime, 0, objs, NOBJ, key, sizeof key), 0);
	/* too small a buffer: no partial key */
	const uintptr_t ips[] = { 0x555500001235u, 0x555500001235u };
	char tiny[24];
	assert_int_equal(nkpl_key_format(ips, 2, objs, NOBJ, tiny, sizeof tiny), 0);
	assert_string_equal(tiny, "");
	assert_int_equal(nkpl_key_format(ips, 2, objs, NOBJ, NULL, 0), 0);
}

static void test_runtime_names(void **state)
{
	(void)state;
	assert_true(nkpl_is_runtime_name("libnumakit_plan.so"));
	assert_true(nkpl_is_runtime_name("libnumakit_prof.so.0.1.0"));
	assert_true(nkpl_is_runtime_name("libnumakit_nt_io.so.0"));
	assert_false(nkpl_is_runtime_name("libnumakit.so.0"));
	assert_false(nkpl_is_runtime_name("libnumakit_plan.a"));
	assert_false(nkpl_is_runtime_name("prog"));
	assert_false(nkpl_is_runtime_name(NULL));
	assert_string_equal(nkpl_basename("/usr/lib/x/libc.so.6"), "libc.so.6");
	assert_string_equal(nkpl_basename("prog"), "prog");
	assert_null(nkpl_obj_of(objs, NOBJ, 0x10));
	assert_string_equal(nkpl_obj_of(objs, NOBJ, 0x555500000000u)->name, "prog");
	assert_null(nkpl_obj_of(objs, NOBJ, 0x555500010000u)); /* hi is exclusive */
}

static void test_inner_pages(void **state)
{
	(void)state;
	uintptr_t lo, hi;
	nkpl_inner_pages(0x10000, 0x3000, 0x1000, &lo, &hi);
	assert_int_equal(lo, 0x10000);
	assert_int_equal(hi, 0x13000);
	nkpl_inner_pages(0x10010, 0x3000, 0x1000, &lo, &hi); /* shared edge pages left out */
	assert_int_equal(lo, 0x11000);
	assert_int_equal(hi, 0x13000);
	nkpl_inner_pages(0x10010, 0x1000, 0x1000, &lo, &hi); /* no whole page */
	assert_int_equal(lo, hi);
	nkpl_inner_pages(0x10010, 0x10, 0x1000, &lo, &hi);
	assert_int_equal(lo, hi);
	nkpl_inner_pages(UINTPTR_MAX - 0x10, 0x8, 0x1000, &lo, &hi); /* would wrap */
	assert_int_equal(lo, hi);
}

static void test_range_bytes(void **state)
{
	(void)state;
	uintptr_t lo, hi;
	/* heap block at a page boundary: pages 2..4 */
	nkpl_range_bytes(0x20000, 2, 3, 0x1000, 0x20000, 0x30000, 0x1000, &lo, &hi);
	assert_int_equal(lo, 0x22000);
	assert_int_equal(hi, 0x25000);
	/* static: page 0 holds the first byte; the shared first page is outside [plo, phi) */
	nkpl_range_bytes(0x20010, 0, 2, 0x1000, 0x21000, 0x28000, 0x1000, &lo, &hi);
	assert_int_equal(lo, 0x21000);
	assert_int_equal(hi, 0x22000);
	/* clipped at the end */
	nkpl_range_bytes(0x20000, 14, 10, 0x1000, 0x20000, 0x30000, 0x1000, &lo, &hi);
	assert_int_equal(lo, 0x2e000);
	assert_int_equal(hi, 0x30000);
	/* entirely outside */
	nkpl_range_bytes(0x20000, 16, 1, 0x1000, 0x20000, 0x30000, 0x1000, &lo, &hi);
	assert_int_equal(lo, hi);
	/* plan pages of 64 KiB on 4 KiB system pages */
	nkpl_range_bytes(0x100000, 1, 1, 0x10000, 0x100000, 0x200000, 0x1000, &lo, &hi);
	assert_int_equal(lo, 0x110000);
	assert_int_equal(hi, 0x120000);
	/* plan pages of 4 KiB on 64 KiB system pages: the whole system page */
	nkpl_range_bytes(0x100000, 17, 1, 0x1000, 0x100000, 0x200000, 0x10000, &lo, &hi);
	assert_int_equal(lo, 0x110000);
	assert_int_equal(hi, 0x120000);
	/* empty and overflowing input */
	nkpl_range_bytes(0x100000, 0, 0, 0x1000, 0x100000, 0x200000, 0x1000, &lo, &hi);
	assert_int_equal(lo, hi);
	nkpl_range_bytes(0x100000, UINT64_MAX / 2, 4, 0x1000, 0x100000, 0x200000, 0x1000, &lo, &hi);
	assert_int_equal(lo, hi);
}

/* Layout blocks: the array page an extent page stands for (arena.c's placement). */
static void test_site_page(void **state)
{
	(void)state;
	const uint64_t ps = 4096;
	/* blocks exactly as large as the allocator makes them (ratio 1): page j of the extent is page j after pos */
	assert_int_equal(nkpl_site_page(0, 0, ps, 1.0, 100), 0);
	assert_int_equal(nkpl_site_page(0, 5, ps, 1.0, 100), 5);
	assert_int_equal(nkpl_site_page(3 * ps + 100, 2, ps, 1.0, 100), 5);
	/* 48-byte blocks given 64 bytes: an extent page holds 3/4 of a page of the array */
	assert_int_equal(nkpl_site_page(0, 4, ps, 0.75, 100), 3);
	assert_int_equal(nkpl_site_page(0, 3, ps, 0.75, 100), 2); /* 2.25 */
	assert_int_equal(nkpl_site_page(10 * ps, 8, ps, 0.5, 100), 14);
	/* beyond the array: its last page */
	assert_int_equal(nkpl_site_page(99 * ps, 0, ps, 1.0, 100), 99);
	assert_int_equal(nkpl_site_page(100 * ps, 0, ps, 1.0, 100), 99);
	assert_int_equal(nkpl_site_page(50 * ps, 1000, ps, 1.0, 100), 99);
	assert_int_equal(nkpl_site_page(UINT64_MAX, UINT64_MAX, ps, 1.0, 100), 99);
	/* ratio clamped to [0, 1] (NaN is 0); an empty array or page size: page 0 */
	assert_int_equal(nkpl_site_page(2 * ps, 7, ps, 3.0, 100), 9);
	assert_int_equal(nkpl_site_page(2 * ps, 7, ps, -1.0, 100), 2);
	assert_int_equal(nkpl_site_page(2 * ps, 7, ps, NAN, 100), 2);
	assert_int_equal(nkpl_site_page(2 * ps, 7, ps, 1.0, 0), 0);
	assert_int_equal(nkpl_site_page(2 * ps, 7, 0, 1.0, 100), 0);
	assert_int_equal(nkpl_site_page(5 * ps, 0, ps, 1.0, 1), 0);
}

/* A "pages" range of a layout-blocks entry in system pages. */
static void test_plan_pages_sys(void **state)
{
	(void)state;
	uint64_t lo, hi;
	nkpl_plan_pages_sys(2, 3, 4096, 4096, &lo, &hi);
	assert_int_equal(lo, 2);
	assert_int_equal(hi, 5);
	nkpl_plan_pages_sys(1, 2, 65536, 4096, &lo, &hi); /* 64 KiB plan pages: 16 system pages each */
	assert_int_equal(lo, 16);
	assert_int_equal(hi, 48);
	/* 4 KiB plan pages on 64 KiB system pages: a system page goes with the range holding its first byte */
	nkpl_plan_pages_sys(16, 16, 4096, 65536, &lo, &hi);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 2);
	nkpl_plan_pages_sys(17, 14, 4096, 65536, &lo, &hi); /* no system page starts inside */
	assert_int_equal(lo, hi);
	nkpl_plan_pages_sys(17, 16, 4096, 65536, &lo, &hi);
	assert_int_equal(lo, 2);
	assert_int_equal(hi, 3);
	nkpl_plan_pages_sys(1, 0, 4096, 4096, &lo, &hi);
	assert_int_equal(lo, hi);
	nkpl_plan_pages_sys(UINT64_MAX / 2, 4, 4096, 4096, &lo, &hi); /* would overflow */
	assert_int_equal(lo, hi);
}

/* The first frame of a heap key: the caller filter of small allocations. */
static void test_key_first_frame(void **state)
{
	(void)state;
	char obj[32];
	uint64_t off = 0;
	assert_int_equal(nkpl_key_first_frame("heap:prog+0x1234;libc.so.6+0x29d8f", obj, sizeof obj, &off), 0);
	assert_string_equal(obj, "prog");
	assert_int_equal(off, 0x1234);
	assert_int_equal(nkpl_key_first_frame("heap:libstdc++.so.6+0xabc", obj, sizeof obj, &off), 0);
	assert_string_equal(obj, "libstdc++.so.6");
	assert_int_equal(off, 0xabc);
	assert_int_equal(nkpl_key_first_frame("heap:a+b+0x10;x+0x1", obj, sizeof obj, &off), 0);
	assert_string_equal(obj, "a+b");
	assert_int_equal(off, 0x10);
	assert_int_equal(nkpl_key_first_frame("static:prog:grid", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:prog", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:+0x10", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:prog+0x", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:prog+0x12g4", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:prog+1234", obj, sizeof obj, &off), -1);
	assert_int_equal(nkpl_key_first_frame("heap:a_very_long_object_name_here.so+0x1", obj, 8, &off), -1);
	assert_int_equal(nkpl_key_first_frame(NULL, obj, sizeof obj, &off), -1);
}

static void test_sym_matches(void **state)
{
	(void)state;
	assert_true(nkpl_sym_matches("grid", "grid"));
	assert_true(nkpl_sym_matches("count.1", "count"));
	assert_true(nkpl_sym_matches("table.lto_priv.0", "table"));
	assert_false(nkpl_sym_matches("grid2", "grid"));
	assert_false(nkpl_sym_matches("gri", "grid"));
	assert_false(nkpl_sym_matches("count.x", "count"));
}

double nkpl_test_global[3000];
/* what a C++ "namespace ns { double grid[64]; }" looks like in .symtab */
double nkpl_test_cxx[64] __asm__("_ZN2ns4gridE");

/* A stand-in for __cxa_demangle that knows the one name. */
static char *fake_demangle(const char *mangled, char *buf, size_t *len, int *status)
{
	(void)buf;
	(void)len;
	if (strcmp(mangled, "_ZN2ns4gridE")) {
		*status = -2;
		return NULL;
	}
	*status = 0;
	return strdup("ns::grid");
}
static double nkpl_test_static[5000];

static int first_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1; /* the main program comes first */
}

static void test_elf_symbol(void **state)
{
	(void)state;
	static int counter_local[777];
	uintptr_t bias = 0;
	uint64_t value = 0, size = 0;
	const char *why = NULL;

	nkpl_test_static[1] = counter_local[1] = 1; /* keep them */
	dl_iterate_phdr(first_obj, &bias);
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "nkpl_test_global", NULL, &value, &size, &why), 0);
	assert_int_equal(bias + value, (uintptr_t)nkpl_test_global);
	assert_int_equal(size, sizeof nkpl_test_global);
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "nkpl_test_static", NULL, &value, &size, &why), 0);
	assert_int_equal(bias + value, (uintptr_t)nkpl_test_static);
	assert_int_equal(size, sizeof nkpl_test_static);
	/* a static local: "counter_local.N" in .symtab */
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "counter_local", NULL, &value, &size, &why), 0);
	assert_int_equal(bias + value, (uintptr_t)counter_local);
	assert_int_equal(size, sizeof counter_local);
	/* C++: the demangled name finds the mangled symbol; without a demangler it does not */
	nkpl_test_cxx[1] = 1;
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "ns::grid", fake_demangle, &value, &size, &why), 0);
	assert_int_equal(bias + value, (uintptr_t)nkpl_test_cxx);
	assert_int_equal(size, sizeof nkpl_test_cxx);
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "ns::grid", NULL, &value, &size, &why), -1);
	/* functions are not data */
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "test_elf_symbol", NULL, &value, &size, &why), -1);
	assert_non_null(why);
	assert_int_equal(nkpl_elf_symbol("/proc/self/exe", "no_such_variable_here", fake_demangle, &value, &size, &why), -1);
	assert_int_equal(nkpl_elf_symbol("/nonexistent/file", "x", NULL, &value, &size, &why), -1);
	assert_string_equal(why, "cannot open the file");
	assert_int_equal(nkpl_elf_symbol(NK_TEST_SRC "/unit/test_advice_runtime.c", "x", NULL, &value, &size, &why), -1);
	assert_string_equal(why, "not a 64-bit ELF file with section headers");
}

/* nk_advice_pin (src/advise/aplan_pin.c): a plan's pinning in --pin's words. */
static void pin_of(const char *json, int want_rc, const char *want_spec, int want_threads, const char *want_sharing)
{
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	char *spec = (char *)"junk", *sharing = (char *)"junk";
	int threads = -1;

	assert_int_equal(nk_advice_parse(json, strlen(json), &a, &err), 0);
	assert_int_equal(nk_advice_pin(a, &spec, &threads, &sharing, &err), want_rc);
	if (!want_rc) {
		if (want_spec)
			assert_string_equal(spec, want_spec);
		else
			assert_null(spec);
		assert_int_equal(threads, want_threads);
		if (want_sharing)
			assert_string_equal(sharing, want_sharing);
		else
			assert_null(sharing);
		free(spec);
		free(sharing);
	}
	nk_advice_free(a);
}

static void test_advice_pin(void **state)
{
	(void)state;
	pin_of("{\"format\": \"numakit-plan\", \"version\": 1, \"entries\": []}", 0, NULL, 0, NULL);
	pin_of("{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"none\"}, \"entries\": []}", 0,
	       NULL, 0, NULL);
	pin_of("{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"scatter\", \"threads\": 8}, "
	       "\"entries\": []}",
	       0, "scatter", 8, NULL);
	pin_of("{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"cpus\", \"threads\": 4, "
	       "\"cpus\": [3, 1, 0, 2]}, \"entries\": []}",
	       0, "3,1,0,2", 4, NULL);
	pin_of("{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"sharing\", \"threads\": 2, "
	       "\"sharing\": [[0, 2.5], [2.5, 0]]}, \"entries\": []}",
	       0, "sharing", 2, "# numakit plan: thread x thread sharing, 2 threads\n0 2.5\n2.5 0\n");

	/* the matrix parses back with nk_sharing_parse */
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	const char *js = "{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"sharing\", "
			 "\"threads\": 3, \"sharing\": [[0, 1, 9], [1, 0, 1], [9, 1, 0]]}, \"entries\": []}";
	char *spec = NULL, *sharing = NULL;
	double *mx = NULL;
	int n = 0;
	assert_int_equal(nk_advice_parse(js, strlen(js), &a, &err), 0);
	assert_int_equal(nk_advice_pin(a, &spec, NULL, &sharing, &err), 0);
	assert_int_equal(nk_sharing_parse(sharing, strlen(sharing), &mx, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_true(mx[2] == 9 && mx[6] == 9 && mx[1] == 1);
	free(mx);
	free(spec);
	free(sharing);
	/* NULL arguments */
	assert_int_equal(nk_advice_pin(NULL, &spec, NULL, NULL, &err), NK_EINVAL);
	assert_int_equal(nk_advice_pin(a, NULL, NULL, NULL, &err), NK_EINVAL);
	/* without the sharing out-parameter: the spec alone, nothing leaks */
	assert_int_equal(nk_advice_pin(a, &spec, NULL, NULL, &err), 0);
	assert_string_equal(spec, "sharing");
	free(spec);
	nk_advice_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_basic),      cmocka_unit_test(test_key_nonpie_and_short),
		cmocka_unit_test(test_key_none),       cmocka_unit_test(test_runtime_names),
		cmocka_unit_test(test_inner_pages),    cmocka_unit_test(test_range_bytes),
		cmocka_unit_test(test_site_page),      cmocka_unit_test(test_plan_pages_sys),
		cmocka_unit_test(test_key_first_frame),
		cmocka_unit_test(test_sym_matches),    cmocka_unit_test(test_elf_symbol),
		cmocka_unit_test(test_advice_pin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
