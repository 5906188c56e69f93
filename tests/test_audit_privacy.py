"""Lines about a sensitive scope carry identifiers and hashes only: no title, reason, name or path of it reaches
audit.jsonl, which every tool of the root reads and which is never rewritten."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from helpers import events
from hypothesis import given
from hypothesis import strategies as st

from engram.store import graph
from engram.store.audit.chain import IDENTIFIER_KEYS, private_details
from engram.store.domain import MemoryType
from engram.store.importers import importer
from engram.store.importers.base import Options
from engram.store.importers.run import apply_import, preview
from engram.store.models import Entity, Memory
from engram.store.paths import scope_hash_for
from engram.store.promotions import Proposal, propose, reject
from engram.store.sensitive.convert import mark_sensitive

FINANCE, PLAIN = "35998c22af79", "710d5aaf7a15"
CANARY = "Quartz-Heron salary figure"
DURA = {"D": 1.0, "U": 1.0, "R": 1.0, "A": 1.0}


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def proposal(scope: str, title: str = CANARY) -> Proposal:
    session = Memory.get((Memory.scope_hash == scope) & (Memory.type == "session"))
    return Proposal(session.slug, MemoryType.FACT, title, "body", ["x"], DURA, "why", scope)


def log_text(root: Path) -> str:
    return (root / "audit" / "audit.jsonl").read_text(encoding="utf-8")


def details(event: dict) -> dict:
    return json.loads(event["details"])


def test_a_proposal_into_a_sensitive_scope_logs_the_title_hashed(store, fixture_root):
    pid = propose(store, proposal(FINANCE))
    reject(store, pid, reason="duplicate of the Quartz-Heron payslip")
    assert "Quartz-Heron" not in log_text(fixture_root)
    proposed, rejected = events(fixture_root)[-2:]
    assert details(proposed)["title"] == sha(CANARY) and details(proposed)["type"] == "fact"
    assert details(rejected)["reason"] == sha("duplicate of the Quartz-Heron payslip")
    assert rejected["target_id"] == str(pid)  # identifiers stay: check and the audit pane follow them


def test_a_scope_marked_sensitive_later_has_left_no_text_in_the_log(store, fixture_root):
    """The chain cannot be rewritten: a title logged in clear before the mark would stay there for good."""
    pid = propose(store, proposal(PLAIN))
    reject(store, pid, reason="the Quartz-Heron numbers are private")
    mark_sensitive(store, PLAIN, discover_in=())
    assert "Quartz-Heron" not in log_text(fixture_root)


def test_audit_log_shows_titles_by_looking_them_up_while_the_scope_is_readable(
    fixture_root, unlocked_keys, capsys, monkeypatch
):
    from engram.store.service import Store
    from engram.tui.cli import main

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as opened:
        plain = propose(opened, proposal(PLAIN, "Deploys go out on Tuesdays"))
        hidden = propose(opened, proposal(FINANCE))
    assert main(["audit", "log", "--type", "promotion_proposed", "--root", str(fixture_root)]) == 0
    out = capsys.readouterr().out
    assert "Deploys go out on Tuesdays" in out and CANARY not in out  # the sensitive one: its scope is locked
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", "engram-fixture-passphrase-2026")
    assert main(["audit", "log", "--json", "--type", "promotion_proposed", "--root", str(fixture_root)]) == 0
    shown = {details(e)["promotion_id"]: e["title"] for e in json.loads(capsys.readouterr().out)}
    assert shown[plain] == "Deploys go out on Tuesdays" and shown[hidden] == CANARY


def test_an_import_into_a_sensitive_scope_logs_no_origin_or_key(store, fixture_root, tmp_path):
    source = tmp_path / "openrelix"
    shutil.copytree(Path(__file__).parent / "fixtures" / "importers" / "openrelix", source)
    plan = preview(store, importer("openrelix"), source, Options(scope=FINANCE))
    apply_import(store, plan)
    items = [e for e in events(fixture_root) if e["event_type"] == "import_item" and e["scope_hash"] == FINANCE]
    assert items and all(str(source) not in json.dumps(e) for e in items)
    assert all(details(e)["origin"].startswith("sha256:") and details(e)["key"].startswith("sha256:") for e in items)


def test_marking_a_scope_hashes_its_project_path_in_the_mark_event(store, fixture_root, tmp_path):
    project = tmp_path / "clients" / "acme-litigation"
    project.mkdir(parents=True)
    mark_sensitive(store, str(project))
    marked = next(
        e
        for e in events(fixture_root)
        if e["event_type"] == "scope_marked_sensitive" and e["scope_hash"] == scope_hash_for(project)
    )
    assert "acme-litigation" not in json.dumps(marked)


def test_an_entity_renamed_in_a_sensitive_scope_keeps_neither_name(store, fixture_root):
    entity = Entity.select().where(Entity.scope_hash == FINANCE).first()
    graph.rename_entity(store, entity.id, "Quartz-Heron Holdings")
    renamed = events(fixture_root)[-1]
    assert renamed["event_type"] == "entity_renamed" and "Quartz-Heron" not in json.dumps(renamed)
    assert details(renamed)["old_name"] == sha(entity.name)


texts = st.text(min_size=1).filter(lambda s: not s.startswith("sha256:"))
values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(texts, values, max_size=6))
def test_no_text_survives_outside_the_identifier_keys(raw):
    """Every string left sits under an identifier key (at any depth), or is a hash."""

    def strings(value, kept):
        if isinstance(value, str):
            yield kept, value
        elif isinstance(value, list):
            for item in value:
                yield from strings(item, kept)
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from strings(item, kept or key in IDENTIFIER_KEYS)

    for kept, text in strings(private_details(raw), False):
        assert kept or (text.startswith("sha256:") and len(text) == 71)
