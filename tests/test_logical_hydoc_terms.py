"""HyDoc per positive term in the logical pipeline (logical.hydoc_terms, variant logical-hyde): the fake
keyword-axis embedder of tests/conftest.py, a temporary Chroma and the fake OpenAI-compatible server of
tests/fake_openai.py behind the real LLM client."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.logical import pipeline as logical
from chatbot.logical.config import LogicalConfig, config_for
from chatbot.logical.hydoc_terms import hydoc_term_vectors
from chatbot.pipeline import Services, get_pipeline, run_pipeline
from chatbot.settings import Settings
from corpus.model import Document
from tests.conftest import FakeEmbedder, indexed_services, unit
from tests.fake_openai import FakeOpenAIServer, closed_port

# Our own cards; vectors over the (asthma, diabetes, fever, sleep, other) axes of the fake embedder.
#   inhaler → (1, 0, 0, 0, 0)          pure asthma: the bare term "asthma" scores it 1
#   night   → (1, 0, 0, 1, 0)/√2       asthma and sleep: the bare term scores it 1/√2
#   feverish→ (2, 0, 1, 0, 0)/√5       asthma with the excluded fever
#   sugar   → diabetes axis
DOCS = [
    Document(id="inhaler", text="Asthma inhalers: asthma.", title="Card inhaler",
             source_url="https://example.org/inhaler"),
    Document(id="night", text="Asthma at night and sleep: asthma, sleep.", title="Card night",
             source_url="https://example.org/night"),
    Document(id="feverish", text="Asthma with fever: asthma flare.", title="Card hot",
             source_url="https://example.org/feverish"),
    Document(id="sugar", text="Diabetes raises blood sugar.", title="Card sugar",
             source_url="https://example.org/sugar"),
]  # fmt: skip
QUESTION = "asthma other than fever"  # the detector's query: "asthma" AND NOT "fever"
# The HyDoc the fake LLM writes for the term "asthma": asthma once, sleep three times → (1, 0, 0, 3, 0)/√10.
HYDOC = "Asthma often gets worse during sleep; poor sleep and night symptoms mean the sleep pattern matters."
HYDOC_VEC = unit(1, 0, 0, 3)
TERM_VEC = unit(1)


def hydoc_for(body) -> str:
    """The fake LLM's reply: the HyDoc above for the term asthma, another for anything else."""
    asked = body["messages"][-1]["content"].rsplit("answering:", 1)[1].strip()
    return HYDOC if asked == "asthma" else f"A passage about {asked} for patients and their families."


@pytest.fixture
def server():
    with FakeOpenAIServer(hydoc_for) as fake:
        yield fake


def make_services(tmp_path, base_url: str, hyde: dict | None = None, **logical_settings) -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "logical-hydoc-tests", "exact": True},
        rerank={"kind": "none"},  # final order = the composed scores
        embedding={"model": "minilm"},
        retrieval={"top_k": 10, "top_n": 3},
        llm={"base_url": base_url, "autostart": False, "timeout_s": 5.0, "model": "fake-model"},
        hyde=hyde or {},
        logical={"mention": False, **logical_settings},  # cosine scores exactly (mentions: test_logical_mention.py)
    )
    return indexed_services(settings, FakeEmbedder(), DOCS, max_chars=300, min_chars=10)


def scores_of(result) -> dict[str, float]:
    return {h.segment.doc_id: h.score for h in result.ranked}


def asked_terms(server) -> list[str]:
    return [r["messages"][-1]["content"].rsplit("answering:", 1)[1].strip() for r in server.requests]


def test_the_hydoc_vector_changes_the_ranking_exactly(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    bare = logical.logical_retrieve(QUESTION, services)
    hyde = run_pipeline("logical-hyde", QUESTION, services)

    # Bare term: cosine with the asthma axis; the pure-asthma card wins.
    assert [h.segment.doc_id for h in bare.ranked][:2] == ["inhaler", "night"]
    assert scores_of(bare)["inhaler"] == pytest.approx(1.0)
    assert scores_of(bare)["night"] == pytest.approx(1 / 2**0.5)

    # HyDoc term: the normalised mean of the HyDoc's and the term's vectors (hyde.average_question), which
    # leans towards sleep: the asthma-at-night card now wins. No card mentions fever except "feverish", and
    # the NOT term (the fever axis, orthogonal to the new vector) keeps its bare vector: composed = cosine.
    term = (HYDOC_VEC + TERM_VEC) / np.linalg.norm(HYDOC_VEC + TERM_VEC)
    assert [h.segment.doc_id for h in hyde.ranked][:2] == ["night", "inhaler"]
    assert scores_of(hyde)["night"] == pytest.approx(float(term @ unit(1, 0, 0, 1)), abs=1e-6)
    assert scores_of(hyde)["inhaler"] == pytest.approx(float(term @ unit(1)), abs=1e-6)
    fever = float(unit(2, 0, 1) @ unit(0, 0, 1))
    assert scores_of(hyde)["feverish"] == pytest.approx(float(term @ unit(2, 0, 1)) * (1 - fever), abs=1e-6)

    info = hyde.info["logical"]
    assert info["query"] == '"asthma" AND NOT "fever"'
    assert info["hydoc_terms"] == {
        "average_question": True,
        "llm_calls": 1,
        "fallbacks": 0,
        "terms": {"asthma": {"cache": "miss", "hydoc": HYDOC}},
    }
    assert "hydoc_terms" not in bare.info["logical"]
    assert hyde.timings_ms["hydoc_terms"] > 0 and "llm" in hyde.timings_ms


def test_the_hydoc_alone_when_average_question_is_off(tmp_path, server):
    services = make_services(tmp_path, server.base_url, hyde={"average_question": False})
    result = run_pipeline("logical-hyde", QUESTION, services)
    assert scores_of(result)["night"] == pytest.approx(float(HYDOC_VEC @ unit(1, 0, 0, 1)), abs=1e-6)
    assert scores_of(result)["inhaler"] == pytest.approx(float(HYDOC_VEC @ unit(1)), abs=1e-6)


def test_the_hydoc_vector_gathers_the_terms_candidates(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    config = LogicalConfig(per_term_k=1)
    bare = logical.logical_retrieve(QUESTION, services, config)
    hyde = logical.logical_retrieve(QUESTION, services, LogicalConfig(per_term_k=1, hydoc_terms=True))
    assert [h.segment.doc_id for h in bare.candidates] == ["inhaler"]
    assert [h.segment.doc_id for h in hyde.candidates] == ["night"]


def test_not_terms_get_no_hydoc_and_the_hydoc_is_embedded_as_a_passage(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    indexed = len(services.embedder.passages)
    services.embedder.queries.clear()

    result = run_pipeline("logical-hyde", QUESTION, services)

    assert asked_terms(server) == ["asthma"]  # one LLM call, for the positive term only
    assert set(result.info["logical"]["hydoc_terms"]["terms"]) == {"asthma"}
    assert services.embedder.passages[indexed:] == [HYDOC]
    assert services.embedder.queries == ["asthma", "fever"]  # the term vector is reused for the average


def test_the_llm_failing_keeps_the_bare_term_vector_and_says_so(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    bare = logical.logical_retrieve(QUESTION, services)

    class Broken:
        def complete(self, messages, max_tokens, temperature=0.0, **kw):
            raise RuntimeError("socket on fire")

    services.__dict__["llm"] = Broken()
    result = run_pipeline("logical-hyde", QUESTION, services)

    assert [(h.segment.id, h.score) for h in result.ranked] == [(h.segment.id, h.score) for h in bare.ranked]
    trace = result.info["logical"]["hydoc_terms"]
    assert trace["terms"]["asthma"] == {
        "cache": "miss",
        "hydoc": None,
        "fallback": {"to": "term", "kind": "error", "reason": "RuntimeError: socket on fire"},
    }
    assert trace["fallbacks"] == 1
    assert "fallback" not in result.info  # the question was not answered by naive retrieval

    del services.__dict__["llm"]  # the LLM is back: the fallback was not cached
    again = run_pipeline("logical-hyde", QUESTION, services)
    assert again.info["logical"]["hydoc_terms"]["terms"]["asthma"]["cache"] == "miss"
    assert [h.segment.doc_id for h in again.ranked][0] == "night"


@pytest.mark.parametrize("mode", ["nonsense", "error"])
def test_garbage_or_a_server_error_falls_back_per_term(tmp_path, server, mode):
    services = make_services(tmp_path, server.base_url)
    server.mode = mode
    result = run_pipeline("logical-hyde", QUESTION, services)
    entry = result.info["logical"]["hydoc_terms"]["terms"]["asthma"]
    assert entry["hydoc"] is None and entry["fallback"]["to"] == "term"
    assert entry["fallback"]["kind"] == ("garbage" if mode == "nonsense" else "error")
    assert [h.segment.doc_id for h in result.ranked][0] == "inhaler"  # the bare term's order


def test_an_llm_that_is_down_is_asked_once_per_question(tmp_path):
    services = make_services(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    names = ["asthma", "diabetes", "fever"]
    vecs = services.embedder.embed_queries(names)

    out, trace = hydoc_term_vectors(["asthma", "diabetes"], names, vecs, services, {})

    np.testing.assert_array_equal(out, vecs)
    assert trace["llm_calls"] == 1
    assert trace["terms"]["asthma"]["fallback"]["kind"] == "down"
    assert trace["terms"]["diabetes"]["fallback"] == {
        "to": "term",
        "kind": "down",
        "reason": "LLM down for an earlier term: not asked",
    }


def test_a_repeated_question_costs_no_llm_call(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    first = run_pipeline("logical-hyde", QUESTION, services)
    assert len(server.requests) == 1

    again = run_pipeline("logical-hyde", QUESTION, services)
    # Another question with the same positive term shares the term's HyDoc too.
    other = run_pipeline("logical-hyde", "asthma but not fever", services)

    assert len(server.requests) == 1
    assert again.info["logical"]["hydoc_terms"]["terms"]["asthma"] == {"cache": "hit", "hydoc": HYDOC}
    assert again.info["logical"]["hydoc_terms"]["llm_calls"] == 0
    assert "llm" not in again.timings_ms
    assert [(h.segment.id, h.score) for h in again.ranked] == [(h.segment.id, h.score) for h in first.ranked]
    assert other.info["logical"]["hydoc_terms"]["terms"]["asthma"]["cache"] == "hit"


def test_hydocs_share_the_hyde_pipelines_cache_key(tmp_path, server):
    from chatbot.stages import hydoc_cache

    services = make_services(tmp_path, server.base_url)
    run_pipeline("logical-hyde", QUESTION, services)
    key = hydoc_cache.cache_key_for("hyde", "Asthma?", services)
    assert hydoc_cache.cache_for(services).get(key) == {"hydocs": [HYDOC]}


def test_the_setting_reaches_the_config_and_the_variant_is_registered(tmp_path, server):
    assert config_for(Settings(logical={"hydoc_terms": True})).hydoc_terms is True
    assert config_for(Settings()).hydoc_terms is False
    assert get_pipeline("logical-hyde") is not None
    services = make_services(tmp_path, server.base_url, hydoc_terms=True)
    result = run_pipeline("logical", QUESTION, services)
    assert result.info["logical"]["hydoc_terms"]["terms"]["asthma"]["hydoc"] == HYDOC


def test_questions_without_logical_structure_ask_no_llm(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    result = run_pipeline("logical-hyde", "What are the symptoms of diabetes?", services)
    assert result.info["logical"]["route"] == "naive"
    assert server.requests == []
