"""Which sentence answers, by the labelled questions (compose.answer_memory): the team's reply sets name, for each
question, the card that answers it and the verbatim key phrases a correct reply must hold. The relevance gate's
memory (chatbot.stages.gate_memory) keeps those questions' vectors; ``answers.json`` beside it keeps their key
phrases. When the nearest labelled question with key phrases is within ``compose.answer_memory_tau`` (cosine, raw
e5) of the patient's, the answer-first composer opens with the unit of that question's card holding a key phrase
(chatbot.stages.answer_first.lead_unit), if the card is among what it composes from. Leave-one-set-out over the spent
reply sets, at >= 0.95 that unit held the patient's own key phrase for 94-96% of questions (answer-memory-s29.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.stages.gate_memory import GateMemory

ANSWERS = "answers.json"


@dataclass(frozen=True)
class Lead:
    """The nearest labelled question with key phrases: its id and cosine, its cards and their key phrases."""

    id: str
    cosine: float
    cards: frozenset[str]
    phrases: tuple[str, ...]
    tau: float

    def trace(self) -> dict[str, Any]:
        return {"id": self.id, "cosine": round(self.cosine, 4), "cards": sorted(self.cards), "tau": self.tau}


def parse_answers(data: Any, memory: GateMemory, source: str) -> tuple[tuple[str, ...], ...]:
    """answers.json's ``{"answers": {memory id: [key phrase, ...]}}`` as one tuple of phrases per memory row (empty:
    none); a clear error when malformed or naming a question the memory lacks or one without named cards."""
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        raise ValueError(f"{source}: expected an object with 'answers': {{memory id: [key phrases]}}")
    row = {qid: i for i, qid in enumerate(memory.ids)}
    out: list[tuple[str, ...]] = [()] * len(memory.ids)
    for qid, phrases in answers.items():
        if qid not in row:
            raise ValueError(f"{source}: {qid!r} is not a question of the memory")
        if not memory.named[row[qid]]:
            raise ValueError(f"{source}: {qid!r} is not an in-scope question with named cards")
        if not isinstance(phrases, list) or not phrases or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise ValueError(f"{source}: {qid!r} needs a list of non-empty key phrases")
        out[row[qid]] = tuple(phrases)
    return tuple(out)


_READ: dict[tuple[str, int], tuple[tuple[str, ...], ...]] = {}


def answers_for(memory: GateMemory) -> tuple[tuple[str, ...], ...]:
    """The key phrases of each memory row, from answers.json in the memory's folder (none when it has no such
    file), read once per loaded memory."""
    key = (memory.source, id(memory))
    if key not in _READ:
        path = Path(memory.source) / ANSWERS
        if path.is_file():
            _READ[key] = parse_answers(json.loads(path.read_text(encoding="utf-8")), memory, str(path))
        else:
            _READ[key] = tuple(() for _ in memory.ids)
    return _READ[key]


def answer_lead(
    cosines: np.ndarray, memory: GateMemory, answers: tuple[tuple[str, ...], ...], tau: float
) -> Lead | None:
    """The nearest labelled question with key phrases when within ``tau``, else None."""
    has = np.array([bool(a) for a in answers]) & memory.named
    if not has.any():
        return None
    j = int(np.argmax(np.where(has, cosines, -2.0)))
    cosine = float(cosines[j])
    if cosine < tau:
        return None
    return Lead(memory.ids[j], cosine, memory.cards[j], answers[j], tau)


def answer_lead_for(question: str, services: Any) -> Lead | None:
    """compose.answer_memory for one question: its Lead, or None (off, no memory in force for the services'
    embedder, or no labelled question near enough)."""
    from chatbot.stages.gate_memory import question_cosines

    memory, cosines, _ = question_cosines(question, services)
    if memory is None or cosines is None:
        return None
    return answer_lead(cosines, memory, answers_for(memory), services.settings.compose.answer_memory_tau)
