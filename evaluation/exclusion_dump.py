"""Every question the detector can meet in our sets, with its decomposition: one line per question
(``file<TAB>id<TAB>decomposition or -``), to diff two trees' routing. The decompositions quote the questions,
shared data included: write the output outside the repository and report changes by id.

    python -m evaluation.exclusion_dump > routes.tsv

Reads every JSONL question file under ``evaluation/`` (but ``results/``) and ``../shared/data/*/queries.jsonl``.
"""

from __future__ import annotations

import glob
import json
import os

from chatbot.logical.detect import analyse

SHARED = os.environ.get("CHATBOT_SHARED_DATA", "../shared/data")


def files() -> list[str]:
    """The question files, in a stable order."""
    own = [p for p in glob.glob("evaluation/**/*.jsonl", recursive=True) if "/results/" not in p]
    return sorted(own) + sorted(glob.glob(f"{SHARED}/*/queries.jsonl"))


def main() -> None:
    for path in files():
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict):
                    continue
                text = row.get("question") or row.get("text") or row.get("query") or ""
                if not isinstance(text, str) or not text:
                    continue
                found = analyse(text)
                qid = row.get("id") or row.get("_id") or f"#{n}"
                print(f"{path}\t{qid}\t{found.text if found else '-'}")


if __name__ == "__main__":
    main()
