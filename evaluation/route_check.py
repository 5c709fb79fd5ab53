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

from chatbot.resources import shared_data_dir
from chatbot.settings import Settings
from chatbot.stages.route import EXCLUSION_PIPELINE, route
from evaluation.harness import results_dir

DATA = shared_data_dir()
SETS = ("maternal", "mediqa", "mediqa-it", "medquad", "negconstraint")


def check(data: Path, sets: tuple[str, ...] = SETS) -> dict[str, dict[str, object]]:
    settings = Settings()
    out: dict[str, dict[str, object]] = {}
    for name in sets:
        path = data / name / "queries.jsonl"
        if not path.exists():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        routed = [r["_id"] for r in rows if route(r["text"], None, settings).pipeline == EXCLUSION_PIPELINE]
        out[name] = {"questions": len(rows), "rerouted": len(routed), "rerouted_ids": routed[:50]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=results_dir())
    args = parser.parse_args(argv)
    result = check(args.data)
    if not result:
        print(f"error: no query files under {args.data}", file=sys.stderr)
        return 2
    command = "python -m evaluation.route_check " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# Router check: which questions go to the logical decomposition (issue 19)",
        "",
        f"Command: `{command.strip()}` (default settings: retrieval.route_exclusions=true)",
        "",
        "| set | questions | routed to logical | share |",
        "|---|---|---|---|",
        *(
            f"| {name} | {r['questions']} | {r['rerouted']} | {r['rerouted'] / max(r['questions'], 1):.3f} |"
            for name, r in result.items()
        ),
        "",
        "Ids of the routed questions (at most 50 per set) are in `route-check.json`.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "route-check.md").write_text("\n".join(lines), encoding="utf-8")
    (args.out / "route-check.json").write_text(json.dumps({"command": command, **result}, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
