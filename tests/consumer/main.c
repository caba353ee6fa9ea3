/* SPDX-License-Identifier: BSD-3-Clause */
/* A program outside numakit's tree, built against an installed copy (tests/consumer/check.sh). */
#include <numakit.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	nk_machine *m = NULL;
	nk_error err;
	if (nk_machine_load_synthetic("nodes=2 cores=2 dist=10:21", &m, &err) != NK_OK) {
		fprintf(stderr, "nk_machine_load_synthetic: %s\n", err.message);
		return 1;
	}
	int n = nk_machine_num_nodes(m);
	int d = nk_machine_distance(m, 0, 1);
	printf("numakit %s: %d nodes, distance(0,1) = %d\n", nk_version(), n, d);
	nk_machine_free(m);
	if (strcmp(nk_version(), EXPECTED_VERSION) != 0) {
		fprintf(stderr, "library version %s, expected %s\n", nk_version(), EXPECTED_VERSION);
		return 1;
	}
	return n == 2 && d == 21 ? 0 : 1;
}
