"""engram's own settings: ``~/.config/engram/config.toml``.

    theme = "engram-dark"          # a theme from themes/ (or any Textual theme)
    [keys]
    "queue.approve" = "a,y"       # action id = key(s); ids are listed in docs/keymap.md
    [audit]
    checkpoint_copy = "/mnt/backup/engram"   # a directory outside the data root for the checkpoint's copy

A missing file means defaults; a broken one is an error that names the file and the problem.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from engram.store.errors import StoreError
from engram.store.paths import engram_config_dir


@dataclass(frozen=True)
class Settings:
    theme: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    checkpoint_copy: str | None = None


def settings_path() -> Path:
    return engram_config_dir() / "config.toml"


def load_settings(path: Path | None = None) -> Settings:
    path = path or settings_path()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return Settings()
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise StoreError(f"{path}: {exc}") from None
    theme = data.get("theme")
    keys = data.get("keys", {})
    if theme is not None and not isinstance(theme, str):
        raise StoreError(f"{path}: theme must be a name")
    if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
        raise StoreError(f'{path}: [keys] maps action ids to key names, e.g. "queue.approve" = "a"')
    audit = data.get("audit", {})
    copy = audit.get("checkpoint_copy") if isinstance(audit, dict) else None
    if not isinstance(audit, dict) or (copy is not None and not (isinstance(copy, str) and copy)):
        raise StoreError(f'{path}: [audit] checkpoint_copy is a directory, e.g. checkpoint_copy = "/mnt/backup"')
    return Settings(theme, dict(keys), copy)
