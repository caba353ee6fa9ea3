/* SPDX-License-Identifier: BSD-3-Clause
 * Symbolisation (src/profile/symbols.c): the test symbolises itself from
 * /proc/self/maps (its own statics, functions and lines, libc), then checks
 * mapping kinds, missing objects, merged maps texts and malformed input.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "profile/symbols.h"

/* The variables the test looks up: keep each declaration on the line its enum names. */
static double nkt_grid[4096]; enum { GRID_LINE = __LINE__ };
int nkt_counts[100]; enum { COUNTS_LINE = __LINE__ };
struct nkt_point { int x, y; };
struct nkt_point nkt_origin = { 1, 2 }; enum { ORIGIN_LINE = __LINE__ };
int *nkt_ptr = &nkt_counts[3];
/* C++ names (given by asm labels): demangled when libstdc++ is there */
long nkt_mangled[4] __asm__("_ZN3nkt7mangledE");
int nkt_cxx_fn(int x) __asm__("_ZN3nkt2fnEi");
__attribute__((noinline)) int nkt_cxx_fn(int x)
{
	return x + (int)nkt_mangled[x & 3];
}
/* the compiler must keep them */
void *volatile nkt_keep[5] = { nkt_grid, nkt_counts, &nkt_origin, &nkt_ptr, nkt_mangled };

static int *static_local(void)
{
	static int nkt_local[8]; enum { LOCAL_LINE = __LINE__ };
	nkt_local[0] = LOCAL_LINE;
	return nkt_local;
}

/* /proc files have no size: read until the end */
static char *read_self_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = 0, cap = 1 << 16, got;
	char *b = malloc(cap);

	assert_non_null(f);
	assert_non_null(b);
	while ((got = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			cap *= 2;
			b = realloc(b, cap);
			assert_non_null(b);
		}
	}
	fclose(f);
	b[n] = 0;
	return b;
}

/* Whether this executable has DWARF (RelWithDebInfo and Debug do; a plain Release does not). */
static int self_has_dwarf(void)
{
	int fd = open("/proc/self/exe", O_RDONLY), found = 0;
	Elf *elf;
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	elf_version(EV_CURRENT);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx))
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *n;
			if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
			    !strcmp(n, ".debug_info"))
				found = 1;
		}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

static nk__symtab *open_self(void)
{
	char *maps = read_self_maps();
	const char *texts[1] = { maps };
	nk__symtab *s = NULL;
	nk_error err = { 0 };
	int rc = nk__sym_open(texts, 1, &s, &err);
	free(maps);
	if (rc)
		fail_msg("nk__sym_open(/proc/self/maps): %d %s", rc, err.message);
	return s;
}

static void expect_var(nk__symtab *s, const void *p, size_t off, const char *name, uint64_t size, const char *type,
		       int line)
{
	struct nk__sym_var v;
	uint64_t addr = (uint64_t)(uintptr_t)p;

	if (nk__sym_data(s, addr + off, &v) != 1)
		fail_msg("%s: not found at +%zu", name, off);
	assert_string_equal(v.name, name);
	assert_true(v.addr == addr);
	assert_true(v.size == size);
	assert_non_null(v.object);
	if (!self_has_dwarf())
		return;
	if (!v.type || strcmp(v.type, type))
		fail_msg("%s: type \"%s\", expected \"%s\"", name, v.type ? v.type : "(null)", type);
	assert_non_null(v.decl_file);
	if (!strstr(v.decl_file, "test_symbols.c"))
		fail_msg("%s: declared in %s", name, v.decl_file);
	assert_int_equal(v.decl_line, line);
}

static void test_self_data(void **state)
{
	(void)state;
	nk__symtab *s = open_self();
	int *local = static_local();

	expect_var(s, nkt_grid, 0, "nkt_grid", sizeof nkt_grid, "double[4096]", GRID_LINE);
	expect_var(s, nkt_grid, sizeof nkt_grid - 1, "nkt_grid", sizeof nkt_grid, "double[4096]", GRID_LINE);
	expect_var(s, nkt_counts, 40, "nkt_counts", sizeof nkt_counts, "int[100]", COUNTS_LINE);
	expect_var(s, &nkt_origin, 4, "nkt_origin", sizeof nkt_origin, "struct nkt_point", ORIGIN_LINE);
	expect_var(s, &nkt_ptr, 0, "nkt_ptr", sizeof nkt_ptr, "int *", ORIGIN_LINE + 1);
	/* a static local: "nkt_local.N" in .symtab, its DWARF name reported */
	expect_var(s, local, 8, "nkt_local", 8 * sizeof(int), "int[8]", local[0]);

	/* a stack address is no static variable, and the mapping says [stack] */
	struct nk__sym_var v;
	const char *name = NULL;
	uint64_t lo, hi, sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	assert_int_equal(nk__sym_data(s, sp, &v), 0);
	assert_null(v.name);
	assert_int_equal(nk__sym_mapping(s, sp, &name, &lo, &hi), NK__MAP_STACK);
	assert_string_equal(name, "[stack]");
	assert_true(lo <= sp && sp < hi);

	/* the executable's own mapping; .bss past the file's last page too (an anonymous mapping in maps) */
	assert_int_equal(nk__sym_mapping(s, (uint64_t)(uintptr_t)nkt_grid, &name, &lo, &hi), NK__MAP_FILE);
	assert_non_null(strstr(name, "test_symbols"));
	assert_int_equal(nk__sym_mapping(s, (uint64_t)(uintptr_t)&nkt_grid[4095], &name, &lo, &hi), NK__MAP_FILE);
	assert_non_null(strstr(name, "test_symbols"));
	assert_int_equal(nk__sym_mapping(s, (uint64_t)(uintptr_t)local, &name, &lo, &hi), NK__MAP_FILE);
	assert_non_null(strstr(name, "test_symbols"));
	assert_int_equal(nk__sym_mapping(s, 0, &name, &lo, &hi), NK__MAP_NONE);
	assert_null(name);
	assert_string_equal(nk__sym_warnings(s), "");
	nk__sym_close(s);
}

enum { RA_LINE = __LINE__ };
static __attribute__((noinline)) void *return_address(void)
{
	return __builtin_return_address(0);
}

static int have_libstdcxx(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		dlclose(h);
	return h != NULL;
}

static void test_cxx_names(void **state)
{
	(void)state;
	nk__symtab *s = open_self();
	struct nk__sym_loc loc;
	struct nk__sym_var v;
	int cxx = have_libstdcxx();

	assert_int_equal(nkt_cxx_fn(4), 4);
	assert_int_equal(nk__sym_ip(s, (uint64_t)(uintptr_t)&nkt_cxx_fn + 1, &loc), 1);
	assert_string_equal(loc.function, cxx ? "nkt::fn(int)" : "_ZN3nkt2fnEi");
	assert_int_equal(nk__sym_data(s, (uint64_t)(uintptr_t)&nkt_mangled[2], &v), 1);
	assert_string_equal(v.name, cxx ? "nkt::mangled" : "_ZN3nkt7mangledE");
	assert_true(v.size == sizeof nkt_mangled);
	if (self_has_dwarf() && (!v.type || (strcmp(v.type, "long int[4]") && strcmp(v.type, "long[4]")))) /* gcc, clang */
		fail_msg("type %s", v.type);
	nk__sym_close(s);
}

static void test_self_code(void **state)
{
	(void)state;
	nk__symtab *s = open_self();
	struct nk__sym_loc loc;
	void *ra = return_address(); int call_line = __LINE__;
	uint64_t ip = (uint64_t)(uintptr_t)ra - 1; /* inside the call instruction */

	assert_int_equal(nk__sym_ip(s, ip, &loc), 1);
	assert_non_null(loc.function);
	assert_string_equal(loc.function, "test_self_code");
	assert_non_null(loc.object);
	assert_non_null(strstr(loc.object, "test_symbols"));
	assert_true(loc.offset != 0 && loc.offset < ip);
	if (self_has_dwarf()) {
		assert_non_null(loc.file);
		assert_non_null(strstr(loc.file, "test_symbols.c"));
		if (loc.line < call_line - 1 || loc.line > call_line + 1)
			fail_msg("call on line %d symbolised as line %d", call_line, loc.line);
	}
	/* the function's entry: its name, and a line near its definition */
	uint64_t fn = (uint64_t)(uintptr_t)&return_address;
	assert_int_equal(nk__sym_ip(s, fn, &loc), 1);
	assert_string_equal(loc.function, "return_address");
	if (self_has_dwarf()) {
		int def = RA_LINE + 1;
		assert_non_null(strstr(loc.file, "test_symbols.c"));
		/* -O2 (RelWithDebInfo, CI) attributes the one instruction to the closing brace */
		if (loc.line < def || loc.line > def + 3)
			fail_msg("return_address() starts on line %d, symbolised as %d", def, loc.line);
	}
	/* twice: the cached answer is the same */
	struct nk__sym_loc again;
	assert_int_equal(nk__sym_ip(s, fn, &again), 1);
	assert_ptr_equal(again.function, loc.function);
	assert_int_equal(again.line, loc.line);

	/* libc: a function name and the object's path (getpid: not intercepted by the sanitizers) */
	uint64_t libc = (uint64_t)(uintptr_t)&getpid;
	assert_int_equal(nk__sym_ip(s, libc, &loc), 1);
	assert_non_null(loc.object);
	if (!strstr(loc.object, "libc"))
		fail_msg("getpid is in %s", loc.object);
	if (!loc.function || !strstr(loc.function, "getpid"))
		fail_msg("getpid symbolised as %s (%s+%#" PRIx64 ", %s)", loc.function ? loc.function : "(null)", loc.object,
			 loc.offset, nk__sym_warnings(s));
	assert_int_equal(nk__sym_ip(s, 0, &loc), 0);
	assert_null(loc.object);
	nk__sym_close(s);
}

static void test_heap(void **state)
{
	(void)state;
	char *maps = read_self_maps();
	const char *texts[1] = { maps }, *h = strstr(maps, "[heap]");
	nk__symtab *s = NULL;
	const char *name;
	uint64_t lo, hi;

	assert_int_equal(nk__sym_open(texts, 1, &s, NULL), 0);
	if (h) {
		while (h > maps && h[-1] != '\n')
			h--;
		unsigned long long a, b;
		assert_int_equal(sscanf(h, "%llx-%llx", &a, &b), 2);
		assert_int_equal(nk__sym_mapping(s, a + (b - a) / 2, &name, &lo, &hi), NK__MAP_HEAP);
		assert_string_equal(name, "[heap]");
		assert_true(lo == a && hi == b);
	}
	nk__sym_close(s);
	free(maps);

	/* every kind, from a made-up text */
	static const char text[] =
		"00400000-00401000 r-xp 00000000 08:01 42 /no/such/dir/prog\n"
		"00401000-00402000 rw-p 00001000 08:01 42 /no/such/dir/prog\n"
		"01000000-01021000 rw-p 00000000 00:00 0                                  [heap]\n"
		"7f0000000000-7f0000010000 rw-p 00000000 00:00 0 \n"
		"7f0000010000-7f0000020000 rw-p 00000000 00:00 0\n"
		"7f0000020000-7f0000021000 rw-s 00000000 00:01 7 /memfd:buf (deleted)\n"
		"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
	const char *t1[1] = { text };
	nk_error err;
	assert_int_equal(nk__sym_open(t1, 1, &s, &err), 0);
	assert_int_equal(nk__sym_mapping(s, 0x400010, &name, &lo, &hi), NK__MAP_FILE);
	assert_string_equal(name, "/no/such/dir/prog");
	assert_int_equal(nk__sym_mapping(s, 0x1020fff, &name, &lo, &hi), NK__MAP_HEAP);
	assert_int_equal(nk__sym_mapping(s, 0x1021000, &name, &lo, &hi), NK__MAP_NONE);
	assert_int_equal(nk__sym_mapping(s, 0x7f0000000000, &name, &lo, &hi), NK__MAP_ANON);
	assert_string_equal(name, "[anon]");
	assert_int_equal(nk__sym_mapping(s, 0x7f0000010000, &name, &lo, &hi), NK__MAP_ANON);
	assert_true(lo == 0x7f0000010000 && hi == 0x7f0000020000);
	assert_int_equal(nk__sym_mapping(s, 0x7f0000020000, &name, &lo, &hi), NK__MAP_FILE);
	assert_int_equal(nk__sym_mapping(s, 0x7ffc00000000, &name, &lo, &hi), NK__MAP_STACK);
	assert_int_equal(nk__sym_mapping(s, 0x7ffc00100000, &name, &lo, &hi), NK__MAP_OTHER);
	assert_string_equal(name, "[vdso]");
	assert_int_equal(nk__sym_mapping(s, 0xffffffffff600000, &name, &lo, &hi), NK__MAP_OTHER);

	/* the missing objects: warnings, no symbols, the object and its file offset still known */
	const char *w = nk__sym_warnings(s);
	assert_non_null(strstr(w, "/no/such/dir/prog: "));
	assert_null(strstr(w, "/memfd:buf")); /* a data file (not executable): no warning */
	assert_null(strstr(strstr(w, "/no/such/dir/prog") + 1, "/no/such/dir/prog")); /* one line per object */
	struct nk__sym_loc loc;
	assert_int_equal(nk__sym_ip(s, 0x401010, &loc), 1);
	assert_string_equal(loc.object, "/no/such/dir/prog");
	assert_null(loc.function);
	assert_null(loc.file);
	assert_int_equal(loc.line, 0);
	assert_true(loc.offset == 0x1010);
	struct nk__sym_var v;
	assert_int_equal(nk__sym_data(s, 0x401010, &v), 0);
	assert_int_equal(nk__sym_ip(s, 0x7f0000000010, &loc), 0);
	nk__sym_close(s);
}

/* Objects that are there but wrong: not ELF, a directory, an inode that changed. */
static void test_changed_objects(void **state)
{
	(void)state;
	static const char junk[] = "not an ELF file, just text long enough to have an ELF header's size\n";
	char *path = nk_test_tmpfile(junk, sizeof junk - 1);
	struct stat st;
	char text[4096];
	nk__symtab *s;

	assert_int_equal(stat("/proc/self/exe", &st), 0);
	snprintf(text, sizeof text,
		 "00400000-00401000 r-xp 00000000 08:01 5 %s\n"
		 "00500000-00501000 r-xp 00000000 08:01 6 /tmp\n"
		 "00600000-00601000 r-xp 00000000 %02x:%02x %llu /proc/self/exe\n"
		 "00650000-00651000 r--p 00000000 08:01 5 /no/such/data\n"
		 "00660000-00661000 r-xp 00000000 08:01 5 /no/such/code (deleted)\n",
		 path, major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino + 1);
	/* the test's own executable, but its pages where no load of it could put them */
	char exe[1024];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(len > 0);
	exe[len] = 0;
	size_t k = strlen(text);
	snprintf(text + k, sizeof text - k,
		 "00700000-00701000 r--p 00000000 %02x:%02x %llu %s\n"
		 "00900000-00901000 r-xp 00001000 %02x:%02x %llu %s\n",
		 major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino, exe, major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino, exe);
	const char *t[1] = { text };
	assert_int_equal(nk__sym_open(t, 1, &s, NULL), 0);
	const char *w = nk__sym_warnings(s);
	char want[4200];
	snprintf(want, sizeof want, "%s: segments differ", exe);
	if (!strstr(w, want) || strstr(w, "/no/such/data") || !strstr(w, "/no/such/code (deleted): deleted while mapped"))
		fail_msg("warnings:\n%s", w);
	snprintf(want, sizeof want, "%s: not an ELF", path);
	if (!strstr(w, want) || !strstr(w, "/tmp: not an ELF file") || !strstr(w, "/proc/self/exe: replaced"))
		fail_msg("warnings:\n%s", w);
	struct nk__sym_loc loc;
	assert_int_equal(nk__sym_ip(s, 0x600010, &loc), 1);
	assert_null(loc.function);
	nk__sym_close(s);
	unlink(path);
	free(path);
}

/* A later text replaces what it overlaps; the rest of the earlier one stays. */
static void test_merge(void **state)
{
	(void)state;
	const char *t[2] = {
		"00001000-00010000 rw-p 00000000 00:00 0\n"
		"00020000-00030000 rw-p 00000000 00:00 0 [heap]\n",
		"00004000-00005000 r--p 00003000 08:01 9 /no/lib.so\n"
		"0000f000-00021000 rw-p 00000000 00:00 0 [stack]\n",
	};
	nk__symtab *s;
	const char *name;
	uint64_t lo, hi;
	struct nk__sym_loc loc;

	assert_int_equal(nk__sym_open(t, 2, &s, NULL), 0);
	assert_int_equal(nk__sym_mapping(s, 0x1000, &name, &lo, &hi), NK__MAP_ANON);
	assert_true(lo == 0x1000 && hi == 0x4000);
	assert_int_equal(nk__sym_mapping(s, 0x4000, &name, &lo, &hi), NK__MAP_FILE);
	assert_true(lo == 0x4000 && hi == 0x5000);
	assert_int_equal(nk__sym_mapping(s, 0x5000, &name, &lo, &hi), NK__MAP_ANON);
	assert_true(lo == 0x5000 && hi == 0xf000);
	assert_int_equal(nk__sym_mapping(s, 0x10000, &name, &lo, &hi), NK__MAP_STACK);
	assert_true(lo == 0xf000 && hi == 0x21000);
	assert_int_equal(nk__sym_mapping(s, 0x21000, &name, &lo, &hi), NK__MAP_HEAP);
	assert_true(lo == 0x21000 && hi == 0x30000);
	assert_int_equal(nk__sym_ip(s, 0x4010, &loc), 1);
	assert_true(loc.offset == 0x3010);
	nk__sym_close(s);

	/* no texts at all: an empty table */
	assert_int_equal(nk__sym_open(NULL, 0, &s, NULL), 0);
	assert_int_equal(nk__sym_mapping(s, 0x1000, &name, &lo, &hi), NK__MAP_NONE);
	nk__sym_close(s);
	nk__sym_close(NULL);
	assert_string_equal(nk__sym_warnings(NULL), "");
}

static void expect_bad(const char *text, const char *message)
{
	const char *t[1] = { text };
	nk__symtab *s = (nk__symtab *)&s;
	nk_error err = { 0 };
	int rc = nk__sym_open(t, 1, &s, &err);

	if (rc != NK_EPARSE)
		fail_msg("\"%s\": expected NK_EPARSE, got %d (%s)", text, rc, err.message);
	assert_int_equal(err.code, NK_EPARSE);
	assert_ptr_equal(s, (nk__symtab *)&s);
	if (!strstr(err.message, message))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", text, err.message, message);
}

#define OK_LINE "00400000-00401000 r-xp 00000000 08:01 42 /bin/x\n"

static void test_malformed(void **state)
{
	(void)state;
	expect_bad("hello\n", "line 1: expected LOW-HIGH");
	expect_bad(OK_LINE "garbage", "line 2: expected LOW-HIGH");
	expect_bad(OK_LINE "\n" OK_LINE, "line 2: empty line");
	expect_bad("00401000-00400000 r-xp 00000000 08:01 42 /bin/x\n", "line 1: empty or reversed");
	expect_bad("00400000-00400000 r-xp 00000000 08:01 42 /bin/x\n", "line 1: empty or reversed");
	expect_bad("00400001-00401000 r-xp 00000000 08:01 42 /bin/x\n", "not page-aligned");
	expect_bad("00400000-00401000 rwxq 00000000 08:01 42 /bin/x\n", "permissions");
	expect_bad("00400000-00401000 r-x 00000000 08:01 42 /bin/x\n", "permissions");
	expect_bad("00400000-00401000 r-xp 0000000g 08:01 42 /bin/x\n", "offset");
	expect_bad("00400000-00401000 r-xp 00000010 08:01 42 /bin/x\n", "offset not page-aligned");
	expect_bad("00400000-00401000 r-xp fffffffffffff000 08:01 42 /bin/x\n", "offset overflows");
	expect_bad("00400000-00401000 r-xp 00000000 0801 42 /bin/x\n", "device");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 x42 /bin/x\n", "inode");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 99999999999999999999999 /bin/x\n", "inode");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 42x /bin/x\n", "space after the inode");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 42 [heap]\n", "an inode but no path");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 42 /bin/\tx\n", "control character");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 42 /bin/x\r\n", "control character");
	expect_bad("00400000-00401000 r-xp 00000000 08:01 42 /bin/\\000x\n", "NUL escape");
	expect_bad("10000000000000000-10000000000001000 r-xp 00000000 08:01 42 /bin/x\n", "LOW-HIGH");
	expect_bad(OK_LINE OK_LINE, "line 2: mapping not above the previous one");
	expect_bad("00500000-00501000 r-xp 00000000 08:01 42 /bin/x\n" OK_LINE, "line 2: mapping not above");
	{
		const char *t[2] = { OK_LINE, "zz" };
		nk__symtab *s;
		nk_error err;
		assert_int_equal(nk__sym_open(t, 2, &s, &err), NK_EPARSE);
		assert_string_equal(err.message, "maps text 2, line 1: expected LOW-HIGH addresses");
	}
	/* arguments */
	{
		const char *t[2] = { OK_LINE, NULL };
		nk__symtab *s;
		assert_int_equal(nk__sym_open(t, 1, NULL, NULL), NK_EINVAL);
		assert_int_equal(nk__sym_open(NULL, 1, &s, NULL), NK_EINVAL);
		assert_int_equal(nk__sym_open(t, 2, &s, NULL), NK_EINVAL);
	}
	/* an anonymous-inode mapping (the timer sampler's perf ring: "an inode but no path" made a whole profile
	 * unsymbolised) is no file: anonymous, like other memory with no path */
	{
		const char *t[1] = { OK_LINE "7f0000000000-7f0000002000 rw-s 00000000 00:0f 1052 anon_inode:[perf_event]\n" };
		nk__symtab *s;
		assert_int_equal(nk__sym_open(t, 1, &s, NULL), 0);
		assert_int_equal(nk__sym_mapping(s, 0x400000, NULL, NULL, NULL), NK__MAP_FILE);
		assert_int_not_equal(nk__sym_mapping(s, 0x7f0000000000ull, NULL, NULL, NULL), NK__MAP_FILE);
		nk__sym_close(s);
	}
	/* escapes are decoded; an empty text and a final line without newline are fine */
	{
		const char *t[2] = { "", "00400000-00401000 r-xp 00000000 08:01 42 /a\\040b" };
		nk__symtab *s;
		const char *name;
		assert_int_equal(nk__sym_open(t, 2, &s, NULL), 0);
		assert_int_equal(nk__sym_mapping(s, 0x400000, &name, NULL, NULL), NK__MAP_FILE);
		assert_string_equal(name, "/a b");
		nk__sym_close(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_data),       cmocka_unit_test(test_self_code), cmocka_unit_test(test_cxx_names),
		cmocka_unit_test(test_heap),            cmocka_unit_test(test_changed_objects),
		cmocka_unit_test(test_merge),           cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
