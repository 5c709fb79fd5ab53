"""Leave-one-set-out: is the card of the nearest labelled question the answering card? (retrieval.card_memory)

    python -m evaluation.reply_misses --data evaluation/replies/heldout-v2.jsonl ... --capture CAP   # first links
    python -m evaluation.card_memory_loso --capture CAP --out evaluation/results/card-memory-s28.md

For every spent reply-set question (each names its answering card), the nearest labelled in-scope question with named
cards among the OTHER sets (gate sets, reply sets, exclusion sets: ``gate_fit.dev_rows(later=True)``; raw e5 query
vectors) is found; its cards are compared with the answering card, and so is the first link the answer path gave the
question (the composer inputs ``reply_misses --capture`` saved), per language and cosine band.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

PROG = "python -m evaluation.card_memory_loso"
BANDS = (0.95, 0.93, 0.91, 0.89)


def band(cosine: float, bands: tuple[float, ...] = BANDS) -> str:
    return next((f">= {b:.2f}" for b in bands if cosine >= b), f"< {bands[-1]:.2f}")


def first_links(capture: Path) -> dict[tuple[str, str], str | None]:
    """(reply set source, question id) -> the first link's document in the captured composer inputs."""
    out: dict[tuple[str, str], str | None] = {}
    for path in sorted(capture.glob("*.pkl")):
        with path.open("rb") as fh:
            for qid, x in pickle.load(fh).items():
                hits = x.get("hits") or []
                out[(f"replies/{path.stem}.jsonl", qid)] = hits[0].segment.doc_id if hits else None
    return out


def table(
    rows: list[dict[str, Any]],
    vectors: np.ndarray,
    first: dict[tuple[str, str], str | None],
    bands: tuple[float, ...] = BANDS,
) -> dict:
    """{(language, band): [questions, nearest's card right, first link right]} over the reply-set questions."""
    groups = np.array([r["group"] for r in rows])
    stats: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for i, r in enumerate(rows):
        key = (r["source"], r["id"])
        if not r["source"].startswith("replies/") or key not in first:
            continue
        sims = np.where(groups != groups[i], vectors @ vectors[i], -2.0)
        j = int(np.argmax(sims))
        s = stats[(r["language"], band(float(sims[j]), bands))]
        s[0] += 1
        s[1] += bool(rows[j]["cards"] & r["cards"])
        s[2] += first[key] in r["cards"]
    return dict(stats)


def main(argv: list[str] | None = None) -> int:
    from chatbot.embedders import load_embedder
    from evaluation.redteam.gate_cv import group_of
    from evaluation.redteam.gate_fit import dev_rows

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--capture", type=Path, required=True, help="composer inputs saved by reply_misses")
    parser.add_argument("--out", type=Path, default=None, help="markdown table")
    parser.add_argument(
        "--bands", type=float, nargs="+", default=list(BANDS), help="lower edges of the cosine bands, highest first"
    )
    args = parser.parse_args(argv)
    rows = []
    for r in dev_rows(later=True):
        cards = set(r.get("card_ids") or ([r["card_id"]] if r.get("card_id") else []))
        if r.get("in_scope") and cards:
            rows.append({**r, "cards": cards, "group": group_of(r)})
    v = np.asarray(load_embedder("e5-onnx", threads=2).embed_queries([r["text"] for r in rows]), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    stats = table(rows, v, first_links(args.capture), tuple(sorted(args.bands, reverse=True)))
    lines = [
        "| language | nearest labelled question's cosine | questions | its card answers | first link answers |",
        "|---|---|---|---|---|",
    ]
    for (lang, b), (n, knn, cur) in sorted(stats.items()):
        lines.append(f"| {lang} | {b} | {n} | {knn / n:.3f} | {cur / n:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
