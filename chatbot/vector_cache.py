"""A small thread-safe LRU of text vectors: one patient turn embeds the same question for the red-flag screen,
the certified memory, pre-retrieval and dense retrieval; the encoder runs once for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np


class VectorCache:
    """``embed(texts)`` through ``compute`` for the texts not seen lately. Only calls of at most ``max_batch``
    texts are cached (a question, not an ingest), so bulk encoding neither fills nor evicts the cache."""

    def __init__(self, compute: Callable[[Sequence[str]], np.ndarray], size: int = 256, max_batch: int = 8) -> None:
        if size < 1:
            raise ValueError(f"vector cache size must be at least 1, got {size}")
        self.compute = compute
        self.size = size
        self.max_batch = max_batch
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts or len(texts) > self.max_batch:
            return self.compute(texts)
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for t in found:
                self._vectors.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = np.asarray(self.compute(missing))
            with self._lock:
                for t, v in zip(missing, fresh, strict=True):
                    v = np.array(v, copy=True)
                    v.flags.writeable = False  # shared between callers: nobody may change it in place
                    found[t] = self._vectors[t] = v
                    self._vectors.move_to_end(t)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        return np.stack([found[t] for t in texts])
