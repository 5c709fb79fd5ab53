"""The NegConstraint feature loop shared by the session-13 and session-14 studies (``evaluation.negation_s13``,
``evaluation.negation_s14``): today's logical route on every question of a split, and what both read from it.

``collect(split, build)`` runs ``logical_retrieve`` at the configured defaults on each question, scores its gathered
candidates (every term's raw and orthogonalised e5 cosine, the question's cosine, the positive reranker) and hands
that ``RouteRun`` to ``build``, which returns the question's row; one progress line per question goes to stdout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RouteRun:
    """One question's route and the signals both studies share (candidates in the route's gathered order)."""

    qid: str
    text: str
    services: Any
    names: list[str]  # every term of the decomposition, in order of first appearance
    pos: list[str]
    negs: list[str]
    cands: list[Any]  # the route's gathered candidates (hits)
    hits: list[Any]  # the candidates as unscored hits, for the reranker
    tv: np.ndarray  # the terms' and the whole question's e5 query vectors
    cv: np.ndarray  # the candidates' stored e5 vectors
    raw: np.ndarray  # cv @ tv: candidates x (terms + question)
    orth: np.ndarray  # the candidates' cosines to the orthogonalised NOT terms
    ce_model: Any  # the positive reranker of the question's language
    ranked: list[str]  # doc ids of the route's final order
    relevant: set[str]

    def ce(self, text: str) -> np.ndarray:
        """The positive reranker's score of every candidate for ``text``."""
        return np.asarray(self.ce_model.score(text, self.hits), dtype=np.float64)

    def row(self, signals: dict[str, Any], seg_ids: bool = False, vectors: bool = False) -> dict[str, Any]:
        """The question's pickled row: its terms, the candidates' documents and texts (``seg_ids``: their segment
        ids too; ``vectors``: the candidates' and terms' float32 vectors), the per-term cosines, a study's own
        ``signals``, the route's order and the relevant documents."""
        cands, n = self.cands, len(self.names)
        out: dict[str, Any] = {"text": self.text, "pos": self.pos, "negs": self.negs}
        if seg_ids:
            out["seg_ids"] = [h.segment.id for h in cands]
        out |= {"doc_ids": [h.segment.doc_id for h in cands], "texts": [h.segment.text for h in cands]}
        if vectors:
            out |= {"vecs": self.cv.astype(np.float32), "term_vecs": self.tv.astype(np.float32)}
        out |= {
            "raw": {t: self.raw[:, j] for j, t in enumerate(self.names)},
            "raw_q": self.raw[:, n],
            "orth": {t: self.orth[:, j] for j, t in enumerate(self.names)},
        }
        return {**out, **signals, "ranked": self.ranked, "relevant": self.relevant}


def collect(split: str, build: Callable[[RouteRun], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``build``'s row for every question of NegConstraint's ``split``, by query id."""
    from chatbot.index import Hit
    from chatbot.logical.config import config_for
    from chatbot.logical.detect import analyse
    from chatbot.logical.pipeline import logical_retrieve
    from chatbot.logical.positive_scores import positive_rerankers
    from chatbot.logical.query import negative_terms, positive_terms, terms
    from chatbot.logical.scoring import candidate_vectors, orthogonal_negations
    from evaluation.harness import load_judged
    from evaluation.logical_bench.common import SHARED, eval_services

    data = SHARED / "negconstraint"
    judged = load_judged(data, split=split)
    services = eval_services(data)
    config = config_for(services.settings)
    out: dict[str, dict[str, Any]] = {}
    for qid, text in judged.queries.items():
        result = logical_retrieve(text, services, config)
        detection = analyse(text)
        query = detection.query
        names, pos, negs = terms(query), positive_terms(query), negative_terms(query)
        cands = result.candidates
        tv = np.asarray(services.embedder.embed_queries([*names, text]), dtype=np.float64)
        cv = candidate_vectors(services, cands).astype(np.float64)
        hits = [Hit(h.segment, 0.0, {}) for h in cands]
        raw, orth = cv @ tv.T, cv @ orthogonal_negations(query, names, tv[: len(names)]).T
        ce_model = positive_rerankers(services, text, detection.language, config)[0]
        ranked = [h.segment.doc_id for h in result.ranked]
        relevant = {d for d, s in judged.qrels[qid].items() if s >= 1}
        # the fields in their declared order (the locals carry the fields' names)
        run = RouteRun(
            qid, text, services, names, pos, negs, cands, hits, tv, cv, raw, orth, ce_model, ranked, relevant
        )
        out[qid] = build(run)
        print(qid, len(cands), flush=True)
    return out
