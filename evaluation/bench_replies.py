"""`chatbot eval replies`: what the patient reads, measured on a reply set over the bundled cards.

A reply set is JSONL, one question a line: ``{"id", "language", "type", "question", "card_id",
"key_phrases"}``, where ``card_id`` is the card that answers and ``key_phrases`` are verbatim phrases of that
card a correct reply must contain (``evaluation/replies/replyset.jsonl``). Each question goes through
``chatbot.answer.answer`` with the settings in force (``--set GROUP.FIELD=VALUE`` overrides one, e.g.
``--set compose.mode=generative``), over the cards folder (indexed incrementally first).

Reported, overall and per language and per question type: key-fact recall (share of key phrases found in
the reply, case- and whitespace-insensitive; a refused question scores 0), the same in what the reply opens
with (``opening``: does the reply LEAD with the answer), the share of questions whose
first link is the answering card, how many were refused ("no certified information") or got no reply,
reply length (characters) and compose latency (``trace.timings_ms.compose``: composing and validating)
p50/p90; then one row per question with the reply, what was missing and the sentence the composer took as
the answer. Markdown and JSON go to ``evaluation/results/replies-NAME.{md,json}`` with the exact command, and
``replies-NAME.per_query.jsonl`` for paired tests between runs: ``python -m evaluation.compare_runs
evaluation/results/replies-A:replies=A evaluation/results/replies-B:replies=B --metric recall``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import demo_cards
from evaluation.evaluator import Benchmark
from evaluation.harness import apply_overrides, command_line, services_over_cards
from evaluation.jsonl_sets import read_records
from evaluation.report import Report, output_target

DEFAULT_CARDS = demo_cards()
QUESTION_TYPES = ("how_much", "how_long", "when", "yes_no", "why", "what_to_do")
LANGUAGES = ("en", "it")
_FIELDS = ("id", "language", "type", "question", "card_id", "key_phrases")


@dataclass(frozen=True)
class ReplyItem:
    """One question of a reply set."""

    id: str
    language: str
    type: str
    question: str
    card_id: str
    key_phrases: tuple[str, ...]


def load_reply_set(path: Path) -> list[ReplyItem]:
    """The questions of a reply-set JSONL file; a malformed line is an error naming the file and line."""
    items: list[ReplyItem] = []
    seen: set[str] = set()
    for lineno, rec in read_records(path, _FIELDS, "reply set"):
        phrases = rec["key_phrases"]
        if not isinstance(phrases, list) or not phrases or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise ValueError(f"{path}:{lineno}: key_phrases must be a non-empty list of phrases")
        if rec["id"] in seen:
            raise ValueError(f"{path}:{lineno}: duplicate id {rec['id']!r}")
        seen.add(rec["id"])
        items.append(
            ReplyItem(str(rec["id"]), rec["language"], rec["type"], rec["question"], rec["card_id"], tuple(phrases))
        )
    if not items:
        raise ValueError(f"{path}: no questions")
    return items


def normalise(text: str) -> str:
    """Case-folded, NFC, typographic quotes and apostrophes made plain, whitespace collapsed."""
    text = unicodedata.normalize("NFC", text)
    text = text.translate(str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " "}))
    return " ".join(text.split()).casefold()


def phrases_found(reply: str, phrases: Sequence[str]) -> list[bool]:
    """Whether each key phrase occurs in the reply (see ``normalise``)."""
    folded = normalise(reply)
    return [normalise(p) in folded for p in phrases]


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p90": 0.0}
    arr = np.asarray(values, dtype=float)
    return {"p50": round(float(np.percentile(arr, 50)), 1), "p90": round(float(np.percentile(arr, 90)), 1)}


def _answer_trace(ans: dict[str, Any]) -> dict[str, Any] | None:
    """The extractive attempt's answer selection (``trace.compose.attempts[-1].answer``), if any."""
    attempts = ((ans.get("trace") or {}).get("compose") or {}).get("attempts") or []
    return attempts[-1].get("answer") if attempts else None


def opening(ans: dict[str, Any]) -> str:
    """What the reply opens with: the composer's answering unit when it traced one, else the first sentence
    of the composed text (the urgent-care message and the other-language note in front of it left out)."""
    from chatbot.sentences import split_sentences
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    selected = _answer_trace(ans)
    if selected and selected.get("text"):
        return selected["text"]
    text = ans.get("reply", "")
    urgent = ans.get("urgent_message")
    if urgent and text.startswith(urgent):
        text = text[len(urgent) :]
    for note in OTHER_LANGUAGE_NOTE.values():
        text = text.strip().removeprefix(note)
    sentences = split_sentences(text)
    return sentences[0] if sentences else ""


def _link_doc(link: dict[str, Any], top: Sequence[dict[str, Any]]) -> str:
    sid = link.get("segment_id", "")
    return next((t["doc_id"] for t in top if t.get("segment_id") == sid), sid.split("#")[0])


def key_facts_and_link(
    status: str | None,
    urgent: bool,
    reply: str,
    phrases: Sequence[str],
    docs: Sequence[str],
    urgent_docs: set[str],
    card_id: str,
    urgent_counts: bool = True,
) -> tuple[list[bool], bool, str]:
    """(each key phrase found, "first link = card", what was scored: "reply", "urgent" or "none") for one reply:
    the rules of ``score_item``, shared with evaluation.urgent_rescore's replay of stored rows."""
    answered = status == "answered"
    scored = answered or (urgent_counts and urgent)
    found = phrases_found(reply, phrases) if scored else [False] * len(phrases)
    answer_doc = next((d for d in docs if d not in urgent_docs), None)
    first_doc = docs[0] if docs else None
    first_ok = first_doc == card_id or (urgent_counts and bool(urgent_docs) and answer_doc == card_id)
    return found, first_ok, "reply" if answered else "urgent" if scored else "none"


def score_item(item: ReplyItem, ans: dict[str, Any], urgent_counts: bool = True) -> dict[str, Any]:
    """The per-question row: recall of the key phrases, the first link's card, length and latency.

    What the patient reads is scored: an answered reply, and (``urgent_counts``) an urgent reply whatever the
    status under its message (the certified urgent card's text is part of what the patient reads; ``scored``
    says "urgent" where only that message and the refusal under it were there to score). An urgent reply's
    links open with its urgent card(s) (``urgent_cards``); its first answer link is the first one after them,
    and "first link = card" holds when the first link or that first answer link is the card. With
    ``urgent_counts`` False, the scoring before session 10 (a reply not "answered" scores 0; literal first link).
    """
    answered = ans.get("status") == "answered"
    urgent = bool(ans.get("urgent"))
    top = (ans.get("trace") or {}).get("top") or []
    docs = [_link_doc(link, top) for link in ans.get("links") or []]
    first_doc = docs[0] if docs else None
    urgent_docs = {c["doc_id"] for c in ans.get("urgent_cards") or []} if urgent else set()
    found, first_ok, scored = key_facts_and_link(
        ans.get("status"),
        urgent,
        ans.get("reply", ""),
        item.key_phrases,
        docs,
        urgent_docs,
        item.card_id,
        urgent_counts,
    )
    opened = phrases_found(opening(ans), item.key_phrases) if answered else [False] * len(item.key_phrases)
    timings = (ans.get("trace") or {}).get("timings_ms") or {}
    selected = _answer_trace(ans)
    return {
        "id": item.id,
        "language": item.language,
        "type": item.type,
        "question": item.question,
        "card_id": item.card_id,
        "status": ans.get("status"),
        "urgent": urgent,
        "scored": scored,
        "recall": sum(found) / len(found),
        "opening_recall": sum(opened) / len(opened),
        "missing": [p for p, ok in zip(item.key_phrases, found, strict=True) if not ok],
        "first_link_doc": first_doc,
        "first_link_ok": first_ok,
        "link_docs": docs,
        "urgent_cards": sorted(urgent_docs),
        "reply_chars": len(ans.get("reply", "")) if answered else 0,
        "compose_ms": timings.get("compose"),
        "total_ms": timings.get("total"),
        "mode_used": ((ans.get("trace") or {}).get("compose") or {}).get("mode_used"),
        "answer_sentence": (selected or {}).get("text"),
        "answer_score": (selected or {}).get("score"),
        "answer_doc": (selected or {}).get("doc_id"),
        "reply": ans.get("reply", ""),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Key-fact recall, first-link rate, refusals, length and compose latency for a group of rows."""
    if not rows:
        return {"n": 0}
    answered = [r for r in rows if r["status"] == "answered"]
    compose = [r["compose_ms"] for r in rows if r["compose_ms"] is not None]
    return {
        "n": len(rows),
        "key_fact_recall": round(float(np.mean([r["recall"] for r in rows])), 3),
        "opens_with_key_fact": round(float(np.mean([r["opening_recall"] for r in rows])), 3),
        "all_key_facts": round(float(np.mean([r["recall"] == 1.0 for r in rows])), 3),
        "any_key_fact": round(float(np.mean([r["recall"] > 0.0 for r in rows])), 3),
        "first_link_is_card": round(float(np.mean([r["first_link_ok"] for r in rows])), 3),
        "refused": sum(r["status"] == "no_certified_info" for r in rows),
        # of those, the ones the red-flag screen answered with its urgent message (the patient was not left without
        # a response; the composed part was refused)
        "refused_urgent": sum(r["status"] == "no_certified_info" and bool(r.get("urgent")) for r in rows),
        "not_answered": sum(r["status"] != "answered" for r in rows),
        # replies that carried the urgent message, and their key-fact recall (what the patient read, the urgent
        # card's text included); rows scored before session 10 have no "scored" and leave these out
        **(
            {
                "urgent_replies": sum(bool(r.get("urgent")) for r in rows),
                "urgent_recall": round(float(np.mean([r["recall"] for r in rows if r.get("urgent")])), 3)
                if any(r.get("urgent") for r in rows)
                else None,
            }
            if all("scored" in r for r in rows)
            else {}
        ),
        "reply_chars_mean": round(float(np.mean([r["reply_chars"] for r in answered])), 1) if answered else 0.0,
        "compose_ms": _percentiles(compose),
        "total_ms": _percentiles([r["total_ms"] for r in rows if r["total_ms"] is not None]),
    }


def run_replies(
    items: Sequence[ReplyItem], answer_fn: Callable[[str], dict[str, Any]], log: Callable[..., None] = print
) -> dict[str, Any]:
    """Answer every question with ``answer_fn`` and score it; summary overall, per language, per type."""
    rows = []
    for k, item in enumerate(items, 1):
        ans = answer_fn(item.question)
        rows.append(score_item(item, ans))
        log(f"  [{k}/{len(items)}] {item.id} recall={rows[-1]['recall']:.2f} {rows[-1]['status']}")
    by_language = {lang: summarise([r for r in rows if r["language"] == lang]) for lang in LANGUAGES}
    types = [t for t in QUESTION_TYPES if any(r["type"] == t for r in rows)]
    types += sorted({r["type"] for r in rows} - set(types))
    by_type = {t: summarise([r for r in rows if r["type"] == t]) for t in types}
    return {"summary": {"all": summarise(rows), "by_language": by_language, "by_type": by_type}, "rows": rows}


def _refused_cell(s: dict[str, Any]) -> str:
    """'18 (6 urgent)': refusals, and how many of them showed the red-flag screen's urgent message (reports written
    before that count existed re-render as they were)."""
    urgent = s.get("refused_urgent")
    return f"{s['refused']} ({urgent} urgent)" if urgent else str(s["refused"])


def _urgent_cell(s: dict[str, Any]) -> str:
    """' 6 (0.750) |': replies with the urgent message and their key-fact recall ('0' when none)."""
    n, recall = s.get("urgent_replies", 0), s.get("urgent_recall")
    return f" {n} ({recall:.3f}) |" if n and recall is not None else f" {n} |"


def _table(groups: dict[str, dict[str, Any]], label: str) -> list[str]:
    # reports written before "any key fact" existed re-render as they were (tests/test_report.py)
    has_any = any("any_key_fact" in s for s in groups.values())
    any_head, any_rule = (" any key fact |", "---|") if has_any else ("", "")
    # reports written before session 10 have no urgent-reply count and re-render without the column
    has_urgent = any("urgent_replies" in s for s in groups.values())
    urg_head, urg_rule = (" urgent (recall) |", "---|") if has_urgent else ("", "")
    lines = [
        f"| {label} | n | key-fact recall |{any_head} opens with it | all key facts | first link = card "
        f"| refused |{urg_head} chars (mean) | compose p50 ms | compose p90 ms |",
        f"|---|---|---|{any_rule}---|---|---|---|{urg_rule}---|---|---|",
    ]
    for name, s in groups.items():
        if not s.get("n"):
            continue
        any_cell = f" {s.get('any_key_fact', 0.0):.3f} |" if has_any else ""
        lines.append(
            f"| {name} | {s['n']} | {s['key_fact_recall']:.3f} |{any_cell} {s['opens_with_key_fact']:.3f} | "
            f"{s['all_key_facts']:.3f} | "
            f"{s['first_link_is_card']:.3f} | {_refused_cell(s)} |{_urgent_cell(s) if has_urgent else ''} "
            f"{s['reply_chars_mean']:.0f} | "
            f"{s['compose_ms']['p50']:.0f} | {s['compose_ms']['p90']:.0f} |"
        )
    return lines


_SIDE_BY_SIDE = (
    ("key-fact recall", lambda s: f"{s['key_fact_recall']:.3f}"),
    ("any key fact", lambda s: f"{s.get('any_key_fact', 0.0):.3f}"),
    ("opens with it", lambda s: f"{s['opens_with_key_fact']:.3f}"),
    ("refused", lambda s: _refused_cell(s)),
    ("chars (mean)", lambda s: f"{s['reply_chars_mean']:.0f}"),
    ("compose p50 ms", lambda s: f"{s['compose_ms']['p50']:.0f}"),
    ("compose p90 ms", lambda s: f"{s['compose_ms']['p90']:.0f}"),
)


def side_by_side(a: dict[str, Any], b: dict[str, Any], label_a: str, label_b: str) -> list[str]:
    """One table, two composers: each group (all, per language, per question type) a row, each measure
    given for ``a`` then ``b``."""
    head = " | ".join(f"{m} {label}" for m, _ in _SIDE_BY_SIDE for label in (label_a, label_b))
    lines = [f"| group | n | {head} |", "|---|---|" + "---|" * (2 * len(_SIDE_BY_SIDE))]
    groups_a = {"all": a["all"], **a["by_language"], **a["by_type"]}
    groups_b = {"all": b["all"], **b["by_language"], **b["by_type"]}
    for name, sa in groups_a.items():
        sb = groups_b.get(name) or {}
        if not sa.get("n") or not sb.get("n"):
            continue
        cells = " | ".join(f(s) for _, f in _SIDE_BY_SIDE for s in (sa, sb))
        lines.append(f"| {name} | {sa['n']} | {cells} |")
    return lines


def _first_link_cell(r: dict[str, Any]) -> str:
    """The first link's card; for an urgent reply whose links open with its urgent card(s), 'card (urgent) →
    first answer link' (rows written before session 10 have no ``urgent_cards`` and read as they did)."""
    first, cards = r["first_link_doc"], r.get("urgent_cards") or []
    if first not in cards:
        return str(first)
    answer = next((d for d in r.get("link_docs") or [] if d not in cards), None)
    return f"{first} (urgent) → {answer}"


def _cell(text: Any, limit: int = 220) -> str:
    text = " ".join(str(text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_report(result: dict[str, Any], out_dir: Path, name: str, command: str) -> Path:
    """``replies-NAME.md`` (summary tables and per-question rows) and ``replies-NAME.json``."""
    return render(result, name, command).write(out_dir)


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Primary: key-fact recall over every question; the opening and first-link rates beside it."""
    s = result["summary"]["all"]
    return {
        "key_fact_recall": s["key_fact_recall"],
        "opens_with_key_fact": s["opens_with_key_fact"],
        "all_key_facts": s["all_key_facts"],
        "any_key_fact": s["any_key_fact"],
        "first_link_is_card": s["first_link_is_card"],
        "refused": s["refused"],
    }


def render(result: dict[str, Any], name: str, command: str) -> Report:
    """The report: summary tables by language and question type, one row per question; the per-query rows
    in the shape ``evaluation.compare_runs`` reads (REPORT:replies) for paired tests between runs."""
    s = result["summary"]
    lines = [
        f"Reply set: `{result['data']}` ({s['all']['n']} questions); settings: "
        f"compose.mode={result['settings']['compose_mode']}, compose.answer_scorer="
        f"{result['settings'].get('answer_scorer')}, embedder {result['settings']['embedding_model']}, "
        f"pipeline {result['settings']['pipeline']}; overrides {result['settings']['overrides'] or 'none'}; "
        f"CPU {result['settings']['cpu']}; {result['seconds']:.0f} s.",
        "",
        "Key-fact recall: share of a question's key phrases (verbatim from the answering card) found in the "
        + (
            "reply the patient reads; a refused question scores 0 unless it carried the urgent message (then "
            "its text, the certified urgent card's, is scored: 'urgent (recall)' counts those replies and their "
            "recall; an urgent reply's first answer link, after its urgent card(s), counts for first link = card). "
            if "urgent_replies" in s["all"]
            else "reply; a refused question scores 0. "
        )
        + (
            "Any key fact: share of questions whose reply holds at least one key phrase (where a set's phrases "
            "are alternatives, as in heldout-v2 and later sets, the pass rate). "
            if "any_key_fact" in s["all"]
            else ""
        )
        + "Opens with it: the same, counted in what the reply opens with only "
        "(the composer's answering unit, else the reply's first sentence after the urgent message and the "
        "other-language note). First link = card: the first source link is the card that answers.",
        "",
        *_table({"all": s["all"], **s["by_language"]}, "language"),
        "",
        *_table(s["by_type"], "question type"),
        "",
    ]
    versus = result.get("versus")
    if versus:
        label = ", ".join(versus["overrides"])
        lines += [
            f"## Side by side: A (the settings above) and B (`{label}`)",
            "",
            f"The same questions in the same process; B's replies came from: {versus['modes_used']}; "
            f"B took {versus['seconds']:.0f} s.",
            "",
            *side_by_side(s, versus["summary"], "A", "B"),
            "",
        ]
    lines += [
        "## Per question" + (", A" if versus else ""),
        "",
        "| id | type | status | recall | first link | missing | answer sentence (score) | reply |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        answer = f"{_cell(r['answer_sentence'], 120)} ({r['answer_score']})" if r["answer_sentence"] else ""
        lines.append(
            f"| {r['id']} | {r['type']} | {r['status']}{' (urgent)' if r['urgent'] else ''} | {r['recall']:.2f} | "
            f"{_first_link_cell(r)}{'' if r['first_link_ok'] else ' ✗'} | {_cell('; '.join(r['missing']))} | "
            f"{answer} | {_cell(r['reply'], 300)} |"
        )
    if versus:
        lines += [
            "",
            "## Per question, B",
            "",
            "| id | type | status | recall | mode used | compose ms | missing | reply |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for v in versus["rows"]:
            lines.append(
                f"| {v['id']} | {v['type']} | {v['status']} | {v['recall']:.2f} | {v['mode_used']} | "
                f"{v['compose_ms'] or 0:.0f} | {_cell('; '.join(v['missing']))} | {_cell(v['reply'], 300)} |"
            )
    per_query = [
        {
            "query_id": r["id"],
            "pipeline": "replies",
            "recall": r["recall"],
            "opening_recall": r["opening_recall"],
            "first_link_ok": int(r["first_link_ok"]),
            "answered": int(r["status"] == "answered"),
            "reply_chars": r["reply_chars"],
            "compose_ms": r["compose_ms"] or 0.0,
        }
        for r in result["rows"]
    ]
    return Report(
        name=f"replies-{name}",
        title=f"Reply benchmark: {name}",
        command=command,
        body=lines,
        summary=result,
        rows=per_query,
        json_suffix=".json",
        json_indent=1,
    )


def _cpu() -> str:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    model = re.search(r"model name\s*:\s*(.+)", flags)
    marks = [f for f in ("avx512f", "amx_tile") if f" {f}" in flags]
    return f"{model.group(1).strip() if model else 'unknown'} ({', '.join(marks) or 'no avx512'})"


def main_replies(args: argparse.Namespace) -> int:
    """`chatbot eval replies --data FILE [--json] [--set ...] [--versus ...] [--name NAME] [--cards DIR]
    [--limit N]`; ``--versus GROUP.FIELD=VALUE`` (repeatable) runs the set again with those overrides on top
    (e.g. compose.mode=generative) and reports both side by side."""
    from chatbot.answer import answer
    from chatbot.settings import load_settings

    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    overrides = list(args.set or [])
    versus = list(getattr(args, "versus", None) or [])
    try:
        items = load_reply_set(args.data)[: args.limit] if args.limit else load_reply_set(args.data)
        settings = apply_overrides(load_settings(), overrides)
        apply_overrides(settings.model_copy(deep=True), versus)  # a bad --versus fails now, not after run A
        services = services_over_cards(settings, args.cards)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = args.name or args.data.stem
    out_dir, name = output_target(args.out, name)

    def run() -> dict[str, Any]:
        start = time.perf_counter()
        answer(items[0].question, services)  # warm-up: models load once per process, not inside question one
        result = run_replies(items, lambda q: answer(q, services), log=log)
        result["data"] = str(args.data)
        result["seconds"] = round(time.perf_counter() - start, 1)
        result["settings"] = {
            "compose_mode": settings.compose.mode,
            "answer_scorer": getattr(settings.compose, "answer_scorer", None),
            "embedding_model": settings.embedding.model,
            "pipeline": settings.retrieval.pipeline,
            "overrides": overrides,
            "cpu": _cpu(),
        }
        if versus:
            start = time.perf_counter()
            # B gets its own Services: settings read when the services are built (embedding.query_encoder,
            # the rerank models) would otherwise keep A's values; the index is shared, nothing is re-embedded.
            other_services = services_over_cards(apply_overrides(settings.model_copy(deep=True), versus), args.cards)
            log(f"versus {', '.join(versus)}")
            answer(items[0].question, other_services)
            other = run_replies(items, lambda q: answer(q, other_services), log=log)
            modes = Counter(r["mode_used"] or r["status"] for r in other["rows"])
            result["versus"] = {
                "overrides": versus,
                "seconds": round(time.perf_counter() - start, 1),
                "modes_used": ", ".join(f"{m} {n}" for m, n in modes.most_common()),
                **other,
            }
        return result

    bench = Benchmark(f"replies-{name}", "key_fact_recall", run, metrics, lambda r: render(r, name, command_line()))
    bench(out_dir)
    result, report = bench.result, bench.path
    assert result is not None and report is not None
    if args.json:
        extra = {"versus": result["versus"]["summary"]} if versus else {}
        print(json.dumps({**result["summary"], **extra}))
    else:
        print(report.read_text(encoding="utf-8"))
    return 0
