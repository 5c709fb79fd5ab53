"""Train the red-flag classifier (issue 20): ``python -m chatbot.training.redflags [--out models/redflags]``.

Data (nothing from any red-flag test set):
- positives: the team's seed phrasings per action and language (``redflag_seeds``) with their slots filled
  at random, then expanded programmatically: typos, no accents, lower case without punctuation, text-speak
  abbreviations, an urgency prefix or suffix, buried inside an ordinary question, mixed language;
- negatives: informational questions with the same scary words, everyday pregnancy/baby questions, idioms,
  past events (same expansions), two ordinary questions run together, and the TRAIN-split queries of the
  shared sets (MEDIQA, MEDIQA-it, maternal, MedQuAD; ``chatbot.splits``) as ordinary health questions.

Validation: one seed in five (by a hash of its text) is held out with all its variants, and one shared
query in five; plus the team's red-team questions (evaluation/redteam/questions.jsonl), never trained on.
The threshold on the classifier's urgent score is the highest one where the shipped screen (rules OR
classifier) keeps recall >= --recall on the validation emergencies, i.e. the fewest false alarms on its
ordinary questions. Fixed seed; a few minutes on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shared_data_dir, workspace_root
from chatbot.stages.redflag_classifier import LABELS, N_FEATURES, RedFlagClassifier, features
from chatbot.training.redflag_seeds import (
    FOLLOW_UPS,
    INFO_FRAMES,
    MIXED,
    NEGATIVES,
    PAST_EVENTS,
    PAST_MARKERS,
    POSITIVES,
    SLOTS,
    TOPICS,
)

DATA_ROOT = shared_data_dir()
SHARED_SETS = {"mediqa": "en", "mediqa-it": "it", "maternal": "en", "medquad": "en"}

# -- slot filling and expansions ------------------------------------------------------------------------

_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, lang: str, rng: random.Random) -> str:
    """The template with each slot replaced by a random filler of that language."""

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in SLOTS[lang]:
            return m.group(0)
        value = rng.choice(SLOTS[lang][name])
        value = value.replace("{n}", str(rng.randint(24, 41))).replace("{e}", str(rng.randint(23, 36)))
        return value.replace("{m}", str(rng.randint(14, 30)))

    return _SLOT.sub(one, template)


ABBREV = {
    "en": {
        "you": "u", "are": "r", "please": "pls", "weeks": "wks", "because": "bc", "hasn't": "hasnt", "i'm": "im",
        "can't": "cant", "don't": "dont", "and": "&", "pregnant": "preg", "baby": "bub", "for": "4", "to": "2",
        "isn't": "isnt", "won't": "wont", "she's": "shes", "it's": "its", "my": "ma", "with": "w/", "tonight": "2nite",
        "what": "wat", "the": "da", "really": "rly", "yesterday": "yday", "since": "sinse",
    },
    "it": {
        "non": "nn", "per": "x", "che": "ke", "settimane": "sett", "perché": "xke", "sono": "sn", "tutto": "tt",
        "bambino": "bimbo", "molto": "mlt", "anche": "anke", "comunque": "cmq", "questo": "qsto", "cosa": "cs",
        "ho": "o", "è": "e", "più": "piu", "mio": "mi",
    },
}  # fmt: skip
PREFIX = {
    "en": [
        "help",
        "please help",
        "urgent",
        "HELP!!",
        "what do I do",
        "omg",
        "hi,",
        "quick question",
        "hello",
        "sorry to ask but",
    ],
    "it": [
        "aiuto",
        "per favore aiutatemi",
        "urgente",
        "AIUTO!!",
        "cosa faccio",
        "oddio",
        "ciao,",
        "scusate",
        "buongiorno",
        "una domanda",
    ],
}
SUFFIX = {
    "en": ["what should I do?", "is this normal?", "should I worry?", "help", "please", "???", "what do i do",
           "can it wait till morning?", "should I go to A&E?"],
    "it": ["cosa devo fare?", "è normale?", "devo preoccuparmi?", "aiuto", "per favore", "???", "che faccio",
           "posso aspettare domani?", "devo andare al pronto soccorso?"],
}  # fmt: skip
KEYS = "qwertyuiopasdfghjklzxcvbnm"


def strip_accents(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def typos(text: str, rng: random.Random, n: int) -> str:
    words = text.split()
    for _ in range(n):
        idx = [i for i, w in enumerate(words) if len(w) >= 4]
        if not idx:
            break
        i = rng.choice(idx)
        w = words[i]
        j = rng.randrange(1, len(w) - 1)
        op = rng.randrange(4)
        if op == 0:
            w = w[:j] + w[j + 1 :]
        elif op == 1:
            w = w[: j - 1] + w[j] + w[j - 1] + w[j + 1 :]
        elif op == 2:
            w = w[:j] + w[j] + w[j:]
        else:
            w = w[:j] + rng.choice(KEYS) + w[j + 1 :]
        words[i] = w
    return " ".join(words)


def abbreviate(text: str, lang: str, rng: random.Random) -> str:
    table = ABBREV[lang]
    return " ".join(table.get(w.lower(), w) if rng.random() < 0.7 else w for w in text.split())


def expand(text: str, lang: str, rng: random.Random, ordinary: list[str], urgent: bool) -> str:
    """One random variant of an already filled seed."""
    r = rng.random
    if urgent and r() < 0.25 and ordinary:  # buried in an ordinary question
        other = rng.choice(ordinary)
        text = (
            f"{other} {text}."
            if r() < 0.4
            else f"{text}. {other}"
            if r() < 0.5
            else f"{other} Also {text}"
            if lang == "en"
            else f"{other} Inoltre {text}"
        )
    if r() < 0.2:  # an ordinary question gets only the calm openers and closers
        text = f"{rng.choice(PREFIX[lang] if urgent else PREFIX[lang][-4:])} {text}"
    if r() < 0.25:
        text = f"{text} {rng.choice(SUFFIX[lang] if urgent else SUFFIX[lang][1:4])}"
    if r() < 0.3:
        text = abbreviate(text, lang, rng)
    if r() < 0.4:  # one or two typos (three in a short message made unreadable "patients")
        text = typos(text, rng, 1 if r() < 0.6 else 2)
    if r() < 0.35:
        text = strip_accents(text)
    if r() < 0.3:
        text = re.sub(r"[^\w\s+&/]", "", text.lower())
    elif r() < 0.1:
        text = text.upper()
    return " ".join(text.split())


def _held_out(key: str, share: int = 5) -> bool:
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16) % share == 0


# -- data -------------------------------------------------------------------------------------------------


def shared_queries(data_root: Path, limit_medquad: int) -> list[tuple[str, str, str]]:
    """(id, language, text) of the TRAIN-split queries of the shared sets (none of their test split)."""
    from chatbot.splits import split_of

    out = []
    for name, lang in SHARED_SETS.items():
        path = data_root / name / "queries.jsonl"
        if not path.exists():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if split_of(r["_id"]) == "train"]
        if name == "medquad":
            rows = sorted(rows, key=lambda r: hashlib.sha1(r["_id"].encode()).hexdigest())[:limit_medquad]
        out += [(f"{name}:{r['_id']}", lang, r["text"]) for r in rows]
    return out


def redteam_questions() -> list[dict[str, Any]]:
    """The team's red-team questions (validation only): urgent = category red_flag."""
    path = workspace_root() / "evaluation" / "redteam" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        {"text": r["text"], "language": r.get("language"), "label": "urgent" if r["category"] == "red_flag" else "none"}
        for r in rows
        if isinstance(r.get("text"), str) and r["text"].strip()
    ]


def build(rng: random.Random, per_pos: int, per_neg: int, data_root: Path, medquad: int) -> dict[str, list]:
    """{"train": [(text, label, lang, source)], "val": [...]}."""
    sets: dict[str, list] = {"train": [], "val": []}
    ordinary = {lang: [fill(t, lang, rng) for t in NEGATIVES[lang]] for lang in ("en", "it")}
    shared = shared_queries(data_root, medquad)
    for qid, lang, text in shared:
        split = "val" if _held_out(qid) else "train"
        sets[split].append((text, "none", lang, "shared"))
        if split == "train":
            ordinary[lang].append(text)
            sets[split].append((expand(text, lang, rng, [], False), "none", lang, "shared"))
    for action, by_lang in POSITIVES.items():
        for lang, seeds in by_lang.items():
            for seed in seeds:
                split = "val" if _held_out(seed) else "train"
                k = per_pos if split == "train" else max(4, per_pos // 4)
                for _ in range(k):
                    text = expand(fill(seed, lang, rng), lang, rng, ordinary[lang], True)
                    sets[split].append((text, action, lang, "seed"))
    for action, text in MIXED:
        split = "val" if _held_out(text) else "train"
        for _ in range(per_pos // 2 if split == "train" else 3):
            sets[split].append((expand(text, "en", rng, [], True), action, "mixed", "mixed"))
    for lang, seeds in NEGATIVES.items():
        for seed in seeds:
            split = "val" if _held_out(seed) else "train"
            k = per_neg if split == "train" else max(3, per_neg // 4)
            for _ in range(k):
                sets[split].append((expand(fill(seed, lang, rng), lang, rng, [], False), "none", lang, "negative"))
        for frame in INFO_FRAMES[lang]:  # informational frames x scary topics; held out by topic
            for topic in TOPICS[lang]:
                split = "val" if _held_out(topic) else "train"
                if split == "val" and rng.random() < 0.7:
                    continue
                text = expand(frame.replace("{x}", topic), lang, rng, [], False)
                sets[split].append((text[0].upper() + text[1:], "none", lang, "informational"))
        for event in PAST_EVENTS[lang]:  # past events with an ordinary follow-up; held out by event
            split = "val" if _held_out(event) else "train"
            for _ in range(per_neg // 2 if split == "train" else 3):
                text = f"{rng.choice(PAST_MARKERS[lang])} {event}, {rng.choice(FOLLOW_UPS[lang])}"
                sets[split].append((expand(text, lang, rng, [], False), "none", lang, "past"))
        train_neg = [fill(s, lang, rng) for s in seeds if not _held_out(s)]
        for _ in range(per_neg * 10):  # two ordinary questions run together stay ordinary
            a, b = rng.sample(train_neg + ordinary[lang], 2)
            sets["train"].append((f"{a} {b}", "none", lang, "negative-pair"))
    for split in sets:
        rng.shuffle(sets[split])
    return sets


# -- training -----------------------------------------------------------------------------------------------


def matrix(texts: list[str]):
    from scipy.sparse import csr_matrix

    indptr, indices, data = [0], [], []
    for t in texts:
        idx, val = features(t)
        indices.append(idx)
        data.append(val)
        indptr.append(indptr[-1] + len(idx))
    return csr_matrix((np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=(len(texts), N_FEATURES))


def quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights with one scale per class (max |w| → 127)."""
    scale = np.abs(w).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    return np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8), scale.astype(np.float32)


def screen_flags(clf: RedFlagClassifier, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(classifier urgent score, rules fired, classifier action, screen ms without classifier) per text."""
    from chatbot.stages.redflags import rule_flags

    scores, rules, actions = np.zeros(len(texts)), np.zeros(len(texts), dtype=bool), []
    for i, t in enumerate(texts):
        p = clf.predict(t)
        scores[i] = p.urgent_score
        actions.append(max(p.scores, key=lambda a: p.scores[a]))
        rules[i] = bool(rule_flags(t))
    return scores, rules, actions, np.zeros(0)


def choose_threshold(scores: np.ndarray, rules: np.ndarray, urgent: np.ndarray, recall: float) -> float:
    """The highest threshold at which rules OR classifier keep at least ``recall`` of the urgent texts."""
    candidates = np.unique(np.concatenate([scores, [0.5]]))
    best = float(candidates.min())
    for t in sorted(candidates):
        fired = rules | (scores >= t)
        if fired[urgent].mean() >= recall:
            best = float(t)
        else:
            break
    return best


def rates(fired: np.ndarray, urgent: np.ndarray) -> dict[str, Any]:
    tp = int((fired & urgent).sum())
    fp = int((fired & ~urgent).sum())
    return {
        "urgent": int(urgent.sum()),
        "ordinary": int((~urgent).sum()),
        "recall": round(tp / max(1, urgent.sum()), 4),
        "false_alarm_rate": round(fp / max(1, (~urgent).sum()), 4),
        "precision": round(tp / max(1, tp + fp), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatbot.training.redflags", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=workspace_root() / "models" / "redflags")
    ap.add_argument("--data-root", type=Path, default=DATA_ROOT, help="shared BEIR sets (train split only)")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--per-positive", type=int, default=40, help="variants per positive seed")
    ap.add_argument("--per-negative", type=int, default=25, help="variants per negative seed")
    ap.add_argument("--medquad", type=int, default=600, help="MedQuAD train queries used (of ~1200)")
    ap.add_argument("--C", type=float, default=4.0, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--recall", type=float, default=0.98, help="validation recall the threshold must keep")
    ap.add_argument("--report", type=Path, default=None, help="write the validation metrics JSON here")
    args = ap.parse_args(argv)

    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    rng = random.Random(args.seed)
    sets = build(rng, args.per_positive, args.per_negative, args.data_root, args.medquad)
    train, val = sets["train"], sets["val"]
    print(f"train {len(train)} ({sum(r[1] != 'none' for r in train)} urgent), val {len(val)}", file=sys.stderr)
    x = matrix([r[0] for r in train])
    y = np.array([LABELS.index(r[1]) for r in train])
    model = LogisticRegression(C=args.C, max_iter=400, random_state=args.seed)
    model.fit(x, y)
    q, scale = quantise(model.coef_.astype(np.float32))
    clf = RedFlagClassifier(q.astype(np.float32) * scale[:, None], model.intercept_.astype(np.float32), 0.5)
    print(f"trained in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    rt = redteam_questions()
    val_texts = [r[0] for r in val] + [r["text"] for r in rt]
    val_urgent = np.array([r[1] != "none" for r in val] + [r["label"] == "urgent" for r in rt])
    val_action = [r[1] for r in val] + [None for _ in rt]
    val_source = [r[3] for r in val] + ["redteam" for _ in rt]
    val_lang = [r[2] for r in val] + [r["language"] for r in rt]
    scores, rules, actions, _ = screen_flags(clf, val_texts)
    threshold = choose_threshold(scores, rules, val_urgent, args.recall)
    fired = rules | (scores >= threshold)
    report: dict[str, Any] = {
        "command": "python -m chatbot.training.redflags " + " ".join(argv if argv is not None else sys.argv[1:]),
        "train_examples": len(train),
        "train_urgent": int(sum(r[1] != "none" for r in train)),
        "threshold": round(threshold, 4),
        "target_recall": args.recall,
        "validation": {"screen": rates(fired, val_urgent), "rules_alone": rates(rules, val_urgent)},
        "classifier_alone": rates(scores >= threshold, val_urgent),
    }
    by: dict[str, Any] = {}
    for name, values in (("language", val_lang), ("source", val_source)):
        for key in sorted({str(v) for v in values}):
            mask = np.array([str(v) == key for v in values])
            by[f"{name}={key}"] = rates(fired[mask], val_urgent[mask])
    report["validation_by"] = by
    # the alternative to rules OR classifier: a rule counts only when the classifier's score reaches a floor;
    # the highest floor of the grid that keeps the recall at this threshold (not shipped: rule_floor stays 0)
    floor = 0.0
    for candidate in (0.005, 0.01, 0.02, 0.05, 0.1):
        if (((rules & (scores >= candidate)) | (scores >= threshold))[val_urgent]).mean() >= args.recall:
            floor = candidate
    floored = (rules & (scores >= floor)) | (scores >= threshold)
    report["rule_floor_validation"] = {"floor": floor, "validation": rates(floored, val_urgent)}
    right = [a == b for a, b, u, f in zip(actions, val_action, val_urgent, fired, strict=True) if u and f and b]
    report["validation_action_accuracy"] = round(sum(right) / max(1, len(right)), 4)
    # the shared sets' texts are never written out (their licences): only our own and the red-team texts
    report["false_alarms_sample"] = [
        t
        for t, f, u, src in zip(val_texts, fired, val_urgent, val_source, strict=True)
        if f and not u and src != "shared"
    ][:60]
    report["misses_sample"] = [t for t, f, u in zip(val_texts, fired, val_urgent, strict=True) if u and not f][:60]
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out / "weights.npz", weights_int8=q, scales=scale, bias=model.intercept_.astype(np.float32)
    )
    config = {
        "labels": list(LABELS),
        "threshold": round(threshold, 4),
        "n_features": N_FEATURES,
        "features": "hashed (crc32, signed) word 1-2-grams + char 3-5-grams within words, folded text, log tf, L2",
        "head": f"multinomial logistic regression, C={args.C}, int8 weights (one scale per class)",
        "seed": args.seed,
        "validation": report["validation"],
        "rule_floor": 0.0,
        "rule_floor_validation": report["rule_floor_validation"],
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    keys = ("threshold", "validation", "classifier_alone", "rule_floor_validation")
    print(json.dumps({k: report[k] for k in keys}, indent=2))
    print(f"done in {time.perf_counter() - t0:.0f} s; weights in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
