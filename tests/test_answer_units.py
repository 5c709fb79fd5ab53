"""The trained answer scorer's units embedded ahead of the question (chatbot.stages.answer_units): what is stored,
that a warmed unit is never embedded at a question, and that a new one is embedded once, alone."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.stages.answer_first import answer_candidates, unit_texts, warm_answer_units
from chatbot.stages.answer_trained import FEATURE_VERSION, WEIGHTS_FILE, TrainedAnswerModel
from chatbot.stages.answer_units import (
    MAX_SEGMENTS,
    UnitVectors,
    digest,
    store_path,
    trained_scorer_used,
)
from corpus.model import Segment
from tests.conftest import FakeEmbedder, keyword_vector

TEXT = (
    "A fever in a baby under 3 months needs a doctor the same day. Sleep on the back is safest.\n"
    "Call a midwife if:\n- the fever lasts more than a day\n- the baby will not feed\n- the baby is floppy"
)


def _segment(sid: str = "fever#0", text: str = TEXT) -> Segment:
    return Segment(sid, "fever", text, "Fever in babies", "https://example.org/fever", 0, heading="Fever")


class CallLog(FakeEmbedder):
    """The keyword fake, recording each embed_passages call's texts (to see batches)."""

    def __init__(self, name: str = "fake-keywords") -> None:
        super().__init__(name)
        self.calls: list[list[str]] = []

    def embed_passages(self, texts):
        self.calls.append(list(texts))
        return super().embed_passages(texts)


def _head(tmp_path, dim: int):
    n = 2 * dim + 1 + 36 + 3
    coef = np.zeros(n, dtype=np.float32)
    coef[2 * dim] = 4.0  # the cosine only
    np.savez(
        tmp_path / WEIGHTS_FILE,
        coef=coef,
        intercept=np.float32(-2.0),
        mean=np.zeros(n, dtype=np.float32),
        scale=np.ones(n, dtype=np.float32),
        meta=np.asarray(json.dumps({"feature_version": FEATURE_VERSION})),
    )
    return tmp_path


def test_unit_texts_are_exactly_the_texts_the_composer_hands_its_model() -> None:
    seg = _segment()
    for room in (600, 60):  # 60: the list is longer than the room and comes in pieces
        units, _ = answer_candidates([Hit(seg, 1.0)], [Hit(seg, 1.0)], None, None, room)
        assert unit_texts([seg], room) == list(dict.fromkeys(u.text for u in units))
    assert unit_texts([seg], 600) == [
        "A fever in a baby under 3 months needs a doctor the same day.",
        "Sleep on the back is safest.",
        "Call a midwife if:\n- the fever lasts more than a day\n- the baby will not feed\n- the baby is floppy",
    ]


def test_warm_embeds_each_missing_unit_alone_drops_the_rest_and_survives_a_reload(tmp_path) -> None:
    embedder = CallLog()
    store = UnitVectors(tmp_path / "u.npz", embedder.name)

    assert store.warm(["a fever", "sleep well", "a fever"], embedder.embed_passages) == 2
    assert embedder.calls == [["a fever"], ["sleep well"]]  # one text per call: a vector of its text only
    assert store.warm(["sleep well", "asthma"], embedder.embed_passages) == 1
    assert embedder.calls[-1] == ["asthma"]
    assert sorted(store.vectors) == sorted([digest("sleep well"), digest("asthma")])  # "a fever" is gone
    store.save()

    again = UnitVectors.load(tmp_path / "u.npz", embedder.name)
    assert len(again) == 2
    assert again.get("asthma").tolist() == keyword_vector("asthma").tolist()
    assert again.get("a fever") is None
    assert len(UnitVectors.load(tmp_path / "u.npz", "another-encoder")) == 0  # never another model's vectors
    assert len(UnitVectors.load(tmp_path / "absent.npz", embedder.name)) == 0


def test_the_scorer_embeds_no_warmed_unit_and_a_new_one_once_alone(tmp_path) -> None:
    embedder = CallLog()
    store = UnitVectors(None, embedder.name)
    store.warm(["Fever in babies needs a doctor.", "Sleep on the back."], embedder.embed_passages)
    embedder.calls.clear()
    warmed = TrainedAnswerModel(embedder, _head(tmp_path, embedder.dim), units=store)
    plain = TrainedAnswerModel(FakeEmbedder(), tmp_path)  # no store: embeds what it sees (as before)
    texts = ["Fever in babies needs a doctor.", "Sleep on the back.", "Fever in babies needs a doctor."]

    probs = warmed("My baby has a fever", texts)

    assert embedder.calls == [] and warmed.embedded == 0  # every unit came from the store
    assert probs.tolist() == plain("My baby has a fever", texts).tolist()  # the same scores
    warmed("Is a fever dangerous?", [*texts, "Asthma inhalers.", "Diabetes checks."])
    assert embedder.calls == [["Asthma inhalers."], ["Diabetes checks."]] and warmed.embedded == 2
    warmed("Asthma?", ["Asthma inhalers.", "Sleep on the back."])
    assert warmed.embedded == 2 and len(embedder.calls) == 2  # a new unit is embedded once per process


def test_the_question_is_encoded_once_per_turn_when_retrieval_used_the_same_encoder() -> None:
    from chatbot.vector_cache import VectorCache

    computed: list[str] = []
    cache = VectorCache(lambda texts: computed.extend(texts) or np.vstack([keyword_vector(t) for t in texts]))
    encoder = types.SimpleNamespace(embed_queries=cache.embed, embed_passages=lambda texts: 1 / 0)
    store = UnitVectors(None, "e5")
    store.vectors = {digest("Fever needs a doctor."): keyword_vector("fever")}
    model = TrainedAnswerModel.__new__(TrainedAnswerModel)  # the head does not matter here
    model.embedder, model.units, model._cache, model.embedded, model.max_cached = encoder, store, {}, 0, 10

    cache.embed(["My baby has a fever"])  # retrieval
    vectors = model._sentence_vectors(["Fever needs a doctor."])
    model.embedder.embed_queries(["My baby has a fever"])  # what __call__ asks for the question

    assert computed == ["My baby has a fever"] and vectors.shape == (1, 5)


def test_the_pipeline_model_reads_the_store_ingest_wrote(tmp_path, monkeypatch) -> None:
    import chatbot.embedders
    from chatbot.settings import load_settings
    from chatbot.stages import answer_first

    embedder = CallLog("multilingual-e5-small-onnx-int8")
    monkeypatch.setattr(chatbot.embedders, "load_embedder", lambda kind, threads=2, int8_matmul="int8": embedder)
    settings = load_settings()
    assert settings.embedding.model == "e5-onnx" and trained_scorer_used(settings)
    seg = _segment()
    index = types.SimpleNamespace(all_segments=lambda: ([seg], np.zeros((1, 5))), count=lambda: 1)
    services = types.SimpleNamespace(settings=settings, data_dir=tmp_path, collection_name="cards", index=index)

    report = warm_answer_units(services)

    assert report is not None and (report["units"], report["embedded"]) == (3, 3)
    assert store_path(tmp_path, "cards").is_file() and len(embedder.calls) == 3
    assert warm_answer_units(services)["embedded"] == 0  # an unchanged index embeds nothing
    model = answer_first._trained_model(services)
    assert model.units is not None and len(model.units) == 3  # the file ingest wrote
    vectors = model._sentence_vectors(unit_texts([seg], settings.compose.max_chars))  # the shipped head is 384-d
    assert vectors.shape == (3, 5) and len(embedder.calls) == 3 and model.embedded == 0
    index.count = lambda: MAX_SEGMENTS + 1  # a benchmark corpus: left to the on-demand cache
    assert warm_answer_units(services) is None


def test_nothing_is_warmed_when_the_trained_scorer_is_off_or_the_encoder_differs(tmp_path) -> None:
    from chatbot.settings import load_settings

    settings = load_settings()
    services = types.SimpleNamespace(settings=settings, data_dir=tmp_path, collection_name="c", index=None)
    settings.compose.trained_types = []
    assert not trained_scorer_used(settings) and warm_answer_units(services) is None
    settings.compose.trained_types = ["why"]
    settings.embedding.model = "minilm"
    assert warm_answer_units(services) is None  # the scorer embeds on demand, as before
    with pytest.raises(ValueError, match="no file"):
        UnitVectors(None, "x").save()
