/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz synthetic descriptions.  A description that loads must serialise,
 * reload from its machine file and serialise to the same text (but for the
 * source); one that fails must say why with an NK_EPARSE message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Compact texts agree from "page_size" on: only "source" may differ. */
static const char *after_source(const char *json)
{
	const char *p = strstr(json, "\"page_size\"");
	if (!p)
		abort();
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nk_machine *m = NULL, *m2 = NULL;
	nk_error err = { 0 };
	char *desc = malloc(size + 1), *j1 = NULL, *j2 = NULL;
	int rc;

	if (!desc)
		return 0;
	memcpy(desc, data, size);
	desc[size] = '\0';
	rc = nk_machine_load_synthetic(desc, &m, &err);
	if (rc) {
		if (m || err.code != rc || (rc == NK_EPARSE && strncmp(err.message, "synthetic: ", 11)))
			abort();
		goto out;
	}
	/* Serialising a 4096-node matrix takes seconds: keep the round trip to
	 * machines small enough for many executions per second. */
	if (nk_machine_num_nodes(m) > 64 || nk_machine_num_cpus(m) > 4096)
		goto out;
	if (nk_machine_to_json(m, NK_JSON_COMPACT, &j1))
		goto out;
	if (nk_machine_load_buffer(j1, strlen(j1), &m2, &err))
		abort(); /* everything we write, we read */
	if (nk_machine_to_json(m2, NK_JSON_COMPACT, &j2))
		goto out;
	if (strcmp(after_source(j1), after_source(j2)))
		abort();
out:
	free(j1);
	free(j2);
	nk_machine_free(m);
	nk_machine_free(m2);
	free(desc);
	return 0;
}
