"""Quality/speed trade-off of reranker configurations from a ``bench_reranker`` JSON: one panel per set, CPU p50
per question (x) against a quality metric (y), each configuration a labelled point, the first (the reference)
marked.

    python -m evaluation.plot_reranker_frontier BENCH.json --metric P@3 --out frontier.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def frontier_points(bench: dict[str, Any], metric: str) -> dict[str, list[tuple[str, float, float]]]:
    """Per set: (configuration, CPU p50 ms, metric) of every configuration with a latency, in bench order."""
    test = bench["test"]
    return {
        set_name: [
            (config, float(test["speed"][config]["cpu_p50_ms"]), float(values[metric]))
            for config, values in per_config.items()
            if config in test["speed"]
        ]
        for set_name, per_config in test["quality"].items()
    }


def pareto(points: list[tuple[str, float, float]]) -> list[str]:
    """Configurations no other one beats on both speed (lower) and quality (higher or equal)."""
    return [
        c
        for c, ms, q in points
        if not any((m2 < ms and q2 >= q) or (m2 <= ms and q2 > q) for c2, m2, q2 in points if c2 != c)
    ]


def plot(bench: dict[str, Any], metric: str, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = frontier_points(bench, metric)
    fig, axes = plt.subplots(1, len(points), figsize=(6 * len(points), 4.5), squeeze=False)
    for ax, (set_name, pts) in zip(axes[0], points.items(), strict=True):
        best = set(pareto(pts))
        for k, (config, ms, q) in enumerate(pts):
            ax.scatter([ms], [q], color="tab:red" if k == 0 else ("tab:blue" if config in best else "tab:gray"))
            ax.annotate(config, (ms, q), fontsize=7, xytext=(3, 3), textcoords="offset points")
        front = sorted((ms, q) for c, ms, q in pts if c in best)
        ax.plot([p[0] for p in front], [p[1] for p in front], color="tab:blue", linewidth=0.8)
        dense = bench["test"]["quality"][set_name].get("dense", {}).get(metric)
        if dense is not None:
            ax.axhline(dense, color="tab:green", linestyle="--", linewidth=0.8, label=f"dense (no rerank) {dense:.3f}")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel("rerank CPU p50 per question (ms, 1 thread)")
        ax.set_ylabel(metric)
        ax.set_title(f"{set_name} ({bench['split']} split)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.plot_reranker_frontier", description=__doc__.split("\n")[0]
    )
    parser.add_argument("bench", type=Path, help="a bench_reranker JSON")
    parser.add_argument("--metric", default="P@3")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    bench = json.loads(args.bench.read_text(encoding="utf-8"))
    print(plot(bench, args.metric, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
