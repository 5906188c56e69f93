"""Near-duplicates: the memories and pending promotions closest to a promotion, and clusters of pending ones.

Comparing every pending promotion with every memory is quadratic (2,000 by 100,000 is 200 million comparisons),
so nothing here compares two texts before a cheap key has put them side by side ("blocking"): the same
fingerprint (memoryd's sha1 of the body's first 500 characters), the same title once numbers are made alike, or
words of the title in common, weighted by how rare each word is (a CJK run counts by its pairs of characters).
Only the few best candidates of a promotion are then scored with rapidfuzz.

The blocks hold integers and one blob of normalised titles; what a person sees (slug, title, scope, shared
triggers) is read from index.db for the handful shown, so a stale block can only miss a candidate, never show
a wrong one. Memories are keyed by their rowid in index.db: a block made before memoryd replaced a row (its
upsert gives it a new rowid) or before ``rebuild-index`` finds the row gone and leaves it out.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from rapidfuzz import fuzz

from engram.store.columns import Repeats, dura_average, dura_scores, parse_json_list, shared
from engram.store.domain import OPEN_STATUSES
from engram.store.frontmatter import body_fingerprint
from engram.store.models import Memory, Promotion, Relation, Trigger, table_of, tuples
from engram.store.service import Store, chunked

CANDIDATES = 32  # best-blocked candidates a promotion's text is compared with, per block
SHOWN_FROM = 0.55  # a similarity below this is not worth a line in the detail
CLUSTER_AT = 0.92  # two pending promotions of one scope this similar are near-duplicates of each other
DUPLICATE_AT = 0.92  # a pending promotion this similar to a memory of its scope repeats what is known
REBUILD_PAST = 5_000  # memories added since the main block was made: past this, make it again

_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+|[^\W\d_]+|\d+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def normalised(title: str) -> str:
    """A title as near-duplicates share it: lower case, words only, every number ``#`` ("Keep PRs under 377
    lines" and "keep PRs under 183 lines." are one)."""
    return " ".join("#" if w.isdigit() else w for w in _WORD.findall(title.lower()))


def words(norm: str) -> set[str]:
    """The blocking keys of a normalised title: its words (numbers left out: every title has some), a CJK run by
    its pairs of characters (CJK is written without spaces)."""
    keys: set[str] = set()
    for w in norm.split():
        if w == "#":
            continue
        if _CJK.match(w) and len(w) > 2:
            keys.update(w[i : i + 2] for i in range(len(w) - 1))
        else:
            keys.add(w)
    return keys


def _fp_key(fingerprint: str) -> int:
    try:
        return int(fingerprint[:15], 16)
    except ValueError:
        return -1


def title_similarity(a: str, b: str) -> float:
    """0..1 for two normalised titles, word by word (a CJK character counts as a word): the better of in order
    and in any order. Characters would rate "use MySQL for the ledger" and "use MySQL for the EU ledger" as
    near-copies; words weigh the one that differs."""
    x, y = _units(a), _units(b)
    return max(fuzz.ratio(x, y), fuzz.ratio(sorted(x), sorted(y))) / 100.0


def _units(norm: str) -> list[str]:
    return [u for w in norm.split() for u in (list(w) if _CJK.match(w) else [w])]


@dataclass(frozen=True, slots=True)
class Text:
    """What a comparison needs of a promotion (or a memory)."""

    title: str
    norm: str
    fp: int  # :func:`_fp_key` of the fingerprint; -1 for none
    scope_hash: str
    triggers: frozenset[str] = frozenset()
    about: str = ""  # the slug whose entities stand for it: the memory's own, or the promotion's source session
    entities: frozenset[str] = frozenset()  # entity ids that slug mentions (the graph's "mentions" relations)


class Block:
    """One set of texts ready for blocking: their keys (row ids or promotion ids), scopes, fingerprints and
    normalised titles, and an inverted index of their title words (compressed rows: word -> positions)."""

    def __init__(self, entries: Iterable[tuple[int, str, int, str]]) -> None:
        """``entries``: (key, normalised title, fingerprint key, scope) for each text. Every column is gathered in
        an integer array or one buffer as the entries come, not in lists of Python objects: at a million memories
        those lists were 300 MB of small objects, whose freed pages the heap kept among the console's."""
        keys, fps, hashes, ends, scope_of = (array("q") for _ in range(5))
        blob = bytearray()
        scopes: dict[str, int] = {}
        vocab: dict[str, int] = {}
        pair_doc, pair_word = array("q"), array("q")
        for position, (key, norm, fp, scope) in enumerate(entries):
            keys.append(key)
            fps.append(fp)
            hashes.append(hash(norm))
            scope_of.append(scopes.setdefault(scope, len(scopes)))
            blob += norm.encode("utf-8")
            ends.append(len(blob))
            blob += b"\n"
            for w in words(norm):
                pair_doc.append(position)
                pair_word.append(vocab.setdefault(w, len(vocab)))
        self.size = len(keys)
        self.keys = _narrow(np.frombuffer(keys, dtype=np.int64))
        self.max_key = int(self.keys.max()) if self.size else 0
        self.scope_names = sorted(scopes)
        sorted_as = {name: code for code, name in enumerate(self.scope_names)}
        renumbered = np.asarray([sorted_as[name] for name in scopes], dtype=np.int64)  # first-seen -> sorted
        self.scopes = _narrow(renumbered[np.frombuffer(scope_of, dtype=np.int64)])
        self.norm_blob = bytes(blob[:-1])
        self.norm_ends = _narrow(np.frombuffer(ends, dtype=np.int64))
        self.fps = np.frombuffer(fps, dtype=np.int64).copy()
        self.exact = {  # for each exact key, its values sorted and the positions in that order
            name: (values[order], order.astype(np.int32))
            for name, values in (("fp", self.fps), ("norm", np.frombuffer(hashes, dtype=np.int64)))
            for order in (np.argsort(values, kind="stable"),)
        }
        self.vocab = vocab
        words_of = np.frombuffer(pair_word, dtype=np.int64)
        self.postings = np.frombuffer(pair_doc, dtype=np.int64).astype(np.int32)[np.argsort(words_of, kind="stable")]
        counts = np.bincount(words_of, minlength=len(vocab))
        self.starts = np.concatenate(([0], np.cumsum(counts)))
        self.weights = np.log1p(self.size / np.maximum(counts, 1))  # rare words say more

    @property
    def nbytes(self) -> int:
        """What the block's arrays and titles hold (the vocabulary's dict aside)."""
        arrays: list[np.ndarray] = [self.keys, self.scopes, self.norm_ends, self.fps, self.postings, self.starts]
        arrays.append(self.weights)
        arrays += [a for pair in self.exact.values() for a in pair]
        return len(self.norm_blob) + sum(a.nbytes for a in arrays)

    def text(self, position: int) -> Text:
        """The text at ``position`` as far as the block knows it (its title only normalised, no triggers)."""
        start = int(self.norm_ends[position - 1]) + 1 if position else 0
        norm = self.norm_blob[start : int(self.norm_ends[position])].decode("utf-8")
        return Text("", norm, int(self.fps[position]), self.scope_names[int(self.scopes[position])])

    def candidates(self, text: Text, limit: int = CANDIDATES) -> list[int]:
        """Positions of the texts most likely near ``text``: those with the same fingerprint or normalised title
        first, then those sharing the most weight of rare words (at least half of the query's)."""
        if not self.size:
            return []
        exact = self.same(text, limit)
        ids = [self.vocab[w] for w in words(text.norm) if w in self.vocab]
        shared: list[int] = []
        if ids:
            slices = [self.postings[self.starts[i] : self.starts[i + 1]] for i in ids]
            weights = self.weights[ids]
            every = np.concatenate(slices)
            repeated = np.repeat(weights, [len(s) for s in slices])
            docs = None  # position i of the scores is text i
            if len(every) * 8 < self.size:  # few postings: sum them where they are, not over the whole block
                docs, inverse = np.unique(every, return_inverse=True)
                score = np.bincount(inverse, weights=repeated)
            else:
                score = np.bincount(every, weights=repeated, minlength=self.size)
            hit = np.flatnonzero(score >= float(weights.sum()) / 2)
            if len(hit) > limit:
                hit = hit[np.argpartition(-score[hit], limit)[:limit]]
            hit = hit[np.argsort(-score[hit], kind="stable")]
            shared = (hit if docs is None else docs[hit]).tolist()
        return list(dict.fromkeys(exact + shared))[:limit]

    def same(self, text: Text, limit: int = CANDIDATES) -> list[int]:
        """Positions of the texts with ``text``'s fingerprint, then those with its normalised title."""
        return [*self._equal("fp", text.fp, limit), *self._equal("norm", hash(text.norm), limit)]

    def _equal(self, key: str, value: int, limit: int) -> list[int]:
        """Positions whose ``key`` ("fp" or "norm") equals ``value`` (at most ``limit``): two binary searches."""
        if key == "fp" and value < 0:
            return []
        values, order = self.exact[key]
        low, high = np.searchsorted(values, value, "left"), np.searchsorted(values, value, "right")
        return order[low : min(high, low + limit)].tolist()


def _narrow(values: np.ndarray) -> np.ndarray:
    """``values`` in the smallest of int16, int32 and int64 that holds them: a million memories' keys, scopes and
    title ends take 7 MB instead of 19."""
    low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    for kind in (np.int16, np.int32):
        if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max:
            return values.astype(kind)
    return values


@dataclass(frozen=True)
class Similar:
    """One memory or pending promotion close to a promotion, and why."""

    kind: str  # "memory" or "promotion"
    key: str  # the memory's slug, or the promotion's id
    title: str
    scope_hash: str
    score: float  # 0..1
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def compare(a: Text, b: Text) -> tuple[float, tuple[str, ...]]:
    """How alike ``a`` and ``b`` are (0..1), and the reasons a person can check: the same fingerprint, the same
    title once numbers are made alike, triggers in common, the titles' text similarity."""
    score = alike(a, b)
    if a.fp >= 0 and a.fp == b.fp:
        reasons = ["same fingerprint (same body)"]
    elif a.norm and a.norm == b.norm:
        reasons = ["same title" if score >= 0.99 else "same title after normalising numbers"]
    else:
        reasons = [f"title text {title_similarity(a.norm, b.norm):.0%} alike"]
    if shared := sorted(a.triggers & b.triggers):
        reasons.append("shares triggers: " + _few(shared))
    if a.about and a.about == b.about:
        reasons.append("proposed from the same session")
    elif shared := sorted(a.entities & b.entities):
        reasons.append("shares entities: " + _few([e.rsplit(":", 1)[-1].replace("_", " ") for e in shared]))
    return score, tuple(reasons)


def _few(names: Sequence[str]) -> str:
    return ", ".join(names[:3]) + ("…" if len(names) > 3 else "")


def alike(a: Text, b: Text) -> float:
    """The figure of :func:`compare` alone (clustering asks it of every candidate pair)."""
    if a.fp >= 0 and a.fp == b.fp:
        score = 1.0
    elif a.norm and a.norm == b.norm:
        score = 0.99 if a.title.strip().lower() == b.title.strip().lower() else 0.97
    else:
        score = title_similarity(a.norm, b.norm)
    if a.triggers and b.triggers and (shared := len(a.triggers & b.triggers)):
        score += (1.0 - score) * 0.3 * shared / len(a.triggers | b.triggers)
    return round(score, 3)


def _triggers(values: Iterable[object], repeats: Repeats) -> frozenset[str]:
    """The triggers as compared, as the one equal set read before if any (``repeats``)."""
    return repeats(frozenset(shared(str(t).strip().lower()) for t in values if str(t).strip()))


@dataclass(slots=True)
class PendingText:
    id: int
    text: Text
    dura_avg: float


def pending_texts(store: Store, known: Mapping[int, PendingText] | None = None) -> list[PendingText]:
    """Every pending promotion as it compares (bodies only fingerprinted, never kept). Those of ``known`` whose
    id and title are the same are taken as they are: a decision after another reads only what is new (a pending
    proposal is not rewritten, and an id reused after memoryd's rebuild-index comes with another title)."""
    known = known or {}
    pending = tuples(
        Promotion.select(Promotion.id, Promotion.proposed_title).where(Promotion.status.in_(OPEN_STATUSES))
    )
    kept, wanted = {}, []
    for pid, title in pending:
        same = known.get(pid)
        if same is not None and same.text.title == (title or ""):
            kept[pid] = same
        else:
            wanted.append(pid)
    columns = (
        Promotion.id,
        Promotion.proposed_title,
        Promotion.proposed_body,
        Promotion.scope_hash,
        Promotion.proposed_triggers,
        Promotion.dura_score,
        Promotion.source_session_slug,
    )
    repeats = Repeats()
    for batch in chunked(wanted, 500):
        for pid, title, body, scope, triggers, dura, session in tuples(
            Promotion.select(*columns).where(Promotion.id.in_(batch), Promotion.status.in_(OPEN_STATUSES))
        ):
            title = shared(title or "")  # the queue's item holds the same string
            fp = _fp_key(body_fingerprint(body or ""))
            about = shared(session or "")
            norm = shared(normalised(title))
            text = Text(title, norm, fp, shared(scope), _triggers(parse_json_list(triggers), repeats), about)
            kept[pid] = PendingText(pid, text, dura_average(dura_scores(dura)))
    return [kept[pid] for pid in sorted(kept)]


def _memory_entries(after: int = 0) -> Iterable[tuple[int, str, int, str]]:
    """The long-term memories (sessions are what promotions come from, not what they repeat) past rowid
    ``after``, as a :class:`Block` takes them."""
    cursor = Memory._meta.database.execute_sql(
        f"SELECT rowid, title, fingerprint, scope_hash FROM {table_of(Memory)} WHERE type != 'session' AND rowid > ?",
        (after,),
    )
    for rowid, title, fingerprint, scope in cursor:
        yield rowid, normalised(title or ""), _fp_key(fingerprint or ""), scope


def _mentions(slugs: Iterable[str]) -> dict[str, frozenset[str]]:
    """The entities each of ``slugs`` mentions (active ``memory:<slug> mentions <entity>`` relations): one
    indexed look-up for the handful a detail shows."""
    subjects = [f"memory:{slug}" for slug in slugs if slug]
    found: dict[str, set[str]] = {}
    for batch in chunked(subjects, 500):
        for subject, entity in tuples(
            Relation.select(Relation.subject_id, Relation.object_id).where(
                Relation.subject_id.in_(batch),
                Relation.predicate == "mentions",
                Relation.object_kind == "entity",
                Relation.superseded_at.is_null(),
            )
        ):
            found.setdefault(subject.removeprefix("memory:"), set()).add(entity)
    return {slug: frozenset(entities) for slug, entities in found.items()}


def _memory_signature() -> tuple[int, int]:
    """How many long-term memories there are and their highest rowid: what says a block is behind."""
    count, highest = Memory._meta.database.execute_sql(
        f"SELECT count(*), coalesce(max(rowid), 0) FROM {table_of(Memory)} WHERE type != 'session'"
    ).fetchone()
    return int(count), int(highest)


@dataclass(frozen=True)
class Similarity:
    """The blocks of one root: its memories (a main block, and a small one of those added since) and its pending
    promotions. Made in a worker (:meth:`build`), never changed after."""

    memories: Block
    added: Block
    pending: list[PendingText]
    pending_block: Block
    by_id: dict[int, PendingText]

    @classmethod
    def build(cls, store: Store, previous: Similarity | None = None) -> Similarity:
        """The blocks of ``store`` now. With ``previous``, only what changed since is read: memories added since
        its main block (a block of their own, folded into the main one past :data:`REBUILD_PAST`, or when rows
        went) and the pending promotions (a few thousand). ``previous`` is left as it was: a worker makes the
        new one while the console still asks the old."""
        count, highest = _memory_signature()
        memories, added = (previous.memories, previous.added) if previous else (Block(()), Block(()))
        if previous is None or count < memories.size or highest < memories.max_key:
            memories, added = Block(_memory_entries()), Block(())
        elif highest > max(memories.max_key, added.max_key):
            added = Block(_memory_entries(memories.max_key))
            if added.size > REBUILD_PAST:
                memories, added = Block(_memory_entries()), Block(())
        pending = pending_texts(store, previous.by_id if previous else None)
        block = Block((p.id, p.text.norm, p.text.fp, p.text.scope_hash) for p in pending)
        return cls(memories, added, pending, block, {p.id: p for p in pending})

    def similar(self, promotion_id: int, limit: int = 5) -> tuple[list[Similar], list[Similar]]:
        """The memories and the other pending promotions closest to the pending ``promotion_id``, each list the
        same scope first, then the most similar."""
        mine = self.by_id.get(promotion_id)
        if mine is None:
            return [], []
        memories = self._memories_near(mine.text)
        pending = [(str(other.id), other.text) for other in self._pending_near(mine)]
        mentions = _mentions({mine.text.about, *(t.about for _, t in memories), *(t.about for _, t in pending)})

        def found(kind: str, key: str, other: Text) -> Similar:
            with_entities = replace(other, entities=mentions.get(other.about, frozenset()))
            mentioned = replace(mine.text, entities=mentions.get(mine.text.about, frozenset()))
            return Similar(kind, key, other.title, other.scope_hash, *compare(mentioned, with_entities))

        scope = mine.text.scope_hash
        return (
            _ranked([found("memory", key, t) for key, t in memories], scope, limit),
            _ranked([found("promotion", key, t) for key, t in pending], scope, limit),
        )

    def _pending_near(self, mine: PendingText) -> list[PendingText]:
        block = self.pending_block
        return [self.pending[p] for p in block.candidates(mine.text) if int(block.keys[p]) != mine.id]

    def _memories_near(self, text: Text) -> list[tuple[str, Text]]:
        """Candidates of both memory blocks as they are in index.db now (a row gone since is left out), by slug,
        with their triggers."""
        rowids = [int(block.keys[p]) for block in (self.memories, self.added) for p in block.candidates(text)]
        found = []
        for rows in chunked(rowids, 500):
            found.extend(
                Memory._meta.database.execute_sql(
                    f"SELECT slug, title, fingerprint, scope_hash FROM {table_of(Memory)} "
                    f"WHERE rowid IN ({','.join('?' * len(rows))})",
                    rows,
                ).fetchall()
            )
        triggers: dict[str, set[str]] = {}
        for batch in chunked([slug for slug, *_ in found], 500):
            for slug, trigger in tuples(Trigger.select(Trigger.slug, Trigger.trigger).where(Trigger.slug.in_(batch))):
                triggers.setdefault(slug, set()).add(str(trigger).strip().lower())
        return [
            (slug, Text(title, normalised(title), _fp_key(fingerprint), scope, frozenset(triggers.get(slug, ())), slug))
            for slug, title, fingerprint, scope in found
        ]

    def _known_best(self, text: Text) -> tuple[Block, int, float] | None:
        """The memory of ``text``'s scope most like it, from the blocks alone (no row read): for clustering, which
        asks it of every pending promotion."""
        for block in (self.memories, self.added):  # the same body or title in its scope: nothing closer to look for
            for p in block.same(text):
                if (other := block.text(p)).scope_hash == text.scope_hash:
                    return block, p, alike(text, other)
        best = None
        for block in (self.memories, self.added):
            for p in block.candidates(text):
                other = block.text(p)
                if other.scope_hash == text.scope_hash:
                    score = alike(text, other)
                    if best is None or score > best[2]:
                        best = (block, p, score)
        return best

    def clusters(self) -> Clusters:
        """Pending promotions grouped into clusters of near-duplicates within one scope, and those repeating a
        memory of their scope."""
        parent = {p.id: p.id for p in self.pending}

        def root(pid: int) -> int:
            while parent[pid] != pid:
                parent[pid] = parent[parent[pid]]
                pid = parent[pid]
            return pid

        known: dict[int, int] = {}
        for mine in self.pending:
            for other in self._pending_near(mine):
                if (
                    other.text.scope_hash == mine.text.scope_hash
                    and root(other.id) != root(mine.id)
                    and alike(mine.text, other.text) >= CLUSTER_AT
                ):
                    parent[root(other.id)] = root(mine.id)
            best = self._known_best(mine.text)
            if best is not None and best[2] >= DUPLICATE_AT:
                known[mine.id] = int(best[0].keys[best[1]])
        groups: dict[int, list[PendingText]] = {}
        for p in self.pending:
            groups.setdefault(root(p.id), []).append(p)
        members = [
            [p.id for p in sorted(group, key=lambda p: (-p.dura_avg, p.id))]
            for group in groups.values()
            if len(group) > 1
        ]
        members.sort(key=lambda c: (-len(c), c[0]))
        return Clusters(members, set(known))


@dataclass(frozen=True)
class Clusters:
    """Clusters of near-duplicate pending promotions (two or more each, the best first: the highest DURA average,
    then the oldest; the largest cluster first), and the pending promotions that repeat a memory of their scope."""

    members: list[list[int]]
    repeats_memory: set[int]

    @cached_property
    def _cluster_of(self) -> dict[int, list[int]]:
        return {pid: members for members in self.members for pid in members}

    def of(self, promotion_id: int) -> list[int]:
        """The cluster holding ``promotion_id`` (empty when it is in none)."""
        return self._cluster_of.get(promotion_id, [])

    def kinds(self, promotion_id: int) -> list[str]:
        """What the queue's ``dup:`` filter matches for the promotion: ``cluster``, ``known``, ``yes`` for
        either, else ``no``."""
        kinds = (["cluster"] if self.of(promotion_id) else []) + (
            ["known"] if promotion_id in self.repeats_memory else []
        )
        return ["yes", *kinds] if kinds else ["no"]


def _ranked(found: Sequence[Similar], scope: str, limit: int) -> list[Similar]:
    shown = [s for s in found if s.score >= SHOWN_FROM]
    return sorted(shown, key=lambda s: (s.scope_hash != scope, -s.score))[:limit]


def cluster_order(ids: Sequence[int], clusters: Clusters) -> list[int]:
    """``ids`` (a queue's order) with each cluster's members together, best first, the clusters first (largest
    first), then the rest in their order."""
    present = set(ids)
    grouped = [pid for members in clusters.members for pid in members if pid in present]
    placed = set(grouped)
    return grouped + [pid for pid in ids if pid not in placed]
