"""What the commands that fit a ``chatbot.hashed_ngrams.BinaryHead`` share (the dismissal model, the
diagnosis-request model): reading our sets' questions, the balanced logistic fit, out-of-fold scores, the bar at a
false-positive rate, the command's options and the head's record in ``config.json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse


def question_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of one of our JSONL sets that carry a question (``question`` or ``text``), with it as ``text``."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            text = row.get("question") or row.get("text")
            if isinstance(text, str):
                rows.append({**row, "text": text})
    return rows


def fit(
    x: sparse.csr_matrix, y: np.ndarray, c: float, seed: int, weights: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)
    clf.fit(x, y, sample_weight=weights)
    return clf.coef_[0].astype(np.float32), float(clf.intercept_[0])


def out_of_fold(
    x: sparse.csr_matrix, y: np.ndarray, c: float, seed: int, weights: np.ndarray, k: int = 5
) -> np.ndarray:
    fold = np.random.default_rng(seed).permutation(len(y)) % k
    p = np.zeros(len(y))
    for f in range(k):
        w, b = fit(x[fold != f], y[fold != f], c, seed, weights[fold != f])
        p[fold == f] = 1.0 / (1.0 + np.exp(-(x[fold == f] @ w + b)))
    return p


def choose_bar(p: np.ndarray, y: np.ndarray, max_false_rate: float) -> float:
    """The lowest score whose false-positive rate over the negatives is at most ``max_false_rate``."""
    neg = np.sort(p[~y])[::-1]
    allowed = int(np.floor(max_false_rate * len(neg)))
    return float(min(0.99, neg[allowed] + 1e-6)) if len(neg) > allowed else 0.5


def head_arguments(ap: argparse.ArgumentParser, model: str, max_false_rate: float, seed: int) -> None:
    """The options of a command that fits a ``BinaryHead``: where to ship it, C, the bar's false rate, the seed."""
    ap.add_argument("--ship", type=Path, default=None, help=f"write the model here (e.g. models/{model})")
    ap.add_argument("--C", type=float, default=4.0)
    ap.add_argument("--max-false-rate", type=float, default=max_false_rate)
    ap.add_argument("--seed", type=int, default=seed)


def head_record(c: float, seed: int) -> dict[str, Any]:
    """The first keys of a shipped head's config.json: its features, its head and seed."""
    return {
        "features": "hashed (crc32, signed) word 1-2-grams + char 3-5-grams within words (chatbot.hashed_ngrams)",
        "head": f"binary logistic regression, C={c}, balanced classes, int8 weights (one scale)",
        "seed": seed,
    }
