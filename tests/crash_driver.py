"""Run one write action on a root through the store's API, in its own process, so a test can kill it at a
crash point (``ENGRAM_CRASH_AT``) and run it again: ``drive(ROOT, ACTION, ARG)`` in a child from ``forked``.

A refusal that only says the action is already done (a decided promotion, say) ends it quietly with exit 0:
running an action again after it completed is what a person does after a crash."""

from __future__ import annotations

import shutil
from pathlib import Path

from engram.store import decay, promotions
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

OLD, NEW = "engram-fixture-passphrase-2026", "a-new-passphrase-after-a-crash"
CODEX = Path(__file__).parent / "fixtures" / "importers" / "codex"


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
    elif action == "grant":
        grants.issue_grant(store, arg, "session")
    elif action == "restore":
        slug, revision = arg.split(":")
        history.restore(store, slug, revision)
    else:
        raise SystemExit(f"unknown action {action}")


def drive(root: str, action: str, arg: str) -> None:
    # memoryd's config (MEMORYD_CONFIG_HOME) gives the KDF cost; a rekey's rerun needs both passphrases: the old
    # one opens what the killed run had not reached.
    with Store.open(
        root, keys=KeyRing.from_config(load_memoryd_config(), {PASSPHRASE_ENV: OLD}), actor="engram-crash"
    ) as store:
        try:
            run(store, root, action, arg)
        except Conflict:
            pass
