"""The tests' S3 server is real: a SeaweedFS process that stores bytes, tells identities
apart and keeps what it had across a stop and a start."""

from __future__ import annotations

import os

import pytest
from botocore.exceptions import ClientError

from nearline.testing.s3server import READER, SeaweedFS


def test_an_object_comes_back_byte_for_byte(s3_server: SeaweedFS, s3_bucket: str) -> None:
    data = os.urandom(3 << 20)
    s3 = s3_server.client()
    s3.put_object(Bucket=s3_bucket, Key="a/b.bin", Body=data)
    assert s3.get_object(Bucket=s3_bucket, Key="a/b.bin")["Body"].read() == data
    ranged = s3.get_object(Bucket=s3_bucket, Key="a/b.bin", Range="bytes=100-199")
    assert ranged["Body"].read() == data[100:200]


def test_the_reader_may_read_but_not_write(s3_server: SeaweedFS, s3_bucket: str) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="k", Body=b"kept")
    reader = s3_server.client(READER, retries=0)
    assert reader.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"kept"
    with pytest.raises(ClientError) as refused:
        reader.put_object(Bucket=s3_bucket, Key="k", Body=b"changed")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"


def test_a_stopped_server_comes_back_with_its_objects(tmp_path) -> None:
    with SeaweedFS(tmp_path) as server:
        server.make_bucket("kept")
        server.client().put_object(Bucket="kept", Key="k", Body=b"still here")
        server.kill()
        assert not server.answers()
        server.start()
        assert server.client().get_object(Bucket="kept", Key="k")["Body"].read() == b"still here"
