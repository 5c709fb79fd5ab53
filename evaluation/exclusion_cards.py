"""Exclusion questions on the patient's path, over the bundled cards (issue 19): what the patient gets.

    python -m evaluation.exclusion_cards --data FILE [--name NAME] [--set GROUP.FIELD=VALUE ...] [--cards DIR]

A set is JSONL, one question a line: ``{"id", "language", "question", "excluded_card_ids", "good_card_ids",
"n_exclusions"}``: the cards about what the patient excluded (none when no card is about it), and the cards
that answer without being about it (at least one).
Each question goes through ``chatbot.answer.answer`` with the settings in force (the router included), over
the cards folder (indexed incrementally first). Reported overall, per language and per number of exclusions:
the share routed to the decomposition, answered with 3 links, whose first link is not an excluded card,
whose first link is a good card (the primary metric), with a good card among the links, whose reply's answering
sentence comes from a good card, and how many links are excluded cards; one row per question (ids, links,
route; the per-query file also holds the reply, certified card text). Markdown and JSON go to
``evaluation/results/exclusions-cards-NAME.*``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.evaluator import Benchmark
from evaluation.harness import apply_overrides, services_over_cards
from evaluation.jsonl_sets import read_records
from evaluation.report import Report, add_output_args, command_line, output_target, table

PROG = "python -m evaluation.exclusion_cards"
_FIELDS = ("id", "language", "question", "excluded_card_ids", "good_card_ids", "n_exclusions")
MEASURES = ("routed", "three_links", "first_not_excluded", "first_good", "good_in_links", "reply_good")


@dataclass(frozen=True)
class ExclusionItem:
    """One exclusion question and the cards that judge its links."""

    id: str
    language: str
    question: str
    excluded: frozenset[str]
    good: frozenset[str]
    n_exclusions: int


def load_exclusion_set(path: Path) -> list[ExclusionItem]:
    """The questions of an exclusion-set JSONL file; a malformed line is an error naming the file and line."""
    items: list[ExclusionItem] = []
    for lineno, rec in read_records(path, _FIELDS, "exclusion set"):
        # excluded_card_ids may be empty (no card is about the excluded thing); a question needs a good card
        if not rec["good_card_ids"]:
            raise ValueError(f"{path}:{lineno}: good_card_ids must name at least one card")
        items.append(
            ExclusionItem(
                rec["id"],
                rec["language"],
                rec["question"],
                frozenset(rec["excluded_card_ids"]),
                frozenset(rec["good_card_ids"]),
                int(rec["n_exclusions"]),
            )
        )
    if not items:
        raise ValueError(f"{path}: no questions")
    return items


def link_docs(ans: dict[str, Any]) -> list[str]:
    """The document ids of an answer's links, in order (a link's segment id is ``doc_id#hash``)."""
    return [str(link.get("segment_id", "")).split("#", 1)[0] for link in ans.get("links") or []]


def score_item(item: ExclusionItem, ans: dict[str, Any]) -> dict[str, Any]:
    """The row of one question: its links' documents, the route taken, and the measures (0/1)."""
    from chatbot.stages.answer_pool import answer_doc
    from chatbot.stages.route import EXCLUSION_PIPELINE

    docs = link_docs(ans)
    trace = ans.get("trace") if isinstance(ans.get("trace"), dict) else {}
    route = trace.get("route") or {}
    first = docs[0] if docs else None
    reply_doc = answer_doc(trace.get("compose") or {})
    return {
        "id": item.id,
        "language": item.language,
        "n_exclusions": item.n_exclusions,
        "status": ans.get("status"),
        "urgent": bool(ans.get("urgent")),
        "links": docs,
        "pipeline": route.get("pipeline"),
        "routed": int(route.get("pipeline") == EXCLUSION_PIPELINE),
        "three_links": int(len(docs) == 3),
        "first_not_excluded": int(first is not None and first not in item.excluded),
        "first_good": int(first is not None and first in item.good),
        "good_in_links": int(any(d in item.good for d in docs)),
        "excluded_links": sum(d in item.excluded for d in docs),
        # the reply (certified card text) and the document of its answering sentence, to read what it says
        "reply_doc": reply_doc,
        "reply_good": int(reply_doc in item.good),
        "reply": ans.get("reply") or "",
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Shares of each measure over ``rows`` and their count (None shares for no rows)."""
    n = len(rows)
    out: dict[str, Any] = {"questions": n}
    for m in MEASURES:
        out[m] = round(sum(r[m] for r in rows) / n, 3) if n else None
    out["excluded_links_per_question"] = round(sum(r["excluded_links"] for r in rows) / n, 3) if n else None
    return out


def run_set(items: Sequence[ExclusionItem], answer_fn: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """Answer and score every question; summaries overall, per language and per number of exclusions."""
    rows = [score_item(item, answer_fn(item.question)) for item in items]
    groups: dict[str, dict[str, Any]] = {"all": summarise(rows)}
    for lang in sorted({r["language"] for r in rows}):
        groups[lang] = summarise([r for r in rows if r["language"] == lang])
    for n in sorted({r["n_exclusions"] for r in rows}):
        groups[f"{n} exclusion{'s' if n > 1 else ''}"] = summarise([r for r in rows if r["n_exclusions"] == n])
    return {"summary": groups, "rows": rows}


def metrics(result: dict[str, Any]) -> dict[str, float | None]:
    """The overall shares; the primary metric is the share whose first link is a good card."""
    return {k: v for k, v in result["summary"]["all"].items() if k != "questions"}


def render(result: dict[str, Any], name: str, command: str) -> Report:
    """The report: one table of the groups, then one line per question (ids only, no question text)."""
    head = ["group", "questions", *MEASURES, "excluded links / q"]
    groups = result["summary"]
    body = [
        f"Set: `{result['data']}`; settings: {result['settings']}; {result['seconds']} s.",
        "",
        *table(
            head,
            (
                [g, s["questions"], *(s[m] for m in MEASURES), s["excluded_links_per_question"]]
                for g, s in groups.items()
            ),
        ),
        "",
        "## Per question",
        "",
        *table(
            ["id", "route", "status", "links (documents)", "first good", "excluded links"],
            (
                [r["id"], r["pipeline"], r["status"], ", ".join(r["links"]), r["first_good"], r["excluded_links"]]
                for r in result["rows"]
            ),
        ),
    ]
    return Report(
        name=f"exclusions-cards-{name}",
        title="Exclusion questions over the bundled cards, on the patient's path (issue 19)",
        command=command,
        body=body,
        summary={k: v for k, v in result.items() if k != "rows"},
        rows=result["rows"],
        json_suffix=".json",
    )


def main(argv: list[str] | None = None) -> int:
    from chatbot.answer import answer
    from chatbot.settings import load_settings

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="exclusion set (JSONL)")
    parser.add_argument("--cards", type=Path, default=None, help="cards folder (default: the bundled cards)")
    parser.add_argument("--set", action="append", default=[], help="a setting override GROUP.FIELD=VALUE")
    add_output_args(parser, None)
    args = parser.parse_args(argv)
    try:
        items = load_exclusion_set(args.data)
        settings = apply_overrides(load_settings(), list(args.set))
        services = services_over_cards(settings, args.cards)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out_dir, name = output_target(args.out, args.name)

    def run() -> dict[str, Any]:
        start = time.perf_counter()
        answer(items[0].question, services)  # warm-up: models load once, not inside question one
        result = run_set(items, lambda q: answer(q, services))
        result["data"] = str(args.data)
        result["seconds"] = round(time.perf_counter() - start, 1)
        result["settings"] = {"pipeline": settings.retrieval.pipeline, "overrides": list(args.set)}
        return result

    bench = Benchmark(
        f"exclusions-cards-{name}", "first_good", run, metrics, lambda r: render(r, name, command_line(PROG, argv))
    )
    bench.run_and_print(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
