"""Hashed word and character n-gram features of a short text: no vocabulary, both languages, typos carried by the
character grams. Shared by the red-flag classifier and the exclusion detector's dismissal model."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from chatbot.stages.text_match import fold

N_FEATURES = 1 << 18
_WORD = re.compile(r"[a-z]+|\d+(?:[.,]\d+)?")


def normalise(text: str) -> str:
    """Folded (lower case, no accents), digits kept, repeated letters squeezed to two ("helppp" → "helpp")."""
    return re.sub(r"([a-z])\1{2,}", r"\1\1", fold(text))


def features(text: str, n_features: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of the hashed features of one text: word 1-2-grams and character 3-5-grams of each
    word (with boundary marks), signed hashing, log counts, L2-normalised."""
    words = _WORD.findall(normalise(text))
    grams: list[str] = [f"w {w}" for w in words]
    grams += [f"b {a} {b}" for a, b in zip(words, words[1:], strict=False)]
    for w in words:
        if w.isdigit():
            continue
        padded = f"<{w}>"
        for n in (3, 4, 5):
            grams += [padded[i : i + n] for i in range(len(padded) - n + 1)]
    if not grams:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    counts: dict[int, float] = {}
    for g in grams:
        h = zlib.crc32(g.encode("utf-8"))
        idx = h % n_features
        counts[idx] = counts.get(idx, 0.0) + (1.0 if (h >> 31) & 1 else -1.0)
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    val = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
    val = np.sign(val) * np.log1p(np.abs(val))
    norm = float(np.linalg.norm(val))
    return idx, (val / norm if norm else val)


_Head = TypeVar("_Head", bound="BinaryHead")


class BinaryHead:
    """A binary logistic head over these features, shipped as int8 weights (one scale) with a bar:
    ``weights.npz`` and ``config.json`` (``threshold``, ``n_features`` and the training record) in one folder."""

    def __init__(self, weights: np.ndarray, bias: float, threshold: float, n_features: int) -> None:
        self.weights, self.bias, self.threshold, self.n_features = weights, bias, threshold, n_features

    def score(self, text: str) -> float:
        idx, val = features(text, self.n_features)
        z = float(self.weights[idx] @ val) + self.bias if len(idx) else self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def save(self, folder: Path, meta: dict[str, Any]) -> None:
        save_int8(folder, self.weights, self.bias, {"threshold": self.threshold, "n_features": self.n_features, **meta})

    @classmethod
    def load(cls: type[_Head], folder: Path) -> _Head:
        weights, bias, config = load_int8(folder)
        return cls(weights, float(bias), float(config["threshold"]), int(config["n_features"]))


def save_int8(folder: Path, weights: np.ndarray, bias: Any, config: dict[str, Any]) -> None:
    """A head over these features in ``folder``: ``weights.npz`` (the weights as int8 with one scale, the bias as
    float32) and ``config``, written as ``config.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    scale = float(np.abs(weights).max() / 127.0) or 1.0
    q = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
    np.savez_compressed(folder / "weights.npz", weights=q, scale=np.float32(scale), bias=np.asarray(bias, np.float32))
    (folder / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def load_int8(folder: Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(weights as float32, bias as float32, config) of a head ``save_int8`` wrote."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    with np.load(folder / "weights.npz") as z:
        return z["weights"].astype(np.float32) * float(z["scale"]), z["bias"].astype(np.float32), config
