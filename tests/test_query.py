"""The query syntax, table-driven: what each form parses to, and what it matches."""

from __future__ import annotations

import pytest

from engram.store.query import Query, QuerySyntaxError, Term, matches, parse

PARSES = [
    ("", Query(())),
    ("kafka", Query(((Term("kafka"),),))),
    ("Kafka  lag", Query(((Term("kafka"),), (Term("lag"),)))),
    ("a | b c", Query(((Term("a"), Term("b")), (Term("c"),)))),
    ("'exact", Query(((Term("exact", "exact"),),))),
    ("^pre", Query(((Term("pre", "prefix"),),))),
    ("suf$", Query(((Term("suf", "suffix"),),))),
    ("^whole$", Query(((Term("whole", "equal"),),))),
    ("!not", Query(((Term("not", negate=True),),))),
    ("!^pre", Query(((Term("pre", "prefix", True),),))),
    ("!'ex", Query(((Term("ex", "exact", True),),))),
    ("type:fact", Query(((Term("fact", "prefix", False, "type"),),))),
    ("!scope:5727", Query(((Term("5727", "prefix", True, "scope"),),))),
    ("tag:Backend | tag:ops", Query(((Term("backend", "prefix", False, "tag"), Term("ops", "prefix", False, "tag")),))),
    (r"two\ words", Query(((Term("two words"),),))),
    ("数据 质量", Query(((Term("数据"),), (Term("质量"),)))),
]


@pytest.mark.parametrize("text, expected", PARSES)
def test_parse(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, error",
    [
        ("| a", "'|' needs"),
        ("a |", "'|' needs"),
        ("colour:red", "unknown field"),
        ("type:", "needs a value"),
        ("!", "empty term"),
        ("^$", "empty term"),
    ],
)
def test_parse_errors(text, error):
    with pytest.raises(QuerySyntaxError, match=error):
        parse(text)


HAY = "kafka consumer lag fixed in the 日志清洗 job 2026-11-02-demo-000001"
FIELDS = {
    "type": ["fact"],
    "scope": ["5727cb99a38b"],
    "tag": ["backend", "ops"],
    "state": ["dim"],
    "source": ["claude-code"],
}
MATCHES = [
    ("", True),
    ("kafka", True),
    ("KAFKA lag", True),
    ("kafka spark", False),
    ("spark | lag", True),
    ("'consumer lag", True),
    (r"'lag\ consumer", False),
    (r"'consumer\ lag", True),
    ("^cons", True),
    ("^onsumer", False),
    ("lag$", True),
    ("^kafka$", True),
    ("!spark", True),
    ("!kafka", False),
    ("日志", True),
    ("type:fa", True),
    ("type:session", False),
    ("!type:session", True),
    ("scope:5727", True),
    ("tag:ops", True),
    ("tag:front", False),
    ("state:dim", True),
    ("source:claude", True),
    ("type:fact !tag:ops", False),
    ("type:fact | type:warning kafka", True),
]


@pytest.mark.parametrize("text, expected", MATCHES)
def test_matches(text, expected):
    assert matches(parse(text), HAY.lower(), FIELDS) is expected
