"""The Italian → English gloss (chatbot.gloss) on a hand-made glossary, and the shipped glossary's shape."""

from __future__ import annotations

import pytest

from chatbot.gloss import Glossary, load_glossary, read_pairs, stem, words

TINY = Glossary.from_pairs(
    [
        ("cordone ombelicale", "umbilical cord"),
        ("cordone", "cord"),
        ("moncone", "stump"),
        ("cadere", "fall off"),
        ("cade", "falls off"),
        ("dopo quanto", "how long after"),
        ("ecografia", "scan / ultrasound"),
        ("morfologica", "anomaly"),
        ("settimana", "week"),
        ("sera", "evening"),
        ("e", "and"),
        ("ciuccio", "dummy / pacifier"),
        ("ciuccio", "soother"),  # a second gloss of the same entry is ignored: the first wins
    ]
)


def test_words_fold_accents_and_split_elided_articles() -> None:
    assert words("Dell'ecografìa: 20ª settimana, 1,5 kg!") == ["dell", "ecografia", "20", "a", "settimana", "1,5", "kg"]


def test_stem_strips_final_vowels_but_keeps_four_letters() -> None:
    assert stem("ecografie") == "ecograf"
    assert stem("ecografia") == "ecograf"
    assert stem("morfologiche") == stem("morfologica") == "morfologic"
    assert stem("cade") == "cade"  # "cad" would be too short to tell words apart


def test_the_longest_phrase_wins_and_articles_vanish() -> None:
    g = TINY.gloss("Dopo quanto cade il moncone del cordone ombelicale?")
    assert g.text == "how long after falls off stump umbilical cord"
    assert (g.glossed, g.content) == (6, 6)
    assert g.coverage == 1.0


def test_plurals_are_found_by_their_stem_and_both_english_words_are_kept() -> None:
    assert TINY.gloss("le ecografie morfologiche").text == "scan ultrasound anomaly"
    assert TINY.gloss("il ciuccio").text == "dummy pacifier"


def test_a_short_word_is_found_with_another_final_vowel() -> None:
    assert TINY.gloss("tutte le sere").text == "tutte evening"  # "ser" would be too short a stem


def test_unknown_words_stay_italian_and_lower_the_coverage() -> None:
    g = TINY.gloss("quanto costa una ecografia alla 20 settimana")
    assert g.text == "quanto costa scan ultrasound 20 week"
    assert (g.glossed, g.content) == (3, 5)
    assert g.coverage == pytest.approx(0.6)


def test_a_function_word_is_dropped_even_when_the_glossary_names_it() -> None:
    g = TINY.gloss("moncone e cordone")
    assert g.text == "stump cord"
    assert (g.glossed, g.content) == (2, 2)


def test_an_empty_or_function_word_question_has_no_coverage() -> None:
    assert TINY.gloss("").coverage == 0.0
    assert TINY.gloss("il della").text == ""


def test_malformed_glossary_lines_are_named() -> None:
    assert read_pairs(["# note", "", "latte artificiale\tformula milk"]) == [("latte artificiale", "formula milk")]
    with pytest.raises(ValueError, match=r"baby.tsv:2: expected 'italian<TAB>english'"):
        read_pairs(["moncone\tstump", "ciuccio dummy"], "baby.tsv")


def test_the_shipped_glossary_reads_the_cord_stump_question() -> None:
    g = load_glossary().gloss("dopo quanto cade il moncone del cordone ombelicale?")
    assert "umbilical cord" in g.text and "stump" in g.text
    assert g.coverage == 1.0


def test_gloss_readings_give_english_sentences_the_question_and_its_gloss() -> None:
    from chatbot.gloss import gloss_readings

    readings, trace = gloss_readings("quanta acqua deve bere il bambino?", "it")
    assert readings == {"en": "quanta acqua deve bere il bambino? how much water should must drink baby child"}
    assert trace == {"text": "how much water should must drink baby child", "coverage": 1.0}
    assert gloss_readings("how much water should my baby drink?", "en") == (None, None)


def test_gloss_readings_with_a_broken_glossary_leave_the_question_and_say_why(monkeypatch, tmp_path) -> None:
    import chatbot.gloss

    (tmp_path / "bad.tsv").write_text("acqua water\n", encoding="utf-8")
    read = chatbot.gloss.load_glossary.__wrapped__
    monkeypatch.setattr(chatbot.gloss, "load_glossary", lambda folder=None: read(str(tmp_path)))
    readings, trace = chatbot.gloss.gloss_readings("quanta acqua?", "it")
    assert readings is None
    assert trace == {"error": f"{tmp_path / 'bad.tsv'}:1: expected 'italian<TAB>english', got 'acqua water'"}
