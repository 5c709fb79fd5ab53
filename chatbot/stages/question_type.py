"""Question typing: 'evaluative' (a judgement of the patient's own situation, the seed paper's "why am I so
tired?") or 'informational', by English/Italian patterns, or from the LLM's TYPE label."""

from __future__ import annotations

import re

# Heuristic question type (the harness's evaluative/other split when a dataset has no label, the hyde
# pipeline's trace, and cot's when the LLM gives none). Evaluative questions ask for a judgement of the
# patient's own situation (the seed's "why am I feeling so tired?"): either a judgement phrase, or a
# description of the asker's (or a relative's) own situation together with a question or a plea for help.
_EVALUATIVE = re.compile(
    r"\b(why (am|do|does|did|is|are|have|has) (i|my|me)\b|why (i|my)\b|is (it|this|that) (normal|safe|ok|okay|"
    r"bad|dangerous|serious|a problem)|should i\b|do i (need|have)|am i\b|is my\b|what'?s wrong with|"
    r"can i\b|could (it|this) be|è normale|è pericoloso|devo\b|dovrei\b|posso\b|perch[eé] (sono|ho|mi)\b|"
    r"sono (normale|preoccupat)|ho (bisogno|qualcosa))",
    re.IGNORECASE,
)
_OWN_SITUATION = re.compile(
    r"\b(i|i'?m|i'?ve|im|ive)\s+(have|had|am|was|got|get|feel|felt|been|suffer\w*|take|took|drank|drink|keep|"
    r"can'?t|cannot|noticed|burnt|burned|hurt)\b|\bmy\s+(son|daughter|child|children|kids?|baby|husband|wife|"
    r"partner|mother|mom|mum|father|dad|brother|sister|friend|family|doctor|blood|skin|eyes?|head|stomach|back|"
    r"legs?|arms?|hands?|wrist|ankle|knee|heart|throat|mouth|period|pregnancy)\b|"
    r"\b(ho|mi sento|soffro|mio|mia|miei|mie)\b",
    re.IGNORECASE,
)
_ASKS = re.compile(r"\?|\b(please|help|suggest|advi[cs]e|aiut\w*|consigl\w*)\b", re.IGNORECASE)


def heuristic_type(question: str) -> str:
    """'evaluative' or 'informational', deterministic (regular expressions, English and Italian)."""
    if _EVALUATIVE.search(question) or (_OWN_SITUATION.search(question) and _ASKS.search(question)):
        return "evaluative"
    return "informational"


def question_type(value: str | None) -> str | None:
    if not value:
        return None
    low = value.lower()
    if "evaluat" in low or "valutativ" in low:
        return "evaluative"
    if "inform" in low:
        return "informational"
    return None
