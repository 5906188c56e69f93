"""Appending to ``audit/audit.jsonl``: engram's lines in a format memoryd's own verifier accepts.

Each engram line carries ``seq, ts, actor, event_type, scope_hash, target_id, details, prev_hash,
this_hash``. ``prev_hash`` follows memoryd's rule (sha256 of the previous line minus its prev_hash), so
memoryd keeps verifying and appending; ``this_hash`` additionally covers the whole history. Appends take
``flock`` on the file (memoryd locks the same way), read only the tail, and fsync.

This module is the writer (every mutation's event comes through :func:`append_events`) and the explicit
repair of a torn tail; :mod:`engram.store.audit.verify` reads the chain and :mod:`engram.store.audit.checkpoints`
pins it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from engram.store.audit import fastjson
from engram.store.audit.fastjson import canonical_json
from engram.store.errors import StoreError
from engram.store.write.atomic import ensure_dir, open_regular, write_atomic

GENESIS = "0" * 64
SET_ASIDE = "audit_lines_set_aside"  # engram's event naming bad lines its repair copied aside
_TAIL_CHUNK = 64 * 1024


class TornTail(StoreError):
    """The log's last line has no newline (a crashed writer): appending would glue onto it."""


def memoryd_link(prev_line: dict[str, Any]) -> str:
    """memoryd's ``prev_hash`` for the line after ``prev_line``. A line that cannot be written as UTF-8 (a lone
    surrogate escape in a string) cannot be hashed: memoryd's writer then starts the chain again, at genesis."""
    try:
        return hashlib.sha256(fastjson.memoryd(prev_line, "prev_hash")).hexdigest()
    except UnicodeEncodeError:
        return GENESIS


def this_hash(line: dict[str, Any]) -> str:
    """engram's cumulative hash: covers ``prev_hash`` and every other field of the line."""
    digest = hashlib.sha256(line["prev_hash"].encode("utf-8", "surrogatepass"))
    digest.update(fastjson.canonical(line, "this_hash"))
    return "sha256:" + digest.hexdigest()


def line_hash(raw: bytes) -> str:
    """A line's identity (a checkpoint's ``log_id`` is line 1's): sha256 of its bytes without the newline."""
    return "sha256:" + hashlib.sha256(raw.rstrip(b"\n")).hexdigest()


def accumulate(acc: str, raw: bytes) -> str:
    """The running digest of the log up to and including ``raw``: ``acc_n = sha256(acc_n-1 \\n line_n)``.

    memoryd's ``prev_hash`` covers only the previous line's fields (not its prev_hash), so a memoryd line cuts
    the chain's coverage of history: a rewrite before it, with later hashes recomputed, verifies. A checkpoint
    therefore pins this accumulator, which covers every byte before it and advances line by line.
    """
    return "sha256:" + hashlib.sha256(acc.encode("ascii") + b"\n" + raw.rstrip(b"\n")).hexdigest()


def accumulate_all(acc: str, lines: list[bytes]) -> str:
    """:func:`accumulate` over each of ``lines`` (without their newlines) in turn."""
    sha256 = hashlib.sha256
    for line in lines:
        acc = "sha256:" + sha256(acc.encode("ascii") + b"\n" + line).hexdigest()
    return acc


# Detail keys whose values are identifiers, counts, states or times: kept as they are on engram's lines. Every
# other string there (a title, a reason, an entity's name, a project path, a source file's name) is replaced by
# its sha256, on every scope's lines: audit.jsonl is read by every tool of the root and kept for good, and a scope
# marked sensitive later must not leave its text behind in it (the chain cannot be rewritten). Titles are looked
# up when a line is shown (see engram.store.audit.titles). An unknown key is hashed: a new event cannot leak.
IDENTIFIER_KEYS = frozenset(
    {
        "op_id",
        "promotion_id",
        "slug",
        "slugs",
        "older",
        "newer",
        "supersedes",
        "dimmed",
        "kept",
        "old_slug",
        "source_session_slug",
        "merged",
        "subject",
        "object",
        "removed",
        "restored",
        "path",
        "encrypted",
        "moved_to",
        "was",
        "undid",
        "from",
        "to",
        "decay_state",
        "steps",
        "ttl_days",
        "type",
        "kind",
        "system",
        "source",
        "fix",
        "fields",
        "count",
        "files",
        "bytes",
        "lines",
        "waiting",
        "relations",
        "confidence",
        "scopes",
        "new_source",
        "bound_again",
        "duration",
        "expires_at",
        "task_id",
        "head",
        "signed",  # a root's move: when the adopted checkpoint was signed
        "revision",  # a history revision's id (a restore, a push): a hash of the files, no text
        "versions",  # how many versions a history forget removed
        "conflict",  # a sync conflict's id: a hash of the set-aside copy's path
        "ts",
        "line",  # a repair's set-aside lines: (line, sha256, cut)
        "sha256",
        "cut",
        "id",  # findings seen: (kind, id, fingerprint), and the selector that chose them
        "fingerprint",
        "selector",
        "engram",
        "now",
        "status",
        "until",  # a snooze's end
        "edited",  # the names of the fields an approval edited, and the kinds of secret it redacted
        "redacted",
        "acknowledged",  # the poisoning screen's rule ids a person acknowledged when approving (never the text)
        "rules",  # the same ids when engram quarantines or releases
    }
)


def private_details(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` as an engram line carries them: identifiers as they are, text hashed."""
    return {key: value if key in IDENTIFIER_KEYS else _hashed(value) for key, value in details.items()}


def _hashed(value: Any) -> Any:
    if isinstance(value, str):
        return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
    if isinstance(value, list):
        return [_hashed(item) for item in value]
    if isinstance(value, dict):
        return private_details(value)
    return value  # numbers, booleans, None: no text


def append_event(
    path: Path,
    *,
    actor: str,
    event_type: str,
    scope_hash: str | None,
    target_id: str | None,
    details: dict[str, Any],
    ts: datetime | None = None,
) -> dict[str, Any]:
    """Append one event line (see :func:`append_events`); returns the line written, or the line already there
    when a crashed writer appended this ``op_id`` before."""
    event = {
        "actor": actor,
        "event_type": event_type,
        "scope_hash": scope_hash,
        "target_id": target_id,
        "details": details,
    }
    written, last = append_events(path, [event], ts=ts)
    if written:
        return written[0]
    assert last is not None  # nothing written means the last line already carries this op_id
    return last


def append_events(
    path: Path,
    events: list[dict[str, Any]],
    ts: datetime | None = None,
    position_hint: tuple[int, int] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Append events (dicts of actor, event_type, scope_hash, target_id, details) under one exclusive lock with
    one write and one fsync; returns the lines written and the log's last line before them.

    Events are appended in order, so if the log's last line carries the ``op_id`` of one of them (a writer that
    died after appending, before it could dequeue), that event and those before it are already in the log and
    are not written again. ``position_hint`` (``(lines, offset)`` of the newest checkpoint) spares counting
    the log's lines from the start.
    """
    ensure_dir(path.parent)
    fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "r+b", buffering=0) as fh:  # unbuffered: the lines go out in one write(2)
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            last, seq = _tail(fh, path, position_hint)
            before = last
            done = _op_id(last) if last is not None else None
            ids = [e["details"].get("op_id") for e in events]
            if done is not None and done in ids:
                events = events[ids.index(done) + 1 :]
            stamp = (ts or datetime.now(UTC)).isoformat()
            written, raw = [], []
            for event in events:
                seq += 1
                line: dict[str, Any] = {
                    "seq": seq,
                    "ts": stamp,
                    "actor": event["actor"],
                    "event_type": event["event_type"],
                    "scope_hash": event["scope_hash"],
                    "target_id": event["target_id"],
                    "details": canonical_json(event["details"]),
                    "prev_hash": memoryd_link(last) if last is not None else GENESIS,
                }
                line["this_hash"] = this_hash(line)
                raw.append(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
                written.append(line)
                last = line
            if raw:
                data = memoryview(b"".join(raw))
                while data:  # an unbuffered write may take less than all of a large batch
                    data = data[fh.write(data) :]
                os.fsync(fh.fileno())
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return written, before


def open_log(path: str | Path) -> BinaryIO:
    """The log, open for reading: a regular file only. A FIFO in its place would hang a verify forever, and a
    symlink would have it read (or a repair rewrite) another file: both raise
    :class:`~engram.store.write.atomic.NotRegularFile`, an OSError, which a verify reports as unreadable."""
    return os.fdopen(open_regular(path), "rb")


def first_line(path: Path) -> bytes | None:
    """The log's first line without its newline (what a checkpoint's ``log_id`` hashes), or None if empty."""
    try:
        with open_log(path) as fh:
            raw = fh.readline()
    except FileNotFoundError:
        return None
    return raw.rstrip(b"\n") or None


def first_engram_line(path: Path, besides: set[str]) -> int | None:
    """The number of the first line engram wrote for an operation not in ``besides`` (the events being appended
    right now), or None: the log's own evidence that engram has finished a write here, and so has checkpointed it.
    Lines of other writers are skipped without being parsed."""
    try:
        fh = open_log(path)
    except FileNotFoundError:
        return None
    with fh:
        for n, raw in enumerate(fh, 1):
            if b'"this_hash"' not in raw:
                continue
            try:
                line = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(line, dict) and "this_hash" in line and _op_id(line) not in besides:
                return n
    return None


def heads_at(path: Path, sizes: set[int]) -> dict[int, tuple[str, int]]:
    """The running digest and byte offset just past line ``n`` for each ``n`` in ``sizes`` the log has as complete
    lines: what a checkpoint of ``n`` lines pinned, if it is this log's. One read, stopping at the largest."""
    found: dict[int, tuple[str, int]] = {}
    if not sizes:
        return found
    last, acc, offset = max(sizes), "", 0
    try:
        fh = open_log(path)
    except FileNotFoundError:
        return found
    with fh:
        for n, raw in enumerate(fh, 1):
            if n > last or not raw.endswith(b"\n"):
                break
            acc, offset = accumulate(acc, raw), offset + len(raw)
            if n in sizes:
                found[n] = (acc, offset)
    return found


def fold_lines(path: Path, size: int, acc: str, offset: int) -> tuple[int, str, int] | None:
    """Fold the complete lines after byte ``offset`` into the running digest: ``(lines, digest, offset)``
    at the log's last complete line. None if ``offset`` is no longer a line end of this file (it was cut)."""
    try:
        fh = open_log(path)
    except FileNotFoundError:
        return None
    with fh:
        end = fh.seek(0, os.SEEK_END)
        if offset > end:
            return None
        if offset > 0:
            fh.seek(offset - 1)
            if fh.read(1) != b"\n":
                return None
        fh.seek(offset)
        for raw in fh:
            if not raw.endswith(b"\n"):
                break  # a torn tail is not part of the log until repaired
            size, acc, offset = size + 1, accumulate(acc, raw), offset + len(raw)
    return size, acc, offset


def repair_torn_tail(path: Path, now: datetime) -> tuple[Path, int] | None:
    """Move a torn last line (no newline) into ``audit.jsonl.torn-<time>`` beside the log and cut it off.

    Only bytes after the last newline are touched; valid lines are never rewritten. Returns the fragment's
    file and size, or None when the tail is whole. The caller records the repair as an event.
    """
    with _locked(path) as fh:
        if fh is None:
            return None
        size = fh.seek(0, os.SEEK_END)
        keep = _last_newline_end(fh, size)
        if keep == size:
            return None
        fh.seek(keep)
        fragment = fh.read(size - keep)
        aside = _beside(path, "torn", now)
        write_atomic(aside, fragment, mode=0o600)
        fh.truncate(keep)
        os.fsync(fh.fileno())
    return aside, len(fragment)


@contextmanager
def _locked(path: Path) -> Iterator[BinaryIO | None]:
    """The log open for a repair under the writers' lock (memoryd's ``flock``); None if there is no log."""
    try:
        fd = open_regular(path, os.O_RDWR)
    except FileNotFoundError:
        yield None
        return
    with os.fdopen(fd, "r+b", buffering=0) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield fh
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _beside(path: Path, what: str, now: datetime) -> Path:
    """Where a repair keeps what it took out of the log: ``audit.jsonl.<what>-<time>``."""
    return path.with_name(f"{path.name}.{what}-{now.strftime('%Y%m%dT%H%M%S%fZ')}")


def set_aside(path: Path, bad: set[int], covered: int, now: datetime) -> tuple[Path, list[dict[str, Any]]] | None:
    """Copy the whole lines numbered ``bad`` that are not JSON objects into ``audit.jsonl.aside-<time>`` beside
    the log; returns that file and one record per line (number, :func:`line_hash`, size) for the repair's event.

    A bad line that is the log's last, after the ``covered`` lines a checkpoint pins, is cut off (memoryd gluing
    its event onto a torn tail leaves exactly that), so memoryd's verifier passes again. Any other stays where it
    is: removing it would move every later line, and engram's ``seq`` is a line's position. It is then known by
    the event (see :mod:`engram.store.audit.verify`), not hidden. A line that parses by now is left out.
    """
    with _locked(path) as fh:
        if fh is None:
            return None
        found: dict[int, tuple[int, bytes]] = {}  # line -> (offset, raw)
        offset, n = 0, 0
        with open_log(path) as lines:  # read under the writers' lock held on ``fh``
            for n, raw in enumerate(lines, 1):
                if n in bad and raw.endswith(b"\n") and raw.strip() and _parse(raw) is None:
                    found[n] = (offset, raw)
                offset += len(raw)
        if not found:
            return None
        last = max(found)
        cut = last == n and last > covered and found[last][0] + len(found[last][1]) == offset
        aside = _beside(path, "aside", now)
        write_atomic(aside, b"".join(raw for _, raw in found.values()), mode=0o600)
        if cut:
            fh.truncate(found[last][0])
            os.fsync(fh.fileno())
    return aside, [
        {"line": line, "sha256": line_hash(raw), "bytes": len(raw), "cut": cut and line == last}
        for line, (_, raw) in found.items()
    ]


def _last_newline_end(fh, size: int) -> int:
    """Offset just after the file's last newline (0 if it has none)."""
    pos = size
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        fh.seek(pos)
        chunk = fh.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos + i + 1
    return 0


def _op_id(line: dict[str, Any]) -> str | None:
    try:
        details = json.loads(line.get("details") or "{}")
    except (TypeError, json.JSONDecodeError):
        return None
    return details.get("op_id") if isinstance(details, dict) else None


def _tail(fh, path: Path, hint: tuple[int, int] | None) -> tuple[dict[str, Any] | None, int]:
    """The last non-blank line's object (what memoryd's rule links the next line to) and the number of lines
    in the file: the next line's position, which is engram's ``seq``.

    The count never trusts a ``seq`` found in the file (another writer's numbering may be there): it counts
    newlines, from ``hint`` = ``(lines, offset)`` of a checkpoint when that offset is still a line end, else
    from the start.
    """
    size = fh.seek(0, os.SEEK_END)
    if size == 0:
        return None, 0
    fh.seek(size - 1)
    if fh.read(1) != b"\n":
        raise TornTail(f"{path}: the last line is incomplete (a crashed writer); run `engram audit repair`")
    return _last_object(fh, size), _count_lines(fh, size, hint)


def _last_object(fh, size: int) -> dict[str, Any] | None:
    buf, pos = b"", size
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        fh.seek(pos)
        buf = fh.read(step) + buf
        if pos > 0 and b"\n" not in buf:
            continue
        complete = buf if pos == 0 else buf[buf.find(b"\n") + 1 :]  # drop a line begun before this chunk
        for raw in reversed(complete.split(b"\n")):
            if raw.strip():
                return _parse(raw)
    return None  # only blank lines: the next line starts the chain


def _count_lines(fh, size: int, hint: tuple[int, int] | None) -> int:
    lines, offset = 0, 0
    if hint is not None and 0 < hint[1] <= size:
        fh.seek(hint[1] - 1)
        if fh.read(1) == b"\n":
            lines, offset = hint
    fh.seek(offset)
    while offset < size:
        chunk = fh.read(min(1 << 20, size - offset))
        if not chunk:
            break
        lines += chunk.count(b"\n")
        offset += len(chunk)
    return lines


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The last line's object; None when it is not a JSON object. The next line then starts a new chain
    (``prev_hash`` of zeros), as memoryd's writer does after a corrupt line: the bad line never blocks the log,
    verify reports it, and ``engram audit repair`` sets it aside."""
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None
