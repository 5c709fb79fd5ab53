from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from chatbot.logical.compose import (
    Calibration,
    Operators,
    compose,
    exact_probability,
    fit_calibration,
    fit_from_beir,
    is_read_once,
    load_calibrations,
    probability,
    probability_read_once,
    save_calibration,
    truth_table,
)
from chatbot.logical.query import Node, parse

# Three candidates; hand-made scores.
S = {"a": np.array([0.8, 0.5, 0.2]), "b": np.array([0.4, 0.5, 0.9]), "c": np.array([0.1, 0.6, 0.25])}


def ops(and_="product", or_="sum", not_="one_minus") -> Operators:
    return Operators(and_, or_, not_)


# -- each operator on hand-made scores --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operators", "query", "expected"),
    [
        (ops(), '"a" AND "b"', [0.32, 0.25, 0.18]),
        (ops(and_="sum"), '"a" AND "b"', [1.2, 1.0, 1.1]),
        (ops(and_="min"), '"a" AND "b"', [0.4, 0.5, 0.2]),
        (ops(), '"a" OR "b"', [1.2, 1.0, 1.1]),
        (ops(or_="max"), '"a" OR "b"', [0.8, 0.5, 0.9]),
        (ops(), 'NOT "a"', [0.2, 0.5, 0.8]),
        (ops(not_="inverse"), 'NOT "a"', [1.25, 2.0, 5.0]),
        (ops(), '"a" AND "b" AND "c"', [0.032, 0.15, 0.045]),
        (ops(), '"a" AND NOT "c"', [0.72, 0.2, 0.15]),
        (ops(not_="inverse"), '"a" AND NOT "c"', [8.0, 0.5 / 0.6, 0.8]),
        (ops(and_="min", or_="max"), '("a" OR "b") AND NOT "c"', [0.8, 0.4, 0.75]),
        (ops(), '("a" OR "b") AND NOT "c"', [1.08, 0.4, 0.825]),
        (ops(), '"a" OR "b" AND "c"', [0.84, 0.8, 0.425]),
        (ops(), 'NOT NOT "a"', [0.8, 0.5, 0.2]),
    ],
)
def test_operators_give_exact_values(operators, query, expected):
    np.testing.assert_allclose(compose(parse(query), S, operators), expected, rtol=1e-12)


def test_defaults_are_product_sum_one_minus_and_aliases_work():
    assert Operators() == Operators("product", "sum", "one_minus")
    assert Operators("x*y", "x+y", "1-x") == Operators()
    assert Operators.parse("min,max,1/x") == Operators("min", "max", "inverse")
    assert Operators.parse("x+y, x+y, 1-x").label() == "sum,sum,one_minus"
    with pytest.raises(ValueError):
        Operators("max")  # not an AND operator
    with pytest.raises(ValueError):
        Operators.parse("product,sum")


def test_inverse_not_is_floored_for_non_positive_cosines():
    out = compose(parse('NOT "a"'), {"a": np.array([0.0, -0.3, 0.5])}, Operators(not_="inverse", inverse_floor=0.01))
    np.testing.assert_allclose(out, [100.0, 100.0, 2.0])


def test_compose_needs_every_term_and_equal_shapes():
    with pytest.raises(KeyError):
        compose(parse('"a" AND "z"'), S)
    with pytest.raises(ValueError):
        compose(parse('"a" AND "b"'), {"a": np.ones(3), "b": np.ones(2)})


def test_repeated_term_in_fuzzy_mode_is_just_reused():
    np.testing.assert_allclose(compose(parse('"a" AND NOT "a"'), S), S["a"] * (1 - S["a"]))


# -- calibration ------------------------------------------------------------------------------------------------


def test_calibration_is_a_shifted_scaled_sigmoid():
    cal = Calibration(tau=0.5, lam=10.0)
    np.testing.assert_allclose(cal([0.5, 0.6, 0.4]), [0.5, 1 / (1 + np.exp(-1)), 1 / (1 + np.exp(1))])


def test_fit_calibration_recovers_known_parameters():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 20000)
    y = (rng.uniform(0, 1, s.size) < 1 / (1 + np.exp(-(s - 0.4) * 12))).astype(int)
    cal = fit_calibration(s, y, l2=0.0)
    assert cal.tau == pytest.approx(0.4, abs=0.02)
    assert cal.lam == pytest.approx(12.0, rel=0.1)
    assert cal.pairs == 20000


def test_fit_calibration_on_separable_data_stays_finite():
    cal = fit_calibration([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 0, 1, 1, 1])
    assert 0.3 < cal.tau < 0.7
    assert np.isfinite(cal.lam) and cal.lam > 0
    with pytest.raises(ValueError):
        fit_calibration([0.1, 0.2], [1, 1])


def test_calibrations_are_stored_per_model(tmp_path):
    path = tmp_path / "cal.json"
    assert load_calibrations(path) == {}
    save_calibration(Calibration(0.3, 8.0, model="m1", fitted_on="x", pairs=5), path)
    save_calibration(Calibration(0.4, 9.0, model="m2"), path)
    save_calibration(Calibration(0.35, 7.0, model="m1"), path)
    loaded = load_calibrations(path)
    assert loaded == {"m1": Calibration(0.35, 7.0, model="m1"), "m2": Calibration(0.4, 9.0, model="m2")}


def test_fit_from_a_beir_folder_with_any_embedder(tmp_path):
    """Keyword-axis vectors: relevant documents share the query's axis."""
    words = ["asthma", "diabetes", "fever", "sleep", "skin", "heart"]

    def vec(text: str) -> np.ndarray:
        v = np.array([text.count(w) for w in words], dtype=float) + 0.05
        return v / np.linalg.norm(v)

    def embed(texts):
        return np.vstack([vec(t) for t in texts])

    corpus = [{"_id": f"d{i}", "title": "", "text": f"{w} {w} text"} for i, w in enumerate(words)]
    queries = [{"_id": f"q{i}", "text": f"about {w}"} for i, w in enumerate(words)]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(6)))
    cal = fit_from_beir(tmp_path, embed, embed, model="kw", hard_negatives=2, random_negatives=2)
    assert cal.model == "kw" and cal.fitted_on == tmp_path.name
    assert cal.pairs == 6 * 5
    assert cal(0.99) > 0.9 and cal(0.1) < 0.1


# -- probabilistic mode: exact, against brute-force enumeration --------------------------------------------------


def brute_force(query: Node, probs: dict[str, float]) -> float:
    """Σ over all truth assignments of the distinct terms where the expression holds, ∏ p or (1 − p)."""
    names = sorted(probs)

    def holds(node, world):
        from chatbot.logical.query import And, Not, Or, Term

        if isinstance(node, Term):
            return world[node.text]
        if isinstance(node, Not):
            return not holds(node.child, world)
        if isinstance(node, And):
            return all(holds(c, world) for c in node.children)
        assert isinstance(node, Or)
        return any(holds(c, world) for c in node.children)

    total = 0.0
    for values in itertools.product([False, True], repeat=len(names)):
        world = dict(zip(names, values, strict=True))
        if holds(query, world):
            weight = 1.0
            for n in names:
                weight *= probs[n] if world[n] else 1 - probs[n]
            total += weight
    return total


QUERIES = [
    '"a"',
    '"a" AND NOT "b"',
    '"a" OR "b"',
    '("a" OR "b") AND NOT "c"',
    '"a" AND NOT "a"',
    '"a" OR "a"',
    '"a" OR NOT "a"',
    '("a" AND "b") OR ("a" AND "c")',
    '("a" OR "b") AND ("a" OR "c") AND NOT ("b" AND "c")',
    'NOT ("a" AND NOT ("b" OR "a")) AND "c"',
]


@pytest.mark.parametrize("query", QUERIES)
def test_probability_matches_brute_force_enumeration(query):
    rng = np.random.default_rng(len(query))
    tree = parse(query)
    probs = {t: rng.uniform(0, 1, 7) for t in "abc"}
    got = probability(tree, probs)
    for i in range(7):
        assert got[i] == pytest.approx(brute_force(tree, {t: float(v[i]) for t, v in probs.items()}), abs=1e-12)
    np.testing.assert_allclose(exact_probability(tree, probs), got, atol=1e-12)


def test_repeated_terms_are_one_variable_not_independent_copies():
    p = {"a": np.array([0.3, 0.9]), "b": np.array([0.5, 0.5])}
    np.testing.assert_allclose(probability(parse('"a" AND NOT "a"'), p), [0.0, 0.0])
    np.testing.assert_allclose(probability(parse('"a" OR "a"'), p), [0.3, 0.9])
    np.testing.assert_allclose(probability(parse('"a" AND "a"'), p), [0.3, 0.9])
    # (a∧b) ∨ (a∧¬b) = a exactly; the independence shortcut would give 1 − (1 − ab)(1 − a(1 − b)).
    np.testing.assert_allclose(probability(parse('("a" AND "b") OR ("a" AND NOT "b")'), p), [0.3, 0.9])
    assert not is_read_once(parse('"a" OR "a"'))
    with pytest.raises(ValueError):
        probability_read_once(parse('"a" OR "a"'), p)


def test_read_once_factorisation_equals_enumeration():
    rng = np.random.default_rng(3)
    probs = {t: rng.uniform(0, 1, 5) for t in "abcd"}
    for q in ['"a" AND NOT "b"', '("a" OR "b") AND NOT ("c" OR "d")', '"a" OR "b" AND NOT "c" OR NOT "d"']:
        tree = parse(q)
        assert is_read_once(tree)
        np.testing.assert_allclose(probability_read_once(tree, probs), probability(tree, probs), atol=1e-12)


def test_truth_table_enumerates_distinct_terms_only():
    names, assignments, holds = truth_table(parse('"a" AND NOT "b" OR "a"'))
    assert names == ["a", "b"]
    assert assignments.shape == (4, 2)
    assert holds.tolist() == [bool(row[0]) for row in assignments]  # the expression is just "a"


def test_probabilities_are_clipped_to_the_unit_interval():
    np.testing.assert_allclose(probability(parse('NOT "a"'), {"a": np.array([-0.5, 1.5])}), [1.0, 0.0])
