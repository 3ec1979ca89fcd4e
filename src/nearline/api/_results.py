"""Results of a job that gives values rather than files (the echo process), as OGC API -
Processes 1.0 asks, for the outputs the request named (all, if it named none) and its
``response``:

- ``document``: a JSON results document, each output inline (a value; an object or binary
  data as a qualified value) or, asked ``"transmissionMode": "reference"``, a link to
  ``/jobs/{id}/results/{output}``;
- ``raw`` (1.0's default) with one output: its bytes, in its own media type (a reference:
  204 with a ``Link`` header); with several: ``multipart/related``, one part per output (a
  reference: an empty part with ``Content-Location``).

The multipart body is written here: the standard library's ``email`` generator base64-encodes
binary parts, which HTTP does not do.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

import orjson

from nearline.algorithms import EchoOrder
from nearline.api._adapter import Raw
from nearline.errors import NotFound
from nearline.orders import Job

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
Answer = tuple[int, Any, dict[str, str]]
Chosen = list[tuple[str, dict[str, Any], str]]  # output name, what it echoes, transmission


def value_results(job: Job, *, base: str) -> Answer:
    """The results of ``job`` (successful, answered in-process) as its request asked."""
    order = EchoOrder.from_dict(job.parameters)
    chosen = _chosen(order)
    if order.response == "document":
        return 200, {name: _entry(job, name, kept, how, base) for name, kept, how in chosen}, {}
    if not chosen:
        return 204, None, {}
    if len(chosen) == 1:
        name, kept, how = chosen[0]
        if "href" in kept or how == "reference":
            href = kept.get("href") or _href(job, name, base)
            return 204, None, {"Link": f'<{href}>; rel="enclosure"'}
        content, media_type = _raw(kept)
        return 200, Raw(content, media_type), {}
    return 200, _multipart(job, chosen, base), {}


def one_result(job: Job, output: str) -> Answer:
    """One output's raw value: where a reference to it points."""
    kept = EchoOrder.from_dict(job.parameters).values.get(output)
    if kept is None or "href" in kept:
        raise NotFound(f"job {job.id} has no output {output!r} of its own to send")
    content, media_type = _raw(kept)
    return 200, Raw(content, media_type), {}


def _chosen(order: EchoOrder) -> Chosen:
    asked = order.outputs or dict.fromkeys(order.values, "value")
    return [(name, order.values[name], how) for name, how in asked.items() if name in order.values]


def _href(job: Job, name: str, base: str) -> str:
    return f"{base}/jobs/{job.id}/results/{name}"


def _entry(job: Job, name: str, kept: dict[str, Any], how: str, base: str) -> Any:
    """One output in a results document."""
    if "href" in kept:  # given by reference: echoed as that reference
        return dict(kept)
    if how == "reference":
        return {"href": _href(job, name, base), "type": _raw(kept)[1]}
    if "encoding" in kept:  # binary data: a qualified value
        return dict(kept)
    value = kept["value"]
    if isinstance(value, dict):  # an object: a qualified value (1.0 has no bare objects)
        return {"value": value, "mediaType": JSON}
    return value


def _raw(kept: dict[str, Any]) -> tuple[bytes, str]:
    """An output's bytes and media type."""
    if "encoding" in kept:
        return base64.b64decode(kept["value"]), kept["mediaType"]
    value = kept["value"]
    if isinstance(value, str):
        return value.encode(), TEXT
    return orjson.dumps(value), JSON


def _multipart(job: Job, chosen: Chosen, base: str) -> Raw:
    """``multipart/related`` (RFC 2387), one part per output, each named by Content-ID."""
    boundary = f"nearline-{uuid.uuid4().hex}"
    parts, root = [], "text/plain"
    for name, kept, how in reversed(chosen):
        if "href" in kept or how == "reference":
            href = kept.get("href") or _href(job, name, base)
            head, content = f"Content-ID: <{name}>\r\nContent-Location: {href}\r\n", b""
        else:
            content, media_type = _raw(kept)
            head = f"Content-ID: <{name}>\r\nContent-Type: {media_type}\r\n"
            root = media_type.split(";")[0]
        parts.insert(0, f"--{boundary}\r\n{head}\r\n".encode() + content + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return Raw(body, f'multipart/related; boundary="{boundary}"; type="{root}"')
