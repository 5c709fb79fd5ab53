"""The cross-language pick's segment vectors, embedded ahead of the patient's question.

``retrieval.cross_language_pick`` scores every linked and pooled document's segments with the multilingual USE
encoder (``stages.cross_language_pick``). Embedding them at the question put ~6 ms a segment into an Italian
question's compose time the first time a process read a document (Italian compose p90 200-700 ms on a cold run,
``evaluation/results/crosslang-s13.md``). The certified corpus is finite, so ingest (``warm_crosslang_vectors``)
embeds each segment's text once into ``<data_dir>/crosslang-vectors/<collection>.npz`` (text digests, vectors,
the encoder's name: ``answer_units.UnitVectors``). The pick loads the file once per process and embeds only a text the
file lacks (content published since the last ingest); an index whose file is missing is warmed whole and saved at its
first Italian question. The key is the text's digest: a changed card's segments are new keys, and ingest drops the
rows of texts no longer indexed. USE's vector of a text does not depend on its batch (<1e-6), so the stored vectors
are those the question-time embedding gave.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.stages.answer_units import MAX_SEGMENTS, UnitVectors, digest

DIRECTORY = "crosslang-vectors"
MAX_CHARS = 1200  # the pick embeds a segment's embedding text up to this many characters


def store_path(data_dir: Path, collection: str) -> Path:
    return Path(data_dir) / DIRECTORY / f"{collection}.npz"


def segment_text(segment: Any) -> str:
    """The text the pick embeds for a segment (its embedding text: title, heading and body)."""
    from corpus.segmenter import embedding_text

    return embedding_text(segment)[:MAX_CHARS]


class StoredEmbedder:
    """``embed_passages`` over a ``UnitVectors`` store: stored vectors as they are, the missing texts embedded in one
    batch by ``encoder`` and kept in the store's memory (not saved: ingest owns the file)."""

    def __init__(self, store: UnitVectors, encoder: Any) -> None:
        self.store = store
        self.encoder = encoder
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            found = {t: v for t in texts if (v := self.store.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = np.asarray(self.encoder.embed_passages(missing), dtype=np.float32)
            with self._lock:
                for t, v in zip(missing, fresh, strict=True):
                    found[t] = self.store.vectors[digest(t)] = v
        if not texts:
            return np.zeros((0, getattr(self.encoder, "dim", 0)), dtype=np.float32)
        return np.stack([found[t] for t in texts])


def pick_used(settings: Any) -> bool:
    """Whether replies may run the cross-language pick (retrieval.cross_language_pick names a language)."""
    return bool(getattr(settings.retrieval, "cross_language_pick", {}))


def warm(services: Any, encoder: Any) -> dict[str, Any] | None:
    """Make the services' store hold exactly the indexed segments' texts (embed those missing, drop the others) and
    save it. None when the index has more than MAX_SEGMENTS segments (a benchmark corpus: on-demand only)."""
    if services.index.count() > MAX_SEGMENTS:
        return None
    start = time.perf_counter()
    segments, _ = services.index.all_segments()
    texts = {digest(t): t for t in (segment_text(s) for s in segments)}
    store = UnitVectors.load(store_path(services.data_dir, services.collection_name), encoder.name)
    fresh = [t for k, t in texts.items() if k not in store.vectors]
    stale = [k for k in store.vectors if k not in texts]
    vectors = [
        np.asarray(encoder.embed_passages(fresh[i : i + 32]), dtype=np.float32) for i in range(0, len(fresh), 32)
    ]
    store.vectors = {k: v for k, v in store.vectors.items() if k in texts}
    store.vectors.update(zip([digest(t) for t in fresh], [v for batch in vectors for v in batch], strict=True))
    if fresh or stale or store.path is None or not store.path.is_file():
        store.save()
    return {"segments": len(store), "embedded": len(fresh), "seconds": round(time.perf_counter() - start, 1)}


def warm_crosslang_vectors(services: Any) -> dict[str, Any] | None:
    """Ingest's step: the pick's vectors of every indexed segment, when the pick is on (None otherwise)."""
    if not pick_used(services.settings):
        return None
    from chatbot.embedders import USEEmbedder

    return warm(services, USEEmbedder(threads=services.settings.embedding.threads))


def stored_embedder(services: Any, encoder: Any) -> StoredEmbedder:
    """The pick's segment embedder for ``services``: the stored vectors (the file warmed and saved now when it is
    missing), the encoder for any text the file lacks."""
    path = store_path(services.data_dir, services.collection_name)
    if not path.is_file():
        warm(services, encoder)
    return StoredEmbedder(UnitVectors.load(path, encoder.name), encoder)
