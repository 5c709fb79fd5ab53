"""Red-flag framing, session 37: an exposure "before I knew" of the pregnancy is a past event, not a poisoning."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_framing import framing
from chatbot.stages.redflags import calm_frames, screen


@pytest.mark.parametrize(
    "text",
    [
        "Prima di saperlo ho bevuto due bicchieri di vino a una festa.",
        "prima di sapere che ero incinta ho preso un aperitivo",
        "Non sapevo di essere incinta e sabato ho fumato qualche sigaretta.",
        "Before I knew, I had a few beers with friends.",
        "I didn't know I was pregnant when I had wine at the wedding.",
        "before i found out i was expecting i drank quite a lot at a hen party",
    ],
)
def test_an_exposure_before_the_pregnancy_was_known_is_framed_past(text: str) -> None:
    assert framing(text) == ("past",)


def test_the_phrases_need_their_words_in_order() -> None:
    assert framing("Ho bevuto un bicchiere di vino ieri sera, devo saperlo prima?") == ()


def test_a_present_danger_after_before_i_knew_is_not_framed_and_still_fires() -> None:
    overdose = (
        "Before I knew I was pregnant I took a whole box of paracetamol this morning and now I am vomiting and very "
        "drowsy"
    )
    assert calm_frames(overdose) == ()
    assert screen(overdose).actions == ("poisoning",)
    collapse = "Prima di saperlo ho preso tante pastiglie, adesso mia moglie non risponde e respira male"
    assert calm_frames(collapse) == ()
    assert screen(collapse).actions == ("emergency",)


def test_wine_drunk_before_knowing_gets_no_poisons_banner() -> None:
    worried = (
        "Ho fatto il test oggi: sono incinta di sei settimane. Prima di saperlo sabato sera avevo bevuto tre "
        "bicchieri di vino a una cena. Rischio qualcosa per il bambino?"
    )
    result = screen(worried)
    assert result.urgent is False
    assert result.actions == ()
