"""No false drift from memoryd's normal work: what memoryd writes and indexes itself, engram's check accepts."""

from __future__ import annotations

import hashlib
import sqlite3

from engram.store.drift.check import check
from engram.store.models import Memory


def test_a_body_starting_with_blank_lines_is_indexed_as_memoryd_indexes_it(store, fixture_root):
    row = Memory.select().where(~Memory.body_path.endswith(".enc")).order_by(Memory.slug).first()
    path = fixture_root / row.body_path
    assert not [f for f in check(store).findings if f.path == row.body_path]
    head, body = path.read_text().split("---\n", 2)[1:]
    text = "\n\n\n" + body.lstrip("\n")  # a person's editor left blank lines above the text
    path.write_text(f"---\n{head}---\n{text}")
    memoryd_body = text.lstrip("\n")  # SessionMemory.from_markdown
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute(
        "UPDATE memories SET fingerprint = ? WHERE slug = ?",
        (hashlib.sha1(memoryd_body[:500].encode()).hexdigest(), row.slug),
    )
    con.commit()
    con.close()
    assert not [f for f in check(store).findings if f.path == row.body_path]
