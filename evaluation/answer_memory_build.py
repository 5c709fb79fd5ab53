"""The answer memory's key phrases (compose.answer_memory): answers.json beside the relevance gate's memory.

    python -m evaluation.answer_memory_build --memory models/relevance_gate/memory            # writes answers.json
    python -m evaluation.answer_memory_build --memory models/relevance_gate/memory --table OUT.md  # dev table only

For every labelled question of the memory that comes from a reply set (``replies/<file>:<id>``), the set's key
phrases (team-written, verbatim spans of the demo card that answers) are kept when the card is one the memory names
for it and the phrase is found verbatim in that card. ``--table``: leave one set out over the reply sets, per
language and cosine band to the nearest labelled reply question of another set, how often that question's card is
the answering one and how often the unit holding its key phrase holds this question's key phrase.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

PROG = "python -m evaluation.answer_memory_build"
REPLIES = Path(__file__).resolve().parent / "replies"
BANDS = (0.97, 0.95, 0.93)


def reply_rows(folder: Path = REPLIES, skip: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """{"replies/<file>:<id>": row} over every reply set in ``folder`` but the file names in ``skip``."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in folder.glob("*.jsonl") if p.name not in skip):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[f"replies/{path.name}:{row['id']}"] = row
    return out


@cache
def card_units(card_id: str) -> tuple[str, ...]:
    """The demo card's body as the composer's sentences (front matter left out), read once per card."""
    from chatbot.resources import demo_cards
    from chatbot.sentences import split_sentences

    text = (Path(demo_cards()) / f"{card_id}.md").read_text(encoding="utf-8")
    if text.startswith("---"):
        text = text.split("---", 2)[2]
    return tuple(s for line in text.split("\n") for s in split_sentences(line))


def answers(memory: Any, rows: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """{memory id: key phrases} for the memory's reply-set questions (phrases found verbatim in a named card)."""
    out: dict[str, list[str]] = {}
    for qid, cards, named in zip(memory.ids, memory.cards, memory.named, strict=True):
        row = rows.get(qid)
        if row is None or not named or row.get("card_id") not in cards:
            continue
        body = " ".join(card_units(row["card_id"]))
        kept = [p for p in row.get("key_phrases") or [] if isinstance(p, str) and p.strip() and p in body]
        if kept:
            out[qid] = kept
    return out


def band(cosine: float) -> str:
    return next((f">= {b:.2f}" for b in BANDS if cosine >= b), f"< {BANDS[-1]:.2f}")


def table(rows: list[dict[str, Any]], vectors: np.ndarray) -> dict[tuple[str, str], list[int]]:
    """{(language, band): [questions, same card, its key-phrase unit holds this question's key phrase]}."""
    sets = np.array([r["set"] for r in rows])
    stats: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for i, r in enumerate(rows):
        sims = np.where(sets != sets[i], vectors @ vectors[i], -2.0)
        j = int(np.argmax(sims))
        s = stats[(r["language"], band(float(sims[j])))]
        s[0] += 1
        near = rows[j]
        if near["card_id"] != r["card_id"]:
            continue
        s[1] += 1
        lead = " ".join(u for u in card_units(near["card_id"]) if any(p in u for p in near["key_phrases"]))
        s[2] += bool(lead) and any(p in lead for p in r["key_phrases"])
    return dict(stats)


def main(argv: list[str] | None = None) -> int:
    from chatbot.stages.answer_memory import ANSWERS
    from chatbot.stages.gate_memory import load_memory

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, required=True, help="the relevance gate memory's folder")
    parser.add_argument("--table", type=Path, default=None, help="write the leave-one-set-out table here instead")
    parser.add_argument("--skip", nargs="*", default=[], help="reply set file names left out (sets not spent yet)")
    args = parser.parse_args(argv)
    rows = reply_rows(skip=tuple(args.skip))
    if args.table is not None:
        from chatbot.embedders import load_embedder

        listed = [{**r, "set": qid.split(":")[0]} for qid, r in rows.items() if r.get("key_phrases")]
        v = np.asarray(load_embedder("e5-onnx", threads=2).embed_queries([r["question"] for r in listed]))
        v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
        lines = [
            "| language | nearest other-set reply question's cosine | questions | same card | its key-phrase unit "
            "holds this question's key phrase |",
            "|---|---|---|---|---|",
        ]
        for (lang, b), (n, same, held) in sorted(table(listed, v).items()):
            lines.append(f"| {lang} | {b} | {n} | {same / n:.3f} | {held / n:.3f} |")
        text = "\n".join(lines) + "\n"
        print(text)
        args.table.write_text(text, encoding="utf-8")
        return 0
    memory = load_memory(str(args.memory))
    found = answers(memory, rows)
    record = {
        "kind": "answer memory key phrases (chatbot.stages.answer_memory)",
        "command": " ".join([PROG, *(argv if argv is not None else sys.argv[1:])]),
        "questions": len(found),
        "answers": found,
    }
    (args.memory / ANSWERS).write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{args.memory / ANSWERS}: key phrases of {len(found)} labelled questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
