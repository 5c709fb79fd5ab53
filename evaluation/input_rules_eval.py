"""Score the rule-based readers of a question on a labelled set: the language detector
(``chatbot.language.detect_language``) and the personal dose/diagnosis request detector
(``chatbot.stages.safety.detect_personal_request``).

    python -m evaluation.input_rules_eval --language FILE --personal FILE --out DIR --name NAME

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
from chatbot.stages.safety import detect_personal_request


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


def score_personal(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Confusion of the request detector: label → verdict counts, and accuracy."""
    confusion: Counter[tuple[str, str]] = Counter()
    detail = []
    for row in rows:
        got = detect_personal_request(row["text"]) or "none"
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
    args = ap.parse_args(argv)
    summary: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for key, path, scorer in (("language", args.language, score_language), ("personal", args.personal, score_personal)):
        if path is None:
            continue
        summary[key], detail = scorer(_rows(path))
        rows += [{"set": key, **d} for d in detail]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (args.out / f"{args.name}.per_query.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
