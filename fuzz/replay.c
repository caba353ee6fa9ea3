/* SPDX-License-Identifier: BSD-3-Clause
 * The replay driver of the fuzz targets (fuzz/CMakeLists.txt, ctest label fuzz-replay): a main() that
 * calls a target's LLVMFuzzerTestOneInput once on the empty input and once on every file named on the
 * command line or found (recursively, in name order) under a directory named there, as zstd's
 * tests/fuzz/regression_driver.c does.  Every build links each target with it and runs its corpus
 * (fuzz/corpus/NAME/), gcc and sanitizer builds included, so that an input that once crashed a reader,
 * kept in the corpus, fails the ordinary test suite if the crash comes back; libFuzzer itself only runs
 * in the clang fuzz build.
 *
 * Each input is handed over as libFuzzer hands it: a buffer of exactly its size (under ASan, a read past
 * the end is caught), never shared between inputs.  A target returns 0 (or -1, libFuzzer's "do not add
 * to the corpus"); a crash, an abort or any other return fails the run, and the last "replay: FILE"
 * line says which input did it.  A directory without inputs fails too: a replay of nothing proves nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional in a target, as under libFuzzer. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_one(const char *name, const uint8_t *data, size_t size)
{
	fprintf(stderr, "replay: %s (%zu bytes)\n", name, size);
	int rc = LLVMFuzzerTestOneInput(data, size);
	if (rc != 0 && rc != -1) {
		fprintf(stderr, "replay: %s: LLVMFuzzerTestOneInput returned %d\n", name, rc);
		return -1;
	}
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				fprintf(stderr, "replay: %s: out of memory\n", path);
				return -1;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		fprintf(stderr, "replay: %s: read error\n", path);
		return -1;
	}
	/* An exact-size copy, so that a read past the input's end is a read past the allocation. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return -1;
	}
	if (len)
		memcpy(exact, buf, len);
	free(buf);
	int rc = run_one(path, exact, len);
	free(exact);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every file under @p path (a file or a directory); adds the number of inputs to *n. */
static int run_path(const char *path, size_t *n)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		++*n;
		return run_file(path);
	}
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t count = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue; /* ., .., and hidden files (editors' swap files) */
		if (count == cap) {
			cap = cap ? 2 * cap : 64;
			char **nn = realloc(names, cap * sizeof *names);
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		size_t len = strlen(path) + 1 + strlen(e->d_name) + 1;
		if (!(names[count] = malloc(len))) {
			rc = -1;
			break;
		}
		snprintf(names[count++], len, "%s/%s", path, e->d_name);
	}
	closedir(d);
	if (rc)
		fprintf(stderr, "replay: %s: out of memory\n", path);
	else
		qsort(names, count, sizeof *names, cmp_names);
	for (size_t i = 0; i < count; i++) {
		if (!rc)
			rc = run_path(names[i], n);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n"
				"Runs this fuzz target once on the empty input and on every file given or under the "
				"folders given.\n",
			argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	/* libFuzzer runs the empty input first; malloc(0), so that under ASan any read of it is caught. */
	static const uint8_t none[1];
	uint8_t *empty = malloc(0);
	int rc = run_one("(the empty input)", empty ? empty : none, 0);
	free(empty);
	if (rc)
		return 1;
	for (int i = 1; i < argc; i++) {
		size_t n = 0;
		if (run_path(argv[i], &n))
			return 1;
		if (n == 0) {
			fprintf(stderr, "replay: %s: no inputs\n", argv[i]);
			return 1;
		}
		printf("replay: %s: %zu inputs, all passed\n", argv[i], n);
	}
	return 0;
}
