"""Likert report: Table 1 statistics, per type and per pipeline, Krippendorff's alpha, CSV and PNG files;
question-set parsing; rating validation."""

from __future__ import annotations

import csv
import json

import pytest

from chatbot.settings import Settings
from chatbot.store import auth, evals
from chatbot.store.db import open_store
from evaluation.likert import alpha, build_report, describe, write_report


def rating(answer_id, evaluator, q1, links, likert, pipeline="A", qtype="factual"):
    return {
        "answer_id": answer_id, "question_id": str(answer_id), "question": f"q{answer_id}", "qtype": qtype,
        "pipeline": pipeline, "evaluator": evaluator, "q1_relevant": q1, "q2_links": links,
        "q2_precision": sum(links) / len(links), "q3_quality": likert[0], "q4_reliability": likert[1],
        "q5_clarity": likert[2], "q6_completeness": likert[3], "q7_overall": likert[4], "comment": "",
    }  # fmt: skip


DATA = {
    "session": {"id": 1, "name": "t", "pipelines": ["A", "B"], "config": {}},
    "answers": 4,
    "ratings": [
        rating(1, "eva", 1, [True, True, False], [5, 5, 4, 4, 5]),
        rating(1, "evan", 1, [True, False, False], [4, 5, 4, 3, 4]),
        rating(2, "eva", 0, [False, False, False], [1, 2, 2, 1, 1], pipeline="B", qtype="evaluative"),
        rating(2, "evan", 1, [False, False, True], [2, 2, 3, 1, 2], pipeline="B", qtype="evaluative"),
    ],
}


def test_describe_gives_avg_max_min_and_sample_variance():
    assert describe([1, 2, 3, 4]) == {"n": 4, "avg": 2.5, "max": 4.0, "min": 1.0, "var": 1.6667}
    assert describe([3]) == {"n": 1, "avg": 3.0, "max": 3.0, "min": 3.0, "var": 0.0}
    assert describe([])["avg"] is None


def test_report_tables_overall_per_type_and_per_pipeline():
    report = build_report(DATA)
    assert report["overall"]["q3_quality"] == {"n": 4, "avg": 3.0, "max": 5.0, "min": 1.0, "var": 3.3333}
    assert report["overall"]["q1_relevant"]["avg"] == 0.75
    assert report["overall"]["q2_precision"]["avg"] == pytest.approx((2 / 3 + 1 / 3 + 0 + 1 / 3) / 4, abs=1e-4)
    assert report["by_type"]["evaluative"]["q7_overall"] == {"n": 2, "avg": 1.5, "max": 2.0, "min": 1.0, "var": 0.5}
    assert report["by_pipeline"]["A"]["q7_overall"]["avg"] == 4.5
    assert report["by_pipeline"]["B"]["q7_overall"]["avg"] == 1.5
    assert report["evaluators"] == ["eva", "evan"]


def test_krippendorff_alpha_matches_a_hand_computed_value():
    # nominal, 2 raters x 4 units: A=[1,1,0,0], B=[1,1,0,1]: Do=2/8, De=2*3*5/(8*7) -> alpha = 1 - 0.25/0.5357
    units = {u: {"A": a, "B": b} for u, (a, b) in enumerate([(1, 1), (1, 1), (0, 0), (0, 1)])}
    assert alpha(units, "nominal", [0, 1]) == pytest.approx(1 - 0.25 / (30 / 56), abs=1e-4)
    assert alpha({1: {"A": 3, "B": 3}, 2: {"A": 5, "B": 5}}, "ordinal", [1, 2, 3, 4, 5]) == 1.0
    assert alpha({1: {"A": 3}}, "ordinal", [1, 2, 3, 4, 5]) is None  # one rater
    assert alpha({1: {"A": 3, "B": 3}}, "ordinal", [1, 2, 3, 4, 5]) is None  # no variation


def test_write_report_files(tmp_path):
    report = write_report(DATA, tmp_path)
    for name in ("report.md", "ratings.csv", "summary.csv", "summary.json", "criteria.png", "pipelines.png",
                 "distribution.png"):  # fmt: skip
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader((tmp_path / "ratings.csv").open()))
    assert len(rows) == 4 and rows[0]["q2_links"] == "110"
    summary = list(csv.DictReader((tmp_path / "summary.csv").open()))
    q3 = next(r for r in summary if r["group"] == "overall" and r["criterion"] == "q3_quality")
    assert (q3["avg"], q3["max"], q3["min"], q3["var"]) == ("3.0", "5.0", "1.0", "3.3333")
    assert json.loads((tmp_path / "summary.json").read_text())["krippendorff_alpha"] == report["krippendorff_alpha"]
    md = (tmp_path / "report.md").read_text()
    assert "| Q3 text quality | 4 | 3.000 | 5.000 | 1.000 | 3.333 |" in md
    assert "### evaluative" in md and "Krippendorff" in md


def test_parse_questions_jsonl_and_csv_with_types():
    jsonl = '{"id": "a", "text": "Is coffee safe?", "type": "evaluative"}\n\n{"question": "What is folic acid?"}\n'
    assert evals.parse_questions(jsonl) == [
        {"external_id": "a", "text": "Is coffee safe?", "qtype": "evaluative"},
        {"external_id": "2", "text": "What is folic acid?", "qtype": None},
    ]
    rows = evals.parse_questions('id,text,type\nx1,Is coffee safe?,factual\nx2,"Fever, baby?",\n', "q.csv")
    assert rows == [
        {"external_id": "x1", "text": "Is coffee safe?", "qtype": "factual"},
        {"external_id": "x2", "text": "Fever, baby?", "qtype": None},
    ]
    with pytest.raises(ValueError, match=r"q.jsonl:2: invalid JSON"):
        evals.parse_questions('{"text": "a"}\n{oops\n', "q.jsonl")
    with pytest.raises(ValueError, match="needs a 'text' or 'question' column"):
        evals.parse_questions("id,body\n1,x\n", "q.csv")


def test_sessions_freeze_answers_hide_pipelines_resume_and_validate(tmp_path):
    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}))
    eva = auth.Principal(auth.add_user(store, "eva", "long-password", "evaluator"), "eva", "evaluator")
    calls = []

    def generate(text, pipeline):
        calls.append((text, pipeline))
        link = {"title": "T", "url": "https://x.org", "segment_id": "d#1"}
        return {"reply": f"{pipeline}: {text}", "status": "answered", "links": [link], "trace": {"p": pipeline}}

    questions = [{"external_id": str(i), "text": f"question {i}", "qtype": None} for i in range(3)]
    sid = evals.create_session(store, "s", questions, ["A", "B"], generate)
    assert len(calls) == 6  # generated once, at creation
    with pytest.raises(ValueError, match="already exists"):
        evals.create_session(store, "s", questions, ["A"], generate)
    item = evals.next_item(store, sid, eva.id)
    assert set(item) == {"answer_id", "position", "question", "reply", "links"}  # no pipeline, no trace
    assert item["links"] == [{"title": "T", "url": "https://x.org"}]
    good = {"q1_relevant": True, "q2_links": [True], "q3_quality": 3, "q4_reliability": 3, "q5_clarity": 3,
            "q6_completeness": 3, "q7_overall": 3}  # fmt: skip
    for bad, msg in (({"q1_relevant": None}, "Q1"), ({"q3_quality": 6}, "q3_quality"), ({"q2_links": []}, "Q2")):
        with pytest.raises(ValueError, match=msg):
            evals.save_rating(store, eva, item["answer_id"], {**good, **bad})
    evals.save_rating(store, eva, item["answer_id"], good)
    assert evals.progress(store, sid, eva.id) == (1, 6)
    nxt = evals.next_item(store, sid, eva.id)  # resume: the next unrated one
    assert nxt["answer_id"] != item["answer_id"] and nxt["position"] > item["position"]
    evals.save_rating(store, eva, item["answer_id"], {**good, "q7_overall": 5})  # re-rating updates
    data = evals.session_ratings(store, sid)
    assert [r["q7_overall"] for r in data["ratings"]] == [5]
