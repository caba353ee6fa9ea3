! SPDX-License-Identifier: BSD-3-Clause
! numakit — Fortran interface (module numakit) to the thread placement and
! loop schedule part of libnumakit, through ISO_C_BINDING.
!
! The interfaces bind the C functions of include/numakit.h (numakit/threads.h:
! all stable API, no NUMAKIT_EXPERIMENTAL needed) one to one (same names, same
! arguments, same return codes: 0 or a count on success, a negative NK_E* code
! on failure).  Opaque handles (nk_machine, nk_placement,
! nk_owner_sched, nk_array) are type(c_ptr); pass c_null_ptr for an optional
! nk_error.  Strings passed to C end with c_null_char:
!     rc = nk_placement_build(m, "scatter"//c_null_char, nthreads, pl, c_null_ptr)
!
! Iteration numbers are the C ones: a loop range is [begin, end), 0-based.
! The wrappers nk_static_bounds / nk_static_inverse_bounds /
! nk_block_exclusive_bounds take and return Fortran-style inclusive bounds
! (lo..hi, any base) instead.  Fortran arrays are column-major: for an
! array a(n1, n2) placed by numakit, the C "rows" (outermost, contiguous
! dimension) are the columns a(:, j) — a block_exclusive placement of a
! Fortran a(n1, n2) is described to the schedule with rows = n2, cols = n1,
! and NK_VIEW_ROWS hands out values of j.  See docs/schedules.md.
!
! Usable inside !$omp parallel: every function is pure and lock-free.
module numakit
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! error codes (enum nk_errcode)
  integer(c_int), parameter, public :: NK_OK = 0, NK_EINVAL = -1, NK_ENOMEM = -2, NK_ENOENT = -3, &
       NK_EIO = -4, NK_EPARSE = -5, NK_EVERSION = -6, NK_ENOSYS = -7, NK_ENODEV = -8, NK_ERANGE = -9, &
       NK_ENODATA = -10, NK_EPERM = -11
  ! enum nk_sched_view
  integer(c_int), parameter, public :: NK_VIEW_ROWS = 0, NK_VIEW_COLS = 1
  integer(c_int), parameter, public :: NK_SCHED_BE_MAX_RANGES = 2

  !> A half-open iteration range [begin, end) (C struct nk_range).
  type, bind(c), public :: nk_range
     integer(c_long) :: begin
     integer(c_long) :: end
  end type nk_range

  public :: nk_sched_static, nk_sched_static_inverse, nk_sched_block_exclusive
  public :: nk_sched_owner_build, nk_sched_owner, nk_sched_owner_free
  public :: nk_thread_pin, nk_thread_where
  public :: nk_placement_build, nk_placement_free, nk_placement_num_threads, nk_placement_cpu, nk_placement_node
  public :: nk_machine_load_live, nk_machine_free
  public :: nk_static_bounds, nk_static_inverse_bounds, nk_block_exclusive_bounds

  interface
     integer(c_int) function nk_sched_static(begin, end, tid, nthreads, out) bind(c, name='nk_sched_static')
       import :: c_int, c_long, nk_range
       integer(c_long), value :: begin, end
       integer(c_int), value :: tid, nthreads
       type(nk_range), intent(out) :: out
     end function nk_sched_static

     integer(c_int) function nk_sched_static_inverse(begin, end, tid, nthreads, out) &
          bind(c, name='nk_sched_static_inverse')
       import :: c_int, c_long, nk_range
       integer(c_long), value :: begin, end
       integer(c_int), value :: tid, nthreads
       type(nk_range), intent(out) :: out
     end function nk_sched_static_inverse

     !> Returns the number of ranges of thread tid (at most NK_SCHED_BE_MAX_RANGES); writes min(count, cap).
     integer(c_int) function nk_sched_block_exclusive(rows, cols, p, view, phase, begin, end, tid, nthreads, &
          out, cap) bind(c, name='nk_sched_block_exclusive')
       import :: c_int, c_long, c_size_t, nk_range
       integer(c_long), value :: rows, cols
       integer(c_int), value :: p, view, phase
       integer(c_long), value :: begin, end
       integer(c_int), value :: tid, nthreads
       type(nk_range), intent(inout) :: out(*)
       integer(c_size_t), value :: cap
     end function nk_sched_block_exclusive

     !> a: an nk_array (c_ptr); thread_nodes(nthreads): the node of each thread; s: the schedule.
     integer(c_int) function nk_sched_owner_build(a, thread_nodes, nthreads, s, err) &
          bind(c, name='nk_sched_owner_build')
       import :: c_int, c_ptr
       type(c_ptr), value :: a
       integer(c_int), intent(in) :: thread_nodes(*)
       integer(c_int), value :: nthreads
       type(c_ptr), intent(out) :: s
       type(c_ptr), value :: err
     end function nk_sched_owner_build

     integer(c_int) function nk_sched_owner(s, tid, out, cap) bind(c, name='nk_sched_owner')
       import :: c_int, c_ptr, c_size_t, nk_range
       type(c_ptr), value :: s
       integer(c_int), value :: tid
       type(nk_range), intent(inout) :: out(*)
       integer(c_size_t), value :: cap
     end function nk_sched_owner

     subroutine nk_sched_owner_free(s) bind(c, name='nk_sched_owner_free')
       import :: c_ptr
       type(c_ptr), value :: s
     end subroutine nk_sched_owner_free

     integer(c_int) function nk_thread_pin(p, thread, err) bind(c, name='nk_thread_pin')
       import :: c_int, c_ptr
       type(c_ptr), value :: p
       integer(c_int), value :: thread
       type(c_ptr), value :: err
     end function nk_thread_pin

     !> m may be c_null_ptr (the kernel's node).
     integer(c_int) function nk_thread_where(m, cpu, node) bind(c, name='nk_thread_where')
       import :: c_int, c_ptr
       type(c_ptr), value :: m
       integer(c_int), intent(out) :: cpu, node
     end function nk_thread_where

     !> strategy must end with c_null_char.
     integer(c_int) function nk_placement_build(m, strategy, nthreads, out, err) &
          bind(c, name='nk_placement_build')
       import :: c_int, c_ptr, c_char
       type(c_ptr), value :: m
       character(kind=c_char), intent(in) :: strategy(*)
       integer(c_int), value :: nthreads
       type(c_ptr), intent(out) :: out
       type(c_ptr), value :: err
     end function nk_placement_build

     subroutine nk_placement_free(p) bind(c, name='nk_placement_free')
       import :: c_ptr
       type(c_ptr), value :: p
     end subroutine nk_placement_free

     integer(c_int) function nk_placement_num_threads(p) bind(c, name='nk_placement_num_threads')
       import :: c_int, c_ptr
       type(c_ptr), value :: p
     end function nk_placement_num_threads

     integer(c_int) function nk_placement_cpu(p, thread) bind(c, name='nk_placement_cpu')
       import :: c_int, c_ptr
       type(c_ptr), value :: p
       integer(c_int), value :: thread
     end function nk_placement_cpu

     integer(c_int) function nk_placement_node(p, thread) bind(c, name='nk_placement_node')
       import :: c_int, c_ptr
       type(c_ptr), value :: p
       integer(c_int), value :: thread
     end function nk_placement_node

     integer(c_int) function nk_machine_load_live(out, err) bind(c, name='nk_machine_load_live')
       import :: c_int, c_ptr
       type(c_ptr), intent(out) :: out
       type(c_ptr), value :: err
     end function nk_machine_load_live

     subroutine nk_machine_free(m) bind(c, name='nk_machine_free')
       import :: c_ptr
       type(c_ptr), value :: m
     end subroutine nk_machine_free
  end interface

contains

  !> Static schedule of the inclusive loop lo..hi for thread tid (0-based) of nthreads:
  !> this thread's iterations are lb..ub (empty when ub < lb).  Returns 0 or NK_EINVAL.
  integer(c_int) function nk_static_bounds(lo, hi, tid, nthreads, lb, ub) result(rc)
    integer, intent(in) :: lo, hi, tid, nthreads
    integer, intent(out) :: lb, ub
    type(nk_range) :: r
    rc = nk_sched_static(int(lo, c_long), int(hi, c_long) + 1_c_long, int(tid, c_int), int(nthreads, c_int), r)
    call to_bounds(rc, r, lb, ub)
  end function nk_static_bounds

  !> Static-inverse schedule of lo..hi (inclusive), as nk_static_bounds.
  integer(c_int) function nk_static_inverse_bounds(lo, hi, tid, nthreads, lb, ub) result(rc)
    integer, intent(in) :: lo, hi, tid, nthreads
    integer, intent(out) :: lb, ub
    type(nk_range) :: r
    rc = nk_sched_static_inverse(int(lo, c_long), int(hi, c_long) + 1_c_long, int(tid, c_int), &
         int(nthreads, c_int), r)
    call to_bounds(rc, r, lb, ub)
  end function nk_static_inverse_bounds

  !> Block-exclusive schedule with 1-based inclusive bounds: the loop runs over lo..hi (within
  !> 1..rows for NK_VIEW_ROWS, 1..cols for NK_VIEW_COLS), phase is 0..p-1.  On return the thread's
  !> iterations are lb(k)..ub(k), k = 1..n (n <= NK_SCHED_BE_MAX_RANGES).  Returns n or an NK_E* code.
  integer(c_int) function nk_block_exclusive_bounds(rows, cols, p, view, phase, lo, hi, tid, nthreads, &
       lb, ub) result(n)
    integer, intent(in) :: rows, cols, p, view, phase, lo, hi, tid, nthreads
    integer, intent(out) :: lb(NK_SCHED_BE_MAX_RANGES), ub(NK_SCHED_BE_MAX_RANGES)
    type(nk_range) :: r(NK_SCHED_BE_MAX_RANGES)
    integer :: k
    lb = 1
    ub = 0
    n = nk_sched_block_exclusive(int(rows, c_long), int(cols, c_long), int(p, c_int), int(view, c_int), &
         int(phase, c_int), int(lo, c_long) - 1_c_long, int(hi, c_long), int(tid, c_int), &
         int(nthreads, c_int), r, int(NK_SCHED_BE_MAX_RANGES, c_size_t))
    do k = 1, min(int(n), NK_SCHED_BE_MAX_RANGES)
       lb(k) = int(r(k)%begin) + 1
       ub(k) = int(r(k)%end)
    end do
  end function nk_block_exclusive_bounds

  subroutine to_bounds(rc, r, lb, ub)
    integer(c_int), intent(in) :: rc
    type(nk_range), intent(in) :: r
    integer, intent(out) :: lb, ub
    if (rc == 0) then
       lb = int(r%begin)
       ub = int(r%end) - 1
    else
       lb = 1
       ub = 0
    end if
  end subroutine to_bounds
end module numakit
