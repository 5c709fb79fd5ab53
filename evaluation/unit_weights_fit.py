"""Fit the answer-first composer's term weights per question type on the spent reply sets (compose.unit_weights).

    python -m evaluation.unit_weights_fit --capture DIR --data SET.jsonl [--data ...] --out DIR
        [--ship models/answer_scorer/unit_weights.json] [--folds 5] [--lam-shared 0.001] [--lam-type 0.01]

1. Every question of the sets is replayed over its captured composer inputs (``evaluation.reply_misses
   --capture``) with the hand weights and the trained scorer's term on for all six question types; the units the
   composer ranks last (after the language decision) are kept with their terms (``Candidate.parts``), their cues of
   every answer type and their length. A unit is a positive when it holds one of the question's key phrases.
2. A conditional logit over each question's units (the softmax of a question's unit scores; the loss is minus the
   log of the positives' share) fits, per question type, a factor on each term and a weight on each typed cue
   (``chatbot.stages.answer_weights``), with L2 towards the hand weights: factor 1 (0 for the trained term where
   compose.trained_types leaves it out), typed weights 0.
3. Grouped cross-validation: the sets are dealt into ``--folds`` folds; each fold's questions are replayed with the
   weights fitted on the other folds, and their key-fact recall is compared with the hand weights' replay
   (per-question rows in the reply harness's per_query shape, ``evaluation.compare_runs``).
4. ``--ship`` fits on every set and writes the weights with their metadata.

The replays leave the answer memory out (a spent set's questions are in it, which would answer them in-sample).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.bench_replies import load_reply_set, phrases_found
from evaluation.harness import apply_overrides
from evaluation.reply_misses import replay

TERMS = ("cue", "heading", "overlap", "document", "topic", "retrieved", "lead", "unasked_help", "language", "model")
KINDS = ("how_much", "how_long", "when", "yes_no", "why", "what_to_do", "options")
TYPED = ("how_much", "how_long", "when", "why", "what_to_do", "yes_no", "length")
TEMPERATURE = 5.0  # the softmax's sharpness over a question's unit scores (the scores' own scale is ~0-5)


def capture_units(
    items: Sequence[Any], captures: dict[str, Any], settings: Any, model: Any, base_model: Any
) -> list[dict[str, Any]]:
    """Per question: the hand weights' replay recall (``base_model``: the shipped trained types) and the units
    ranked with the trained term for every type (``model``), with terms, typed cues, length and label."""
    import chatbot.stages.answer_select as select_module
    from chatbot.stages.answer_cues import QUESTION_TYPES, cue_score

    seen: dict[str, Any] = {}
    real = select_module.select_units

    def spy(question: str, kind: str, ranked: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        seen.update(kind=kind, units=list(ranked))
        return real(question, kind, ranked, *args, **kwargs)

    rows = []
    select_module.select_units = spy
    try:
        for item in items:
            cap = captures.get(item.id)
            if not cap or not cap.get("documents"):
                continue
            text, _ = replay(cap, settings, base_model, "cues")
            base = sum(phrases_found(text, item.key_phrases)) / len(item.key_phrases) if text else 0.0
            seen.clear()
            replay(cap, settings, model, "cues")
            if "units" not in seen:
                continue
            units = [
                {
                    "terms": [float(u.parts.get(t, 0.0)) for t in TERMS],
                    "typed": [cue_score(t, u.text) for t in QUESTION_TYPES] + [math.log1p(len(u.text)) / 6.0],
                    "label": int(any(phrases_found(u.text, item.key_phrases))),
                }
                for u in seen["units"]
            ]
            rows.append({"id": item.id, "language": item.language, "type": item.type, "kind": seen["kind"]})
            rows[-1].update(base=base, units=units)
    finally:
        select_module.select_units = real
    return rows


def anchor(trained_types: Sequence[str]) -> np.ndarray:
    """The hand weights as factors (KINDS x (TERMS + TYPED)): 1 per term, the trained term 0 outside
    ``trained_types`` (options reads as yes/no), typed weights 0."""
    a = np.zeros((len(KINDS), len(TERMS) + len(TYPED)))
    a[:, : len(TERMS)] = 1.0
    for k, kind in enumerate(KINDS):
        if (kind if kind != "options" else "yes_no") not in trained_types:
            a[k, TERMS.index("model")] = 0.0
    return a


def kind_index(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else KINDS.index("yes_no")


def fit(rows: Sequence[dict[str, Any]], base: np.ndarray, lam_shared: float, lam_type: float) -> np.ndarray:
    """Factors and typed weights (KINDS x (TERMS + TYPED)) = base + shared + per type, fitted by L-BFGS
    (deterministic) on the questions that have a positive unit."""
    import torch

    data = [r for r in rows if any(u["label"] for u in r["units"])]
    xs = [torch.tensor([u["terms"] + u["typed"] for u in r["units"]], dtype=torch.float64) for r in data]
    ys = [torch.tensor([u["label"] for u in r["units"]], dtype=torch.bool) for r in data]
    ks = [kind_index(r["kind"]) for r in data]
    a = torch.tensor(base, dtype=torch.float64)
    shared = torch.zeros(a.shape[1], dtype=torch.float64, requires_grad=True)
    per_type = torch.zeros_like(a, requires_grad=True)
    opt = torch.optim.LBFGS([shared, per_type], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        m = a + shared.unsqueeze(0) + per_type
        loss = torch.zeros((), dtype=torch.float64)
        for x, y, k in zip(xs, ys, ks, strict=True):
            s = TEMPERATURE * (x @ m[k])
            loss = loss - (torch.logsumexp(s[y], 0) - torch.logsumexp(s, 0))
        loss = loss / max(len(xs), 1) + lam_shared * (shared * shared).sum() + lam_type * (per_type * per_type).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return (a + shared.unsqueeze(0) + per_type).detach().numpy()


def weights_json(m: np.ndarray, meta: dict[str, Any]) -> dict[str, Any]:
    """The chatbot.stages.answer_weights file for factors ``m``."""
    from chatbot.stages.answer_cues import QUESTION_TYPES
    from chatbot.stages.answer_weights import FORMAT_VERSION

    n = len(TERMS)
    return {
        "format_version": FORMAT_VERSION,
        "multipliers": {k: {t: round(float(m[i, j]), 4) for j, t in enumerate(TERMS)} for i, k in enumerate(KINDS)},
        "typed": {k: {t: round(float(m[i, n + j]), 4) for j, t in enumerate(TYPED)} for i, k in enumerate(KINDS)},
        "model_types": list(QUESTION_TYPES),
        "meta": meta,
    }


def main(argv: Sequence[str] | None = None) -> int:
    import chatbot.stages.compose as compose_module
    from chatbot.embedders import load_embedder
    from chatbot.settings import load_settings
    from chatbot.stages.answer_cues import QUESTION_TYPES
    from chatbot.stages.answer_first import TypedAnswerModel
    from chatbot.stages.answer_trained import EMBEDDER, HEADS, TrainedAnswerModel
    from chatbot.stages.answer_weights import parse_unit_weights

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True, help="reply set JSONL (repeatable)")
    p.add_argument("--capture", type=Path, required=True, help="captured composer inputs (evaluation.reply_misses)")
    p.add_argument("--out", type=Path, required=True, help="folder for the units, the folds' rows and the summary")
    p.add_argument("--folds", type=int, default=5, help="grouped cross-validation folds (sets dealt in turn)")
    p.add_argument("--lam-shared", type=float, default=0.001, help="L2 on the shared change of a weight")
    p.add_argument("--lam-type", type=float, default=0.01, help="L2 on a question type's own change")
    p.add_argument("--ship", type=Path, default=None, help="fit on every set and write the weights file here")
    args = p.parse_args(argv)

    settings = load_settings()
    head = TrainedAnswerModel(load_embedder(EMBEDDER, settings.embedding.threads), weights_file=HEADS["reply-sets"])
    every = TypedAnswerModel(lambda: head, list(QUESTION_TYPES))
    shipped_types = list(settings.compose.trained_types)
    shipped = TypedAnswerModel(lambda: head, shipped_types)
    hand = apply_overrides(settings.model_copy(), ["compose.unit_weights=hand"])
    learned = apply_overrides(settings.model_copy(), ["compose.unit_weights=learned"])
    args.out.mkdir(parents=True, exist_ok=True)

    sets: dict[str, list[Any]] = {path.stem: load_reply_set(path) for path in args.data}
    captures = {name: pickle.loads((args.capture / f"{name}.pkl").read_bytes()) for name in sets}
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, items in sets.items():
        rows[name] = capture_units(items, captures[name], hand, every, shipped)
        print(f"{name}: {len(rows[name])} questions", file=sys.stderr, flush=True)
    (args.out / "units.pkl").write_bytes(pickle.dumps(rows))
    base = anchor(shipped_types)

    names = sorted(sets)
    fold_of = {n: i % args.folds for i, n in enumerate(names)}
    by_id = {(n, it.id): it for n, items in sets.items() for it in items}
    per_query: list[dict[str, Any]] = []
    real = compose_module.unit_weights_for
    try:
        for f in range(args.folds):
            train = [r for n in names if fold_of[n] != f for r in rows[n]]
            weights = parse_unit_weights(weights_json(fit(train, base, args.lam_shared, args.lam_type), {}))
            compose_module.unit_weights_for = lambda cfg, w=weights: w if cfg.unit_weights == "learned" else None
            for n in names:
                if fold_of[n] != f:
                    continue
                for r in rows[n]:
                    item = by_id[(n, r["id"])]
                    text, _ = replay(captures[n][r["id"]], learned, every, "cues")
                    recall = sum(phrases_found(text, item.key_phrases)) / len(item.key_phrases) if text else 0.0
                    per_query.append({"set": n, "query_id": r["id"], "language": r["language"], "type": r["type"]})
                    per_query[-1].update(hand=r["base"], learned=recall)
            print(f"fold {f}: {len(per_query)} questions replayed", file=sys.stderr, flush=True)
    finally:
        compose_module.unit_weights_for = real
    with (args.out / "cv.per_query.jsonl").open("w", encoding="utf-8") as fh:
        for r in per_query:
            fh.write(json.dumps(r) + "\n")
    summary: dict[str, Any] = {}
    n, hand_sum, new_sum = Counter(), Counter(), Counter()
    for r in per_query:
        for key in ("all", r["language"], r["type"]):
            n[key] += 1
            hand_sum[key] += r["hand"]
            new_sum[key] += r["learned"]
    for key in n:
        hand_recall, new_recall = round(hand_sum[key] / n[key], 3), round(new_sum[key] / n[key], 3)
        summary[key] = {"n": n[key], "hand": hand_recall, "learned": new_recall}
    summary["better"] = sum(r["learned"] > r["hand"] for r in per_query)
    summary["worse"] = sum(r["learned"] < r["hand"] for r in per_query)
    (args.out / "cv.summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary, indent=1))

    if args.ship:
        every_row = [r for name in names for r in rows[name]]
        meta = {
            "fitted_on": names,
            "questions": len(every_row),
            "with_positive": sum(1 for r in every_row if any(u["label"] for u in r["units"])),
            "lam_shared": args.lam_shared,
            "lam_type": args.lam_type,
            "temperature": TEMPERATURE,
            "hand_trained_types": shipped_types,
            "cv": {k: summary[k] for k in ("all", "en", "it", "better", "worse") if k in summary},
        }
        m = fit(every_row, base, args.lam_shared, args.lam_type)
        args.ship.parent.mkdir(parents=True, exist_ok=True)
        args.ship.write_text(json.dumps(weights_json(m, meta), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.ship}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
