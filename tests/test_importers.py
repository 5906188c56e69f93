"""The four importers on synthetic inputs (tests/fixtures/importers), into a copy of memoryd's root: counts,
field mapping, idempotence, dry runs that write nothing, malformed input reported and skipped, secrets
flagged, and the audit events of each item and run."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from helpers import events
from memoryd_emulation import memoryd_mirrors_codex_summary

from engram.store.columns import dura_of, parse_json_list
from engram.store.domain import MemoryType
from engram.store.importers import base, importer
from engram.store.importers.base import Options
from engram.store.importers.run import apply_import, preview
from engram.store.models import Imported, Memory, Promotion, SupersedesChain
from engram.store.paths import scope_hash_for
from engram.store.promotions import approve

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
sys.path.insert(0, str(FIXTURES))
from generate import codex_home, huge_line  # noqa: E402

WHERE = {
    "openrelix": "openrelix",
    "cognirelay": "cognirelay",
    "codex": "codex",
    "eternego": "eternego/example-persona/home",
}


@pytest.fixture
def source(tmp_path: Path):
    """A copy of one system's synthetic input; the importers only read, but tests never use the originals."""

    def copy(system: str) -> Path:
        dest = tmp_path / "input" / system
        shutil.copytree(FIXTURES / system, dest)
        return dest / WHERE[system].removeprefix(system).lstrip("/")

    return copy


def root_state(root: Path) -> dict[str, bytes | str]:
    """Every file's bytes, and the index's content (its -shm file changes on reads)."""
    files: dict[str, bytes | str] = {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("index.db")
    }
    with sqlite3.connect(root / "index.db") as con:
        files["index.db"] = "\n".join(con.iterdump())
    return files


def imported(store, system: str, path: Path, **options):
    plan = preview(store, importer(system), path, Options(**options))
    apply_import(store, plan)
    return plan


@pytest.mark.parametrize("system", sorted(WHERE))
def test_a_dry_run_writes_nothing(store, fixture_root, source, system):
    before = root_state(fixture_root)
    plan = preview(store, importer(system), source(system))
    assert plan.items > 0
    assert root_state(fixture_root) == before


@pytest.mark.parametrize("system", sorted(WHERE))
def test_a_second_run_adds_nothing(store, fixture_root, source, system):
    path = source(system)
    first = imported(store, system, path)
    memories, promotions = Memory.select().count(), Promotion.select().count()
    lines = len(events(fixture_root))
    again = preview(store, importer(system), path)
    assert again.items == 0 and again.already == first.items
    apply_import(store, again)
    assert (Memory.select().count(), Promotion.select().count()) == (memories, promotions)
    assert [e["event_type"] for e in events(fixture_root)[lines:]] == ["import_run"]


@pytest.mark.parametrize("system", sorted(WHERE))
def test_every_item_is_audited_with_its_origin_and_recorded(store, fixture_root, source, system):
    before = len(events(fixture_root))
    plan = imported(store, system, source(system))
    new = events(fixture_root)[before:]
    items = [json.loads(e["details"]) for e in new if e["event_type"] == "import_item"]
    assert len(items) == plan.items and new[-1]["event_type"] == "import_run"
    assert all(d["system"] == system and d["origin"] for d in items)
    run = json.loads(new[-1]["details"])
    assert (run["sessions"], run["promotions"], run["malformed"]) == (
        len(plan.sessions),
        len(plan.promotions),
        len(plan.malformed),
    )
    recorded = Imported.select().where(Imported.system == system).count()
    assert recorded == plan.items


@pytest.mark.parametrize("system", ["openrelix", "cognirelay", "eternego"])
def test_imported_promotions_can_be_approved(store, source, system):
    imported(store, system, source(system))
    for row in (
        Promotion.select().join(Imported, on=(Imported.promotion_id == Promotion.id)).where(Imported.system == system)
    ):
        done = approve(store, row.id)
        assert store.read_doc(done.relpath).frontmatter.promoted_from == row.source_session_slug


def test_codex_rollouts_become_sessions_as_memoryds_mirror_writes_them(store, source):
    plan = imported(store, "codex", source("codex"))
    assert len(plan.sessions) == 6  # 4 readable rollouts with a request, 1 secret one, 1 summary
    row = store.memory("2026-03-01-2026-03-01T09-00-00-00000000-0000-4000-8000-000000000000")
    doc = store.read_doc(row.body_path)
    assert doc.frontmatter.source == "codex-rollout" and doc.frontmatter.type is MemoryType.SESSION
    assert row.scope_hash == scope_hash_for("/work/example/project-0")
    assert doc.body.startswith("```codex-rollout-header\nthread_id: 00000000-0000-4000-8000-000000000000\n")
    assert "**You:** Can you look into the billing export? Session 0." in doc.body
    assert "**Codex:** I looked into the billing export" in doc.body
    for left_out in ("environment_context", "tool output that is left out", "encrypted_content", "gAAAAB"):
        assert left_out not in doc.body
    reasons = {m.origin.file.rsplit("/", 1)[-1]: m.reason for m in plan.malformed}
    assert reasons["rollout-2026-03-02T11-00-00-00000000-0000-4000-8000-000000000008.jsonl"] == "empty file"
    assert "no request" in reasons["rollout-2026-03-02T12-00-00-00000000-0000-4000-8000-000000000009.jsonl"]
    assert "not UTF-8" in reasons["broken.md"]
    bad_lines = {(m.origin.line, m.reason[:8]) for m in plan.malformed if m.origin.line}
    assert bad_lines == {(5, "not JSON"), (6, "not UTF-")}
    # the rollout with bad lines is still imported from its good ones
    assert Memory.get_or_none(Memory.slug.endswith("-2026-03-02T10-00-00-00000000-0000-4000-8000-000000000007"))


def test_a_summary_memoryds_mirror_wrote_is_not_imported_again_and_its_rollout_still_is(store, fixture_root, source):
    """memoryd's Codex mirror copies rollout summaries (not rollouts): the import recognises its copy by the
    header's thread_id, records it instead of writing a second one, and still imports the rollout itself."""
    path = source("codex")
    summary = path / "memories" / "rollout_summaries" / "2026-03-01-billing-export.md"
    slug = memoryd_mirrors_codex_summary(fixture_root, summary)
    plan = imported(store, "codex", path)
    thread = "00000000-0000-4000-8000-000000000000"
    assert [s.slug for s in plan.adopted] == [slug]
    assert f"codex:{thread}" in {s.key for s in plan.sessions}
    assert f"codex:summary:{thread}" not in {s.key for s in plan.sessions}
    assert Imported.get(Imported.source_key == f"codex:summary:{thread}").memory_slug == slug
    assert len(list((fixture_root / "scopes").rglob(f"{slug}.md"))) == 1


def test_a_summary_lands_under_the_slug_memoryds_mirror_gives_it(store, fixture_root, source):
    """So the mirror, running after an import, rewrites the same file instead of adding a copy."""
    path = source("codex")
    plan = imported(store, "codex", path)
    summary = path / "memories" / "rollout_summaries" / "2026-03-01-billing-export.md"
    mirrored = memoryd_mirrors_codex_summary(fixture_root, summary)
    assert mirrored in {s.slug for s in plan.sessions}
    assert len(list((fixture_root / "scopes").rglob(f"{mirrored}.md"))) == 1


def test_sessions_a_killed_run_wrote_but_did_not_record_are_recorded_by_the_rerun(store, fixture_root, source):
    """Killed between a batch's renames and its index commit, a run leaves session files no import record names
    (the store indexes them on the next open). The rerun writes them not again, and records them as imported, so
    the records still name every memory an import brought in."""
    path = source("codex")
    first = imported(store, "codex", path)
    slugs = {s.slug for s in first.sessions}
    Imported.delete().where(Imported.kind == "session").execute()
    files = sorted(p.name for p in (fixture_root / "scopes").rglob("*.md"))
    lines = len(events(fixture_root))
    again = imported(store, "codex", path)
    assert [s.slug for s in again.sessions] == [] and {s.slug for s in again.adopted} == slugs
    assert {r.memory_slug for r in Imported.select().where(Imported.kind == "session")} == slugs
    assert sorted(p.name for p in (fixture_root / "scopes").rglob("*.md")) == files
    [run] = events(fixture_root)[lines:]
    assert json.loads(run["details"])["adopted"] == len(slugs)


def test_huge_lines_are_reported_and_skipped_without_being_held(store, source):
    path = source("codex")
    huge_line(next(path.rglob("rollout-2026-03-01T09-37-00-*.jsonl")), base.MAX_LINE + 1024)
    plan = preview(store, importer("codex"), path)
    huge = [m for m in plan.malformed if "over the" in m.reason]
    assert [(m.origin.line, m.reason.split()[2]) for m in huge] == [(2, f"{base.MAX_LINE + 1024:,}")]
    assert any(s.key.endswith("000000000001") for s in plan.sessions)  # the rest of the rollout still counts


def test_ten_thousand_rollouts_are_all_read(store, tmp_path):
    home = codex_home(tmp_path / "many", 10_000)
    plan = preview(store, importer("codex"), home)
    assert len(plan.sessions) == 10_000 and not plan.malformed
    assert len({s.slug for s in plan.sessions}) == 10_000


def test_openrelix_windows_and_registry_rows(store, source):
    plan = imported(store, "openrelix", source("openrelix"))
    assert len(plan.sessions) == 4 and len(plan.promotions) == 3  # 3 windows + the registry batch; 3 rows
    window = store.read_doc(store.memory(next(s.slug for s in plan.sessions if s.key.endswith("win-demo-1"))).body_path)
    assert window.frontmatter.source == "importer-openrelix"
    assert "Design a sanitized sample state" in window.body and "## Conclusions" in window.body
    pnpm = Promotion.get(Promotion.proposed_title == "Prefer pnpm over npm")
    assert pnpm.proposed_type == "preference" and pnpm.scope_hash == "global" and pnpm.status == "pending"
    assert dura_of(pnpm) == {"D": 0.9, "U": 0.9, "R": 0.75, "A": 0.7}
    assert parse_json_list(pnpm.proposed_triggers) == ["pnpm", "npm"]
    assert "registry/memory_entries.jsonl:1" in pnpm.reasoning
    assert pnpm.source_session_slug == plan.slugs["openrelix:window:win-demo-1"]  # the window it cites
    checklist = Promotion.get(Promotion.proposed_title == "Release checklist")
    assert checklist.proposed_type == "playbook" and checklist.scope_hash == scope_hash_for("/work/example/project-1")
    assert [k.origin.key for k in plan.skipped] == ["mem-003"]  # injection_policy never
    assert len(plan.malformed) == 4
    assert [(str(o), h.kind) for o, _, h in plan.secrets] == [
        ("registry/memory_entries.jsonl:5 (mem-004)", "OpenAI-style API key")
    ]


def test_openrelix_never_rows_on_request_and_secrets_redacted(store, source):
    plan = imported(store, "openrelix", source("openrelix"), everything=True, redact=True)
    assert not plan.skipped and Promotion.get_or_none(Promotion.proposed_title == "Local scratch path")
    rotation = Promotion.get(Promotion.proposed_title == "API key rotation")
    assert "sk-ZZZZ" not in rotation.proposed_body and "[redacted OpenAI-style API key]" in rotation.proposed_body


def test_cognirelay_capsules(store, source):
    plan = imported(store, "cognirelay", source("cognirelay"))
    assert len(plan.sessions) == 3 and [k.origin.file for k in plan.skipped] == [
        "memory/continuity/archive/thread-old-archived.json"
    ]
    assert {m.origin.file.rsplit("/", 1)[-1] for m in plan.malformed} == {"thread-broken.json", "empty.json"}
    kinds = sorted(
        (p.proposed_type, p.proposed_title)
        for p in Promotion.select().where(Promotion.reasoning.contains("CogniRelay"))
    )
    assert kinds == [
        ("decision", "Decided not to: adopt a second queue system"),
        ("decision", "SQLite locally, Postgres in production"),  # only the active rationale entry
        ("preference", "Run the tests before saying done."),
        ("preference", "Short answers, no preamble."),
        ("warning", "Dry run first"),
        ("warning", "Never push to main on Fridays"),
    ]
    user = store.read_doc(store.memory(plan.slugs["cognirelay:user:example-user"]).body_path)
    assert "**Stance:** Steady" in user.body and "## Stable preferences" in user.body
    link = SupersedesChain.get(SupersedesChain.older_memory_id == plan.slugs["cognirelay:thread:importer-v1"])
    assert link.newer_memory_id == plan.slugs["cognirelay:thread:importer-v2"] and link.decided_by == "digest"


def test_a_rejected_imported_supersede_is_not_proposed_again(store, source):
    from engram.store.supersedes import reject_supersede

    path = source("cognirelay")
    plan = imported(store, "cognirelay", path)
    newer, older = plan.slugs["cognirelay:thread:importer-v2"], plan.slugs["cognirelay:thread:importer-v1"]
    reject_supersede(store, newer, older, "not the same work")
    again = imported(store, "cognirelay", path)
    assert not again.supersedes and SupersedesChain.get_or_none(SupersedesChain.older_memory_id == older) is None


def test_cognirelay_rationale_supersedes_an_approved_earlier_entry(store, source, tmp_path):
    """The first import proposes db-choice-v1 (then active); once approved, the capsule that supersedes it
    proposes the new entry with the old memory in proposed_supersedes."""
    path = source("cognirelay")
    capsule_file = path / "memory" / "continuity" / "user-example-user.json"
    capsule = json.loads(capsule_file.read_text())
    entries = capsule["continuity"]["rationale_entries"]
    v2 = entries.pop(1)
    entries[0]["status"] = "active"
    capsule_file.write_text(json.dumps(capsule))
    imported(store, "cognirelay", path)
    old = Promotion.get(Promotion.proposed_title == "Use SQLite for everything")
    done = approve(store, old.id)
    entries[0]["status"] = "superseded"
    entries.insert(1, v2)
    capsule_file.write_text(json.dumps(capsule))
    imported(store, "cognirelay", path)
    new = Promotion.get(Promotion.proposed_title == "SQLite locally, Postgres in production")
    assert parse_json_list(new.proposed_supersedes) == [done.slug]


def test_eternego_days_and_hand_off(store, source):
    plan = imported(store, "eternego", source("eternego"))
    days = sorted(s.slug for s in plan.sessions if "conversation" in s.slug)
    assert days == [
        "2026-06-02-eternego-example-persona-conversation",
        "2026-06-03-eternego-example-persona-conversation",
        "2026-06-04-eternego-example-persona-conversation",
    ]
    june3 = store.read_doc(store.memory(days[1]).body_path).body
    assert "**Person** (21:57): Hey, can you load the search instruction?" in june3
    assert "**Persona** (21:58): On it" in june3
    june2 = store.read_doc(store.memory(days[0]).body_path).body  # an archived day, from history/
    assert "**Person** (09:00): What is on the plan today?\n\n**Persona** (09:00): The weekly report" in june2
    assert "Call the bank" not in "".join(s.body for s in plan.sessions)  # destiny is not memory
    hand_off = Promotion.get(Promotion.reasoning.contains("eternego hand-off"))
    assert hand_off.proposed_type == "fact" and "market research" in hand_off.proposed_body
    assert [(m.origin.line, m.reason[:10]) for m in plan.malformed] == [(3, "not a turn")]


@pytest.mark.parametrize("name", ["conversation-notes.md", "conversation-2026-13-45.md"])
def test_an_eternego_history_file_that_is_not_a_day_is_reported(store, source, name):
    home = source("eternego")
    (home / "history" / name).write_text("[2026-06-05T09:00:00] person: hello\n")
    plan = preview(store, importer("eternego"), home, Options())
    assert [(m.origin.file, m.reason[:30]) for m in plan.malformed if "history" in m.origin.file] == [
        (f"history/{name}", "not named conversation-YYYY-MM")
    ]
    assert len([s for s in plan.sessions if "conversation" in s.slug]) == 3


def test_scope_option_puts_everything_in_one_scope(store, source):
    plan = imported(store, "openrelix", source("openrelix"), scope="global")
    assert {s.scope_hash for s in plan.sessions} | {p.scope_hash for p in plan.promotions} == {"global"}


def test_scope_option_takes_a_project_directory_and_refuses_one_that_does_not_exist(store, source, tmp_path):
    from engram.store.errors import BadInput

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    home = source("eternego")
    plan = preview(store, importer("eternego"), home, Options(scope=str(project / "src")))
    assert {s.scope_hash for s in plan.sessions} == {scope_hash_for(project)}
    with pytest.raises(BadInput, match="no such directory"):
        preview(store, importer("eternego"), home, Options(scope=str(tmp_path / "projcet")))


def test_promotions_into_a_sensitive_scope_are_refused(store, source):
    sensitive = sorted(store.sensitive_scopes())[0]
    plan = preview(store, importer("openrelix"), source("openrelix"), Options(scope=sensitive))
    assert not plan.promotions and len(plan.refused) == 3
    apply_import(store, plan)
    session = store.memory(plan.sessions[0].slug)
    assert session.body_path.endswith(".md.enc")  # the session itself is written encrypted


def test_sessions_into_a_locked_sensitive_scope_are_refused_before_anything_is_written(fixture_root, source):
    from engram.store.sensitive.crypto import KeyRing
    from engram.store.service import Store

    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as locked:
        sensitive = sorted(locked.sensitive_scopes())[0]
        plan = preview(locked, importer("codex"), source("codex"), Options(scope=sensitive))
        assert not plan.sessions and len(plan.refused) == 6 and "locked" in plan.refused[0][1]


def test_a_path_that_does_not_exist_is_a_clear_error(store, tmp_path):
    from engram.store.errors import BadInput

    with pytest.raises(BadInput, match="no such file"):
        preview(store, importer("codex"), tmp_path / "nowhere")


@pytest.mark.parametrize("point", ["temp_written", "renamed", "index_committed", "audit_appended"])
def test_an_import_killed_anywhere_finishes_when_run_again(fixture_root, tmp_path, point):
    """A real process is killed at each step of the write path during an import of 450 rollouts (3 batches);
    running the import again leaves every rollout imported once, each audited once, and nothing to repair."""
    from helpers import run_engram

    from engram.store.drift.check import check
    from engram.store.drift.repair import repair
    from engram.store.sensitive.crypto import KeyRing
    from engram.store.service import Store

    home = codex_home(tmp_path / "codex", 450)
    env = {"MEMORYD_MASTER_PASSPHRASE": "engram-fixture-passphrase-2026"}
    keys = KeyRing(passphrase=env["MEMORYD_MASTER_PASSPHRASE"])
    with Store.open(fixture_root, keys=keys) as store:
        before = Memory.select().where(Memory.source == "codex-rollout").count()
        findings = check(store).counts()
    assert run_engram(fixture_root, "import", "codex", str(home), env=env, crash=point) == 137
    assert run_engram(fixture_root, "import", "codex", str(home), env=env) == 0
    items = [json.loads(e["details"])["key"] for e in events(fixture_root) if e["event_type"] == "import_item"]
    assert sorted(items) == sorted(set(items)) and len(items) == 450
    with Store.open(fixture_root, keys=keys) as store:
        assert Memory.select().where(Memory.source == "codex-rollout").count() == before + 450
        left = check(store).counts()
        assert {k: n for k, n in left.items() if k != "temp_file"} == findings  # the fixture's own quirks
        if "temp_file" in left:  # the killed write's temp file: `engram repair` removes it
            repair(store)
            assert "temp_file" not in check(store).counts()
