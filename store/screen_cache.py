"""Which texts the poisoning screen found clean, kept in engram's cache: a promotion or a memory file is screened
once, not on every listing.

The screen reads each field of a text through a few hundred rules and every way text can be hidden, and
``engram promotions list``, ``--where``, the console's lanes, ``engram screen`` and pane 8 screened every pending
promotion (and every memory file) again on every run. What the screen finds depends on the text and the rules
alone, so a text found clean stays clean until one of them changes. The cache holds, for each text found clean, a
hash of the text and of the rules (the screen's own source files, the secrets patterns it uses, the Python and
Unicode tables that run them): a changed rule, or an upgrade of engram or Python, makes every kept hash another's.
A text with findings is not kept: it is screened each time, and its findings worded from its text. The allowlist
only lowers a finding, and the context signals decide nothing without one: neither can flag a clean text, so
neither is in the hash, and both are applied afresh.

It keeps hashes only, 32 bytes a text: no text and no finding of any scope (a hash of a whole text, as the audit
log keeps a hash of each title; a sensitive scope's texts are hashed like any other, in the process that holds
its key). It is a cache and no more: deleted, damaged, busy or unwritable, every text is screened. A hash is
dropped :data:`KEEP_DAYS` after it was kept (a text still there then is screened, and kept, again).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sqlite3
import sys
import time
import unicodedata
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.index import BUSY_TIMEOUT_MS, TEMP_IN_MEMORY
from engram.store.paths import root_cache_file
from engram.store.screen.verdict import Item

if TYPE_CHECKING:
    from engram.store.service import Store

KEEP_DAYS = 90
_SCHEMA = """
CREATE TABLE IF NOT EXISTS clean (key BLOB PRIMARY KEY, kept INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS clean_by_age ON clean (kept);
"""  # by age: dropping the old ones is not a scan of them all on every write
_LOOKUP = 500  # keys asked in one statement


def cache_path(store: Store) -> Path:
    return root_cache_file(store.layout.root, "screen", ".db")


@functools.cache
def rules_id() -> bytes | None:
    """What the screen's verdict depends on besides the text: its modules' source, the secrets patterns, the
    Python and Unicode versions. None where a source file cannot be read (nothing is then kept or found)."""
    digest = hashlib.sha256(f"{sys.version}\0{unicodedata.unidata_version}\0".encode())
    package = importlib.util.find_spec("engram.store.screen")
    secrets = importlib.util.find_spec("engram.store.secrets")
    if package is None or not package.submodule_search_locations or secrets is None or secrets.origin is None:
        return None
    sources = sorted(Path(next(iter(package.submodule_search_locations))).glob("*.py"))
    try:
        for path in [*sources, Path(secrets.origin)]:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.digest() if sources else None


def text_key(item: Item) -> bytes | None:
    """The hash ``item``'s verdict is kept under (its fields the screen reads, and the rules); None when nothing
    can be kept."""
    rules = rules_id()
    if rules is None:
        return None
    fields = json.dumps([item.title, list(item.triggers), item.body, item.reasoning], ensure_ascii=False)
    return hashlib.sha256(rules + fields.encode("utf-8", "surrogatepass")).digest()


def known_clean(store: Store, keys: Collection[bytes | None]) -> set[bytes]:
    """The ``keys`` kept as clean; none when the cache cannot be read."""
    wanted = sorted({key for key in keys if key is not None})
    parts = [wanted[at : at + _LOOKUP] for at in range(0, len(wanted), _LOOKUP)]
    asked = [(f"SELECT key FROM clean WHERE key IN ({', '.join('?' * len(part))})", part) for part in parts]
    return set(_read(str(cache_path(store)), asked))


@functools.lru_cache(maxsize=1)
def kept_in(path: str) -> frozenset[bytes]:
    """Every key kept in the cache at ``path``, read once (until :func:`forget_kept`): for the worker processes
    that screen a root's memory files, handed the path, to look up each text in memory. Keys written meanwhile
    are not read again: a key is a text's and the rules' hash, so an older set is never wrong, only smaller."""
    return frozenset(_read(path, [("SELECT key FROM clean", [])]))


def _read(path: str, asked: list[tuple[str, list[bytes]]]) -> list[bytes]:
    """The keys each ``(sql, values)`` of ``asked`` selects from the cache at ``path``, read only; none when
    there is no cache or it cannot be read."""
    if not asked or not os.path.isfile(path):
        return []
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            return [key for sql, values in asked for (key,) in con.execute(sql, values)]
        finally:
            con.close()
    except sqlite3.Error:
        return []


def forget_kept() -> None:
    """Let go of the keys :func:`kept_in` read (a screen of the root is over)."""
    kept_in.cache_clear()


def keep_clean(store: Store, keys: Iterable[bytes | None]) -> None:
    """Keep ``keys`` as clean, and drop those kept longer ago than :data:`KEEP_DAYS`. A cache that cannot be
    written is left as it is; a damaged one is deleted and made again."""
    new = [(key,) for key in keys if key is not None]
    if not new:
        return
    path, now = cache_path(store), int(time.time())
    for _ in range(2):
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _write(path, new, now)
            return
        except sqlite3.OperationalError:
            return  # busy (another engram keeps some now) or a full disk: they are screened again next time
        except sqlite3.DatabaseError:
            path.unlink(missing_ok=True)
        except OSError:
            return


def _write(path: Path, new: list[tuple[bytes]], now: int) -> None:
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        con.execute(TEMP_IN_MEMORY)
        con.execute("PRAGMA synchronous = OFF")  # a cache: a crash keeps the journal's atomicity, a lost power the
        # next read's check (a damaged file is made again)
        con.executescript(_SCHEMA)
        con.execute("BEGIN IMMEDIATE")
        con.executemany(f"INSERT OR REPLACE INTO clean (key, kept) VALUES (?, {now})", new)
        con.execute("DELETE FROM clean WHERE kept < ?", (now - KEEP_DAYS * 86400,))
        con.execute("COMMIT")
    finally:
        con.close()
