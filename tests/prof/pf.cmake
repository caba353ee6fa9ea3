# SPDX-License-Identifier: BSD-3-Clause
# Pagefault sampler (preload/prof/pagefault.c, io.c): included by
# tests/prof/CMakeLists.txt.  pf_prog scenarios run under the runtime at a
# high rate, checked by pf_check.py; pf_unit links the sampler's objects with test
# doubles of the runtime (revoked-page table, fault path, I/O holds, forgets,
# the sampler thread).
add_executable(pf_prog pf_prog.c)
target_compile_options(pf_prog PRIVATE -O1 -g)
target_compile_definitions(pf_prog PRIVATE _GNU_SOURCE)
target_link_libraries(pf_prog PRIVATE Threads::Threads)
foreach(s IN ITEMS io write threads fork altstack churn segv spawn masked ranges)
  add_test(NAME unit.prof.pf.${s}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/pf_check.py ${s}
      --lib $<TARGET_FILE:numakit_prof> --prog $<TARGET_FILE:pf_prog>)
  set_tests_properties(unit.prof.pf.${s} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# pf_unit.c tests the sampler's internals (the revoked-page table, the fault path; pagefault_impl.h) with test
# doubles of the rest of the runtime, linking the sampler's objects as the runtime does (compiled once).  The
# fault helpers come from the shared archive.
add_executable(pf_unit pf_unit.c $<TARGET_OBJECTS:numakit_prof_pf_obj>)
target_compile_definitions(pf_unit PRIVATE _GNU_SOURCE NK_BUILDING_LIBRARY NK_PROF_RUNTIME)
target_include_directories(pf_unit PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/preload/prof)
target_link_libraries(pf_unit PRIVATE numakit_rtsupport Threads::Threads ${CMAKE_DL_LIBS} m)
add_test(NAME unit.prof.pf.unit COMMAND pf_unit)
set_tests_properties(unit.prof.pf.unit PROPERTIES LABELS unit TIMEOUT 60)

# pf_self_unit.c tests the arithmetic of the correction for the profiler's own time (preload/prof/pf_self.h).
add_executable(pf_self_unit pf_self_unit.c)
target_include_directories(pf_self_unit PRIVATE ${PROJECT_SOURCE_DIR}/preload/prof)
target_link_libraries(pf_self_unit PRIVATE m)
add_test(NAME unit.prof.pf.self COMMAND pf_self_unit)
set_tests_properties(unit.prof.pf.self PROPERTIES LABELS unit TIMEOUT 60)

# First touches made inside a library name the program's own line (issue 16; preload/prof/callers.c, the
# analysis's nk__an_ft_caller): caller_prog.c calls memset and memcpy through the PLT, as a benchmark does;
# -O2 with the size read through a volatile, so that they are calls, not inline stores.
add_executable(caller_prog caller_prog.c)
target_compile_options(caller_prog PRIVATE -O2 -g)
target_link_libraries(caller_prog PRIVATE Threads::Threads)
foreach(s IN ITEMS part report)
  add_test(NAME unit.prof.caller.${s}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/caller_check.py ${s} --nk $<TARGET_FILE:numakit_cli>
      --lib $<TARGET_FILE:numakit_prof> --prog $<TARGET_FILE:caller_prog> --src ${CMAKE_CURRENT_SOURCE_DIR}/caller_prog.c)
  set_tests_properties(unit.prof.caller.${s} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()
# The same for Fortran: random_number inside libgfortran, an array copy gfortran turns into memcpy.
include(CheckLanguage)
check_language(Fortran)
if(CMAKE_Fortran_COMPILER)
  enable_language(Fortran)
  add_executable(caller_f caller_f.f90)
  set_property(TARGET caller_f PROPERTY COMPILE_OPTIONS -O2 -g)
  add_test(NAME unit.prof.caller.fortran
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/caller_check.py fortran --nk $<TARGET_FILE:numakit_cli>
      --lib $<TARGET_FILE:numakit_prof> --prog $<TARGET_FILE:caller_f> --src ${CMAKE_CURRENT_SOURCE_DIR}/caller_f.f90)
  set_tests_properties(unit.prof.caller.fortran PROPERTIES LABELS unit TIMEOUT 120)
endif()
