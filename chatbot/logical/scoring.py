"""Term scores and their composition: candidate vectors, orthogonal NOT, calibrated term values, the fuzzy
or probabilistic combination, reranker score normalisation and the per-document aggregation."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical.compose import Calibration, compose, exact_probability
from chatbot.logical.config import LogicalConfig
from chatbot.logical.query import Node, negative_terms, positive_terms
from chatbot.pipeline import Services
from chatbot.stages.rerank import best_per_document, rrf_scores
from corpus.segmenter import embedding_text


def candidate_vectors(services: Services, hits: list[Hit]) -> np.ndarray:
    """Stored vectors of the candidates' segments (re-embedded when the store cannot return them)."""
    ids = [h.segment.id for h in hits]
    try:
        got = services.index.collection().get(ids=ids, include=["embeddings"])
        by_id = {sid: np.asarray(v, dtype=np.float32) for sid, v in zip(got["ids"], got["embeddings"], strict=True)}
        if all(sid in by_id for sid in ids):
            return np.vstack([by_id[sid] for sid in ids]) if ids else np.zeros((0, services.embedder.dim))
    except Exception:
        pass
    return services.embedder.embed_passages([embedding_text(h.segment) for h in hits])


def stored_sentences(services: Services, hits: list[Hit]) -> tuple[dict | None, str | None]:
    """The candidates' stored sentence vectors (``chatbot.sentence_vectors``), or (None, why) without a store;
    segments with no stored sentences are named in the note (the index predates the store: `chatbot ingest`)."""
    store = getattr(services.index, "sentences", None)
    if store is None:
        return None, "no sentence vectors (index.sentence_vectors=false): NOT terms scored lexically"
    found = store.lookup([h.segment.id for h in hits])
    if not found:
        return None, "the index has no sentence vectors yet (run `chatbot ingest`): NOT terms scored lexically"
    missing = sum(1 for h in hits if h.segment.id not in found)
    return found, (f"{missing} of {len(hits)} candidates have no stored sentence vectors" if missing else None)


def fused_rerank(scores: np.ndarray, cosines: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion of the candidates' cosine order and the reranker's order, 1/(k + r_dense) +
    1/(k + r_rerank) (``chatbot.stages.rerank.rrf_scores``, as the product's rerank stage fuses them), divided
    by its largest possible value 2/(k + 1) so that it lies in (0, 1]."""
    if k < 1:
        raise ValueError(f"rrf k {k}: at least 1")
    scores, cosines = np.asarray(scores, dtype=np.float64), np.asarray(cosines, dtype=np.float64)
    order = np.argsort(-cosines, kind="stable")
    fused = np.empty(len(scores))
    fused[order] = rrf_scores(scores[order], k)
    return fused / (2.0 / (k + 1))


def normalise_rerank(scores: np.ndarray, reranker: Any) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if getattr(reranker, "name", "") == "cross-encoder":
        return 1.0 / (1.0 + np.exp(-scores))
    lo, hi = float(scores.min()), float(scores.max())
    return np.ones_like(scores) if hi - lo < 1e-12 else (scores - lo) / (hi - lo)


def orthogonal_negations(query: Node, names: list[str], term_vecs: np.ndarray) -> np.ndarray:
    """Term vectors where every only-negated term is projected onto the orthogonal complement of the
    positive terms' span (Widdows' orthogonal negation) and renormalised: "NOT bone health" then
    penalises what is specific to bone health, not the vitamin-D topic it shares with the positive term."""
    vecs = np.asarray(term_vecs, dtype=np.float64).copy()
    basis: list[np.ndarray] = []
    for t in positive_terms(query):
        v = vecs[names.index(t)].copy()
        for q in basis:
            v -= (v @ q) * q
        if np.linalg.norm(v) > 1e-9:
            basis.append(v / np.linalg.norm(v))
    for t in negative_terms(query):
        v = vecs[names.index(t)].copy()
        for q in basis:
            v -= (v @ q) * q
        norm = np.linalg.norm(v)
        vecs[names.index(t)] = v / norm if norm > 1e-9 else vecs[names.index(t)]
    return vecs


def aggregate_documents(scored: list[Hit], second_weight: float) -> list[Hit]:
    """One hit per document (its best segment). With ``second_weight`` > 0 the document's score adds that
    share of its second-best segment's score: a document whose several segments satisfy the query (e.g. one
    segment per positive entity) outranks one that matches with a single segment."""
    if second_weight <= 0:
        return best_per_document(scored)
    by_doc: dict[str, list[Hit]] = {}
    for h in sorted(scored, key=lambda h: -h.score):
        by_doc.setdefault(h.segment.doc_id, []).append(h)
    out = []
    for hits in by_doc.values():
        best = hits[0]
        score = best.score + (second_weight * hits[1].score if len(hits) > 1 else 0.0)
        out.append(Hit(best.segment, float(score), {**best.detail, "segment_score": best.score}))
    return sorted(out, key=lambda h: -h.score)


def term_values(cosines: dict[str, np.ndarray], config: LogicalConfig, calibration: Calibration | None) -> dict:
    """The per-term values the composition reads: raw cosines, or calibrated ones (probabilistic mode
    always calibrates)."""
    if config.mode == "probabilistic" or config.calibrate:
        if calibration is None:
            raise ValueError(
                "no calibration is fitted for this embedder: fit one with "
                "`python -m chatbot.logical.calibrate --data FOLDER`"
            )
        return {t: calibration(s) for t, s in cosines.items()}
    return dict(cosines)


def combine(query: Node, values: dict[str, np.ndarray], config: LogicalConfig) -> np.ndarray:
    """Fuzzy composition (ITLR operators) or exact probability (OrLog) of the per-term values."""
    if config.mode == "probabilistic":
        return exact_probability(query, values)
    return compose(query, values, config.ops)
