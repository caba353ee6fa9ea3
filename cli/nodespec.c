/* SPDX-License-Identifier: BSD-3-Clause
 * numactl's node and cpu specs (nodespec.h).  The grammar is numactl's
 * (libnuma's numa_parse_nodestring/numa_parse_cpustring as numactl(8)
 * documents it); two choices are ours, both stricter where numactl would
 * silently do something else:
 *  - "!" inverts within the allowed set.  numactl inverts over every
 *    configured id and leaves the disallowed ones to the kernel, which drops
 *    them from a memory policy or a cpu mask; numakit refuses a disallowed
 *    id, so it drops them here: the resulting placement is the same.
 *  - numbers are decimal.  numactl reads them with strtoul(s, 0), so "010"
 *    is 8 and "0x3" is 3, which nobody types on purpose.
 */
#include "nodespec.h"
#include "why.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_ID 0xfffff /* far above any node or cpu id; keeps the arithmetic in int */

static const char *const devices[] = { "netdev:", "file:", "ip:", "block:", "pci:" };

int cli_spec_is_numactl(const char *text)
{
	if (!text)
		return 0;
	if (*text == '!' || *text == '+')
		return 1;
	for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
		if (!strncmp(text, devices[i], strlen(devices[i])))
			return 1; /* refused by cli_spec_parse, by name */
	return !strcmp(text, "all");
}

const char *cli_spec_same(const char *text, const char **last)
{
	if (strcmp(text, "same")) {
		*last = text;
		return text;
	}
	return *last;
}


/* The allowed set as compact text ("0-3,8"), cut to the buffer. */
static void allowed_text(const int *ids, size_t n, char *buf, size_t cap)
{
	size_t k = 0;

	buf[0] = '\0';
	if (!n) {
		snprintf(buf, cap, "none");
		return;
	}
	for (size_t i = 0; i < n && k < cap;) {
		size_t j = i;
		int r;

		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		if (j == i)
			r = snprintf(buf + k, cap - k, "%s%d", i ? "," : "", ids[i]);
		else
			r = snprintf(buf + k, cap - k, "%s%d-%d", i ? "," : "", ids[i], ids[j]);
		if (r < 0)
			return;
		k += (size_t)r;
		i = j + 1;
	}
}

/* Position of @p id in the increasing @p ids, or -1. */
static long position(const int *ids, size_t n, long id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return (long)mid;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* A decimal number at *s (advanced past it); -1 when there is none, -2 when it is too large. */
static long number(const char **s)
{
	long v = 0;

	if (!isdigit((unsigned char)**s))
		return -1;
	for (; isdigit((unsigned char)**s); (*s)++) {
		v = v * 10 + (**s - '0');
		if (v > SPEC_MAX_ID)
			return -2;
	}
	return v;
}

/* One id of an item, as a position in the allowed set; -1 with the reason in why. */
static long item_id(const char **s, int relative, const char *text, const char *what, const int *allowed,
		    size_t n, char *why, size_t whycap)
{
	const char *at = *s;
	char list[96];
	long v = number(s), pos;

	if (v == -2)
		return nk__cli_fail(why, whycap, "'%s': %s %.*s is too large", text, what, (int)(*s - at), at);
	if (v < 0) {
		if (!*at)
			return nk__cli_fail(why, whycap, "'%s': a %s number is missing at the end", text, what);
		return nk__cli_fail(why, whycap, "'%s': expected a %s number at '%s'", text, what, at);
	}
	if (relative) {
		if ((size_t)v >= n) {
			allowed_text(allowed, n, list, sizeof list);
			return nk__cli_fail(why, whycap, "'%s': +%ld is past the %zu %s%s this process may use (%s)", text, v,
				    n, what, n == 1 ? "" : "s", list);
		}
		return v;
	}
	pos = position(allowed, n, v);
	if (pos < 0) {
		allowed_text(allowed, n, list, sizeof list);
		return nk__cli_fail(why, whycap, "'%s': %s %ld is not one this process may use (%ss: %s)", text, what, v, what,
			    list);
	}
	return pos;
}

int cli_spec_parse(const char *text, const char *what, const int *allowed, size_t n, int *out, char *why,
		   size_t whycap)
{
	const char *s = text;
	unsigned char *in;
	int invert = 0, relative = 0, k = 0;

	if (!text || !*text)
		return nk__cli_fail(why, whycap, "an empty %s list", what);
	for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
		if (strstr(text, devices[i]))
			return nk__cli_fail(why, whycap, "'%s': numactl's device forms (netdev:, file:, ip:, block:, pci:) "
					     "are not supported: give %s numbers",
				    text, what);
	if (*s == '!') {
		invert = 1;
		s++;
	}
	if (*s == '+') {
		relative = 1;
		s++;
	}
	in = calloc(n ? n : 1, 1);
	if (!in)
		return nk__cli_fail(why, whycap, "out of memory");
	if (!strcmp(s, "all")) {
		memset(in, 1, n);
	} else {
		for (;;) {
			long a = item_id(&s, relative, text, what, allowed, n, why, whycap), b;

			if (a < 0)
				goto err;
			b = a;
			if (*s == '-') {
				const char *from = s + 1;

				s++;
				b = item_id(&s, relative, text, what, allowed, n, why, whycap);
				if (b < 0)
					goto err;
				if (b < a) {
					nk__cli_fail(why, whycap, "'%s': the range ending in '%.*s' goes backwards", text,
					     (int)(s - from), from);
					goto err;
				}
			}
			/* positions in the allowed set: the ids between the ends that are allowed */
			for (long p = a; p <= b; p++)
				in[p] = 1;
			if (!*s)
				break;
			if (*s != ',') {
				nk__cli_fail(why, whycap, "'%s': unexpected '%c' (a %s list looks like 0-2,5, all, +1 or !0)",
				     text, *s, what);
				goto err;
			}
			s++;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (in[i] != invert)
			out[k++] = allowed[i];
	free(in);
	return k;
err:
	free(in);
	return -1;
}
