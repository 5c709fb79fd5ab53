"""retrieval.answer_pool with hand-made cards: the best other-language candidate joins the composer's pool and
becomes the first link only when its sentence answers; otherwise the reply and the links are unchanged."""

from __future__ import annotations

from chatbot.index import Hit
from chatbot.settings import ComposeSettings
from chatbot.stages.answer_pool import compose_with_pool, pool_candidate
from chatbot.stages.compose import compose_reply
from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE
from corpus.model import Segment
from tests.segments import seg as make_seg


def seg(doc_id: str, heading: str, text: str, title: str, language: str) -> Segment:
    """tests.segments.seg in this file's argument order (heading first, as the cards read)."""
    return make_seg(doc_id, text, title=title, language=language, heading=heading)


FOLATO = seg("folato", "Quanto prenderne", "Prendi 400 microgrammi di acido folico al giorno.", "Acido folico", "it")
SONNO = seg("sonno", "Dove dorme", "Metti il bambino a dormire sulla schiena nella sua culla.", "Sonno sicuro", "it")
FEBBRE = seg("febbre", "Quando", "Chiama il medico se la febbre supera 38 gradi.", "Febbre", "it")
VITD = seg("vitd", "How much to take", "Take a daily supplement of 10 micrograms of vitamin D.", "Vitamin D", "en")
CAFFE = seg(
    "caffe-it",
    "Quanto",
    "Non superare i 200 milligrammi di caffeina al giorno. Una tazza di caffè ne contiene circa 100.",
    "Caffeina in gravidanza",
    "it",
)
ALCOL = seg("alcol-it", "Perché", "L'alcol raggiunge il bambino attraverso la placenta.", "Alcol", "it")
CAFFEINE = seg(
    "caffeine",
    "How much",
    "The usual advice is to have no more than 200 milligrams of caffeine a day in total.",
    "Caffeine in pregnancy",
    "en",
)
TEA = seg("tea", "How much", "Have no more than 4 cups of green tea a day.", "Green tea", "en")
WINE = seg("wine", "Why", "There is no known safe amount of alcohol in pregnancy.", "Alcohol", "en")


def hit(s: Segment, dense: float) -> Hit:
    return Hit(s, dense, {"dense": dense})


def composer(question: str, language: str, unit_weights: str = "hand"):
    def compose(hits):
        return compose_reply(
            question,
            hits,
            embedder=None,  # the cues scorer embeds nothing
            settings=ComposeSettings(unit_weights=unit_weights),
            language=language,
            document_segments=lambda doc_id: [],
        )

    return compose


def doc_ids(hits: list[Hit]) -> list[str]:
    return [h.segment.doc_id for h in hits]


def test_an_english_card_that_answers_an_italian_question_joins_and_is_linked_first() -> None:
    question = "Quanta vitamina D devo prendere?"
    top = [hit(FOLATO, 0.86), hit(SONNO, 0.85), hit(FEBBRE, 0.84)]
    candidates = [*top, hit(VITD, 0.83), hit(TEA, 0.80)]
    extra = pool_candidate(top, candidates, "it", {"it": 0.02})
    assert extra is not None and extra.segment.doc_id == "vitd"
    # the English card is not close enough to the third link's cosine for a smaller margin
    assert pool_candidate(top, candidates, "it", {"it": 0.005}) is None

    composed, links = compose_with_pool(composer(question, "it"), top, extra, top_n=3)

    assert composed.text == "Take a daily supplement of 10 micrograms of vitamin D."
    assert composed.language_note == OTHER_LANGUAGE_NOTE["it"]
    assert doc_ids(links) == ["vitd", "folato", "sonno"]  # the answering card first, the third link dropped
    assert composed.trace["answer_pool"] == {"doc_id": "vitd", "dense": 0.83, "joined": True}
    # without the pool the reply is the Italian folic-acid card's
    alone, links = compose_with_pool(composer(question, "it"), top, None, top_n=3)
    assert alone.text == "Prendi 400 microgrammi di acido folico al giorno."
    assert doc_ids(links) == ["folato", "sonno", "febbre"]


def test_the_italian_card_keeps_winning_the_coffee_question_and_the_links_are_unchanged() -> None:
    question = "Posso bere caffè in gravidanza?"
    top = [hit(ALCOL, 0.86), hit(FEBBRE, 0.85), hit(CAFFE, 0.846)]
    candidates = [*top, hit(CAFFEINE, 0.840), hit(WINE, 0.83)]
    extra = pool_candidate(top, candidates, "it", {"it": 0.02})
    assert extra is not None and extra.segment.doc_id == "caffeine"  # it joins the pool

    composed, links = compose_with_pool(composer(question, "it"), top, extra, top_n=3)
    alone = composer(question, "it")(top)

    assert composed.text == alone.text
    assert composed.text.startswith("Non superare i 200 milligrammi di caffeina al giorno.")
    assert composed.language_note is None
    # composed over the links alone, exactly (the English caffeine card lost the selection in the pool)
    assert [{k: a[k] for k in ("pieces", "candidates", "answer")} for a in composed.trace["attempts"]] == [
        {k: a[k] for k in ("pieces", "candidates", "answer")} for a in alone.trace["attempts"]
    ]
    assert doc_ids(links) == ["alcol-it", "febbre", "caffe-it"]  # unchanged (the answer moves first later)
    assert composed.trace["answer_pool"] == {"doc_id": "caffeine", "dense": 0.84, "joined": False}


def test_with_the_learned_weights_the_coffee_question_still_opens_with_the_limit() -> None:
    # the learned weights trust the document rank: the first card's alcohol sentence (no word of the question,
    # no cue) outscores the caffeine limit (2.04 / 1.85), and answer_first.speaks_first puts the limit first
    question = "Posso bere caffè in gravidanza?"
    top = [hit(ALCOL, 0.86), hit(FEBBRE, 0.85), hit(CAFFE, 0.846)]

    composed = composer(question, "it", unit_weights="learned")(top)

    assert composed.text.startswith("Non superare i 200 milligrammi di caffeina al giorno.")
    assert composed.trace["attempts"][0]["answer"]["doc_id"] == "caffe-it"


def test_an_english_question_and_a_one_language_corpus_take_nothing_from_the_pool() -> None:
    question = "How much caffeine can I have?"
    top = [hit(CAFFEINE, 0.9), hit(TEA, 0.85), hit(WINE, 0.8)]
    candidates = [*top, hit(CAFFE, 0.88), hit(ALCOL, 0.8)]
    # the setting names Italian questions only: an English question's candidates are not pooled
    assert pool_candidate(top, candidates, "en", {"it": 1.0}) is None
    composed, links = compose_with_pool(composer(question, "en"), top, None, top_n=3)
    assert composed.text == "The usual advice is to have no more than 200 milligrams of caffeine a day in total."
    assert doc_ids(links) == ["caffeine", "tea", "wine"]
    assert "answer_pool" not in composed.trace
    # an Italian question over Italian cards only: no other-language candidate, nothing joins
    it_top = [hit(CAFFE, 0.9), hit(ALCOL, 0.85), hit(FEBBRE, 0.8)]
    assert pool_candidate(it_top, [*it_top, hit(SONNO, 0.79)], "it", {"it": 1.0}) is None
    # no setting, or urgent cards: never pooled
    assert pool_candidate(it_top, [*it_top, hit(VITD, 0.89)], "it", {}) is None
    assert pool_candidate(it_top, [*it_top, hit(VITD, 0.89)], "it", {"it": 1.0}, urgent={"vitd"}) is None
