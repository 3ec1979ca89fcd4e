"""The service's log: every line carries who and what it is about (the request id, the user,
the job and the run), in plain text for a person or one JSON object a line for a machine
(``nearline serve --log-format json``); no line ever carries a token or a password.

The fields ride on context variables: the web app binds the request id for the length of a
request, the dispatcher binds the job, run and user for the length of a run's walk through
the stations, and :class:`ContextFilter` copies them onto each record. JSON is written by
python-json-logger (extra fields, exceptions and non-JSON values handled as that library
keeps them); what is added here is only the redaction, applied to the finished line, so a
token cannot slip through a message, an argument, an extra field or a traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections.abc import Iterator

FIELDS = ("request_id", "user", "job", "run")  # what a line may carry beside its message
FORMATS = ("text", "json")
_CONTEXT: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("nearline_log")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_SECRETS = (
    re.compile(r"\bnl_[A-Za-z0-9_-]{8,}"),  # nearline's API tokens (identity/_users.py)
    re.compile(r"(?i)\bbearer\s+[^\s\"',]+"),  # any Authorization header's value
    re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),  # JSON Web Tokens
    re.compile(r"(?<=://)[^/\s:@\"']+:[^/\s@\"']+(?=@)"),  # user:password@ in a URL
    re.compile(r"(?i)(?<=secret_access_key=)[^\s&\"',]+"),  # an S3 secret in a query or env
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with every token, bearer credential and URL password replaced."""
    for pattern in _SECRETS:
        text = pattern.sub(REDACTED, text)
    return text


@contextlib.contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """Every line logged inside carries ``fields`` (None values are left out)."""
    token = _CONTEXT.set({**_CONTEXT.get({}), **{k: v for k, v in fields.items() if v}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def bind(**fields: str | None) -> None:
    """Add ``fields`` to what the current context's lines carry, until it ends (an ASGI
    request's task, a thread's run)."""
    _CONTEXT.set({**_CONTEXT.get({}), **{k: v for k, v in fields.items() if v}})


def current(name: str) -> str | None:
    """The value of ``name`` (one of :data:`FIELDS`) bound in the current context, if any:
    the request id a response names, for one."""
    return _CONTEXT.get({}).get(name)


class ContextFilter(logging.Filter):
    """Copies the bound fields onto each record that does not name them itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _CONTEXT.get({}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class _Redacting(logging.Formatter):
    """A formatter whose every finished line goes through :func:`redact`."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


class _TextWithFields(logging.Formatter):
    """The plain format, with the bound fields appended as ``name=value``."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = " ".join(f"{n}={getattr(record, n)}" for n in FIELDS if hasattr(record, n))
        return f"{line} [{extra}]" if extra else line


def formatter(log_format: str) -> logging.Formatter:
    """The redacting formatter of ``log_format`` (``text`` or ``json``)."""
    if log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        inner: logging.Formatter = JsonFormatter(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",  # UTC, ISO 8601 to the microsecond
        )
    elif log_format == "text":
        inner = _TextWithFields(_TEXT)
    else:
        raise ValueError(f"log format: expected one of {', '.join(FORMATS)}, got {log_format!r}")
    return _Redacting(inner)


def configure(log_format: str = "text", level: int = logging.INFO) -> None:
    """Send every logger's lines to standard error in ``log_format``, with the bound fields,
    redacted; replaces what an earlier call set."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(log_format))
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
