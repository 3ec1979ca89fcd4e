"""Hooks for schemathesis' command line (SCHEMATHESIS_HOOKS=tests.service.schemathesis_hooks):
an algorithm package is a zip, for which schemathesis has no serializer; the bytes it makes
for a binary body are sent as they are (almost never a zip, so deploy and replace must refuse
them with a 4xx)."""

from __future__ import annotations

import schemathesis

schemathesis.serializer.alias("application/zip", "application/octet-stream")
