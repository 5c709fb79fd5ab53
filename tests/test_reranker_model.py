"""The shipped cross-encoder (models/reranker) loads offline and ranks hand-made medical passages sensibly."""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(scope="module")
def reranker():
    from chatbot.stages.rerank import CrossEncoderReranker

    if not (SHIPPED_RERANKER / "config.json").exists():
        pytest.skip("no shipped reranker in models/reranker")
    return CrossEncoderReranker(SHIPPED_RERANKER, threads=1)


ASTHMA = (
    "Asthma symptoms include wheezing, coughing (especially at night or early in the morning), chest tightness "
    "and shortness of breath. Not everyone with asthma has all of these symptoms, and they may come and go."
)
DIABETES_TREATMENT = (
    "Treatment of type 2 diabetes includes healthy eating, regular physical activity and, when needed, "
    "medicines such as metformin or insulin to keep blood glucose levels in the target range."
)
DIABETES_DEFINITION = (
    "Diabetes is a disease in which your blood glucose, or blood sugar, levels are too high. Glucose comes "
    "from the foods you eat; insulin is a hormone that helps the glucose get into your cells."
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
    "The best way to prevent the flu is by getting a flu vaccine every year. Everyone 6 months of age and "
    "older should get a seasonal flu vaccine, with rare exceptions."
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
