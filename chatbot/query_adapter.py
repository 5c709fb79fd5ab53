"""The trained query-side adapter over the frozen e5 bi-encoder: q' = normalise(W q + b) for RETRIEVAL question
vectors only (``embedding.query_adapter``). Passage vectors are untouched, so every index stays valid.

A shipped adapter is a folder with ``adapter.npz`` (``delta`` = W - I and ``bias``, float32) and ``adapter.json``
(the base embedder, the dimension and the sha256 of ``adapter.npz``); loading is offline and verified.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

BASE_EMBEDDER = "multilingual-e5-small-onnx-int8"


class AdapterError(ValueError):
    """A query adapter folder that is missing, corrupt or made for another embedder."""


class QueryAdapter:
    """``apply(vectors)`` → unit rows of ``vectors @ W.T + b``."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray, name: str = "query-adapter") -> None:
        weight, bias = np.asarray(weight, dtype=np.float32), np.asarray(bias, dtype=np.float32)
        if weight.ndim != 2 or weight.shape[0] != weight.shape[1] or bias.shape != (weight.shape[0],):
            raise AdapterError(f"adapter shapes W {weight.shape} and b {bias.shape} do not fit (d×d and d)")
        if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
            raise AdapterError("adapter weights hold NaN or infinite values")
        self.weight, self.bias, self.name = weight, bias, name
        self.dim = weight.shape[0]

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.size == 0:
            return vectors.reshape(0, self.dim)
        if vectors.shape[-1] != self.dim:
            raise AdapterError(f"adapter expects {self.dim}-d vectors, got {vectors.shape[-1]}-d")
        out = vectors @ self.weight.T + self.bias
        return out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_adapter(folder: Path, weight: np.ndarray, bias: np.ndarray, metrics: dict[str, Any] | None = None) -> Path:
    """Write ``adapter.npz`` + ``adapter.json`` (with its sha256) and, when given, ``metrics.json``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weight = np.asarray(weight, dtype=np.float32)
    np.savez(folder / "adapter.npz", delta=weight - np.eye(weight.shape[0], dtype=np.float32), bias=bias)
    digest = file_sha256(folder / "adapter.npz")
    manifest = {"base_embedder": BASE_EMBEDDER, "dim": int(weight.shape[0]), "sha256": digest}
    (folder / "adapter.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if metrics is not None:
        (folder / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    return folder


def load_adapter(folder: Path, embedder_name: str | None = None) -> QueryAdapter:
    """The adapter in ``folder``, its sha256 checked against ``adapter.json``; AdapterError says what is wrong."""
    folder = Path(folder)
    manifest_path, weights_path = folder / "adapter.json", folder / "adapter.npz"
    for path in (manifest_path, weights_path):
        if not path.is_file():
            raise AdapterError(f"query adapter file {path} is missing (embedding.query_adapter={str(folder)!r})")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        expected = manifest["sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise AdapterError(f"{manifest_path} is not a query adapter manifest: {exc}") from exc
    got = file_sha256(weights_path)
    if got != expected:
        said = f"{manifest_path.name} says {expected[:12]}…"
        raise AdapterError(f"{weights_path} is corrupt: sha256 {got[:12]}… but {said}")
    base = manifest.get("base_embedder")
    if embedder_name is not None and base != embedder_name:
        raise AdapterError(f"query adapter {folder} was trained for {base!r}, not for embedder {embedder_name!r}")
    try:
        with np.load(weights_path) as data:
            delta, bias = data["delta"], data["bias"]
    except Exception as exc:  # a zip that passes the checksum but not numpy: still a clear error
        raise AdapterError(f"{weights_path} cannot be read as adapter weights: {exc}") from exc
    return QueryAdapter(np.eye(delta.shape[0], dtype=np.float32) + delta, bias, name=folder.name)


@lru_cache(maxsize=4)
def _cached(folder: str, embedder_name: str | None) -> QueryAdapter:
    return load_adapter(Path(folder), embedder_name)


class AdaptedEmbedder:
    """An embedder whose QUESTION vectors go through the adapter; passages (and ``name``, which pins an index to
    the model that built it) stay the base embedder's. ``raw`` is the base embedder."""

    def __init__(self, raw: Any, adapter: QueryAdapter) -> None:
        self.raw, self.adapter = raw, adapter
        self.name, self.dim = raw.name, raw.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.adapter.apply(self.raw.embed_queries(texts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.raw.embed_passages(texts)


def retrieval_embedder(embedder: Any, setting: str | Path | None, root: Path | None = None) -> Any:
    """``embedder`` itself when ``setting`` is "none"/empty, else an AdaptedEmbedder over the adapter folder
    (relative paths from ``root``, the workspace)."""
    if setting is None or str(setting).strip().lower() in ("", "none"):
        return embedder
    folder = Path(setting)
    if not folder.is_absolute() and root is not None:
        folder = root / folder
    return AdaptedEmbedder(embedder, _cached(str(folder), getattr(embedder, "name", None)))
