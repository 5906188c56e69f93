"""$EDITOR editing: the editor's saved text comes back, the temp file is private and gone afterwards, and a
sensitive scope never gets one."""

from __future__ import annotations

import stat
import sys

import pytest

from engram.store.errors import StoreError
from engram.store.external_edit import edit_in_editor
from engram.store.paths import engram_state_dir

EDITOR = """
import os, stat, sys
path = sys.argv[1]
assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
text = open(path, encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(text.upper())
"""


@pytest.fixture
def editor(tmp_path, monkeypatch):
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)


def test_the_editors_text_comes_back_and_the_temp_file_is_gone(editor):
    assert edit_in_editor("body text\n", sensitive=False) == "BODY TEXT\n"
    assert list((engram_state_dir() / "edit").iterdir()) == []
    assert stat.S_IMODE((engram_state_dir() / "edit").stat().st_mode) == 0o700


def test_sensitive_scopes_never_get_a_temp_file(editor):
    with pytest.raises(StoreError, match="not offered in a sensitive scope"):
        edit_in_editor("secret", sensitive=True)
    assert not (engram_state_dir() / "edit").exists()


def test_failing_or_missing_editor_changes_nothing(monkeypatch):
    monkeypatch.setenv("EDITOR", "false")
    with pytest.raises(StoreError, match="exited with 1"):
        edit_in_editor("x", sensitive=False)
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    with pytest.raises(StoreError, match="could not start"):
        edit_in_editor("x", sensitive=False)
    monkeypatch.delenv("EDITOR")
    monkeypatch.delenv("VISUAL", raising=False)
    with pytest.raises(StoreError, match="set \\$EDITOR"):
        edit_in_editor("x", sensitive=False)
