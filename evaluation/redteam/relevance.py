"""The relevance threshold (``safety.min_relevance_*``): scores of in-scope and out-of-scope dev questions
against the demo index, the balanced-accuracy grid, and the maternal leave-one-out transfer check."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shared_data_dir
from evaluation.splits import split_of

DEV = Path(str(files("evaluation.redteam") / "relevance_dev.jsonl"))
SHARED = shared_data_dir()
MATERNAL_WORDS = re.compile(
    r"pregnan|baby|babies|infant|newborn|breast|birth|labou?r|fetal|foetal|gestation|matern|postpartum|"
    r"gravidanz|incinta|neonat|bambin|allatt|parto|lattant|gestazional|"
    r"an(a)?emi",  # the demo corpus has an anaemia card: such questions are not clearly out of scope
    re.IGNORECASE,
)


def _span(*arrays: np.ndarray) -> tuple[float, float]:
    """The thresholds worth trying: the observed score range, on a 0.005 grid (cosine scales differ)."""
    values = np.concatenate([a for a in arrays if len(a)])
    return float(np.floor(values.min() * 200) / 200), float(np.ceil(values.max() * 200) / 200)


def _grid(pos: np.ndarray, neg: np.ndarray, lo: float, hi: float, step: float) -> list[dict[str, Any]]:
    """At each threshold t: answer when score >= t. 'refusal' is the positive class of P/R."""
    return [_grid_row(pos, neg, float(t)) for t in np.round(np.arange(lo, hi + 1e-9, step), 3)]


def _grid_row(pos: np.ndarray, neg: np.ndarray, t: float) -> dict[str, Any]:
    answered_pos = int(np.sum(pos >= t))
    refused_neg = int(np.sum(neg < t))
    refused_pos = len(pos) - answered_pos
    return {
        "threshold": t,
        "in_scope_answered": answered_pos / len(pos) if len(pos) else None,
        "out_of_scope_refused": refused_neg / len(neg) if len(neg) else None,
        "refusal_precision": refused_neg / (refused_neg + refused_pos) if refused_neg + refused_pos else None,
        "refusal_recall": refused_neg / len(neg) if len(neg) else None,
        "balanced_accuracy": (answered_pos / len(pos) + refused_neg / len(neg)) / 2 if len(pos) and len(neg) else None,
    }


def _exact_grid(pos: np.ndarray, neg: np.ndarray) -> list[dict[str, Any]]:
    """_grid at every distinct observed score (and just above the highest): for scores without a fixed
    scale, such as a cross-encoder's 0-1 outputs that crowd near 0 and 1."""
    values = np.unique(np.round(np.concatenate([pos, neg]), 4))
    return [_grid_row(pos, neg, float(t)) for t in [*values.tolist(), float(values.max()) + 1e-4]]


def _best(grid: list[dict[str, Any]]) -> dict[str, Any]:
    # ties: the lowest threshold (answer rather than refuse)
    return max(grid, key=lambda r: (r["balanced_accuracy"] or 0.0, -r["threshold"]))


def _at(grid: list[dict[str, Any]], t: float) -> dict[str, Any]:
    return min(grid, key=lambda r: abs(r["threshold"] - t))


def relevance_scores(services, questions: Sequence[str], exclude_docs: Sequence[set[str]] | None = None):
    """Per question: best dense cosine among the reranked top-3 (and cross-encoder score if reranked so)."""
    from chatbot.pipeline import rerank_stage

    settings = services.settings
    out = []
    for i, q in enumerate(questions):
        candidates = services.dense(q, settings.retrieval.top_k + (5 if exclude_docs else 0))
        if exclude_docs:
            candidates = [h for h in candidates if h.segment.doc_id not in exclude_docs[i]]
        # the product's rerank stage (a cross-encoder rescores the first rerank.candidates only)
        top = rerank_stage(q, candidates, services, {})[: settings.retrieval.top_n]
        dense = max((h.detail.get("dense", -1.0) for h in top), default=-1.0)
        ce = max((h.detail["cross-encoder"] for h in top if "cross-encoder" in h.detail), default=None)
        out.append(
            {
                "dense": float(dense),
                "cross-encoder": None if ce is None else float(ce),
                # language of the first link after reranking, and in the bi-encoder's own order
                "top1_language": top[0].segment.language if top else None,
                "dense_top1_language": candidates[0].segment.language if candidates else None,
            }
        )
    return out


def _queries(path: Path) -> dict[str, str]:
    return {
        str(r["_id"]): r["text"] for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    }


def dev_questions(lang: str) -> tuple[list[str], list[bool], list[bool]]:
    """(texts, in_scope, hand_written) of one language: relevance_dev.jsonl, then MEDIQA(-it) questions on
    non-maternal topics as extra out-of-scope ones."""
    dev = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in dev if r["language"] == lang]
    qfile = SHARED / {"en": "mediqa", "it": "mediqa-it"}[lang] / "queries.jsonl"
    extra = [t for t in _queries(qfile).values() if not MATERNAL_WORDS.search(t)] if qfile.exists() else []
    texts = [r["text"] for r in rows] + extra
    return texts, [r["in_scope"] for r in rows] + [False] * len(extra), [True] * len(rows) + [False] * len(extra)


def measure_relevance(data_dir: Path, log=print) -> dict[str, Any]:
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = load_settings(paths={"data_dir": data_dir})
    services = Services(settings)
    result: dict[str, Any] = {"reranker": getattr(services.reranker, "name", None)}
    for lang in ("en", "it"):
        texts, labels, hand_list = dev_questions(lang)
        log(f"relevance {lang}: {len(texts)} questions")
        scores = relevance_scores(services, texts)
        dense = np.array([s["dense"] for s in scores])
        lab = np.array(labels)
        lo, hi = _span(dense)
        grid = _grid(dense[lab], dense[~lab], lo, hi, 0.005)
        hand = np.array(hand_list)
        grid_hand = _grid(dense[lab & hand], dense[~lab & hand], lo, hi, 0.005)
        entry = {
            "in_scope": int(lab.sum()),
            "out_of_scope_hand_written": int((~lab & hand).sum()),
            "out_of_scope_mediqa": int((~lab & ~hand).sum()),
            "best": _best(grid),
            "grid": grid,
            "hand_written_only_at_best": _at(grid_hand, _best(grid)["threshold"]),
            # Hand-written questions are ours to show; MEDIQA questions are named by position only
            # (the shared datasets' text is never written into the project).
            "scores": [
                {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "dense": round(float(d), 4)}
                for i, (t, y, d, h) in enumerate(zip(texts, labels, dense, hand, strict=True))
            ],
            "misses_at_best": [
                {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "dense": round(float(d), 4)}
                for i, (t, y, d, h) in enumerate(zip(texts, labels, dense, hand, strict=True))
                if (d >= _best(grid)["threshold"]) != bool(y)
            ][:40],
        }
        ce = [s["cross-encoder"] for s in scores]
        if all(c is not None for c in ce):
            c = np.array(ce)
            cgrid = _exact_grid(c[lab], c[~lab])
            entry["cross_encoder"] = {"best": _best(cgrid), "grid": cgrid}
        result[lang] = entry
    return result


def measure_maternal_loo(
    data_dir: Path,
    thresholds: dict[str, float],
    log=print,
    score: str = "dense",
    limit: int | None = None,
    **overrides: Any,
) -> dict[str, Any] | None:
    """``score``: "dense" (best bi-encoder cosine of the top 3) or "cross-encoder" (its best score); settings
    ``overrides`` (e.g. rerank={"kind": "cross-encoder"}) on top of the environment's."""
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from evaluation.harness import ensure_index, load_judged

    data = SHARED / "maternal"
    if not (data / "corpus.jsonl").exists():
        return None
    settings = load_settings(paths={"data_dir": data_dir}, **overrides)
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    ensure_index(services, data, log)
    judged = load_judged(data, limit)
    ids = list(judged.queries)
    texts = [judged.queries[q] for q in ids]
    relevant = [{d for d, s in judged.qrels[q].items() if s >= 1} for q in ids]
    log(f"maternal leave-one-out: {len(ids)} queries x 2")
    with_doc = relevance_scores(services, texts)
    without = relevance_scores(services, texts, relevant)
    pos = np.array([s[score] for s in with_doc])
    neg = np.array([s[score] for s in without])
    test = np.array([split_of(q) == "test" for q in ids])
    if score == "dense":
        lo, hi = _span(pos, neg, np.array([thresholds["en"]]))
        grid = _grid(pos, neg, lo, hi, 0.005)
        grid_test = _grid(pos[test], neg[test], lo, hi, 0.005)
    else:
        grid = [*_exact_grid(pos, neg), _grid_row(pos, neg, thresholds["en"])]
        grid_test = [_grid_row(pos[test], neg[test], thresholds["en"])]
    return {
        "queries": len(ids),
        "best": _best(grid),
        "at_en_threshold": _at(grid, thresholds["en"]),
        "test_split_at_en_threshold": _at(grid_test, thresholds["en"]),
        "grid": grid,
    }
