"""Rekeying a sensitive scope: every file re-encrypted under the new key and readable by memoryd's rule with
it, nothing lost; a wrong current key changes nothing; a crash at any step is finished by running it again."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from helpers import events, run_engram
from memoryd_emulation import memoryd_rebuild_index

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.errors import StoreError, WrongKey
from engram.store.frontmatter import parse
from engram.store.models import Memory
from engram.store.sensitive.binding import BOUND, verify
from engram.store.sensitive.crypto import KeyRing, derive_passphrase_key
from engram.store.sensitive.rekey import plan_passphrase_rekey, rekey_passphrase, rekey_random
from engram.store.service import Store
from engram.store.write import faults

OLD, NEW = "engram-fixture-passphrase-2026", "a-new-passphrase-for-finance"
FINANCE, HEALTH = "35998c22af79", "91c2073b561e"  # the fixture's two sensitive scopes
SENSITIVE = (FINANCE, HEALTH)


def memoryd_decrypt(path: Path, key: bytes, scope: str) -> bytes:
    """memoryd's rule, written from the format notes: base64(nonce || ciphertext || tag), AAD = scope hash."""
    raw = base64.b64decode(path.read_bytes())
    return AESGCM(key).decrypt(raw[:12], raw[12:], scope.encode())


def plaintexts(root: Path, passphrase: str | None = None, keys: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Every encrypted file of the sensitive scopes, opened as memoryd opens it: with keys derived from
    ``passphrase`` (its passphrase mode), or with the given per-scope keys (its keyring mode)."""
    found = {}
    for scope in SENSITIVE:
        key = keys[scope] if keys else derive_passphrase_key(passphrase or "", scope)
        for path in sorted((root / "scopes" / scope).rglob("*.md.enc")):
            found[path.name] = memoryd_decrypt(path, key, scope)
    return found


def sensitive_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for scope in SENSITIVE for p in (root / "scopes" / scope).rglob("*") if p.is_file()}


def test_a_new_passphrase_rekeys_every_sensitive_scope_together(fixture_root):
    before = plaintexts(fixture_root, OLD)
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        assert plan_passphrase_rekey(store) == {FINANCE: 18, HEALTH: 20}
        done = rekey_passphrase(store, NEW)
        assert [(p.scope_hash, p.done) for p in done.scopes] == [(FINANCE, 18), (HEALTH, 20)]
        assert store.keys.passphrase == NEW
        for row in Memory.select().where(Memory.scope_hash.in_(SENSITIVE)):
            data, plain = store.layout.resolve(row.body_path).read_bytes(), store.read_bytes(row.body_path)
            assert verify(store, row.body_path, data, parse(plain, row.body_path), plain).state == BOUND
        assert not check(store).of("rekey_interrupted")
    assert plaintexts(fixture_root, NEW) == before  # memoryd, given the new passphrase, reads every scope
    with pytest.raises(InvalidTag):
        plaintexts(fixture_root, OLD)
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds.count("rekey_started") == 1 and kinds.count("scope_rekeyed") == 2
    started = next(e for e in events(fixture_root) if e["event_type"] == "rekey_started")
    assert json.loads(started["details"])["scopes"] == [FINANCE, HEALTH]  # details: a JSON string, as memoryd writes


def test_a_wrong_current_key_changes_nothing(fixture_root):
    files = sensitive_files(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase="not-it")) as store:
        with pytest.raises(WrongKey):
            rekey_passphrase(store, NEW)
        assert not check(store).of("rekey_interrupted")
    assert sensitive_files(fixture_root) == files


def test_a_damaged_file_in_the_last_scope_stops_before_the_first_changes(fixture_root):
    victim = max((fixture_root / "scopes" / HEALTH).rglob("*.md.enc"))
    victim.write_bytes(victim.read_bytes()[:-8] + b"AAAAAAAA")
    files = sensitive_files(fixture_root)
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store, pytest.raises(StoreError):
        rekey_passphrase(store, NEW)
    assert sensitive_files(fixture_root) == files


def run_cli(root: Path, *args: str, crash: str | None = None) -> int:
    return run_engram(root, *args, env={"MEMORYD_MASTER_PASSPHRASE": OLD, "ENGRAM_NEW_PASSPHRASE": NEW}, crash=crash)


@pytest.mark.parametrize("point", faults.POINTS)
def test_a_crash_in_rekey_is_finished_by_running_it_again(fixture_root, point):
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        repair(store)  # every encrypted file bound, as on a root engram has worked on
        drift = check(store).counts()  # what is left of memoryd's own: the same afterwards, nothing added
    before = plaintexts(fixture_root, OLD)
    assert run_cli(fixture_root, "scope", "rekey", crash=f"{point}#4") == 137  # in the middle of the first batch
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        assert check(store).of("rekey_interrupted")  # said plainly, not only as undecryptable files
    assert run_cli(fixture_root, "scope", "rekey") == 0
    assert plaintexts(fixture_root, NEW) == before  # 0 lost, every scope under NEW
    with Store.open(fixture_root, keys=KeyRing(passphrase=NEW)) as store:
        repair(store)  # a temp file the kill left behind
        assert not [p for p in sensitive_files(fixture_root) if ".engram-tmp-" in p.name]
        assert check(store).counts() == drift  # no "rolled back" alarm for a file the killed run had re-encrypted


def test_a_stop_between_scopes_is_reported_for_the_scope_not_done_and_finished_by_a_rerun(fixture_root, monkeypatch):
    before = plaintexts(fixture_root, OLD)
    real_apply = Store.apply

    def stop_in_health(self, change):
        if change.event_type == "memory_rekeyed" and change.scope_hash == HEALTH:
            raise KeyboardInterrupt
        return real_apply(self, change)

    monkeypatch.setattr(Store, "apply", stop_in_health)
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store, pytest.raises(KeyboardInterrupt):
        rekey_passphrase(store, NEW)
    monkeypatch.setattr(Store, "apply", real_apply)
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        assert [f.data["scope_hash"] for f in check(store).of("rekey_interrupted")] == [HEALTH]
        rekey_passphrase(store, NEW)
        assert not check(store).of("rekey_interrupted")
    assert plaintexts(fixture_root, NEW) == before


def test_the_keyring_keeps_memoryds_passphrase_in_step(fixture_root, memory_keyring):
    memory_keyring.set_password("memoryd-master-passphrase", "default", OLD)
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        assert rekey_passphrase(store, NEW).keyring_updated
    assert memory_keyring.get_password("memoryd-master-passphrase", "default") == NEW


def test_a_rekey_to_the_source_memoryd_does_not_use_is_refused(fixture_root):
    files = sensitive_files(fixture_root)
    assert (
        run_cli(fixture_root, "scope", "rekey", FINANCE, "--to", "random") == 1
    )  # a refusal: exit 1, and nothing changed
    assert sensitive_files(fixture_root) == files


def keyring_mode(fixture_root: Path, memory_keyring) -> dict[str, bytes]:
    """The fixture as memoryd's random mode would hold it: each scope's current key in the OS keyring."""
    keys = {scope: derive_passphrase_key(OLD, scope) for scope in SENSITIVE}
    for scope, key in keys.items():
        memory_keyring.set_password("memoryd-scope-key", scope, base64.b64encode(key).decode())
    return keys


def memoryd_keys(memory_keyring) -> dict[str, bytes]:
    return {s: base64.b64decode(memory_keyring.get_password("memoryd-scope-key", s)) for s in SENSITIVE}


def test_keyring_mode_gives_one_scope_a_new_random_key(fixture_root, memory_keyring):
    old_keys = keyring_mode(fixture_root, memory_keyring)
    before = plaintexts(fixture_root, keys=old_keys)
    with Store.open(fixture_root, keys=KeyRing(key_source="random")) as store:
        rekey_random(store, FINANCE)
    keys = memoryd_keys(memory_keyring)
    assert keys[FINANCE] != old_keys[FINANCE] and keys[HEALTH] == old_keys[HEALTH]
    assert plaintexts(fixture_root, keys=keys) == before  # memoryd reads both with what its keyring holds
    assert memory_keyring.get_password("engram-next-scope-key", FINANCE) is None


def test_keyring_mode_stopped_half_way_keeps_both_keys_and_finishes(fixture_root, memory_keyring, monkeypatch):
    old_keys = keyring_mode(fixture_root, memory_keyring)
    before = plaintexts(fixture_root, keys=old_keys)
    monkeypatch.setattr("engram.store.sensitive.convert.BATCH", 5)
    monkeypatch.setattr("engram.store.sensitive.rekey.BATCH", 5)
    real_apply, calls = Store.apply, []

    def stop_on_the_second_batch(self, change):
        calls.append(change.event_type)
        if calls.count("memory_rekeyed") == 2:
            raise KeyboardInterrupt
        return real_apply(self, change)

    monkeypatch.setattr(Store, "apply", stop_on_the_second_batch)
    with Store.open(fixture_root, keys=KeyRing(key_source="random")) as store, pytest.raises(KeyboardInterrupt):
        rekey_random(store, FINANCE)
    monkeypatch.setattr(Store, "apply", real_apply)
    assert memoryd_keys(memory_keyring)[FINANCE] == old_keys[FINANCE]  # memoryd still reads what is not done
    assert memory_keyring.get_password("engram-next-scope-key", FINANCE)  # the new key is kept, not lost
    with Store.open(fixture_root, keys=KeyRing(key_source="random")) as store:
        rekey_random(store, FINANCE)
        assert not check(store).of("rekey_interrupted")
    assert plaintexts(fixture_root, keys=memoryd_keys(memory_keyring)) == before


def test_a_rekey_after_memoryds_rebuild_reaches_the_files_the_index_lost(fixture_root):
    before = plaintexts(fixture_root, OLD)
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        store.index.writable()
        memoryd_rebuild_index(fixture_root)  # no .md.enc has an index row now
        assert plan_passphrase_rekey(store) == {FINANCE: 18, HEALTH: 20}
        assert rekey_passphrase(store, NEW).done == 38
    assert plaintexts(fixture_root, NEW) == before  # not one file left under the old passphrase
