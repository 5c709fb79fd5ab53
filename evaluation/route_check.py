"""How many questions of each shared set the patient's-path router sends to the logical decomposition.

    python -m evaluation.route_check [--data ../shared/data] [--out evaluation/results]

Questions without an exclusion must keep the configured pipeline (expected: ~0 rerouted on maternal, MEDIQA,
MEDIQA-it, MedQuAD), and NegConstraint's exclusion questions must all be routed. Writes
``route-check.md`` / ``.json``: counts and the ids of rerouted questions, never their text.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chatbot.resources import shared_data_dir
from chatbot.settings import Settings
from chatbot.stages.route import EXCLUSION_PIPELINE, route
from evaluation.evaluator import Benchmark
from evaluation.report import Report, add_output_args, command_line, output_target, table

DATA = shared_data_dir()
PROG = "python -m evaluation.route_check"
SETS = ("maternal", "mediqa", "mediqa-it", "medquad", "negconstraint")


def check(data: Path, sets: tuple[str, ...] = SETS) -> dict[str, dict[str, Any]]:
    """Per set found under ``data``: questions, how many the router reroutes, their ids (at most 50)."""
    settings = Settings()
    out: dict[str, dict[str, Any]] = {}
    for name in sets:
        path = data / name / "queries.jsonl"
        if not path.exists():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        routed = [r["_id"] for r in rows if route(r["text"], None, settings).pipeline == EXCLUSION_PIPELINE]
        out[name] = {"questions": len(rows), "rerouted": len(routed), "rerouted_ids": routed[:50]}
    return out


def metrics(result: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Routed share per set, and the primary metric: questions routed to the logical decomposition in the
    sets that hold no exclusion question (everything but NegConstraint; expected ~0)."""
    out: dict[str, float] = {
        "false_routes": sum(int(r["rerouted"]) for name, r in result.items() if name != "negconstraint")
    }
    out.update({f"{name}/routed_share": int(r["rerouted"]) / max(int(r["questions"]), 1) for name, r in result.items()})
    return out


def render(result: dict[str, dict[str, Any]], command: str, name: str = "route-check") -> Report:
    """The report: routed counts per set; the ids of routed questions in the JSON only."""
    body = [
        *table(
            ["set", "questions", "routed to logical", "share"],
            (
                [s, r["questions"], r["rerouted"], f"{int(r['rerouted']) / max(int(r['questions']), 1):.3f}"]
                for s, r in result.items()
            ),
        ),
        "",
        f"Ids of the routed questions (at most 50 per set) are in `{name}.json`.",
    ]
    return Report(
        name=name,
        title="Router check: which questions go to the logical decomposition (issue 19)",
        command=command,
        command_note=" (default settings: retrieval.route_exclusions=true)",
        body=body,
        summary={"command": command, **result},
        json_suffix=".json",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    add_output_args(parser, "route-check")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)

    def run() -> dict[str, dict[str, Any]]:
        result = check(args.data)
        if not result:
            raise FileNotFoundError(f"no query files under {args.data}")
        return result

    bench = Benchmark(name, "false_routes", run, metrics, lambda r: render(r, command_line(PROG, argv), name))
    try:
        bench.run_and_print(out_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
