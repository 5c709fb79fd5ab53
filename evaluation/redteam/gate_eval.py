"""Refusal precision and recall of the relevance gate, per language, on question files the gate was not fitted on.

    python -m evaluation.redteam.gate_eval --data evaluation/redteam/relevance_test.jsonl

Reads JSONL in any of three shapes: a gate set ``{"id", "text", "language", "in_scope", "card_id"?}``; a
reply set (``evaluation/replies/*.jsonl``: ``question`` and ``card_id``, every question answerable); the
red-team set (``questions.jsonl``: ``expected_status`` "answered" counts as answerable, "no_certified_info" as
out of scope, other or alternative statuses are left out). ``--mediqa-test`` adds the MEDIQA / MEDIQA-it
consumer questions of the TEST split on non-maternal topics as out-of-scope questions (named by id only).

Every question goes through one ``chatbot ask --batch`` process (the product's path, default settings plus
``--gate``) over the demo cards. From each answer's trace both gates are read: the classifier's decision and
the threshold gate's (its best cosine against ``safety.min_relevance_*``), so one run gives before/after on the
same retrieval. A question is refused by a gate when that gate says "not relevant", or when the answer is "no
certified information" for another reason (nothing left to search, no sentence to compose). Refusal is the
positive class: precision = refused out-of-scope / refused, recall = refused out-of-scope / out-of-scope.
Questions that never reach the gate (invalid input, unsupported language) are counted apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.evaluator import Benchmark
from evaluation.redteam.batch import default_data_dir, ensure_demo_index, run_batch
from evaluation.redteam.relevance import MATERNAL_WORDS, SHARED, _queries
from evaluation.report import Report, command_line, output_target, table
from evaluation.splits import split_of

PROG = "python -m evaluation.redteam.gate_eval"
GATES = ("threshold", "classifier")


def load_items(path: Path) -> list[dict[str, Any]]:
    """{id, text, language, in_scope, card_id, source} from one file of any of the three shapes."""
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        if "in_scope" in r:
            in_scope = bool(r["in_scope"])
        elif "question" in r and "key_phrases" in r:
            in_scope = True
        elif "expected_status" in r:
            if r["expected_status"] not in ("answered", "no_certified_info") or r.get("language") not in ("en", "it"):
                continue  # alternatives, invalid input, safe replies, other languages: not the gate's question
            in_scope = r["expected_status"] == "answered"
        else:
            raise ValueError(f"{path}:{lineno}: neither in_scope, a reply-set row nor a red-team row")
        text = r.get("text", r.get("question"))
        if not isinstance(text, str) or r.get("language") not in ("en", "it"):
            raise ValueError(f"{path}:{lineno}: needs a text and a language en|it")
        items.append(
            {
                "id": f"{path.stem}:{r['id']}",
                "text": text,
                "language": r["language"],
                "in_scope": in_scope,
                "card_id": r.get("card_id"),
                "source": path.stem,
                "category": r.get("category"),
            }
        )
    return items


def mediqa_test_items() -> list[dict[str, Any]]:
    """MEDIQA(-it) TEST-split questions on non-maternal topics as out-of-scope questions."""
    items = []
    for lang, name in (("en", "mediqa"), ("it", "mediqa-it")):
        qfile = SHARED / name / "queries.jsonl"
        if not qfile.exists():
            continue
        for qid, text in _queries(qfile).items():
            if split_of(qid) == "test" and not MATERNAL_WORDS.search(text):
                items.append(
                    {
                        "id": f"{name}#{qid}",
                        "text": text,
                        "language": lang,
                        "in_scope": False,
                        "card_id": None,
                        "source": f"{name}-test",
                        "category": None,
                    }
                )
    return items


def decisions(ans: dict[str, Any]) -> dict[str, Any]:
    """Each gate's refusal for one answer, read from its trace; None when the question never reached a gate."""
    status = ans.get("status")
    rel = (ans.get("trace") or {}).get("safety", {}).get("relevance")
    links = [link.get("url", "") for link in ans.get("links") or []]
    if status == "invalid_input":
        return {"status": status, "reached": False}
    if not isinstance(rel, dict):  # nothing left to search after removing links/markup: refused by both
        return {"status": status, "reached": True, "threshold": True, "classifier": True, "links": links}
    other = status == "no_certified_info" and rel.get("relevant")  # relevant, yet nothing composed
    score, threshold = rel.get("score"), rel.get("threshold")
    by_threshold = score is None or threshold is None or score >= threshold
    return {
        "status": status,
        "reached": True,
        "threshold": bool(other or not by_threshold),
        "classifier": bool(other or not rel.get("relevant")) if rel.get("gate") == "classifier" else None,
        "probability": rel.get("probability"),
        "score": score,
        "links": links,
    }


def refusal_metrics(rows: Sequence[dict[str, Any]], gate: str) -> dict[str, Any]:
    """Refusal precision/recall and in-scope answered share of one gate over rows that reached it."""
    rows = [r for r in rows if r["reached"] and r.get(gate) is not None]
    refused = [r for r in rows if r[gate]]
    out_of_scope = [r for r in rows if not r["in_scope"]]
    in_scope = [r for r in rows if r["in_scope"]]
    tp = sum(not r["in_scope"] for r in refused)
    return {
        "n": len(rows),
        "out_of_scope": len(out_of_scope),
        "refused": len(refused),
        "refusal_precision": tp / len(refused) if refused else None,
        "refusal_recall": tp / len(out_of_scope) if out_of_scope else None,
        "in_scope_answered": sum(not r[gate] for r in in_scope) / len(in_scope) if in_scope else None,
        "in_scope_refused": sum(r[gate] for r in in_scope),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """{source or 'all': {language or 'all': {gate: metrics}}}."""
    out: dict[str, Any] = {}
    sources = sorted({r["source"] for r in rows})
    for source in [*sources, "all"] if len(sources) > 1 else sources:
        in_source = [r for r in rows if source in ("all", r["source"])]
        out[source] = {
            lang: {g: refusal_metrics([r for r in in_source if lang in ("all", r["language"])], g) for g in GATES}
            for lang in ("en", "it", "all")
        }
    return out


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def render(result: dict[str, Any], name: str, command: str) -> Report:
    summary, rows = result["summary"], result["rows"]
    body = [
        f"{len(rows)} questions ({result['skipped']} never reached the gate: invalid input or unsupported "
        f"language) through `chatbot ask --batch` over the demo cards; embedder {result['embedder']}; "
        f"wall time {result['seconds']:.0f} s. Refusal is the positive class. Both gates are read from the same "
        "answers (the threshold gate: the trace's best cosine against its threshold).",
        "",
    ]
    lines = []
    for source, by_lang in summary.items():
        for lang, by_gate in by_lang.items():
            for gate, m in by_gate.items():
                if m["n"]:
                    lines.append(
                        (
                            source,
                            lang,
                            gate,
                            m["n"],
                            m["out_of_scope"],
                            m["refused"],
                            _f(m["refusal_precision"]),
                            _f(m["refusal_recall"]),
                            _f(m["in_scope_answered"]),
                        )
                    )
    body += table(
        (
            "set",
            "language",
            "gate",
            "n",
            "out of scope",
            "refused",
            "refusal precision",
            "refusal recall",
            "in scope answered",
        ),
        lines,
    )
    wrong = [r for r in rows if r["reached"] and r.get("classifier") is not None and r["classifier"] == r["in_scope"]]
    body += ["", f"## Classifier mistakes ({len(wrong)})", ""]
    body += table(
        ("id", "language", "in scope", "question", "probability", "cosine", "threshold gate refused"),
        [
            (
                r["id"],
                r["language"],
                r["in_scope"],
                r["shown_text"],
                r.get("probability"),
                r.get("score"),
                r["threshold"],
            )
            for r in wrong
        ],
    )
    return Report(name, "Relevance gate: refusal precision and recall", command, body, summary=summary, rows=rows)


def metrics(result: dict[str, Any]) -> dict[str, float | None]:
    all_sources = result["summary"].get("all") or next(iter(result["summary"].values()))
    out: dict[str, float | None] = {}
    for lang in ("en", "it", "all"):
        for gate in GATES:
            m = all_sources[lang][gate]
            out[f"{lang}/{gate}/refusal_precision"] = m["refusal_precision"]
            out[f"{lang}/{gate}/refusal_recall"] = m["refusal_recall"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, action="append", default=[], help="question file (repeatable)")
    parser.add_argument("--mediqa-test", action="store_true", help="add MEDIQA(-it) test non-maternal questions")
    parser.add_argument("--data-dir", type=Path, default=None, help="index folder (default /tmp/redteam-EMBEDDER)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: evaluation/results)")
    parser.add_argument("--name", default="relevance-gate-eval", help="report name (without .md)")
    args = parser.parse_args(argv)
    items = [it for path in args.data for it in load_items(path)] + (mediqa_test_items() if args.mediqa_test else [])
    if not items:
        parser.error("no questions: pass --data FILE and/or --mediqa-test")
    data_dir = args.data_dir or default_data_dir()
    out_dir, name = output_target(args.out, args.name)
    command = command_line(PROG, argv)

    def run() -> dict[str, Any]:
        from chatbot.settings import load_settings

        log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
        ensure_demo_index(data_dir, log)
        answers, seconds = run_batch(items, data_dir, {"CHATBOT_SAFETY__RELEVANCE_GATE": "classifier"}, log=log)
        rows = []
        for it in items:
            shown = it["text"] if not it["source"].startswith("mediqa") else it["id"]  # shared text is not written
            rows.append(
                {**{k: v for k, v in it.items() if k != "text"}, "shown_text": shown, **decisions(answers[it["id"]])}
            )
        reached = [r for r in rows if r["reached"]]
        return {
            "rows": rows,
            "summary": summarise(reached),
            "skipped": len(rows) - len(reached),
            "seconds": seconds,
            "embedder": load_settings().embedding.model,
        }

    bench = Benchmark(name, "all/classifier/refusal_precision", run, metrics, lambda r: render(r, name, command))
    bench.run_and_print(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
