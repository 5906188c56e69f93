"""The decay and graph panes on a demo root of 5,000 memories (30k relations on 44 entities: one entity is
mentioned by thousands of memories), driven by real keys: what is capped is counted, a sweep over thousands of
memories is applied in batches, and files, index and audit agree afterwards. Speed is for bench/, not here."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import events, settle
from textual.widgets import DataTable, ProgressBar, Tree

from engram.store.decay import plan_sweep, state_of
from engram.store.demo import DEMO_PASSPHRASE, build_demo
from engram.store.graph import PER_PREDICATE, entities
from engram.store.models import Entity, Memory, Relation
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.panes.graph import GraphPane

SIZE = (140, 45)
MEMORIES = 5000
pytestmark = pytest.mark.xdist_group("scale")  # one worker builds the big root for both tests


@pytest.fixture(scope="module")
def built_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scale") / "demo"
    with Store.open(root, create=True, actor="engram-demo") as store:
        build_demo(store, MEMORIES)
    return root


@pytest.fixture
def demo_store(built_demo: Path, tmp_path: Path):
    root = tmp_path / "demo"
    shutil.copytree(built_demo, root)
    with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE), actor="engram-test") as store:
        yield store


async def test_graph_caps_a_popular_entity_and_renames_it(demo_store):
    top = entities(demo_store)[0]
    mentions = Relation.select().where((Relation.object_id == top.id) & Relation.superseded_at.is_null()).count()
    assert mentions > 10 * PER_PREDICATE  # the point of the test: far more than one screen
    app = EngramApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        pane = app.query_one(GraphPane)
        assert pane.current.id == top.id
        tree = app.query_one("#neighbourhood", Tree)
        for group in tree.root.children:
            listed = [n for n in group.children if n.data is not None]
            assert len(listed) <= PER_PREDICATE
        more = [str(n.label) for g in tree.root.children for n in g.children if str(n.label).startswith("… and")]
        assert more, "the relations past the cap are counted"
        shown = sum(len([n for n in g.children if n.data is not None]) for g in tree.root.children)
        counted = sum(int(label.split()[2]) for label in more)
        all_rel = (
            Relation.select()
            .where(
                ((Relation.object_id == top.id) | (Relation.subject_id == top.id)) & Relation.superseded_at.is_null()
            )
            .count()
        )
        assert shown + counted == all_rel
        await pilot.press("plus", "plus")
        await settle(app, pilot)
        assert pane.hops == 3 and len(tree.root.children) > 0
        assert app.query_one("#entity-memories", DataTable).row_count > 0
        app.query_one("#entities", DataTable).focus()
        await pilot.press("R", "ctrl+u", *"renamed at scale", "enter")
        await settle(app, pilot)
    assert Entity.get_by_id(top.id).name == "renamed at scale"
    assert events(demo_store.layout.root)[-1]["event_type"] == "entity_renamed"


async def test_decay_sweep_over_thousands_is_applied_in_audited_batches(demo_store):
    demo_store.clock = lambda: datetime(2028, 1, 1, tzinfo=UTC)
    planned = plan_sweep(demo_store)
    assert len(planned) > 1000
    before, memories = len(events(demo_store.layout.root)), Memory.select().count()
    app = EngramApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("s", "y")
        await settle(app, pilot)
        assert app.query_one("#decay-progress", ProgressBar).progress == len(planned)
    again = {s.slug: s for s in plan_sweep(demo_store)}  # memoryd's sweep moves one state per run
    assert all(again[s.slug].before == s.after for s in planned if s.slug in again)
    for step in planned[::97]:  # the files say what the index says
        row = demo_store.memory(step.slug)
        assert state_of(row) == step.after
        if step.after in ("dim", "soft-forgotten"):
            assert demo_store.read_doc(demo_store.safe_relpath(row.body_path)).frontmatter.decay_state == step.after
    swept = [e for e in events(demo_store.layout.root)[before:] if e["event_type"] == "decay_swept"]
    assert 1 < len(swept) and sum(len(json.loads(e["details"])["steps"]) for e in swept) == len(planned)
    assert Memory.select().count() == memories  # moved to forgotten/, never dropped
