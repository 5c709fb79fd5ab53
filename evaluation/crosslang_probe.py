"""Replay of the cross-language pick (chatbot.stages.cross_language_pick) over captured reply inputs.

    python -m evaluation.crosslang_probe --data SET.jsonl [--data ...] --capture DIR --causes BASE.json \
        [--margin 0.02] [--twin 0.82] [--json OUT.json]

For every Italian question with links (``evaluation.reply_misses --capture``; the gate held fixed), the English
pool (DenseRetriever.other_language, 5 documents not linked, no urgent card), the English links and the
Italian links are scored with the
multilingual USE encoder; where the pick names an English document, the reply is composed over that document
alone (it is linked first; the composer adds the note that the source is English) and scored as the patient
reads it; elsewhere the question keeps its base reply (``--causes``: evaluation.reply_causes --json, the same
captures). Prints per-language recall before and after, wins and losses with a two-sided sign test; with
``--loso`` the margin is chosen on the other sets for each set (the twin cut held).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Sequence
from math import comb
from pathlib import Path
from typing import Any

from evaluation.bench_replies import load_reply_set, phrases_found
from evaluation.reply_causes import read_reply
from evaluation.reply_misses import replay

MARGINS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1)


def sign_p(wins: int, losses: int) -> float:
    """Two-sided sign test."""
    n, k = wins + losses, min(wins, losses)
    return 1.0 if n == 0 else min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def probe_rows(sets: Sequence[tuple[str, Any]], capture: Path, base: dict[str, float], twin: float) -> list[dict]:
    """One row per Italian question with links: base recall, the pick's trace, recall when the English document
    is linked first and answers."""
    from chatbot.embedders import USEEmbedder
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages.answer_first import answer_model_for
    from chatbot.stages.cross_language_pick import documents_for, other_language_pick
    from chatbot.stages.redflags import urgent_card_ids

    settings = load_settings()
    services = Services(settings)
    use = USEEmbedder(threads=settings.embedding.threads)
    urgent = urgent_card_ids(settings.safety.urgent_cards)
    model = answer_model_for(services, "cues", "it") if settings.compose.trained_types else None
    cache: dict = {}
    rows = []
    for name, items in sets:
        caps = pickle.loads((capture / f"{name}.pkl").read_bytes())
        for item in items:
            cap = caps[item.id]
            if item.language != "it" or not cap.get("hits"):
                continue
            hits = cap["hits"]
            linked = list(dict.fromkeys(h.segment.doc_id for h in hits))
            found = services.dense.other_language(cap["question"], "it", 40)
            pool_hits: dict[str, Any] = {}
            for h in found:
                d = h.segment.doc_id
                if d not in linked and d not in urgent and d not in pool_hits and len(pool_hits) < 5:
                    pool_hits[d] = h
            segments_of = services.index.document_segments
            links = documents_for(linked, segments_of, use.embed_passages, cache)
            pool = documents_for(list(pool_hits), segments_of, use.embed_passages, cache)
            q = use.embed_queries([cap["question"]])[0]
            row = {"set": name, "id": item.id, "card": item.card_id, "base": base[f"{name}/{item.id}"]}
            _, trace = other_language_pick(cap["question"], "it", q, links, pool, margin=-1.0, twin=twin)
            row.update(trace)
            if trace and trace["twin"] < twin and trace["named"] == "no" and len(hits) <= 3:
                doc = str(trace["doc_id"])
                docs = {**cap["documents"], doc: segments_of(doc)}
                hit = pool_hits.get(doc) or next(h for h in hits if h.segment.doc_id == doc)
                text, _ = replay({**cap, "hits": [hit], "documents": docs}, settings, model)
                reply = read_reply(cap, text)
                got = phrases_found(reply, item.key_phrases) if reply else [False] * len(item.key_phrases)
                row["picked_recall"] = sum(got) / len(got)
            rows.append(row)
    return rows


def outcome(rows: Sequence[dict], margin: float) -> tuple[int, int, float]:
    """(wins, losses, recall change summed) when the pick fires at ``margin``."""
    wins = losses = 0
    delta = 0.0
    for r in rows:
        if "picked_recall" in r and r["margin"] >= margin:
            d = r["picked_recall"] - r["base"]
            wins, losses, delta = wins + (d > 0), losses + (d < 0), delta + d
    return wins, losses, delta


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True)
    p.add_argument("--capture", type=Path, required=True)
    p.add_argument("--causes", type=Path, required=True, help="evaluation.reply_causes --json of the same captures")
    p.add_argument("--margin", type=float, default=0.02)
    p.add_argument("--twin", type=float, default=0.82)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    sets = [(path.stem, load_reply_set(path)) for path in args.data]
    causes = json.loads(args.causes.read_text(encoding="utf-8"))
    base = {f"{r['set']}/{r['id']}": r["recall"] for r in causes}
    rows = probe_rows(sets, args.capture, base, args.twin)
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    n_it = sum(r["language"] == "it" for r in causes)
    base_it = sum(r["recall"] for r in causes if r["language"] == "it")
    for m in MARGINS:
        w, lo, d = outcome(rows, m)
        after = (base_it + d) / n_it
        print(f"margin {m:.2f}: +{w}/-{lo} sign p={sign_p(w, lo):.4f}  it recall {base_it / n_it:.3f} -> {after:.3f}")
    wins = losses = 0
    delta = 0.0
    names = [n for n, _ in sets]
    for held in names:
        train = [r for r in rows if r["set"] != held]
        chosen = max(MARGINS, key=lambda m: (outcome(train, m)[0] - outcome(train, m)[1], -outcome(train, m)[1], m))
        w, lo, d = outcome([r for r in rows if r["set"] == held], chosen)
        wins, losses, delta = wins + w, losses + lo, delta + d
        print(f"leave-one-set-out {held}: margin {chosen:.2f} +{w}/-{lo}")
    print(
        f"leave-one-set-out: +{wins}/-{losses} sign p={sign_p(wins, losses):.4f}  it recall "
        f"{base_it / n_it:.3f} -> {(base_it + delta) / n_it:.3f} (en unchanged: Italian questions only)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
