"""Retrieval stages: question (or HyDoc) text → top-k certified segments."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chatbot.index import Hit, SegmentIndex
from corpus.model import Segment
from corpus.segmenter import embedding_text


class DenseRetriever:
    """Bi-encoder top-k from the vector index."""

    def __init__(self, index: SegmentIndex, embedder) -> None:
        self.index = index
        self.embedder = embedder

    def __call__(self, text: str, k: int = 50) -> list[Hit]:
        return self.batch([text], k)[0]

    def batch(self, texts: Sequence[str], k: int = 50) -> list[list[Hit]]:
        raw = getattr(self.embedder, "raw", None)
        if raw is None:
            return self._search(self.embedder.embed_queries(list(texts)), k)
        # A query adapter (chatbot/query_adapter.py) orders the hits; detail["dense"] keeps the raw e5 cosine,
        # which the relevance gate and the safety threshold were calibrated on.
        raw_q = np.asarray(raw.embed_queries(list(texts)), dtype=np.float32)
        hits = self._search(self.embedder.adapt(raw_q, list(texts)), k)
        for q, row in zip(raw_q, hits, strict=True):
            for h, v in zip(row, self.index.vectors_of([h.segment.id for h in row]), strict=True):
                h.detail["dense_adapted"] = h.score
                h.detail["dense"] = float(q @ v)
        return hits

    def search_vector(self, vector: np.ndarray, k: int = 50) -> list[Hit]:
        """Top-k for a vector already made (a HyDoc average, a question embedded once and reused)."""
        return self._search(np.asarray(vector)[None, :], k)[0]

    def _search(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        hits = self.index.search_vectors(vectors, k)
        for row in hits:
            for h in row:
                h.detail["dense"] = h.score  # the fusion reranker reads the bi-encoder score from here
        return hits


def _tokenize(texts: Sequence[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)


class BM25Retriever:
    """Lexical BM25 over the same segments (bm25s, Lucene variant)."""

    def __init__(self, segments: Sequence[Segment]) -> None:
        import bm25s

        self.segments = list(segments)
        self.position = {s.id: i for i, s in enumerate(self.segments)}
        self.model = bm25s.BM25()
        self.model.index(_tokenize([embedding_text(s) for s in self.segments]), show_progress=False)
        self.managed = [i for i, s in enumerate(self.segments) if s.content_version]
        self.visible = None  # as SegmentIndex.visible: hides managed segments patients may not read

    def _hide(self, scores: np.ndarray) -> np.ndarray:
        if self.visible is None or not self.managed:
            return scores
        allows = self.visible()
        hidden = [i for i in self.managed if not allows(self.segments[i])]
        if hidden:
            scores = scores.copy()
            scores[hidden] = 0.0
        return scores

    def scores(self, text: str) -> np.ndarray:
        tokens = _tokenize([text])[0]
        if not tokens:
            return np.zeros(len(self.segments), dtype=np.float32)
        return np.asarray(self.model.get_scores(tokens), dtype=np.float32)

    def __call__(self, text: str, k: int = 50) -> list[Hit]:
        scores = self._hide(self.scores(text))
        top = np.argsort(-scores, kind="stable")[:k]
        return [Hit(self.segments[i], float(scores[i]), {"bm25": float(scores[i])}) for i in top if scores[i] > 0]

    def batch(self, texts: Sequence[str], k: int = 50) -> list[list[Hit]]:
        return [self(t, k) for t in texts]
