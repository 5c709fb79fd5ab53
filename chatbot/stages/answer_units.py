"""Vectors of the units the trained answer scorer reads, embedded ahead of the patient's question.

The candidate units of an answer-first reply (``answer_first.answer_candidates``) come from a finite certified
corpus: the sentences and list pieces of the indexed segments. ``answer_first.warm_answer_units`` (run by ingest)
embeds each once with the scorer's encoder and stores them beside the index, ``<data_dir>/answer-units/<coll>.npz``
(text digests, vectors, the encoder's name; rows of units no longer indexed are dropped). The scorer loads the
file with its weights and embeds on demand only a unit the file lacks (content published since the last ingest,
a list cut to a smaller room under an urgent message), in its bounded memory cache.

Each unit is embedded alone: int8 e5 quantises activations over the whole batch, so a text's vector depends on the
texts it is batched with (up to 0.02 per dimension); alone, a unit's vector, and the reply, depend on its text only,
not on which questions came before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIRECTORY = "answer-units"
# ingest warms an index of at most this many segments (~4 units each: ~3 min alone on a 2-core box, ~30 MB); a larger
# one (a benchmark corpus, not a card set) is left to the scorer's bounded on-demand cache
MAX_SEGMENTS = 5000


def digest(text: str) -> str:
    """The key of a unit's text (sha1 hex of its UTF-8)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def embed_alone(embed_passages: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str]) -> list[np.ndarray]:
    """``embed_passages`` of each text in a batch of its own (a vector that does not depend on its neighbours)."""
    return [np.asarray(embed_passages([t]), dtype=np.float32)[0] for t in texts]


class UnitVectors:
    """A unit text -> vector store of one encoder, kept in a file (``load``/``save``)."""

    def __init__(self, path: Path | None, embedder_name: str) -> None:
        self.path = path
        self.embedder_name = embedder_name
        self.vectors: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, path: Path, embedder_name: str) -> UnitVectors:
        """The file's vectors when it exists and the same encoder made them, else an empty store."""
        store = cls(path, embedder_name)
        if path.is_file():
            with np.load(path) as data:
                if str(data["embedder"]) == embedder_name:
                    store.vectors = dict(zip(data["keys"].tolist(), data["vectors"].astype(np.float32), strict=True))
        return store

    def get(self, text: str) -> np.ndarray | None:
        return self.vectors.get(digest(text))

    def __len__(self) -> int:
        return len(self.vectors)

    def warm(self, texts: Sequence[str], embed_passages: Callable[[Sequence[str]], np.ndarray]) -> int:
        """Hold exactly ``texts``: embed those missing (each alone), drop the others. Returns how many embedded."""
        keys = {digest(t): t for t in texts}
        missing = [k for k in keys if k not in self.vectors]
        fresh = dict(zip(missing, embed_alone(embed_passages, [keys[k] for k in missing]), strict=True))
        self.vectors = {k: self.vectors[k] if k in self.vectors else fresh[k] for k in keys}
        return len(missing)

    def save(self) -> None:
        if self.path is None:
            raise ValueError("this unit store has no file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        vectors = np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(tmp, keys=np.asarray(keys, dtype="U40"), vectors=vectors, embedder=np.asarray(self.embedder_name))
        tmp.replace(self.path)  # a reader never sees half a file


def store_path(data_dir: Path, collection: str) -> Path:
    return Path(data_dir) / DIRECTORY / f"{collection}.npz"


def trained_scorer_used(settings: Any) -> bool:
    """Whether replies may use the trained answer scorer (compose.answer_scorer=cues+trained, or cues with
    compose.trained_types)."""
    compose = settings.compose
    scorer = getattr(compose, "answer_scorer", "cues")
    return scorer == "cues+trained" or (scorer == "cues" and bool(getattr(compose, "trained_types", [])))
