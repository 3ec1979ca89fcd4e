"""The S3 archive tier against a real S3 server (SeaweedFS on 127.0.0.1): migrate and restore
byte for byte, never a partial object visible, keys that would climb out refused."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from nearline.errors import ArchiveError
from nearline.layout import Migrator, S3Tier, restore, verify_archive
from nearline.layout._s3_store import object_key
from nearline.layout._tier_registry import open_tier
from tests.layout.s3_sets import keys, make_sets, shas_below

MiB = 1024**2


def test_s3_urls_open_the_s3_tier(s3_env, s3_bucket):
    tier = open_tier(
        f"s3://{s3_bucket}/run/", storage_options={"endpoint_url": s3_env.endpoint_url}
    )
    assert isinstance(tier, S3Tier)
    assert (tier.bucket, tier.prefix, tier.url) == (s3_bucket, "run", f"s3://{s3_bucket}/run")
    assert tier.endpoint_url == s3_env.endpoint_url
    assert "secret" not in repr(tier)


@pytest.mark.parametrize("bundle", ["tar", "none"])
def test_migrate_and_restore_round_trip_byte_for_byte(s3_env, s3_bucket, tmp_path, bundle):
    source = tmp_path / "run"
    sizes = {(0, "dyn"): [20 * MiB + 3, 1], (0, "phy"): [0, 4096], (1, "dyn"): [9 * MiB, 77]}
    expected = make_sets(source, sizes)
    url = f"s3://{s3_bucket}/run42"
    with Migrator(source, url, bundle=bundle) as migrator:
        archived = migrator.run_once()
    assert len(archived) == 3
    assert shas_below(source) == {}  # removed once verified
    stored = keys(s3_env, s3_bucket)
    assert "run42/000000/dyn.000000.manifest.json" in stored
    assert not [k for k in stored if k.endswith(".partial")]
    assert s3_env.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    assert len(verify_archive(url)) == 3
    restore(url, tmp_path / "back")
    assert shas_below(tmp_path / "back") == expected


def test_nothing_is_visible_before_publish_and_an_abandoned_write_is_aborted(s3_env, s3_bucket):
    tier = S3Tier.from_url(f"s3://{s3_bucket}/a")
    data = os.urandom(17 * MiB)
    with tier.open_write("000000/.x.tar.partial") as out:
        out.write(data)
    assert tier.list("000000") == []
    assert tier.size("000000/x.tar") is None
    tier.publish("000000/.x.tar.partial", "000000/x.tar")
    assert tier.read_bytes("000000/x.tar") == data
    assert tier.sha256_of("000000/x.tar") == hashlib.sha256(data).hexdigest()

    def failing_copy() -> None:
        with tier.open_write("000000/.y.tar.partial") as out:
            out.write(data)
            raise RuntimeError("the copy failed")

    with pytest.raises(RuntimeError):
        failing_copy()
    writer = tier.open_write("000000/.z.tar.partial")
    writer.write(data)
    writer.close()
    tier.remove("000000/.z.tar.partial")  # what a rolled-back bundle does
    assert tier.list("000000") == ["x.tar"]
    assert s3_env.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    tier.close()


def test_reads_seek_anywhere(s3_env, s3_bucket):
    tier = S3Tier.from_url(f"s3://{s3_bucket}", storage_options={"part_size": "5MiB"})
    data = os.urandom(23 * MiB + 11)
    tier.write_bytes("obj", data)
    with tier.open_read("obj") as handle:
        for offset in (0, 5 * MiB - 3, 22 * MiB, 1, len(data) - 4):
            handle.seek(offset)
            assert handle.read(10) == data[offset : offset + 10]
        handle.seek(7)
        assert handle.read() == data[7:]
    with pytest.raises(FileNotFoundError):
        tier.open_read("missing")
    tier.close()


@pytest.mark.parametrize("name", ["../x", "/abs", "a//b", "a/../b", "./a"])
def test_names_that_climb_out_are_refused(s3_env, s3_bucket, name):
    tier = S3Tier.from_url(f"s3://{s3_bucket}/p")
    with pytest.raises(ArchiveError, match="nearline refuses it"):
        tier.size(name)


def test_the_server_itself_refuses_keys_that_climb_out(s3_env, s3_bucket):
    """SeaweedFS will not store '..' or '.' keys, and folds '//': a listing of it cannot hold
    one, so the listing check is shown on the names (below) and on a tampered manifest."""
    client = s3_env.client()
    for key in ("p/../evil", "p/./evil"):
        with pytest.raises(client.exceptions.ClientError, match="InvalidRequest"):
            client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")


@pytest.mark.parametrize("listed", ["..", "", "a//b", "../../etc"])
def test_a_listed_name_that_climbs_out_is_refused(listed):
    with pytest.raises(ArchiveError, match=r"the bucket lists.*nearline refuses it"):
        object_key("p", listed, listed=True)


@pytest.mark.parametrize("field", ["object", "folder"])
def test_a_manifest_naming_a_key_outside_the_archive_is_refused(s3_env, s3_bucket, tmp_path, field):
    source = tmp_path / "run"
    make_sets(source, {(0, "dyn"): [1000]})
    url = f"s3://{s3_bucket}/archive"
    with Migrator(source, url) as migrator:
        (manifest,) = migrator.run_once()
    s3_env.client().put_object(Bucket=s3_bucket, Key="secret/loot.tar", Body=b"x" * 2048)
    data = manifest.to_dict()
    if field == "object":
        data["entries"][0]["object"] = "../secret/loot.tar"
        data["objects"][0]["name"] = "../secret/loot.tar"
    else:
        data["folder"] = "../secret"
    s3_env.client().put_object(
        Bucket=s3_bucket, Key=f"archive/{manifest.name}", Body=json.dumps(data).encode()
    )
    with pytest.raises(ArchiveError, match=r"'\.\.'|not a path below"):
        restore(url, tmp_path / "back")
    assert not (tmp_path / "secret").exists()
