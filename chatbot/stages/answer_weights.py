"""Learned weights of the answer-first composer's terms, per question type (compose.unit_weights=learned).

``answer_select.score_units`` adds hand-set terms (a type cue in the unit, its heading, shared words, the document's
rank and topic, the trained scorer's probability ...). Their weights were set by hand, the same for every question
type. ``UnitWeights`` rescales each term per question type and adds a learned "typed" term: the unit's cues of every
answer type (a time in the reply to a "how long" question, an amount in the reply to "is it safe"), and its length.
The weights were fitted on the spent reply sets' key phrases (conditional logit over each question's units,
regularised towards the hand weights; card: models/answer_scorer/README-unit-weights.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.stages.answer_cues import QUESTION_TYPES, cue_score

WEIGHTS_FILE = "unit_weights.json"
FORMAT_VERSION = 1
FALLBACK_KIND = "yes_no"  # a kind the weights do not name (none today) reads as a verdict question


@dataclass(frozen=True)
class UnitWeights:
    """``multipliers[kind][term]``: the factor on score_units' term (1 = the hand weight, missing = 1);
    ``typed[kind][cue type]``: the weight of the unit's cue of that answer type, ``typed[kind]["length"]`` of
    log(1 + characters) / 6; ``model_types``: the question types the trained scorer's term is computed for."""

    multipliers: dict[str, dict[str, float]]
    typed: dict[str, dict[str, float]]
    model_types: tuple[str, ...]
    meta: dict[str, Any]

    def typed_score(self, kind: str, text: str) -> float:
        weights = self.typed.get(kind) or self.typed.get(FALLBACK_KIND, {})
        score = sum(w * cue_score(t, text) for t, w in weights.items() if t in QUESTION_TYPES)
        return score + weights.get("length", 0.0) * math.log1p(len(text)) / 6.0

    def reweigh(self, kind: str, units: Sequence[Any]) -> list[Any]:
        """Rescale each unit's ``parts`` (in place), add the ``typed`` part, re-sum ``score``; best first (ties as
        score_units breaks them)."""
        factors = self.multipliers.get(kind) or self.multipliers.get(FALLBACK_KIND, {})
        for u in units:
            parts = {k: round(v * factors.get(k, 1.0), 4) for k, v in u.parts.items()}
            parts["typed"] = round(self.typed_score(kind, u.text), 4)
            u.parts = parts
            u.score = round(sum(parts.values()), 4)
        return sorted(units, key=lambda u: (-u.score, u.doc_rank, u.position, u.first))


def parse_unit_weights(data: dict[str, Any], source: str = "unit weights") -> UnitWeights:
    """A UnitWeights from its JSON form; a wrong version or shape is an error naming ``source``."""
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{source}: format_version {data.get('format_version')!r} != {FORMAT_VERSION}; refit it")
    try:
        multipliers = {k: {t: float(w) for t, w in v.items()} for k, v in data["multipliers"].items()}
        typed = {k: {t: float(w) for t, w in v.items()} for k, v in data["typed"].items()}
        model_types = tuple(str(t) for t in data["model_types"])
    except (KeyError, AttributeError, TypeError, ValueError) as exc:
        raise ValueError(f"{source}: malformed unit weights ({type(exc).__name__}: {exc})") from exc
    unknown = [t for t in model_types if t not in QUESTION_TYPES]
    if unknown:
        raise ValueError(f"{source}: unknown question types in model_types: {unknown}")
    return UnitWeights(multipliers, typed, model_types, dict(data.get("meta") or {}))


def default_path() -> Path:
    from chatbot.resources import shipped_model

    return shipped_model("answer_scorer") / WEIGHTS_FILE


@lru_cache(maxsize=4)
def load_unit_weights(path: Path | None = None) -> UnitWeights:
    """The weights in ``path`` (default: models/answer_scorer/unit_weights.json), read once per process."""
    path = Path(path) if path else default_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"compose.unit_weights=learned but {path} is missing; fit it with `python -m evaluation.unit_weights_fit` "
            "(models/answer_scorer/README-unit-weights.md) or set compose.unit_weights=hand"
        )
    return parse_unit_weights(json.loads(path.read_text(encoding="utf-8")), str(path))


def unit_weights_for(settings: Any) -> UnitWeights | None:
    """The learned weights when the compose settings ask for them, else None (the hand weights)."""
    return load_unit_weights() if getattr(settings, "unit_weights", "hand") == "learned" else None
