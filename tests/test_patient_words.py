"""chatbot.patient_words with hand-made lists and with the shipped ones, and retrieval.patient_words' expansion of
English and Italian questions, each with its own language's list (chatbot.patient_words.with_card_words)."""

from __future__ import annotations

import chatbot.patient_words
from chatbot.patient_words import PatientWords, load_patient_words
from chatbot.settings import Settings

TINY = PatientWords.from_pairs(
    [
        ("jab", "vaccinations"),
        ("prosecco", "alcohol"),
        ("glass of wine", "alcohol drink"),
        ("wine", "alcohol"),
        ("cot death", "sids"),
    ]
)


def test_the_longest_phrase_is_expanded_and_each_card_word_added_once() -> None:
    out = TINY.expand("is one glass of wine ok? and prosecco?")
    assert out.text == "is one glass of wine ok? and prosecco? alcohol drink"
    assert out.matched == (("glass of wine", "alcohol drink"), ("prosecco", "alcohol"))


def test_a_plural_finds_its_singular_and_words_the_question_has_are_not_added() -> None:
    assert TINY.expand("When are the first JABS?").text == "When are the first JABS? vaccinations"
    assert TINY.expand("wine or alcohol").text == "wine or alcohol"
    assert TINY.expand("wine or alcohol").matched == (("wine", "alcohol"),)
    assert TINY.expand("how long does labour last").matched == ()


def test_the_shipped_list_reads_and_maps_patient_words_to_card_words() -> None:
    words = load_patient_words()
    assert len(words.entries) > 300
    assert words.expand("when does my baby get her first jabs").text.endswith("jabs vaccines")


TINY_IT = PatientWords.from_pairs([("pipi", "urine"), ("papa", "padri"), ("mi viene da rimettere", "vomito")])


def test_with_card_words_reads_each_language_with_its_own_list(monkeypatch) -> None:
    from chatbot.patient_words import with_card_words

    lists = {"en": TINY, "it": TINY_IT}
    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None, language="en": lists[language])
    assert with_card_words("first jabs?", "en") == ("first jabs? vaccinations", {"matched": [["jabs", "vaccinations"]]})
    assert with_card_words("how long does labour last?", "en") == ("how long does labour last?", None)
    assert with_card_words("Anche il papà?", "it") == ("Anche il papà? padri", {"matched": [["papa", "padri"]]})
    assert with_card_words("mi viene da rimettere, la pipì è scura", "it") == (
        "mi viene da rimettere, la pipì è scura vomito urine",
        {"matched": [["mi viene da rimettere", "vomito"], ["pipi", "urine"]]},
    )
    assert with_card_words("un bicchiere di vino?", "it") == ("un bicchiere di vino?", None)  # "vino": no Italian entry
    assert with_card_words("first jabs?", "fr") == ("first jabs?", None)  # no list for that language


def test_the_shipped_italian_list_maps_to_italian_card_words() -> None:
    words = load_patient_words(language="it")
    assert len(words.entries) > 300
    assert words.expand("la depressione può venire anche al papà?").text.endswith("papà? padri")
    assert words.expand("sono toxo negativa, posso mangiare il salame?").matched == (("toxo negativa", "toxoplasmosi"),)


def test_with_card_words_and_a_broken_list_keep_the_question_and_say_why(monkeypatch, tmp_path) -> None:
    from chatbot.patient_words import with_card_words

    (tmp_path / "bad.tsv").write_text("jabs\n", encoding="utf-8")
    read = load_patient_words.__wrapped__
    monkeypatch.setattr(
        chatbot.patient_words, "load_patient_words", lambda folder=None, language="en": read(str(tmp_path))
    )
    text, trace = with_card_words("first jabs?", "en")
    assert text == "first jabs?"
    assert trace["error"].endswith("bad.tsv:1: expected 'patient words<TAB>card words', got 'jabs'")


def test_the_setting_is_on_by_default() -> None:
    assert Settings().retrieval.patient_words is True
