"""When a subscription's waiting granules become a job: its policy.

``{"each": 1}`` runs every granule alone; ``{"batch": N}`` runs granules N at a time, in the
order they arrived; ``{"period": "P1D", "deadline": "PT6H"}`` gathers granules by the calendar
period their start time falls in and runs a period once it is complete: when a granule of a
later period arrives, or, failing that, ``deadline`` after the period's end, when it runs as
it is and says it is partial.

Periods and deadlines are ISO 8601 durations. Years and months are calendar periods aligned
on the year (``P1M`` months, ``P3M`` quarters, ``P1Y`` years); weeks alone are ISO weeks
(from Monday); anything else is a fixed length aligned on 1970-01-01T00:00Z, so ``P1D`` is a
UTC day and ``PT6H`` starts at 00, 06, 12 and 18 h.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

from nearline.archive import whole_number
from nearline.errors import InvalidRequest
from nearline.orders._status import stamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MONDAY = datetime(1970, 1, 5, tzinfo=UTC)  # the first ISO week's start after the epoch
# ISO 8601 durations as policies take them: calendar months, or a fixed length, never both;
# the subscription schema publishes these patterns (_schema.py)
_CALENDAR = r"P(?:(?P<years>[0-9]{1,4})Y)?(?:(?P<months>[0-9]{1,4})M)?"
_FIXED = (
    r"P(?:(?P<weeks>[0-9]{1,4})W)?(?:(?P<days>[0-9]{1,5})D)?(?:T(?:(?P<hours>[0-9]{1,5})H)?"
    r"(?:(?P<minutes>[0-9]{1,5})M)?(?:(?P<seconds>[0-9]{1,6}(?:\.[0-9]{1,6})?)S)?)?"
)
CALENDAR_DURATION = re.sub(r"\?P<\w+>", "", _CALENDAR)
FIXED_DURATION = re.sub(r"\?P<\w+>", "", _FIXED)
NO_PARTS = r"^PT?$|T$"  # "P", "PT", or a T with nothing after it
ZERO_DURATION = r"^P(?:0+[YMWD])*(?:T(?:0+[HM])*(?:0+(?:\.0+)?S)?)?$"
MAX_BATCH = 10_000
POLICY_FORMS = '{"each": 1}, {"batch": N} or {"period": "P1D", "deadline": "PT6H"}'


@dataclass(frozen=True)
class Duration:
    """An ISO 8601 duration: whole calendar months, or a fixed length (never both)."""

    text: str
    months: int = 0
    length: timedelta = timedelta(0)
    weeks: bool = False  # weeks and nothing else: periods are ISO weeks

    def period_of(self, moment: datetime) -> tuple[datetime, datetime]:
        """The period of this length that holds ``moment``: (its start, its end)."""
        if self.months:
            index = (moment.year * 12 + moment.month - 1) // self.months * self.months
            start = datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
            return start, _add_months(start, self.months)
        origin = MONDAY if self.weeks else EPOCH
        count = (moment - origin) // self.length
        start = origin + count * self.length
        return start, start + self.length


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1)


def parse_duration(value: Any, *, what: str, calendar: bool = True) -> Duration:
    """An ISO 8601 duration such as ``P1D``, ``PT6H`` or ``P1M``; refusals name ``what``."""
    text = value if isinstance(value, str) else ""
    match = re.fullmatch(_CALENDAR, text) or re.fullmatch(_FIXED, text)
    if match is None or re.search(NO_PARTS, text):
        raise InvalidRequest(
            f"{what}: expected an ISO 8601 duration such as P1D, PT6H or P1M (years and "
            f"months, or weeks, days, hours, minutes and seconds, not both), got {value!r}"
        )
    parts = {name: float(part or 0) for name, part in match.groupdict().items()}
    months = int(parts.get("years", 0) * 12 + parts.get("months", 0))
    length = timedelta(
        weeks=parts.get("weeks", 0),
        days=parts.get("days", 0),
        hours=parts.get("hours", 0),
        minutes=parts.get("minutes", 0),
        seconds=parts.get("seconds", 0),
    )
    if months and not calendar:
        raise InvalidRequest(f"{what}: expected a fixed length (days, hours ...), got {value!r}")
    only_weeks = parts.get("weeks", 0) > 0 and length == timedelta(weeks=parts["weeks"])
    return Duration(text=value, months=months, length=length, weeks=only_weeks)


@dataclass(frozen=True)
class Pending:
    """A granule a subscription matched and has not run yet."""

    collection: str
    item: str
    start: datetime
    position: int  # arrival order
    backfill: bool = False  # found in the archive by the backfill, not by ingest

    @property
    def name(self) -> str:
        return f"{self.collection}/{self.item}"


@dataclass(frozen=True)
class Group:
    """Granules that are to run together as one job; ``note`` says why, for the job."""

    granules: tuple[Pending, ...]
    note: str | None = None

    @property
    def backfill(self) -> bool:
        return any(granule.backfill for granule in self.granules)


@dataclass(frozen=True)
class Waiting:
    """Granules still waited for, and what they wait for, in words."""

    granules: tuple[Pending, ...]
    until: str


class Policy(ABC):
    """When waiting granules run. Implementations keep these true: ``ready`` is a pure
    function of its arguments; every granule it returns is one of ``pending``, in one group
    only; what it does not return waits for a later call."""

    @abstractmethod
    def ready(
        self,
        pending: Sequence[Pending],
        *,
        latest: datetime | None,
        now: datetime,
        reading_until: datetime | None = None,
    ) -> list[Group]:
        """The groups to run now. ``latest`` is the latest start of any granule the
        subscription has matched (run or waiting); ``reading_until``, while the backfill still
        reads the archive, how far (in start time) it has read."""

    @abstractmethod
    def waiting(self, pending: Sequence[Pending]) -> list[Waiting]:
        """The granules ``ready`` leaves, grouped, each group with what it waits for."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The policy as a subscription's body gives it."""


def _arrival(pending: Sequence[Pending]) -> list[Pending]:
    return sorted(pending, key=lambda p: (p.position, p.start, p.collection, p.item))


@dataclass(frozen=True)
class Each(Policy):
    """Every granule runs alone, as soon as it arrives."""

    def ready(
        self,
        pending: Sequence[Pending],
        *,
        latest: datetime | None,
        now: datetime,
        reading_until: datetime | None = None,
    ) -> list[Group]:
        return [Group((granule,)) for granule in _arrival(pending)]

    def waiting(self, pending: Sequence[Pending]) -> list[Waiting]:
        return []

    def to_dict(self) -> dict[str, Any]:
        return {"each": 1}


@dataclass(frozen=True)
class Batch(Policy):
    """Granules run ``size`` at a time, in the order they arrived."""

    size: int

    def ready(
        self,
        pending: Sequence[Pending],
        *,
        latest: datetime | None,
        now: datetime,
        reading_until: datetime | None = None,
    ) -> list[Group]:
        ordered = _arrival(pending)
        full = len(ordered) // self.size * self.size
        return [Group(tuple(ordered[i : i + self.size])) for i in range(0, full, self.size)]

    def waiting(self, pending: Sequence[Pending]) -> list[Waiting]:
        left = _arrival(pending)[len(pending) // self.size * self.size :]
        if not left:
            return []
        more = self.size - len(left)
        return [Waiting(tuple(left), f"{more} more granule(s) for a batch of {self.size}")]

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.size}


@dataclass(frozen=True)
class Period(Policy):
    """Granules gathered by the calendar period of their start time; a period runs when a
    granule of a later period has arrived, or ``deadline`` after its end (partial)."""

    period: Duration
    deadline: Duration | None = None

    def _periods(self, pending: Sequence[Pending]) -> list[tuple[datetime, list[Pending]]]:
        ordered = sorted(pending, key=lambda p: (p.start, p.position, p.item))
        return [
            (start, list(members))
            for start, members in groupby(ordered, key=lambda p: self.period.period_of(p.start)[0])
        ]

    def ready(
        self,
        pending: Sequence[Pending],
        *,
        latest: datetime | None,
        now: datetime,
        reading_until: datetime | None = None,
    ) -> list[Group]:
        last = self.period.period_of(latest)[0] if latest is not None else None
        groups = []
        for start, members in self._periods(pending):
            end = self.period.period_of(start)[1]
            shown = f"{stamp(start)}/{self.period.text}"
            if last is not None and last > start:
                note = f"period {shown}: complete ({len(members)} granule(s))"
            elif (
                self.deadline is not None
                and now >= end + self.deadline.length
                and (reading_until is None or reading_until >= end)
            ):
                note = (
                    f"period {shown}: partial, run at its deadline ({self.deadline.text} after "
                    f"the period's end) with {len(members)} granule(s)"
                )
            else:
                continue
            groups.append(Group(tuple(members), note))
        return groups

    def waiting(self, pending: Sequence[Pending]) -> list[Waiting]:
        found = []
        for start, members in self._periods(pending):
            end = self.period.period_of(start)[1]
            until = f"period {stamp(start)}/{self.period.text}: a granule of a later period"
            if self.deadline is not None:
                until += f", or the deadline {stamp(end + self.deadline.length)}"
            found.append(Waiting(tuple(members), until))
        return found

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"period": self.period.text}
        if self.deadline is not None:
            shown["deadline"] = self.deadline.text
        return shown


def parse_policy(value: Any) -> Policy:
    """A policy as a subscription's body gives it: ``{"each": 1}``, ``{"batch": N}`` or
    ``{"period": DURATION, "deadline": DURATION}`` (the deadline may be left out: the period
    then waits for a granule of a later one)."""
    if not isinstance(value, Mapping) or not value:
        raise InvalidRequest(f"policy: expected one of {POLICY_FORMS}, got {value!r}")
    keys = set(value)
    if keys == {"each"}:
        if value["each"] != 1 or isinstance(value["each"], bool):
            raise InvalidRequest(f"policy.each: expected 1, got {value['each']!r}")
        return Each()
    if keys == {"batch"}:
        size = value["batch"] if not isinstance(value["batch"], str) else None
        size = whole_number(size)
        if size is None or not 1 <= size <= MAX_BATCH:
            raise InvalidRequest(
                f"policy.batch: expected a whole number of granules 1-10000, got {size!r}"
            )
        return Batch(size)
    if "period" in keys and keys <= {"period", "deadline"}:
        period = parse_duration(value["period"], what="policy.period")
        if not period.months and not period.length:
            raise InvalidRequest(f"policy.period: must be longer than 0, got {period.text!r}")
        deadline = (
            parse_duration(value["deadline"], what="policy.deadline", calendar=False)
            if "deadline" in value
            else None
        )
        return Period(period, deadline)
    raise InvalidRequest(f"policy: expected one of {POLICY_FORMS}, got keys {sorted(keys)}")
