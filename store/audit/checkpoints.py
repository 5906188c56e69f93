"""Signed checkpoints of the audit log, kept outside the data root: what makes truncation and rewrites visible.

A hash chain alone cannot tell a shortened log, or one rewritten with every later hash recomputed, from an
honest one. A checkpoint pins ``{log_id: hash of line 1, size: lines, head: running digest of lines 1..size}``
(see :func:`engram.store.audit.chain.accumulate`), signed with
an Ed25519 key in engram's config directory (0600) and stored in engram's state directory, so a person (or
process) able to rewrite the data root cannot also rewrite the evidence without the key. A checkpoint can be
printed and kept elsewhere, and checked later against the log.

Deleting the stored checkpoint must not switch that protection off. Once engram has finished a write to a log,
a missing checkpoint is a finding, never a reason to sign the log afresh: the evidence is the log's own engram
lines, and the copy engram keeps in a second directory the user chooses (``[audit] checkpoint_copy`` in
config.toml, or ``$ENGRAM_CHECKPOINT_COPY``: another disk, a synced folder, anywhere outside the data root).
Only a person starts a new checkpoint (``engram audit checkpoint --restore``/``--reset``).

A checkpoint is filed under the root's absolute path, but it belongs to a log, not to a place: a root copied or
moved (a backup restored elsewhere, a new disk, ``mv``) has no checkpoint under its new path, and that is not
tampering. :meth:`CheckpointBook.adopt` finds the checkpoint engram signed for the log wherever the root lived,
by what it proves: same first line, and its ``(size, head)`` a prefix of this log. The store then records the
move as an audit event (see :meth:`engram.store.service.Store.record_move`). Copies keep a checkpoint each from
then on, filed under their own paths, so neither makes the other look tampered.

The signature scheme (the ``cryptography`` package) is imported by the first signature made or checked, not
with this module, which every command and the console's first frame import.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.audit import witness
from engram.store.audit.chain import first_engram_line, first_line, fold_lines, heads_at, line_hash, open_log
from engram.store.audit.prefix import VerifiedPrefix, record_path
from engram.store.errors import StoreError
from engram.store.paths import engram_config_dir, engram_state_dir
from engram.store.settings import Settings, load_settings
from engram.store.write.atomic import ensure_dir, write_atomic

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KEY_FILE = "audit-signing-key.pem"
FORMAT = "engram-checkpoint/1"  # what ``head`` means; a checkpoint of another format is never compared


class CheckpointRejected(StoreError):
    """A checkpoint whose signature does not verify: forged, altered, or signed by another key."""


class CheckpointMissing(StoreError):
    """engram has checkpointed this log before and the checkpoint is gone: nothing is signed until a person
    says what to trust."""


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
                raise CheckpointRejected(
                    f"checkpoint rejected: {source} is of format {data.get('format')!r}, not "
                    f"{FORMAT!r} (another engram version, or forged); if you trust the log, "
                    "delete that file and run `engram audit verify` to start a new one"
                )
            return cls(
                root=str(data["root"]),
                log_id=str(data["log_id"]),
                size=int(data["size"]),
                head=str(data["head"]),
                offset=int(data["offset"]),
                ts=str(data["ts"]),
                public_key=str(data["public_key"]),
                sig=str(data["sig"]),
                format=FORMAT,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointRejected(f"{source}: not a checkpoint ({exc})") from None


@dataclass(frozen=True)
class Adoption:
    """A checkpoint engram signed for this log under another root path, found by :meth:`CheckpointBook.adopt`."""

    checkpoint: Checkpoint
    moved: bool  # the root it was signed for no longer holds this log (else this root is a copy of it)


def _public_b64(key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


class CheckpointBook:
    """The checkpoints of one data root: the newest one signed, in engram's state directory, and a copy of it
    in the directory the user chose (``copy_dir``), which is never created by engram: a drive that is not
    mounted must not be replaced by a directory on the local disk."""

    def __init__(self, root: Path, state_dir: Path, config_dir: Path, copy_dir: Path | None = None) -> None:
        self.root = str(root.resolve())
        self.path = state_dir / "checkpoints" / _file_name(self.root)
        self.copy_path = None if copy_dir is None else copy_dir / _file_name(self.root)
        self.name = self.path.stem  # the root's name in the OS keyring's witness (see engram.store.audit.witness)
        self.key_path = config_dir / KEY_FILE
        self.warning: str | None = None  # set when the copy could not be kept up to date
        self._key: Ed25519PrivateKey | None = None

    def key(self) -> Ed25519PrivateKey:
        """engram's signing key, created (0600, directory 0700) on first use."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

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
                pem = self._key.private_bytes(
                    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
                )
                write_atomic(self.key_path, pem, mode=0o600)
        return self._key

    @property
    def public_key(self) -> str:
        return _public_b64(self.key().public_key())

    def latest(self) -> Checkpoint | None:
        """The stored checkpoint, verified against engram's own key; None if there is none yet."""
        return self._load(self.path)

    def kept_copy(self) -> Checkpoint | None:
        """The copy in the user's chosen directory, verified against engram's own key; None if there is none."""
        return None if self.copy_path is None else self._load(self.copy_path)

    def _load(self, path: Path) -> Checkpoint | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise CheckpointRejected(f"{path}: unreadable checkpoint ({exc})") from None
        checkpoint = Checkpoint.from_json(text, str(path))
        self.verify_signature(checkpoint, trusted=True)
        return checkpoint

    def missing(self, log: Path, besides: set[str]) -> str | None:
        """Why this log should have a checkpoint, asked when the stored one is absent and none could be adopted
        (the finding "checkpoint missing"), or None when it need not have one yet. The innocent causes come
        first, then what an attacker would have done, then the commands that settle it.

        ``besides``: op_ids of engram events being appended right now, which do not count as a write engram had
        finished (and checkpointed) before: a first write that crashed before its checkpoint is no alarm.
        """
        fix = (
            ". If you kept a checkpoint, `engram audit checkpoint --restore FILE` checks the log against it; if you "
            "trust the log as it is, `engram audit checkpoint --reset` starts a new one (both are recorded)"
        )
        copy = self.kept_copy()
        if copy is not None:
            return (
                f"checkpoint missing: {self.path} is gone (engram's state directory cleared, or the checkpoint "
                f"deleted to hide a rewrite); the copy of {copy.ts} ({copy.size} lines) is still at "
                f"{self.copy_path}: `engram audit checkpoint --restore {self.copy_path}` checks the log against it"
            )
        line = first_engram_line(log, besides)
        if line is None:
            return None
        others = "".join(f"; {why}" for why in self.unmatched(log))
        return (
            f"checkpoint missing: engram has written to this log (line {line}) and no checkpoint of engram's "
            f"matches it. Likely innocent causes: engram's state directory is new or was cleared (a new machine or "
            f"user), or this root was copied from a machine whose checkpoints are not here. Otherwise the checkpoint "
            f"was deleted to hide a rewrite{others}{fix}"
        )

    def adopt(self, log: Path) -> Checkpoint | None:
        """This root's checkpoint; when it has none of its own, the one engram signed for this log under another
        root path (it was moved or copied here), filed under this root's path as it was signed (its ``root``
        still names the old place: :meth:`engram.store.service.Store.record_move` records the move, and the next
        advance signs it for here). A moved root's old files are removed, so a new root made at the old place
        does not look like a replaced log. None if there is nothing to adopt."""
        current = self.latest()
        if current is not None or (self.copy_path is not None and self.copy_path.exists()):
            return current  # a kept copy of this root's own: its deletion is a finding, see missing()
        found = self.adoptable(log)
        if found is None:
            return None
        ensure_dir(self.path.parent, mode=0o700)
        write_atomic(self.path, found.checkpoint.to_json().encode("utf-8"), mode=0o600)
        self._witness(found.checkpoint)
        if found.moved:
            for old in self._files_of(found.checkpoint.root):
                old.unlink(missing_ok=True)
            witness.forget(Path(_file_name(found.checkpoint.root)).stem)
        return found.checkpoint

    def adoptable(self, log: Path) -> Adoption | None:
        """The largest checkpoint of another root's, signed with engram's key, that pins a prefix of ``log``."""
        matching = [c for c in self._others(log) if self._pins_prefix(log, [c])]
        if not matching:
            return None
        best = max(matching, key=lambda c: (c.size, c.ts))
        return Adoption(best, moved=not holds_log(Path(best.root), best.log_id))

    def unmatched(self, log: Path) -> list[str]:
        """What the other roots' checkpoints of this log say, when none pins a prefix of it: a restored backup
        older than the newest checkpoint looks exactly like a log cut short, so both are named."""
        said, others = [], self._others(log)
        count = _count_lines(log) if others else 0
        for other in others:
            if count < other.size:
                said.append(
                    f"the checkpoint of {other.root} ({other.ts}) records {other.size} lines of this log and it has "
                    f"{count}: this root is a backup from before that checkpoint, or lines were removed"
                )
            else:
                said.append(
                    f"the checkpoint of {other.root} ({other.ts}) shares this log's first line but not its first "
                    f"{other.size} lines: the copies diverged before that checkpoint, or the history was rewritten"
                )
        return said

    def _others(self, log: Path) -> list[Checkpoint]:
        """Checkpoints engram signed for this log (same first line) under other root paths: the state directory's
        and the copy directory's, each verified against engram's own key (a forged one is skipped)."""
        first = first_line(log)
        if first is None:
            return []
        log_id, own = line_hash(first), {self.path, self.copy_path}
        found: dict[tuple[str, int, str], Checkpoint] = {}
        for folder in (self.path.parent, None if self.copy_path is None else self.copy_path.parent):
            for path in sorted(folder.glob("*.json")) if folder is not None and folder.is_dir() else []:
                if path in own:
                    continue
                try:
                    checkpoint = self._load(path)
                except (CheckpointRejected, StoreError):
                    continue
                if checkpoint is not None and checkpoint.log_id == log_id and checkpoint.root != self.root:
                    found.setdefault((checkpoint.root, checkpoint.size, checkpoint.head), checkpoint)
        return list(found.values())

    @staticmethod
    def _pins_prefix(log: Path, checkpoints: list[Checkpoint]) -> bool:
        heads = heads_at(log, {c.size for c in checkpoints})
        return all(heads.get(c.size) == (c.head, c.offset) for c in checkpoints)

    def _files_of(self, root: str) -> list[Path]:
        """Where a root's checkpoint and its copy are filed."""
        name = _file_name(root)
        files = [self.path.parent / name]
        if self.copy_path is not None:
            files.append(self.copy_path.parent / name)
        return files

    def verify_signature(self, checkpoint: Checkpoint, trusted: bool) -> None:
        """``trusted``: only engram's own key counts. Otherwise the key the checkpoint names is used (a printed
        checkpoint kept elsewhere), and the caller says whether it is engram's."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

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

    def advance(
        self, log: Path, now: datetime, verified: tuple[int, str, int] | None = None, besides: set[str] | None = None
    ) -> Checkpoint | None:
        """Move the stored checkpoint to the log's last complete line, and return it.

        From a stored checkpoint only the lines after its offset are read and folded into its digest, so what
        it pinned stays pinned even if the file was rewritten meanwhile (verify will show it). ``verified`` is
        ``(lines, digest, offset)`` from a full verify, taken as is. Returns None, and keeps the stored
        checkpoint as evidence, when the log no longer continues it (replaced, or cut below its offset). A
        forged stored checkpoint raises :class:`CheckpointRejected` and is never overwritten; a missing one where
        engram has written before (see :meth:`missing`; ``besides`` as there) raises :class:`CheckpointMissing`.
        """
        current = self.latest()
        if current is None and (why := self.missing(log, besides or set())):
            raise CheckpointMissing(why)
        first = first_line(log)
        if first is None or (current is not None and current.log_id != line_hash(first)):
            return None
        if verified is None:
            start = (0, "", 0) if current is None else (current.size, current.head, current.offset)
            verified = fold_lines(log, *start)
            if verified is None:
                return None
        size, head, offset = verified
        if current is None or current.size < size:
            current = self.sign(line_hash(first), size, head, offset, now)
            ensure_dir(self.path.parent, mode=0o700)
            write_atomic(self.path, current.to_json().encode("utf-8"), mode=0o600)
            self._witness(current)
        self._keep_copy(current)
        return current

    def verified_prefix(self) -> VerifiedPrefix | None:
        """The record of the last valid verify (see :mod:`engram.store.audit.prefix`), when engram's own key
        signed it; None otherwise, and the next verify reads every line."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            record = VerifiedPrefix.from_json(record_path(self.path).read_text(encoding="utf-8"))
            if record is None or record.public_key != self.public_key:
                return None
            Ed25519PublicKey.from_public_bytes(base64.b64decode(record.public_key)).verify(
                base64.b64decode(record.sig), record.payload()
            )
        except (OSError, UnicodeDecodeError, InvalidSignature, ValueError):
            return None
        return record

    def keep_prefix(self, record: VerifiedPrefix) -> None:
        """Sign and keep ``record`` for the next verify; a state directory that cannot be written keeps none."""
        unsigned = record.signed(self.public_key, "")
        signed = unsigned.signed(self.public_key, base64.b64encode(self.key().sign(unsigned.payload())).decode())
        try:
            ensure_dir(self.path.parent, mode=0o700)
            write_atomic(record_path(self.path), signed.to_json().encode("utf-8"), mode=0o600)
        except OSError:
            pass

    def witnessed(self) -> Checkpoint | None:
        """The OS keyring's witness of this root's newest checkpoint, as an (unsigned) checkpoint to verify the
        log against; None where there is no keyring or no witness."""
        kept = witness.read(self.name)
        if kept is None:
            return None
        return Checkpoint(self.root, kept.log_id, kept.size, kept.head, kept.offset, kept.ts, public_key="")

    def _witness(self, checkpoint: Checkpoint, replace: bool = False) -> None:
        kept = witness.Witness(checkpoint.log_id, checkpoint.size, checkpoint.head, checkpoint.offset, checkpoint.ts)
        witness.raise_to(self.name, kept, replace=replace)

    def _keep_copy(self, checkpoint: Checkpoint) -> None:
        """Bring the copy up to ``checkpoint``; a copy directory that is gone is a warning, not an error (the
        checkpoint itself is safe, and the next advance tries again)."""
        self.warning = None
        if self.copy_path is None:
            return
        text = checkpoint.to_json()
        try:
            if self.copy_path.read_text(encoding="utf-8") == text:
                return
        except (OSError, UnicodeDecodeError):
            pass
        if not self.copy_path.parent.is_dir():
            self.warning = f"checkpoint copy not kept: {self.copy_path.parent} is not a directory (not mounted?)"
            return
        try:
            write_atomic(self.copy_path, text.encode("utf-8"), mode=0o600)
        except OSError as exc:
            self.warning = f"checkpoint copy not kept at {self.copy_path}: {exc.strerror or exc}"

    def start(self, log: Path, now: datetime) -> Checkpoint | None:
        """Sign the log as it is now, replacing whatever is stored: only on a person's word (``--reset``,
        ``--restore``), never on the way through a write."""
        first = first_line(log)
        folded = fold_lines(log, 0, "", 0)
        if first is None or folded is None:
            return None
        checkpoint = self.sign(line_hash(first), *folded, now)
        ensure_dir(self.path.parent, mode=0o700)
        write_atomic(self.path, checkpoint.to_json().encode("utf-8"), mode=0o600)
        self._witness(checkpoint, replace=True)
        self._keep_copy(checkpoint)
        return checkpoint


def _file_name(root: str) -> str:
    return hashlib.sha256(root.encode("utf-8")).hexdigest()[:16] + ".json"


def holds_log(root: Path, log_id: str) -> bool:
    """Whether ``root`` still holds the log ``log_id`` names (then a root with that log elsewhere is a copy)."""
    try:
        first = first_line(root / "audit" / "audit.jsonl")
    except OSError:
        return False
    return first is not None and line_hash(first) == log_id


def _count_lines(log: Path) -> int:
    try:
        with open_log(log) as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


COPY_ENV = "ENGRAM_CHECKPOINT_COPY"


def copy_dir_setting(settings: Settings | None = None) -> Path | None:
    """Where the user keeps the checkpoint's copy: ``$ENGRAM_CHECKPOINT_COPY``, else ``[audit] checkpoint_copy``
    (of ``settings`` when given, else of config.toml, read now)."""
    chosen = os.environ.get(COPY_ENV) or (settings or load_settings()).checkpoint_copy
    return Path(chosen).expanduser() if chosen else None


def default_book(root: Path, settings: Settings | None = None) -> CheckpointBook:
    return CheckpointBook(root, engram_state_dir(), engram_config_dir(), copy_dir_setting(settings))
