"""The CPUs' gate where readied runs wait their turn: real threads, in the order they came."""

from __future__ import annotations

import threading
import time

from nearline.algorithms import CpuGate, _cpu_gate


def waiter(gate: CpuGate, cpus: float, name: str, order: list[str], **options):  # type: ignore[no-untyped-def]
    def take() -> None:
        if gate.acquire(cpus, **options):
            order.append(name)

    thread = threading.Thread(target=take)
    thread.start()
    return thread


def settle() -> None:
    time.sleep(0.2)  # let the waiting threads reach the gate


def test_turns_go_in_arrival_order_and_never_past_the_cpus():
    gate = CpuGate(2)
    assert gate.acquire(1)
    assert gate.acquire(1)
    order: list[str] = []
    threads = []
    for name in ("a", "b", "c"):
        threads.append(waiter(gate, 1, name, order))
        settle()
    assert order == []
    assert gate.held == 2
    gate.release(1)
    settle()
    assert order == ["a"]
    assert gate.held == 2
    gate.release(1)
    gate.release(1)
    for thread in threads:
        thread.join(5)
    assert order == ["a", "b", "c"]
    assert gate.held == 2


def test_a_run_needing_more_than_is_free_holds_back_the_ones_behind_it():
    gate = CpuGate(2)
    assert gate.acquire(1)
    order: list[str] = []
    big = waiter(gate, 2, "big", order)
    settle()
    small = waiter(gate, 1, "small", order)  # would fit, but its turn is after big's
    settle()
    assert order == []
    gate.release(1)
    big.join(5)
    settle()
    assert order == ["big"]
    assert gate.held == 2
    gate.release(2)
    small.join(5)
    assert order == ["big", "small"]


def test_a_run_asking_more_than_the_gate_holds_goes_alone():
    gate = CpuGate(2)
    assert gate.acquire(4)
    assert gate.held == 4
    gate.release(4)
    assert gate.held == 0


def test_a_cancelled_waiter_leaves_the_line_taking_nothing():
    gate = CpuGate(1)
    assert gate.acquire(1)
    cancel = threading.Event()
    order: list[str] = []
    left = waiter(gate, 1, "cancelled", order, cancel=cancel)
    behind = waiter(gate, 1, "behind", order)
    settle()
    cancel.set()
    left.join(5)
    assert not left.is_alive()
    assert order == []
    gate.release(1)
    behind.join(5)
    assert order == ["behind"]
    assert gate.held == 1


def test_a_long_wait_is_told_and_its_end_too(monkeypatch):
    monkeypatch.setattr(_cpu_gate, "TELL_AFTER", 0.1)
    gate = CpuGate(1)
    assert gate.acquire(1)
    told: list[bool] = []
    order: list[str] = []
    thread = waiter(gate, 1, "late", order, waiting=told.append)
    time.sleep(0.5)
    assert told == [True]
    assert order == []
    gate.release(1)
    thread.join(5)
    assert told == [True, False]
    assert order == ["late"]
    # freed at once: a short wait is not told
    short = waiter(gate, 1, "short", [], waiting=told.append)
    gate.release(1)
    short.join(5)
    assert told == [True, False]


def test_a_freed_cpu_goes_to_the_owner_holding_the_fewest_then_running_least_lately():
    ran = {"bob": 50.0, "carol": 10.0, "dave": 20.0}  # CPU-seconds lately
    gate = CpuGate(2, recent=ran.__getitem__)
    bobs = [gate.acquire(1, owner="bob"), gate.acquire(1, owner="bob")]
    assert gate.by_owner == {"bob": 2}
    order: list[str] = []
    threads = []
    for owner in ("bob", "bob", "dave", "carol"):  # bob's readied runs came first
        threads.append(waiter(gate, 1, owner, order, owner=owner))
        settle()
    bobs[0].release()
    settle()
    assert order == ["carol"]  # she and dave hold none; she ran less lately
    bobs[1].release()
    settle()
    assert order == ["carol", "dave"]  # bob holds none now too, but ran most lately
    assert gate.by_owner == {"carol": 1, "dave": 1}
    gate.release(1, "carol")
    gate.release(1, "dave")
    for thread in threads:
        thread.join(5)
    assert order == ["carol", "dave", "bob", "bob"]
    bobs[0].release()  # a turn gives its CPUs back once, however often it is told to
    assert gate.held == 2
