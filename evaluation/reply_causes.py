"""Why a reply missed its key fact, scored as the patient reads it: one cause per missed question, per language.

    python -m evaluation.reply_causes --data SET.jsonl [--data ...] --capture DIR [--out FILE.md] [--json FILE]

Reads the composer inputs ``evaluation.reply_misses --capture`` kept (retrieval, the gate and the red-flag screen
held fixed), replays the composer as it is now (with the trained term for ``compose.trained_types``), puts the
urgent message in front as ``chatbot eval replies`` does, and gives each question with a key phrase missing one
cause, the first that applies:

- ``gate refused``: no certified segment passed the relevance gate (``urgent`` when a red-flag message was shown);
- ``safety route``: another non-answer status (the dose-question reply);
- ``card not linked``: the answering card is not among the retrieved documents;
- ``it question, en card``: an Italian question whose answering card is English (linked);
- ``answered from another card``: the card is linked, the reply's answer came from another one;
- ``wrong unit``: the answer came from the card, the key sentence was never chosen;
- ``cut by length``: the key sentence was chosen but the length or piece limit left it out (it is in the reply
  composed without limits).

Each row also says the composer's question type (``answer_cues.question_type``) and whether that type uses the
trained term or the cues alone.
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

from evaluation.bench_replies import ReplyItem, load_reply_set, phrases_found
from evaluation.reply_misses import replay

CAUSES = (
    "gate refused",
    "gate refused (urgent)",
    "safety route",
    "card not linked",
    "it question, en card",
    "answered from another card",
    "wrong unit",
    "cut by length",
)


def urgent_text(cap: dict[str, Any]) -> str | None:
    """The urgent message the patient read above the reply, if any."""
    ans = cap.get("answer") or {}
    return ans.get("urgent_message") if ans.get("urgent") else None


def read_reply(cap: dict[str, Any], text: str) -> str:
    """What the patient reads: the urgent message (if any), then the composed text."""
    urgent = urgent_text(cap)
    return (f"{urgent}\n\n{text}" if text else urgent) if urgent else text


def cause_of(item: ReplyItem, cap: dict[str, Any], text: str, trace: dict[str, Any], unlimited: str) -> str | None:
    """The cause of a miss (see the module docstring), None when every key phrase is read."""
    reply = read_reply(cap, text)
    if reply and all(phrases_found(reply, item.key_phrases)):
        return None
    if not cap.get("hits") or not text:
        status = (cap.get("answer") or {}).get("status")
        if status and status not in ("no_certified_info", "answered"):
            return "safety route"
        return "gate refused (urgent)" if urgent_text(cap) else "gate refused"
    docs = {h.segment.doc_id for h in cap["hits"]}
    if item.card_id not in docs:
        return "card not linked"
    if item.language == "it" and item.card_id.startswith("en-"):
        return "it question, en card"
    answer = (((trace or {}).get("attempts") or [{}])[-1].get("answer")) or {}
    if answer.get("doc_id") != item.card_id:
        return "answered from another card"
    missing = [p for p, ok in zip(item.key_phrases, phrases_found(reply, item.key_phrases), strict=True) if not ok]
    return "cut by length" if all(phrases_found(unlimited, missing)) else "wrong unit"


def classify_sets(
    sets: Sequence[tuple[str, list[ReplyItem]]],
    captures: dict[str, dict[str, Any]],
    settings: Any,
    model_for: Callable[[str], Any] | None,
    trained_types: Sequence[str],
) -> list[dict[str, Any]]:
    """One row per question of every set: recall as read, the cause of a miss, the composer's question type."""
    from chatbot.stages.answer_cues import question_type

    rows = []
    for name, items in sets:
        for item in items:
            cap = captures[name][item.id]
            text, trace, unlimited = "", {}, ""
            if cap.get("hits"):
                model = model_for(cap["language"]) if model_for else None
                text, trace = replay(cap, settings, model)
                unlimited = replay(cap, settings, model, unlimited=True)[0]
            reply = read_reply(cap, text)
            found = phrases_found(reply, item.key_phrases) if reply else [False] * len(item.key_phrases)
            kind = question_type(item.question)
            rows.append(
                {"set": name, "id": item.id, "language": item.language, "type": item.type, "composer_type": kind,
                 "scorer": "trained" if kind in trained_types else "cues", "recall": sum(found) / len(found),
                 "cause": cause_of(item, cap, text, trace, unlimited), "card_id": item.card_id,
                 "answer_doc": ((trace.get("attempts") or [{}])[-1].get("answer") or {}).get("doc_id"),
                 "linked": list(dict.fromkeys(h.segment.doc_id for h in cap.get("hits") or [])),
                 "question": item.question, "key_phrases": list(item.key_phrases), "reply": reply}
            )  # fmt: skip
    return rows


def table_lines(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """Markdown: misses by cause per language, per set, and per composer question type (trained or cues)."""
    lines = ["| cause | en | it | all | " + " | ".join(names) + " |", "|---" * (4 + len(names)) + "|"]
    missed = [r for r in rows if r["cause"]]
    for c in CAUSES:
        sel = [r for r in missed if r["cause"] == c]
        by_set = Counter(r["set"] for r in sel)
        lang = Counter(r["language"] for r in sel)
        lines.append(
            f"| {c} | {lang['en']} | {lang['it']} | {len(sel)} | " + " | ".join(str(by_set[n]) for n in names) + " |"
        )
    lang = Counter(r["language"] for r in missed)
    by_set = Counter(r["set"] for r in missed)
    lines.append(
        f"| **all misses** | {lang['en']} | {lang['it']} | {len(missed)} | "
        + " | ".join(str(by_set[n]) for n in names)
        + " |"
    )
    n_lang = Counter(r["language"] for r in rows)
    lines.append(f"| questions | {n_lang['en']} | {n_lang['it']} | {len(rows)} | " + " | ".join(
        str(sum(r["set"] == n for r in rows)) for n in names) + " |")  # fmt: skip
    types = ("how_much", "what_to_do", "how_long", "when", "yes_no", "why")
    lines += ["", "| cause (en / it) | " + " | ".join(types) + " |", "|---" * (1 + len(types)) + "|"]
    for c in CAUSES:
        cells = []
        for t in types:
            sel = Counter(r["language"] for r in missed if r["cause"] == c and r["composer_type"] == t)
            cells.append(f"{sel['en']} / {sel['it']}")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    scorers = sorted({r["scorer"] for r in rows})
    head = "| composer type's scorer | questions | misses | composer's (it + en card, other card, wrong unit, cut) |"
    lines += ["", head, "|---|---|---|---|"]
    own = ("answered from another card", "wrong unit", "cut by length", "it question, en card")
    for s in scorers:
        sel = [r for r in rows if r["scorer"] == s]
        lines.append(
            f"| {s} | {len(sel)} | {sum(bool(r['cause']) for r in sel)} | {sum(r['cause'] in own for r in sel)} |"
        )
    return lines


def recall_lines(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """Key-fact recall per set and language (what the patient reads, composer replayed)."""
    lines = ["| set | n | recall | en | it |", "|---|---|---|---|---|"]
    for n in [*names, None]:
        sel = [r for r in rows if n is None or r["set"] == n]
        cells = []
        for lang in (None, "en", "it"):
            s = [r["recall"] for r in sel if lang is None or r["language"] == lang]
            cells.append(f"{sum(s) / len(s):.3f}" if s else "-")
        lines.append(f"| {n or 'pooled'} | {len(sel)} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: the reply-miss causes of a run (see the module docstring)."""
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages.answer_first import answer_model_for

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True, help="reply set JSONL (repeatable)")
    p.add_argument("--capture", type=Path, required=True, help="captured composer inputs (evaluation.reply_misses)")
    p.add_argument("--out", type=Path, default=None, help="write the markdown tables here")
    p.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = p.parse_args(argv)
    settings = load_settings()
    sets = [(path.stem, load_reply_set(path)) for path in args.data]
    captures = {name: pickle.loads((args.capture / f"{name}.pkl").read_bytes()) for name, _ in sets}
    services = Services(settings) if settings.compose.trained_types else None
    model_for = (lambda lang: answer_model_for(services, "cues", lang)) if services else None
    rows = classify_sets(sets, captures, settings, model_for, settings.compose.trained_types)
    names = [n for n, _ in sets]
    lines = [*recall_lines(rows, names), "", *table_lines(rows, names)]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
