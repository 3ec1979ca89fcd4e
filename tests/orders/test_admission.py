"""Admission, decided without a server: the machine's capacity, the memory free now, users'
strings and fair share, on made-up queues and memory readings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nearline.errors import ConfigError
from nearline.orders import Allotment, Capacity, Run, ServiceSettings, Station
from nearline.orders._admission import Candidate, Holdings, Ledger, admit, admit_all
from nearline.orders._memory import MemoryNow

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GIB = 1024**3


def queue(owner: str, count: int, *, first: int = 0, cpus: float = 1, disk: int = 0):
    return [
        Candidate(
            run=Run(f"{owner}-{i}", f"{owner}-job-{i}", 0, Station.QUEUED, ()),
            owner=owner,
            created=T0 + timedelta(seconds=first + i),
            cpus=cpus,
            memory=GIB,
            disk=disk,
        )
        for i in range(count)
    ]


def decide(queued, *, cpus=4, held=None, allotments=None, disk=None):
    allotments = allotments or {}
    return admit(
        queued,
        capacity=Capacity(cpus=cpus, memory=64 * GIB),
        held=held or Holdings(),
        allotment=lambda owner: allotments.get(owner, Allotment()),
        disk_used=lambda owner: (disk or {}).get(owner, 0),
    )


def test_one_users_thousand_runs_do_not_hold_back_anothers_single_run():
    alice = queue("alice", 1000)
    bob = queue("bob", 1, first=5000)  # ordered long after all of alice's
    held = Holdings()
    decision = decide(alice + bob, cpus=4, held=held)
    started = [c.run.id for c in decision.start]
    assert "bob-0" in started  # the very first round, though he came last
    assert started.count("bob-0") == 1
    assert len(started) == 4
    assert held.of("bob") == (1, GIB)
    assert held.of("alice") == (3, 3 * GIB)
    assert decision.wait["alice-999"].startswith("waiting for free slots")


def test_a_freed_slot_goes_to_the_user_holding_the_fewest():
    held = Holdings()
    held.take("alice", 3, 3 * GIB)  # alice runs 3, carol 0; one slot frees
    decision = decide(queue("alice", 5) + queue("carol", 5, first=100), cpus=4, held=held)
    assert [c.run.id for c in decision.start] == ["carol-0"]


def test_within_a_user_runs_start_in_the_order_they_were_made():
    decision = decide(list(reversed(queue("alice", 6))), cpus=3)
    assert [c.run.id for c in decision.start] == ["alice-0", "alice-1", "alice-2"]


def test_a_users_cpu_allotment_bounds_their_runs_and_says_why():
    decision = decide(
        queue("alice", 4) + queue("bob", 4, first=10),
        cpus=8,
        allotments={"alice": Allotment(cpus=2)},
    )
    started = [c.run.id for c in decision.start]
    assert sorted(r for r in started if r.startswith("alice")) == ["alice-0", "alice-1"]
    assert len([r for r in started if r.startswith("bob")]) == 4
    assert decision.wait["alice-2"] == "waiting for your allotment: 2 of your 2 CPUs in use"


def test_a_full_disk_quota_makes_runs_wait_until_results_are_deleted():
    allotments = {"alice": Allotment(disk=10 * GIB)}
    full = decide(queue("alice", 2, disk=2 * GIB), allotments=allotments, disk={"alice": 9 * GIB})
    assert full.start == []
    assert "waiting for disk quota" in full.wait["alice-0"]
    assert "DELETE /jobs/{id}" in full.wait["alice-0"]
    room = decide(queue("alice", 2, disk=2 * GIB), allotments=allotments, disk={"alice": 1 * GIB})
    assert [c.run.id for c in room.start] == ["alice-0", "alice-1"]


def test_a_run_bigger_than_its_users_string_or_the_machine_is_refused_not_queued():
    decision = decide(
        queue("alice", 1, cpus=3) + queue("bob", 1, cpus=16, first=1),
        cpus=8,
        allotments={"alice": Allotment(cpus=2)},
    )
    assert decision.start == []
    assert decision.refuse["alice-0"] == "needs 3 CPUs, more than your allotment of 2"
    assert decision.refuse["bob-0"].startswith("needs 16 CPUs and 1.0 GiB, more than this service")


def test_among_users_holding_nothing_the_one_who_ran_least_lately_goes_first():
    """u1 flooded the queue and ran for an hour; when a slot frees with u1 and u2 both idle
    and both waiting, u2 goes first, though u1's runs are older."""
    ledger = Ledger()
    ledger.credit("u1", 3600.0, now=0.0)
    decision = admit(
        queue("u1", 5) + queue("u2", 5, first=100),
        capacity=Capacity(cpus=1, memory=64 * GIB),
        held=Holdings(),
        allotment=lambda owner: Allotment(),
        disk_used=lambda owner: 0,
        ledger=ledger,
    )
    assert [c.run.id for c in decision.start] == ["u2-0"]


def test_run_time_counts_less_as_it_ages():
    ledger = Ledger(half_life=600)
    ledger.credit("u1", 100.0, now=0.0)
    assert ledger.recent("u1", now=600.0) == 50.0
    assert ledger.recent("u1", now=1200.0) == 25.0
    assert ledger.recent("nobody", now=5.0) == 0.0


# -- memory free now ----------------------------------------------------------------------
MIB = 1024**2


def sized(owner: str, count: int, memory: int, *, first: int = 0):
    return [
        Candidate(
            run=Run(f"{owner}-{i}", f"{owner}-job-{i}", 0, Station.QUEUED, ()),
            owner=owner,
            created=T0 + timedelta(seconds=first + i),
            cpus=0.25,
            memory=memory,
            disk=0,
        )
        for i in range(count)
    ]


def decide_now(queued, now: MemoryNow, *, held=None, memory=64 * GIB):
    return admit(
        queued,
        capacity=Capacity(cpus=64, memory=memory),
        held=held or Holdings(),
        allotment=lambda owner: Allotment(),
        disk_used=lambda owner: 0,
        memory_now=now,
    )


def test_a_run_waits_while_the_memory_free_now_cannot_hold_what_it_declares():
    now = MemoryNow(free=int(1.2 * GIB), where="on the machine")
    decision = decide_now(sized("alice", 1, 2 * GIB), now)
    assert decision.start == []
    assert decision.wait["alice-0"] == (
        "waiting for memory: 1.2 GiB free on the machine, this run declares 2 GiB"
    )


def test_runs_started_in_one_round_count_against_the_memory_free_now():
    """Nothing uses the budget's 1 GiB yet; three runs of 300 MiB fit, the fourth waits."""
    now = MemoryNow(free=GIB, where="in the service's memory budget")
    decision = decide_now(sized("alice", 5, 300 * MIB), now)
    assert [c.run.id for c in decision.start] == ["alice-0", "alice-1", "alice-2"]
    assert decision.wait["alice-3"] == (
        "waiting for memory: 1 GiB free in the service's memory budget, 900 MiB of it "
        "promised to running runs; this run declares 300 MiB"
    )


def test_what_running_runs_declared_but_do_not_use_yet_is_kept_for_them():
    """bob's two runs declared 600 MiB each and touch 100 MiB each so far: of the 1 GiB free
    now, 1000 MiB is promised to them, so alice's 600 MiB waits though the free figure alone
    would hold it. Once they use all they declared, the free figure has fallen by as much
    and she still waits; when they end, she starts."""

    def bobs_two_runs() -> Holdings:
        held = Holdings()
        held.take("bob", 0.5, 1200 * MIB)
        return held

    alices = sized("alice", 1, 600 * MIB)
    early = decide_now(alices, MemoryNow(GIB, "on the machine", 200 * MIB), held=bobs_two_runs())
    assert early.start == []
    assert early.wait["alice-0"] == (
        "waiting for memory: 1 GiB free on the machine, 1000 MiB of it promised to running "
        "runs; this run declares 600 MiB"
    )
    late = decide_now(
        alices, MemoryNow(GIB - 1000 * MIB, "on the machine", 1200 * MIB), held=bobs_two_runs()
    )
    assert late.wait["alice-0"] == (
        "waiting for memory: 24 MiB free on the machine, this run declares 600 MiB"
    )
    ended = decide_now(alices, MemoryNow(GIB, "on the machine", 0))
    assert [c.run.id for c in ended.start] == ["alice-0"]


def test_the_memory_free_now_is_checked_after_the_memory_lent():
    """Both would hold the run back: the reason given is the service's own bound first."""
    held = Holdings()
    held.take("bob", 1, 700 * MIB)
    decision = decide_now(
        sized("alice", 1, 300 * MIB), MemoryNow(100 * MIB, "on the machine"), held=held,
        memory=768 * MIB,
    )  # fmt: skip
    assert decision.wait["alice-0"].startswith("waiting for memory: 700.0 MiB of 768.0 MiB lent")


def test_with_admission_off_every_queued_run_starts_at_once():
    held = Holdings()
    decision = admit_all(sized("alice", 8, 300 * MIB) + queue("bob", 2, cpus=16), held=held)
    assert len(decision.start) == 10
    assert decision.wait == decision.refuse == {}
    assert held.cpus == 8 * 0.25 + 2 * 16
    assert held.memory == 8 * 300 * MIB + 2 * GIB


def test_admission_and_recording_come_from_arguments_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NEARLINE_ADMISSION", "off")
    monkeypatch.setenv("NEARLINE_RECORD", str(tmp_path / "load"))
    settings = ServiceSettings.resolve(data=tmp_path)
    assert (settings.admission, settings.record) == (False, tmp_path / "load")
    assert ServiceSettings.resolve(data=tmp_path, admission="on").admission is True
    monkeypatch.delenv("NEARLINE_ADMISSION")
    monkeypatch.delenv("NEARLINE_RECORD")
    assert ServiceSettings.resolve(data=tmp_path).admission is True
    assert ServiceSettings.resolve(data=tmp_path).record is None
    with pytest.raises(ConfigError, match="admission: expected on or off, got 'maybe'"):
        ServiceSettings.resolve(data=tmp_path, admission="maybe")


def test_runs_are_readied_ahead_up_to_capacity_and_then_wait_saying_so():
    held = Holdings()
    decision = admit(
        queue("alice", 6),
        capacity=Capacity(cpus=2, memory=64 * GIB, ahead=2),
        held=held,
        allotment=lambda owner: Allotment(),
        disk_used=lambda owner: 0,
    )
    assert [c.run.id for c in decision.start] == [f"alice-{i}" for i in range(4)]
    assert held.of("alice") == (4, 4 * GIB)  # readied runs hold their memory from admission
    assert decision.wait["alice-4"] == (
        "waiting for free slots: 2 of 2 CPUs busy, 2 more readied to follow"
    )


def test_a_user_holding_nothing_has_a_run_readied_beyond_the_others():
    held = Holdings()
    held.take("bob", 4, 4 * GIB)  # two of bob's runs going and two readied: all there is
    decision = admit(
        queue("bob", 3) + queue("alice", 2, first=10),
        capacity=Capacity(cpus=2, memory=64 * GIB, ahead=2),
        held=held,
        allotment=lambda owner: Allotment(),
        disk_used=lambda owner: 0,
    )
    assert [c.run.id for c in decision.start] == ["alice-0"]  # one, and hers only
    assert decision.wait["alice-1"].startswith("waiting for free slots")
    assert decision.wait["bob-0"].startswith("waiting for free slots")
