"""Shared test helpers: a keyword-axis fake embedder (no model) and a clean settings environment."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# One axis per keyword; texts containing none of them point along the last ("other") axis.
KEYWORDS = ("asthma", "diabetes", "fever", "sleep")


def keyword_vector(text: str) -> np.ndarray:
    """Keyword counts on their axes, L2-normalised; no keyword at all → the 'other' axis."""
    lowered = text.lower()
    vec = np.zeros(len(KEYWORDS) + 1, dtype=np.float32)
    for axis, word in enumerate(KEYWORDS):
        vec[axis] = lowered.count(word)
    if not vec.any():
        vec[-1] = 1.0
    return vec / np.linalg.norm(vec)


def unit(*components: float) -> np.ndarray:
    """A hand-made query vector over the (asthma, diabetes, fever, sleep, other) axes, normalised."""
    vec = np.zeros(len(KEYWORDS) + 1, dtype=np.float32)
    vec[: len(components)] = components
    return vec / np.linalg.norm(vec)


class FakeEmbedder:
    """Has the Embedder interface; records every passage it embeds so tests can count model work."""

    dim = len(KEYWORDS) + 1

    def __init__(self, name: str = "fake-keywords") -> None:
        self.name = name
        self.passage_calls = 0
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.extend(texts)
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passage_calls += 1
        self.passages.extend(texts)
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([keyword_vector(t) for t in texts])


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Settings must not pick up the developer's CHATBOT_* variables or a ./chatbot.toml."""
    for key in list(os.environ):
        if key.upper().startswith("CHATBOT_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def indexed_services(settings, embedder, docs, max_chars: int, min_chars: int):
    """``Services`` for ``settings`` with a test embedder in place of the real one and ``docs`` segmented and
    indexed (``Services.index.sync``)."""
    from chatbot.pipeline import Services
    from corpus.segmenter import segment_documents

    services = Services(settings)
    services.__dict__["embedder"] = embedder
    services.index.sync(segment_documents(docs, max_chars=max_chars, min_chars=min_chars))
    return services


@pytest.fixture
def fake_binary(tmp_path):
    """An executable named llama-server that serves the fake OpenAI endpoint (tests/fake_openai.py);
    FAKE_LLAMA_CRASH / FAKE_LLAMA_GARBAGE / FAKE_LLAMA_NEVER_HEALTHY in the environment change its behaviour."""
    import sys

    from tests.fake_openai import FAKE_LLAMA_SERVER

    path = tmp_path / "bin" / "llama-server"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n{FAKE_LLAMA_SERVER}")
    path.chmod(0o755)
    return path
