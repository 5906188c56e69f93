"""Memory files: byte-exact round trips of memoryd's files, unknown keys kept, bad files reported."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
import yaml
from helpers import yaml_text
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.domain import MemoryType
from engram.store.drift.scan import FileEntry, walk
from engram.store.errors import BadMemoryFile
from engram.store.frontmatter import Frontmatter, MemoryDoc, dump_yaml, parse, serialize


def memoryd_body(data: bytes) -> str:
    """memoryd's ``SessionMemory.from_markdown``: split at the fences, ``body.lstrip("\\n")``."""
    return data.decode().split("---\n", 2)[2].lstrip("\n")


def all_fixture_files(store):
    return [e for e in walk(store.layout) if isinstance(e, FileEntry)]


def test_every_fixture_file_round_trips_byte_for_byte(store):
    entries = all_fixture_files(store)
    assert len(entries) == 200 and sum(e.encrypted for e in entries) == 38
    for entry in entries:
        plain = store.read_bytes(entry.relpath)
        assert serialize(parse(plain, entry.relpath)) == plain, entry.relpath


def test_fingerprint_matches_memoryd_index(store):
    from engram.store.models import Memory

    for row in Memory.select():
        doc = store.read_doc(row.body_path)
        assert doc.fingerprint == row.fingerprint, row.body_path


def test_naive_and_aware_datetimes_keep_their_form(store):
    from engram.store.models import Memory

    naive = Memory.get(Memory.slug == "2026-04-03-0ad3f2d6-c878-4ae0-a32e-f1eac3693486")
    doc = store.read_doc(naive.body_path)
    assert doc.frontmatter.created_at.tzinfo is None
    assert b"created_at: '2026-04-03T07:00:06.886648'\n" in serialize(doc)


def test_unknown_keys_survive_a_resave():
    text = (
        "---\ntitle: T\nslug: s-1\ntype: fact\nscope_hash: abcdefabcdef\nsource: manual\n"
        "created_at: '2026-01-01T00:00:00Z'\nreviewed_by: ada\nx_extra:\n- 1\n- 2\n---\n\nbody\n"
    )
    doc = parse(text.encode(), "x.md")
    doc2 = MemoryDoc(frontmatter=doc.frontmatter.replace(title="T2"), body=doc.body)
    out = serialize(doc2).decode()
    assert "reviewed_by: ada\nx_extra:\n- 1\n- 2\n---" in out
    assert out.startswith("---\ntitle: T2\n")


def test_defaults_are_omitted_as_memoryd_does():
    fm = Frontmatter(
        title="t",
        slug="s",
        type=MemoryType.FACT,
        scope_hash="abcdefabcdef",
        source="manual",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    assert serialize(MemoryDoc(frontmatter=fm, body="b")) == (
        b"---\ntitle: t\nslug: s\ntype: fact\nscope_hash: abcdefabcdef\nsource: manual\n"
        b"created_at: '2026-01-02T03:04:05Z'\n---\n\nb"
    )


GOOD = (
    "---\ntitle: t\nslug: s\ntype: fact\nscope_hash: abcdefabcdef\nsource: m\n"
    "created_at: '2026-01-01T00:00:00Z'\n---\n\nb"
)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"just text", "no frontmatter"),
        (b"---\ntitle: [unclosed\n---\n\nb", "broken YAML"),
        (GOOD.replace("type: fact", "type: insight").encode(), "bad frontmatter field type"),
        (GOOD.replace("slug: s", "slug: ../../etc/passwd").encode(), "bad frontmatter field slug"),
        (GOOD.encode() + b"\xff\xfe", "invalid UTF-8"),
        (GOOD.replace("\n", "\r\n").encode(), "CRLF"),
        (b"---\n- a\n- b\n---\n\nb", "not a YAML mapping"),
        (b"---\ntitle: t\n", "not closed"),
    ],
)
def test_bad_files_are_reported_with_reason(data, reason):
    with pytest.raises(BadMemoryFile) as err:
        parse(data, "scopes/x/facts/s.md")
    assert reason in err.value.reason and err.value.path == "scopes/x/facts/s.md"


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x85\u2028\u2029"), max_size=60)


@settings(max_examples=150, deadline=None)
@given(
    title=text.filter(lambda s: s.strip()),
    body=text,
    triggers=st.lists(text, max_size=4),
    ttl=st.none() | st.integers(1, 400),
    recalls=st.integers(0, 50),
    extra=st.dictionaries(st.from_regex(r"x_[a-z]{1,8}", fullmatch=True), st.integers() | text, max_size=3),
)
def test_serialize_parse_is_identity(title, body, triggers, ttl, recalls, extra):
    fm = Frontmatter(
        title=title,
        slug="p-1",
        type=MemoryType.DECISION,
        scope_hash="0123456789ab",
        source="manual",
        created_at=datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC),
        triggers=triggers,
        ttl_days=ttl,
        recall_count=recalls,
        **extra,
    )
    doc = MemoryDoc(frontmatter=fm, body=body)
    data = serialize(doc)
    again = parse(data, "p.md")
    assert again.frontmatter == doc.frontmatter and again.lead + again.body == body
    assert again.body == memoryd_body(data)  # the body memoryd reads, blank lines before the text dropped
    assert again.fingerprint == hashlib.sha1(memoryd_body(data)[:500].encode()).hexdigest()
    assert serialize(again) == data
    # memoryd's reader sees the same frontmatter through plain yaml
    header = data.decode().split("---\n")[1]
    assert yaml.safe_load(header)["title"] == title


# Strings in the characters where libyaml's emitter and PyYAML's part, and in YAML's syntax characters
_tricky = yaml_text(" :-#'\"[]{},&*!|>%@`?\\\n\t\x85\u2028\ufeff\xa0中🚀", max_size=200)
_values = st.recursive(
    _tricky | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_tricky, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_tricky, _values, max_size=6))
def test_the_fast_dump_writes_memoryds_bytes(mapping):
    """Frontmatter written through libyaml's emitter is byte for byte what memoryd's pure Python
    ``yaml.safe_dump`` writes: where the two would part, the pure Python one is used."""
    assert dump_yaml(mapping) == yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)


def test_a_body_starting_with_blank_lines_reads_as_memoryd_reads_it():
    fm = Frontmatter(
        title="T",
        slug="s-1",
        type=MemoryType.FACT,
        scope_hash="0123456789ab",
        source="manual",
        created_at=datetime(2026, 5, 1, 12, tzinfo=UTC),
    )
    data = serialize(MemoryDoc(frontmatter=fm, body="\n\nThe text.\n"))  # as a person's editor may leave it
    doc = parse(data, "s-1.md")
    assert doc.body == memoryd_body(data) == "The text.\n"
    assert serialize(doc) == data  # unchanged, it re-saves to the same bytes


def test_a_yaml_alias_bomb_is_refused_without_expanding_it():
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 10):  # 9^10 values once expanded
        levels.append(f"{chr(97 + n)}: &{chr(97 + n)} [" + ", ".join([f"*{chr(96 + n)}"] * 9) + "]")
    data = (
        "---\ntitle: t\nslug: s\ntype: fact\nscope_hash: 0123456789ab\nsource: manual\n"
        "created_at: '2026-01-01T00:00:00+00:00'\n" + "\n".join(levels) + "\n---\n\nbody\n"
    ).encode()
    with pytest.raises(BadMemoryFile, match="expands to more than"):
        parse(data, "bomb.md")


def test_a_shared_list_memoryd_could_anchor_still_parses():
    data = (
        b"---\ntitle: t\nslug: s\ntype: fact\nscope_hash: 0123456789ab\nsource: manual\n"
        b"created_at: '2026-01-01T00:00:00+00:00'\ntriggers: &t [deploy]\ntags: *t\n---\n\nbody\n"
    )
    assert parse(data, "ok.md").frontmatter.tags == ["deploy"]
