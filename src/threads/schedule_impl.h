/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal helpers of the loop schedules (src/threads/schedule.c), shared with owner.c and the tests. */
#ifndef NK_THREADS_SCHEDULE_IMPL_H
#define NK_THREADS_SCHEDULE_IMPL_H

/* n items cut into t parts (t > 0), the first n % t one item larger: start of part k (k <= t). */
unsigned long nk__part_start(unsigned long n, unsigned long t, unsigned long k);
/* The part of item x (x < n). */
unsigned long nk__part_of(unsigned long n, unsigned long t, unsigned long x);
/* Groups [*g0, *g1) that thread t of a team of T serves in a p-group block_exclusive schedule. */
void nk__sched_groups(int t, int T, int p, int *g0, int *g1);

#endif
