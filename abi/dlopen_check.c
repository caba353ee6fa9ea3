/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dlopen_check LIB [--expect-static-tls-failure]: loads LIB with dlopen(RTLD_NOW | RTLD_LOCAL), as Python's
 * ctypes.CDLL, a plugin host or another language's FFI does after the program has started, and calls its
 * nk_version() when it has one.  Exit 0 when it loads, 1 (with dlerror()) when it does not.  With
 * --expect-static-tls-failure the other way round: exit 0 only when dlopen fails because the library's
 * initial-exec TLS does not fit in the static TLS glibc keeps spare ("cannot allocate memory in static TLS
 * block"), which shows that the check sees the failure it guards against (abi/CMakeLists.txt: the ctests
 * abi.dlopen.*; docs/heap.md).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || (argc == 3 && strcmp(argv[2], "--expect-static-tls-failure")) || argc > 3) {
		fprintf(stderr, "usage: dlopen_check LIB [--expect-static-tls-failure]\n");
		return 2;
	}
	int expect_failure = argc == 3;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		if (expect_failure && e && strstr(e, "static TLS")) {
			printf("dlopen_check: %s does not load, as expected: %s\n", argv[1], e);
			return 0;
		}
		fprintf(stderr, "dlopen_check: dlopen(%s): %s\n", argv[1], e ? e : "?");
		return 1;
	}
	const char *(*version)(void) = (const char *(*)(void))dlsym(h, "nk_version");
	printf("dlopen_check: %s loads%s%s\n", argv[1], version ? ": numakit " : "", version ? version() : "");
	if (expect_failure) {
		fprintf(stderr, "dlopen_check: %s loaded, but a static TLS failure was expected\n", argv[1]);
		return 1;
	}
	return 0;
}
