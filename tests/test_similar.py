"""Near-duplicates (store/similar.py) on a copy of the root memoryd wrote: what the detail lists for a promotion,
why, in which order; clusters of pending promotions; and that nothing is compared without a shared key."""

from __future__ import annotations

import re
import sqlite3

from hypothesis import given
from hypothesis import strategies as st
from memoryd_emulation import memoryd_proposes

from engram.store import similar
from engram.store.models import Memory, Promotion
from engram.store.promotions import approve
from engram.store.queue import pending_queue, queue_query
from engram.store.similar import Block, Similarity, Text, cluster_order, normalised, title_similarity, words

PLAIN = "710d5aaf7a15"  # a plain scope of the fixture root
OTHER = "798e262b88f2"


def test_numbers_are_made_alike_and_cjk_is_blocked_by_pairs():
    assert normalised("Keep PRs under 377 lines.") == normalised("keep PRs under 183 lines") == "keep prs under # lines"
    assert words(normalised("代码评审偏好：小 PR，122 行以内")) >= {"代码", "码评", "评审", "pr"}
    assert "#" not in words(normalised("PR 12"))


@given(st.text(max_size=40), st.text(max_size=40))
def test_title_similarity_is_symmetric_and_bounded(a, b):
    x, y = normalised(a), normalised(b)
    assert 0.0 <= title_similarity(x, y) == title_similarity(y, x) <= 1.0
    assert title_similarity(x, x) == 1.0


def test_word_similarity_weighs_the_word_that_differs():
    """Characters rate these 90 % alike; they are two decisions, not one."""
    a, b = normalised("Use MySQL for the ledger"), normalised("Use PostgreSQL for the ledger")
    assert title_similarity(a, b) < similar.CLUSTER_AT


def test_the_closest_memories_same_scope_first_with_reasons(store, fixture_root):
    memory = next(m for m in Memory.select().where(Memory.scope_hash == PLAIN) if re.search(r"\d", m.title))
    elsewhere = Memory.get((Memory.scope_hash == OTHER) & (Memory.type == "preference"))
    body = store.read_doc(store.safe_relpath(memory.body_path)).body
    pid = memoryd_proposes(fixture_root, title=memory.title, body=body, triggers=("prs",))
    renumbered = memoryd_proposes(fixture_root, title=re.sub(r"\d+", "7", memory.title), body="another body")
    memories, pending = Similarity.build(store).similar(pid)
    assert memories[0].key == memory.slug and memories[0].score == 1.0
    assert "same fingerprint" in memories[0].reason
    assert all(m.scope_hash == PLAIN for m in memories[: [m.scope_hash for m in memories].count(PLAIN)])
    assert [m.scope_hash for m in memories] == sorted((m.scope_hash for m in memories), key=lambda s: s != PLAIN)
    assert elsewhere.slug not in [m.key for m in memories if m.scope_hash == PLAIN]
    assert pending[0].key == str(renumbered)
    assert pending[0].reason.startswith("same title after normalising numbers")


def test_the_fixtures_own_near_duplicate_is_found(store):
    """memoryd proposed "Beware: changing a Kafka topic's partition count" next to the memory "Don't risk
    changing a Kafka topic's partition count"."""
    pending = Promotion.get(Promotion.proposed_title.contains("partition count"))
    memories, _ = Similarity.build(store).similar(pending.id)
    assert memories[0].title == "Don't risk changing a Kafka topic's partition count"
    assert memories[0].scope_hash == pending.scope_hash and memories[0].score >= 0.7


def test_nothing_is_compared_without_a_shared_key(store, fixture_root, monkeypatch):
    """Blocking, not a quadratic pass: of 3,000 memories sharing no word with it, a promotion is compared with
    none; of 3,000 sharing its title's words, with at most the candidates kept."""
    con = sqlite3.connect(fixture_root / "index.db")
    rows = [
        (f"bulk-{i}", "fact", PLAIN, f"zq{i} xv{i} wk{i}", "import", "2026-01-01", f"{i:040x}", f"bulk/{i}.md")
        for i in range(3000)
    ]
    rows += [
        (
            f"kin-{i}",
            "fact",
            PLAIN,
            f"Deploys go out on Tuesdays qy{i}",
            "import",
            "2026-01-01",
            f"{i + 9999:040x}",
            f"kin/{i}.md",
        )
        for i in range(3000)
    ]
    con.executemany(
        "INSERT INTO memories (slug, type, scope_hash, title, source, created_at, fingerprint, body_path) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    con.commit()
    con.close()
    pid = memoryd_proposes(fixture_root, title="Deploys go out on Tuesdays")
    built = Similarity.build(store)
    calls = []
    real = similar.compare
    monkeypatch.setattr(similar, "compare", lambda a, b: calls.append(b) or real(a, b))
    built.similar(pid)
    assert 0 < len([c for c in calls if "qy" in c.norm]) <= similar.CANDIDATES
    assert not [c for c in calls if "zq" in c.norm]


def test_a_memory_gone_since_the_blocks_were_made_is_left_out_and_a_new_one_found(store, fixture_root):
    memory = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "decision"))
    pid = memoryd_proposes(fixture_root, title=memory.title)
    before = Similarity.build(store)
    assert memory.slug in [m.key for m in before.similar(pid)[0]]
    con = sqlite3.connect(fixture_root / "index.db")  # memoryd's upsert replaces a row: the old one is gone
    con.execute("DELETE FROM memories WHERE slug = ?", (memory.slug,))
    con.commit()
    con.close()
    assert memory.slug not in [m.key for m in before.similar(pid)[0]]
    other = memoryd_proposes(fixture_root, title="Rotate the staging database password monthly")
    approved = approve(store, other)
    probe = memoryd_proposes(fixture_root, title="Rotate the staging database password every month")
    after = Similarity.build(store, before)
    assert after.memories is before.memories  # only what changed was read
    assert after.by_id[pid] is before.by_id[pid] and probe in after.by_id and other not in after.by_id
    assert approved.slug in [m.key for m in after.similar(probe)[0]]


def test_clusters_join_near_duplicates_of_one_scope_best_first(store, fixture_root):
    def propose(title: str, **kw: object) -> int:  # each its own body: the same body is the same fingerprint
        return memoryd_proposes(fixture_root, title=title, body=f"why: {title}", **kw)  # type: ignore[arg-type]

    low = propose("Keep PRs for the ledger under 377 lines", dura=0.6)
    high = propose("Keep PRs for the ledger under 183 lines", dura=0.8)
    mid = propose("keep PRs for the ledger under 90 lines!", dura=0.7)
    apart = propose("Keep PRs for the ledger under 50 lines", scope=OTHER)
    unlike = propose("Use MySQL for the ledger")
    same_body = memoryd_proposes(fixture_root, title="Something else entirely", body="why: Use MySQL for the ledger")
    clusters = Similarity.build(store).clusters()
    assert [high, mid, low] in clusters.members
    assert clusters.of(apart) == []
    assert clusters.of(unlike) == [unlike, same_body]  # the same fingerprint: one body proposed twice
    assert clusters.kinds(high) == ["yes", "cluster"] and clusters.kinds(apart) == ["no"]
    order = cluster_order([apart, low, mid, high], clusters)
    assert order == [high, mid, low, apart]


def test_the_dup_filter_finds_what_repeats_a_memory(store, fixture_root):
    memory = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "warning"))
    repeat = memoryd_proposes(fixture_root, title=memory.title)
    fresh = memoryd_proposes(fixture_root, title="Nothing like anything known before, surely", body="new")
    known = [i.id for i in pending_queue(store, query=queue_query("dup:known"))]
    assert repeat in known and fresh not in known
    assert fresh in [i.id for i in pending_queue(store, query=queue_query("!dup:yes"))]


def test_entities_in_common_and_one_session_are_reasons(store, fixture_root):
    """memoryd's graph says what a session mentions: a memory mentioning what the promotion's session does says
    so; two promotions of one session say that."""
    con = sqlite3.connect(fixture_root / "index.db")
    session = con.execute("SELECT slug FROM memories LIMIT 1").fetchone()[0]  # where memoryd_proposes comes from
    slug, entity = con.execute(
        "SELECT m.slug, r.object_id FROM memories m JOIN relations r ON r.subject_id = 'memory:' || m.slug "
        "WHERE r.predicate = 'mentions' AND m.type != 'session' AND m.scope_hash = ? LIMIT 1",
        (PLAIN,),
    ).fetchone()
    con.execute(
        "INSERT OR IGNORE INTO relations (subject_id, subject_kind, predicate, object_id, object_kind, "
        "source_memory_id, created_at) VALUES (?, 'memory', 'mentions', ?, 'entity', ?, '2026-11-23')",
        (f"memory:{session}", entity, session),
    )
    title = con.execute("SELECT title FROM memories WHERE slug = ?", (slug,)).fetchone()[0]
    con.commit()
    con.close()
    pid = memoryd_proposes(fixture_root, title=title, body="one")
    sibling = memoryd_proposes(fixture_root, title=title + " again", body="two")
    memories, pending = Similarity.build(store).similar(pid)
    named = entity.rsplit(":", 1)[-1].replace("_", " ")
    assert any(m.key == slug and f"shares entities: {named}" in m.reason for m in memories)
    assert any(p.key == str(sibling) and "proposed from the same session" in p.reason for p in pending)


@given(
    st.lists(
        st.tuples(
            st.integers(1, 2**40),
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
            st.integers(-1, 2**62),
            st.sampled_from("zab"),
        ),
        max_size=25,
    )
)
def test_a_block_gives_back_each_text_it_was_built_from(entries):
    """The block keeps its columns in arrays and one buffer (no Python object per text): each position still
    answers its key, normalised title, fingerprint and scope, and an exact key finds it."""
    block = Block(entries)
    assert block.size == len(entries) and block.scope_names == sorted({scope for *_, scope in entries})
    for position, (key, norm, fp, scope) in enumerate(entries):
        text = block.text(position)
        assert (int(block.keys[position]), text.norm, text.fp, text.scope_hash) == (key, norm, fp, scope)
        assert position in block.same(Text("", norm, fp, scope), limit=len(entries))
