"""The positive terms' candidates and scores: the other-language pool's best passages for a non-English
question's positive terms (``logical.other_language_k``), which cross-encoders read a positive term against
the candidates in ``rerank-terms`` (``logical.positive_rerankers``; empty: the question's reranker, as the
rerank stage picks it), and how their orders are fused with the term's dense order (RRF, ``rerank.rrf_k``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical.config import LogicalConfig
from chatbot.logical.scoring import fused_rerank, normalise_rerank
from chatbot.pipeline import Services
from chatbot.settings import SHIPPED_RERANKER
from chatbot.stages.rerank import CrossEncoderReranker

QUESTION = "question"  # the rerank stage's model for the question's language (services.reranker_for)


def positive_rerankers(services: Services, question: str, language: str, config: LogicalConfig) -> list[Any]:
    """The rerankers that score the positive terms of ``question`` in ``language`` (possibly none: then the
    composed cosines rank). A named model is a folder under models/ or a path, loaded once per ``services``
    with the rerank.* runtime and ``config.positive_max_length``; a folder that does not exist is an error."""
    names = config.positive_rerankers.get(language) or (QUESTION,)
    out: list[Any] = []
    for name in names:
        if name == QUESTION:
            model = services.reranker_for(question)[0]
            if getattr(model, "own_language", None) is not None:  # it reads other-language passages only: no term
                model = None
        else:
            model = _named(services, name, config.positive_max_length)
        if model is not None and model not in out:
            out.append(model)
    return out


def _named(services: Services, name: str, max_length: int) -> CrossEncoderReranker:
    loaded = services.__dict__.setdefault("_logical_positive_rerankers", {})
    key = (name, max_length)
    if key not in loaded:
        path = Path(name) if ("/" in name or name.startswith(".")) else SHIPPED_RERANKER.parent / name
        loaded[key] = CrossEncoderReranker.from_settings(path, services.settings, max_length=max_length)
    return loaded[key]


def other_language_hits(services: Services, positives: list[str], language: str, k: int) -> list[Hit]:
    """The best ``k`` passages NOT in ``language`` for each positive term, searched on their own as an ordinary
    Italian question's answer pool is (``DenseRetriever.other_language``: an English card the Italian term ranks
    below every Italian card is still found). None for English questions, ``k`` = 0 or a retriever without it."""
    other = getattr(getattr(services, "dense", None), "other_language", None)
    if k < 1 or language in ("en", "unknown") or other is None:
        return []
    return [h for t in positives for h in other(t, language, k)]


def term_scores(term: str, hits: list[Hit], cosines: np.ndarray, rerankers: list[Any], k: int) -> np.ndarray:
    """One positive term's value per candidate, in [0, 1]. One reranker: its cross-encoder order fused with
    the term's dense order by RRF (``k`` > 0), else its normalised score (as before this module). Several:
    the RRF of the dense order and every model's order (``k`` > 0, divided by its largest possible value), or
    the mean of their normalised scores (``k`` = 0)."""
    raws = [np.asarray(r.score(term, hits), dtype=np.float64) for r in rerankers]
    is_ce = [getattr(r, "name", "") == "cross-encoder" for r in rerankers]
    if len(rerankers) == 1:
        return fused_rerank(raws[0], cosines, k) if k and is_ce[0] else normalise_rerank(raws[0], rerankers[0])
    if not k:
        return np.mean([normalise_rerank(s, r) for s, r in zip(raws, rerankers, strict=True)], axis=0)
    orders = [np.asarray(cosines, dtype=np.float64), *raws]
    fused = np.zeros(len(hits))
    for scores in orders:
        rank = np.empty(len(hits))
        rank[np.argsort(-scores, kind="stable")] = np.arange(1, len(hits) + 1)
        fused += 1.0 / (k + rank)
    return fused / (len(orders) / (k + 1.0))
