"""compose.unit_weights=learned: the composer's terms rescaled per question type (chatbot.stages.answer_weights)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chatbot.stages.answer_cues import QUESTION_TYPES
from chatbot.stages.answer_first import compose_answer_first
from chatbot.stages.answer_select import Candidate
from chatbot.stages.answer_weights import (
    FORMAT_VERSION,
    UnitWeights,
    default_path,
    load_unit_weights,
    parse_unit_weights,
)
from tests.test_answer_select import TEA_DOC, TEA_WHY, WINE, hits


def unit(text: str, parts: dict[str, float], doc_rank: int = 0, first: int = 0) -> Candidate:
    u = Candidate(text=text, doc_id="d", segment_id="d#0", doc_rank=doc_rank, position=0, first=first, last=first)
    u.parts = dict(parts)
    u.score = sum(parts.values())
    return u


def weights(multipliers=None, typed=None, model_types=("how_long",)) -> UnitWeights:
    return UnitWeights(multipliers or {}, typed or {}, tuple(model_types), {})


def test_a_term_rescaled_for_one_question_type_changes_which_unit_opens() -> None:
    topical = unit("Drink water.", {"cue": 0.2, "document": 0.8})
    amount = unit("Have no more than 200 milligrams a day.", {"cue": 1.0, "document": 0.3}, first=1)
    w = weights({"how_much": {"document": 2.0}})

    ranked = w.reweigh("how_much", [amount, topical])

    assert [u.text for u in ranked] == ["Drink water.", "Have no more than 200 milligrams a day."]
    assert (topical.score, amount.score) == (1.8, 1.6)
    assert topical.parts == {"cue": 0.2, "document": 1.6, "typed": 0.0}
    # another type keeps the hand weights: the amount opens
    again = [unit("Drink water.", {"cue": 0.2, "document": 0.8}), unit("Have 200 mg.", {"cue": 1.0, "document": 0.3})]
    assert [u.text for u in w.reweigh("why", again)] == ["Have 200 mg.", "Drink water."]


def test_the_typed_term_weighs_the_units_cues_and_length() -> None:
    w = weights(typed={"why": {"length": 6.0}})
    u = unit("abc", {"cue": 0.5})

    w.reweigh("why", [u])

    assert u.parts["typed"] == round(math.log1p(3), 4) == 1.3863
    assert u.score == round(0.5 + 1.3863, 4)
    # a cue of an answer type the question did not ask for counts with its own weight: an amount in a "why" reply
    cue_w = weights(typed={"why": {"how_much": -1.0}})
    v = unit("Have no more than 4 cups of green tea a day.", {"cue": 0.0})
    cue_w.reweigh("why", [v])
    assert v.parts["typed"] == -1.0


def test_a_kind_the_weights_do_not_name_reads_as_yes_no() -> None:
    w = weights({"yes_no": {"cue": 3.0}})
    u = unit("It is fine.", {"cue": 1.0})

    w.reweigh("options", [u])

    assert u.score == 3.0


def good_file() -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "multipliers": {"how_much": {"cue": 1.5}},
        "typed": {"how_much": {"how_much": 0.5, "length": 0.1}},
        "model_types": ["how_much", "why"],
        "meta": {"questions": 3},
    }


def test_the_weights_file_is_read_and_bad_files_are_named() -> None:
    w = parse_unit_weights(good_file())
    assert (w.multipliers, w.model_types, w.meta) == ({"how_much": {"cue": 1.5}}, ("how_much", "why"), {"questions": 3})

    with pytest.raises(ValueError, match=r"w\.json: format_version 0 != 1; refit it"):
        parse_unit_weights({**good_file(), "format_version": 0}, "w.json")
    with pytest.raises(ValueError, match=r"unknown question types in model_types: \['how_often'\]"):
        parse_unit_weights({**good_file(), "model_types": ["how_often"]})
    with pytest.raises(ValueError, match="malformed unit weights"):
        parse_unit_weights({**good_file(), "multipliers": {"how_much": {"cue": "lots"}}})
    with pytest.raises(ValueError, match="malformed unit weights"):
        parse_unit_weights({k: v for k, v in good_file().items() if k != "typed"})


def test_a_missing_weights_file_says_how_to_fit_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"compose.unit_weights=learned but .*nothing.json is missing"):
        load_unit_weights(tmp_path / "nothing.json")


def test_the_shipped_weights_cover_every_question_type() -> None:
    w = load_unit_weights(default_path())
    assert set(w.model_types) == set(QUESTION_TYPES)
    assert set(w.multipliers) == set(w.typed) == {*QUESTION_TYPES, "options"}
    assert w.meta["questions"] >= 2000
    assert json.loads(default_path().read_text())["format_version"] == FORMAT_VERSION


def test_the_composer_opens_with_what_the_learned_weights_rank_first() -> None:
    question = "How much green tea can I drink a day?"
    args = (question, hits(TEA_WHY, WINE), "en")

    def doc(d: str) -> list:
        return TEA_DOC if d == "tea" else [WINE]

    hand = compose_answer_first(*args, document_segments=doc)
    assert hand.text.startswith("Have no more than 4 cups of green tea a day.")
    # weights that make the retrieved segment count for everything and the cues for nothing: the reason opens
    learned = weights({"how_much": {"cue": 0.0, "retrieved": 50.0, "lead": 0.0}})
    out = compose_answer_first(*args, document_segments=doc, weights=learned)

    assert out.detail["answer"]["segment_id"] == "tea#0"
    assert out.detail["answer"]["parts"]["retrieved"] == 5.0
    assert out.detail["answer"]["parts"]["typed"] == 0.0


def test_the_fit_learns_a_term_the_hand_weights_underrate() -> None:
    from evaluation.unit_weights_fit import KINDS, TERMS, TYPED, anchor, fit, weights_json

    def u(cue: float, document: float, label: int) -> dict:
        terms = [0.0] * len(TERMS)
        terms[TERMS.index("cue")], terms[TERMS.index("document")] = cue, document
        return {"terms": terms, "typed": [0.0] * len(TYPED), "label": label}

    # "why" questions: the answer is in the first document although another unit has the stronger cue
    rows = [{"kind": "why", "units": [u(1.0, 0.0, 0), u(0.6, 0.8, 1)]} for _ in range(20)]
    rows += [{"kind": "how_much", "units": [u(1.0, 0.0, 1), u(0.6, 0.3, 0)]} for _ in range(20)]
    base = anchor(["why"])
    model = TERMS.index("model")
    assert (base[KINDS.index("why"), model], base[KINDS.index("how_much"), model]) == (1, 0)

    m = fit(rows, base, lam_shared=0.001, lam_type=0.001)
    w = parse_unit_weights(weights_json(m, {"questions": 40}))

    # hand weights: the cue unit opens both; learned: the first document's unit opens "why", the cue still "how much"
    why = [unit("cue", {"cue": 1.0, "document": 0.0}), unit("doc", {"cue": 0.6, "document": 0.8}, first=1)]
    assert w.reweigh("why", why)[0].text == "doc"
    much = [unit("cue", {"cue": 1.0, "document": 0.0}), unit("doc", {"cue": 0.6, "document": 0.3}, first=1)]
    assert w.reweigh("how_much", much)[0].text == "cue"
    assert w.model_types == QUESTION_TYPES


def test_a_missing_weights_file_falls_back_to_the_hand_weights_and_says_so(monkeypatch, tmp_path: Path) -> None:
    import chatbot.stages.answer_weights as answer_weights
    from chatbot.settings import ComposeSettings
    from chatbot.stages.compose import compose_reply

    monkeypatch.setattr(answer_weights, "default_path", lambda: tmp_path / "gone.json")
    load_unit_weights.cache_clear()

    def doc(d: str) -> list:
        return TEA_DOC if d == "tea" else [WINE]

    question = "How much green tea can I drink a day?"
    cfg = ComposeSettings(answer_scorer="cues", trained_types=[], unit_weights="learned")
    out = compose_reply(question, hits(TEA_WHY, WINE), embedder=None, settings=cfg, document_segments=doc)
    hand = compose_reply(
        question, hits(TEA_WHY, WINE), embedder=None, settings=cfg.model_copy(update={"unit_weights": "hand"}),
        document_segments=doc,
    )  # fmt: skip

    assert out.text == hand.text
    assert out.text.startswith("Have no more than 4 cups of green tea a day.")
    assert out.trace["unit_weights_error"].startswith("FileNotFoundError: compose.unit_weights=learned but")
    assert "unit_weights_error" not in hand.trace
    load_unit_weights.cache_clear()
