"""When a snoozed promotion comes back: a span or a date, as a person types it.

``3d``, ``12h``, ``2w``, ``tomorrow``, ``next week`` (next Monday), or a date (``2026-12-20``) or time
(``2026-12-20T09:00``): a snoozed promotion leaves engram's queue until then (memoryd still sees it pending) and
comes back on its own.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from engram.store.errors import BadInput

_SPAN = re.compile(r"^\s*(\d+)\s*(h|d|w)\s*$", re.I)
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
FORMS = "3d, 12h, 2w, tomorrow, next week, or a date like 2026-12-20"


def parse_until(text: str, now: datetime) -> datetime:
    """The moment ``text`` names, after ``now`` (aware, UTC); :class:`BadInput` naming the forms otherwise."""
    said = text.strip().lower()
    if match := _SPAN.match(said):
        until = now + int(match.group(1)) * _UNITS[match.group(2).lower()]
    elif said == "tomorrow":
        until = _morning(now + timedelta(days=1))
    elif said == "next week":
        until = _morning(now + timedelta(days=7 - now.weekday()))
    else:
        try:
            until = datetime.fromisoformat(text.strip())
        except ValueError:
            raise BadInput(f"snooze until {text!r}? say {FORMS}") from None
        until = until if until.tzinfo else until.replace(tzinfo=UTC)
    if until <= now:
        raise BadInput(f"snooze until {until:%Y-%m-%d %H:%M}: that is not later than now")
    return until


def _morning(day: datetime) -> datetime:
    return day.replace(hour=9, minute=0, second=0, microsecond=0)
