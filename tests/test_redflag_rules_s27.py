"""Session 27 rules: "my baby has a temp" (or "not feeding") is not the newborn rule when the message gives the baby an
age of 3 months or more (a newborn, a floppy or a breathless baby still fire); "si muove poco" is a reduced movement;
"tagliarli" is no typo of "tagliarmi"; two firm poisoning rules, a button battery or magnets gone near a small child and
a child who ate an amount of medicine. Hand-made sentences (not the sets' messages), exact expectations."""

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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my toddler had the car key fob and now the button battery is missing, he seems totally fine",
         ["battery_or_magnet_missing"]),
        ("la bimba di 16 mesi giocava col telecomando, ora manca una pila piatta, nn la troviamo. sta benissimo",
         ["battery_or_magnet_missing"]),
        ("mio figlio di 2 anni giocava con le calamite del frigo e ne mancano due", ["battery_or_magnet_missing"]),
        ("two magnets from the building set are missing and my 2 year old was playing with it",
         ["battery_or_magnet_missing"]),
        ("how do i keep button batteries away from my toddler?", []),
        ("the button battery in the kitchen scale ran out, can i recycle it? my son wants to help", []),
        ("I counted the magnets and none are missing, my daughter is fine", []),
        ("I'm 32 years old and my watch battery is missing lol", []),  # no child
        ("the small round battery from the kitchen scales has gone, cant find it. my 18mo was right there",
         ["battery_or_magnet_missing"]),
        ("manca la pila, quella piccola tonda piatta, e mio figlio di 2 anni ci giocava",
         ["battery_or_magnet_missing"]),
        ("my 2 year old's toy has flat round batteries, they ran out, which ones do i buy?", []),
    ],
)  # fmt: skip
def test_a_button_battery_or_magnets_gone_with_a_small_child_is_a_poisoning(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_the_missing_battery_and_child_medicine_rules_are_firm_and_call_for_the_poisoning_card() -> None:
    from chatbot.stages.redflag_rules import FIRM
    from chatbot.stages.redflags import CATEGORY_ACTION

    for category in ("battery_or_magnet_missing", "child_took_medicine"):
        assert category in FIRM
        assert CATEGORY_ACTION[category] == "poisoning"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("il mio bimbo ha 11 mesi e non mangia niente di quello che cucino, sputa tutto", []),
        ("my 8 month old is refusing to feed from the spoon, only wants milk", []),
        ("my 2 week old is not feeding and so sleepy", ["feverish_or_floppy_newborn"]),
        ("il bimbo non mangia da stamattina, ha 10 giorni", ["feverish_or_floppy_newborn"]),
        ("my 6 month old is floppy and not feeding", ["feverish_or_floppy_newborn"]),  # floppy: any age
    ],
)  # fmt: skip
def test_not_feeding_is_the_newborn_rule_only_below_three_months(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_cutting_someones_hair_is_not_self_harm() -> None:
    assert categories("Ha i capelli lunghissimi e non vuole tagliarli. Come prevengo i pidocchi?") == []
    assert categories("la frangia e troppo lunga, posso tagliarla io a casa?") == []
    assert categories("ho pensato di tagliarmi di nuovo") == ["self_harm_or_harming_the_baby"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("il mio bimbo 2 anni e mezzo ha mangiato 8 o 10 delle mie compresse di ferro, sta bene e gioca",
         ["child_took_medicine"]),
        ("my toddler ate some of his grandad's heart pills, he seems fine", ["child_took_medicine"]),
        ("mio figlio ha mangiato delle pastiglie della nonna, sembra stare bene", ["child_took_medicine"]),
        ("my 3 year old ate his vitamin gummy this morning, can he have another tonight?", []),
        ("last year my son ate some of my iron tablets, the hospital checked him and he was fine", []),
        ("I swallowed some of my iron tablets with orange juice, is that right?", []),  # no child
    ],
)  # fmt: skip
def test_a_child_who_ate_an_amount_of_medicine_is_a_poisoning(text: str, expected: list[str]) -> None:
    assert [c for c in categories(text) if c != "overdose"] == expected
