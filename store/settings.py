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
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engram.store.errors import StoreError
from engram.store.paths import engram_config_dir


class AuditSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    checkpoint_copy: str | None = Field(default=None, min_length=1)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    theme: str | None = None
    keys: dict[str, str] = Field(default_factory=dict)
    audit: AuditSettings = AuditSettings()

    @property
    def checkpoint_copy(self) -> str | None:
        return self.audit.checkpoint_copy


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
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise StoreError(f"{path}: {_problem(exc)}") from None


def settings_or_defaults(path: Path | None = None) -> tuple[Settings, str | None]:
    """The settings, or the defaults and why the file could not be used (for the console, which opens anyway)."""
    try:
        return load_settings(path), None
    except StoreError as exc:
        return Settings(), f"{exc}; using the defaults"


def _problem(exc: ValidationError) -> str:
    """The first bad key and what is wrong with it, in the file's own terms."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the file"
    if first["type"] == "extra_forbidden":
        return f"unknown setting {where!r} (known: theme, [keys], [audit] checkpoint_copy)"
    hint = {
        "keys": '[keys] maps action ids to key names, e.g. "queue.approve" = "a"',
        "audit": '[audit] checkpoint_copy is a directory, e.g. checkpoint_copy = "/mnt/backup"',
        "theme": 'theme is a name, e.g. theme = "engram-dark"',
    }.get(str(first["loc"][0]) if first["loc"] else "", "")
    return f"{where}: {first['msg']}" + (f" ({hint})" if hint else "")
