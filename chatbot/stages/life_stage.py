"""Life stage: a card answers a question only if the card is for where the asker is along a pregnancy.

A question about a born baby ("my 3 week old has a fever") should not be answered first by a pregnancy card
that shares its words ("Your baby's movements": kicks, jabs). The cards say who they are for (``stage`` in
their front matter, corpus.model.STAGES); the question says it with cue words (life_stage_cues.py). After the
rerank, cards whose stages contradict the question's go below the others, each list in its own order. A question
with no cue, a card with no stage or ``general``, and a question that cues stages on both sides of the birth move
nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from chatbot.index import Hit
from chatbot.stages.life_stage_cues import NOT_A_STAGE, STAGE_CUES
from chatbot.stages.text_match import fold
from corpus.model import stage_set

# question stage -> the card stages that can answer it; a staged card with none of them contradicts the question
ANSWERED_BY: dict[str, frozenset[str]] = {
    "trying": frozenset({"trying", "pregnancy", "general"}),
    "pregnancy": frozenset({"trying", "pregnancy", "birth", "general"}),
    "postnatal": frozenset({"birth", "postnatal", "baby", "general"}),
    "baby": frozenset({"postnatal", "baby", "general"}),
}

_IGNORED = [re.compile(p) for p in NOT_A_STAGE]
_CUES = {stage: [re.compile(p) for p in patterns] for stage, patterns in STAGE_CUES.items()}


def question_stages(question: str) -> frozenset[str]:
    """The stages the question's cue words name ({} when none): "my 6 week old" → {"baby"}."""
    text = fold(question)
    for pattern in _IGNORED:
        text = pattern.sub(" ", text)
    found = set()
    for stage, patterns in _CUES.items():
        for pattern in patterns:
            text, n = pattern.subn(" ", text)
            if n:
                found.add(stage)
    return frozenset(found)


def contradicts(card_stages: frozenset[str], asked: frozenset[str]) -> bool:
    """True when a card with ``card_stages`` answers none of the ``asked`` stages (a card without stages never)."""
    if not card_stages or not asked:
        return False
    return not card_stages & frozenset().union(*(ANSWERED_BY[s] for s in asked))


def stage_order(question: str, hits: list[Hit]) -> tuple[list[Hit], frozenset[str]]:
    """(hits with the cards that contradict the question's stages moved below the others, the question's
    stages). A moved hit keeps its score; its ``detail`` gains ``stage_demoted``: its rank before (1 = first)."""
    asked = question_stages(question)
    if not asked:
        return hits, asked
    keep, moved = [], []
    for rank, hit in enumerate(hits, 1):
        if contradicts(stage_set(hit.segment.stage), asked):
            moved.append(replace(hit, detail={**hit.detail, "stage_demoted": float(rank)}))
        else:
            keep.append(hit)
    return keep + moved, asked
