"""Choosing the red-flag gate's bars (``chatbot.stages.redflag_gate``) and the n-gram model's own threshold on
out-of-fold runs, and scoring a run's verdicts (recall, false alarms, by language, action and kind); for
``redflags_cv``."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.stages import redflag_gate as gate
from chatbot.training.redflag_dataset import ACTIONS

GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
# the costs of a miss swept: session 8's 80, then higher ones (session 14: over eight pooled sets one recovered
# emergency can cost more alarms than 500 x its share of recall, and the rule must still find the bars)
LAMBDAS = np.concatenate([np.geomspace(0.05, 500, 80), np.geomspace(500, 5e5, 61)[1:]])


def _cells(run: dict[str, Any], p: dict[str, float], negation: bool) -> tuple[np.ndarray, np.ndarray]:
    framed = run["framed"] | (run["negated"] if negation else False)
    s = gate.score(run["ctx"], run["ngram"], framed, p)
    s = np.where(~framed & run["rule"] & ~run["asks"], np.inf, s)  # veto_questions_only: a statement's rule counts
    return s, 2 * framed.astype(int) + run["rule"].astype(int)


def choose(
    runs: list[dict[str, Any]], recall: float, action_recall: float, weights: tuple[float, ...], max_veto: float
) -> dict[str, Any]:
    """The weight, the calm frame (with or without negation) and the four bars with the fewest false alarms
    over ``runs`` that keep the recalls (pooled over the runs); a Lagrangian sweep over the cost of a miss."""
    best: dict[str, Any] | None = None
    for w in weights:
        for negation in (False, True):
            p = {"weight": w}
            s, cell = map(np.concatenate, zip(*(_cells(r, p, negation) for r in runs), strict=True))
            urgent = np.concatenate([r["urgent"] for r in runs])
            lang = np.concatenate([r["lang"] for r in runs])
            action = np.concatenate([r["action"] for r in runs])
            groups = [lang == g for g in ("en", "it")] + [action == a for a in ACTIONS]
            need = [recall, recall] + [action_recall] * len(ACTIONS)
            fires = s[None, :] >= GRID[:, None]  # (bars, messages)
            fp = np.stack([(fires & (~urgent & (cell == c))).sum(1) for c in range(4)])  # (cells, bars)
            tp = np.stack(
                [np.stack([(fires & (g & urgent & (cell == c))).sum(1) for g in groups], 1) for c in range(4)]
            )
            sizes = np.array([max(1, (g & urgent).sum()) for g in groups])
            need = [n if (g & urgent).any() else 0.0 for n, g in zip(need, groups, strict=True)]  # one language
            gain = (tp / sizes).sum(2)  # (cells, bars): recall gained over the groups
            for lam in LAMBDAS:
                bars = []
                for plain, ruled in ((0, 1), (2, 3)):  # a rule's bar <= the bar without a rule
                    cost = fp[plain] - lam * gain[plain]
                    pairs = cost[:, None] + (fp[ruled] - lam * gain[ruled])[None, :]
                    pairs[np.triu_indices(len(GRID), 1)] = np.inf  # a rule's bar above the plain bar
                    if plain == 0:
                        pairs[:, GRID > max_veto + 1e-9] = np.inf
                    i, j = np.unravel_index(np.argmin(pairs), pairs.shape)
                    bars += [int(i), int(j)]
                got = sum(tp[c, bars[c]] for c in range(4)) / sizes
                alarms = int(sum(fp[c, bars[c]] for c in range(4)))
                if np.all(got >= np.array(need) - 1e-9) and (best is None or alarms < best["alarms"]):
                    names = ("threshold", "veto", "framed_threshold", "framed_veto")
                    best = {"alarms": alarms, "weight": w, "negation_frame": negation, "veto_questions_only": True}
                    best.update({k: GRID[b] for k, b in zip(names, bars, strict=True)})
    if best is None:
        raise RuntimeError("no setting keeps the recall (lower --recall or --action-recall)")
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in best.items()}


def verdicts(run: dict[str, Any], p: dict[str, Any]) -> np.ndarray:
    framed = run["framed"] | (run["negated"] if p["negation_frame"] else False)
    return gate.urgent(run["ctx"], run["ngram"], run["rule"], framed, p, run["asks"])


def rates(fired: np.ndarray, urgent: np.ndarray) -> dict[str, Any]:
    tp, fp = int((fired & urgent).sum()), int((fired & ~urgent).sum())
    return {"urgent": int(urgent.sum()), "ordinary": int((~urgent).sum()),
            "recall": round(tp / max(1, urgent.sum()), 4) if urgent.any() else None,
            "false_alarms": fp, "false_alarm_rate": round(fp / max(1, (~urgent).sum()), 4) if (~urgent).any() else None,
            "precision": round(tp / max(1, tp + fp), 4)}  # fmt: skip


def breakdown(run: dict[str, Any], fired: np.ndarray) -> dict[str, Any]:
    u = run["urgent"]
    out = {"all": rates(fired, u)}
    for key, col in (("language", "lang"), ("action", "action"), ("kind", "kind")):
        for v in sorted(set(run[col].tolist())):
            m = run[col] == v
            out[f"{key}={v or 'none'}"] = rates(fired[m], u[m])
    return out


def ngram_threshold(runs: list[dict[str, Any]], recall: float) -> float:
    """The n-gram model's own threshold (used when the e5 head is unavailable): the highest at which rules OR
    the n-gram model keep ``recall`` in each language over ``runs``."""
    ng = np.concatenate([r["ngram"] for r in runs])
    rule = np.concatenate([r["rule"] for r in runs])
    urgent = np.concatenate([r["urgent"] for r in runs])
    lang = np.concatenate([r["lang"] for r in runs])
    best = 0.05
    for t in GRID[1:]:
        fired = rule | (ng >= t)
        if all(fired[urgent & (lang == g)].mean() >= recall for g in ("en", "it")):
            best = float(t)
    return best
