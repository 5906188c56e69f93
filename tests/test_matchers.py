"""Every in-memory matcher of the search is a :class:`Matcher` and answers exactly what a plain substring test
answers: the same memories, for any needle (property test over generated heads and bodies)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engram.store.search.arrays import Heads, Matcher, MemoryTrigrams, Words, body_term
from engram.store.search.rows import Strings

ALPHABET = st.sampled_from(list("abc xyz灰度部署-_"))
TEXTS = st.lists(st.text(ALPHABET, min_size=0, max_size=30), min_size=1, max_size=25)


def heads_of(texts: list[str]) -> Strings:
    return Strings.of([f"{text}\0" for text in texts])  # as the search index keeps heads: each ends in a NUL


def test_every_matcher_is_one():
    texts = ["roll back the deploy", "kafka lag"]
    bodies = dict(enumerate(texts))
    for matcher in (Words(heads_of(texts)), Heads(heads_of(texts)), MemoryTrigrams(bodies)):
        assert isinstance(matcher, Matcher)
        assert set(matcher.rows("lag").tolist()) == {1}


@settings(max_examples=150, deadline=None)
@given(texts=TEXTS, needle=st.text(ALPHABET, min_size=1, max_size=5))
def test_the_head_matchers_answer_a_substring_test(texts, needle):
    expected = {n for n, text in enumerate(texts) if needle in text}
    assert set(Words(heads_of(texts)).rows(needle).tolist()) == expected
    assert set(Heads(heads_of(texts)).rows(needle).tolist()) == expected


@settings(max_examples=150, deadline=None)
@given(texts=TEXTS, needle=st.text(ALPHABET.filter(lambda ch: ch != " "), min_size=2, max_size=5))
def test_the_body_matcher_answers_a_substring_test(texts, needle):
    assume(body_term(needle))  # two letters are looked for in heads only: the body matcher is never asked
    expected = {n for n, text in enumerate(texts) if needle in text}
    assert set(MemoryTrigrams(dict(enumerate(texts))).rows(needle).tolist()) == expected
