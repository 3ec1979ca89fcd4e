"""What the service lends to runs and what is free now, read from cgroup trees made in a test
folder; and runs marked as the kernel's first choice should memory run out."""

from __future__ import annotations

from pathlib import Path

from nearline.algorithms import Limits, run_sandboxed
from nearline.algorithms._cgroups import Hierarchy, MemoryBudget, memory_budget
from nearline.algorithms._sandbox import OOM_SCORE_ADJ
from nearline.orders._memory import RESERVE, lendable_memory, memory_now

MIB = 1024**2
GIB = 1024**3
NO_LIMIT = "9223372036854771712"  # what cgroup v1 says when no limit is set


def group(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text + "\n")
    return folder


def v1(folder: Path, *, limit: str = NO_LIMIT, usage: int = 0, inactive: int = 0, **more: str):
    return group(
        folder,
        memory_limit_in_bytes=limit,
        memory_usage_in_bytes=str(usage),
        memory_stat=f"cache 0\ninactive_file 0\ntotal_inactive_file {inactive}",
        **more,
    )


def test_the_budget_is_the_tightest_limit_on_the_own_group_or_an_ancestor(tmp_path: Path):
    mount = v1(tmp_path / "memory")
    v1(mount / "jobs", limit=str(GIB), usage=300 * MIB, inactive=100 * MIB)
    own = v1(mount / "jobs" / "nearline", limit=str(2 * GIB), usage=250 * MIB)
    budget = memory_budget([Hierarchy(1, frozenset({"memory"}), own, mount)])
    # its working set: usage less the inactive file cache the kernel reclaims first
    assert budget == MemoryBudget(mount / "jobs", GIB, 200 * MIB)
    assert budget.free == GIB - 200 * MIB


def test_no_limit_anywhere_is_no_budget_and_other_hierarchies_are_not_read(tmp_path: Path):
    mount = v1(tmp_path / "memory")
    own = v1(mount / "nearline")
    pids = group(tmp_path / "pids" / "nearline", memory_limit_in_bytes="1")
    found = [
        Hierarchy(1, frozenset({"memory"}), own, mount),
        Hierarchy(1, frozenset({"pids"}), pids, tmp_path / "pids"),
    ]
    assert memory_budget(found) is None


def test_a_v1_ancestor_that_does_not_count_its_children_does_not_bind_them(tmp_path: Path):
    mount = v1(tmp_path / "memory")
    v1(mount / "loose", limit=str(GIB), memory_use_hierarchy="0")
    own = v1(mount / "loose" / "nearline", memory_use_hierarchy="1")
    assert memory_budget([Hierarchy(1, frozenset({"memory"}), own, mount)]) is None


def test_a_v2_budget_reads_memory_max(tmp_path: Path):
    mount = group(tmp_path / "unified")
    group(
        mount / "budget",
        memory_max=str(GIB),
        memory_current=str(400 * MIB),
        memory_stat=f"anon 0\ninactive_file {50 * MIB}",
    )
    own = group(mount / "budget" / "service", memory_max="max", memory_current="0")
    budget = memory_budget([Hierarchy(2, frozenset({"memory"}), own, mount)])
    assert budget == MemoryBudget(mount / "budget", GIB, 350 * MIB)


def test_the_service_lends_the_smaller_of_the_machines_share_and_its_budget_less_a_reserve():
    machine = lendable_memory(total=10 * GIB, budget=None)
    assert machine.memory == 8 * GIB
    assert machine.why == "80% of the machine's 10.0 GiB"
    small = MemoryBudget(Path("/sys/fs/cgroup/memory/load"), GIB, 0)
    lent = lendable_memory(total=10 * GIB, budget=small)
    assert lent.memory == GIB - RESERVE
    assert "memory budget of /sys/fs/cgroup/memory/load (1.0 GiB)" in lent.why
    large = MemoryBudget(Path("/sys/fs/cgroup/memory/load"), 64 * GIB, 0)
    assert lendable_memory(total=10 * GIB, budget=large).memory == 8 * GIB
    tiny = MemoryBudget(Path("/sys/fs/cgroup/memory/load"), RESERVE // 2, 0)
    assert lendable_memory(total=10 * GIB, budget=tiny).memory == 0


def test_memory_free_now_is_the_machines_or_the_budgets_whichever_is_smaller():
    budget = MemoryBudget(Path("/budget"), GIB, 600 * MIB)
    tight = memory_now(available=20 * GIB, budget=budget, runs_use=300 * MIB)
    assert (tight.free, tight.where, tight.runs_use) == (
        424 * MIB,
        "in the service's memory budget",
        300 * MIB,
    )
    loose = memory_now(available=100 * MIB, budget=budget, runs_use=None)
    assert (loose.free, loose.where, loose.runs_use) == (100 * MIB, "on the machine", 0)


def test_every_process_of_a_run_is_the_kernels_first_choice_when_memory_runs_out(
    tmp_path: Path,
):
    """Raised in the run's first process before it execs, so the sandbox's wrapper and
    everything the program starts inherit it; the service keeps its own."""
    log = tmp_path / "run.log"
    script = "cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'"
    outcome = run_sandboxed(
        ["/bin/sh", "-c", script],
        folder=tmp_path / "run",
        env={"PATH": "/usr/bin:/bin"},
        limits=Limits(wall_seconds=30),
        log=log,
    )
    assert outcome.ok, log.read_text()
    assert log.read_text().split() == [str(OOM_SCORE_ADJ)] * 2
    assert Path("/proc/self/oom_score_adj").read_text().strip() != str(OOM_SCORE_ADJ)
