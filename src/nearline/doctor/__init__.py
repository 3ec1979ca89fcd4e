"""doctor: whether this machine can do what nearline needs of it, each capability proved end
to end (a throwaway PostGIS cluster answers, a sandboxed run is held to its limits, Chromium
draws a page, MPI programs build and run on two ranks), with the command that installs what is
missing. ``nearline doctor`` prints its findings; docs/doctor.md says what each is for."""

from __future__ import annotations

from nearline.doctor._base import Capability, Finding, check, examine
from nearline.doctor._registry import CAPABILITIES, capabilities, debian_packages

__all__ = [
    "CAPABILITIES",
    "Capability",
    "Finding",
    "capabilities",
    "check",
    "debian_packages",
    "examine",
]
