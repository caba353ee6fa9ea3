# SPDX-License-Identifier: BSD-3-Clause
# Trace sampler (preload/prof/trace.c) and `numakit cc`: included by
# tests/prof/CMakeLists.txt.  trace_prog is built by `numakit cc clang` (the
# command under test) and run with NK_PROF_SAMPLER=trace; trace_check.py
# compares its part file with the accesses the program makes by
# construction.  trace_unit compiles trace.c with test doubles of the runtime
# and calls the callbacks directly.  trace_cc.sh checks the command itself.
find_program(NK_CLANG NAMES clang clang-14)
if(NOT NK_CLANG)
  message(STATUS "numakit: no clang: the trace sampler tests are not built")
  return()
endif()

set(_trace_prog ${CMAKE_CURRENT_BINARY_DIR}/trace_prog)
add_custom_command(OUTPUT ${_trace_prog}
  COMMAND $<TARGET_FILE:numakit_cli> cc ${NK_CLANG} -O0 -pthread
          ${CMAKE_CURRENT_SOURCE_DIR}/trace_prog.c -o ${_trace_prog}
  DEPENDS trace_prog.c numakit_cli numakit_prof
  COMMENT "Building trace_prog with numakit cc"
  VERBATIM)
add_custom_target(trace_prog_build ALL DEPENDS ${_trace_prog})

foreach(m IN ITEMS exact rate7 roi off fork)
  add_test(NAME unit.prof.trace.${m}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/trace_check.py ${_trace_prog}
      $<TARGET_FILE:numakit_prof> ${m})
  set_tests_properties(unit.prof.trace.${m} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

add_test(NAME unit.prof.trace.cc
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/trace_cc.sh $<TARGET_FILE:numakit_cli> ${NK_CLANG}
    $<TARGET_FILE_DIR:numakit_prof>)
set_tests_properties(unit.prof.trace.cc PROPERTIES LABELS unit TIMEOUT 60)

add_executable(trace_unit trace_unit.c $<TARGET_OBJECTS:numakit_prof_trace_obj>) # the runtime's trace.c objects
target_compile_definitions(trace_unit PRIVATE _GNU_SOURCE NK_BUILDING_LIBRARY NK_PROF_RUNTIME)
target_include_directories(trace_unit PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/preload/prof)
target_link_libraries(trace_unit PRIVATE PkgConfig::CMOCKA PkgConfig::JANSSON Threads::Threads)
add_test(NAME unit.prof.trace.unit COMMAND trace_unit)
set_tests_properties(unit.prof.trace.unit PROPERTIES LABELS unit TIMEOUT 60)
