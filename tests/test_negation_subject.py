"""The "discusses X vs mentions X" head of evaluation/negation_subject.py on hand-made feature rows: exact
metrics, and cross-validation that finds a signal when there is one and reports the pipeline's own order."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.negation_subject import FEATURES, _fit, _metrics, cross_validate, evaluate


def test_success_and_reciprocal_rank_of_an_order():
    y = np.array([0, 0, 1, 0])
    assert _metrics(np.array([4.0, 3.0, 2.0, 1.0]), y) == (0.0, pytest.approx(1 / 3))
    assert _metrics(np.array([0.0, 0.0, 9.0, 1.0]), y) == (1.0, 1.0)
    assert _metrics(np.arange(12.0)[::-1], np.array([0] * 11 + [1])) == (0.0, 0.0)  # past the tenth: RR 0


def _rows(n_questions: int, signal: bool) -> dict[str, dict]:
    """Questions of 6 documents; the pipeline puts the relevant one 3rd. With ``signal`` the relevant document's
    NOT cosine (column not_cos_orth) is the lowest of the question's, else it is noise."""
    rng = np.random.default_rng(1)
    j = FEATURES.index("not_cos_orth")
    rows = {}
    for q in range(n_questions):
        x = rng.normal(size=(6, len(FEATURES)))
        x[:, 0] = np.linspace(1.0, -1.0, 6)  # base_z: the pipeline's order
        y = np.zeros(6, dtype=np.int64)
        y[2] = 1
        if signal:
            x[:, j] = np.abs(x[:, j]) + 1.0
            x[2, j] = -2.0
        rows[str(q)] = {"x": x, "y": y, "docs": [f"d{i}" for i in range(6)], "n": 1 + q % 2}
    return rows


def test_the_pipeline_order_is_scored_as_ranked():
    rows = _rows(4, signal=False)
    assert evaluate(list(rows.values()), None) == [(0.0, pytest.approx(1 / 3), n) for n in (1, 2, 1, 2)]


def test_cross_validation_finds_a_clean_not_signal_with_either_objective():
    res = cross_validate(_rows(40, signal=True))
    assert res["questions"] == 40
    assert res["pipeline"]["Success@1"] == 0.0
    assert res["pointwise C=1.0"]["Success@1"] == 1.0
    assert res["pairwise C=1.0"]["Success@1"] == 1.0
    assert res["pairwise C=1.0"]["Success@1 two+"] == 1.0


def test_the_pairwise_head_weights_the_not_evidence_negatively():
    model = _fit(list(_rows(30, signal=True).values()), 1.0, "pairwise")
    w = model.coef_[0]
    assert w[FEATURES.index("not_cos_orth")] < 0
    assert np.argmax(np.abs(w)) == FEATURES.index("not_cos_orth")
