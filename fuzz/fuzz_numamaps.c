/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the numa_maps parser (text of /proc/PID/numa_maps or a saved copy
 * given to `numakit maps --file`).  Besides "never crash", it checks what a
 * parsed map promises: per-mapping pages are the sum of the node counts,
 * nodes are increasing and distinct, totals agree with the entries, and
 * the JSON form is valid JSON.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nk_numamaps *nm = NULL;
	nk_error err;
	char *json = NULL;

	if (nk_numamaps_parse((const char *)data, size, &nm, &err)) {
		if (nm || !err.message[0] || strlen(err.message) >= sizeof err.message)
			abort();
		return 0;
	}
	size_t n = nk_numamaps_count(nm);
	for (size_t i = 0; i < n; i++) {
		nk_maps_entry e;
		uint64_t sum = 0;

		if (nk_numamaps_entry(nm, i, &e) || !e.policy || !*e.policy || !e.path)
			abort();
		for (size_t k = 0; k < e.nnodes; k++) {
			if (k && e.nodes[k] <= e.nodes[k - 1])
				abort();
			sum += e.node_pages[k];
		}
		if (sum != e.pages || (e.nnodes && !e.page_size))
			abort();
	}
	int nt = nk_numamaps_totals(nm, NULL, NULL, 0);
	if (nt < 0)
		abort();
	if (nk_numamaps_to_json(nm, 1, NK_JSON_COMPACT, &json) == 0) {
		json_t *root = json_loads(json, 0, NULL);
		if (!root || json_array_size(json_object_get(root, "mappings")) != n)
			abort();
		json_decref(root);
		free(json);
	}
	nk_numamaps_free(nm);
	return 0;
}
