"""Marking closed file sets once every server has made its part durable.

Each server notes what it published (and what failed) under the collective-flush epoch that
closes it. When a server runs the collective flush of epoch e, all servers exchange their
notes for epochs <= e; server 0 marks every (step, file group) none of them failed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from nearline.burst._group import ServerGroup
from nearline.layout import Layout, mark_complete

log = logging.getLogger(__name__)

SetKey = tuple[str, int]  # (file group, step)


@dataclass(frozen=True)
class ConsumedFile:
    """A file a callable sink used in place: nothing exists at ``path``; ``by`` names the
    callable. Its set is still closed, with the marker saying so rather than listing it."""

    path: Path
    by: str


class CompletionBook:
    def __init__(self, root: Path, layout: Layout) -> None:
        self.root = root
        self.layout = layout
        self._published: dict[int, dict[SetKey, list[Path | ConsumedFile]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self._failed: set[SetKey] = set()

    def published(self, epoch: int, file: str, step: int, path: Path | ConsumedFile) -> None:
        self._published[epoch][(file, step)].append(path)

    def failed(self, file: str, step: int) -> None:
        self._failed.add((file, step))

    def close_epoch(self, epoch: int, group: ServerGroup, *, leader: bool) -> int:
        """Share this server's notes up to ``epoch``; the leader marks the complete sets.

        Every server of the group must call this once per collective flush, in order.
        Returns how many sets were marked (0 on other servers).
        """
        mine: dict[SetKey, list[Path | ConsumedFile]] = defaultdict(list)
        for done in sorted(e for e in self._published if e <= epoch):
            for key, paths in self._published.pop(done).items():
                mine[key] += paths
        failed, self._failed = self._failed, set()
        notes = group.allgather((dict(mine), failed))
        if not leader:
            return 0
        members: dict[SetKey, list[Path | ConsumedFile]] = defaultdict(list)
        refused: set[SetKey] = set()
        for their_sets, their_failures in notes:
            refused |= their_failures
            for key, paths in their_sets.items():
                members[key] += paths
        for (file, step), paths in sorted(members.items(), key=lambda item: item[0][::-1]):
            if (file, step) in refused:
                log.warning("not marking %s step %d complete: a file of it failed", file, step)
                continue
            step_dir = self.layout.step_dir(self.root, step)
            written = [p for p in paths if isinstance(p, Path)]
            consumed = {
                p.path.relative_to(step_dir): p.by for p in paths if isinstance(p, ConsumedFile)
            }
            relative = sorted(path.relative_to(step_dir) for path in written)
            mark_complete(
                self.root,
                step=step,
                file=file,
                members=relative,
                layout=self.layout,
                consumed=consumed,
            )
        return len(members) - len(refused & members.keys())
