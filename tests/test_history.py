"""Every version of every memory, kept in the history repository: engram's writes as they happen, memoryd's
(``mem_update``, ``merge_memories``, ``sync import``, emulated) when they are seen; restore through the write
path; no plaintext of a sensitive scope in any object; a forgotten past removed from every revision."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pygit2
import pytest
from helpers import events
from memoryd_emulation import memoryd_append, memoryd_merges, memoryd_sync_imports, memoryd_updates

from engram.store.errors import NotFound
from engram.store.frontmatter import parse
from engram.store.history import ops
from engram.store.history.keeper import SEEN
from engram.store.memories import edit_memory
from engram.store.models import Memory
from engram.store.sensitive.convert import mark_sensitive
from engram.store.service import Store
from engram.tui.cli import main as cli_main

PLAIN = "scopes/798e262b88f2/playbooks/promoted-1-2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9.md"
SLUG = "promoted-1-2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9"
SECRET_SCOPE = "91c2073b561e"
SECRET_SLUG = "2026-05-26-2026-05-26T07-38-06-xMmS-session"


def objects_holding(repo_path: Path, needle: bytes) -> list[str]:
    """Every object of the repository (loose or packed, reachable or not) whose content holds ``needle``."""
    repo = pygit2.Repository(str(repo_path))
    return [str(oid) for oid in repo.odb if needle in repo.odb.read(oid)[1]]


def body_of(root: Path, slug: str, store: Store) -> str:
    row = Memory.get(Memory.slug == slug)
    return store.read_doc(row.body_path).body


def test_an_engram_edit_is_a_revision_named_by_its_audit_event(store: Store) -> None:
    edit_memory(store, SLUG, body="first engram text\n")
    edit_memory(store, SLUG, body="second engram text\n")
    found = ops.revisions(store, SLUG)
    assert [r.commit.author for r in found] == ["engram-test", "engram-test", SEEN]
    assert found[0].commit.summary == f"memory_edited {SLUG}"
    edits = [e for e in events(store.layout.root) if e.get("event_type") == "memory_edited"]
    op_ids = [json.loads(e["details"])["op_id"] for e in edits]
    assert found[0].commit.trailers["Event"] == [f"memory_edited {SLUG} op {op_ids[-1]}"]
    # the version engram replaced was recorded before the first edit, as engram found it
    assert "first engram text" not in ops.text(store, found[2])
    assert ops.text(store, found[1]).endswith("first engram text\n")


def test_memoryds_update_merge_and_sync_import_are_kept_and_restorable(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    assert len(ops.catch_up(store)) == 200  # the first look records every memory file as found
    edit_memory(store, SLUG, body="engram's version\n")
    memoryd_updates(root, SLUG, body="memoryd's mem_update\n")
    assert ops.catch_up(store) == [PLAIN]
    mine = ops.revisions(store, SLUG)[1]
    assert ops.text(store, mine).endswith("engram's version\n")

    # merge_memories deletes the dropped memory: its history still finds it by slug, and restore brings it back
    keep, drop = "2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9", SLUG
    memoryd_merges(root, keep, [drop])
    ops.catch_up(store)
    last = ops.revisions(store, drop)[0]
    assert last.removed
    relpath = ops.restore(store, drop, ops.revisions(store, drop)[1].id)
    assert relpath == PLAIN
    assert body_of(root, drop, store) == "memoryd's mem_update\n"
    assert parse((root / PLAIN).read_bytes(), PLAIN).frontmatter.slug == drop  # memoryd reads it as its own

    # sync import overwrites the local file with the remote copy: the local version stays in the history
    sync = tmp_path / "sync"
    (sync / "scopes" / Path(PLAIN).parent.relative_to("scopes")).mkdir(parents=True)
    remote = (root / PLAIN).read_bytes().replace(b"memoryd's mem_update", b"the other machine's text")
    (sync / PLAIN).write_bytes(remote)
    assert memoryd_sync_imports(root, sync) == 1
    ops.catch_up(store)
    local = next(r for r in ops.revisions(store, drop) if "memoryd's mem_update" in ops.text(store, r))
    ops.restore(store, drop, local.short)
    assert body_of(root, drop, store) == "memoryd's mem_update\n"
    assert [e["event_type"] for e in events(root)][-1] == "memory_restored"


def test_the_first_look_stores_each_file_as_it_reads_it_not_every_file_at_once(store: Store) -> None:
    """The first catch-up of a root records every file in one revision: it held every file's bytes until then
    (md20k's first `engram check` peaked 45 MB over the next one's). Each file's blob is now written as it is
    read, and the revision names the blobs."""
    folder = store.layout.root / Path(PLAIN).parent
    for n in range(120):  # written by memoryd's hand, as it were: the catch-up reads bytes, never parses them
        (folder / f"large-{n}.md").write_bytes(f"---\nslug: large-{n}\n---\n".encode() + bytes([97 + n % 26]) * 50_000)
    tracemalloc.start()
    try:
        recorded = ops.catch_up(store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(recorded) == 320
    assert peak < 6_000_000 / 2, f"{peak:,} bytes traced for 6,000,000 bytes of files"
    newest = ops.revisions(store, "large-7")[0]
    assert ops.text(store, newest).endswith("h" * 50_000)


def test_engram_keeps_the_version_memoryd_wrote_even_before_any_catch_up(store: Store) -> None:
    """memoryd rewrites a file, and engram edits it next without anything looking in between: the version
    memoryd wrote is recorded before engram's edit replaces it."""
    memoryd_updates(store.layout.root, SLUG, body="memoryd wrote this moments ago\n")
    edit_memory(store, SLUG, body="engram's edit\n")
    texts = [ops.text(store, r) for r in ops.revisions(store, SLUG)]
    assert texts[0].endswith("engram's edit\n")
    assert texts[1].endswith("memoryd wrote this moments ago\n")


def test_a_seen_revision_names_memoryds_events_of_its_scope(store: Store) -> None:
    ops.catch_up(store)  # the first look notes where the log ends: nothing before it is named
    log = store.layout.audit_path
    gate = {"scope_hash": "798e262b88f2", "event_type": "access_granted", "tool": "mem_update", "result": "ok"}
    memoryd_append(log, {**gate, "ts": "2026-12-07T08:00:00+00:00"})
    memoryd_append(log, {**gate, "scope_hash": "5727cb99a38b", "ts": "2026-12-07T08:00:01+00:00"})  # not its scope
    memoryd_updates(store.layout.root, SLUG, body="memoryd's update\n")
    ops.catch_up(store)
    newest = ops.revisions(store, SLUG)[0]
    assert newest.commit.trailers["Memoryd-Event"] == [
        "access_granted mem_update scope 798e262b88f2 at 2026-12-07T08:00:00+00:00"
    ]


def test_the_change_feeds_memories_are_recorded_without_walking_the_root(store: Store) -> None:
    """The console records what its change feed says memoryd changed: only those files are looked at."""
    ops.catch_up(store)
    memoryd_updates(store.layout.root, SLUG, body="memoryd's save, seen by the feed\n")
    assert ops.record_seen(store, {SLUG, "no-such-memory"}) == [PLAIN]
    newest = ops.revisions(store, SLUG)[0]
    assert newest.commit.author == SEEN and ops.text(store, newest).endswith("memoryd's save, seen by the feed\n")
    assert ops.record_seen(store, {SLUG}) == []  # seen as it is: nothing new


def test_an_encrypted_memory_is_kept_only_as_ciphertext_and_restores(store: Store) -> None:
    marker = "a phrase only the plaintext holds"
    before = body_of(store.layout.root, SECRET_SLUG, store)
    edit_memory(store, SECRET_SLUG, body=f"{marker}\n")
    assert objects_holding(store.history.path, marker.encode()) == []
    assert objects_holding(store.history.path, before[:40].encode()) == []
    found = ops.revisions(store, SECRET_SLUG)
    assert all(r.encrypted for r in found)
    viewed = len([e for e in events(store.layout.root) if e.get("event_type") == "sensitive_viewed"])
    ops.restore(store, SECRET_SLUG, found[1].id)
    assert body_of(store.layout.root, SECRET_SLUG, store) == before
    after = [e for e in events(store.layout.root) if e.get("event_type") == "sensitive_viewed"]
    assert len(after) == viewed + 1  # opening the old revision is audited as opening the memory is
    assert objects_holding(store.history.path, marker.encode()) == []


def test_marking_a_scope_sensitive_removes_its_plaintext_from_every_revision(store: Store) -> None:
    marker = b"plaintext the history must give up"
    edit_memory(store, SLUG, body=marker.decode() + "\n")
    edit_memory(store, SLUG, body="a later text\n")
    assert objects_holding(store.history.path, marker)
    mark_sensitive(store, "798e262b88f2", discover_in=())
    assert objects_holding(store.history.path, marker) == []
    found = ops.revisions(store, SLUG)
    assert found[0].encrypted and not found[0].removed
    assert all(r.encrypted or r.removed for r in found)


def test_a_scope_memoryd_marked_sensitive_loses_its_plaintext_at_the_next_catch_up(store: Store) -> None:
    marker = b"memoryd marks this scope next"
    edit_memory(store, SLUG, body=marker.decode() + "\n")
    store.index.db.execute_sql(
        "INSERT INTO sensitive_scopes (scope_hash, scope_root, marked_at) VALUES (?, ?, ?)",
        ("798e262b88f2", "/nowhere", "2026-12-07T00:00:00Z"),
    )
    ops.catch_up(store)
    assert objects_holding(store.history.path, marker) == []


def test_forget_removes_every_earlier_version_and_is_audited(store: Store) -> None:
    marker = b"a mistake to be forgotten for good"
    edit_memory(store, SLUG, body=marker.decode() + "\n")
    edit_memory(store, SLUG, body="the corrected text\n")
    removed = ops.forget(store, SLUG)
    assert removed == 2  # the fixture's version and the mistake
    assert objects_holding(store.history.path, marker) == []
    assert [r.removed for r in ops.revisions(store, SLUG)] == [False]
    assert events(store.layout.root)[-1]["event_type"] == "history_forgotten"


def test_at_gives_the_version_current_then(store: Store) -> None:
    edit_memory(store, SLUG, body="the newest text\n")
    found = ops.revisions(store, SLUG)
    older = ops.at(store, SLUG, found[1].commit.when)
    assert ops.text(store, older) == ops.text(store, found[1]) or older.id == found[0].id
    with pytest.raises(NotFound):
        ops.at(store, SLUG, found[-1].commit.when.replace(year=2000))


def test_a_history_with_no_revision_of_a_slug_says_so(store: Store) -> None:
    with pytest.raises(NotFound, match="no revision"):
        ops.revisions(store, "no-such-memory")


def test_the_history_is_a_git_repository_that_pushes(store: Store, tmp_path: Path) -> None:
    edit_memory(store, SLUG, body="pushed text\n")
    remote = tmp_path / "backup.git"
    pygit2.init_repository(str(remote), bare=True)
    pushed = ops.push(store, str(remote))
    copy = pygit2.Repository(str(remote))
    assert str(copy.references["refs/heads/main"].target) == pushed
    assert events(store.layout.root)[-1]["event_type"] == "history_pushed"


def test_the_command_line_lists_diffs_and_restores(
    fixture_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", "engram-fixture-passphrase-2026")
    root = str(fixture_root)
    memoryd_updates(fixture_root, SLUG, body="memoryd's text\n")
    assert cli_main(["history", SLUG, "--root", root, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["author"] for r in listed] == [SEEN]
    with Store.open(fixture_root, actor="engram-test") as store:
        edit_memory(store, SLUG, body="engram's text\n")
    assert cli_main(["history", SLUG, "--root", root, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)[-1]["revision"]
    assert cli_main(["diff", SLUG, first[:8], "--root", root]) == 0
    shown = capsys.readouterr().out
    assert "-memoryd's text" in shown and "+engram's text" in shown
    assert cli_main(["restore", SLUG, first[:8], "--root", root]) == 0
    capsys.readouterr()
    assert cli_main(["show", SLUG, "--at", "2100-01-01", "--root", root]) == 0
    assert capsys.readouterr().out.rstrip().endswith("memoryd's text")
    assert cli_main(["restore", SLUG, "zzzz", "--root", root]) == 2
    assert "no revision" in capsys.readouterr().err


def test_a_moved_root_brings_its_history_and_a_copy_starts_from_the_originals(
    tmp_path: Path, fixture_root: Path, unlocked_keys
) -> None:
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        edit_memory(store, SLUG, body="written before the move\n")
        old = store.history.path
    moved = tmp_path / "new-laptop" / "memoryd"
    moved.parent.mkdir()
    shutil.move(fixture_root, moved)
    with Store.open(moved, keys=unlocked_keys, actor="engram-test") as store:
        ops.catch_up(store)  # as every history command and the console do first: the move is followed
        found = ops.revisions(store, SLUG)
        assert ops.text(store, found[0]).endswith("written before the move\n")
        assert store.history.path != old and not old.exists()
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    with Store.open(copy, keys=unlocked_keys, actor="engram-test") as store:
        edit_memory(store, SLUG, body="only in the copy\n")
        assert len(ops.revisions(store, SLUG)) == len(found) + 1
    with Store.open(moved, keys=unlocked_keys, actor="engram-test") as store:
        assert len(ops.revisions(store, SLUG)) == len(found)  # the original's history is its own
