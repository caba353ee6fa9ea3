/* SPDX-License-Identifier: BSD-3-Clause
 * I/O into next-touch memory: a program reading a file (and a socket) into an
 * armed array.
 *
 * Built two ways.  As a unit test (this folder): plain read(2) & co. into an
 * armed buffer fail with EFAULT, the kernel does not fault on the program's
 * behalf (shared/KERNEL-NOTES.md), the buffer stays armed and no byte is lost;
 * after nk_next_touch_prepare() the same call works, the data is right and
 * the pages sit on the reader's node.  With NK_NT_IO_WRAPPED (built by
 * preload/CMakeLists.txt, once linked with libnumakit_nt_io and once under
 * LD_PRELOAD): the plain calls work directly, the wrappers having prepared
 * the buffers.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NK_NT_IO_WRAPPED
#define NK_NT_IO_WRAPPED 0
#endif

#define FILE_PAGES 64
#define SOCK_BYTES (8 * 4096 + 123)

static long ps;
static size_t file_len;
static unsigned char *want; /* the file's contents */
static char *path;
static nk_machine *machine;
static int reader_node; /* where prepared / wrapped pages must end up */

static unsigned char *map_armed(size_t len)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 0xee, len); /* resident somewhere: a move, not a first touch */
	assert_int_equal(nk_next_touch_arm(machine, p, len, NULL), 0);
	return p;
}

static void unmap(void *p, size_t len)
{
	assert_int_equal(nk_next_touch_disarm(p, len), 0);
	munmap(p, len);
}

/*
 * Nodes of the pages of [p, p+len).  The wrapped builds link only the public
 * library, so this asks the kernel directly (move_pages without targets is a
 * query).
 */
static void assert_on_reader_node(const void *p, size_t len)
{
	size_t n = (len + (size_t)ps - 1) / (size_t)ps;
	void **pages = calloc(n, sizeof *pages);
	int *status = calloc(n, sizeof *status);
	assert_true(pages && status);
	for (size_t i = 0; i < n; i++)
		pages[i] = (char *)p + i * (size_t)ps;
	assert_int_equal(syscall(SYS_move_pages, 0, n, pages, NULL, status, 0), 0);
	for (size_t i = 0; i < n; i++)
		if (status[i] != reader_node)
			fail_msg("page %zu on node %d, the reader's node is %d", i, status[i], reader_node);
	free(pages);
	free(status);
}

/* 1 when the kernel cannot read the page: a system call gets EFAULT (armed). */
static int is_armed(const void *p)
{
	int fds[2], armed;
	char c;
	assert_int_equal(pipe(fds), 0);
	ssize_t w = write(fds[1], p, 1);
	armed = w < 0 && errno == EFAULT;
	if (w == 1)
		assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	close(fds[1]);
	return armed;
}

/*
 * What happens to a call into armed memory before anyone prepared it: with
 * the wrappers nothing special; without, EFAULT, the buffer untouched and
 * still armed, then prepare.
 */
static void expect_efault_then_prepare(ssize_t rc, unsigned char *buf, size_t len)
{
	if (NK_NT_IO_WRAPPED)
		return;
	assert_int_equal(rc, -1);
	assert_int_equal(errno, EFAULT);
	assert_true(is_armed(buf));
	assert_int_equal(nk_next_touch_prepare(buf, len), 0);
	assert_false(is_armed(buf));
}

static void check_counts(const nk_next_touch_counts *c0, size_t pages)
{
	nk_next_touch_counts c1;
	assert_int_equal(nk_next_touch_stats(&c1), 0);
	/* Every page faulted exactly once: through prepare (ours or the wrapper's). */
	assert_int_equal(c1.faults - c0->faults, pages);
	assert_int_equal(c1.pages_prepared - c0->pages_prepared, pages);
	assert_int_equal((c1.pages_moved + c1.pages_local) - (c0->pages_moved + c0->pages_local), pages);
}

static void test_read_file(void **state)
{
	size_t len = FILE_PAGES * (size_t)ps + (size_t)ps; /* room for the file's odd tail */
	unsigned char *buf = map_armed(len);
	nk_next_touch_counts c0;
	assert_int_equal(nk_next_touch_stats(&c0), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t rc = read(fd, buf, len);
	expect_efault_then_prepare(rc, buf, len);
	if (!NK_NT_IO_WRAPPED) {
		/* The failed read consumed nothing: the offset did not move. */
		assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
		rc = read(fd, buf, len);
	}
	assert_int_equal(rc, (ssize_t)file_len);
	assert_memory_equal(buf, want, file_len);
	assert_on_reader_node(buf, len);
	check_counts(&c0, len / (size_t)ps);
	close(fd);
	unmap(buf, len);
}

static void test_pread_readv(void **state)
{
	size_t len = FILE_PAGES * (size_t)ps + (size_t)ps;
	unsigned char *buf = map_armed(len);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	/* pread of the second half */
	size_t half = file_len / 2;
	ssize_t rc = pread(fd, buf, file_len - half, (off_t)half);
	expect_efault_then_prepare(rc, buf, file_len - half);
	if (!NK_NT_IO_WRAPPED)
		rc = pread(fd, buf, file_len - half, (off_t)half);
	assert_int_equal(rc, (ssize_t)(file_len - half));
	assert_memory_equal(buf, want + half, file_len - half);
	unmap(buf, len);

	/* readv into two armed pieces, the second starting mid-page */
	buf = map_armed(len);
	struct iovec iov[2] = { { buf, 3 * (size_t)ps }, { buf + 3 * (size_t)ps + 17, file_len - 3 * (size_t)ps } };
	rc = readv(fd, iov, 2); /* pread left the offset at 0 */
	if (!NK_NT_IO_WRAPPED) {
		assert_int_equal(rc, -1);
		assert_int_equal(errno, EFAULT);
		for (int i = 0; i < 2; i++)
			assert_int_equal(nk_next_touch_prepare(iov[i].iov_base, iov[i].iov_len), 0);
		assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
		rc = readv(fd, iov, 2);
	}
	assert_int_equal(rc, (ssize_t)file_len);
	assert_memory_equal(buf, want, 3 * (size_t)ps);
	assert_memory_equal(buf + 3 * (size_t)ps + 17, want + 3 * (size_t)ps, file_len - 3 * (size_t)ps);
	assert_on_reader_node(buf, file_len);
	close(fd);
	unmap(buf, len);
}

static void test_fread(void **state)
{
	size_t len = FILE_PAGES * (size_t)ps + (size_t)ps;
	unsigned char *buf = map_armed(len);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t got = fread(buf, 1, len, f);
	if (!NK_NT_IO_WRAPPED) {
		/* glibc reads a request larger than its buffer straight into
		 * the caller's memory, inside libc: EFAULT, a short count. */
		assert_true(got < file_len);
		assert_true(ferror(f));
		assert_int_equal(nk_next_touch_prepare(buf, len), 0);
		clearerr(f);
		rewind(f);
		got = fread(buf, 1, len, f);
	}
	assert_int_equal(got, file_len);
	assert_memory_equal(buf, want, file_len);
	assert_on_reader_node(buf, len);
	fclose(f);
	unmap(buf, len);
}

/* A socket: data that failed to arrive with EFAULT must still be there. */
static void test_sockets(void **state)
{
	int sv[2];
	size_t len = SOCK_BYTES + (size_t)ps;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int round = 0; round < 3; round++) {
		unsigned char *buf = map_armed(len);
		assert_int_equal(write(sv[0], want, SOCK_BYTES), SOCK_BYTES);
		ssize_t rc;
		struct iovec iov[2] = { { buf, 5000 }, { buf + 5000, len - 5000 } };
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
		if (round == 0)
			rc = recv(sv[1], buf, len, MSG_DONTWAIT);
		else if (round == 1)
			rc = recvfrom(sv[1], buf, len, MSG_DONTWAIT, NULL, NULL);
		else
			rc = recvmsg(sv[1], &msg, MSG_DONTWAIT);
		expect_efault_then_prepare(rc, buf, len);
		size_t got = rc > 0 ? (size_t)rc : 0;
		while (got < SOCK_BYTES) {
			/* Stream sockets may deliver in pieces; whatever is
			 * missing after an EFAULT must still be queued. */
			rc = recv(sv[1], buf + got, len - got, MSG_DONTWAIT);
			if (rc <= 0)
				fail_msg("round %d: %zu of %d bytes, then %zd (%s)", round, got, SOCK_BYTES, rc,
					 strerror(errno));
			got += (size_t)rc;
		}
		assert_int_equal(got, SOCK_BYTES);
		assert_memory_equal(buf, want, SOCK_BYTES);
		assert_on_reader_node(buf, SOCK_BYTES);
		unmap(buf, len);
	}
	close(sv[0]);
	close(sv[1]);
}

static void test_wrappers_present(void **state)
{
	void *probe = dlsym(RTLD_DEFAULT, "nk_nt_io_active");
	if (NK_NT_IO_WRAPPED)
		assert_non_null(probe); /* the test would pass vacuously otherwise */
	else
		assert_null(probe);
}

static int setup(void **state)
{
	ps = sysconf(_SC_PAGESIZE);
	if (nk_machine_load_live(&machine, NULL))
		return -1;
	/* Stay on one cpu, so "the reader's node" is one node. */
	cpu_set_t one;
	int cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (cpu < 0 || sched_setaffinity(0, sizeof one, &one))
		return -1;
	nk_cpu_info ci;
	if (nk_machine_cpu_info(machine, cpu, &ci) || ci.node < 0)
		return -1;
	/* A memoryless node's reader gets its pages on the nearest node with memory. */
	if (nk_machine_neighbors(machine, ci.node, &reader_node, 1) < 1)
		return -1;
	file_len = FILE_PAGES * (size_t)ps + 100;
	want = malloc(file_len);
	if (!want)
		return -1;
	unsigned x = 12345;
	for (size_t i = 0; i < file_len; i++) {
		x = x * 1103515245u + 12345u;
		want[i] = (unsigned char)(x >> 16);
	}
	/* Not nk_test_tmpfile: the wrapped builds do not link testutil.c. */
	path = strdup("/tmp/nk_nt_ioXXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0 || write(fd, want, file_len) != (ssize_t)file_len)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	free(path);
	free(want);
	nk_machine_free(machine);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrappers_present),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_pread_readv),
		cmocka_unit_test(test_fread),
		cmocka_unit_test(test_sockets),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
