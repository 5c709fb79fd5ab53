"""The trained query-side adapter over the frozen e5 bi-encoder: q' = normalise(W q + b) for RETRIEVAL question
vectors only (``embedding.query_adapter``). Passage vectors are untouched, so every index stays valid.

A shipped adapter is a folder with ``adapter.npz`` (``delta`` = W - I and ``bias``, float32) and ``adapter.json``
(the base embedder, the dimension and the sha256 of ``adapter.npz``); loading is offline and verified.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.language import question_language
from chatbot.onnx_files import file_sha256

BASE_EMBEDDER = "multilingual-e5-small-onnx-int8"


class AdapterError(ValueError):
    """A query adapter folder that is missing, corrupt or made for another embedder."""


def _checked(weight: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    weight, bias = np.asarray(weight, dtype=np.float32), np.asarray(bias, dtype=np.float32)
    if weight.ndim != 2 or weight.shape[0] != weight.shape[1] or bias.shape != (weight.shape[0],):
        raise AdapterError(f"adapter shapes W {weight.shape} and b {bias.shape} do not fit (d×d and d)")
    if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
        raise AdapterError("adapter weights hold NaN or infinite values")
    return weight, bias


class QueryAdapter:
    """``apply(vectors)`` → unit rows of ``vectors @ W.T + b``; with an Italian part (``weight_it``, ``bias_it``),
    the rows ``apply`` is told are Italian use it instead."""

    def __init__(
        self,
        weight: np.ndarray,
        bias: np.ndarray,
        name: str = "query-adapter",
        weight_it: np.ndarray | None = None,
        bias_it: np.ndarray | None = None,
    ) -> None:
        self.weight, self.bias = _checked(weight, bias)
        self.weight_it, self.bias_it = (None, None) if weight_it is None else _checked(weight_it, bias_it)
        if self.weight_it is not None and self.weight_it.shape != self.weight.shape:
            raise AdapterError(f"Italian adapter shape {self.weight_it.shape} differs from {self.weight.shape}")
        self.name = name
        self.dim = self.weight.shape[0]

    @property
    def per_language(self) -> bool:
        return self.weight_it is not None

    def apply(self, vectors: np.ndarray, italian: Sequence[bool] | None = None) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.size == 0:
            return vectors.reshape(0, self.dim)
        if vectors.shape[-1] != self.dim:
            raise AdapterError(f"adapter expects {self.dim}-d vectors, got {vectors.shape[-1]}-d")
        out = vectors @ self.weight.T + self.bias
        if self.weight_it is not None and italian is not None and any(italian):
            rows = np.asarray(italian, dtype=bool)
            out[rows] = vectors[rows] @ self.weight_it.T + self.bias_it
        return out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)


def save_adapter(
    folder: Path,
    weight: np.ndarray,
    bias: np.ndarray,
    metrics: dict[str, Any] | None = None,
    italian: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Path:
    """Write ``adapter.npz`` + ``adapter.json`` (with its sha256) and, when given, ``metrics.json``. ``italian``:
    (U, V, b_it) of the Italian questions' map W_it = W + U V^T (low rank keeps the file under 1 MB)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weight = np.asarray(weight, dtype=np.float32)
    arrays = {"delta": weight - np.eye(weight.shape[0], dtype=np.float32), "bias": np.asarray(bias, np.float32)}
    if italian is not None:
        arrays.update(zip(("it_u", "it_v", "it_bias"), (np.asarray(a, np.float32) for a in italian), strict=True))
    np.savez(folder / "adapter.npz", **arrays)
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
            arrays = {k: data[k] for k in data.files}
        weight = np.eye(arrays["delta"].shape[0], dtype=np.float32) + arrays["delta"]
        bias = arrays["bias"]
    except Exception as exc:  # a zip that passes the checksum but not numpy: still a clear error
        raise AdapterError(f"{weights_path} cannot be read as adapter weights: {exc}") from exc
    if "it_u" not in arrays:
        return QueryAdapter(weight, bias, name=folder.name)
    try:
        weight_it = weight + arrays["it_u"] @ arrays["it_v"].T
    except ValueError as exc:
        raise AdapterError(f"{weights_path}: the Italian part does not fit: {exc}") from exc
    return QueryAdapter(weight, bias, folder.name, weight_it, arrays["it_bias"])


@lru_cache(maxsize=4)
def _cached(folder: str, embedder_name: str | None) -> QueryAdapter:
    return load_adapter(Path(folder), embedder_name)


class AdaptedEmbedder:
    """An embedder whose QUESTION vectors go through the adapter; passages (and ``name``, which pins an index to
    the model that built it) stay the base embedder's. ``raw`` is the base embedder. ``languages``: only
    questions ``chatbot.language`` reads in one of these are adapted (None: all); the others keep raw e5."""

    def __init__(self, raw: Any, adapter: QueryAdapter, languages: Sequence[str] | None = None) -> None:
        self.raw, self.adapter = raw, adapter
        self.languages = None if languages is None else tuple(languages)
        self.name, self.dim = raw.name, raw.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.adapt(self.raw.embed_queries(texts), texts)

    def adapt(self, raw_vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """The adapted rows of ``raw_vectors`` (the raw e5 question vectors of ``texts``)."""
        raw_vectors = np.asarray(raw_vectors, dtype=np.float32)
        if not self.adapter.per_language and self.languages is None:
            return self.adapter.apply(raw_vectors)
        languages = [question_language(t) for t in texts]
        out = self.adapter.apply(raw_vectors, [lang == "it" for lang in languages])
        if self.languages is not None:
            keep = [lang not in self.languages for lang in languages]
            out[keep] = raw_vectors[keep]
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.raw.embed_passages(texts)


def retrieval_embedder(
    embedder: Any, setting: str | Path | None, root: Path | None = None, languages: Sequence[str] | None = None
) -> Any:
    """``embedder`` itself when ``setting`` is "none"/empty, else an AdaptedEmbedder over the adapter folder
    (relative paths from ``root``, the workspace) for questions in ``languages`` (None: every language)."""
    if setting is None or str(setting).strip().lower() in ("", "none"):
        return embedder
    folder = Path(setting)
    if not folder.is_absolute() and root is not None:
        folder = root / folder
    return AdaptedEmbedder(embedder, _cached(str(folder), getattr(embedder, "name", None)), languages)
