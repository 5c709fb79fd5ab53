"""Adding labelled questions to the gate memory (evaluation.redteam.gate_memory_add): rows appended with their label,
cards and embedder's vector, already-known ids skipped, the addition recorded, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chatbot.stages.gate_memory import load_memory
from evaluation.redteam.gate_memory_add import add, labelled_rows


class TableEmbedder:
    """Embeds each text as the vector the test gave it."""

    name = "e5-build"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_queries(self, texts):
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def _memory(folder: Path) -> Path:
    folder.mkdir()
    meta = {"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "e5-build", "questions": {"in_scope": 1}}
    (folder / "memory.json").write_text(json.dumps(meta))
    np.savez_compressed(
        folder / "memory.npz",
        vectors=np.array([[127, 0, 0], [0, 127, 0]], dtype=np.int8),
        in_scope=np.array([True, False]),
        ids=np.array(["set-a:q1", "set-b:q2"]),
        cards=np.array(["card-a", ""]),
    )
    return folder


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_added_questions_keep_label_cards_and_vector_and_a_second_add_changes_nothing(tmp_path: Path) -> None:
    folder = _memory(tmp_path / "m")
    data = _rows(
        tmp_path / "gx.jsonl",
        [
            {"id": "x-1", "text": "apart from ginger, what helps nausea?", "in_scope": True, "card_id": "card-n"},
            {"id": "x-2", "text": "apart from ibuprofen, what helps a migraine?", "in_scope": False, "card_id": None},
        ],
    )
    table = {
        "apart from ginger, what helps nausea?": [0.0, 0.0, 3.0],
        "apart from ibuprofen, what helps a migraine?": [0.0, 4.0, 3.0],
    }
    assert add(folder, [data], TableEmbedder(table), "cmd") == {"added": 2, "skipped": 0}
    load_memory.cache_clear()
    memory = load_memory(str(folder))
    assert memory.ids == ("set-a:q1", "set-b:q2", "gx.jsonl:x-1", "gx.jsonl:x-2")
    assert memory.in_scope.tolist() == [True, False, True, False]
    assert memory.cards[2:] == (frozenset({"card-n"}), frozenset())
    np.testing.assert_allclose(memory.vectors[2:], [[0, 0, 1], [0, 0.8, 0.6]], atol=0.01)
    meta = json.loads((folder / "memory.json").read_text())
    assert meta["questions"] == {"in_scope": 2, "out_of_scope": 2} and meta["tau"] == 0.9
    assert [(a["command"], a["gate"], [(f["file"], f["questions"]) for f in a["files"]]) for a in meta["added"]] == [
        ("cmd", True, [("gx.jsonl", 2)])
    ]
    assert "gate" not in np.load(folder / "memory.npz").files and memory.voting.all()  # every row votes
    before = (folder / "memory.npz").read_bytes()
    assert add(folder, [data], TableEmbedder(table), "cmd") == {"added": 0, "skipped": 2}
    assert (folder / "memory.npz").read_bytes() == before


def test_reply_rows_are_in_scope_and_malformed_rows_are_clear_errors(tmp_path: Path) -> None:
    reply = _rows(tmp_path / "r.jsonl", [{"id": "r-1", "question": "how much caffeine?", "card_id": "en-caffeine"}])
    assert labelled_rows(reply) == [
        {"id": "r.jsonl:r-1", "text": "how much caffeine?", "in_scope": True, "card_ids": ["en-caffeine"]}
    ]
    assert labelled_rows(reply, "replies/")[0]["id"] == "replies/r.jsonl:r-1"  # as the answer memory names them
    with pytest.raises(ValueError, match=r"bad.jsonl:1: a labelled row needs an id and a text"):
        labelled_rows(_rows(tmp_path / "bad.jsonl", [{"id": "b-1", "text": " "}]))
    with pytest.raises(ValueError, match=r"in_scope must be true or false, got 'yes'"):
        labelled_rows(_rows(tmp_path / "bad2.jsonl", [{"id": "b-2", "text": "q", "in_scope": "yes"}]))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "c-1", "text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.jsonl:1: invalid JSON"):
        labelled_rows(broken)


def test_another_embedders_vectors_are_refused(tmp_path: Path) -> None:
    folder = _memory(tmp_path / "m")
    data = _rows(tmp_path / "gx.jsonl", [{"id": "x-1", "text": "q", "in_scope": False}])
    other = TableEmbedder({"q": [1.0, 0.0, 0.0]})
    other.name = "another-build"
    with pytest.raises(ValueError, match=r"holds e5-build vectors; the embedder given is another-build"):
        add(folder, [data], other, "cmd")


def test_rows_added_without_a_vote_are_marked_and_earlier_rows_keep_theirs(tmp_path: Path) -> None:
    folder = _memory(tmp_path / "m")
    data = _rows(tmp_path / "r.jsonl", [{"id": "r-1", "question": "how much caffeine?", "card_id": "en-caffeine"}])
    add(folder, [data], TableEmbedder({"how much caffeine?": [1.0, 1.0, 0.0]}), "cmd", "replies/", vote=False)
    load_memory.cache_clear()
    memory = load_memory(str(folder))
    assert memory.ids[-1] == "replies/r.jsonl:r-1" and memory.voting.tolist() == [True, True, False]
    assert json.loads((folder / "memory.json").read_text())["added"][0]["gate"] is False
