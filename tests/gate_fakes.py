"""Stand-ins for the relevance gate's inputs in unit tests: a cross-encoder scoring every link 0, a rerank result
and the services object the gate reads its settings and cross-encoder from."""

from __future__ import annotations

import numpy as np


class ZeroCrossEncoder:
    name = "cross-encoder"

    def score(self, question, hits):
        return np.zeros(len(hits))


class Result:
    def __init__(self, top, ranked):
        self.top, self.ranked = top, ranked


class NamedEmbedder:
    """An embedder that is only a name: what relevance.gate_key and the pipeline's query encoder decide "auto" on."""

    def __init__(self, name="multilingual-e5-small-onnx-int8"):  # the name of the default e5-onnx build
        self.name, self.dim = name, 384


class FakeServices:
    """``memory``: keep safety.gate_memory as set (its embedder must embed); otherwise the gate alone is tested."""

    def __init__(self, settings, cross_encoder=None, embedder=None, memory=False):
        if not memory and settings.safety.gate_memory != "none":
            settings = settings.model_copy(
                update={"safety": settings.safety.model_copy(update={"gate_memory": "none"})}
            )
        self.settings = settings
        self.cross_encoder = cross_encoder
        self.embedder = embedder or NamedEmbedder()
