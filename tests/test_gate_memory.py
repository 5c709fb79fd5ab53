"""The relevance gate's memory of labelled questions (chatbot.stages.gate_memory): the nearest question of each label
on hand-made cosines, the verdict at tau, loading and its errors, when it is in force, and the gate using it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.settings import Settings
from chatbot.stages.gate_memory import load_memory, memory_in_force, nearest_by_label, parse_memory
from chatbot.stages.relevance import gate
from chatbot.stages.relevance_gate import FEATURES as GATE_FEATURES
from tests.gate_fakes import FakeServices, NamedEmbedder, Result, ZeroCrossEncoder
from tests.segments import seg

VECTORS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # the third is not unit: loading normalises
LABELS = np.array([True, False, True])
IDS = np.array(["set-a:q1", "set-b:q7", "set-c:q3"])


def _write(folder: Path, tau: float = 0.9, embedder: str = "e5-onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"tau": tau, "embedder": embedder, "embedder_name": "multilingual-e5-small-onnx-int8"}
    (folder / "memory.json").write_text(json.dumps(meta))
    np.savez_compressed(folder / "memory.npz", vectors=VECTORS.astype(np.float16), in_scope=LABELS, ids=IDS)
    return folder


def test_nearest_by_label_takes_the_largest_cosine_of_each_label() -> None:
    assert nearest_by_label(np.array([0.9, 0.8, 0.7, 0.95]), np.array([True, False, True, False])) == (0.9, 0.95)
    assert nearest_by_label(np.array([0.5]), np.array([True])) == (0.5, -1.0)  # no out-of-scope question
    with pytest.raises(ValueError, match="one cosine per labelled question"):
        nearest_by_label(np.array([0.5]), np.array([True, False]))


@pytest.mark.parametrize(
    ("vector", "verdict", "near_in", "near_out"),
    [
        ([0.0, 0.1, 1.0], "in scope", 0.995, 0.0995),  # beside set-c:q3 (in scope)
        ([0.0, 1.0, 0.1], "out of scope", 0.0995, 0.995),  # beside set-b:q7 (out of scope)
        ([1.0, 1.0, 0.0], None, 0.7071, 0.7071),  # nothing within tau: the gate decides
        ([0.0, 1.0, 1.0], None, 0.7071, 0.7071),
    ],
)
def test_the_nearest_labelled_question_decides_only_within_tau(
    tmp_path: Path, vector: list[float], verdict: str | None, near_in: float, near_out: float
) -> None:
    memory = load_memory(str(_write(tmp_path / "m", tau=0.9)))
    decided, trace = memory.verdict(memory.neighbours(np.array(vector) * 3.0))  # any norm
    assert decided is {"in scope": True, "out of scope": False, None: None}[verdict]
    assert (trace["verdict"], trace["nearest_in_scope"], trace["nearest_out_of_scope"], trace["tau"]) == (
        verdict,
        near_in,
        near_out,
        0.9,
    )
    assert len(trace["nearest"]) == 3 and trace["nearest"][0]["cosine"] == max(near_in, near_out)


def test_a_tie_within_tau_answers_and_the_nearest_list_keeps_the_memorys_order_on_ties(tmp_path: Path) -> None:
    memory = load_memory(str(_write(tmp_path / "m", tau=0.7)))
    cos = memory.neighbours(np.array([1.0, 1.0, 0.0]))  # 0.7071 to set-a (in) and set-b (out)
    assert memory.verdict(cos)[0] is True
    assert [n["id"] for n in memory.nearest(cos, 2)] == ["set-a:q1", "set-b:q7"]
    with pytest.raises(ValueError, match="a question vector of 2 numbers"):
        memory.neighbours(np.array([1.0, 0.0]))


@pytest.mark.parametrize(
    ("meta", "arrays", "message"),
    [
        ({"tau": 1.5, "embedder": "e5-onnx", "embedder_name": "x"}, {}, "tau must be a cosine"),
        ({"tau": True, "embedder": "e5-onnx", "embedder_name": "x"}, {}, "tau must be a cosine"),
        ({"tau": 0.9, "embedder": ""}, {}, "embedder and embedder_name must name"),
        ({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, {"in_scope": LABELS[:2]}, "the same questions"),
        ({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, {"in_scope": np.ones(3, bool)}, "both labels"),
        ({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, {"vectors": np.zeros((3, 3))}, "zero vector"),
    ],
)
def test_a_malformed_memory_is_a_clear_error(meta: dict, arrays: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_memory(meta, {"vectors": VECTORS, "in_scope": LABELS, "ids": IDS, **arrays}, "m")


def test_a_missing_memory_names_its_files_and_the_off_switch(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"lacks \['memory.json', 'memory.npz'\].*'none' turns the memory off"):
        load_memory(str(tmp_path / "absent"))


def test_the_memory_is_in_force_only_when_on_and_built_for_the_embedder(tmp_path: Path) -> None:
    folder = _write(tmp_path / "m")
    on = Settings(safety={"gate_memory": str(folder)})
    assert memory_in_force(on) is load_memory(str(folder))
    assert memory_in_force(Settings(safety={"gate_memory": "none"})) is None
    assert memory_in_force(Settings(embedding={"model": "minilm"}, safety={"gate_memory": str(folder)})) is None
    shipped = memory_in_force(Settings())  # the shipped memory loads offline, with both labels and its tau
    assert shipped is not None and shipped.in_scope.any() and not shipped.in_scope.all() and 0.8 < shipped.tau < 1


def _gate_file(tmp_path: Path, bar: float = 0.9) -> Path:
    """A gate answering when the best cosine >= ``bar`` (weight 10 around it, P 0.5 exactly at it)."""
    path = tmp_path / "gate.json"
    entry = {
        "coef": [10.0 if f == "dense_best" else 0.0 for f in GATE_FEATURES],
        "intercept": 0.0,
        "mean": [bar if f == "dense_best" else 0.0 for f in GATE_FEATURES],
        "scale": [1.0] * len(GATE_FEATURES),
        "threshold": 0.5,
    }
    path.write_text(json.dumps({"features": list(GATE_FEATURES), "models": {"e5-onnx": entry}}))
    return path


class VectorEmbedder:
    """Embeds every question as one fixed vector; records what it was asked to embed."""

    name = "multilingual-e5-small-onnx-int8"

    def __init__(self, vector: list[float]) -> None:
        self.vector, self.seen = np.array(vector), []

    def embed_queries(self, texts):
        self.seen.extend(texts)
        return np.array([self.vector for _ in texts])


def test_the_gate_follows_the_memorys_verdict_and_keeps_its_own_in_the_trace(tmp_path: Path) -> None:
    settings = Settings(
        embedding={"query_encoder": "none"},
        safety={"relevance_gate_model": _gate_file(tmp_path), "gate_memory": str(_write(tmp_path / "m"))},
    )
    hits = [Hit(seg(f"d{i}", "t"), 1.0, {"dense": 0.87 - 0.01 * i}) for i in range(3)]  # the gate's P 0.426: refused
    near = VectorEmbedder([0.0, 0.1, 1.0])  # cosine 0.995 to the in-scope set-c:q3
    services = FakeServices(settings, ZeroCrossEncoder(), near, memory=True)
    relevant, trace = gate("brie? cheese", Result(hits, hits), services, asked="brie?")
    assert relevant is True and near.seen == ["brie?"]  # the patient's words, not the question with card words
    assert (trace["relevant"], trace["probability"]) == (True, round(1 / (1 + math.exp(0.3)), 4))
    assert (trace["memory"]["verdict"], trace["memory"]["gate_relevant"]) == ("in scope", False)
    assert trace["memory"]["nearest"][0] == {"id": "set-c:q3", "in_scope": True, "cosine": 0.995}
    alone, base = gate("brie?", Result(hits, hits), services, memory=False)
    assert alone is False and "memory" not in base  # the gate alone (the gloss look judges with it)
    answered = [Hit(seg(f"d{i}", "t"), 1.0, {"dense": 0.95 - 0.01 * i}) for i in range(3)]  # P 0.62: answered
    far = FakeServices(
        settings, ZeroCrossEncoder(), VectorEmbedder([0.0, 1.0, 0.1]), memory=True
    )  # beside set-b:q7 (out)
    relevant, trace = gate("fish oil for dry eyes?", Result(answered, answered), far)
    assert (relevant, trace["relevant"], trace["memory"]["gate_relevant"]) == (False, False, True)
    other_build = FakeServices(settings, ZeroCrossEncoder(), NamedEmbedder("another-e5-build"), memory=True)
    relevant, trace = gate("q", Result(hits, hits), other_build)
    assert (relevant, trace["memory"]) == (
        False,
        {
            "verdict": None,
            "note": "built with multilingual-e5-small-onnx-int8 vectors, the embedder is another-e5-build",
            "gate_relevant": False,
        },
    )
    unsure = FakeServices(
        settings, ZeroCrossEncoder(), VectorEmbedder([1.0, 1.0, 0.0]), memory=True
    )  # nothing within tau
    relevant, trace = gate("q", Result(answered, answered), unsure)
    assert (relevant, trace["memory"]["verdict"]) == (True, None)


@pytest.mark.parametrize(
    ("question", "verdict"),
    [
        ("is it fine to eat camembert while I'm expecting?", True),
        ("how many micrograms of folic acid before conceiving?", True),
        ("posso mangiare il salame crudo in gravidanza?", True),
        ("quanto dura il baby blues dopo il parto?", True),
        ("how do I renew my passport?", False),
        ("quale crema solare per una vacanza al mare da adulta?", False),
        ("what's a good exercise routine to build biceps?", False),  # an out-of-scope exclusion question (s39)
        ("how do I tune a guitar string?", None),  # no labelled question within tau: the gate decides
        ("come si sostituisce la batteria della macchina?", None),
    ],
)
def test_the_shipped_memory_judges_questions_written_for_this_test_with_the_real_encoder(
    question: str, verdict: bool | None
) -> None:
    from chatbot.embedders import load_embedder

    memory = memory_in_force(Settings())
    assert memory is not None, "the shipped gate memory (models/relevance_gate/memory) did not load"
    decided, trace = memory.verdict(memory.neighbours(load_embedder("e5-onnx", 1).embed_queries([question])[0]))
    assert decided is verdict, trace


def test_an_in_scope_question_counts_only_when_one_of_its_cards_was_retrieved(tmp_path: Path) -> None:
    folder = _write(tmp_path / "m", tau=0.9)
    np.savez_compressed(
        folder / "memory.npz",
        vectors=VECTORS.astype(np.float16),
        in_scope=LABELS,
        ids=IDS,
        cards=np.array(["card-a", "", "card-c|card-c2"]),
    )
    memory = load_memory(str(folder))
    cos = memory.neighbours(np.array([0.0, 0.1, 1.0]))  # 0.995 to set-c:q3 (in scope, cards card-c / card-c2)
    assert memory.verdict(cos, {"card-c2", "other"})[0] is True
    decided, trace = memory.verdict(cos, {"card-a"})  # its cards are not among the retrieved: it does not count
    assert (decided, trace["nearest_in_scope"]) == (None, 0.0)  # set-a:q1 (card-a) counts, at cosine 0
    assert [n["id"] for n in trace["nearest"]][:2] == ["set-b:q7", "set-a:q1"]  # set-c:q3 is not listed
    assert memory.verdict(cos)[0] is True  # no documents given: every labelled question counts


def test_rows_that_do_not_vote_are_left_out_of_the_verdict_only(tmp_path: Path) -> None:
    arrays = {
        "vectors": np.eye(3),
        "in_scope": np.array([True, False, True]),
        "ids": np.array(["set-a:q1", "set-b:q7", "replies/r.jsonl:q3"]),
        "cards": np.array(["card-a", "", "card-c"]),
        "gate": np.array([True, True, False]),
    }
    memory = parse_memory({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, arrays, "m")
    near_q3 = memory.neighbours(np.array([0.0, 0.1, 1.0]))  # 0.995 to the reply row that does not vote
    decided, trace = memory.verdict(near_q3)
    assert (decided, trace["nearest_in_scope"], trace["nearest_out_of_scope"]) == (None, 0.0, 0.0995)
    assert [n["id"] for n in trace["nearest"]] == ["set-b:q7", "set-a:q1"]  # the trace names voting rows only
    assert memory.named.tolist() == [True, False, True]  # the card and answer memories still read every row
    with pytest.raises(ValueError, match=r"gate must hold one true/false per question"):
        parse_memory({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, {**arrays, "gate": np.ones(2)}, "m")
    with pytest.raises(ValueError, match=r"the questions that vote in the gate need both labels"):
        only_in = {**arrays, "gate": np.array([True, False, True])}
        parse_memory({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, only_in, "m")
