"""A trained "does this passage discuss X?" head on e5 vectors (issue 19, item 2).

The lexical mention score (``mention.py``) only sees a NOT term that a passage names; most wrong first
passages on NegConstraint discuss the excluded thing in other words. This head reads the term's query vector
t ("query: X") and a passage's stored vector v ("passage: ...") and returns P(the passage discusses X):

    features f(t, v) = [t ⊙ v, |t − v|, cos(t, v)]   (2·d + 1 numbers)
    P = σ(w · f + b)

Logistic weights trained on train-split pairs only (``evaluation/train_mention_head.py``; data, command and
metrics in models/mention_head/README.md). It scores the segment vectors the index already stores, so it
costs one matrix product per NOT term: no model call at query time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from chatbot.resources import shipped_model


def head_path() -> Path:
    """The shipped head: models/mention_head/head.npz."""
    return shipped_model("mention_head") / "head.npz"


def pair_features(terms: np.ndarray, passages: np.ndarray) -> np.ndarray:
    """Row-wise features [t ⊙ v, |t − v|, cos] of aligned term and passage vectors (n × d each, or one
    term row broadcast against n passages)."""
    t = np.atleast_2d(np.asarray(terms, dtype=np.float32))
    v = np.atleast_2d(np.asarray(passages, dtype=np.float32))
    if t.shape[1] != v.shape[1]:
        raise ValueError(f"term vectors have {t.shape[1]} dimensions, passage vectors {v.shape[1]}")
    t = np.broadcast_to(t, v.shape) if t.shape[0] == 1 else t
    norms = np.linalg.norm(t, axis=1) * np.linalg.norm(v, axis=1)
    cos = (t * v).sum(axis=1) / np.where(norms > 0, norms, 1.0)
    return np.hstack([t * v, np.abs(t - v), cos[:, None]])


@dataclass(frozen=True)
class MentionHead:
    """Logistic weights over ``pair_features``."""

    weights: np.ndarray
    bias: float

    def logits(self, term: np.ndarray, passages: np.ndarray) -> np.ndarray:
        """w · f(term, v) + b for every passage vector v (term: one vector)."""
        passages = np.atleast_2d(np.asarray(passages, dtype=np.float32))
        if passages.shape[0] == 0:
            return np.zeros(0)
        f = pair_features(np.asarray(term, dtype=np.float32).reshape(1, -1), passages)
        if f.shape[1] != self.weights.shape[0]:
            raise ValueError(
                f"the mention head expects {(self.weights.shape[0] - 1) // 2}-dimensional vectors, got "
                f"{passages.shape[1]}: it was trained on e5 (multilingual-e5-small) vectors"
            )
        return f.astype(np.float64) @ self.weights.astype(np.float64) + self.bias

    def probs(self, term: np.ndarray, passages: np.ndarray) -> np.ndarray:
        """P(the passage discusses the term) for every passage vector."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.logits(term, passages), -500, 500)))

    def save(self, path: Path) -> None:
        np.savez(path, weights=self.weights.astype(np.float32), bias=np.array([self.bias], dtype=np.float32))


@lru_cache(maxsize=4)
def load_head(path: Path | None = None) -> MentionHead:
    """The shipped head (read once per process). Raises FileNotFoundError with the command that builds it."""
    path = Path(path) if path is not None else head_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"mention head {path} is missing: train it with `python -m evaluation.train_mention_head` "
            "or set logical.mention_scorer=lexical"
        )
    z = np.load(path, allow_pickle=False)
    return MentionHead(z["weights"].astype(np.float32), float(z["bias"][0]))
