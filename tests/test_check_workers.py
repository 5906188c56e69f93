"""``check`` hands the files of plain scopes to worker processes: it says exactly what one process says, in the
same order, from the command line and from the console; no file of a sensitive scope is ever handed to one; each
worker's outcome says what its file is."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from helpers import settle
from hypothesis import given
from hypothesis import strategies as st
from textual.widgets import DataTable

from engram.store.drift import check as checking
from engram.store.drift import examine
from engram.store.drift.check import KINDS, check
from engram.store.drift.examine import Bad, Facts, Failed
from engram.store.drift.scan import FileEntry, walk
from engram.store.errors import StoreError
from engram.tui.app import EngramApp


def _drifted(root: Path) -> None:
    """One finding of each kind a plain file can give, and a file of a sensitive scope left in plaintext: walked
    before any plain file, it is found before the first of them, which does not parse either."""
    con = sqlite3.connect(root / "index.db")
    plain = [
        path
        for (path,) in con.execute(
            "SELECT body_path FROM memories WHERE body_path LIKE '%.md' AND scope_sensitive = 0 ORDER BY body_path"
        )
    ]
    broken, edited, secret, unindexed = (root / p for p in plain[:4])  # the first walked is broken
    edited.write_bytes(edited.read_bytes().replace(b"---\n\n", b"---\n\nedited by hand\n", 1))
    secret.write_bytes(secret.read_bytes() + b"\nthe key is AKIAIOSFODNN7EXAMPLE\n")
    broken.write_bytes(b"---\ntitle: [unclosed\n---\nbody\n")
    con.execute("DELETE FROM memories WHERE body_path = ?", (plain[3],))
    con.commit()
    sensitive = con.execute("SELECT min(body_path) FROM memories WHERE body_path LIKE '%.md.enc'").fetchone()[0]
    (root / sensitive[: -len(".enc")]).write_bytes(b"---\ntitle: plaintext\n---\nsecret text of a sensitive scope\n")
    con.close()
    assert unindexed.exists()


def _workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Worker processes for any number of files, on any machine; the tasks handed to them are counted."""
    tasks: list[int] = []

    class Counted(examine.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            tasks.append(len(args[1]))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(examine, "MIN_FILES", 0)
    monkeypatch.setattr(examine, "_cores", lambda: 2)
    monkeypatch.setattr(examine, "_CHUNK", 8)
    monkeypatch.setattr(examine, "ProcessPoolExecutor", Counted)
    return tasks


def test_a_check_with_worker_processes_says_exactly_what_one_process_says_in_the_same_order(
    store, fixture_root, monkeypatch
):
    _drifted(fixture_root)
    alone = check(store)
    tasks = _workers(monkeypatch)
    with_workers = check(store)
    assert with_workers.to_json() == alone.to_json()
    assert [vars(f) for f in with_workers.findings] == [vars(f) for f in alone.findings]
    walked = [e for e in walk(store.layout) if isinstance(e, FileEntry)]
    order = {e.relpath: at for at, e in enumerate(walked)}
    per_file = [order[f.path] for f in alone.findings if f.kind in ("bad_file", "stale_row", "decay_index_only")]
    assert per_file == sorted(per_file)  # as if each file had been read in turn, sensitive ones included
    sensitive = store.sensitive_scopes()
    plain = [e for e in walked if e.scope_hash not in sensitive]
    assert sum(tasks) == len(plain) > 150  # every plain file went to a worker, in tasks of a few
    for kind in ("stale_row", "secret_in_plain_memory", "bad_file", "file_without_row", "plaintext_in_sensitive_scope"):
        assert alone.counts().get(kind), kind
    assert alone.counts()["decay_index_only"] == 26  # the encrypted files were read, in this process


def test_no_file_of_a_sensitive_scope_is_handed_to_a_worker(store, fixture_root, monkeypatch):
    _drifted(fixture_root)
    sensitive = store.sensitive_scopes()
    handed = []
    real = checking.examined

    def recorded(layout, entries, make):
        handed.extend(entries)
        return real(layout, entries, make)

    _workers(monkeypatch)
    monkeypatch.setattr(checking, "examined", recorded)
    report = check(store)
    assert handed and report.files > len(handed)
    assert not [e for e in handed if e.encrypted or e.scope_hash in sensitive]
    assert report.of("plaintext_in_sensitive_scope")


def test_a_workers_outcome_says_what_each_file_is(tmp_path):
    folder = tmp_path / "scopes" / "abc" / "facts"
    folder.mkdir(parents=True)
    (folder / "good.md").write_bytes(
        b"---\nslug: good\ntype: fact\nscope_hash: abc\ntitle: Good\nsource: test\n"
        b"created_at: '2026-01-01T00:00:00+00:00'\n---\nbody\n"
    )
    (folder / "bad.md").write_bytes(b"no frontmatter\n")
    os.mkfifo(folder / "fifo.md")
    relpaths = [f"scopes/abc/facts/{name}.md" for name in ("good", "bad", "gone", "fifo")]
    good, bad, gone, fifo = examine._examine(str(tmp_path), relpaths, examine.checked_facts)
    assert isinstance(good, Facts) and (good.slug, good.title, good.decay_state, good.secrets) == (
        "good",
        "Good",
        "alive",
        None,
    )
    assert bad == Bad("no frontmatter: file does not start with '---'")
    assert gone is None  # moved since the walk: nothing to say
    assert isinstance(fifo, Failed) and "not a regular file" in fifo.error


def test_a_file_no_worker_could_read_stops_the_check_as_one_read_here_would(store, monkeypatch):
    def unreadable(layout, entries, make):
        for entry in entries:
            yield entry, Failed(f"{entry.relpath}: not a regular file")

    monkeypatch.setattr(checking, "examined", unreadable)
    with pytest.raises(StoreError, match="not a regular file"):
        check(store)


@given(st.lists(st.integers()), st.lists(st.text(max_size=1)))
def test_two_streams_in_step_keep_every_item_of_each_in_its_order(first, second):
    merged = list(checking._in_step(iter(first), len(first), iter(second), len(second)))
    assert [x for x in merged if isinstance(x, int)] == first
    assert [x for x in merged if isinstance(x, str)] == second
    for at in range(len(merged)):  # never more of the second's ahead than its share of the first's
        firsts = sum(isinstance(x, int) for x in merged[:at])
        seconds = sum(isinstance(x, str) for x in merged[:at])
        assert not first or seconds * len(first) < firsts * len(second) + len(first)


async def test_the_consoles_drift_check_runs_its_workers_too(store, fixture_root, monkeypatch):
    """Under the console, Textual's stand-in for stderr has no file descriptor, which multiprocessing hands to
    its resource tracker: without putting the real one back for that moment, no worker could start and the
    scopes pane showed no findings at all."""
    tasks = _workers(monkeypatch)
    app = EngramApp(store)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        findings = app.query_one("#findings", DataTable)
        rows = [[str(c) for c in findings.get_row_at(i)] for i in range(findings.row_count)]
    assert ["26", "yes", KINDS["decay_index_only"][0]] in rows
    assert tasks
