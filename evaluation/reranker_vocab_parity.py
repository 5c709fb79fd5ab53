"""Parity of the bilingual cross-encoder's trimmed tokenizer with e5's full tokenizer, on TEST questions
(never read when the vocabulary was chosen) and on the corpora's segments.

    python -m evaluation.reranker_vocab_parity --model /path/to/reranker-e5 [--out results.json]

Per group: texts, the share segmented identically (same pieces; the trimmed ids map back to the full ids
through the kept pieces), the share with any ``<unk>`` (the trimmed tokenizer falls back to smaller pieces
instead), and the extra pieces per 100 the fallback costs. Ids and numbers only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _test_questions(data: Path) -> list[str]:
    from chatbot.splits import split_of

    rows = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    return [r["text"] for r in rows if split_of(r["_id"]) == "test"]


def _segments(data: Path, limit: int) -> list[str]:
    from chatbot.training.reranker_data import Pool

    pool = Pool(data.name)
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        if line.strip():
            doc = json.loads(line)
            pool.add(doc["_id"], doc.get("title", ""), doc["text"], max_segments=2)
        if len(pool.seg_text) >= limit:
            break
    return pool.seg_text[:limit]


def parity(full, small, texts: list[str]) -> dict[str, float]:
    same = unk = big_n = small_n = 0
    unk_id = small.token_to_id("<unk>")
    for a, b in zip(full.encode_batch(texts), small.encode_batch(texts), strict=True):
        same += a.tokens == b.tokens
        unk += unk_id in b.ids
        big_n += len(a.ids)
        small_n += len(b.ids)
    n = max(1, len(texts))
    return {
        "texts": len(texts),
        "identical": round(same / n, 4),
        "with_unk": round(unk / n, 4),
        "extra_pieces_per_100": round(100 * (small_n - big_n) / max(1, big_n), 2),
    }


def main(argv: list[str] | None = None) -> int:
    from tokenizers import Tokenizer

    from chatbot.resources import shared_data_dir
    from chatbot.training.reranker_e5 import e5_hf_dir

    p = argparse.ArgumentParser(prog="python -m evaluation.reranker_vocab_parity", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, required=True, help="folder with the trimmed tokenizer.json")
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--segments", type=int, default=500, help="corpus segments per set")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    full = Tokenizer.from_file(str(e5_hf_dir() / "tokenizer.json"))
    small = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    for tok in (full, small):  # a saved CrossEncoder's tokenizer.json keeps its training padding/truncation
        tok.no_padding()
        tok.no_truncation()
    groups = {
        "test questions mediqa (en)": _test_questions(args.data_root / "mediqa"),
        "test questions mediqa-it (it)": _test_questions(args.data_root / "mediqa-it"),
        "test questions maternal (en)": _test_questions(args.data_root / "maternal"),
        "test questions medquad (en)": _test_questions(args.data_root / "medquad"),
        "mediqa segments (en)": _segments(args.data_root / "mediqa", args.segments),
        "maternal segments (en)": _segments(args.data_root / "maternal", args.segments),
    }
    result = {
        "command": "python -m evaluation.reranker_vocab_parity " + " ".join(argv or sys.argv[1:]),
        "vocab_full": full.get_vocab_size(),
        "vocab_trimmed": small.get_vocab_size(),
        "groups": {name: parity(full, small, texts) for name, texts in groups.items()},
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
