"""The shipped cross-encoder (models/reranker) loads offline and ranks hand-made medical passages sensibly."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.settings import SHIPPED_RERANKER
from corpus.model import Segment

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytestmark = pytest.mark.integration


def _hit(i: int, text: str) -> Hit:
    segment = Segment(
        id=f"s{i}", doc_id=f"d{i}", text=text, title="", source_url=f"https://example.org/{i}", position=0
    )
    return Hit(segment, 0.0)


def _shipped(runtime: str, max_length: int | None = None):
    from chatbot.stages.rerank import CrossEncoderReranker

    if not (SHIPPED_RERANKER / "config.json").exists():
        pytest.skip("no shipped reranker in models/reranker")
    return CrossEncoderReranker(SHIPPED_RERANKER, threads=1, runtime=runtime, max_length=max_length)


@pytest.fixture(scope="module", params=["onnx", "torch"])
def reranker(request):
    """The shipped runtime (int8 ONNX, the default) and the torch reference must both rank sensibly."""
    return _shipped(request.param)


@pytest.fixture(scope="module")
def onnx_reranker():
    return _shipped("onnx")


@pytest.fixture(scope="module")
def torch_reranker():
    return _shipped("torch")


ASTHMA = (
    "Asthma symptoms include wheezing, coughing (especially at night or early in the morning), chest tightness "
    "and shortness of breath. Not everyone with asthma has all of these symptoms, and they may come and go."
)
DIABETES_TREATMENT = (
    "Treatment of type 2 diabetes includes healthy eating, regular physical activity and, when needed, "
    "medicines such as metformin or insulin to keep blood glucose levels in the target range."
)
DIABETES_DEFINITION = (
    "Diabetes means that the sugar in a person's blood stays higher than it should. The body turns food into "
    "sugar, and the hormone insulin lets that sugar move out of the blood and into the body's cells."
)
FOLIC_ACID = (
    "Women who could become pregnant should take 400 micrograms of folic acid every day. Folic acid taken "
    "before and early in pregnancy helps prevent major birth defects of the baby's brain and spine."
)
ECLIPSE = (
    "A solar eclipse happens when the Moon passes between the Earth and the Sun and blocks all or part of the "
    "Sun's light for viewers in a narrow band on the Earth's surface."
)
FLU_VACCINE = (
    "To avoid getting the flu, have a flu vaccine every year: it is the most effective protection. Washing "
    "your hands often and keeping away from people who are ill also lower the chance of catching it."
)


def _order(reranker, question: str, texts: list[str]) -> list[int]:
    scores = reranker.score(question, [_hit(i, t) for i, t in enumerate(texts)])
    assert scores.shape == (len(texts),)
    return sorted(range(len(texts)), key=lambda i: -scores[i])


def test_relevant_passage_beats_off_topic(reranker):
    assert _order(reranker, "What are the symptoms of asthma?", [ECLIPSE, ASTHMA]) == [1, 0]
    assert _order(reranker, "How much folic acid should I take before pregnancy?", [FOLIC_ACID, ECLIPSE]) == [0, 1]


def test_picks_the_medical_topic_asked_about(reranker):
    texts = [ASTHMA, FLU_VACCINE, FOLIC_ACID, DIABETES_TREATMENT]
    assert _order(reranker, "How can I avoid getting the flu?", texts)[0] == 1
    assert _order(reranker, "What medicines treat type 2 diabetes?", texts)[0] == 3


def test_question_type_matters(reranker):
    question = "How is type 2 diabetes treated?"
    assert _order(reranker, question, [DIABETES_DEFINITION, DIABETES_TREATMENT]) == [1, 0]


def test_reads_title_and_heading(reranker):
    """Trained on 'title: heading' + text, as the bi-encoder reads segments: the heading tells sections apart."""

    def section(i: int, heading: str, text: str) -> Hit:
        segment = Segment(
            id=f"t{i}", doc_id=f"t{i}", text=text, title="Asthma", heading=heading, source_url="", position=0
        )
        return Hit(segment, 0.0)

    hits = [
        section(0, "Treatment", "Inhaled corticosteroids give long-term control; quick-relief inhalers stop attacks."),
        section(1, "Symptoms", "Common signs are wheezing, coughing and chest tightness, often worse at night."),
    ]
    assert reranker.passage(hits[1].segment).startswith("Asthma: Symptoms\n")
    symptoms = reranker.score("What are the symptoms of asthma?", hits)
    treatment = reranker.score("How is asthma treated?", hits)
    assert symptoms[1] > symptoms[0]
    assert treatment[0] > treatment[1]


def test_missing_directory_raises():
    from chatbot.stages.rerank import CrossEncoderReranker

    with pytest.raises(FileNotFoundError, match="does not exist"):
        CrossEncoderReranker(Path("/nonexistent/reranker-model"))


def test_shipped_directory_runs_its_own_int8_onnx_export(onnx_reranker):
    from chatbot.training.onnx_export import ONNX_FILE

    assert (SHIPPED_RERANKER / ONNX_FILE).is_file()
    assert onnx_reranker.runtime == "onnx-int8"
    assert onnx_reranker.note is None
    assert onnx_reranker.model is None  # no torch model loaded
    assert onnx_reranker.onnx.stale_reason(SHIPPED_RERANKER) is None
    assert onnx_reranker.onnx.activation == "sigmoid"


def test_onnx_tokenises_exactly_like_the_models_own_tokenizer(onnx_reranker):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(SHIPPED_RERANKER))
    pairs = [
        ("What are the symptoms of asthma?", ASTHMA),
        ("Quali sono i sintomi dell'asma nei bambini?", "Asthma: Symptoms\n" + ASTHMA),
        ("Is it safe?", ECLIPSE * 9),  # longer than max_length: truncated the same way
    ]
    for question, passage in pairs:
        expected = reference(question, passage, truncation=True, max_length=onnx_reranker.onnx.max_length)
        got = onnx_reranker.onnx.tokenizer.encode(question, passage)
        assert got.ids == expected["input_ids"]
        assert got.type_ids == expected["token_type_ids"]
    assert len(onnx_reranker.onnx.tokenizer.encode("Is it safe?", ECLIPSE * 9).ids) == onnx_reranker.onnx.max_length


def test_int8_scores_stay_close_to_the_fp32_torch_scores(onnx_reranker, torch_reranker):
    pairs = [
        ("What are the symptoms of asthma?", ASTHMA),
        ("What are the symptoms of asthma?", ECLIPSE),
        ("How can I avoid getting the flu?", FLU_VACCINE),
        ("How is type 2 diabetes treated?", DIABETES_DEFINITION),
        ("How is type 2 diabetes treated?", DIABETES_TREATMENT),
        ("How much folic acid should I take before pregnancy?", FOLIC_ACID),
    ]
    int8 = onnx_reranker.predict(pairs)
    fp32 = torch_reranker.predict(pairs)
    assert int8.shape == fp32.shape == (6,)
    assert np.abs(int8 - fp32).max() < 0.05
    for scores in (int8, fp32):  # answering passages (0, 2, 4, 5) above the off-topic or wrong-type ones
        assert scores[[0, 2, 4, 5]].min() > 0.9 > 0.05 > scores[[1, 3]].max()


def test_onnx_batches_sorted_by_length_give_each_pair_its_own_score(onnx_reranker):
    """Pairs are scored in length order in batches: scores must come back in the caller's order."""
    pairs = [("What are the symptoms of asthma?", t) for t in (ASTHMA * 3, ECLIPSE, ASTHMA, FLU_VACCINE * 2)]
    together = onnx_reranker.predict(pairs)
    alone = np.array([onnx_reranker.predict([p])[0] for p in pairs])
    assert together == pytest.approx(alone, abs=0.02)  # int8 activations are quantised per batch
    assert onnx_reranker.predict([]).shape == (0,)


def test_drop_in_directory_without_onnx_export_runs_with_torch(tmp_path):
    from chatbot.stages.rerank import CrossEncoderReranker

    if not (SHIPPED_RERANKER / "config.json").exists():
        pytest.skip("no shipped reranker in models/reranker")
    for path in SHIPPED_RERANKER.iterdir():
        if path.is_file():
            (tmp_path / path.name).symlink_to(path)
    reranker = CrossEncoderReranker(tmp_path, threads=1, runtime="onnx")

    assert reranker.runtime == "torch"
    assert reranker.note == f"rerank.runtime=onnx, torch used: no onnx/model_qint8.onnx in {tmp_path}"
    assert _order(reranker, "What are the symptoms of asthma?", [ECLIPSE, ASTHMA]) == [1, 0]


def test_an_export_made_from_other_weights_is_stale(onnx_reranker, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"other weights")

    assert onnx_reranker.onnx.stale_reason(tmp_path) == (
        "onnx/model_qint8.onnx was not made from model.safetensors (re-run `chatbot train export-onnx`)"
    )


def test_unknown_runtime_raises():
    from chatbot.stages.rerank import CrossEncoderReranker

    with pytest.raises(ValueError, match="unknown cross-encoder runtime 'tensorrt'; choose torch or onnx"):
        CrossEncoderReranker(SHIPPED_RERANKER, runtime="tensorrt")


def test_default_settings_rerank_english_questions_with_the_shipped_int8_model(tmp_path):
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    if not (SHIPPED_RERANKER / "config.json").exists():
        pytest.skip("no shipped reranker in models/reranker")
    services = Services(Settings(paths={"data_dir": tmp_path}))
    reranker, note = services.reranker_for("What are the symptoms of asthma?")

    assert (reranker.name, reranker.runtime, note) == ("cross-encoder", "onnx-int8", None)
    assert reranker.onnx.max_length == 192  # rerank.max_length
    assert reranker.onnx.batch_size == 1  # rerank.batch_size: each pair its own onnxruntime call


def test_as_a_support_scorer_it_keeps_a_supported_sentence_and_drops_an_unrelated_one(onnx_reranker):
    from chatbot.settings import ComposeSettings
    from chatbot.stages.support import CrossEncoderSupport

    threshold = ComposeSettings().support_threshold_cross_encoder
    claims = ["Folic acid helps prevent birth defects of the baby's brain and spine.", ECLIPSE]
    scores = CrossEncoderSupport(onnx_reranker)(claims, [FOLIC_ACID])

    assert scores[0] >= threshold > scores[1]
