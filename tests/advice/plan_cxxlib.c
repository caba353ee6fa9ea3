/* SPDX-License-Identifier: BSD-3-Clause
 * A C program (libstdc++ is no dependency of its own) that calls a C++ library, run under the plan runtime
 * (unit.plan.runtime.cxxlib): the library's operator new must be libstdc++'s, over glibc's malloc, not
 * jemalloc's, which the runtime loads for sites of small blocks and which exports operator new too (the
 * numakit command, through libclang, died in glibc's free on a jemalloc block).  Checks: a block from the
 * library's new is counted by glibc's mallinfo2 and has glibc's usable size; a std::string round trip.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

void *cxxlib_new(size_t n);
void cxxlib_delete(void *p);
size_t cxxlib_string(size_t n);

int main(void)
{
	struct mallinfo2 before = mallinfo2();
	void *p = cxxlib_new(100000);
	struct mallinfo2 after = mallinfo2();
	if (!p)
		return 1;
	memset(p, 1, 100000);
	size_t glibc = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
	int ok = glibc >= 100000 && malloc_usable_size(p) >= 100000;
	cxxlib_delete(p);
	if (cxxlib_string(5000) != 5001)
		ok = 0;
	printf("new: %zu bytes counted by glibc; %s\n", glibc, ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
