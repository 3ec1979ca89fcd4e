"""Paging tokens as the service hands them out: the catalogue's position, signed.

A catalogue's token says where a page ended (a start time and a position), so the next page
starts right after it. The service signs it (HMAC-SHA-256 under a key kept in its state
database, so it outlives restarts and every server of a shared database checks the same way)
and binds it to the search it continues: the user asking and every search parameter but the
page size. A token is therefore good only for the next page of the very search that gave it;
one made up, altered, or carried to another search or user is refused with a 400.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson

from nearline.archive import Search
from nearline.errors import SearchError

MAC_BYTES = 16  # of the HMAC-SHA-256: 128 bits


class PageTokens:
    """Seals a catalogue's paging token for one search, and opens it again."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def seal(self, position: str, search: Search) -> str:
        """``position`` (a catalogue token) signed for ``search``."""
        return f"{position}.{self._mac(position, search)}"

    def open(self, token: str, search: Search) -> str:
        """The catalogue token inside ``token``, if this service signed it for ``search``."""
        position, dot, mac = token.rpartition(".")
        expected = self._mac(position, search)
        if not dot or not hmac.compare_digest(_bytes(mac), _bytes(expected)):
            raise SearchError(
                "token: not one this service gave for this search; follow the next link of a "
                "page (a token continues only the search that gave it)"
            )
        return position

    def _mac(self, position: str, search: Search) -> str:
        bound = orjson.dumps([*search.matching(), search.sortby], option=orjson.OPT_SORT_KEYS)
        digest = hmac.new(self.key, _bytes(position) + b"\0" + bound, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:MAC_BYTES]).decode().rstrip("=")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
