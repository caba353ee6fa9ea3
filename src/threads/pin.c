/* SPDX-License-Identifier: BSD-3-Clause
 * Pinning threads to their placement cpu and asking where a thread runs.
 * The system calls are os.h's; this file only turns their errno into the
 * library's codes and messages.
 */
#include <errno.h>
#include <string.h>

#include "machine/machine_impl.h"
#include "os/os.h"
#include "threads/placement_impl.h"
#include "util/error.h"

int nk_thread_pin(const nk_placement *p, int thread, nk_error *err)
{
	int cpu, rc, e;

	if (!p)
		return nk__error(err, NK_EINVAL, "nk_thread_pin: NULL placement");
	if (thread < 0)
		return nk__error(err, NK_EINVAL, "nk_thread_pin: thread %d (expected >= 0)", thread);
	/* a larger team than the placement wraps, as the placement itself does past its cpus */
	cpu = p->cpu[thread % p->n];
	rc = nk__os_set_affinity(0, &cpu, 1, &e);
	if (!rc)
		return 0;
	switch (e) {
	case ENOSYS:
		return nk__error(err, NK_ENOSYS, "thread %d: sched_setaffinity is not available", thread);
	case ENOMEM:
		return nk__error(err, NK_ENOMEM, "thread %d: out of memory", thread);
	case EINVAL:
		/* the mask holds no cpu the thread may use: the cpuset changed since the placement was built */
		return nk__error(err, NK_EPERM, "thread %d: cpu %d is not allowed to this thread now (cpuset changed?)",
				 thread, cpu);
	default:
		return nk__error(err, NK_EPERM, "thread %d: the kernel refused cpu %d: %s", thread, cpu,
				 strerror(e));
	}
}

int nk_thread_where(const nk_machine *m, int *cpu, int *node)
{
	int c = -1, n = -1, rc, ci;

	rc = nk__os_getcpu(&c, &n, NULL);
	if (rc)
		return NK_ENOSYS; /* getcpu fails only where it does not exist */
	if (m) {
		ci = nk__cpu_idx(m, c);
		if (ci < 0)
			return NK_ENODEV;
		n = m->cpus[ci].node;
	}
	if (cpu)
		*cpu = c;
	if (node)
		*node = n;
	return 0;
}
