"""Which flushes are done, so that ``wait`` answers exactly when the data is durable.

Each client numbers its flushes 1, 2, 3... A flush has parts: the client's own per-rank
files, and (for a collective flush) the assembled files, written only once every client has
made the same collective flush. ``done[c]`` is the highest flush of client c whose parts, and
those of all its earlier flushes, are finished; a WAIT is answered when it reaches the flush
the client had sent before waiting.
"""

from __future__ import annotations

from collections import Counter

from nearline.errors import BurstInputError


class FlushBook:
    def __init__(self, clients: int) -> None:
        self.clients = clients
        self.sent = [0] * clients
        self.done = [0] * clients
        self._open: Counter[tuple[int, int]] = Counter()
        self._waiters: list[tuple[int, int, int]] = []
        self._arrivals: dict[int, dict[int, tuple[int, str | None]]] = {}

    def open_part(self, client: int, seq: int) -> None:
        self._open[(client, seq)] += 1
        self.sent[client] = max(self.sent[client], seq)

    def close_part(self, client: int, seq: int) -> None:
        self._open[(client, seq)] -= 1
        while self.done[client] < self.sent[client]:
            following = (client, self.done[client] + 1)
            if self._open[following] > 0:
                break
            del self._open[following]
            self.done[client] += 1

    def collective_arrived(
        self, client: int, seq: int, epoch: int, file: str | None
    ) -> list[tuple[int, int]] | None:
        """Record a collective flush; return every client's (client, seq) once all arrived."""
        arrived = self._arrivals.setdefault(epoch, {})
        arrived[client] = (seq, file)
        if len(arrived) < self.clients:
            return None
        del self._arrivals[epoch]
        files = {file for _, file in arrived.values()}
        if len(files) > 1:
            raise BurstInputError(
                f"collective flush number {epoch + 1} named different files on different ranks "
                f"({sorted(map(str, files))}); every compute rank must call flush() with the "
                "same file, in the same order"
            )
        return [(who, s) for who, (s, _) in sorted(arrived.items())]

    def add_waiter(self, client: int, ident: int) -> None:
        self._waiters.append((client, ident, self.sent[client]))

    def waiting(self, client: int) -> bool:
        """True while ``client`` has a WAIT not yet answered."""
        return any(c == client for c, _, _ in self._waiters)

    def answerable_waiters(self) -> list[tuple[int, int]]:
        ready = [(c, i) for c, i, target in self._waiters if self.done[c] >= target]
        self._waiters = [w for w in self._waiters if self.done[w[0]] < w[2]]
        return ready
