"""The sync-conflict inbox: what memoryd's ``sync import`` (emulated) and a file-sync tool set aside is listed,
compared, and decided one way or the other through the write path; the set-aside copy goes only once the
decision is written, and the local version stays in the memory's history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PASSPHRASE
from helpers import events
from memoryd_emulation import memoryd_sync_imports

from engram.store import conflicts as inbox
from engram.store.drift.check import check
from engram.store.frontmatter import parse, serialize
from engram.store.history import ops
from engram.store.models import Memory
from engram.store.sensitive.crypto import encrypt
from engram.store.service import Store
from engram.tui.cli import main as cli_main

PLAIN = "scopes/798e262b88f2/playbooks/promoted-1-2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9.md"
SLUG = "promoted-1-2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9"
SECRET = "scopes/91c2073b561e/sessions/2026-05-26-2026-05-26T07-38-06-xMmS-session.md.enc"


def imported_over(root: Path, tmp_path: Path, relpath: str, remote: bytes) -> None:
    """memoryd's sync import of a folder whose copy of ``relpath`` differs from the local one."""
    sync = tmp_path / "sync"
    (sync / relpath).parent.mkdir(parents=True, exist_ok=True)
    (sync / relpath).write_bytes(remote)
    assert memoryd_sync_imports(root, sync) == 1


def remote_text(root: Path) -> bytes:
    return (root / PLAIN).read_bytes().replace(b"\n---\n", b"\n---\nThe other machine's line.\n", 1)


def test_a_sync_import_conflict_is_listed_and_told_by_check_as_no_drift(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    imported_over(root, tmp_path, PLAIN, remote_text(root))
    [found] = inbox.conflicts(store)
    assert (found.slug, found.relpath, found.source) == (SLUG, PLAIN, "memoryd sync import")
    report = check(store)
    kinds = {f.kind for f in report.findings}
    assert "sync_conflict" in kinds
    assert not any(f.kind in ("unindexed_file", "bad_file") and "_conflicts" in (f.path or "") for f in report.findings)


def test_keep_remote_removes_the_copy_and_keeps_the_local_version_in_history(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    local = (root / PLAIN).read_bytes()
    imported_over(root, tmp_path, PLAIN, remote_text(root))
    [found] = inbox.conflicts(store)
    inbox.resolve(store, found, "remote")
    assert inbox.conflicts(store) == []
    assert not (root / found.aside).exists()
    assert events(root)[-1]["event_type"] == "conflict_resolved"
    texts = [ops.text(store, r) for r in ops.revisions(store, SLUG)]
    assert local.decode() in texts  # the version the import overwrote
    assert (root / PLAIN).read_bytes() == remote_text(root) or b"other machine" in (root / PLAIN).read_bytes()


def test_keep_local_writes_it_back_through_the_write_path(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    local = parse((root / PLAIN).read_bytes(), PLAIN)
    imported_over(root, tmp_path, PLAIN, remote_text(root))
    [found] = inbox.conflicts(store)
    inbox.resolve(store, found, "local")
    now = parse((root / PLAIN).read_bytes(), PLAIN)  # memoryd reads it as its own
    assert now.body == local.body and "other machine" not in now.body
    assert Memory.get(Memory.slug == SLUG).body_path == PLAIN
    assert not (root / found.aside).exists()


def test_a_merge_writes_the_text_a_person_made(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    imported_over(root, tmp_path, PLAIN, remote_text(root))
    [found] = inbox.conflicts(store)
    local, remote = inbox.versions(store, found)
    assert remote is not None and "other machine" in remote and "other machine" not in local
    merged = remote.replace("The other machine's line.", "Both machines' lines, merged.")
    inbox.resolve(store, found, "merged", merged)
    assert "Both machines' lines, merged." in (root / PLAIN).read_text()
    with pytest.raises(Exception, match="not"):
        inbox.resolve(store, found, "merged", merged.replace(f"slug: {SLUG}", "slug: another-memory"))


def test_a_file_sync_tools_conflict_copy_is_the_inboxs_not_a_memory(store: Store) -> None:
    root = store.layout.root
    copy = PLAIN.replace(".md", ".sync-conflict-20261201-101010-ABCDEFG.md")
    (root / copy).write_bytes((root / PLAIN).read_bytes().replace(b"\n---\n", b"\n---\nEdited on the laptop.\n", 1))
    [found] = inbox.conflicts(store)
    assert (found.source, found.aside, found.relpath) == ("file sync", copy, PLAIN)
    assert not any(f.path == copy and f.kind != "sync_conflict" for f in check(store).findings)
    inbox.resolve(store, found, "local")
    assert "Edited on the laptop." in (root / PLAIN).read_text()
    assert not (root / copy).exists()


def test_an_encrypted_conflict_is_compared_in_memory_and_kept_encrypted(store: Store, tmp_path: Path) -> None:
    root = store.layout.root
    before = store.read_doc(SECRET)
    remote_doc = before.model_copy(update={"body": "the other machine's secret text\n"})
    scope = SECRET.split("/")[1]
    remote = encrypt(serialize(remote_doc), store.keys.key_for(scope), scope)
    imported_over(root, tmp_path, SECRET, remote)
    [found] = inbox.conflicts(store)
    local, theirs = inbox.versions(store, found)
    assert local.endswith(before.body) and theirs is not None and "other machine's secret" in theirs
    assert events(root)[-1]["event_type"] == "sensitive_viewed"
    inbox.resolve(store, found, "local")
    assert store.read_doc(SECRET).body == before.body
    assert not any(b"secret text" in p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_the_command_line_lists_shows_and_resolves(
    fixture_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", PASSPHRASE)
    root = str(fixture_root)
    assert cli_main(["conflicts", "--root", root]) == 0
    assert "no sync conflicts" in capsys.readouterr().out
    imported_over(fixture_root, tmp_path, PLAIN, remote_text(fixture_root))
    assert cli_main(["conflicts", "--root", root, "--json"]) == 1
    [listed] = json.loads(capsys.readouterr().out)
    assert cli_main(["conflicts", "show", listed["id"], "--root", root]) == 0
    assert "+The other machine's line." not in capsys.readouterr().out  # the local side has no such line
    assert cli_main(["conflicts", "resolve", listed["id"], "--keep", "remote", "--root", root]) == 0
    capsys.readouterr()
    assert cli_main(["conflicts", "resolve", listed["id"], "--keep", "remote", "--root", root]) == 2
    assert "not in the inbox" in capsys.readouterr().err
    with Store.open(fixture_root, actor="engram-test") as store:
        assert inbox.conflicts(store) == []
