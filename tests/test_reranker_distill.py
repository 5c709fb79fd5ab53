"""Distilling the cross-encoder into a shallower one (chatbot/training/reranker_distill.py) and the benchmark
configurations that compare them side by side (evaluation/bench_reranker.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chatbot.index import SegmentIndex, make_client
from chatbot.settings import SHIPPED_RERANKER
from chatbot.splits import split_of
from chatbot.training import reranker_distill as rd
from corpus.model import Segment
from evaluation.bench_reranker import load_rerankers, parse_config


def test_top3_agreement_is_the_share_of_the_teachers_top3_the_student_keeps_per_question():
    teacher = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 9.0, 8.0, 7.0, 0.0])
    student = np.array([5.0, 4.0, 0.0, 3.0, 1.0, 9.0, 8.0, 7.0, 0.0])  # q1 swaps 3rd and 4th; q2 identical
    groups = [np.arange(5), np.arange(5, 9)]

    assert rd.top3_agreement(student, teacher, groups) == pytest.approx((2 / 3 + 1) / 2)
    assert rd.top3_agreement(teacher, teacher, groups) == 1.0
    assert rd.top3_agreement(student, teacher, []) == 0.0


def test_only_train_split_questions_are_read_and_a_limit_samples_them_reproducibly(tmp_path):
    ids = [f"q{i}" for i in range(40)]
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": f"question {q}"}) + "\n" for q in ids), encoding="utf-8"
    )
    train = [q for q in ids if split_of(q) == "train"]

    got = rd.train_questions(tmp_path, "s", None, seed=1)
    assert got == sorted((q, f"question {q}") for q in train)
    sample = rd.train_questions(tmp_path, "s", 5, seed=1)
    assert len(sample) == 5 and set(sample) <= set(got)
    assert sample == rd.train_questions(tmp_path, "s", 5, seed=1)


def _segment(i: int, text: str, title: str, heading: str = "") -> Segment:
    return Segment(
        id=f"d{i}#0", doc_id=f"d{i}", text=text, title=title, heading=heading, source_url="https://x.org", position=0
    )


def test_pairs_are_the_first_stage_top_k_read_as_the_reranker_reads_them(tmp_path, fake_embedder):
    index = SegmentIndex(make_client(tmp_path), "eval-test", fake_embedder)
    index.add_segments(
        [
            _segment(0, "Asthma causes wheezing.", "Asthma"),
            _segment(1, "Diabetes and asthma can occur together.", "Diabetes", "Other conditions"),
            _segment(2, "Fever in children.", "Fever"),
            _segment(3, "x" * 1000, "Sleep"),
        ]
    )
    questions = [("q1", "what is asthma?"), ("q2", "sleep problems")]

    pairs = rd.mine_pairs(questions, "set", "eval-test", tmp_path, 2, fake_embedder)

    assert [(p.qid, p.rank, p.passage) for p in pairs[:3]] == [
        ("q1", 0, "Asthma\nAsthma causes wheezing."),
        ("q1", 1, "Diabetes: Other conditions\nDiabetes and asthma can occur together."),
        ("q2", 0, "Sleep\n" + "x" * 900),  # cut at the reranker's 900 characters
    ]
    assert [(p.qid, p.rank) for p in pairs[3:]] == [("q2", 1)]  # the rest tie at cosine 0
    assert {p.group for p in pairs} == {"set"}


def test_a_missing_index_is_a_clear_error(tmp_path, fake_embedder):
    with pytest.raises(Exception, match="no index named 'eval-nothing'"):
        rd.mine_pairs([("q", "asthma")], "set", "eval-nothing", tmp_path, 2, fake_embedder)


@pytest.mark.integration
def test_the_student_keeps_the_teachers_first_layers_and_exports_a_loadable_onnx_model(tmp_path):
    import torch

    from chatbot.stages.rerank import CrossEncoderReranker
    from chatbot.training.onnx_export import export_onnx

    if not (SHIPPED_RERANKER / "config.json").is_file():
        pytest.fail(f"the shipped reranker is missing from {SHIPPED_RERANKER}")
    teacher = rd.build_student(SHIPPED_RERANKER, 6)
    student = rd.build_student(SHIPPED_RERANKER, 2)

    assert student.config.num_hidden_layers == 2 and len(student.bert.encoder.layer) == 2
    assert torch.equal(
        student.bert.encoder.layer[1].output.dense.weight, teacher.bert.encoder.layer[1].output.dense.weight
    )
    assert torch.equal(student.classifier.weight, teacher.classifier.weight)

    rd.save_student(student, SHIPPED_RERANKER, tmp_path / "L2", serve_max_length=128)
    export_onnx(tmp_path / "L2", log=lambda _m: None)
    config = json.loads((tmp_path / "L2" / "sentence_bert_config.json").read_text("utf-8"))
    assert config["max_seq_length"] == 128
    onnx = CrossEncoderReranker(tmp_path / "L2", threads=1, runtime="onnx", max_length=128)
    torch_model = CrossEncoderReranker(tmp_path / "L2", threads=1, runtime="torch", max_length=128)
    pairs = [("what causes asthma?", "Asthma\nAsthma is a lung condition."), ("fever", "A solar eclipse.")]
    assert onnx.note is None and onnx.runtime == "onnx-int8"
    np.testing.assert_allclose(onnx.predict(pairs), torch_model.predict(pairs), atol=0.05)


def test_bench_configurations_name_runtime_length_candidates_and_optionally_a_model():
    assert parse_config("onnx:128:30") == ("onnx", 128, 30, None)
    assert parse_config("onnx-fp32:256:50:L2") == ("onnx-fp32", 256, 50, "L2")
    for bad in ("onnx:128", "gpu:128:30", "onnx:x:30", "onnx:128:30:"):
        with pytest.raises(ValueError, match="expected RUNTIME:MAX_LENGTH:CANDIDATES"):
            parse_config(bad)
    with pytest.raises(ValueError, match="names model 'L9', which no --model-dir NAME=DIR gives"):
        load_rerankers([parse_config("onnx:128:30:L9")], SHIPPED_RERANKER, 1, {})


BENCH = {
    "split": "test",
    "test": {
        "quality": {
            "s": {
                "dense": {"P@3": 0.40},
                "ref": {"P@3": 0.55},
                "fast": {"P@3": 0.50},
                "slow_worse": {"P@3": 0.45},
                "fastest": {"P@3": 0.30},
            }
        },
        "speed": {
            "ref": {"cpu_p50_ms": 2000.0},
            "fast": {"cpu_p50_ms": 500.0},
            "slow_worse": {"cpu_p50_ms": 900.0},
            "fastest": {"cpu_p50_ms": 100.0},
        },
    },
}


def test_the_frontier_keeps_configurations_nothing_beats_on_both_speed_and_quality(tmp_path):
    from evaluation.plot_reranker_frontier import frontier_points, pareto, plot

    points = frontier_points(BENCH, "P@3")["s"]
    assert points == [
        ("ref", 2000.0, 0.55),
        ("fast", 500.0, 0.50),
        ("slow_worse", 900.0, 0.45),
        ("fastest", 100.0, 0.30),
    ]
    assert pareto(points) == ["ref", "fast", "fastest"]
    out = plot(BENCH, "P@3", tmp_path / "f.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _pairs(*qids: str) -> list[rd.Pair]:
    return [rd.Pair(q, "s", f"question {q}", f"passage {k}", k) for k, q in enumerate(qids)]


def test_listwise_batches_hold_every_candidate_of_one_question_and_mse_batches_cut_the_shuffle():
    import random

    train = _pairs("a", "a", "b", "a", "b", "c")
    listwise = rd.training_batches(train, "listwise", 4, 2, random.Random(0))
    assert len(listwise) == 6  # 3 questions x 2 epochs
    assert sorted(sorted(b) for b in listwise[:3]) == [[0, 1, 3], [2, 4], [5]]
    assert sorted(sorted(b) for b in listwise[3:]) == [[0, 1, 3], [2, 4], [5]]

    mse = rd.training_batches(train, "mse", 4, 1, random.Random(0))
    assert [len(b) for b in mse] == [4, 2] and sorted(i for b in mse for i in b) == list(range(6))


def test_the_listwise_loss_is_zero_when_the_student_matches_the_teacher_up_to_a_shift_and_mse_is_not():
    import torch

    teacher = torch.tensor([3.0, 1.0, -2.0])
    shifted = teacher + 5.0  # the same order and softmax, other logits

    assert rd.distillation_loss(shifted, teacher, "listwise", mse_weight=0.0).item() == pytest.approx(0.0, abs=1e-6)
    assert rd.distillation_loss(shifted, teacher, "mse").item() == pytest.approx(25.0)
    assert rd.distillation_loss(shifted, teacher, "listwise", mse_weight=0.1).item() == pytest.approx(2.5, abs=1e-5)
    swapped = torch.tensor([1.0, 3.0, -2.0])
    assert rd.distillation_loss(swapped, teacher, "listwise", mse_weight=0.0).item() > 0.5
