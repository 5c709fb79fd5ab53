"""Session 14 rule: a sign stated after a denial and a contrast ("no fever, but she's floppy", "nessuna febbre,
ma è floscia") is not framed as calm by the denial; a contrast that adds only an ordinary complaint still is.
Hand-made sentences, exact expectations (rules and the calm frames the screen's gate reads)."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_rules import sign_after_contrast, without_negated
from chatbot.stages.redflags import calm_frames
from tests.redflag_categories import categories

FLOPPY = ["feverish_or_floppy_newborn"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nessuna febbre, ma la mia bimba di 3 settimane è floscia e non si sveglia per le poppate", FLOPPY),
        ("no fever, but my 3 week old is floppy and won't wake for feeds", FLOPPY),
        ("non ha la febbre, però il neonato di 10 giorni è tutto molle e non si sveglia", FLOPPY),
        ("no pain at all but I'm bleeding heavily at 29 weeks", ["bleeding_in_pregnancy"]),
    ],
)
def test_a_sign_after_a_denial_and_a_contrast_is_not_calm(text: str, expected: list[str]) -> None:
    assert categories(text) == expected
    assert without_negated(text) != text  # something is denied...
    assert sign_after_contrast(text) is True  # ...but a sign follows the "but"
    assert "negated" not in calm_frames(text, negation=True)


@pytest.mark.parametrize(
    "text",
    [
        "non ha febbre e non è floscia, ma ha il naso chiuso da due giorni, ha 3 settimane",
        "no fever and she isn't floppy, but her nose is blocked and she sneezes a lot, 3 weeks old",
        "no bleeding, but some period-like cramps at 7 weeks, is that normal?",
        "non è svenuta, ma ha pianto tanto dopo la caduta dal divano",
    ],
)
def test_a_contrast_that_adds_an_ordinary_complaint_stays_denied(text: str) -> None:
    assert categories(text) == []
    assert sign_after_contrast(text) is False
    assert calm_frames(text, negation=True) == ("negated",)


def test_a_contrast_without_a_denial_before_it_changes_nothing() -> None:
    text = "she's 3 weeks old, feeding well, but floppy since this morning"
    assert without_negated(text) == text
    assert sign_after_contrast(text) is False  # nothing denied: no frame to undo
    assert categories(text) == FLOPPY


@pytest.mark.parametrize(
    "text",
    [
        "sono a 30 settimane e ho un bruciore di stomaco terribile, sono disperata",
        "I'm desperate, this heartburn is killing me",
        "a 12 settimane la nausea non mi lascia mai, sono disperata",
        "my lower back is killing me at 36 weeks",
    ],
)
def test_an_ordinary_complaint_told_with_worry_words_is_framed_calm(text: str) -> None:
    assert categories(text) == []
    assert calm_frames(text, negation=True) == ("worried_complaint",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sono disperata, a 30 settimane ho un dolore fortissimo alla pancia", ["severe_pain_in_pregnancy"]),
        ("I'm desperate, 35 weeks, heartburn and a bad pain under my right ribs", []),  # a danger term: PAIN
        ("heartburn every night, I'm desperate and I want to be dead", ["self_harm_or_harming_the_baby"]),
        ("la nausea non passa mai, sono disperata, vorrei essere morta", ["self_harm_or_harming_the_baby"]),
        ("I have terrible heartburn at 30 weeks", []),  # no worry words: not this frame
    ],
)
def test_a_danger_term_a_rule_or_no_worry_leaves_a_complaint_unframed(text: str, expected: list[str]) -> None:
    assert categories(text) == expected
    assert "worried_complaint" not in calm_frames(text, negation=True)


def test_mortal_is_not_dead() -> None:
    assert categories("voglio essere mortale come tutti, che ansia la gravidanza") == []
