/* SPDX-License-Identifier: BSD-3-Clause */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *nk_test_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

char *nk_test_tmpfile(const char *text, size_t len)
{
	char *path = strdup("/tmp/nktestXXXXXX");
	assert_non_null(path);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

const char *nk_test_dump(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", NK_TOPO_DIR, name);
	return buf;
}

nk_machine *nk_test_synth(const char *desc)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	if (nk_machine_load_synthetic(desc, &m, &err))
		fail_msg("\"%s\": %s", desc, err.message);
	return m;
}
