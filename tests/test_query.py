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
    ('"Two  Words" x', Query(((Term("two  words", "exact"),), (Term("x"),)))),
    ("-not", Query(((Term("not", negate=True),),))),
    ('-"a b"', Query(((Term("a b", "exact", True),),))),
    ("-type:session", Query(((Term("session", "prefix", True, "type"),),))),
    ("x-y -", Query(((Term("x-y"),), (Term("-"),)))),
]

QUEUE_PARSES = [
    ("dura:>0.7", Term("0.7", ">", False, "dura")),
    ("dura:<=0.5", Term("0.5", "<=", False, "dura")),
    ("age:>7d", Term("7", ">", False, "age")),
    ("!age:3", Term("3", "=", True, "age")),
]


@pytest.mark.parametrize("text, term", QUEUE_PARSES)
def test_the_queue_compares_dura_and_age(text, term):
    assert parse(text, numeric=True) == Query(((term,),))
    with pytest.raises(QuerySyntaxError, match="unknown field"):
        parse(text)  # memories have no DURA or age field


@pytest.mark.parametrize(
    "text, fields, hit",
    [
        ("dura:>0.7", {"dura": ["0.75"]}, True),
        ("dura:>0.7", {"dura": ["0.7"]}, False),
        ("dura:>=0.7 age:<30", {"dura": ["0.7"], "age": ["12"]}, True),
        ("!age:>7", {"age": ["12"]}, False),
        ("dura:>0.5", {}, False),
    ],
)
def test_numeric_fields_compare(text, fields, hit):
    assert matches(parse(text, numeric=True), "", fields) == hit


def test_a_comparison_that_is_no_number_is_refused():
    with pytest.raises(QuerySyntaxError, match="takes a number"):
        parse("dura:high", numeric=True)


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
