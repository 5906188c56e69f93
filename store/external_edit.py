"""Editing a promotion's body in the person's own ``$EDITOR``.

The text goes through a private temp file (0600, in engram's state dir, removed afterwards), so this is refused
for sensitive scopes: their plaintext must never reach a file other than its own encrypted one.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from engram.store.errors import StoreError
from engram.store.paths import engram_state_dir
from engram.store.write.atomic import ensure_dir


def editor_command() -> list[str] | None:
    """``$VISUAL`` or ``$EDITOR``, split like a shell would; None when neither is set."""
    value = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    return shlex.split(value) if value else None


def edit_in_editor(text: str, sensitive: bool, suffix: str = ".md") -> str:
    """Run the editor on ``text`` and return what it saved (the caller suspends its own UI around this)."""
    if sensitive:
        raise StoreError(
            "$EDITOR is not offered in a sensitive scope: its text would be written to a temp file "
            "(the in-app editor keeps it in memory)"
        )
    command = editor_command()
    if command is None:
        raise StoreError("set $EDITOR (or $VISUAL) to edit in your editor")
    folder = engram_state_dir() / "edit"
    ensure_dir(folder, mode=0o700)
    fd, name = tempfile.mkstemp(prefix="promotion-", suffix=suffix, dir=folder)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            result = subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            raise StoreError(f"could not start {command[0]}: {exc.strerror}") from None
        if result.returncode != 0:
            raise StoreError(f"{command[0]} exited with {result.returncode}: nothing changed")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise StoreError("the editor saved text that is not UTF-8: nothing changed") from None
    finally:
        path.unlink(missing_ok=True)
