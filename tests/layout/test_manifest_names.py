"""A tampered manifest whose names leave the archive (``..``, an absolute path, an empty
component) is refused by restore and verify, on a folder archive and on S3 alike, in one
typed line naming the manifest and the bad name; nothing outside is read or written."""

from __future__ import annotations

import json

import pytest

from nearline.errors import ArchiveError
from nearline.layout import Migrator, restore, verify_archive
from nearline.layout._paths import is_plain_path
from tests.layout.s3_sets import make_sets

BAD = ["../secret/loot.tar", "/etc/passwd", "a//b", "./x", ""]
FIELDS = ["object", "path", "folder"]


def tampered(data: dict, field: str, bad: str) -> dict:
    if field == "object":
        data["entries"][0]["object"] = bad
        data["objects"][0]["name"] = bad
    elif field == "path":
        data["entries"][0]["path"] = bad
    else:
        data["folder"] = bad
    return data


def refused(url, tmp_path, bad: str, **options) -> None:
    for check in (
        lambda: restore(url, tmp_path / "back", storage_options=options or None),
        lambda: verify_archive(url, storage_options=options or None),
    ):
        with pytest.raises(ArchiveError) as caught:
            check()
        message = str(caught.value)
        assert f"names {bad!r}, which is not a plain path" in message
        assert "manifest.json" in message
        assert "tampered" in message
        assert "\n" not in message
    assert not (tmp_path / "back").exists()


@pytest.mark.parametrize("name", BAD)
def test_the_one_check(name):
    assert not is_plain_path(name)
    assert is_plain_path("000003/dyn/dyn.000003.0000.dat")


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("bad", BAD[:3])
def test_a_folder_archive_refuses_a_manifest_naming_outside(tmp_path, field, bad):
    source, archive = tmp_path / "run", tmp_path / "archive"
    make_sets(source, {(0, "dyn"): [3000]})
    with Migrator(source, archive) as migrator:
        (manifest,) = migrator.run_once()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "loot.tar").write_bytes(b"x" * 8192)  # what '..' would reach
    path = archive / manifest.name
    path.write_text(json.dumps(tampered(json.loads(path.read_text()), field, bad)))
    refused(archive, tmp_path, bad)


@pytest.mark.parametrize("field", FIELDS)
def test_an_s3_archive_refuses_a_manifest_naming_outside(s3_env, s3_bucket, tmp_path, field):
    source = tmp_path / "run"
    make_sets(source, {(0, "dyn"): [3000]})
    url = f"s3://{s3_bucket}/archive"
    with Migrator(source, url) as migrator:
        (manifest,) = migrator.run_once()
    client = s3_env.client()
    client.put_object(Bucket=s3_bucket, Key="secret/loot.tar", Body=b"x" * 8192)
    bad = "../secret/loot.tar"
    data = tampered(manifest.to_dict(), field, bad)
    client.put_object(
        Bucket=s3_bucket, Key=f"archive/{manifest.name}", Body=json.dumps(data).encode()
    )
    refused(url, tmp_path, bad)
