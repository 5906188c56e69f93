"""Every write command killed at every named crash point, at later moments of its run and at random moments
(SIGKILL), then run again and followed by ``repair``: in every trial ``check`` finds nothing the trial added,
memoryd's reader loads every file, no plaintext is left in a sensitive scope, and no memory is duplicated or
lost."""

from __future__ import annotations

import json
import random
import shutil
import signal
import time
from collections import Counter
from pathlib import Path

import crash_driver
import forked
import pytest
from conftest import FIXTURE
from crash_driver import NEW, OLD
from memoryd_emulation import memoryd_load_failures

from engram.store.audit import outbox
from engram.store.decay import forget_now
from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.history import ops as history_ops
from engram.store.memories import edit_memory
from engram.store.models import Imported, Memory, Promotion, PromotionNote
from engram.store.quarantine import held_memories, quarantine
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.store.write.atomic import SCRUB_POINT

PLAIN, FINANCE = "5727cb99a38b", "35998c22af79"
# the moments each run is killed at: every named point, and later ones (a file or a commit further in)
MOMENTS = ["temp_written", "renamed", "index_committed", "audit_appended", "renamed#3", "index_committed#2"]
ACTIONS = [
    "approve",
    "approve-sensitive",
    "reject",
    "merge",
    "mark",
    "unmark",
    "rekey",
    "import",
    "forget",
    "forget-sensitive",
    "revive",
    "retype",
    "sweep",
    "grant",
    "restore",
    "restore-sensitive",
]


def drive(
    root: Path, action: str, arg: str, crash: str | None = None, kill_after: float | None = None, cut: int = 0
) -> int:
    """Run the action in its own process: killed at the named ``crash`` point, or with SIGKILL ``kill_after``
    seconds in (wherever it is then: a random moment; if it has finished by then, it simply ran), or between
    the two databases' commits of its ``cut``-th change."""
    env = {"ENGRAM_CRASH_AT": crash} if crash else {}
    if cut:
        env[crash_driver.LOSE_ENGRAM_PART] = str(cut)
    code, output = forked.run(
        crash_driver.drive, str(root), action, arg, env=env, kill_after=kill_after, output=root.parent / f"{action}.out"
    )
    assert code in (0, 137, -signal.SIGKILL), output[-2000:]
    return code


def files_by_slug(root: Path) -> Counter[str]:
    """How many memory files carry each name (memoryd names a file by its memory's slug)."""
    return Counter(
        p.name.removesuffix(".enc").removesuffix(".md")
        for p in (root / "scopes").glob("*/*/*")
        if p.name.endswith((".md", ".md.enc")) and ".engram-tmp-" not in p.name
    )


def argument(store: Store, action: str) -> tuple[str, str]:
    """The driver's action and its argument on this root."""
    pending = Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id)
    plain_memory = (
        Memory.select()
        .where(Memory.scope_hash == PLAIN, Memory.body_path.endswith(".md"), ~Memory.body_path.contains("/forgotten/"))
        .order_by(Memory.slug)
        .first()
    )
    if action == "approve-sensitive":
        return "approve", str(Promotion.insert(**{**_promotion(pending.first()), "scope_hash": FINANCE}).execute())
    if action in ("approve", "reject"):
        return action, str(pending.where(Promotion.scope_hash == PLAIN).first().id)
    if action == "merge":
        return action, f"{pending.where(Promotion.scope_hash == PLAIN).first().id}:{plain_memory.slug}"
    if action in ("mark", "import"):
        return action, PLAIN if action == "mark" else FINANCE
    if action in ("unmark", "grant"):
        return action, FINANCE
    if action in ("restore", "restore-sensitive"):  # an edit first: the restore brings back the text before it
        sensitive = Memory.select().where(Memory.scope_hash == FINANCE).order_by(Memory.slug).first()
        slug = plain_memory.slug if action == "restore" else sensitive.slug
        edit_memory(store, slug, body="an edit the restore takes back\n")
        return "restore", f"{slug}:{history_ops.revisions(store, slug)[1].id}"
    if action == "forget-sensitive":
        return "forget", Memory.select().where(Memory.scope_hash == FINANCE).order_by(Memory.slug).first().slug
    if action == "revive":
        forget_now(store, plain_memory.slug)
        return action, plain_memory.slug
    if action in ("forget", "retype"):
        return action, plain_memory.slug
    return action, "-"


def _promotion(row: Promotion) -> dict:
    values = {k: v for k, v in row.__data__.items() if k != "id"}
    return values


FAST = 1_000  # KDF iterations of the trials' memoryd config: each trial derives keys in three processes


def keys(passphrase: str = OLD) -> KeyRing:
    return KeyRing(passphrase=passphrase, kdf_iters=FAST)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture root re-encrypted under a cheap KDF (memoryd's config allows any count), with memoryd's own
    drift repaired and every encrypted file bound, as a root engram has worked on: anything ``check`` finds
    after a trial is the trial's. Built once; each trial works on a copy."""
    base = tmp_path_factory.mktemp("matrix")
    config = base / "config"
    config.mkdir()
    (config / "config.toml").write_text(f'[sensitive]\nkey_source = "passphrase"\nkdf_iters = {FAST}\n')
    root = base / "root"
    shutil.copytree(FIXTURE / "dataroot", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    with Store.open(root, keys=KeyRing(passphrase=OLD), actor="engram-test") as store:  # memoryd's 600,000
        scopes = sorted(store.sensitive_scopes())
        for scope in scopes:
            unmark_sensitive(store, scope)
    with Store.open(root, keys=KeyRing(passphrase=OLD, kdf_iters=FAST, confirmed=True), actor="engram-test") as store:
        for scope in scopes:
            mark_sensitive(store, scope)
        repair(store)
        (base / "findings.json").write_text(json.dumps(check(store).counts()))
    return base


@pytest.fixture
def before(template: Path) -> dict[str, int]:
    """What ``check`` finds on the template (memoryd's own quirks that engram leaves alone): every trial ends
    with exactly these."""
    return json.loads((template / "findings.json").read_text())


@pytest.fixture
def prepared(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYD_CONFIG_HOME", str(template / "config"))
    return Path(shutil.copytree(template / "root", tmp_path / "root"))


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("action", ACTIONS)
def test_a_killed_write_is_whole_after_a_rerun_and_repair(prepared, before, action, moment):
    trial(prepared, before, action, moment)


def trial(
    root: Path,
    before: dict[str, int],
    action: str,
    moment: str | None = None,
    kill_after: float | None = None,
    cut: int = 0,
) -> None:
    """Kill the action, run it again, repair: the root is as whole as before, by every measure."""
    with Store.open(root, keys=keys(), actor="engram-test") as store:
        name, arg = argument(store, action)
    slugs = set(files_by_slug(root))
    killed = drive(root, name, arg, crash=moment, kill_after=kill_after, cut=cut)
    drive(root, name, arg)  # the person runs it again
    passphrase = NEW if name == "rekey" else OLD
    with Store.open(root, keys=keys(passphrase), actor="engram-test") as store:
        repair(store)
        after = check(store)
        sensitive = store.sensitive_scopes()
        made = {m.memory_slug for m in Imported.select()} | {
            m.slug for m in Memory.select().where(Memory.slug.startswith(f"promoted-{arg}-"))
        }
    assert after.counts() == before, (killed, after.to_json()["findings"])
    assert memoryd_load_failures(root, passphrase, FAST) == []
    assert [p for s in sensitive for p in (root / "scopes" / s).glob("*/*.md")] == []
    counted = files_by_slug(root)
    assert [slug for slug, n in counted.items() if n > 1] == []  # nothing twice under one name
    assert set(counted) - slugs <= made  # no copy under a new name (a memory back as a renamed duplicate)
    assert slugs <= set(counted)  # nothing lost


@pytest.mark.parametrize("share", [0.6, 0.85])
@pytest.mark.parametrize("action", ACTIONS)
def test_a_write_killed_at_a_random_moment_is_whole_after_a_rerun_and_repair(prepared, before, tmp_path, action, share):
    """The same, with SIGKILL at a moment no crash point names: the action is timed on a copy first, then killed
    around ``share`` of that time in (jittered, seeded per trial): most kills land in its writes, some while it
    opens the store, and a run that is faster than its timing simply finishes. Wherever it lands, the checks
    must hold."""
    copy = Path(shutil.copytree(prepared, tmp_path / "timing"))
    with Store.open(copy, keys=keys(), actor="engram-test") as store:
        name, arg = argument(store, action)
    forked.ready()  # not the server's start: only the action's own time
    started = time.monotonic()
    drive(copy, name, arg)
    took = time.monotonic() - started
    trial(prepared, before, action, kill_after=took * share * random.Random(f"{action}{share}").uniform(0.9, 1.1))


@pytest.mark.parametrize("cut", [1, 2])
@pytest.mark.parametrize("action", ACTIONS)
def test_a_kill_between_the_two_databases_commits_is_whole_after_a_rerun_and_repair(prepared, before, action, cut):
    """index.db is a WAL database and engram.db is attached to it: SQLite commits them one after the other, so
    a kill in between keeps a change's index rows and loses what it wrote into engram.db (its bindings, its
    records). Cut at its first change, and at its second where it makes several (a mark or a rekey in batches)."""
    trial(prepared, before, action, cut=cut)


@pytest.mark.parametrize("action", ["quarantine", "release"])
def test_a_quarantine_cut_between_the_two_databases_commits_is_kept_whole(prepared, action):
    """engram.db's record of a quarantine (the state its release restores) is part of the same change as the
    memory's soft-forgotten state in index.db: a kill between the two commits leaves the state without the
    record, or (a release) the record without the state. Opening the root again puts the record in step with
    what was committed, before a rerun or ``check`` looks: the quarantine restores the state the memory had,
    and a cut release is no ``quarantine_lifted`` alarm (a quarantine lifted outside engram)."""
    with Store.open(prepared, keys=keys(), actor="engram-test") as store:
        _, slug = argument(store, "forget")
        if action == "release":
            quarantine(store, slug, [])
    assert drive(prepared, action, slug, cut=1) == 137
    with Store.open(prepared, keys=keys(), actor="engram-test") as store:
        held = {h.slug: h.was for h in held_memories(store)}
        assert held == ({slug: "alive"} if action == "quarantine" else {})
        assert check(store).of("quarantine_lifted") == []
    drive(prepared, action, slug)  # run again: already done, said quietly
    with Store.open(prepared, keys=keys(), actor="engram-test") as store:
        assert {h.slug: h.was for h in held_memories(store)} == held
        assert store.flush_audit_outbox() == 0  # the cut change's event, told once
        kinds = [json.loads(line)["event_type"] for line in store.layout.audit_path.read_text().splitlines()]
    assert kinds.count("memory_quarantined" if action == "quarantine" else "memory_released") == 1


def test_a_reason_cut_between_the_two_databases_commits_is_kept(prepared):
    """A person's reason for a rejection is written into engram.db only, and its event holds only its hash: a
    kill between the two commits would keep the rejection and lose the reason for good (a rerun is refused, the
    promotion is decided). The change carries the note in its queued event, and opening the root writes it
    back; the event appended to the log still holds no reason."""
    with Store.open(prepared, keys=keys(), actor="engram-test") as store:
        _, pid = argument(store, "reject")
    assert drive(prepared, "reject", pid, cut=1) == 137
    with Store.open(prepared, keys=keys(), actor="engram-test") as store:
        assert Promotion.get_by_id(int(pid)).status == "rejected"
        assert PromotionNote.get_by_id(int(pid)).reject_reason == "crash test"
        assert store.flush_audit_outbox() == 0
    log = prepared / "audit" / "audit.jsonl"
    told = [json.loads(line) for line in log.read_text().splitlines() if '"promotion_rejected"' in line]
    assert len(told) == 1 and outbox.ROWS not in told[0] and "crash test" not in log.read_text()


@pytest.mark.parametrize("action", ["mark", "forget-sensitive"])
def test_a_kill_while_zeroing_plaintext_is_whole_after_a_rerun_and_repair(prepared, before, action):
    trial(prepared, before, action, SCRUB_POINT)
