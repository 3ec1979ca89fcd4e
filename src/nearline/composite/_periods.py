"""Compositing periods: a day, the three "10-day" parts of a month, a month."""

from __future__ import annotations

import calendar
from datetime import date, timedelta

from nearline.composite._settings import Period


def period_window(day: date, period: Period) -> tuple[date, date]:
    """First and last day (inclusive) of the ``period`` holding ``day``.

    10-day periods are days 1-10, 11-20 and 21 to the month's end, as in the AVHRR
    Pathfinder and GIMMS products.
    """
    last_of_month = calendar.monthrange(day.year, day.month)[1]
    if period is Period.DAY:
        return day, day
    if period is Period.MONTH:
        return day.replace(day=1), day.replace(day=last_of_month)
    first = 1 if day.day <= 10 else 11 if day.day <= 20 else 21
    last = {1: 10, 11: 20, 21: last_of_month}[first]
    return day.replace(day=first), day.replace(day=last)


def period_label(window: tuple[date, date]) -> str:
    """A short name for a window: 2012-12-12, 2012-12-01..10, 2012-12."""
    first, last = window
    if first == last:
        return first.isoformat()
    if first.day == 1 and last + timedelta(days=1) == date(
        last.year + last.month // 12, last.month % 12 + 1, 1
    ):
        return first.strftime("%Y-%m")
    return f"{first.isoformat()}..{last.day:02d}"
