"""The shared, lazily built dependencies of the pipelines and the answer path (models load once per process).

``Services`` builds the embedders, the index, the retrievers, the rerankers, the red-flag models and the LLM client
on first use; ``chatbot.pipeline`` re-exports it (and ``optional_llm``) for its callers.
"""

from __future__ import annotations

import logging
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from chatbot.index import SegmentIndex, make_client
from chatbot.settings import SHIPPED_RERANKER, Settings
from chatbot.stages.rerank import CrossEncoderReranker, FusionReranker
from chatbot.stages.retrieve import BM25Retriever, DenseRetriever


class Services:
    """Lazily built, shared dependencies (models load once per process)."""

    def __init__(self, settings: Settings, collection: str | None = None, data_dir: Path | None = None) -> None:
        self.settings = settings
        self.collection_name = collection or settings.index.collection
        self.data_dir = data_dir or settings.paths.data_dir

    @cached_property
    def content_gate(self):
        """What patients may read of the managed documents (chatbot/content_gate.py), over the configured
        database; opened only when a retrieved segment belongs to a managed document. The web app sets its own."""
        from chatbot.content_gate import ContentGate
        from chatbot.store.db import open_store

        return ContentGate(open_store(self.settings), self.settings)

    @cached_property
    def embedder(self):
        from chatbot.embedders import load_embedder

        return load_embedder(
            self.settings.embedding.model, self.settings.embedding.threads, self.settings.runtime.int8_matmul
        )

    @cached_property
    def query_embedder(self):
        """The embedder for RETRIEVAL question vectors: ``embedder`` through the trained query adapter when
        embedding.query_adapter names one (chatbot/query_adapter.py; "auto": the shipped one when the embedder is
        the e5-onnx it was trained for), else ``embedder`` itself; embedding.query_encoder (a fine-tuned e5 query
        encoder, chatbot/query_encoder.py) replaces both when set."""
        from chatbot.query_adapter import BASE_EMBEDDER as ADAPTER_BASE
        from chatbot.query_adapter import retrieval_embedder
        from chatbot.query_encoder import query_encoder_embedder, setting_over
        from chatbot.resources import shipped_model, workspace_root

        e = self.settings.embedding
        # auto reads the embedder actually built, as the adapter's auto and relevance.gate_key do: another embedder
        # (a test's, a plug-in's, a trimmed build) goes without the encoder, tuned for e5-onnx's index only
        tuned = query_encoder_embedder(
            self.embedder,
            setting_over(e.query_encoder, self.embedder),
            workspace_root(),
            e.threads,
            e.query_encoder_languages or None,
            self.settings.runtime.int8_matmul,
        )
        if tuned is not None:  # the tuned encoder replaces the adapter (which was fitted to raw e5 vectors)
            return tuned
        setting = self.settings.embedding.query_adapter.strip()
        if setting.lower() == "auto":  # the shipped adapter fits e5-onnx's vectors only: other embedders go without
            setting = "shipped" if getattr(self.embedder, "name", None) == ADAPTER_BASE else "none"
        if setting.lower() == "shipped":
            setting = str(shipped_model("query_adapter"))
        return retrieval_embedder(self.embedder, setting, languages=self.settings.embedding.query_adapter_languages)

    @cached_property
    def client(self):
        return make_client(self.data_dir, self.settings.index.server_url)

    @cached_property
    def index(self) -> SegmentIndex:
        s = self.settings.index
        index = SegmentIndex(
            self.client,
            self.collection_name,
            self.embedder,
            hnsw={"search_ef": s.hnsw_search_ef, "construction_ef": s.hnsw_construction_ef, "M": s.hnsw_m},
            exact=s.exact,
        )
        index.visible = self._content_visible
        if s.sentence_vectors:
            from chatbot.sentence_vectors import SentenceVectors

            index.sentences = SentenceVectors(self.client, self.collection_name, self.embedder)
        return index

    def _content_visible(self):
        """The content gate's "may a patient read this segment?" at the current content generation."""
        return self.content_gate.view().allows

    @cached_property
    def dense(self) -> DenseRetriever:
        from chatbot.language import question_language

        language_of = partial(question_language, min_confidence=self.settings.safety.language_min_confidence)
        # retrieval.cross_language_offset is read at each search (`eval replies --versus` changes settings)
        return DenseRetriever(
            self.index, self.query_embedder, lambda: self.settings.retrieval.cross_language_offset, language_of
        )

    @cached_property
    def bm25(self) -> BM25Retriever:
        segments, _ = self.index.all_segments()
        retriever = BM25Retriever(segments)
        retriever.visible = self._content_visible
        return retriever

    @cached_property
    def cross_encoder(self) -> CrossEncoderReranker | None:
        """Our cross-encoder as the rerank.* settings describe it (model_path, else models/reranker; runtime,
        max_length, max_chars), whatever rerank.kind is; None when model_path is empty and models/reranker
        is missing. The rerank stage (rerank.kind=cross-encoder) and the logical pipeline's cross-encoder
        term scores share this one loaded model."""
        r = self.settings.rerank
        if r.model_path is None and not (SHIPPED_RERANKER / "config.json").is_file():
            return None
        return CrossEncoderReranker.from_settings(r.model_path or SHIPPED_RERANKER, self.settings)

    @cached_property
    def redflag_classifier(self):
        """The red-flag classifier (safety.redflag_model), or None: switched off, or no weights there (then
        the red-flag screen runs on the hand-written rules alone; the answer trace says which ran)."""
        from chatbot.stages.redflag_classifier import shipped_classifier

        s = self.settings.safety
        return shipped_classifier(str(s.redflag_model)) if s.redflag_classifier else None

    @cached_property
    def redflag_context(self):
        """The red-flag screen's contextual e5 head (safety.redflag_context, with the classifier), or None."""
        from chatbot.stages.redflag_context import shipped_context

        s = self.settings.safety
        return shipped_context(str(s.redflag_model)) if s.redflag_classifier and s.redflag_context else None

    @cached_property
    def reranker(self):
        """The configured reranker. rerank.kind=cross-encoder with no model_path and no models/reranker
        falls back to the fusion reranker, whose ``note`` (copied into the answer trace) says so."""
        r = self.settings.rerank
        if r.kind == "none":
            return None
        if r.kind == "cross-encoder":
            if self.cross_encoder is not None:
                return self.cross_encoder
            fusion = self.fusion_reranker
            fusion.note = f"rerank.kind=cross-encoder but no model in {SHIPPED_RERANKER}: fusion reranker used"
            logging.getLogger("chatbot.pipeline").warning(fusion.note)  # its logger before the move
            return fusion
        return self.fusion_reranker

    def reranker_for(self, question: str) -> tuple[Any, str | None]:
        """(reranker, note) for one question: its language's rerank.language_models entry ("none": no
        reranker, the first stage's order), else the cross-encoder for rerank.cross_encoder_languages (ours:
        English), else the fusion reranker; the note says why (the answer trace shows it)."""
        reranker = self.reranker
        if not isinstance(reranker, CrossEncoderReranker):
            return reranker, getattr(reranker, "note", None)
        from chatbot.language import question_language

        allowed = self.settings.rerank.cross_encoder_languages
        language = question_language(question, self.settings.safety.language_min_confidence)
        if self.settings.rerank.language_models.get(language) == "none":
            return None, f"question language {language}: first-stage order kept (rerank.language_models)"
        own = self.language_cross_encoder(language)
        if own is not None:
            return own, own.note
        if language in allowed:
            return reranker, reranker.note
        note = (
            f"question language {language}: the cross-encoder reranks {', '.join(allowed) or 'no'} questions only "
            "(rerank.cross_encoder_languages); fusion reranker used"
        )
        return self.fusion_reranker, note

    def language_cross_encoder(self, language: str) -> CrossEncoderReranker | None:
        """The cross-encoder of rerank.language_models for this question language (loaded once), or None.
        Its ``rrf_k`` (rerank.language_rrf_k) replaces rerank.rrf_k in the rerank stage."""
        r = self.settings.rerank
        where = r.language_models.get(language)
        if not where or where == "none":
            return None
        other_only = r.language_passages.get(language, "all") == "other"
        loaded = self.__dict__.setdefault("_language_cross_encoders", {})
        key = (where, language if other_only else None)
        if key not in loaded:
            path = Path(where) if ("/" in where or where.startswith(".")) else SHIPPED_RERANKER.parent / where
            model = CrossEncoderReranker.from_settings(path, self.settings, max_length=r.language_max_length)
            model.rrf_k = r.language_rrf_k
            model.own_language = language if other_only else None
            loaded[key] = model
        return loaded[key]

    @cached_property
    def fusion_reranker(self) -> FusionReranker:
        r = self.settings.rerank
        second = None
        if r.fusion_embedder not in ("none", self.settings.embedding.model):
            from chatbot.embedders import load_embedder

            second = load_embedder(
                r.fusion_embedder, self.settings.embedding.threads, self.settings.runtime.int8_matmul
            )
        return FusionReranker(self.bm25, weight=r.fusion_weight, second_embedder=second, max_chars=r.max_chars)

    @cached_property
    def llm(self):
        """The OpenAI-compatible LLM client (chatbot/llm.py); starts the embedded server on first use."""
        from chatbot.llm import LLMClient

        return LLMClient(self.settings.llm, self.data_dir)


def optional_llm(services: Any) -> Any | None:
    """``services.llm``, or None when there is none or it cannot be built (a missing endpoint means the
    callers' LLM-free path: extractive replies, detector queries, embedding term scores)."""
    try:
        return getattr(services, "llm", None)
    except Exception:  # noqa: BLE001 - a property that cannot build its client
        return None
