"""Named crash points on the write path, so tests can kill a real process at each step.

``ENGRAM_CRASH_AT=<point>`` makes the process exit abruptly (``os._exit``, no cleanup, no flush) the moment
the write path reaches that point: the way a power cut or ``kill -9`` would stop it. Unset, each call is
one dictionary lookup.
"""

from __future__ import annotations

import os

POINTS = ("temp_written", "renamed", "index_committed", "audit_appended")

_crash_at = os.environ.get("ENGRAM_CRASH_AT")


def reach(point: str) -> None:
    """Mark that the write path has reached ``point``; die here if asked to."""
    if _crash_at == point:
        os._exit(137)
