"""What the commands that fit a ``chatbot.hashed_ngrams.BinaryHead`` share (the dismissal model, the
diagnosis-request model): reading our sets' questions, the balanced logistic fit, out-of-fold scores, the bar at a
false-positive rate, the command's options and shipping the head with its record in ``config.json``."""

from __future__ import annotations

import argparse
import glob
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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


def set_rows(root: Path, patterns: Sequence[str], held_back: Sequence[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, question row) of every set under ``root`` matching ``patterns`` (in name order per pattern),
    except the files ``held_back`` (paths relative to ``root``)."""
    held = {str(root / p) for p in held_back}
    for pattern in patterns:
        for name in sorted(glob.glob(str(root / pattern))):
            if name not in held:
                for row in question_rows(Path(name)):
                    yield Path(name).name, row


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


@dataclass(frozen=True)
class OutOfFold:
    """A head's training rows as features, their out-of-fold scores, the bar chosen on them and what it gives."""

    x: sparse.csr_matrix
    y: np.ndarray
    p: np.ndarray
    bar: float
    recall: float
    false_rate: float


def out_of_fold_run(texts: Sequence[str], labels: Sequence[bool], weights: np.ndarray, args: Any) -> OutOfFold:
    """Out-of-fold scores of ``texts`` (``args``: the ``head_arguments`` options) and the bar at their false rate."""
    from chatbot.training.redflags import matrix

    y = np.array(labels, dtype=bool)
    x = matrix(list(texts))
    x.sort_indices()  # the solver then sums in the order the shipped weights were fitted with (bit-identical)
    p = out_of_fold(x, y, args.C, args.seed, weights)
    bar = choose_bar(p, y, args.max_false_rate)
    return OutOfFold(x, y, p, bar, float((p[y] >= bar).mean()), float((p[~y] >= bar).mean()))


def ship_head(
    run: OutOfFold,
    weights: np.ndarray,
    args: Any,
    head: type,
    module: str,
    counts: dict[str, int],
    extra: dict[str, Any] | None = None,
) -> None:
    """Fit ``head`` (a ``BinaryHead`` class) on every row and write it to ``args.ship`` with its record: the head's
    keys, ``counts``, the out-of-fold recall and false rate, ``extra``, the bar's false rate and the command."""
    from chatbot.hashed_ngrams import N_FEATURES

    w, b = fit(run.x, run.y, args.C, args.seed, weights)
    meta = {
        **head_record(args.C, args.seed),
        **counts,
        "oof_recall": round(run.recall, 4),
        "oof_false_rate": round(run.false_rate, 5),
        **(extra or {}),
        "max_false_rate": args.max_false_rate,
        "command": f"python -m chatbot.training.{module} " + " ".join(sys.argv[1:]),
    }
    head(w, b, run.bar, N_FEATURES).save(args.ship, meta)
    print(f"wrote {args.ship}")
