"""Distil the shipped cross-encoder into a shallower one (issue 13, step 5: a reranker within the time budget).

`python -m chatbot.training.reranker_distill --pairs SET=COLLECTION ... --layers 2 --out DIR`

The student is the teacher's own first ``--layers`` transformer layers (embeddings, pooler and head kept), trained
to reproduce the teacher's scores (``--loss listwise``: per question, the softmax over its candidates, plus a little
mean squared error of the logits; ``--loss mse``: the logits alone) on the pairs the product actually reranks: for each
*train-split* question of a set, the top ``--candidates`` segments of the product's first stage (exact cosine
over a harness eval index built with e5-onnx, read from ``--data-dir``), read as the reranker reads them
(``CrossEncoderReranker.passage``). No relevance label is needed, so MedQuAD's train questions can be asked of
MEDIQA's answers too. 15% of the questions (``reranker_data.is_validation``) are held out: the log reports, per
evaluation, the student's mean squared error and how often its top 3 equals the teacher's on them.

Teacher scores and checkpoints are cached under ``--cache-dir``; ``--resume`` continues from the last
checkpoint. The result is a sentence-transformers CrossEncoder directory with its int8 ONNX export.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chatbot.resources import shared_data_dir
from chatbot.settings import SHIPPED_RERANKER
from chatbot.training.reranker import save_half
from chatbot.training.reranker_distill_gpu import top3_share

PROG = "python -m chatbot.training.reranker_distill"
# files of the teacher's directory that make the student a loadable CrossEncoder with the same tokenizer
_COPIED = (
    "tokenizer.json",
    "tokenizer_config.json",
    "modules.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


@dataclass
class Pair:
    qid: str
    group: str
    question: str
    passage: str
    rank: int  # first-stage rank of the passage for this question
    teacher: float = 0.0
    doc_id: str = ""


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def train_questions(data_root: Path, name: str, limit: int | None, seed: int) -> list[tuple[str, str]]:
    """(id, text) of the train-split questions of one BEIR set (a seeded sample of ``limit`` when given)."""
    from chatbot.splits import split_of

    rows = [json.loads(line) for line in (data_root / name / "queries.jsonl").read_text("utf-8").splitlines() if line]
    out = [(str(r["_id"]), str(r["text"])) for r in rows if split_of(str(r["_id"])) == "train"]
    if limit is not None and len(out) > limit:
        out = random.Random(seed).sample(out, limit)
    return sorted(out)


def mine_pairs(
    questions: Sequence[tuple[str, str]], group: str, collection: str, data_dir: Path, k: int, embedder
) -> list[Pair]:
    """The first stage's top ``k`` segments of ``collection`` for every question, as the reranker reads them."""
    from chatbot.index import SegmentIndex, make_client
    from chatbot.stages.rerank import CrossEncoderReranker

    index = SegmentIndex(make_client(data_dir), collection, embedder)
    if index.count() == 0:
        raise SystemExit(f"error: collection {collection} under {data_dir} is empty or missing")
    segments, matrix = index.all_segments()
    passage = CrossEncoderReranker.passage.__get__(_Reader())
    qvecs = embedder.embed_queries([q for _, q in questions])
    pairs: list[Pair] = []
    for (qid, text), qv in zip(questions, qvecs, strict=True):
        order = np.argsort(-(matrix @ qv))[:k]
        pairs += [
            Pair(qid, group, text, passage(segments[i]), rank, doc_id=segments[i].doc_id)
            for rank, i in enumerate(order)
        ]
    return pairs


def export_groups(pairs: Sequence[Pair], judgments: dict[str, dict[str, dict[str, int]]], out: Path) -> dict:
    """Write the device trainer's data file (``reranker_distill_gpu.py --data``): unique passages, and per
    question and collection its candidates in first-stage order with their document ids, graded labels (from
    ``judgments[group]`` where the question's own set judged that collection, else 0) and the validation flag."""
    import gzip

    from chatbot.training.reranker_data import is_validation

    passages: dict[str, int] = {}
    groups: dict[tuple[str, str], dict] = {}
    for p in pairs:
        g = groups.setdefault(
            (p.group, p.qid),
            {
                "qid": p.qid,
                "set": p.group,
                "val": is_validation(p.qid),
                "question": p.question,
                "cands": [],
                "labels": [],
                "docs": [],
            },
        )
        g["cands"].append(passages.setdefault(p.passage, len(passages)))
        g["docs"].append(p.doc_id)
        g["labels"].append(judgments.get(p.group, {}).get(p.qid, {}).get(p.doc_id, 0))
    data = {"passages": list(passages), "groups": list(groups.values())}
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    return {"questions": len(groups), "validation": sum(g["val"] for g in groups.values()), "passages": len(passages)}


class _Reader:
    """What ``CrossEncoderReranker.passage`` reads of its instance (the product's defaults)."""

    max_chars = 900
    with_title = True


def teacher_scores(pairs: list[Pair], teacher: Path, max_length: int, threads: int, cache: Path) -> None:
    """Fill ``Pair.teacher`` with the teacher's logits (cached by question and passage)."""
    from chatbot.stages.rerank import OnnxCrossEncoder

    cached: dict[str, float] = json.loads(cache.read_text("utf-8")) if cache.is_file() else {}
    key = lambda p: f"{p.question}\x00{p.passage}"  # noqa: E731
    todo = [p for p in pairs if key(p) not in cached]
    if todo:
        model = OnnxCrossEncoder(teacher, threads=threads, max_length=max_length, int8_matmul="fp32")
        start = time.time()
        for i in range(0, len(todo), 256):
            chunk = todo[i : i + 256]
            probs = model.predict([(p.question, p.passage) for p in chunk])
            for p, s in zip(chunk, probs, strict=True):
                cached[key(p)] = _logit(float(s)) if model.activation == "sigmoid" else float(s)
            cache.write_text(json.dumps(cached), "utf-8")
            done = min(i + 256, len(todo))
            _log(f"teacher: {done}/{len(todo)} pairs, {done / (time.time() - start):.1f} pairs/s")
    for p in pairs:
        p.teacher = cached[key(p)]


def _logit(p: float) -> float:
    p = min(max(p, 1e-7), 1 - 1e-7)
    return math.log(p / (1 - p))


def top3_agreement(scores: np.ndarray, teacher: np.ndarray, groups: list[np.ndarray]) -> float:
    """Mean share of the teacher's top 3 that the student's top 3 holds, per question."""
    shares = [top3_share(np.argsort(-scores[g]), np.argsort(-teacher[g])) for g in groups]
    return float(np.mean(shares)) if shares else 0.0


def training_batches(train: Sequence[Pair], loss: str, batch_size: int, epochs: int, rng: random.Random):
    """Index lists, one per step, for ``epochs`` shuffled passes: ``batch_size`` pairs (mse), or every pair of
    one question (listwise: its candidates compete in one softmax)."""
    if loss == "listwise":
        by_question: dict[str, list[int]] = {}
        for i, p in enumerate(train):
            by_question.setdefault(p.qid, []).append(i)
        units = list(by_question.values())
    else:
        units = [[i] for i in range(len(train))]
    batches: list[list[int]] = []
    for _ in range(epochs):
        rng.shuffle(units)
        if loss == "listwise":
            batches += [list(u) for u in units]
        else:
            flat = [i for u in units for i in u]
            batches += [flat[k : k + batch_size] for k in range(0, len(flat), batch_size)]
    return batches


def distillation_loss(student, teacher, loss: str, mse_weight: float = 0.1):
    """mse: mean squared error of the logits; listwise: KL divergence of the student's softmax over the
    question's candidates from the teacher's (the order is what the product uses), plus ``mse_weight`` × mse."""
    import torch

    mse = torch.nn.functional.mse_loss(student, teacher)
    if loss == "mse":
        return mse
    kl = torch.nn.functional.kl_div(
        torch.log_softmax(student, dim=0), torch.log_softmax(teacher, dim=0), reduction="sum", log_target=True
    )
    return kl + mse_weight * mse


def build_student(teacher: Path, layers: int):
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(teacher), num_hidden_layers=layers)
    return model.float()


def save_student(model, tokenizer_dir: Path, out: Path, serve_max_length: int) -> None:
    stale = ("model.safetensors", "onnx/model_qint8.onnx")
    save_half(model, lambda: model.save_pretrained(str(out), safe_serialization=True), out, stale)
    for name in _COPIED:
        if (tokenizer_dir / name).is_file():
            shutil.copy2(tokenizer_dir / name, out / name)
    bert = out / "sentence_bert_config.json"
    if bert.is_file():
        cfg = json.loads(bert.read_text("utf-8"))
        cfg["max_seq_length"] = serve_max_length
        bert.write_text(json.dumps(cfg, indent=2) + "\n", "utf-8")


def assemble_student(
    teacher: Path, weights: Path, out: Path, serve_max_length: int, threads: int = 2, export: bool = True
) -> Path:
    """A loadable student from a GPU run's ``<config>.safetensors`` (its trained tensors, no word embeddings):
    the teacher's word embeddings and tokenizer, the student's layers and head, saved as ``save_student`` does
    and (``export``) exported to int8 ONNX; returns ``out``."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(weights), "pt") as f:
        kept = json.loads((f.metadata() or {}).get("layers", "null"))
    if not kept:
        raise SystemExit(f"error: {weights} does not say which teacher layers it kept (metadata 'layers')")
    model = build_student(teacher, len(kept))
    state = {name: t.to(torch.float32) for name, t in load_file(str(weights)).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any("word_embeddings" not in name for name in missing):
        raise SystemExit(f"error: {weights} does not fit a {len(kept)}-layer student: {missing or unexpected}")
    out.mkdir(parents=True, exist_ok=True)
    save_student(model, teacher, out, serve_max_length)
    if export:
        from chatbot.training.onnx_export import export_onnx

        export_onnx(out, threads, log=_log)
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--data-dir", type=Path, required=True, help="data dir holding the harness's eval indexes")
    p.add_argument(
        "--pairs",
        action="append",
        required=True,
        metavar="SET=COLLECTION[:LIMIT]",
        help="train questions of SET (a folder of --data-root) asked of the eval index COLLECTION; repeatable",
    )
    p.add_argument("--teacher", type=Path, default=SHIPPED_RERANKER)
    p.add_argument("--layers", type=int, default=2, help="transformer layers the student keeps (of the teacher's)")
    p.add_argument("--candidates", type=int, default=40, help="first-stage segments per question")
    p.add_argument("--max-length", type=int, default=256, help="word pieces per pair, teacher and student")
    p.add_argument("--serve-max-length", type=int, default=256)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument(
        "--loss",
        choices=("mse", "listwise"),
        default="listwise",
        help="listwise: per question, KL of the candidates' softmax (+ --mse-weight x mse); mse: logits alone",
    )
    p.add_argument("--mse-weight", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--evals", type=int, default=4, help="validation passes over the run")
    p.add_argument("--cache-dir", type=Path, default=Path("/tmp/reranker-distill"))
    p.add_argument("--out", type=Path)
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint under --cache-dir")
    p.add_argument(
        "--export-groups",
        type=Path,
        metavar="FILE",
        help="only mine: write the device trainer's data file (gzipped JSON) and stop; --out is then unused",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from chatbot.embedders import load_embedder
    from chatbot.training.reranker_data import _read_qrels, is_validation

    t0 = time.time()
    embedder = load_embedder("e5-onnx", threads=args.threads)
    pairs: list[Pair] = []
    judgments: dict[str, dict[str, dict[str, int]]] = {}
    for spec in args.pairs:
        name, _, rest = spec.partition("=")
        collection, _, limit = rest.partition(":")
        group = f"{name}@{collection}"
        questions = train_questions(args.data_root, name, int(limit) if limit else None, args.seed)
        pairs += mine_pairs(questions, group, collection, args.data_dir, args.candidates, embedder)
        # another set's collection has other document ids: its labels stay 0
        judgments[group] = _read_qrels(args.data_root / name / "qrels.tsv")
        _log(f"{name}: {len(questions)} train questions of {collection}")
    if args.export_groups:
        print(json.dumps(export_groups(pairs, judgments, args.export_groups)))
        return 0
    if args.out is None:
        raise SystemExit("error: --out is required unless --export-groups is given")
    import torch
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    teacher_scores(pairs, args.teacher, args.max_length, args.threads, args.cache_dir / "teacher.json")
    train = [p for p in pairs if not is_validation(p.qid)]
    val = [p for p in pairs if is_validation(p.qid)]
    val_groups: dict[str, list[int]] = {}
    for i, p in enumerate(val):
        val_groups.setdefault(p.qid, []).append(i)
    groups = [np.asarray(g) for g in val_groups.values()]
    _log(f"{len(train)} training pairs, {len(val)} validation pairs ({len(groups)} questions)")

    tokenizer = AutoTokenizer.from_pretrained(str(args.teacher))
    model = build_student(args.teacher, args.layers)

    def encode(batch: Sequence[Pair]):
        return tokenizer(
            [p.question for p in batch],
            [p.passage for p in batch],
            truncation="longest_first",
            max_length=args.max_length,
            padding=True,
            return_tensors="pt",
        )

    def predict(batch_pairs: Sequence[Pair]) -> np.ndarray:
        model.eval()
        out = []
        with torch.no_grad():
            for i in range(0, len(batch_pairs), 64):
                out.append(model(**encode(batch_pairs[i : i + 64])).logits[:, 0].float().numpy())
        model.train()
        return np.concatenate(out) if out else np.zeros(0)

    def validate() -> dict[str, float]:
        scores = predict(val)
        teacher = np.asarray([p.teacher for p in val])
        return {
            "mse": round(float(np.mean((scores - teacher) ** 2)), 4),
            "top3_agreement": round(top3_agreement(scores, teacher, groups), 4),
        }

    rng = random.Random(args.seed)
    batches = training_batches(train, args.loss, args.batch_size, math.ceil(args.epochs), rng)
    steps_per_epoch = len(batches) // max(1, math.ceil(args.epochs))
    total = max(1, int(steps_per_epoch * args.epochs))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, max(1, total // 10), total)
    checkpoint = args.cache_dir / f"checkpoint-L{args.layers}-{args.loss}.pt"
    step, history = 0, []
    if args.resume and checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step, history = state["step"], state["history"]
        _log(f"resumed at step {step}/{total}")
    else:
        history.append({"step": 0, **validate()})
        _log(f"validation before training: {history[-1]}")
    every = max(1, total // max(1, args.evals))
    start, running, seen = time.time(), [], 0
    model.train()
    while step < total:
        batch = [train[i] for i in batches[step]]
        target = torch.tensor([p.teacher for p in batch], dtype=torch.float32)
        loss = distillation_loss(model(**encode(batch)).logits[:, 0], target, args.loss, args.mse_weight)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        step += 1
        running.append(loss.item())
        seen += len(batch)
        if step % 20 == 0:
            rate, seen = seen / (time.time() - start), 0
            _log(f"step {step}/{total} loss {np.mean(running[-20:]):.3f} ({rate:.1f} pairs/s)")
            start = time.time()
        if step % every == 0 or step == total:
            history.append({"step": step, "train_loss": round(float(np.mean(running[-every:])), 4), **validate()})
            _log(f"validation: {history[-1]}")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "step": step,
                    "history": history,
                },
                checkpoint,
            )
    save_student(model, args.teacher, args.out, args.serve_max_length)
    from chatbot.training.onnx_export import export_onnx

    export_onnx(args.out, args.threads, log=_log)
    summary = {
        "command": f"{PROG} " + " ".join(argv if argv is not None else sys.argv[1:]),
        "teacher": str(args.teacher),
        "layers": args.layers,
        "train_pairs": len(train),
        "validation_pairs": len(val),
        "validation_questions": len(groups),
        "pairs_by_set": {s: sum(p.group == s for p in pairs) for s in dict.fromkeys(p.group for p in pairs)},
        "steps": total,
        "history": history,
        "seconds": round(time.time() - t0, 1),
    }
    (args.out / "distillation.json").write_text(json.dumps(summary, indent=1) + "\n", "utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
