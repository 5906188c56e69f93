"""Named points on the write path, so tests can kill a real process at each step, or hold it there.

``ENGRAM_CRASH_AT=<point>`` makes the process exit abruptly (``os._exit``, no cleanup, no flush) the moment
the write path reaches that point: the way a power cut or ``kill -9`` would stop it.
``ENGRAM_PAUSE_AT=<point>:<seconds>`` makes it wait there instead, so a race test can hold the moment between
planning a change and taking the write lock open for another process. Unset, each call is one comparison.
"""

from __future__ import annotations

import os
import time

POINTS = ("temp_written", "renamed", "index_committed", "audit_appended")

_crash_at = os.environ.get("ENGRAM_CRASH_AT")
_pause_at, _, _pause_for = os.environ.get("ENGRAM_PAUSE_AT", "").partition(":")


def reach(point: str) -> None:
    """Mark that the write path has reached ``point``; die or wait here if asked to."""
    if _crash_at == point:
        os._exit(137)
    if _pause_at == point:
        time.sleep(float(_pause_for or 0))
