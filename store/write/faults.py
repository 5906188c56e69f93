"""Named points on the write path, so tests can kill a real process at each step, or hold it there.

``ENGRAM_CRASH_AT=<point>`` makes the process exit abruptly (``os._exit``, no cleanup, no flush) the moment
the write path reaches that point: the way a power cut or ``kill -9`` would stop it. ``<point>#<n>`` waits for
the n-th time (the third file renamed, say), so a crash can land in the middle of a batch.
``ENGRAM_PAUSE_AT=<point>:<seconds>`` makes it wait there instead, so a race test can hold the moment between
planning a change and taking the write lock open for another process. Unset, each call is one comparison.
"""

from __future__ import annotations

import os
import time

POINTS = ("temp_written", "renamed", "index_committed", "audit_appended")

_crash_at, _, _crash_nth = os.environ.get("ENGRAM_CRASH_AT", "").partition("#")
_crash_countdown = int(_crash_nth or 1)
_pause_at, _, _pause_for = os.environ.get("ENGRAM_PAUSE_AT", "").partition(":")


def reach(point: str) -> None:
    """Mark that the write path has reached ``point``; die or wait here if asked to."""
    global _crash_countdown
    if _crash_at == point:
        _crash_countdown -= 1
        if _crash_countdown <= 0:
            os._exit(137)
    if _pause_at == point:
        time.sleep(float(_pause_for or 0))
