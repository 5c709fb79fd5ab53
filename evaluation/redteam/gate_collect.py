"""What the relevance gate sees on the answer path, per dev question, for the session-11 leave-one-set-out choice.

    python -m evaluation.redteam.gate_collect --out /tmp/gate11/rows.jsonl

Every spent dev set (``gate_fit.dev_rows``: the gate sets, the reply sets' and exclusion sets' questions as in
scope, MEDIQA(-it) TRAIN non-maternal questions as out of scope) goes through the answer path's own steps up to the
gate (chatbot.answer: language, personal request, retrieval text, route, pipeline, content gate, urgent fillers,
``relevance.gate``) with today's default settings over the demo cards. Written per question (appended; a rerun
skips what is there): the classifier features (unrounded, on the view the gate reads), the shipped gate's P and
decision, the threshold gate's score/threshold/decision, and the cross-language second look's inputs for every
question (the other-language pool's first document: raw cosine, doc id, urgent or not; the best link's raw
cosine; whether a link is in the question's language), so a candidate gate can be replayed with the second look
after it exactly as ``answer.py`` runs it. MEDIQA text is not written (ids only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PROG = "python -m evaluation.redteam.gate_collect"


def collect(rows: list[dict[str, Any]], out: Path, data_dir: Path, log=print) -> int:
    """Append one record per row of ``rows`` not yet in ``out``; returns how many were written."""
    from chatbot.content_gate import gate_result
    from chatbot.language import detect_language
    from chatbot.pipeline import Services, run_pipeline
    from chatbot.settings import load_settings
    from chatbot.stages import safety as sf
    from chatbot.stages.answer_pool import links_in, raw_cosine
    from chatbot.stages.redflags import urgent_card_ids
    from chatbot.stages.relevance import gate, without_urgent_fillers
    from chatbot.stages.route import route

    done = set()
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                done.add((r["source"], r["id"]))
    todo = [r for r in rows if (r["source"], r["id"]) not in done]
    log(f"{len(done)} collected already, {len(todo)} to go")
    settings = load_settings(paths={"data_dir": data_dir})
    services = Services(settings)
    urgent = urgent_card_ids(settings.safety.urgent_cards)
    n = 0
    with out.open("a", encoding="utf-8") as fh:
        for i, r in enumerate(todo):
            if i % 25 == 0:
                log(f"{i}/{len(todo)}")
            shown = r["id"] if r["source"].startswith("mediqa") else r["text"]
            rec: dict[str, Any] = {
                "id": r["id"],
                "source": r["source"],
                "text": shown,
                "language": r["language"],
                "in_scope": bool(r["in_scope"]),
            }
            lang = detect_language(r["text"], min_confidence=settings.safety.language_min_confidence)
            query = sf.retrieval_text(r["text"])
            if not lang.supported or not query:
                fh.write(json.dumps({**rec, "skipped": "unsupported language or nothing to search"}) + "\n")
                continue
            request = sf.detect_personal_request(r["text"])
            chosen = route(query, None, settings)
            result = run_pipeline(chosen.pipeline, query, services)
            gate_result(result, services)
            result.top = without_urgent_fillers(result, services)
            relevant, trace = gate(query, result, services, lang.language, positive=chosen.positive, memory=False)
            feats = trace.get("features")  # what the gate read (rounded to 4 decimals), None without the classifier
            other = None
            if result.top and hasattr(services.dense, "other_language"):
                other = next(iter(services.dense.other_language(query, lang.language, 1)), None)
            score, threshold = trace.get("score"), trace.get("threshold")
            by_threshold = bool(result.top) and (score is None or threshold is None or score >= threshold)
            rec.update(
                {
                    "gate_language": lang.language,
                    "personal_request": request,
                    "excluded": bool(chosen.excluded),
                    "positive": chosen.positive,
                    "features": feats,
                    "gate": trace.get("gate"),
                    "probability": trace.get("probability"),
                    "shipped_relevant": bool(relevant),
                    "threshold_score": score,
                    "threshold": threshold,
                    "threshold_relevant": by_threshold,
                    "links": [h.segment.doc_id for h in result.top],
                    # every score the pipeline left on the links and the first ranked documents (candidate features)
                    "top_detail": [_numbers(h.detail) for h in result.top],
                    "ranked_detail": [_numbers(h.detail) for h in result.ranked[:10]],
                    "link_dense": [raw_cosine(h) for h in result.top],
                    "links_in_language": links_in(result.top, lang.language),
                    "other_doc": None if other is None else other.segment.doc_id,
                    "other_dense": None if other is None else raw_cosine(other),
                    "other_urgent": bool(other is not None and other.segment.doc_id in urgent),
                }
            )
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            fh.flush()
            n += 1
    return n


def _numbers(detail: dict[str, Any]) -> dict[str, float]:
    """The numeric entries of a hit's detail (scores by stage), rounded."""
    return {k: round(float(v), 5) for k, v in detail.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


# the order the sets are collected in: the sets with both classes first (a run cut short still serves the choice)
PRIORITY = (
    "gate_heldout_v4.jsonl",
    "gate_heldout_v3.jsonl",
    "gate_heldout_v2.jsonl",
    "relevance_test.jsonl",
    "gate_dev.jsonl",
    "relevance_dev.jsonl",
)


def _order(row: dict[str, Any]) -> tuple[int, str]:
    src = row["source"]
    return (PRIORITY.index(src) if src in PRIORITY else len(PRIORITY) + src.startswith("mediqa"), src)


def reuse(rows: list[dict[str, Any]], cache: Path, out: Path, data_dir: Path, languages: tuple[str, ...]) -> int:
    """Write records for the rows of ``languages`` found in a ``gate_fit`` retrieval cache (links, ranked
    documents, cross-encoder scores of the same pipeline): features recomputed by this code, the shipped gate's P.
    Only for a language whose retrieval has not changed since the cache was written (checked on a sample by
    the caller); the second look's inputs are left empty (it is Italian only)."""
    from chatbot.settings import load_settings
    from chatbot.stages.relevance_gate import load_gate
    from evaluation.redteam.gate_fit import corpus_of, features_from

    settings = load_settings()
    model = load_gate(str(settings.safety.relevance_gate_model), settings.embedding.model)
    cached = {}
    for line in cache.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            cached[(r["id"], r["text"])] = r
    segments, lexicon = corpus_of(data_dir)
    n = 0
    with out.open("a", encoding="utf-8") as fh:
        for r in rows:
            rec = cached.get((r["id"], r["text"]))
            if r["language"] not in languages or rec is None or rec.get("skipped"):
                continue
            feats = features_from(rec, segments, lexicon)
            if feats is None:
                continue
            p = model.probability(feats)
            top = [segments[h["id"]] for h in rec["top"]]
            record = {
                "id": r["id"],
                "source": r["source"],
                "text": r["id"] if r["source"].startswith("mediqa") else r["text"],
                "language": r["language"],
                "in_scope": bool(r["in_scope"]),
                "gate_language": rec["gate_language"],
                "personal_request": None,
                "excluded": rec["positive"] is not None,
                "positive": rec["positive"],
                "features": feats,
                "gate": "classifier",
                "probability": round(p, 4),
                "shipped_relevant": p >= model.threshold,
                "threshold_relevant": rec["threshold_relevant"],
                "links": [s.doc_id for s in top],
                "link_dense": [h["detail"].get("dense", 0.0) for h in rec["top"]],
                "links_in_language": any(s.language == rec["gate_language"] for s in top),
                "other_doc": None,
                "other_dense": None,
                "other_urgent": False,
                "reused_from": str(cache),
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def reuse_italian(rows: list[dict[str, Any]], diag: Path, out: Path, data_dir: Path) -> int:
    """Write records for Italian rows found in session 10's diagnosis rows (/tmp/it10/diag2.jsonl: today's Italian
    pipeline, the gate's trace features and P, the English pool's first document) for questions the route does not
    send to the exclusion path (those are collected live)."""
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages import safety as sf
    from chatbot.stages.redflags import urgent_card_ids
    from chatbot.stages.route import route

    settings = load_settings(paths={"data_dir": data_dir})
    urgent = urgent_card_ids(settings.safety.urgent_cards)
    bar = settings.safety.min_relevance_dense_it[settings.embedding.model]
    languages = {s.doc_id: s.language for s in Services(settings).bm25.segments}
    by_key = {}
    for line in diag.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            by_key[(d["file"], d["id"])] = d
    n = 0
    with out.open("a", encoding="utf-8") as fh:
        for r in rows:
            d = by_key.get((r["source"], r["id"]))
            if r["language"] != "it" or d is None or d.get("f") is None:
                continue
            query = sf.retrieval_text(r["text"])
            chosen = route(query, None, settings)
            if chosen.excluded or chosen.positive is not None:
                continue
            record = {
                "id": r["id"],
                "source": r["source"],
                "text": r["text"],
                "language": "it",
                "in_scope": bool(r["in_scope"]),
                "gate_language": "it",
                "personal_request": sf.detect_personal_request(r["text"]),
                "excluded": False,
                "positive": None,
                "features": d["f"],
                "gate": "classifier",
                "probability": d["p"],
                "shipped_relevant": bool(d["gate"]),
                "threshold_score": d["f"]["dense_best"],
                "threshold": bar,
                "threshold_relevant": d["it1_raw"] >= bar,
                "links": d["top"],
                "link_dense": [d["it1_raw"]],
                "links_in_language": any(languages.get(doc) == "it" for doc in d["top"]),
                "other_doc": d["en_docs"][0] if d["en_docs"] else None,
                "other_dense": d["en1_raw"],
                "other_urgent": bool(d["en_docs"] and d["en_docs"][0] in urgent),
                "reused_from": str(diag),
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    from evaluation.redteam.batch import default_data_dir, ensure_demo_index
    from evaluation.redteam.gate_fit import dev_rows

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSONL written (appended; rerun resumes)")
    parser.add_argument("--data-dir", type=Path, default=None, help="index folder (default /tmp/redteam-EMBEDDER)")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="a gate_fit retrieval cache whose English retrieval is today's"
    )
    parser.add_argument("--reuse-it", type=Path, default=None, help="session 10's Italian diagnosis rows")
    parser.add_argument("--reverse", action="store_true", help="collect the last sets first (a second process)")
    parser.add_argument("--skip", type=Path, default=None, help="rows already collected by another process")
    parser.add_argument("--language", choices=("en", "it"), default=None, help="collect this language's rows only")
    parser.add_argument("--later-sets", action="store_true", help="the gate sets spent since session 15 too")
    parser.add_argument(
        "--like", type=Path, default=None, help="collect only the (source, id) rows of this rows file (same units)"
    )
    parser.add_argument(
        "--sources",
        default=None,
        help="collect only rows whose source starts with one of these (comma-separated), in that order",
    )
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    data_dir = args.data_dir or default_data_dir()
    ensure_demo_index(data_dir, log)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(dev_rows(later=args.later_sets), key=_order, reverse=args.reverse)
    if args.language:
        rows = [r for r in rows if r["language"] == args.language]
    if args.sources:
        wanted = args.sources.split(",")
        first = {r["source"]: next((i for i, w in enumerate(wanted) if r["source"].startswith(w)), -1) for r in rows}
        rows = sorted((r for r in rows if first[r["source"]] >= 0), key=lambda r: first[r["source"]])  # stable
    if args.like:
        keep = {(json.loads(x)["source"], json.loads(x)["id"]) for x in args.like.read_text().splitlines() if x}
        rows = [r for r in rows if (r["source"], r["id"]) in keep]
    if args.reuse:
        done = set()
        if args.out.exists():
            done = {(json.loads(x)["source"], json.loads(x)["id"]) for x in args.out.read_text().splitlines() if x}
        log(
            f"{reuse([r for r in rows if (r['source'], r['id']) not in done], args.reuse, args.out, data_dir, ('en',))}"
            " English rows reused"
        )
    if args.reuse_it:
        done = set()
        if args.out.exists():
            done = {(json.loads(x)["source"], json.loads(x)["id"]) for x in args.out.read_text().splitlines() if x}
        todo = [r for r in rows if (r["source"], r["id"]) not in done]
        log(f"{reuse_italian(todo, args.reuse_it, args.out, data_dir)} Italian rows reused")
    if args.skip and args.skip.exists():
        other = {(json.loads(x)["source"], json.loads(x)["id"]) for x in args.skip.read_text().splitlines() if x}
        rows = [r for r in rows if (r["source"], r["id"]) not in other]
    n = collect(rows, args.out, data_dir, log)
    log(f"{n} written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
