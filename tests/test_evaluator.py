"""The evaluator shape of every benchmark (evaluation/evaluator.py): a callable returning its metrics with
the primary one named, writing its report only when given a folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evaluation.evaluator import Benchmark, Evaluator, with_primary
from evaluation.report import Report


def test_with_primary_names_the_primary_metric_first() -> None:
    assert with_primary("nDCG@10", {"nDCG@10": 0.74, "P@3": 0.41, "recall": None}) == {
        "primary_metric": "nDCG@10",
        "nDCG@10": 0.74,
        "P@3": 0.41,
        "recall": None,
    }
    assert list(with_primary("b", {"a": 1, "b": 2})) == ["primary_metric", "a", "b"]


@pytest.mark.parametrize(
    ("metrics", "error", "message"),
    [
        ({"P@3": 0.4}, ValueError, "primary metric 'nDCG@10' is not among the metrics ['P@3']"),
        ({"nDCG@10": "0.7"}, TypeError, "metric 'nDCG@10' must be a number or None, not str"),
        ({"nDCG@10": 0.7, "ok": True}, TypeError, "metric 'ok' must be a number or None, not bool"),
        ({"nDCG@10": 0.7, "per": {"a": 1}}, TypeError, "metric 'per' must be a number or None, not dict"),
        ({"nDCG@10": math.nan}, ValueError, "metric 'nDCG@10' is NaN"),
        ({"nDCG@10": 0.7, "primary_metric": "x"}, ValueError, "'primary_metric' is reserved"),
    ],
)
def test_with_primary_rejects_a_bad_shape(metrics: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as exc:
        with_primary("nDCG@10", metrics)
    assert message in str(exc.value)


def _bench(calls: list[str]) -> Benchmark[dict[str, float]]:
    def run() -> dict[str, float]:
        calls.append("run")
        return {"hits": 3.0, "total": 4.0}

    def report(result: dict[str, float]) -> Report:
        calls.append("report")
        return Report(name="toy", title="Toy", command="toy", body=[f"hits {result['hits']:.0f}"], summary=result)

    return Benchmark("toy", "accuracy", run, lambda r: {"accuracy": r["hits"] / r["total"]}, report)


def test_benchmark_is_an_evaluator_and_returns_its_metrics_without_writing(tmp_path: Path) -> None:
    calls: list[str] = []
    bench = _bench(calls)

    assert isinstance(bench, Evaluator)
    assert bench() == {"primary_metric": "accuracy", "accuracy": 0.75}
    assert calls == ["run"]  # no folder: nothing rendered, nothing written
    assert bench.result == {"hits": 3.0, "total": 4.0}
    assert bench.path is None


def test_benchmark_writes_its_report_when_given_a_folder(tmp_path: Path) -> None:
    calls: list[str] = []
    bench = _bench(calls)

    assert bench(tmp_path) == {"primary_metric": "accuracy", "accuracy": 0.75}
    assert calls == ["run", "report"]
    assert bench.path == tmp_path / "toy.md"
    assert bench.path.read_text(encoding="utf-8") == "# Toy\n\nCommand: `toy`\n\nhits 3\n"
    assert (tmp_path / "toy.summary.json").exists()


def test_benchmark_with_a_primary_metric_it_does_not_compute_fails_before_writing(tmp_path: Path) -> None:
    bench = Benchmark(
        "toy", "recall", lambda: 1, lambda r: {"precision": 1.0}, lambda r: Report("toy", "Toy", "toy", [])
    )
    with pytest.raises(ValueError, match="primary metric 'recall'"):
        bench(tmp_path)
    assert not (tmp_path / "toy.md").exists()


def _queries(folder: Path, rows: list[tuple[str, str]]) -> None:
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        "".join(f'{{"_id": "{qid}", "text": "{text}"}}\n' for qid, text in rows), encoding="utf-8"
    )


def test_route_check_is_an_evaluator_with_the_shared_report(tmp_path: Path) -> None:
    from evaluation.route_check import main, metrics

    data = tmp_path / "data"
    _queries(
        data / "maternal", [("m1", "How much folic acid should I take?"), ("m2", "What can I eat, excluding fish?")]
    )
    _queries(data / "negconstraint", [("n1", "Which painkillers are safe in pregnancy other than ibuprofen?")])

    assert main(["--data", str(data), "--out", str(tmp_path / "out"), "--name", "rc"]) == 0

    md = (tmp_path / "out" / "rc.md").read_text(encoding="utf-8")
    assert md.splitlines()[:3] == [
        "# Router check: which questions go to the logical decomposition (issue 19)",
        "",
        f"Command: `python -m evaluation.route_check --data {data} --out {tmp_path / 'out'} --name rc` "
        "(default settings: retrieval.route_exclusions=true)",
    ]
    assert "| maternal | 2 | 1 | 0.500 |" in md
    assert "| negconstraint | 1 | 1 | 1.000 |" in md
    result = json.loads((tmp_path / "out" / "rc.json").read_text(encoding="utf-8"))
    assert result.pop("command") == md.splitlines()[2].split("`")[1]
    assert result["maternal"]["rerouted_ids"] == ["m2"]
    assert with_primary("false_routes", metrics(result)) == {
        "primary_metric": "false_routes",
        "false_routes": 1,
        "maternal/routed_share": 0.5,
        "negconstraint/routed_share": 1.0,
    }
    assert main(["--data", str(tmp_path / "empty"), "--out", str(tmp_path / "out2")]) == 2
    assert not (tmp_path / "out2").exists()


def test_benchmark_scripts_keep_their_flags() -> None:
    from evaluation.bench_logical import RUNNERS, parser

    args = parser().parse_args(["negconstraint", "--split", "train", "--limit", "5", "--variants", "logical"])
    assert (args.name, args.out, args.split, args.limit, args.variants) == (
        "logical-negconstraint",
        None,
        "train",
        5,
        ["logical"],
    )
    assert parser().parse_args(["synthetic", "--per-template", "3", "--name", "s"]).per_template == 3
    assert parser().parse_args(["orlog"]).pipelines == ["naive", "logical", "logical-prob", "logical-orlog"]
    assert {cmd: primary for cmd, (_, primary) in RUNNERS.items()} == {
        "negconstraint": "Success@1",
        "select": "Success@1",
        "synthetic": "nDCG@10",
        "routing": "identical_top3_share",
        "orlog": "nDCG@10",
    }
