"""Messages between compute ranks (clients) and I/O servers, and their wire encoding.

Every control message is one MPI message of bytes: a 12-byte header (magic ``NLB1``, a
one-byte kind, three zero bytes, the JSON length as little-endian uint32) followed by a
UTF-8 JSON object. Bulk data travels either through shared memory or as a separate message of
raw bytes. docs/burst-protocol.md is the reference a C or Fortran client follows.
"""

from __future__ import annotations

import functools
import json
import math
import struct
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any

import numpy as np

from nearline.errors import BurstError

MAGIC = b"NLB1"
_JSON = json.JSONEncoder(separators=(",", ":"))  # made once: json.dumps makes one per call
HEADER = struct.Struct("<4sB3xI")

# MPI tags on burst's own communicator (a duplicate of COMM_WORLD), never the model's.
TAG_CONTROL = 7301  # client -> server: requests
TAG_DATA = 7302  # client -> server: raw array bytes
TAG_REPLY = 7303  # server -> client: grants, acknowledgements, errors


class Kind(IntEnum):
    """Message kinds; the number is the byte on the wire."""

    WRITE = 1
    READY = 2
    FLUSH = 3
    WAIT = 4
    STATS = 5
    CLOSE = 6
    ABANDON = 7
    LEASE = 8
    RETURN = 9
    GRANT = 16
    DONE = 17
    STATS_REPLY = 18
    ERROR = 19


class Mode:
    """How a granted write reaches the server (the ``mode`` of a GRANT)."""

    MEMORY = "memory"  # copy into the server's queue memory (shared) at ``offset``, then READY
    MESSAGE = "message"  # send the bytes as one TAG_DATA message; the server receives in place
    SPILL = "spill"  # write the bytes to the file ``path``, then READY
    SYNC = "sync"  # send the bytes as one TAG_DATA message and wait for DONE (write-through)


@dataclass(slots=True)  # not frozen: a frozen one takes 3x as long to make, once per block
class WriteRequest:
    """A client asks to hand over one block of one variable. Treat it as immutable."""

    id: int
    client: int
    file: str
    name: str
    step: int
    dtype: str
    shape: tuple[int, ...]
    global_shape: tuple[int, ...]
    start: tuple[int, ...] | None
    dims: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    epoch: int = 0  # collective flushes the client had made before this write
    lease_offset: int | None = None  # the block is already in place there, in a lease
    lent: bool = False  # io.buffer: the model fills it in place, maybe across other work

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _itemsize(self.dtype)

    @property
    def assembled(self) -> bool:
        """True when blocks from all clients form one global variable (M x N output)."""
        return self.start is not None


@dataclass(frozen=True)
class Message:
    """Any other message: its kind, the request id it answers (or 0), and named fields."""

    kind: Kind
    id: int = 0
    client: int = -1
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


@functools.cache
def _itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


# A WRITE's fields that change from one step to the next; the rest are the same every step
# for one variable of one rank, so their JSON is made once (a lent block's whole hand-off is a
# few tens of microseconds, and encoding all of it each time was a third of that).
_EACH_TIME = ("id", "step", "epoch", "lease_offset", "attrs")
_ONCE = tuple(f.name for f in fields(WriteRequest) if f.name not in _EACH_TIME)


@functools.lru_cache(maxsize=4096)
def _json_once(values: tuple) -> str:
    return _JSON.encode(dict(zip(_ONCE, values, strict=True)))[1:-1]


def _write_json(request: WriteRequest) -> str:
    once = tuple(getattr(request, name) for name in _ONCE)
    try:
        rest = _json_once(once)
    except TypeError:  # something unhashable (a list where a tuple was meant): no memory
        rest = _json_once.__wrapped__(once)
    offset = "null" if request.lease_offset is None else int(request.lease_offset)
    return (
        f'{{"id":{int(request.id)},"step":{int(request.step)},"epoch":{int(request.epoch)},'
        f'"lease_offset":{offset},"attrs":{_JSON.encode(request.attrs)},{rest}}}'
    )


def encode(message: WriteRequest | Message) -> bytes:
    """Return the wire bytes of ``message``."""
    if isinstance(message, WriteRequest):
        kind, payload = Kind.WRITE, _write_json(message).encode()
    else:
        kind = message.kind
        body = {"id": message.id, "client": message.client, **message.fields}
        payload = _JSON.encode(body).encode()
    return HEADER.pack(MAGIC, int(kind), len(payload)) + payload


def decode(data: bytes | bytearray | memoryview) -> WriteRequest | Message:
    """Return the message in ``data``; raise :class:`BurstError` on a malformed one."""
    data = bytes(data)
    if len(data) < HEADER.size:
        raise BurstError(f"burst message of {len(data)} bytes is shorter than its header")
    magic, kind, length = HEADER.unpack_from(data)
    if magic != MAGIC or len(data) != HEADER.size + length:
        raise BurstError("burst message has a bad magic or length; is the client the same version?")
    body = json.loads(data[HEADER.size :])
    if kind == Kind.WRITE:
        for key in ("shape", "global_shape", "dims"):
            body[key] = tuple(body[key])
        if body["start"] is not None:
            body["start"] = tuple(body["start"])
        return WriteRequest(**body)
    ident = body.pop("id", 0)
    client = body.pop("client", -1)
    return Message(Kind(kind), ident, client, body)
