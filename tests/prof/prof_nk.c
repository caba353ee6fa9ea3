/* SPDX-License-Identifier: BSD-3-Clause */
/* A program linked with libnumakit that uses the nk_profile_* hooks (run by check_runtime.py). */
#include <stdio.h>
#include <stdlib.h>

#include "numakit.h"

int main(void)
{
	static char buf[1 << 16];
	int active = nk_profile_active();
	if (nk_profile_phase("init") || nk_profile_name(buf, sizeof buf, "my buffer") || nk_profile_stop() ||
	    nk_profile_start() || nk_profile_phase("compute") || nk_profile_phase("init"))
		return 2;
	if (nk_profile_phase("") != NK_EINVAL)
		return 3;
	/* A NUMA array: reported to the profiler as "nk_array#1" (kind NUMAKIT), then freed. */
	nk_machine *m = NULL;
	nk_array *a = NULL;
	size_t dims[1] = { 1u << 18 };
	if (nk_machine_load_live(&m, NULL) || nk_array_alloc(m, 8, 1, dims, 0, &a))
		return 4;
	unsigned long data = (unsigned long)(size_t)nk_array_data(a);
	nk_array_free(a);
	nk_machine_free(m);
	printf("%d %lu %lu\n", active, (unsigned long)(size_t)buf, data);
	return 0;
}
