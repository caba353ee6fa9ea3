/* SPDX-License-Identifier: BSD-3-Clause
 * A fuzz target that crashes on purpose, for the ctest fuzz-replay.self-test (fuzz/CMakeLists.txt): an
 * input beginning "crash" aborts, anything else passes.  The test replays a corpus holding one such input
 * and passes only if the replay driver fails and names that input last, which shows that a crashing
 * input in a real corpus fails the suite.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 5 && memcmp(data, "crash", 5) == 0)
		abort();
	return 0;
}
