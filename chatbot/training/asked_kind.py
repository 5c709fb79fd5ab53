"""Fit the asked-kind head (``chatbot.stages.asked_kind``): which kind of answer a question asks for.

    python -m chatbot.training.asked_kind [--sets 'evaluation/replies/*.jsonl'] [--hold-back FILE ...]
        [--C 10] [--ship models/asked_kind]

Training rows: the questions of our reply sets (written by the team's writers over the demo cards, English and
Italian, each labelled with its type: no shared-data text). Features: hashed word 1-2-grams and character 3-5-grams
of the asking part (``asked_kind.asking_part``); a multinomial logistic regression (lbfgs, deterministic). The
command prints the leave-one-set-out accuracy per language next to the cue patterns' (``answer_cues.question_type``)
and records both in the shipped ``config.json`` with the sets' sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from chatbot.resources import workspace_root
from chatbot.stages.answer_cues import QUESTION_TYPES, question_type
from chatbot.stages.asked_kind import N_FEATURES, AskedKindHead, asking_part
from chatbot.training.binary_head import set_rows

DEFAULT_SETS = "evaluation/replies/*.jsonl"


def labelled_rows(root: Path, pattern: str, held_back: Sequence[str] = ()) -> list[dict[str, Any]]:
    """(set, language, type, question) of every row of the sets matching ``pattern`` under ``root`` whose type is
    one of ``QUESTION_TYPES``, except the files named in ``held_back``."""
    held = [str(Path(pattern).parent / Path(name).name) for name in held_back]
    return [
        {"set": name, "language": row.get("language", ""), "type": row["type"], "question": row["question"]}
        for name, row in set_rows(root, [pattern], held)
        if row.get("type") in QUESTION_TYPES and isinstance(row.get("question"), str)
    ]


def design(questions: Sequence[str], n_features: int = N_FEATURES) -> sparse.csr_matrix:
    """The hashed features of each question's asking part, one row each."""
    from chatbot.training.redflags import matrix

    return matrix([asking_part(q) for q in questions], n_features)


def fit(x: sparse.csr_matrix, y: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """(weights, bias) of a multinomial logistic regression with one row per label of ``QUESTION_TYPES``."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=3000)
    clf.fit(x, y)
    weights = np.zeros((len(QUESTION_TYPES), x.shape[1]), dtype=np.float32)
    bias = np.full(len(QUESTION_TYPES), -30.0, dtype=np.float32)  # a label never seen is never chosen
    for row, label in enumerate(clf.classes_):
        weights[label] = clf.coef_[row]
        bias[label] = clf.intercept_[row]
    return weights, bias


def leave_one_set_out(rows: Sequence[dict[str, Any]], c: float) -> dict[str, Any]:
    """Accuracy per language of the head fitted without each set in turn, and of the cue patterns."""
    x = design([r["question"] for r in rows])
    y = np.array([QUESTION_TYPES.index(r["type"]) for r in rows])
    sets = np.array([r["set"] for r in rows])
    pred = np.zeros(len(rows), dtype=int)
    for name in sorted(set(sets)):
        test = sets == name
        w, b = fit(x[~test], y[~test], c)
        pred[test] = np.asarray((x[test] @ w.T) + b).argmax(axis=1)
    cues = np.array([QUESTION_TYPES.index(question_type(r["question"])) for r in rows])
    out: dict[str, Any] = {}
    for lang in sorted({r["language"] for r in rows}):
        m = np.array([r["language"] == lang for r in rows])
        out[lang] = {
            "n": int(m.sum()),
            "head": round(float((pred[m] == y[m]).mean()), 4),
            "cues": round(float((cues[m] == y[m]).mean()), 4),
        }
    return out


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", default=DEFAULT_SETS, help="glob of labelled reply sets, relative to the checkout")
    p.add_argument("--hold-back", nargs="*", default=[], help="set files (names) left out of training")
    p.add_argument("--C", type=float, default=10.0, help="inverse regularisation strength")
    p.add_argument("--no-cv", action="store_true", help="skip the leave-one-set-out report")
    p.add_argument("--ship", type=Path, help="write the head and its record into this folder")
    args = p.parse_args(argv)

    root = workspace_root()
    rows = labelled_rows(root, args.sets, args.hold_back)
    if not rows:
        print(f"no labelled questions in {root / args.sets}", file=sys.stderr)
        return 2
    record: dict[str, Any] = {
        "features": f"hashed (crc32, signed) word 1-2-grams + char 3-5-grams of the asking part, {N_FEATURES} buckets",
        "head": f"multinomial logistic regression (lbfgs), C={args.C}, int8 weights (one scale)",
        "questions": len(rows),
        "per_type": {t: sum(r["type"] == t for r in rows) for t in QUESTION_TYPES},
        "sets": {
            name: _sha256(str(root / "evaluation" / "replies" / name)) for name in sorted({r["set"] for r in rows})
        }
        if args.sets == DEFAULT_SETS
        else sorted({r["set"] for r in rows}),
        "command": "python -m chatbot.training.asked_kind"
        + (f" --hold-back {' '.join(args.hold_back)}" if args.hold_back else "")
        + (f" --ship {args.ship}" if args.ship else ""),
    }
    if not args.no_cv:
        record["leave_one_set_out_accuracy"] = leave_one_set_out(rows, args.C)
        print(json.dumps(record["leave_one_set_out_accuracy"], indent=1))
    x = design([r["question"] for r in rows])
    y = np.array([QUESTION_TYPES.index(r["type"]) for r in rows])
    weights, bias = fit(x, y, args.C)
    head = AskedKindHead(weights, bias, QUESTION_TYPES, N_FEATURES)
    if args.ship:
        head.save(args.ship, record)
        print(f"shipped {args.ship} ({len(rows)} questions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
