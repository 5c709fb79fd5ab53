"""Train the e5 cross-encoder on a GPU from an exported run (chatbot/training/reranker_export.py).

Self-contained: torch, transformers, safetensors and the standard library only (the GPU machine has none of our
other dependencies), so it is copied next to the export and run there:

    python reranker_gpu.py --data EXPORT_DIR --out OUT_DIR --configs L4:128 L6:128 L4:64 L6:64 --epochs 3

Each configuration (layers:max_length) starts from the same packed base (the first L layers of it), trains
with the listwise loss of ``chatbot train reranker`` (softmax over one positive, 3 mined hard negatives and one
in-batch negative, encoder lr / head lr, linear warm-up and decay, bf16 autocast) and is scored on the held-out
validation questions after every epoch: document-level P@1, P@3, MRR@10 and nDCG@10 per group, for the model's
order alone and fused with the first stage's order (reciprocal rank fusion, k = 60, as the product's rerank
stage). The best epoch of each layer count (by the mean fused nDCG@10 over the groups named in --select) is
written as OUT/L<layers>.safetensors (word embeddings int8 per row, the rest float16, like the export), the
choice under "kept" in OUT/validation.json with every validation number. ``--max-steps`` cuts every epoch
short (a CPU smoke run of the exact script).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
import time
from pathlib import Path

import torch

RRF_K = 60


def log(message: str) -> None:
    print(message, flush=True)


def read_json_gz(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


# ------------------------------------------------------------------------------------------- model


def load_model(base: Path, layers: int, seed: int):
    """BertForSequenceClassification with the base's first ``layers`` layers (float32 weights)."""
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForSequenceClassification

    config = json.loads((base / "config.json").read_text(encoding="utf-8"))
    config.update(num_hidden_layers=layers)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(**config))
    packed = load_file(str(base / "weights.safetensors"))
    state = {}
    for key, value in packed.items():
        if key in ("word_int8", "word_scale"):
            continue
        if ".encoder.layer." in key and int(key.split(".encoder.layer.")[1].split(".")[0]) >= layers:
            continue
        state[key] = value.float()
    word = packed["word_int8"].float() * packed["word_scale"].float()
    state["bert.embeddings.word_embeddings.weight"] = word
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any("position_ids" not in k for k in missing):
        raise RuntimeError(f"packed base does not fit: missing {missing}, unexpected {unexpected}")
    return model


def save_packed(model, path: Path) -> int:
    """Word embeddings int8 per row + float16 scales, everything else float16 (the export's format)."""
    from safetensors.torch import save_file

    out = {}
    for key, value in model.state_dict().items():
        value = value.detach().float().cpu()
        if key.endswith("word_embeddings.weight"):
            scale = value.abs().amax(dim=1, keepdim=True) / 127.0
            scale[scale == 0] = 1.0
            scale16 = scale.half()
            out["word_int8"] = torch.clamp(torch.round(value / scale16.float()), -127, 127).to(torch.int8)
            out["word_scale"] = scale16
        elif "position_ids" not in key:
            out[key] = value.half().contiguous()
    save_file(out, str(path))
    return path.stat().st_size


# ------------------------------------------------------------------------------------------ metrics


def doc_metrics(scores: list[float], docs: list[str], gains: dict[str, int], k: int = 10) -> dict[str, float]:
    """P@1, P@3, MRR@k and nDCG@k over documents (each one's best segment), as reranker_examples.doc_metrics."""
    ranked: list[str] = []
    for i in sorted(range(len(scores)), key=lambda i: -scores[i]):
        if docs[i] not in ranked:
            ranked.append(docs[i])
    top = ranked[:k]
    mrr = next((1.0 / (r + 1) for r, d in enumerate(top) if gains.get(d, 0) >= 1), 0.0)
    dcg = sum((2 ** gains.get(d, 0) - 1) / math.log2(r + 2) for r, d in enumerate(top))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return {
        "p@1": float(gains.get(ranked[0], 0) >= 1),
        "p@3": sum(gains.get(d, 0) >= 1 for d in ranked[:3]) / 3.0,
        "mrr@10": mrr,
        "ndcg@10": dcg / idcg if idcg else 0.0,
    }


def rrf(model_scores: list[float], dense: list[float], k: int = RRF_K) -> list[float]:
    """1/(k + first-stage rank) + 1/(k + model rank), ranks 1-based, ties in first-stage order."""
    first = sorted(range(len(dense)), key=lambda i: -dense[i])
    pos = {i: r + 1 for r, i in enumerate(first)}
    ordered = sorted(first, key=lambda i: -model_scores[i])  # stable: ties keep the first stage's order
    by_model = {i: r + 1 for r, i in enumerate(ordered)}
    return [1.0 / (k + pos[i]) + 1.0 / (k + by_model[i]) for i in range(len(dense))]


def summarise(items: list[dict], all_scores: list[list[float]]) -> dict[str, float]:
    groups: dict[str, list[dict[str, float]]] = {}
    for item, scores in zip(items, all_scores, strict=True):
        groups.setdefault(item["g"], []).append(doc_metrics(scores, item["docs"], item["gains"]))
    out = {}
    for group, rows in sorted(groups.items()):
        out[f"{group}_n"] = len(rows)
        for metric in rows[0]:
            out[f"{group}_{metric}"] = round(sum(r[metric] for r in rows) / len(rows), 4)
    return out


# ----------------------------------------------------------------------------------------- training


class Batcher:
    def __init__(self, tokenizer, max_length: int, device: str) -> None:
        self.tokenizer, self.max_length, self.device = tokenizer, max_length, device

    def __call__(self, questions: list[str], passages: list[str]) -> dict[str, torch.Tensor]:
        enc = self.tokenizer(
            questions,
            passages,
            padding=True,
            truncation="longest_first",  # as the product's ONNX runner (chatbot/stages/rerank.py)
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {k: v.to(self.device) for k, v in enc.items()}


@torch.no_grad()
def score_items(model, batcher: Batcher, texts: list[str], items: list[dict], batch: int, amp: bool) -> list:
    model.eval()
    pairs = [(texts[it["q"]], texts[c]) for it in items for c in it["c"]]
    flat: list[float] = []
    for start in range(0, len(pairs), batch):
        chunk = pairs[start : start + batch]
        with torch.autocast(batcher.device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
            logits = model(**batcher([q for q, _ in chunk], [p for _, p in chunk])).logits
        flat.extend(logits.float().view(-1).tolist())
    out, start = [], 0
    for it in items:
        out.append(flat[start : start + len(it["c"])])
        start += len(it["c"])
    model.train()
    return out


def evaluate(model, batcher, val_texts, items, batch, amp) -> dict[str, dict[str, float]]:
    scores = score_items(model, batcher, val_texts, items, batch, amp)
    fused = [rrf(s, it["dense"]) for s, it in zip(scores, items, strict=True)]
    return {"alone": summarise(items, scores), "fused": summarise(items, fused)}


def selection_score(metrics: dict[str, dict[str, float]], groups: list[str]) -> float:
    return sum(metrics["fused"][f"{g}_ndcg@10"] for g in groups) / len(groups)


def train_one(args, layers: int, max_length: int, lr: float, data: dict, val: dict, tokenizer, device: str) -> dict:
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    model = load_model(args.data / "base", layers, args.seed).to(device)
    model.train()
    texts, examples = data["texts"], data["examples"]
    batcher = Batcher(tokenizer, max_length, device)
    amp = device.startswith("cuda") or args.cpu_bf16
    head = [p for n, p in model.named_parameters() if n.startswith(("bert.pooler.", "classifier."))]
    body = [p for n, p in model.named_parameters() if not n.startswith(("bert.pooler.", "classifier."))]
    optim = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": args.head_lr}], weight_decay=0.01)
    steps_per_epoch = math.ceil(len(examples) / args.groups)
    if args.max_steps:
        steps_per_epoch = min(steps_per_epoch, args.max_steps)
    total = steps_per_epoch * args.epochs
    warmup = max(1, int(0.1 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (total - s) / max(1, total - warmup))
    )
    name = f"L{layers}-{max_length}" + ("" if lr == args.lr else f"-lr{lr:g}")
    history = []
    best = {"score": -1.0}
    t0 = time.time()
    rng = random.Random(args.seed)
    for epoch in range(1, args.epochs + 1):
        order = list(range(len(examples)))
        rng.shuffle(order)
        losses = []
        for step in range(steps_per_epoch):
            idx = order[step * args.groups : (step + 1) * args.groups]
            if len(idx) < 2:
                continue
            questions, passages = [], []
            for j, i in enumerate(idx):
                e = examples[i]
                other = examples[idx[(j + 1) % len(idx)]]  # in-batch negative: the next example's positive
                group = [e["p"], *e["n"], other["p"]]
                questions += [texts[e["q"]]] * len(group)
                passages += [texts[t] for t in group]
            with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
                logits = model(**batcher(questions, passages)).logits.float().view(len(idx), -1)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(idx), dtype=torch.long, device=device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            optim.zero_grad(set_to_none=True)
            losses.append(loss.item())
        metrics = evaluate(model, batcher, val["texts"], val["items"], args.eval_batch, amp)
        score = selection_score(metrics, args.select)
        row = {
            "config": name,
            "epoch": epoch,
            "steps": steps_per_epoch * epoch,
            "loss_mean": round(sum(losses) / max(1, len(losses)), 4),
            "seconds": round(time.time() - t0, 1),
            "select_fused_ndcg@10": round(score, 4),
            **metrics,
        }
        history.append(row)
        log(json.dumps(row))
        if score > best["score"]:
            best = {
                "score": score,
                "epoch": epoch,
                "state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            }
    model.load_state_dict(best.pop("state"))
    return {
        "name": name,
        "layers": layers,
        "max_length": max_length,
        "lr": lr,
        "history": history,
        "best": best,
        "model": model.cpu(),
    }


def _count(seen: dict[str, int], item: dict) -> bool:
    seen[item["g"]] += 1
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the export folder (examples, validation, base/)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--configs", nargs="+", default=["L4:128", "L6:128", "L4:64", "L6:64"], help="layers:max_length[:lr]"
    )
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--groups", type=int, default=32, help="questions per step (each a group of 5 pairs)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--eval-batch", type=int, default=512)
    p.add_argument("--max-steps", type=int, default=0, help="cut every epoch to this many steps (smoke run)")
    p.add_argument("--max-val", type=int, default=0, help="validation questions per group, at most (smoke run)")
    p.add_argument("--time-budget", type=float, default=0, help="start no configuration after this many seconds")
    p.add_argument("--select", nargs="+", default=["mediqa", "mediqa-it", "medquad"])
    p.add_argument("--cpu-bf16", action="store_true", help="bf16 autocast on CPU too")
    args = p.parse_args(argv)
    from transformers import PreTrainedTokenizerFast

    device = "cuda" if torch.cuda.is_available() else "cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    log(f"device {device} ({torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}), torch {torch.__version__}")
    tokenizer = PreTrainedTokenizerFast(  # as reranker_e5.build_base makes it (any transformers 5 reads this)
        tokenizer_file=str(args.data / "base" / "tokenizer.json"),
        bos_token="<s>",
        cls_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=512,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    data = read_json_gz(args.data / "examples.json.gz")
    val = read_json_gz(args.data / "validation.json.gz")
    if args.max_val:
        seen: dict[str, int] = {}
        val["items"] = [it for it in val["items"] if seen.setdefault(it["g"], 0) < args.max_val and _count(seen, it)]
    log(f"{len(data['examples'])} training examples, {len(val['items'])} validation questions")
    dense = {"alone": summarise(val["items"], [it["dense"] for it in val["items"]])}
    log(f"validation, first stage's order: {json.dumps(dense)}")
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "first_stage": dense["alone"], "runs": []}
    best_per_layers: dict[int, dict] = {}
    started = time.time()
    for spec in args.configs:
        if args.time_budget and time.time() - started > args.time_budget:
            log(f"time budget of {args.time_budget} s spent: {spec} and later configurations skipped")
            break
        parts = spec.lstrip("L").split(":")
        layers, max_length = int(parts[0]), int(parts[1])
        lr = float(parts[2]) if len(parts) > 2 else args.lr
        run = train_one(args, layers, max_length, lr, data, val, tokenizer, device)
        report["runs"].append({k: run[k] for k in ("name", "layers", "max_length", "lr", "history", "best")})
        if run["best"]["score"] > best_per_layers.get(layers, {"best": {"score": -1.0}})["best"]["score"]:
            best_per_layers[layers] = run
        (args.out / "validation.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        if device == "cuda":
            torch.cuda.empty_cache()
    report["kept"] = {}
    for layers, run in sorted(best_per_layers.items()):
        size = save_packed(run["model"], args.out / f"L{layers}.safetensors")
        best = run["best"]
        report["kept"][f"L{layers}"] = {"config": run["name"], "epoch": best["epoch"], "score": best["score"]}
        log(
            f"L{layers}: kept {run['name']} epoch {best['epoch']} "
            f"(fused nDCG@10 {best['score']:.4f}), {size / 1e6:.1f} MB"
        )
    (args.out / "validation.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
