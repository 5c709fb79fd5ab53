"""How the red-flag screen turns its trained scores and its rules into one verdict (issue 20).

The parts: the contextual e5 head's urgent score ``ctx`` (reads the whole message), the n-gram classifier's
``ngram`` (reads the most urgent part), whether a hand-written rule fired, and whether the message is
*calm-framed*: a past event, a hypothetical, a question for study (``redflag_framing``) or symptoms it
denies ("no chest pain, not short of breath"), and no danger stated as present (``redflag_rules.present_danger``).

- mixed = ``weight`` x ctx + (1 - ``weight``) x ngram; on a calm-framed message the head must agree too:
  score = min(mixed, ctx).
- Four bars, one per cell (framed or not) x (a rule fired or not): ``threshold`` (no rule), ``veto`` (a rule;
  0 = a rule always counts), ``framed_threshold`` and ``framed_veto``. Urgent when score >= the cell's bar.
  With ``veto_questions_only`` the ``veto`` applies only to a message that asks something (a "?"): a rule on an
  unframed statement ("my baby isnt movin as much as normal") then always counts, whatever the models say.
  The bars are chosen by ``chatbot.training.redflags_cv`` on out-of-fold scores of the spent test sets.

Works on floats and on numpy arrays alike (the training scores whole sets with the same function).
"""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULTS: dict[str, float] = {"weight": 0.5, "threshold": 0.47, "veto": 0.0}


def params(meta: dict[str, Any], weight: float | None = None) -> dict[str, float]:
    """The four bars and the weight from a head's config (older configs: framed bars = ``threshold``)."""
    out = {k: float(meta.get(k, v)) for k, v in DEFAULTS.items()}
    out["framed_threshold"] = float(meta.get("framed_threshold", out["threshold"]))
    out["framed_veto"] = float(meta.get("framed_veto", out["framed_threshold"]))
    out["veto_questions_only"] = float(bool(meta.get("veto_questions_only", False)))
    if weight is not None:
        out["weight"] = weight
    return out


def score(ctx: Any, ngram: Any, framed: Any, p: dict[str, float]) -> Any:
    """The urgent score the bars apply to (see the module docstring)."""
    mixed = p["weight"] * np.asarray(ctx, dtype=float) + (1 - p["weight"]) * np.asarray(ngram, dtype=float)
    return np.where(framed, np.minimum(mixed, ctx), mixed)


def bar(rule: Any, framed: Any, p: dict[str, float], asks: Any = True) -> Any:
    """The bar of each message's cell (a rule's bar is never above its cell's bar without a rule; with
    ``veto_questions_only`` a rule on an unframed statement, ``asks`` False, has the bar 0)."""
    framed_bar = np.where(rule, min(p["framed_veto"], p["framed_threshold"]), p["framed_threshold"])
    vetoed = np.logical_or(asks, not p.get("veto_questions_only", 0.0))
    rule_bar = np.where(vetoed, min(p["veto"], p["threshold"]), 0.0)
    return np.where(framed, framed_bar, np.where(rule, rule_bar, p["threshold"]))


def urgent(ctx: Any, ngram: Any, rule: Any, framed: Any, p: dict[str, float], asks: Any = True) -> Any:
    """True where the message is urgent (a bool for one message, an array for arrays)."""
    out = score(ctx, ngram, framed, p) >= bar(rule, framed, p, asks)
    return bool(out) if np.ndim(out) == 0 else out
