"""The classifier relevance gate on hand-made feature vectors, hits and gate files: exact decisions."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.settings import Settings
from chatbot.stages.relevance import gate
from chatbot.stages.relevance_gate import (
    FEATURES,
    GateModel,
    gate_features,
    lexical_overlap,
    lexicon_of,
    load_gate,
    parse_gate,
    unknown_words,
    unmatched_rare,
)
from tests.gate_fakes import FakeServices, Result, ZeroCrossEncoder
from tests.segments import seg


def vector(**values: float) -> dict[str, float]:
    return {f: values.get(f, 0.0) for f in FEATURES}


# A gate that weighs only the best cosine (+10 per unit above 0.85) and the cross-encoder (+4 per unit above 0.5).
MODEL = GateModel(
    "e5-onnx",
    coef=tuple(10.0 if f == "dense_best" else 4.0 if f == "cross_encoder" else 0.0 for f in FEATURES),
    intercept=0.0,
    mean=tuple(0.85 if f == "dense_best" else 0.5 if f == "cross_encoder" else 0.0 for f in FEATURES),
    scale=tuple(1.0 for _ in FEATURES),
    threshold=0.5,
)


@pytest.mark.parametrize(
    ("dense", "ce", "probability", "relevant"),
    [
        (0.85, 0.5, 0.5, True),  # exactly at the threshold: answered
        (0.86, 0.5, 1 / (1 + math.exp(-0.1)), True),
        (0.84, 0.5, 1 / (1 + math.exp(0.1)), False),
        # a cosine below the old bar answered because the cross-encoder is sure: 10*(-0.01) + 4*0.4 = 1.5
        (0.84, 0.9, 1 / (1 + math.exp(-1.5)), True),
        # a high cosine refused because the cross-encoder rules the links out: 10*0.02 + 4*(-0.45) = -1.6
        (0.87, 0.05, 1 / (1 + math.exp(1.6)), False),
    ],
)
def test_probability_and_decision_on_hand_made_vectors(dense, ce, probability, relevant):
    features = vector(dense_best=dense, cross_encoder=ce, lexical=0.7)
    assert MODEL.probability(features) == pytest.approx(probability, abs=1e-12)
    assert MODEL.relevant(features) is relevant


def test_a_missing_feature_is_a_clear_error():
    features = vector()
    del features["lexical"]
    with pytest.raises(ValueError, match=r"features missing \['lexical'\]"):
        MODEL.probability(features)


# The same gate with its own bar for Italian questions (the ``italian`` feature): answer at P >= 0.3 there.
MODEL_IT = GateModel(MODEL.embedder, MODEL.coef, MODEL.intercept, MODEL.mean, MODEL.scale, 0.5, threshold_it=0.3)


@pytest.mark.parametrize(
    ("italian", "dense", "threshold", "probability", "relevant"),
    [
        (0.0, 0.85, 0.5, 0.5, True),  # z = 0: at the English bar
        (0.0, 0.80, 0.5, 1 / (1 + math.exp(0.5)), False),  # z = 10 * -0.05 = -0.5, P = 0.3775 < 0.5
        (1.0, 0.80, 0.3, 1 / (1 + math.exp(0.5)), True),  # the same P on an Italian question clears 0.3
        (1.0, 0.75, 0.3, 1 / (1 + math.exp(1.0)), False),  # z = -1.0, P = 0.2689 < 0.3
    ],
)
def test_a_per_language_threshold_decides_italian_questions_by_their_own_bar(
    italian, dense, threshold, probability, relevant
):
    features = vector(dense_best=dense, cross_encoder=0.5, italian=italian)
    assert MODEL_IT.threshold_for(features) == threshold
    assert MODEL_IT.probability(features) == pytest.approx(probability, abs=1e-12)
    assert MODEL_IT.relevant(features) is relevant
    # without its own Italian bar the model decides Italian questions at the English one
    assert MODEL.relevant(features) is (probability >= 0.5)


def _doc(**entry) -> dict:
    n = len(FEATURES)
    base = {"coef": [0.0] * n, "intercept": 0.0, "mean": [0.0] * n, "scale": [1.0] * n, "threshold": 0.5}
    return {"features": list(FEATURES), "models": {"e5-onnx": {**base, **entry}}}


def test_parse_gate_reads_the_embedders_entry_and_rejects_bad_files():
    model = parse_gate(_doc(intercept=-1.25, threshold=0.4), "e5-onnx")
    assert model.intercept == -1.25
    assert model.threshold == 0.4
    assert model.probability(vector()) == pytest.approx(1 / (1 + math.exp(1.25)))
    with pytest.raises(ValueError, match="no relevance gate for embedder 'minilm'"):
        parse_gate(_doc(), "minilm")
    with pytest.raises(ValueError, match="differ from this code's"):
        parse_gate({**_doc(), "features": ["dense_best"]}, "e5-onnx")
    with pytest.raises(ValueError, match=r"e5-onnx.coef must hold 15 numbers"):
        parse_gate(_doc(coef=[1.0]), "e5-onnx")
    with pytest.raises(ValueError, match="scale must be positive"):
        parse_gate(_doc(scale=[0.0] * len(FEATURES)), "e5-onnx")
    assert parse_gate(_doc(threshold=0.4), "e5-onnx").threshold_it is None
    assert parse_gate(_doc(threshold=0.4, threshold_it=0.25), "e5-onnx").threshold_it == 0.25
    with pytest.raises(ValueError, match=r"e5-onnx.threshold_it must be a probability between 0 and 1, got 1.5"):
        parse_gate(_doc(threshold_it=1.5), "e5-onnx")
    with pytest.raises(ValueError, match=r"e5-onnx.threshold must be a probability between 0 and 1, got None"):
        parse_gate(_doc(threshold=None), "e5-onnx")


def test_the_shipped_gate_file_loads_for_e5_onnx():
    settings = Settings()
    model = load_gate(str(settings.safety.relevance_gate_model), "e5-onnx")
    assert len(model.coef) == len(FEATURES)
    # session 11: the fifteen features refitted on every spent dev set, each language at its own bar
    # (evaluation/results/relevance-gate-s11.md)
    assert (model.threshold, model.threshold_it) == (0.37, 0.61)
    weights = dict(zip(FEATURES, model.coef, strict=True))
    assert weights["dense_best"] > 0 and weights["dense_margin"] > 0 and weights["cross_encoder"] > 0
    assert weights["lexical"] > 0 and weights["unknown_words"] < 0
    # the cross-language second look was refitted on this gate's P
    assert settings.safety.cross_language_gate == {"it": (52.901, -1.835)}


def _shipped_vector(italian: bool = False, **values: float) -> dict[str, float]:
    v = vector(**values, italian=1.0 if italian else 0.0)
    if italian:  # the Italian copies of four features (and the cross-encoder's), as gate_features writes them
        for f in ("dense_best", "dense_margin", "lexical", "unknown_words"):
            v[f"{f}_it"] = v[f]
        v["cross_encoder_it"] = v["cross_encoder"]
    return v


@pytest.mark.parametrize(
    ("italian", "values", "probability", "relevant"),
    [
        # a plain in-scope question: close links, the cross-encoder sure, most words in the first link
        (
            False,
            dict(
                dense_best=0.90,
                dense_second=0.88,
                dense_margin=0.05,
                cross_encoder=0.9,
                lexical=0.8,
                unmatched_rare=0.3,
                length=1.6,
            ),
            0.9786,
            True,
        ),
        # off topic: low cosine, cross-encoder near 0, half its words unknown to the corpus
        (
            False,
            dict(
                dense_best=0.83,
                dense_second=0.82,
                dense_margin=0.01,
                cross_encoder=0.02,
                lexical=0.1,
                unmatched_rare=1.0,
                length=1.6,
                unknown_words=0.5,
            ),
            0.0077,
            False,
        ),
        # a middling English question: P 0.433 clears the English bar (0.37)
        (
            False,
            dict(
                dense_best=0.865,
                dense_second=0.855,
                dense_margin=0.025,
                cross_encoder=0.3,
                lexical=0.4,
                unmatched_rare=0.6,
                length=1.8,
                unknown_words=0.1,
            ),
            0.4332,
            True,
        ),
        # an Italian question at P 0.478 is refused by the Italian bar (0.61); at a cosine of 0.86 it is answered
        (
            True,
            dict(
                dense_best=0.85,
                dense_second=0.84,
                dense_margin=0.03,
                cross_encoder=0.3,
                lexical=0.4,
                unmatched_rare=0.6,
                length=1.8,
                unknown_words=0.1,
            ),
            0.4781,
            False,
        ),
        (
            True,
            dict(
                dense_best=0.86,
                dense_second=0.85,
                dense_margin=0.03,
                cross_encoder=0.3,
                lexical=0.4,
                unmatched_rare=0.6,
                length=1.8,
                unknown_words=0.1,
            ),
            0.6609,
            True,
        ),
    ],
)
def test_the_shipped_gate_decides_hand_made_vectors(italian, values, probability, relevant):
    model = load_gate(str(Settings().safety.relevance_gate_model), "e5-onnx")
    features = _shipped_vector(italian, **values)
    assert round(model.probability(features), 4) == probability
    assert model.relevant(features) is relevant


def test_the_session_8_refit_loads_from_its_own_file():
    settings = Settings()
    model = load_gate(str(settings.safety.relevance_gate_model.with_name("gate-s8.json")), "e5-onnx")
    assert len(model.coef) == len(FEATURES)
    assert 0.0 < model.threshold < 1.0
    # the classifier weighs the cross-encoder, the cosine and the word overlap up, words the corpus never uses down
    # (in both languages: the Italian weight adds to the shared one)
    weights = dict(zip(FEATURES, model.coef, strict=True))
    assert weights["dense_best"] > 0 and weights["cross_encoder"] > 0 and weights["lexical"] > 0
    assert weights["unknown_words"] < 0 and weights["unknown_words"] + weights["unknown_words_it"] < 0


def test_lexical_overlap_counts_content_words_by_prefix_in_both_languages():
    caffeine = seg("caffeine", "Limit caffeine to 200 mg a day in pregnancy.", "Caffeine limits in pregnancy")
    cibo = seg("cibo", "In gravidanza limita il caffè a 200 mg al giorno.", "Alimentazione in gravidanza", "it")
    # content words drink, coffee, while, pregnant: only "pregnant" matches ("pregnancy", same 5-letter prefix)
    assert lexical_overlap("Can I drink coffee while pregnant?", [Hit(caffeine, 1.0)]) == pytest.approx(1 / 4)
    # bere, caffè (folded: caffe), gravidanza: the Italian card has caffe and gravi(danza), the English one caffe
    assert lexical_overlap("Posso bere caffè in gravidanza?", [Hit(caffeine, 1.0), Hit(cibo, 0.9)]) == pytest.approx(
        2 / 3
    )
    assert lexical_overlap("the and of?", [Hit(caffeine, 1.0)]) == 0.0


def test_rare_words_weigh_more_and_a_word_the_corpus_never_uses_is_flagged():
    docs = [
        seg("a", "Symptoms of anaemia in pregnancy.", "Anaemia"),
        seg("b", "Symptoms of pre-eclampsia in pregnancy.", "Pre-eclampsia"),
        seg("c", "Coffee and caffeine.", "Caffeine"),
    ]
    lex = lexicon_of(docs)
    assert lex.segments == 3
    assert lex.df["sympt"] == 2 and lex.df["coffe"] == 1 and "glauc" not in lex.df
    idf = {w: math.log(1 + 3 / (1 + lex.df.get(w, 0))) for w in ("sympt", "glauc")}
    links = [Hit(docs[0], 1.0), Hit(docs[1], 0.9)]
    # "symptoms of glaucoma": only the common word "symptoms" is in the links
    assert lexical_overlap("symptoms of glaucoma", links, lex) == pytest.approx(
        idf["sympt"] / (idf["sympt"] + idf["glauc"])
    )
    assert lexical_overlap("symptoms of glaucoma", links) == pytest.approx(0.5)  # unweighted
    assert unmatched_rare("symptoms of glaucoma", links, lex) == pytest.approx(1.0)  # never in the corpus
    assert unmatched_rare("coffee symptoms", links, lex) == pytest.approx(math.log(1 + 3 / 2) / math.log(4))
    assert unmatched_rare("anaemia symptoms", links, lex) == 0.0
    assert unmatched_rare("symptoms of glaucoma", links, None) == 0.0


def test_unknown_words_weigh_the_words_the_corpus_never_uses():
    docs = [
        seg("a", "Sintomi della pre-eclampsia in gravidanza.", "Pressione alta", "it"),
        seg("b", "Symptoms of anaemia in pregnancy.", "Anaemia"),
        seg("c", "Coffee and caffeine.", "Caffeine"),
    ]
    lex = lexicon_of(docs)
    idf = {w: math.log(1 + 3 / (1 + lex.df.get(w, 0))) for w in ("sinto", "glauc", "gravi")}
    assert lex.df["sinto"] == 1 and "glauc" not in lex.df
    # "Quali sono i sintomi del glaucoma?": content words sintomi (in card a), glaucoma (in no card); quali,
    # sono, del are function words
    assert unknown_words("Quali sono i sintomi del glaucoma?", lex) == pytest.approx(
        idf["glauc"] / (idf["glauc"] + idf["sinto"])
    )
    assert unknown_words("sintomi in gravidanza", lex) == 0.0  # every word is in the corpus
    assert unknown_words("glaucoma", lex) == 1.0
    assert unknown_words("the and of?", lex) == 0.0  # no content words
    assert unknown_words("glaucoma", None) == 0.0  # no lexicon


class FakeCrossEncoder:
    name = "cross-encoder"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question, hits):
        self.calls.append((question, [h.segment.doc_id for h in hits]))
        return np.array([0.25 + 0.1 * i for i in range(len(hits))])


def test_features_of_hand_made_hits():
    docs = [seg(f"d{i}", f"text {i}", f"Title {i}") for i in range(6)]
    ranked = [Hit(d, 1.0, {"dense": 0.9 - 0.02 * i}) for i, d in enumerate(docs)]
    ce = FakeCrossEncoder()
    f = gate_features("asthma at night", ranked[:3], ranked, "it", ce)
    assert f["dense_best"] == pytest.approx(0.9)
    assert f["dense_second"] == pytest.approx(0.88)
    assert f["dense_margin"] == pytest.approx(0.9 - (0.84 + 0.82 + 0.80) / 3)
    assert f["cross_encoder"] == pytest.approx(0.45)
    assert f["cross_encoder_it"] == pytest.approx(0.45)
    assert f["italian"] == 1.0
    assert f["length"] == pytest.approx(math.log(3))  # asthma, night -> 2 content words
    assert f["exclusion"] == 0.0
    assert f["unknown_words"] == 0.0  # no lexicon
    # the Italian copies of the cosine, margin and overlap: the features themselves on an Italian question
    assert (f["dense_best_it"], f["dense_margin_it"], f["lexical_it"]) == (
        f["dense_best"],
        f["dense_margin"],
        f["lexical"],
    )
    assert ce.calls == [("asthma at night", ["d0", "d1", "d2"])]
    english = gate_features("asthma at night", ranked[:3], ranked, "en", ce)
    assert english["dense_best_it"] == english["dense_margin_it"] == english["lexical_it"] == 0.0
    assert english["cross_encoder_it"] == english["unknown_words_it"] == english["italian"] == 0.0


def test_features_reuse_the_rerank_stages_cross_encoder_scores_and_judge_the_positive_part():
    docs = [seg(f"d{i}", "iron rich foods: beans, lentils", "Iron") for i in range(4)]
    ce = FakeCrossEncoder()
    reranked = [Hit(d, 1.0, {"dense": 0.8, "cross-encoder": 0.1 * (i + 1)}) for i, d in enumerate(docs)]
    f = gate_features("iron foods", reranked[:3], reranked, "en", ce)
    assert f["cross_encoder"] == pytest.approx(0.3)
    assert ce.calls == []  # the English rerank already scored the links
    # an exclusion question: its positive part's term scores and text, the cross-encoder on the positive part
    logical = [Hit(d, 1.0, {"dense": 0.7, "term:iron foods": 0.9 - 0.05 * i}) for i, d in enumerate(docs)]
    f = gate_features("iron foods other than red meat", logical[:3], logical, "en", ce, positive="iron foods")
    assert f["dense_best"] == pytest.approx(0.9)
    assert f["dense_second"] == pytest.approx(0.85)
    assert f["exclusion"] == 1.0
    assert f["lexical"] == 1.0  # iron, foods
    assert ce.calls == [("iron foods", ["d0", "d1", "d2"])]


def test_no_bi_encoder_scores_means_no_features():
    hits = [Hit(seg("d0", "x"), 3.2, {"bm25": 3.2})]
    assert gate_features("q", hits, hits, "en") is None


def test_gate_decides_with_the_classifier_and_keeps_the_threshold_view(tmp_path):
    path = tmp_path / "gate.json"
    n = len(FEATURES)
    coef = [10.0 if f == "dense_best" else 0.0 for f in FEATURES]
    mean = [0.85 if f == "dense_best" else 0.0 for f in FEATURES]
    doc = {"coef": coef, "intercept": 0.0, "mean": mean, "scale": [1.0] * n, "threshold": 0.5}
    path.write_text(json.dumps({"features": list(FEATURES), "models": {"e5-onnx": doc}}))
    settings = Settings(embedding={"model": "e5-onnx"}, safety={"relevance_gate_model": path})
    hits = [Hit(seg(f"d{i}", "t"), 1.0, {"dense": 0.86 - 0.01 * i}) for i in range(3)]
    relevant, trace = gate("q", Result(hits, hits), FakeServices(settings))
    assert (relevant, trace["note"]) == (False, "no cross-encoder: threshold gate used")  # fitted with one
    relevant, trace = gate("q", Result(hits, hits), FakeServices(settings, ZeroCrossEncoder()))
    # the threshold gate (e5-onnx: 0.87) would refuse; the classifier answers (10 * 0.01 = 0.1 > 0)
    assert relevant is True
    assert trace["gate"] == "classifier"
    assert trace["probability"] == round(1 / (1 + math.exp(-0.1)), 4)
    assert trace["score"] == 0.86 and trace["threshold"] == 0.87
    settings = Settings(
        embedding={"model": "e5-onnx"}, safety={"relevance_gate_model": path, "relevance_gate": "threshold"}
    )
    relevant, trace = gate("q", Result(hits, hits), FakeServices(settings, ZeroCrossEncoder()))
    assert relevant is False
    assert trace == {"gate": "threshold", "score": 0.86, "scorer": "dense", "threshold": 0.87, "relevant": False}


def test_an_embedder_without_a_fitted_gate_falls_back_to_its_threshold_and_says_so(tmp_path):
    settings = Settings(embedding={"model": "minilm"})
    hits = [Hit(seg("d0", "t"), 1.0, {"dense": 0.5})]
    relevant, trace = gate("q", Result(hits, hits), FakeServices(settings))
    assert relevant is True  # minilm's English threshold is 0.49
    assert trace["gate"] == "threshold"
    assert "no relevance gate for embedder 'minilm'" in trace["note"]


def test_a_missing_gate_file_is_a_clear_error(tmp_path):
    settings = Settings(embedding={"model": "e5-onnx"}, safety={"relevance_gate_model": tmp_path / "none.json"})
    hits = [Hit(seg("d0", "t"), 1.0, {"dense": 0.9})]
    with pytest.raises(FileNotFoundError, match="relevance gate file .*none.json does not exist"):
        gate("q", Result(hits, hits), FakeServices(settings, ZeroCrossEncoder()))
