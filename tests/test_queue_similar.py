"""The queue's near-duplicate keys, pressed on a copy of the root memoryd wrote: tab to what is similar, enter
opens it, m merges into it; c groups clusters, A approves the best and rejects the rest, M merges them, and one
u undoes either."""

from __future__ import annotations

import json

import pytest
from conftest import PASSPHRASE
from helpers import events, settle
from memoryd_emulation import memoryd_proposes
from textual.events import Key
from textual.widgets import DataTable, OptionList

from engram.store.models import Memory, Promotion, PromotionNote
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.cli import main
from engram.tui.panes.queue import QueuePane
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.widgets.similar import SimilarList

PLAIN = "710d5aaf7a15"
SENSITIVE = "35998c22af79"
SIZE = (160, 45)


def status(pid: int) -> str:
    return Promotion.get_by_id(pid).status


def near_copies(root, count: int = 3, scope: str = PLAIN) -> list[int]:
    """Near-duplicates at the top of the queue (the highest DURA first): the best, then the rest."""
    return [
        memoryd_proposes(
            root, title=f"Keep PRs for the ledger under {n} lines", body=f"why {n}", dura=0.99 - i / 100, scope=scope
        )
        for i, n in enumerate((377, 183, 90)[:count])
    ]


async def test_tab_then_enter_opens_the_closest_memory_and_m_merges_into_it(store, fixture_root):
    memory = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "warning"))
    pid = memoryd_proposes(fixture_root, title=memory.title, body="said again", dura=0.99)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        assert pane.current().id == pid
        listed = app.query_one(SimilarList)
        assert listed.found[0].key == memory.slug and "same title" in listed.found[0].reason
        await pilot.press("tab")
        assert listed.has_focus
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.showing == "search" and memory.title in app.query_one("#search-memory").source
        await pilot.press("1")
        await settle(app, pilot)
        await pilot.press("tab", "m")
        await settle(app, pilot)
        assert status(pid) == "pending" and memory.title[:20] in app.screen.question  # named before it acts
        await pilot.press("y")
        await settle(app, pilot)
        assert status(pid) == "merged"
        assert "said again" in store.read_doc(store.safe_relpath(memory.body_path)).body


async def test_c_groups_a_cluster_A_approves_the_best_rejects_the_rest_and_u_undoes_it(store, fixture_root):
    best, *rest = near_copies(fixture_root)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        await pilot.press("A")
        assert status(best) == "pending"  # no cluster view yet: nothing decided
        await pilot.press("c")
        await settle(app, pilot)
        table = app.query_one("#queue-table", DataTable)
        assert [item.id for item in pane.items[:3]] == [best, *rest]
        assert [str(table.get_row(str(pid))[4]) for pid in (best, *rest)] == ["best of 3", "dup", "dup"]
        assert "1 cluster" in str(app.query_one("#queue-status").render())
        await pilot.press("A")
        await pilot.press("y")
        await settle(app, pilot)
        assert [status(pid) for pid in (best, *rest)] == ["approved", "rejected", "rejected"]
        assert (
            pane.history.undo_stack[-1].label == "approve best of cluster"
            and len(pane.history.undo_stack[-1].decisions) == 3
        )
        await pilot.press("u")
        await settle(app, pilot)
        assert [status(pid) for pid in (best, *rest)] == ["pending"] * 3


async def test_M_merges_the_cluster_into_its_best(store, fixture_root):
    best, *rest = near_copies(fixture_root)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        await pilot.press("M", "y")
        await settle(app, pilot)
        assert [status(pid) for pid in (best, *rest)] == ["approved", "merged", "merged"]
        merged = Memory.get(Memory.slug.startswith(f"promoted-{best}-"))
        body = store.read_doc(store.safe_relpath(merged.body_path)).body
        assert "why 183" in body and "why 90" in body
        await pilot.press("u")
        await settle(app, pilot)
        assert [status(pid) for pid in (best, *rest)] == ["pending"] * 3


def cli(capsys, root, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--root", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("reading_root")
def test_the_cli_lists_similar_and_clusters_and_decides_one(capsys, fixture_root):
    best, *rest = near_copies(fixture_root)
    code, out, _ = cli(capsys, fixture_root, "promotions", "similar", str(best), "--json")
    found = json.loads(out)
    assert code == 0 and {f["key"] for f in found if f["kind"] == "promotion"} >= {str(pid) for pid in rest}
    code, out, _ = cli(capsys, fixture_root, "promotions", "clusters", "--json")
    assert code == 0 and {"best": best, "members": [best, *rest]} in json.loads(out)["clusters"]
    before = len(events(fixture_root))
    code, out, _ = cli(capsys, fixture_root, "promotions", "cluster", str(rest[0]), "--reject-rest", "--dry-run")
    assert code == 0 and out.startswith(f"would approve #{best}") and len(events(fixture_root)) == before
    code, out, _ = cli(capsys, fixture_root, "promotions", "cluster", str(rest[0]), "--reject-rest")
    assert code == 0 and [status(pid) for pid in (best, *rest)] == ["approved", "rejected", "rejected"]
    assert PromotionNote.get(PromotionNote.promotion_id == rest[0]).reject_reason == f"duplicate of #{best}"
    code, _, err = cli(capsys, fixture_root, "promotions", "cluster", str(best), "--merge-rest")
    assert code == 2 and "in no cluster" in err


async def test_a_cluster_in_a_locked_scope_asks_for_the_passphrase_first(fixture_root):
    best, *rest = near_copies(fixture_root, scope=SENSITIVE)
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("c")
            await settle(app, pilot)
            app.query_one(QueuePane).go_to(best)
            await pilot.press("A")
            assert isinstance(app.screen, TextPrompt) and app.screen.password
            await pilot.press(*PASSPHRASE, "enter")
            await settle(app, pilot)
            await pilot.press("y")
            await settle(app, pilot)
            assert [status(pid) for pid in (best, *rest)] == ["approved", "rejected", "rejected"]


def test_the_cli_refuses_a_promotion_that_is_not_pending(capsys, fixture_root):
    code, _, err = cli(capsys, fixture_root, "promotions", "similar", "99999")
    assert code == 2 and "no pending promotion #99999" in err


async def test_m_opens_the_picker_on_the_similar_memories_of_the_scope(store, fixture_root):
    memory = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "warning"))
    pid = memoryd_proposes(fixture_root, title=memory.title, body="said again", dura=0.99)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.query_one(QueuePane).current().id == pid
        await pilot.press("m")
        await settle(app, pilot)
        offered = app.screen.query_one("#results")
        assert offered.get_option_at_index(0).id == memory.slug  # the closest first, before anything is typed
        await pilot.press("down", "enter", "y")
        await settle(app, pilot)
        assert status(pid) == "merged"


@pytest.mark.parametrize(("keys", "picked"), [(("down", "enter"), 0), (("down", "down", "enter"), 1)])
async def test_the_picker_reads_keys_typed_faster_than_focus_moves(store, fixture_root, keys, picked):
    """Keys that arrive together (typed fast, pasted, sent by a terminal multiplexer) are read in the order they
    say: ``down`` enters the list, the next ``down`` moves in it, ``enter`` picks, before the focus has moved."""
    memory = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "warning"))
    memoryd_proposes(fixture_root, title=memory.title, body="said again", dura=0.99)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("m")
        await settle(app, pilot)
        await pilot.press("e")  # more than the one similar memory
        await settle(app, pilot)
        offered = app.screen.query_one("#results", OptionList)
        assert offered.option_count > 1
        want = offered.get_option_at_index(picked).id
        for key in keys:  # posted at once, no pause between them
            app.post_message(Key(key, "\r" if key == "enter" else None))
        await settle(app, pilot)
        confirm = app.screen
        assert isinstance(confirm, Confirm), type(confirm)
        assert Memory.get(Memory.slug == want).title[:20] in confirm.question
