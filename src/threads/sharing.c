/* SPDX-License-Identifier: BSD-3-Clause
 * Sharing matrices: how much each pair of threads of a team shares, the
 * input of the "sharing" placement.  Two forms (docs/formats.md): plain
 * text, one row per line, which any profiler or script can write, and JSON
 * with a format tag and version like the machine file.  Every error names
 * the input and the line (text) or the JSON path.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "threads/placement_impl.h"
#include "util/error.h"

/* A 4096-thread matrix of 8-character numbers is ~150 MiB of text; larger is not a sharing matrix. */
#define SHARING_MAX_BYTES (256ul << 20)
#define TOKEN_MAX 64

struct dvec {
	double *v;
	size_t n, cap;
};

static int dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 64;
		double *v = realloc(d->v, nc * sizeof *v);
		if (!v)
			return NK_ENOMEM;
		d->v = v;
		d->cap = nc;
	}
	d->v[d->n++] = x;
	return 0;
}

/* A non-negative decimal number, "12", "0.5", "3e6"; nothing else (no inf, nan, hex, sign but in the exponent). */
static int parse_number(const char *tok, size_t len, double *out)
{
	char buf[TOKEN_MAX + 1];
	char *end;
	size_t i = 0;
	int digits = 0;
	double x;

	if (!len || len > TOKEN_MAX)
		return -1;
	while (i < len && tok[i] >= '0' && tok[i] <= '9')
		i++, digits++;
	if (i < len && tok[i] == '.') {
		i++;
		while (i < len && tok[i] >= '0' && tok[i] <= '9')
			i++, digits++;
	}
	if (!digits)
		return -1;
	if (i < len && (tok[i] == 'e' || tok[i] == 'E')) {
		size_t e;

		i++;
		if (i < len && (tok[i] == '+' || tok[i] == '-'))
			i++;
		e = i;
		while (i < len && tok[i] >= '0' && tok[i] <= '9')
			i++;
		if (i == e)
			return -1;
	}
	if (i != len)
		return -1;
	memcpy(buf, tok, len);
	buf[len] = 0;
	errno = 0;
	x = strtod(buf, &end);
	/* The grammar above is locale-independent except for '.', which only the "C" locale reads. */
	if (*end || !isfinite(x) || x < 0)
		return -1;
	*out = x;
	return 0;
}

static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == ',' || c == '\v' || c == '\f';
}

static int parse_text(const char *text, size_t len, const char *name, double **matrix, int *np, nk_error *err)
{
	struct dvec d = { 0 };
	size_t i = 0;
	long n = -1, rows = 0;
	int line = 0, rc = 0;

	while (i < len && !rc) {
		long count = 0;

		line++;
		while (i < len && text[i] != '\n') {
			size_t t;
			double x;

			if (is_sep(text[i])) {
				i++;
				continue;
			}
			if (text[i] == '#') {
				while (i < len && text[i] != '\n')
					i++;
				break;
			}
			if (!text[i]) {
				rc = nk__error(err, NK_EPARSE, "%s: line %d: a NUL byte", name, line);
				goto out;
			}
			t = i;
			while (i < len && text[i] != '\n' && text[i] != '#' && !is_sep(text[i]) && text[i])
				i++;
			if (parse_number(text + t, i - t, &x)) {
				rc = nk__error(err, NK_EPARSE, "%s: line %d: \"%.*s%s\" is not a non-negative number",
					       name, line, (int)(i - t > 24 ? 24 : i - t), text + t, i - t > 24 ? "..." : "");
				goto out;
			}
			if (n >= 0 && count >= n) {
				rc = nk__error(err, NK_EPARSE, "%s: line %d: more than %ld values, expected %ld", name,
					       line, n, n);
				goto out;
			}
			if (n < 0 && count >= NK__MAX_THREADS) {
				rc = nk__error(err, NK_EPARSE, "%s: line %d: more than %d values (threads)", name, line,
					       NK__MAX_THREADS);
				goto out;
			}
			if (dvec_push(&d, x)) {
				rc = nk__error(err, NK_ENOMEM, "%s: out of memory", name);
				goto out;
			}
			count++;
		}
		if (i < len)
			i++; /* the newline */
		if (!count)
			continue;
		if (n < 0)
			n = count;
		if (count != n) {
			rc = nk__error(err, NK_EPARSE, "%s: line %d: %ld values, expected %ld", name, line, count, n);
			goto out;
		}
		if (++rows > n) {
			rc = nk__error(err, NK_EPARSE, "%s: line %d: more than %ld rows, expected %ld (a square matrix)",
				       name, line, n, n);
			goto out;
		}
	}
	if (n < 0) {
		rc = nk__error(err, NK_EPARSE, "%s: no values (expected n lines of n numbers)", name);
		goto out;
	}
	if (rows != n) {
		rc = nk__error(err, NK_EPARSE, "%s: %ld rows, expected %ld (a square matrix)", name, rows, n);
		goto out;
	}
	*matrix = d.v;
	*np = (int)n;
	return 0;
out:
	free(d.v);
	return rc;
}

static int parse_json(const char *text, size_t len, const char *name, double **matrix, int *np, nk_error *err)
{
	json_error_t jerr;
	json_t *root, *fmt, *ver, *mat;
	double *a = NULL;
	size_t n;
	int rc = NK_EPARSE;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return nk__error(err, NK_EPARSE, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root)) {
		nk__error(err, rc, "%s: expected a JSON object", name);
		goto out;
	}
	fmt = json_object_get(root, "format");
	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "numakit-sharing")) {
		nk__error(err, rc, "%s: format: expected \"numakit-sharing\"", name);
		goto out;
	}
	ver = json_object_get(root, "version");
	if (!json_is_integer(ver)) {
		nk__error(err, rc, "%s: version: expected an integer", name);
		goto out;
	}
	if (json_integer_value(ver) != 1) {
		rc = nk__error(err, NK_EVERSION, "%s: version: version %lld is not supported (this library reads 1)",
			       name, (long long)json_integer_value(ver));
		goto out;
	}
	mat = json_object_get(root, "matrix");
	if (!json_is_array(mat) || !json_array_size(mat)) {
		nk__error(err, rc, "%s: matrix: expected a non-empty array of rows", name);
		goto out;
	}
	n = json_array_size(mat);
	if (n > NK__MAX_THREADS) {
		nk__error(err, rc, "%s: matrix: %zu rows, at most %d", name, n, NK__MAX_THREADS);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(mat, i);

		if (!json_is_array(row)) {
			nk__error(err, rc, "%s: matrix[%zu]: expected an array", name, i);
			goto out;
		}
		if (json_array_size(row) != n) {
			nk__error(err, rc, "%s: matrix[%zu]: expected %zu values, found %zu", name, i, n,
				  json_array_size(row));
			goto out;
		}
	}
	/* every row has n entries in the document, so n * n values are backed by input */
	a = malloc(n * n * sizeof *a);
	if (!a) {
		rc = nk__error(err, NK_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(mat, i);

		for (size_t j = 0; j < n; j++) {
			json_t *x = json_array_get(row, j);
			double v = json_is_number(x) ? json_number_value(x) : -1;

			if (!json_is_number(x) || !isfinite(v) || v < 0) {
				nk__error(err, rc, "%s: matrix[%zu][%zu]: expected a non-negative number", name, i, j);
				goto out;
			}
			a[i * n + j] = v;
		}
	}
	*matrix = a;
	*np = (int)n;
	a = NULL;
	rc = 0;
out:
	free(a);
	json_decref(root);
	return rc;
}

static int parse_named(const char *text, size_t len, const char *name, double **matrix, int *n, nk_error *err)
{
	size_t i = 0;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	if (i < len && text[i] == '{')
		return parse_json(text, len, name, matrix, n, err);
	return parse_text(text, len, name, matrix, n, err);
}

int nk_sharing_parse(const char *text, size_t len, double **matrix, int *n, nk_error *err)
{
	if ((!text && len) || !matrix || !n)
		return nk__error(err, NK_EINVAL, "nk_sharing_parse: NULL argument");
	return parse_named(text ? text : "", len, "sharing matrix", matrix, n, err);
}

int nk_sharing_load(const char *path, double **matrix, int *n, nk_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc, e = 0;

	if (!path || !matrix || !n)
		return nk__error(err, NK_EINVAL, "nk_sharing_load: NULL argument");
	rc = nk__os_read_whole(path, SHARING_MAX_BYTES, &buf, &len, &e);
	if (rc == NK_ENOENT)
		return nk__error(err, rc, "%s: no such file", path);
	if (rc == NK_ENOMEM)
		return nk__error(err, rc, "%s: out of memory", path);
	if (rc)
		return nk__error(err, rc, "%s: %s", path,
				 e == EFBIG ? "larger than 256 MiB, not a sharing matrix" : strerror(e));
	rc = parse_named(buf, len, path, matrix, n, err);
	free(buf);
	return rc;
}
