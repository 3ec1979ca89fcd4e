"""The echo process: it gives back what it is given, one output per kind of input OGC API -
Processes knows (a string, a number, an object, an array, a mixed type, binary data, a
bounding box, and any of them by reference), so that a conformance suite, or a new client,
can try every execution mode without knowing the archive. pygeoapi and ZOO-Project ship one
for the same purpose; the OGC suite's job tests execute the process named ``echoprocessid``.

It is a pure function of the request, so the service answers it in-process (no sandbox, no
staging: there is nothing to run); it is off unless the operator turns it on
(``nearline serve --echo on``). This module holds its description (data beside its code) and
the reading of an execute request into what the job keeps; rendering results is the API's.

What a job keeps for each given input (its output of the same name), as JSON:

- ``{"value": V}``: a value, as given (a qualified value ``{"value": V, "mediaType": ...}``
  is unwrapped);
- ``{"value": BASE64, "mediaType": M, "encoding": "base64"}``: binary data;
- ``{"href": URL, "type": M}``: a value given by reference, echoed as that reference. The
  service never fetches it: an echo needs no bytes, and a server that fetches URLs strangers
  name can be made to reach its own network.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from nearline.errors import InvalidRequest, TooLarge

ECHO_ID = "echo"
ECHO_VERSION = "1.0"
MAX_PAUSE = 60.0  # seconds a job may ask to stay running (to see a job that is not done)
MAX_BYTES = 1024**2  # of a request's inputs, as JSON: the job's record keeps them
OCTETS = "application/octet-stream"
RESPONSES = ("raw", "document")
TRANSMISSIONS = ("value", "reference")
QUALIFIERS = {"value", "mediaType", "encoding", "schema", "format"}
BBOX = {
    "type": "object",
    "required": ["bbox"],
    "properties": {
        "bbox": {
            "type": "array",
            "items": {"type": "number"},
            "oneOf": [{"minItems": 4, "maxItems": 4}, {"minItems": 6, "maxItems": 6}],
            "description": "lower corner, then upper corner (2 or 3 numbers each)",
        },
        "crs": {"type": "string", "description": "the CRS's URI (default OGC's CRS84)"},
    },
}
# name: (title, schema); each is an input and the output that echoes it, in this order (the
# OGC suite reads the first input's name as the one output a single-output request asks for)
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "string": ("a string", {"type": "string"}),
    "number": ("a number", {"type": "number"}),
    "object": ("a JSON object", {"type": "object"}),
    "array": ("an array of whole numbers", {"type": "array", "items": {"type": "integer"}}),
    "mixed": (
        "a string, a number or an object (one of several types)",
        {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "object"}]},
    ),
    "binary": (
        "binary data, base64-encoded inline",
        {"type": "string", "contentEncoding": "base64", "contentMediaType": OCTETS},
    ),
    "bbox": ("a bounding box", {"allOf": [{"format": "ogc-bbox"}, BBOX]}),
}
PAUSE = {"type": "number", "minimum": 0, "maximum": MAX_PAUSE}


def echo_description() -> dict[str, Any]:
    """The echo process's OGC description (without links, which the API adds)."""
    inputs: dict[str, Any] = {
        name: {
            "title": name,
            "description": f"{title}, echoed as the output {name!r}; a value may also be given "
            'by reference ({"href": URL}), which is echoed as that reference, never fetched',
            "minOccurs": 1 if name == "string" else 0,
            "maxOccurs": 1,
            "schema": schema,
        }
        for name, (title, schema) in KINDS.items()
    }
    inputs["pause"] = {
        "title": "pause",
        "description": f"seconds (at most {MAX_PAUSE:g}) the job stays running before it "
        "succeeds, to see a job that is not done yet",
        "minOccurs": 0,
        "maxOccurs": 1,
        "schema": PAUSE,
    }
    return {
        "id": ECHO_ID,
        "version": ECHO_VERSION,
        "title": "Echo",
        "description": "Gives back what it is given: each input as the output of the same name "
        "(the string is required, the rest optional). A test process for clients and for OGC's "
        "conformance suite; the operator turns it on (nearline serve --echo on).",
        "keywords": ["test"],
        "jobControlOptions": ["sync-execute", "async-execute", "dismiss"],
        "outputTransmission": list(TRANSMISSIONS),
        "inputs": inputs,
        "outputs": {
            name: {"title": name, "description": f"the input {name!r}", "schema": schema}
            for name, (_, schema) in KINDS.items()
        },
    }


@dataclass(frozen=True)
class EchoOrder:
    """An execute request of the echo process, checked: what its job keeps.

    Parameters
    ----------
    values
        Output name: what it echoes (see the module's doc).
    outputs
        The outputs asked for: name to transmission (``value`` or ``reference``).
    response
        ``raw`` (OGC API - Processes 1.0's default) or ``document``.
    pause
        Seconds the job stays running before it answers (to see a job that is not done).
    """

    values: dict[str, dict[str, Any]]  # output name: what it echoes (see the module's doc)
    outputs: dict[str, str] = field(default_factory=dict)  # asked for: name to transmission
    response: str = "raw"  # OGC API - Processes 1.0's default
    pause: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "values": self.values,
            "outputs": self.outputs,
            "response": self.response,
            "pause": self.pause,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EchoOrder:
        return cls(
            values=dict(data["values"]),
            outputs=dict(data["outputs"]),
            response=data["response"],
            pause=data["pause"],
        )


def read_echo_order(body: Mapping[str, Any]) -> EchoOrder:
    """An execute request's body, checked against the echo process's description.

    Parameters
    ----------
    body
        The JSON body of ``POST /processes/echo/execution``.

    Raises
    ------
    InvalidRequest
        A member the request may not have, an input the process lacks, a value its schema
        refuses, an output it does not give, or an unknown response or transmission mode; the
        message names it.
    TooLarge
        Inputs over 1 MiB (as JSON): an echo is a test, not a store.
    """
    unknown = sorted(set(body) - {"inputs", "outputs", "response", "subscriber"})
    if unknown:
        raise InvalidRequest(
            f"an execute request holds inputs, outputs and response; not {', '.join(unknown)}"
        )
    inputs = _mapping(body.get("inputs", {}), "inputs")
    size = len(json.dumps(inputs))
    if size > MAX_BYTES:
        raise TooLarge(f"the echo's inputs are {size:,} bytes as JSON; the limit is {MAX_BYTES:,}")
    known = [*KINDS, "pause"]
    strangers = sorted(set(inputs) - set(known))
    if strangers:
        raise InvalidRequest(
            f"echo has no input {strangers[0]!r}; its inputs are {', '.join(known)}"
        )
    if "string" not in inputs:
        raise InvalidRequest("input string is required: a string to echo")
    values = {name: _read(name, inputs[name]) for name in KINDS if name in inputs}
    pause = inputs.get("pause", 0)
    if isinstance(pause, Mapping) and set(pause) <= QUALIFIERS and "value" in pause:
        pause = pause["value"]
    _check(pause, PAUSE, "pause")
    response = body.get("response", "raw")
    if response not in RESPONSES:
        raise InvalidRequest(f"response: expected raw or document, got {response!r}")
    return EchoOrder(
        values=values,
        outputs=_outputs(body.get("outputs") or {}),
        response=response,
        pause=float(pause),
    )


def _read(name: str, given: Any) -> dict[str, Any]:
    """What the job keeps for input ``name`` (see the module's doc)."""
    schema = KINDS[name][1]
    if isinstance(given, Mapping) and "href" in given:
        return _link(name, given)
    qualified = isinstance(given, Mapping) and "value" in given and set(given) <= QUALIFIERS
    # a qualified value, unless only the whole mapping fits (an object's own "value" member)
    if qualified and (_fits(given["value"], schema) or not _fits(given, schema)):
        return _value(name, given["value"], _media_type(given))
    return _value(name, given, None)


def _value(name: str, value: Any, media_type: str | None) -> dict[str, Any]:
    _check(value, KINDS[name][1], name)
    if name != "binary":
        return {"value": value}
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"input binary: expected base64 text, got {value[:40]!r}") from None
    return {"value": value, "mediaType": media_type or OCTETS, "encoding": "base64"}


def _link(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    href = given["href"]
    if not isinstance(href, str) or not href.startswith(("http://", "https://")):
        raise InvalidRequest(f"input {name}: href must be an http(s) URL, got {href!r}")
    link = {"href": href}
    media_type = given.get("type") or _media_type(given)
    if media_type is not None:
        if not isinstance(media_type, str):
            raise InvalidRequest(f"input {name}: a media type is text, got {media_type!r}")
        link["type"] = media_type
    return link


def _media_type(given: Mapping[str, Any]) -> str | None:
    """A qualified value's media type: beside the value (1.0) or in its ``format``."""
    found = given.get("mediaType")
    form = given.get("format")
    if found is None and isinstance(form, Mapping):
        found = form.get("mediaType")
    return found if isinstance(found, str) else None


def _outputs(asked: Any) -> dict[str, str]:
    outputs = {}
    for name, how in _mapping(asked, "outputs").items():
        if name not in KINDS:
            raise InvalidRequest(f"echo has no output {name!r}; its outputs are {', '.join(KINDS)}")
        mode = _mapping(how, f"outputs.{name}").get("transmissionMode", "value")
        if mode not in TRANSMISSIONS:
            raise InvalidRequest(
                f"outputs.{name}.transmissionMode: expected value or reference, got {mode!r}"
            )
        outputs[name] = mode
    return outputs


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidRequest(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _fits(value: Any, schema: Mapping[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _check(value: Any, schema: Mapping[str, Any], name: str) -> None:
    error = best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        raise InvalidRequest(f"input {name}: {error.message}")
