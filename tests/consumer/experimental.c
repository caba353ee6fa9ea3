/* SPDX-License-Identifier: BSD-3-Clause */
/* A program outside numakit's tree that calls experimental functions (tests/consumer/check.sh).  Built
 * twice on purpose: without NUMAKIT_EXPERIMENTAL it must not compile (the functions are undeclared), with
 * it (-DNUMAKIT_EXPERIMENTAL, as check.sh and CMakeLists.txt pass it) it compiles, links and runs.  It
 * uses no experimental type and only functions that return int, so that without the macro the only
 * errors are the undeclared functions (an implicit declaration returns int: nothing else to convert). */
#include <numakit.h>
#include <stdio.h>

int main(void)
{
	/* not run under `numakit profile`: the hooks do nothing and say so */
	int active = nk_profile_active();
	int phase = nk_profile_phase("consumer");
	int started = nk_profile_start();
	printf("numakit %s: profiled %d, phase %d, start %d\n", nk_version(), active, phase, started);
	return active == 0 && phase == 0 && started == 0 ? 0 : 1;
}
