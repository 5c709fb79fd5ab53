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
