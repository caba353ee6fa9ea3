/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: the nk_placement value, shared by placement.c (strategies) and pin.c (pinning). */
#ifndef NK_THREADS_PLACEMENT_IMPL_H
#define NK_THREADS_PLACEMENT_IMPL_H

#include "numakit.h"

/** Largest team a placement describes (nk_placement_build's bound). */
#define NK__MAX_THREADS 65536

struct nk_placement {
	int n;          /* threads, > 0 */
	int *cpu;       /* n OS cpu ids, thread order */
	int *node;      /* n OS node ids of those cpus (-1: an online cpu whose node is offline) */
	int oversub;    /* 1 when some cpu appears twice in cpu[] */
};

#endif
