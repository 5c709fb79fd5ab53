"""The whole question as one more positive signal on the exclusion route (``logical.question_ce_weight``): the
top ``question_ce_top`` segments of the composed order are read by the question's reranker against the WHOLE
question, and their score becomes log(composed) + weight · z(reranker score), z over those segments; every other
candidate stays below them in its own order. Opt-in, off by default: on NegConstraint it was the one signal that added
to the decomposition out of fold on train, but at 0.05 test Success@1 went 0.557 -> 0.544 (one exclusion up, two
down: the whole question names the excluded things; evaluation/results/negation-s13.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.index import Hit


def question_rescore(
    question: str, candidates: list[Hit], final: np.ndarray, reranker: Any, weight: float, top: int
) -> np.ndarray:
    """``final`` with its ``top`` best candidates rescored (see the module docstring); ``weight`` 0 returns it."""
    final = np.asarray(final, dtype=np.float64)
    if weight < 0 or top < 1:
        raise ValueError(f"question rescore: weight {weight} must be >= 0 and top {top} >= 1")
    if weight == 0 or len(final) == 0:
        return final
    head = np.argsort(-final, kind="stable")[:top]
    scores = np.asarray(reranker.score(question, [candidates[i] for i in head]), dtype=np.float64)
    spread = scores.std()
    z = (scores - scores.mean()) / spread if spread > 1e-9 else np.zeros(len(head))
    out = np.full(len(final), -np.inf)
    rest = np.setdiff1d(np.arange(len(final)), head)
    # the head keeps positive scores (aggregation sums segments); the rest follows below the head's smallest
    head_scores = np.exp(np.log(np.clip(final[head], 1e-12, None)) + weight * z)
    out[head] = head_scores
    if len(rest):
        floor = head_scores.min()
        # a thousandth of the head's floor at most: a document's second segment from the rest adds next to nothing
        out[rest] = 1e-3 * floor * np.clip(final[rest], 0, None) / max(float(final[rest].max()), 1e-12)
    return out
