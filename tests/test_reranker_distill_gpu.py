"""The device trainer of shallow rerankers (chatbot/training/reranker_distill_gpu.py), the data file it reads
(reranker_distill.export_groups) and the CPU step that turns its output back into a loadable model
(reranker_distill.assemble_student)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chatbot.settings import SHIPPED_RERANKER
from chatbot.training import reranker_distill as rd
from chatbot.training import reranker_distill_gpu as gpu

SCRIPT = Path(gpu.__file__)


def test_configs_name_layers_length_and_learning_rate():
    assert gpu.parse_config("L3:128") == {"name": "L3_128", "layers": 3, "spread": False, "max_length": 128, "lr": 1e-4}
    assert gpu.parse_config("L2s:64:3e-4") == {
        "name": "L2s_64_3e-4",
        "layers": 2,
        "spread": True,
        "max_length": 64,
        "lr": 3e-4,
    }
    with pytest.raises(ValueError, match="expected L<layers>"):
        gpu.parse_config("3:128")


def test_a_student_keeps_the_first_layers_or_spreads_them_from_first_to_last():
    assert gpu.chosen_layers(6, 3, spread=False) == [0, 1, 2]
    assert gpu.chosen_layers(6, 2, spread=True) == [0, 5]
    assert gpu.chosen_layers(6, 3, spread=True) == [0, 2, 5]
    assert gpu.chosen_layers(6, 1, spread=True) == [0]


def test_fusion_ranks_by_both_orders_and_keeps_the_first_stage_order_on_ties():
    # candidates in first-stage order; the reranker puts the third first: candidates 0 and 2 tie at 1/61 + 1/63,
    # the first stage's order breaks the tie, and candidate 1 (1/62 + 1/62) falls just below them
    assert gpu.rrf_order(np.array([1.0, 2.0, 9.0, 0.0])).tolist() == [0, 2, 1, 3]
    assert gpu.rrf_order(np.array([1.0, 2.0, 9.0, 0.0]), k=0).tolist() == [0, 2, 1, 3]
    assert gpu.rrf_order(np.array([0.0, 1.0, 2.0, 9.0]), k=60).tolist() == [0, 3, 1, 2]


def test_the_device_trainers_fusion_is_the_rerank_stages():
    """The trainer cannot import the product on the device; its copy of the fusion must rank as the stage does."""
    from chatbot.stages.rerank import rrf_scores

    rng = np.random.default_rng(0)
    for k in (0, 60):
        for _ in range(20):
            scores = rng.normal(size=12)
            expected = np.argsort(-rrf_scores(scores, k), kind="stable")
            assert gpu.rrf_order(scores, k).tolist() == expected.tolist()
    # a reranker that agrees with the first stage changes nothing
    assert gpu.rrf_order(np.array([4.0, 3.0, 2.0, 1.0])).tolist() == [0, 1, 2, 3]


def test_precision_at_3_counts_each_document_once_at_its_best_candidate():
    docs = ["a", "a", "b", "c", "d"]
    labels = [1, 1, 0, 2, 1]
    assert gpu.doc_precision_at_3(np.arange(5), docs, labels) == pytest.approx(2 / 3)  # a, b, c
    assert gpu.doc_precision_at_3(np.array([4, 3, 0, 1, 2]), docs, labels) == 1.0  # d, c, a
    assert gpu.top3_share(np.array([0, 1, 2, 3]), np.array([2, 9, 0, 1])) == pytest.approx(2 / 3)


def _pair(qid: str, group: str, passage: str, rank: int, doc: str) -> rd.Pair:
    return rd.Pair(qid, group, f"question {qid}", passage, rank, doc_id=doc)


def test_the_data_file_holds_each_passage_once_and_labels_only_from_the_sets_own_judgments(tmp_path):
    pairs = [
        _pair("q1", "s@own", "p-a", 0, "A"),
        _pair("q1", "s@own", "p-b", 1, "B"),
        _pair("q1", "s@other", "p-b", 0, "B"),  # the same question asked of another collection
        _pair("q1", "s@other", "p-c", 1, "C"),
    ]
    judgments = {"s@own": {"q1": {"B": 2, "A": 0}}}

    counts = rd.export_groups(pairs, judgments, tmp_path / "d" / "data.json.gz")

    data = json.loads(gzip.open(tmp_path / "d" / "data.json.gz", "rt", encoding="utf-8").read())
    assert data["passages"] == ["p-a", "p-b", "p-c"]
    assert [(g["set"], g["cands"], g["docs"], g["labels"]) for g in data["groups"]] == [
        ("s@own", [0, 1], ["A", "B"], [0, 2]),
        ("s@other", [1, 2], ["B", "C"], [0, 0]),
    ]
    assert counts == {"questions": 2, "validation": 2 * int(data["groups"][0]["val"]), "passages": 3}


def _tiny_teacher(path: Path) -> Path:
    """A 2-layer, 32-wide BERT cross-encoder with the shipped reranker's tokenizer (seeded: reproducible)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(str(path))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (SHIPPED_RERANKER / name).is_file():
            (path / name).write_bytes((SHIPPED_RERANKER / name).read_bytes())
    return path


@pytest.mark.integration
def test_the_device_trainer_runs_end_to_end_and_its_student_assembles_from_the_teacher_and_the_trained_tensors(
    tmp_path,
):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    teacher = _tiny_teacher(tmp_path / "teacher")
    pairs = [
        _pair(q, "s@own", f"passage {q} {i} about asthma and fever", i, f"D{i}")
        for q in ("q1", "q2", "q3", "q4")
        for i in range(4)
    ]
    rd.export_groups(pairs, {"s@own": {q: {"D1": 1} for q in ("q1", "q2", "q3", "q4")}}, tmp_path / "data.json.gz")
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--data",
            str(tmp_path / "data.json.gz"),
            "--teacher",
            str(teacher),
            "--out",
            str(out),
            "--configs",
            "L1:32",
            "--epochs",
            "2",
            "--questions-per-step",
            "2",
            "--teacher-max-length",
            "32",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    history = summary["students"]["L1_32"]["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2]
    assert summary["students"]["L1_32"]["teacher_layers"] == [0]

    student_dir = rd.assemble_student(teacher, out / "L1_32.safetensors", tmp_path / "student", 32, export=False)

    assert student_dir == tmp_path / "student"
    from safetensors.torch import load_file

    trained = load_file(str(out / "L1_32.safetensors"))
    assert not any("word_embeddings" in name for name in trained)
    model = AutoModelForSequenceClassification.from_pretrained(str(student_dir)).eval()
    assert model.config.num_hidden_layers == 1
    tok = AutoTokenizer.from_pretrained(str(student_dir))
    original = AutoModelForSequenceClassification.from_pretrained(str(teacher)).eval()
    # saved in float16 (save_student): the teacher's frozen word embeddings rounded, the trained head as trained
    frozen = original.bert.embeddings.word_embeddings.weight
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, frozen.half().float())
    assert torch.equal(model.classifier.weight, trained["classifier.weight"].float())
    batch = tok(["what is asthma?"], ["asthma is a lung condition"], return_tensors="pt")
    with torch.no_grad():
        assert np.isfinite(model(**batch).logits[0, 0].item())


def test_weights_that_do_not_say_which_layers_they_kept_are_refused(tmp_path):
    import torch
    from safetensors.torch import save_file

    save_file({"classifier.weight": torch.zeros(1, 32)}, str(tmp_path / "w.safetensors"))
    with pytest.raises(SystemExit, match="does not say which teacher layers"):
        rd.assemble_student(SHIPPED_RERANKER, tmp_path / "w.safetensors", tmp_path / "out", 128, export=False)
