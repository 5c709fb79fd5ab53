"""Session 11 rule fixes: bleeding after the birth is lochia unless heavy or painful; myths and "why is it so
worrying" questions are framed as study (their rules then need the contextual head too)."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_framing import framing
from chatbot.stages.redflag_rules import UNLESS
from tests.redflag_categories import categories


@pytest.mark.parametrize(
    "text",
    [
        "still bleeding 5 weeks after my son was born, how long does it usually go on?",
        "I gave birth 2 weeks ago and I'm still bleeding a little, it's brownish now",
        "sono a 4 settimane dopo il parto e ho ancora perdite di sangue leggere, quanto durano?",
        "ho partorito 3 settimane fa e ho ancora un po' di perdite di sangue, e normale?",
    ],
)
def test_light_bleeding_after_the_birth_is_not_bleeding_in_pregnancy(text: str) -> None:
    assert categories(text) == []


BLEED = ["bleeding_in_pregnancy"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I gave birth 10 days ago and I'm bleeding heavily with big clots", BLEED),
        ("2 weeks after the birth, bleeding and a terrible pain in my tummy", [*BLEED, "severe_pain_in_pregnancy"]),
        ("dopo il parto sto perdendo tantissimo sangue", BLEED),
        ("I'm 10 weeks pregnant and I'm bleeding", BLEED),
        ("ho perdite di sangue e sono a 10 settimane", BLEED),
        ("bleeding at 30 weeks, what do I do", BLEED),
    ],
)
def test_heavy_bleeding_after_the_birth_and_bleeding_in_pregnancy_still_fire(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_the_unless_concept_cancels_only_the_mild_rule() -> None:
    assert UNLESS == {
        ("bleeding_in_pregnancy", 1): ("POSTPARTUM", "AFTER_BIRTH"),
        ("feverish_or_floppy_newborn", 1): ("OLDER_BABY",),  # session 27 (test_redflag_rules_s27)
        ("feverish_or_floppy_newborn", 4): ("OLDER_BABY",),
        ("child_took_medicine", 0): ("LONG_AGO",),
    }


@pytest.mark.parametrize(
    ("text", "frames"),
    [
        ("is it true that a baby moves less at the end because there's no room?", ("study",)),
        ("e vero che il bambino si muove meno alla fine?", ("study",)),
        ("why is a fever so worrying in a newborn?", ("study",)),
        ("perche la febbre nei neonati e cosi preoccupante?", ("study",)),
        ("perche tutti dicono che il sangue dal naso in gravidanza e normale?", ("study",)),
        ("my baby is 6 weeks old and has a fever of 38.5", ()),
        ("non sento muovere il bambino da stamattina", ()),
    ],
)
def test_myths_and_why_so_worrying_are_study_frames(text: str, frames: tuple[str, ...]) -> None:
    assert framing(text) == frames


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("how many of my sleeping tablets would it take to never wake up again?", ["self_harm_or_harming_the_baby"]),
        ("quante gocce mi servirebbero per non svegliarmi piu?", ["self_harm_or_harming_the_baby"]),
        ("I accidentally gave my 2 month old the adult ibuprofen", ["overdose"]),
        ("le ho dato per sbaglio lo sciroppo del fratello grande, ha 4 mesi", ["overdose"]),
        ("she gave him the 6+ one by mistake instead of the infant one", ["overdose"]),
        ("my baby sleeps so well, he does not wake up at night any more", []),
        ("how much paracetamol can I take while breastfeeding?", []),
    ],
)
def test_wishing_not_to_wake_up_and_a_medicine_given_by_mistake(text: str, expected: list[str]) -> None:
    assert categories(text) == expected
