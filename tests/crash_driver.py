"""Run one write action on a root through the store's API, in its own process, so a test can kill it at a
crash point (``ENGRAM_CRASH_AT``) and run it again: ``drive(ROOT, ACTION, ARG)`` in a child from ``forked``.

A refusal that only says the action is already done (a decided promotion, say) ends it quietly with exit 0:
running an action again after it completed is what a person does after a crash."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from engram.store import decay, promotions, quarantine
from engram.store.domain import MemoryType
from engram.store.errors import Conflict
from engram.store.history import ops as history
from engram.store.importers import importer
from engram.store.importers.base import Options
from engram.store.importers.run import apply_import, preview
from engram.store.memories import edit_memory
from engram.store.paths import load_memoryd_config
from engram.store.sensitive import convert, grants
from engram.store.sensitive.crypto import PASSPHRASE_ENV, KeyRing
from engram.store.sensitive.rekey import rekey_passphrase
from engram.store.service import Store
from engram.store.write import faults

OLD, NEW = "engram-fixture-passphrase-2026", "a-new-passphrase-after-a-crash"
CODEX = Path(__file__).parent / "fixtures" / "importers" / "codex"
LOSE_ENGRAM_PART = "ENGRAM_TEST_LOSE_ENGRAM_PART"  # n: the n-th change commits index.db's part only, then dies


def run(store: Store, root: str, action: str, arg: str) -> None:
    if action == "approve":
        promotions.approve(store, int(arg))
    elif action == "reject":
        promotions.reject(store, int(arg), "crash test")
    elif action == "merge":
        pid, into = arg.split(":")
        promotions.merge(store, int(pid), into)
    elif action == "mark":
        convert.mark_sensitive(store, arg)
    elif action == "unmark":
        convert.unmark_sensitive(store, arg)
    elif action == "rekey":
        rekey_passphrase(store, NEW)
    elif action == "import":
        source = Path(root).parent / "codex-input"
        if not source.exists():
            shutil.copytree(CODEX, source)
        apply_import(store, preview(store, importer("codex"), source, Options(scope=arg)))
    elif action == "forget":
        decay.forget_now(store, arg)
    elif action == "revive":
        decay.revive(store, arg)
    elif action == "retype":
        edit_memory(store, arg, type=MemoryType.PLAYBOOK)
    elif action == "sweep":
        decay.apply_sweep(store, decay.plan_sweep(store))
    elif action == "quarantine":
        quarantine.quarantine(store, arg, [])
    elif action == "release":
        quarantine.release(store, arg)
    elif action == "grant":
        grants.issue_grant(store, arg, "session")
    elif action == "restore":
        slug, revision = arg.split(":")
        history.restore(store, slug, revision)
    else:
        raise SystemExit(f"unknown action {action}")


def drive(root: str, action: str, arg: str) -> None:
    if LOSE_ENGRAM_PART in os.environ:
        lose_engram_part(Path(root), int(os.environ[LOSE_ENGRAM_PART]))
    # memoryd's config (MEMORYD_CONFIG_HOME) gives the KDF cost; a rekey's rerun needs both passphrases: the old
    # one opens what the killed run had not reached.
    with Store.open(
        root, keys=KeyRing.from_config(load_memoryd_config(), {PASSPHRASE_ENV: OLD}), actor="engram-crash"
    ) as store:
        try:
            run(store, root, action, arg)
        except Conflict:
            pass


def lose_engram_part(root: Path, nth: int) -> None:
    """Make the ``nth`` change of this run end as a kill between SQLite's two commits would end it: index.db's
    part committed, engram.db's not. SQLite commits a WAL database and an attached one one after the other, and
    no crash point can stop it in between, so engram.db's files are kept as they were before the change (read
    when the change is planned, no transaction open) and put back once it has committed; then the process dies.
    The shared-memory index goes too: the next opener rebuilds it from the files, as after any crash."""
    files = [root / f"engram.db{suffix}" for suffix in ("", "-wal")]
    kept: dict[Path, bytes | None] = {}
    countdown = [nth]
    reach = faults.reach

    def cut(point: str) -> None:
        if point == "planned":
            kept.update({path: path.read_bytes() if path.exists() else None for path in files})
        elif point == "index_committed":
            countdown[0] -= 1
            if countdown[0] == 0:
                for path, data in kept.items():
                    path.unlink(missing_ok=True) if data is None else path.write_bytes(data)
                for suffix in ("-shm", "-journal"):
                    (root / f"engram.db{suffix}").unlink(missing_ok=True)
                os._exit(137)
        reach(point)

    faults.reach = cut
