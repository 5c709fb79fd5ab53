"""HyDE as one composed object: retrieve certified segments with an LLM-written hypothetical document.

``HyDE(services, kind)`` reads like texttron/hyde's ``HyDE(promptor, generator, encoder, searcher)``; its
parts live one stage to a module:

- pre-retrieval (``chatbot.stages.pre_retrieval``): cot's naive dense top-k, whose best documents become the
  HyDoc's extracts (and whose candidates are the fallback's);
- HyDoc writing (``chatbot.stages.hydoc``): prompts, sampling, parsing; ``hyde`` zero-shot from the
  question, ``cot`` pragmatic analysis + HyDoc in one LLM call or two (``hyde.cot_calls``);
- the HyDoc cache (``chatbot.stages.hydoc_cache``) and question typing (``chatbot.stages.question_type``);
- encoding (``encode`` below: HyDocs averaged with the question), dense retrieval
  (``chatbot.stages.retrieve.DenseRetriever``), reranking with its choice and fusion
  (``chatbot.pipeline.rerank_stage`` → ``chatbot.stages.rerank``).

Any LLM fault (down, past ``llm.timeout_s``, garbage) falls back to naive retrieval and says so in
``RetrievalResult.info["fallback"]``; the patient's question never fails. The HyDoc is written in the corpus
language (``hyde.corpus_language``), whatever the question's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services, register_pipeline, rerank_stage
from chatbot.stage_progress import timed
from chatbot.stages.hydoc import Generation, fault, generate_cot, generate_zero_shot, llm_ms, prestart, run_llm
from chatbot.stages.hydoc_cache import cache_for, cache_key_for
from chatbot.stages.pre_retrieval import pre_context, pre_retrieve
from chatbot.stages.question_type import heuristic_type


def encode(
    question: str,
    hydocs: list[str],
    embedder: Any,
    average_question: bool,
    question_vector: np.ndarray | None = None,
) -> np.ndarray:
    """One unit query vector: mean of the HyDocs' passage embeddings (plus the question's query
    embedding when ``average_question``, as in the HyDE paper; ``question_vector`` if already known)."""
    vectors = [np.asarray(embedder.embed_passages(hydocs), dtype=np.float32)]
    if average_question:
        if question_vector is None:
            question_vector = np.asarray(embedder.embed_queries([question]), dtype=np.float32)[0]
        vectors.append(np.asarray(question_vector, dtype=np.float32)[None, :])
    mean = np.vstack(vectors).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


@dataclass
class _Run:
    """One question's state while HyDE answers it (what the trace and the fallback need)."""

    question: str
    info: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    question_vector: np.ndarray | None = None
    pre_candidates: list[Hit] | None = None
    key: str = ""  # the HyDoc cache key


class HyDE:
    """``kind`` "hyde" (zero-shot HyDoc) or "cot" (pre-retrieval → pragmatic analysis + HyDoc)."""

    def __init__(self, services: Services, kind: str) -> None:
        if kind not in ("hyde", "cot"):
            raise ValueError(f"unknown HyDE kind {kind!r}: hyde or cot")
        self.services, self.kind = services, kind
        self.cfg = services.settings.hyde
        self.k, self.top_n = services.settings.retrieval.top_k, services.settings.retrieval.top_n
        self.cache = cache_for(services)

    def __call__(self, question: str) -> RetrievalResult:
        run = _Run(question, _base_info(self.kind, question, self.services))
        gen = self._cached(run)
        if gen is None:
            try:
                gen = self._write(run)  # (cot: pre-retrieval, then) the LLM writes the HyDoc
            except Exception as exc:  # LLMUnavailable, GarbageOutput, or anything a client raises
                return self._fallback(run, exc)
        self._record(run, gen)
        vector = timed(run.timings, "encode", lambda: self._encode(run, gen))
        candidates = timed(run.timings, "search", lambda: self.services.dense.search_vector(vector, self.k))
        ranked = rerank_stage(question, candidates, self.services, run.timings, query=self._rerank_text(run, gen))
        return RetrievalResult(question, candidates, ranked, ranked[: self.top_n], run.timings, run.info)

    # -- parts ----------------------------------------------------------------------------------------
    def _cached(self, run: _Run) -> Generation | None:
        if self.kind == "hyde":
            run.info["question_type"], run.info["type_source"] = heuristic_type(run.question), "heuristic"
        run.key = cache_key_for(self.kind, run.question, self.services)
        cached = timed(run.timings, "cache", lambda: self.cache.get(run.key)) if self.cache else None
        if not cached:
            run.info["cache"] = "miss" if self.cache else "off"
            return None
        run.info["cache"] = "hit"
        if self.kind == "cot":
            run.info["pre_retrieved"] = cached.get("pre_retrieved", [])
            return Generation(cached["hydocs"], cached.get("qtype"), cached.get("analysis", {}))
        return Generation(cached["hydocs"])

    def _write(self, run: _Run) -> Generation:
        llm = self.services.llm
        prestart(llm, run.timings)  # the embedded server loads while we embed / pre-retrieve
        if self.kind == "hyde":
            if self.cfg.average_question:
                run.question_vector = timed(run.timings, "encode_question", lambda: self._question_vector(run))
            gen = run_llm(run.timings, lambda: generate_zero_shot(run.question, llm, self.cfg))
            stored = {"hydocs": gen.hydocs}
        else:
            run.question_vector, run.pre_candidates = timed(
                run.timings,
                "pre_retrieve",
                lambda: pre_retrieve(run.question, self.services.query_embedder, self.services.dense, self.k),
            )
            pre_hits, context = pre_context(run.pre_candidates, self.cfg)
            run.info["pre_retrieved"] = [h.segment.id for h in pre_hits]
            gen = run_llm(run.timings, lambda: generate_cot(run.question, context, llm, self.cfg))
            stored = {"hydocs": gen.hydocs, "qtype": gen.qtype, "analysis": gen.analysis}
            stored["pre_retrieved"] = run.info["pre_retrieved"]
        llm_ms(run.timings, gen)
        if self.cache:
            self.cache.put(run.key, stored)
        return gen

    def _record(self, run: _Run, gen: Generation) -> None:
        info = run.info
        if self.kind == "cot":
            llm_type = gen.qtype
            info["question_type"] = llm_type or heuristic_type(run.question)
            info["type_source"] = "llm" if llm_type else "heuristic"
            info["pragmatic"] = {k: v for k, v in gen.analysis.items() if k != "type"}
        info["hydocs"] = gen.hydocs
        info["hydoc"] = gen.hydocs[0] if gen.hydocs else None
        info["llm_calls"] = gen.calls
        if gen.errors:
            info["sample_errors"] = gen.errors

    def _question_vector(self, run: _Run) -> np.ndarray:
        return np.asarray(self.services.query_embedder.embed_queries([run.question]), dtype=np.float32)[0]

    def _encode(self, run: _Run, gen: Generation) -> np.ndarray:
        embedder = self.services.embedder
        return encode(run.question, gen.hydocs, embedder, self.cfg.average_question, run.question_vector)

    def _rerank_text(self, run: _Run, gen: Generation) -> str:
        return run.question if self.cfg.rerank_with == "question" else f"{run.question}\n{gen.hydocs[0]}"

    def _fallback(self, run: _Run, exc: Exception) -> RetrievalResult:
        """Naive retrieval (reusing the pre-retrieved candidates, or the question's vector, when there are
        some), fallback recorded."""
        info, timings = run.info, run.timings
        if self.kind == "cot":
            info["question_type"], info["type_source"] = heuristic_type(run.question), "heuristic"
        info["fallback"] = {"to": "naive", **fault(exc)}
        candidates = run.pre_candidates
        if candidates is None:
            if run.question_vector is not None:
                vector = run.question_vector
                candidates = timed(timings, "retrieve", lambda: self.services.dense.search_vector(vector, self.k))
            else:
                candidates = timed(timings, "retrieve", lambda: self.services.dense(run.question, self.k))
        ranked = rerank_stage(run.question, candidates, self.services, timings)
        return RetrievalResult(run.question, candidates, ranked, ranked[: self.top_n], timings, info)


def _base_info(pipeline: str, question: str, services: Services) -> dict[str, Any]:
    cfg = services.settings.hyde
    cot = {"cot_calls": cfg.cot_calls, "pre_k": cfg.pre_k, "pre_chars": cfg.pre_chars} if pipeline == "cot" else {}
    return {
        "question": question,
        "llm_model": services.settings.llm.model,
        "llm_endpoint": services.settings.llm.base_url,
        "hyde_options": {
            "average_question": cfg.average_question,
            "samples": cfg.samples,
            "max_tokens": cfg.max_tokens,
            "rerank_with": cfg.rerank_with,
            **cot,
        },
        "fallback": None,
    }


@register_pipeline("hyde")
def hyde_pipeline(question: str, services: Services) -> RetrievalResult:
    """Zero-shot HyDoc → embed → top-k → rerank (against the question) → top-n."""
    return HyDE(services, "hyde")(question)


@register_pipeline("cot")
def cot_pipeline(question: str, services: Services) -> RetrievalResult:
    """Pre-retrieval → pragmatic analysis + HyDoc → embed → top-k → rerank (against the question) → top-n."""
    return HyDE(services, "cot")(question)
