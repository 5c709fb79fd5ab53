"""The red-flag screen's contextual e5 head (chatbot.stages.redflag_context): hand-made vectors and layers,
exact decisions; how the screen combines it with the rules and the n-gram classifier."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chatbot.stages import redflag_context, redflags
from chatbot.stages.redflag_classifier import LABELS
from chatbot.stages.redflag_context import ContextHead, ContextPrediction, ContextScorer
from chatbot.stages.redflags import screen

# -- the head on hand-made vectors ----------------------------------------------------------------------


def linear_head(**meta) -> ContextHead:
    """dim 3: axis 0 -> none, axis 1 -> poisoning, axis 2 -> maternity_unit (logit 10 per unit)."""
    w = np.zeros((3, len(LABELS)), dtype=np.float32)
    w[0, LABELS.index("none")] = 10
    w[1, LABELS.index("poisoning")] = 10
    w[2, LABELS.index("maternity_unit")] = 10
    return ContextHead([(w, np.zeros(len(LABELS), np.float32))], {"threshold": 0.6, "veto": 0.2, **meta})


def test_a_linear_head_reads_each_axis_as_its_label():
    head = linear_head()

    calm = head.predict_vector(np.array([1.0, 0.0, 0.0]))
    poison = head.predict_vector(np.array([0.0, 1.0, 0.0]))
    even = head.probabilities(np.zeros((1, 3)))[0]

    assert calm.urgent_score < 0.001 and poison.urgent_score > 0.999
    assert poison.action == "poisoning"
    assert head.predict_vector(np.array([0.0, 0.2, 0.9])).action == "maternity_unit"
    assert np.allclose(even, 1 / len(LABELS))  # no evidence: the five labels equally likely
    assert set(poison.scores) == set(LABELS[1:])


def test_the_hidden_layer_is_rectified():
    # one hidden unit h = relu(x0); "emergency" logit = 10 h: a negative input must not count against it
    w1, b1 = np.array([[1.0]], np.float32), np.zeros(1, np.float32)
    w2 = np.zeros((1, len(LABELS)), np.float32)
    w2[0, LABELS.index("emergency")] = 10
    head = ContextHead([(w1, b1), (w2, np.zeros(len(LABELS), np.float32))])

    assert head.predict_vector(np.array([1.0])).action == "emergency"
    assert head.predict_vector(np.array([1.0])).urgent_score > 0.99
    assert np.allclose(head.probabilities(np.array([[-5.0]])), head.probabilities(np.array([[0.0]])))


def test_malformed_heads_and_vectors_are_refused():
    with pytest.raises(ValueError, match="outputs"):
        ContextHead([(np.zeros((3, 2), np.float32), np.zeros(2, np.float32))])
    with pytest.raises(ValueError, match="chain"):
        ContextHead([(np.zeros((3, 4), np.float32), np.zeros(4)), (np.zeros((5, 5), np.float32), np.zeros(5))])
    with pytest.raises(ValueError, match=r"\(n, 3\)"):
        linear_head().probabilities(np.zeros((1, 4)))


def test_a_saved_head_loads_back_with_its_labels(tmp_path):
    head = linear_head()
    w, b = head.layers[0]
    np.savez_compressed(tmp_path / redflag_context.HEAD_FILE, w0=w, b0=b)
    meta = {"labels": list(LABELS), "layers": 1, "threshold": 0.6, "veto": 0.2}
    (tmp_path / redflag_context.HEAD_CONFIG).write_text(json.dumps(meta))

    loaded = ContextHead.load(tmp_path)

    assert loaded.meta["veto"] == 0.2
    assert loaded.predict_vector(np.array([0.0, 1.0, 0.0])).action == "poisoning"
    (tmp_path / redflag_context.HEAD_CONFIG).write_text(json.dumps({**meta, "labels": ["a", "b"]}))
    with pytest.raises(ValueError, match="labels"):
        ContextHead.load(tmp_path)


# -- the screen: rules OR n-gram OR head, rules and n-gram vetoed by a calm head ----------------------


def scorer(vector: list[float]) -> ContextScorer:
    """The linear head around a fake encoder that gives every text ``vector``."""
    return ContextScorer(linear_head(), embed=lambda texts: np.array([vector] * len(texts), np.float32))


CALM, UNSURE, POISON = [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]  # urgent scores ~0, 0.8, ~1


def test_a_calm_head_vetoes_a_rule_that_fired_on_scary_words():
    result = screen("I want to kill myself", None, scorer(CALM))

    assert result.urgent is False
    assert result.classifier["context"]["vetoed"] == ["self_harm_or_harming_the_baby"]


def test_above_the_veto_the_rules_stand_and_a_confident_head_adds_its_action():
    unsure = linear_head().predict_vector(np.array(UNSURE)).urgent_score
    assert unsure == pytest.approx(0.8)  # 4 of 5 equal labels: above both the veto and the threshold
    ruled = screen("I want to kill myself", None, scorer(UNSURE))
    # the rule's action (0.5) first, then the head's (its first label at 0.2)
    assert ruled.actions == ("mental_health", "emergency")

    alone = screen("my tummy feels odd", None, scorer(POISON))  # no rule: the head alone is enough
    assert alone.actions == ("poisoning",)
    assert screen("my tummy feels odd", None, scorer(CALM)).urgent is False


def test_a_broken_encoder_never_skips_the_screen(capsys, monkeypatch):
    monkeypatch.setattr(redflags, "_CONTEXT_WARNED", False)

    def broken(texts):
        raise RuntimeError("no e5 model")

    head = ContextScorer(linear_head(), embed=broken)
    result = screen("I want to kill myself", None, head)

    assert result.urgent is True and result.action == "mental_health"  # the rules still ran, unvetoed
    assert "contextual head unavailable" in capsys.readouterr().err


def test_the_default_encoder_is_built_on_first_use_with_a_notice(tmp_path, monkeypatch, capsys):
    built = []
    monkeypatch.setattr(redflag_context, "_configured_e5_dir", lambda: (None, False, 1, "int8"))
    monkeypatch.setattr("chatbot.e5_build.default_out_dir", lambda: tmp_path)
    monkeypatch.setattr("chatbot.e5_build._build_into_place", lambda out, threads, log, vocab: built.append(out))
    redflag_context.encoder.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="still unusable after building"):  # the fake build wrote nothing
            redflag_context.encoder()
    finally:
        redflag_context.encoder.cache_clear()

    assert built == [tmp_path]
    assert "building the e5 model" in capsys.readouterr().err


def test_an_unbuilt_configured_folder_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr(redflag_context, "_configured_e5_dir", lambda: (tmp_path, False, 1, "int8"))
    redflag_context.encoder.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="chatbot models build-e5"):
            redflag_context.encoder()
    finally:
        redflag_context.encoder.cache_clear()


def test_prediction_trace_rounds_its_scores():
    p = ContextPrediction(0.123456, {"emergency": 0.1, "poisoning": 0.023456, "mental_health": 0, "maternity_unit": 0})
    assert p.trace() == {
        "urgent_score": 0.1235,
        "scores": {"emergency": 0.1, "poisoning": 0.0235, "mental_health": 0, "maternity_unit": 0},
    }
    assert p.action == "emergency"


def test_the_screen_shares_the_pipelines_e5_instance_under_default_settings():
    """One e5 model in memory per process: the screen asks for the key (kind, threads, int8_matmul) the
    pipeline uses."""
    from chatbot.embedders import load_embedder
    from chatbot.settings import load_settings

    settings = load_settings()
    embedding = settings.embedding
    assert embedding.model == "e5-onnx"
    redflag_context.encoder.cache_clear()
    try:
        assert redflag_context.encoder() is load_embedder(
            embedding.model, embedding.threads, settings.runtime.int8_matmul
        )
    finally:
        redflag_context.encoder.cache_clear()
