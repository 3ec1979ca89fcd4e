"""Flush bookkeeping: a WAIT is answered exactly when the flushes before it are done."""

from __future__ import annotations

import pytest

from nearline.burst._flushes import FlushBook
from nearline.errors import BurstInputError


def test_wait_answered_only_after_local_and_collective_parts():
    book = FlushBook(clients=2)
    book.open_part(0, 1)  # client 0's own files
    book.open_part(0, 1)  # its share of the collective flush
    assert book.collective_arrived(0, 1, 0, None) is None
    book.add_waiter(0, ident=50)
    book.close_part(0, 1)
    assert book.answerable_waiters() == []  # the collective part is still open
    book.open_part(1, 1)
    book.open_part(1, 1)
    assert book.collective_arrived(1, 1, 0, None) == [(0, 1), (1, 1)]
    book.close_part(1, 1)
    book.close_part(0, 1)
    book.close_part(1, 1)
    assert book.answerable_waiters() == [(0, 50)]
    assert book.done == [1, 1]


def test_flushes_complete_in_order():
    book = FlushBook(clients=1)
    book.open_part(0, 1)
    book.open_part(0, 2)
    book.close_part(0, 2)
    assert book.done == [0]  # flush 1 is still open
    book.close_part(0, 1)
    assert book.done == [2]


def test_collective_flush_of_different_files_is_refused():
    book = FlushBook(clients=2)
    book.collective_arrived(0, 1, 0, "dynamics")
    with pytest.raises(BurstInputError, match="different files"):
        book.collective_arrived(1, 1, 0, "physics")
