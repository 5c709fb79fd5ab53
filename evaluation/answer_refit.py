"""Refit the trained answer scorer and the composer's unit weights together on every spent reply set, cross-fitted.

    python -m evaluation.answer_refit --capture DIR --data SET.jsonl [--data ...] --out DIR [--folds 5]
        [--ship-head models/answer_scorer/answer_scorer_replies.npz]
        [--ship-weights models/answer_scorer/unit_weights.json]

The shipped head (``answer_scorer_replies.npz``) learned from 7 reply sets (446 questions) and the unit weights from
37 (with that head's scores on sets it was fitted on, so they could over-trust it). With ~50 spent sets both are
refitted, in the order the composer uses them, without either seeing its own evaluation questions:

1. Sets are dealt into ``--folds`` folds (sorted names, round robin). For each fold a head is fitted on the reply
   pairs (``answer_scorer_loso.reply_pairs``) of the other folds; every question's units are then scored by the head
   that did not see its set (out-of-fold model terms, ``unit_weights_fit.capture_units``).
2. For each fold, unit weights are fitted (``unit_weights_fit.fit``, same anchor and L2) on the other folds' rows,
   and the fold's questions are replayed with that fold's head and weights: the "refit" recall. The "main" recall
   is the same replay with the shipped head and weights. Both leave the answer memory out, as unit_weights_fit does.
   Main's head and weights were fitted on some of these sets, so on those "main" is in-sample (optimistic); the
   sets neither saw (``heldout-v38`` and later) are reported apart.
3. ``--ship-head`` writes the head fitted on every set; ``--ship-weights`` the weights fitted on every row (with the
   out-of-fold model terms, the scale the composer will see on new questions).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.answer_scorer_loso import C, fit_head, reply_pairs, save_head, sign_p
from evaluation.bench_replies import load_reply_set, phrases_found
from evaluation.harness import apply_overrides
from evaluation.reply_misses import replay
from evaluation.unit_weights_fit import anchor, capture_units, fit, weights_json

COMPOSER_WEIGHT = 4.0  # the shipped head's composer weight (answer_scorer_replies.npz meta); not tuned here
UNSEEN_FROM = 38  # heldout-v38 and later: sets neither the shipped head nor the shipped weights were fitted on


def unseen_by_main(name: str) -> bool:
    m = re.fullmatch(r"heldout-v(\d+)", name)
    return bool(m) and int(m.group(1)) >= UNSEEN_FROM


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall of main and refit per group (all, language, type, unseen-by-main), better/worse and a sign test."""
    n, a, b = Counter(), Counter(), Counter()
    for r in rows:
        keys = ["all", r["language"], r["type"]] + (["unseen"] if unseen_by_main(r["set"]) else [])
        for k in keys:
            n[k] += 1
            a[k] += r["main"]
            b[k] += r["refit"]
    out: dict[str, Any] = {k: {"n": n[k], "main": round(a[k] / n[k], 3), "refit": round(b[k] / n[k], 3)} for k in n}
    for label, sub in (("all", rows), ("unseen", [r for r in rows if unseen_by_main(r["set"])])):
        better = sum(r["refit"] > r["main"] for r in sub)
        worse = sum(r["refit"] < r["main"] for r in sub)
        out.setdefault(label, {}).update(better=better, worse=worse, sign_p=round(sign_p(better, worse), 4))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import chatbot.stages.compose as compose_module
    from chatbot.embedders import load_embedder
    from chatbot.settings import load_settings
    from chatbot.stages.answer_cues import QUESTION_TYPES
    from chatbot.stages.answer_first import TypedAnswerModel
    from chatbot.stages.answer_trained import EMBEDDER, FEATURE_VERSION, HEADS, TrainedAnswerModel
    from chatbot.stages.answer_weights import parse_unit_weights
    from chatbot.training.answer_scorer import CACHE_DIR, build_matrix, embed_cached
    from evaluation.answer_scorer_loso import _CachedEmbedder

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True, help="reply set JSONL (repeatable)")
    p.add_argument("--capture", type=Path, required=True, help="captured composer inputs (evaluation.reply_misses)")
    p.add_argument("--out", type=Path, required=True, help="folder for the fold heads, per-question rows, summary")
    p.add_argument("--folds", type=int, default=5, help="folds (sets dealt in turn, sorted by name)")
    p.add_argument("--lam-shared", type=float, default=0.001, help="L2 on a weight's shared change (as shipped)")
    p.add_argument("--lam-type", type=float, default=0.01, help="L2 on a question type's own change (as shipped)")
    p.add_argument("--ship-head", type=Path, default=None, help="write the head fitted on every set here (.npz)")
    p.add_argument("--ship-weights", type=Path, default=None, help="write the weights fitted on every set here")
    args = p.parse_args(argv)

    settings = load_settings()
    sets = {path.stem: load_reply_set(path) for path in args.data if (args.capture / f"{path.stem}.pkl").is_file()}
    missing = [path.stem for path in args.data if path.stem not in sets]
    if missing:
        print(f"no capture for {', '.join(missing)}: left out", file=sys.stderr)
    captures = {name: pickle.loads((args.capture / f"{name}.pkl").read_bytes()) for name in sets}
    names = sorted(sets)
    fold_of = {n: i % args.folds for i, n in enumerate(names)}
    args.out.mkdir(parents=True, exist_ok=True)

    # 1. heads: one per fold (the other folds' pairs) and one on every set
    pairs = {name: reply_pairs(items, captures[name], name) for name, items in sets.items()}
    every_pair = [e for name in names for e in pairs[name]]
    embedder = load_embedder(EMBEDDER, settings.embedding.threads)
    questions = [e.question for e in every_pair] + [i.question for items in sets.values() for i in items]
    q_vecs = embed_cached(embedder, "query", questions, CACHE_DIR)
    s_vecs = embed_cached(embedder, "passage", [e.sentence for e in every_pair], CACHE_DIR)
    x = build_matrix(every_pair, q_vecs, s_vecs)
    y = np.asarray([e.label for e in every_pair])
    fold = np.asarray([fold_of[e.source] for e in every_pair])
    w = np.ones(len(y))
    cached = _CachedEmbedder(embedder, dict(q_vecs), dict(s_vecs))
    meta = {"feature_version": FEATURE_VERSION, "embedder": EMBEDDER, "features": int(x.shape[1]), "C": C}
    meta["composer_weight"] = COMPOSER_WEIGHT
    heads: dict[int, Any] = {}
    for f in range(args.folds):
        keep = fold != f
        folder = args.out / "folds" / str(f)
        held = [n for n in names if fold_of[n] == f]
        save_head(fit_head(x[keep], y[keep], w[keep]), {**meta, "held_out": held, "examples": int(keep.sum())}, folder)
        heads[f] = TrainedAnswerModel(cached, model_dir=folder)
        print(f"fold {f}: head on {int(keep.sum())} pairs", file=sys.stderr, flush=True)

    def typed(model: Any) -> Any:
        return TypedAnswerModel(lambda m=model: m, list(QUESTION_TYPES))

    # 2. units with out-of-fold model terms; weights per fold; replays
    hand = apply_overrides(settings.model_copy(), ["compose.unit_weights=hand"])
    learned = apply_overrides(settings.model_copy(), ["compose.unit_weights=learned"])
    shipped_head = TrainedAnswerModel(cached, weights_file=HEADS["reply-sets"])
    shipped_types = list(settings.compose.trained_types)
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        rows[name] = capture_units(sets[name], captures[name], hand, typed(heads[fold_of[name]]), typed(shipped_head))
    (args.out / "units.pkl").write_bytes(pickle.dumps(rows))
    print(f"units of {sum(len(v) for v in rows.values())} questions", file=sys.stderr, flush=True)
    base = anchor(shipped_types)

    def recall(item: Any, text: str) -> float:
        return sum(phrases_found(text, item.key_phrases)) / len(item.key_phrases) if text else 0.0

    # main: the shipped head and weights; refit: each fold's head and weights (patched in for that fold's questions)
    replayed = {n: [item for item in sets[n] if (captures[n].get(item.id) or {}).get("documents")] for n in names}
    main_recall = {
        (n, item.id): recall(item, replay(captures[n][item.id], learned, typed(shipped_head), "cues")[0])
        for n in names
        for item in replayed[n]
    }
    per_query: list[dict[str, Any]] = []
    real = compose_module.unit_weights_for
    fold_weights = {}
    try:
        for f in range(args.folds):
            train = [r for n in names if fold_of[n] != f for r in rows[n]]
            fold_weights[f] = weights_json(fit(train, base, args.lam_shared, args.lam_type), {})
            weights = parse_unit_weights(fold_weights[f])
            compose_module.unit_weights_for = lambda cfg, fitted=weights: (
                fitted if cfg.unit_weights == "learned" else None
            )
            for n in (n for n in names if fold_of[n] == f):
                for item in replayed[n]:
                    new, _ = replay(captures[n][item.id], learned, typed(heads[f]), "cues")
                    per_query.append(
                        {"set": n, "query_id": item.id, "language": item.language, "type": item.type,
                         "main": main_recall[(n, item.id)], "refit": recall(item, new)}
                    )  # fmt: skip
            print(f"fold {f}: {len(per_query)} questions replayed", file=sys.stderr, flush=True)
    finally:
        compose_module.unit_weights_for = real
    (args.out / "folds" / "weights.json").write_text(json.dumps(fold_weights, indent=1), encoding="utf-8")
    with (args.out / "cv.per_query.jsonl").open("w", encoding="utf-8") as fh:
        for r in per_query:
            fh.write(json.dumps(r) + "\n")
    summary = summarise(per_query)
    (args.out / "cv.summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary, indent=1))

    # 3. ship
    if args.ship_head:
        head = fit_head(x, y, w)
        shipped_meta = {**meta, "fitted_on": names, "examples": int(len(y)), "positives": int(y.sum())}
        save_head(head, shipped_meta, args.ship_head)
        print(f"wrote {args.ship_head}", file=sys.stderr)
    if args.ship_weights:
        every_row = [r for n in names for r in rows[n]]
        wmeta = {
            "fitted_on": names,
            "questions": len(every_row),
            "with_positive": sum(1 for r in every_row if any(u["label"] for u in r["units"])),
            "lam_shared": args.lam_shared,
            "lam_type": args.lam_type,
            "hand_trained_types": shipped_types,
            "model_terms": "out-of-fold heads (evaluation.answer_refit)",
            "cv": {k: summary[k] for k in ("all", "en", "it", "unseen") if k in summary},
        }
        m = fit(every_row, base, args.lam_shared, args.lam_type)
        args.ship_weights.parent.mkdir(parents=True, exist_ok=True)
        args.ship_weights.write_text(json.dumps(weights_json(m, wmeta), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.ship_weights}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
