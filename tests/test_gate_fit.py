"""The gate fit's pieces on hand-made data: the threshold rule and the features of a cached retrieval record."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.stages.relevance_gate import gate_features, lexicon_of
from corpus.model import Segment
from evaluation.redteam.gate_fit import _Replay, _threshold, features_from


def seg(doc_id: str, text: str, language: str = "en") -> Segment:
    return Segment(
        id=f"{doc_id}#1", doc_id=doc_id, text=text, title=doc_id, source_url="", position=0, language=language
    )


def test_threshold_is_the_lowest_on_the_plateau_that_reaches_the_recall_target_in_both_languages():
    # 4 English then 4 Italian questions; the first two of each language are in scope
    y = np.array([True, True, False, False] * 2)
    italian = np.array([False] * 4 + [True] * 4)
    # out-of-fold probabilities: the out-of-scope ones at 0.3/0.5 (en) and 0.4/0.6 (it)
    oof = np.array([0.9, 0.8, 0.3, 0.5, 0.9, 0.8, 0.4, 0.6])
    ba = {0.4: 0.90, 0.5: 0.905, 0.6: 0.91, 0.7: 0.95, 0.8: 0.80}
    # plateau (>= 0.95 - 0.01): 0.7 only; every out-of-scope question refused there
    assert _threshold(ba, y, italian, [oof]) == 0.7
    flat = {0.4: 0.95, 0.5: 0.95, 0.6: 0.95, 0.7: 0.95}
    # t = 0.4 refuses 1 of 2 (en) and 0 of 2 (it); 0.5: en 1/2 (0.5 is answered); 0.6: en 2/2, it 1/2; 0.7: all
    assert _threshold(flat, y, italian, [oof]) == 0.7
    # the session-7 rule: the best balanced accuracy, ties to the lower threshold
    assert _threshold(flat, y, italian, [oof], rule="balanced-accuracy") == 0.4
    # no threshold reaches the target: the best balanced accuracy
    assert _threshold({0.4: 0.9, 0.5: 0.95}, y, italian, [oof]) == 0.5


def test_features_of_a_cached_record_are_the_gates_features_of_the_same_hits():
    docs = [seg("a", "Iron rich foods: beans and lentils."), seg("b", "Calcium and dairy."), seg("c", "Caffeine.")]
    lexicon = lexicon_of(docs)
    details = [{"dense": 0.88, "cross-encoder": 0.9}, {"dense": 0.86, "cross-encoder": 0.2}, {"dense": 0.8}]
    record = {
        "query": "iron foods",
        "positive": None,
        "gate_language": "en",
        "top": [{"id": d.id, "detail": det} for d, det in zip(docs[:2], details, strict=False)],
        "ranked": [{"id": d.id, "detail": det} for d, det in zip(docs, details, strict=True)],
        "cross_encoder": {"name": "cross-encoder", "scores": None},  # the rerank stage scored the links
    }
    segments = {d.id: d for d in docs}
    hits = [Hit(d, 0.0, det) for d, det in zip(docs, details, strict=True)]
    expected = gate_features("iron foods", hits[:2], hits, "en", _Replay("cross-encoder", None), None, lexicon)
    assert features_from(record, segments, lexicon) == expected
    assert expected["cross_encoder"] == 0.9
    # an Italian question (not reranked): the gate asked the cross-encoder for its 2 links; the cache gives those
    # scores back
    plain = [{"id": h["id"], "detail": {"dense": h["detail"]["dense"]}} for h in record["ranked"]]
    record = {
        **record,
        "gate_language": "it",
        "top": plain[:2],
        "ranked": plain,
        "cross_encoder": {"name": "cross-encoder", "scores": [0.1, 0.7]},
    }
    assert features_from(record, segments, lexicon)["cross_encoder_it"] == 0.7
    with pytest.raises(ValueError, match="no cross-encoder scores for these links"):
        features_from({**record, "cross_encoder": {"name": "cross-encoder", "scores": [0.1]}}, segments, lexicon)
