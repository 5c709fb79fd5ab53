"""evaluation.negation_s14: the document table, the metrics and the listwise head on hand-made questions."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.negation_s14 import _metrics, _words, doc_table, fit_listwise, main


def _question() -> dict:
    """Three segments of two documents; d2 is relevant. One positive term, one NOT term."""
    vecs = np.eye(3, dtype=np.float32)
    return {
        "pos": ["alpha beta"],
        "negs": ["gamma"],
        "doc_ids": ["d1", "d2", "d1"],
        "texts": ["alpha words here", "alpha beta text", "other text"],
        "vecs": vecs,
        "term_vecs": np.vstack([vecs[0], vecs[2], vecs[1]]),
        "raw": {"alpha beta": np.array([0.9, 0.8, 0.1]), "gamma": np.array([0.0, 0.0, 0.0])},
        "raw_q": np.array([0.5, 0.5, 0.5]),
        "orth": {"gamma": np.array([0.0, 0.5, 0.0])},
        "ce": {"alpha beta": np.array([0.9, 0.8, 0.1])},
        "ce_q": np.array([0.2, 0.9, 0.1]),
        "relevant": {"d2"},
    }


def test_doc_table_orders_documents_by_best_segment_and_marks_the_relevant_one() -> None:
    docs, feats, rel = doc_table(_question())
    assert docs == ["d1", "d2"]
    assert rel.tolist() == [False, True]
    assert feats["n_segments"].tolist() == [2.0, 1.0]
    # d1 sums its best and second segment (second_segment_weight 1), so it stays first
    assert feats["today"][0] > feats["today"][1]
    assert feats["word_cov"].tolist() == [-1.0, 1.0]  # z of 0.5 and 1.0 (d1's best segment names only "alpha")


def test_metrics_success_and_reciprocal_rank() -> None:
    s1, mrr, hits = _metrics(
        [np.array([0.9, 0.1]), np.array([0.1, 0.9]), np.array([0.5, 0.4])],
        [np.array([True, False]), np.array([True, False]), np.array([False, False])],
    )
    assert hits.tolist() == [True, False, False]
    assert s1 == pytest.approx(1 / 3)
    assert mrr == pytest.approx((1 + 0.5 + 0) / 3)


def test_listwise_head_learns_the_feature_that_marks_the_relevant_document() -> None:
    rng = np.random.RandomState(0)
    X, R = [], []
    for _ in range(20):
        x = rng.normal(size=(5, 2))
        r = np.zeros(5, dtype=bool)
        r[rng.randint(5)] = True
        x[r, 0] += 6.0  # feature 0 separates the relevant document; feature 1 is noise
        X.append(x)
        R.append(r)
    w = fit_listwise(X, R, 0.01)
    assert w[0] > 1.0 and abs(w[1]) < w[0] / 3
    assert _metrics([x @ w for x in X], R)[0] == 1.0


def test_words_drop_stop_words_and_keep_six_letter_prefixes() -> None:
    assert _words("How does Photomontage compare with the others?") == {"photom", "others"}


def test_the_command_line_refuses_the_test_split() -> None:
    with pytest.raises(SystemExit, match="train only"):
        main(["features", "--split", "test"])
