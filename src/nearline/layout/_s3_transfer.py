"""Streaming to and from one S3 object, several parts in flight at once, in reused buffers.

:class:`PartWriter` streams into a multipart upload of the object's final key: it appears
only when :meth:`PartWriter.complete` completes the upload (a small object is one put, then),
and :meth:`PartWriter.abort` drops every part. :class:`RangedReader` reads an object with
ranged GETs, several parts ahead of the reader. Part buffers come from a :class:`BufferPool`,
so the pages of a buffer are touched once per tier, not once per part.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections import deque
from concurrent.futures import Executor, Future
from typing import Any

from nearline.layout._pieces import BufferPool
from nearline.layout._s3_store import Bucket

MIN_PART = 5 * 1024**2  # S3's smallest part but the last
READ_PIECE = 256 * 1024  # bytes read from a response at a time (as s3transfer does)


class PartWriter(io.RawIOBase):
    """Writes one object as a multipart upload, up to ``in_flight`` parts uploading at once.

    Closing waits for every part; nothing is visible until :meth:`complete`.
    """

    def __init__(
        self, bucket: Bucket, key: str, *, label: str, pool: BufferPool, executor: Executor
    ) -> None:
        super().__init__()
        self.bucket, self.key, self.label = bucket, key, label
        self.pool, self.executor = pool, executor
        self.upload_id: str | None = None
        self._parts: list[Future[dict[str, Any]]] = []
        self._slots = threading.Semaphore(bucket.max_concurrency)
        self._buffer: bytearray | None = pool.take()
        self._filled = 0
        self._finished = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        total = len(view)
        while view:
            assert self._buffer is not None, "write after close"
            n = min(len(view), len(self._buffer) - self._filled)
            self._buffer[self._filled : self._filled + n] = view[:n]
            self._filled += n
            view = view[n:]
            if self._filled == len(self._buffer):
                self._send(self._buffer, self._filled)
                self._buffer, self._filled = self.pool.take(), 0
        return total

    def _send(self, buffer: bytearray, length: int) -> None:
        """Upload ``buffer[:length]`` as the next part, once one of the slots is free."""
        if self.upload_id is None:  # the first part: a crashed writer's upload goes first
            self.bucket.abort_uploads(self.key)
            started = self.bucket.call(
                f"starting the upload of {self.label}",
                self.bucket.client.create_multipart_upload,
                Key=self.key,
            )
            self.upload_id = started["UploadId"]
        for done in [part for part in self._parts if part.done()]:
            done.result()  # a failed part stops the writer at once
        self._slots.acquire()
        number = len(self._parts) + 1
        body = buffer if length == len(buffer) else bytes(memoryview(buffer)[:length])
        self._parts.append(self.executor.submit(self._upload, number, body, buffer))

    def _upload(self, number: int, body: bytes | bytearray, buffer: bytearray) -> dict[str, Any]:
        try:
            answer = self.bucket.call(
                f"uploading part {number} of {self.label}",
                self.bucket.client.upload_part,
                Key=self.key,
                UploadId=self.upload_id,
                PartNumber=number,
                Body=body,
            )
            return {"PartNumber": number, "ETag": answer["ETag"]}
        finally:
            self.pool.give(buffer)
            self._slots.release()

    def close(self) -> None:
        """Send the last part (unless the object is small enough for one put) and wait for
        every part; a failed part raises here."""
        if self.closed:
            return
        try:
            if self.upload_id is not None and self._buffer is not None and self._filled:
                buffer, self._buffer = self._buffer, None
                self._send(buffer, self._filled)
            for part in self._parts:
                part.result()
        finally:
            super().close()

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self.abort()
        else:
            self.close()

    def complete(self) -> None:
        """Make the object visible under its key, whole."""
        self.close()
        if self.upload_id is None:  # small: one put
            data = bytes(memoryview(self._buffer or b"")[: self._filled])
            self.bucket.call(
                f"writing {self.label}", self.bucket.client.put_object, Key=self.key, Body=data
            )
        else:
            parts = [part.result() for part in self._parts]
            self.bucket.call(
                f"completing the upload of {self.label}",
                self.bucket.client.complete_multipart_upload,
                Key=self.key,
                UploadId=self.upload_id,
                MultipartUpload={"Parts": parts},
            )
        self._release()

    def abort(self) -> None:
        """Drop the upload and every part sent: the object's key is left as it was."""
        for part in self._parts:
            part.cancel()
        for part in self._parts:
            with contextlib.suppress(Exception):
                part.result()
        if not self.closed:
            super().close()
        if self.upload_id is not None:
            with contextlib.suppress(Exception):
                self.bucket.client.abort_multipart_upload(
                    Bucket=self.bucket.bucket, Key=self.key, UploadId=self.upload_id
                )
        self._release()

    def _release(self) -> None:
        if self._buffer is not None and not self._finished:
            self.pool.give(self._buffer)
        self._buffer, self._finished = None, True


class RangedReader(io.RawIOBase):
    """A seekable reader of one object of ``size`` bytes: ranged GETs of one part each, up to
    ``ahead`` of them in flight beyond the one being read."""

    def __init__(
        self,
        bucket: Bucket,
        key: str,
        size: int,
        *,
        label: str,
        pool: BufferPool,
        executor: Executor,
        ahead: int = 8,
    ) -> None:
        super().__init__()
        self.bucket, self.key, self.size, self.label = bucket, key, size, label
        self.pool, self.executor, self.ahead = pool, executor, ahead
        self.position = 0
        self._next = 0  # where the next part to fetch starts
        self._window: deque[tuple[int, int, Future[bytearray]]] = deque()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(base + offset, 0)
        return self.position

    def readinto(self, view: Any) -> int:
        """Fill ``view`` as far as the object goes (across parts: a short read means the end)."""
        view = memoryview(view).cast("B")
        count = 0
        while count < len(view) and self.position < self.size:
            count += self._read_part(view[count:])
        return count

    def _read_part(self, view: memoryview) -> int:
        if not self._window or not self._window[0][0] <= self.position < self._window[0][1]:
            self._drop()
            self._next = self.position
        self._fill()
        start, end, future = self._window[0]
        buffer = future.result()
        n = min(len(view), end - self.position)
        offset = self.position - start
        view[:n] = memoryview(buffer)[offset : offset + n]
        self.position += n
        if self.position == end:
            self._window.popleft()
            self.pool.give(buffer)
            self._fill()
        return n

    def _fill(self) -> None:
        while len(self._window) <= self.ahead and self._next < self.size:
            start, end = self._next, min(self._next + self.pool.size, self.size)
            self._window.append((start, end, self.executor.submit(self._fetch, start, end)))
            self._next = end

    def _fetch(self, start: int, end: int) -> bytearray:
        buffer = self.pool.take()
        try:
            view = memoryview(buffer)[: end - start]
            got = read_range(self.bucket, self.key, self.label, start, view)
            if got != len(view):
                raise ConnectionError(f"{self.label} ended after {start + got} bytes")
        except BaseException:
            self.pool.give(buffer)
            raise
        return buffer

    def _drop(self) -> None:
        """Forget the parts fetched ahead, giving their buffers back once their GETs end."""
        while self._window:
            _, _, future = self._window.popleft()
            if future.cancel():
                continue
            with contextlib.suppress(Exception):
                self.pool.give(future.result())

    def close(self) -> None:
        if not self.closed:
            self._drop()
        super().close()


def read_range(bucket: Bucket, key: str, label: str, first: int, view: memoryview) -> int:
    """Fill ``view`` from byte ``first`` of ``key`` with one ranged GET, retried through an
    outage; the bytes read (fewer: the object ends there)."""
    if not len(view):
        return 0
    return bucket.call(
        f"reading bytes {first}-{first + len(view)} of {label}",
        _get_into,
        client=bucket.client,
        key=key,
        view=view,
        first=first,
    )


def _get_into(*, Bucket: str, client: Any, key: str, view: memoryview, first: int) -> int:
    from botocore.exceptions import ClientError

    try:
        answer = client.get_object(
            Bucket=Bucket, Key=key, Range=f"bytes={first}-{first + len(view) - 1}"
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "InvalidRange":
            return 0  # the object ends before ``first``
        raise
    length = min(int(answer["ContentLength"]), len(view))
    body = answer["Body"]
    with contextlib.closing(body):
        got = 0
        while got < length:
            # small reads: urllib3 reads into a new bytes object of the size asked for,
            # and a part-sized one each time would touch fresh pages every part
            n = body._raw_stream.readinto(view[got : min(got + READ_PIECE, length)])
            if not n:
                raise ConnectionError(f"the answer ended after {got} of {length} bytes")
            got += n
    return got
