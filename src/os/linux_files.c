/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux OS layer: fsroot-relative reads of /sys and /proc, the user's files (whole reads, atomic
 * writes, descriptors for libelf, stat, realpath), affinity, page size.  Errors per os.h: the files
 * table (nk__os_file_code) and *sys_errno. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_ALLOC */
#endif
#include "os/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int join(const char *root, const char *path, char *buf, size_t cap)
{
	if (!root || !*root || (root[0] == '/' && root[1] == '\0'))
		root = "";
	int k = snprintf(buf, cap, "%s%s%s", root, (path[0] == '/' || !*root) ? "" : "/", path);
	return (k < 0 || (size_t)k >= cap) ? NK_EINVAL : 0;
}

int nk__os_read_file(const char *root, const char *path, char **out)
{
	char full[PATH_MAX];
	size_t len;
	int rc = join(root, path, full, sizeof full);
	if (rc)
		return rc;
	/* an embedded NUL simply ends the C string the caller parses */
	return nk__os_read_whole(full, NK__OS_MAX_FILE, out, &len, NULL);
}

int nk__os_open_read(const char *path, int *sys_errno)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return (int)nk__os_ret(nk__os_file_code(errno), errno, sys_errno);
	return (int)nk__os_ret(fd, 0, sys_errno);
}

int nk__os_close(int fd, int *sys_errno)
{
	/* Linux frees the descriptor even when close reports an error: never retried */
	if (fd >= 0 && close(fd))
		return (int)nk__os_ret(NK_EIO, errno, sys_errno);
	return (int)nk__os_ret(0, 0, sys_errno);
}

int nk__os_stat(const char *path, struct nk__os_stat *st, int *sys_errno)
{
	struct stat s;

	if (stat(path, &s))
		return (int)nk__os_ret(nk__os_file_code(errno), errno, sys_errno);
	st->size = (uint64_t)s.st_size;
	st->ino = (uint64_t)s.st_ino;
	st->dev_major = major(s.st_dev);
	st->dev_minor = minor(s.st_dev);
	st->is_reg = S_ISREG(s.st_mode) ? 1 : 0;
	st->is_dir = S_ISDIR(s.st_mode) ? 1 : 0;
	return (int)nk__os_ret(0, 0, sys_errno);
}

int nk__os_realpath(const char *path, char **out, int *sys_errno)
{
	char *r = realpath(path, NULL);

	if (!r)
		return (int)nk__os_ret(nk__os_file_code(errno), errno, sys_errno);
	*out = r;
	return (int)nk__os_ret(0, 0, sys_errno);
}

int nk__os_read_whole(const char *path, size_t max, char **out, size_t *len, int *sys_errno)
{
	char *buf = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	int fd, rc, e = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		rc = nk__os_file_code(e);
		goto out;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		e = EISDIR;
		rc = NK_EIO;
		goto out_close;
	}
	for (;;) {
		if (n + 1 >= cap) {
			/* grows past max by at most one step; the n > max check stops it */
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, ncap);
			if (!nb) {
				e = ENOMEM;
				rc = NK_ENOMEM;
				goto out_free;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			rc = NK_EIO;
			goto out_free;
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n > max) {
			e = EFBIG;
			rc = NK_EIO;
			goto out_free;
		}
	}
	if (!buf && !(buf = malloc(1))) {
		e = ENOMEM;
		rc = NK_ENOMEM;
		goto out_close;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	close(fd);
	return (int)nk__os_ret(0, 0, sys_errno);
out_free:
	free(buf);
out_close:
	close(fd);
out:
	return (int)nk__os_ret(rc, e, sys_errno);
}

int nk__os_write_atomic(const char *path, const void *data, size_t len, const char **stage, int *sys_errno)
{
	size_t tlen = strlen(path) + 48;
	char *tmp = malloc(tlen);
	const char *p = data;
	int fd = -1, e = 0;

	*stage = "create";
	if (!tmp)
		return (int)nk__os_ret(NK_ENOMEM, ENOMEM, sys_errno);
	for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
		snprintf(tmp, tlen, "%s.tmp.%ld.%u", path, (long)getpid(), attempt);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		free(tmp);
		return (int)nk__os_ret(NK_EIO, e, sys_errno);
	}
	*stage = "write";
	while (len) {
		ssize_t k = write(fd, p, len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += k;
		len -= (size_t)k;
	}
	if (fsync(fd))
		goto fail;
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	*stage = "replace";
	if (rename(tmp, path))
		goto fail;
	free(tmp);
	return (int)nk__os_ret(0, 0, sys_errno);
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return (int)nk__os_ret(NK_EIO, e, sys_errno);
}

int nk__os_exists(const char *root, const char *path)
{
	char full[PATH_MAX];
	struct stat st;
	if (join(root, path, full, sizeof full))
		return 0;
	return stat(full, &st) == 0;
}

void nk__os_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int nk__os_list_dir(const char *root, const char *path, const char *prefix, char ***names, size_t *n)
{
	char full[PATH_MAX];
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	size_t plen = prefix ? strlen(prefix) : 0;
	struct dirent *de;
	DIR *d;
	int rc = join(root, path, full, sizeof full);
	if (rc)
		return rc;
	d = opendir(full);
	if (!d)
		return nk__os_file_code(errno);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (plen && strncmp(de->d_name, prefix, plen))
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(v, ncap * sizeof *nv);
			if (!nv)
				goto fail;
			v = nv;
			cap = ncap;
		}
		if (!(v[cnt] = strdup(de->d_name)))
			goto fail;
		cnt++;
	}
	closedir(d);
	*names = v;
	*n = cnt;
	return 0;
fail:
	closedir(d);
	nk__os_free_names(v, cnt);
	return NK_ENOMEM;
}

unsigned long nk__os_page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (unsigned long)p : 4096ul;
}

int nk__os_affinity(nk__ilist *cpus)
{
	/* Size the mask from the kernel's answer, never from a constant. */
	for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
		cpu_set_t *set = CPU_ALLOC(ncpu);
		size_t sz = CPU_ALLOC_SIZE(ncpu);
		if (!set)
			return NK_ENOMEM;
		CPU_ZERO_S(sz, set);
		if (sched_getaffinity(0, sz, set) == 0) {
			nk__ilist l = { 0 };
			for (size_t c = 0; c < ncpu; c++)
				if (CPU_ISSET_S(c, sz, set) && nk__ilist_push(&l, (int)c)) {
					nk__ilist_free(&l);
					CPU_FREE(set);
					return NK_ENOMEM;
				}
			CPU_FREE(set);
			nk__ilist_free(cpus);
			*cpus = l;
			return 0;
		}
		CPU_FREE(set);
		if (errno != EINVAL)
			return errno == ENOSYS ? NK_ENOSYS : NK_EIO;
	}
	return NK_ENOSYS;
}
