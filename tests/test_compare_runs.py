"""Comparing pipelines across separate harness reports."""

from __future__ import annotations

import json

import pytest

from evaluation.compare_runs import compare, load_run, main, parse_run


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _row(qid, pipeline, ndcg):
    return {"query_id": qid, "pipeline": pipeline, "type": "other", "nDCG@10": ndcg, "P@3": ndcg / 2, "top": []}


def test_parse_run_names_the_file_pipeline_and_label():
    assert parse_run("results/x:hyde=base") == (__import__("pathlib").Path("results/x.per_query.jsonl"), "hyde", "base")
    assert parse_run("results/x:cot")[2] == "x:cot"
    with pytest.raises(ValueError, match=r"expected REPORT:PIPELINE"):
        parse_run("results/x")


def test_compare_uses_shared_questions_and_tests_against_the_first(tmp_path):
    _write(tmp_path / "a.per_query.jsonl", [_row("q1", "hyde", 0.5), _row("q2", "hyde", 0.7), _row("q1", "cot", 0.1)])
    _write(tmp_path / "b.per_query.jsonl", [_row("q1", "hyde", 0.9), _row("q2", "hyde", 0.7), _row("q3", "hyde", 1.0)])
    runs = [
        ("base", load_run(tmp_path / "a.per_query.jsonl", "hyde")),
        ("b", load_run(tmp_path / "b.per_query.jsonl", "hyde")),
    ]

    result = compare(runs, ("nDCG@10", "P@3"))

    assert result["questions"] == 2  # q3 is only in b
    assert result["means"]["base"] == pytest.approx({"nDCG@10": 0.6, "P@3": 0.3})
    assert result["means"]["b"] == pytest.approx({"nDCG@10": 0.8, "P@3": 0.4})
    assert [(t["a"], t["b"], t["metric"]) for t in result["tests"]] == [("base", "b", "nDCG@10"), ("base", "b", "P@3")]
    assert result["tests"][0]["mean_diff"] == pytest.approx(0.2)


def test_missing_pipeline_or_file_is_a_clear_error(tmp_path, capsys):
    _write(tmp_path / "a.per_query.jsonl", [_row("q1", "hyde", 0.5)])

    assert main([f"{tmp_path / 'a'}:cot", f"{tmp_path / 'a'}:hyde"]) == 2
    assert "no rows for pipeline 'cot'" in capsys.readouterr().err
    assert main([f"{tmp_path / 'missing'}:hyde"]) == 2
    assert "no per-query results" in capsys.readouterr().err
