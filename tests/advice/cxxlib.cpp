// SPDX-License-Identifier: BSD-3-Clause
// A C++ library for plan_cxxlib.c (tests/advice/CMakeLists.txt): operator new and std::string from a library
// loaded by a C program, whose own dependencies do not include libstdc++.
#include <cstddef>
#include <new>
#include <string>

extern "C" void *cxxlib_new(std::size_t n)
{
	return ::operator new(n);
}

extern "C" void cxxlib_delete(void *p)
{
	::operator delete(p);
}

extern "C" std::size_t cxxlib_string(std::size_t n)
{
	std::string s(n, 'x');
	s += "y";
	return s.size();
}
