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
	printf("%d %lu\n", active, (unsigned long)(size_t)buf);
	return 0;
}
