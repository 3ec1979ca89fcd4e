"""The wire encoding: every message decodes to what was encoded, field for field."""

from __future__ import annotations

import string
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from nearline.burst._protocol import Kind, Message, WriteRequest, decode, encode

names = st.text(string.ascii_letters + "_", min_size=1, max_size=12)
values = st.text(max_size=20) | st.integers() | st.floats(allow_nan=False)
sizes = st.lists(st.integers(0, 1 << 40), max_size=4).map(tuple)
requests = st.builds(
    WriteRequest,
    id=st.integers(1, 1 << 50),
    client=st.integers(0, 1 << 20),
    file=names,
    name=names,
    step=st.integers(0, 1 << 40),
    dtype=st.sampled_from(["<f4", "<f8", "|i1", "<u8"]),
    shape=sizes,
    global_shape=sizes,
    start=st.none() | sizes,
    dims=st.lists(names, max_size=4).map(tuple),
    attrs=st.dictionaries(names, values, max_size=3),
    epoch=st.integers(0, 1 << 30),
    lease_offset=st.none() | st.integers(0, 1 << 40),
    lent=st.booleans(),
)


@given(requests)
def test_a_write_request_round_trips(request):
    assert decode(encode(request)) == request


@given(requests, st.integers(0, 1 << 40), st.integers(0, 1 << 20))
def test_the_same_variable_at_another_step_encodes_its_own_step(request, step, epoch):
    """The fields that stay the same are encoded once and remembered; these change."""
    encode(request)
    later = replace(request, step=step, epoch=epoch, id=request.id + 1)
    assert decode(encode(later)) == later


@given(
    st.sampled_from([k for k in Kind if k != Kind.WRITE]),
    st.integers(0, 1 << 40),
    st.dictionaries(names, st.text(max_size=20) | st.integers() | st.none(), max_size=4),
)
def test_any_other_message_round_trips(kind, ident, fields):
    fields = {k: v for k, v in fields.items() if k not in ("id", "client")}
    message = Message(kind, ident, 3, fields)
    assert decode(encode(message)) == message
