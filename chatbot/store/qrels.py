"""Link verdicts → a BEIR-style folder (corpus.jsonl, queries.jsonl, qrels.tsv) for `chatbot eval retrieval`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from chatbot.store import reviews
from chatbot.store.db import Store


def query_id(question: str) -> str:
    norm = " ".join(question.lower().split())
    return "rv-" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]


def export_qrels(store: Store, index: Any, out: Path) -> dict[str, int]:
    """Write the judged questions and the whole certified corpus; the latest verdict on a (question, document)
    wins. Document-level qrels.tsv (what the harness scores) and segment-level qrels-segments.tsv."""
    verdicts = reviews.link_verdicts(store)
    queries: dict[str, str] = {}
    doc_level: dict[tuple[str, str], int] = {}
    seg_level: dict[tuple[str, str], int] = {}
    for v in verdicts:  # oldest first, so later verdicts overwrite earlier ones
        qid = query_id(v["question"])
        queries.setdefault(qid, " ".join(v["question"].split()))
        doc_level[(qid, v["doc_id"])] = int(v["relevant"])
        seg_level[(qid, v["segment_id"])] = int(v["relevant"])
    segments, _ = index.all_segments()
    docs: dict[str, dict[str, Any]] = {}
    for seg in sorted(segments, key=lambda s: (s.doc_id, s.position)):
        d = docs.setdefault(seg.doc_id, {"_id": seg.doc_id, "title": seg.title, "url": seg.source_url, "parts": []})
        d["parts"].append(seg.text)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for d in docs.values():
            rec = {"_id": d["_id"], "title": d["title"], "text": "\n\n".join(d["parts"]), "url": d["url"]}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text, "source": "clinician-review"}, ensure_ascii=False) + "\n")
    for name, table in (("qrels.tsv", doc_level), ("qrels-segments.tsv", seg_level)):
        with (out / name).open("w", encoding="utf-8") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for (qid, did), score in table.items():
                fh.write(f"{qid}\t{did}\t{score}\n")
    return {
        "queries": len(queries),
        "judgements": len(doc_level),
        "relevant": sum(doc_level.values()),
        "documents": len(docs),
        "unknown_documents": len({d for (_, d) in doc_level} - set(docs)),
    }
