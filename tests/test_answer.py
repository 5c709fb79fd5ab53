from __future__ import annotations

import re

import pytest

from chatbot.answer import answer
from chatbot.answer_object import certified_links
from chatbot.pipeline import Services, run_pipeline
from chatbot.question_input import MAX_QUESTION_CHARS, InvalidQuestion, validate_question
from chatbot.settings import Settings
from corpus.model import Document
from tests.conftest import indexed_services

# -- validate_question --------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "Please type a question."),
        ("   \n\t  ", "Please type a question."),
        ("\x00\x07\u200b", "Please type a question."),
        ("🤒🤧😷", "Please type your question in words."),
        ("?!... ---", "Please type your question in words."),
        (None, "The question must be text."),
        (42, "The question must be text."),
    ],
)
def test_validate_question_rejects(question, message):
    with pytest.raises(InvalidQuestion, match=f"^{re.escape(message)}$"):
        validate_question(question)


def test_validate_question_rejects_too_long_questions():
    too_long = "a" * (MAX_QUESTION_CHARS + 1)

    with pytest.raises(
        InvalidQuestion,
        match=rf"^Your question is too long \(2001 characters\); please keep it under {MAX_QUESTION_CHARS}\.$",
    ):
        validate_question(too_long)


def test_validate_question_length_is_measured_after_normalising_whitespace():
    question = "a" * MAX_QUESTION_CHARS + "   \n\n   "

    assert validate_question(question) == "a" * MAX_QUESTION_CHARS


def test_validate_question_strips_control_characters_and_collapses_whitespace():
    assert validate_question("  Is\x00 fever\u200b\x1b dangerous?\n\n\tFor a baby ") == "Is fever dangerous? For a baby"


def test_validate_question_normalises_to_nfc():
    assert validate_question("caffe\u0300") == "caff\u00e8"


def test_validate_question_keeps_emoji_next_to_words():
    assert validate_question("fever 🤒?") == "fever 🤒?"


# -- answer() on a fake embedder and a temporary Chroma -------------------------

DOCS = [
    Document(
        "asthma-card",
        "Asthma at night",
        "https://example.org/asthma",
        "Asthma often gets worse at night; an asthma plan and a preventer inhaler help you sleep.",
        certified_by="Dr. Verdi",
    ),
    Document(
        "asthma-kids",
        "Children's inhalers",
        "https://example.org/kids",
        "Children with asthma use a spacer with their inhaler.",
    ),
    Document(
        "fever-card",
        "Fever in babies",
        "https://example.org/fever",
        "A fever of 38C or more in a baby under 3 months needs a doctor the same day.",
    ),
    Document(
        "sleep-card",
        "Safe sleep",
        "https://example.org/sleep",
        "Put your baby to sleep on their back.\n\n" + "Keep the cot clear of pillows and toys. " * 8,
        demo=True,
    ),
    Document("diabetes-card", "Diabetes", "https://example.org/diabetes", "Diabetes raises blood sugar."),
]


@pytest.fixture
def services(tmp_path, fake_embedder) -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "answer-tests"},
        # fusion_embedder equal to the bi-encoder: no second model, fusion reuses the dense scores
        rerank={"kind": "fusion", "fusion_weight": 0.5, "fusion_embedder": "minilm"},
        embedding={"model": "minilm"},
    )
    return indexed_services(settings, fake_embedder, DOCS, max_chars=200, min_chars=40)


# "asthma ... sleep" → fused scores: asthma-card 1.0, asthma-kids 0.51, sleep-card 0.47 (kids and sleep tie on
# the dense score 0.707; BM25 separates them), fever and diabetes 0.
def test_answer_returns_the_top_segment_verbatim_and_three_distinct_links(services):
    result = answer("Why is my asthma worse at night when I sleep?", services)

    assert result["status"] == "answered"
    assert result["question"] == "Why is my asthma worse at night when I sleep?"
    assert result["reply"] == DOCS[0].text  # the certified text, unchanged
    assert [link["url"] for link in result["links"]] == [
        "https://example.org/asthma",
        "https://example.org/kids",
        "https://example.org/sleep",
    ]
    assert [link["title"] for link in result["links"]] == ["Asthma at night", "Children's inhalers", "Safe sleep"]
    assert len({link["url"] for link in result["links"]}) == 3
    assert result["links"][0]["segment_id"].startswith("asthma-card#")
    assert result["urgent"] is False
    assert result["demo_content"] is True  # the safe-sleep card is marked demo


def test_answer_trace_records_the_pipeline_and_its_stages(services):
    result = answer("Why is my asthma worse at night when I sleep?", services)
    trace = result["trace"]

    assert trace["pipeline"] == "dense+rerank"
    assert trace["embedding_model"] == "fake-keywords"
    assert trace["reranker"] == "fusion"
    assert [t["doc_id"] for t in trace["top"]] == ["asthma-card", "asthma-kids", "sleep-card"]
    assert {"dense", "fusion"} <= set(trace["top"][0])
    assert set(trace["timings_ms"]) == {"retrieve", "rerank", "compose", "total"}
    assert len(trace["candidates"]) == services.index.count()


def test_answer_links_come_from_segment_metadata(services):
    result = run_pipeline("dense+rerank", "asthma at night", services)

    assert certified_links(result.top) == [
        {"title": h.segment.title, "url": h.segment.source_url, "segment_id": h.segment.id} for h in result.top
    ]
    assert {h.segment.source_url for h in result.top} <= {d.source_url for d in DOCS}


@pytest.mark.parametrize("pipeline", ["dense", "bm25"])
def test_other_pipelines_answer_from_the_same_corpus(services, pipeline):
    result = answer("Does a fever in a baby need a doctor?", services, pipeline)

    assert result["status"] == "answered"
    assert result["reply"] == DOCS[2].text
    assert result["links"][0]["url"] == "https://example.org/fever"
    assert result["trace"]["reranker"] is None


def test_answer_without_any_match_says_so(services):
    result = answer("zzzz qqqq", services, "bm25")

    assert result["status"] == "no_certified_info"
    assert result["reply"] == "I have no certified information on that. Please ask your doctor, midwife or pharmacist."
    assert result["links"] == []


def test_answer_on_an_empty_question_is_invalid_input(services, fake_embedder):
    result = answer("   ", services)

    assert result["status"] == "invalid_input"
    assert result["reply"] == "Please type a question.\nScrivi una domanda."
    assert result["links"] == []
    assert result["urgent"] is False
    screen = result["trace"]["safety"].pop("red_flag_screen")
    assert (screen["urgent"], screen["actions"], screen["rules"]) == (False, [], [])
    assert result["trace"] == {"error": "Please type a question.", "safety": {"input": "invalid"}}
    assert fake_embedder.queries == []  # rejected before any retrieval


def test_answer_on_a_non_string_is_invalid_input(services):
    result = answer(None, services)

    assert (result["status"], result["question"], result["reply"]) == (
        "invalid_input",
        "None",
        "The question must be text.\nLa domanda deve essere un testo.",
    )


def test_unknown_pipeline_is_an_error(services):
    with pytest.raises(ValueError, match=r"unknown pipeline 'magic'; choose one of bm25, .*dense, dense\+rerank"):
        answer("asthma", services, "magic")


# -- rerank.kind=cross-encoder (the default) without a model -----------------------------------------------


def test_missing_shipped_cross_encoder_falls_back_to_fusion_and_the_trace_says_so(tmp_path, fake_embedder, monkeypatch):
    import chatbot.services

    missing = tmp_path / "no-model"
    monkeypatch.setattr(chatbot.services, "SHIPPED_RERANKER", missing)
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "answer-fallback"},
        rerank={"kind": "cross-encoder", "fusion_weight": 0.5, "fusion_embedder": "minilm"},
        embedding={"model": "minilm"},
    )
    services = indexed_services(settings, fake_embedder, DOCS, max_chars=200, min_chars=40)

    result = answer("Why is my asthma worse at night when I sleep?", services)

    assert result["status"] == "answered"
    assert result["trace"]["reranker"] == "fusion"
    assert result["trace"]["reranker_note"] == (
        f"rerank.kind=cross-encoder but no model in {missing}: fusion reranker used"
    )
    assert "reranker_runtime" not in result["trace"]
    # exactly the fusion reranker's answer (see the test of the fusion links above)
    assert [link["url"] for link in result["links"]] == [
        "https://example.org/asthma",
        "https://example.org/kids",
        "https://example.org/sleep",
    ]


def test_a_cross_encoder_path_that_does_not_exist_is_an_error_not_a_fallback(tmp_path):
    settings = Settings(paths={"data_dir": tmp_path / "data"}, rerank={"model_path": tmp_path / "typo"})

    with pytest.raises(FileNotFoundError, match=r"cross-encoder directory .*typo does not exist"):
        _ = Services(settings).reranker


def _top_hits():
    from chatbot.index import Hit
    from corpus.model import Segment

    def top_hit(doc: str, detail: dict[str, float]) -> Hit:
        return Hit(Segment(id=f"{doc}#0", doc_id=doc, text="t", title=doc, source_url="", position=0), 0.0, detail)

    # the third document came from past rerank.candidates: bi-encoder score only
    return [
        top_hit("a", {"dense": 0.8, "cross-encoder": 0.3}),
        top_hit("b", {"dense": 0.7, "cross-encoder": 0.6}),
        top_hit("c", {"dense": 0.9}),
    ]


def test_relevance_is_the_bi_encoder_cosine_by_default_even_after_the_cross_encoder():
    from chatbot.stages.relevance import relevance

    services = Services(Settings(embedding={"model": "e5"}, safety={"min_relevance_dense": {"e5": 0.85}}))

    assert relevance(_top_hits(), services) == ("dense", 0.9, 0.85)


def test_relevance_can_use_the_cross_encoder_scores_of_the_top_hits_that_have_one():
    from chatbot.stages.relevance import relevance

    services = Services(Settings(safety={"relevance_score": "cross-encoder", "min_relevance_cross_encoder": 0.4}))

    assert relevance(_top_hits(), services) == ("cross-encoder", 0.6, 0.4)


# -- urgent cards are never filler links -----------------------------------------------------------------


def _urgent_filler_services(tmp_path, fake_embedder, urgent_text: str):
    # Keyword vectors over (asthma, diabetes, fever, sleep, other), tests/conftest.py; titles hold no keyword.
    docs = [
        Document(
            "asthma",
            "Card A",
            "https://example.org/asthma",
            "Asthma often gets worse during sleep because asthma airways narrow at night.",
        ),
        Document("en-urgent-emergency", "Emergency: call 999", "https://example.org/999", urgent_text),
        Document("sleep", "Card S", "https://example.org/sleep", "Sleep on your back."),
        Document("fever", "Card F", "https://example.org/fever", "A fever is 38C or more."),
    ]
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "urgent-filler", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        safety={"min_relevance_dense": {"minilm": 0.0}},
    )
    return indexed_services(settings, fake_embedder, docs, max_chars=300, min_chars=10)


def test_an_urgent_card_is_not_a_filler_link(tmp_path, fake_embedder):
    services = _urgent_filler_services(tmp_path, fake_embedder, "Asthma with a fever: call 999 now.")

    # cosines to the question: asthma card 1.0, urgent card 2/sqrt(10), sleep card 1/sqrt(5), fever card 0
    question = "Why does my asthma (asthma!) get worse in my sleep?"
    ranked = [h.segment.doc_id for h in run_pipeline("dense", question, services).ranked]
    ans = answer(question, services, "dense")

    assert ranked == ["asthma", "en-urgent-emergency", "sleep", "fever"]  # the urgent card ranks second ...
    assert [link["url"] for link in ans["links"]] == [  # ... and the next document takes its place
        "https://example.org/asthma",
        "https://example.org/sleep",
        "https://example.org/fever",
    ]


def test_an_urgent_card_that_is_the_best_match_stays_first(tmp_path, fake_embedder):
    services = _urgent_filler_services(tmp_path, fake_embedder, "Asthma attack: call 999 now.")

    ans = answer("asthma asthma attack", services, "dense")

    assert ans["links"][0]["url"] == "https://example.org/999"


# -- the length limit holds for the whole reply, urgent message included ---------------------------------


def _urgent_reply(tmp_path, fake_embedder, monkeypatch, urgent_message: str | None, in_limit: bool = True) -> dict:
    from chatbot.stages import redflags

    docs = [
        Document(
            "fever",
            "Card F",
            "https://example.org/fever",
            "Give plenty of fluids to a baby with a fever. Call your GP straight away if the baby is under 3 months.",
        ),
        Document("sleep", "Card S", "https://example.org/sleep", "Sleep on your back."),
    ]
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "urgent-length", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        safety={"min_relevance_dense": {"minilm": 0.0}},
        compose={"max_chars": 150, "urgent_in_limit": in_limit},
    )
    services = indexed_services(settings, fake_embedder, docs, max_chars=300, min_chars=10)
    fields = {"urgent": False}
    if urgent_message is not None:
        fields = {
            "urgent": True,
            "urgent_message": urgent_message,
            "urgent_action": "emergency",
            "urgent_links": [],
            "urgent_cards": [],
        }
    monkeypatch.setattr(redflags, "screen", lambda *a, **k: redflags.Screen(urgent_message is not None))
    monkeypatch.setattr(redflags, "urgent_fields", lambda *a, **k: fields)
    return answer("What should I do about a fever in my baby?", services, "dense")


def test_an_urgent_message_and_the_answer_under_it_keep_to_the_length_limit(tmp_path, fake_embedder, monkeypatch):
    answer_only = "Give plenty of fluids to a baby with a fever."
    both = f"{answer_only} Call your GP straight away if the baby is under 3 months."
    short_urgent = "URGENT: call 999 now."  # 21 characters + the blank line: 127 left of 150, both sentences fit
    long_urgent = "URGENT: " + "call 999 now; " * 8  # 120 characters: 28 left, the answering sentence alone

    plain = _urgent_reply(tmp_path, fake_embedder, monkeypatch, None)
    short = _urgent_reply(tmp_path, fake_embedder, monkeypatch, short_urgent)
    long = _urgent_reply(tmp_path, fake_embedder, monkeypatch, long_urgent)

    assert plain["reply"] == both and len(both) == 103
    assert short["reply"] == f"{short_urgent}\n\n{both}" and len(short["reply"]) == 126
    # the answer never goes: a false alarm must not cost the patient the answer; the urgent text is never cut
    assert long["reply"] == f"{long_urgent}\n\n{answer_only}" and len(long["reply"]) == 167
    assert long["trace"]["compose"]["room"] == {"reserved": 122, "chars": 28}
    assert short["trace"]["compose"]["room"] == {"reserved": 23, "chars": 127}
    assert "room" not in plain["trace"]["compose"]
    # compose.urgent_in_limit off: the answer under the message has max_chars of its own
    apart = _urgent_reply(tmp_path, fake_embedder, monkeypatch, long_urgent, in_limit=False)
    assert apart["reply"] == f"{long_urgent}\n\n{both}" and "room" not in apart["trace"]["compose"]


# -- the opt-in diagnosis fallback (safety.diagnosis_model) ------------------------------------------------


@pytest.mark.parametrize(("on", "status"), [(False, "answered"), (True, "safe_reply")])
def test_the_diagnosis_model_setting_sends_a_diagnosis_request_to_the_safe_reply(tmp_path, fake_embedder, on, status):
    # keyword vectors (tests/conftest.py): the sleep card matches; the rules read no personal request in the question
    docs = [
        Document(
            "sleep", "Card S", "https://example.org/sleep", "Babies who sleep badly in the evening may have colic."
        ),
        Document("fever", "Card F", "https://example.org/fever", "A fever is 38C or more."),
    ]
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": f"diagnosis-{on}", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        safety={"min_relevance_dense": {"minilm": 0.0}, "relevance_gate": "threshold", "diagnosis_model": on},
    )
    services = indexed_services(settings, fake_embedder, docs, max_chars=300, min_chars=10)

    ans = answer("is it colic? he cries every evening and will not sleep", services, "dense")

    assert ans["status"] == status
    assert ans["trace"]["safety"]["personal_request"] == ("diagnosis" if on else None)
    assert ans["links"][0]["url"] == "https://example.org/sleep"


# compose.asked_kind: "what can help me sleep?" asks for an action; the cue patterns read no action phrase in it
@pytest.mark.parametrize(("source", "kind"), [("model", "what_to_do"), ("cues", "yes_no")])
def test_the_composer_gets_the_kind_of_answer_the_asked_kind_setting_reads(services, source, kind):
    services.settings.compose.asked_kind = source

    result = answer("Asthma at night: what can help me sleep?", services)

    assert result["status"] == "answered"
    assert result["trace"]["compose"]["attempts"][-1]["answer"]["question_type"] == kind


def test_patient_words_expand_only_the_languages_the_setting_names(services, monkeypatch):
    import chatbot.patient_words
    from chatbot.patient_words import PatientWords

    lists = {
        "en": PatientWords.from_pairs([("wheezy", "asthma")]),
        "it": PatientWords.from_pairs([("tossetta", "asma")]),
    }
    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None, language="en": lists[language])
    italian = "Mio figlio ha una tossetta leggera di notte quando dorme, cosa posso fare?"

    assert answer(italian, services)["trace"]["safety"].get("patient_words") is None  # default: English only
    assert answer("Why is my child wheezy at night?", services)["trace"]["safety"]["patient_words"] == {
        "matched": [["wheezy", "asthma"]]
    }
    services.settings.retrieval.patient_words_languages = ["en", "it"]
    assert answer(italian, services)["trace"]["safety"]["patient_words"] == {"matched": [["tossetta", "asma"]]}
