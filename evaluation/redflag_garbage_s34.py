"""The 100 non-text and garbage messages of chatbot/training/redflag_data/garbage_ordinary_s34.jsonl (session 34):
emoji strings, repeated letters and words, markup, code, URLs and numbers, written deterministically (seed 34), as
ordinary (``none``) examples for a red-flag refit and a check that the screen does not alarm on them.

    python -m evaluation.redflag_garbage_s34 OUT.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

EMOJI = [
    "🤰",
    "🍼",
    "👶",
    "😭",
    "😢",
    "🙏",
    "❤️",
    "😴",
    "🤢",
    "🤮",
    "😱",
    "💊",
    "🩸",
    "🚑",
    "😀",
    "👍",
    "🥛",
    "☕",
    "🍷",
    "🤒",
]
WORDS = ["a", "x", "ok", "ciao", "test", "aaa", "hello", "si", "no", "boh"]
OTHER = [
    "<script>alert(1)</script>",
    "%PDF-1.4 obj<</Type/Catalog>>",
    "https://example.com/page?id=12",
    "1234567890",
    "?????",
    "!!!!!!!",
    "asdfghjkl qwertyuiop",
    "lorem ipsum dolor sit amet " * 30,
    "SELECT * FROM users;",
    "def f(x): return x*2",
    '{"a": 1, "b": [1, 2, 3]}',
    "\u202e\u202dtest",
    "...",
    "-- -- --",
    "#### ####",
    "0000 0000 0000 0000",
    "ho ho ho",
    "mmm",
    "zzz",
    "k",
]


def garbage_rows(seed: int = 34) -> list[dict[str, str]]:
    """100 rows {lang, label none, kind, text}: 30 emoji strings, 30 repetitions, 20 other strings in both languages."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []

    def add(text: str, lang: str) -> None:
        rows.append({"lang": lang, "label": "none", "kind": "garbage s34", "text": text})

    for i in range(30):
        add("".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 8))), "en" if i % 2 else "it")
    for i, w in enumerate(WORDS):
        for n in (50, 400, 1500):
            add(" ".join([w] * n) if len(w) > 1 or i % 2 else w * n, "en" if i % 2 else "it")
    for t in OTHER:
        add(t, "en")
        add(t, "it")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__)
        return 2
    with Path(args[0]).open("w", encoding="utf-8") as f:
        for row in garbage_rows():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
