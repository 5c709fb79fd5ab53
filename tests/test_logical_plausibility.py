"""OrLog predicate plausibility (term_scorer llm-logprob) and the named variants of the logical pipeline."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from chatbot.llm import LLMClient, LLMUnavailable
from chatbot.logical import pipeline as logical
from chatbot.logical.compose import Calibration, Operators
from chatbot.logical.config import VARIANTS, LogicalConfig, config_for
from chatbot.logical.plausibility import llm_plausibilities, passage_of, true_probability
from chatbot.pipeline import Services, get_pipeline, pipeline_names, run_pipeline
from chatbot.prompts import load_prompt
from chatbot.settings import LLMSettings, Settings
from tests.fake_openai import FakeOpenAIServer, closed_port
from tests.test_logical_pipeline import docs_of, make_services

CAL = Calibration(0.5, 10.0)
A, F = 2 / 5**0.5, 1 / 5**0.5  # cosines of positive/distractor on "asthma" and of distractor on "fever"


@pytest.fixture(autouse=True)
def _fake_embedder_calibration(monkeypatch):
    """The fake embedder has no fitted calibration: the named variants (probabilistic) get CAL."""
    monkeypatch.setattr(logical, "calibration_for", lambda name: CAL)


def tf(p_true: float) -> list[tuple[str, float]]:
    """Alternatives of a model that puts p_true on "True", the rest on "False" (a third token far below)."""
    return [("True", math.log(p_true)), ("False", math.log(1 - p_true)), ("The", -20.0)]


# -- reading P(True) ----------------------------------------------------------------------------------------


def test_p_true_is_the_softmax_over_the_true_and_false_log_probabilities():
    p, status = true_probability([("True", -0.2), ("False", -1.8), ("Yes", -5.0)])
    assert p == pytest.approx(1 / (1 + math.exp(-1.6)))
    assert status == "ok"


def test_tokenisation_variants_of_a_label_are_summed_and_lookalikes_ignored():
    alternatives = [(" True", math.log(0.3)), ("true", math.log(0.1)), ("False", math.log(0.2)), ("(False", -0.5)]
    p, status = true_probability(alternatives)
    assert p == pytest.approx(0.4 / (0.4 + 0.2))
    assert status == "ok"
    assert true_probability([("\u2581TRUE", -1.0), ("Ġfalse", -1.0)]) == (pytest.approx(0.5), "ok")


def test_a_label_missing_from_the_list_is_bounded_by_the_lowest_listed_log_probability():
    p, status = true_probability([("True", -0.1), ("The", -3.0), ("Yes", -4.0)])
    assert p == pytest.approx(1 / (1 + math.exp(-4.0 + 0.1)))
    assert status == "bounded"
    p, status = true_probability([("Yes", -1.0), ("False", -0.5)])
    assert p == pytest.approx(1 / (1 + math.exp(-0.5 + 1.0)))
    assert status == "bounded"


@pytest.mark.parametrize("alternatives", [[("The", -1.0), ("Yes", -2.0)], []])
def test_no_truth_label_gives_no_plausibility(alternatives):
    assert true_probability(alternatives) == (None, "missing")


def test_passages_are_cut_at_a_word_boundary():
    assert passage_of("short  text\nhere", 100) == "short text here"
    assert passage_of("alpha beta gamma delta", 13) == "alpha beta …"


def test_the_prompt_file_documents_and_uses_exactly_its_variables():
    prompt = load_prompt("logical_plausibility")
    assert prompt.variables == {"title", "passage", "term"}
    for var in ("{title}", "{passage}", "{term}"):
        assert var in prompt.doc
    messages = prompt.messages(title="T", passage="P", term="fever")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == (
        "Title: T\nPassage: P\n\nTopic: fever\n"
        "Statement: the passage is about this topic.\nIs the statement True or False?"
    )


# -- the client and the fake server ---------------------------------------------------------------------------


def client_for(base_url: str, tmp_path, timeout_s: float = 5.0) -> LLMClient:
    settings = LLMSettings(base_url=base_url, model="fake", timeout_s=timeout_s, max_retries=0, autostart=False)
    return LLMClient(settings, tmp_path, autostart=False)


def test_token_logprobs_asks_for_one_greedy_token_with_top_alternatives(tmp_path):
    with FakeOpenAIServer() as server:
        server.logprobs = [("True", -0.25), ("False", -1.5), ("Yes", -4.0)]
        text, tokens, stats = client_for(server.base_url, tmp_path).token_logprobs(
            [{"role": "user", "content": "x"}], top_logprobs=2
        )
    assert text == "True"
    assert tokens == [[("True", -0.25), ("False", -1.5)]]  # cut to top_logprobs like a real server
    body = server.requests[0]
    assert (body["max_tokens"], body["temperature"], body["logprobs"], body["top_logprobs"]) == (1, 0.0, True, 2)
    assert stats["model"] == "fake"


def test_a_server_that_returns_no_log_probabilities_is_garbage(tmp_path):
    with FakeOpenAIServer("True") as server:  # logprobs not configured: no logprobs field
        with pytest.raises(LLMUnavailable, match="^garbage: no log-probabilities in the response"):
            client_for(server.base_url, tmp_path).token_logprobs([{"role": "user", "content": "x"}])


# -- plausibilities of segments and terms ----------------------------------------------------------------------


class Seg:
    def __init__(self, sid: str, text: str) -> None:
        self.id, self.title, self.text = sid, f"Card {sid}", text


TABLE = {("s1", "asthma"): 0.9, ("s1", "fever"): 0.2, ("s2", "asthma"): 0.6, ("s2", "fever"): 0.7}


def table_reply(body: dict) -> list[tuple[str, float]] | None:
    user = body["messages"][-1]["content"]
    sid = re.search(r"Title: Card (\S+)", user).group(1)
    term = re.search(r"Topic: (.+)\n", user).group(1)
    if (sid, term) == ("s3", "fever"):
        return [("Maybe", -0.1), ("The", -2.0)]  # no truth label at all
    return tf(TABLE.get((sid, term), 0.5))


def test_plausibilities_per_segment_and_term_are_exact_and_asked_segment_by_segment(tmp_path):
    segs = [Seg("s1", "Asthma text. " * 10), Seg("s2", "Fever text."), Seg("s3", "Other.")]
    with FakeOpenAIServer() as server:
        server.logprobs = table_reply
        run = llm_plausibilities(client_for(server.base_url, tmp_path), ["asthma", "fever"], segs, max_chars=30)
    assert run.probs["asthma"] == pytest.approx([0.9, 0.6, 0.5])
    assert run.probs["fever"][:2] == pytest.approx([0.2, 0.7])
    assert np.isnan(run.probs["fever"][2])
    assert run.calls == 6
    assert run.status == {"ok": 5, "missing": 1}
    assert run.failures == [{"segment": "s3", "term": "fever", "reason": "no True/False token"}]
    asked = [
        re.search(r"Card (\S+)\n.*Topic: (\w+)\n", b["messages"][-1]["content"], re.S).groups() for b in server.requests
    ]
    assert asked == [
        ("s1", "asthma"),
        ("s1", "fever"),
        ("s2", "asthma"),
        ("s2", "fever"),
        ("s3", "asthma"),
        ("s3", "fever"),
    ]
    assert "Passage: Asthma text. Asthma text. …\n" in server.requests[0]["messages"][-1]["content"]
    assert all(b["max_tokens"] == 1 and b["logprobs"] is True and b["top_logprobs"] == 10 for b in server.requests)


def test_a_server_that_is_down_stops_the_calls_after_the_first(tmp_path):
    run = llm_plausibilities(client_for(f"http://127.0.0.1:{closed_port()}/v1", tmp_path), ["a", "b"], [Seg("s1", "x")])
    assert run.calls == 1
    assert run.status == {"failed": 1, "skipped": 1}
    assert run.aborted == "down: remaining pairs not asked"
    assert run.failures[0]["reason"].startswith("down: ")
    assert np.isnan(run.probs["a"]).all() and np.isnan(run.probs["b"]).all()


def test_an_http_error_costs_only_its_own_pair(tmp_path):
    with FakeOpenAIServer(mode="error") as server:
        run = llm_plausibilities(client_for(server.base_url, tmp_path), ["a", "b"], [Seg("s1", "x")])
    assert run.calls == 2
    assert run.status == {"failed": 2}
    assert run.aborted is None
    assert run.failures[0]["reason"].startswith("error: HTTP 500")


def test_no_llm_or_a_client_without_log_probabilities_asks_nothing():
    run = llm_plausibilities(None, ["a"], [Seg("s1", "x"), Seg("s2", "y")])
    assert (run.calls, run.status, run.aborted) == (0, {"skipped": 2}, "no LLM")
    run = llm_plausibilities(object(), ["a"], [Seg("s1", "x")])
    assert run.aborted == "the LLM client cannot return log-probabilities (no token_logprobs)"


# -- in the pipeline -------------------------------------------------------------------------------------------

# The LLM's view, opposite to the embedding's: the distractor is NOT about fever, the positive is.
DOC_TABLE = {
    ("positive", "asthma"): 0.8,
    ("positive", "fever"): 0.75,
    ("distractor", "asthma"): 0.9,
    ("distractor", "fever"): 0.1,
    ("fever", "asthma"): 0.05,
    ("fever", "fever"): 0.95,
}


def doc_reply(body: dict) -> list[tuple[str, float]] | None:
    user = body["messages"][-1]["content"]
    doc_id = re.search(r"Title: Card (\S+)", user).group(1)
    term = re.search(r"Topic: (.+)\n", user).group(1)
    if doc_id == "sleep" and term == "fever":
        return [("Sleep", -0.01)]  # no truth label: falls back to the embedding value
    return tf(DOC_TABLE.get((doc_id, term), 0.02))


def orlog_services(tmp_path, fake_embedder, base_url: str, **logical_settings):
    services = make_services(tmp_path, fake_embedder)  # no reranker: final = composed
    services.settings.logical = services.settings.logical.model_copy(update=logical_settings)
    services.__dict__["llm"] = client_for(base_url, tmp_path)
    return services


def test_orlog_variant_ranks_by_the_exact_probability_of_the_llm_plausibilities(tmp_path, fake_embedder):
    with FakeOpenAIServer() as server:
        server.logprobs = doc_reply
        services = orlog_services(tmp_path, fake_embedder, server.base_url)
        result = run_pipeline("logical-orlog", "asthma other than fever", services)

    scores = {h.segment.doc_id: h.score for h in result.ranked}
    assert docs_of(result) == ["distractor", "positive", "sleep", "diabetes", "fever"]
    assert scores["distractor"] == pytest.approx(0.9 * (1 - 0.1))
    assert scores["positive"] == pytest.approx(0.8 * (1 - 0.75))
    assert scores["diabetes"] == pytest.approx(0.02 * (1 - 0.02))
    # "sleep" has no fever plausibility: P(fever) falls back to the calibrated cosine σ((0 − 0.5)·10)
    assert scores["sleep"] == pytest.approx(0.02 * (1 - float(CAL(0.0))))
    assert scores["fever"] == pytest.approx(0.05 * (1 - 0.95))
    info = result.info["logical"]
    assert (info["mode"], info["term_scorer"]) == ("probabilistic", "llm-logprob")
    plaus = info["plausibility"]
    assert {k: plaus[k] for k in ("scorer", "candidates", "pairs", "llm_pairs", "fallback_pairs", "calls")} == {
        "scorer": "llm-logprob",
        "candidates": 5,
        "pairs": 10,
        "llm_pairs": 9,
        "fallback_pairs": 1,
        "calls": 10,
    }
    assert plaus["status"] == {"ok": 9, "missing": 1}
    sleep_seg = next(h.segment.id for h in result.ranked if h.segment.doc_id == "sleep")
    assert plaus["failures"] == [{"segment": sleep_seg, "term": "fever", "reason": "no True/False token"}]
    assert plaus["p_true"]["fever"][sleep_seg] is None
    assert "plausibility" in result.timings_ms


def test_only_the_top_llm_candidates_are_rescored_and_stay_ahead(tmp_path, fake_embedder):
    with FakeOpenAIServer() as server:
        server.logprobs = doc_reply
        services = orlog_services(tmp_path, fake_embedder, server.base_url, llm_candidates=2)
        embedding = logical.logical_retrieve(
            "asthma other than fever", services, LogicalConfig(calibration=CAL, mode="probabilistic")
        )
        result = run_pipeline("logical-orlog", "asthma other than fever", services)
    assert docs_of(embedding)[:2] == ["positive", "distractor"]
    assert docs_of(result)[:2] == ["distractor", "positive"]  # the two rescored, reordered by the LLM
    assert docs_of(result)[2:] == docs_of(embedding)[2:]  # the rest unchanged, below them
    assert result.info["logical"]["plausibility"]["calls"] == 4


def test_orlog_without_a_reachable_llm_keeps_the_embedding_order_and_says_so(tmp_path, fake_embedder):
    services = orlog_services(tmp_path, fake_embedder, f"http://127.0.0.1:{closed_port()}/v1")
    result = run_pipeline("logical-orlog", "asthma other than fever", services)
    expected = logical.logical_retrieve(
        "asthma other than fever", services, LogicalConfig(calibration=CAL, mode="probabilistic")
    )
    assert [(h.segment.id, h.score) for h in result.ranked] == [(h.segment.id, h.score) for h in expected.ranked]
    plaus = result.info["logical"]["plausibility"]
    assert plaus["aborted"] == "down: remaining pairs not asked"
    assert plaus["fallback"] == "no plausibility at all: embedding order kept"
    assert (plaus["calls"], plaus["llm_pairs"], plaus["fallback_pairs"]) == (1, 0, 10)


def test_the_term_scorer_setting_selects_the_llm_for_the_plain_logical_pipeline(tmp_path, fake_embedder):
    with FakeOpenAIServer() as server:
        server.logprobs = doc_reply
        services = orlog_services(tmp_path, fake_embedder, server.base_url, term_scorer="llm-logprob")
        result = run_pipeline("logical", "asthma other than fever", services)
    assert result.info["logical"]["term_scorer"] == "llm-logprob"
    assert result.info["logical"]["mode"] == "fuzzy"  # fuzzy x·y, 1−x on the plausibilities
    assert docs_of(result)[0] == "distractor"
    assert result.ranked[0].score == pytest.approx(0.9 * (1 - 0.1))


# -- the one configuration (settings) and named variants ------------------------------------------------------


def test_the_default_settings_give_the_default_config():
    assert config_for(Settings()) == LogicalConfig()


def test_settings_fields_and_a_variant_s_changes_build_the_config():
    got = config_for(Settings(logical={"and_op": "min", "llm_candidates": 5, "final": "composed"}))
    assert got.ops == Operators("min", "sum", "one_minus")
    assert (got.mode, got.llm_candidates, got.final, got.term_scorer) == ("fuzzy", 5, "composed", "embedding")
    variant = config_for(Settings(logical={"llm_candidates": 5}), **VARIANTS["logical-prob"])
    assert (variant.mode, variant.llm_candidates) == ("probabilistic", 5)


def test_logical_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CHATBOT_LOGICAL__TERM_SCORER", "llm-logprob")
    monkeypatch.setenv("CHATBOT_LOGICAL__NOT_OP", "inverse")
    monkeypatch.setenv("CHATBOT_LOGICAL__PER_TERM_K", "7")
    got = config_for(Settings())
    assert (got.term_scorer, got.per_term_k) == ("llm-logprob", 7)
    assert got.ops == Operators("product", "sum", "inverse")


def test_the_pipeline_keeps_no_module_state():
    assert not hasattr(logical, "CONFIG") and not hasattr(logical, "configure")


def test_an_unknown_term_scorer_is_refused():
    with pytest.raises(ValueError, match="term_scorer"):
        Settings(logical={"term_scorer": "gpt"})
    with pytest.raises(ValueError, match=r"term_scorer 'gpt': one of \('embedding', 'llm-logprob', 'cross-encoder'\)"):
        LogicalConfig(term_scorer="gpt")


def test_every_variant_is_registered_lazily_under_its_name():
    assert {n for n in pipeline_names() if n.startswith("logical-")} == set(VARIANTS)
    for name in VARIANTS:
        get_pipeline(name)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("logical-prob", ("probabilistic", "product,sum,one_minus", "composed", True)),
        ("logical-minmax", ("fuzzy", "min,max,one_minus", "composed", True)),
        ("logical-not-inverse", ("fuzzy", "product,sum,inverse", "composed", True)),
        ("logical-itlr", ("fuzzy", "product,sum,one_minus", "composed", False)),
    ],
)
def test_a_variant_reaches_the_pipeline(tmp_path, fake_embedder, name, expected):
    services = make_services(tmp_path, fake_embedder)
    info = run_pipeline(name, "asthma other than fever", services).info["logical"]
    assert (info["mode"], info["operators"], info["final"], info["orthogonal_not"]) == expected


def test_variants_reach_the_pipeline_through_the_harness(tmp_path, fake_embedder, monkeypatch):
    from evaluation.harness import evaluate
    from tests.test_harness import _beir

    seen = []
    real = logical.logical_retrieve

    def spy(question, services, config=None):
        seen.append((question, config.mode, config.ops.label()))
        return real(question, services, config)

    monkeypatch.setattr(logical, "logical_retrieve", spy)
    data = _beir(tmp_path / "tiny", {"d1": "Asthma plans."}, {"q1": "asthma other than fever"}, {"q1": {"d1": 1}})
    settings = Settings(paths={"data_dir": tmp_path / "store"}, rerank={"kind": "none"})
    services = Services(settings, collection="tiny")
    services.__dict__["embedder"] = fake_embedder
    evaluate(data, ["logical-prob", "logical-minmax"], settings=settings, services=services, log=lambda *a: None)
    assert seen == [
        ("asthma other than fever", "probabilistic", "product,sum,one_minus"),
        ("asthma other than fever", "fuzzy", "min,max,one_minus"),
    ]


def test_eval_retrieval_set_overrides_reach_the_logical_config():
    from evaluation.harness import apply_overrides

    settings = apply_overrides(Settings(), ["logical.and_op=min", "logical.term_scorer=llm-logprob"])
    got = config_for(settings)
    assert got.ops == Operators("min", "sum", "one_minus")
    assert (got.term_scorer, got.mode, got.llm_candidates) == ("llm-logprob", "fuzzy", 20)
    with pytest.raises(ValueError, match="logical.and_op=max"):
        apply_overrides(Settings(), ["logical.and_op=max"])
