"""Red-flag rules, session 33: Italian "calcio" is calcium as well as a kick."""

from __future__ import annotations

import pytest

from tests.redflag_categories import categories


@pytest.mark.parametrize(
    "text",
    [
        "quanto calcio serve al giorno in gravidanza? il latte non mi piace e ho paura di non prenderne abbastanza",
        "sono incinta di 20 settimane e non bevo latte, il calcio basta con gli integratori?",
        "Sono incinta e intollerante al lattosio. Da dove prendo il calcio? Gli spinaci non bastano?",
    ],
)
def test_calcium_in_a_pregnancy_diet_question_is_not_a_kick(text: str) -> None:
    assert categories(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "sono incinta di 30 settimane e oggi non ho sentito neanche un calcio",
        "incinta 32 settimane, da ieri nessun calcio",
        "incinta di 34 settimane, il calcio del bimbo non lo sento da stamattina",
        "sono a 33 settimane e il bambino non tira più calci",
    ],
)
def test_a_kick_that_stopped_still_fires_reduced_fetal_movements(text: str) -> None:
    assert categories(text) == ["reduced_fetal_movements"]
