/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal view of NUMA arrays (src/alloc/array.c) for other modules of the library. */
#ifndef NK_ALLOC_ARRAY_IMPL_H
#define NK_ALLOC_ARRAY_IMPL_H

#include "numakit.h"

/* The machine an array was allocated on (NULL for NULL). */
const nk_machine *nk__array_machine(const nk_array *a);

#endif
