"""The queue memory allocator, driven through random allocate/release sequences."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nearline.burst._arena import ALIGN, Arena

CAPACITY = 64 * 1024


class ArenaMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.arena = Arena(np.zeros(CAPACITY, dtype=np.uint8))
        self.live: dict[int, tuple[int, int]] = {}  # offset -> (size, fill byte)

    @rule(size=st.integers(1, CAPACITY // 4), fill=st.integers(1, 255))
    def allocate(self, size: int, fill: int) -> None:
        offset = self.arena.allocate(size)
        free = CAPACITY - self.arena.used
        if offset is None:
            assert free < size + ALIGN or len(self.live) > 0
            return
        assert offset % ALIGN == 0
        assert offset + size <= CAPACITY
        self.arena.buffer[offset : offset + size] = fill
        self.live[offset] = (size, fill)

    @precondition(lambda self: self.live)
    @rule(pick=st.integers(0, 10**6))
    def release(self, pick: int) -> None:
        offset = sorted(self.live)[pick % len(self.live)]
        size, fill = self.live.pop(offset)
        assert (self.arena.buffer[offset : offset + size] == fill).all()  # nobody overwrote it
        self.arena.release(offset, size)

    @invariant()
    def pieces_never_overlap(self) -> None:
        spans = sorted((o, o + s) for o, (s, _) in self.live.items())
        for (_, end), (begin, _) in itertools.pairwise(spans):
            assert end <= begin

    @invariant()
    def used_matches_live_pieces(self) -> None:
        expected = sum(-(-s // ALIGN) * ALIGN for s, _ in self.live.values())
        assert self.arena.used == expected

    def teardown(self) -> None:
        for offset, (size, _) in list(self.live.items()):
            self.arena.release(offset, size)
        assert self.arena.used == 0
        assert self.arena.allocate(CAPACITY) == 0  # free space merged back into one run


TestArena = ArenaMachine.TestCase
TestArena.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
