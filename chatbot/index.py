"""Chroma collections of certified segments: incremental upsert, model pinning, top-k search."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpus.model import Segment
from corpus.segmenter import embedding_text

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


class IndexError_(RuntimeError):
    """The index is missing, or was built by another embedding model."""


class MissingIndexError(IndexError_):
    pass


class ModelMismatchError(IndexError_):
    pass


@dataclass
class Hit:
    """A segment with the score of the stage that produced it; ``detail`` keeps earlier scores."""

    segment: Segment
    score: float
    detail: dict[str, float] = field(default_factory=dict)


@dataclass
class IngestReport:
    documents: int = 0
    segments: int = 0
    embedded: int = 0
    metadata_updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    replaced_model: str = ""  # set when the collection was re-embedded: the model that had built it

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _precomputed_only():
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class PrecomputedOnly(EmbeddingFunction[Documents]):
        """Stops Chroma from loading its default (downloaded) model: we always pass vectors."""

        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:
            raise RuntimeError("this collection takes precomputed embeddings only")

        @staticmethod
        def name() -> str:
            return "precomputed-only"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> PrecomputedOnly:
            return PrecomputedOnly()

    return PrecomputedOnly()


def make_client(data_dir: Path, server_url: str | None = None):
    """PersistentClient under data_dir, or HttpClient for a `chroma run` server."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if server_url:
        from urllib.parse import urlparse

        url = urlparse(server_url)
        return chromadb.HttpClient(
            host=url.hostname or "127.0.0.1", port=url.port or 8000, ssl=url.scheme == "https", settings=chroma_settings
        )
    path = Path(data_dir) / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def _vector_outdated(stored: dict[str, Any], segment: Segment) -> bool:
    """True when the stored vector was embedded with another title or heading than the segment's now."""
    return stored.get("title") != segment.title or stored.get("heading") != segment.heading


class SegmentIndex:
    """One Chroma collection pinned to one embedding model."""

    def __init__(
        self,
        client: Any,
        name: str,
        embedder: Any,
        hnsw: dict[str, int] | None = None,
        exact: bool = False,
    ) -> None:
        self.client = client
        self.name = name
        self.embedder = embedder
        self.hnsw = hnsw or {"search_ef": 200, "construction_ef": 200, "M": 32}
        self.exact = exact
        self._collection = None
        self._matrix: tuple[list[str], np.ndarray] | None = None
        # returns "may a patient read this segment?" for the current content generation (chatbot.content_gate);
        # called only when a managed segment (content_version) is among the hits
        self.visible: Callable[[], Callable[[Segment], bool]] | None = None
        # one vector per sentence beside this collection (chatbot.sentence_vectors; index.sentence_vectors)
        self.sentences: Any | None = None

    # -- collection handling -------------------------------------------------
    def _metadata(self) -> dict[str, Any]:
        return {
            "hnsw:space": "cosine",
            "hnsw:search_ef": self.hnsw["search_ef"],
            "hnsw:construction_ef": self.hnsw["construction_ef"],
            "hnsw:M": self.hnsw["M"],
            "embedding_model": self.embedder.name,
            "embedding_dim": self.embedder.dim,
        }

    def collection(self, create: bool = False):
        if self._collection is not None:
            return self._collection
        ef = _precomputed_only()
        if create:
            coll = self.client.get_or_create_collection(self.name, metadata=self._metadata(), embedding_function=ef)
        else:
            try:
                coll = self.client.get_collection(self.name, embedding_function=ef)
            except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
                raise MissingIndexError(
                    f"no index named {self.name!r} yet; build it with `chatbot ingest PATH` "
                    f"(or `make run`, which ingests the demo corpus)"
                ) from exc
        built_by = (coll.metadata or {}).get("embedding_model")
        if built_by and built_by != self.embedder.name:
            raise ModelMismatchError(
                f"index {self.name!r} was built with {built_by!r} but the configured embedder is "
                f"{self.embedder.name!r}: run `chatbot ingest PATH` (it re-embeds the index with the configured "
                "model), or set embedding.model back to the one that built it"
            )
        self._collection = coll
        return coll

    def count(self) -> int:
        return self.collection().count()

    def _existing(self) -> dict[str, dict[str, Any]]:
        coll = self.collection(create=True)
        out: dict[str, dict[str, Any]] = {}
        offset, page = 0, 5000
        while True:
            got = coll.get(include=["metadatas"], limit=page, offset=offset)
            for sid, meta in zip(got["ids"], got["metadatas"], strict=True):
                out[sid] = meta or {}
            if len(got["ids"]) < page:
                return out
            offset += page

    # -- ingestion -----------------------------------------------------------
    def sync(
        self,
        segments: Sequence[Segment],
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
        planned: Callable[[int], None] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> IngestReport:
        """Make the collection hold exactly ``segments``: embed only new texts, update changed
        metadata in place, delete segments that are gone. ``planned`` hears how many will be embedded
        (before any is), ``progress`` how many each batch embedded. A collection built by another embedding
        model is re-embedded whole (chatbot.index_reembed; ``log`` hears it), never mixed."""
        import time

        from chatbot.index_reembed import built_by, reembed_sync

        report = IngestReport(documents=len({s.doc_id for s in segments}), segments=len(segments))
        old_model = built_by(self.client, self.name, _precomputed_only()) if self._collection is None else None
        if old_model and old_model != self.embedder.name:
            return reembed_sync(
                self, segments, old_model, _precomputed_only(), report, batch_size, progress, planned, log
            )
        start = time.perf_counter()
        coll = self.collection(create=True)
        existing = self._existing()
        wanted = {s.id: s for s in segments}

        # segments of managed documents (`chatbot content certify`) belong to the content lifecycle, not here
        gone = [sid for sid in existing if sid not in wanted and not existing[sid].get("content_version")]
        for i in range(0, len(gone), 5000):
            coll.delete(ids=gone[i : i + 5000])
        report.deleted = len(gone)

        # The id pins only the text; the vector also reads title and heading (embedding_text).
        to_embed = [s for s in segments if s.id not in existing or _vector_outdated(existing[s.id], s)]
        if planned:
            planned(len(to_embed))
        stale = [
            s
            for s in segments
            if s.id in existing
            and not _vector_outdated(existing[s.id], s)
            and existing[s.id].get("doc_hash") != s.doc_hash
        ]
        report.unchanged = len(segments) - len(to_embed) - len(stale)
        for i in range(0, len(stale), 5000):
            batch = stale[i : i + 5000]
            coll.update(ids=[s.id for s in batch], metadatas=[s.metadata() for s in batch])
        report.metadata_updated = len(stale)

        for i in range(0, len(to_embed), batch_size):
            batch = to_embed[i : i + batch_size]
            self._embed_into(coll, batch)
            if progress:
                progress(len(batch))
        report.embedded = len(to_embed)
        if self.sentences is not None:  # gone segments' sentences dropped; an older index's filled in
            self.sentences.sync(segments, batch_size)
        report.seconds = time.perf_counter() - start
        self._matrix = None
        return report

    def _embed_into(self, coll: Any, batch: Sequence[Segment]) -> None:
        """Embed ``batch`` (title, heading and text, as ``embedding_text`` reads them) and upsert it into ``coll``."""
        vectors = self.embedder.embed_passages([embedding_text(s) for s in batch])
        coll.upsert(
            ids=[s.id for s in batch],
            embeddings=vectors.tolist(),
            documents=[s.text for s in batch],
            metadatas=[s.metadata() for s in batch],
        )
        if self.sentences is not None:
            self.sentences.add(batch)

    def add_segments(self, segments: Sequence[Segment], batch_size: int = 64) -> list[str]:
        """Embed and add the segments not in the collection yet (the others are left as they are); returns
        the ids added (a managed version's segments before its certification switch)."""
        coll = self.collection(create=True)
        present = set(coll.get(ids=[s.id for s in segments], include=[])["ids"]) if segments else set()
        new = [s for s in segments if s.id not in present]
        for i in range(0, len(new), batch_size):
            batch = new[i : i + batch_size]
            self._embed_into(coll, batch)
        self._matrix = None
        return [s.id for s in new]

    def delete_ids(self, ids: Sequence[str]) -> None:
        coll = self.collection(create=True)
        for i in range(0, len(ids), 5000):
            coll.delete(ids=list(ids[i : i + 5000]))
        if self.sentences is not None:
            self.sentences.delete_segments(ids)
        self._matrix = None

    def delete_version(self, version_id: int) -> None:
        """Remove every segment of one managed document version."""
        self.collection(create=True).delete(where={"content_version": int(version_id)})
        if self.sentences is not None:
            self.sentences.delete_version(version_id)
        self._matrix = None

    # -- search --------------------------------------------------------------
    def all_segments(self) -> tuple[list[Segment], np.ndarray]:
        """Every segment with its stored vector (for exact search, BM25 and the harness)."""
        coll = self.collection()
        segs: list[Segment] = []
        vecs: list[np.ndarray] = []
        offset, page = 0, 5000
        while True:
            got = coll.get(include=["metadatas", "documents", "embeddings"], limit=page, offset=offset)
            for sid, doc, meta, emb in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            ):
                segs.append(Segment.from_metadata(sid, doc, meta))
                vecs.append(np.asarray(emb, dtype=np.float32))
            if len(got["ids"]) < page:
                break
            offset += page
        matrix = np.vstack(vecs) if vecs else np.zeros((0, self.embedder.dim), dtype=np.float32)
        return segs, matrix

    def document_segments(self, doc_id: str) -> list[Segment]:
        """Every segment of one document, in reading order (the composer looks just outside a retrieved
        segment of the top document for the sentence that answers)."""
        got = self.collection().get(where={"doc_id": doc_id}, include=["metadatas", "documents"])
        segs = [
            Segment.from_metadata(sid, doc, meta)
            for sid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]
        return sorted(segs, key=lambda s: s.position)

    def search_vectors(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        """Top-k readable segments by cosine for each query vector (HNSW, or exact when configured). Segments
        the content gate hides (a version not current yet, or any more) are skipped, fetching deeper as needed."""
        if self.exact:
            return self.exact_search(queries, k)
        coll = self.collection()
        n = coll.count()
        if n == 0:
            return [[] for _ in range(len(queries))]
        fetch = min(k, n)
        while True:
            res = coll.query(
                query_embeddings=np.asarray(queries).tolist(),
                n_results=fetch,
                include=["metadatas", "documents", "distances"],
            )
            out = [
                self._readable(
                    [
                        Hit(Segment.from_metadata(sid, doc, meta), 1.0 - float(dist))
                        for sid, doc, meta, dist in zip(ids, docs, metas, dists, strict=True)
                    ]
                )
                for ids, docs, metas, dists in zip(
                    res["ids"], res["documents"], res["metadatas"], res["distances"], strict=True
                )
            ]
            if fetch >= n or all(len(row) >= k for row in out):
                return [row[:k] for row in out]
            fetch = min(n, fetch * 4)

    def has_language_other_than(self, language: str) -> bool:
        """Whether any stored segment's language differs from ``language``."""
        got = self.collection().get(where={"language": {"$ne": language}}, limit=1, include=[])
        return bool(got["ids"])

    def vectors_of(self, segment_ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``segment_ids``, in that order (rows of zeros for ids the index lacks)."""
        out = np.zeros((len(segment_ids), self.embedder.dim), dtype=np.float32)
        if not segment_ids:
            return out
        got = self.collection().get(ids=list(segment_ids), include=["embeddings"])
        where = {sid: i for i, sid in enumerate(segment_ids)}
        for sid, emb in zip(got["ids"], got["embeddings"], strict=True):
            out[where[sid]] = np.asarray(emb, dtype=np.float32)
        return out

    def _readable(self, hits: list[Hit]) -> list[Hit]:
        if self.visible is None or not any(h.segment.content_version for h in hits):
            return hits
        allows = self.visible()
        return [h for h in hits if allows(h.segment)]

    def exact_search(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        cached = self._matrix  # read once: a content change may reset it from another thread meanwhile
        if cached is None:
            cached = self._matrix = self.all_segments()  # type: ignore[assignment]
        segs, matrix = cached  # type: ignore[misc]
        scores = np.asarray(queries, dtype=np.float32) @ matrix.T
        out = []
        for row in scores:
            ranked = [Hit(segs[i], float(row[i])) for i in np.argsort(-row, kind="stable")]  # type: ignore[index]
            out.append(self._readable(ranked)[:k])
        return out


def corpus_key(paths: Sequence[Path], embedder_name: str, extra: str = "") -> str:
    """Cache key from corpus content and model (used by the harness for per-dataset indexes)."""
    import hashlib

    h = hashlib.sha1()
    for p in sorted(Path(x) for x in paths):
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in files:
            if f.is_file() and f.suffix in (".jsonl", ".md"):
                h.update(str(f.name).encode())
                h.update(f.read_bytes())
    h.update(embedder_name.encode())
    h.update(extra.encode())
    return h.hexdigest()[:16]


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
