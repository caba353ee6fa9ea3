/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_fileread): the
 * kernel writes into tracked memory for the program.  A file of known bytes
 * is read with read(2), pread(2), readv(2) and fread(3) into a heap array
 * whose pages the pagefault sampler revokes meanwhile (the array is swept
 * between the reads so that sampling is under way).  A read into a revoked
 * page would fail with EFAULT: the profiler's I/O wrappers must prevent it.
 * Exit status 0 when every byte is verified.  Usage: prof_fileread [MiB [DIR]].
 */
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prof_common.h"

static unsigned char byte_at(size_t i)
{
	return (unsigned char)((i * 31u + 7u) % 251u);
}

static int verify(const unsigned char *a, size_t n, const char *how)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != byte_at(i)) {
			fprintf(stderr, "prof_fileread: %s: byte %zu is %u, expected %u\n", how, i, a[i], byte_at(i));
			return 1;
		}
	return 0;
}

/* Touch every page (so some are revoked by the sampler) and forget the contents. */
static void scribble(unsigned char *a, size_t n)
{
	double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
	for (size_t i = 0; i < n; i++) {
		sum += a[i];
		a[i] = 0xee; /* TRUTH:scribble */
	}
	prof_sink = sum;
}

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) << 20;
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	char path[4096];
	unsigned char *a = malloc(n); /* TRUTH:alloc */
	int fd, fail = 0;
	size_t got;
	FILE *f;

	if (!a)
		return 1;
	snprintf(path, sizeof path, "%s/prof_fileread.%d", dir, (int)getpid());
	/* The file, written from a separate buffer. */
	{
		unsigned char *w = malloc(n);
		if (!w)
			return 1;
		for (size_t i = 0; i < n; i++)
			w[i] = byte_at(i);
		fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		if (fd < 0 || write(fd, w, n) != (ssize_t)n || close(fd)) {
			fprintf(stderr, "prof_fileread: cannot write %s: %s\n", path, strerror(errno));
			return 1;
		}
		free(w);
	}
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 1;

	/* 1. read(2) in 1 MiB pieces. */
	scribble(a, n);
	for (got = 0; got < n;) {
		ssize_t k = read(fd, a + got, n - got < (1u << 20) ? n - got : (1u << 20)); /* TRUTH:read */
		if (k <= 0) {
			fprintf(stderr, "prof_fileread: read at %zu: %s\n", got, k < 0 ? strerror(errno) : "EOF");
			return 1;
		}
		got += (size_t)k;
	}
	fail |= verify(a, n, "read");

	/* 2. pread(2), the whole file at once. */
	scribble(a, n);
	if (pread(fd, a, n, 0) != (ssize_t)n) {
		fprintf(stderr, "prof_fileread: pread: %s\n", strerror(errno));
		return 1;
	}
	fail |= verify(a, n, "pread");

	/* 3. readv(2): two halves. */
	scribble(a, n);
	{
		struct iovec iov[2] = { { a, n / 2 }, { a + n / 2, n - n / 2 } };
		if (lseek(fd, 0, SEEK_SET) != 0 || readv(fd, iov, 2) != (ssize_t)n) {
			fprintf(stderr, "prof_fileread: readv: %s\n", strerror(errno));
			return 1;
		}
	}
	fail |= verify(a, n, "readv");
	close(fd);

	/* 4. fread(3). */
	scribble(a, n);
	f = fopen(path, "rb");
	if (!f || fread(a, 1, n, f) != n) { /* TRUTH:fread */
		fprintf(stderr, "prof_fileread: fread: %s\n", strerror(errno));
		return 1;
	}
	fclose(f);
	fail |= verify(a, n, "fread");

	unlink(path);
	free(a);
	if (!fail)
		printf("prof_fileread: %zu bytes verified after read, pread, readv and fread\n", n);
	return fail;
}
