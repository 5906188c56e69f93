"""Where things live: the data root, memoryd's config, engram's own config and state dirs.

Also the guard that keeps every path the store touches inside the data root, since ``body_path``
values and slugs come from files and databases a person or another tool may have edited.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from engram.store.domain import FORGOTTEN_DIR, MemoryType, check_slug
from engram.store.errors import StoreError, UnsafePath

APP = "engram"


def resolve_data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--root``, else ``$MEMORYD_DATA_ROOT``, else ``~/.local/share/memoryd`` (memoryd's own order)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("MEMORYD_DATA_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    return Path.home() / ".local" / "share" / "memoryd"


def memoryd_config_path() -> Path:
    """``$MEMORYD_CONFIG_HOME/config.toml``, else ``~/.config/memoryd/config.toml``."""
    env = os.environ.get("MEMORYD_CONFIG_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".config" / "memoryd"
    return base / "config.toml"


def load_memoryd_config(path: Path | None = None) -> dict[str, Any]:
    """memoryd's config as a dict; a missing file is an empty config, a broken one an error."""
    path = path or memoryd_config_path()
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise StoreError(f"{path}: unreadable ({exc.strerror or exc})") from None


def engram_config_dir() -> Path:
    """``$XDG_CONFIG_HOME/engram`` (``~/.config/engram``): keys and preferences."""
    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def engram_state_dir() -> Path:
    """``$XDG_STATE_HOME/engram`` (``~/.local/state/engram``): checkpoints, undo history."""
    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def screenshots_dir() -> Path:
    """Where the console's screenshots go, made if missing: engram's state directory, which is writable wherever
    engram runs (Textual's default, the Downloads folder, is missing on most servers, and the save then failed
    without saying why)."""
    folder = engram_state_dir() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def engram_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/engram`` (``~/.cache/engram``): what engram can build again, such as the search index."""
    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def root_cache_file(root: Path, kind: str, suffix: str) -> Path:
    """A file of ``kind`` (``search``, ``queue``) that engram can build again for the data root ``root``: named by a
    hash of the root's path, so that two roots never share one and a root's name is not spelled out in the cache."""
    key = hashlib.sha256(str(root).encode()).hexdigest()[:24]
    return engram_cache_dir() / kind / f"{key}{suffix}"


def scope_root_for(path: str | os.PathLike[str]) -> Path:
    """memoryd's scope root of ``path``: the nearest ancestor (itself included) holding ``.git``, else the path."""
    resolved = Path(path).expanduser().resolve()
    return next((p for p in (resolved, *resolved.parents) if (p / ".git").exists()), resolved)


def scope_hash_for(path: str | os.PathLike[str]) -> str:
    """memoryd's scope hash: sha1 of the resolved scope root (:func:`scope_root_for`)[:12]."""
    return hashlib.sha1(str(scope_root_for(path)).encode("utf-8")).hexdigest()[:12]


def check_scope_name(scope_hash: str) -> None:
    """A scope hash is used as a directory and file name: nothing that could climb out of one."""
    if not scope_hash or "/" in scope_hash or "\\" in scope_hash or scope_hash.startswith(".") or "\x00" in scope_hash:
        raise UnsafePath(f"scope {scope_hash!r} is not a directory name")


@dataclass(frozen=True)
class RootLayout:
    """The paths of one data root, and the guard against escaping it."""

    root: Path

    @property
    def index_path(self) -> Path:
        return self.root / "index.db"

    @property
    def scopes_dir(self) -> Path:
        return self.root / "scopes"

    @property
    def audit_path(self) -> Path:
        return self.root / "audit" / "audit.jsonl"

    @property
    def grants_dir(self) -> Path:
        return self.root / "grants"

    @staticmethod
    def memory_relpath(scope_hash: str, mtype: MemoryType, slug: str, encrypted: bool, forgotten: bool = False) -> str:
        """``scopes/<scope>/<type dir>/<slug>.md[.enc]``, relative, as memoryd stores ``body_path``: the same for
        every root (the demo's drawing process names its files without one). Neither name can climb out of its
        folder; where a folder on the way leads (a symlink) is checked by the write itself, which resolves every
        path it is given before anything moves (a demo of 100k memories had each checked twice)."""
        check_slug(slug)
        check_scope_name(scope_hash)
        folder = FORGOTTEN_DIR if forgotten else mtype.dir_name
        return f"scopes/{scope_hash}/{folder}/{slug}.md" + (".enc" if encrypted else "")

    def resolve(self, body_path: str) -> Path:
        """Absolute path of a ``body_path``, refusing anything that lands outside ``scopes/``."""
        return Path(self.inside(body_path))

    def inside(self, body_path: str) -> str:
        """:meth:`resolve` as a string, for the many callers that only check (a ``check`` of 100k files asks
        twice per file: pathlib's objects were a seventh of its time)."""
        if not body_path or "\x00" in body_path:
            raise UnsafePath(f"body_path {body_path!r} is empty or has a NUL byte")
        full = body_path if os.path.isabs(body_path) else os.path.join(self._root, body_path)
        real = self._realpath(full)
        scopes = self._real_scopes_dir
        if real != scopes and not real.startswith(scopes + os.sep):
            raise UnsafePath(f"body_path {body_path!r} escapes the data root's scopes/ directory")
        return full

    def _realpath(self, path: str) -> str:
        """``os.path.realpath`` with the directories' answers kept: a file read then costs one ``lstat`` instead
        of one per path component (realpath was three quarters of reading 100k files)."""
        parent, name = os.path.split(path)
        if name in ("", ".", ".."):
            return os.path.realpath(path)
        dirs = self._real_dirs  # shared by read_ahead's threads: each step is one atomic dict operation
        real_parent = dirs.get(parent)
        if real_parent is None:
            if len(dirs) > 4096:
                dirs.clear()
            real_parent = dirs[parent] = os.path.realpath(parent)
        real = os.path.join(real_parent, name)
        return os.path.realpath(real) if os.path.islink(real) else real

    @functools.cached_property
    def _real_dirs(self) -> dict[str, str]:
        return {}

    @functools.cached_property
    def _root(self) -> str:
        return str(self.root)

    @functools.cached_property
    def _real_scopes_dir(self) -> str:
        """``scopes/`` with symlinks resolved, once per layout: every file read checks against it."""
        return os.path.realpath(self.scopes_dir)

    def grant_relpath(self, scope_hash: str) -> str:
        """``grants/<scope>.json``, where memoryd keeps a scope's read grant."""
        check_scope_name(scope_hash)
        return f"grants/{scope_hash}.json"

    def resolve_data(self, relpath: str) -> Path:
        """Absolute path of a file engram writes that is not a memory: only ``grants/<scope>.json``."""
        parts = relpath.split("/")
        if len(parts) != 2 or parts[0] != "grants" or not parts[1].endswith(".json"):
            raise UnsafePath(f"{relpath!r} is not a grant file")
        check_scope_name(parts[1][:-5])
        return self.root / relpath

    def relpath(self, path: Path) -> str:
        """The ``body_path`` text for a file under the root (always forward slashes)."""
        return path.relative_to(self.root).as_posix()


_SYNC_CONFLICT_COPY = re.compile(r"^(?P<stem>.+?)\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]{7}(?P<ext>(?:\.md)?(?:\.enc)?)$")


def sync_conflict_copy(name: str) -> str | None:
    """The memory file a file-sync tool's conflict copy stands beside (``slug.sync-conflict-20261201-101010-ABCDEFG.md``
    is a copy of ``slug.md``), or None when ``name`` is not one. Such a copy is the conflict inbox's, never a memory
    of its own."""
    match = _SYNC_CONFLICT_COPY.match(name)
    return None if match is None else match["stem"] + match["ext"]
