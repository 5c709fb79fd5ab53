"""evaluation.exclusion_cards: the measures of exclusion questions on the patient's path, on hand-made answers."""

from __future__ import annotations

import json

import pytest

from evaluation.exclusion_cards import ExclusionItem, load_exclusion_set, run_set, score_item

ITEM = ExclusionItem(
    "exc-en-01", "en", "iron foods apart from red meat?", frozenset({"calcium"}), frozenset({"iron"}), 1
)


def answer(*docs: str, pipeline: str = "logical", status: str = "answered") -> dict:
    links = [{"segment_id": f"{d}#abc", "url": f"https://example.org/{d}"} for d in docs]
    return {"status": status, "links": links, "trace": {"route": {"pipeline": pipeline}}}


def test_a_good_first_link_scores_every_measure():
    row = score_item(ITEM, answer("iron", "calcium", "folic"))
    assert row["links"] == ["iron", "calcium", "folic"]
    assert (row["routed"], row["three_links"], row["first_not_excluded"], row["first_good"]) == (1, 1, 1, 1)
    assert (row["good_in_links"], row["excluded_links"]) == (1, 1)


def test_the_excluded_card_first_fails_and_a_refusal_scores_nothing():
    bad = score_item(ITEM, answer("calcium", "iron", pipeline="dense+rerank"))
    assert (bad["routed"], bad["three_links"], bad["first_not_excluded"], bad["first_good"]) == (0, 0, 0, 0)
    assert bad["good_in_links"] == 1
    refused = score_item(ITEM, {"status": "no_certified_information", "links": [], "trace": {}})
    assert (refused["first_not_excluded"], refused["good_in_links"], refused["links"]) == (0, 0, [])


def test_run_set_groups_by_language_and_exclusions():
    two = ExclusionItem("exc-it-01", "it", "q", frozenset({"a", "b"}), frozenset({"c"}), 2)
    answers = {ITEM.question: answer("iron", "x", "y"), "q": answer("b", "c", "x")}
    result = run_set([ITEM, two], answers.__getitem__)
    summary = result["summary"]
    assert summary["all"]["first_good"] == 0.5
    assert summary["en"]["first_good"] == 1.0 and summary["it"]["first_good"] == 0.0
    assert summary["2 exclusions"]["first_not_excluded"] == 0.0
    assert summary["1 exclusion"]["questions"] == 1


def test_malformed_sets_are_refused_with_the_line(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"id": "x", "language": "en", "question": "q"}) + "\n")
    with pytest.raises(ValueError, match=r"set.jsonl:1: missing field\(s\) excluded_card_ids"):
        load_exclusion_set(path)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_exclusion_set(tmp_path / "none.jsonl")


def test_an_exclusion_no_card_is_about_is_read_but_a_question_needs_a_good_card(tmp_path):
    path = tmp_path / "set.jsonl"
    row = {"id": "x", "language": "en", "question": "q", "excluded_card_ids": [], "good_card_ids": ["iron"]}
    path.write_text(json.dumps({**row, "n_exclusions": 1}) + "\n")
    (item,) = load_exclusion_set(path)
    assert item.excluded == frozenset() and item.good == frozenset({"iron"})
    assert score_item(item, answer("iron", "x", "y"))["first_not_excluded"] == 1
    path.write_text(json.dumps({**row, "good_card_ids": [], "n_exclusions": 1}) + "\n")
    with pytest.raises(ValueError, match=r"set.jsonl:1: good_card_ids must name at least one card"):
        load_exclusion_set(path)


def test_the_reply_and_its_answering_document_are_kept_and_judged():
    ans = answer("x", "iron", "y")
    ans["reply"] = "Beans and lentils are good sources of iron."
    ans["trace"]["compose"] = {"attempts": [{"answer": {"doc_id": "iron"}}]}
    row = score_item(ITEM, ans)
    assert (row["reply_doc"], row["reply_good"], row["reply"]) == ("iron", 1, ans["reply"])
    ans["trace"]["compose"] = {"attempts": [{"answer": {"doc_id": "calcium"}}]}
    assert score_item(ITEM, ans)["reply_good"] == 0
    refused = score_item(ITEM, {"status": "no_certified_info", "links": [], "trace": {}})
    assert (refused["reply_doc"], refused["reply_good"], refused["reply"]) == (None, 0, "")
