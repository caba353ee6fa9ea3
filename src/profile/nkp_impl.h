/* SPDX-License-Identifier: BSD-3-Clause
 * What the profile reader (nkp_read.c) and the part merger (nkp_merge.c)
 * share: the context-free checks of one record, so that every record the
 * merger keeps is one the reader accepts.  Private to src/profile/.
 */
#ifndef NK_PROFILE_NKP_IMPL_H
#define NK_PROFILE_NKP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "profile/nkp.h"

/* Readers refuse files larger than this (a merged profile of 4 Mi samples per process is ~200 MiB each). */
#define NK__NKP_MAX_FILE ((size_t)1 << 30)
/* The merger splits samples into records of at most this many. */
#define NK__NKP_SAMPLES_PER_RECORD 65536u
/* NAME and PHASE names are at most this many bytes. */
#define NK__NKP_MAX_NAME 4096u

/** "SAMPLES", ... for a known base type, NULL otherwise. */
const char *nk__nkp_type_name(uint32_t type);

/**
 * Check the payload of one record of known base @p type (NK__NKP_OPTIONAL
 * cleared) on its own: sizes, field ranges, JSON texts (objects), names.
 * Cross-record rules (order, ids referenced, duplicates) are the caller's.
 * Returns 0 or NK_EPARSE with the reason in @p why (no offset, no type name).
 */
int nk__nkp_check_payload(uint32_t type, const unsigned char *p, size_t len, char *why, size_t whylen);

/** Check one sample's fields (not its phase id).  0 or NK_EPARSE with the reason in @p why. */
int nk__nkp_check_sample(const struct nk__nkp_sample *s, char *why, size_t whylen);

/** 1 when the END JSON text says "complete": true (the text was checked already), else 0. */
int nk__nkp_end_complete(const unsigned char *p, size_t len);

#endif
