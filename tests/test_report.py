"""The shared report writer of the benchmarks (evaluation/report.py): exact files on a tiny fixture, the
command line, the common --name/--out options, and committed reports re-rendered from their JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from evaluation.report import Report, add_output_args, command_line, output_target, results_dir, table

RESULTS = Path(__file__).resolve().parent.parent / "evaluation" / "results"


def tiny_report(**changes: object) -> Report:
    fields: dict[str, object] = {
        "name": "tiny",
        "title": "Tiny benchmark",
        "command": "python -m evaluation.tiny --k 3",
        "body": ["Two queries.", "", *table(["pipeline", "nDCG@10"], [["dense", "0.5000"], ["bm25", "0.2500"]]), ""],
        "summary": {"queries": 2, "nDCG@10": {"dense": 0.5, "bm25": 0.25}},
        "rows": [{"query_id": "q1", "nDCG@10": 1.0}, {"query_id": "q2", "nDCG@10": 0.0, "note": "é"}],
    }
    fields.update(changes)
    return Report(**fields)  # type: ignore[arg-type]


def test_report_writes_exact_markdown_json_and_rows(tmp_path: Path) -> None:
    path = tiny_report().write(tmp_path / "out")

    assert path == tmp_path / "out" / "tiny.md"
    assert path.read_text(encoding="utf-8") == (
        "# Tiny benchmark\n"
        "\n"
        "Command: `python -m evaluation.tiny --k 3`\n"
        "\n"
        "Two queries.\n"
        "\n"
        "| pipeline | nDCG@10 |\n"
        "|---|---|\n"
        "| dense | 0.5000 |\n"
        "| bm25 | 0.2500 |\n"
    )
    assert (tmp_path / "out" / "tiny.summary.json").read_text(encoding="utf-8") == (
        "{\n"
        '  "queries": 2,\n'
        '  "nDCG@10": {\n'
        '    "dense": 0.5,\n'
        '    "bm25": 0.25\n'
        "  },\n"
        '  "command": "python -m evaluation.tiny --k 3"\n'
        "}\n"
    )
    assert (tmp_path / "out" / "tiny.per_query.jsonl").read_text(encoding="utf-8") == (
        '{"query_id": "q1", "nDCG@10": 1.0}\n{"query_id": "q2", "nDCG@10": 0.0, "note": "é"}\n'
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "tiny.md",
        "tiny.per_query.jsonl",
        "tiny.summary.json",
    ]


def test_report_options_keep_older_file_names_and_write_extra_files(tmp_path: Path) -> None:
    drawn: list[Path] = []
    report = tiny_report(
        command_note=" (after a build)",
        summary={"command": "as recorded", "n": 1},
        json_suffix=".json",
        rows_suffix=".per_item.jsonl",
        json_indent=1,
        extra_rows={".sentences.jsonl": [{"s": 1}]},
        figures={".png": lambda p: (drawn.append(p), p.write_bytes(b"png"))},
    )
    report.write(tmp_path)

    assert report.markdown().splitlines()[2] == "Command: `python -m evaluation.tiny --k 3` (after a build)"
    assert (tmp_path / "tiny.json").read_text(encoding="utf-8") == '{\n "command": "as recorded",\n "n": 1\n}\n'
    assert (tmp_path / "tiny.per_item.jsonl").read_text(encoding="utf-8").count("\n") == 2
    assert (tmp_path / "tiny.sentences.jsonl").read_text(encoding="utf-8") == '{"s": 1}\n'
    assert drawn == [tmp_path / "tiny.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "tiny.json",
        "tiny.md",
        "tiny.per_item.jsonl",
        "tiny.png",
        "tiny.sentences.jsonl",
    ]


def test_markdown_ends_with_exactly_one_newline_and_a_report_without_rows_writes_no_rows_file(
    tmp_path: Path,
) -> None:
    report = tiny_report(body=["last line", "", ""], rows=None)
    assert report.markdown().endswith("last line\n")
    report.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.md", "tiny.summary.json"]


def test_results_dir_is_the_one_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.report as report_module

    assert results_dir() == RESULTS
    monkeypatch.setattr(report_module, "results_dir", lambda: tmp_path / "elsewhere")
    assert tiny_report().write() == tmp_path / "elsewhere" / "tiny.md"
    assert output_target(None, "n") == (tmp_path / "elsewhere", "n")


def test_command_line_records_chatbot_settings_quoted_without_the_data_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in [k for k in __import__("os").environ if k.startswith("CHATBOT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("CHATBOT_RERANK__KIND", "fusion")
    monkeypatch.setenv("CHATBOT_LLM__MODEL", "a model")
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", "/tmp/somewhere")

    assert command_line("python -m evaluation.x", ["--name", "two words"]) == (
        "CHATBOT_LLM__MODEL='a model' CHATBOT_RERANK__KIND=fusion python -m evaluation.x --name 'two words'"
    )
    monkeypatch.delenv("CHATBOT_RERANK__KIND")
    monkeypatch.delenv("CHATBOT_LLM__MODEL")
    assert command_line("python -m evaluation.x", []) == "python -m evaluation.x"


def test_output_args_name_out_and_an_older_spelling() -> None:
    parser = argparse.ArgumentParser()
    add_output_args(parser, None, out_aliases=["--out-dir"])
    args = parser.parse_args(["--name", "n", "--out-dir", "some/folder"])
    assert (args.name, args.out) == ("n", Path("some/folder"))
    with pytest.raises(SystemExit):
        parser.parse_args([])  # no default name: --name is required

    parser = argparse.ArgumentParser()
    add_output_args(parser, "default-name")
    args = parser.parse_args([])
    assert (args.name, args.out) == ("default-name", None)


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        (None, (RESULTS, "n")),
        (Path("folder"), (Path("folder"), "n")),
        (Path("folder/e5-runtime.md"), (Path("folder"), "e5-runtime")),
        (Path("folder/rerank-fusion.json"), (Path("folder"), "rerank-fusion")),
    ],
)
def test_output_target_reads_out_as_a_folder_or_a_report_file(out: Path | None, expected: tuple[Path, str]) -> None:
    assert output_target(out, "n") == expected


def test_route_check_report_rerendered_from_its_committed_json_is_unchanged() -> None:
    from evaluation.route_check import render

    data = json.loads((RESULTS / "route-check.json").read_text(encoding="utf-8"))
    command = data.pop("command").strip()
    assert render(data, command).markdown() == (RESULTS / "route-check.md").read_text(encoding="utf-8")


def test_redflags_report_rerendered_from_its_committed_json_is_unchanged() -> None:
    from evaluation.redflags_eval import markdown

    data = json.loads((RESULTS / "redflags-heldout.json").read_text(encoding="utf-8"))
    assert markdown(data) == (RESULTS / "redflags-heldout.md").read_text(encoding="utf-8")


def _command_of(markdown: str) -> str:
    return markdown.splitlines()[2].split("`")[1]


@pytest.mark.parametrize(
    "name",
    ["reranker-bench", "redteam-thresholds-e5", "redteam-thresholds-crossencoder", "replies-dev-cues"],
)
def test_committed_reports_rerendered_from_their_json_are_unchanged(name: str) -> None:
    """The shared writer keeps the reports' headings and tables: re-rendering a committed result gives the
    committed Markdown byte for byte."""
    old = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    data = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    if name == "reranker-bench":
        from evaluation.bench_reranker import render

        report = render(data, name)
    elif name.startswith("redteam-thresholds-"):
        from evaluation.redteam.threshold_reports import render, render_cross_encoder

        kind = name.removeprefix("redteam-thresholds-")
        command = _command_of(old)
        report = render_cross_encoder(data, command) if kind == "crossencoder" else render(data, command, kind)
    else:
        from evaluation.bench_replies import render

        report = render(data, name.removeprefix("replies-"), data.pop("command"))
    assert report.name == name
    assert report.markdown() == old
