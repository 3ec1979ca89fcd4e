"""algorithms: packages users upload (``algorithm.yaml`` and their program), checked, built
and tested in the sandbox before they go live; their versions, owners and visibility; and the
one way a deployed algorithm is run on staged files. See _base.py for the package format and
docs/algorithms.md for the runtime contract."""

from __future__ import annotations

from nearline.algorithms._base import (
    JOB_VARIABLE,
    MANIFEST,
    Algorithm,
    InputSpec,
    Manifest,
    OutputSpec,
    Resources,
    TestCase,
)
from nearline.algorithms._cpu_gate import CpuGate, Turn
from nearline.algorithms._deploy import DeploySettings
from nearline.algorithms._disk import keep_run_disks
from nearline.algorithms._disk_pool import DiskPool
from nearline.algorithms._environment import WheelSource
from nearline.algorithms._manifest import (
    manifest_from_dict,
    parameters_with_defaults,
    parse_manifest,
    read_manifest,
)
from nearline.algorithms._packages import PackageLimits, unpack
from nearline.algorithms._process import manifest_to_process
from nearline.algorithms._registry import AlgorithmRegistry
from nearline.algorithms._runner import RunResult, limits_for, prepare_job, run_algorithm
from nearline.algorithms._sandbox import (
    Isolation,
    Limits,
    MemoryBudget,
    Mount,
    Outcome,
    cleanup_stale,
    isolation,
    memory_budget,
    run_sandboxed,
    runs_memory,
)
from nearline.algorithms._schema import NAME_PATTERN
from nearline.algorithms._stages import StageClock
from nearline.algorithms.builtin import (
    ECHO_ID,
    EchoOrder,
    builtin_algorithms,
    echo_description,
    read_echo_order,
)

__all__ = [
    "ECHO_ID",
    "JOB_VARIABLE",
    "MANIFEST",
    "NAME_PATTERN",
    "Algorithm",
    "AlgorithmRegistry",
    "CpuGate",
    "DeploySettings",
    "DiskPool",
    "EchoOrder",
    "InputSpec",
    "Isolation",
    "Limits",
    "Manifest",
    "MemoryBudget",
    "Mount",
    "Outcome",
    "OutputSpec",
    "PackageLimits",
    "Resources",
    "RunResult",
    "StageClock",
    "TestCase",
    "Turn",
    "WheelSource",
    "builtin_algorithms",
    "cleanup_stale",
    "echo_description",
    "isolation",
    "keep_run_disks",
    "limits_for",
    "manifest_from_dict",
    "manifest_to_process",
    "memory_budget",
    "parameters_with_defaults",
    "parse_manifest",
    "prepare_job",
    "read_echo_order",
    "read_manifest",
    "run_algorithm",
    "run_sandboxed",
    "runs_memory",
    "unpack",
]
