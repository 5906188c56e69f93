"""engram's CLI and a memoryd writer deciding the same promotions at the same time, in separate processes, for
several rounds: every decision engram reports stands or is named by ``check``, every refusal wrote nothing, no
memory is written twice, and both tools verify the audit chain afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import PASSPHRASE
from helpers import events
from memoryd_emulation import memoryd_proposes, memoryd_verify_chain

from engram.store.audit.verify import VALID, verify
from engram.store.drift.check import check
from engram.store.models import Promotion
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store

ROUNDS, PER_ROUND = 6, 24
TESTS = Path(__file__).parent

# memoryd's side: its approve_promotion and reject_promotion (no status check) on the same promotions in the
# same order, each followed by a gate line; it prints what it decided. It starts once engram has decided one of
# them: on a loaded machine engram's start (its imports) outlasted memoryd's whole round, so they never met.
WRITER = """
import json, random, sqlite3, sys, time
from pathlib import Path
from memoryd_emulation import memoryd_append, memoryd_approve, memoryd_reject
root, rng, decided = Path(sys.argv[1]), random.Random(int(sys.argv[2])), {}
ids = [int(x) for x in sys.argv[3:]]
con, waited = sqlite3.connect(root / "index.db", timeout=5), time.monotonic()
asked = f"SELECT 1 FROM promotions WHERE status != 'pending' AND id IN ({', '.join(map(str, ids))})"
while not con.execute(asked).fetchone() and time.monotonic() - waited < 60:
    time.sleep(0.005)
con.close()
for pid in ids:
    time.sleep(rng.random() / 25)
    if rng.random() < 0.3:
        continue  # some are engram's alone
    approve = rng.random() < 0.5
    (memoryd_approve if approve else memoryd_reject)(root, pid)
    decided[pid] = "approved" if approve else "rejected"
    memoryd_append(root / "audit" / "audit.jsonl", {"scope_hash": "710d5aaf7a15", "event_type": "mem_promote",
                                                    "tool": "mem_promote", "promotion_id": pid})
print(json.dumps(decided))
"""


def env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMORYD_MASTER_PASSPHRASE": PASSPHRASE,
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
        **extra,
    }


def race(root: Path, verb: str, ids: list[int], seed: int) -> tuple[dict, dict[int, str]]:
    """Both processes started together on the same promotions, engram holding each decision open for a moment
    between planning it and taking the write lock; engram's JSON report and what memoryd decided."""
    engram = subprocess.Popen(
        [sys.executable, "-m", "engram", "promotions", verb, *map(str, ids), "--json", "--root", str(root)],
        env=env(ENGRAM_PAUSE_AT="planned:0.02"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    memoryd = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(seed), *map(str, ids)],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = engram.communicate(timeout=120)
    theirs, their_err = memoryd.communicate(timeout=120)
    assert memoryd.returncode == 0, their_err.decode()
    assert engram.returncode in (0, 1), err.decode()
    return json.loads(out), {int(k): v for k, v in json.loads(theirs).items()}


def engram_decisions(root: Path) -> dict[int, list[str]]:
    """Promotion id -> engram's decision events about it, from engram's own lines of the log."""
    found: dict[int, list[str]] = {}
    for event in events(root):
        if "this_hash" not in event or not str(event.get("event_type", "")).startswith("promotion_"):
            continue
        details = json.loads(event["details"])
        pid = details.get("promotion_id") or (int(event["target_id"]) if str(event["target_id"]).isdigit() else None)
        found.setdefault(pid, []).append(event["event_type"])
    return found


def test_engram_and_memoryd_deciding_the_same_promotions_lose_nothing(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        store.index.writable()
        before = set(check(store).counts())
    done: dict[int, str] = {}  # promotion id -> the status engram says it left
    refused: set[int] = set()
    errors: list[str] = []
    memoryd: dict[int, str] = {}  # promotion id -> what memoryd decided
    for round_no in range(3 * ROUNDS):  # more rounds only until the processes met inside the window (a loaded machine)
        ids = [memoryd_proposes(fixture_root, dura=0.5) for _ in range(PER_ROUND)]
        verb = ("approve", "reject")[round_no % 2]
        result, theirs = race(fixture_root, verb, ids, seed=round_no)
        memoryd.update(theirs)
        assert {d["id"] for d in result["done"]} | {f["id"] for f in result["failed"]} == set(ids)
        errors += [f["error"] for f in result["failed"]]
        for failure in result["failed"]:
            assert "meanwhile" in failure["error"] or "is already" in failure["error"], failure
            refused.add(failure["id"])
        done.update({d["id"]: {"approve": "approved", "reject": "rejected"}[verb] for d in result["done"]})
        if round_no + 1 >= ROUNDS and refused and any("meanwhile" in f for f in errors):
            break
    assert done and refused  # both outcomes happened: the processes did meet
    assert any("meanwhile" in f for f in errors)  # and some inside the window only the write lock closes

    decisions = engram_decisions(fixture_root)
    assert not [pid for pid in refused if pid in decisions]  # a refusal wrote no event
    assert all(len(decisions[pid]) == 1 for pid in done)
    promoted = [p.name for p in (fixture_root / "scopes").rglob("promoted-*.md")]
    per_id: dict[str, int] = {}
    for name in promoted:
        per_id[name.split("-")[1]] = per_id.get(name.split("-")[1], 0) + 1
    assert max(per_id.values()) == 1  # never a memory written twice

    with Store.open(fixture_root, keys=KeyRing(passphrase=PASSPHRASE)) as store:
        report = check(store)
        overwritten = {f.data["promotion_id"] for f in report.of("decision_overwritten")}
        statuses = {p.id: p.status for p in Promotion.select().where(Promotion.id.in_(list(done)))}
        for pid, status in done.items():  # engram's word stands, or check names the promotion
            assert statuses[pid] == status or pid in overwritten, (pid, status, statuses[pid])
            # decided by both: engram only wins while the promotion is pending, so memoryd's came last
            assert pid not in memoryd or statuses[pid] == memoryd[pid], (pid, status, memoryd[pid])
        assert overwritten <= set(done)
        assert set(report.counts()) <= before | {"decision_overwritten"}, report.counts()
        assert verify(store.layout.audit_path).status == VALID
    assert memoryd_verify_chain(fixture_root / "audit" / "audit.jsonl") == (True, -1)
