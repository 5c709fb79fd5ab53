"""Measure the two thresholds of the safety/compose stages on dev data; writes
``evaluation/results/redteam-thresholds.md`` (+ ``.json``).

1. Relevance (``safety.min_relevance_dense[_it]``): below it the bot says it has no certified information.
   Score = best bi-encoder cosine among the top-3 segments after reranking (and the cross-encoder score
   when a cross-encoder is available). Data:
   - ``relevance_dev.jsonl``: hand-written in-scope / out-of-scope questions (en, it) against the demo
     corpus (the served corpus), separate from the red-team set; plus MEDIQA (en) and MEDIQA-it (it) consumer
     questions on non-maternal topics as extra out-of-scope questions. The threshold per language maximises
     balanced accuracy on this dev set.
   - maternal leave-one-out (MedQuAD maternal topics, English, another corpus): each query once with its
     document in the index (answerable) and once with it removed (nothing relevant left): does the
     threshold transfer?
2. Support (``compose.support_threshold``): a generated sentence is kept if its best cosine against the
   linked segments' sentences reaches the threshold and its numbers occur in them. Pairs from the maternal
   corpus (documents of the dev split tune, the test split reports): supported claims are sentences of the
   evidence document lightly rewritten (a clause dropped, every third word dropped); unsupported claims are
   sentences of the most similar other document, of a random other document, and evidence sentences with a
   number changed. No LLM paraphrases: see the caveats in the report.

Modules: ``relevance`` (the relevance threshold and its transfer check), ``support`` (the support threshold),
``cross_encoder`` (both with the cross-encoder as the scorer), ``threshold_reports`` (the reports); this one
is the command line (an evaluator, ``evaluation/evaluator.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evaluation.evaluator import Benchmark
from evaluation.redteam import DEMO_CARDS, default_data_dir, ensure_demo_index
from evaluation.redteam.cross_encoder import CE_OVERRIDES, measure_cross_encoder
from evaluation.redteam.relevance import (
    DEV,
    MATERNAL_WORDS,
    SHARED,
    dev_questions,
    measure_maternal_loo,
    measure_relevance,
    relevance_scores,
)
from evaluation.redteam.support import measure_support, support_pairs
from evaluation.redteam.threshold_reports import (
    render,
    render_cross_encoder,
)
from evaluation.report import command_line, output_target

__all__ = [
    "CE_OVERRIDES",
    "DEV",
    "MATERNAL_WORDS",
    "SHARED",
    "dev_questions",
    "main",
    "measure_cross_encoder",
    "measure_maternal_loo",
    "measure_relevance",
    "measure_support",
    "metrics",
    "relevance_scores",
    "support_pairs",
]

PROG = "python -m evaluation.redteam.thresholds"


def metrics(res: dict[str, Any]) -> dict[str, float | None]:
    """Primary: the English relevance threshold's balanced accuracy on the dev questions (the cross-encoder
    run: its chosen threshold's); the thresholds themselves beside it."""
    rel = res["relevance"]
    key = "at_chosen" if "chosen_threshold" in rel else "best"  # the cross-encoder run: one joint threshold
    best = {lang: rel[lang][key] for lang in ("en", "it")}
    out: dict[str, float | None] = {
        "balanced_accuracy": best["en"]["balanced_accuracy"],
        **{f"{lang}/threshold": b["threshold"] for lang, b in best.items()},
    }
    support = res.get("support")
    if support:
        out["support/threshold"] = support["best_on_dev"]["threshold"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/redteam-EMBEDDER")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: evaluation/results)")
    parser.add_argument("--skip-support", action="store_true")
    parser.add_argument(
        "--cross-encoder",
        action="store_true",
        help="the cross-encoder's thresholds instead (redteam-thresholds-crossencoder.md)",
    )
    parser.add_argument("--limit", type=int, default=None, help="--cross-encoder smoke run: fewer questions")
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    args.data_dir = args.data_dir or default_data_dir()
    command = command_line(PROG, argv)
    out_dir, _ = output_target(args.out, "")
    if args.cross_encoder:
        name = "redteam-thresholds-crossencoder"
        run = lambda: measure_cross_encoder(args.data_dir, log, support=not args.skip_support, limit=args.limit)  # noqa: E731
        bench = Benchmark(name, "balanced_accuracy", run, metrics, lambda r: render_cross_encoder(r, command))
    else:
        from chatbot.settings import load_settings

        kind = load_settings().embedding.model
        bench = Benchmark(
            f"redteam-thresholds-{kind}",
            "balanced_accuracy",
            lambda: _measure_bi_encoder(args, log, kind),
            metrics,
            lambda r: render(r, command, kind),
        )
    ensure_demo_index(args.data_dir, log)
    bench.run_and_print(out_dir)
    return 0


def _measure_bi_encoder(args: argparse.Namespace, log: Any, kind: str) -> dict[str, Any]:
    """Relevance per language, the maternal leave-one-out check, and (unless skipped) the support threshold."""
    res: dict[str, Any] = {"corpus": str(DEMO_CARDS)}
    res["relevance"] = measure_relevance(args.data_dir, log)
    chosen = {lang: res["relevance"][lang]["best"]["threshold"] for lang in ("en", "it")}
    res["maternal_loo"] = measure_maternal_loo(args.data_dir, chosen, log)
    if not args.skip_support:
        from chatbot.embedders import load_embedder
        from chatbot.settings import load_settings

        s = load_settings()
        res["support"] = measure_support(load_embedder(s.embedding.model, s.embedding.threads), log)
    res["embedder"] = kind
    return res


if __name__ == "__main__":
    sys.exit(main())
