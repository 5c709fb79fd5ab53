"""The evaluation harness on a tiny judged set with known metric values."""

from __future__ import annotations

import json
import math

import pytest

from chatbot.pipeline import Services
from chatbot.settings import Settings
from evaluation.harness import compute_metrics, evaluate, load_judged, paired_tests, write_report


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
    # q2 retrieves nothing relevant: every metric 0 and still counted in the mean.
    assert m["per_query"]["q2"] == {"nDCG@10": 0.0, "P@3": 0.0, "R@50": 0.0, "MRR@10": 0.0}
    assert m["aggregate"]["MRR@10"] == pytest.approx(0.25)
    assert m["aggregate"]["P@3"] == pytest.approx(1 / 6)


def test_a_query_with_an_empty_run_scores_zero_not_dropped():
    m = compute_metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": ["a"], "q2": []})

    assert m["aggregate"]["MRR@10"] == pytest.approx(0.5)


def test_paired_tests_report_identical_pipelines_as_p_one():
    per_query = {
        "a": {"q1": {"P@3": 1.0}, "q2": {"P@3": 0.0}},
        "b": {"q1": {"P@3": 1.0}, "q2": {"P@3": 0.0}},
    }

    assert paired_tests(per_query, "P@3") == [
        {"a": "a", "b": "b", "metric": "P@3", "mean_diff": 0.0, "p_wilcoxon": 1.0, "p_ttest": 1.0}
    ]


def _beir(folder, docs, queries, qrels):
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for doc_id, text in docs.items():
            fh.write(
                json.dumps({"_id": doc_id, "title": "", "text": text, "url": f"https://example.org/{doc_id}"}) + "\n"
            )
    with (folder / "queries.jsonl").open("w") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
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
    settings = Settings(paths={"data_dir": tmp_path / "store"}, rerank={"kind": "none"})
    services = Services(settings, collection="tiny")
    services.__dict__["embedder"] = fake_embedder

    result = evaluate(data, ["bm25", "dense"], settings=settings, services=services, log=lambda *a: None)

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
