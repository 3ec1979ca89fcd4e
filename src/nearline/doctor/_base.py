"""A capability nearline needs from the machine, the finding of its check, and running checks
side by side.

A check proves its capability end to end (a cluster answers, a browser draws, a program
builds and runs) rather than that a package is installed: a package can be present and still
not provide the part nearline uses (Debian's ``postgis`` without the extension).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import CapabilityMissing, NearlineError

log = logging.getLogger(__name__)

APT = "apt-get install -y --no-install-recommends"
COMMAND_SECONDS = 60.0  # no single step of a check may take longer
_REASON_CHARACTERS = 400


@dataclass(frozen=True)
class Capability:
    """One thing nearline needs from the machine.

    ``probe(folder)`` exercises it end to end in ``folder`` (a fresh folder, removed after),
    cleans up what it starts, and returns what it proved in a few words; it raises
    :class:`~nearline.errors.CapabilityMissing` with the reason when the capability does not
    work. ``packages`` are the Debian packages that provide it; ``install`` is how to get it
    when it comes from elsewhere (nearline's own Python dependencies).
    """

    name: str
    purpose: str
    probe: Callable[[Path], str]
    packages: tuple[str, ...] = ()
    install: str | None = None
    required: bool = True

    @property
    def install_command(self) -> str:
        """The command that installs what this capability needs."""
        if self.install is not None:
            return self.install
        return f"{APT} {' '.join(self.packages)} (as root; scripts/system-packages runs it)"


@dataclass(frozen=True)
class Finding:
    """What checking a capability found: whether it works, what proved it or why not, and
    how to fix it."""

    capability: Capability
    works: bool
    reason: str
    seconds: float
    remedy: str | None = None

    @property
    def status(self) -> str:
        if self.works:
            return "works"
        return "missing" if self.capability.required else "missing (optional)"

    @property
    def fix(self) -> str:
        """What makes it work: the check's own remedy, else installing the packages."""
        return self.remedy or self.capability.install_command

    def describe(self) -> str:
        """The line after the status: what it is for, what was found, and the fix if missing."""
        said = f"{self.capability.purpose}: {self.reason}"
        if self.works:
            return f"{said} ({self.seconds:.1f} s)"
        return f"{said}; to fix: {self.fix}"


def examine(capabilities: Sequence[Capability]) -> Iterator[Finding]:
    """Check ``capabilities`` all at once (threads: checks wait on processes); yield their
    findings in the order given, each as soon as it and those before it are done."""
    if not capabilities:
        return
    with ThreadPoolExecutor(len(capabilities), thread_name_prefix="nearline-doctor") as pool:
        pending = [pool.submit(check, capability) for capability in capabilities]
        for future in pending:
            yield future.result()


def check(capability: Capability) -> Finding:
    """Probe one capability in a folder of its own, removed afterwards; never raises."""
    start = time.monotonic()
    remedy = None
    try:
        with tempfile.TemporaryDirectory(prefix=f"nearline-doctor-{capability.name}-") as folder:
            reason, works = capability.probe(Path(folder)), True
    except CapabilityMissing as error:
        reason, works, remedy = str(error), False, error.remedy
    except NearlineError as error:
        reason, works = str(error), False
    except Exception as error:  # a check that breaks reports it, and the others still run
        log.debug("check of %s raised", capability.name, exc_info=True)
        reason, works = f"{type(error).__name__}: {error}", False
    return Finding(capability, works, _one_line(reason), time.monotonic() - start, remedy)


def _one_line(text: str) -> str:
    """A multi-line message (a tool's output) as one line: its first and last lines."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    if len(joined) > _REASON_CHARACTERS:
        joined = joined[: _REASON_CHARACTERS - 3] + "..."
    return joined or "no reason given"


def run(
    command: Sequence[str | Path],
    *,
    folder: Path,
    env: Mapping[str, str] | None = None,
    what: str,
) -> str:
    """Run ``command`` in ``folder``; its output, or :class:`CapabilityMissing` naming
    ``what`` failed and how. A command that outlives :data:`COMMAND_SECONDS` is killed with
    everything it started (its own session)."""
    argv = [str(part) for part in command]
    process = subprocess.Popen(
        argv, cwd=folder, env=None if env is None else dict(env), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=COMMAND_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise CapabilityMissing(f"{what} did not finish in {COMMAND_SECONDS:g} s") from None
    finally:
        if process.poll() is None:  # interrupted: leave nothing running
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0:
        raise CapabilityMissing(f"{what} failed (exit {process.returncode}): {output.strip()}")
    return output
