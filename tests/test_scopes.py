"""Scopes as a person sees them (labels, counts, lock state, grants, what leaks), grants in memoryd's format,
the OS-keyring key sources, unlock and lock, and the CLI commands for scripts; on copies of memoryd's root."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from helpers import events

from engram.store.errors import Conflict, KeyUnavailable, NotFound, UnsafePath, WrongKey
from engram.store.scopes import discover_roots, scopes
from engram.store.sensitive import grants as grants_mod
from engram.store.sensitive.convert import lock, mark_sensitive, unlock
from engram.store.sensitive.crypto import KeyRing, derive_passphrase_key, encrypt
from engram.store.sensitive.grants import Grant, grants, issue_grant, revoke_grant
from engram.store.service import Store
from engram.tui.cli import main

PASSPHRASE = "engram-fixture-passphrase-2026"
HEALTH, FINANCE, WEB = "91c2073b561e", "35998c22af79", "710d5aaf7a15"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_scope_has_a_label_counts_and_its_state(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        by_hash = {s.scope_hash: s for s in scopes(store)}
    assert by_hash[HEALTH].label == "/tmp/fxstage/home/code/个人健康"
    assert by_hash[HEALTH].label_from == "sensitive_scopes"
    assert by_hash["798e262b88f2"].label_from == "grant"  # not sensitive, but its grant names the project
    assert (by_hash[WEB].label, by_hash[WEB].label_from) == ("/tmp/fxstage/home/code/acme-web", "codex cwd")
    assert by_hash[WEB].memories == 54 and by_hash[WEB].by_type["session"] == 29
    assert by_hash[HEALTH].sensitive and by_hash[HEALTH].locked and by_hash[HEALTH].encrypted == 20
    assert not by_hash[WEB].sensitive and not by_hash[WEB].locked
    assert sum(s.memories for s in by_hash.values()) == 198


def test_memoryd_index_leak_is_a_finding_of_sensitive_scopes_only(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        by_hash = {s.scope_hash: s for s in scopes(store)}
    assert by_hash[FINANCE].index_leaks == {"titles": 18, "triggers": 42, "promotion texts": 3, "entity names": 17}
    assert any("index.db holds in clear" in f for f in by_hash[FINANCE].findings())
    assert by_hash[WEB].findings() == []


def test_scope_roots_are_discovered_by_hashing_project_directories(tmp_path):
    project = tmp_path / "code" / "billing"
    (project / ".git").mkdir(parents=True)
    (tmp_path / "code" / "other").mkdir()
    from engram.store.paths import scope_hash_for

    wanted = scope_hash_for(project)
    assert discover_roots([tmp_path], {wanted, "000000000000"}) == {wanted: str(project.resolve())}


def test_fixture_grants_read_with_memoryd_rules(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        found = grants(store)
    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    assert found[HEALTH].task_id == "annual-checkup-2026" and found[HEALTH].valid(now)
    assert found[FINANCE].duration == "session" and found[FINANCE].valid(now)
    assert not found[FINANCE].valid(now + timedelta(hours=6, seconds=1))
    assert not found["798e262b88f2"].valid(now)  # the expired once grant
    assert found[HEALTH].describe(now) == "task annual-checkup-2026, until revoked"


@pytest.mark.parametrize(
    "duration, lasts", [("once", timedelta(seconds=90)), ("session", timedelta(hours=8)), ("task", None)]
)
def test_issue_writes_memoryd_format_audits_and_replaces(fixture_root, duration, lasts):
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        fixed = datetime(2026, 11, 21, 9, 30, 15, 123456, tzinfo=UTC)
        store.clock = lambda: fixed
        revoke_grant(store, FINANCE)  # a new file, then: written 0600 (a replaced one keeps its mode)
        grant = issue_grant(store, FINANCE, duration, "t-7" if duration == "task" else None)
    path = fixture_root / "grants" / f"{FINANCE}.json"
    data = json.loads(path.read_text())
    assert list(data) == ["scope_hash", "scope_root", "duration", "expires_at", "issued_at", "issued_by", "task_id"]
    assert data["scope_root"] == "/tmp/fxstage/home/code/clients-finance"  # from sensitive_scopes
    assert data["issued_at"] == "2026-11-21T09:30:15+00:00"
    expected = "9999-12-31T23:59:59+00:00" if lasts is None else (fixed.replace(microsecond=0) + lasts).isoformat()
    assert data["expires_at"] == expected and grant.expires_at.isoformat() == expected
    assert data["task_id"] == ("t-7" if duration == "task" else None)
    assert path.stat().st_mode & 0o777 == 0o600
    last = events(fixture_root)[-1]
    assert last["event_type"] == "grant_issued" and last["scope_hash"] == FINANCE
    assert not path.read_bytes().endswith(b"\n")  # memoryd's json.dumps(indent=2)


def test_revoke_removes_and_audits_and_bad_requests_change_nothing(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        before = len(events(fixture_root))
        with pytest.raises(Conflict, match="not sensitive"):
            issue_grant(store, WEB, "session")
        with pytest.raises(grants_mod.BadInput):
            issue_grant(store, FINANCE, "forever")
        with pytest.raises(grants_mod.BadInput):
            issue_grant(store, FINANCE, "session", "a-task")
        with pytest.raises(UnsafePath):
            store.layout.resolve_data("grants/../index.db.json")
        assert len(events(fixture_root)) == before
        revoked = revoke_grant(store, HEALTH)
        assert isinstance(revoked, Grant) and revoked.task_id == "annual-checkup-2026"
        assert not (fixture_root / "grants" / f"{HEALTH}.json").exists()
        assert events(fixture_root)[-1]["event_type"] == "grant_revoked"
        with pytest.raises(NotFound):
            revoke_grant(store, HEALTH)


def test_a_broken_grant_file_is_a_finding_not_a_crash(fixture_root):
    (fixture_root / "grants" / f"{FINANCE}.json").write_text("{not json")
    with Store.open(fixture_root, keys=KeyRing()) as store:
        info = {s.scope_hash: s for s in scopes(store)}[FINANCE]
    assert isinstance(info.grant, str) and any("not a grant" in f for f in info.findings())


def test_unlock_lock_and_a_wrong_passphrase(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        with pytest.raises(KeyUnavailable, match="needs memoryd's passphrase"):
            unlock(store)
        with pytest.raises(WrongKey, match="wrong passphrase"):
            unlock(store, "not-it")
        assert store.keys.passphrase is None  # the wrong one is not kept
        assert unlock(store, PASSPHRASE) == [FINANCE, HEALTH]
        assert store.keys.can_open(HEALTH)
        lock(store)
        assert not store.keys.can_open(HEALTH) and store.keys.passphrase is None


def test_random_key_mode_reads_per_scope_keys_from_the_os_keyring(fixture_root, memory_keyring):
    key = os.urandom(32)
    memory_keyring.set_password("memoryd-scope-key", WEB, base64.b64encode(key).decode())
    with Store.open(fixture_root, keys=KeyRing(key_source="random"), actor="engram-test") as store:
        mark_sensitive(store, WEB)
        store.keys.forget()
        assert unlock(store) == [WEB]  # no passphrase asked: the keyring has the key
        with pytest.raises(KeyUnavailable, match="no key for scope"):
            store.keys.key_for("0123456789ab")
    enc = next((fixture_root / "scopes" / WEB).rglob("*.md.enc"))
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    raw = base64.b64decode(enc.read_bytes())
    assert AESGCM(key).decrypt(raw[:12], raw[12:], WEB.encode()).startswith(b"---")


def test_no_keyring_backend_is_a_clear_message_naming_the_options(fixture_root):
    keys = KeyRing(key_source="random")  # conftest sets the fail backend: no OS keyring at all
    with pytest.raises(KeyUnavailable) as caught:
        keys.key_for(HEALTH)
    message = str(caught.value)
    assert "no usable OS keyring" in message and "PYTHON_KEYRING_BACKEND" in message
    assert "Traceback" not in message


def test_passphrase_from_the_os_keyring_when_the_environment_has_none(memory_keyring):
    memory_keyring.set_password("memoryd-master-passphrase", "default", PASSPHRASE)
    keys = KeyRing()
    assert keys.key_for(HEALTH) == derive_passphrase_key(PASSPHRASE, HEALTH)


def test_cli_scopes_grant_revoke_and_unlock_check(capsys, fixture_root, monkeypatch, tmp_path):
    root = ["--root", str(fixture_root)]
    code, out, _ = run_cli(capsys, "scopes", *root, "--json", "--discover", str(tmp_path))
    listed = {s["scope_hash"]: s for s in json.loads(out)}
    assert code == 1 and listed[HEALTH]["locked"] and listed[HEALTH]["findings"]  # the index leak is a finding
    code, out, _ = run_cli(capsys, "grant", FINANCE, "--duration", "task", "--task", "q4", *root, "--json")
    assert code == 0 and json.loads(out)["task_id"] == "q4"
    code, out, _ = run_cli(capsys, "revoke", FINANCE, *root)
    assert code == 0 and "revoked" in out
    code, _, err = run_cli(capsys, "revoke", FINANCE, *root)
    assert code == 2 and err.count("\n") == 1
    code, _, err = run_cli(capsys, "scope", "unlock-check", HEALTH, *root)
    assert code == 2 and "needs its key" in err  # no key given: could not check
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", "wrong")
    code, out, _ = run_cli(capsys, "scope", "unlock-check", HEALTH, *root, "--json")
    assert code == 1 and json.loads(out)["opens"] is False
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", PASSPHRASE)
    code, out, _ = run_cli(capsys, "scope", "unlock-check", HEALTH, *root)
    assert code == 0 and "opens its files" in out


def test_encrypt_with_a_fixed_nonce_is_memoryds_byte_layout():
    key = derive_passphrase_key(PASSPHRASE, HEALTH, 1000)
    data = base64.b64decode(encrypt(b"x", key, HEALTH, nonce=bytes(12)))
    assert data[:12] == bytes(12) and len(data) == 12 + 1 + 16
