"""Callbacks: when a subscription's job ends, its statusInfo is POSTed to the subscriber's
``successUri`` or ``failedUri`` (OGC API - Processes' subscriber object).

One thread of its own sends them, so a slow or dead receiver never holds up the service; a
failed POST is tried again a few times with a growing pause, then given up and logged. How
each went is recorded (``record(job, outcome)``), and a callback not yet recorded when the
service stops is sent again after it restarts: a receiver gets each at least once.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nearline.closing import Closing
from nearline.orders._base import Job
from nearline.orders._status import JSON, status_info

log = logging.getLogger(__name__)


def status_document(job: Job, *, base: str, subscription: str) -> dict[str, Any]:
    """The job's OGC statusInfo, with the subscription it was made for and its inputs."""
    return {
        **status_info(job, base=base),
        "nearline:subscription": subscription,
        "nearline:inputs": [
            f"{ref.collection}/{ref.item}" for run in job.runs for ref in run.inputs
        ],
    }


@dataclass(frozen=True)
class Delivery:
    job: str
    url: str
    body: bytes
    attempt: int = 0


class Notifier(Closing):
    """Sends callbacks from its own thread, each up to ``attempts`` times, waiting
    ``backoff``, then twice as long, ... between tries."""

    def __init__(
        self,
        *,
        record: Callable[[str, str], None],
        attempts: int = 4,
        backoff: float = 0.5,
        timeout: float = 5.0,
    ) -> None:
        self.record = record
        self.attempts = attempts
        self.backoff = backoff
        self.timeout = timeout
        self._queue: list[tuple[float, int, Delivery]] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="nearline-callbacks", daemon=True)
        self._thread.start()

    def send(self, job: str, url: str, document: dict[str, Any]) -> None:
        """POST ``document`` to ``url`` soon (never blocks)."""
        self._push(Delivery(job, url, json.dumps(document).encode()), due=time.monotonic())

    def _push(self, delivery: Delivery, *, due: float) -> None:
        with self._ready:
            heapq.heappush(self._queue, (due, next(self._order), delivery))
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._stop = True
            self._ready.notify()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._stop and (not self._queue or self._queue[0][0] > time.monotonic()):
                    wait = self._queue[0][0] - time.monotonic() if self._queue else None
                    self._ready.wait(timeout=wait)
                if self._stop:
                    return  # what is left is sent again after a restart
                _, _, delivery = heapq.heappop(self._queue)
            self._deliver(delivery)

    def _deliver(self, delivery: Delivery) -> None:
        request = urllib.request.Request(
            delivery.url, data=delivery.body, method="POST", headers={"Content-Type": JSON}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                status = answer.status
            error = None if 200 <= status < 300 else f"HTTP {status}"
        except urllib.error.HTTPError as failure:
            status, error = failure.code, f"HTTP {failure.code}"
        except (OSError, ValueError) as failure:
            status, error = None, str(getattr(failure, "reason", failure))
        tries = delivery.attempt + 1
        if error is None:
            self._record(delivery.job, f"delivered to {delivery.url} (HTTP {status})")
            return
        if tries < self.attempts:
            log.info("callback for job %s to %s failed (%s); trying again", delivery.job,
                     delivery.url, error)  # fmt: skip
            again = Delivery(delivery.job, delivery.url, delivery.body, tries)
            self._push(again, due=time.monotonic() + self.backoff * 2**delivery.attempt)
            return
        log.warning("callback for job %s to %s failed %d times, the last: %s; given up",
                    delivery.job, delivery.url, tries, error)  # fmt: skip
        self._record(delivery.job, f"failed {tries} times, the last: {error}")

    def _record(self, job: str, outcome: str) -> None:
        try:
            self.record(job, outcome)
        except Exception:  # the sender must outlive a database hiccup
            log.exception("recording the callback of job %s failed", job)
