"""An algorithm package's nouns: its manifest (``algorithm.yaml``) and a deployed version.

A package is a folder (or its zip) holding ``algorithm.yaml`` and whatever the command needs.
The command runs in a fresh working folder with ``NEARLINE_JOB`` naming a ``job.json``:

    {"job": ID, "inputs": {NAME: [{"path": FILE, "item": STAC_ITEM}, ...]},
     "parameters": {...}, "outputs": FOLDER}

and every file it leaves in FOLDER becomes an item of the algorithm's output collection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

MANIFEST = "algorithm.yaml"
JOB_VARIABLE = "NEARLINE_JOB"


@dataclass(frozen=True)
class InputSpec:
    """A data input: granules of ``collection``, at least ``min_count`` and at most
    ``max_count`` per run (None: no maximum). An order over more is split into runs."""

    name: str
    collection: str
    min_count: int = 1
    max_count: int | None = None
    description: str = ""


@dataclass(frozen=True)
class OutputSpec:
    """Files the command leaves in the outputs folder whose names match ``pattern``."""

    name: str
    media_type: str = "application/octet-stream"
    pattern: str = "*"
    description: str = ""


@dataclass(frozen=True)
class Resources:
    """What one run is given and held to: CPUs, memory and disk in bytes, wall-clock
    seconds."""

    cpus: float = 1.0
    memory: int = 2 * 1024**3
    disk: int = 10 * 1024**3
    timeout: float = 3600.0


@dataclass(frozen=True)
class TestCase:
    """Declared test inputs (paths inside the package) and the outputs they must give.

    ``expect`` maps an output file name to the package path of its expected contents.
    """

    __test__ = False  # not a pytest test class

    inputs: Mapping[str, tuple[str, ...]]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """``algorithm.yaml``, checked. ``parameters`` is a JSON Schema of the parameters object;
    ``collection`` is the output collection's id (default: the algorithm's id)."""

    id: str
    version: str
    title: str
    description: str
    command: tuple[str, ...]
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    resources: Resources = field(default_factory=Resources)
    build: tuple[str, ...] | None = None
    requirements: tuple[str, ...] = ()
    tests: tuple[TestCase, ...] = ()
    collection: str | None = None

    @property
    def output_collection(self) -> str:
        return self.collection or self.id


@dataclass(frozen=True)
class Algorithm:
    """One deployed version: its manifest, who owns it, who sees it and where it lives.

    ``package`` is the unpacked (and built) package folder, read-only to runs; ``python`` the
    interpreter of the algorithm's own environment (its requirements over nearline's).
    """

    manifest: Manifest
    owner: str
    public: bool
    package: Path
    python: Path
    deployed: datetime

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def version(self) -> str:
        return self.manifest.version

    def visible_to(self, user: str | None) -> bool:
        return self.public or (user is not None and user == self.owner)
