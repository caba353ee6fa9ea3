/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the placement-plan reader (nk_advice_parse, src/advise/advice_read.c).
 *
 * A plan must be rejected with a code and a message, leaving the output
 * untouched, or accepted; an accepted plan must format, and what it formats
 * to must parse back and format to the same text (the round trip
 * docs/plan.md promises).  It is then checked against a small synthetic
 * machine (any NK_E* answer is fine, a crash is not) and edited with
 * nk_advice_set, after which it must still format.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static nk_machine *machine;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nk_advice *a = (nk_advice *)&a, *b = NULL;
	nk_error err = { 0, "" };
	char *t1 = NULL, *t2 = NULL;

	if (!machine && nk_machine_load_synthetic("nodes=4 ids=0,1,2,5 memless=3 cores=2", &machine, NULL))
		abort();
	/* an exact-size copy, so that any read past the end is caught */
	char *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	int rc = nk_advice_parse(copy, size, &a, &err);
	free(copy);
	if (rc) {
		if ((rc != NK_EPARSE && rc != NK_EVERSION && rc != NK_ENOMEM) || err.code != rc || !err.message[0] ||
		    a != (nk_advice *)&a)
			abort();
		return 0;
	}
	if (nk_advice_format(a, &t1, &err))
		abort();
	if (nk_advice_parse(t1, strlen(t1), &b, &err) || nk_advice_format(b, &t2, &err) || strcmp(t1, t2))
		abort();
	if (nk_advice_num_entries(a) != nk_advice_num_entries(b))
		abort();
	rc = nk_advice_check(a, machine, &err);
	if (rc && (rc != NK_ENODEV && rc != NK_EINVAL && rc != NK_EPERM && rc != NK_ENOMEM))
		abort();
	if (rc && (err.code != rc || !err.message[0]))
		abort();
	free(t1);
	t1 = NULL;
	if (nk_advice_set(a, NULL, "name:fuzz", "cyclic", &err) || nk_advice_format(a, &t1, &err))
		abort();
	free(t1);
	free(t2);
	nk_advice_free(a);
	nk_advice_free(b);
	return 0;
}
