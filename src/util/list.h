/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: integer id lists (cpu and node sets) and their text forms. */
#ifndef NK_UTIL_LIST_H
#define NK_UTIL_LIST_H

#include <stddef.h>

#include "numakit.h"

/** A growable, owned array of ints. */
typedef struct nk__ilist {
	int *v;
	size_t n;
	size_t cap;
} nk__ilist;

int nk__ilist_push(nk__ilist *l, int x);
void nk__ilist_free(nk__ilist *l);
/** Sort increasing and drop duplicates. */
void nk__ilist_normalize(nk__ilist *l);
int nk__ilist_contains(const nk__ilist *l, int x); /* l must be normalised */
int nk__ilist_copy(nk__ilist *dst, const int *src, size_t n);

/**
 * Parse a Linux list ("0-3,8,10-15:2", "" = empty) into @p out (normalised).
 * Leading/trailing whitespace and NUL bytes are tolerated (sysfs files end in
 * "\n").  Ids must be in [0, NK__MAX_ID].  On failure writes a message into
 * @p why (may be NULL) and returns NK_EPARSE; @p out is left empty.
 */
/* Linux has at most 8192 cpus (NR_CPUS) and 1024 nodes; 65535 leaves room. */
#define NK__MAX_ID 65535
int nk__parse_list(const char *text, nk__ilist *out, char *why, size_t whylen);

/**
 * Parse a Linux hex mask ("00000000,0000ff00", highest word first) into ids.
 * Same contract as nk__parse_list.
 */
int nk__parse_mask(const char *text, nk__ilist *out, char *why, size_t whylen);

/** Format increasing ids compactly; snprintf semantics (returns needed length). */
int nk__format_list(const int *ids, size_t n, char *buf, size_t cap);

/** Format into a newly malloc'ed string, NULL on ENOMEM. */
char *nk__format_list_alloc(const int *ids, size_t n);

/**
 * Parse a size with an optional binary suffix (K, M, G, T, with optional
 * "iB"/"B"; case-insensitive): "512M" -> 536870912.  Returns 0 or NK_EPARSE.
 */
int nk__parse_size(const char *text, unsigned long long *out);

#endif
