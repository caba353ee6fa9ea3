/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the machine-file reader.  Corrupt input must be rejected with a
 * message; accepted input must serialise to a file that reloads to the same
 * text (the writer and reader agree on everything the reader accepts).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nk_machine *m = NULL, *m2 = NULL;
	nk_error err = { 0 };
	char *j1 = NULL, *j2 = NULL;
	int rc;

	rc = nk_machine_load_buffer((const char *)data, size, &m, &err);
	if (rc) {
		if (m || err.code != rc || strncmp(err.message, "<buffer>", 8))
			abort();
		return 0;
	}
	if (nk_machine_to_json(m, NK_JSON_COMPACT, &j1))
		goto out;
	if (nk_machine_load_buffer(j1, strlen(j1), &m2, &err))
		abort();
	if (nk_machine_to_json(m2, NK_JSON_COMPACT, &j2))
		goto out;
	if (strcmp(j1, j2))
		abort();
out:
	free(j1);
	free(j2);
	nk_machine_free(m);
	nk_machine_free(m2);
	return 0;
}
