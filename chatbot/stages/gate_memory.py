"""The relevance gate's memory of labelled questions (safety.gate_memory).

The classifier gate (chatbot.stages.relevance_gate) judges a question by how close the cards' passages are to it; a
short question ("can i eat brie when i'm pregnant?") sits far from every passage in e5's space and is refused although
a card answers it, and an everyday question that shares the cards' words ("is fish oil good for dry eyes?") is
answered. Questions sit close to questions: the memory holds the raw e5 query vectors of questions people labelled in
scope (a card answers them) or out of scope, and when the nearest of them is at least ``tau`` (cosine) from the new
question, its label decides:

    nearest in-scope cosine  >= tau and >= the nearest out-of-scope one  -> answered
    nearest out-of-scope one >= tau and >  the nearest in-scope one      -> refused
    otherwise                                                            -> the classifier gate decides

An in-scope labelled question counts only when one of the cards its set names is among the new question's retrieved
documents (a withdrawn card lends no label). Rows marked not to vote (memory.npz ``gate``: reply sets added for the card
and answer memories, all in scope) are left out of the verdict. ``tau`` was chosen leave-one-set-out on the labelled
sets (``python -m evaluation.redteam.gate_memory_fit``): each set judged by the labels of the others, written by other
people. The memory knows the topics of the cards it was labelled on: rebuild it when the library changes (the model
card says how); the trace names the nearest labelled questions, so a clinician sees why."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

FILES = ("memory.json", "memory.npz")


@dataclass(frozen=True)
class GateMemory:
    """Labelled question vectors and the cosine at which the nearest one's label decides."""

    vectors: np.ndarray  # (n, d) float32, unit rows: raw e5 query vectors of the labelled questions (int8 on disk)
    in_scope: np.ndarray  # (n,) bool
    ids: tuple[str, ...]  # "<set>:<question id>", shown in the trace as the nearest labelled questions
    cards: tuple[frozenset[str], ...]  # the cards that answer an in-scope question (empty: not named)
    tau: float
    embedder: str  # the embedding.model its vectors come from; another embedder's questions are not compared
    embedder_name: str  # that embedder's build (Embedder.name): a question embedded by another is not compared
    source: str
    # (n,) bool, rows whose label takes part in the gate's verdict (None: all). Reply-set rows added for the card and
    # answer memories only are False: all in scope, they would tilt the verdict toward answering (session 39).
    votes: np.ndarray | None = None

    @cached_property
    def voting(self) -> np.ndarray:
        """(n,) bool: the rows the gate's verdict reads."""
        return np.ones(len(self.ids), dtype=bool) if self.votes is None else self.votes

    @cached_property
    def named(self) -> np.ndarray:
        """(n,) bool: in-scope questions whose set names the cards that answer them."""
        return self.in_scope & np.array([bool(c) for c in self.cards])

    def neighbours(self, vector: np.ndarray) -> np.ndarray:
        """Cosines of ``vector`` (any norm) to every labelled question."""
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.vectors.shape[1]:
            raise ValueError(
                f"{self.source}: a question vector of {v.shape[0]} numbers, the memory's {self.vectors.shape[1]}"
            )
        norm = float(np.linalg.norm(v))
        return self.vectors @ (v / norm if norm > 0 else v)

    def verdict(self, cosines: np.ndarray, documents: set[str] | None = None) -> tuple[bool | None, dict[str, Any]]:
        """(True: answer, False: refuse, None: the gate decides; the trace) for one question's cosines. ``documents``:
        the question's retrieved documents; an in-scope labelled question whose cards are named and none of them is
        among them does not count (its card was withdrawn, or this question is about something else)."""
        in_scope = self.in_scope
        if documents is not None:
            in_scope = in_scope & np.array([not c or bool(c & documents) for c in self.cards])
        labelled = (in_scope | ~self.in_scope) & self.voting
        nearest_in, nearest_out = nearest_by_label(cosines[labelled], in_scope[labelled])
        decided: bool | None = None
        if nearest_in >= self.tau and nearest_in >= nearest_out:
            decided = True
        elif nearest_out >= self.tau and nearest_out > nearest_in:
            decided = False
        trace = {
            "verdict": {True: "in scope", False: "out of scope", None: None}[decided],
            "nearest_in_scope": round(nearest_in, 4),
            "nearest_out_of_scope": round(nearest_out, 4),
            "tau": self.tau,
            "nearest": self.nearest(np.where(labelled, cosines, -2.0)),
        }
        return decided, trace

    def nearest(self, cosines: np.ndarray, n: int = 3) -> list[dict[str, Any]]:
        """The ``n`` nearest labelled questions: id, label, cosine (for the trace and the review page)."""
        order = [i for i in np.argsort(-cosines, kind="stable")[:n] if cosines[i] > -2.0]  # -2: not labelled here
        return [
            {"id": self.ids[i], "in_scope": bool(self.in_scope[i]), "cosine": round(float(cosines[i]), 4)}
            for i in order
        ]


def nearest_by_label(cosines: np.ndarray, in_scope: np.ndarray) -> tuple[float, float]:
    """The largest cosine to an in-scope and to an out-of-scope question (-1 when the label has none)."""
    c = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(in_scope, dtype=bool)
    if c.shape != y.shape:
        raise ValueError("nearest_by_label: one cosine per labelled question")
    return (float(c[y].max()) if y.any() else -1.0), (float(c[~y].max()) if (~y).any() else -1.0)


def memory_in_force(settings: Any) -> GateMemory | None:
    """The memory safety.gate_memory names, when it was built with embedding.model's vectors; None when off or built
    for another embedder. A missing or malformed memory is an error (never a silent fallback)."""
    folder = memory_dir(settings.safety.gate_memory)
    if folder is None:
        return None
    memory = load_memory(str(folder))
    return memory if memory.embedder == settings.embedding.model else None


def memory_for(settings: Any, embedder: Any) -> tuple[GateMemory | None, str | None]:
    """``memory_in_force`` for questions embedded by ``embedder``: (the memory, None), or (None, why) when it was
    built with another build's vectors (they are not comparable), or (None, None) when it is off."""
    memory = memory_in_force(settings)
    if memory is None:
        return None, None
    name = getattr(embedder, "name", None)
    if name != memory.embedder_name:
        return None, f"built with {memory.embedder_name} vectors, the embedder is {name}"
    return memory, None


_LAST: dict[str, Any] = {}  # the last question's cosines: the gate, the card memory and the answer memory ask alike


def question_cosines(text: str, services: Any) -> tuple[GateMemory | None, np.ndarray | None, str | None]:
    """(memory, cosines of ``text`` to its labelled questions, None) for the services' embedder; (None, None, why)
    when the memory was built with another build's vectors, (None, None, None) when it is off. The same question
    asked again (by another stage of the turn) reuses its cosines."""
    memory, why_not = memory_for(services.settings, services.embedder)
    if memory is None:
        return None, None, why_not
    key = (id(memory), id(services.embedder), text)
    if _LAST.get("key") != key:
        _LAST.update(key=key, cosines=memory.neighbours(services.embedder.embed_queries([text])[0]))
    return memory, _LAST["cosines"], None


def memory_dir(setting: str) -> Path | None:
    """safety.gate_memory as a folder: "shipped" (models/relevance_gate/memory), "none" (off: None) or a path."""
    from chatbot import resources

    value = str(setting).strip()
    if value.lower() == "none" or not value:
        return None
    if value.lower() == "shipped":
        return resources.shipped_model("relevance_gate") / "memory"
    return Path(value)


def parse_memory(meta: dict[str, Any], arrays: Any, source: str) -> GateMemory:
    """A GateMemory from memory.json's record and memory.npz's arrays; a clear error when malformed."""
    tau = meta.get("tau")
    if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not 0.0 < float(tau) <= 1.0:
        raise ValueError(f"{source}: tau must be a cosine in (0, 1], got {tau!r}")
    embedder, name = meta.get("embedder"), meta.get("embedder_name")
    if not isinstance(embedder, str) or not embedder or not isinstance(name, str) or not name:
        raise ValueError(f"{source}: embedder and embedder_name must name the embedding.model and build of its vectors")
    vectors = np.asarray(arrays["vectors"], dtype=np.float32)
    labels = np.asarray(arrays["in_scope"]).astype(bool)
    ids = [str(x) for x in arrays["ids"]]
    cards = [frozenset(c for c in str(x).split("|") if c) for x in arrays.get("cards", [""] * len(ids))]
    if (
        vectors.ndim != 2
        or vectors.shape[0] == 0
        or labels.shape != (vectors.shape[0],)
        or not len(ids) == len(cards) == len(labels)
    ):
        raise ValueError(f"{source}: vectors, in_scope, ids and cards must describe the same questions (one row each)")
    if labels.all() or not labels.any():
        raise ValueError(f"{source}: the memory needs questions of both labels")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"{source}: a labelled question has a zero vector")
    votes = arrays.get("gate")
    if votes is not None:
        votes = np.asarray(votes)
        if votes.dtype != bool or votes.shape != labels.shape:
            raise ValueError(f"{source}: gate must hold one true/false per question (does its label vote in the gate)")
        if labels[votes].all() or not labels[votes].any():
            raise ValueError(f"{source}: the questions that vote in the gate need both labels")
    return GateMemory(vectors / norms, labels, tuple(ids), tuple(cards), float(tau), embedder, name, source, votes)


@lru_cache(maxsize=4)
def load_memory(folder: str) -> GateMemory:
    """The memory in ``folder`` (memory.json + memory.npz), cached per process."""
    root = Path(folder)
    missing = [f for f in FILES if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"relevance gate memory {root} lacks {missing} (safety.gate_memory; 'none' turns the memory off)"
        )
    meta = json.loads((root / "memory.json").read_text(encoding="utf-8"))
    with np.load(root / "memory.npz", allow_pickle=False) as arrays:
        return parse_memory(meta, {k: arrays[k] for k in arrays.files}, str(root))
