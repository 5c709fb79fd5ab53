"""evaluation.negation_features: the shared NegConstraint loop on a hand-made question with stand-in models."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from chatbot.index import Hit
from corpus.model import Segment
from evaluation import negation_features, negation_s13, negation_s14
from evaluation.harness import Judged

QUESTION = "vitamin D sources other than sunlight"
TEXTS = ("Oily fish and eggs give vitamin D. Fortified foods too.", "Sunlight on the skin makes vitamin D.")


class _Embedder:
    """A vector per text from its length and vowel count: deterministic, distinct, no model."""

    dim = 3

    def _vec(self, text: str) -> list[float]:
        return [len(text) / 50.0, sum(c in "aeiou" for c in text) / 20.0, 1.0]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]


class _Reranker:
    def score(self, text: str, hits: list[Hit]) -> list[float]:
        return [len(set(text.split()) & set(h.segment.text.split())) / 10.0 for h in hits]


@pytest.fixture
def stand_ins(monkeypatch) -> None:
    """NegConstraint as one judged question over two segments; today's route returns them in reverse order."""
    # imported before config_for is patched: a first import during the patch would bind the stand-in for good
    import chatbot.logical.pipeline  # noqa: F401

    segments = [Segment(f"s{i}", f"d{i}", t, "", "", i) for i, t in enumerate(TEXTS)]
    hits = [Hit(s, 0.0, {}) for s in segments]
    services = SimpleNamespace(embedder=_Embedder(), settings=None)
    judged = Judged("negconstraint", {"q1": QUESTION}, {"q1": {"d0": 1, "d1": 0}}, {})
    monkeypatch.setattr("evaluation.harness.load_judged", lambda data, split: judged)
    monkeypatch.setattr("evaluation.logical_bench.common.eval_services", lambda data: services)
    monkeypatch.setattr("chatbot.logical.config.config_for", lambda settings: None)
    monkeypatch.setattr(
        "chatbot.logical.pipeline.logical_retrieve",
        lambda text, services, config: SimpleNamespace(candidates=hits, ranked=hits[::-1]),
    )
    monkeypatch.setattr(
        "chatbot.logical.positive_scores.positive_rerankers", lambda services, text, lang, config: [_Reranker()]
    )
    monkeypatch.setattr(
        "chatbot.logical.scoring.candidate_vectors",
        lambda services, cands: np.array([_Embedder()._vec(h.segment.text) for h in cands], dtype=np.float32),
    )


def test_collect_hands_each_question_s_route_to_the_builder(stand_ins, capsys) -> None:
    runs: list[Any] = []
    out = negation_features.collect("train", lambda run: runs.append(run) or {"n": len(run.cands)})
    assert out == {"q1": {"n": 2}}
    assert capsys.readouterr().out == "q1 2\n"
    (run,) = runs
    assert (run.pos, run.negs, run.names) == (["vitamin D sources"], ["sunlight"], ["vitamin D sources", "sunlight"])
    assert run.ranked == ["d1", "d0"] and run.relevant == {"d0"}
    assert run.raw.shape == (2, 3) and run.orth.shape == (2, 2)
    assert run.ce("vitamin D.").tolist() == [0.2, 0.2]  # both segments name "vitamin" and "D."
    row = run.row({"mine": 1})
    assert list(row) == [
        "text",
        "pos",
        "negs",
        "doc_ids",
        "texts",
        "raw",
        "raw_q",
        "orth",
        "mine",
        "ranked",
        "relevant",
    ]
    assert row["doc_ids"] == ["d0", "d1"] and row["texts"] == list(TEXTS)


def test_both_studies_keep_their_own_rows(stand_ins) -> None:
    (s13,) = negation_features.collect("train", negation_s13._row).values()
    (s14,) = negation_s14.collect("train").values()
    shared = ["text", "pos", "negs", "doc_ids", "texts", "raw", "raw_q", "orth", "ce", "ce_q"]
    assert list(s13) == [*shared[:5], *shared[5:], "ce_pair", "sent_max", "ranked", "relevant"]
    assert list(s14) == [*shared[:3], "seg_ids", *shared[3:5], "vecs", "term_vecs", *shared[5:], "ranked", "relevant"]
    assert set(s13["ce"]) == {"vitamin D sources", "sunlight"} and set(s14["ce"]) == {"vitamin D sources"}
    assert s13["ce_pair"]["sunlight"].tolist() == [0.1, 0.1]  # "vitamin D sources, sunlight": "vitamin" only
    assert s14["seg_ids"] == ["s0", "s1"] and s14["vecs"].dtype == np.float32
    np.testing.assert_array_equal(s13["orth"]["sunlight"], s14["orth"]["sunlight"])


def test_the_session_13_features_refuse_the_test_split(tmp_path) -> None:
    with pytest.raises(SystemExit, match="train split only"):
        negation_s13.features("test", tmp_path / "f.pkl")
