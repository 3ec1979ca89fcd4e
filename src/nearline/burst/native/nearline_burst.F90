! nearline burst for Fortran models: the module nearline_burst over the C library.
!
!   call nlb_init(MPI_COMM_WORLD, model_comm, ierr)
!   call nlb_write('dynamics', 't', t, step, ierr, start=[1, 1, k0], global_shape=[nx, ny, nz])
!   call nlb_flush('', ierr)          ! '' : every file
!   call nlb_wait('', ierr)
!   call nlb_finalize(ierr)
!
! Arrays of integer(1/2/4/8) and real(4/8), of any rank up to 7. Dimensions appear in the file
! reversed, as netCDF-Fortran writes them: t(nx, ny, nz) reads back in Python as (nz, ny, nx).
! start= is 1-based, as in netCDF-Fortran. ierr is 0 on success; nlb_error() says why not.
!
! Zero-copy: a pointer array lying in the I/O server's queue memory, handed over with no copy:
!
!   real(8), pointer :: t(:, :, :)
!   call nlb_buffer('dynamics', 't', t, [nx, ny, nk], step, ierr, start=[1, 1, k0], &
!                   global_shape=[nx, ny, nz])
!   t = ...                           ! compute into it
!   call nlb_commit(t, ierr)          ! t is the server's from now on (nullified)
!
! (A .F90 file: the C preprocessor instantiates nearline_burst_kind.inc once per kind.)
module nearline_burst
    use, intrinsic :: iso_c_binding
    implicit none
    private
    public :: nlb_init, nlb_write, nlb_buffer, nlb_commit, nlb_attr, nlb_flush, nlb_wait
    public :: nlb_finalize, nlb_error

    integer(c_int), parameter :: NLB_INT8 = 0, NLB_INT16 = 1, NLB_INT32 = 2, NLB_INT64 = 3
    integer(c_int), parameter :: NLB_FLOAT32 = 8, NLB_FLOAT64 = 9
    type(c_ptr), save :: handle = c_null_ptr
    integer(c_size_t), target, save :: count(7), first(7), total(7)  ! one block's C arguments

    interface nlb_write
        module procedure write_i1, write_i2, write_i4, write_i8, write_r4, write_r8
    end interface

    interface nlb_buffer
        module procedure buffer_i1, buffer_i2, buffer_i4, buffer_i8, buffer_r4, buffer_r8
    end interface

    interface nlb_commit
        module procedure commit_i1, commit_i2, commit_i4, commit_i8, commit_r4, commit_r8
    end interface

    interface
        integer(c_int) function c_init(world, model_comm, io) bind(C, name="nlb_init_f")
            import :: c_int, c_ptr
            integer(c_int), value :: world
            integer(c_int), intent(out) :: model_comm
            type(c_ptr), intent(out) :: io
        end function
        integer(c_int) function c_write(io, file, name, step, dtype, ndim, count, start, &
                                        global, data) bind(C, name="nlb_write")
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: io, count, start, global, data
            character(kind=c_char), intent(in) :: file(*), name(*)
            integer(c_int), value :: step, dtype, ndim
        end function
        integer(c_int) function c_buffer(io, file, name, step, dtype, ndim, count, start, &
                                         global, buffer) bind(C, name="nlb_buffer_f")
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: io, count, start, global
            character(kind=c_char), intent(in) :: file(*), name(*)
            integer(c_int), value :: step, dtype, ndim
            type(c_ptr), intent(out) :: buffer
        end function
        integer(c_int) function c_commit(io, buffer) bind(C, name="nlb_commit")
            import :: c_int, c_ptr
            type(c_ptr), value :: io, buffer
        end function
        integer(c_int) function c_attr(io, file, name, key, value) bind(C, name="nlb_attr")
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: io
            character(kind=c_char), intent(in) :: file(*), name(*), key(*), value(*)
        end function
        integer(c_int) function c_flush(io, file) bind(C, name="nlb_flush")
            import :: c_int, c_ptr
            type(c_ptr), value :: io, file
        end function
        integer(c_int) function c_wait(io, file) bind(C, name="nlb_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: io, file
        end function
        integer(c_int) function c_finalize(io) bind(C, name="nlb_finalize")
            import :: c_int, c_ptr
            type(c_ptr), value :: io
        end function
        integer(c_int) function c_refuse(io, text) bind(C, name="nlb_refuse")
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: io
            character(kind=c_char), intent(in) :: text(*)
        end function
        type(c_ptr) function c_error(io) bind(C, name="nlb_error")
            import :: c_ptr
            type(c_ptr), value :: io
        end function
        integer(c_size_t) function c_strlen(text) bind(C, name="strlen")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: text
        end function
    end interface

contains

    subroutine nlb_init(world, model_comm, ierr)
        integer, intent(in) :: world
        integer, intent(out) :: model_comm, ierr
        integer(c_int) :: comm
        ierr = c_init(int(world, c_int), comm, handle)
        model_comm = comm
    end subroutine

    ! The text of the error behind the last non-zero ierr.
    function nlb_error() result(text)
        character(:), allocatable :: text
        type(c_ptr) :: message
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n
        message = c_error(handle)
        n = int(c_strlen(message))
        call c_f_pointer(message, chars, [n])
        allocate (character(n) :: text)
        do i = 1, n
            text(i:i) = chars(i)
        end do
    end function

    subroutine nlb_attr(file, name, key, value, ierr)
        character(*), intent(in) :: file, name, key, value
        integer, intent(out) :: ierr
        ierr = c_attr(handle, c_string(file), c_string(name), c_string(key), c_string(value))
    end subroutine

    subroutine nlb_flush(file, ierr)
        character(*), intent(in) :: file
        integer, intent(out) :: ierr
        character(kind=c_char), allocatable, target :: name(:)
        name = c_string(file)
        ierr = c_flush(handle, merge(c_null_ptr, c_loc(name), len_trim(file) == 0))
    end subroutine

    subroutine nlb_wait(file, ierr)
        character(*), intent(in) :: file
        integer, intent(out) :: ierr
        character(kind=c_char), allocatable, target :: name(:)
        name = c_string(file)
        ierr = c_wait(handle, merge(c_null_ptr, c_loc(name), len_trim(file) == 0))
    end subroutine

    subroutine nlb_finalize(ierr)
        integer, intent(out) :: ierr
        ierr = c_finalize(handle)
        if (ierr == 0) handle = c_null_ptr
    end subroutine

    ! -- one block: Fortran order and 1-based start, turned into C order and 0-based ----------
    ! The block's C arguments are kept here until the call (one block at a time per rank).
    subroutine put(file, name, data, shape_of, step, dtype, ierr, start, global_shape)
        character(*), intent(in) :: file, name
        type(c_ptr), intent(in) :: data
        integer, intent(in) :: shape_of(:), step
        integer(c_int), intent(in) :: dtype
        integer, intent(out) :: ierr
        integer, intent(in), optional :: start(:), global_shape(:)
        type(c_ptr) :: at, of
        call c_order(name, shape_of, ierr, at, of, start, global_shape)
        if (ierr /= 0) return
        ierr = c_write(handle, c_string(file), c_string(name), int(step, c_int), dtype, &
                       int(size(shape_of), c_int), c_loc(count), at, of, data)
    end subroutine

    subroutine lend(file, name, shape_of, step, dtype, ierr, buffer, start, global_shape)
        character(*), intent(in) :: file, name
        integer, intent(in) :: shape_of(:), step
        integer(c_int), intent(in) :: dtype
        integer, intent(out) :: ierr
        type(c_ptr), intent(out) :: buffer
        integer, intent(in), optional :: start(:), global_shape(:)
        type(c_ptr) :: at, of
        buffer = c_null_ptr
        call c_order(name, shape_of, ierr, at, of, start, global_shape)
        if (ierr /= 0) return
        ierr = c_buffer(handle, c_string(file), c_string(name), int(step, c_int), dtype, &
                        int(size(shape_of), c_int), c_loc(count), at, of, buffer)
    end subroutine

    subroutine c_order(name, shape_of, ierr, at, of, start, global_shape)
        character(*), intent(in) :: name
        integer, intent(in) :: shape_of(:)
        integer, intent(out) :: ierr
        type(c_ptr), intent(out) :: at, of
        integer, intent(in), optional :: start(:), global_shape(:)
        integer :: n
        n = size(shape_of)
        ierr = 0
        at = c_null_ptr
        of = c_null_ptr
        if (n > size(count)) then
            ierr = c_refuse(handle, c_string("variable '"//trim(name)//"': at most 7 dimensions"))
            return
        end if
        count(1:n) = int(shape_of(n:1:-1), c_size_t)
        if (present(start)) then
            if (size(start) /= n) then
                ierr = c_refuse(handle, c_string("variable '"//trim(name)//"': start= needs "// &
                                "one index per dimension of the array"))
                return
            end if
            first(1:n) = int(start(n:1:-1) - 1, c_size_t)
            at = c_loc(first)
        end if
        if (present(global_shape)) then
            if (size(global_shape) /= n) then
                ierr = c_refuse(handle, c_string("variable '"//trim(name)//"': global_shape= "// &
                                "needs one size per dimension of the array"))
                return
            end if
            total(1:n) = int(global_shape(n:1:-1), c_size_t)
            of = c_loc(total)
        end if
    end subroutine

    pure function c_string(text) result(chars)
        character(*), intent(in) :: text
        character(kind=c_char) :: chars(len_trim(text) + 1)
        integer :: i
        do i = 1, len_trim(text)
            chars(i) = text(i:i)
        end do
        chars(len_trim(text) + 1) = c_null_char
    end function

#define TYPE integer(c_int8_t)
#define CODE NLB_INT8
#define WRITE_NAME write_i1
#define BUFFER_NAME buffer_i1
#define COMMIT_NAME commit_i1
#include "nearline_burst_kind.inc"
#define TYPE integer(c_int16_t)
#define CODE NLB_INT16
#define WRITE_NAME write_i2
#define BUFFER_NAME buffer_i2
#define COMMIT_NAME commit_i2
#include "nearline_burst_kind.inc"
#define TYPE integer(c_int32_t)
#define CODE NLB_INT32
#define WRITE_NAME write_i4
#define BUFFER_NAME buffer_i4
#define COMMIT_NAME commit_i4
#include "nearline_burst_kind.inc"
#define TYPE integer(c_int64_t)
#define CODE NLB_INT64
#define WRITE_NAME write_i8
#define BUFFER_NAME buffer_i8
#define COMMIT_NAME commit_i8
#include "nearline_burst_kind.inc"
#define TYPE real(c_float)
#define CODE NLB_FLOAT32
#define WRITE_NAME write_r4
#define BUFFER_NAME buffer_r4
#define COMMIT_NAME commit_r4
#include "nearline_burst_kind.inc"
#define TYPE real(c_double)
#define CODE NLB_FLOAT64
#define WRITE_NAME write_r8
#define BUFFER_NAME buffer_r8
#define COMMIT_NAME commit_r8
#include "nearline_burst_kind.inc"

end module nearline_burst
