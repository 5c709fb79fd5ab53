"""Fit the dismissal model of the exclusion detector (``chatbot.logical.dismissal``).

    python -m chatbot.training.dismissal [--ship models/dismissal] [--max-false-rate 0.005] [--C 4.0]

Training clauses (no shared-data text):
- ``dismissal_data/seeds.jsonl``: clauses we wrote, dismissing a topic or not (negated symptoms, states, worries);
- silver positives: in our exclusion sets, the clauses of the questions the rules route that hold a NOT term and
  ask nothing; the asking clauses of those questions are negatives; of the questions the rules leave unrouted, a
  clause that asks nothing, has a marker and names a word of an excluded card's title is a positive;
- negatives: every clause of the questions of our reply, gate, relevance and red-flag sets that the rules do not
  route (red-flag sets v1-v8 only, reply sets but heldout-v11 and -v12: the later sets stay for the false-route
  check). Hand-written negatives weigh ``HARD_WEIGHT``, positives a person wrote ``REAL_POSITIVE_WEIGHT``.
The bar is chosen out of fold (5 folds, fixed seed): the lowest score whose false-positive rate over the negative
clauses is at most ``--max-false-rate``. Weights int8 with one scale, a card with the counts and the command.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.logical.context_cue_tables import QUESTION
from chatbot.logical.detect import analyse
from chatbot.logical.dismissal import MAX_WORDS, DismissalModel, clauses, marked
from chatbot.resources import workspace_root
from chatbot.training.binary_head import head_arguments, out_of_fold_run, question_rows, set_rows, ship_head

SEEDS = Path(__file__).parent / "dismissal_data" / "seeds.jsonl"
TEMPLATES = Path(__file__).parent / "dismissal_data" / "templates.json"
EXCLUSION_SETS = ("evaluation/data/exclusions_cards_*.jsonl", "evaluation/data/exclusion_detect_s1*.jsonl")
NEGATIVE_SETS = (
    "evaluation/replies/*.jsonl",
    "evaluation/redteam/gate*.jsonl",
    "evaluation/redteam/relevance*.jsonl",
    "evaluation/redteam/questions.jsonl",
    *(f"evaluation/redflags/testset{v}.jsonl" for v in ("", "-v2", "-v3", "-v4", "-v5", "-v6", "-v7", "-v8")),
)
HELD_BACK = ("evaluation/replies/heldout-v11.jsonl", "evaluation/replies/heldout-v12.jsonl")  # false-route check only


def _asks(clause: str) -> bool:
    return "?" in clause or QUESTION.search(clause) is not None


def templated(path: Path = TEMPLATES) -> list[tuple[str, bool, str]]:
    """(clause, dismisses, source) of the templates: every dismissing frame with every topic, every negated-state
    frame with every symptom, and the plain states, per language."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    out: list[tuple[str, bool, str]] = []
    for lang in ("en", "it"):
        part = spec[lang]
        out += [(f.format(t=t), True, f"templates-{lang}") for f in part["dismiss"] for t in part["topics"]]
        out += [(f.format(s=s), False, f"templates-{lang}") for f in part["state"] for s in part["symptoms"]]
        out += [(text, False, f"templates-{lang}") for text in part["plain"]]
    return out


GENERIC = frozenset(
    "pregnancy pregnant baby babies newborn your what when how after before during first gravidanza bambino neonato "
    "della delle degli come quando dopo prima".split()
)


def card_topics(root: Path) -> dict[str, set[str]]:
    """Card id → the 5-letter stems of its title and id words (generic words dropped)."""
    out: dict[str, set[str]] = {}
    for path in sorted((root / "corpus" / "demo" / "cards").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = re.search(r"^title:\s*\"?(.*?)\"?$", text, re.M)
        words = re.findall(r"[a-zà-ÿ]{4,}", (path.stem + " " + (title.group(1) if title else "")).lower())
        out[path.stem] = {w[:5] for w in words if w not in GENERIC}
    return out


def _unrouted_positives(row: dict[str, Any], topics: dict[str, set[str]], source: str) -> list[tuple[str, bool, str]]:
    """Clauses of an exclusion-set question the rules leave unrouted: a clause that asks nothing, says it dismisses
    (``dismissal.marked``) and names a word of an excluded card's title is a positive; an asking clause a negative."""
    excluded = set().union(*(topics.get(c, set()) for c in row.get("excluded_card_ids", []))) if topics else set()
    out = []
    for a, b in clauses(row["text"]):
        clause = row["text"][a:b].strip()
        stems = {w[:5] for w in re.findall(r"[a-zà-ÿ]{4,}", clause.lower())}
        if _asks(clause) or "?" in row["text"][b : b + 3]:
            out.append((clause, False, source))
        elif marked(clause) and stems & excluded and len(clause.split()) <= MAX_WORDS:
            out.append((clause, True, source))
    return out


def training_clauses(root: Path) -> list[tuple[str, bool, str]]:
    """(clause, dismisses, source) of every training clause (see the module docstring), duplicates dropped."""
    out: list[tuple[str, bool, str]] = []
    for row in question_rows(SEEDS):
        out.append((row["text"], bool(row["dismisses"]), "seeds"))
    out += templated()
    topics = card_topics(root)
    for pattern in EXCLUSION_SETS:
        for path in sorted(root.glob(pattern)):
            for row in question_rows(path):
                if row.get("exclusion") is False:
                    continue
                found = analyse(row["text"], learned=False)
                if found is None:
                    if "excluded_card_ids" in row:
                        out += _unrouted_positives(row, topics, path.name + " unrouted")
                    continue
                nots = [n.lower() for n in found.negatives]
                for a, b in clauses(row["text"]):
                    clause = row["text"][a:b].strip()
                    holds = any(n in clause.lower() for n in nots)
                    if holds and not _asks(clause):
                        out.append((clause, True, path.name))
                    elif not holds and _asks(clause):
                        out.append((clause, False, path.name))
    for path in sorted(root.glob("evaluation/data/exclusion_detect_s1*.jsonl")):
        for row in question_rows(path):
            if row.get("exclusion") is False:
                out += [(row["text"][a:b].strip(), False, "must-not-route") for a, b in clauses(row["text"])]
    for name, row in set_rows(root, NEGATIVE_SETS, HELD_BACK):
        if analyse(row["text"], learned=False) is None:
            out += [(row["text"][a:b].strip(), False, name) for a, b in clauses(row["text"])]
    seen: dict[str, tuple[str, bool, str]] = {}
    for clause, label, source in out:
        key = " ".join(clause.lower().split())
        if len(re.findall(r"\w+", key)) >= 1:
            seen.setdefault(key, (clause, label, source))
    return list(seen.values())


# hand-written negatives (our seeds and the must-not-route rows of the check sets) are the hard cases: negated
# symptoms and states, idioms; they weigh this many times a clause mined from a set
HARD_WEIGHT = 5.0


# a dismissal a person wrote (our seeds, the clauses mined from the sets) against one expanded from a template
REAL_POSITIVE_WEIGHT = 3.0


def sample_weights(data: list[tuple[str, bool, str]]) -> np.ndarray:
    """One weight per clause: ``HARD_WEIGHT`` for a hand-written negative, ``REAL_POSITIVE_WEIGHT`` for a positive
    not expanded from a template, 1 otherwise."""
    hard = ("seeds", "templates-en", "templates-it", "must-not-route")

    def weight(label: bool, source: str) -> float:
        if not label:
            return HARD_WEIGHT if source in hard else 1.0
        return 1.0 if source.startswith("templates") else REAL_POSITIVE_WEIGHT

    return np.array([weight(lab, src) for _, lab, src in data])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    head_arguments(ap, "dismissal", max_false_rate=0.005, seed=18)
    args = ap.parse_args(argv)
    data = training_clauses(workspace_root())
    weights = sample_weights(data)
    run = out_of_fold_run([t for t, _, _ in data], [lab for _, lab, _ in data], weights, args)
    print(f"clauses {len(run.y)} (dismissing {int(run.y.sum())}); out-of-fold bar {run.bar:.3f}: recall "
          f"{run.recall:.3f}, false-positive rate {run.false_rate:.4f}")  # fmt: skip
    sources: dict[str, list[int]] = {}
    for (_, lab, src), q in zip(data, run.p, strict=True):
        s = sources.setdefault(f"{src} {'pos' if lab else 'neg'}", [0, 0])
        s[0] += 1
        s[1] += int(q >= run.bar)
    for name, (n, hit) in sorted(sources.items()):
        print(f"  {name}: {hit}/{n} at or above the bar")
    if args.ship:
        counts = {"clauses": len(run.y), "dismissing": int(run.y.sum())}
        ship_head(run, weights, args, DismissalModel, "dismissal", counts)


if __name__ == "__main__":
    main()
