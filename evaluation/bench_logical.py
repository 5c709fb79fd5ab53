"""Benchmarks of the ``logical`` pipeline (issue 6). One command per benchmark:

    python -m evaluation.bench_logical select                         # default knobs chosen on the train split
    python -m evaluation.bench_logical negconstraint --split test     # (a) NegConstraint, variants, Success@1
    python -m evaluation.bench_logical synthetic [--per-template 20]  # (b) ITLR Table 1 on MedQuAD segments
    python -m evaluation.bench_logical routing                        # (c) questions without negation
    python -m evaluation.bench_logical orlog [--limit 12]             # OrLog LLM plausibility: cost and gain

Reports go to evaluation/results/logical-*.md (with the exact command). (a) uses the harness
(evaluation.harness.evaluate) and adds Success@1 (a relevant document ranked first) from its per-query
rows; the NegConstraint records carry no link, so the index is built here with a placeholder URL
(``https://benchmark.invalid/negconstraint/<id>``) under the harness's own collection name, after which
``chatbot eval retrieval --data ../shared/data/negconstraint`` reuses it.

The benchmarks live in ``evaluation/logical_bench/`` (one module each); this module is their command line.
Each subcommand is an evaluator (``evaluation/evaluator.py``) and writes through the shared report writer.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluation.evaluator import Benchmark
from evaluation.logical_bench.common import PLACEHOLDER_URL, PROG, SHARED, eval_services, prepare_index, success_at_1
from evaluation.logical_bench.negconstraint import NEGCONSTRAINT_VARIANTS, NS_IR, run_negconstraint, variant_settings
from evaluation.logical_bench.orlog import ORLOG_PAPER, ORLOG_PIPELINES, run_orlog
from evaluation.logical_bench.routing import run_routing
from evaluation.logical_bench.select import SELECT_GRID, _MemoEmbedder, run_select, selection_note
from evaluation.logical_bench.synthetic import (
    ITLR_TABLE1,
    ITLR_TABLE2,
    build_synthetic,
    medquad_topics,
    ndcg_single,
    run_synthetic,
    segments_of,
    templates,
    verbalise,
)
from evaluation.report import Report, add_output_args, command_line, output_target

__all__ = [
    "ITLR_TABLE1",
    "ITLR_TABLE2",
    "NEGCONSTRAINT_VARIANTS",
    "NS_IR",
    "ORLOG_PAPER",
    "ORLOG_PIPELINES",
    "PLACEHOLDER_URL",
    "SELECT_GRID",
    "SHARED",
    "_MemoEmbedder",
    "build_synthetic",
    "eval_services",
    "main",
    "medquad_topics",
    "ndcg_single",
    "prepare_index",
    "segments_of",
    "selection_note",
    "success_at_1",
    "templates",
    "variant_settings",
    "verbalise",
]

Runner = Callable[[argparse.Namespace, str], tuple[dict[str, float], Report]]
#: subcommand -> (runner, primary metric)
RUNNERS: dict[str, tuple[Runner, str]] = {
    "negconstraint": (run_negconstraint, "Success@1"),
    "select": (run_select, "Success@1"),
    "synthetic": (run_synthetic, "nDCG@10"),
    "routing": (run_routing, "identical_top3_share"),
    "orlog": (run_orlog, "nDCG@10"),
}


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per benchmark, each with ``--name`` / ``--out``."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("negconstraint", help="(a) NegConstraint with Success@1 and variants")
    a.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    a.add_argument("--limit", type=int, default=None)
    a.add_argument("--variants", nargs="*", default=None, help=f"subset of {list(NEGCONSTRAINT_VARIANTS)}")
    a.add_argument("--split", choices=["train", "test", "all"], default="test", help="report this split only")
    add_output_args(a, "logical-negconstraint")
    sel = sub.add_parser("select", help="choose the default knobs on the train split (grid search)")
    sel.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    sel.add_argument("--split", choices=["train", "test"], default="train")
    add_output_args(sel, "logical-negconstraint-selection")
    b = sub.add_parser("synthetic", help="(b) ITLR three-term synthetic benchmark on MedQuAD segments")
    b.add_argument("--data", type=Path, default=SHARED / "medquad")
    b.add_argument("--per-template", type=int, default=20)
    b.add_argument("--seed", type=int, default=0)
    add_output_args(b, "logical-synthetic")
    c = sub.add_parser("routing", help="(c) questions without negation: routing and identical results")
    c.add_argument("--sets", nargs="*", default=["mediqa", "mediqa-it", "medquad", "maternal", "negconstraint"])
    c.add_argument("--eval-set", default="maternal")
    add_output_args(c, "logical-routing")
    o = sub.add_parser("orlog", help="OrLog LLM plausibility vs embedding term scores on a small fixed subset")
    o.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    o.add_argument("--limit", type=int, default=12)
    o.add_argument("--split", choices=["train", "test", "all"], default="test")
    o.add_argument("--pipelines", nargs="+", default=list(ORLOG_PIPELINES))
    add_output_args(o, "logical-orlog")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    out_dir, args.name = output_target(args.out, args.name)
    runner, primary = RUNNERS[args.cmd]
    command = command_line(PROG, argv)
    bench: Benchmark[Any] = Benchmark(args.name, primary, lambda: runner(args, command), lambda r: r[0], lambda r: r[1])
    bench.run_and_print(out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
