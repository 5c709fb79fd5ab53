"""The relevance gate is a function of the configuration it runs with: with the tuned query encoder on, the gate
(and the cross-language second look) fitted on that encoder's scores is used, never the plain embedder's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chatbot.index import Hit
from chatbot.query_encoder import QueryEncoderError, encoder_tag
from chatbot.resources import shipped_model, workspace_root
from chatbot.settings import Settings
from chatbot.stages.cross_language_gate import rules_in_force
from chatbot.stages.relevance import gate, gate_key
from chatbot.stages.relevance_gate import FEATURES
from evaluation.redteam.gate_rows_mix import mix
from tests.gate_fakes import FakeServices, Result, ZeroCrossEncoder
from tests.segments import seg

SHIPPED_SHA12 = json.loads((shipped_model("query_encoder") / "encoder.json").read_text())["sha256"][:12]


def test_the_gate_key_names_the_embedder_and_the_encoders_weights_and_languages() -> None:
    default = Settings()  # auto: the shipped encoder over e5-onnx, for Italian questions only
    assert gate_key(default, "it") == f"e5-onnx+query-encoder-{SHIPPED_SHA12}[it]"
    assert gate_key(default, "en") == "e5-onnx"
    assert gate_key(Settings(embedding={"model": "minilm"}), "it") == "minilm"  # auto: no encoder for other indexes
    assert gate_key(Settings(embedding={"query_encoder": "none"}), "it") == "e5-onnx"
    on = Settings(embedding={"query_encoder": "shipped", "query_encoder_languages": []})
    assert gate_key(on) == f"e5-onnx+query-encoder-{SHIPPED_SHA12}"
    it = Settings(embedding={"query_encoder": "shipped", "query_encoder_languages": ["it"]})
    assert gate_key(it) == gate_key(it, "it") == f"e5-onnx+query-encoder-{SHIPPED_SHA12}[it]"
    assert gate_key(it, "en") == "e5-onnx"  # an English question skips the encoder: the plain gate judges it
    assert gate_key(on, "en") == f"e5-onnx+query-encoder-{SHIPPED_SHA12}"
    both = Settings(embedding={"query_encoder": "shipped", "query_encoder_languages": ["it", "en"]})
    assert gate_key(both) == f"e5-onnx+query-encoder-{SHIPPED_SHA12}"  # every language: the same as none named
    assert encoder_tag("none", workspace_root()) is None


def test_another_encoder_folder_gets_its_own_key_and_a_broken_one_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "encoder.json").write_text(json.dumps({"sha256": "ab" * 32}))
    assert encoder_tag(str(tmp_path), workspace_root(), ["it"]) == "query-encoder-abababababab[it]"
    with pytest.raises(QueryEncoderError, match="manifest .*encoder.json cannot be read"):
        encoder_tag(str(tmp_path / "missing"), workspace_root())


def _entry(bar: float, look: list[float] | None = None) -> dict:
    """A gate answering when the best cosine >= ``bar`` (weight 10 around it, P 0.5 exactly at it)."""
    n = len(FEATURES)
    doc = {
        "coef": [10.0 if f == "dense_best" else 0.0 for f in FEATURES],
        "intercept": 0.0,
        "mean": [bar if f == "dense_best" else 0.0 for f in FEATURES],
        "scale": [1.0] * n,
        "threshold": 0.5,
    }
    return doc if look is None else {**doc, "second_look_it": look}


def test_the_encoders_own_gate_and_second_look_are_used_when_it_is_on(tmp_path: Path) -> None:
    path = tmp_path / "gate.json"
    key = f"e5-onnx+query-encoder-{SHIPPED_SHA12}[it]"
    models = {"e5-onnx": _entry(0.85, [52.9, -1.8]), key: _entry(0.90, [40.0, -2.0])}
    path.write_text(json.dumps({"features": list(FEATURES), "models": models}))
    hits = [Hit(seg(f"d{i}", "t"), 1.0, {"dense": 0.87 - 0.01 * i}) for i in range(3)]
    off = Settings(
        embedding={"query_encoder": "none"},
        safety={"relevance_gate_model": path, "cross_language_gate": {"it": (52.9, -1.8)}},
    )
    relevant, trace = gate("q", Result(hits, hits), FakeServices(off, ZeroCrossEncoder()))
    assert (relevant, trace["probability"]) == (True, round(1 / (1 + math.exp(-0.2)), 4))  # 10 * (0.87 - 0.85)
    assert rules_in_force(off) == {"it": (52.9, -1.8)}  # the setting, fitted with the plain gate
    on = off.model_copy(deep=True)
    on.embedding.query_encoder, on.embedding.query_encoder_languages = "shipped", ["it"]
    relevant, trace = gate("q", Result(hits, hits), FakeServices(on, ZeroCrossEncoder()), "it")
    assert (relevant, trace["probability"]) == (False, round(1 / (1 + math.exp(0.3)), 4))  # 10 * (0.87 - 0.90)
    assert trace["gate_model"] == key  # the trace names the gate that decided
    # not encoded: the plain gate
    relevant, trace = gate("q", Result(hits, hits), FakeServices(on, ZeroCrossEncoder()), "en")
    assert (relevant, trace["probability"]) == (True, round(1 / (1 + math.exp(-0.2)), 4))
    assert rules_in_force(on) == {"it": (40.0, -2.0)}  # the rule fitted on the encoder gate's P
    on.safety.cross_language_gate = {}
    assert rules_in_force(on) == {}  # off stays off


def test_an_encoder_setting_without_a_fitted_gate_falls_back_to_the_threshold_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "gate.json"
    path.write_text(json.dumps({"features": list(FEATURES), "models": {"e5-onnx": _entry(0.85, [52.9, -1.8])}}))
    on = Settings(
        embedding={"query_encoder": "shipped", "query_encoder_languages": []}, safety={"relevance_gate_model": path}
    )
    hits = [Hit(seg("d0", "t"), 1.0, {"dense": 0.88})]
    relevant, trace = gate("q", Result(hits, hits), FakeServices(on, ZeroCrossEncoder()))
    # never the plain embedder's classifier on the encoder's links: the threshold gate (raw e5 cosine, e5-onnx
    # English bar 0.87) decides, and the trace says why
    assert (relevant, trace["gate"]) == (True, "threshold")
    assert f"no relevance gate for embedder 'e5-onnx+query-encoder-{SHIPPED_SHA12}'" in trace["note"]
    assert rules_in_force(on) == on.safety.cross_language_gate  # no second look runs after a threshold gate


def test_mixed_rows_take_the_swapped_languages_rows_and_keep_only_questions_both_have() -> None:
    base = {("s", "en1"): {"language": "en", "v": "off"}, ("s", "it1"): {"language": "it", "v": "off"}}
    base[("s", "it2")] = {"language": "it", "v": "off"}
    swapped = {"it": {("s", "it1"): {"language": "it", "v": "on"}}}
    kept, mixed = mix(base, swapped)
    assert [r["v"] for r in kept] == ["off", "off"] and [r["v"] for r in mixed] == ["off", "on"]
    assert [r["language"] for r in mixed] == ["en", "it"]  # it2 has no encoder row: left out of both


def test_rescore_puts_the_reference_gates_p_and_decision_on_a_rows_own_features() -> None:
    from chatbot.stages.relevance_gate import parse_gate
    from evaluation.redteam.gate_rows_mix import rescore

    model = parse_gate({"features": list(FEATURES), "models": {"e5-onnx": _entry(0.85)}}, "e5-onnx")
    feats = {f: 0.0 for f in FEATURES} | {"dense_best": 0.87}
    row = rescore({"features": feats, "probability": 0.1, "shipped_relevant": False}, model)
    assert (row["probability"], row["shipped_relevant"]) == (round(1 / (1 + math.exp(-0.2)), 4), True)
    skipped = {"skipped": "unsupported language", "features": None}
    assert rescore(skipped, model) is skipped


def test_pair_counts_the_questions_only_one_configuration_decides_right() -> None:
    from evaluation.redteam.gate_pair import pair

    def r(i: int, lang: str, in_scope: bool) -> dict:
        return {"source": "gate_dev.jsonl", "id": str(i), "group": "gate_dev.jsonl", "gate_language": lang,
                "in_scope": in_scope}  # fmt: skip

    rows = [r(0, "it", True), r(1, "it", False), r(2, "it", False), r(3, "en", True)]
    a = {"gate_dev.jsonl|0": True, "gate_dev.jsonl|1": False, "gate_dev.jsonl|2": True, "gate_dev.jsonl|3": True}
    # b refuses 0 (wrong), 1 and 2 (right): 2 of its 3 refusals out of scope
    b = {**a, "gate_dev.jsonl|0": False, "gate_dev.jsonl|2": False}
    lines = pair(rows, a, b)
    assert lines[0].endswith("| 0 vs 0 (p 1.0) |")  # English, gate sets: the same decisions
    assert lines[2] == "| it | gate sets | 1.000 / 0.500 / 1.000 | 0.667 / 1.000 / 0.000 | 1 vs 1 (p 1.0) |"


def test_auto_is_decided_on_the_embedder_actually_built_by_the_pipeline_and_the_gate_alike(tmp_path: Path) -> None:
    """embedding.model=e5-onnx with a build whose embedder is not the encoder's base (a trimmed vocabulary, a test's
    stand-in): retrieval goes without the encoder, so the gate must not take the encoder's entry either."""
    from chatbot.pipeline import Services
    from chatbot.query_encoder import BASE_EMBEDDER, TunedQueryEmbedder
    from tests.gate_fakes import NamedEmbedder

    trimmed, base = NamedEmbedder(f"{BASE_EMBEDDER}-latin"), NamedEmbedder(BASE_EMBEDDER)
    key = f"e5-onnx+query-encoder-{SHIPPED_SHA12}[it]"
    default = Settings()
    assert default.embedding.model == "e5-onnx" and default.embedding.query_encoder == "auto"
    assert gate_key(default, "it", trimmed) == "e5-onnx"
    assert gate_key(default, "it", base) == key
    assert gate_key(default, "it") == key  # no embedder given: the one e5-onnx builds, the encoder's base
    services = Services(default)
    services.__dict__["embedder"] = trimmed  # what Services.embedder built
    assert services.query_embedder is trimmed  # neither the encoder nor the adapter (fitted to e5-onnx only)
    services = Services(default)
    services.__dict__["embedder"] = base
    assert isinstance(services.query_embedder, TunedQueryEmbedder)
    # the gate reads the services' embedder: with each gate's own bar, the decision shows which entry judged
    path = tmp_path / "gate.json"
    path.write_text(json.dumps({"features": list(FEATURES), "models": {"e5-onnx": _entry(0.85), key: _entry(0.90)}}))
    settings = Settings(safety={"relevance_gate_model": path, "cross_language_gate": {"it": (52.9, -1.8)}})
    hits = [Hit(seg("d0", "t"), 1.0, {"dense": 0.87})]
    for embedder, entry, relevant in ((trimmed, "e5-onnx", True), (base, key, False)):
        decided, trace = gate("q", Result(hits, hits), FakeServices(settings, ZeroCrossEncoder(), embedder), "it")
        assert (decided, trace["gate_model"]) == (relevant, entry)
    assert rules_in_force(settings, trimmed) == {"it": (52.9, -1.8)}  # the plain gate's second look
    assert rules_in_force(settings, base) == {"it": (52.9, -1.8)}  # this key's entry has no second_look_it of its own
