"""``check`` reads the index's rows a few hundred files at a time, never all at once, and a memory memoryd saves while
it runs (its file after the walk, its row before the rows are read) is no finding."""

from __future__ import annotations

from memoryd_emulation import memoryd_saves

from engram.store.drift import check as checking
from engram.store.drift.check import check
from engram.store.frontmatter import Frontmatter, MemoryDoc
from engram.store.models import Memory


def test_check_reads_the_rows_a_few_files_at_a_time(store, monkeypatch):
    alone = check(store).to_json()
    monkeypatch.setattr(checking, "_LOOKUP", 8)
    yielded: list[int] = [0]
    real = checking._rows

    def counted(query):
        for row in real(query):
            yielded[0] += 1
            yield row

    monkeypatch.setattr(checking, "_rows", counted)
    seen_at_first_file: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 1:
            seen_at_first_file.append(yielded[0])

    assert check(store, progress).to_json() == alone
    assert seen_at_first_file and seen_at_first_file[0] <= 8 < Memory.select().count()


def test_a_memory_memoryd_saves_while_check_runs_is_no_finding(store, fixture_root):
    scope = Memory.get(Memory.scope_sensitive == 0).scope_hash
    fm = Frontmatter.model_validate(
        {"slug": "saved-during-check", "type": "fact", "scope_hash": scope, "title": "saved meanwhile"}
        | {"source": "session", "created_at": "2026-11-28T09:00:00Z"}
    )

    def progress(done: int, total: int) -> None:
        if done == 20:
            memoryd_saves(fixture_root, MemoryDoc(frontmatter=fm, body="written while engram checked the root\n"))

    before = check(store).to_json()
    report = check(store, progress)
    saved = Memory.get(Memory.slug == "saved-during-check")
    assert not [f for f in report.findings if f.path == saved.body_path or f.data.get("slug") == saved.slug]
    assert report.counts() == before["counts"]
