"""Retrieval stages: question (or HyDoc) text → top-k certified segments."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from chatbot.index import Hit, SegmentIndex
from chatbot.language import question_language
from corpus.model import Segment
from corpus.segmenter import embedding_text


class DenseRetriever:
    """Bi-encoder top-k from the vector index."""

    def __init__(
        self,
        index: SegmentIndex,
        embedder,
        cross_language_offset: Mapping[str, float] | Callable[[], Mapping[str, float]] | None = None,
        language_of: Callable[[str], str] | None = None,
    ) -> None:
        """``cross_language_offset`` (retrieval.cross_language_offset, or a function that reads it at each
        search): {question language: δ added to the cosine of passages in another language}."""
        self.index = index
        self.embedder = embedder
        self.cross_language_offset = cross_language_offset
        self.language_of = language_of or question_language

    @property
    def offsets(self) -> dict[str, float]:
        given = self.cross_language_offset
        given = given() if callable(given) else given
        return {k: float(v) for k, v in (given or {}).items() if float(v) != 0.0}

    def __call__(self, text: str, k: int = 50) -> list[Hit]:
        return self.batch([text], k)[0]

    def batch(self, texts: Sequence[str], k: int = 50) -> list[list[Hit]]:
        raw = getattr(self.embedder, "raw", None)
        if raw is None:
            return self._search(self.embedder.embed_queries(list(texts)), k, texts)
        # A query adapter (chatbot/query_adapter.py) orders the hits; detail["dense"] keeps the raw e5 cosine,
        # which the relevance gate and the safety threshold were calibrated on.
        raw_q = np.asarray(raw.embed_queries(list(texts)), dtype=np.float32)
        adapted = self.embedder.adapt(raw_q, list(texts))
        hits = self._search(adapted, k, texts)
        moved = ~np.all(adapted == raw_q, axis=1)  # a question the adapter left alone (English) has its raw cosine
        for q, row, was_moved in zip(raw_q, hits, moved, strict=True):
            if was_moved:
                self._keep_raw_cosine(q, row)
            else:
                for h in row:
                    h.detail["dense_adapted"] = h.detail["dense"]
        return hits

    def _keep_raw_cosine(self, raw_q: np.ndarray, row: Sequence[Hit]) -> None:
        """Hits found with an adapted vector: ``detail["dense_adapted"]`` keeps the score they were ordered by,
        ``detail["dense"]`` becomes the raw e5 cosine (from the stored passage vectors) the gate reads."""
        for h, v in zip(row, self.index.vectors_of([h.segment.id for h in row]), strict=True):
            h.detail["dense_adapted"] = h.detail["dense"]
            h.detail["dense"] = float(raw_q @ v)

    def other_language(self, text: str, language: str, k: int = 3) -> list[Hit]:
        """The best passages NOT in ``language`` for ``text``, searched on their own (a separate pool: an English
        card an Italian question ranks below every Italian card is still this pool's first), ordered by the
        retrieval vector (the query adapter's, when it adapts ``text``); ``detail["dense"]`` is the raw e5 cosine
        as in ``batch``. Fetches deeper until ``k`` such passages are found or the index is exhausted."""
        raw = getattr(self.embedder, "raw", None)
        # the encoder's own query cache (chatbot.vector_cache) holds the vector of the question's first search
        raw_q = np.asarray((raw or self.embedder).embed_queries([text]), dtype=np.float32)
        vector = self.embedder.adapt(raw_q, [text]) if raw is not None else raw_q
        fetch = max(4 * k, 50)
        while True:
            row = self.index.search_vectors(vector, fetch)[0]
            found = [h for h in row if (h.segment.language or "") not in ("", language)]
            if len(found) >= k or len(row) < fetch:
                break
            fetch *= 4
        found = found[:k]
        for h in found:
            h.detail["dense"] = h.score
        if raw is not None:
            self._keep_raw_cosine(raw_q[0], found)
        return found

    def search_vector(self, vector: np.ndarray, k: int = 50) -> list[Hit]:
        """Top-k for a vector already made (a HyDoc average, a question embedded once and reused)."""
        return self._search(np.asarray(vector)[None, :], k)[0]

    def _search(self, vectors: np.ndarray, k: int, texts: Sequence[str] | None = None) -> list[list[Hit]]:
        hits = self.index.search_vectors(vectors, k)
        for row in hits:
            for h in row:
                h.detail["dense"] = h.score  # the fusion reranker reads the bi-encoder score from here
        offsets = self.offsets
        if not offsets or texts is None:
            return hits
        for i, text in enumerate(texts):
            language = self.language_of(text)
            delta = offsets.get(language, 0.0)
            if delta and self._other_language_present(language, hits[i]):
                hits[i] = self._offset_search(np.asarray(vectors)[i], k, language, delta)
        return hits

    def _other_language_present(self, language: str, hits: Sequence[Hit]) -> bool:
        """Whether any passage of the index is in another language than ``language`` (else the offset is a
        no-op and no deeper search is needed)."""
        if any(h.segment.language != language for h in hits):
            return True
        check = getattr(self.index, "has_language_other_than", None)
        return True if check is None else bool(check(language))

    def _offset_search(self, vector: np.ndarray, k: int, language: str, delta: float) -> list[Hit]:
        """Top-k by cosine + ``delta`` for passages not in ``language``: fetches deeper until no unseen passage
        (cosine at most the last one fetched, so at most that + max(delta, 0)) can enter the top k."""
        fetch = max(2 * k, k + 10)
        while True:
            row = self.index.search_vectors(vector[None, :], fetch)[0]
            for h in row:
                h.detail["dense"] = h.score
                if h.segment.language != language:
                    h.detail["cross_language_offset"] = delta
                    h.score += delta
            ranked = sorted(row, key=lambda h: -h.score)
            exhausted = len(row) < fetch
            if exhausted or len(ranked) < k or (row[-1].detail["dense"] + max(delta, 0.0) <= ranked[k - 1].score):
                return ranked[:k]
            fetch *= 4


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
