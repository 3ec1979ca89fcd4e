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
"""The manifest's file name, at the top of a package."""
JOB_VARIABLE = "NEARLINE_JOB"
"""The environment variable that gives a running command the path of its ``job.json``."""


ANY_COLLECTION = "*"  # an input taking granules of any collection the order names


@dataclass(frozen=True)
class InputSpec:
    """A data input of an algorithm: granules of one collection.

    An order over more granules than a run takes is split into runs.

    Parameters
    ----------
    name
        The input's name in ``job.json`` and in the OGC process description.
    collection
        The catalogue collection its granules come from; ``"*"`` (:data:`ANY_COLLECTION`):
        whichever collections the order names (a tool for any granule, such as ``subset``).
    min_count
        Granules a run takes at least.
    max_count
        Granules a run takes at most (None: no maximum).
    description
        For people.
    """

    name: str
    collection: str
    min_count: int = 1
    max_count: int | None = None
    description: str = ""

    @property
    def any_collection(self) -> bool:
        """Whether the input takes granules of whichever collections an order names."""
        return self.collection == ANY_COLLECTION


@dataclass(frozen=True)
class OutputSpec:
    """An output of an algorithm: the files its command leaves whose names match a pattern.

    Parameters
    ----------
    name
        The output's name in the OGC process description.
    media_type
        The files' media type, as their STAC assets' ``type``.
    pattern
        A glob on the file's path inside the outputs folder.
    description
        For people.
    """

    name: str
    media_type: str = "application/octet-stream"
    pattern: str = "*"
    description: str = ""


@dataclass(frozen=True)
class Resources:
    """What one run is given and held to, as the manifest declares it.

    [`limits_for`][nearline.algorithms.limits_for] turns it into the sandbox's
    [`Limits`][nearline.algorithms.Limits].

    Parameters
    ----------
    cpus
        The run's share of CPUs.
    memory
        The run's memory, in bytes.
    disk
        What the run's folder may hold, in bytes.
    timeout
        The run's wall-clock time, in seconds.
    """

    cpus: float = 1.0
    memory: int = 2 * 1024**3
    disk: int = 10 * 1024**3
    timeout: float = 3600.0


@dataclass(frozen=True)
class TestCase:
    """A test the package declares: inputs, parameters and the outputs they must give.

    Deploying runs every test in the sandbox; a package whose outputs differ is refused.

    Parameters
    ----------
    inputs
        Each input's files, as paths inside the package.
    parameters
        The parameters object.
    expect
        Each output file's name, mapped to the package path of its expected contents.
    """

    __test__ = False  # not a pytest test class

    inputs: Mapping[str, tuple[str, ...]]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """``algorithm.yaml``, checked: build it with
    [`read_manifest`][nearline.algorithms.read_manifest] or
    [`parse_manifest`][nearline.algorithms.parse_manifest].

    docs/algorithms.md describes each field as a package author writes it.

    Parameters
    ----------
    id
        The process's id.
    version
        This version's name.
    title
        A title for people.
    description
        What it does, for people.
    command
        The program and its arguments, run in the job's folder.
    inputs
        The data inputs.
    outputs
        The output files.
    parameters
        A JSON Schema of the parameters object.
    resources
        What one run is given and held to.
    build
        A command run once at deploy, in the sandbox, with the package writable.
    requirements
        Python requirements installed into the algorithm's own environment.
    tests
        Tests run at deploy.
    collection
        The output collection's id (default: the algorithm's id).
    """

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
        """The collection outputs are catalogued in."""
        return self.collection or self.id


@dataclass(frozen=True)
class Algorithm:
    """One deployed version: its manifest, who owns it, who sees it and where it lives.

    Parameters
    ----------
    manifest
        The checked manifest.
    owner
        The user who deployed it.
    public
        Whether every user sees it (else its owner alone).
    package
        The unpacked (and built) package folder, read-only to runs.
    python
        The interpreter of the algorithm's own environment (its requirements over
        nearline's).
    deployed
        When it went live.
    """

    manifest: Manifest
    owner: str
    public: bool
    package: Path
    python: Path
    deployed: datetime

    @property
    def id(self) -> str:
        """The process's id."""
        return self.manifest.id

    @property
    def version(self) -> str:
        """This version's name."""
        return self.manifest.version

    def visible_to(self, user: str | None) -> bool:
        """Whether a user may see and order it.

        Parameters
        ----------
        user
            The user's name (None: anonymous).
        """
        return self.public or (user is not None and user == self.owner)
