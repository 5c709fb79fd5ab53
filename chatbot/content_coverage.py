"""Coverage for a content team: which managed documents exist in which language (topics certified in one
language and missing in another), and which topics recent patient questions asked about got "no certified
information", grouped by shared content words, with counts and dates: what to write next.

Documents are paired across languages by their source link with its language parts removed (``/en/``,
``/it/``, an ``en.`` host, ``?lang=``): translations of one leaflet share it. Questions are grouped by their
content words (chatbot.stages.safety.content_words less words every maternity question has, plurals and
Italian endings off, cut at 6 letters): a question joins the group it shares the most words with (at least
two, or all of its own when it has fewer); a group's label is the words all its questions share. Question
texts are shown only where the caller allows (the page: to clinicians and admins, who read them on /review/
anyway); everyone sees the labels, counts and dates."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from chatbot.language import SERVED
from chatbot.stages.safety import content_words
from chatbot.store.content_list import list_documents, refused_questions
from chatbot.store.db import Store
from chatbot.store.models import utcnow

LIVE = ("certified", "expired")  # a version patients may read (expired: under corpus.expired_content=warn)
_LANGUAGE_PART = re.compile(r"^(en|it|eng|ita|english|italiano|(en|it)[-_][a-z]{2})$", re.IGNORECASE)
_LANGUAGE_QUERY = {"lang", "language", "locale", "hl"}
# words too common in this domain's questions to make two of them one topic
GENERIC = frozenset(
    "pregnant pregnancy incinta gravidanza safe sicuro sicura normal normale while okay please aiuto help".split()
)
EXAMPLES = 3  # question texts shown per group (when allowed)
EXAMPLE_CHARS = 200


def topic_key(source_url: str) -> str:
    """The source link with its language parts removed, scheme and ``www.`` dropped, lower-case host."""
    parts = urlsplit(source_url.strip())
    labels = parts.netloc.lower().removeprefix("www.").split(".")
    if len(labels) > 2 and _LANGUAGE_PART.match(labels[0]):
        labels = labels[1:]
    path = [p for p in parts.path.split("/") if p and not _LANGUAGE_PART.match(p)]
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query) if k.lower() not in _LANGUAGE_QUERY))
    return "/".join([".".join(labels), *path]) + (f"?{query}" if query else "")


def document_coverage(store: Store) -> dict[str, Any]:
    """Documents per language and status, and every topic with the languages it is not live in."""
    rows = list_documents(store)
    languages = sorted(set(SERVED) | {r["language"] for r in rows})
    counts: dict[str, Counter] = {lang: Counter() for lang in languages}
    topics: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        counts[r["language"]][r["status"]] += 1
        topics.setdefault(topic_key(r["source_url"]), []).append(r)
    out = []
    for key in sorted(topics):
        docs = topics[key]
        live = {d["language"] for d in docs if d["status"] in LIVE}
        out.append(
            {
                "topic": key,
                "title": next((d["title"] for d in docs if d["status"] in LIVE), docs[0]["title"]),
                "documents": [
                    {"document": d["document"], "language": d["language"], "status": d["status"]} for d in docs
                ],  # fmt: skip
                "live": sorted(live),
                "missing": [lang for lang in languages if lang not in live],
            }
        )
    return {"languages": languages, "documents": {k: dict(sorted(v.items())) for k, v in counts.items()}, "topics": out}


def _stem(word: str) -> str:
    """English plurals and Italian final vowels off, cut at 6 letters: babies/baby, rashes/rash,
    febbre/febbri, capelli/capello."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 4 and word[-1] in "aeio":
        word = word[:-1]
    return word[:6]


def group_questions(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group questions (oldest first) by shared content words; returns groups with their members."""
    groups: list[dict[str, Any]] = []
    for q in questions:
        words = [w for w in content_words(q["question"]) if w not in GENERIC]
        stems = {_stem(w) for w in words}
        best, best_score = None, (0, 0)
        if not stems:  # nothing to group by: one group for all of them
            best = next((g for g in groups if not g["key"]), None)
        for g in groups if stems else []:
            shared = g["key"] & stems
            if shared and len(shared) >= min(2, len(stems), len(g["key"])):
                score = (len(shared), len(g["members"]))
                if score > best_score:
                    best, best_score = g, score
        if best is None:
            best = {"key": stems, "members": [], "forms": Counter()}
            groups.append(best)
        else:
            best["key"] = best["key"] & stems
        best["members"].append(q)
        best["forms"].update((_stem(w), w) for w in words)
    return groups


def _label(group: dict[str, Any]) -> list[str]:
    """The shared words, each in its most frequent written form, most frequent first."""
    forms: dict[str, tuple[int, str]] = {}
    for (stem, word), n in group["forms"].items():
        if stem in group["key"] and (-n, word) < forms.get(stem, (1, "")):
            forms[stem] = (-n, word)
    return [w for _, w in sorted(forms.values())]


def unanswered_topics(
    store: Store, days: int = 30, with_questions: bool = False, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Groups of the questions of the last ``days`` days that got "no certified information", largest (then
    most recent) first: label words, count, languages, first and last date, turn ids; with ``with_questions``
    up to EXAMPLES question texts (as stored, cut at EXAMPLE_CHARS)."""
    since = (now or utcnow()) - timedelta(days=days)
    out = []
    for g in group_questions(refused_questions(store, since)):
        members = g["members"]
        row = {
            "words": _label(g),
            "questions": len(members),
            "languages": dict(sorted(Counter(m["language"] for m in members).items())),
            "first": members[0]["at"].date().isoformat(),
            "last": members[-1]["at"].date().isoformat(),
            "turn_ids": [m["turn_id"] for m in members],
        }
        if with_questions:
            row["examples"] = [m["question"][:EXAMPLE_CHARS] for m in members[-EXAMPLES:][::-1]]
        out.append(row)
    out.sort(key=lambda r: r["last"], reverse=True)  # stable: then the most recent, then the oldest group
    return sorted(out, key=lambda r: -r["questions"])


def coverage(store: Store, days: int = 30, with_questions: bool = False) -> dict[str, Any]:
    """Both views (``chatbot content coverage --json``, the content page)."""
    return {
        **document_coverage(store),
        "unanswered": {"days": days, "groups": unanswered_topics(store, days, with_questions)},
    }


def coverage_lines(data: dict[str, Any]) -> list[str]:
    """``coverage()`` as Markdown lines (the page; plain enough for a terminal)."""
    counts = "; ".join(
        f"{lang} " + (", ".join(f"{n} {status}" for status, n in by.items()) or "none")
        for lang, by in data["documents"].items()
    )
    lines = [f"Documents: {counts}", "", "Topics missing a language (documents paired by source link):"]
    gaps = [t for t in data["topics"] if t["missing"]]
    for t in gaps:
        others = ", ".join(f"{d['document']} {d['language']} {d['status']}" for d in t["documents"]
                           if d["status"] not in LIVE)  # fmt: skip
        lines.append(
            f"- {t['topic']} ({t['title']}): live in {', '.join(t['live']) or 'none'}; missing in "
            f"{', '.join(t['missing'])}" + (f" ({others})" if others else "")
        )
    if not gaps:
        lines.append("- none: every topic is live in every language")
    days = data["unanswered"]["days"]
    lines += ["", f"Questions without certified information, last {days} days (grouped by shared words):"]
    for g in data["unanswered"]["groups"]:
        langs = ", ".join(f"{lang} {n}" for lang, n in g["languages"].items())
        span = g["first"] if g["first"] == g["last"] else f"{g['first']} to {g['last']}"
        lines.append(f"- {g['questions']} × {', '.join(g['words']) or '(no content words)'} ({langs}; {span})")
        lines += [f"    - “{q}”" for q in g.get("examples", [])]
    if not data["unanswered"]["groups"]:
        lines.append("- none")
    return lines
