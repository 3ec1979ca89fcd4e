"""nearline.logs: the fields bound to a context reach every line logged in it (and a thread
given its copy), in text and JSON alike; no token, bearer credential or password survives
into a line, wherever it was (message, argument, extra field, traceback)."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import secrets
import threading
from collections.abc import Iterator

import pytest

from nearline import logs


@pytest.fixture
def captured() -> Iterator[dict[str, io.StringIO]]:
    """A logger writing into a text and a JSON stream, as `nearline serve` sets them up."""
    streams = {name: io.StringIO() for name in logs.FORMATS}
    logger = logging.getLogger("nearline.test-logs")
    handlers = []
    for name, stream in streams.items():
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logs.formatter(name))
        handler.addFilter(logs.ContextFilter())
        logger.addHandler(handler)
        handlers.append(handler)
    logger.setLevel(logging.INFO)
    yield streams
    for handler in handlers:
        logger.removeHandler(handler)


def json_lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_bound_fields_reach_each_line_and_a_thread_given_the_context(captured) -> None:
    logger = logging.getLogger("nearline.test-logs")
    with logs.bound(request_id="r1", user="alice"):
        logger.info("in the request")
        with logs.bound(job="j1"):
            context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(logger.info, "in its thread"))
        worker.start()
        worker.join()
    logger.info("after it")
    first, second, third = json_lines(captured["json"])
    assert (first["request_id"], first["user"], first["message"]) == (
        "r1",
        "alice",
        "in the request",
    )
    assert "job" not in first
    assert (second["job"], second["user"], second["message"]) == ("j1", "alice", "in its thread")
    assert not {"request_id", "user", "job", "run"} & set(third)
    assert {"time", "level", "logger"} <= set(third)
    text = captured["text"].getvalue().splitlines()
    assert text[0].endswith("in the request [request_id=r1 user=alice]")
    assert text[2].endswith("after it")


def test_an_extra_field_wins_over_the_bound_one(captured) -> None:
    logger = logging.getLogger("nearline.test-logs")
    with logs.bound(job="bound"):
        logger.info("named", extra={"job": "given"})
    (line,) = json_lines(captured["json"])
    assert line["job"] == "given"


def test_no_secret_survives_into_a_line(captured) -> None:
    logger = logging.getLogger("nearline.test-logs")
    token = "nl_" + secrets.token_urlsafe(32)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
    password = secrets.token_hex(8)
    logger.info("token in the message %s", token)
    logger.info("header %s", f"Authorization: Bearer {jwt}")
    logger.info("database", extra={"url": f"postgresql://nearline:{password}@db:5432/x"})
    logger.info("s3", extra={"env": f"aws_secret_access_key={password}"})
    try:
        raise ValueError(f"bad token {token}")
    except ValueError:
        logger.exception("failed")
    for name, stream in captured.items():
        text = stream.getvalue()
        for secret in (token, token[3:], jwt, password):
            assert secret not in text
        # message, header and traceback; JSON also writes the two extra fields
        assert text.count(logs.REDACTED) == {"text": 3, "json": 5}[name]
    lines = json_lines(captured["json"])
    assert lines[2]["url"] == f"postgresql://{logs.REDACTED}@db:5432/x"
    assert lines[0]["message"] == f"token in the message {logs.REDACTED}"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of text, json"):
        logs.formatter("xml")
