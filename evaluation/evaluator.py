"""One evaluator shape for every benchmark, in the spirit of sentence-transformers' evaluators.

An evaluator is a callable: ``evaluator(out_dir=None)`` runs the benchmark and returns a flat dict of
numbers that names its primary metric, e.g. ``{"primary_metric": "nDCG@10", "nDCG@10": 0.74, "P@3": 0.41}``;
given ``out_dir`` it also writes its report there (``evaluation/report.py``: Markdown, JSON, per-query rows,
the exact command). :class:`Benchmark` builds one from three functions, so a script keeps its measurement
(``run``), the numbers it reports (``metrics``) and its report (``report``) apart, and a committed result
can be re-rendered without measuring again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from evaluation.report import Report

R = TypeVar("R")
PRIMARY = "primary_metric"


@runtime_checkable
class Evaluator(Protocol):
    """A benchmark: calling it measures and returns its metrics (with ``primary_metric`` naming one)."""

    name: str
    primary_metric: str

    def __call__(self, out_dir: Path | None = None) -> dict[str, Any]: ...


def with_primary(primary: str, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``{"primary_metric": primary, **metrics}`` after checking the shape: ``primary`` is one of the
    metrics, every value is a number (``None`` where the data cannot measure it, e.g. a recall without a
    positive case) and no metric is called ``primary_metric``."""
    if PRIMARY in metrics:
        raise ValueError(f"{PRIMARY!r} is reserved: it names the primary metric, it is not one")
    if primary not in metrics:
        raise ValueError(f"primary metric {primary!r} is not among the metrics {sorted(metrics)}")
    for key, value in metrics.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"metric {key!r} must be a number or None, not {type(value).__name__}")
        if isinstance(value, float) and math.isnan(value):
            raise ValueError(f"metric {key!r} is NaN (use None for a metric the data cannot measure)")
    return {PRIMARY: primary, **metrics}


@dataclass
class Benchmark(Generic[R]):
    """An :class:`Evaluator` from three functions: ``run()`` measures and returns a result, ``metrics(result)``
    the numbers to return, ``report(result)`` the :class:`~evaluation.report.Report` to write. After a call,
    ``result`` holds the last result and ``path`` the last report written."""

    name: str
    primary_metric: str
    run: Callable[[], R]
    metrics: Callable[[R], Mapping[str, Any]]
    report: Callable[[R], Report]
    result: R | None = field(default=None, init=False)
    path: Path | None = field(default=None, init=False)

    def __call__(self, out_dir: Path | None = None) -> dict[str, Any]:
        """Run the benchmark; with ``out_dir``, write its report there. Returns the metrics."""
        result = self.run()
        self.result = result
        metrics = with_primary(self.primary_metric, self.metrics(result))
        if out_dir is not None:
            self.path = self.report(result).write(out_dir)
        return metrics

    def run_and_print(self, out_dir: Path) -> dict[str, Any]:
        """What a benchmark script does: run, write the report under ``out_dir``, print its Markdown."""
        metrics = self(out_dir)
        assert self.path is not None
        print(self.path.read_text(encoding="utf-8"))
        return metrics
