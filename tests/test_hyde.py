"""hyde and cot pipelines (chatbot/stages/hyde.py) on a fake embedder, a temporary Chroma and a fake
OpenAI-compatible server: what each stage does, what the trace says, faults and the HyDoc cache."""

from __future__ import annotations

import time

import numpy as np
import pytest

from chatbot.answer import answer
from chatbot.pipeline import Services, get_pipeline, pipeline_names, run_pipeline
from chatbot.prompts import PROMPTS_DIR, load_prompt, parse_prompt
from chatbot.settings import Settings
from chatbot.stages import hyde, hydoc, hydoc_cache, question_type
from corpus.model import Document
from tests.conftest import FakeEmbedder, indexed_services
from tests.fake_openai import FakeOpenAIServer, closed_port

DOCS = [
    Document("asthma-card", "Asthma at night", "https://example.org/asthma", "Asthma can wake you at night."),
    Document("fever-card", "Fever in babies", "https://example.org/fever", "A fever in a baby needs a doctor."),
    Document("sleep-card", "Sleep and tiredness", "https://example.org/sleep", "Poor sleep makes you tired."),
    Document("diabetes-card", "Diabetes", "https://example.org/diabetes", "Diabetes raises blood sugar."),
]
# No keyword of the fake embedder: the naive pipeline sees only the "other" axis (every score 0).
TIRED = "Why am I so tired all the time?"
PASSAGE = "Tiredness is often caused by poor sleep; regular sleep habits and enough sleep help most people."
COT_REPLY = (
    "**TYPE:** evaluative\n"
    "PRESUPPOSES: the patient feels tired\n"
    "IMPLIES: a search for causes of the tiredness\n"
    f"PASSAGE: {PASSAGE}"
)


def make_services(tmp_path, base_url: str, **hyde_options) -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "hyde-tests", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        llm={"base_url": base_url, "autostart": False, "timeout_s": 5.0, "model": "fake-model"},
        hyde=hyde_options,
    )
    return indexed_services(settings, FakeEmbedder(), DOCS, max_chars=200, min_chars=10)


@pytest.fixture
def server():
    with FakeOpenAIServer(PASSAGE) as fake:
        yield fake


@pytest.fixture
def services(tmp_path, server):
    return make_services(tmp_path, server.base_url)


def top_docs(result) -> list[str]:
    return [h.segment.doc_id for h in result.top]


def user_text(body) -> str:
    return "\n".join(m["content"] for m in body["messages"])


# -- registry ----------------------------------------------------------------------------------------


def test_hyde_and_cot_are_registered_lazily():
    assert {"hyde", "cot", "naive"} <= set(pipeline_names())
    assert get_pipeline("hyde") is hyde.hyde_pipeline
    assert get_pipeline("cot") is hyde.cot_pipeline


# -- hyde ----------------------------------------------------------------------------------------------


def test_hyde_retrieves_with_the_hypothetical_document(services, server):
    naive = run_pipeline("naive", TIRED, services)
    result = run_pipeline("hyde", TIRED, services)

    assert top_docs(result)[0] == "sleep-card"  # found through the HyDoc's words, not the question's
    assert naive.top[0].detail["dense"] == pytest.approx(0.0)  # the question alone matches nothing
    assert result.info["hydoc"] == PASSAGE
    assert result.info["hydocs"] == [PASSAGE]
    assert result.info["fallback"] is None
    assert result.info["cache"] == "miss"
    assert result.info["llm_model"] == "fake-model"
    assert result.info["question_type"] == "evaluative"
    assert result.info["type_source"] == "heuristic"
    assert set(result.timings_ms) == {
        "cache",
        "llm_prestart",
        "encode_question",
        "llm",
        "llm_hydoc",
        "encode",
        "search",
        "rerank",
    }
    (body,) = server.requests
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == services.settings.hyde.max_tokens
    assert body["temperature"] == 0
    assert TIRED in user_text(body)


def test_hyde_tells_a_stage_listener_each_stage_and_when_the_llm_starts(services):
    from chatbot.stage_progress import stage_listener

    events: list[tuple[str, bool]] = []
    with stage_listener(lambda stage, ms: events.append((stage, ms is None))):
        result = run_pipeline("hyde", TIRED, services)

    assert events == [
        ("cache", False),
        ("llm_prestart", False),
        ("encode_question", False),
        ("llm", True),  # started: the slow step, shown before it ends
        ("llm", False),
        ("encode", False),
        ("search", False),
        ("rerank", False),
    ]
    run_pipeline("hyde", "What is asthma?", services)  # outside the block: nobody is told
    assert len(events) == 8
    assert result.info["fallback"] is None


def test_hyde_fallback_reuses_the_question_vector(tmp_path):
    services = make_services(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")

    result = run_pipeline("hyde", TIRED, services)

    assert result.info["fallback"]["kind"] == "down"
    assert services.embedder.queries == [TIRED]  # embedded once, before the LLM call
    assert top_docs(result) == naive_top(services)


def test_hyde_embeds_the_hydoc_as_a_passage_and_averages_the_question(services):
    indexed = len(services.embedder.passages)

    run_pipeline("hyde", TIRED, services)

    assert services.embedder.passages[indexed:] == [PASSAGE]
    assert services.embedder.queries == [TIRED]


def test_encode_is_the_normalised_mean_of_question_and_hydocs():
    emb = FakeEmbedder()
    with_question = hyde.encode("fever?", ["asthma and asthma"], emb, average_question=True)
    hydoc_only = hyde.encode("fever?", ["asthma and asthma"], emb, average_question=False)

    assert with_question == pytest.approx(np.array([1, 0, 1, 0, 0]) / np.sqrt(2))
    assert hydoc_only == pytest.approx(np.array([1, 0, 0, 0, 0]))


def test_hydoc_is_requested_in_the_corpus_language_whatever_the_question_language(services, server):
    run_pipeline("hyde", "Perché sono sempre così stanca?", services)

    text = user_text(server.requests[0])
    assert "in English" in text
    assert "Perché sono sempre così stanca?" in text


def test_repeated_question_is_served_from_the_cache_without_an_llm_call(services, server):
    first = run_pipeline("hyde", TIRED, services)
    second = run_pipeline("hyde", "  why am i so TIRED all the time ", services)  # same once normalised

    assert len(server.requests) == 1
    assert second.info["cache"] == "hit"
    assert second.info["hydoc"] == PASSAGE
    assert top_docs(second) == top_docs(first)
    assert "llm" not in second.timings_ms


def test_cache_survives_a_new_process_and_is_keyed_by_model(tmp_path, server):
    run_pipeline("hyde", TIRED, make_services(tmp_path, server.base_url))
    hydoc_cache._CACHES.clear()  # as in a new process: the SQLite file is all that is left
    run_pipeline("hyde", TIRED, make_services(tmp_path, server.base_url))
    assert len(server.requests) == 1

    other = make_services(tmp_path, server.base_url)
    other.settings.llm.model = "another-model"
    run_pipeline("hyde", TIRED, other)
    assert len(server.requests) == 2


def test_cache_off_calls_the_llm_every_time(tmp_path, server):
    services = make_services(tmp_path, server.base_url, cache=False)

    run_pipeline("hyde", TIRED, services)
    result = run_pipeline("hyde", TIRED, services)

    assert len(server.requests) == 2
    assert result.info["cache"] == "off"


def test_several_samples_are_averaged_and_later_ones_are_sampled(tmp_path, server):
    services = make_services(tmp_path, server.base_url, samples=3, sample_temperature=0.5)

    result = run_pipeline("hyde", TIRED, services)

    assert [b["temperature"] for b in server.requests] == [0, 0.5, 0.5]
    assert [b.get("seed") for b in server.requests] == [None, 1, 2]
    assert result.info["hydocs"] == [PASSAGE] * 3
    assert len(result.info["llm_calls"]) == 3


def test_a_failed_later_sample_keeps_the_first(tmp_path, server):
    replies = iter([PASSAGE, "$$ %%"])
    server.reply = lambda body: next(replies)
    services = make_services(tmp_path, server.base_url, samples=2)

    result = run_pipeline("hyde", TIRED, services)

    assert result.info["fallback"] is None
    assert result.info["hydocs"] == [PASSAGE]
    assert result.info["sample_errors"][0].startswith("sample 1: GarbageOutput")


class SpyReranker:
    name = "spy"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def score(self, question, hits):
        self.texts.append(question)
        return np.array([h.score for h in hits], dtype=np.float32)


@pytest.mark.parametrize(("rerank_with", "expected"), [("question", TIRED), ("question+hydoc", f"{TIRED}\n{PASSAGE}")])
def test_reranker_scores_against_the_question_or_question_and_hydoc(tmp_path, server, rerank_with, expected):
    services = make_services(tmp_path, server.base_url, rerank_with=rerank_with)
    spy = services.__dict__["reranker"] = SpyReranker()

    result = run_pipeline("hyde", TIRED, services)

    assert spy.texts == [expected]
    assert "spy" in result.top[0].detail


# -- faults: always an answer, the fallback recorded ---------------------------------------------------------


def naive_top(services) -> list[str]:
    return top_docs(run_pipeline("naive", TIRED, services))


@pytest.mark.parametrize("pipeline", ["hyde", "cot"])
@pytest.mark.parametrize(
    ("mode", "kind"),
    [("garbage", "garbage"), ("nonsense", "garbage"), ("null", "garbage"), ("error", "error")],
)
def test_bad_llm_answers_fall_back_to_naive(services, server, pipeline, mode, kind):
    server.mode = mode

    result = run_pipeline(pipeline, TIRED, services)

    assert result.info["fallback"]["to"] == "naive"
    assert result.info["fallback"]["kind"] == kind
    assert top_docs(result) == naive_top(services)
    assert result.info.get("hydoc") is None
    assert len(server.requests) == 1


@pytest.mark.parametrize("pipeline", ["hyde", "cot"])
def test_endpoint_down_falls_back_to_naive(tmp_path, pipeline):
    services = make_services(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")

    result = run_pipeline(pipeline, TIRED, services)

    assert result.info["fallback"]["kind"] == "down"
    assert top_docs(result) == naive_top(services)


@pytest.mark.parametrize("pipeline", ["hyde", "cot"])
def test_slow_endpoint_falls_back_after_the_timeout(tmp_path, server, pipeline):
    server.mode, server.delay_s = "slow", 3.0
    services = make_services(tmp_path, server.base_url)
    services.settings.llm.timeout_s = 0.3

    start = time.perf_counter()
    result = run_pipeline(pipeline, TIRED, services)

    assert result.info["fallback"]["kind"] == "timeout"
    assert time.perf_counter() - start < 2.5
    assert top_docs(result) == naive_top(services)


def test_a_fallback_is_not_cached(services, server):
    server.mode = "error"
    run_pipeline("hyde", TIRED, services)
    server.mode = "ok"

    result = run_pipeline("hyde", TIRED, services)

    assert result.info["fallback"] is None
    assert result.info["cache"] == "miss"
    assert len(server.requests) == 2


def test_a_client_that_raises_anything_falls_back(services):
    class Broken:
        def complete(self, messages, max_tokens, temperature=0.0, **kw):
            raise RuntimeError("socket on fire")

    services.__dict__["llm"] = Broken()

    result = run_pipeline("hyde", TIRED, services)

    assert result.info["fallback"] == {"to": "naive", "kind": "error", "reason": "RuntimeError: socket on fire"}


# -- cot -----------------------------------------------------------------------------------------------


def test_cot_one_call_records_type_analysis_context_and_hydoc(tmp_path, server):
    server.reply = COT_REPLY
    services = make_services(tmp_path, server.base_url, pre_k=2, pre_chars=60)

    result = run_pipeline("cot", "Why is my asthma so bad at night?", services)

    # question (asthma) and HyDoc (sleep) averaged: both documents tie on top
    assert set(top_docs(result)[:2]) == {"asthma-card", "sleep-card"}
    info = result.info
    assert info["question_type"] == "evaluative"
    assert info["type_source"] == "llm"
    assert info["pragmatic"] == {
        "presupposes": "the patient feels tired",
        "implies": "a search for causes of the tiredness",
    }
    assert info["hydoc"] == PASSAGE
    assert len(info["pre_retrieved"]) == 2
    assert info["pre_retrieved"][0].startswith("asthma-card#")
    assert info["fallback"] is None
    (body,) = server.requests  # one call: analysis and HyDoc together
    assert body["max_tokens"] == services.settings.hyde.analysis_max_tokens + services.settings.hyde.max_tokens
    text = user_text(body)
    assert "Asthma at night: Asthma can wake you at night." in text  # pre-retrieved extract in the prompt
    assert "TYPE:" in text and "PASSAGE:" in text
    assert {"pre_retrieve", "llm", "llm_analysis+hydoc", "encode", "search", "rerank"} <= set(result.timings_ms)


def test_cot_two_calls_analyse_first_then_write_the_hydoc_from_the_analysis(tmp_path, server):
    replies = iter(["TYPE: informational\nPRESUPPOSES: none\nIMPLIES: wants facts", PASSAGE])
    server.reply = lambda body: next(replies)
    services = make_services(tmp_path, server.base_url, cot_calls="two")

    result = run_pipeline("cot", TIRED, services)

    analysis, write = server.requests
    assert analysis["max_tokens"] == services.settings.hyde.analysis_max_tokens
    assert "Extracts" not in user_text(analysis)  # the analysis sees the question only
    assert write["max_tokens"] == services.settings.hyde.max_tokens
    assert "IMPLIES: wants facts" in user_text(write)
    assert "Extracts:" in user_text(write)
    assert result.info["question_type"] == "informational"
    assert result.info["hydoc"] == PASSAGE
    assert {"llm_analysis", "llm_hydoc"} <= set(result.timings_ms)


def test_cot_reply_without_labels_is_used_whole_as_the_passage(services, server):
    result = run_pipeline("cot", TIRED, services)  # the server answers the bare PASSAGE

    assert result.info["hydoc"] == PASSAGE
    assert result.info["type_source"] == "heuristic"
    assert result.info["question_type"] == "evaluative"


def test_cot_fallback_reuses_the_pre_retrieval_instead_of_searching_again(tmp_path):
    services = make_services(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")

    result = run_pipeline("cot", TIRED, services)

    assert result.info["fallback"]["kind"] == "down"
    assert "pre_retrieve" in result.timings_ms
    assert "retrieve" not in result.timings_ms
    assert services.embedder.queries == [TIRED]  # the question was embedded once


def test_cot_cache_hit_skips_pre_retrieval_and_the_llm(services, server):
    server.reply = COT_REPLY
    first = run_pipeline("cot", TIRED, services)
    second = run_pipeline("cot", TIRED, services)

    assert len(server.requests) == 1
    assert second.info["cache"] == "hit"
    assert second.info["pre_retrieved"] == first.info["pre_retrieved"]
    assert second.info["question_type"] == "evaluative"
    assert "pre_retrieve" not in second.timings_ms
    assert top_docs(second) == top_docs(first)


# -- the answer trace --------------------------------------------------------------------------------


def test_answer_trace_carries_what_the_pipeline_did(services, server):
    server.reply = COT_REPLY

    trace = answer(TIRED, services, "cot")["trace"]

    assert trace["pipeline"] == "cot"
    assert trace["hydoc"] == PASSAGE
    assert trace["question_type"] == "evaluative"
    assert trace["pragmatic"]["implies"] == "a search for causes of the tiredness"
    assert trace["fallback"] is None
    assert trace["llm_model"] == "fake-model"
    assert "llm" in trace["timings_ms"]


# -- helpers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TYPE: evaluative\nPASSAGE: a b\nc d", {"TYPE": "evaluative", "PASSAGE": "a b c d"}),
        ("**Type**: informational\n- **Passage:** text", {"TYPE": "informational", "PASSAGE": "text"}),
        ("no labels at all", {}),
    ],
)
def test_parse_labelled(text, expected):
    assert hydoc.parse_labelled(text) == expected


@pytest.mark.parametrize("bad", ["", "ok", "$$$ ### 42 %% {}", "1 2 3 4 5 6 7 8", "a b c d"])
def test_clean_hydoc_rejects_garbage(bad):
    with pytest.raises(hydoc.GarbageOutput):
        hydoc.clean_hydoc(bad, min_words=5)


def test_clean_hydoc_strips_labels_and_markdown():
    assert hydoc.clean_hydoc("**Passage:** Sleep *well* to feel\n rested every day.", 5) == (
        "Sleep well to feel rested every day."
    )


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Why am I so tired?", "evaluative"),
        ("Is it normal to bleed after birth?", "evaluative"),
        ("Should I take folic acid?", "evaluative"),
        ("È normale avere nausea?", "evaluative"),
        ("What is gestational diabetes?", "informational"),
        ("How much folic acid is recommended in pregnancy?", "informational"),
        ("Why I am feeling so tired?", "evaluative"),  # the seed's example, word order as written
        ("I have asthma. Would a humidifier be suitable?", "evaluative"),  # own situation + a question
        ("My father has lost weight for weeks, please help us.", "evaluative"),  # a relative's + a plea
        ("Mio figlio ha la febbre da tre giorni, cosa fare?", "evaluative"),
        ("I have read about asthma.", "informational"),  # own situation but nothing asked
        ("What are the symptoms of asthma in my region's children?", "informational"),
    ],
)
def test_heuristic_type(question, kind):
    assert question_type.heuristic_type(question) == kind


def test_normalise_question():
    assert hydoc_cache.normalise_question("  Why  am I\tTIRED?? ") == "why am i tired"


def test_prompt_loader_checks_variables():
    prompt = parse_prompt("t", "# t: test\n# Variables: {a}\n[system]\nS {a}\n[user]\nU {a} {b}\n")

    assert prompt.messages(a=1, b=2) == [{"role": "system", "content": "S 1"}, {"role": "user", "content": "U 1 2"}]
    with pytest.raises(KeyError, match="missing"):
        prompt.messages(a=1)
    with pytest.raises(KeyError, match="unexpected"):
        prompt.messages(a=1, b=2, c=3)


@pytest.mark.parametrize("path", sorted(PROMPTS_DIR.glob("*.txt")), ids=lambda p: p.name)
def test_every_prompt_documents_each_of_its_variables(path):
    prompt = load_prompt(path.stem)

    assert prompt.variables
    for var in prompt.variables:
        assert f"{{{var}}}" in prompt.doc, f"{path.name}: {{{var}}} is not documented at the top"


# -- the real embedded server (llama-server + gemma-3-270m) ------------------------------------------------


@pytest.mark.integration
def test_cot_with_the_real_llama_server_and_gemma(tmp_path):
    from tests.test_llm import GEMMA, REAL_BINARY, require_real_llm

    require_real_llm()
    port = closed_port()
    services = make_services(tmp_path, f"http://127.0.0.1:{port}/v1", max_tokens=40, analysis_max_tokens=30)
    services.settings.llm = services.settings.llm.model_copy(
        update={
            "autostart": True,
            "port": port,
            "server_binary": REAL_BINARY,
            "model_path": GEMMA,
            "model": "gemma-3-270m",
            "ctx_size": 1024,
            "timeout_s": 60.0,
        }
    )
    try:
        result = run_pipeline("cot", TIRED, services)
        server_pid = services.llm.server.proc.pid
        info = result.info
        # gemma-3-270m is a base model: it may write a usable passage or garbage; either way the pipeline
        # answers, and a fallback can only be "garbage", never a transport fault.
        assert info["fallback"] is None or info["fallback"]["kind"] == "garbage", info["fallback"]
        assert info["llm_model"] == "gemma-3-270m"
        assert result.top
        if info["fallback"] is None:
            assert info["llm_calls"][0]["completion_tokens"] >= 1
            assert info["hydoc"]
    finally:
        services.llm.close()
    from tests.test_llm import alive, wait_until

    assert wait_until(lambda: not alive(server_pid), 5)
