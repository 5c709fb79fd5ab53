"""The session-11 leave-one-set-out replay (evaluation.redteam.gate_loso) on hand-made rows: the second look is
replayed exactly as answer.py runs it, and the paired comparison counts the right questions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.redteam.gate_loso import adapted_features, second_look_ok, summary, with_second_look


def row(**values) -> dict:
    base = {
        "id": "q",
        "source": "gate_heldout_v4.jsonl",
        "group": "gate_heldout_v4.jsonl",
        "gate_language": "it",
        "in_scope": True,
        "excluded": False,
        "personal_request": None,
        "links_in_language": True,
        "other_dense": 0.85,
        "other_urgent": False,
        "link_dense": [0.86, 0.84],
    }
    return {**base, **values}


def test_the_second_look_applies_only_where_answer_py_gives_it():
    assert second_look_ok(row())
    assert not second_look_ok(row(gate_language="en"))
    assert not second_look_ok(row(excluded=True))
    assert not second_look_ok(row(personal_request="dosage"))
    assert not second_look_ok(row(links_in_language=False))
    assert not second_look_ok(row(other_dense=None))
    assert not second_look_ok(row(other_urgent=True))


def test_a_refused_question_is_answered_when_logit_p_plus_slope_times_gap_reaches_the_cut():
    rows = [row(), row(), row(gate_language="en"), row()]
    p = np.array([0.2, 0.2, 0.2, 0.9])
    answered = np.array([False, False, False, True])
    # logit(0.2) + 50 * (0.85 - 0.86) = -1.3863 - 0.5 = -1.8863
    assert math.isclose(math.log(0.2 / 0.8) + 50 * (0.85 - 0.86), -1.8863, abs_tol=1e-4)
    out = with_second_look(rows, p, answered, (50.0, -1.9))
    assert out.tolist() == [True, True, False, True]  # English: no second look; an answer stays an answer
    assert with_second_look(rows, p, answered, (50.0, -1.8)).tolist() == [False, False, False, True]
    assert with_second_look(rows, p, answered, None).tolist() == answered.tolist()


def test_summary_counts_refusals_and_pairs_with_the_reference():
    rows = [
        row(in_scope=True),
        row(in_scope=True),
        row(in_scope=False),
        row(in_scope=False),
        row(in_scope=True, gate_language="en"),
        row(in_scope=False, gate_language="en"),
    ]
    answered = np.array([True, False, False, True, True, False])
    reference = np.array([False, False, False, False, True, False])
    s = summary(rows, answered, reference)
    # Italian: refused 2 (one out of scope), 2 out of scope, 1 of 2 in scope answered
    assert s["it"]["all"] == {"refusal_precision": 0.5, "refusal_recall": 0.5, "in_scope_answered": 0.5, "n": 4}
    assert s["it"]["gate_sets"]["n"] == 4
    assert s["en"]["all"] == {"refusal_precision": 1.0, "refusal_recall": 1.0, "in_scope_answered": 1.0, "n": 2}
    # question 0 right only here, question 3 right only in the reference
    assert s["both"] == {"wrong": 2, "right_only_here": 1, "right_only_shipped": 1, "p": 1.0}


def test_the_encoder_cosine_features_read_the_links_scores_and_fall_back_to_raw_e5():
    top = [{"dense": 0.90, "dense_adapted": 0.60, "cross-encoder": 0.4}, {"dense": 0.88, "dense_adapted": 0.50}]
    ranked = [*top, {"dense": 0.86, "dense_adapted": 0.45}, {"dense": 0.85, "dense_adapted": 0.40}, {"dense": 0.84}]
    f = adapted_features({"top_detail": top, "ranked_detail": ranked}, 1.0)
    # best 0.60; documents ranked 4-10: 0.40 and 0.84 (no encoder score: raw e5), mean 0.62
    assert f == pytest.approx(
        {
            "adapted_best": 0.60,
            "adapted_margin": -0.02,
            "adapted_best_it": 0.60,
            "adapted_margin_it": -0.02,
            "ce_top1": 0.4,
        }
    )
    assert adapted_features({"top_detail": top, "ranked_detail": ranked}, 0.0)["adapted_best_it"] == 0.0
    assert adapted_features({"top_detail": None}, 1.0) == {}


def test_a_fixed_second_look_is_kept_in_every_fold_and_false_leaves_it_off():
    from evaluation.redteam.gate_loso import run_loso

    rows = [row(group="a"), row(group="b", gate_language="en"), row(group="b")]

    def fit(train):
        def predict(rs):
            return np.full(len(rs), 0.2), np.zeros(len(rs), bool)

        predict.info = {}
        return predict

    # logit(0.2) + 50 * (0.85 - 0.86) = -1.8863 >= -1.9: the Italian rows are answered by the second look
    out = run_loso(rows, fit, (50.0, -1.9))
    assert out["gate"].tolist() == [False, False, False]
    assert out["final"].tolist() == [True, False, True]
    assert out["folds"]["a"]["second_look"] == (50.0, -1.9)
    assert run_loso(rows, fit, False)["final"].tolist() == [False, False, False]
