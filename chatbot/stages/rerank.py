"""Reranking stages: (question, top-50 hits) → best hits, one per document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np

from chatbot.index import Hit
from corpus.model import Segment
from corpus.segmenter import embedding_text


class Reranker(Protocol):
    name: str

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray: ...


def best_per_document(hits: Sequence[Hit], n: int | None = None) -> list[Hit]:
    """Keep each document's best-scoring segment, in score order, then the first ``n``."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in sorted(hits, key=lambda h: -h.score):
        if hit.segment.doc_id in seen:
            continue
        seen.add(hit.segment.doc_id)
        out.append(hit)
        if n is not None and len(out) == n:
            break
    return out


def rerank(question: str, hits: Sequence[Hit], reranker: Reranker | None, n: int | None = 3) -> list[Hit]:
    """Rescore ``hits`` against the question; the best ``n`` of distinct documents (all if None)."""
    if reranker is None or not hits:
        return best_per_document(hits, n)
    scores = reranker.score(question, hits)
    rescored = [
        Hit(h.segment, float(s), {**h.detail, reranker.name: float(s)}) for h, s in zip(hits, scores, strict=True)
    ]
    return best_per_document(rescored, n)


def _minmax(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    return np.zeros_like(values) if hi - lo < 1e-9 else (values - lo) / (hi - lo)


class FusionReranker:
    """Interim reranker: min-max-normalised bi-encoder score fused with BM25 (and optionally a
    second embedder's cosine). Cheap: BM25 scores and stored dense scores cost no model call."""

    name = "fusion"

    def __init__(self, bm25, weight: float = 0.5, second_embedder=None, max_chars: int = 900) -> None:
        self.bm25 = bm25
        self.weight = weight
        self.second = second_embedder
        self.max_chars = max_chars

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        all_bm25 = self.bm25.scores(question)
        lexical = np.array(
            [all_bm25[self.bm25.position[h.segment.id]] if h.segment.id in self.bm25.position else 0.0 for h in hits],
            dtype=np.float32,
        )
        if self.second is not None:
            q = self.second.embed_queries([question])[0]
            p = self.second.embed_passages([h.segment.text[: self.max_chars] for h in hits])
            semantic = p @ q
        else:
            semantic = np.array([h.detail.get("dense", h.score) for h in hits], dtype=np.float32)
        return self.weight * _minmax(semantic) + (1 - self.weight) * _minmax(lexical)


class CrossEncoderReranker:
    """Any sentence_transformers.CrossEncoder from a local directory. With ``with_title`` (the default, how the
    shipped models/reranker was trained) a segment is read as the bi-encoder reads it: "title: heading" line,
    then the text cut to ``max_chars``."""

    name = "cross-encoder"

    def __init__(
        self, model_path: Path, threads: int = 2, max_chars: int = 900, batch_size: int = 16, with_title: bool = True
    ) -> None:
        import torch
        from sentence_transformers import CrossEncoder

        if not Path(model_path).exists():
            raise FileNotFoundError(f"cross-encoder directory {model_path} does not exist")
        torch.set_num_threads(threads)
        self.model = CrossEncoder(str(model_path), device="cpu")
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.with_title = with_title

    def passage(self, segment: Segment) -> str:
        text = segment.text[: self.max_chars]
        return embedding_text(replace(segment, text=text)) if self.with_title else text

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        pairs = [(question, self.passage(h.segment)) for h in hits]
        return np.asarray(
            self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False), dtype=np.float32
        )
