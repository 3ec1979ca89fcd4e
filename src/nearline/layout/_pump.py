"""The signal a copy stops with when a stop was requested while its bytes moved."""

from __future__ import annotations


class Interrupted(Exception):
    """A stop was requested while bytes were being copied; the copy was abandoned."""
