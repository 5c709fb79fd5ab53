"""Leave-one-set-out comparison of relevance gates (evaluation.redteam.gate_cv) and the dev sets the gate fit
reads (evaluation.redteam.gate_fit.dev_rows), on hand-made data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.redteam.gate_cv import fit_spec, group_of, loso, markdown, predict, probability, report
from evaluation.redteam.gate_fit import dev_rows


def test_left_out_units_are_files_with_mediqa_and_the_exclusion_sets_joined():
    assert group_of({"source": "mediqa"}) == group_of({"source": "mediqa-it"}) == "mediqa-train"
    assert group_of({"source": "gate_dev_s8.jsonl"}) == "exclusions"
    assert group_of({"source": "exclusions/exclusions_cards_dev.jsonl"}) == "exclusions"
    assert group_of({"source": "replies/heldout-v3.jsonl"}) == "replies/heldout-v3.jsonl"
    assert group_of({"source": "relevance_test.jsonl"}) == "relevance_test.jsonl"


def test_dev_rows_hold_every_spent_set_and_the_reply_and_exclusion_questions_are_in_scope():
    rows = dev_rows()
    sources = {r["source"] for r in rows}
    for name in (
        "relevance_dev.jsonl",
        "gate_dev.jsonl",
        "gate_dev_s8.jsonl",
        "relevance_test.jsonl",
        "gate_heldout_v2.jsonl",
        "gate_heldout_v8.jsonl",
        "replies/replyset.jsonl",
        "replies/heldout-v9.jsonl",
        "replies/heldout-v3.jsonl",
        "exclusions/exclusions_cards_dev.jsonl",
        "exclusions/exclusions_cards_heldout.jsonl",
    ):
        assert name in sources, name
    assert all(r["in_scope"] for r in rows if r["source"].startswith(("replies/", "exclusions/")))
    assert not any("heldout/" in r["source"] or r["source"].startswith("/work") for r in rows)
    coffee = [r for r in rows if r["source"] == "replies/replyset.jsonl" and r["language"] == "it"]
    assert coffee and all(isinstance(r["text"], str) and r["text"] for r in coffee)


def test_a_per_language_shift_moves_the_italian_threshold_only():
    res = {
        "coef": np.array([1.0]),
        "intercept": 0.0,
        "mean": np.array([0.0]),
        "scale": np.array([1.0]),
        "threshold": 0.5,
        "shift": {0: 0.0, 1: math.log(0.5 / 0.5) - math.log(0.3 / 0.7)},  # the Italian threshold is 0.3
    }
    X = np.array([[math.log(0.4 / 0.6)], [math.log(0.4 / 0.6)], [math.log(0.2 / 0.8)]])
    italian = np.array([False, True, True])
    # P = 0.4: refused in English (< 0.5), answered in Italian (>= 0.3); P = 0.2 refused in Italian
    assert predict(res, X, italian).tolist() == [False, True, False]
    assert probability(res, X, italian)[0] == pytest.approx(0.4)


def _toy(n: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.array([True, False] * n)
    italian = np.array(([False] * 2 + [True] * 2) * (n // 2))
    x = np.where(y, 1.0, -1.0) + rng.normal(0, 0.7, len(y))
    X = np.stack([x, italian.astype(float)], axis=1)
    groups = np.array(["abcd"[(i // 4 + i) % 4] for i in range(len(y))])  # each set holds both classes, languages
    return X, y, italian, groups


def test_leave_one_set_out_scores_each_set_with_a_fit_that_never_saw_it():
    X, y, italian, groups = _toy()
    spec = {"name": "toy", "features": ["x", "italian"], "c_grid": [1.0]}
    answer, fits = loso(X, y, italian, groups, spec)
    assert set(fits) == {"a", "b", "c", "d", "margin"}
    # refit without set "a" and score "a": the same decisions
    held = groups == "a"
    res = fit_spec(X[~held], y[~held], italian[~held], spec)
    assert predict(res, X[held], italian[held]).tolist() == answer[held].tolist()
    assert (fits["margin"] >= 0).tolist() == answer.tolist()
    out = report(y, italian, groups, answer)
    assert out["wrong"] == int((answer != y).sum())
    assert set(out["per_set"]) == {"a", "b", "c", "d"}
    table = markdown({"toy": {**out, "auc": {"en": 0.9, "it": 0.8}}})
    assert "| toy | " in table and "| a (en " in table


def test_the_per_language_rule_reaches_the_recall_target_on_its_training_folds():
    X, y, italian, groups = _toy(80, seed=1)
    res = fit_spec(X, y, italian, {"features": ["x", "italian"], "c_grid": [1.0], "per_language": True})
    for k in (False, True):
        m = italian == k
        oof_answer = res["oof"][m] >= 1 / (
            1 + math.exp(res["shift"][int(k)] - math.log(res["threshold"] / (1 - res["threshold"])))
        )
        assert (~oof_answer[~y[m]]).mean() >= 0.92 - 1e-9


def test_a_recall_target_per_language_sets_each_language_at_its_own_recall():
    X, y, italian, groups = _toy(80, seed=1)
    spec = {"features": ["x", "italian"], "c_grid": [1.0], "per_language": True, "recall_target": {0: 0.8, 1: 0.97}}
    res = fit_spec(X, y, italian, spec)
    recall = {}
    for k in (0, 1):
        m = italian == k
        t = 1 / (1 + math.exp(res["shift"][k] - math.log(res["threshold"] / (1 - res["threshold"]))))
        recall[k] = float((res["oof"][m][~y[m]] < t - 1e-9).mean())
    assert recall[0] >= 0.8 - 1e-9 and recall[1] >= 0.97 - 1e-9
    # English is held to the lower target: its bar is no higher than the one a 0.97 target would need
    strict = fit_spec(X, y, italian, {**spec, "recall_target": 0.97})
    assert res["shift"][0] >= strict["shift"][0] - 1e-9
