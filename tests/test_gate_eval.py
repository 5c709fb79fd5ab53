"""The relevance-gate evaluator on hand-made answers: each gate's refusal from the trace, P/R per language."""

from __future__ import annotations

import json

import pytest

from evaluation.redteam.gate_eval import decisions, load_items, refusal_metrics, summarise


def answer(status: str, score: float | None, relevant: bool, gate: str = "classifier") -> dict:
    rel = {"gate": gate, "score": score, "threshold": 0.87, "scorer": "dense", "relevant": relevant}
    return {"status": status, "links": [], "trace": {"safety": {"relevance": rel}}}


def test_decisions_read_both_gates_from_one_answer():
    # the classifier answered a question the threshold would refuse (cosine 0.86 < 0.87)
    assert decisions(answer("answered", 0.86, True)) | {"links": []} == {
        "status": "answered",
        "reached": True,
        "threshold": True,
        "classifier": False,
        "probability": None,
        "score": 0.86,
        "links": [],
    }
    # relevant to both, yet nothing composed: refused by both
    d = decisions(answer("no_certified_info", 0.9, True))
    assert (d["threshold"], d["classifier"]) == (True, True)
    # the classifier refused a question above the threshold
    d = decisions(answer("no_certified_info", 0.9, False))
    assert (d["threshold"], d["classifier"]) == (False, True)
    # a threshold-gate run: no classifier decision
    assert decisions(answer("answered", 0.9, True, gate="threshold"))["classifier"] is None
    assert decisions({"status": "invalid_input", "trace": {}}) == {"status": "invalid_input", "reached": False}


def test_refusal_precision_and_recall_per_language():
    rows = [
        {"language": "en", "in_scope": True, "reached": True, "threshold": True, "classifier": False, "source": "s"},
        {"language": "en", "in_scope": False, "reached": True, "threshold": True, "classifier": True, "source": "s"},
        {"language": "en", "in_scope": False, "reached": True, "threshold": True, "classifier": False, "source": "s"},
        {"language": "it", "in_scope": True, "reached": True, "threshold": True, "classifier": True, "source": "s"},
        {"language": "it", "in_scope": False, "reached": False, "source": "s"},
    ]
    en = refusal_metrics([r for r in rows if r["language"] == "en"], "threshold")
    assert en == {
        "n": 3,
        "out_of_scope": 2,
        "refused": 3,
        "refusal_precision": 2 / 3,
        "refusal_recall": 1.0,
        "in_scope_answered": 0.0,
        "in_scope_refused": 1,
    }
    s = summarise(rows)
    assert s["s"]["en"]["classifier"]["refusal_precision"] == 1.0
    assert s["s"]["en"]["classifier"]["refusal_recall"] == 0.5
    assert s["s"]["it"]["classifier"]["refusal_precision"] == 0.0  # the one Italian refusal was answerable
    assert s["s"]["it"]["classifier"]["refusal_recall"] is None  # the out-of-scope one never reached the gate


def test_load_items_reads_the_three_shapes(tmp_path):
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"id": "g1", "text": "Posso bere caffè?", "language": "it", "in_scope": True, "card_id": "it-x"},
        {"id": "r1", "language": "en", "type": "how_much", "question": "How much?", "card_id": "c", "key_phrases": []},
        {
            "id": "t1",
            "text": "glaucoma?",
            "language": "en",
            "category": "out_of_scope",
            "expected_status": "no_certified_info",
            "expected_urgent": False,
        },
        {"id": "t2", "text": "x", "language": "en", "category": "garbage", "expected_status": "invalid_input"},
        {"id": "t3", "text": "y", "language": "en", "category": "evaluative", "expected_status": "answered|safe_reply"},
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    items = load_items(path)
    assert [(i["id"], i["in_scope"], i["language"]) for i in items] == [
        ("mixed:g1", True, "it"),
        ("mixed:r1", True, "en"),
        ("mixed:t1", False, "en"),
    ]
    path.write_text(json.dumps({"id": "x", "text": "q", "language": "fr", "in_scope": True}) + "\n")
    with pytest.raises(ValueError, match="language en|it"):
        load_items(path)
