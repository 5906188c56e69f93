"""SCOPE arguments given as paths: resolved to the scope hash by memoryd's rule, a path that is no project refused
before anything changes, and nothing outside the data root ever has its permissions changed."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from pathlib import Path

import pytest
from conftest import PASSPHRASE
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from helpers import run_engram

from engram.store.domain import MemoryType
from engram.store.frontmatter import Frontmatter, MemoryDoc
from engram.store.memories import create_memory
from engram.store.models import Memory
from engram.store.scopes import set_label
from engram.store.sensitive.convert import mark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store


def memoryd_hash(path: Path) -> str:
    """memoryd's ``scope_hash(resolve_scope_root(path))``, written from its documented rule."""
    here = path.resolve()
    root = next((p for p in (here, *here.parents) if (p / ".git").exists()), here)
    return hashlib.sha1(str(root).encode()).hexdigest()[:12]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with a notes file of its own (memoryd's mark must not touch it) and a sub folder."""
    proj = tmp_path / "work" / "acme-billing"
    (proj / ".git").mkdir(parents=True)
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / "NOTES.md").write_text("# the project's own notes, not a memory\n")
    for folder in (proj, proj / "src", proj / "src" / "deep"):
        folder.chmod(0o755)
    return proj


def with_memories(root: Path, scope: str, n: int = 3) -> None:
    with Store.open(root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        for i in range(n):
            create_memory(
                store,
                MemoryDoc(
                    frontmatter=Frontmatter(
                        title=f"Billing fact {i}",
                        slug=f"billing-fact-{i}",
                        type=MemoryType.FACT,
                        scope_hash=scope,
                        source="manual",
                        created_at=store.now(),
                    ),
                    body=f"invoice rule {i}\n",
                ),
            )


def cli(root: Path, *args: str) -> int:
    return run_engram(root, *args, env={"MEMORYD_MASTER_PASSPHRASE": PASSPHRASE})


def modes(folder: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_marking_a_project_path_encrypts_its_scope_and_leaves_the_project_alone(fixture_root, project):
    scope = memoryd_hash(project)
    with_memories(fixture_root, scope)
    before = modes(project)
    assert cli(fixture_root, "scope", "mark", str(project / "src" / "deep")) == 0
    encrypted = sorted((fixture_root / "scopes" / scope).rglob("*.md.enc"))
    assert len(encrypted) == 3 and not list((fixture_root / "scopes" / scope).rglob("*.md"))
    key = hashlib.pbkdf2_hmac("sha256", PASSPHRASE.encode(), scope.encode(), 600000, 32)
    raw = base64.b64decode(encrypted[0].read_bytes())
    assert b"invoice rule" in AESGCM(key).decrypt(raw[:12], raw[12:], scope.encode())
    after = modes(project)
    after.pop(project / ".memoryd-sensitive")  # memoryd's marker, at the scope root as memoryd writes it
    assert after == before
    assert (project / ".memoryd-sensitive").read_text() == f"scope_root: {project}\n"
    assert (project / "NOTES.md").read_text().startswith("# the project's own notes")
    with Store.open(fixture_root) as store:
        rows = {r["scope_hash"]: r for r in store.index.sensitive_scope_rows()}
        assert rows[scope]["scope_root"] == str(project)
        assert str(project) not in rows and not Memory.select().where(Memory.scope_hash == str(project)).exists()


@pytest.mark.parametrize("what", ["missing", "file", "inside the root"])
def test_a_path_that_is_no_project_is_refused_and_changes_nothing(fixture_root, project, what):
    target = {"missing": project / "nope", "file": project / "NOTES.md", "inside the root": fixture_root / "scopes"}[
        what
    ]
    Store.open(fixture_root).close()  # engram's own engram.db comes with the first open; compare after it
    before, project_modes = snapshot(fixture_root), modes(project)
    assert cli(fixture_root, "scope", "mark", str(target)) == 2
    assert snapshot(fixture_root) == before and modes(project) == project_modes


def test_unmark_unlock_check_grant_and_revoke_take_the_same_path(fixture_root, project):
    scope = memoryd_hash(project)
    with_memories(fixture_root, scope)
    assert cli(fixture_root, "scope", "mark", str(project)) == 0
    assert cli(fixture_root, "scope", "unlock-check", str(project / "src")) == 0
    assert cli(fixture_root, "grant", str(project / "src"), "--duration", "session") == 0
    grant = json.loads((fixture_root / "grants" / f"{scope}.json").read_text())
    assert grant["scope_hash"] == scope and grant["scope_root"] == str(project)
    assert cli(fixture_root, "revoke", str(project)) == 0
    assert not (fixture_root / "grants" / f"{scope}.json").exists()
    assert cli(fixture_root, "scope", "unmark", str(project)) == 0
    assert len(list((fixture_root / "scopes" / scope).rglob("*.md"))) == 3
    assert not (project / ".memoryd-sensitive").exists()


def test_marking_by_hash_records_the_project_engram_knows(fixture_root, project):
    scope = memoryd_hash(project)
    with_memories(fixture_root, scope)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        set_label(store, scope, str(project))  # the person named the scope by its folder
        mark_sensitive(store, scope, discover_in=())
        row = next(r for r in store.index.sensitive_scope_rows() if r["scope_hash"] == scope)
    assert row["scope_root"] == str(project)
    assert (project / ".memoryd-sensitive").is_file()


def test_marking_by_hash_finds_the_project_on_this_machine(fixture_root, project):
    scope = memoryd_hash(project)
    with_memories(fixture_root, scope)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        mark_sensitive(store, scope, discover_in=[project.parent.parent])
        row = next(r for r in store.index.sensitive_scope_rows() if r["scope_hash"] == scope)
    assert row["scope_root"] == str(project)


def test_a_symlinked_scope_folder_carries_no_chmod_outside(fixture_root, tmp_path):
    scope = "5727cb99a38b"
    outside = tmp_path / "elsewhere"
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    (fixture_root / "scopes" / scope / "elsewhere").symlink_to(outside, target_is_directory=True)
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE), actor="engram-test") as store:
        mark_sensitive(store, scope, discover_in=())
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
    assert stat.S_IMODE((fixture_root / "scopes" / scope).stat().st_mode) == 0o700
