"""Pipelines by name, composed from small stages with their dependencies passed in."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from chatbot.index import Hit, SegmentIndex, make_client
from chatbot.settings import SHIPPED_RERANKER, Settings
from chatbot.stages.rerank import CrossEncoderReranker, FusionReranker, best_per_document, rerank
from chatbot.stages.retrieve import BM25Retriever, DenseRetriever

PIPELINES = ("bm25", "dense", "dense+rerank", "naive")


@dataclass
class RetrievalResult:
    """What a pipeline found: the candidate list, the final top-n and per-stage timings."""

    question: str
    candidates: list[Hit]
    ranked: list[Hit]
    top: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


class Services:
    """Lazily built, shared dependencies (models load once per process)."""

    def __init__(self, settings: Settings, collection: str | None = None, data_dir: Path | None = None) -> None:
        self.settings = settings
        self.collection_name = collection or settings.index.collection
        self.data_dir = data_dir or settings.paths.data_dir

    @cached_property
    def embedder(self):
        from chatbot.embedders import load_embedder

        return load_embedder(self.settings.embedding.model, self.settings.embedding.threads)

    @cached_property
    def client(self):
        return make_client(self.data_dir, self.settings.index.server_url)

    @cached_property
    def index(self) -> SegmentIndex:
        s = self.settings.index
        return SegmentIndex(
            self.client,
            self.collection_name,
            self.embedder,
            hnsw={"search_ef": s.hnsw_search_ef, "construction_ef": s.hnsw_construction_ef, "M": s.hnsw_m},
            exact=s.exact,
        )

    @cached_property
    def dense(self) -> DenseRetriever:
        return DenseRetriever(self.index, self.embedder)

    @cached_property
    def bm25(self) -> BM25Retriever:
        segments, _ = self.index.all_segments()
        return BM25Retriever(segments)

    @cached_property
    def reranker(self):
        r = self.settings.rerank
        if r.kind == "none":
            return None
        if r.kind == "cross-encoder":
            path = r.model_path or SHIPPED_RERANKER
            return CrossEncoderReranker(path, threads=self.settings.embedding.threads, max_chars=r.max_chars)
        second = None
        if r.fusion_embedder not in ("none", self.settings.embedding.model):
            from chatbot.embedders import load_embedder

            second = load_embedder(r.fusion_embedder, self.settings.embedding.threads)
        return FusionReranker(self.bm25, weight=r.fusion_weight, second_embedder=second, max_chars=r.max_chars)


def _timed(timings: dict[str, float], name: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    out = fn()
    timings[name] = (time.perf_counter() - start) * 1000
    return out


def run_pipeline(name: str, question: str, services: Services) -> RetrievalResult:
    """Run one named pipeline on one question."""
    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline {name!r}; choose one of {', '.join(PIPELINES)}")
    k, n = services.settings.retrieval.top_k, services.settings.retrieval.top_n
    timings: dict[str, float] = {}
    if name == "bm25":
        candidates = _timed(timings, "bm25", lambda: services.bm25(question, k))
        ranked = best_per_document(candidates)
    else:
        candidates = _timed(timings, "retrieve", lambda: services.dense(question, k))
        if name == "dense":
            ranked = best_per_document(candidates)
        else:
            reranker = services.reranker
            ranked = _timed(timings, "rerank", lambda: rerank(question, candidates, reranker, None))
    return RetrievalResult(question, candidates, ranked, ranked[:n], timings)
