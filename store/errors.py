"""Errors the store raises: each one carries a sentence a person can act on."""

from __future__ import annotations

import sqlite3

from peewee import DatabaseError as _PeeweeDatabaseError


class StoreError(Exception):
    """Base of every error the store reports to the UI or CLI as one line."""


class BadMemoryFile(StoreError):
    """A memory file that cannot be parsed; carries the path and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class UnsafePath(StoreError):
    """A slug or body_path that would escape the data root."""


class ReadOnlyStore(StoreError):
    """A mutation was asked of a store opened read-only."""


class DatabaseLocked(StoreError):
    """Another process holds the index's write lock longer than the busy timeout."""


class KeyUnavailable(StoreError):
    """A sensitive scope's key is needed and not at hand (no passphrase, no keyring entry)."""


class DecryptionFailed(StoreError):
    """A .md.enc did not authenticate: wrong key, tampered, truncated or moved from another scope."""


class NotFound(StoreError):
    """The memory or promotion named does not exist."""


class Conflict(StoreError):
    """The action does not apply in the current state (e.g. approving a decided promotion)."""


class Quarantined(Conflict):
    """Approving a promotion the poisoning screen put in quarantine, without acknowledging each of its findings.
    ``rules`` are the findings' rule ids, to acknowledge."""

    def __init__(self, message: str, rules: list[str]) -> None:
        super().__init__(message)
        self.rules = rules


class BadInput(StoreError):
    """A request that cannot mean anything (an unknown grant duration, say): refused before anything changes."""


class WrongKey(KeyUnavailable):
    """A key was at hand but does not open the scope's files: a wrong passphrase, or the wrong keyring entry."""


class PassphraseUnconfirmed(KeyUnavailable):
    """A passphrase nothing on the root can prove yet (nothing encrypted, no verifier): it must be given twice."""


# What the disk or SQLite can raise under engram on a bad day (full disk, read-only file system, a damaged index
# page): the CLI and the console report these as one line, like a StoreError, never as a traceback.
ENVIRONMENT_ERRORS = (OSError, sqlite3.DatabaseError, _PeeweeDatabaseError)


class NoIndex(StoreError):
    """The root has no index.db, and the command only looks: it reports that rather than create an empty one."""
