"""The red-flag classifier's training data (issue 20), built from text the team wrote by hand.

- ``redflag_data/seeds.json``: seed phrasings with slots (``{she}``, ``{wk}``, ``{med}``...), informational
  frames x scary topics, past events with ordinary follow-ups, mixed-language messages;
- ``redflag_data/extra_seeds.jsonl``: 759 whole messages (urgent per action, hard negatives), written by a
  second author who never saw any red-flag test set;
- the TRAIN-split queries of the shared sets (``chatbot.splits``) as ordinary health questions.

Every seed is expanded programmatically (typos, no accents, text-speak, urgency openers, buried in an ordinary
question). One seed in five (by a hash of its text) is held out with all its variants for validation.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.resources import shared_data_dir, workspace_root

SEED_DIR = Path(__file__).resolve().parent / "redflag_data"
ACTIONS = ("emergency", "poisoning", "mental_health", "maternity_unit")


@lru_cache(maxsize=1)
def seeds() -> dict[str, Any]:
    """The seed tables of ``redflag_data/seeds.json`` (slots, positives, negatives, frames...)."""
    data = json.loads((SEED_DIR / "seeds.json").read_text(encoding="utf-8"))
    data["mixed"] = [tuple(x) for x in data["mixed"]]
    return data


def extra_seeds() -> list[dict[str, str]]:
    """The hand-written whole messages of ``redflag_data/extra_seeds.jsonl``: lang, label, kind, text."""
    rows = []
    path = SEED_DIR / "extra_seeds.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in (*ACTIONS, "none") or row.get("lang") not in ("en", "it"):
            raise ValueError(f"{path}:{n}: label must be one of {ACTIONS} or none and lang en or it: {row}")
        rows.append(row)
    return rows


DATA_ROOT = shared_data_dir()
SHARED_SETS = {"mediqa": "en", "mediqa-it": "it", "maternal": "en", "medquad": "en"}

# -- slot filling and expansions ------------------------------------------------------------------------

_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, lang: str, rng: random.Random) -> str:
    """The template with each slot replaced by a random filler of that language."""

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in seeds()["slots"][lang]:
            return m.group(0)
        value = rng.choice(seeds()["slots"][lang][name])
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


def build(
    rng: random.Random, per_pos: int, per_neg: int, data_root: Path, medquad: int, per_extra: int = 25
) -> dict[str, list]:
    """{"train": [(text, label, lang, source)], "val": [...]}."""
    table, extra = seeds(), extra_seeds()
    sets: dict[str, list] = {"train": [], "val": []}
    ordinary = {lang: [fill(t, lang, rng) for t in table["negatives"][lang]] for lang in ("en", "it")}
    for qid, lang, text in shared_queries(data_root, medquad):
        split = "val" if _held_out(qid) else "train"
        sets[split].append((text, "none", lang, "shared"))
        if split == "train":
            ordinary[lang].append(text)
            sets[split].append((expand(text, lang, rng, [], False), "none", lang, "shared"))
    for action, by_lang in table["positives"].items():
        for lang, texts in by_lang.items():
            for seed in texts:
                split = "val" if _held_out(seed) else "train"
                k = per_pos if split == "train" else max(4, per_pos // 4)
                for _ in range(k):
                    text = expand(fill(seed, lang, rng), lang, rng, ordinary[lang], True)
                    sets[split].append((text, action, lang, "seed"))
    for action, text in table["mixed"]:
        split = "val" if _held_out(text) else "train"
        for _ in range(per_pos // 2 if split == "train" else 3):
            sets[split].append((expand(text, "en", rng, [], True), action, "mixed", "mixed"))
    for row in extra:  # whole hand-written messages: the text as written plus variants
        lang, label, text = row["lang"], row["label"], row["text"]
        split = "val" if _held_out(text) else "train"
        sets[split].append((text, label, lang, f"extra-{row['kind']}"))
        for _ in range(per_extra if split == "train" else 1):
            variant = expand(text, lang, rng, ordinary[lang] if label != "none" else [], label != "none")
            sets[split].append((variant, label, lang, f"extra-{row['kind']}"))
    for lang, texts in table["negatives"].items():
        for seed in texts:
            split = "val" if _held_out(seed) else "train"
            k = per_neg if split == "train" else max(3, per_neg // 4)
            for _ in range(k):
                sets[split].append((expand(fill(seed, lang, rng), lang, rng, [], False), "none", lang, "negative"))
        for frame in table["info_frames"][lang]:  # informational frames x scary topics; held out by topic
            for topic in table["topics"][lang]:
                split = "val" if _held_out(topic) else "train"
                if split == "val" and rng.random() < 0.7:
                    continue
                text = expand(frame.replace("{x}", topic), lang, rng, [], False)
                sets[split].append((text[0].upper() + text[1:], "none", lang, "informational"))
        for event in table["past_events"][lang]:  # past events with an ordinary follow-up; held out by event
            split = "val" if _held_out(event) else "train"
            for _ in range(per_neg // 2 if split == "train" else 3):
                marker, follow = rng.choice(table["past_markers"][lang]), rng.choice(table["follow_ups"][lang])
                sets[split].append((expand(f"{marker} {event}, {follow}", lang, rng, [], False), "none", lang, "past"))
        extra_neg = [r["text"] for r in extra if r["lang"] == lang and r["label"] == "none"]
        train_neg = [fill(s, lang, rng) for s in texts if not _held_out(s)]
        train_neg += [t for t in extra_neg if not _held_out(t)]
        for _ in range(per_neg * 10):  # two ordinary questions run together stay ordinary
            a, b = rng.sample(train_neg + ordinary[lang], 2)
            sets["train"].append((f"{a} {b}", "none", lang, "negative-pair"))
    for split in sets:
        rng.shuffle(sets[split])
    return sets
