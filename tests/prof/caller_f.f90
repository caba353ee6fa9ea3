! SPDX-License-Identifier: BSD-3-Clause
! First touches inside the Fortran runtime and libc (issue 16): caller_check.py fortran.
program caller_f
  implicit none
  integer :: n
  real(8), allocatable :: a(:), b(:)
  n = 4 * 1024 * 1024
  allocate(a(n)) ! alloc:random_number
  call random_number(a) ! touch:random_number
  allocate(b(n)) ! alloc:copy
  b(:) = a(:) ! touch:copy
  print *, sum(a(1:n:512)) + sum(b(1:n:512))
end program
