"""Fit the personal-diagnosis model (``chatbot.stages.diagnosis_request``).

    python -m chatbot.training.diagnosis_request [--ship models/diagnosis_request] [--max-false-rate 0.01] [--C 4.0]

Training messages (no shared-data text):
- ``diagnosis_data/train.jsonl``: messages we wrote, in English and Italian, that ask for a personal diagnosis
  (label 1: "is it colic?", "ho la mastite?", "tsh 4.2, do I have hypothyroidism") or not (label 0, many of them
  near misses: "what is mastitis?", "ho la mastite, posso allattare?", "is it safe to fly at 30 weeks?");
- negatives: the messages of our reply, gate, relevance and red-flag sets (v1-v8) that the rules do not read as a
  personal request: questions the cards answer, symptoms told with "is that normal?" or "what do I do?", urgent
  messages (silver: a few may ask for a diagnosis). Reply sets v11-v12, gate sets v7-v9 and red-flag sets v9-v11
  are held back for the false-alarm check.
The bar is chosen out of fold (5 folds, fixed seed): the lowest score whose false-positive rate over the negatives
is at most ``--max-false-rate``. Weights int8 with one scale, a config with the counts and the command.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from chatbot.hashed_ngrams import BinaryHead
from chatbot.resources import workspace_root
from chatbot.stages.safety import detect_personal_request
from chatbot.training.binary_head import head_arguments, out_of_fold_run, set_rows, ship_head

TRAIN = Path(__file__).parent / "diagnosis_data" / "train.jsonl"
NEGATIVE_SETS = (
    "evaluation/replies/*.jsonl",
    "evaluation/redteam/gate*.jsonl",
    "evaluation/redteam/relevance*.jsonl",
    *(f"evaluation/redflags/testset{v}.jsonl" for v in ("", "-v2", "-v3", "-v4", "-v5", "-v6", "-v7", "-v8")),
)
# kept out of training for the false-alarm check: the later reply, gate and red-flag sets
HELD_BACK = (
    "evaluation/replies/heldout-v11.jsonl",
    "evaluation/replies/heldout-v12.jsonl",
    "evaluation/redteam/gate_heldout_v7.jsonl",
    "evaluation/redteam/gate_heldout_v8.jsonl",
    "evaluation/redteam/gate_heldout_v9.jsonl",
)
# a message a person wrote for this model (either label) against a reply-set question
WRITTEN_WEIGHT = 3.0


def training_messages(root: Path) -> list[tuple[str, bool, str]]:
    """(text, asks for a diagnosis, source), duplicates dropped (the first kept)."""
    out = []
    for line in TRAIN.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((row["text"], bool(row["label"]), "written"))
    for name, row in set_rows(root, NEGATIVE_SETS, HELD_BACK):
        if detect_personal_request(row["text"]) is None:
            out.append((row["text"], False, name))
    seen: dict[str, tuple[str, bool, str]] = {}
    for text, label, source in out:
        seen.setdefault(" ".join(text.lower().split()), (text, label, source))
    return list(seen.values())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    head_arguments(ap, "diagnosis_request", max_false_rate=0.01, seed=20)
    args = ap.parse_args(argv)
    data = training_messages(workspace_root())
    weights = np.array([WRITTEN_WEIGHT if src == "written" else 1.0 for _, _, src in data])
    run = out_of_fold_run([t for t, _, _ in data], [lab for _, lab, _ in data], weights, args)
    written_neg = np.array([src == "written" for _, _, src in data]) & ~run.y
    written_false = float((run.p[written_neg] >= run.bar).mean())
    print(
        f"messages {len(run.y)} (diagnosis requests {int(run.y.sum())}); out-of-fold bar {run.bar:.3f}: recall "
        f"{run.recall:.3f}, false-positive rate {run.false_rate:.4f} (written near misses {written_false:.3f})"
    )
    if args.ship:
        counts = {"messages": len(run.y), "diagnosis_requests": int(run.y.sum())}
        extra = {"oof_false_rate_written_near_misses": round(written_false, 4)}
        ship_head(run, weights, args, BinaryHead, "diagnosis_request", counts, extra)


if __name__ == "__main__":
    main()
