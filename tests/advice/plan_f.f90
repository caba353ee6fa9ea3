! SPDX-License-Identifier: BSD-3-Clause
! The Fortran case of the plan runtime tests (check_plan.py fortran): a
! module array (a static, __data_MOD_grid in .symtab and in the key) and an
! allocatable (ALLOCATE calls malloc from the program).  Prints its sum.
module data
  implicit none
  real(8) :: grid(1048576)
end module data

program plan_f
  use data
  implicit none
  real(8), allocatable :: h(:)
  integer :: i
  real(8) :: s
  allocate(h(524288))
  do i = 1, size(grid)
    grid(i) = mod(i, 7)
  end do
  do i = 1, size(h)
    h(i) = mod(i, 5)
  end do
  s = 0
  do i = 1, size(h)
    s = s + h(i) + grid(i)
  end do
  print '(a,f14.1)', 'sum ', s
  deallocate(h)
end program plan_f
