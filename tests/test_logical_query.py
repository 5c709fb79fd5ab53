from __future__ import annotations

import itertools

import pytest

from chatbot.logical.query import (
    And,
    Not,
    Or,
    QuerySyntaxError,
    Term,
    count_negations,
    negative_terms,
    parse,
    polarities,
    positive_part,
    positive_terms,
    terms,
    to_string,
    tokenize,
)

A, B, C, D = Term("a"), Term("b"), Term("c"), Term("d")


# -- precedence: NOT > AND > OR, parentheses override ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ('"a"', A),
        ('"a" AND "b"', And((A, B))),
        ('"a" OR "b"', Or((A, B))),
        ('NOT "a"', Not(A)),
        ('"a" AND "b" AND "c"', And((A, B, C))),
        ('"a" OR "b" AND "c"', Or((A, And((B, C))))),
        ('"a" AND "b" OR "c"', Or((And((A, B)), C))),
        ('"a" AND NOT "b"', And((A, Not(B)))),
        ('NOT "a" AND "b"', And((Not(A), B))),
        ('NOT "a" OR "b"', Or((Not(A), B))),
        ('"a" OR NOT "b" AND "c"', Or((A, And((Not(B), C))))),
        ('("a" OR "b") AND "c"', And((Or((A, B)), C))),
        ('NOT ("a" AND "b")', Not(And((A, B)))),
        ('NOT NOT "a"', Not(Not(A))),
        ('"a" AND ("b" AND "c")', And((A, And((B, C))))),
        ('("a" AND "b") AND "c"', And((And((A, B)), C))),
        ('(("a"))', A),
        ('"a" and not "b" or "c"', Or((And((A, Not(B))), C))),
        ('("a" OR "b") AND NOT ("c" OR "d")', And((Or((A, B)), Not(Or((C, D)))))),
        ('"a" AND "b" OR "c" AND NOT "d"', Or((And((A, B)), And((C, Not(D)))))),
    ],
)
def test_parse_builds_the_exact_tree(text, tree):
    assert parse(text) == tree


def test_terms_keep_inner_text_and_normalise_whitespace():
    assert parse('"  benefits of   vitamin D "') == Term("benefits of vitamin D")
    assert parse(r'"say \"hi\" \\ bye"') == Term('say "hi" \\ bye')
    assert parse("“vitamin D” AND NOT “bone health”") == And((Term("vitamin D"), Not(Term("bone health"))))
    assert parse('"AND" OR "NOT"') == Or((Term("AND"), Term("NOT")))


def test_tokenize_positions():
    assert [(t.kind, t.position) for t in tokenize('("a" AND NOT "bc") OR "d"')] == [
        ("LPAREN", 0),
        ("TERM", 1),
        ("AND", 5),
        ("NOT", 9),
        ("TERM", 13),
        ("RPAREN", 17),
        ("OR", 19),
        ("TERM", 22),
        ("EOF", 25),
    ]


# -- errors point at the problem ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        ("", 0, "empty query"),
        ("   ", 3, "empty query"),
        ('"a" AND', 7, "expected a quoted term, '(' or NOT, found the end of the query"),
        ('"a" AND OR "b"', 8, "expected a quoted term, '(' or NOT, found OR"),
        ('"a" "b"', 4, "expected AND, OR or the end of the query, found term 'b'"),
        ('("a" AND "b"', 0, "'(' is never closed"),
        ('"a" AND ("b" "c")', 13, "expected ')', AND or OR, found term 'c'"),
        ('"a")', 3, "unmatched ')'"),
        ("()", 1, "empty parentheses"),
        ('"a" AND "b', 8, "unterminated term (missing closing quote)"),
        ('"a" AND ""', 8, "empty term"),
        ('"a" AND "  "', 8, "empty term"),
        ('"a" AND b', 8, "unquoted text 'b' (terms must be in double quotes; operators are AND, OR, NOT)"),
        ('"a" & "b"', 4, "unexpected character '&'"),
        ("NOT", 3, "expected a quoted term, '(' or NOT, found the end of the query"),
        ('"a" OR NOT', 10, "expected a quoted term, '(' or NOT, found the end of the query"),
    ],
)
def test_syntax_errors_carry_position_and_reason(text, position, reason):
    with pytest.raises(QuerySyntaxError) as info:
        parse(text)
    assert info.value.position == position
    assert info.value.reason == reason


def test_error_message_has_a_caret_under_the_problem():
    with pytest.raises(QuerySyntaxError) as info:
        parse('"a" AND OR "b"')
    assert str(info.value) == (
        "expected a quoted term, '(' or NOT, found OR at position 8\n" + '"a" AND OR "b"\n' + "        ^"
    )
    assert isinstance(info.value, ValueError)


# -- printer: canonical, minimal parentheses, round trip --------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (And((A, Not(B))), '"a" AND NOT "b"'),
        (Or((A, And((B, C)))), '"a" OR "b" AND "c"'),
        (And((Or((A, B)), C)), '("a" OR "b") AND "c"'),
        (Not(And((A, B))), 'NOT ("a" AND "b")'),
        (Not(Not(A)), 'NOT NOT "a"'),
        (And((A, And((B, C)))), '"a" AND ("b" AND "c")'),
        (Or((Or((A, B)), C)), '("a" OR "b") OR "c"'),
        (Term('say "hi"'), r'"say \"hi\""'),
        (Term("back\\slash"), r'"back\\slash"'),
    ],
)
def test_printer_writes_only_needed_parentheses(tree, text):
    assert to_string(tree) == text
    assert parse(text) == tree


def _trees(depth: int):
    """Every tree over two terms up to ``depth`` (binary and ternary AND/OR, NOT)."""
    if depth == 0:
        yield from (A, B)
        return
    smaller = list(_trees(depth - 1))
    yield from smaller
    for t in smaller:
        yield Not(t)
    for x, y in itertools.product(smaller, repeat=2):
        yield And((x, y))
        yield Or((x, y))
    for x, y, z in itertools.islice(itertools.product(smaller, repeat=3), 200):
        yield And((x, y, z))
        yield Or((x, y, z))


def test_round_trip_on_every_small_tree():
    seen = 0
    for tree in _trees(2):
        assert parse(to_string(tree)) == tree, to_string(tree)
        seen += 1
    assert seen > 1000


def test_parse_print_parse_is_stable_for_written_queries():
    for text in ['"a" OR "b" AND NOT ("c" OR NOT "d")', '(("a"))', 'not "a" and "b"']:
        tree = parse(text)
        assert parse(to_string(tree)) == tree
        assert to_string(parse(to_string(tree))) == to_string(tree)


# -- tree helpers --------------------------------------------------------------------------------------------


def test_term_and_node_validation():
    with pytest.raises(ValueError):
        Term("   ")
    with pytest.raises(ValueError):
        And((A,))
    with pytest.raises(ValueError):
        Or(())
    assert And([A, B]) == And((A, B))  # lists are frozen into tuples
    assert hash(And((A, Not(B)))) == hash(And((A, Not(B))))


def test_terms_polarity_and_positive_part():
    tree = parse('("a" OR "b") AND NOT "c" AND NOT NOT "d" AND NOT ("a" AND "e")')
    assert terms(tree) == ["a", "b", "c", "d", "e"]
    assert polarities(tree) == {"a": {True, False}, "b": {True}, "c": {False}, "d": {True}, "e": {False}}
    assert positive_terms(tree) == ["a", "b", "d"]
    assert negative_terms(tree) == ["c", "e"]
    assert count_negations(tree) == 4
    assert positive_part(parse('"a" AND NOT "b"')) == A
    assert positive_part(parse('("a" OR "b") AND NOT "c"')) == Or((A, B))
    assert positive_part(parse('"a" OR NOT "b"')) == A
    assert positive_part(parse('NOT "a"')) is None
