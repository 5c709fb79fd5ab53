"""Read, segment and index certified documents: shared by `chatbot ingest` and the harness."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from corpus.importers import read_corpus
from corpus.segmenter import segment_documents, shared_passages


def ingest_paths(
    paths: Sequence[Path],
    services: Any,
    strict: bool = False,
    quiet: bool = False,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
    desc: str = "embedding",
    default_url: str | None = None,
) -> dict[str, Any]:
    """Make the services' collection hold exactly the documents under ``paths``.

    ``default_url`` (format string with ``{id}``) gives benchmark records without a link a placeholder.
    Raises CorpusError (strict) or ValueError when no valid document is found."""
    from tqdm import tqdm

    from chatbot.stages.answer_first import warm_answer_units
    from chatbot.stages.crosslang_vectors import warm_crosslang_vectors

    settings = services.settings
    result = read_corpus([Path(p) for p in paths], strict=strict or settings.corpus.strict, default_url=default_url)
    for problem in result.problems:
        log(f"skipped: {problem}")
    if not result.documents:
        raise ValueError("no valid documents found; nothing ingested")
    segments = segment_documents(result.documents, settings.corpus.segment_max_chars, settings.corpus.segment_min_chars)
    shared = shared_passages(segments)
    if shared and not quiet:
        first = ", ".join(sorted({s.doc_id for s in shared[0]}))
        log(f"{len(shared)} passages appear in more than one document (e.g. in {first}); links list each once")
    with tqdm(total=len(segments), desc=desc, unit="seg", file=sys.stderr, disable=quiet, mininterval=5) as bar:

        def set_total(n: int) -> None:
            bar.total = n  # only what needs embedding: an unchanged corpus shows 0, not a stalled bar
            bar.refresh()

        report = services.index.sync(
            segments, batch_size=settings.index.batch_size, progress=bar.update, planned=set_total, log=log
        )
    # the trained answer scorer's units, embedded now rather than at a patient's question (stages.answer_first)
    units = warm_answer_units(services)
    if units and units["embedded"] and not quiet:
        log(f"answer units: {units['embedded']} embedded ({units['units']} stored, {units['seconds']} s)")
    # the cross-language pick's segment vectors (stages.crosslang_vectors), likewise
    crosslang = warm_crosslang_vectors(services)
    if crosslang and crosslang["embedded"] and not quiet:
        got, held, took = crosslang["embedded"], crosslang["segments"], crosslang["seconds"]
        log(f"cross-language vectors: {got} embedded ({held} stored, {took} s)")
    rate = report.embedded / report.seconds if report.seconds and report.embedded else 0.0
    return {
        **report.as_dict(),
        "seconds": round(report.seconds, 1),
        "skipped_records": len(result.problems),
        "shared_passages": len(shared),
        "segments_per_s": round(rate, 1),
        "collection": services.collection_name,
        "embedding_model": services.embedder.name,
    }
