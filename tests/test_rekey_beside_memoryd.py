"""A passphrase rekey beside a running memoryd, which keeps the passphrase it started with: files it writes
under the old one while the rekey runs are re-encrypted by the rekey's last step; one it writes afterwards is
named by ``check`` with the command that fixes it; and one odd file never keeps plaintext on disk."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from test_rekey import FINANCE, NEW, OLD, plaintexts

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.sensitive.crypto import KeyRing, derive_passphrase_key
from engram.store.sensitive.rekey import rekey_passphrase
from engram.store.service import Store

DOC = (
    "---\ntitle: Wire transfer limits\nslug: {slug}\ntype: fact\nscope_hash: " + FINANCE + "\nsource: memoryd\n"
    "created_at: 2026-11-30T10:00:00+00:00\n---\nThe daily limit is 50k.\n"
)


def memoryd_saves_encrypted(root: Path, slug: str, passphrase: str) -> Path:
    """memoryd's save into a sensitive scope, under the passphrase memoryd was started with."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key = derive_passphrase_key(passphrase, FINANCE)
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, DOC.format(slug=slug).encode(), FINANCE.encode())
    path = root / "scopes" / FINANCE / "facts" / f"{slug}.md.enc"
    path.write_bytes(base64.b64encode(nonce + sealed))
    return path


def test_a_file_memoryd_writes_under_the_old_key_during_the_rekey_is_rekeyed_too(fixture_root):
    written = []

    def memoryd_meanwhile(scope: str, done: int, total: int) -> None:
        if scope == FINANCE and not written:
            written.append(memoryd_saves_encrypted(fixture_root, "2026-11-30-wire-limits", OLD))

    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        result = rekey_passphrase(store, NEW, memoryd_meanwhile)
        assert written and result.late == 1
    assert "2026-11-30-wire-limits.md.enc" in plaintexts(fixture_root, NEW)  # every file opens under the new one


def test_a_file_memoryd_writes_under_the_old_key_afterwards_is_named_with_its_fix(fixture_root, capsys):
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        rekey_passphrase(store, NEW)
    memoryd_saves_encrypted(fixture_root, "2026-12-01-late-wire-limits", OLD)
    with Store.open(fixture_root, keys=KeyRing(passphrase=NEW), actor="engram-test") as store:
        [found] = check(store).of("old_key_file")
    assert found.path.endswith("2026-12-01-late-wire-limits.md.enc")
    assert "memoryd still runs with the old passphrase" in found.detail
    assert "engram scope rekey" in found.detail and "ENGRAM_NEW_PASSPHRASE" in found.detail
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        assert rekey_passphrase(store, NEW).done == 1  # the command it names: only that file changes
    with Store.open(fixture_root, keys=KeyRing(passphrase=NEW), actor="engram-test") as store:
        report = check(store)
        assert not report.of("old_key_file") and not report.of("undecryptable_file")
    assert "2026-12-01-late-wire-limits.md.enc" in plaintexts(fixture_root, NEW)


def test_a_plaintext_file_is_encrypted_though_another_file_is_under_the_old_key(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:
        rekey_passphrase(store, NEW)
    odd = memoryd_saves_encrypted(fixture_root, "2026-12-01-late-wire-limits", OLD)
    plain = fixture_root / "scopes" / FINANCE / "facts" / "2026-12-02-plain.md"
    plain.write_text(DOC.format(slug="2026-12-02-plain"))
    with Store.open(fixture_root, keys=KeyRing(passphrase=NEW), actor="engram-test") as store:
        result = repair(store)
        assert not plain.exists(), result.failed and plain.with_name(plain.name + ".enc").exists()
        assert [f.path for f in result.remaining.of("old_key_file")] == [str(odd.relative_to(fixture_root))]
