"""A hand-made memory of four labelled questions for unit tests (chatbot.stages.gate_memory): one-hot vectors, so
a question's cosines to them are whatever the test passes; the third is out of scope, the fourth names no card."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chatbot.stages.gate_memory import GateMemory, parse_memory


def four_questions(tmp_path: Path, ids: tuple[str, ...], cards: tuple[str, ...]) -> GateMemory:
    arrays = {
        "vectors": np.eye(4),
        "in_scope": np.array([True, True, False, True]),
        "ids": np.array(ids),
        "cards": np.array(cards),
    }
    return parse_memory({"tau": 0.9, "embedder": "e5-onnx", "embedder_name": "x"}, arrays, str(tmp_path))
