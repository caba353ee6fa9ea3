// SPDX-License-Identifier: BSD-3-Clause
// numakit.h from C++ (ctest unit.cxx_header): the header compiles as C++11 with -pedantic -Werror,
// and the schedules, through the nk_omp_* conveniences and directly, partition loops inside an
// OpenMP parallel region.  Built with or without OpenMP (without: a team of one).
#include "numakit.h"
#if defined(_OPENMP)
#include "numakit/omp.h" // the nk_omp_* conveniences: their own header, included by hand
#endif

#include <cstdio>
#include <vector>

static int fails;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fails++;
		std::printf("FAIL: %s\n", what);
	}
}

// Every iteration of [b, e) handed out exactly once by the team.
static void check_hits(const std::vector<int> &hits, long b, long e, const char *what)
{
	for (long i = 0; i < (long)hits.size(); i++)
		check(hits[(size_t)i] == (i >= b && i < e ? 1 : 0), what);
}

int main()
{
	const long n = 1001;
	for (int T = 1; T <= 9; T++) {
		std::vector<int> st((size_t)n, 0), inv((size_t)n, 0), be((size_t)n, 0);
		int bad = 0;
#if defined(_OPENMP)
#pragma omp parallel num_threads(T) reduction(+ : bad)
#endif
		{
			nk_range r;
			int tid = 0, team = 1;
#if defined(_OPENMP)
			tid = omp_get_thread_num();
			team = omp_get_num_threads();
			bad += nk_omp_static(0, n, &r) != 0;
#else
			bad += nk_sched_static(0, n, tid, team, &r) != 0;
#endif
			for (long i = r.begin; i < r.end; i++) {
#if defined(_OPENMP)
#pragma omp atomic
#endif
				st[(size_t)i]++;
			}
#if defined(_OPENMP)
			bad += nk_omp_static_inverse(0, n, &r) != 0;
#else
			bad += nk_sched_static_inverse(0, n, tid, team, &r) != 0;
#endif
			for (long i = r.begin; i < r.end; i++) {
#if defined(_OPENMP)
#pragma omp atomic
#endif
				inv[(size_t)i]++;
			}
			nk_range rr[NK_SCHED_BE_MAX_RANGES];
			int c = nk_sched_block_exclusive(n, 40, 4, NK_VIEW_ROWS, 3, 1, n - 1, tid, team, rr,
							 NK_SCHED_BE_MAX_RANGES);
			bad += c < 0;
			for (int k = 0; k < c; k++)
				for (long i = rr[k].begin; i < rr[k].end; i++) {
#if defined(_OPENMP)
#pragma omp atomic
#endif
					be[(size_t)i]++;
				}
		}
		check(bad == 0, "a schedule call failed");
		check_hits(st, 0, n, "nk_omp_static: not a partition");
		check_hits(inv, 0, n, "nk_omp_static_inverse: not a partition");
		check_hits(be, 1, n - 1, "nk_sched_block_exclusive: not a partition");
	}
	nk_range r;
	check(nk_sched_static(0, 10, 3, 3, &r) == NK_EINVAL, "tid out of range is NK_EINVAL");
	check(nk_sched_static_inverse(0, 10, 0, 3, &r) == 0 && r.begin == 7 && r.end == 10, "static_inverse [7,10)");
	std::printf("cxx_header: %s (%s)\n", fails ? "FAIL" : "all checks passed",
#if defined(_OPENMP)
		    "OpenMP"
#else
		    "no OpenMP"
#endif
	);
	return fails ? 1 : 0;
}
