"""retrieval.own_language_counterpart with hand-made cards: a reply about to come from an English card is composed
again beside the Italian card paired with it by source link; the Italian card answers only when its sentence wins."""

from __future__ import annotations

from dataclasses import replace

from chatbot.index import Hit
from chatbot.settings import ComposeSettings
from chatbot.stages.compose import compose_reply
from chatbot.stages.counterpart import counterpart_of, topic_documents, with_counterpart
from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE
from corpus.model import Segment
from tests.segments import seg


def at(s: Segment, url: str) -> Segment:
    return replace(s, source_url=url)


NHS_FOODS = "https://www.nhs.uk/pregnancy/keeping-well/foods-to-avoid/"
CAFFEINE = at(
    seg("caffeine", "The usual advice is to have no more than 200 milligrams of caffeine a day in total.", "Caffeine"),
    NHS_FOODS,
)
CIBI = at(
    seg(
        "cibi-it",
        "Non bere alcol e limita la caffeina a circa 200 mg al giorno, più o meno due tazzine di caffè.",
        "Alimentazione in gravidanza",
        "it",
    ),
    NHS_FOODS,
)
SPICY = at(seg("spicy", "Most babies are not bothered by spicy foods in breast milk.", "Eating well"), NHS_FOODS + "x")
SONNO = seg("sonno", "Metti il bambino a dormire sulla schiena nella sua culla.", "Sonno sicuro", "it")
FEBBRE = seg("febbre", "Chiama il medico se la febbre supera 38 gradi.", "Febbre", "it")
URGENT_IT = at(seg("it-urgent", "Chiama subito il 112.", "Urgente", "it"), NHS_FOODS)


def hit(s: Segment, score: float = 0.8) -> Hit:
    return Hit(s, score, {"dense": score})


def composer(question: str):
    def compose(hits):
        return compose_reply(
            question,
            hits,
            embedder=None,
            settings=ComposeSettings(),
            language="it",
            document_segments=lambda doc_id: [],
        )

    return compose


TOPICS = topic_documents(
    [s.metadata() for s in (CAFFEINE, URGENT_IT, CIBI, CIBI, SPICY, SONNO, FEBBRE)]
    + [{"doc_id": "no-link", "language": "it"}]
)


def test_documents_are_grouped_by_topic_key_and_language() -> None:
    assert TOPICS[("nhs.uk/pregnancy/keeping-well/foods-to-avoid", "it")] == ["it-urgent", "cibi-it"]
    assert TOPICS[("nhs.uk/pregnancy/keeping-well/foods-to-avoid", "en")] == ["caffeine"]
    assert ("example.org/sonno", "it") in TOPICS
    assert all("no-link" not in docs for docs in TOPICS.values())


def test_the_counterpart_is_the_first_own_language_document_of_the_topic_that_is_not_excluded() -> None:
    assert counterpart_of(hit(CAFFEINE), "it", TOPICS, {"it-urgent"}) == "cibi-it"
    assert counterpart_of(hit(CAFFEINE), "it", TOPICS, set()) == "it-urgent"
    assert counterpart_of(hit(CIBI), "it", TOPICS, set()) is None  # already in the patient's language
    assert counterpart_of(hit(SPICY), "it", TOPICS, set()) is None  # no Italian card on that topic


def test_the_italian_card_on_the_topic_answers_the_coffee_question_and_is_linked_first() -> None:
    compose = composer("quanti caffè posso bere al giorno?")
    english = compose([hit(CAFFEINE)])
    assert english.language_note == OTHER_LANGUAGE_NOTE["it"]

    again, links, note = with_counterpart(
        compose,
        english,
        [hit(CAFFEINE), hit(SONNO), hit(FEBBRE)],
        "it",
        TOPICS,
        lambda d: [],
        [hit(CIBI, 0.7)],
        {"it-urgent"},
    )

    assert (
        again.text == "Non bere alcol e limita la caffeina a circa 200 mg al giorno, più o meno due tazzine di caffè."
    )
    assert again.language_note is None
    assert [h.segment.doc_id for h in links] == ["cibi-it", "caffeine", "sonno"]
    assert note == {"from": "caffeine", "to": "cibi-it", "joined": True}


def test_the_english_reply_stays_when_the_italian_card_does_not_answer() -> None:
    compose = composer("quanti caffè posso bere al giorno?")
    english = compose([hit(CAFFEINE)])
    unrelated = at(seg("cibi-it", "Lava bene frutta e verdura.", "Alimentazione", "it"), NHS_FOODS)
    top = [hit(CAFFEINE), hit(SONNO)]

    kept, links, note = with_counterpart(compose, english, top, "it", TOPICS, lambda d: [unrelated], (), {"it-urgent"})

    assert kept is english and [h.segment.doc_id for h in links] == ["caffeine", "sonno"]
    assert note == {"from": "caffeine", "to": "cibi-it", "joined": False}


def test_nothing_changes_for_an_italian_answer_a_topic_without_a_counterpart_or_an_unreadable_one() -> None:
    compose = composer("dove deve dormire il bambino?")
    italian = compose([hit(SONNO)])
    assert with_counterpart(compose, italian, [hit(SONNO)], "it", TOPICS, lambda d: []) == (italian, [hit(SONNO)], None)

    spicy = composer("posso mangiare piccante?")
    english = spicy([hit(SPICY)])
    assert with_counterpart(spicy, english, [hit(SPICY)], "it", TOPICS, lambda d: [])[2] is None

    coffee = composer("quanti caffè posso bere?")
    english = coffee([hit(CAFFEINE)])
    kept, _, note = with_counterpart(coffee, english, [hit(CAFFEINE)], "it", TOPICS, lambda d: [], (), {"it-urgent"})
    assert kept is english
    assert note == {"from": "caffeine", "to": "cibi-it", "joined": False, "reason": "no readable segment"}
