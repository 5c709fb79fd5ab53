"""What the logical benchmarks share: the harness's collection for a benchmark corpus, an index built with
placeholder links, Success@1 from the harness's per-query rows."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shared_data_dir

PROG = "python -m evaluation.bench_logical"
SHARED = shared_data_dir()
PLACEHOLDER_URL = "https://benchmark.invalid/{name}/{{id}}"


def eval_services(data: Path, settings=None):
    """Services on the harness's collection for ``data`` (the same key ``evaluate`` computes)."""
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = settings or load_settings()
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    return Services(settings, collection=f"eval-{key}")


def prepare_index(data: Path, services, log=print) -> dict[str, Any]:
    """Index a benchmark corpus whose records have no URL (placeholder links), unless already indexed."""
    from tqdm import tqdm

    from chatbot.index import MissingIndexError
    from corpus.importers import read_corpus
    from corpus.segmenter import segment_documents

    try:
        count = services.index.count()
        if count:
            return {"reused": True, "segments": count}
    except MissingIndexError:
        pass
    s = services.settings
    result = read_corpus([data / "corpus.jsonl"], default_url=PLACEHOLDER_URL.format(name=data.name))
    segments = segment_documents(result.documents, s.corpus.segment_max_chars, s.corpus.segment_min_chars)
    log(f"indexing {len(result.documents)} documents ({len(segments)} segments) of {data.name}")
    with tqdm(total=len(segments), file=sys.stderr, mininterval=10, desc=f"indexing {data.name}") as bar:
        report = services.index.sync(segments, batch_size=s.index.batch_size, progress=bar.update)
    return {"reused": False, **report.as_dict()}


def success_at_1(rows: Sequence[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> float:
    """Share of queries whose first-ranked document is relevant (harness per-query rows, "top" list)."""
    hits = [bool(r["top"]) and qrels[r["query_id"]].get(r["top"][0]["doc_id"], 0) >= 1 for r in rows]
    return float(np.mean(hits)) if hits else 0.0
