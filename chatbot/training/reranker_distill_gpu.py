"""Distil the shipped cross-encoder into shallow students on a GPU (issue 13, step 5: a reranker in the time budget).

`python3 chatbot/training/reranker_distill_gpu.py --data .gpu/data.json.gz --teacher models/reranker --out DIR
--configs L2:128 L3:128 ...`

Runs on the device machine with torch + transformers alone (no import of the product). The data file (gzipped JSON,
made on the CPU by `python -m chatbot.training.reranker_distill mine`) holds unique passages and, per train-split
question, the product's first-stage top-K candidates (indices into the passages, in first-stage order), the
candidates' document ids and graded labels where the set has judgments, and whether the question is held out for
validation. The teacher scores every pair once (its serving length, fp32); each student is the teacher's
embeddings, pooler and head plus a chosen subset of its layers (``L2`` keeps the first two, ``L2s`` spreads them),
with the word embeddings frozen, trained to the teacher's logits: per question a listwise KL of the candidates'
softmax plus ``--mse-weight`` x the logits' squared error (the relevance gate reads the score's scale). After every
epoch the held-out questions are scored: top-3 agreement with the teacher, alone and fused with the first stage's
order by reciprocal rank (what the product ranks), and the fused P@3 on the questions that have judgments. The
best epoch by fused agreement is kept: only the trained tensors (no word embeddings), in float16, one
``<config>.safetensors`` per student, and ``summary.json``.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_config(spec: str) -> dict:
    """``L<layers>[s]:<max_length>[:<lr>]`` -> layers kept, max length, learning rate (``s``: spread layers)."""
    parts = spec.split(":")
    head = parts[0]
    if not head.startswith("L"):
        raise ValueError(f"config {spec!r}: expected L<layers>[s]:<max_length>[:<lr>]")
    spread = head.endswith("s")
    layers = int(head[1:-1] if spread else head[1:])
    max_length = int(parts[1]) if len(parts) > 1 else 128
    lr = float(parts[2]) if len(parts) > 2 else 1e-4
    return {"name": spec.replace(":", "_"), "layers": layers, "spread": spread, "max_length": max_length, "lr": lr}


def chosen_layers(total: int, keep: int, spread: bool) -> list[int]:
    """Which of the teacher's layers a student keeps: the first ``keep``, or evenly spread (first and last kept)."""
    if not spread or keep == 1:
        return list(range(keep))
    return sorted({round(i * (total - 1) / (keep - 1)) for i in range(keep)})


def rrf_order(scores: np.ndarray, k: int = 60) -> np.ndarray:
    """Candidates (in first-stage order) ranked by reciprocal-rank fusion of that order and ``scores``."""
    n = len(scores)
    by_score = np.empty(n, dtype=np.int64)
    by_score[np.argsort(-scores, kind="stable")] = np.arange(n)
    fused = 1.0 / (k + 1 + np.arange(n)) + 1.0 / (k + 1 + by_score)
    return np.argsort(-fused, kind="stable")


def top3_share(a: np.ndarray, b: np.ndarray) -> float:
    return len(set(a[:3].tolist()) & set(b[:3].tolist())) / 3


def doc_precision_at_3(order: np.ndarray, docs: list[str], labels: list[int]) -> float:
    """P@3 over distinct documents in ``order`` (a document counts once, at its best candidate)."""
    seen: list[int] = []
    for i in order:
        if docs[i] not in [docs[j] for j in seen]:
            seen.append(int(i))
        if len(seen) == 3:
            break
    return sum(labels[i] > 0 for i in seen) / 3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--teacher", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--configs", nargs="+", default=["L2:128"])
    p.add_argument("--teacher-max-length", type=int, default=256)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--questions-per-step", type=int, default=16)
    p.add_argument("--mse-weight", type=float, default=0.1)
    p.add_argument("--time-budget", type=float, default=90.0, help="seconds of training per student at most")
    p.add_argument("--max-groups", type=int, default=0, help="smoke runs: use only this many questions")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)

    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    args.out.mkdir(parents=True, exist_ok=True)
    data = json.loads(gzip.open(args.data, "rt", encoding="utf-8").read())
    passages, groups = data["passages"], data["groups"]
    if args.max_groups:
        groups = groups[: args.max_groups // 2] + [g for g in groups if g["val"]][: args.max_groups // 2]
    train = [g for g in groups if not g["val"]]
    val = [g for g in groups if g["val"]]
    k = len(groups[0]["cands"])
    if any(len(g["cands"]) != k for g in groups):
        raise SystemExit("every question needs the same number of candidates")
    _log(f"{device}: {len(train)} training and {len(val)} validation questions x {k} candidates")

    tokenizer = AutoTokenizer.from_pretrained(str(args.teacher))
    teacher = AutoModelForSequenceClassification.from_pretrained(str(args.teacher)).float().to(device).eval()
    n_layers = teacher.config.num_hidden_layers
    encoded: dict[int, dict[str, torch.Tensor]] = {}

    def encode_all(max_length: int) -> dict[str, torch.Tensor]:
        if max_length not in encoded:
            qs = [g["question"] for g in groups for _ in g["cands"]]
            ps = [passages[c] for g in groups for c in g["cands"]]
            enc = tokenizer(
                qs, ps, truncation="longest_first", max_length=max_length, padding="max_length", return_tensors="pt"
            )
            encoded[max_length] = {name: t.to(device) for name, t in enc.items()}
        return encoded[max_length]

    def score(model, max_length: int, rows: list[int], batch: int = 2048, bf16: bool = True) -> torch.Tensor:
        """Logits of the pairs ``rows`` (bf16 autocast on the GPU unless ``bf16=False``, as the teacher's targets)."""
        enc = encode_all(max_length)
        out = []
        for i in range(0, len(rows), batch):
            idx = torch.as_tensor(rows[i : i + batch], device=device)
            inputs = {name: t[idx] for name, t in enc.items()}
            width = int(inputs["attention_mask"].sum(1).max())
            inputs = {name: t[:, :width] for name, t in inputs.items()}
            with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16 and device == "cuda"):
                out.append(model(**inputs).logits[:, 0].float())
        return torch.cat(out)

    index = {id(g): gi for gi, g in enumerate(groups)}
    rows_of = lambda gs: [index[id(g)] * k + j for g in gs for j in range(k)]  # noqa: E731

    def score_all(model, max_length: int, **kw) -> torch.Tensor:
        """Every question's candidates, one row per question."""
        return score(model, max_length, rows_of(groups), **kw).view(len(groups), k)

    t0 = time.time()
    with torch.no_grad():
        target = score_all(teacher, args.teacher_max_length, batch=1024, bf16=False)
    _log(f"teacher: {len(groups) * k} pairs scored in {time.time() - t0:.1f} s")
    teacher_np = target.cpu().numpy()

    def evaluate(student_scores: np.ndarray) -> dict[str, float]:
        alone, fused, p3, p3_teacher = [], [], [], []
        for g in val:
            gi = index[id(g)]
            s, t = student_scores[gi], teacher_np[gi]
            alone.append(top3_share(np.argsort(-s, kind="stable"), np.argsort(-t, kind="stable")))
            fs, ft = rrf_order(s), rrf_order(t)
            fused.append(top3_share(fs, ft))
            if any(label > 0 for label in g["labels"]):
                p3.append(doc_precision_at_3(fs, g["docs"], g["labels"]))
                p3_teacher.append(doc_precision_at_3(ft, g["docs"], g["labels"]))
        rows = [index[id(g)] for g in val]
        mse = float(np.mean((student_scores[rows] - teacher_np[rows]) ** 2))
        return {
            "top3_alone": round(float(np.mean(alone)), 4),
            "top3_fused": round(float(np.mean(fused)), 4),
            "fused_p3": round(float(np.mean(p3)), 4) if p3 else None,
            "teacher_fused_p3": round(float(np.mean(p3_teacher)), 4) if p3_teacher else None,
            "judged": len(p3),
            "mse": round(mse, 4),
        }

    summary: dict = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "args": vars(args) | {"data": str(args.data), "teacher": str(args.teacher), "out": str(args.out)},
        "students": {},
    }
    with torch.no_grad():
        for ml in sorted({parse_config(c)["max_length"] for c in args.configs}):
            truncated = score_all(teacher, ml).cpu().numpy()
            summary[f"teacher_at_{ml}"] = evaluate(truncated)
            _log(f"teacher at {ml} pieces: {summary[f'teacher_at_{ml}']}")

    for spec in args.configs:
        cfg = parse_config(spec)
        keep = chosen_layers(n_layers, cfg["layers"], cfg["spread"])
        student = copy.deepcopy(teacher)
        student.bert.encoder.layer = torch.nn.ModuleList([student.bert.encoder.layer[i] for i in keep])
        student.config.num_hidden_layers = len(keep)
        student.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        student.train()
        params = [q for q in student.parameters() if q.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=cfg["lr"], weight_decay=0.01)
        steps_per_epoch = math.ceil(len(train) / args.questions_per_step)
        total = steps_per_epoch * args.epochs
        warmup = max(1, total // 10)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s, w=warmup, n=total: min((s + 1) / w, max(0.0, (n - s) / max(1, n - w)))
        )
        rng = random.Random(args.seed)
        history, best, best_state, start = [], -1.0, None, time.time()
        with torch.no_grad():
            student.eval()
            before = score_all(student, cfg["max_length"]).cpu().numpy()
            history.append({"epoch": 0, **evaluate(before)})
            student.train()
        _log(f"{spec} layers {keep}: before training {history[-1]}")
        stopped = False
        for epoch in range(1, args.epochs + 1):
            order = list(train)
            rng.shuffle(order)
            losses = []
            for s in range(steps_per_epoch):
                chunk = order[s * args.questions_per_step : (s + 1) * args.questions_per_step]
                logits = score(student, cfg["max_length"], rows_of(chunk), batch=10**9).view(len(chunk), k)
                want = target[[index[id(g)] for g in chunk]]
                kl = torch.nn.functional.kl_div(
                    torch.log_softmax(logits, dim=1),
                    torch.log_softmax(want, dim=1),
                    reduction="batchmean",
                    log_target=True,
                )
                loss = kl + args.mse_weight * torch.nn.functional.mse_loss(logits, want)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
                losses.append(loss.item())
            with torch.no_grad():
                student.eval()
                scores = score_all(student, cfg["max_length"]).cpu().numpy()
                student.train()
            history.append(
                {
                    "epoch": epoch,
                    "train_loss": round(float(np.mean(losses)), 4),
                    **evaluate(scores),
                    "seconds": round(time.time() - start, 1),
                }
            )
            _log(f"{spec}: {history[-1]}")
            if history[-1]["top3_fused"] > best:
                best = history[-1]["top3_fused"]
                best_state = {
                    name: t.detach().to(torch.float16).cpu().contiguous()
                    for name, t in student.state_dict().items()
                    if "word_embeddings" not in name
                }
            if time.time() - start > args.time_budget:
                stopped = True
                break
        save_file(best_state, str(args.out / f"{cfg['name']}.safetensors"), metadata={"layers": json.dumps(keep)})
        summary["students"][cfg["name"]] = {
            **cfg,
            "teacher_layers": keep,
            "history": history,
            "stopped_by_budget": stopped,
            "best_top3_fused": best,
        }
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", "utf-8")
        del student, optimizer
        if device == "cuda":
            torch.cuda.empty_cache()
    summary["seconds"] = round(time.time() - t0, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", "utf-8")
    _log(f"done in {summary['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
