"""Where a model directory keeps its int8 ONNX export and the weights it was made from (serving and training
both read these; the export itself is chatbot.training.onnx_export)."""

from __future__ import annotations

import hashlib
from pathlib import Path

ONNX_FILE = Path("onnx") / "model_qint8.onnx"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def weights_file(model_dir: Path) -> Path | None:
    """The torch weights of a CrossEncoder directory (what the ONNX file must have been made from)."""
    for name in WEIGHT_FILES:
        if (model_dir / name).is_file():
            return model_dir / name
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
