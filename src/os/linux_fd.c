/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: writing to a descriptor the caller holds (the profile
 * writer of src/profile/nkp_write.c, which the profiler runtime runs inside
 * fatal-signal handlers).  Part of numakit_rtsupport: async-signal-safe,
 * write(2) and nothing else.
 */
#include "os/os.h"

#include <errno.h>
#include <unistd.h>

int nk__os_write_all(int fd, const void *buf, size_t len, int *sys_errno)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return (int)nk__os_ret(nk__os_file_code(errno), errno, sys_errno);
		}
		if (n == 0) /* no progress and no error: a full device that will not say so */
			return (int)nk__os_ret(NK_EIO, EIO, sys_errno);
		p += n;
		len -= (size_t)n;
	}
	return nk__os_ok(0, sys_errno);
}
