"""The patient's-path router (issue 19): exclusion questions go to the logical decomposition, the others to
retrieval.pipeline; the relevance gate judges an exclusion question by its positive part."""

from __future__ import annotations

import pytest

from chatbot.answer import answer
from chatbot.settings import Settings
from chatbot.stages.route import Route, route
from tests.test_logical_pipeline import DOCS, make_services


@pytest.mark.parametrize(
    ("question", "decomposition"),
    [
        (
            "What helps with nausea in pregnancy other than ginger?",
            '"What helps with nausea in pregnancy" AND NOT "ginger"',
        ),
        ("Which foods are high in iron apart from red meat?", '"Which foods are high in iron" AND NOT "red meat"'),
        (
            "Cosa aiuta con la nausea in gravidanza oltre allo zenzero?",
            '"Cosa aiuta con la nausea in gravidanza" AND NOT "zenzero"',
        ),
        (
            "Quali cibi contengono ferro tranne la carne rossa?",
            '"Quali cibi contengono ferro" AND NOT "la carne rossa"',
        ),
        ("Ways to calm morning sickness without pills", '"Ways to calm morning sickness" AND NOT "pills"'),
        ("Treatments for a bad back that are not surgery", '"Treatments for a bad back" AND NOT "surgery"'),
        ("Iron-rich meals, no liver please", '"Iron-rich meals" AND NOT "liver"'),
        ("What can I drink for heartburn, anything but milk?", '"What can I drink for heartburn" AND NOT "milk"'),
        ("Rimedi per la nausea senza farmaci", '"Rimedi per la nausea" AND NOT "farmaci"'),
        ("Cibi ricchi di ferro che non siano la carne", '"Cibi ricchi di ferro" AND NOT "la carne"'),
        ("Cosa mangiare a merenda? Niente latticini per favore", '"Cosa mangiare a merenda" AND NOT "latticini"'),
        ("Cibi ricchi di ferro escluso il fegato", '"Cibi ricchi di ferro" AND NOT "il fegato"'),
    ],
)
def test_exclusion_questions_go_to_the_decomposition(question, decomposition):
    chosen = route(question, None, Settings())

    assert chosen.pipeline == "logical"
    assert chosen.decomposition == decomposition
    assert chosen.reason.startswith("exclusion cue ")


@pytest.mark.parametrize(
    "question",
    [
        "What helps with nausea in pregnancy?",
        "Can I take paracetamol without food?",
        "Posso mangiare una dieta senza glutine in gravidanza?",
        "Is it safe to drink coffee when pregnant?",
        "Gluten-free snacks for a coeliac child",
        "Yogurt senza lattosio in gravidanza?",
        "Can I eat cheese without cooking it?",
        "Is it normal to go four days without a bowel movement?",
        "A cough that is not going away after a week",
        "Non ho niente di grave, vero?",
        "Può essere che non sia niente?",
    ],
)
def test_other_questions_keep_the_configured_pipeline(question):
    settings = Settings(retrieval={"pipeline": "dense"})
    assert route(question, None, settings) == Route("dense", "no exclusion in the question")


def test_a_named_pipeline_and_the_switch_win_over_the_router():
    question = "What helps with nausea other than ginger?"
    assert route(question, "hyde", Settings()) == Route("hyde", "pipeline named by the caller")
    off = Settings(retrieval={"route_exclusions": False})
    assert route(question, None, off) == Route("dense+rerank", "router off (retrieval.route_exclusions=false)")


def test_a_dismissal_only_the_model_reads_is_routed_unless_the_setting_is_off():
    question = "lo svezzamento non c'entra, quante ore dorme un neonato?"
    chosen = route(question, None, Settings())
    assert (chosen.pipeline, chosen.reason, chosen.excluded) == (
        "logical",
        "exclusion cue 'dismissal (model)' (it)",
        ("svezzamento",),
    )
    off = Settings(retrieval={"learned_exclusions": False})
    assert route(question, None, off) == Route("dense+rerank", "no exclusion in the question")
    # a rule's exclusion is routed either way
    assert route("What helps with nausea other than ginger?", None, off).pipeline == "logical"


def test_answer_routes_an_exclusion_question_and_drops_the_excluded_document(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)

    routed = answer("asthma other than fever", services)
    plain = answer("asthma", services)

    assert routed["trace"]["route"] == {
        "pipeline": "logical",
        "reason": "exclusion cue 'other than' (en)",
        "decomposition": '"asthma" AND NOT "fever"',
        "positive": "asthma",
        "excluded": ["fever"],
        "alternatives": True,  # "other than" asks for alternatives: a sentence listing fever among them may answer
    }
    assert routed["trace"]["pipeline"] == "logical"
    assert [link["url"] for link in routed["links"]][0] == "https://example.org/positive"
    assert routed["trace"]["safety"]["relevance"]["scorer"] == "dense:positive"
    assert plain["trace"]["route"]["pipeline"] == "dense+rerank"
    assert plain["trace"]["safety"]["relevance"]["scorer"] == "dense"
    assert len(DOCS) == 5


def test_the_gate_scores_the_positive_part_not_the_whole_question(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)

    routed = answer("asthma other than fever", services)
    top = routed["trace"]["top"]

    # the positive term "asthma" against the top segments: the best is the positive card's cosine with it
    assert routed["trace"]["safety"]["relevance"]["score"] == max(t["term:asthma"] for t in top)
    assert routed["status"] == "answered"


def test_the_review_page_shows_the_route_and_the_decomposition(tmp_path, fake_embedder):
    from ui.review import detail_markdown

    services = make_services(tmp_path, fake_embedder)
    ans = answer("asthma other than fever", services)
    turn = {
        "id": 1,
        "created_at": "2026-11-24T23:00:00",
        "status": ans["status"],
        "urgent": False,
        "answered_by": "pipeline",
        "pipeline": "logical",
        "feedback": None,
        "review_state": "unreviewed",
        "question": ans["question"],
        "reply": ans["reply"],
        "links": ans["links"],
        "trace": ans["trace"],
        "reviews": [],
    }

    text = detail_markdown(turn)

    assert '**Route:** `logical` (exclusion cue \'other than\' (en)) · decomposition `"asthma" AND NOT "fever"`' in text
    distractor = next(link["segment_id"] for link in ans["links"] if link["segment_id"].startswith("distractor#"))
    line = next(x for x in text.split("\n\n") if x.startswith(f"**Exclusion scores** `{distractor}`"))
    assert "`asthma` " in line and "NOT `fever` P " in line
    assert line.endswith("“Asthma with fever: asthma attacks, fever at night, asthma review and asthma inhalers.”")


@pytest.mark.parametrize(
    ("question", "text", "mentions"),
    [
        ("What helps with nausea other than ginger?", "Ginger biscuits may help.", True),
        ("What helps with nausea other than ginger?", "Gingerbread is not a remedy.", False),  # whole words
        ("Quali cibi contengono ferro tranne la carne rossa?", "La CARNE rossa è ricca di ferro.", True),
        ("Quali cibi contengono ferro tranne la carne rossa?", "I legumi contengono ferro.", False),
        ("What helps with nausea?", "Ginger may help.", False),  # no exclusion: nothing is excluded
        # an excluded class covers its members: a painkiller sentence is about medication
        (
            "How can I relieve back pain in pregnancy without medication?",
            "Paracetamol is generally suitable for pain relief in pregnancy.",
            True,
        ),
        ("How can I relieve back pain in pregnancy without medication?", "Bend your knees when lifting.", False),
        ("Rimedi per il mal di schiena che non siano farmaci?", "La tachipirina si può prendere.", True),
        ("Rimedi per il mal di schiena che non siano farmaci?", "Dormi su un fianco con un cuscino.", False),
        # a class only for medicine words: ginger excluded does not exclude paracetamol
        ("What helps with nausea other than ginger?", "Paracetamol is fine.", False),
        # asked for alternatives, a sentence listing the excluded thing among them is the answer, not excluded
        (
            "Which foods are high in iron apart from red meat?",
            "Good sources of iron include lean red meat, beans, lentils, nuts and dried fruit.",
            False,
        ),
        ("Which foods are high in iron apart from red meat?", "Red meat is the best source of iron.", True),
        (
            "Quali cibi contengono ferro oltre alla carne rossa?",
            "Il ferro si trova in legumi, carne rossa, uova e verdure a foglia verde.",
            False,
        ),
        # ... but "excluding" / "but not" ask that it not be named at all: the listing sentence stays out
        (
            "Which foods are high in iron, excluding red meat?",
            "Good sources of iron include lean red meat, beans, lentils, nuts and dried fruit.",
            True,
        ),
        (
            "foods rich in iron but not red meat",
            "Good sources of iron include lean red meat, beans, lentils, nuts and dried fruit.",
            True,
        ),
    ],
)
def test_a_route_knows_which_texts_name_the_excluded_thing(question, text, mentions):
    assert route(question, None, Settings()).mentions_excluded(text) is mentions


def test_an_exclusion_reply_leaves_out_sentences_that_name_the_excluded_thing(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)

    ans = answer("asthma other than fever", services)

    assert "fever" not in ans["reply"].lower()
    assert [link["url"] for link in ans["links"]][0] == "https://example.org/positive"


def test_the_patient_page_and_the_api_route_through_the_service(tmp_path, fake_embedder):
    from chatbot.service import ChatService
    from chatbot.store.db import open_store

    services = make_services(tmp_path, fake_embedder)
    chat = ChatService(services.settings, services, open_store(services.settings), memory=None)

    turn = chat.answer_turn("asthma other than fever")

    assert turn.answer["trace"]["route"]["pipeline"] == "logical"
    assert turn.answer["links"][0]["url"] == "https://example.org/positive"


def test_the_route_carries_the_detectors_not_terms_for_later_stages():
    # later stages (the cross-language pick) read the NOT terms here instead of running the detector again
    settings = Settings(retrieval={"pipeline": "dense"})
    routed = route("Cosa aiuta la nausea in gravidanza senza zenzero?", None, settings)
    assert routed.pipeline == "logical" and routed.not_terms == ("zenzero",) == routed.excluded
    plain = route("What helps with nausea in pregnancy?", None, settings)
    assert plain.detector_ran and plain.not_terms == ()
    # the detector did not run: None (the pick runs it itself)
    named = route("What helps with nausea other than ginger?", "bm25", settings)
    assert not named.detector_ran and named.not_terms is None
    off = Settings(retrieval={"pipeline": "dense", "route_exclusions": False})
    assert route("What helps with nausea other than ginger?", None, off).not_terms is None
    # the NOT terms are stored once (`excluded`); the trace keeps its shape
    assert set(routed.trace()) == {"pipeline", "reason", "decomposition", "positive", "excluded", "alternatives"}


# -- retrieval.exclusion_answer = demote: the configured pipeline, cards about the excluded thing last -----------

DEMOTE = {"exclusion_answer": "demote"}


def test_in_demote_mode_an_exclusion_question_keeps_the_configured_pipeline_and_its_not_terms():
    chosen = route("What helps with nausea in pregnancy other than ginger?", None, Settings(retrieval=DEMOTE))

    assert chosen.pipeline == "dense+rerank"
    assert chosen.reason == "exclusion cue 'other than' (en); dense+rerank, cards about the excluded topic last"
    assert chosen.excluded == ("ginger",)
    assert chosen.positive == "What helps with nausea in pregnancy"
    assert (chosen.demoted, chosen.logical) == (True, False)
    plain = route("What helps with nausea in pregnancy?", None, Settings(retrieval=DEMOTE))
    assert (plain.demoted, plain.logical) == (False, False)
    assert route("What helps with nausea other than ginger?", None, Settings()).logical is True


def _hit(doc_id: str, title: str):
    from chatbot.index import Hit
    from corpus.model import Segment

    segment = Segment(
        id=f"{doc_id}#0", doc_id=doc_id, text="text", title=title, source_url=f"https://x.org/{doc_id}", position=0
    )
    return Hit(segment=segment, score=1.0)


def test_excluded_last_moves_only_the_cards_whose_title_names_an_excluded_thing():
    chosen = Route("dense+rerank", "exclusion cue", excluded=("ginger", "la carne rossa"))
    hits = [
        _hit("ginger", "Ginger tea and nausea"),
        _hit("nausea", "Nausea in pregnancy"),  # its text may name ginger: the title decides
        _hit("meat", "Carne rossa e ferro"),  # "la carne rossa": the article is dropped
        _hit("iron", "Iron and anaemia"),
    ]

    assert [h.segment.doc_id for h in chosen.excluded_last(hits)] == ["nausea", "iron", "ginger", "meat"]
    assert [chosen.about_excluded(h) for h in hits] == [True, False, True, False]


def test_in_demote_mode_the_answer_never_comes_from_the_excluded_card(tmp_path, fake_embedder):
    from corpus.model import Document

    docs = [
        Document(
            id="fever-card",
            text="Asthma with fever: asthma attacks, fever at night, asthma review and asthma inhalers.",
            title="Asthma and fever",
            source_url="https://example.org/fever-card",
        ),
        Document(
            id="plans",
            text="Asthma plans for school and sleep: asthma inhalers.",
            title="Asthma plans",
            source_url="https://example.org/plans",
        ),
        Document(
            id="diabetes",
            text="Diabetes raises blood sugar.",
            title="Diabetes",
            source_url="https://example.org/diabetes",
        ),
    ]
    from tests.conftest import indexed_services

    def services_for(retrieval: dict):
        settings = Settings(
            paths={"data_dir": tmp_path / "data"},
            index={"collection": "demote-tests", "exact": True},
            rerank={"kind": "none"},
            embedding={"model": "minilm"},
            retrieval={"top_k": 10, "top_n": 3, **retrieval},
        )
        return indexed_services(settings, fake_embedder, docs, max_chars=300, min_chars=10)

    off = answer("asthma other than fever", services_for({"route_exclusions": False}))
    demoted = answer("asthma other than fever", services_for(DEMOTE))

    # the failure demote mode fixes: the card about fever outranks the one that answers
    assert [link["url"] for link in off["links"]][0] == "https://example.org/fever-card"
    assert demoted["trace"]["route"]["pipeline"] == "dense+rerank"
    assert demoted["trace"]["route"]["excluded"] == ["fever"]
    assert [link["url"] for link in demoted["links"]] == [
        "https://example.org/plans",
        "https://example.org/diabetes",
        "https://example.org/fever-card",
    ]
    assert demoted["reply"].startswith("Asthma plans for school and sleep")


def test_by_cue_demotes_situational_and_contrast_cues_and_keeps_explicit_exclusions_logical():
    settings = Settings(retrieval={"exclusion_answer": "by_cue"})

    stated = route("I don't drink coffee, just tea. What's the daily caffeine limit in pregnancy?", None, settings)
    contrast = route("Perché dal settimo mese conviene dormire sul fianco e non sulla schiena?", None, settings)
    explicit = route("What helps with nausea in pregnancy other than ginger?", None, settings)

    assert (stated.pipeline, stated.excluded, stated.demoted) == ("dense+rerank", ("coffee",), True)
    assert stated.reason == 'exclusion cue "i don\'t drink" (en); dense+rerank, cards about the excluded topic last'
    assert (contrast.pipeline, contrast.excluded, contrast.demoted) == ("dense+rerank", ("schiena",), True)
    assert (explicit.pipeline, explicit.excluded, explicit.logical) == ("logical", ("ginger",), True)
