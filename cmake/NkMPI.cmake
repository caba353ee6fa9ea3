# SPDX-License-Identifier: BSD-3-Clause
# nk_find_mpis(<out>): the MPIs whose C compile and link flags pkg-config knows (Debian: libopenmpi-dev's
# ompi-c, mpich's mpich), as names in <out> (openmpi, mpich), each the imported target PkgConfig::NK_MPI_<name>
# (GLOBAL: one lookup serves every folder).  numakit links none of them: preload/mpi/ takes their headers
# (the PMPI wrappers, one per MPI since their handles differ) and the tests build programs with each
# (tests/prof/mpi_traffic.c, tests/guest/mpi_halo.c), since a program runs only under its own MPI's launcher.
function(nk_find_mpis out)
  set(found "")
  foreach(impl openmpi mpich)
    if(impl STREQUAL "openmpi")
      set(module ompi-c)
    else()
      set(module mpich)
    endif()
    if(NOT TARGET PkgConfig::NK_MPI_${impl})
      pkg_check_modules(NK_MPI_${impl} QUIET IMPORTED_TARGET GLOBAL ${module})
    endif()
    if(TARGET PkgConfig::NK_MPI_${impl})
      list(APPEND found ${impl})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
