"""Both thresholds measured with the cross-encoder reranker as the scorer (``--cross-encoder``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam.relevance import (
    _best,
    _exact_grid,
    _grid,
    _grid_row,
    _span,
    dev_questions,
    measure_maternal_loo,
    relevance_scores,
)
from evaluation.redteam.support import measure_support

# the cross-encoder reranks every question here, Italian ones too, to measure it as a scorer in both languages
# (the product gives non-English questions the fusion reranker: rerank.cross_encoder_languages)
CE_OVERRIDES: dict[str, Any] = {"rerank": {"kind": "cross-encoder", "cross_encoder_languages": ["en", "it"]}}


def measure_cross_encoder(data_dir: Path, log=print, support: bool = True, limit: int | None = None) -> dict[str, Any]:
    """safety.min_relevance_cross_encoder and compose.support_threshold_cross_encoder on the dev data.

    Relevance: the best cross-encoder score among the top-3 after the product's rerank stage (rerank.* settings
    as configured, kind forced to cross-encoder), on the relevance dev questions of both languages. One
    setting serves both languages, so the chosen threshold maximises the mean of the English and Italian
    balanced accuracies. Also reported at that threshold: each language alone, the hand-written questions
    only, the e5/bi-encoder rule (best cosine of the same top-3 at safety.min_relevance_dense[_it]) and both
    rules together (answer only when both pass). ``limit``: a smoke run on the first and last ``limit`` dev
    questions per language and the first ``limit`` maternal queries."""
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages.rerank import CrossEncoderReranker

    settings = load_settings(paths={"data_dir": data_dir}, **CE_OVERRIDES)
    services = Services(settings)
    reranker = services.reranker
    if not isinstance(reranker, CrossEncoderReranker):
        raise SystemExit(f"no cross-encoder: {getattr(reranker, 'note', None)}")
    r = settings.rerank
    res: dict[str, Any] = {
        "embedder": settings.embedding.model,
        "reranker": {
            "model": str(r.model_path or "models/reranker"),
            "runtime": reranker.runtime,
            "note": reranker.note,
            "max_length": r.max_length,
            "candidates": r.candidates,
            "top_k": settings.retrieval.top_k,
        },
    }
    data: dict[str, dict[str, np.ndarray]] = {}
    for lang in ("en", "it"):
        texts, labels, hand = dev_questions(lang)
        if limit:
            keep = [*range(min(limit, len(texts))), *range(max(limit, len(texts) - limit), len(texts))]
            texts, labels, hand = ([x[i] for i in keep] for x in (texts, labels, hand))
        log(f"relevance {lang} (cross-encoder): {len(texts)} questions")
        scores = relevance_scores(services, texts)
        data[lang] = {
            "ce": np.array([s["cross-encoder"] for s in scores], dtype=float),
            "dense": np.array([s["dense"] for s in scores], dtype=float),
            "lab": np.array(labels, dtype=bool),
            "hand": np.array(hand, dtype=bool),
            "top1_same_language": np.array([s["top1_language"] == lang for s in scores]),
            "dense_top1_same_language": np.array([s["dense_top1_language"] == lang for s in scores]),
        }
        data[lang]["texts"] = texts  # type: ignore[assignment]
    values = np.unique(np.round(np.concatenate([d["ce"] for d in data.values()]), 4))
    joint = []
    for t in [*values.tolist(), float(values.max()) + 1e-4]:
        rows = {lang: _grid_row(d["ce"][d["lab"]], d["ce"][~d["lab"]], t) for lang, d in data.items()}
        joint.append(
            {"threshold": t, "mean_balanced_accuracy": float(np.mean([x["balanced_accuracy"] for x in rows.values()]))}
        )
    best = max(range(len(joint)), key=lambda i: (joint[i]["mean_balanced_accuracy"], -joint[i]["threshold"]))
    # halfway down to the next observed score: the same dev result, less tied to one question's score
    chosen = round((joint[best - 1]["threshold"] + joint[best]["threshold"]) / 2, 4) if best else joint[0]["threshold"]
    relevance: dict[str, Any] = {"chosen_threshold": chosen, "joint_grid": joint}
    embedder = settings.embedding.model
    for lang, d in data.items():
        ce, dense, lab, hand = d["ce"], d["dense"], d["lab"], d["hand"]
        table = settings.safety.min_relevance_dense_it if lang == "it" else settings.safety.min_relevance_dense
        t_dense = table.get(embedder)
        entry: dict[str, Any] = {
            "in_scope": int(lab.sum()),
            "out_of_scope_hand_written": int((~lab & hand).sum()),
            "out_of_scope_mediqa": int((~lab & ~hand).sum()),
            "at_chosen": _grid_row(ce[lab], ce[~lab], chosen),
            "hand_written_only_at_chosen": _grid_row(ce[lab & hand], ce[~lab & hand], chosen),
            "best_for_this_language": _best(_exact_grid(ce[lab], ce[~lab])),
            # in-scope questions whose first link is in the question's language: reranked vs bi-encoder order
            "in_scope_top1_in_question_language": float(d["top1_same_language"][lab].mean()),
            "in_scope_top1_in_question_language_bi_encoder": float(d["dense_top1_same_language"][lab].mean()),
        }
        if t_dense is not None:
            both = np.minimum(ce - chosen, dense - t_dense)  # >= 0 when both rules answer
            entry["dense_rule"] = {"threshold": t_dense, **_grid_row(dense[lab], dense[~lab], t_dense)}
            lo, hi = _span(dense)
            entry["dense_rule_best"] = _best(_grid(dense[lab], dense[~lab], lo, hi, 0.005))
            entry["both_rules"] = _grid_row(both[lab], both[~lab], 0.0)
        entry["misses_at_chosen"] = [
            {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "cross-encoder": round(float(c), 4)}
            for i, (t, y, c, h) in enumerate(zip(d["texts"], lab, ce, hand, strict=True))
            if (c >= chosen) != bool(y)
        ]
        entry["scores"] = [
            {"id": t if h else f"mediqa#{i}", "in_scope": bool(y), "cross-encoder": round(float(c), 4)}
            for i, (t, y, c, h) in enumerate(zip(d["texts"], lab, ce, hand, strict=True))
        ]
        relevance[lang] = entry
    res["relevance"] = relevance
    res["maternal_loo"] = measure_maternal_loo(data_dir, {"en": chosen}, log, "cross-encoder", limit, **CE_OVERRIDES)
    if support:
        res["support"] = measure_support(services.embedder, log, cross_encoder=reranker)
    return res
