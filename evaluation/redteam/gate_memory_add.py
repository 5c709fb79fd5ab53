"""Add labelled questions to the relevance gate's memory (chatbot.stages.gate_memory) without rebuilding it.

    python -m evaluation.redteam.gate_memory_add --memory models/relevance_gate/memory \
        --data evaluation/redteam/gate_exclusions_v25.jsonl --data evaluation/redteam/gate_exclusions_v26.jsonl

Each file holds spent labelled rows (``{"id", "text" or "question", "in_scope", "card_id"}``; a row without
``in_scope`` is in scope). They are embedded by the memory's own embedder, as ``gate_memory_fit`` embeds every memory
question, and appended as ``<file name>:<id>``; a row already in the memory is skipped, so adding a file twice changes
nothing. ``memory.json`` keeps its tau and records each addition (command, whether the rows vote in the gate, and
each file's name, sha256 and questions). A full rebuild (``gate_memory_fit``) re-chooses tau over every set; an
addition keeps it. ``--no-vote``: the rows serve the card and answer memories only (memory.npz ``gate``), for sets
with one label (reply sets, all in scope), which would tilt the gate's verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.jsonl_sets import read_records
from evaluation.redteam.gate_memory_fit import card_ids, int8_rows

PROG = "python -m evaluation.redteam.gate_memory_add"


def labelled_rows(path: Path, prefix: str = "") -> list[dict[str, Any]]:
    """The file's rows as memory entries (id ``<prefix><file name>:<id>``, text, in_scope, card ids); a clear error
    on a malformed row."""
    rows = []
    for n, row in read_records(path, ("id",), "labelled set"):
        text = row.get("text") or row.get("question")
        if not isinstance(text, str) or not text.strip() or not row["id"]:
            raise ValueError(f"{path}:{n}: a labelled row needs an id and a text (or question)")
        in_scope = row.get("in_scope", True)
        if not isinstance(in_scope, bool):
            raise ValueError(f"{path}:{n}: in_scope must be true or false, got {in_scope!r}")
        rows.append(
            {
                "id": f"{prefix}{path.name}:{row['id']}",
                "text": text,
                "in_scope": in_scope,
                "card_ids": card_ids({**row, "in_scope": in_scope}),
            }
        )
    return rows


def add(
    folder: Path, files: Sequence[Path], embedder: Any, command: str, prefix: str = "", vote: bool = True
) -> dict[str, int]:
    """Append the files' labelled questions to the memory in ``folder``; (added, skipped) counts. ``vote`` False:
    the rows serve the card and answer memories, and the gate's verdict does not read them (memory.npz ``gate``)."""
    meta = json.loads((folder / "memory.json").read_text(encoding="utf-8"))
    given = getattr(embedder, "name", None)
    if given != meta.get("embedder_name"):
        raise ValueError(f"{folder} holds {meta.get('embedder_name')} vectors; the embedder given is {given}")
    with np.load(folder / "memory.npz", allow_pickle=False) as arrays:
        memory = {k: arrays[k] for k in arrays.files}
    known = {str(i) for i in memory["ids"]}
    new, skipped, additions = [], 0, []
    for path in files:
        rows = labelled_rows(path, prefix)
        fresh = [r for r in rows if r["id"] not in known]
        known.update(r["id"] for r in fresh)
        skipped += len(rows) - len(fresh)
        new.extend(fresh)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        additions.append({"file": path.name, "sha256": digest, "questions": len(fresh)})
    if new:
        vectors = np.asarray(embedder.embed_queries([r["text"] for r in new]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        memory["vectors"] = np.concatenate([memory["vectors"], int8_rows(vectors)])
        memory["in_scope"] = np.concatenate([memory["in_scope"], np.array([r["in_scope"] for r in new])])
        memory["ids"] = np.concatenate([memory["ids"], np.array([r["id"] for r in new])])  # widens to the longest
        memory["cards"] = np.concatenate([memory["cards"], np.array(["|".join(r["card_ids"]) for r in new])])
        if not vote or "gate" in memory:
            votes = memory.get("gate", np.ones(len(memory["ids"]) - len(new), dtype=bool))
            memory["gate"] = np.concatenate([votes, np.full(len(new), vote)])
        np.savez_compressed(folder / "memory.npz", **memory)
        y = memory["in_scope"]
        meta["questions"] = {"in_scope": int(y.sum()), "out_of_scope": int((~y).sum())}
        meta["added"] = [*meta.get("added", []), {"command": command, "gate": vote, "files": additions}]
        (folder / "memory.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return {"added": len(new), "skipped": skipped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, required=True, help="the memory folder (memory.json + memory.npz)")
    parser.add_argument("--data", type=Path, action="append", required=True, help="labelled question file")
    parser.add_argument(
        "--prefix",
        default="",
        help='before each id\'s file name: "replies/" for reply sets (the answer memory reads them)',
    )
    parser.add_argument(
        "--no-vote",
        action="store_true",
        help="the rows serve the card and answer memories only; the gate's verdict ignores them (all-in-scope sets)",
    )
    args = parser.parse_args(argv)
    from chatbot.embedders import load_embedder

    meta = json.loads((args.memory / "memory.json").read_text(encoding="utf-8"))
    command = " ".join([PROG, *(argv if argv is not None else sys.argv[1:])])
    embedder = load_embedder(meta["embedder"], threads=2)
    counts = add(args.memory, args.data, embedder, command, args.prefix, vote=not args.no_vote)
    print(f"{args.memory}: {counts['added']} questions added, {counts['skipped']} already there", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
