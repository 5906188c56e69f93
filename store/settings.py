"""engram's own settings: ``~/.config/engram/config.toml``.

    theme = "engram-dark"          # a theme from themes/ (or any Textual theme)
    [keys]
    "queue.approve" = "a,y"       # action id = key(s); ids are listed in docs/keymap.md
    [audit]
    checkpoint_copy = "/mnt/backup/engram"   # a directory outside the data root for the checkpoint's copy

A missing file means defaults. A broken one (not TOML, a value of the wrong kind, a key engram does not know,
which is most often a typo) is an error that names the file, the key and the problem: the CLI stops on it; the
console opens with the defaults and says why.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.store.errors import StoreError
from engram.store.paths import engram_config_dir
from engram.store.write.atomic import ensure_dir, write_atomic


@dataclass(frozen=True)
class Settings:
    theme: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    checkpoint_copy: str | None = None  # [audit] checkpoint_copy


def settings_path() -> Path:
    return engram_config_dir() / "config.toml"


def load_settings(path: Path | None = None) -> Settings:
    path = path or settings_path()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return Settings()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise StoreError(f"{path}: not readable as TOML ({exc})") from None
    try:
        return _settings(data)
    except _Problem as exc:
        raise StoreError(f"{path}: {exc}") from None


def settings_or_defaults(path: Path | None = None) -> tuple[Settings, str | None]:
    """The settings, or the defaults and why the file could not be used (for the console, which opens anyway)."""
    try:
        return load_settings(path), None
    except StoreError as exc:
        return Settings(), f"{exc}; using the defaults"


class _Problem(Exception):
    """The first bad key and what is wrong with it, in the file's own terms."""


_KNOWN = "known: theme, [keys], [audit] checkpoint_copy"
_HINTS = {
    "keys": '[keys] maps action ids to key names, e.g. "queue.approve" = "a"',
    "audit": '[audit] checkpoint_copy is a directory, e.g. checkpoint_copy = "/mnt/backup"',
    "theme": 'theme is a name, e.g. theme = "engram-dark"',
}


def _settings(data: dict[str, Any]) -> Settings:
    """The three settings, checked by hand: a schema library's import would cost the console's start more
    than all of engram's other settings code."""
    for key in data:
        if key not in ("theme", "keys", "audit"):
            raise _Problem(f"unknown setting {key!r} ({_KNOWN})")
    keys = _table(data, "keys")
    for action, key_names in keys.items():
        _string(key_names, f"keys.{action}", "keys")
    audit = _table(data, "audit")
    for key in audit:
        if key != "checkpoint_copy":
            raise _Problem(f"unknown setting 'audit.{key}' ({_KNOWN})")
    copy = audit.get("checkpoint_copy")
    if copy is not None and not _string(copy, "audit.checkpoint_copy", "audit"):
        raise _Problem(f"audit.checkpoint_copy: String should have at least 1 character ({_HINTS['audit']})")
    theme = data.get("theme")
    return Settings(
        theme=None if theme is None else _string(theme, "theme", "theme"),
        keys=keys,
        checkpoint_copy=copy,
    )


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise _Problem(f"{name}: Input should be a table ({_HINTS[name]})")
    return value


def _string(value: object, where: str, hint: str) -> str:
    if not isinstance(value, str):
        raise _Problem(f"{where}: Input should be a valid string ({_HINTS[hint]})")
    return value


def save_theme(name: str, path: Path | None = None) -> Path:
    """Keep ``name`` as the theme in config.toml (a theme picked in the console's palette outlives the session),
    every other line and comment of the file kept. A file engram cannot read is left as it is: an error."""
    import tomlkit  # edits TOML keeping comments and order: only when a theme is saved

    path = path or settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: theme not saved ({exc})") from None
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise StoreError(f"{path}: not valid TOML, theme not saved ({exc})") from None
    doc["theme"] = name
    ensure_dir(path.parent, mode=0o700)
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"), mode=0o600)
    return path
