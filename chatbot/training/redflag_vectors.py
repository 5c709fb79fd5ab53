"""e5 vectors of the red-flag training and dev texts, cached on disk (they take minutes on one core).

The cache (``<cache>/redflags-e5/vectors.npz``) maps sha256("query: " + text) to the vector of the int8 ONNX
build; it is keyed on the build's source checksum, so a rebuilt model starts a new cache.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _key(text: str) -> str:
    return hashlib.sha256(("query: " + text).encode("utf-8")).hexdigest()[:32]


def cache_file(encoder: object) -> Path:
    from chatbot.llm_runtime import cache_dir

    source = str(getattr(encoder, "build_info", {}).get("source_sha256", "unknown"))[:12]
    return cache_dir() / "redflags-e5" / f"vectors-{source}.npz"


def embed_cached(texts: Sequence[str], encoder: object, chunk: int = 512) -> np.ndarray:
    """Vectors of ``texts`` (n, 384) through ``encoder.embed_queries``, reusing and extending the cache."""
    path = cache_file(encoder)
    known: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as z:
            known = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))
    keys = [_key(t) for t in texts]
    todo = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in known))
    start = time.perf_counter()
    for i in range(0, len(todo), chunk):
        part = todo[i : i + chunk]
        for t, v in zip(part, encoder.embed_queries(part), strict=True):  # type: ignore[attr-defined]
            known[_key(t)] = v.astype(np.float32)
        print(f"embedded {i + len(part)}/{len(todo)} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        if (i // chunk) % 8 == 7 or i + chunk >= len(todo):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")  # one per process: runs side by side
            np.savez(tmp, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
            tmp.replace(path)
    return np.stack([known[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)
