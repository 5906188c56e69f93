"""The one detector of secret-looking strings and personal data: every kind found in synthetic text (built here,
never a real credential), masked, and redacted away; and what memories hold all the time (hashes, UUIDs, dates,
versions, line counts, paths, prose numbers) never flagged."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers import events, settle
from hypothesis import given
from hypothesis import strategies as st
from memoryd_emulation import memoryd_proposes, memoryd_saves
from textual.widgets import DataTable, Markdown, Static

from engram.store import promotions
from engram.store.drift.check import check
from engram.store.models import Memory, Promotion
from engram.store.queue import pending_findings, pending_queue, queue_query
from engram.store.secrets import GATES, PATTERNS, find_secrets, redact, scan
from engram.tui.app import EngramApp
from engram.tui.cli import main
from engram.tui.panes import queue as queue_pane
from engram.tui.panes.queue import QueuePane
from engram.tui.screens.prompt import SecretsPrompt

FAKE = "A1b2" * 10  # forty characters no service issued

SYNTHETIC = {
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----",
    "AWS access key": "aws_access_key_id AKIA" + "EXAMPLEEXAMPLE12",
    "GitHub token": "push with ghp_" + FAKE[:36],
    "Slack token": "xoxb-" + "1234567890-" + FAKE[:12],
    "OpenAI-style API key": "OPENAI sk-proj-" + FAKE[:30],
    "Google API key": "maps key AIza" + FAKE[:35],
    "JSON web token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + FAKE[:20],
    "bearer token": "Authorization: Bearer " + FAKE[:32],
    "cookie": "Cookie: session=" + FAKE[:24],
    "password in URL": "clone https://deploy:" + "hunter2hunter2" + "@git.example.com/repo.git",
    "connection string": "Server=db.internal;Database=ledger;User Id=app;Password=" + "Tr0ub4dor&3;",
    "password assignment": "DB_PASSWORD = '" + "correct-horse-battery" + "'",
    "password in prose": "Staging DB password is " + "Sup3rS3cret",
    "e-mail address": "ask jane.doe+ops@example.co.uk about it",
    "phone number": "on call: +44 20 7946 0958, or (415) 555-0134",
}

NOT_SECRET = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "trace 12345678-1234-1234-1234-123456789012",
    "shipped on 2026-11-24 at 14:05, version 3.11.7, build 2026.11.24",
    "Keep PRs under 377 lines; 代码评审偏好：小 PR，122 行以内",
    "see config/ledger.yaml and src/app/main.py line 1024",
    "roll out to 30% of traffic, p95 under 16 ms, 1,000,000 memories",
    "the token count is 4096 and the password field is required",
    "the password is stored in the vault; passwords are rotated every 90 days",
    "密码在保险库里，每季度轮换一次",
    "ports 8080-8090 and 192.168.1.20",
]


@pytest.mark.parametrize("kind", sorted(SYNTHETIC))
def test_each_kind_is_found_masked_and_redacted(kind):
    text = SYNTHETIC[kind]
    found = [f for f in scan(text) if f.kind == kind]
    assert found, kind
    for f in found:
        value = text[f.start : f.end]
        assert f.masked.startswith(value[:4]) and value not in f.masked and set(f.masked[4:]) == {"*"}
    assert not [f for f in scan(redact(text)) if f.kind == kind]
    assert f"[redacted {kind}]" in redact(text)


def test_every_kind_has_a_synthetic_case():
    assert set(SYNTHETIC) == set(PATTERNS)


@pytest.mark.parametrize("text", NOT_SECRET)
def test_what_memories_hold_all_the_time_is_not_flagged(text):
    assert scan(text) == []
    assert redact(text) == text


def test_findings_come_in_order_and_the_preview_lists_one_per_kind():
    text = "mail a@example.com, then b@example.com, key AKIA" + "EXAMPLEEXAMPLE12"
    assert [f.kind for f in scan(text)] == ["e-mail address", "e-mail address", "AWS access key"]
    assert [f.kind for f in find_secrets(text)] == ["e-mail address", "AWS access key"]


@given(st.text(max_size=200), st.sampled_from(sorted(SYNTHETIC)))
def test_redacted_text_holds_no_finding_of_what_was_put_in(noise, kind):
    text = f"{noise} {SYNTHETIC[kind]} {noise}"
    secrets = [SYNTHETIC[kind][f.start : f.end] for f in scan(SYNTHETIC[kind]) if f.kind == kind]
    assert secrets and not any(secret in redact(text) for secret in secrets)


def test_every_kind_but_phone_numbers_has_its_gate_and_each_gate_lets_its_matches_through():
    """A gate is a substring a kind cannot match without: were one wrong, that kind would go unseen."""
    assert set(GATES) == set(PATTERNS) - {"phone number"}
    for kind, words in GATES.items():
        text = SYNTHETIC[kind]
        matches = list(PATTERNS[kind].finditer(text))  # the whole match: a finding may be its value only
        assert matches, kind
        for match in matches:
            assert any(word in match.group(0).lower() for word in words), kind


@pytest.mark.parametrize(
    "number", ["+1 415 555 0134", "+14155550134", "(415) 555-0134", "415-555-0134", "415.555.0134"]
)
def test_phone_numbers_in_each_shape_pass_their_gate(number):
    assert [f.kind for f in scan(f"call {number} after six")] == ["phone number"]


KEY = "AKIA" + "EXAMPLEEXAMPLE12"
MAIL = "jane.doe@example.com"


def propose_with_secrets(root) -> tuple[int, int]:
    """memoryd's hook proposes two promotions: one whose title and body hold a synthetic key and an e-mail address,
    and one clean."""
    flagged, clean = memoryd_proposes(root), memoryd_proposes(root)
    with sqlite3.connect(root / "index.db") as con:
        con.execute(
            "UPDATE promotions SET proposed_title = ?, proposed_body = ? WHERE id = ?",
            (f"Deploy key {KEY}", f"Ask {MAIL} before rotating it.", flagged),
        )
    return flagged, clean


def test_pending_promotions_are_scanned_by_field(store):
    flagged, clean = propose_with_secrets(store.layout.root)
    found = pending_findings(store, [flagged, clean])
    assert set(found) == {flagged}
    assert [(field, f.kind) for field, f in found[flagged]] == [("title", "AWS access key"), ("body", "e-mail address")]


def test_promotions_list_reports_findings_masked_and_never_the_secret(capsys, fixture_root):
    flagged, clean = propose_with_secrets(fixture_root)
    assert main(["promotions", "list", "--json", "--root", str(fixture_root)]) == 0
    out = capsys.readouterr().out
    items = {item["id"]: item for item in json.loads(out)}
    assert [s["kind"] for s in items[flagged]["secrets"]] == ["AWS access key", "e-mail address"]
    assert items[clean]["secrets"] == [] and KEY not in out and MAIL not in out
    assert items[flagged]["title"].startswith("Deploy key AKIA****")
    assert main(["promotions", "list", "--root", str(fixture_root)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.split()[0] == str(flagged))
    assert "[secret? AWS access key, e-mail address]" in line and KEY not in line


def test_check_lists_plain_memories_holding_secrets_without_calling_it_drift(store):
    memory = Memory.get(Memory.scope_hash == "710d5aaf7a15")
    doc = store.read_doc(memory.body_path)
    before = check(store)
    doc.body += f"\nThe staging key is {KEY}."
    memoryd_saves(store.layout.root, doc)
    report = check(store)
    [finding] = report.of("secret_in_plain_memory")
    assert finding.data["slug"] == memory.slug and "AWS access key AKIA****" in finding.detail
    assert KEY not in finding.detail and report.drift == before.drift


def queue_table(app: EngramApp) -> DataTable:
    return app.query_one(QueuePane).query_one("#queue-table", DataTable)


def row_ids(table: DataTable) -> list[int]:
    """The promotion ids of the queue's rows, top to bottom."""
    return [int(str(key.value)) for key in table.rows]


async def test_the_queue_marks_the_row_with_a_word_and_the_detail_shows_the_match_masked(store):
    """On the fixture root memoryd wrote: the flagged promotion's state says "secret?", its detail names the kinds
    and masks them, and the key itself is nowhere on the screen."""
    flagged, clean = propose_with_secrets(store.layout.root)
    app = EngramApp(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        table = queue_table(app)
        states = {pid: str(table.get_row(str(pid))[4]) for pid in row_ids(table)}
        assert states[flagged] == "secret?" and states[clean] != "secret?"
        scanned = app.query_one(QueuePane).scanned
        assert scanned[flagged] == {"AWS access key", "e-mail address"}
        assert len({id(kinds) for kinds in scanned.values() if not kinds}) == 1  # the clean ones share one set
        table.move_cursor(row=row_ids(table).index(flagged))
        await settle(app, pilot)
        head = str(app.query_one("#detail-head", Static).render())
        assert "secret? AWS access key, e-mail address" in head and "AKIA****" in head and KEY not in head
        body = app.query_one("#detail-body", Markdown).source
        assert "`jane************`" in body and MAIL not in body
        assert KEY not in app.export_screenshot() and MAIL not in app.export_screenshot()


def _everywhere(root) -> str:
    """index.db, engram.db and the memory files as text, for looking for a value in them."""
    with sqlite3.connect(root / "index.db") as con:
        rows = con.execute("SELECT proposed_title || proposed_body || proposed_triggers FROM promotions").fetchall()
    with sqlite3.connect(root / "engram.db") as con:
        copies = con.execute("SELECT proposed_title || proposed_body FROM engram_promotions").fetchall()
    files = [p.read_text(errors="replace") for p in (root / "scopes").rglob("*.md")]
    audit = (root / "audit" / "audit.jsonl").read_text()
    return "\n".join([*(r[0] for r in rows), *(c[0] for c in copies), *files, audit])


def test_approving_with_redaction_writes_neither_the_memory_nor_the_proposal_with_the_secret(store):
    flagged, _ = propose_with_secrets(store.layout.root)
    approved = promotions.approve(store, flagged, redact_secrets=True)
    doc = store.read_doc(Memory.get(Memory.slug == approved.slug).body_path)
    assert doc.frontmatter.title == "Deploy key [redacted AWS access key]"
    assert "[redacted e-mail address]" in doc.body
    assert KEY not in _everywhere(store.layout.root) and MAIL not in _everywhere(store.layout.root)
    for path in store.layout.root.glob("*.db*"):  # nor in a page's free space or an old frame of a log
        assert KEY.encode() not in path.read_bytes(), path.name
    event = events(store.layout.root)[-1]
    assert event["event_type"] == "promotion_approved"
    assert json.loads(event["details"])["redacted"] == ["AWS access key", "e-mail address"]


def test_the_cli_refuses_a_secret_unless_told_to_redact_or_keep_it(capsys, fixture_root):
    flagged, clean = propose_with_secrets(fixture_root)
    assert main(["promotions", "approve", str(flagged), "--json", "--root", str(fixture_root)]) == 1
    failed = json.loads(capsys.readouterr().out)["failed"]
    assert "AWS access key, e-mail address" in failed[0]["error"] and "--redact" in failed[0]["error"]
    with sqlite3.connect(fixture_root / "index.db") as con:
        assert con.execute("SELECT status FROM promotions WHERE id = ?", (flagged,)).fetchone() == ("pending",)
    assert main(["promotions", "approve", str(flagged), str(clean), "--redact", "--root", str(fixture_root)]) == 0
    capsys.readouterr()
    assert KEY not in _everywhere(fixture_root)


async def test_approving_a_flagged_promotion_asks_then_redacts_or_rejects(store):
    first, _ = propose_with_secrets(store.layout.root)
    second, _ = propose_with_secrets(store.layout.root)
    app = EngramApp(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        table = queue_table(app)

        async def press_on(pid: int, *keys: str) -> None:
            table.move_cursor(row=row_ids(table).index(pid))
            await settle(app, pilot)
            await pilot.press("a")
            await settle(app, pilot)
            assert isinstance(app.screen, SecretsPrompt)
            await pilot.press(*keys)
            await settle(app, pilot)

        await press_on(first, "s")  # not offered: its scope is not sensitive
        assert isinstance(app.screen, SecretsPrompt)
        await pilot.press("escape")
        await settle(app, pilot)
        assert Promotion.get_by_id(first).status == "pending"
        await press_on(first, "r")
        assert Promotion.get_by_id(first).status == "approved" and KEY not in Promotion.get_by_id(first).proposed_title
        await press_on(second, "x")
        assert Promotion.get_by_id(second).status == "rejected"
        told = [n.message for n in app._notifications]  # what the toasts said, masked as the table is
        assert any(f"approved #{first} 'Deploy key AKIA****" in m for m in told), told
        assert any(f"rejected #{second} 'Deploy key AKIA****" in m for m in told), told
        assert not [m for m in told if KEY in m]
    assert KEY not in _everywhere(store.layout.root).replace(Promotion.get_by_id(second).proposed_title, "")


async def test_the_queue_scans_a_pending_promotion_once_not_at_every_reload(store, monkeypatch):
    asked: list[list[int]] = []

    def recorded(store, ids):
        asked.append(list(ids))
        return pending_findings(store, ids)

    monkeypatch.setattr(queue_pane, "pending_findings", recorded)
    flagged, _ = propose_with_secrets(store.layout.root)
    app = EngramApp(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        assert flagged in asked[-1] and flagged in pane.flagged
        pane.reload()
        await settle(app, pilot)
        assert asked[-1] == [] and flagged in pane.flagged  # the flag stays without a second scan


def test_the_queue_filter_finds_promotions_by_what_they_hold(store):
    flagged, clean = propose_with_secrets(store.layout.root)

    def ids(text: str) -> set[int]:
        return {item.id for item in pending_queue(store, query=queue_query(text))}

    assert ids("secret:yes") == {flagged} and ids("secret:e-mail") == {flagged}
    assert flagged not in ids("!secret:yes") and clean in ids("!secret:yes") and clean in ids("secret:no")
    assert ids("secret:phone") == set()


def test_a_reader_holding_the_log_never_fails_a_redacted_approval(store):
    """memoryd reading meanwhile keeps the log from being truncated: the approval stands all the same."""
    flagged, _ = propose_with_secrets(store.layout.root)
    reader = sqlite3.connect(store.layout.root / "index.db", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()
    try:
        approved = promotions.approve(store, flagged, redact_secrets=True)
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert Promotion.get_by_id(flagged).status == "approved" and KEY not in _everywhere(store.layout.root)
    assert Memory.get(Memory.slug == approved.slug)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Staging DB password is Sup3rS3cret", "Staging DB password is [redacted password in prose]"),
        ("测试库的密码是 Hunter42，别外传", "测试库的密码是 [redacted password in prose]，别外传"),
        ("the VPN passphrase is now Blue-Otter-77", "the VPN passphrase is now [redacted password in prose]"),
    ],
)
def test_a_password_said_in_a_sentence_is_found_and_only_the_value_redacted(text, kept):
    [finding] = scan(text)
    assert finding.kind == "password in prose" and "*" in finding.masked
    assert redact(text) == kept


def test_a_password_in_a_title_is_flagged_and_redacted_from_the_approved_memory(store):
    from engram.store.domain import MemoryType
    from engram.store.models import Memory, Promotion
    from engram.store.promotions import Proposal, propose
    from engram.store.queue import pending_findings

    session = Memory.get((Memory.scope_hash == "710d5aaf7a15") & (Memory.type == "session"))
    scores = {"D": 0.9, "U": 0.9, "R": 0.9, "A": 0.9}
    pid = propose(
        store,
        Proposal(
            session.slug,
            MemoryType.FACT,
            "Staging DB password is Sup3rS3cret",
            "body",
            ["db"],
            scores,
            "",
            "710d5aaf7a15",
        ),
    )
    assert [field for field, _ in pending_findings(store, [pid])[pid]] == ["title"]
    approved = promotions.approve(store, pid, redact_secrets=True)
    doc = store.read_doc(approved.relpath)
    assert doc.frontmatter.title == "Staging DB password is [redacted password in prose]"
    assert "Sup3rS3cret" not in Promotion.get_by_id(pid).proposed_title
