"""Session 27 rule fixes: "my baby has a temp" is not the newborn-fever rule when the message gives the baby an age of
3 months or more (a newborn, a floppy or a breathless baby still fire); "si muove poco" is a reduced movement.
Hand-made sentences (not the sets' messages), exact expectations."""

from __future__ import annotations

import pytest

from tests.redflag_categories import categories


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My 9 month old has had a temp of 38.3 since lunch but she's playing and drinking her bottles", []),
        ("il mio bimbo di 7 mesi ha un po' di febbre, gioca e mangia, posso dargli la tachipirina?", []),
        ("My toddler has a fever and a runny nose, still bouncing off the walls", []),
        ("my baby has a fever and is so sleepy today", ["feverish_or_floppy_newborn"]),  # no age given
        ("My 2 week old has a temperature and is not feeding", ["feverish_or_floppy_newborn"]),
        ("my 6 month old has a fever and is floppy and won't wake up", ["feverish_or_floppy_newborn"]),
        ("mia figlia di 4 mesi ha la febbre e non respira bene, fa fatica", ["chest_pain_or_breathing",
                                                                           "feverish_or_floppy_newborn"]),
    ],
)  # fmt: skip
def test_a_fever_in_a_baby_of_three_months_or_more_is_not_the_newborn_rule(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sono a 36 settimane e oggi la bimba si muove poco, di solito e scatenata", ["reduced_fetal_movements"]),
        ("38 sett, il bimbo si e mosso pochissimo da ieri sera", ["reduced_fetal_movements"]),
        ("32 weeks and the baby is moving very little today", ["reduced_fetal_movements"]),
        ("sono incinta di 20 settimane e lavoro in ufficio, sto seduta tutto il giorno e mi muovo poco", []),
        ("a poco a poco il bimbo si muove di piu, a 22 settimane e normale?", []),
    ],
)  # fmt: skip
def test_a_baby_that_moves_little_is_a_reduced_movement(text: str, expected: list[str]) -> None:
    assert categories(text) == expected
