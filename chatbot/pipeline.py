"""Pipelines by name, composed from small stages with their dependencies passed in (``Services``:
``chatbot/services.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chatbot.index import Hit
from chatbot.services import Services, optional_llm
from chatbot.stage_progress import timed
from chatbot.stages.rerank import CrossEncoderReranker, best_per_document, rerank

__all__ = [
    "PipelineFn",
    "RetrievalResult",
    "Services",
    "bm25_pipeline",
    "dense_pipeline",
    "get_pipeline",
    "naive_pipeline",
    "optional_llm",
    "pipeline_names",
    "register_lazy",
    "register_pipeline",
    "rerank_stage",
    "run_pipeline",
]


@dataclass
class RetrievalResult:
    """What a pipeline found: the candidate list, the final top-n and per-stage timings."""

    question: str
    candidates: list[Hit]
    ranked: list[Hit]
    top: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


PipelineFn = Callable[[str, Services], RetrievalResult]
_REGISTRY: dict[str, PipelineFn] = {}
# Pipelines defined in other modules, imported on first use so their dependencies stay lazy.
_LAZY: dict[str, str] = {}


def register_pipeline(name: str) -> Callable[[PipelineFn], PipelineFn]:
    """Decorator: make a pipeline selectable by name in settings, CLI and harness."""

    def deco(fn: PipelineFn) -> PipelineFn:
        _REGISTRY[name] = fn
        return fn

    return deco


def register_lazy(name: str, module: str) -> None:
    _LAZY[name] = module


def pipeline_names() -> list[str]:
    return sorted({*_REGISTRY, *_LAZY})


def get_pipeline(name: str) -> PipelineFn:
    if name not in _REGISTRY and name in _LAZY:
        import importlib

        importlib.import_module(_LAZY[name])
    if name not in _REGISTRY:
        raise ValueError(f"unknown pipeline {name!r}; choose one of {', '.join(pipeline_names())}")
    return _REGISTRY[name]


def run_pipeline(name: str, question: str, services: Services) -> RetrievalResult:
    """Run one named pipeline on one question."""
    return get_pipeline(name)(question, services)


def rerank_stage(
    question: str, candidates: list[Hit], services: Services, timings: dict[str, float], query: str | None = None
) -> list[Hit]:
    """Rerank the candidates against ``query`` (default: the question) with ``services.reranker_for(question)``
    (a cross-encoder: the first rerank.candidates of them, fused with the first stage's order when
    rerank.rrf_k > 0), then cards of a life stage the question contradicts below the others
    (retrieval.stage_order); returns the full list, one hit per document. The reranker is chosen by the patient's
    question, as the answer trace reports it, even when the query adds an English HyDoc."""
    from chatbot.stages.rerank import rerank_other_language as rerank_other

    reranker, _ = services.reranker_for(question)
    cfg = services.settings.rerank
    ce = isinstance(reranker, CrossEncoderReranker)
    own_k = reranker.rrf_k if ce else None  # a rerank.language_models model has its own
    limit, rrf_k = (cfg.candidates, (cfg.rrf_k if own_k is None else own_k) or None) if ce else (None, None)
    weight = cfg.rrf_first_weight if own_k is None else 1.0  # rerank.language_models keep plain RRF
    text = question if query is None else query
    own = getattr(reranker, "own_language", None)  # rerank.language_passages="other": its passages keep their order
    if own is not None:
        ranked = timed(timings, "rerank", lambda: rerank_other(text, candidates, reranker, own, None, limit, rrf_k))
    else:
        ranked = timed(timings, "rerank", lambda: rerank(text, candidates, reranker, None, limit, rrf_k, weight))
    if services.settings.retrieval.stage_order:
        from chatbot.stages.life_stage import stage_order

        ranked, _ = stage_order(question, ranked)
    return ranked


def _first_stage_only(stage: str, question: str, services: Services) -> RetrievalResult:
    """One retriever (``services.bm25`` or ``services.dense``), no reranking."""
    timings: dict[str, float] = {}
    retriever = services.bm25 if stage == "bm25" else services.dense
    candidates = timed(timings, stage, lambda: retriever(question, services.settings.retrieval.top_k))
    ranked = best_per_document(candidates)
    return RetrievalResult(question, candidates, ranked, ranked[: services.settings.retrieval.top_n], timings)


@register_pipeline("bm25")
def bm25_pipeline(question: str, services: Services) -> RetrievalResult:
    return _first_stage_only("bm25", question, services)


@register_pipeline("dense")
def dense_pipeline(question: str, services: Services) -> RetrievalResult:
    return _first_stage_only("retrieve", question, services)


@register_pipeline("naive")
@register_pipeline("dense+rerank")
def naive_pipeline(question: str, services: Services) -> RetrievalResult:
    """The seed's naive RAG: question → bi-encoder top-k → rerank → top-n."""
    timings: dict[str, float] = {}
    candidates = timed(timings, "retrieve", lambda: services.dense(question, services.settings.retrieval.top_k))
    ranked = rerank_stage(question, candidates, services, timings)
    return RetrievalResult(question, candidates, ranked, ranked[: services.settings.retrieval.top_n], timings)


register_lazy("logical", "chatbot.logical.pipeline")
# Variants of `logical` (chatbot/logical/config.py VARIANTS): operators, calibration, probabilistic, OrLog,
# cross-encoder term scores, HyDoc per positive term.
for _name in (
    "prob",
    "calibrated",
    "minmax",
    "and-sum",
    "not-inverse",
    "composed",
    "itlr",
    "orlog",
    "ce",
    "ce-prob",
    "hyde",
):
    register_lazy(f"logical-{_name}", "chatbot.logical.pipeline")
register_lazy("hyde", "chatbot.stages.hyde")
register_lazy("cot", "chatbot.stages.hyde")
