/* SPDX-License-Identifier: BSD-3-Clause
 * The OS layer's one error convention (src/os/os.h, ERRORS and OUTPUTS), on
 * the failure paths of every call that can fail: a negative NK_E* code from
 * the table the header states, the errno in *sys_errno (never 0 on failure,
 * 0 on success), and the caller's outputs left as they were.  Failures are
 * provoked with arguments no kernel accepts (a missing file, a folder read as
 * a file, an unmapped range, a pid that cannot exist), so the checks hold on
 * a one-node host as in a guest.
 */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#define HAVE_PERF_HEADER 1
#endif

#include "os/os.h"

/* A sentinel the outputs must still hold after a failure. */
#define JUNK ((void *)0x5a5a5a5a)
/* A pid no Linux hands out (pid_max is at most 2^22). */
#define NO_PID (INT_MAX - 7)

/* The failure the contract promises: @p rc is @p code, the errno is @p e. */
#define assert_fails(rc, code, e, want_e)              \
	do {                                           \
		assert_int_equal((rc), (code));        \
		assert_int_equal((e), (want_e));       \
	} while (0)

/* A failure whose errno depends on the kernel: the code must still be the table's. */
#define assert_fails_sys(rc, e)                          \
	do {                                             \
		assert_true((rc) < 0);                   \
		assert_true((e) > 0);                    \
		assert_int_equal((rc), nk__os_code(e));  \
	} while (0)

static char scratch[64];

static int setup(void **state)
{
	(void)state;
	snprintf(scratch, sizeof scratch, "/tmp/nk-os-contract.XXXXXX");
	return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
	return system(cmd) == 0 ? 0 : -1;
}

static char *in_scratch(const char *name)
{
	static char path[2][PATH_MAX];
	static int which;

	which ^= 1;
	snprintf(path[which], sizeof path[which], "%s/%s", scratch, name);
	return path[which];
}

static void test_tables(void **state)
{
	(void)state;
	assert_int_equal(nk__os_code(ENOENT), NK_ENOENT);
	assert_int_equal(nk__os_code(ENOTDIR), NK_ENOENT);
	assert_int_equal(nk__os_code(ESRCH), NK_ENOENT);
	assert_int_equal(nk__os_code(ENOMEM), NK_ENOMEM);
	assert_int_equal(nk__os_code(EPERM), NK_EPERM);
	assert_int_equal(nk__os_code(EACCES), NK_EPERM);
	assert_int_equal(nk__os_code(ENOSYS), NK_ENOSYS);
	assert_int_equal(nk__os_code(EOPNOTSUPP), NK_ENOSYS);
	assert_int_equal(nk__os_code(EINVAL), NK_EINVAL);
	assert_int_equal(nk__os_code(ENODEV), NK_ENODEV);
	assert_int_equal(nk__os_code(EFAULT), NK_EIO);
	assert_int_equal(nk__os_code(EBUSY), NK_EIO);
	assert_int_equal(nk__os_file_code(ENOENT), NK_ENOENT);
	assert_int_equal(nk__os_file_code(ENOTDIR), NK_ENOENT);
	assert_int_equal(nk__os_file_code(EACCES), NK_EPERM);
	assert_int_equal(nk__os_file_code(ENOMEM), NK_ENOMEM);
	assert_int_equal(nk__os_file_code(EISDIR), NK_EIO);
	assert_int_equal(nk__os_file_code(EINVAL), NK_EIO); /* a file that exists but cannot be read */
	assert_int_equal(nk__os_file_code(ENODEV), NK_EIO);
}

static void test_read_whole_and_file(void **state)
{
	char *out = JUNK;
	size_t len = 77;
	int e = -1;

	(void)state;
	assert_fails(nk__os_read_whole(in_scratch("missing"), 100, &out, &len, &e), NK_ENOENT, e, ENOENT);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(len, 77);
	assert_fails(nk__os_read_whole(in_scratch("missing/below"), 100, &out, &len, &e), NK_ENOENT, e, ENOENT);
	assert_fails(nk__os_read_whole(scratch, 100, &out, &len, &e), NK_EIO, e, EISDIR);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(len, 77);

	FILE *f = fopen(in_scratch("ten"), "w");
	assert_non_null(f);
	fputs("0123456789", f);
	fclose(f);
	assert_fails(nk__os_read_whole(in_scratch("ten"), 5, &out, &len, &e), NK_EIO, e, EFBIG);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(len, 77);
	assert_int_equal(nk__os_read_whole(in_scratch("ten"), 10, &out, &len, &e), 0);
	assert_int_equal(e, 0);
	assert_int_equal(len, 10);
	assert_string_equal(out, "0123456789");
	free(out);
	out = JUNK;
	/* no sys_errno wanted: the code alone */
	assert_int_equal(nk__os_read_whole(in_scratch("missing"), 100, &out, &len, NULL), NK_ENOENT);

	/* fsroot-relative: the root joined in front of an absolute path */
	assert_int_equal(nk__os_read_file(scratch, "/missing", &out), NK_ENOENT);
	assert_int_equal(nk__os_read_file(scratch, "/", &out), NK_EIO);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_read_file(scratch, "/ten", &out), 0);
	assert_string_equal(out, "0123456789");
	free(out);
	assert_int_equal(nk__os_exists(scratch, "/ten"), 1);
	assert_int_equal(nk__os_exists(scratch, "/missing"), 0);

	/* a root + path longer than PATH_MAX is refused before any file is touched */
	char *deep = malloc(PATH_MAX + 16);
	assert_non_null(deep);
	memset(deep, 'a', PATH_MAX + 8);
	deep[0] = '/';
	deep[PATH_MAX + 8] = '\0';
	out = JUNK;
	assert_int_equal(nk__os_read_file(scratch, deep, &out), NK_EINVAL);
	assert_ptr_equal(out, JUNK);
	free(deep);
}

static void test_descriptors(void **state)
{
	int e = -1, fd, p[2];

	(void)state;
	assert_fails(nk__os_open_read(in_scratch("missing"), &e), NK_ENOENT, e, ENOENT);
	fd = nk__os_open_read("/dev/null", &e);
	assert_true(fd >= 0);
	assert_int_equal(e, 0);
	assert_int_equal(nk__os_close(fd, &e), 0);
	assert_int_equal(e, 0);
	/* the number is free now (nothing else runs here): closing it again is EBADF */
	assert_fails(nk__os_close(fd, &e), NK_EIO, e, EBADF);
	assert_int_equal(nk__os_close(-1, &e), 0);
	assert_int_equal(e, 0);

	assert_fails(nk__os_write_all(fd, "x", 1, &e), NK_EIO, e, EBADF);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(nk__os_write_all(p[1], "abc", 3, &e), 0);
	assert_int_equal(e, 0);
	char got[4] = { 0 };
	assert_int_equal(read(p[0], got, 3), 3);
	assert_string_equal(got, "abc");
	close(p[0]);
	/* a pipe without a reader: EPIPE, with SIGPIPE ignored as a library's caller may have it */
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	assert_fails(nk__os_write_all(p[1], "abc", 3, &e), NK_EIO, e, EPIPE);
	signal(SIGPIPE, old);
	close(p[1]);
}

static void test_write_atomic(void **state)
{
	const char *stage = NULL;
	int e = -1;

	(void)state;
	assert_fails(nk__os_write_atomic(in_scratch("missing/file"), "x", 1, &stage, &e), NK_EIO, e, ENOENT);
	assert_string_equal(stage, "create");
	/* a folder in the way of the rename: the temporary is created, written, and removed again */
	assert_int_equal(mkdir(in_scratch("adir"), 0700), 0);
	assert_int_equal(mkdir(in_scratch("adir/full"), 0700), 0);
	assert_fails(nk__os_write_atomic(in_scratch("adir"), "x", 1, &stage, &e), NK_EIO, e, EISDIR);
	assert_string_equal(stage, "replace");
	char **names = NULL;
	size_t n = 0;
	assert_int_equal(nk__os_list_dir(scratch, "/", "adir.tmp", &names, &n), 0);
	assert_int_equal(n, 0);
	nk__os_free_names(names, n);
	assert_int_equal(nk__os_write_atomic(in_scratch("written"), "hello", 5, &stage, &e), 0);
	assert_int_equal(e, 0);
}

static void test_list_dir(void **state)
{
	char **names = JUNK;
	size_t n = 77;

	(void)state;
	assert_int_equal(nk__os_list_dir(scratch, "/missing", NULL, &names, &n), NK_ENOENT);
	assert_ptr_equal(names, JUNK);
	assert_int_equal(n, 77);
	FILE *f = fopen(in_scratch("plain"), "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(nk__os_list_dir(scratch, "/plain", NULL, &names, &n), NK_ENOENT); /* ENOTDIR */
	assert_ptr_equal(names, JUNK);
	assert_int_equal(n, 77);
}

static void test_stat_family(void **state)
{
	struct nk__os_stat st, before;
	uint64_t size = 77;
	char *out = JUNK;
	int e = -1;

	(void)state;
	memset(&st, 0x5a, sizeof st);
	before = st;
	assert_fails(nk__os_stat(in_scratch("missing"), &st, &e), NK_ENOENT, e, ENOENT);
	assert_memory_equal(&st, &before, sizeof st);
	assert_int_equal(nk__os_stat(scratch, &st, &e), 0);
	assert_int_equal(e, 0);
	assert_int_equal(st.is_dir, 1);
	assert_int_equal(st.is_reg, 0);

	assert_fails(nk__os_file_size(in_scratch("missing"), &size, &e), NK_ENOENT, e, ENOENT);
	assert_int_equal(size, 77);
	assert_fails(nk__os_is_dir(in_scratch("missing"), &e), NK_ENOENT, e, ENOENT);
	assert_int_equal(nk__os_is_dir(scratch, &e), 1);
	assert_int_equal(nk__os_is_dir("/dev/null", &e), 0);
	assert_int_equal(e, 0);

	assert_fails(nk__os_realpath(in_scratch("missing"), &out, &e), NK_ENOENT, e, ENOENT);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_realpath("/tmp/../tmp", &out, &e), 0);
	assert_int_equal(e, 0);
	assert_string_equal(out, "/tmp");
	free(out);
}

static void test_folders(void **state)
{
	int e = -1;

	(void)state;
	assert_fails(nk__os_mkdir(in_scratch("missing/sub"), &e), NK_ENOENT, e, ENOENT);
	assert_int_equal(nk__os_mkdir(in_scratch("made"), &e), 0);
	assert_int_equal(e, 0);
	assert_int_equal(nk__os_mkdir(in_scratch("made"), &e), 0); /* an existing folder is fine */
	FILE *f = fopen(in_scratch("made/file"), "w");
	assert_non_null(f);
	fclose(f);
	assert_fails(nk__os_mkdir(in_scratch("made/file"), &e), NK_EIO, e, EEXIST);
	assert_fails(nk__os_remove(in_scratch("made"), &e), NK_EIO, e, ENOTEMPTY);
	assert_fails(nk__os_remove(in_scratch("missing"), &e), NK_ENOENT, e, ENOENT);
	assert_int_equal(nk__os_remove(in_scratch("made/file"), &e), 0);
	assert_int_equal(nk__os_remove(in_scratch("made"), &e), 0);
	assert_int_equal(e, 0);
}

static void test_read_at(void **state)
{
	char buf[8] = "unset";
	int e = -1;

	(void)state;
	assert_fails(nk__os_read_at(in_scratch("missing"), 0, buf, 4, &e), NK_ENOENT, e, ENOENT);
	assert_string_equal(buf, "unset");
	/* a folder opens but does not read */
	assert_fails(nk__os_read_at(scratch, 0, buf, 4, &e), NK_EIO, e, EISDIR);
	assert_string_equal(buf, "unset");
	FILE *f = fopen(in_scratch("abc"), "w");
	assert_non_null(f);
	fputs("abc", f);
	fclose(f);
	assert_int_equal(nk__os_read_at(in_scratch("abc"), 1, buf, 4, &e), 2); /* short at the end */
	assert_int_equal(e, 0);
	assert_memory_equal(buf, "bc", 2);
}

static void test_proc_and_sys(void **state)
{
	char *out = JUNK;
	size_t len = 77;
	uint64_t total = 11, freeb = 22;
	int e = -1, major = -1, minor = -1;

	(void)state;
	assert_fails(nk__os_read_numa_maps(-1, &out, &len, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_read_numa_maps(NO_PID, &out, &len, &e), NK_ENOENT, e, ENOENT);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(len, 77);

	assert_int_equal(nk__os_node_meminfo(-1, &total, &freeb), NK_EINVAL);
	assert_int_equal(nk__os_node_meminfo(4000, &total, &freeb), NK_ENOENT);
	assert_int_equal(total, 11);
	assert_int_equal(freeb, 22);

	assert_int_equal(nk__os_kernel_version(&major, &minor), 0);
	assert_true(major >= 3 && minor >= 0);

	assert_int_equal(nk__os_find_program("no-such-program-nk", in_scratch(""), &out), NK_ENOENT);
	assert_int_equal(nk__os_find_program("", NULL, &out), NK_EINVAL);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_object_dir(NULL, &out), NK_ENOENT);
	assert_ptr_equal(out, JUNK);
}

static void test_mempolicy_calls(void **state)
{
	size_t ps = nk__os_page_size();
	void *p = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int node0 = 0, neg = -1, e = -1, status[1] = { 77 };
	nk__ilist nodes = { 0 };

	(void)state;
	assert_true(p != MAP_FAILED);
	/* refused before the kernel: a node id out of range */
	assert_fails(nk__os_mbind(p, ps, NK__MPOL_BIND, &neg, 1, 0, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_set_mempolicy(NK__MPOL_BIND, &neg, 1, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_mbind_node(p, ps, NK__MPOL_BIND, NK__OS_MBIND_NODE_MAX, &e), NK_EINVAL, e, EINVAL);
	/* refused by the kernel: a mode that does not exist */
	assert_fails(nk__os_mbind(p, ps, 99, &node0, 1, 0, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_mbind_node(p, ps, 99, 0, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_set_mempolicy(99, &node0, 1, &e), NK_EINVAL, e, EINVAL);
	assert_int_equal(nk__os_mbind(p, ps, NK__MPOL_BIND, &node0, 1, 0, &e), 0);
	assert_int_equal(e, 0);

	/* get_mempolicy of an unmapped address: EFAULT; mode and node list as they were */
	assert_int_equal(munmap((char *)p + 3 * ps, ps), 0);
	int mode = 77;
	assert_int_equal(nk__ilist_push(&nodes, 42), 0);
	assert_fails(nk__os_get_mempolicy(&mode, &nodes, (char *)p + 3 * ps, NK__MPOL_F_ADDR, &e), NK_EIO, e,
		     EFAULT);
	assert_int_equal(mode, 77);
	assert_int_equal(nodes.n, 1);
	assert_int_equal(nodes.v[0], 42);
	assert_fails(nk__os_get_mempolicy(&mode, &nodes, NULL, 1u << 30, &e), NK_EINVAL, e, EINVAL);
	assert_int_equal(mode, 77);
	assert_int_equal(nodes.n, 1);
	assert_int_equal(nk__os_get_mempolicy(&mode, &nodes, NULL, 0, &e), 0);
	assert_int_equal(e, 0);
	assert_int_not_equal(mode, 77);
	nk__ilist_free(&nodes);

	/* move_pages: flags it does not know; then a node that does not exist */
	void *pages[1] = { p };
	int bogus = 1000;
	*(volatile char *)p = 1;
	assert_fails(nk__os_move_pages(1, pages, NULL, status, ~0, &e), NK_EINVAL, e, EINVAL);
	long rc = nk__os_move_pages(1, pages, &bogus, status, 0, &e);
	assert_fails_sys(rc, e);
	assert_true(e == ENODEV || e == EINVAL);
	assert_int_equal(nk__os_move_pages(1, pages, NULL, status, 0, &e), 0);
	assert_int_equal(e, 0);
	assert_true(status[0] >= 0);

	/* affinity: nothing to set, and a cpu no machine has */
	int big = NK__MAX_ID;
	assert_fails(nk__os_set_affinity(0, NULL, 0, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_set_affinity(0, &big, 1, &e), NK_EINVAL, e, EINVAL);
	int cpu = -1, node = -1;
	assert_int_equal(nk__os_getcpu(&cpu, &node, &e), 0);
	assert_int_equal(e, 0);
	assert_true(cpu >= 0 && node >= 0);
	munmap(p, 3 * ps);
}

static void test_memory_calls(void **state)
{
	size_t ps = nk__os_page_size();
	char *p = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *out = JUNK;
	int e = -1;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(munmap(p + 2 * ps, 2 * ps), 0);
	assert_fails(nk__os_range_mapped(p, 4 * ps, &e), NK_ENOMEM, e, ENOMEM);
	assert_int_equal(nk__os_range_mapped(p, 2 * ps, &e), 0);
	assert_int_equal(e, 0);
	assert_fails(nk__os_protect(p, ps, 7, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_protect(p, 4 * ps, NK__PROT_NONE, &e), NK_ENOMEM, e, ENOMEM);
	assert_int_equal(nk__os_protect(p, 2 * ps, NK__PROT_RW, &e), 0);
	assert_int_equal(e, 0);
	int rc = nk__os_populate_write(p + 2 * ps, ps, &e); /* unmapped */
	assert_fails_sys(rc, e);
	assert_fails(nk__os_no_huge_pages(p + 1, ps, &e), NK_EINVAL, e, EINVAL);
	munmap(p, 2 * ps);

	assert_fails(nk__os_map_aligned(0, ps, &out, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_map_aligned(ps, ps + 1, &out, &e), NK_EINVAL, e, EINVAL);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_map_aligned(ps, 4 * ps, &out, &e), 0);
	assert_int_equal(e, 0);
	assert_int_equal((uintptr_t)out % (4 * ps), 0);
	assert_int_equal(nk__os_unmap_aligned(out, ps, &e), 0);

	out = JUNK;
	assert_fails(nk__os_map_anon(0, &out, &e), NK_EINVAL, e, EINVAL);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_unmap(NULL, ps, &e), 0);
	assert_int_equal(e, 0);
	assert_fails(nk__os_unmap((char *)JUNK + 1, ps, &e), NK_EINVAL, e, EINVAL);
}

static void dummy_handler(int sig, void *info, void *uctx)
{
	(void)sig, (void)info, (void)uctx;
}

static void test_signal_calls(void **state)
{
	struct sigaction cur;
	int e = -1;

	(void)state;
	assert_int_equal(nk__os_fault_query(&cur, &e), 0);
	assert_int_equal(e, 0);
	e = -1;
	assert_int_equal(nk__os_fault_current(dummy_handler, &e), 0); /* another one (or none) is installed */
	assert_int_equal(e, 0);
}

static void test_perf_calls(void **state)
{
	void *out = JUNK;
	int e = -1;

	(void)state;
	assert_fails(nk__os_perf_mmap(-1, 2 * nk__os_page_size(), &out, &e), NK_EIO, e, EBADF);
	assert_ptr_equal(out, JUNK);
	assert_int_equal(nk__os_perf_munmap(NULL, 0, &e), 0);
	assert_int_equal(nk__os_perf_close(-1, &e), 0);
	assert_int_equal(e, 0);
#ifdef HAVE_PERF_HEADER
	/* a PMU type no kernel has: ENOENT, or what a seccomp filter says instead; always the table's code */
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = 0x7ffffff0u;
	int fd = nk__os_perf_open(&attr, 0, -1, -1, 0, &e);
	assert_fails_sys(fd, e);
#endif
}

static void test_process_calls(void **state)
{
	char *argv[] = { "nothing", NULL };
	char *env[] = { NULL };
	char *const *const envps[] = { env };
	int e = -1, status = 77, st[1] = { 77 };
	void *pages[1] = { &e };

	(void)state;
	assert_fails(nk__os_spawn(NULL, argv, envps, 1, NULL, NULL, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_spawn(in_scratch("missing"), argv, envps, 1, NULL, NULL, &e), NK_ENOENT, e, ENOENT);
	assert_fails(nk__os_wait(0, 0, &status, &e), NK_EINVAL, e, EINVAL);
	assert_fails(nk__os_wait(NO_PID, 0, &status, &e), NK_EIO, e, ECHILD);
	assert_int_equal(status, 77);
	assert_fails(nk__os_kill(NO_PID, 0, &e), NK_ENOENT, e, ESRCH);
	assert_int_equal(nk__os_kill(getpid(), 0, &e), 0);
	assert_int_equal(e, 0);
	assert_int_equal(nk__os_alive(NO_PID), 0);
	long rc = nk__os_query_pages(NO_PID, 1, pages, st, &e);
	if (rc == NK_ENOSYS)
		skip();
	assert_fails(rc, NK_ENOENT, e, ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_read_whole_and_file),
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_write_atomic),
		cmocka_unit_test(test_list_dir),
		cmocka_unit_test(test_stat_family),
		cmocka_unit_test(test_folders),
		cmocka_unit_test(test_read_at),
		cmocka_unit_test(test_proc_and_sys),
		cmocka_unit_test(test_mempolicy_calls),
		cmocka_unit_test(test_memory_calls),
		cmocka_unit_test(test_signal_calls),
		cmocka_unit_test(test_perf_calls),
		cmocka_unit_test(test_process_calls),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
