"""Rekeying a sensitive scope: every file re-encrypted under the new key and readable by memoryd's rule with
it, nothing lost; a wrong current key changes nothing; a crash at any step is finished by running it again."""

from __future__ import annotations

import base64
from pathlib import Path

import keyring
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from store import faults
from store.binding import BOUND, verify
from store.check import check
from store.crypto import KeyRing, derive_passphrase_key
from store.errors import WrongKey
from store.frontmatter import parse
from store.index import Memory
from store.rekey import new_key_for, rekey
from store.service import Store
from helpers import events, run_engram

OLD, NEW = "engram-fixture-passphrase-2026", "a-new-passphrase-for-finance"
FINANCE = "35998c22af79"


def memoryd_decrypt(path: Path, key: bytes) -> bytes:
    """memoryd's rule, written from the format notes: base64(nonce || ciphertext || tag), AAD = scope hash."""
    raw = base64.b64decode(path.read_bytes())
    return AESGCM(key).decrypt(raw[:12], raw[12:], FINANCE.encode())


def plaintexts(root: Path, key: bytes) -> dict[str, bytes]:
    return {p.name: memoryd_decrypt(p, key) for p in sorted((root / "scopes" / FINANCE).rglob("*.md.enc"))}


def test_rekey_to_a_new_passphrase(fixture_root):
    before = plaintexts(fixture_root, derive_passphrase_key(OLD, FINANCE))
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        done = rekey(store, FINANCE, new_key_for(FINANCE, "passphrase", NEW, store.keys.kdf_iters))
        assert (done.files, done.done) == (18, 18)
        rels = [m.body_path for m in Memory.select().where(Memory.scope_hash == FINANCE)]
        for rel in rels:  # bound under the new key, and the session reads with it
            data, plain = store.layout.resolve(rel).read_bytes(), store.read_bytes(rel)
            assert verify(store, rel, data, parse(plain, rel), plain).state == BOUND
        assert not check(store).of("rekey_interrupted")
    assert plaintexts(fixture_root, derive_passphrase_key(NEW, FINANCE)) == before
    with pytest.raises(InvalidTag):
        plaintexts(fixture_root, derive_passphrase_key(OLD, FINANCE))
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-3:] == ["rekey_started", "memory_rekeyed", "scope_rekeyed"]


def test_a_wrong_current_key_changes_nothing(fixture_root):
    files = {p: p.read_bytes() for p in (fixture_root / "scopes" / FINANCE).rglob("*") if p.is_file()}
    with Store.open(fixture_root, keys=KeyRing(passphrase="not-it")) as store:
        with pytest.raises(WrongKey):
            rekey(store, FINANCE, derive_passphrase_key(NEW, FINANCE))
        assert not check(store).of("rekey_interrupted")
    assert {p: p.read_bytes() for p in files} == files


def run_cli(root: Path, *args: str, crash: str | None = None) -> int:
    return run_engram(root, *args, env={"MEMORYD_MASTER_PASSPHRASE": OLD, "ENGRAM_NEW_PASSPHRASE": NEW}, crash=crash)


@pytest.mark.parametrize("point", faults.POINTS)
def test_a_crash_in_rekey_is_finished_by_running_it_again(fixture_root, point):
    before = plaintexts(fixture_root, derive_passphrase_key(OLD, FINANCE))
    assert run_cli(fixture_root, "scope", "rekey", FINANCE, crash=point) == 137
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        assert check(store).of("rekey_interrupted")  # said plainly, not only as undecryptable files
    assert run_cli(fixture_root, "scope", "rekey", FINANCE) == 0
    assert plaintexts(fixture_root, derive_passphrase_key(NEW, FINANCE)) == before  # 0 lost, all under NEW
    assert not [p for p in (fixture_root / "scopes" / FINANCE).rglob("*") if p.is_file() and ".tmp" in p.name]
    with Store.open(fixture_root, keys=KeyRing(passphrase=NEW)) as store:
        assert not check(store).of("rekey_interrupted")


def test_rekey_to_a_random_key_kept_in_the_os_keyring(fixture_root, memory_keyring):
    before = plaintexts(fixture_root, derive_passphrase_key(OLD, FINANCE))
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        rekey(store, FINANCE, new_key_for(FINANCE, "random", None, store.keys.kdf_iters), "random")
    key = base64.b64decode(keyring.get_password("memoryd-scope-key", FINANCE))
    assert plaintexts(fixture_root, key) == before
