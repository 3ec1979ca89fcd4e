"""Fixtures of the layout tests that use the real S3 server."""

from __future__ import annotations

import pytest


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The admin's credentials in the environment, as a user's shell would hold them."""
    for name, value in s3_server.credentials().items():
        monkeypatch.setenv(name, value)
    return s3_server
