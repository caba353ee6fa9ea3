/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for profiling by allocation site (issue 19; tests/vm/tests/profile_sites): a C++
 * std::vector<std::vector<double>> of rows of 512 doubles (4 KiB each: every row its own operator new),
 * built and filled by the master (TRUTH:vv-alloc is the line constructing the rows), then read by every
 * thread in a parallel loop over rows (TRUTH:vv-sweep).  A hot-spot of the rows' site, 3/4 remote with 4
 * threads on 4 nodes.
 */
#include <omp.h>

#include <cstdlib>
#include <vector>

extern "C" {
#include "prof_common.h"
}

int main(int argc, char **argv)
{
	const size_t cols = 512;
	size_t rows = prof_mib(argc, argv, 16) * (1u << 20) / (cols * sizeof(double));
	double sum = 0;
#pragma omp parallel
	{
		(void)0;
	}
	std::vector<std::vector<double>> m;
	m.reserve(rows);
	for (size_t r = 0; r < rows; r++)
		m.emplace_back(cols, (double)r); /* TRUTH:vv-alloc */
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < cols; c++)
				sum += m[r][c] * 0.5; /* TRUTH:vv-sweep */
	}
	prof_sink = sum;
	return 0;
}
