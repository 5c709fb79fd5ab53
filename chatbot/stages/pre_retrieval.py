"""Pre-retrieval (mission stage 1): naive dense retrieval with the question, whose best documents become the
extracts the chain-of-thought HyDoc is written from (and whose candidates are the fallback's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.stages.hydoc import format_context
from chatbot.stages.rerank import best_per_document


def pre_context(candidates: list[Hit], cfg) -> tuple[list[Hit], str]:
    """cot step (a): the best ``pre_k`` distinct documents of the naive pre-retrieval, as prompt extracts."""
    hits = best_per_document(candidates, cfg.pre_k) if cfg.pre_k else []
    return hits, format_context(hits, cfg.pre_chars)


def pre_retrieve(question: str, embedder: Any, dense: Any, k: int) -> tuple[np.ndarray, list[Hit]]:
    """(the question's query vector, its top-k segments): the vector is reused for the HyDoc average."""
    vector = np.asarray(embedder.embed_queries([question]), dtype=np.float32)[0]
    return vector, dense.search_vector(vector, k)
