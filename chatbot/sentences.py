"""Sentence splitting of certified text: each piece a verbatim substring (the composer and the guard both
cut replies and segments with it)."""

from __future__ import annotations

import re

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "dr.", "mr.", "mrs.", "ms.", "approx.", "vs.", "no.", "es.", "ecc.", "cfr.")
_BOUNDARY = re.compile(r"(?<=[.!?;:])\s+|\s+(?=- )")


def split_sentences(text: str) -> list[str]:
    """Sentences (and list items) of a text, each a verbatim substring, stripped.

    Splits after . ! ? (and after ; or : when a list item follows) and before " - " list markers; never
    after common abbreviations, a list number ("1."), or inside decimals.
    """
    text = text.strip()
    if not text:
        return []
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        before = text[start : m.start()]
        after = text[m.end() :]
        if not before.strip():
            continue
        last_word = before.rsplit(None, 1)[-1].lower() if before.split() else ""
        if last_word in _ABBREVIATIONS or re.fullmatch(r"\d{1,2}\.", before.strip()):
            continue
        if before.rstrip()[-1:] in ";:" and not after.startswith("- "):
            continue  # a ; or : only ends a piece before a list item
        if before.rstrip()[-1:] in ".!?" and after[:1].islower() and not before.rstrip().endswith((":", ";")):
            continue  # "38 C. or more" style false stop: next piece must start a sentence
        pieces.append(before.strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def truncate_to_sentences(text: str, max_chars: int) -> str:
    """The longest prefix of whole sentences within ``max_chars``; a first sentence too long is cut at a word."""
    out = ""
    for sentence in split_sentences(text):
        candidate = f"{out} {sentence}" if out else sentence
        if len(candidate) > max_chars:
            break
        out = candidate
    if out:
        return out
    cut = text[: max(1, max_chars - 1)]
    if text[len(cut) : len(cut) + 1] not in ("", " "):  # the cut fell inside a word
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"
