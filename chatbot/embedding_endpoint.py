"""An embedder that calls any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai`` client.

A hospital can run the encoder on a GPU server (text-embeddings-inference, vLLM, Infinity, or our own
``chatbot models serve-embeddings``) and point ``embedding.endpoint_url`` at it. Requests are batched
(``batch_size`` texts each), have an explicit timeout and a bounded number of retries; e5's ``query: `` /
``passage: `` prefixes are added here because OpenAI's API has no query/passage distinction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class EndpointError(RuntimeError):
    """The endpoint failed or answered something that is not one vector per text of the expected size."""


class EndpointEmbedder:
    """``embed_queries``/``embed_passages`` through ``client.embeddings.create`` (float vectors, re-normalised)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int = 384,
        api_key: str = "none",
        timeout_s: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 64,
        query_prefix: str = "query: ",
        passage_prefix: str = "passage: ",
        max_chars: int = 1200,
    ) -> None:
        from openai import OpenAI

        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries)
        self.base_url = base_url
        self.model = model
        self.name = f"endpoint:{model}"
        self.dim = dim
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.max_chars = max_chars

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                resp = self.client.embeddings.create(model=self.model, input=batch, encoding_format="float")
            except openai.OpenAIError as exc:
                raise EndpointError(f"embeddings endpoint {self.base_url} failed: {exc}") from exc
            rows = sorted(resp.data, key=lambda d: d.index)
            if [d.index for d in rows] != list(range(len(batch))):
                raise EndpointError(f"{self.base_url} returned {len(rows)} vectors for {len(batch)} texts")
            matrix = np.asarray([d.embedding for d in rows], dtype=np.float32)
            if matrix.shape[1] != self.dim:
                raise EndpointError(
                    f"{self.base_url} returned {matrix.shape[1]}-dimensional vectors; "
                    f"embedding.endpoint_dim is {self.dim}"
                )
            out[start : start + len(batch)] = matrix
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.query_prefix + t[: self.max_chars] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.passage_prefix + t[: self.max_chars] for t in texts])
