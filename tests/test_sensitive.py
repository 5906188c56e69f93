"""Marking a scope sensitive and unmarking it: memoryd can read what engram encrypts, nothing is lost, no
plaintext is left, and a process killed at any step is finished by running the command again."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest
from conftest import PASSPHRASE
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from helpers import run_engram

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.errors import KeyUnavailable
from engram.store.models import Memory
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.store.write import faults

SCOPE = "5727cb99a38b"
CANARY = b"CANARY-7f3e-sensitive-body"


def memoryd_decrypt(path: Path, scope: str) -> bytes:
    """memoryd's rule, written from its documented format rather than engram's code."""
    key = hashlib.pbkdf2_hmac("sha256", PASSPHRASE.encode(), scope.encode(), 600000, 32)
    raw = base64.b64decode(path.read_bytes())
    return AESGCM(key).decrypt(raw[:12], raw[12:], scope.encode())


def originals(root: Path) -> dict[str, bytes]:
    """slug -> plaintext bytes of the scope's files, with a canary planted in one body."""
    files = {}
    for path in sorted((root / "scopes" / SCOPE).rglob("*.md")):
        files[path.name[:-3]] = path.read_bytes()
    first = sorted(files)[0]
    path = next((root / "scopes" / SCOPE).rglob(f"{first}.md"))
    path.write_bytes(path.read_bytes() + CANARY + b"\n")
    files[first] = path.read_bytes()
    return files


def planted(fixture_root: Path) -> dict[str, bytes]:
    """Repair the fixture's own quirks first (one repair writes a memory into this scope), then plant."""
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        repair(store)
    return originals(fixture_root)


def scan_for_canary(*folders: Path) -> list[str]:
    hits = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and CANARY in path.read_bytes():
                hits.append(str(path))
    return hits


def assert_encrypted(root: Path, files: dict[str, bytes]) -> None:
    assert not list((root / "scopes" / SCOPE).rglob("*.md")), "plaintext left in the scope"
    for slug, plain in files.items():
        row = Memory.get(Memory.slug == slug)
        assert row.body_path.endswith(".md.enc") and row.scope_sensitive == 1
        enc = root / row.body_path
        assert memoryd_decrypt(enc, SCOPE) == plain
        assert enc.stat().st_mode & 0o777 == 0o600
        assert enc.parent.stat().st_mode & 0o777 == 0o700


def test_mark_encrypts_every_memory_readably_for_memoryd(fixture_root, tmp_path, monkeypatch):
    temp_dir = tmp_path / "tmp"
    temp_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp_dir))  # where anything asking for a temp file would go
    files = planted(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        done = mark_sensitive(store, SCOPE)
        assert done.done == len(files) and SCOPE in store.sensitive_scopes()
        assert_encrypted(fixture_root, files)
        assert check(store).counts() == {}
    events = [json.loads(line)["event_type"] for line in (fixture_root / "audit/audit.jsonl").read_text().splitlines()]
    assert events.count("scope_marked_sensitive") == 1
    assert events.count("memory_encrypted") == -(-len(files) // 50)
    # engram writes nowhere else: temp files live beside their target, and $EDITOR is refused in sensitive scopes
    engram_dirs = [Path(os.environ[v]) for v in ("XDG_STATE_HOME", "XDG_CONFIG_HOME") if Path(os.environ[v]).exists()]
    assert scan_for_canary(fixture_root, temp_dir, *engram_dirs) == []


def test_unmark_gives_back_the_same_bytes(fixture_root):
    files = planted(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        mark_sensitive(store, SCOPE)
        unmark_sensitive(store, SCOPE)
        assert SCOPE not in store.sensitive_scopes()
        assert not list((fixture_root / "scopes" / SCOPE).rglob("*.md.enc"))
        for slug, plain in files.items():
            row = Memory.get(Memory.slug == slug)
            assert (fixture_root / row.body_path).read_bytes() == plain and row.scope_sensitive == 0


def test_no_key_changes_nothing(fixture_root):
    before = {p: p.read_bytes() for p in (fixture_root / "scopes" / SCOPE).rglob("*") if p.is_file()}
    with Store.open(fixture_root, keys=KeyRing()) as store:
        with pytest.raises(KeyUnavailable):
            mark_sensitive(store, SCOPE)
        assert SCOPE not in store.sensitive_scopes()
    assert {p: p.read_bytes() for p in (fixture_root / "scopes" / SCOPE).rglob("*") if p.is_file()} == before


def run_cli(root: Path, *args: str, crash: str | None = None) -> int:
    return run_engram(root, *args, env={"MEMORYD_MASTER_PASSPHRASE": PASSPHRASE}, crash=crash)


@pytest.mark.parametrize("point", faults.POINTS)
def test_a_crash_in_mark_or_unmark_is_finished_by_running_it_again(fixture_root, point):
    files = planted(fixture_root)
    assert run_cli(fixture_root, "scope", "mark", SCOPE, crash=point) == 137
    assert run_cli(fixture_root, "scope", "mark", SCOPE) == 0
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        assert_encrypted(fixture_root, files)
        assert Memory.select().where(Memory.scope_hash == SCOPE).count() == len(files)
    assert scan_for_canary(fixture_root) == []
    assert run_cli(fixture_root, "scope", "unmark", SCOPE, crash=point) == 137
    assert run_cli(fixture_root, "scope", "unmark", SCOPE) == 0
    with Store.open(fixture_root) as store:
        for slug, plain in files.items():
            assert (fixture_root / Memory.get(Memory.slug == slug).body_path).read_bytes() == plain
        assert not list((fixture_root / "scopes" / SCOPE).rglob("*.md.enc"))
        assert SCOPE not in store.sensitive_scopes()


def test_plaintext_in_a_sensitive_scope_is_found_and_repair_encrypts_it(fixture_root):
    files = planted(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        mark_sensitive(store, SCOPE)
        slug = sorted(files)[1]
        row = Memory.get(Memory.slug == slug)
        plain = fixture_root / row.body_path[:-4]
        plain.write_bytes(files[slug])  # a tool unaware of the scope wrote a plaintext copy back
        assert [f.path for f in check(store).of("plaintext_in_sensitive_scope")] == [row.body_path[:-4]]
        repair(store)
        assert not plain.exists() and check(store).counts() == {}
        assert_encrypted(fixture_root, files)


def test_a_wrong_passphrase_is_named_before_anything_changes(fixture_root):
    scope = "35998c22af79"  # marked sensitive by memoryd, all files encrypted
    before = {p: p.read_bytes() for p in (fixture_root / "scopes" / scope).rglob("*") if p.is_file()}
    with Store.open(fixture_root, keys=KeyRing(passphrase="not-it")) as store:
        with pytest.raises(KeyUnavailable, match="wrong passphrase for scope 35998c22af79"):
            unmark_sensitive(store, scope)
    assert {p: p.read_bytes() for p in (fixture_root / "scopes" / scope).rglob("*") if p.is_file()} == before


def zeroed(root: Path) -> list[Path]:
    """Plaintext files an interrupted scrub left starting with zeros."""
    return [p for p in (root / "scopes").rglob("*.md") if p.read_bytes()[:1] == b"\0"]


@pytest.mark.parametrize("finish", ["mark again", "repair"])
def test_a_kill_while_zeroing_the_plaintext_is_finished_by_the_rerun_and_by_repair(fixture_root, finish):
    files = planted(fixture_root)
    assert run_cli(fixture_root, "scope", "mark", SCOPE, crash="scrub_zeroed") == 137
    left = {str(path.relative_to(fixture_root)) for path in zeroed(fixture_root)}  # a batch is zeroed, then unlinked
    assert left
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        named = {(f.path, f.kind) for f in check(store).findings if f.path in left}
        assert named == {(path, "scrub_unfinished") for path in left}  # zeros, not a bad file nor plaintext
    assert run_cli(fixture_root, *(["scope", "mark", SCOPE] if finish == "mark again" else ["repair"])) == 0
    if finish == "repair":
        assert run_cli(fixture_root, "scope", "mark", SCOPE) == 0  # the rest of the scope, as after any crash
    assert zeroed(fixture_root) == []
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        assert check(store).counts() == {}
        assert_encrypted(fixture_root, files)


def test_a_partly_zeroed_plaintext_is_retired_only_once_its_encrypted_copy_decrypts(fixture_root):
    files = planted(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        mark_sensitive(store, SCOPE)
        enc = fixture_root / Memory.get(Memory.slug == sorted(files)[0]).body_path
        plain = enc.with_suffix("")
        plain.write_bytes(b"\0" * 20 + files[sorted(files)[0]][20:])  # killed part way through the zeros
        assert [f.kind for f in check(store).findings] == ["scrub_unfinished"]
        sealed = enc.read_bytes()
        enc.write_bytes(sealed[:-8] + b"AAAAAAAA")  # and the encrypted copy damaged: the tail is all there is
        repair(store)
        assert plain.exists()
        enc.write_bytes(sealed)
        repair(store)
        assert not plain.exists() and check(store).counts() == {}
