"""Support scorers: how well a generated sentence is backed by the certified segments (bi-encoder cosine,
or the cross-encoder as a proxy)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chatbot.sentences import split_sentences

# -- support scorers -----------------------------------------------------------------------------------


class BiEncoderSupport:
    """Support of a claim = its best cosine against any sentence (or whole text) of the evidence."""

    kind = "bi-encoder"

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.name = f"bi-encoder:{getattr(embedder, 'name', 'embedder')}"

    def __call__(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        if not claims:
            return np.zeros(0, dtype=np.float32)
        pieces = [s for text in evidence for s in split_sentences(text)] + list(evidence)
        if not pieces:
            return np.full(len(claims), -1.0, dtype=np.float32)
        c = self.embedder.embed_passages(list(claims))
        e = self.embedder.embed_passages(pieces)
        return (c @ e.T).max(axis=1)


class CrossEncoderSupport:
    """Support of a claim = the cross-encoder's best score against any sentence or whole text of the evidence
    (the claim in the question slot; a relevance model used as a support proxy, not trained for entailment)."""

    kind = "cross-encoder"

    def __init__(self, reranker) -> None:
        self.reranker = reranker
        self.name = "cross-encoder"

    def __call__(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        if not claims or not evidence:
            return np.full(len(claims), -1e9, dtype=np.float32)
        max_chars = getattr(self.reranker, "max_chars", 900)
        # each sentence and each whole text, as BiEncoderSupport: against sentences it separates supported
        # from unsupported claims better than against whole segments (test precision/recall of removal
        # 0.76/0.71 vs 0.63/0.59, evaluation/results/redteam-thresholds-crossencoder.md)
        pieces = [s for text in evidence for s in split_sentences(text)] + [e[:max_chars] for e in evidence]
        pairs = [(c, e) for c in claims for e in pieces]
        scores = np.asarray(self.reranker.predict(pairs), dtype=np.float32)
        return scores.reshape(len(claims), len(pieces)).max(axis=1)


def support_scorer(services, kind: str = "auto"):
    """(scorer, kind): the shipped cross-encoder when it exists (or is the reranker), else the bi-encoder."""
    from chatbot.settings import SHIPPED_RERANKER
    from chatbot.stages.rerank import CrossEncoderReranker

    if kind in ("auto", "cross-encoder"):
        reranker = services.reranker if services.settings.rerank.kind == "cross-encoder" else None
        if reranker is None and Path(services.settings.rerank.model_path or SHIPPED_RERANKER).exists():
            reranker = _shipped_cross_encoder(services)
        if isinstance(reranker, CrossEncoderReranker):
            return CrossEncoderSupport(reranker), "cross-encoder"
        if kind == "cross-encoder":
            raise FileNotFoundError("compose.support_scorer=cross-encoder but no cross-encoder model is available")
    return BiEncoderSupport(services.embedder), "bi-encoder"


def _shipped_cross_encoder(services):
    cache = services.__dict__.setdefault("_support_cross_encoder", {})
    if "model" not in cache:
        from chatbot.settings import SHIPPED_RERANKER
        from chatbot.stages.rerank import CrossEncoderReranker

        path = services.settings.rerank.model_path or SHIPPED_RERANKER
        cache["model"] = CrossEncoderReranker.from_settings(path, services.settings)
    return cache["model"]
