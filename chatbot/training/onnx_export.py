"""Export a CrossEncoder directory to ONNX with int8 weights, next to its own weights.

`chatbot train export-onnx [DIR]` (default models/reranker) writes ``DIR/onnx/model_qint8.onnx``:
``torch.onnx.export`` (TorchScript exporter, offline) of the fp32 model, then onnxruntime's
``quantize_dynamic`` (int8 weights with per-channel scales; activations quantised per batch at run time).
The file records the sha256 of the weights it came from and the score activation, so
``CrossEncoderReranker`` uses it only with those weights (a replaced model.safetensors makes it stale:
the loader then falls back to torch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from chatbot.onnx_files import ONNX_FILE, WEIGHT_FILES, file_sha256, set_metadata, weights_file

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
__all__ = ["ONNX_FILE", "export_onnx", "file_sha256", "weights_file"]


def activation_of(model_dir: Path) -> str:
    """'sigmoid' or 'identity': what sentence-transformers applies to the logit (its default for 1 label:
    sigmoid). Any other activation is not supported by the ONNX runner."""
    path = model_dir / "config_sentence_transformers.json"
    name = ""
    if path.is_file():
        name = str(json.loads(path.read_text(encoding="utf-8")).get("activation_fn") or "")
    if not name or name.endswith("Sigmoid"):
        return "sigmoid"
    if name.endswith("Identity"):
        return "identity"
    raise ValueError(f"{model_dir}: activation {name!r} is not supported by the ONNX runner (sigmoid or identity)")


def export_onnx(model_dir: Path, threads: int = 1, log=print) -> Path:
    """Write ``model_dir/onnx/model_qint8.onnx``; returns its path."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model_dir = Path(model_dir)
    weights = weights_file(model_dir)
    if weights is None:
        raise FileNotFoundError(f"{model_dir} has no {' or '.join(WEIGHT_FILES)} to export")
    activation = activation_of(model_dir)
    torch.set_num_threads(threads)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    if model.config.num_labels != 1:
        raise ValueError(f"{model_dir}: {model.config.num_labels} labels; a reranker has 1")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    sample = tokenizer(["a question", "another one"], ["a passage", "x"], padding=True, return_tensors="pt")
    out = model_dir / ONNX_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.onnx"
        dynamic = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
        with torch.no_grad():
            torch.onnx.export(
                model,
                tuple(sample[name] for name in INPUT_NAMES),
                str(fp32),
                input_names=list(INPUT_NAMES),
                output_names=["logits"],
                dynamic_axes={**dynamic, "logits": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
        quantized = Path(tmp) / "model_qint8.onnx"
        # per-channel weight scales: closer to the fp32 scores than one scale per tensor (measured, see
        # evaluation/results/reranker-speed.md), same size and speed
        quantize_dynamic(str(fp32), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
        proto = onnx.load(str(quantized))
        meta = {
            "source_weights": weights.name,
            "source_sha256": file_sha256(weights),
            "activation": activation,
            "quantization": "onnxruntime quantize_dynamic: int8 weights per channel, int8 activations per batch",
        }
        set_metadata(proto, meta)
        onnx.save(proto, str(out))
    out.chmod(0o644)
    log(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - start:.1f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="chatbot train export-onnx", description="Export a CrossEncoder directory to int8 ONNX (in DIR/onnx)."
    )
    from chatbot.settings import SHIPPED_RERANKER

    parser.add_argument("model_dir", nargs="?", type=Path, default=SHIPPED_RERANKER)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not (args.model_dir / "config.json").is_file():
        print(f"error: {args.model_dir} is not a CrossEncoder directory (no config.json)", file=sys.stderr)
        return 2
    export_onnx(args.model_dir, args.threads, log=lambda m: print(m, file=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
