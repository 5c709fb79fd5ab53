"""The cause of a missed key fact (evaluation.reply_causes) and the per-type choice of the trained term's weight
(evaluation.answer_scorer_loso.type_weights), on hand-made captures and rows."""

from __future__ import annotations

import json
from pathlib import Path

from chatbot.index import Hit
from corpus.model import Segment
from evaluation.answer_scorer_loso import type_weights
from evaluation.bench_replies import ReplyItem
from evaluation.reply_causes import cause_of


def _hit(doc: str, text: str = "A sentence.") -> Hit:
    seg = Segment(id=f"{doc}#0", doc_id=doc, text=text, title=doc, source_url=f"https://example.org/{doc}", position=0)
    return Hit(seg, 1.0)


def _trace(doc: str) -> dict:
    return {"attempts": [{"answer": {"doc_id": doc}}]}


COFFEE = ReplyItem("q1", "en", "how_much", "How much coffee?", "en-caffeine", ("200 milligrams",))
CAFFE = ReplyItem("q2", "it", "how_much", "Quanto caffè?", "en-caffeine", ("200 milligrams",))
LINKED = {"hits": [_hit("en-caffeine"), _hit("en-alcohol")], "answer": {"status": "answered"}}
LIMIT = "Have no more than 200 milligrams a day."


def test_a_reply_holding_every_key_phrase_is_no_miss_even_when_only_the_urgent_text_holds_it() -> None:
    assert cause_of(COFFEE, LINKED, LIMIT, _trace("en-caffeine"), LIMIT) is None
    urgent = {"hits": [], "answer": {"status": "no_certified_info", "urgent": True, "urgent_message": LIMIT}}
    assert cause_of(COFFEE, urgent, "", {}, "") is None


def test_refusals_by_the_gate_and_by_a_safety_route() -> None:
    refused = {"hits": [], "answer": {"status": "no_certified_info"}}
    urgent = {"hits": [], "answer": {"status": "no_certified_info", "urgent": True, "urgent_message": "Call 112."}}
    dose = {"hits": [], "answer": {"status": "safe_reply"}}

    assert cause_of(COFFEE, refused, "", {}, "") == "gate refused"
    assert cause_of(COFFEE, urgent, "", {}, "") == "gate refused (urgent)"
    assert cause_of(COFFEE, dose, "", {}, "") == "safety route"


def test_linking_language_and_composer_causes() -> None:
    other = {"hits": [_hit("en-alcohol")], "answer": {"status": "answered"}}
    alcohol = "No amount of alcohol is safe."

    assert cause_of(COFFEE, other, alcohol, _trace("en-alcohol"), alcohol) == "card not linked"
    assert cause_of(CAFFE, LINKED, alcohol, _trace("en-alcohol"), alcohol) == "it question, en card"
    assert cause_of(COFFEE, LINKED, alcohol, _trace("en-alcohol"), alcohol) == "answered from another card"
    caffeine = "Caffeine crosses the placenta."
    assert cause_of(COFFEE, LINKED, caffeine, _trace("en-caffeine"), f"{caffeine} {LIMIT}") == "cut by length"
    assert cause_of(COFFEE, LINKED, caffeine, _trace("en-caffeine"), caffeine) == "wrong unit"


def _write(folder: Path, name: str, label: str, rows: list[tuple[str, str, float]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"query_id": q, "type": "x", "composer_type": t, "language": "en", "recall": r}) for q, t, r in rows
    ]
    (folder / f"{name}-{label}.per_query.jsonl").write_text("\n".join(lines) + "\n")


def test_each_set_takes_the_weight_its_other_sets_preferred_per_type(tmp_path: Path) -> None:
    # two sets; what_to_do: the weight-1 head gains on both sets, the weight-4 head loses on both; how_much: cues win
    w1, w4 = tmp_path / "w1", tmp_path / "w4"
    for name in ("a", "b"):
        rows = [(f"{name}1", "what_to_do", 0.0), (f"{name}2", "how_much", 1.0), (f"{name}3", "when", 0.0)]
        _write(w4, name, "cues", rows)
        _write(w1, name, "cues", rows)
        _write(
            w4,
            name,
            "fold",
            [(f"{name}1", "what_to_do", 0.0), (f"{name}2", "how_much", 0.0), (f"{name}3", "when", 1.0)],
        )
        _write(
            w1,
            name,
            "fold",
            [(f"{name}1", "what_to_do", 1.0), (f"{name}2", "how_much", 0.0), (f"{name}3", "when", 0.0)],
        )

    lines, baseline, chosen = type_weights({"w1": w1, "w4": w4}, "w4", ["a", "b"], ["when"], ["how_much", "what_to_do"])

    # baseline: the w4 fold head for "when", the cues for the rest
    assert [r["recall"] for r in baseline["a"]] == [0.0, 1.0, 1.0]
    # chosen on the other set: what_to_do from w1, how_much stays with the cues
    assert [r["recall"] for r in chosen["a"]] == [1.0, 1.0, 1.0]
    assert [r["recall"] for r in chosen["b"]] == [1.0, 1.0, 1.0]
    assert lines[2:] == [
        "| a | cues | w1 | +1 / -0 |",
        "| b | cues | w1 | +1 / -0 |",
        "| (all sets) | cues | w1 | (in-sample) |",
    ]
