"""An algorithm's own Python environment: its requirements over nearline's packages.

A venv over nearline's interpreter, holding only what the package asks for; a ``.pth`` file
appends nearline's own site-packages after the venv's, so numpy, netCDF4 and xarray are there
unless the package pins its own. Requirements are installed with ``uv pip install
--only-binary :all:``: wheels only, so no stranger's ``setup.py`` ever runs outside the
sandbox. The packages nearline already has are left out of the resolution (uv ``--excludes``)
unless the package names them; afterwards every installed distribution's dependencies on
them are checked against the versions nearline has.

Where the wheels come from: the index (PyPI, or ``index_url``), or only a local folder of
wheels (``wheels``: ``--no-index --find-links``), for machines without a network.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from nearline.errors import ConfigError, DeployError

log = logging.getLogger(__name__)
INSTALL_TIMEOUT = 900.0
PTH_NAME = "zz_nearline.pth"


@dataclass(frozen=True)
class WheelSource:
    """Where an algorithm's requirements' wheels come from.

    Parameters
    ----------
    wheels
        A local folder of wheels, the only source when set (no index at all).
    index_url
        A package index; PyPI when neither is set.
    """

    wheels: Path | None = None
    index_url: str | None = None

    @classmethod
    def resolve(
        cls, *, wheels: str | Path | None = None, index_url: str | None = None
    ) -> WheelSource:
        """The source from arguments first, then the environment.

        Parameters
        ----------
        wheels
            A folder of wheels (else ``NEARLINE_WHEELS``).
        index_url
            A package index (else ``NEARLINE_INDEX_URL``).

        Raises
        ------
        ConfigError
            ``wheels`` is not a folder.
        """
        wheels = wheels or os.environ.get("NEARLINE_WHEELS") or None
        index_url = index_url or os.environ.get("NEARLINE_INDEX_URL") or None
        if wheels is not None and not Path(wheels).is_dir():
            raise ConfigError(f"NEARLINE_WHEELS / wheels: {wheels} is not a folder of wheels")
        return cls(wheels=Path(wheels).absolute() if wheels else None, index_url=index_url)

    def arguments(self) -> list[str]:
        """The installer's options that choose this source."""
        if self.wheels is not None:
            return ["--no-index", "--find-links", str(self.wheels)]
        if self.index_url is not None:
            return ["--index-url", self.index_url]
        return []


def nearline_site_packages() -> list[Path]:
    """nearline's own site-packages folders (its venv's), in order."""
    return [Path(path) for path in site.getsitepackages() if Path(path).is_dir()]


def create_environment(
    folder: Path, requirements: Sequence[str], *, source: WheelSource, log_file: Path
) -> Path:
    """Make the venv ``folder`` with ``requirements`` installed; return its python."""
    uv = _uv()
    _call([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], log_file, "venv")
    python = folder / "bin" / "python"
    packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True, text=True, check=True, env={"PATH": os.defpath},
        ).stdout.strip()
    )  # fmt: skip
    lines = "".join(f"import site; site.addsitedir({str(p)!r})\n" for p in nearline_site_packages())
    (packages / PTH_NAME).write_text(lines)
    named = {canonicalize_name(Requirement(line).name) for line in requirements}
    provided = _nearline_distributions()
    excludes = folder / "nearline-provides.txt"
    excludes.write_text("".join(f"{name}\n" for name in sorted(set(provided) - named)))
    install = [uv, "pip", "install", "--python", str(python), "--only-binary", ":all:",
               "--excludes", str(excludes), *source.arguments(), *requirements]  # fmt: skip
    _call(install, log_file, "requirements")
    check_provided(packages, provided, named)
    return python


def check_provided(packages: Path, provided: dict[str, str], named: set[str]) -> None:
    """Every installed distribution's dependency on a package nearline provides must accept
    the version nearline has (the package may name that package to install its own)."""
    for dist in importlib.metadata.distributions(path=[str(packages)]):
        for line in dist.requires or ():
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            if name in named or name not in provided:
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            have = provided[name]
            if not requirement.specifier.contains(have, prereleases=True):
                raise DeployError(
                    f"requirements: {dist.metadata['Name']} needs {line!r} but nearline "
                    f"provides {requirement.name} {have}; add {requirement.name}"
                    f"{requirement.specifier} to requirements to install your own"
                )


def _nearline_distributions() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), dist.version)
    return found


def _uv() -> str:
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise DeployError("requirements: uv is not installed next to nearline; install uv")
    return found


def _call(command: list[str], log_file: Path, step: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/"),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    for name in ("UV_CACHE_DIR", "SSL_CERT_FILE", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        if name in os.environ:
            env[name] = os.environ[name]
    with open(log_file, "ab") as output:
        output.write(f"$ {' '.join(command)}\n".encode())
        output.flush()
        try:
            result = subprocess.run(
                command, stdout=output, stderr=subprocess.STDOUT, env=env,
                timeout=INSTALL_TIMEOUT, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise DeployError(f"{step}: not done after {INSTALL_TIMEOUT:g} s") from None
    if result.returncode != 0:
        raise DeployError(
            f"{step}: could not be installed (exit {result.returncode}); the log ends:\n"
            + log_tail(log_file)
        )


def log_tail(path: Path, *, lines: int = 30) -> str:
    """The last ``lines`` of a log (at most its last 64 KiB)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - 64 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])
