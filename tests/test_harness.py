"""The evaluation harness on a tiny judged set with known metric values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chatbot.pipeline import Services
from chatbot.settings import Settings
from evaluation import harness
from evaluation.harness import (
    apply_overrides,
    by_type,
    compute_metrics,
    content_level,
    evaluate,
    load_judged,
    paired_tests,
    query_type,
    shared_text_groups,
    write_report,
)
from tests.conftest import FakeEmbedder
from tests.fake_openai import FakeOpenAIServer


def test_metrics_on_hand_made_runs_have_exact_values():
    qrels = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"x": 1}}
    runs = {"q1": ["b", "a", "d", "c"], "q2": ["y", "z"]}

    m = compute_metrics(qrels, runs)

    # q1: graded gains a=1 at rank 2, c=2 at rank 4; ideal c=2, a=1.
    dcg = 1 / math.log2(3) + 2 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    q1 = m["per_query"]["q1"]
    assert q1["nDCG@10"] == pytest.approx(dcg / idcg)
    assert q1["P@3"] == pytest.approx(1 / 3)
    assert q1["R@50"] == pytest.approx(1.0)
    assert q1["MRR@10"] == pytest.approx(0.5)
    assert q1["Success@1"] == 0.0  # the first document, b, is judged 0
    # q2 retrieves nothing relevant: every metric 0 and still counted in the mean.
    assert m["per_query"]["q2"] == {"nDCG@10": 0.0, "P@3": 0.0, "R@50": 0.0, "MRR@10": 0.0, "Success@1": 0.0}
    assert m["aggregate"]["MRR@10"] == pytest.approx(0.25)
    assert m["aggregate"]["P@3"] == pytest.approx(1 / 6)


def test_a_query_with_an_empty_run_scores_zero_not_dropped():
    m = compute_metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": ["a"], "q2": []})

    assert m["aggregate"]["MRR@10"] == pytest.approx(0.5)
    assert m["aggregate"]["Success@1"] == pytest.approx(0.5)


def test_shared_text_groups_name_each_copy_by_its_first_id(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    docs = [
        ("q1_A1", "Rest and fluids."),
        ("q1_A2", "Antivirals."),
        ("q2_A1", "rest  and FLUIDS."),
        ("q3_A1", "x"),
        ("e1", " "),
        ("e2", ""),
    ]
    corpus.write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs))

    assert shared_text_groups(corpus) == {"q1_A1": "q1_A1", "q2_A1": "q1_A1"}


def test_content_level_judges_a_copy_as_the_judged_copy_and_a_repeat_earns_nothing():
    groups = {"q1_A1": "q1_A1", "q2_A1": "q1_A1"}
    qrels = {"q2": {"q2_A1": 2, "q2_A2": 0, "q2_A3": 1}}
    # q1_A1 is the text judged 2 for q2, listed under q1's id; q2_A1 repeats it
    with_repeat = {"q2": ["q1_A1", "q2_A1", "q2_A3", "q2_A2"]}
    distinct = {"q2": ["q1_A1", "q2_A3", "q2_A2"]}

    plain = compute_metrics(qrels, with_repeat)["per_query"]["q2"]
    repeat = content_level(qrels, with_repeat, groups)["per_query"]["q2"]
    content = content_level(qrels, distinct, groups)["per_query"]["q2"]

    assert (plain["P@3"], plain["Success@1"]) == (pytest.approx(2 / 3), 0.0)
    assert (repeat["P@3"], repeat["Success@1"], repeat["R@50"]) == (pytest.approx(2 / 3), 1.0, 1.0)
    assert (content["P@3"], content["Success@1"], content["R@50"]) == (pytest.approx(2 / 3), 1.0, 1.0)
    # the repeat holds rank 2, so the grade-1 answer sits at rank 3, not 2
    assert repeat["nDCG@10"] < content["nDCG@10"]
    assert content_level(qrels, {"q2": ["q1_A1", "q2_A1", "q2_A2"]}, groups)["per_query"]["q2"]["P@3"] == (
        pytest.approx(1 / 3)
    )


def test_paired_tests_report_identical_pipelines_as_p_one():
    per_query = {
        "a": {"q1": {"P@3": 1.0}, "q2": {"P@3": 0.0}},
        "b": {"q1": {"P@3": 1.0}, "q2": {"P@3": 0.0}},
    }

    assert paired_tests(per_query, "P@3") == [
        {"a": "a", "b": "b", "metric": "P@3", "mean_diff": 0.0, "p_wilcoxon": 1.0, "p_ttest": 1.0}
    ]


def _beir(folder, docs, queries, qrels, meta=None):
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for doc_id, text in docs.items():
            fh.write(
                json.dumps({"_id": doc_id, "title": "", "text": text, "url": f"https://example.org/{doc_id}"}) + "\n"
            )
    with (folder / "queries.jsonl").open("w") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text, **(meta or {}).get(qid, {})}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, ds in qrels.items() for d, s in ds.items()]
    (folder / "qrels.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_load_judged_keeps_only_queries_with_a_relevant_document(tmp_path):
    data = _beir(
        tmp_path / "set",
        {"a": "asthma"},
        {"q1": "asthma?", "q2": "nothing relevant", "q3": "no qrels"},
        {"q1": {"a": 1}, "q2": {"a": 0}},
    )

    judged = load_judged(data)

    assert judged.queries == {"q1": "asthma?"}
    assert judged.qrels == {"q1": {"a": 1}}


def test_load_judged_names_the_missing_file(tmp_path):
    (tmp_path / "empty").mkdir()

    with pytest.raises(FileNotFoundError, match=r"not a BEIR-style folder: corpus.jsonl is missing"):
        load_judged(tmp_path / "empty")


def _evaluate_on_fake_vectors(data, pipelines, tmp_path, fake_embedder):
    """``evaluate`` with no reranker, the fake embedder and a store under tmp_path, silently."""
    settings = Settings(paths={"data_dir": tmp_path / "store"}, rerank={"kind": "none"})
    services = Services(settings, collection=data.name)
    services.__dict__["embedder"] = fake_embedder
    return evaluate(data, pipelines, settings=settings, services=services, log=lambda *a: None)


def test_evaluate_end_to_end_on_fake_vectors(tmp_path, fake_embedder):
    data = _beir(
        tmp_path / "tiny",
        {
            "d-asthma": "Asthma inhalers and asthma plans.",
            "d-fever": "Fever in children: fever above 38C.",
            "d-sleep": "Sleep hygiene helps sleep.",
        },
        {"q-asthma": "asthma", "q-fever": "fever", "q-sleep": "sleep"},
        {"q-asthma": {"d-asthma": 1}, "q-fever": {"d-fever": 1}, "q-sleep": {"d-sleep": 1, "d-fever": 0}},
    )
    result = _evaluate_on_fake_vectors(data, ["bm25", "dense"], tmp_path, fake_embedder)

    assert result["summary"]["queries"] == 3
    for name in ("bm25", "dense"):
        metrics = result["summary"]["pipelines"][name]
        assert (metrics["nDCG@10"], metrics["P@3"], metrics["R@50"], metrics["MRR@10"]) == (1.0, 0.3333, 1.0, 1.0)
    assert result["index"]["segments"] == 3
    assert [r["top"][0]["doc_id"] for r in result["per_query"] if r["pipeline"] == "dense"] == [
        "d-asthma",
        "d-fever",
        "d-sleep",
    ]

    report = write_report(result, tmp_path / "out", "tiny", "chatbot eval retrieval --data tiny")

    assert "| dense | 1.0000 | 0.3333 | 1.0000 | 1.0000 |" in report.read_text()
    assert (tmp_path / "out" / "tiny.png").stat().st_size > 0
    assert len((tmp_path / "out" / "tiny.per_query.jsonl").read_text().splitlines()) == 6


def test_a_passage_indexed_under_two_ids_is_listed_once_and_scored_once_at_content_level(tmp_path, fake_embedder):
    # q-fever's judged answer is also in the corpus under q-other's id (as MEDIQA lists an answer per question)
    data = _beir(
        tmp_path / "copies",
        {
            "q-fever_A1": "Fever in children: fever above 38C.",
            "q-other_A1": "Fever in children: fever above 38C.",
            "q-fever_A2": "Asthma inhalers and asthma plans.",
        },
        {"q-fever": "fever"},
        {"q-fever": {"q-fever_A1": 1, "q-fever_A2": 0}},
    )
    result = _evaluate_on_fake_vectors(data, ["dense"], tmp_path, fake_embedder)

    assert result["index"]["shared_passages"] == 1  # `chatbot ingest` reports it too
    (row,) = result["per_query"]
    assert len(row["top"]) == 2  # one copy of the fever passage, then the asthma answer
    assert row["top"][1]["doc_id"] == "q-fever_A2"
    content = result["summary"]["content_level"]
    assert content["documents_sharing_text"] == 2
    assert content["pipelines"]["dense"]["Success@1"] == 1.0
    assert (row["content/Success@1"], row["content/P@3"]) == (1.0, pytest.approx(1 / 3))
    report = write_report(result, tmp_path / "out", "copies", "chatbot eval retrieval --data copies")
    assert "| dense | 1.0000 | 0.3333 | 1.0000 | 1.0000 | 1.0000 |" in report.read_text()


# -- question-type split ---------------------------------------------------------------------------------

DOCS = {
    "d-asthma": "Asthma inhalers and asthma plans.",
    "d-fever": "Fever in children: fever above 38C.",
    "d-sleep": "Sleep hygiene helps sleep.",
}


def _typed_set(tmp_path):
    """Two evaluative questions (one labelled in the data, one by the heuristic) and two others (one by the
    heuristic despite a MedQuAD-style qtype, one labelled); q-mixed finds its document at rank 2."""
    return _beir(
        tmp_path / "typed",
        DOCS,
        {
            "q-asthma": "asthma",
            "q-fever": "Should I worry about a fever?",
            "q-sleep": "sleep",
            "q-mixed": "fever fever asthma",
        },
        {"q-asthma": {"d-asthma": 1}, "q-fever": {"d-fever": 1}, "q-sleep": {"d-sleep": 1}, "q-mixed": {"d-asthma": 1}},
        meta={
            "q-asthma": {"question_type": "evaluative"},
            "q-sleep": {"qtype": "treatment"},
            "q-mixed": {"type": "informational"},
        },
    )


@pytest.mark.parametrize(
    ("text", "meta", "expected"),
    [
        ("asthma", {"question_type": "Evaluative"}, ("evaluative", "metadata:question_type")),
        ("Why am I so tired?", {"type": "informational"}, ("other", "metadata:type")),
        ("Why am I so tired?", {"qtype": "information"}, ("evaluative", "heuristic")),
        ("What is asthma?", {"type": "unknown label"}, ("other", "heuristic")),
    ],
)
def test_query_type_prefers_a_known_label_in_the_data_then_the_heuristic(text, meta, expected):
    assert query_type(text, meta) == expected


def test_every_report_splits_metrics_by_question_type(tmp_path, fake_embedder):
    data = _typed_set(tmp_path)
    result = _evaluate_on_fake_vectors(data, ["dense"], tmp_path, fake_embedder)

    # q-mixed: query (asthma 1, fever 2) ranks d-fever, d-asthma, d-sleep: the relevant one at rank 2.
    mixed_ndcg = 1 / math.log2(3)
    assert result["summary"]["pipelines"]["dense"]["nDCG@10"] == round((3 + mixed_ndcg) / 4, 4)
    types = result["summary"]["by_type"]
    assert list(types) == ["evaluative", "other"]
    assert types["evaluative"]["queries"] == 2
    assert types["evaluative"]["source"] == {"metadata:question_type": 1, "heuristic": 1}
    ev = types["evaluative"]["pipelines"]["dense"]
    assert (ev["nDCG@10"], ev["P@3"], ev["R@50"], ev["MRR@10"]) == (1.0, 0.3333, 1.0, 1.0)
    assert types["other"]["queries"] == 2
    assert types["other"]["source"] == {"heuristic": 1, "metadata:type": 1}
    other = types["other"]["pipelines"]["dense"]
    assert (other["nDCG@10"], other["P@3"], other["R@50"], other["MRR@10"]) == (
        round((1 + mixed_ndcg) / 2, 4),
        0.3333,
        1.0,
        0.75,
    )
    assert set(other["latency_ms"]) == {"p50", "p95"}
    assert {r["query_id"]: r["type"] for r in result["per_query"]} == {
        "q-asthma": "evaluative",
        "q-fever": "evaluative",
        "q-sleep": "other",
        "q-mixed": "other",
    }

    report = write_report(result, tmp_path / "out", "typed", "chatbot eval retrieval --data typed").read_text()
    assert (
        "type from: evaluative 2 (metadata:question_type 1, heuristic 1), other 2 (heuristic 1, metadata:type 1)"
        in report
    )
    assert "| evaluative | 2 | dense | 1.0000 | 0.3333 | 1.0000 | 1.0000 |" in report
    assert "| other | 2 | dense | 0.8155 | 0.3333 | 1.0000 | 0.7500 |" in report
    saved = json.loads((tmp_path / "out" / "typed.summary.json").read_text())
    assert saved["by_type"] == types
    # The existing summary keys keep their shape beside the new one.
    assert set(saved["pipelines"]["dense"]) == {"nDCG@10", "P@3", "R@50", "MRR@10", "Success@1", "latency_ms"}


def test_a_type_without_queries_is_reported_empty():
    out = by_type(
        {"q1": ("other", "heuristic")}, {"p": {"q1": dict.fromkeys(harness.METRIC_NAMES, 1.0)}}, {"p": {"q1": 7.0}}
    )

    assert out["evaluative"] == {"queries": 0, "source": {}, "pipelines": {}}
    assert out["other"]["pipelines"]["p"]["latency_ms"] == {"p50": 7.0, "p95": 7.0}


# -- --set overrides ---------------------------------------------------------------------------------------


def test_overrides_are_validated_and_typed():
    settings = apply_overrides(
        Settings(),
        ["hyde.samples=2", "hyde.average_question=false", "hyde.rerank_with=question+hydoc", "hyde.max_tokens=128"],
    )

    assert settings.hyde.samples == 2
    assert settings.hyde.average_question is False
    assert settings.hyde.rerank_with == "question+hydoc"
    assert settings.hyde.max_tokens == 128
    assert settings.hyde.cot_calls == "one"  # untouched fields keep their value


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("hyde.samples", r"expected GROUP\.FIELD=VALUE"),
        ("samples=2", r"expected GROUP\.FIELD=VALUE"),
        ("hide.samples=2", r"unknown settings group 'hide'"),
        ("hyde.sample=2", r"hyde has no setting 'sample'"),
        ("hyde.samples=0", r"'hyde\.samples=0': Input should be greater than or equal to 1"),
        ("hyde.rerank_with=hydoc", r"Input should be 'question' or 'question\+hydoc'"),
        ("hyde.samples=[1", r"invalid JSON value"),
    ],
)
def test_bad_overrides_are_errors(item, message):
    with pytest.raises(ValueError, match=message):
        apply_overrides(Settings(), [item])


def _tiny_set_with_fake_embedder(tmp_path, monkeypatch) -> tuple[Path, dict]:
    """A two-query BEIR folder, and ``harness.evaluate`` patched to use the fake embedder; the dict receives
    the settings each run used."""
    data = _beir(
        tmp_path / "tiny",
        DOCS,
        {"q-sleep": "Why am I so tired?", "q-fever": "fever"},
        {"q-sleep": {"d-sleep": 1}, "q-fever": {"d-fever": 1}},
    )
    real_evaluate = harness.evaluate
    seen: dict = {}

    def with_fake_embedder(data, pipelines, limit, split, settings, log):
        seen["settings"] = settings
        services = Services(settings, collection="tiny")
        services.__dict__["embedder"] = FakeEmbedder()
        return real_evaluate(data, pipelines, limit, split, settings=settings, services=services, log=log)

    monkeypatch.setattr(harness, "evaluate", with_fake_embedder)
    return data, seen


def test_cli_set_overrides_reach_the_pipeline(tmp_path, monkeypatch):
    from chatbot import cli

    data, seen = _tiny_set_with_fake_embedder(tmp_path, monkeypatch)
    passage = "Tiredness is often caused by poor sleep; regular sleep habits help."
    with FakeOpenAIServer(passage) as server:
        rc = cli.main(
            [
                "eval",
                "retrieval",
                "--data",
                str(data),
                "--pipeline",
                "hyde",
                "--json",
                "--out",
                str(tmp_path / "out"),
                "--set",
                f"paths.data_dir={tmp_path / 'store'}",
                "--set",
                f"llm.base_url={server.base_url}",
                "--set",
                "llm.autostart=false",
                "--set",
                "rerank.kind=none",
                "--set",
                "hyde.samples=2",
                "--set",
                "hyde.max_tokens=96",
            ]
        )

    assert rc == 0
    assert seen["settings"].hyde.samples == 2
    # two HyDoc samples per question, the first greedy, each with the overridden length budget
    assert len(server.requests) == 4
    assert [b["temperature"] for b in server.requests] == [0, 0.7, 0, 0.7]
    assert {b["max_tokens"] for b in server.requests} == {96}
    saved = json.loads((tmp_path / "out" / "tiny.summary.json").read_text())
    assert saved["settings"]["hyde"]["samples"] == 2
    assert "hyde.samples=2" in saved["settings"]["overrides"]
    assert saved["fallbacks"] == {"hyde": {}}


def test_cli_bad_override_exits_2_naming_it(tmp_path, capsys):
    from chatbot import cli

    data = _beir(tmp_path / "tiny", DOCS, {"q": "fever"}, {"q": {"d-fever": 1}})

    rc = cli.main(["eval", "retrieval", "--data", str(data), "--set", "hyde.samples=many"])

    assert rc == 2
    assert "error: --set 'hyde.samples=many': Input should be a valid integer" in capsys.readouterr().err


def test_llm_fallbacks_are_counted_in_the_table_and_strict_exits_4(tmp_path, monkeypatch, capsys):
    from chatbot import cli
    from tests.fake_openai import closed_port

    data, _ = _tiny_set_with_fake_embedder(tmp_path, monkeypatch)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    args = ["eval", "retrieval", "--data", str(data), "--pipeline", "hyde", "--pipeline", "dense", "--json"]
    args += ["--out", str(tmp_path / "out"), "--set", f"paths.data_dir={tmp_path / 'store'}"]
    args += ["--set", f"llm.base_url={dead}", "--set", "llm.autostart=false", "--set", "rerank.kind=none"]

    assert cli.main(args) == 0
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert summary["llm_fallbacks"] == {"hyde": 2, "dense": 0}
    assert "warning: 2 queries fell back to naive retrieval because the LLM failed" in out.err
    report = (tmp_path / "out" / "tiny.md").read_text()
    header = "| pipeline | nDCG@10 | P@3 | R@50 | MRR@10 | Success@1 | latency p50 ms | p95 ms | LLM fallbacks |"
    assert header in report
    assert report.count(" | 2 |\n") == 1  # the hyde row's last column

    assert cli.main([*args, "--strict"]) == 4
