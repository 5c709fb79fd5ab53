"""Rows of one answer-path configuration for the gate's leave-one-set-out fit, from rows collected under two.

    python -m evaluation.redteam.gate_rows_mix --base /tmp/gate11/final-rows.jsonl \
        --lang it=/tmp/gate13/on-it-a.jsonl,/tmp/gate13/on-it-b.jsonl --out /tmp/gate13/mix-it.jsonl \
        --out-base /tmp/gate13/base.jsonl

``--base``: rows collected with the encoder off (every language); ``--lang L=FILES``: rows of language L collected
with the tuned query encoder on (``gate_collect`` under ``CHATBOT_EMBEDDING__QUERY_ENCODER=shipped``). A question
is embedded on its own, so an encoder used for Italian questions only gives exactly the base's English rows and
the encoder rows' Italian ones. Only questions present in both configurations are written, to both outputs, so the
two are fitted and scored on the same questions. Each row's reference decision (``probability``,
``shipped_relevant``) is recomputed with ``--key``'s gate from ``--gate`` (default: the shipped e5-onnx gate), the
gate the product runs today whatever the encoder setting.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PROG = "python -m evaluation.redteam.gate_rows_mix"


def read_rows(paths: list[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    """(source, id) -> row, the first occurrence kept across ``paths``."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                out.setdefault((r["source"], r["id"]), r)
    return out


def rescore(row: dict[str, Any], model: Any) -> dict[str, Any]:
    """``row`` with the reference gate's P and decision on its own features (unchanged when it has none)."""
    if row.get("skipped") or row.get("features") is None:
        return row
    p = model.probability(row["features"])
    return {**row, "probability": round(p, 4), "shipped_relevant": p >= model.threshold_for(row["features"])}


def mix(
    base: dict[tuple[str, str], dict[str, Any]], swapped: dict[str, dict[tuple[str, str], dict[str, Any]]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(base rows, mixed rows) over the questions both configurations have, in the base's order: a question of a
    swapped language takes its row from ``swapped[language]``; the others keep the base's."""
    kept_base, mixed = [], []
    for key, row in base.items():
        lang = row.get("language")
        if lang in swapped:
            other = swapped[lang].get(key)
            if other is None:
                continue
            mixed.append(other)
        else:
            mixed.append(row)
        kept_base.append(row)
    return kept_base, mixed


def main(argv: list[str] | None = None) -> int:
    from chatbot.stages.relevance_gate import load_gate

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="rows collected with the encoder off")
    parser.add_argument("--lang", action="append", default=[], help="L=FILE[,FILE]: language L's encoder rows")
    parser.add_argument("--out", type=Path, required=True, help="the mixed rows")
    parser.add_argument("--out-base", type=Path, required=True, help="the base rows of the same questions")
    parser.add_argument("--gate", type=Path, default=Path("models/relevance_gate/gate.json"))
    parser.add_argument("--key", default="e5-onnx", help="the reference gate's entry")
    args = parser.parse_args(argv)
    swapped = {}
    for spec in args.lang:
        lang, _, files = spec.partition("=")
        if not files:
            parser.error(f"--lang {spec!r}: expected L=FILE[,FILE]")
        swapped[lang] = read_rows([Path(f) for f in files.split(",")])
    model = load_gate(str(args.gate.resolve()), args.key)
    kept_base, mixed = mix(read_rows([args.base]), swapped)
    for path, rows in ((args.out_base, kept_base), (args.out, mixed)):
        path.write_text("".join(json.dumps(rescore(r, model), ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{len(kept_base)} questions in both configurations; written {args.out_base} and {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
