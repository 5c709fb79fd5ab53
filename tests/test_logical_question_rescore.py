"""question_rescore: the whole question's reranker score on the composed top k (logical.question_ce_weight)."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.logical.question_rescore import question_rescore
from corpus.model import Segment


class ByText:
    """A reranker whose score of a segment is fixed by its text (what question_rescore reads is the order)."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question: str, hits: list[Hit]) -> list[float]:
        self.calls.append((question, [h.segment.text for h in hits]))
        return [self.scores[h.segment.text] for h in hits]


def _hits(*texts: str) -> list[Hit]:
    return [Hit(Segment(id=t, doc_id=t, text=t, title="", source_url="", position=0), 0.0, {}) for t in texts]


def test_the_question_reorders_only_the_top_k() -> None:
    hits = _hits("a", "b", "c", "d")
    final = np.array([0.50, 0.48, 0.47, 0.60])  # composed order: d, a, b, c
    reranker = ByText({"d": 0.1, "a": 0.2, "b": 0.9})
    out = question_rescore("q", hits, final, reranker, weight=1.0, top=3)
    assert reranker.calls == [("q", ["d", "a", "b"])]  # c (fourth) is never read
    assert [hits[i].segment.text for i in np.argsort(-out, kind="stable")] == ["b", "a", "d", "c"]
    assert out[2] < 1e-3 * out[:2].min() + 1e-12  # the rest stays far below the head


def test_a_small_weight_keeps_a_large_composed_lead() -> None:
    hits = _hits("a", "b")
    out = question_rescore("q", hits, np.array([0.9, 0.3]), ByText({"a": 0.0, "b": 1.0}), weight=0.05, top=2)
    assert [hits[i].segment.text for i in np.argsort(-out)] == ["a", "b"]


def test_weight_zero_is_the_composed_order_unchanged() -> None:
    final = np.array([0.2, 0.7, 0.1])
    reranker = ByText({})
    assert np.array_equal(question_rescore("q", _hits("a", "b", "c"), final, reranker, 0.0, 5), final)
    assert reranker.calls == []


def test_bad_knobs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="weight -1"):
        question_rescore("q", _hits("a"), np.array([1.0]), ByText({"a": 1.0}), -1.0, 5)
    with pytest.raises(ValueError, match="top 0"):
        question_rescore("q", _hits("a"), np.array([1.0]), ByText({"a": 1.0}), 0.1, 0)
