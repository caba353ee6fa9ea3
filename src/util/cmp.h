/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: three-way comparison for qsort comparators. */
#ifndef NK_UTIL_CMP_H
#define NK_UTIL_CMP_H

/**
 * -1, 0 or 1 as @p x is less than, equal to or greater than @p y: integers of
 * any type (both of one type; not for floating point, where NaN compares
 * equal to everything).  Evaluates each argument twice.
 *
 * Comparators on several keys chain it:
 *     int c;
 *     if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->page, b->page)))
 *             return c;
 *     return NK__CMP(a->thread, b->thread);
 */
#define NK__CMP(x, y) (((x) > (y)) - ((x) < (y)))

#endif
