"""Whether a scope holds an encrypted file, asked of the names alone, is what the walk of its files finds."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.drift.scan import holds_encrypted, scope_files
from engram.store.paths import RootLayout

SCOPE = "a1b2c3d4e5f6"
FOLDERS = ["facts", "preferences", "forgotten", "misc"]  # "misc" is no type folder: nothing in it is a memory
NAMES = [
    "plain.md",
    "secret.md.enc",
    ".secret.md.enc.engram-tmp-12-3",  # a temp file a crash left
    "secret.sync-conflict-20261201-101010-ABCDEFG.md.enc",  # a file-sync tool's copy: the conflict inbox's
    "notes.txt",
    "old.md.enc.bak",
]
SHAPES = ["file", "folder", "link"]  # a folder or a symlink with a memory's name is not a memory file


def plant(scope: Path, folder: str, name: str, shape: str) -> None:
    where = scope / folder
    where.mkdir(parents=True, exist_ok=True)
    if shape == "file":
        (where / name).write_bytes(b"x")
    elif shape == "folder":
        (where / name).mkdir(exist_ok=True)
    elif not (where / name).exists():
        target = scope.parent / "elsewhere.md.enc"
        target.write_bytes(b"x")
        (where / name).symlink_to(target)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES), st.sampled_from(SHAPES)), max_size=6))
def test_a_scope_holds_an_encrypted_file_where_the_walk_finds_one(entries):
    with tempfile.TemporaryDirectory() as tmp:
        layout = RootLayout(Path(tmp))
        scope = layout.scopes_dir / SCOPE
        scope.mkdir(parents=True)
        for folder, name, shape in entries:
            if not (scope / folder / name).exists() and not (scope / folder / name).is_symlink():
                plant(scope, folder, name, shape)
        assert holds_encrypted(layout, SCOPE) == any(e.encrypted for e in scope_files(layout, SCOPE))


def test_an_encrypted_memory_is_found_and_a_scope_that_is_a_link_or_missing_holds_none(tmp_path):
    layout = RootLayout(tmp_path)
    plant(layout.scopes_dir / SCOPE, "facts", "plain.md", "file")
    assert not holds_encrypted(layout, SCOPE)
    plant(layout.scopes_dir / SCOPE, "forgotten", "secret.md.enc", "file")
    assert holds_encrypted(layout, SCOPE)
    (layout.scopes_dir / "linked").symlink_to(layout.scopes_dir / SCOPE)
    assert not holds_encrypted(layout, "linked") and not holds_encrypted(layout, "missing")
