! A Fortran model for the burst tests: every kind, ranks 0 to 4, per-rank and assembled
! uneven blocks, two files, several steps. Values follow tests/burst/expected.py in the
! order Python reads the file back: t(nx, ny, nz) is (nz, ny, nx) there.
!
!   model STEPS [KILL_IO_AT MARKER]   (at step KILL_IO_AT rank 0 makes the file MARKER, then
!                                      every step takes 0.2 s: the test kills a server)
program model
    use nearline_burst
    implicit none
    include 'mpif.h'
    integer, parameter :: nx = 5, ny = 6, nz = 11
    integer :: ierr, comm, rank, size, steps, kill_at, step, k0, nk, i, j, k
    character(len=256) :: arg, marker
    real(8), allocatable :: r8(:, :, :), q4(:, :, :, :)
    real(4), allocatable :: r4(:, :, :), local(:, :)
    integer(1), allocatable :: i1(:, :, :)
    integer(2), allocatable :: i2(:, :, :)
    integer(4), allocatable :: i4(:, :, :)
    integer(8), allocatable :: i8(:, :, :)
    integer(8) :: tag
    real(8), pointer :: lent(:, :, :) => null()
    logical :: lend
    integer :: length

    call MPI_Init(ierr)
    steps = 2
    kill_at = -1
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        read (arg, *) steps
    end if
    if (command_argument_count() >= 3) then
        call get_command_argument(2, arg)
        read (arg, *) kill_at
        call get_command_argument(3, marker)
    end if
    call get_environment_variable('MODEL_USES_BUFFER', length=length, status=i)
    lend = i == 0   ! set: v_f8 goes through nlb_buffer / nlb_commit
    call nlb_init(MPI_COMM_WORLD, comm, ierr)
    call check(ierr)
    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, size, ierr)
    call rows_of(nz, size, rank, k0, nk)   ! this rank's planes of z, 0-based first
    allocate (r8(nx, ny, nk), r4(nx, ny, nk), i1(nx, ny, nk), i2(nx, ny, nk), i4(nx, ny, nk))
    allocate (i8(nx, ny, nk), local(3, rank + 1), q4(2, 3, 2, rank + 1))
    call nlb_attr('dynamics', 'v_f8', 'units', 'K', ierr)
    call check(ierr)
    do step = 0, steps - 1
        ! every rank has written a step before the kill, so each has files at risk
        if (step == kill_at) call MPI_Barrier(comm, ierr)
        if (step == kill_at .and. rank == 0) then
            open (unit=10, file=trim(marker), status='replace')
            close (10)
        end if
        if (kill_at >= 0 .and. step >= kill_at) call sleep_a_little()
        if (lend) then  ! zero-copy: compute v_f8 straight into the server's queue memory
            call nlb_buffer('dynamics', 'v_f8', lent, [nx, ny, nk], step, ierr, &
                            start=[1, 1, k0 + 1], global_shape=[nx, ny, nz])
            call check(ierr)
            do k = 1, nk
                do j = 1, ny
                    do i = 1, nx
                        lent(i, j, k) = real(value('v_f8', step, flat(i, j, k0 + k)), 8)
                    end do
                end do
            end do
            call nlb_commit(lent, ierr)
            call check(ierr)
            if (associated(lent)) call check(99)
        end if
        do k = 1, nk
            do j = 1, ny
                do i = 1, nx
                    r8(i, j, k) = real(value('v_f8', step, flat(i, j, k0 + k)), 8)
                    r4(i, j, k) = real(value('v_f4', step, flat(i, j, k0 + k)), 4)
                    i1(i, j, k) = int(wrap(value('v_i1', step, flat(i, j, k0 + k)), 8), 1)
                    i2(i, j, k) = int(wrap(value('v_i2', step, flat(i, j, k0 + k)), 16), 2)
                    i4(i, j, k) = int(value('v_i4', step, flat(i, j, k0 + k)), 4)
                    i8(i, j, k) = value('v_i8', step, flat(i, j, k0 + k))
                end do
            end do
        end do
        if (.not. lend) then
            call nlb_write('dynamics', 'v_f8', r8, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
            call check(ierr)
        end if
        r8 = -1  ! the buffer is the model's again at once
        call nlb_write('dynamics', 'v_f4', r4, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
        call check(ierr)
        call nlb_write('dynamics', 'v_i1', i1, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
        call check(ierr)
        call nlb_write('dynamics', 'v_i2', i2, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
        call check(ierr)
        call nlb_write('physics', 'v_i4', i4, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
        call check(ierr)
        call nlb_write('physics', 'v_i8', i8, step, ierr, [1, 1, k0 + 1], [nx, ny, nz])
        call check(ierr)
        tag = rank * 100 + step
        call nlb_write('diag', 'rank_step', tag, step, ierr)
        call check(ierr)
        do j = 1, rank + 1
            do i = 1, 3
                local(i, j) = real(value('local', step, int(rank * 1000 + (j - 1) * 3 + i - 1, 8)), 4)
            end do
        end do
        call nlb_write('diag', 'local', local, step, ierr)
        call check(ierr)
        q4 = real(rank * 10 + step, 8)
        call nlb_write('diag', 'q4', q4, step, ierr)
        call check(ierr)
        call nlb_flush('', ierr)
        call check(ierr)
    end do
    call nlb_wait('', ierr)
    call check(ierr)
    call nlb_finalize(ierr)
    call check(ierr)
    call MPI_Finalize(ierr)

contains

    subroutine check(code)
        integer, intent(in) :: code
        integer :: ignored
        if (code == 0) return
        write (0, '(a, i0, a, i0, a, a)') 'nearline burst: compute rank ', rank, ': code ', &
            code, ': ', nlb_error()
        flush (0)
        call MPI_Abort(MPI_COMM_WORLD, 1, ignored)
    end subroutine

    ! the flat index, in Python's C order of (nz, ny, nx), of Fortran's 1-based (i, j, k)
    integer(8) function flat(i, j, k)
        integer, intent(in) :: i, j, k
        flat = int(k - 1, 8) * ny * nx + int(j - 1, 8) * nx + (i - 1)
    end function

    integer(8) function value(name, step, at)
        character(*), intent(in) :: name
        integer, intent(in) :: step
        integer(8), intent(in) :: at
        value = mod(at, 251_8) + mod(crc32(name), 1000_8) + 7 * step
    end function

    ! numpy's astype to a narrower integer: wrap around
    integer(8) function wrap(v, bits)
        integer(8), intent(in) :: v
        integer, intent(in) :: bits
        wrap = modulo(v + 2_8**(bits - 1), 2_8**bits) - 2_8**(bits - 1)
    end function

    integer(8) function crc32(text)
        character(*), intent(in) :: text
        integer(8) :: crc
        integer :: c, b
        crc = 4294967295_8
        do c = 1, len(text)
            crc = ieor(crc, int(ichar(text(c:c)), 8))
            do b = 1, 8
                if (iand(crc, 1_8) == 1) then
                    crc = ieor(ishft(crc, -1), 3988292384_8)
                else
                    crc = ishft(crc, -1)
                end if
            end do
        end do
        crc32 = ieor(crc, 4294967295_8)
    end function

    ! block_rows(total, ranks, uneven=True) of tests/burst/expected.py
    subroutine rows_of(total, ranks, me, first, mine)
        integer, intent(in) :: total, ranks, me
        integer, intent(out) :: first, mine
        integer :: r, n, weights
        weights = ranks * (ranks + 1) / 2
        first = 0
        do r = 0, ranks - 1
            n = max(1, total * (r + 1) / weights)
            if (r == ranks - 1) n = total - first
            if (r == me) then
                mine = n
                return
            end if
            first = first + n
        end do
    end subroutine

    subroutine sleep_a_little()
        integer(8) :: start, now, rate
        call system_clock(start, rate)
        do
            call system_clock(now)
            if (now - start >= rate / 5) exit
        end do
    end subroutine

end program model
