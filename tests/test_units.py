from __future__ import annotations

import pytest

from nearline.errors import ConfigError
from nearline.units import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2GiB", 2 * 1024**3), ("512 MB", 512 * 10**6), ("1.5KiB", 1536), ("0", 0), (4096, 4096)],
)
def test_sizes_parse_with_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["lots", "2 parsecs", -1, True, "1e9"])
def test_bad_sizes_say_what_was_expected(bad):
    with pytest.raises(ConfigError, match="size"):
        parse_size(bad, what="memory")


def test_sizes_format_for_people():
    assert format_size(1536) == "1.5 KiB"
    assert format_size(100) == "100 B"
