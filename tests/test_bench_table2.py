"""evaluation/bench_table2.py (the seed's Table 2) on hand-made keyword vectors and the fake OpenAI server:
exact cosines per prompt variant, the shared HyDoc cache, failures and the report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chatbot.pipeline import Services, run_pipeline
from chatbot.settings import Settings
from evaluation.bench_table2 import mean_sd, measure, relevant_cosines, report
from tests.conftest import FakeEmbedder
from tests.fake_openai import FakeOpenAIServer

# Keyword axes (asthma, diabetes, fever, sleep, other): each document lies on one axis.
DOCS = {
    "d-asthma": ("Asthma", "Asthma inhalers and asthma plans."),
    "d-fever": ("Fever", "Fever in children: fever above 38C."),
    "d-sleep": ("Sleep", "Sleep hygiene helps sleep."),
    "d-diabetes": ("Diabetes", "Diabetes and blood sugar."),
}
# No keyword in either question: the bare question lies on the "other" axis (cosine 0 with every document).
Q1 = "Why do I wake up coughing at night?"  # evaluative (heuristic), relevant: d-asthma
Q2 = "What does a high temperature in babies mean?"  # other, relevant: d-fever
PASSAGES = {
    # zero-shot: q1 drifts to sleep (cos 0), q2 is on fever (cos 1)
    ("hyde", Q1): "Coughing at night often comes from poor sleep habits and sleep apnoea.",
    ("hyde", Q2): "A fever in babies is a high temperature; a fever needs care.",
    # naive-RAG: one relevant keyword, one sleep: cos 1/sqrt(2)
    ("naive-rag", Q1): "Asthma often gets worse at night and disturbs your sleep.",
    ("naive-rag", Q2): "A fever in babies can disturb their sleep, so watch them.",
    # cot: two relevant keywords, one sleep: cos 2/sqrt(5)
    ("cot", Q1): "Asthma at night: asthma symptoms such as coughing can wake you from sleep.",
    ("cot", Q2): "Fever in babies: a fever makes babies sleep badly.",
}


def reply(body) -> str:
    system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
    last_user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    question = Q1 if Q1 in last_user else Q2
    if "PASSAGE:" in system:  # cot_one_call: labelled analysis, then the passage
        return f"TYPE: evaluative\nPRESUPPOSES: x\nIMPLIES: y\nPASSAGE: {PASSAGES[('cot', question)]}"
    if "Extracts:" in last_user:
        return PASSAGES[("naive-rag", question)]
    return PASSAGES[("hyde", question)]


def beir(folder):
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for doc_id, (title, text) in DOCS.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text, "url": f"https://x.org/{doc_id}"}) + "\n")
    with (folder / "queries.jsonl").open("w") as fh:
        fh.write(json.dumps({"_id": "q1", "text": Q1}) + "\n")
        fh.write(json.dumps({"_id": "q2", "text": Q2}) + "\n")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td-asthma\t1\nq2\td-fever\t2\nq2\td-sleep\t0\n")
    return folder


@pytest.fixture
def server():
    with FakeOpenAIServer(reply) as fake:
        yield fake


def make_services(tmp_path, base_url: str) -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "store"},
        index={"exact": True},
        rerank={"kind": "none"},
        llm={"base_url": base_url, "autostart": False, "timeout_s": 5.0, "model": "fake-model"},
    )
    services = Services(settings, collection="table2")
    services.__dict__["embedder"] = FakeEmbedder()
    return services


VARIANTS = ["question", "hyde", "naive-rag", "cot"]
R2, R5 = 1 / math.sqrt(2), 2 / math.sqrt(5)


def test_relevant_cosines_are_the_best_and_the_mean_over_relevant_segments():
    segments = np.array([[1.0, 0.0], [0.6, 0.8]])

    assert relevant_cosines(np.array([0.6, 0.8]), segments) == pytest.approx((1.0, 0.8))
    with pytest.raises(ValueError, match="no relevant segment in the index"):
        relevant_cosines(np.array([1.0, 0.0]), np.zeros((0, 2)))


def test_mean_sd_uses_the_sample_standard_deviation():
    assert mean_sd([1.0, 3.0]) == pytest.approx((2.0, math.sqrt(2)))
    assert mean_sd([5.0]) == (5.0, 0.0)
    assert mean_sd([]) == (None, None)


def test_table2_cosines_per_prompt_variant_are_exact(tmp_path, server):
    services = make_services(tmp_path, server.base_url)

    result = measure(services, beir(tmp_path / "t2"), VARIANTS, None, "all", "all", log=lambda *a: None)

    s = result["summary"]["variants"]
    assert {v: (e["n"], e["cos_best"]["mean"], e["cos_best"]["sd"]) for v, e in s.items()} == {
        "question": (2, 0.0, 0.0),
        "hyde": (2, 0.5, round(R2, 4)),  # [0, 1]
        "naive-rag": (2, round(R2, 4), 0.0),
        "cot": (2, round(R5, 4), 0.0),
    }
    # Single-segment documents: the mean over relevant segments is the best one.
    assert s["cot"]["cos_all"] == s["cot"]["cos_best"]
    # The search vector averages the HyDoc with the question ("other" axis): cot 2/sqrt(10), naive-RAG 1/2.
    assert s["cot"]["cos_search"]["mean"] == round(2 / math.sqrt(10), 4)
    assert s["naive-rag"]["cos_search"]["mean"] == 0.5
    assert s["hyde"]["cos_search"]["mean"] == round(R2 / 2, 4)  # [0, 1/sqrt(2)]
    assert s["question"]["cos_search"]["mean"] == 0.0
    # cot's search vector ranks the relevant document first for both queries.
    assert (s["cot"]["nDCG@10"], s["cot"]["P@3"]) == (1.0, 0.3333)
    assert result["summary"]["failures"] == {"question": {}, "hyde": {}, "naive-rag": {}, "cot": {}}
    assert len(server.requests) == 6  # three LLM variants x two questions, cot in one call
    by_type = result["summary"]["by_type"]
    assert (by_type["evaluative"]["queries"], by_type["other"]["queries"]) == (1, 1)
    assert by_type["evaluative"]["variants"]["cot"]["cos_best"] == {"mean": round(R5, 4), "sd": 0.0}
    assert by_type["evaluative"]["variants"]["hyde"]["cos_best"]["mean"] == 0.0
    assert by_type["other"]["variants"]["hyde"]["cos_best"]["mean"] == 1.0
    tests = {(t["a"], t["b"]): t["mean_diff"] for t in result["summary"]["tests"]}
    assert tests[("question", "cot")] == pytest.approx(R5, abs=1e-6)
    assert len(tests) == 6
    # The naive-RAG prompt carries the pre-retrieved extracts; the zero-shot one does not.
    rag = [b for b in server.requests if "Extracts:" in b["messages"][-1]["content"]]
    assert len(rag) == 4  # naive-rag and cot
    # Per-query rows hold ids and numbers only.
    assert {r["query_id"] for r in result["per_query"]} == {"q1", "q2"}
    assert not any(Q1 in json.dumps(r) or Q2 in json.dumps(r) for r in result["per_query"])

    text = report(result, "cmd", tmp_path / "t2", services.settings, "t")
    assert (
        "| Question + pragmatic context + naive-RAG (cot) | 2 | 0.894 ± 0.000 | 0.894 ± 0.000 | 0.632 ± 0.000 |" in text
    )
    assert "| Question (zero-shot HyDoc) | 2 | 0.500 ± 0.707 |" in text
    assert "Failed generations (variant left out for that query): none" in text


def test_table2_shares_the_hydoc_cache_with_the_pipelines(tmp_path, server):
    services = make_services(tmp_path, server.base_url)
    data = beir(tmp_path / "t2")
    measure(services, data, VARIANTS, None, "all", "all", log=lambda *a: None)
    assert len(server.requests) == 6

    again = measure(services, data, VARIANTS, None, "all", "all", log=lambda *a: None)
    hyde_result = run_pipeline("hyde", Q1, services)
    cot_result = run_pipeline("cot", Q1, services)

    assert len(server.requests) == 6  # no new LLM call: the bench and the pipelines read the same entries
    assert {v: e["cache_hits"] for v, e in again["summary"]["variants"].items()} == {
        "question": 0,
        "hyde": 2,
        "naive-rag": 2,
        "cot": 2,
    }
    assert (hyde_result.info["cache"], cot_result.info["cache"]) == ("hit", "hit")
    assert cot_result.info["hydoc"] == PASSAGES[("cot", Q1)]


def test_failed_generations_leave_the_variant_out_and_are_counted(tmp_path, server):
    server.mode = "nonsense"
    services = make_services(tmp_path, server.base_url)

    result = measure(services, beir(tmp_path / "t2"), VARIANTS, 1, "all", "all", log=lambda *a: None)

    s = result["summary"]
    assert {v: e["n"] for v, e in s["variants"].items()} == {"question": 1, "hyde": 0, "naive-rag": 0, "cot": 0}
    assert s["failures"] == {"question": {}, "hyde": {"garbage": 1}, "naive-rag": {"garbage": 1}, "cot": {"garbage": 1}}
    assert s["tests"] == []
    text = report(result, "cmd", tmp_path / "t2", services.settings, "t")
    assert (
        "Failed generations (variant left out for that query): hyde garbage 1; naive-rag garbage 1; cot garbage 1"
        in text
    )
    assert "| Question (zero-shot HyDoc) | 0 | – | – | – | – | – | – | 0 |" in text


def test_type_filter_keeps_only_that_type(tmp_path, server):
    services = make_services(tmp_path, server.base_url)

    result = measure(services, beir(tmp_path / "t2"), ["question"], None, "all", "evaluative", log=lambda *a: None)

    assert result["queries"] == 1
    assert {r["query_id"] for r in result["per_query"]} == {"q1"}
    assert server.requests == []
