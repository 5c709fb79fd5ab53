"""NOT terms scored per sentence on stored sentence vectors (issue 19, item 1; ``logical.mention_scorer``
"sentence" and "sentence+lexical").

A passage that discusses an excluded thing usually does so in one sentence, in its own words; the passage's
vector dilutes it and the lexical score (``mention.py``) misses the paraphrase. Here a NOT term's query vector is
compared with every stored sentence vector of a candidate (``chatbot.sentence_vectors``, filled at index time:
no encoding at query time) and the candidate's score is the soft maximum over its sentences,

    s = m + log(mean_k exp(β (c_k − m))) / β,   m = max_k c_k        (β → ∞: the plain maximum),

optionally centred on the median over the question's candidates (``center``: the NOT term's cosines sit at a
term-dependent level; what tells a distractor is being above the other candidates), then calibrated per term
kind, P = σ((s − τ_kind) λ). A candidate without stored sentences gets P = 0 and is counted in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SentenceScores:
    """Per candidate: the soft-max sentence score, the best sentence's number (−1: no sentences stored)."""

    score: np.ndarray
    best_sentence: list[int]
    missing: int  # candidates with no stored sentences


def soft_max(cosines: np.ndarray, beta: float) -> float:
    """m + log(mean exp(β (c − m))) / β: between the mean (β → 0) and the maximum (β → ∞) of ``cosines``."""
    c = np.asarray(cosines, dtype=np.float64)
    if c.size == 0:
        raise ValueError("soft_max of no sentence cosines")
    if beta <= 0:
        raise ValueError(f"beta {beta}: must be > 0")
    m = float(c.max())
    return m + float(np.log(np.mean(np.exp(beta * (c - m))))) / beta


def sentence_scores(
    term_vector: np.ndarray,
    segment_ids: list[str],
    stored: dict[str, tuple[list[str], np.ndarray]],
    beta: float,
    center: bool,
) -> SentenceScores:
    """The NOT term's sentence score of every candidate (aligned with ``segment_ids``)."""
    t = np.asarray(term_vector, dtype=np.float64).ravel()
    if not np.isfinite(t).all() or np.linalg.norm(t) == 0:
        raise ValueError("the NOT term's vector is empty or not finite")
    scores = np.zeros(len(segment_ids))
    best: list[int] = []
    have = np.zeros(len(segment_ids), dtype=bool)
    for i, sid in enumerate(segment_ids):
        entry = stored.get(sid)
        if entry is None or len(entry[1]) == 0:
            best.append(-1)
            continue
        cos = np.asarray(entry[1], dtype=np.float64) @ t
        scores[i] = soft_max(cos, beta)
        best.append(int(np.argmax(cos)))
        have[i] = True
    if center and have.any():
        scores[have] -= float(np.median(scores[have]))
    return SentenceScores(scores, best, int((~have).sum()))


def calibrated(scores: SentenceScores, tau: float, lam: float) -> np.ndarray:
    """σ((s − τ) λ) per candidate; 0 where no sentence is stored."""
    z = np.clip((scores.score - tau) * lam, -500, 500)
    p = 1.0 / (1.0 + np.exp(-z))
    return np.where(np.array(scores.best_sentence) >= 0, p, 0.0)
