"""Score the rule-based readers of a question on a labelled set: the language detector
(``chatbot.language.detect_language``) and the personal dose/diagnosis request detector
(``chatbot.stages.diagnosis_request.personal_request``: the rules of ``chatbot.stages.safety``, then the learned
diagnosis fallback).

    python -m evaluation.input_rules_eval --language FILE --personal FILE --out DIR --name NAME [--diagnosis-model]

``--language``: JSONL rows ``{"id", "text", "language"}``; ``--personal``: rows ``{"id", "text", "kind"}`` with kind
``dosage``, ``diagnosis`` or ``none``. Writes ``NAME.json`` (summary) and ``NAME.per_query.jsonl`` (one row per
text: the label and the verdict); prints the summary. To score another revision, put its checkout first on
``PYTHONPATH``: the ``chatbot`` package is imported, not copied.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from chatbot.language import detect_language

try:  # the rules, then (--diagnosis-model) the learned diagnosis fallback, as the answer path reads them
    from chatbot.stages.diagnosis_request import personal_request
except ImportError:  # a revision before the fallback existed: the rules alone

    def personal_request(text: str, use_model: bool = False) -> str | None:
        from chatbot.stages.safety import detect_personal_request

        return detect_personal_request(text)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score_language(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Accuracy per labelled language; a served question read as 'unknown' counts as right (it is answered in
    the page's language), a foreign one read as 'unknown' as wrong (it is answered, not refused)."""
    per, out = Counter(), Counter()
    detail = []
    for row in rows:
        got = detect_language(row["text"]).language
        ok = got == row["language"] or (got == "unknown" and row["language"] in ("en", "it"))
        per[row["language"]] += 1
        out[row["language"]] += ok
        detail.append({"id": row["id"], "label": row["language"], "verdict": got, "ok": ok})
    by = {lang: {"n": per[lang], "accuracy": round(out[lang] / per[lang], 4)} for lang in sorted(per)}
    total = sum(per.values())
    return {"n": total, "accuracy": round(sum(out.values()) / total, 4), "by_language": by}, detail


def score_personal(rows: list[dict[str, Any]], use_model: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Confusion of the request reader (rules; with ``use_model`` the diagnosis fallback too): label → verdict
    counts, and accuracy."""
    confusion: Counter[tuple[str, str]] = Counter()
    detail = []
    for row in rows:
        got = personal_request(row["text"], use_model=use_model) or "none"
        confusion[(row["kind"], got)] += 1
        detail.append({"id": row["id"], "label": row["kind"], "verdict": got, "ok": got == row["kind"]})
    total = sum(confusion.values())
    right = sum(n for (label, got), n in confusion.items() if label == got)
    table = {f"{label}->{got}": n for (label, got), n in sorted(confusion.items())}
    wrongly_refused = sum(n for (label, got), n in confusion.items() if label == "none" and got != "none")
    missed = sum(n for (label, got), n in confusion.items() if label != "none" and got == "none")
    summary = {
        "n": total,
        "accuracy": round(right / total, 4),
        "general_questions_refused": wrongly_refused,
        "personal_requests_missed": missed,
        "confusion": table,
    }
    return summary, detail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--language", type=Path)
    ap.add_argument("--personal", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--diagnosis-model", action="store_true", help="as safety.diagnosis_model=true")
    args = ap.parse_args(argv)
    summary: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    if args.language is not None:
        summary["language"], detail = score_language(_rows(args.language))
        rows += [{"set": "language", **d} for d in detail]
    if args.personal is not None:
        summary["personal"], detail = score_personal(_rows(args.personal), args.diagnosis_model)
        rows += [{"set": "personal", **d} for d in detail]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (args.out / f"{args.name}.per_query.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
