"""The architecture's two rules, checked on the source: store/ never imports Textual; tui/ runs no SQL and
writes no files (it calls the store)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def sources(package: str) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in (ROOT / package).rglob("*.py")}


def test_store_imports_no_textual():
    offenders = [path for path, text in sources("store").items()
                 if re.search(r"^\s*(import|from)\s+(textual|rich)\b", text, re.M)]
    assert offenders == []


FORBIDDEN_IN_TUI = [
    r"^\s*(import|from)\s+(sqlite3|peewee)\b",  # SQL drivers
    r"^\s*from\s+store\.index\s+import",  # ORM models: queries belong in store/
    r"\.execute(_sql)?\(", r"\.select\(", r"\.(write_text|write_bytes)\(",  # SQL, file writes
    r"\bopen\([^)]*['\"][wa]", r"os\.(replace|rename|remove|unlink)\(", r"shutil\.",  # file writes, moves
]


def test_tui_has_no_sql_and_no_file_writes():
    offenders = [(path, pattern) for path, text in sources("tui").items() for pattern in FORBIDDEN_IN_TUI
                 if re.search(pattern, text, re.M)]
    assert offenders == []


def test_every_action_id_is_documented():
    from tui.keymap import ALL_ACTIONS

    documented = (ROOT / "docs" / "keymap.md").read_text(encoding="utf-8")
    assert [a.id for a in ALL_ACTIONS if f"`{a.id}`" not in documented] == []
