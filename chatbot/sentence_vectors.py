"""Sentence vectors stored at index time beside a segment collection (issue 19: NOT terms scored per sentence).

A passage that discusses an excluded thing often does so in one sentence; the segment's vector dilutes it. The
index therefore also keeps one vector per sentence of every segment, in a second collection of the same client
named ``<collection>-sentences`` (ids ``<segment id>#<k>``, metadata ``segment_id``, ``k`` and, for managed
content, ``content_version``). ``SegmentIndex`` fills it whenever it embeds segments and empties it with them,
and ``sync`` backfills the segments that have none (an index built before this store existed), so the query
path only reads stored vectors (``lookup``): an exclusion question costs no extra encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from chatbot.sentences import split_sentences
from corpus.segmenter import Segment

SUFFIX = "-sentences"
MAX_SENTENCES = 40  # per segment (a segment is ~1,000 characters: never reached by ordinary prose)


def sentence_units(text: str) -> list[str]:
    """The sentences of a segment whose vectors are stored (the whole text when it has no boundary)."""
    units = split_sentences(text) or ([text.strip()] if text.strip() else [])
    return units[:MAX_SENTENCES]


class SentenceVectors:
    """The ``<collection>-sentences`` collection of one segment collection, pinned to the same embedder."""

    def __init__(self, client: Any, segment_collection: str, embedder: Any) -> None:
        self.client = client
        self.name = segment_collection + SUFFIX
        self.embedder = embedder
        self._collection = None

    def collection(self, create: bool = False) -> Any | None:
        """The collection (None when it does not exist and ``create`` is false, or another model built it)."""
        if self._collection is not None:
            return self._collection
        from chatbot.index import _precomputed_only

        meta = {"hnsw:space": "cosine", "embedding_model": self.embedder.name, "embedding_dim": self.embedder.dim}
        try:
            if create:
                coll = self.client.get_or_create_collection(
                    self.name, metadata=meta, embedding_function=_precomputed_only()
                )
            else:
                coll = self.client.get_collection(self.name, embedding_function=_precomputed_only())
        except Exception:  # chromadb raises NotFoundError / ValueError by version
            return None
        if (coll.metadata or {}).get("embedding_model") not in (None, self.embedder.name):
            if not create:
                return None
            self.client.delete_collection(self.name)  # another model's vectors: rebuilt, never mixed
            coll = self.client.get_or_create_collection(
                self.name, metadata=meta, embedding_function=_precomputed_only()
            )
        self._collection = coll
        return coll

    def add(self, segments: Sequence[Segment]) -> int:
        """Embed and upsert the sentences of ``segments`` (a segment's old rows are replaced); returns how many."""
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for s in segments:
            for k, unit in enumerate(sentence_units(s.text)):
                meta: dict[str, Any] = {"segment_id": s.id, "k": k}
                if s.content_version:
                    meta["content_version"] = int(s.content_version)
                rows.append((f"{s.id}#{k}", unit, meta))
        if not rows:
            return 0
        coll = self.collection(create=True)
        self.delete_segments([s.id for s in segments])
        vectors = self.embedder.embed_passages([r[1] for r in rows])
        coll.upsert(
            ids=[r[0] for r in rows],
            embeddings=np.asarray(vectors).tolist(),
            documents=[r[1] for r in rows],
            metadatas=[r[2] for r in rows],
        )
        return len(rows)

    def delete_segments(self, segment_ids: Sequence[str]) -> None:
        """Remove the sentence rows of these segments (none: nothing happens)."""
        coll = self.collection()
        ids = list(segment_ids)
        for i in range(0, len(ids) if coll is not None else 0, 500):
            coll.delete(where={"segment_id": {"$in": ids[i : i + 500]}})

    def delete_version(self, version_id: int) -> None:
        coll = self.collection()
        if coll is not None:
            coll.delete(where={"content_version": int(version_id)})

    def stored_segments(self) -> dict[str, bool]:
        """Ids of the segments that have sentence rows → whether they are managed content."""
        coll = self.collection()
        out: dict[str, bool] = {}
        offset, page = 0, 5000
        while coll is not None:
            got = coll.get(include=["metadatas"], limit=page, offset=offset)
            out.update((str(m["segment_id"]), "content_version" in m) for m in got["metadatas"] if m)
            if len(got["ids"]) < page:
                break
            offset += page
        return out

    def sync(
        self, segments: Sequence[Segment], batch_size: int = 64, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed the sentences of the segments that have none; drop the rows of segments not in ``segments``
        (managed content excepted: its lifecycle deletes it). Returns how many segments were embedded."""
        self.collection(create=True)
        have = self.stored_segments()
        wanted = {s.id for s in segments}
        gone = [sid for sid, managed in have.items() if sid not in wanted and not managed]
        self.delete_segments(gone)
        todo = [s for s in segments if s.id not in have]
        for i in range(0, len(todo), batch_size):
            self.add(todo[i : i + batch_size])
            if progress:
                progress(len(todo[i : i + batch_size]))
        return len(todo)

    def lookup(self, segment_ids: Sequence[str]) -> dict[str, tuple[list[str], np.ndarray]]:
        """Stored sentences and their vectors (rows in sentence order) of the segments that have any."""
        coll = self.collection()
        if coll is None or not segment_ids:
            return {}
        got = coll.get(
            where={"segment_id": {"$in": list(dict.fromkeys(segment_ids))}},
            include=["embeddings", "documents", "metadatas"],
        )
        rows: dict[str, list[tuple[int, str, np.ndarray]]] = {}
        for doc, meta, emb in zip(got["documents"], got["metadatas"], got["embeddings"], strict=True):
            rows.setdefault(str(meta["segment_id"]), []).append((int(meta["k"]), doc, np.asarray(emb, np.float32)))
        out = {}
        for sid, items in rows.items():
            items.sort(key=lambda r: r[0])
            out[sid] = ([r[1] for r in items], np.vstack([r[2] for r in items]))
        return out
