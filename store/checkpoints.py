"""Signed checkpoints of the audit log, kept outside the data root: what makes truncation and rewrites visible.

A hash chain alone cannot tell a shortened log, or one rewritten with every later hash recomputed, from an
honest one. A checkpoint pins ``{log_id: hash of line 1, size: lines, head: running digest of lines 1..size}``
(see :func:`store.audit.accumulate`), signed with
an Ed25519 key in engram's config directory (0600) and stored in engram's state directory, so a person (or
process) able to rewrite the data root cannot also rewrite the evidence without the key. A checkpoint can be
printed and kept elsewhere, and checked later against the log.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from store.atomic import ensure_dir, write_atomic
from store.audit import first_line, fold_lines, line_hash
from store.errors import StoreError

KEY_FILE = "audit-signing-key.pem"
FORMAT = "engram-checkpoint/1"  # what ``head`` means; a checkpoint of another format is never compared


class CheckpointRejected(StoreError):
    """A checkpoint whose signature does not verify: forged, altered, or signed by another key."""


@dataclass(frozen=True)
class Checkpoint:
    root: str
    log_id: str
    size: int
    head: str  # running digest of lines 1..size
    offset: int  # byte offset just past line ``size``: where the next advance starts reading
    ts: str
    public_key: str  # base64 raw Ed25519 key that signed it (trusted only when it is engram's own)
    sig: str = ""
    format: str = FORMAT

    def payload(self) -> bytes:
        fields = {k: v for k, v in asdict(self).items() if k != "sig"}
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, source: str) -> Checkpoint:
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise CheckpointRejected(f"checkpoint rejected: {source} is of format {data.get('format')!r}, not "
                                         f"{FORMAT!r} (another engram version, or forged); if you trust the log, "
                                         "delete that file and run `engram audit verify` to start a new one")
            return cls(root=str(data["root"]), log_id=str(data["log_id"]), size=int(data["size"]),
                       head=str(data["head"]), offset=int(data["offset"]), ts=str(data["ts"]),
                       public_key=str(data["public_key"]), sig=str(data["sig"]), format=FORMAT)
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointRejected(f"{source}: not a checkpoint ({exc})") from None


def _public_b64(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


class CheckpointBook:
    """The checkpoints of one data root: the newest one signed, in engram's state directory."""

    def __init__(self, root: Path, state_dir: Path, config_dir: Path) -> None:
        self.root = str(root.resolve())
        root_id = hashlib.sha256(self.root.encode("utf-8")).hexdigest()[:16]
        self.path = state_dir / "checkpoints" / f"{root_id}.json"
        self.key_path = config_dir / KEY_FILE
        self._key: Ed25519PrivateKey | None = None

    def key(self) -> Ed25519PrivateKey:
        """engram's signing key, created (0600, directory 0700) on first use."""
        if self._key is None:
            if self.key_path.exists():
                try:
                    loaded = serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)
                except ValueError as exc:
                    raise StoreError(f"{self.key_path}: not a signing key ({exc})") from None
                if not isinstance(loaded, Ed25519PrivateKey):
                    raise StoreError(f"{self.key_path}: not an Ed25519 key")
                self._key = loaded
            else:
                ensure_dir(self.key_path.parent, mode=0o700)
                self._key = Ed25519PrivateKey.generate()
                pem = self._key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption())
                write_atomic(self.key_path, pem, mode=0o600)
        return self._key

    @property
    def public_key(self) -> str:
        return _public_b64(self.key().public_key())

    def latest(self) -> Checkpoint | None:
        """The stored checkpoint, verified against engram's own key; None if there is none yet."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        checkpoint = Checkpoint.from_json(text, str(self.path))
        self.verify_signature(checkpoint, trusted=True)
        return checkpoint

    def verify_signature(self, checkpoint: Checkpoint, trusted: bool) -> None:
        """``trusted``: only engram's own key counts. Otherwise the key the checkpoint names is used (a printed
        checkpoint kept elsewhere), and the caller says whether it is engram's."""
        if trusted and checkpoint.public_key != self.public_key:
            raise CheckpointRejected("checkpoint rejected: it is not signed by this engram's key")
        try:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(checkpoint.public_key))
            key.verify(base64.b64decode(checkpoint.sig), checkpoint.payload())
        except (InvalidSignature, ValueError):
            raise CheckpointRejected("checkpoint rejected: its signature does not verify (forged or altered)") from None

    def sign(self, log_id: str, size: int, head: str, offset: int, now: datetime) -> Checkpoint:
        unsigned = Checkpoint(self.root, log_id, size, head, offset, now.isoformat(), self.public_key)
        sig = base64.b64encode(self.key().sign(unsigned.payload())).decode("ascii")
        return Checkpoint(**{**asdict(unsigned), "sig": sig})

    def advance(self, log: Path, now: datetime, verified: tuple[int, str, int] | None = None
                ) -> Checkpoint | None:
        """Move the stored checkpoint to the log's last complete line, and return it.

        From a stored checkpoint only the lines after its offset are read and folded into its digest, so what
        it pinned stays pinned even if the file was rewritten meanwhile (verify will show it). ``verified`` is
        ``(lines, digest, offset)`` from a full verify, taken as is. Returns None, and keeps the stored
        checkpoint as evidence, when the log no longer continues it (replaced, or cut below its offset). A
        forged stored checkpoint raises :class:`CheckpointRejected` and is never overwritten.
        """
        current = self.latest()
        first = first_line(log)
        if first is None or (current is not None and current.log_id != line_hash(first)):
            return None
        if verified is None:
            start = (0, "", 0) if current is None else (current.size, current.head, current.offset)
            verified = fold_lines(log, *start)
            if verified is None:
                return None
        size, head, offset = verified
        if current is not None and current.size >= size:
            return current
        checkpoint = self.sign(line_hash(first), size, head, offset, now)
        ensure_dir(self.path.parent, mode=0o700)
        write_atomic(self.path, checkpoint.to_json().encode("utf-8"), mode=0o600)
        return checkpoint


def default_book(root: Path) -> CheckpointBook:
    from store.paths import engram_config_dir, engram_state_dir

    return CheckpointBook(root, engram_state_dir(), engram_config_dir())
