"""Every mutation: file written atomically, index updated, exactly one audit event; bad requests change nothing."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from memoryd_emulation import memoryd_updates

from engram.store import allowlist, decay, graph, memories, promotions, quarantine
from engram.store.audit import ops as audit_ops
from engram.store.audit.ops import repair_log
from engram.store.calibration import set_thresholds
from engram.store.demo.writer import FileWriter
from engram.store.domain import DecayState, MemoryType
from engram.store.drift.rebuild import rebuild_index
from engram.store.errors import Conflict, UnsafePath
from engram.store.frontmatter import Frontmatter, MemoryDoc, parse
from engram.store.history import ops as history_ops
from engram.store.models import AllowedHost, Memory, Promotion, QuarantinedMemory, SupersedesChain
from engram.store.scopes import set_label
from engram.store.sensitive.binding import bind_files
from engram.store.sensitive.grants import issue_grant, revoke_grant
from engram.store.supersedes import confirm_supersede, links, reject_supersede, undo_supersede


def audit_lines(root):
    return [json.loads(line) for line in (root / "audit" / "audit.jsonl").read_text().splitlines()]


def memoryd_chain_ok(lines) -> bool:
    """memoryd's own verification rule: each prev_hash is sha256 of the previous line minus its prev_hash."""
    from engram.store.audit.chain import GENESIS, memoryd_link

    return lines[0]["prev_hash"] == GENESIS and all(
        b["prev_hash"] == memoryd_link(a) for a, b in itertools.pairwise(lines)
    )


def a_fact(slug: str, when) -> MemoryDoc:
    """A new plain memory of the fixture's first scope."""
    return MemoryDoc(
        frontmatter=Frontmatter(
            title="t", slug=slug, type=MemoryType.FACT, scope_hash="710d5aaf7a15", source="manual", created_at=when
        ),
        body="b\n",
    )


def apply_a_batch(store, prefix: str, count: int = 3) -> list:
    """``count`` new memories created as a batch is (an import's): one transaction, files not fsynced one by one;
    returns their writes."""
    from engram.store.write.change import Change

    docs, writes = a_batch(store, prefix, count)
    store.apply_many(
        [
            Change("memory_created", d.frontmatter.slug, "710d5aaf7a15", {}, writes=[w])
            for d, w in zip(docs, writes, strict=True)
        ],
        durable=False,
        index_update=lambda: store.upsert_memory_rows([(d, w.relpath) for d, w in zip(docs, writes, strict=True)]),
    )
    return writes


def a_plain_memory():
    return Memory.get(
        Memory.body_path.endswith(".md") & (Memory.decay_state == "alive") & ~Memory.body_path.contains("imported")
    )


def pending_id() -> int:
    return Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id).first().id


def sensitive_slug() -> str:
    return Memory.get(Memory.scope_sensitive == 1).slug


def torn_log(store) -> None:
    log = store.layout.audit_path
    log.write_bytes(log.read_bytes() + b'{"torn')


# Every public store function that takes the store first, by "module.function": the event it must append.
MUTATIONS = {
    "promotions.approve": ("promotion_approved", lambda s: promotions.approve(s, pending_id())),
    "promotions.reject": ("promotion_rejected", lambda s: promotions.reject(s, pending_id(), "dup")),
    "memories.edit_memory": (
        "memory_edited",
        lambda s: memories.edit_memory(s, a_plain_memory().slug, title="New title"),
    ),
    "memories.set_decay": ("decay_changed", lambda s: memories.set_decay(s, a_plain_memory().slug, DecayState.DIM)),
    "quarantine.quarantine": ("memory_quarantined", lambda s: quarantine.quarantine(s, a_plain_memory().slug, [])),
    "quarantine.release": ("memory_released", lambda s: _held_then_released(s)),
    "quarantine.hold_promotion": ("promotion_quarantined", lambda s: quarantine.hold_promotion(s, pending_id(), [])),
    "allowlist.allow": ("allowlist_added", lambda s: allowlist.allow(s, "pkgs.example.com")),
    "allowlist.disallow": ("allowlist_removed", lambda s: _allowed_then_disallowed(s)),
    "memories.add_supersede": (
        "supersede_added",
        lambda s: memories.add_supersede(
            s,
            a_plain_memory().slug,
            Memory.select().where(Memory.slug != a_plain_memory().slug).first().slug,
            reason="newer",
        ),
    ),
    "memories.create_memory": (
        "memory_created",
        lambda s: memories.create_memory(s, a_fact("engram-new-1", s.now())),
    ),
    "promotions.propose": (
        "promotion_proposed",
        lambda s: promotions.propose(
            s,
            promotions.Proposal(
                Memory.get(Memory.type == "session").slug,
                MemoryType.FACT,
                "t",
                "b",
                ["x"],
                {"D": 1, "U": 1, "R": 1, "A": 1},
                None,
                "710d5aaf7a15",
            ),
        ),
    ),
    "memories.view_memory": ("sensitive_viewed", lambda s: memories.view_memory(s, sensitive_slug())),
    "promotions.defer": ("promotion_deferred", lambda s: promotions.defer(s, pending_id(), "later")),
    "calibration.set_thresholds": (
        "thresholds_set",
        lambda s: set_thresholds(s, 0.9, 0.4, path=s.layout.root.parent / "memoryd-config.toml"),
    ),
    "promotions.merge": (
        "memories_merged",
        lambda s: promotions.merge(
            s,
            pending_id(),
            Memory.get(
                (Memory.scope_hash == Promotion.get_by_id(pending_id()).scope_hash)
                & Memory.body_path.endswith(".md")
                & (Memory.type != "session")
            ).slug,
        ),
    ),
    "promotions.undo": (
        "undo_applied",
        lambda s: promotions.undo(s, promotions.Rejected(Promotion.get(Promotion.status == "rejected").id)),
    ),
    "drift.rebuild.rebuild_index": ("index_rebuilt", lambda s: rebuild_index(s)),
    "history.ops.restore": ("memory_restored", lambda s: _edited_then_restored(s)),
    "history.ops.forget": ("history_forgotten", lambda s: _edited_then_forgotten(s)),
    "audit.ops.repair_log": ("audit_tail_repaired", lambda s: (torn_log(s), repair_log(s))),
    "audit.ops.restart_checkpoint": ("audit_checkpoint_reset", lambda s: audit_ops.restart_checkpoint(s)),
    "sensitive.grants.issue_grant": ("grant_issued", lambda s: issue_grant(s, "35998c22af79", "session")),
    "sensitive.grants.revoke_grant": ("grant_revoked", lambda s: revoke_grant(s, "91c2073b561e")),
    "supersedes.undo_supersede": (
        "supersede_undone",
        lambda s: undo_supersede(s, *[(x.newer, x.older) for x in links(s) if x.decided_by == "auto"][0]),
    ),
    "supersedes.confirm_supersede": (
        "supersede_confirmed",
        lambda s: confirm_supersede(s, *[(x.newer, x.older) for x in links(s) if x.decided_by == "digest"][0]),
    ),
    "supersedes.reject_supersede": (
        "supersede_rejected",
        lambda s: reject_supersede(s, *[(x.newer, x.older) for x in links(s) if x.decided_by == "digest"][0]),
    ),
    "decay.revive": ("memory_revived", lambda s: decay.revive(s, a_plain_memory().slug)),
    "decay.record_recall": ("memory_recalled", lambda s: decay.record_recall(s, a_plain_memory().slug)),
    "decay.set_ttl": ("ttl_set", lambda s: decay.set_ttl(s, a_plain_memory().slug, 30)),
    "decay.forget_now": ("memory_forgotten", lambda s: decay.forget_now(s, a_plain_memory().slug)),
    "graph.rename_entity": ("entity_renamed", lambda s: graph.rename_entity(s, "entity:tool:pnpm", "pnpm 9")),
    "graph.merge_entities": (
        "entities_merged",
        lambda s: graph.merge_entities(s, "entity:tool:pnpm", "entity:library:zod"),
    ),
    "graph.supersede_relation": ("relation_superseded", lambda s: graph.supersede_relation(s, 1)),
    "scopes.set_label": ("scope_labeled", lambda s: set_label(s, "710d5aaf7a15", "Acme web shop")),
    "sensitive.binding.bind_files": (
        "files_bound",
        lambda s: bind_files(
            s,
            "35998c22af79",
            [
                (rel, s.read_doc(rel), s.layout.resolve(rel).read_bytes(), s.read_bytes(rel))
                for rel in [Memory.get(Memory.scope_hash == "35998c22af79").body_path]
            ],
        ),
    ),
}
# Store functions that are not one mutation, and why.
NOT_ONE_EVENT = {
    "sensitive.registration.unregistered_scopes": "reads only",
    "coexist.lost_promotions": "reads only",
    "coexist.lost_sealed": "reads only (decrypts sealed rows in memory)",
    "coexist.seal_promotion": "engram's sealed copy of one promotion, inside its decision's transaction",
    "coexist.sealing": "wraps a decision's index update with seal_promotion, inside its transaction",
    "coexist.seal_scope": "seal_promotion of a scope's decided promotions, inside the marking's transaction",
    "drift.seen.acknowledge": "one findings_seen event naming every finding seen (tests/test_seen_findings.py)",
    "sensitive.registration.register_again": "one sensitive_scope_restored event (test_coexist_rebuild)",
    "coexist.restore_promotions": "one promotions_restored event when anything is restored (test_coexist_rebuild)",
    "coexist.claim_index": "one index_rebuild_reconciled event once nothing is missing (test_coexist_rebuild)",
    "coexist.keep_registered": "writes nothing: sets register_sensitive_again to run before a store's first write",
    "coexist.register_sensitive_again": "one sensitive_scope_restored event per scope (test_coexist_rebuild)",
    "sensitive.registration.register": "the index step inside mark's and repair's changes, which carry the event",
    "drift.repair.repair": "runs many fixes, each its own mutation with its own event",
    "demo.build_demo": "an import event per 5,000 memories, then the approvals and rejections a person would make",
    "promotions.write_promoted": "the shared step of approve and repair, which name its event",
    "audit.ops.verify_log": "reads the data root; writes only engram's own checkpoint",
    "audit.ops.current_checkpoint": "verify_log, then prints",
    "audit.ops.check_printed": "reads only",
    "stats.counts": "reads only",
    "stats.list_memories": "reads only",
    "drift.check.check": "reads only",
    "stats.pending_count": "reads only",
    "queue.pending_queue": "reads only",
    "queue.first_page": "reads only",
    "queue.pending_findings": "reads only",
    "queue.promotion_detail": "reads only (names sensitive files, never opens them)",
    "explain.explain": "reads; opening a sensitive memory goes through view_memory, which audits it",
    "explain.explanation": "reads; opening a sensitive memory goes through view_memory, which audits it",
    "sensitive.convert.unlock": "derives keys in memory; nothing on disk changes",
    "scopes.resolve_scope": "reads only",
    "scopes.project_dir": "reads only",
    "sensitive.convert.lock": "forgets keys held in memory; nothing on disk changes",
    "sensitive.convert.check_key": "decrypts one file in memory; keeps the passphrase verifier (engram.db) when "
    "missing",
    "sensitive.keyproof.prove": "decrypts in memory; keeps the passphrase verifier (engram's own state, not the "
    "root's data)",
    "sensitive.keyproof.opens_own_files": "decrypts in memory; keeps the passphrase verifier when missing",
    "promotions.target_scopes": "reads only",
    "promotions.prove_keys": "keyproof.prove for each scope, before any decision",
    "sensitive.keyproof.remember": "engram's own passphrase verifier in engram.db, not the root's data",
    "sensitive.grants.grants": "reads only",
    "decay.distribution": "reads only",
    "graph.entities": "reads only",
    "graph.neighbourhood": "reads only",
    "graph.mentioned_in": "reads only",
    "graph.conflicts": "reads only",
    "decay.listing": "reads only",
    "decay.plan_sweep": "reads only (the dry run)",
    "decay.apply_sweep": "one decay_swept event per batch of 50 (tests/test_decay.py)",
    "supersedes.links": "reads only",
    "supersedes.forest": "reads only",
    "supersedes.listed_links": "reads only",
    "importers.run.preview": "reads only: what an import would write",
    "importers.run.apply_import": "one import_item event per item written, then one import_run event",
    "sensitive.rekey.rekey_passphrase": "one rekey_started for every scope, one memory_rekeyed per batch, a "
    "scope_rekeyed per scope (tests/test_rekey.py)",
    "sensitive.rekey.rekey_random": "rekey_started, one memory_rekeyed per batch, then scope_rekeyed "
    "(tests/test_rekey.py)",
    "sensitive.rekey.plan_passphrase_rekey": "reads only",
    "sensitive.binding.record": "the binding rows of the encrypted files of one write, inside its transaction",
    "sensitive.binding.forget": "drops the bindings of the plaintext files of one write, inside its transaction",
    "sensitive.binding.verify": "reads only",
    "sensitive.binding.bindings": "reads only",
    "sensitive.binding.binding_of": "reads only",
    "sensitive.binding.restore_cut": "engram.db's part of a change already committed in index.db, on opening "
    "(tests/test_binding.py)",
    "sensitive.reasons.kept": "computes the text a note keeps; its caller's change writes it",
    "sensitive.reasons.shown": "reads only",
    "sensitive.reasons.seal_scope": "the notes of a scope being marked, inside its scope_marked_sensitive change",
    "sensitive.reasons.open_scope": "the notes of a scope being unmarked, inside its scope_unmarked_sensitive change",
    "sensitive.binding.settle": "the twin's rows caught up with, or lost by a crash, at the start of a write's "
    "transaction (tests/test_crash_matrix.py)",
    "sensitive.binding.bind_unbound": "one files_bound event per scope with files to bind (tests/test_binding.py)",
    "drift.adopt.adopt_file": "one repair_applied event, for an unindexed file (tests/test_check_repair.py)",
    "scopes.scopes": "reads only",
    "scopes.scope_hashes": "reads only",
    "queue.pending_ids": "reads only",
    "queue.snoozed_ids": "reads only",
    "queue.next_wake": "reads only",
    "promotions.snooze": "one promotion_snoozed event (tests/test_snooze.py)",
    "sensitive.convert.mark_sensitive": "one scope_marked_sensitive event, then one memory_encrypted per batch "
    "of files (tests/test_sensitive.py counts them)",
    "sensitive.convert.unmark_sensitive": "one memory_decrypted per batch, then one scope_unmarked_sensitive",
    "search.fulltext.cache_path": "names engram's search cache, outside the data root",
    "queue_scores.scores_path": "names engram's cache of DURA scores, outside the data root",
    "queue_scores.keep": "writes engram's cache of DURA scores, outside the data root (tests/test_queue_scores.py)",
    "queue_scores.with_kept": "reads index.db and that cache",
    "screen_cache.cache_path": "names engram's cache of texts screened clean, outside the data root",
    "screen_cache.known_clean": "reads that cache",
    "screen_cache.keep_clean": "writes that cache, hashes only (tests/test_screen_cache.py)",
    "search.fulltext.sync": "writes engram's search cache only, outside the data root (tests/test_fulltext.py)",
    "search.fulltext.rebuild": "engram's search cache only, outside the data root",
    "search.fulltext.purge": "engram's search cache only, outside the data root",
    "search.fulltext.discard": "engram's search cache only, outside the data root",
    "search.fulltext.verify": "reads engram's search cache and stats the files",
    "search.fulltext.verifier": "the same read, as a call for a thread of its own",
    "audit.outbox.flush": "appends events already committed with their change (the change's one event)",
    "audit.outbox.queued": "reads only",
    "audit.outbox.restore_cut": "engram.db's part of changes already committed in index.db, their events told by "
    "the next flush (tests/test_crash_matrix.py)",
    "search.lookup.bring_up_to_date": "syncs engram's search cache only, outside the data root (as sync)",
    "search.lookup.stamp": "stats folders and counts index.db's rows: reads only",
    "search.lookup.moved": "reads index.db and engram's search cache side by side: reads only",
    "promotions.cluster_decider": "returns how each member is decided: approve, reject or merge, each its own event",
    "similar.pending_texts": "reads only",
    "calibration.decisions": "reads only",
    "screening.screen_root": "reads only",
    "quarantine.held_memories": "reads only",
    "memories.with_state": "reads only: what set_decay, quarantine and release then apply",
    "allowlist.allowed_hosts": "reads only",
    "quarantine.hold_quarantined": "one hold_promotion event per promotion held",
    "screening.pending_screens": "reads only",
    "screening.screen_promotion": "reads only",
    "promotions.screen_edited": "reads only: what approve checks",
    "conflicts.conflicts": "reads directory listings only",
    "conflicts.conflict": "reads directory listings only",
    "conflicts.versions": "sensitive_viewed for an encrypted conflict, nothing for a plain one (test_conflicts)",
    "conflicts.resolve": "one conflict_resolved event, its file written when local or merged (test_conflicts)",
    "history.ops.catch_up": "writes engram's history repository only, never the data root (tests/test_history.py)",
    "history.ops.record_seen": "writes engram's history repository only (tests/test_history.py)",
    "history.ops.revisions": "reads the history only",
    "history.ops.revision": "reads the history only",
    "history.ops.at": "reads the history only",
    "history.ops.current_text": "reads only",
    "history.ops.text": "one sensitive_viewed event for an encrypted revision, none for a plain one (test_history)",
    "history.ops.diff": "text of each revision: sensitive_viewed for each encrypted one (test_history)",
    "history.ops.push": "one history_pushed event once the remote has it (test_history)",
}


def _edited_then_restored(store: Any) -> None:
    """Restore needs an earlier revision: memoryd's edit makes one, with no event of engram's."""
    slug = _edited_by_memoryd(store)
    history_ops.restore(store, slug, history_ops.revisions(store, slug)[1].id)


def _edited_then_forgotten(store: Any) -> None:
    history_ops.forget(store, _edited_by_memoryd(store))


def _edited_by_memoryd(store: Any) -> str:
    slug = a_plain_memory().slug
    history_ops.catch_up(store)
    memoryd_updates(store.layout.root, slug, body="memoryd's later text\n")
    history_ops.catch_up(store)
    return slug


def _allowed_then_disallowed(store: object) -> None:
    """Disallowing needs a host on the list: engram.db's row is written directly (no event of its own)."""
    AllowedHost.insert(host="pkgs.example.com", added_at="2026-12-01T00:00:00+00:00").execute()
    allowlist.disallow(store, "pkgs.example.com")  # type: ignore[arg-type]


def _held_then_released(store: object) -> None:
    """Release needs a memory in quarantine: engram.db's record of one is written directly (no event of its own)."""
    slug = a_plain_memory().slug
    QuarantinedMemory.insert(slug=slug, was="alive", rules="[]", at="2026-12-01T00:00:00+00:00").execute()
    quarantine.release(store, slug)


def store_api() -> set[str]:
    import importlib
    import inspect
    import pkgutil

    import engram.store as package

    found = set()
    for info in pkgutil.walk_packages(package.__path__, "engram.store."):  # subpackages too
        module = importlib.import_module(info.name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            params = list(inspect.signature(fn).parameters)
            if fn.__module__ == module.__name__ and not name.startswith("_") and params[:1] == ["store"]:
                found.add(f"{info.name.removeprefix('engram.store.')}.{name}")
    return found


def test_every_store_function_is_accounted_for():
    assert store_api() == set(MUTATIONS) | set(NOT_ONE_EVENT)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_appends_exactly_one_event(store, fixture_root, name):
    event, run = MUTATIONS[name]
    log = fixture_root / "audit" / "audit.jsonl"
    before = log.read_bytes().splitlines(keepends=True)
    run(store)
    after = audit_lines(fixture_root)
    whole = [line for line in before if line.endswith(b"\n")]
    assert len(after) == len(whole) + 1
    assert after[-1]["event_type"] == event and after[-1]["seq"] == len(after)
    assert memoryd_chain_ok(after)
    assert not list(fixture_root.rglob("*engram-tmp*"))


def test_approve_writes_file_then_flips_status(store, fixture_root):
    pid = pending_id()
    slug = promotions.approve(store, pid).slug
    promotion = Promotion.get_by_id(pid)
    assert promotion.status == "approved" and promotion.decided_at
    row = Memory.get(Memory.slug == slug)
    doc = parse((fixture_root / row.body_path).read_bytes(), row.body_path)
    assert doc.frontmatter.source == "promotion" and doc.frontmatter.promoted_from == promotion.source_session_slug
    assert doc.body == promotion.proposed_body
    with pytest.raises(Conflict):
        promotions.approve(store, pid)
    with pytest.raises(Conflict):
        promotions.reject(store, pid)


def test_approve_in_sensitive_scope_writes_only_ciphertext(store, fixture_root):
    session = Memory.get((Memory.scope_hash == "35998c22af79") & (Memory.type == "session"))
    pid = promotions.propose(
        store,
        promotions.Proposal(
            session.slug,
            MemoryType.FACT,
            "CANARY-títle-4711",
            "canary body",
            ["canary"],
            {"D": 0.9, "U": 0.9, "R": 0.9, "A": 0.9},
            "test",
            "35998c22af79",
        ),
    )
    slug = promotions.approve(store, pid).slug
    row = Memory.get(Memory.slug == slug)
    assert row.body_path.endswith(".md.enc") and row.scope_sensitive == 1
    title = Promotion.get_by_id(pid).proposed_title.encode()
    assert title not in (fixture_root / row.body_path).read_bytes()
    assert not (fixture_root / row.body_path[:-4]).exists()
    assert store.read_doc(row.body_path).frontmatter.title.encode() == title


def test_approve_applies_proposed_supersedes(store):
    pid = pending_id()
    older = Memory.select().where(Memory.type == "decision").first().slug
    Promotion.update(proposed_supersedes=json.dumps([older, "no-such-slug"])).where(Promotion.id == pid).execute()
    slug = promotions.approve(store, pid).slug
    assert SupersedesChain.get_or_none(newer_memory_id=slug, older_memory_id=older) is not None


def test_resaving_unchanged_memory_leaves_bytes_equal(store, fixture_root):
    row = a_plain_memory()
    before = (fixture_root / row.body_path).read_bytes()
    memories.edit_memory(store, row.slug, title=store.read_doc(row.body_path).frontmatter.title)
    assert (fixture_root / row.body_path).read_bytes() == before


def test_decay_is_written_through_to_frontmatter(store, fixture_root):
    row = a_plain_memory()
    memories.set_decay(store, row.slug, DecayState.SOFT_FORGOTTEN)
    assert b"decay_state: soft-forgotten\n" in (fixture_root / row.body_path).read_bytes()
    assert Memory.get(Memory.slug == row.slug).decay_state == "soft-forgotten"


def test_unsafe_slugs_and_paths_are_refused(store, fixture_root):
    with pytest.raises(ValueError):
        Frontmatter(
            title="t", slug="../../escape", type=MemoryType.FACT, scope_hash="abc", source="m", created_at=store.now()
        )
    with pytest.raises(UnsafePath):
        store.layout.resolve("../outside.md")
    with pytest.raises(UnsafePath):
        store.layout.resolve("/etc/passwd")
    with pytest.raises(UnsafePath):
        store.layout.memory_relpath("../x", MemoryType.FACT, "ok", False)


def test_a_write_into_a_folder_that_leads_out_of_the_root_is_refused_before_anything_moves(
    store, fixture_root, tmp_path
):
    """Where a memory goes is named without touching the disk (:meth:`RootLayout.memory_relpath`); the write itself
    resolves every path before anything moves, so a type folder swapped for a symlink out of the root is refused
    there, whole: no file outside, no row, no event."""
    from engram.store.write.change import Change

    doc = a_fact("engram-escape-1", store.now())
    write = store.memory_write(doc)
    folder = (fixture_root / write.relpath).parent
    outside = tmp_path / "outside"
    outside.mkdir()
    if folder.exists():
        folder.rename(folder.with_name("moved-aside"))
    folder.symlink_to(outside, target_is_directory=True)
    events = len(audit_lines(fixture_root))
    change = Change("memory_created", doc.frontmatter.slug, doc.frontmatter.scope_hash, {}, writes=[write])
    with pytest.raises(UnsafePath):
        store.apply(change)
    assert list(outside.iterdir()) == []
    assert not Memory.select().where(Memory.slug == "engram-escape-1").exists()
    assert len(audit_lines(fixture_root)) == events


def test_files_written_keep_memoryd_readable_form(store, fixture_root):
    """What engram writes parses with plain yaml into memoryd's fields, in memoryd's order."""
    import yaml

    slug = promotions.approve(store, pending_id()).slug
    text = (fixture_root / Memory.get(Memory.slug == slug).body_path).read_text()
    head, _, body = text[4:].partition("---\n\n")
    data = yaml.safe_load(head)
    assert list(data)[:4] == ["title", "slug", "type", "scope_hash"]
    assert data["source"] == "promotion" and data["created_at"].endswith("Z")


def test_index_constraint_violation_is_a_conflict_and_commits_nothing(store, fixture_root):
    from engram.store.errors import Conflict
    from engram.store.write.change import Change

    row = a_plain_memory()
    doc = store.read_doc(row.body_path)
    clash = MemoryDoc(frontmatter=doc.frontmatter.replace(slug="another-slug"), body=doc.body)
    before = audit_lines(fixture_root)
    with pytest.raises(Conflict, match="UNIQUE"):
        store.apply(
            Change(
                "memory_edited",
                "another-slug",
                None,
                {},
                index_update=lambda: store.upsert_memory_row(clash, row.body_path),
            )
        )
    assert Memory.get_or_none(Memory.slug == "another-slug") is None
    assert audit_lines(fixture_root) == before


def test_torn_audit_tail_is_never_glued_onto(store, fixture_root):
    """A crashed writer's partial last line: the change is saved, its event waits in the outbox."""
    from engram.store.drift.check import check

    log = fixture_root / "audit" / "audit.jsonl"
    log.write_bytes(log.read_bytes() + b'{"seq": 201, "ts": "2026-')
    torn = log.read_bytes()
    memories.set_decay(store, a_plain_memory().slug, DecayState.DIM)
    assert log.read_bytes() == torn
    assert "incomplete" in store.audit_warning
    assert check(store).counts().get("audit_pending") == 1
    log.write_bytes(torn[: torn.rindex(b"\n") + 1])  # what `engram audit repair` will do (issue 3)
    assert store.flush_audit_outbox() == 0
    assert audit_lines(fixture_root)[-1]["event_type"] == "decay_changed"


def test_a_batch_flushes_exactly_the_files_it_wrote(store, fixture_root, monkeypatch):
    """A batch without per-file fsyncs (imports, the demo) makes its own files durable before the index commits,
    and nothing else: ``os.sync`` would flush every file system on the machine."""
    import os

    def no_global_sync() -> None:
        raise AssertionError("os.sync flushes every file system")

    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "sync", no_global_sync)
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    writes = apply_a_batch(store, "engram-batch")
    written = {str(fixture_root / w.relpath) for w in writes}
    assert written <= set(synced) and str((fixture_root / writes[0].relpath).parent) in synced


def test_a_batch_puts_its_rows_in_while_its_files_flush_and_commits_them_after(store, fixture_root, monkeypatch):
    """The flush of a batch's files runs beside its index rows (the two took turns before), and the rows are
    committed only once every file is flushed: a crash never leaves the index pointing at a file not on disk."""
    import os
    import sqlite3
    import threading

    from engram.store.write.change import Change

    rows_in = threading.Event()
    seen: list[tuple[bool, int]] = []  # at each file's flush: rows in yet, rows another reader sees
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".md"):
            with sqlite3.connect(fixture_root / "index.db") as reader:
                committed = reader.execute("SELECT count(*) FROM memories WHERE slug LIKE 'engram-overlap-%'")
                seen.append((rows_in.wait(timeout=30), committed.fetchone()[0]))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    doc = a_fact("engram-overlap-1", store.now())
    write = store.memory_write(doc)

    def rows() -> None:
        store.upsert_memory_rows([(doc, write.relpath)])
        rows_in.set()

    store.apply_many(
        [Change("memory_created", "engram-overlap-1", "710d5aaf7a15", {}, writes=[write])],
        durable=False,
        index_update=rows,
    )
    assert seen == [(True, 0)]  # the rows went in during the flush, and nobody saw them before it ended
    assert Memory.get_by_id("engram-overlap-1").body_path == write.relpath


def test_a_temp_name_taken_by_a_crashed_process_or_a_planted_symlink_is_passed_over(tmp_path, monkeypatch):
    """Temp files are named by pid and a counter and created with O_EXCL: a name already there (a crashed
    process of the same pid left it, or someone planted a symlink) is never opened, and the write goes on."""
    import os

    from engram.store.write import atomic

    monkeypatch.setattr(atomic, "_temp_numbers", itertools.count())
    target, elsewhere = tmp_path / "m.md", tmp_path / "elsewhere"
    elsewhere.write_bytes(b"not yours")
    left = tmp_path / f".m.md{atomic.TEMP_MARKER}{os.getpid()}-0"
    left.write_bytes(b"left by a crash")
    (tmp_path / f".m.md{atomic.TEMP_MARKER}{os.getpid()}-1").symlink_to(elsewhere)
    atomic.write_atomic(target, b"the new text", mode=0o640)
    assert target.read_bytes() == b"the new text" and target.stat().st_mode & 0o777 == 0o640
    assert left.read_bytes() == b"left by a crash" and elsewhere.read_bytes() == b"not yours"
    assert sorted(p.name for p in tmp_path.iterdir() if atomic.is_temp_file(p.name)) == [
        f".m.md{atomic.TEMP_MARKER}{os.getpid()}-0",
        f".m.md{atomic.TEMP_MARKER}{os.getpid()}-1",
    ]


def test_a_new_file_in_a_folder_that_exists_asks_nothing_of_the_folder(tmp_path, monkeypatch):
    """A batch's thousands of files share a few folders: a new file's folder is made (and its parent fsynced)
    only when creating the file finds it missing, not looked up before every file."""
    from engram.store.write import atomic

    made: list = []
    real = atomic.ensure_dir
    monkeypatch.setattr(atomic, "ensure_dir", lambda path, mode=0o755: (made.append(path), real(path, mode)))
    atomic.write_atomic(tmp_path / "new" / "deeper" / "a.md", b"first", durable=False)
    atomic.write_atomic(tmp_path / "new" / "deeper" / "b.md", b"second", durable=False)
    assert made == [tmp_path / "new" / "deeper"]
    assert (tmp_path / "new" / "deeper" / "b.md").read_bytes() == b"second"


def a_batch(store, prefix: str, count: int, scope: str = "710d5aaf7a15") -> tuple[list, list]:
    """``count`` new memories of ``scope`` and where each goes (encrypted where the scope is sensitive)."""
    docs = [a_fact(f"{prefix}-{i:03d}", store.now()) for i in range(count)]
    for doc in docs:
        doc.frontmatter.scope_hash = scope
    return docs, [store.memory_write(doc) for doc in docs]


def test_a_batch_written_elsewhere_has_its_files_written_while_its_rows_go_in(store, fixture_root, monkeypatch):
    """With a FileWriter (the demo's) a batch's files are written and flushed by a child process while this one puts
    the rows in (the demo's files and rows took turns before), a sensitive scope's files encrypted here and read
    back there; the rows are committed once every file is in place."""
    from engram.store.write.change import Change

    monkeypatch.setenv("ENGRAM_PAUSE_AT", "renamed:0.02")  # the child (started after this) dawdles at each file
    plain, plain_writes = a_batch(store, "engram-elsewhere", 70)
    secret, secret_writes = a_batch(store, "engram-elsewhere-secret", 10, scope="35998c22af79")
    docs, writes = plain + secret, plain_writes + secret_writes
    present_at_rows: list[int] = []

    def rows() -> None:
        present_at_rows.append(sum((fixture_root / w.relpath).exists() for w in writes))
        store.upsert_memory_rows([(d, w.relpath) for d, w in zip(docs, writes, strict=True)])

    with FileWriter() as writer, store.files.writing_with(writer):
        store.apply(
            Change("import_applied", None, None, {"importer": "test"}, writes=writes, index_update=rows),
            durable=False,
        )
    assert present_at_rows[0] < len(writes)  # the rows went in while the files were still being written
    assert all((fixture_root / w.relpath).exists() for w in writes)
    assert all(w.relpath.endswith(".md.enc") for w in secret_writes)
    assert b"engram-elsewhere-secret" not in (fixture_root / secret_writes[0].relpath).read_bytes()
    assert store.read_doc(secret_writes[3].relpath).frontmatter.slug == "engram-elsewhere-secret-003"
    assert store.read_doc(plain_writes[5].relpath).frontmatter.slug == "engram-elsewhere-005"
    assert Memory.select().where(Memory.slug.startswith("engram-elsewhere")).count() == len(writes)


def test_a_batch_whose_files_fail_elsewhere_commits_nothing(store, fixture_root):
    """A file the child cannot write fails the whole batch here, with the child's reason, and no row of it is
    committed; the writer takes the next batch as before."""
    from engram.store.errors import StoreError
    from engram.store.write.change import Change

    (fixture_root / "scopes" / "0123456789ab").write_bytes(b"a file where a scope's folder would go")
    good, good_writes = a_batch(store, "engram-good", 70)
    bad, bad_writes = a_batch(store, "engram-bad", 70, scope="0123456789ab")

    def batch(docs, writes) -> Change:
        rows = lambda: store.upsert_memory_rows([(d, w.relpath) for d, w in zip(docs, writes, strict=True)])  # noqa: E731
        return Change("import_applied", None, None, {"importer": "test"}, writes=writes, index_update=rows)

    with FileWriter() as writer, store.files.writing_with(writer):
        with pytest.raises(StoreError, match="writing the batch's files failed: .*0123456789ab"):
            store.apply(batch(good + bad, good_writes + bad_writes), durable=False)
        assert not Memory.select().where(Memory.slug.startswith("engram-good")).exists()
        store.apply(batch(good, good_writes), durable=False)
    assert Memory.select().where(Memory.slug.startswith("engram-good")).count() == 70


def test_an_encrypted_file_that_would_not_decrypt_to_its_text_is_never_written(store, fixture_root, monkeypatch):
    """An encrypted memory's ciphertext is decrypted before it is written and must give its text back: a file
    nobody could open again is refused, and nothing of the change moves."""
    from engram.store.errors import StoreError
    from engram.store.write import engine
    from engram.store.write.change import Change

    real_encrypt = engine.encrypt
    monkeypatch.setattr(engine, "encrypt", lambda data, key, scope: real_encrypt(data + b"!", key, scope))
    docs, writes = a_batch(store, "engram-garbled", 1, scope="35998c22af79")
    with pytest.raises(StoreError, match="did not decrypt to its text"):
        store.apply(Change("memory_created", docs[0].frontmatter.slug, "35998c22af79", {}, writes=writes))
    assert not (fixture_root / writes[0].relpath).exists()
    assert not Memory.select().where(Memory.slug == "engram-garbled-000").exists()


def test_a_file_that_does_not_read_back_to_its_bytes_keeps_the_old_one(tmp_path, monkeypatch):
    """``read_back`` compares the temp file with the bytes meant before the rename: a write the disk garbled
    leaves the old file and no temp file."""
    from pathlib import Path

    from engram.store.errors import StoreError
    from engram.store.write import atomic

    target = tmp_path / "m.md.enc"
    target.write_bytes(b"the old ciphertext")
    monkeypatch.setattr(Path, "read_bytes", lambda self: b"garbled")
    with pytest.raises(StoreError, match="did not read back"):
        atomic.write_atomic(target, b"the new ciphertext", read_back=True)
    monkeypatch.undo()
    assert target.read_bytes() == b"the old ciphertext" and [p.name for p in tmp_path.iterdir()] == ["m.md.enc"]


def test_a_cut_changes_carried_rows_are_written_back_only_into_the_tables_that_may_carry_them(store):
    """The twin of the outbox is in index.db, which other programs write: a carried row naming any table but a
    promotion's notes is passed over, and the note is written back as carried."""
    from engram.store.audit import outbox
    from engram.store.models import Binding, OutboxGuard, PromotionNote

    store.index.writable()  # the twin is made with engram.db's tables
    pid = Promotion.select().where(Promotion.status == "pending").first().id
    bindings = Binding.select().count()
    carried = [
        {"table": "engram_binding", "key": "x", "row": None},
        {"table": "engram_promotion_notes", "key": pid, "row": {"promotion_id": pid, "reject_reason": "kept"}},
    ]
    event = {"event_type": "promotion_rejected", "target_id": str(pid), "details": {}, outbox.ROWS: carried}
    OutboxGuard.insert(op_id="cut", event=json.dumps(event), created_at="2026-12-07T00:00:00+00:00").execute()
    assert outbox.restore_cut(store) == 1
    assert PromotionNote.get_by_id(pid).reject_reason == "kept" and Binding.select().count() == bindings
