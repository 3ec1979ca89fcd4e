"""The I/O server's writer: turns queued blocks into files through a sink.

One writer thread per I/O server owns every open sink file of that server, so sinks never see
two threads at once. Files stay under their temporary name until flushed (see durable.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nearline.burst._assembly import FileKey, FileState
from nearline.burst._base import Sink, SinkFile
from nearline.burst._completion import ConsumedFile
from nearline.durable import discard, publish, temporary_path
from nearline.layout import Layout

log = logging.getLogger(__name__)


@dataclass
class OutputFile:
    """A file being built: its variables, the sink file once opened, where it goes."""

    state: FileState
    final: Path
    epoch: int = 0
    handle: SinkFile | None = None
    defined: set[str] = field(default_factory=set)

    @property
    def temporary(self) -> Path:
        return temporary_path(self.final)


class FileWriter:
    """Writes blocks into :class:`OutputFile` objects and publishes them when complete."""

    def __init__(self, sink: Sink, root: Path, layout: Layout) -> None:
        self.sink = sink
        self.root = root
        self.layout = layout
        self._folders: set[Path] = set()
        self.bytes_written = 0
        self.files_written = 0
        self.seconds_writing = 0.0

    def output_for(self, key: FileKey, *, epoch: int) -> OutputFile:
        final = self.layout.path(
            self.root, step=key.step, file=key.file, rank=key.rank, ext=self.sink.extension
        )
        return OutputFile(FileState(key), final, epoch)

    def write_block(
        self, output: OutputFile, name: str, data: np.ndarray, start: tuple[int, ...] | None
    ) -> None:
        """Write one block, opening the file and defining variables on first need."""
        began = time.perf_counter()
        if output.handle is None:
            self._make_folder(output.final.parent)
            discard(output.temporary)
            output.handle = self.sink.create(output.temporary, step=output.state.key.step)
        for var_name, var in list(output.state.variables.items()):
            if var_name not in output.defined:
                output.handle.define(var.spec)
                output.defined.add(var_name)
        output.handle.write(name, data, start=start or (0,) * data.ndim)
        self.bytes_written += data.nbytes
        self.seconds_writing += time.perf_counter() - began

    def finish(self, output: OutputFile) -> Path | ConsumedFile:
        """Check the file is whole, close it, make it durable and give it its final name.

        A callable sink that consumed the data and created nothing: no file to publish, and
        a :class:`ConsumedFile` instead of a path, for the set's marker to say so.
        """
        began = time.perf_counter()
        output.state.check_complete()
        if output.handle is None:  # a file whose variables are all 0-sized
            self._make_folder(output.final.parent)
            output.handle = self.sink.create(output.temporary, step=output.state.key.step)
            for var in output.state.variables.values():
                output.handle.define(var.spec)
        handle, output.handle = output.handle, None
        handle.close()
        consumer = getattr(handle, "consumed_by", None)
        if consumer is not None:
            self.seconds_writing += time.perf_counter() - began
            log.debug("%s consumed by %s; no file made", output.final, consumer)
            return ConsumedFile(output.final, consumer)
        publish(output.temporary, output.final)
        self.files_written += 1
        self.seconds_writing += time.perf_counter() - began
        log.debug("published %s", output.final)
        return output.final

    def _make_folder(self, folder: Path) -> None:
        """Create a folder once per server, not once per file (no mkdir storms)."""
        if folder not in self._folders:
            folder.mkdir(parents=True, exist_ok=True)
            self._folders.add(folder)

    def abandon(self, output: OutputFile) -> None:
        """Drop a file after a failure, leaving nothing that looks complete."""
        if output.handle is not None:
            output.handle.abort()
            output.handle = None
        discard(output.temporary)
