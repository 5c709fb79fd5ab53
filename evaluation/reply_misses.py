"""Why a reply missed its key fact: each question of a reply set classified by cause.

``python -m evaluation.reply_misses --data SET.jsonl [--data ...] [--capture DIR] [--out FILE.md] [--set G.F=V ...]
[--rows FILE.jsonl]``

Each question goes through ``chatbot.answer.answer`` once with the settings in force; what the composer was
given (the question as searched, the top segments, the segments of every retrieved document) is kept in
``--capture`` (outside the repository, default ``~/.cache/certified-chatbot/reply-captures``), so a composer
change can be replayed over the same inputs in milliseconds (``replay``) without searching again. A reply
that lacks a key phrase is classified as

- ``refused``: the relevance gate or the composer gave no reply;
- ``wrong card``: the answering card is not among the retrieved documents (retrieval or the gate);
- ``card not first``: retrieved, but below another document that gave the answer sentence;
- ``not picked``: the answering card gave the answer, the key sentence was not chosen; where it sits is
  told (the retrieved segment, another segment of the same document, a list item, the heading);
- ``cut by length``: the key sentence was chosen but the length limit or the piece limit left it out.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evaluation.bench_replies import ReplyItem, load_reply_set, normalise, phrases_found

DEFAULT_CAPTURE = Path.home() / ".cache" / "certified-chatbot" / "reply-captures"


def capture(items: Sequence[ReplyItem], services: Any, path: Path) -> dict[str, dict[str, Any]]:
    """Answer every question once; keep the composer's inputs and the answer per question id (pickled)."""
    import chatbot.stages.compose as compose_module
    from chatbot.answer import answer

    real = compose_module.compose_reply
    got: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = {}

    def spy(question: str, hits: Sequence[Any], **kwargs: Any) -> Any:
        fetch = kwargs.get("document_segments")
        docs = {h.segment.doc_id for h in hits}
        current.update(
            question=question,
            hits=list(hits),
            language=kwargs.get("language", "en"),
            documents={d: list(fetch(d)) if fetch else [] for d in docs},
            reserved_chars=kwargs.get("reserved_chars", 0),
            # what answer() tells the composer about the question: asked kind, gloss readings, alarm found
            kind=kwargs.get("kind"),
            readings=kwargs.get("readings"),
            urgent=bool(kwargs.get("urgent", False)),
        )
        return real(question, hits, **kwargs)

    compose_module.compose_reply = spy
    try:
        for item in items:
            current.clear()
            ans = answer(item.question, services)
            got[item.id] = {**current, "answer": ans}
    finally:
        compose_module.compose_reply = real
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(got))
    return got


def replay(
    captured: dict[str, Any], settings: Any, answer_model: Any = None, scorer: str = "cues", unlimited: bool = False
) -> tuple[str, dict[str, Any]]:
    """The extractive reply (text after validation, with the other-language note) and its trace for the
    captured inputs of one question, composed by the code as it is now."""
    from chatbot.stages.compose import compose_reply

    docs = captured["documents"]
    update: dict[str, Any] = {"mode": "extractive", "answer_scorer": scorer}
    if unlimited:
        update.update(max_chars=100_000, max_sentences=1000)
    cfg = settings.compose.model_copy(update=update)
    composed = compose_reply(
        captured["question"],
        captured["hits"],
        embedder=None,
        settings=cfg,
        language=captured["language"],
        document_segments=lambda d: docs.get(d, []),
        answer_model=answer_model,
        reserved_chars=captured.get("reserved_chars", 0),
        kind=captured.get("kind"),
        readings=captured.get("readings"),
        urgent=captured.get("urgent", False),
    )
    text = f"{composed.language_note}\n\n{composed.text}" if composed.language_note and composed.text else composed.text
    return text, composed.trace


def _where(item: ReplyItem, captured: dict[str, Any]) -> str:
    """Where the first key phrase sits in the answering card: retrieved segment, other segment, list, heading."""
    phrase = normalise(item.key_phrases[0])
    retrieved = {h.segment.id for h in captured["hits"]}
    for seg in captured["documents"].get(item.card_id, []):
        if phrase in normalise(seg.heading or ""):
            return "heading"
        if phrase in normalise(seg.text):
            place = "retrieved segment" if seg.id in retrieved else "another segment of the document"
            line = next((ln for ln in seg.text.split("\n") if phrase in normalise(ln)), "")
            return place + (" (list item)" if line.lstrip().startswith("- ") else "")
    return "not in the indexed card"


def classify(
    item: ReplyItem, captured: dict[str, Any], reply: str, trace: dict[str, Any], unlimited: str | None = None
) -> dict[str, Any]:
    """The cause of a miss (None when every key phrase is in the reply) and the evidence for it; ``unlimited``
    is the reply composed from the same inputs without the length and piece limits."""
    found = phrases_found(reply, item.key_phrases) if reply else [False] * len(item.key_phrases)
    row: dict[str, Any] = {
        "id": item.id,
        "language": item.language,
        "type": item.type,
        "recall": sum(found) / len(found),
    }
    if all(found):
        return {**row, "cause": None}
    hits = captured.get("hits") or []
    doc_order = list(dict.fromkeys(h.segment.doc_id for h in hits))
    attempt = ((trace or {}).get("attempts") or [{}])[-1]
    answer = attempt.get("answer") or {}
    row.update(
        question=item.question,
        card_id=item.card_id,
        docs=doc_order,
        picked=answer.get("text", ""),
        picked_doc=answer.get("doc_id"),
        picked_score=answer.get("score"),
        parts=answer.get("parts"),
        missing=[p for p, ok in zip(item.key_phrases, found, strict=True) if not ok],
    )
    if not reply:
        status = (captured.get("answer") or {}).get("status")
        return {**row, "cause": "refused", "where": status or "no reply"}
    if item.card_id not in doc_order:
        return {**row, "cause": "wrong card", "where": "not retrieved"}
    where = _where(item, captured)
    if answer.get("doc_id") != item.card_id:
        return {**row, "cause": "card not first", "where": where}
    # chosen, then cut (it is in the reply composed without the length and piece limits), or never chosen?
    if unlimited is not None and all(phrases_found(unlimited, row["missing"])):
        return {**row, "cause": "cut by length", "where": where}
    return {**row, "cause": "not picked", "where": where}


def analyse(
    sets: Sequence[tuple[str, list[ReplyItem]]],
    captures: dict[str, dict[str, Any]],
    settings: Any,
    answer_model: Callable[[str], Any] | None = None,
    scorer: str = "cues",
) -> dict[str, list[dict[str, Any]]]:
    """Replay and classify every question of every set."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, items in sets:
        rows = []
        for item in items:
            cap = captures[name][item.id]
            if not cap.get("hits"):
                status = (cap.get("answer") or {}).get("status")
                rows.append(
                    {"id": item.id, "language": item.language, "type": item.type, "recall": 0.0, "cause": "refused",
                     "where": f"gate ({status})", "question": item.question, "card_id": item.card_id, "docs": [],
                     "picked": "", "missing": list(item.key_phrases)}
                )  # fmt: skip
                continue
            model = answer_model(cap["language"]) if answer_model else None
            reply, trace = replay(cap, settings, model, scorer)
            unlimited = replay(cap, settings, model, scorer, unlimited=True)[0]
            row = classify(item, cap, reply, trace, unlimited)
            row["reply"] = reply
            rows.append(row)
        out[name] = rows
    return out


def summary_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Recall per set, language and type, and the misses by cause."""
    lines = [
        "| set | n | recall | en | it | how_much | how_long | when | yes_no | why | what_to_do |",
        "|---" * 11 + "|",
    ]
    every = [r for rows in results.values() for r in rows]
    for name, rows in [("all", every), *results.items()] if len(results) > 1 else results.items():

        def mean(sel: list[dict[str, Any]]) -> str:
            return f"{sum(r['recall'] for r in sel) / len(sel):.3f}" if sel else "-"

        cells = [mean([r for r in rows if r["language"] == lang]) for lang in ("en", "it")]
        cells += [
            mean([r for r in rows if r["type"] == t])
            for t in ("how_much", "how_long", "when", "yes_no", "why", "what_to_do")
        ]
        lines.append(f"| {name} | {len(rows)} | {mean(rows)} | " + " | ".join(cells) + " |")
    lines += ["", "| set | misses | " + " | ".join(CAUSES) + " |", "|---" * (2 + len(CAUSES)) + "|"]
    for name, rows in results.items():
        causes = Counter(r["cause"] for r in rows if r["cause"])
        lines.append(f"| {name} | {sum(causes.values())} | " + " | ".join(str(causes.get(c, 0)) for c in CAUSES) + " |")
    return lines


CAUSES = ("refused", "wrong card", "card not first", "not picked", "cut by length")


def per_query_rows(results: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per question (ids and numbers only, no question text) for ``evaluation.compare_runs``."""
    return [
        {"query_id": r["id"], "pipeline": "replies", "set": name, "language": r["language"], "type": r["type"],
         "recall": r["recall"], "cause": r["cause"], "reply_chars": len(r.get("reply") or "")}
        for name, rows in results.items()
        for r in rows
    ]  # fmt: skip


def _cell(text: Any, limit: int = 200) -> str:
    text = " ".join(str(text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def miss_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [
        "| set | id | type | cause | where the key phrase sits | retrieved docs | answer picked (doc, score) "
        "| missing |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in results.items():
        for r in rows:
            if not r["cause"]:
                continue
            picked = (
                f"{_cell(r.get('picked'), 140)} ({r.get('picked_doc')}, {r.get('picked_score')})"
                if r.get("picked")
                else ""
            )
            lines.append(
                f"| {name} | {r['id']} | {r['type']} | {r['cause']} | {r.get('where', '')} | "
                f"{', '.join(r.get('docs') or [])} | {picked} | {_cell('; '.join(r.get('missing') or []))} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from chatbot.resources import demo_cards
    from chatbot.settings import load_settings

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True, help="reply set JSONL (repeatable)")
    p.add_argument("--capture", type=Path, default=DEFAULT_CAPTURE, help="folder of captured composer inputs")
    p.add_argument("--recapture", action="store_true", help="answer again even when a capture exists")
    p.add_argument("--scorer", default="cues", help="compose.answer_scorer to replay with (cues, cues+trained)")
    p.add_argument("--out", type=Path, default=None, help="write the markdown breakdown here")
    p.add_argument("--json", type=Path, default=None, help="write the classified rows here")
    p.add_argument("--rows", type=Path, default=None, help="write per-question rows (ids and numbers) here, JSONL")
    p.add_argument(
        "--set", action="append", default=[], help="override one setting for the replay (repeatable), GROUP.FIELD=VALUE"
    )
    args = p.parse_args(argv)
    from evaluation.harness import apply_overrides

    settings = apply_overrides(load_settings(), args.set)
    sets = [(path.stem, load_reply_set(path)) for path in args.data]
    captures: dict[str, dict[str, Any]] = {}
    services = None
    for name, items in sets:
        path = args.capture / f"{name}.pkl"
        if path.is_file() and not args.recapture:
            captures[name] = pickle.loads(path.read_bytes())
            continue
        if services is None:
            services = Services(settings)
            ingest_paths([demo_cards()], services, quiet=True)
        print(f"capturing {name} ({len(items)} questions)", file=sys.stderr)
        captures[name] = capture(items, services, path)
    model_for = None
    if args.scorer != "cues" or settings.compose.trained_types:  # cues add the trained term for those types
        if services is None:
            services = Services(settings)
        from chatbot.stages.answer_first import answer_model_for

        def model_for(language: str) -> Any:
            return answer_model_for(services, args.scorer, language)

    results = analyse(sets, captures, settings, model_for, args.scorer)
    lines = summary_lines(results)
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join([*lines, "", *miss_lines(results), ""]), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    if args.rows:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in per_query_rows(results)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
