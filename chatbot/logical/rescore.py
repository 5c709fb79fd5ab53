"""Rescoring the top candidates' terms with another scorer: the cross-encoder (``term_scorer``
"cross-encoder") or the LLM's OrLog predicate plausibility (``term_scorer`` "llm-logprob")."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical.config import LogicalConfig
from chatbot.logical.query import Node
from chatbot.logical.scoring import combine
from chatbot.pipeline import Services, optional_llm
from corpus.segmenter import embedding_text


def term_cross_encoder(services: Services, language: str) -> tuple[Any | None, str | None]:
    """(cross-encoder, note) for ``term_scorer`` "cross-encoder": ``services.cross_encoder``, the model the
    rerank stage loads from the rerank.* settings (the same object when rerank.kind=cross-encoder). None with
    the reason when the question's language is not in rerank.cross_encoder_languages (ours reads English) or
    the shipped model is missing; a model_path that does not exist is an error, as for the rerank stage."""
    r = services.settings.rerank
    if language not in r.cross_encoder_languages and language != "unknown":
        return None, f"question language {language}: the cross-encoder reads {', '.join(r.cross_encoder_languages)}"
    model = services.cross_encoder
    if model is None:
        return None, "no cross-encoder model (rerank.model_path is empty and models/reranker is missing)"
    return model, None


def cross_encoder_rescore(
    query: Node,
    names: list[str],
    candidates: list[Hit],
    order: np.ndarray,
    final: np.ndarray,
    model: Any,
    config: LogicalConfig,
) -> tuple[np.ndarray, np.ndarray, int, dict[str, Any], dict[str, dict[int, float]]]:
    """Cross-encoder term scores on the top ``ce_candidates`` of ``order``: (new order, new scores, how many
    were rescored, trace info, per term {candidate index: probability}).

    Every (term, segment) pair goes through one ``model.predict`` call, the term in the question slot and the
    segment as the reranker reads it (``model.passage``: title line + text cut to rerank.max_chars). The
    shipped model returns sigmoid scores in [0, 1]; a drop-in model returning logits (a value outside [0, 1])
    is squashed with the sigmoid. The scores are composed over the query tree as they are (fuzzy operators,
    or the exact probability in probabilistic mode, read as probabilities without a calibration) and reorder
    the top (ties keep the previous order); the other candidates follow unchanged. NegConstraint test:
    worse than the embedding scorer (evaluation/results/logical-negconstraint-ce.md)."""
    top = order[: config.ce_candidates]
    passage = getattr(model, "passage", None) or embedding_text
    passages = [passage(candidates[i].segment) for i in top]
    pairs = [(t, text) for t in names for text in passages]
    raw = np.asarray(model.predict(pairs), dtype=np.float64).reshape(len(names), len(top))
    squashed = bool(raw.size) and (float(raw.min()) < 0.0 or float(raw.max()) > 1.0)
    if squashed:
        raw = 1.0 / (1.0 + np.exp(-raw))
    probs = {t: raw[j] for j, t in enumerate(names)}
    rho = combine(query, probs, config)
    new_top = top[np.argsort(-rho, kind="stable")]
    new_final = np.asarray(final, dtype=np.float64).copy()
    new_final[top] = rho
    info: dict[str, Any] = {
        "scorer": "cross-encoder",
        "model": str(getattr(model, "model_path", getattr(model, "name", type(model).__name__))),
        "runtime": getattr(model, "runtime", None),
        "candidates": len(top),
        "pairs": len(pairs),
        "logits_squashed": squashed,
        "final": "composed cross-encoder term scores (rerank stage skipped)",
    }
    if getattr(model, "note", None):
        info["model_note"] = model.note
    return (
        np.concatenate([new_top, order[len(top) :]]),
        new_final,
        len(top),
        info,
        {t: dict(zip(top.tolist(), probs[t].tolist(), strict=True)) for t in names},
    )


def plausibility_rescore(
    query: Node,
    names: list[str],
    candidates: list[Hit],
    order: np.ndarray,
    final: np.ndarray,
    values: dict[str, np.ndarray],
    services: Services,
    config: LogicalConfig,
) -> tuple[np.ndarray, np.ndarray, int, dict[str, Any], dict[str, dict[int, float]]]:
    """OrLog predicate plausibility on the top ``llm_candidates`` of ``order``: (new order, new scores, how
    many were rescored, trace info, per term {candidate index: P(True) or NaN}).

    A pair the LLM could not score keeps its embedding value (``values``: the cosine, or its calibration in
    probabilistic mode); if no pair got a plausibility, order and scores are left as they were."""
    from chatbot.logical.plausibility import llm_plausibilities

    top = order[: config.llm_candidates]
    run = llm_plausibilities(optional_llm(services), names, [candidates[i].segment for i in top], config.llm_max_chars)
    probs = {t: dict(zip(top.tolist(), run.probs[t].tolist(), strict=True)) for t in names}
    got = sum(int(np.isfinite(run.probs[t]).sum()) for t in names)
    info: dict[str, Any] = {
        "scorer": "llm-logprob",
        "candidates": len(top),
        "pairs": len(top) * len(names),
        "llm_pairs": got,
        "fallback_pairs": len(top) * len(names) - got,
        **run.info(),
    }
    if got == 0:
        info["fallback"] = "no plausibility at all: embedding order kept"
        return order, final, 0, info, probs
    mixed = {t: np.where(np.isfinite(run.probs[t]), run.probs[t], values[t][top]) for t in names}
    rho = combine(query, mixed, config)
    new_top = top[np.argsort(-rho, kind="stable")]  # ties keep the previous order (OrLog §3.7)
    new_final = np.asarray(final, dtype=np.float64).copy()
    new_final[top] = rho
    return np.concatenate([new_top, order[len(top) :]]), new_final, len(top), info, probs
