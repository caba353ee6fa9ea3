// SPDX-License-Identifier: BSD-3-Clause
// The C++ case of the plan runtime tests (check_plan.py cxx): a namespaced
// static (its .symtab name is mangled, the report's key demangled) and a
// std::vector (allocated through operator new in libstdc++: the key's first
// frame is libstdc++'s).  Prints what it computed.
#include <cstdio>
#include <vector>

namespace ns {
double grid[1 << 20];
}

int main()
{
	std::vector<double> v(1 << 19);
	for (size_t i = 0; i < (1u << 20); i++)
		ns::grid[i] = (double)(i % 7);
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (double)(i % 5);
	double s = 0;
	for (size_t i = 0; i < (1u << 20); i++)
		s += ns::grid[i] + v[i / 2];
	std::printf("sum %.1f\n", s);
	return 0;
}
