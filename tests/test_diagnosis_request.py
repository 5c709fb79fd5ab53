"""chatbot.stages.diagnosis_request: the learned fallback of the personal-request rules (opt-in)."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.hashed_ngrams import N_FEATURES, BinaryHead, features
from chatbot.settings import Settings
from chatbot.stages.diagnosis_request import SHIPPED_DIR, asks_for_diagnosis, diagnosis_score, personal_request


def _head(words: dict[str, float], threshold: float = 0.5, bias: float = -4.0) -> BinaryHead:
    """A head whose only weights are those of the given words' features (hand-built, exact)."""
    w = np.zeros(N_FEATURES, dtype=np.float32)
    for word, weight in words.items():
        idx, val = features(word)
        w[idx] += weight * np.sign(val)
    return BinaryHead(w, bias, threshold, N_FEATURES)


def test_a_hand_built_head_decides_at_its_bar():
    head = _head({"colic": 20.0})

    assert asks_for_diagnosis("is it colic?", head) is True
    assert asks_for_diagnosis("how long does crying last?", head) is False
    assert diagnosis_score("how long does crying last?", head) == pytest.approx(1 / (1 + np.exp(4.0)), abs=1e-4)


def test_the_rules_decide_first_and_the_model_only_when_they_find_nothing(monkeypatch):
    import chatbot.stages.diagnosis_request as dr

    monkeypatch.setattr(dr, "shipped_head", lambda: _head({"colic": 20.0, "paracetamol": 20.0}))
    # a personal dose stays a dose request, whatever the model says
    assert personal_request("How many paracetamol can I give my 6 kg baby?") == "dosage"
    assert personal_request("is it colic? he cries every evening") == "diagnosis"
    assert personal_request("is it colic? he cries every evening", use_model=False) is None
    assert personal_request("what helps a crying baby?") is None


def test_the_head_saves_and_loads_int8_with_its_bar(tmp_path):
    head = _head({"colic": 20.0}, threshold=0.7)
    head.save(tmp_path, {"command": "test"})
    again = BinaryHead.load(tmp_path)

    assert again.threshold == 0.7
    assert again.score("is it colic?") == pytest.approx(head.score("is it colic?"), abs=0.01)


def test_the_setting_is_off_by_default():
    assert Settings().safety.diagnosis_model is False


# -- the shipped model (integration) ----------------------------------------------------------------


def test_the_shipped_model_loads_and_separates_requests_from_general_questions_in_both_languages():
    assert (SHIPPED_DIR / "weights.npz").is_file(), f"models/diagnosis_request is missing ({SHIPPED_DIR})"
    for text in (
        "is it colic? he cries every evening from 6 to 10 and pulls his legs up",
        "ho la mastite? ho il seno destro duro e rosso e 38 di febbre",
        "my tsh came back at 4.6, do I have hypothyroidism?",
    ):
        assert asks_for_diagnosis(text), text
    for text in (
        "what is colic and how long does it last?",
        "quanto dura la colica del neonato?",
        "can I keep breastfeeding with mastitis?",
        "is it safe to fly at 30 weeks?",
    ):
        assert not asks_for_diagnosis(text), text
