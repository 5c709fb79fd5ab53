"""Build and ship the relevance gate's memory of labelled questions (chatbot.stages.gate_memory), session 28.

    python -m evaluation.redteam.gate_collect --later-sets --out ROWS.jsonl
    python -m evaluation.redteam.gate_memory_fit --rows ROWS.jsonl --ship models/relevance_gate/memory \
        --markdown evaluation/results/relevance-gate-s28-loso.md

``ROWS``: every spent dev question on the answer path up to the gate (``gate_collect``: the gate sets, the reply and
exclusion sets' questions in scope, MEDIQA(-it) train non-maternal questions out of scope; MEDIQA's text is read from
``../shared`` again, never written). Leave-one-set-out: each set's questions are judged by the labels of the OTHER
sets (written by other people at other times: a fresh writer's questions have no copy in the memory) with the
collected gate + second look deciding where the memory abstains; ``tau`` is the cosine of the grid with the fewest
wrong decisions over all sets (a tie: the larger, fewer overrides). The shipped memory holds every row.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.stages.gate_memory import nearest_by_label
from evaluation.redteam import gate_loso as gl
from evaluation.redteam.gate_fit import dev_rows, pr_cell, refusal_pr

PROG = "python -m evaluation.redteam.gate_memory_fit"
TAUS = (0.86, 0.88, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99)


def with_texts(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their question text (gate_collect writes MEDIQA's id in its place); rows whose text cannot be
    found (``../shared`` absent) are left out, said on stderr."""
    dev = {(r["source"], r["id"]): r for r in dev_rows(later=True)}
    out = [
        {**r, "text": dev[key]["text"], "card_ids": card_ids(dev[key])}
        for r in rows
        if (key := (r["source"], r["id"])) in dev
    ]
    if len(out) < len(rows):
        print(f"{len(rows) - len(out)} rows without their text left out", file=sys.stderr)
    return out


def card_ids(row: dict[str, Any]) -> list[str]:
    """The cards that answer an in-scope dev question, as its set names them ([]: not named, or out of scope)."""
    if not row.get("in_scope"):
        return []
    return list(row.get("card_ids") or ([row["card_id"]] if row.get("card_id") else []))


def embedder_name(embedder: str) -> str:
    """The build name (Embedder.name) of ``embedder``: the memory is used only with questions embedded by it."""
    from chatbot.embedders import load_embedder

    return str(load_embedder(embedder, threads=1).name)


def embed(rows: Sequence[dict[str, Any]], embedder: str, cache: Path | None) -> np.ndarray:
    """Unit raw e5 query vectors of the rows' questions (as the product embeds them), cached in ``cache``."""
    if cache is not None and cache.is_file():
        v = np.load(cache)
        if v.shape[0] == len(rows):
            return v / np.linalg.norm(v, axis=1, keepdims=True)
    from chatbot.embedders import load_embedder

    v = np.asarray(load_embedder(embedder, threads=2).embed_queries([r["text"] for r in rows]), dtype=np.float32)
    if cache is not None:
        np.save(cache, v)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def out_of_set_nearest(rows: Sequence[dict[str, Any]], vectors: np.ndarray) -> np.ndarray:
    """(n, 2): each question's nearest in-scope and out-of-scope cosine among the other sets' questions."""
    groups = np.array([r["group"] for r in rows])
    y = gl._y(rows)
    out = np.zeros((len(rows), 2))
    for g in sorted(set(groups)):
        held = groups == g
        sims = vectors[held] @ vectors[~held].T
        out[held] = [nearest_by_label(s, y[~held]) for s in sims]
    return out


def decide(base: np.ndarray, nearest: np.ndarray, tau: float) -> np.ndarray:
    """The memory's verdicts over the gate's decisions (chatbot.stages.gate_memory.GateMemory.verdict)."""
    ans = base.copy()
    near_in, near_out = nearest[:, 0], nearest[:, 1]
    ans[(near_in >= tau) & (near_in >= near_out)] = True
    ans[(near_out >= tau) & (near_out > near_in)] = False
    return ans


def table(rows: Sequence[dict[str, Any]], base: np.ndarray, nearest: np.ndarray) -> list[dict[str, Any]]:
    """One entry per tau (and the gate alone): wrong decisions and refusal P / R / in-scope answered per language,
    over all sets and over the gate sets (both classes written for the gate)."""
    y, it = gl._y(rows), gl._it(rows)
    groups = np.array([r["group"] for r in rows])
    gate_sets = np.array([g.startswith(("gate_", "relevance_")) for g in groups])
    out = []
    for tau in (None, *TAUS):
        ans = base if tau is None else decide(base, nearest, tau)
        entry: dict[str, Any] = {"tau": tau, "wrong": int((ans != y).sum()), "changed": int((ans != base).sum())}
        for scope, m in (("all", np.ones(len(rows), bool)), ("gate_sets", gate_sets)):
            for lang, k in (("en", False), ("it", True)):
                mm = m & (it == k)
                entry[f"{scope}_{lang}"] = refusal_pr(y[mm], ans[mm])
            entry[f"{scope}_wrong"] = int(((ans != y) & m).sum())
        out.append(entry)
    return out


def choose(entries: Sequence[dict[str, Any]]) -> float:
    """The tau with the fewest wrong decisions over all sets; a tie goes to the larger tau."""
    best = min((e for e in entries if e["tau"] is not None), key=lambda e: (e["wrong"], -e["tau"]))
    return float(best["tau"])


def markdown(entries: Sequence[dict[str, Any]], chosen: float, n: int, command: str) -> str:
    lines = [
        "# Relevance gate memory: leave-one-set-out choice of tau (session 28)",
        "",
        f"Command: `{command}`",
        "",
        f"{n} dev questions; each set judged by the other sets' labels, the collected gate + second look deciding "
        f"where the memory abstains. Cells: refusal precision / refusal recall / in-scope answered. Chosen: tau "
        f"{chosen} (fewest wrong over all sets).",
        "",
        "| tau | wrong (all) | changed | en, all | it, all | wrong (gate sets) | en, gate sets | it, gate sets |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        name = "gate alone" if e["tau"] is None else f"{e['tau']:.2f}"
        lines.append(
            f"| {name} | {e['wrong']} | {e['changed']} | {pr_cell(e['all_en'])} | {pr_cell(e['all_it'])} | "
            f"{e['gate_sets_wrong']} | {pr_cell(e['gate_sets_en'])} | {pr_cell(e['gate_sets_it'])} |"
        )
    return "\n".join(lines) + "\n"


def int8_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to +-127 and rounded (the loader normalises rows again: a cosine moves by < 1e-4; the wheel
    stays small)."""
    return np.round(vectors / np.abs(vectors).max(axis=1, keepdims=True) * 127).astype(np.int8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=Path, required=True, help="rows written by gate_collect --later-sets")
    parser.add_argument("--embedder", default="e5-onnx", help="embedding.model the product embeds questions with")
    parser.add_argument("--vectors", type=Path, default=None, help="cache of the rows' question vectors (.npy)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the leave-one-set-out table here")
    parser.add_argument("--ship", type=Path, default=None, help="write memory.json + memory.npz into this folder")
    parser.add_argument("--tau", type=float, default=None, help="keep this tau (default: the table's choice)")
    args = parser.parse_args(argv)
    command = " ".join([PROG, *(argv if argv is not None else sys.argv[1:])])
    rows = with_texts(gl.load(args.rows))
    vectors = embed(rows, args.embedder, args.vectors)
    entries = table(rows, gl.shipped(rows)["final"], out_of_set_nearest(rows, vectors))
    tau = choose(entries) if args.tau is None else args.tau
    for e in entries:
        print(f"tau {e['tau']}: wrong {e['wrong']} (gate sets {e['gate_sets_wrong']})", file=sys.stderr)
    if args.markdown is not None:
        args.markdown.write_text(markdown(entries, tau, len(rows), command), encoding="utf-8")
    if args.ship is not None:
        y = gl._y(rows)
        record = {
            "kind": "relevance gate memory (chatbot.stages.gate_memory)",
            "embedder": args.embedder,
            "embedder_name": embedder_name(args.embedder),
            "tau": tau,
            "questions": {"in_scope": int(y.sum()), "out_of_scope": int((~y).sum())},
            "sets": sorted({r["group"] for r in rows}),
            "leave_one_set_out": entries,
            "command": command,
        }
        args.ship.mkdir(parents=True, exist_ok=True)
        ids = np.array([f"{r['group']}:{r['id']}" for r in rows])
        cards = np.array(["|".join(r["card_ids"]) for r in rows])
        np.savez_compressed(args.ship / "memory.npz", vectors=int8_rows(vectors), in_scope=y, ids=ids, cards=cards)
        (args.ship / "memory.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.ship}: {len(rows)} questions, tau {tau}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
