! SPDX-License-Identifier: BSD-3-Clause
! Fortran use of the numakit module (ctest unit.fortran_schedule): the schedules called through
! ISO_C_BINDING from inside OpenMP parallel regions.  Every thread records the iterations it is
! given; the union over the team must be the loop exactly once.  Exact small cases and errors too.
program fortran_schedule
  use, intrinsic :: iso_c_binding
  use numakit
  !$ use omp_lib
  implicit none
  integer :: fails, t, p, view, phase, n, rc, k
  type(nk_range) :: r, rr(2)
  integer :: lb(2), ub(2)

  fails = 0
  !$ call omp_set_dynamic(.false.)

  ! exact cases (0-based half-open, as in C)
  rc = nk_sched_static(0_c_long, 10_c_long, 1_c_int, 3_c_int, r)
  call check(rc == 0 .and. r%begin == 4 .and. r%end == 7, 'static [0,10) thread 1 of 3 = [4,7)')
  rc = nk_sched_static_inverse(0_c_long, 10_c_long, 0_c_int, 3_c_int, r)
  call check(rc == 0 .and. r%begin == 7 .and. r%end == 10, 'static_inverse thread 0 of 3 = [7,10)')
  rc = nk_sched_static(0_c_long, 10_c_long, 3_c_int, 3_c_int, r)
  call check(rc == NK_EINVAL, 'static tid out of range -> NK_EINVAL')
  ! Majo & Gross Fig. 11 (c): 8 threads, 2 nodes, phase 1: thread 0 processes row 4 (Q4)
  rc = nk_sched_block_exclusive(8_c_long, 8_c_long, 2_c_int, NK_VIEW_ROWS, 1_c_int, 0_c_long, 8_c_long, &
       0_c_int, 8_c_int, rr, 2_c_size_t)
  call check(rc == 1 .and. rr(1)%begin == 4 .and. rr(1)%end == 5, 'block_exclusive fig. 11(c)')
  ! 2 threads, 4 nodes, phase 3: thread 1 serves bands 3 and 0 -> two ranges
  rc = nk_sched_block_exclusive(8_c_long, 4_c_long, 4_c_int, NK_VIEW_ROWS, 3_c_int, 0_c_long, 8_c_long, &
       1_c_int, 2_c_int, rr, 2_c_size_t)
  call check(rc == 2 .and. rr(1)%begin == 0 .and. rr(1)%end == 2 .and. rr(2)%begin == 6 .and. rr(2)%end == 8, &
       'block_exclusive wrap: two ranges')
  rc = nk_sched_block_exclusive(8_c_long, 8_c_long, 2_c_int, NK_VIEW_ROWS, 2_c_int, 0_c_long, 8_c_long, &
       0_c_int, 2_c_int, rr, 2_c_size_t)
  call check(rc == NK_EINVAL, 'block_exclusive phase out of range -> NK_EINVAL')
  ! the 1-based wrappers
  rc = nk_static_bounds(1, 10, 0, 3, lb(1), ub(1))
  call check(rc == 0 .and. lb(1) == 1 .and. ub(1) == 4, 'nk_static_bounds 1..10 thread 0 of 3 = 1..4')
  rc = nk_static_inverse_bounds(1, 10, 0, 3, lb(1), ub(1))
  call check(rc == 0 .and. lb(1) == 8 .and. ub(1) == 10, 'nk_static_inverse_bounds thread 0 of 3 = 8..10')
  k = nk_block_exclusive_bounds(8, 4, 4, NK_VIEW_ROWS, 3, 1, 8, 1, 2, lb, ub)
  call check(k == 2 .and. lb(1) == 1 .and. ub(1) == 2 .and. lb(2) == 7 .and. ub(2) == 8, &
       'nk_block_exclusive_bounds wrap, 1-based')

  ! partitions inside OpenMP parallel regions
  do t = 1, 7
     call static_team(t, 1, 1000, .false.)
     call static_team(t, -5, 37, .true.)
     call static_team(t, 3, 2, .false.)          ! empty loop
  end do
  do p = 1, 4
     do t = 1, 2 * p + 1
        do view = NK_VIEW_ROWS, NK_VIEW_COLS
           do phase = 0, p - 1
              do n = p, p + 6
                 call be_team(t, p, view, phase, n)
              end do
           end do
        end do
     end do
  end do

  if (fails > 0) then
     print '(a,i0,a)', 'fortran_schedule: ', fails, ' failure(s)'
     stop 1
  end if
  print '(a)', 'fortran_schedule: all checks passed'

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
       fails = fails + 1
       print '(2a)', 'FAIL: ', what
    end if
  end subroutine check

  subroutine static_team(nt, lo, hi, inverse)
    integer, intent(in) :: nt, lo, hi
    logical, intent(in) :: inverse
    integer :: hits(lo:max(lo, hi)), i, l, u, me, team, bad
    hits = 0
    bad = 0
    !$omp parallel num_threads(nt) private(i, l, u, me, team, rc) reduction(+:bad)
    me = 0
    team = 1
    !$ me = omp_get_thread_num()
    !$ team = omp_get_num_threads()
    if (inverse) then
       rc = nk_static_inverse_bounds(lo, hi, me, team, l, u)
    else
       rc = nk_static_bounds(lo, hi, me, team, l, u)
    end if
    if (rc /= 0) bad = bad + 1
    do i = l, u
       !$omp atomic
       hits(i) = hits(i) + 1
    end do
    !$omp end parallel
    call check(bad == 0, 'static: a thread got an error')
    if (hi >= lo) call check(all(hits(lo:hi) == 1), 'static: the team does not cover the loop exactly once')
  end subroutine static_team

  subroutine be_team(nt, np, vw, ph, nn)
    integer, intent(in) :: nt, np, vw, ph, nn
    integer :: hits(nn), i, j, m, me, team, bad, l(2), u(2), rows, cols
    ! the loop dimension has nn iterations; the other one np + 1
    if (vw == NK_VIEW_ROWS) then
       rows = nn
       cols = np + 1
    else
       rows = np + 1
       cols = nn
    end if
    hits = 0
    bad = 0
    !$omp parallel num_threads(nt) private(i, j, m, me, team, l, u) reduction(+:bad)
    me = 0
    team = 1
    !$ me = omp_get_thread_num()
    !$ team = omp_get_num_threads()
    m = nk_block_exclusive_bounds(rows, cols, np, vw, ph, 1, nn, me, team, l, u)
    if (m < 0) bad = bad + 1
    do j = 1, m
       do i = l(j), u(j)
          !$omp atomic
          hits(i) = hits(i) + 1
       end do
    end do
    !$omp end parallel
    call check(bad == 0, 'block_exclusive: a thread got an error')
    call check(all(hits == 1), 'block_exclusive: the team does not cover the loop exactly once')
  end subroutine be_team
end program fortran_schedule
