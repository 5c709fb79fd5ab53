"""The cross-language pick (chatbot.stages.cross_language_pick) with hand-made vectors."""

import numpy as np

from chatbot.stages.cross_language_pick import (
    Document,
    about_excluded,
    names_topic,
    other_language_pick,
    term_variants,
)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


Q = unit(1, 0, 0)
SLEEP_IT = Document(
    "it-sonno", "it", "Sonno sicuro", np.stack([unit(0.6, 0.8, 0), unit(0, 1, 0)]), "Sonno sicuro\nculla"
)
BACK_EN = Document("en-back", "en", "Back pain in pregnancy", np.stack([unit(0.9, 0, 0.436)]), "Back pain\nexercise")
SLEEP_EN = Document("en-sleep", "en", "Safe sleep", np.stack([unit(0.7, 0.71, 0), unit(0, 1, 0.05)]), "cot")


def test_english_card_that_beats_the_links_is_picked() -> None:
    doc, trace = other_language_pick("mal di schiena in gravidanza", "it", Q, [SLEEP_IT], [BACK_EN])
    assert doc == "en-back"
    assert trace["margin"] == round(0.9 - 0.6, 4) and trace["named"] == "no"


def test_margin_not_met_keeps_the_italian_links() -> None:
    doc, trace = other_language_pick("mal di schiena", "it", Q, [SLEEP_IT], [BACK_EN], margin=0.31)
    assert doc is None and trace["doc_id"] == "en-back"


def test_twin_of_a_link_keeps_the_italian_card() -> None:
    doc, trace = other_language_pick("sonno del neonato", "it", Q, [SLEEP_IT], [SLEEP_EN], margin=0.0)
    assert trace["doc_id"] == "en-sleep" and trace["twin"] > 0.82
    assert doc is None


def test_italian_link_naming_the_topic_keeps_priority() -> None:
    food_it = Document("it-cibo", "it", "Alimentazione", np.stack([unit(0.5, 0.866, 0)]), "Il caffè: al massimo 200 mg")
    coffee_en = Document("en-caffeine", "en", "Caffeine limits", np.stack([unit(1, 0, 0)]), "200 milligrams")
    assert names_topic("posso bere caffè?", "Caffeine limits", food_it.text) is True  # "caffe", accents folded
    assert names_topic("mal di schiena", "Back pain in pregnancy", SLEEP_IT.text) is False
    doc, trace = other_language_pick("posso bere caffè?", "it", Q, [food_it], [coffee_en])
    assert trace["named"] == "yes" and doc is None


def test_no_link_in_the_question_language_no_pick() -> None:
    assert other_language_pick("back pain", "en", Q, [SLEEP_IT], [BACK_EN]) == (None, {})
    assert other_language_pick("mal di schiena", "it", Q, [SLEEP_IT], []) == (None, {})


def test_an_english_link_can_move_first() -> None:
    doc, _ = other_language_pick("mal di schiena", "it", Q, [SLEEP_IT, BACK_EN], [])
    assert doc == "en-back"


# An exclusion question ("nausea in gravidanza oltre allo zenzero"): its best English candidate is the ginger card.
GINGER_EN = Document(
    "en-ginger",
    "en",
    "Ginger for nausea",
    np.stack([unit(0.95, 0, 0.312), unit(0.2, 0, -0.98)]),
    "Ginger for nausea\n...",
    (("Ginger", "Ginger may ease nausea. Take it with food."), ("Safety", "Ask your midwife first.")),
)
NAUSEA_EN = Document(
    "en-nausea",
    "en",
    "Morning sickness",
    np.stack([unit(0.85, 0.527, 0)]),
    "Morning sickness\n...",
    (("Remedies", "Eat small meals often. Rest, drink water, and try ginger, peppermint or dry crackers."),),
)
QUESTION = "Cosa aiuta la nausea in gravidanza oltre allo zenzero?"


def test_without_exclusion_the_best_english_card_is_picked() -> None:
    doc, trace = other_language_pick(QUESTION, "it", Q, [SLEEP_IT], [GINGER_EN, NAUSEA_EN])
    assert doc == "en-ginger" and "excluded" not in trace


def test_an_english_card_about_the_excluded_topic_is_not_picked() -> None:
    # "zenzero" is the excluded term; the ginger card's title names "ginger" (EN/IT synonyms): left out, and the
    # nausea card, which only lists ginger among the remedies, is picked instead
    doc, trace = other_language_pick(QUESTION, "it", Q, [SLEEP_IT], [GINGER_EN, NAUSEA_EN], excluded=("zenzero",))
    assert doc == "en-nausea"
    assert trace["excluded"] == {"en-ginger": "zenzero"} and trace["doc_id"] == "en-nausea"
    doc, trace = other_language_pick(QUESTION, "it", Q, [SLEEP_IT], [GINGER_EN], excluded=("zenzero",))
    assert (doc, trace) == (None, {"excluded": {"en-ginger": "zenzero"}})


def test_aboutness_reads_the_best_segment() -> None:
    untitled = Document("en-x", "en", "Remedies", GINGER_EN.vectors, "", GINGER_EN.segments)
    assert about_excluded(untitled, Q, ("zenzero",)) == "zenzero"  # best segment's heading is "Ginger"
    assert about_excluded(untitled, unit(0, 0, -1), ("zenzero",)) is None  # best segment: "Safety"
    assert about_excluded(NAUSEA_EN, Q, ("zenzero",)) is None  # ginger only listed among remedies
    assert about_excluded(GINGER_EN, Q, ()) is None


def test_the_pick_reads_the_detectors_not_terms() -> None:
    from chatbot.logical.detect import analyse

    found = analyse(QUESTION)
    assert found is not None and found.negatives == ("zenzero",)


# Session 14: an Italian NOT term must find the English card about it (cards' topic words EN <-> IT, lists, a leading
# verb, a complement), while a card that only lists the term among others stays eligible.
def _card(doc_id: str, title: str, heading: str, text: str) -> Document:
    return Document(doc_id, "en", title, np.stack([unit(1, 0, 0)]), f"{title}\n{text}", ((heading, text),))


ANAEMIA_EN = _card("en-anaemia", "Iron and anaemia in pregnancy", "Signs", "You may feel tired and short of breath.")
KICKS_EN = _card("en-kicks", "Your baby's movements", "When to call", "Call the unit if the pattern changes.")
FISH_EN = _card("en-fish", "Omega-3 from fish", "How much", "Two portions a week, one of them oily.")
FEED_EN = _card("en-feed", "Breastfeeding: a good latch", "Positions", "Hold your baby close, nose to nipple.")
TIRED_EN = _card("en-tired", "Tiredness", "Causes", "Common causes are hormones, poor sleep, anaemia, or stress.")


def test_italian_not_terms_find_the_english_card_about_them() -> None:
    assert about_excluded(ANAEMIA_EN, Q, ("l'anemia",)) == "l'anemia"
    assert about_excluded(KICKS_EN, Q, ("contando i movimenti",)) == "contando i movimenti"
    assert about_excluded(FISH_EN, Q, ("il pesce e l'olio di fegato di merluzzo",)) == (
        "il pesce e l'olio di fegato di merluzzo"
    )
    assert about_excluded(FEED_EN, Q, ("allattare al seno",)) == "allattare al seno"
    # a card that only lists anaemia among causes is not about it; other topics are not caught
    assert about_excluded(TIRED_EN, Q, ("l'anemia",)) is None
    assert about_excluded(ANAEMIA_EN, Q, ("la nausea", "il fumo")) is None
    assert term_variants("allattare al seno") == ["allattare al seno", "allattare"]
    assert term_variants("contando i movimenti") == ["contando i movimenti", "i movimenti"]


def test_the_pick_skips_the_excluded_english_card_for_the_next_one() -> None:
    doc, trace = other_language_pick(
        "stanca, oltre all'anemia", "it", Q, [SLEEP_IT], [ANAEMIA_EN, TIRED_EN], excluded=("l'anemia",)
    )
    assert trace["excluded"] == {"en-anaemia": "l'anemia"}
    assert doc == "en-tired"
