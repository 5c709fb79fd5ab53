"""evaluation.reply_misses: the summary's pooled row and the per-question rows, on hand-made results."""

from __future__ import annotations

from evaluation.reply_misses import per_query_rows, summary_lines


def row(qid: str, language: str, kind: str, recall: float, cause: str | None) -> dict:
    return {"id": qid, "language": language, "type": kind, "recall": recall, "cause": cause, "reply": "x" * 10}


RESULTS = {
    "a": [row("a1", "en", "when", 1.0, None), row("a2", "it", "why", 0.0, "not picked")],
    "b": [row("b1", "it", "when", 0.5, "cut by length")],
}


def test_the_summary_pools_every_set_first_when_there_are_several() -> None:
    lines = summary_lines(RESULTS)
    assert lines[2] == "| all | 3 | 0.500 | 1.000 | 0.250 | - | - | 0.750 | - | 0.000 | - |"
    assert lines[3].startswith("| a | 2 | 0.500 |") and lines[4].startswith("| b | 1 | 0.500 |")
    assert summary_lines({"a": RESULTS["a"]})[2].startswith("| a | 2 |")  # one set: no pooled row


def test_per_query_rows_hold_ids_and_numbers_only() -> None:
    assert per_query_rows(RESULTS)[1] == {
        "query_id": "a2", "pipeline": "replies", "set": "a", "language": "it", "type": "why", "recall": 0.0,
        "cause": "not picked", "reply_chars": 10,
    }  # fmt: skip
    assert [r["query_id"] for r in per_query_rows(RESULTS)] == ["a1", "a2", "b1"]
