"""The positive terms' scores of the logical pipeline (chatbot/logical/positive_scores.py): one reranker as
before, several fused with the dense order, and the choice of rerankers from logical.positive_rerankers."""

from types import SimpleNamespace

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.logical.config import LogicalConfig
from chatbot.logical.positive_scores import other_language_hits, positive_rerankers, term_scores
from chatbot.logical.scoring import fused_rerank
from corpus.model import Segment


class Fixed:
    """A cross-encoder stand-in whose scores are given."""

    name = "cross-encoder"

    def __init__(self, scores: list[float]) -> None:
        self.scores = np.asarray(scores)
        self.seen: list[str] = []

    def score(self, question: str, hits: list[Hit]) -> np.ndarray:
        self.seen.append(question)
        return self.scores[: len(hits)]


def _hits(n: int) -> list[Hit]:
    return [Hit(Segment(f"d{i}#0", f"d{i}", "text", "title", "https://x", 0), 0.0) for i in range(n)]


COSINES = np.array([0.9, 0.8, 0.7])  # dense order: 0, 1, 2


def test_one_reranker_is_fused_with_the_dense_order_as_before():
    model = Fixed([0.1, 0.2, 0.9])  # CE order: 2, 1, 0
    got = term_scores("term", _hits(3), COSINES, [model], 60)
    np.testing.assert_allclose(got, fused_rerank(model.scores, COSINES, 60))
    assert model.seen == ["term"]
    # alone (k = 0): the CE's sigmoid
    np.testing.assert_allclose(term_scores("term", _hits(3), COSINES, [model], 0), 1 / (1 + np.exp(-model.scores)))


def test_two_rerankers_and_the_dense_order_are_fused_by_rank():
    a, b = Fixed([0.1, 0.2, 0.9]), Fixed([0.0, 0.5, 0.3])  # a: 2, 1, 0; b: 1, 2, 0
    got = term_scores("term", _hits(3), COSINES, [a, b], 1)
    # ranks (dense, a, b): d0 (1, 3, 3), d1 (2, 2, 1), d2 (3, 1, 2); 1/(1+r) summed, / (3 / 2)
    expected = np.array([1 / 2 + 1 / 4 + 1 / 4, 1 / 3 + 1 / 3 + 1 / 2, 1 / 4 + 1 / 2 + 1 / 3]) / 1.5
    np.testing.assert_allclose(got, expected)
    assert list(np.argsort(-got)) == [1, 2, 0]
    # k = 0: the mean of the two sigmoids
    mean = (1 / (1 + np.exp(-a.scores)) + 1 / (1 + np.exp(-b.scores))) / 2
    np.testing.assert_allclose(term_scores("term", _hits(3), COSINES, [a, b], 0), mean)


def test_the_question_reranker_by_default_and_a_missing_folder_is_an_error(tmp_path):
    stage = Fixed([0.5])
    services = SimpleNamespace(reranker_for=lambda q: (stage, None), settings=None)
    assert positive_rerankers(services, "q", "en", LogicalConfig()) == [stage]
    twice = LogicalConfig(positive_rerankers={"en": ("question", "question")})
    assert positive_rerankers(services, "q", "en", twice) == [stage]
    none = SimpleNamespace(reranker_for=lambda q: (None, "it: none"), settings=None)
    assert positive_rerankers(none, "q", "it", LogicalConfig()) == []
    settings = SimpleNamespace(
        rerank=SimpleNamespace(max_chars=900, runtime="onnx", batch_size=1),
        embedding=SimpleNamespace(threads=1),
        runtime=SimpleNamespace(int8_matmul="int8"),
    )
    missing = SimpleNamespace(reranker_for=lambda q: (stage, None), settings=settings)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        positive_rerankers(missing, "q", "it", LogicalConfig(positive_rerankers={"it": (str(tmp_path / "nope"),)}))
    # a language not named keeps the question's reranker
    assert positive_rerankers(missing, "q", "en", LogicalConfig(positive_rerankers={"it": ("x",)})) == [stage]


def test_other_language_hits_for_each_positive_term_of_a_non_english_question_only():
    calls: list[tuple[str, str, int]] = []

    def other_language(text: str, language: str, k: int) -> list[Hit]:
        calls.append((text, language, k))
        return _hits(k)

    services = SimpleNamespace(dense=SimpleNamespace(other_language=other_language))
    got = other_language_hits(services, ["nausea in gravidanza", "stanchezza"], "it", 2)
    assert [h.segment.id for h in got] == ["d0#0", "d1#0", "d0#0", "d1#0"]
    assert calls == [("nausea in gravidanza", "it", 2), ("stanchezza", "it", 2)]
    calls.clear()
    assert other_language_hits(services, ["nausea"], "en", 2) == []
    assert other_language_hits(services, ["nausea"], "it", 0) == []
    assert other_language_hits(SimpleNamespace(), ["nausea"], "it", 2) == []
    assert calls == []
