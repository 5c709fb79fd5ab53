"""The fusion benchmark's orderings on hand-made scores."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.index import Hit
from corpus.model import Segment
from evaluation.bench_rerank_fusion import documents_in_order, orderings


def _hits(doc_ids: list[str]) -> list[Hit]:
    return [
        Hit(Segment(id=f"{d}#{i}", doc_id=d, text=f"passage {i}", title=d, source_url="", position=0), 0.0)
        for i, d in enumerate(doc_ids)
    ]


def test_orderings_on_three_candidates():
    dense = np.array([0.9, 0.8, 0.7])  # first stage a, b, c
    ce = np.array([0.2, 0.9, 0.5])  # cross-encoder b, c, a
    docs = _hits(["a", "b", "c"])
    out = orderings(dense, ce)

    assert documents_in_order(docs, out["first stage"]) == ["a", "b", "c"]
    assert documents_in_order(docs, out["cross-encoder"]) == ["b", "c", "a"]
    assert documents_in_order(docs, out["rrf60"]) == ["b", "a", "c"]
    assert out["linear a=0.5"] == pytest.approx([0.5 * 0.2 + 0.5, 0.5 * 0.9 + 0.25, 0.5 * 0.5])
    assert documents_in_order(docs, out["linear a=0.5"]) == ["b", "a", "c"]


def test_documents_in_order_keeps_each_documents_best_segment_once():
    assert documents_in_order(_hits(["a", "b", "a", "c"]), np.array([0.1, 0.5, 0.9, 0.2])) == ["a", "b", "c"]
