"""Train the answer scorer (chatbot.stages.answer_trained): a logistic head over e5 pair features, fitted on
weak labels from public train splits (chatbot.training.answer_scorer_data), deterministic.

    nice -n 10 python -m chatbot.training.answer_scorer --data /work/shared/data --out models/answer_scorer

Sentence and question vectors (e5-onnx) are cached under ~/.cache/certified-chatbot/answer_scorer (outside
the repository; they hold nothing but numbers). The regularisation is chosen on a validation share of the
training questions (by id), then the head is refitted on all of them. Writes answer_scorer.npz (weights,
standardisation, metadata) and README.md (the model card) into --out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chatbot.stages.answer_trained import CARD_FILE, EMBEDDER, FEATURE_VERSION, WEIGHTS_FILE, pair_features
from chatbot.training.answer_scorer_data import Example, is_validation, load_examples

C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.03)
CACHE_DIR = Path.home() / ".cache" / "certified-chatbot" / "answer_scorer"


def _key(prefix: str, text: str) -> str:
    return hashlib.sha1(f"{prefix}\x00{text}".encode()).hexdigest()


def embed_cached(embedder, kind: str, texts: Sequence[str], cache_dir: Path) -> dict[str, np.ndarray]:
    """text -> vector (``kind`` query or passage), reading and extending an on-disk cache."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{EMBEDDER}-{kind}.npz"
    cached: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as data:
            cached = {k: data[k] for k in data.files}
    wanted = {t: _key(kind, t) for t in dict.fromkeys(texts)}
    missing = [t for t, k in wanted.items() if k not in cached]
    embed = embedder.embed_queries if kind == "query" else embedder.embed_passages
    for start in range(0, len(missing), 256):
        chunk = missing[start : start + 256]
        for t, v in zip(chunk, embed(chunk), strict=True):
            cached[wanted[t]] = np.asarray(v, dtype=np.float32)
        print(f"  embedded {min(start + 256, len(missing))}/{len(missing)} {kind} texts", file=sys.stderr)
    if missing:
        np.savez(path, **cached)
    return {t: cached[k] for t, k in wanted.items()}


def build_matrix(examples: Sequence[Example], q_vecs: dict, s_vecs: dict) -> np.ndarray:
    """The feature rows of the examples, grouped per question for speed, in the examples' order."""
    rows: list[np.ndarray | None] = [None] * len(examples)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        groups[e.question].append(i)
    for question, idx in groups.items():
        sentences = [examples[i].sentence for i in idx]
        feats = pair_features(q_vecs[question], np.stack([s_vecs[s] for s in sentences]), question, sentences)
        for i, row in zip(idx, feats, strict=True):
            rows[i] = row
    return np.stack(rows)  # type: ignore[arg-type]


def ranking_metrics(examples: Sequence[Example], probs: np.ndarray) -> dict[str, float]:
    """Per (source, question) with a positive and a negative: is a positive ranked first (P@1), and the mean
    reciprocal rank of the best positive."""
    groups: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for e, p in zip(examples, probs, strict=True):
        groups[(e.source, e.question)].append((float(p), e.label))
    p1, rr = [], []
    for items in groups.values():
        if not any(lab for _, lab in items) or all(lab for _, lab in items):
            continue
        ranked = sorted(items, key=lambda x: -x[0])
        p1.append(float(ranked[0][1] == 1))
        rr.append(1.0 / (1 + next(k for k, (_, lab) in enumerate(ranked) if lab == 1)))
    return {"questions": len(p1), "p_at_1": float(np.mean(p1)) if p1 else 0.0, "mrr": float(np.mean(rr)) if rr else 0.0}


def fit(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=3000, solver="lbfgs")
    model.fit((x - mean) / scale, y)
    return model, mean, scale


def _probs(model, mean, scale, x: np.ndarray) -> np.ndarray:
    return model.predict_proba((x - mean) / scale)[:, 1]


def train(data_root: Path, out: Path, cache_dir: Path = CACHE_DIR, seed: int = 0) -> dict:
    """Fit, choose C on validation, refit on all training questions, write weights and card; the metadata."""
    from chatbot.embedders import load_embedder

    start = time.time()
    examples = load_examples(data_root, seed)
    embedder = load_embedder(EMBEDDER)
    q_vecs = embed_cached(embedder, "query", [e.question for e in examples], cache_dir)
    s_vecs = embed_cached(embedder, "passage", [e.sentence for e in examples], cache_dir)
    x = build_matrix(examples, q_vecs, s_vecs)
    y = np.asarray([e.label for e in examples])
    val = np.asarray([is_validation(e.qid) for e in examples])
    val_examples = [e for e, v in zip(examples, val, strict=True) if v]
    baseline = ranking_metrics(val_examples, x[val][:, 2 * q_vecs[examples[0].question].shape[0]])  # cosine
    grid = {}
    for c in C_GRID:
        model, mean, scale = fit(x[~val], y[~val], c)
        grid[c] = ranking_metrics(val_examples, _probs(model, mean, scale, x[val]))
        print(f"  C={c}: validation {grid[c]}", file=sys.stderr)
    best_c = max(C_GRID, key=lambda c: (grid[c]["mrr"], -c))
    model, mean, scale = fit(x, y, best_c)
    per_source = {
        src: ranking_metrics(
            [e for e in val_examples if e.source == src],
            _probs(model, mean, scale, x[val][[e.source == src for e in val_examples]]),
        )
        for src in sorted({e.source for e in val_examples})
    }
    meta = {
        "feature_version": FEATURE_VERSION,
        "embedder": EMBEDDER,
        "features": int(x.shape[1]),
        "examples": int(len(y)),
        "positives": int(y.sum()),
        "questions": len({(e.source, e.qid) for e in examples}),
        "by_source": {s: sum(e.source == s for e in examples) for s in sorted({e.source for e in examples})},
        "C": best_c,
        "seed": seed,
        "validation_cosine": baseline,
        "validation_grid": {str(c): m for c, m in grid.items()},
        "validation_refit_per_source": per_source,
        "train_seconds": round(time.time() - start, 1),
    }
    out.mkdir(parents=True, exist_ok=True)
    np.savez(
        out / WEIGHTS_FILE,
        coef=model.coef_[0].astype(np.float32),
        intercept=np.float32(model.intercept_[0]),
        mean=mean.astype(np.float32),
        scale=scale.astype(np.float32),
        meta=np.asarray(json.dumps(meta, sort_keys=True)),
    )
    (out / CARD_FILE).write_text(model_card(meta), encoding="utf-8")
    return meta


def model_card(meta: dict) -> str:
    """The model card (README.md next to the weights)."""
    grid = "\n".join(f"| {c} | {m['p_at_1']:.3f} | {m['mrr']:.3f} |" for c, m in meta["validation_grid"].items())
    cos = meta["validation_cosine"]
    return f"""# Answer scorer (compose.answer_scorer=cues+trained)

P(a certified sentence answers the question): a logistic head (`chatbot/stages/answer_trained.py`) over
features of the multilingual-e5-small vectors (`{meta["embedder"]}`, `query:` question, `passage:` sentence):
their elementwise product and absolute difference, cosine, the question type crossed with the sentence's
answer cues, shared words, length ({meta["features"]} features). Weights: `answer_scorer.npz`
(coefficients, standardisation, metadata; no text).

## Training data (weak labels, public train splits only)

`chatbot/training/answer_scorer_data.py`: questions whose `chatbot.splits.split_of` is `train`; no sentence
of a document judged for a test question.
- MedQuAD: positive = the first sentence of the question's answer (a restated question skipped); negatives =
  the first sentences of the same topic's other sections (on the subject, not the answer) and of one other
  topic.
- MEDIQA and MEDIQA-it (Italian questions, English answers): first sentence of an answer graded excellent
  (positive) or incorrect/related (negative).

{meta["examples"]} examples ({meta["positives"]} positive) over {meta["questions"]} questions;
by source: {json.dumps(meta["by_source"])}.

## Validation ({cos["questions"]} held-out training questions, by id: chatbot.training.answer_scorer_data)

Ranking each question's candidate sentences: P@1 (a positive first) and MRR.

| C | P@1 | MRR |
|---|---|---|
{grid}

Cosine of the e5 vectors alone: P@1 {cos["p_at_1"]:.3f}, MRR {cos["mrr"]:.3f}. Chosen C = {meta["C"]}, then
refitted on all training questions (refit scores on validation, optimistic:
{json.dumps(meta["validation_refit_per_source"])}).

## Limits

The labels are weak (a lead sentence stands for "the answer"); the questions are MedQuAD templates and
MEDIQA consumer questions, not pregnancy questions; Italian enters only through MEDIQA-it's questions and
e5's multilingual space. What it does to replies is measured in evaluation/results/replies.md.

## Reproduce

    nice -n 10 python -m chatbot.training.answer_scorer --data /work/shared/data --out models/answer_scorer

Deterministic (seed {meta["seed"]}, lbfgs: a rerun gives the same coefficients). About 2 minutes on the
shared 2-core box from a cold start (embedding ~6,200 texts with e5-onnx), {meta["train_seconds"]} s in the run
that wrote these weights; the vectors are cached in ~/.cache/certified-chatbot/answer_scorer.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--out", type=Path, default=Path("models/answer_scorer"))
    parser.add_argument("--cache", type=Path, default=CACHE_DIR)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    meta = train(args.data, args.out, args.cache, args.seed)
    print(json.dumps(meta, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
