"""A verified prefix: what a full verify of the audit log found, kept so the next verify of the same bytes does
not read them line by line again.

Verifying holds every line to its author's rule: a JSON parse, memoryd's link recomputed, engram's hash
recomputed. A checkpoint alone cannot spare that work, since it pins the log's bytes whether they were valid or
not (engram advances it on every write). So a verify that finds the log valid also records, signed with engram's
checkpoint key, the sha256 of the bytes it read, how many lines of each author they held, and the state the
chain was left in (the link the next line must carry, engram's numbering). The next verify hashes that many
bytes of the log in one pass; when they are the same, it starts from that state at the next line, and when they
are not (a line edited, cut or inserted), it reads every line again and reports the change at its line.

The record is evidence of nothing on its own: one that is missing, damaged, unsigned or signed by another key is
ignored, and the verify reads the whole log.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

FORMAT = "engram-verified-prefix/1"
CHUNK = 1 << 20  # bytes hashed at a time


@dataclass(frozen=True)
class ChainState:
    """Where verifying stood after a line: what the next line is checked against."""

    link: str | None = None  # memoryd's prev_hash for the next line; None before the first line
    prev_line: int = 0  # the last non-blank line
    unknown: bool = False  # it could not be parsed: the next link cannot be checked
    last_seq: tuple[int, int] | None = None  # the last engram line's (seq, line)
    legacy_base: int = 0
    legacy_since: int = 0
    unparsable: tuple[tuple[int, str, str], ...] = ()  # (line, hash, reason) of lines that are not JSON objects
    named: tuple[tuple[int, str], ...] = ()  # (line, hash) set aside by a repair's event


@dataclass(frozen=True)
class VerifiedPrefix:
    log_id: str  # hash of line 1
    lines: int
    offset: int  # bytes of those lines
    head: str  # the running digest at the last line (what a checkpoint of that size pins)
    digest: str  # sha256 of the first ``offset`` bytes
    memoryd_lines: int
    engram_lines: int
    legacy_numbered: int
    state: ChainState
    pins: tuple[tuple[int, str], ...] = ()  # (size, head) of the checkpoints the verify matched inside it
    public_key: str = ""
    sig: str = ""
    format: str = FORMAT

    def payload(self) -> bytes:
        fields = {k: v for k, v in asdict(self).items() if k != "sig"}
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def signed(self, public_key: str, sig: str) -> VerifiedPrefix:
        return VerifiedPrefix(**{**self.__dict__, "public_key": public_key, "sig": sig})

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> VerifiedPrefix | None:
        """None for anything that is not a record of this format."""
        try:
            data: dict[str, Any] = json.loads(text)
            if data.get("format") != FORMAT:
                return None
            state = data.pop("state")
            state["last_seq"] = None if state["last_seq"] is None else tuple(state["last_seq"])
            state["unparsable"] = tuple(tuple(item) for item in state["unparsable"])
            state["named"] = tuple(tuple(item) for item in state["named"])
            data["pins"] = tuple(tuple(pin) for pin in data["pins"])
            return cls(**data, state=ChainState(**state))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def read_over(self, log: BinaryIO) -> Any | None:
        """The sha256 of the first ``offset`` bytes of ``log`` (read from its start), to go on hashing what
        follows, when they are the bytes this record was made of; None, and ``log`` back at its start, when
        they are not."""
        digest, left = hashlib.sha256(), self.offset
        while left and (chunk := log.read(min(CHUNK, left))):
            digest.update(chunk)
            left -= len(chunk)
        if left or digest.hexdigest() != self.digest:
            log.seek(0)
            return None
        return digest


def record_path(checkpoint_path: Path) -> Path:
    """Where the verified prefix of a root's log is kept: beside its checkpoint, in engram's state directory."""
    return checkpoint_path.with_suffix(".verified.json")
