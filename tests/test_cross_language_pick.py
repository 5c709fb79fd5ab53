"""The cross-language pick (chatbot.stages.cross_language_pick) with hand-made vectors."""

import numpy as np

from chatbot.stages.cross_language_pick import Document, names_topic, other_language_pick


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
