/* SPDX-License-Identifier: BSD-3-Clause */
/* A program outside numakit's tree that uses the heaps (numakit/heap.h, experimental): it includes the
 * header itself (<numakit.h> does not) and links libnumakit_heap (tests/consumer/check.sh builds it with
 * `pkg-config numakit-heap` and with CMake's numakit::heap / numakit::heap_static, when the install has
 * the heap library).  One heap bound to the first node: objects allocated, written, resized, freed. */
#define NUMAKIT_EXPERIMENTAL
#include <numakit.h>
#include <numakit/heap.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	nk_error err = { 0, "" };
	nk_machine *m = NULL;
	nk_policy *p = NULL;
	nk_heap *h = NULL;
	void *obj = NULL, *big = NULL;
	size_t n = 0;

	if (nk_machine_load_live(&m, &err) || nk_policy_parse("bind", &p, &err) || nk_heap_create(m, p, 0, &h, &err)) {
		fprintf(stderr, "heap consumer: %s\n", err.message);
		return 1;
	}
	nk_policy_free(p);
	int bad = nk_heap_alloc(h, 100, &obj) != 0 || nk_heap_owns(h, obj) != 1 || nk_heap_from(obj) != h;
	if (!bad) {
		memset(obj, 0x5a, 100);
		bad = nk_heap_realloc(h, obj, 1 << 20, &big) != 0 || ((unsigned char *)big)[99] != 0x5a ||
		      nk_heap_usable_size(h, big, &n) != 0 || n < (1 << 20) || nk_heap_free(h, big) != 0;
	}
	nk_heap_destroy(h);
	nk_machine_free(m);
	printf("numakit %s: heap consumer %s\n", nk_version(), bad ? "FAILED" : "OK");
	return bad;
}
