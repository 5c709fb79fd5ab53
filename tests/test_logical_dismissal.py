"""The exclusion detector's learned fallback (chatbot.logical.dismissal): clause splitting, the NOT term read from
a dismissing clause, the guards around a hand-built model, save/load, and the shipped model on our own sentences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chatbot.hashed_ngrams import features
from chatbot.logical.detect import analyse
from chatbot.logical.dismissal import (
    DISMISSAL_CUE,
    DismissalModel,
    clauses,
    dismissed_term,
    find_dismissals,
    shipped_model_of,
    text_language,
)
from chatbot.training.binary_head import choose_bar
from chatbot.training.dismissal import templated

N = 1 << 12


def _model(words: dict[str, float], threshold: float = 0.5, bias: float = -4.0) -> DismissalModel:
    """A model whose score rises with the word unigrams in ``words`` (their hashed features get the weight)."""
    w = np.zeros(N, dtype=np.float32)
    for word, weight in words.items():
        idx, val = features(word, N)
        w[idx] += weight * np.sign(val)
    return DismissalModel(w, bias, threshold, N)


def test_clauses_split_at_punctuation_and_spaced_dashes() -> None:
    text = "formula's not for us, we're fine. what now? x - y"
    assert [text[a:b] for a, b in clauses(text)] == ["formula's not for us", " we're fine", " what now", " x", "y"]


@pytest.mark.parametrize(
    ("clause", "term"),
    [
        ("I'm not after calcium or vitamin D advice", "calcium or vitamin D"),
        ("formula's not for us", "formula"),
        ("della nausea so già tutto", "nausea"),
        ("Smoking isn't the issue", "Smoking"),
        ("non rispiegarmeli", ""),
    ],
)
def test_dismissed_term_is_the_longest_run_of_topic_words(clause: str, term: str) -> None:
    assert dismissed_term(clause) == term


def test_a_clause_at_or_above_the_bar_is_found_with_its_topic() -> None:
    model = _model({"sorted": 10.0})
    found = find_dismissals("the car seat is sorted, how warm should the nursery be?", model)
    assert [(d.start, d.end, d.term) for d in found] == [(0, 22, "car seat")]
    assert found[0].score > 0.99


@pytest.mark.parametrize(
    "text",
    [
        "the car seat is sorted",  # one clause: nothing else would be asked
        "is the car seat sorted? how warm should the nursery be",  # the clause asks
    ],
)
def test_a_single_clause_or_an_asking_clause_is_never_cut(text: str) -> None:
    assert find_dismissals(text, _model({"sorted": 10.0})) == []


@pytest.mark.parametrize(
    "text",
    [
        "non ho fatto la toxoplasmosi, posso mangiare il crudo?",  # something not done matters
        "im not breastfeeding, when will my period come back?",  # a negated state of the patient
        "the car seat is comfy, how warm should the nursery be?",  # no negation nor word of dismissal
        "mia suocera dice di dargli già la camomilla, è vero?",  # what someone else says
        "one feed isn't enough, how often should a newborn feed?",  # more of the same is wanted
    ],
)
def test_facts_about_the_patient_and_unmarked_clauses_are_never_dismissals(text: str) -> None:
    model = _model({"toxoplasmosi": 10.0, "breastfeeding": 10.0, "comfy": 10.0, "camomilla": 10.0, "feed": 10.0})
    assert find_dismissals(text, model) == []


def test_a_long_case_history_is_left_to_the_rules() -> None:
    model = _model({"sorted": 10.0})
    text = "the car seat is sorted, " + "word " * 80 + "what now?"
    assert find_dismissals(text, model) == []


def test_save_and_load_keep_the_scores(tmp_path: Path) -> None:
    model = _model({"sorted": 3.0, "covered": -2.0}, threshold=0.6)
    model.save(tmp_path / "m", {"command": "test"})
    loaded = DismissalModel.load(tmp_path / "m")
    assert loaded.threshold == 0.6 and loaded.n_features == N
    for clause in ("it is sorted", "all covered", "nothing here"):
        assert loaded.score(clause) == pytest.approx(model.score(clause), abs=0.01)


def test_text_language() -> None:
    assert text_language("la stanchezza non c'entra, quando si fa il vaccino?") == "it"
    assert text_language("tiredness is not the point, when is the jab?") == "en"


def test_choose_bar_keeps_the_false_rate() -> None:
    p = np.array([0.9, 0.8, 0.7, 0.95, 0.6, 0.2, 0.1])
    y = np.array([True, True, True, False, False, False, False])
    assert choose_bar(p, y, 0.0) == pytest.approx(0.95 + 1e-6)
    assert choose_bar(p, y, 0.25) == pytest.approx(0.6 + 1e-6)


def test_templates_expand_to_both_classes_in_both_languages() -> None:
    rows = templated()
    sources = {(src, label) for _, label, src in rows}
    assert sources == {("templates-en", True), ("templates-en", False), ("templates-it", True), ("templates-it", False)}
    assert ("I already know about folic acid", True, "templates-en") in rows
    assert ("non ho febbre", False, "templates-it") in rows


# -- the shipped model, on our own sentences -----------------------------------------------------------------

SHIPPED_ROUTES = [
    ("lo svezzamento non c'entra, quante ore dorme un neonato?", "quante ore dorme un neonato", ("svezzamento",), "it"),
    ("I'm not after sleep advice, when do babies start teething?", "when do babies start teething", ("sleep",), "en"),
]
SHIPPED_UNROUTED = [
    "Im 20 weeks, no bleeding, is it normal to feel dizzy?",
    "non ho fatto la rosolia, posso stare vicino a un bambino malato?",
    "im not breastfeeding, when will my period come back?",
    "not sure, how many wet nappies should a newborn have?",
]


def test_the_rules_alone_leave_a_dismissal_to_the_model() -> None:
    question = "lo svezzamento non c'entra, quante ore dorme un neonato?"
    assert analyse(question, learned=False) is None
    assert analyse(question) is not None


def test_the_logical_pipeline_honours_the_setting_too() -> None:
    """A caller naming the logical pipeline (``chatbot ask --pipeline logical``) gets the router's detector."""
    from types import SimpleNamespace

    from chatbot.logical.config import config_for
    from chatbot.logical.pipeline import build_query
    from chatbot.settings import Settings

    question = "lo svezzamento non c'entra, quante ore dorme un neonato?"
    for learned, negatives in ((True, ("svezzamento",)), (False, None)):
        settings = Settings(retrieval={"learned_exclusions": learned}, logical={"query_source": "detector"})
        detection, _, info = build_query(question, SimpleNamespace(settings=settings), config_for(settings))
        assert (detection.negatives if detection else None, info["source"]) == (
            negatives,
            "detector" if learned else "none",
        )


def test_chatbot_models_lists_the_dismissal_model() -> None:
    from chatbot.models_cli import list_models

    rows = [r for r in list_models() if r["path"].endswith("models/dismissal")]
    assert len(rows) == 1
    assert rows[0]["weights"] == "weights.npz" and len(rows[0]["sha256"]) == 64
    assert "retrieval.learned_exclusions=True" in rows[0]["name"]


def test_the_model_ships() -> None:
    model = shipped_model_of()
    assert model is not None, (
        "models/dismissal is missing: python -m chatbot.training.dismissal --ship models/dismissal"
    )
    assert 0.5 < model.threshold < 1.0


@pytest.mark.parametrize(("question", "positive", "negatives", "language"), SHIPPED_ROUTES)
def test_shipped_model_routes_dismissals_the_rules_miss(
    question: str, positive: str, negatives: tuple[str, ...], language: str
) -> None:
    found = analyse(question)
    assert found is not None
    assert (found.positive, found.negatives, found.cues, found.language) == (
        positive,
        negatives,
        (DISMISSAL_CUE,),
        language,
    )


@pytest.mark.parametrize("question", SHIPPED_UNROUTED)
def test_shipped_model_leaves_negated_symptoms_and_states_alone(question: str) -> None:
    assert analyse(question) is None
