"""Exclusion questions on the patient's path over the bundled cards, with the shipped models and default
settings (issue 19): answered with 3 links, the right card first and the reply from it, never from a sentence
that names the excluded thing; the trace shows the decomposition, the per-term scores of the linked passages
and which sentence triggered a NOT. English and Italian."""

from __future__ import annotations

import pytest

from chatbot.sentences import split_sentences
from chatbot.settings import Settings
from chatbot.stages.route import route
from tests.test_relevance_gate_models import e5_cache  # noqa: F401  (module fixture: the e5 ONNX build)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def services(e5_cache, tmp_path_factory):  # noqa: F811
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from chatbot.resources import demo_cards
    from chatbot.settings import Settings

    mp = pytest.MonkeyPatch()
    mp.setenv("CERTIFIED_CHATBOT_CACHE", str(e5_cache))
    settings = Settings(paths={"data_dir": tmp_path_factory.mktemp("exclusion-data")}, embedding={"model": "e5-onnx"})
    s = Services(settings)
    assert s.cross_encoder is not None, "the shipped cross-encoder (models/reranker) did not load"
    ingest_paths([demo_cards()], s, quiet=True)
    yield s
    mp.undo()


@pytest.fixture(scope="module")
def pipeline_services(services):
    """The same index, with the positive part ranked by retrieval.pipeline (logical.positive_source=pipeline)."""
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    settings = Settings(
        paths={"data_dir": services.settings.paths.data_dir},
        embedding={"model": "e5-onnx"},
        logical={"positive_source": "pipeline"},
    )
    return Services(settings)


# Both cards answer it: the iron card's list of sources and the vegetarian card's iron bullet (pulses, greens,
# fortified cereals: iron without meat). Ranked as any question (logical.positive_source=pipeline) the two are a
# near tie in the rank fusion (0.0315 vs 0.0313) whose order differs between CPUs (AVX2-only vs AVX-512 int8 kernels).
IRON_EN = (
    "Which foods are high in iron apart from red meat?",
    {"en-preg-iron-anaemia", "en-nutr-vegetarian-vegan-pregnancy"},
    "red meat",
)
# session 14: the cross-language pick also runs on the logical route, and links the English iron card (its list of
# sources names red meat among others: not about it) first, under the "only in English" note; the Italian
# tiredness card, which names iron-rich foods, was the answer before
IRON_IT = (
    "Quali alimenti sono ricchi di ferro a parte la carne rossa?",
    {"it-stanchezza-gravidanza", "en-preg-iron-anaemia"},
    "carne rossa",
)
NAUSEA = [
    ("What helps with nausea in pregnancy other than ginger?", {"en-preg-morning-sickness"}, "ginger"),
    ("Cosa aiuta la nausea in gravidanza oltre allo zenzero?", {"it-nausea-vomito-gravidanza"}, "zenzero"),
]


@pytest.mark.parametrize(
    ("question", "good", "excluded_word"),
    # Italian: rerank.language_models={"it": "none"} keeps the composed term order, which puts the right card
    # first (with the fusion reranker it was a known miss too: evaluation/results/rerank-italian-s8.md)
    # English iron: the iron card lists red meat among its sources ("include lean red meat, beans, lentils ..."); a
    # listed mention counts half for an "apart from" question (logical.not_listed_discount, aboutness.py), so it is
    # first although its 'red meat' cosine (0.167) is above the calcium card's (0.138); it was a strict xfail.
    [IRON_EN, IRON_IT, *NAUSEA],
)
def test_an_exclusion_question_gets_the_right_card_first_and_a_reply_without_the_excluded_thing(
    services, question, good, excluded_word
):
    check(services, question, good, excluded_word)


# The Italian iron question was a known miss here (e5's order puts the general nutrition card first); since
# session 14 the cross-language pick runs on the logical route too and links the English iron card first.
@pytest.mark.parametrize(("question", "good", "excluded_word"), [IRON_IT, *NAUSEA])
def test_ranking_the_positive_part_as_any_question_gets_the_right_card_first(
    pipeline_services, question, good, excluded_word
):
    check(pipeline_services, question, good, excluded_word)


def test_ranked_as_any_question_the_english_iron_question_still_links_the_iron_card(pipeline_services):
    """On this non-default route (logical.positive_source=pipeline) the English iron question's first three cards
    are a near tie in the rank fusion (about 0.031 each for the iron, calcium and weaning cards) whose order moves
    with the CPU's int8 kernels and the cross-encoder's batch size (rerank.batch_size 1 puts the calcium card first
    on a VNNI CPU; the fp32 copies without VNNI open the reply from the weaning card): the iron card is linked, the
    first place is not asserted. The default route (test above) puts it first."""
    from chatbot.answer import answer

    ans = answer(IRON_EN[0], pipeline_services)
    assert ans["trace"]["route"]["pipeline"] == "logical" and ans["trace"]["route"]["excluded"]
    docs = [link["segment_id"].split("#")[0] for link in ans["links"]]
    assert len(docs) == 3 and "en-preg-iron-anaemia" in docs, docs


def check(services, question: str, good: set[str], excluded_word: str) -> None:
    from chatbot.answer import answer

    ans = answer(question, services)
    trace = ans["trace"]
    assert trace["route"]["pipeline"] == "logical" and trace["route"]["excluded"]
    assert ans["status"] == "answered", trace["safety"].get("relevance")
    docs = [link["segment_id"].split("#")[0] for link in ans["links"]]
    assert len(docs) == 3 and docs[0] in good, docs
    reply_from = trace["compose"]["attempts"][-1]["pieces"][0]["segment_id"].split("#")[0]
    assert reply_from in good, reply_from
    # no reply sentence is about the excluded thing; asked for alternatives ("apart from"), a sentence that lists
    # it among them is the answer and may stay (test_the_iron_reply_opens_with_the_list_of_sources)
    excluded = route(question, None, Settings())
    sentences = split_sentences(ans["reply"])
    assert not [x for x in sentences if excluded.mentions_excluded(x)]
    if not excluded.alternatives:
        assert excluded_word not in ans["reply"].lower()
    logical = trace["logical"]
    assert logical["query"] == trace["route"]["decomposition"]
    mentions = next(iter(logical["mentions"].values()))["candidates"]
    picked = trace["safety"].get("cross_language_pick", {})
    for link in ans["links"]:  # per-term evidence of each linked passage the logical route ranked
        if picked.get("picked") and link["segment_id"].split("#")[0] == picked["doc_id"]:
            # the cross-language pick's card comes from the other-language search, not the logical candidates
            # (with logical.positive_source=pipeline they need not hold it); it is never about a NOT term
            assert picked["named"] == "no" and link is ans["links"][0]
            continue
        assert link["segment_id"] in mentions and "p" in mentions[link["segment_id"]]


def test_the_iron_reply_opens_with_the_list_of_sources(services):
    """ "Apart from red meat": the card's list of iron sources names red meat among the alternatives the patient
    asked for; it is the answer, verbatim, not a sentence about the excluded thing."""
    from chatbot.answer import answer

    ans = answer(IRON_EN[0], services)
    assert ans["reply"].startswith("Good sources of iron include lean red meat, beans, lentils and other pulses")


def test_the_trace_names_the_sentence_that_mentions_the_excluded_thing(services):
    from chatbot.answer import answer

    ans = answer("Which foods are high in iron apart from red meat?", services)
    rows = ans["trace"]["logical"]["mentions"]["red meat"]["candidates"]
    iron = next(row for sid, row in rows.items() if sid.startswith("en-preg-iron-anaemia#") and row["sentence"])
    assert iron["sentence"].startswith("Good sources of iron include lean red meat")
    assert iron["triggered_by"] in ("lexical", "sentence vectors")
    # and the card only lists it among alternatives (aboutness.py): its NOT value counts half
    about = ans["trace"]["logical"]["aboutness"]
    assert about["listed_discount"] == 0.5
    listed = about["terms"]["red meat"]["listed"]
    assert any(sid.startswith("en-preg-iron-anaemia#") for sid in listed), listed
    assert not any(sid.startswith("en-nutr-calcium-dairy#") for sid in listed), listed
