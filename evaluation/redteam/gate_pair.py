"""Two configurations' gate decisions on the same questions, paired per language (exact McNemar).

    python -m evaluation.redteam.gate_pair --rows /tmp/gate13/base.jsonl \
        --a /tmp/gate13/loso-base.json:"LR 15 features, per-language (0.90)" \
        --b /tmp/gate13/loso-mix-it.json:"LR 15 features, per-language (0.90)"

``--a``/``--b``: a ``gate_loso --json`` file and the name of one of its decision lists (``reference``: its
reference gate with the second look); ``--rows``: the rows giving each question's class, language and set.
Refusal precision / recall / in-scope answered per language, on the gate sets and on every set, and the questions
only A / only B decides right.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam.cross_language_gate_fit import mcnemar
from evaluation.redteam.gate_fit import pr_cell, refusal_pr
from evaluation.redteam.gate_loso import GATE_SETS, load

PROG = "python -m evaluation.redteam.gate_pair"


def decisions(spec: str) -> dict[str, bool]:
    path, _, name = spec.partition(":")
    return json.loads(Path(path).read_text(encoding="utf-8"))["decisions"][name or "reference"]


def pair(rows: list[dict[str, Any]], a: dict[str, bool], b: dict[str, bool]) -> list[str]:
    """Markdown rows: language, sets, A's cell, B's cell, only A right vs only B right (p)."""
    keys = [f"{r['source']}|{r['id']}" for r in rows]
    y = np.array([bool(r["in_scope"]) for r in rows])
    it = np.array([r["gate_language"] == "it" for r in rows])
    gate_sets = np.array([r["group"] in GATE_SETS for r in rows])
    da, db = np.array([a[k] for k in keys]), np.array([b[k] for k in keys])
    out = []
    for lang, k in (("en", False), ("it", True)):
        for label, m in (("gate sets", (it == k) & gate_sets), ("all sets", it == k)):
            ok_a, ok_b = (da == y)[m], (db == y)[m]
            only_a, only_b = int((ok_a & ~ok_b).sum()), int((~ok_a & ok_b).sum())
            out.append(
                f"| {lang} | {label} | {pr_cell(refusal_pr(y[m], da[m]))} | {pr_cell(refusal_pr(y[m], db[m]))} "
                f"| {only_a} vs {only_b} (p {round(mcnemar(only_a, only_b), 4)}) |"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, required=True)
    parser.add_argument("--a", required=True, help="FILE.json:NAME")
    parser.add_argument("--b", required=True, help="FILE.json:NAME")
    args = parser.parse_args(argv)
    rows = load(args.rows)
    lines = ["| language | sets | A | B | only A right vs only B right |", "|---|---|---|---|---|"]
    print("\n".join(lines + pair(rows, decisions(args.a), decisions(args.b))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
