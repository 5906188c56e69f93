"""The demo root: deterministic per seed, complete, clean under check, readable as memoryd reads."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from peewee import SQL

from engram.store.demo import DEMO_PASSPHRASE, POISONED, SECRET_BEARING, build_demo
from engram.store.drift.check import check
from engram.store.drift.scan import FileEntry, walk
from engram.store.index import BULK_CACHE_KIB
from engram.store.models import Entity, Memory, Promotion, Relation, SupersedesChain
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store


def make(root, n=300, seed=3):
    with Store.open(root, create=True, actor="engram-demo") as store:
        made = build_demo(store, n, seed)
        files = {e.relpath: store.read_bytes(e.relpath) for e in walk(store.layout) if isinstance(e, FileEntry)}
    return made, files


def test_same_seed_same_root(tmp_path):
    made1, files1 = make(tmp_path / "a")
    made2, files2 = make(tmp_path / "b")
    assert made1 == made2 and files1 == files2  # plaintext equal (ciphertext nonces differ, as they must)
    _, files3 = make(tmp_path / "c", seed=4)
    assert files3 != files1


def test_a_root_drawn_in_another_process_chunk_by_chunk_is_the_same_root(tmp_path, monkeypatch):
    """Above one chunk the content is drawn in a child process while the last chunk is written: the root is the
    one drawn here in a single chunk, to the byte of every plaintext, and every count."""
    from engram.store import demo

    made_here, files_here = make(tmp_path / "here")
    drawn_in: list[str] = []
    real = demo.produced_elsewhere

    def elsewhere(make_chunks, *args):
        drawn_in.append(make_chunks.__name__)
        return real(make_chunks, *args)

    monkeypatch.setattr(demo, "CHUNK", 70)
    monkeypatch.setattr(demo, "produced_elsewhere", elsewhere)
    made_there, files_there = make(tmp_path / "there")
    assert drawn_in == ["_drawn"]
    assert made_there == made_here and files_there == files_here


def test_memories_are_made_one_after_another_across_the_demo_months(tmp_path):
    """Memory i is made after memory i - 1, as an agent's are: the rows go in slug order (each chunk's rows at
    the end of the indexes on slugs, where dates drawn at random put them all over those indexes), each
    supersede's newer memory is made after its older one, and the dates still cover the demo's months."""
    from engram.store.demo import NOW, SPAN_DAYS

    with Store.open(tmp_path / "r", create=True, actor="engram-demo") as store:
        build_demo(store, 300, 3)
        drawn = Memory.select(Memory.slug, Memory.created_at).order_by(SQL("rowid")).limit(300)  # not approvals'
        rows = list(drawn)
        chains = [(c.newer_memory_id, c.older_memory_id) for c in SupersedesChain.select()]
    made = {row.slug: row.created_at for row in rows}
    drawn_chains = [(newer, older) for newer, older in chains if newer in made]  # not an approval's
    assert drawn_chains and all(made[newer] > made[older] for newer, older in drawn_chains)
    slugs = [row.slug for row in rows]
    assert slugs == sorted(slugs)  # in the order they were written
    first, last = (datetime.fromisoformat(rows[n].created_at) for n in (0, -1))
    assert NOW - first > timedelta(days=SPAN_DAYS - 2) and NOW - last < timedelta(days=2)


def test_the_progress_bar_knows_its_length_before_the_first_chunk_is_drawn(tmp_path, monkeypatch):
    from engram.store import demo

    monkeypatch.setattr(demo, "CHUNK", 100)
    calls: list[tuple[int, int]] = []
    with Store.open(tmp_path / "p", create=True, actor="engram-demo") as store:
        build_demo(store, 250, 3, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 250), (100, 250), (200, 250), (250, 250)]


def test_demo_has_everything_a_person_should_see(tmp_path):
    made, files = make(tmp_path / "d", n=400)
    with Store.open(tmp_path / "d", keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
        assert {m.type for m in Memory.select(Memory.type)} == {
            "session",
            "decision",
            "preference",
            "fact",
            "playbook",
            "warning",
        }
        assert {p.status for p in Promotion.select()} == {"pending", "approved", "rejected"}
        assert {m.decay_state for m in Memory.select()} == {"alive", "dim", "soft-forgotten"}
        assert Entity.select().count() and Relation.select().count() and SupersedesChain.select().count()
        assert len(store.sensitive_scopes()) == 1
        assert Memory.select().where(Memory.scope_sensitive == 1).count() > 0
        assert Memory.select().where(Memory.scope_hash == "_unscoped").count() > 0
        assert any("会话" in m.title or "改用" in m.title for m in Memory.select())
        assert check(store).findings == []
        reasons = [p.reasoning for p in Promotion.select()]
        assert all(reasons) and all(set(json.loads(p.dura_score)) == set("DURA") for p in Promotion.select())
    events = (tmp_path / "d" / "audit" / "audit.jsonl").read_text().splitlines()
    proposed = len(SECRET_BEARING) + len(POISONED) + 2  # and the one memoryd approved unseen: proposed, approved
    assert len(events) == 1 + made["approved"] + made["rejected"] + proposed


def test_a_demo_where_a_deleted_root_was_starts_its_own_checkpoint(tmp_path):
    """A root deleted and the demo asked for at the same path: engram's checkpoint of the old log must not make
    the new one look replaced; the restart is audited."""
    import shutil

    from engram.store.audit.ops import verify_log

    make(tmp_path / "d")
    with Store.open(tmp_path / "d") as store:
        assert verify_log(store).status == "valid"  # and checkpointed
    shutil.rmtree(tmp_path / "d")
    make(tmp_path / "d", seed=5)
    with Store.open(tmp_path / "d") as store:
        assert verify_log(store).status == "valid"
    events = (tmp_path / "d" / "audit" / "audit.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["event_type"] == "audit_checkpoint_reset"


def test_demo_refuses_a_root_with_memories(fixture_root):
    from engram.store.errors import Conflict

    with Store.open(fixture_root) as store, pytest.raises(Conflict):
        build_demo(store, 10)


def cache_kib(store: Store) -> int:
    (size,) = store.index.db.execute_sql("PRAGMA cache_size").fetchone()
    return int(size)


@pytest.fixture
def seen_while_writing(monkeypatch) -> list[int]:
    """The connection's cache size each time memory rows go in."""
    seen: list[int] = []
    real = Store.upsert_index_entries

    def upsert(self: Store, *args, **kwargs) -> None:
        seen.append(cache_kib(self))
        real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "upsert_index_entries", upsert)
    return seen


def test_the_demo_writes_its_rows_with_the_bulk_cache_and_gives_it_back(tmp_path, seen_while_writing):
    with Store.open(tmp_path / "demo", create=True, actor="engram-demo") as store:
        before = cache_kib(store)
        build_demo(store, 120, 3)
        assert cache_kib(store) == before != -BULK_CACHE_KIB
    assert seen_while_writing and seen_while_writing[0] == -BULK_CACHE_KIB


def test_the_cache_is_given_back_when_the_write_fails(store):
    before = cache_kib(store)
    with pytest.raises(RuntimeError), store.index.bulk_cache():
        assert cache_kib(store) == -BULK_CACHE_KIB
        raise RuntimeError("a bulk write cut short")
    assert cache_kib(store) == before


@given(seed=st.integers(0, 2**32), n=st.integers(1, 500), k=st.integers(0, 2))
def test_drawing_a_sample_takes_what_random_sample_takes_from_the_same_draws(seed, n, k):
    """The demo's own ``_sample`` replaces ``random.sample`` (a tenth of the drawing) without changing a root: the
    same items, and the generator left where ``sample`` leaves it, for short populations and long ones."""
    import random

    from engram.store.demo import _sample

    if k > n:
        return
    population = range(100, 100 + n)
    ours, theirs = random.Random(seed), random.Random(seed)
    assert _sample(ours, population, k) == theirs.sample(population, k)
    assert ours.getstate() == theirs.getstate()


@given(seed=st.integers(0, 2**32), n=st.integers(1, 5000))
def test_a_pick_and_a_number_below_take_what_choice_and_randrange_take_from_the_same_draws(seed, n):
    """``_pick`` and ``_below`` replace ``choice``, ``randrange`` and ``randint`` in the drawing without changing a
    root: the same item and number, and the generator left where those leave it."""
    import random

    from engram.store.demo import _below, _pick

    population = range(100, 100 + n)
    ours, theirs = random.Random(seed), random.Random(seed)
    assert _pick(ours.getrandbits, population) == theirs.choice(population)
    assert _below(ours.getrandbits, n) == theirs.randrange(n)
    assert 3 + _below(ours.getrandbits, n) == theirs.randint(3, 2 + n)
    assert ours.getstate() == theirs.getstate()


@given(seed=st.integers(0, 2**32), weights=st.lists(st.integers(0, 50), min_size=1, max_size=8).filter(any))
def test_a_weighted_pick_takes_what_choices_takes_from_the_same_draw(seed, weights):
    """``_weighted`` replaces ``choices`` for the type of each memory without changing a root: the same item (zero
    weights included), and the generator left where ``choices`` leaves it."""
    import itertools
    import random

    from engram.store.demo import _weighted

    population = [f"type{n}" for n in range(len(weights))]
    cumulative = list(itertools.accumulate(weights))
    ours, theirs = random.Random(seed), random.Random(seed)
    for _ in range(5):
        want = theirs.choices(population, cum_weights=cumulative)[0]
        assert _weighted(ours, population, cumulative) == want
    assert ours.getstate() == theirs.getstate()


def test_the_relations_of_a_chunk_hold_one_string_per_entity_and_scope():
    """Every relation naming an entity, or a scope, holds the string kept for it: the drawing process pickles each
    once a chunk (a new string per relation cost the pickling a quarter of its size, and the unpickling as much)."""
    from engram.store.demo import _drawn

    (chunk,) = _drawn(200, 3, 200)
    objects = [row[3] for row in chunk.relations]
    scopes = [row[6] for row in chunk.relations]
    assert len({id(s) for s in objects}) == len(set(objects))
    assert len({id(s) for s in scopes}) == len(set(scopes))


def test_a_chunk_brings_each_memory_made_and_no_document(tmp_path):
    """The drawing process makes each memory's text, path and index entry: the main process takes them as they
    come (unpickling the documents, and making their entries, were a sixth of its time), and they are what the
    document itself would be written as."""
    import pickle

    from engram.store.demo import _drawn
    from engram.store.frontmatter import parse
    from engram.store.write.change import MadeFile, index_entry

    (chunk,) = _drawn(60, 3, 60)
    assert chunk.files and all(isinstance(made, MadeFile) for made in chunk.files)
    assert b"MemoryDoc" not in pickle.dumps(chunk) and b"Frontmatter" not in pickle.dumps(chunk)
    with Store.open(tmp_path / "root", create=True, actor="engram-demo") as store:
        for made in chunk.files:
            doc = parse(made.made, made.relpath)
            assert store.memory_write(doc, encrypted=made.encrypted).relpath == made.relpath
            assert index_entry(doc, made.relpath) == made.entry
    assert any(made.encrypted for made in chunk.files) and not all(made.encrypted for made in chunk.files)


@pytest.mark.parametrize("what", ["a memoryd root mid-rebuild", "a file", "any other directory"])
def test_demo_writes_only_into_a_new_empty_or_demo_directory(fixture_root, tmp_path, capsys, what):
    from engram.tui.cli import main

    target = {
        "a memoryd root mid-rebuild": fixture_root,
        "a file": tmp_path / "notes.txt",
        "any other directory": tmp_path / "home",
    }[what]
    if what == "a memoryd root mid-rebuild":
        (fixture_root / "index.db").unlink()  # memoryd's rebuild-index deletes it first
    elif what == "a file":
        target.write_text("mine")
    else:
        target.mkdir()
        (target / "thesis.md").write_text("mine")
    before = sorted(p.name for p in target.rglob("*")) if target.is_dir() else target.read_text()
    assert main(["demo", "--root", str(target), "--memories", "10", "--no-open"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("engram: ") and len(err.strip().splitlines()) == 1 and str(target) in err
    assert (sorted(p.name for p in target.rglob("*")) if target.is_dir() else target.read_text()) == before


def test_a_demo_root_engram_made_opens_again(tmp_path, capsys):
    from engram.tui.cli import main

    assert main(["demo", "--root", str(tmp_path / "d"), "--memories", "10", "--no-open"]) == 0
    assert main(["demo", "--root", str(tmp_path / "d"), "--memories", "10", "--no-open"]) == 0
    assert "already holds a demo" in capsys.readouterr().err


def test_the_demo_has_secret_bearing_promotions_to_try_the_redaction_on(tmp_path):
    from engram.store.queue import pending_findings

    make(tmp_path / "d", n=100)
    with Store.open(tmp_path / "d") as store:
        titles = [title for title, _, _ in SECRET_BEARING]
        pending = Promotion.select().where(Promotion.status == "pending", Promotion.proposed_title.in_(titles))
        ids = [p.id for p in pending]
        assert len(ids) == 2
        found = pending_findings(store, ids)
        kinds = {f.kind for hits in found.values() for _, f in hits}
        assert kinds == {"password in prose", "AWS access key"}
