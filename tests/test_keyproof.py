"""A wrong passphrase writes nothing: before anything is encrypted, the key is proven against a file already
encrypted under memoryd's master passphrase, or engram's verifier for the root; with nothing to prove it
against, it must be given twice. Each refusal is one line, exit 2, and the root unchanged."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import PASSPHRASE
from helpers import fresh_store
from memoryd_emulation import memoryd_proposes

from engram.store.errors import PassphraseUnconfirmed, WrongKey
from engram.store.models import KeyVerifier, Promotion
from engram.store.sensitive import keyproof
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import KeyRing, opens_verifier
from engram.store.sensitive.rekey import rekey_passphrase
from engram.store.service import Store
from engram.tui.cli import main

PLAIN, FINANCE = "5727cb99a38b", "35998c22af79"
TYPO = PASSPHRASE + "x"
CODEX = Path(__file__).parent / "fixtures" / "importers" / "codex"


def cli(capsys, monkeypatch, passphrase: str | None, *args: str, again: str | None = None) -> tuple[int, str]:
    """``engram ARGS`` in this process, with memoryd's passphrase (and its confirmation) in the environment."""
    for var, value in (("MEMORYD_MASTER_PASSPHRASE", passphrase), ("ENGRAM_CONFIRM_PASSPHRASE", again)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    code = main(list(args))
    return code, capsys.readouterr().err


def state(root: Path) -> dict[str, bytes | str]:
    """Every file under the root and the content of both databases (their -shm/-wal files change on reads).
    The root is opened once first: engram creates its own engram.db on the first open of a writable root."""
    Store.open(root).close()
    files: dict[str, bytes | str] = {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".db" not in p.name
    }
    for db in ("index.db", "engram.db"):
        if (root / db).exists():
            with sqlite3.connect(root / db) as con:
                files[db] = "\n".join(con.iterdump())
    return files


def test_a_typo_marks_nothing(capsys, monkeypatch, fixture_root):
    before = state(fixture_root)
    code, err = cli(capsys, monkeypatch, TYPO, "scope", "mark", PLAIN, "--root", str(fixture_root))
    assert code == 2 and err.count("\n") == 1 and "wrong passphrase" in err
    assert state(fixture_root) == before


def test_a_typo_approves_nothing_into_a_sensitive_scope(capsys, monkeypatch, fixture_root):
    pid = memoryd_proposes(fixture_root, scope=FINANCE)
    before = state(fixture_root)
    code, err = cli(capsys, monkeypatch, TYPO, "promotions", "approve", str(pid), "--root", str(fixture_root))
    assert code == 2 and err.count("\n") == 1 and "wrong passphrase" in err
    assert state(fixture_root) == before
    code, _ = cli(capsys, monkeypatch, PASSPHRASE, "promotions", "approve", str(pid), "--root", str(fixture_root))
    assert code == 0


def test_a_typo_imports_nothing_into_a_sensitive_scope(capsys, monkeypatch, fixture_root, tmp_path):
    source = shutil.copytree(CODEX, tmp_path / "codex")
    before = state(fixture_root)
    code, err = cli(
        capsys, monkeypatch, TYPO, "import", "codex", str(source), "--scope", FINANCE, "--root", str(fixture_root)
    )
    assert code == 2 and err.count("\n") == 1 and "wrong passphrase" in err
    assert state(fixture_root) == before


def test_another_scopes_file_proves_the_passphrase_for_a_scope_with_none(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        keyproof.prove(store, PLAIN)  # PLAIN has no encrypted file: FINANCE's prove the passphrase
        assert store.keys.proven(PLAIN)
    with Store.open(fixture_root, keys=KeyRing(passphrase=TYPO), actor="engram-test") as store:
        with pytest.raises(WrongKey, match=f"does not open sensitive scope {FINANCE}"):
            keyproof.prove(store, PLAIN)


@pytest.fixture
def fresh_root(tmp_path: Path) -> Path:
    """A root with one plaintext memory and nothing encrypted anywhere: nothing to check a passphrase against."""
    root = tmp_path / "fresh"
    fresh_store(root, KeyRing(), PLAIN).close()
    return root


def test_with_nothing_to_prove_against_the_passphrase_is_needed_twice(capsys, monkeypatch, fresh_root):
    before = state(fresh_root)
    code, err = cli(capsys, monkeypatch, "first-pass", "scope", "mark", PLAIN, "--root", str(fresh_root))
    assert code == 2 and err.count("\n") == 1 and "ENGRAM_CONFIRM_PASSPHRASE" in err
    code, err = cli(
        capsys, monkeypatch, "first-pass", "scope", "mark", PLAIN, "--root", str(fresh_root), again="first-pasz"
    )
    assert code == 2 and state(fresh_root) == before
    code, _ = cli(
        capsys, monkeypatch, "first-pass", "scope", "mark", PLAIN, "--root", str(fresh_root), again="first-pass"
    )
    assert code == 0 and list((fresh_root / "scopes" / PLAIN).rglob("*.md.enc"))


def test_the_verifier_catches_a_typo_when_nothing_is_encrypted_any_more(capsys, monkeypatch, fresh_root):
    with Store.open(fresh_root, keys=KeyRing(passphrase="first-pass", confirmed=True)) as store:
        mark_sensitive(store, PLAIN)
        unmark_sensitive(store, PLAIN)  # nothing encrypted anywhere now: only the verifier knows the passphrase
        assert KeyVerifier.get_or_none(KeyVerifier.id == 1) is not None
    before = state(fresh_root)
    code, err = cli(capsys, monkeypatch, "first-pasz", "scope", "mark", PLAIN, "--root", str(fresh_root))
    assert code == 2 and "wrong passphrase" in err and state(fresh_root) == before
    code, _ = cli(capsys, monkeypatch, "first-pass", "scope", "mark", PLAIN, "--root", str(fresh_root))
    assert code == 0


def test_a_verifier_gives_way_only_to_a_passphrase_given_twice(fresh_root):
    with Store.open(fresh_root, keys=KeyRing(passphrase="first-pass", confirmed=True)) as store:
        mark_sensitive(store, PLAIN)
        unmark_sensitive(store, PLAIN)
    with Store.open(fresh_root, keys=KeyRing(passphrase="second-pass"), actor="engram-test") as store:
        with pytest.raises(WrongKey):
            mark_sensitive(store, PLAIN)
        store.keys.set_passphrase("second-pass", confirmed=True)
        mark_sensitive(store, PLAIN)
        row = KeyVerifier.get(KeyVerifier.id == 1)
        assert opens_verifier("second-pass", row.salt, row.kdf_iters, row.sealed)


def test_a_passphrase_rekey_moves_the_verifier_along(fixture_root, monkeypatch):
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        rekey_passphrase(store, "new-pass-2026")
        row = KeyVerifier.get(KeyVerifier.id == 1)
        assert opens_verifier("new-pass-2026", row.salt, row.kdf_iters, row.sealed)
        assert not opens_verifier(PASSPHRASE, row.salt, row.kdf_iters, row.sealed)


def test_an_unconfirmed_passphrase_is_not_taken_by_the_store_either(fresh_root):
    with Store.open(fresh_root, keys=KeyRing(passphrase="first-pass"), actor="engram-test") as store:
        with pytest.raises(PassphraseUnconfirmed):
            mark_sensitive(store, PLAIN)
        assert PLAIN not in store.sensitive_scopes() and Promotion.select().count() == 0
