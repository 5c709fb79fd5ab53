"""Where a model directory keeps its int8 ONNX export and the weights it was made from, the onnxruntime
session every ONNX model here runs in, and the metadata an export records (serving and training both use
these; the exports themselves are chatbot.training.onnx_export and chatbot.e5_onnx_export)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

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


def cpu_session(model_file: Path, threads: int) -> Any:
    """An onnxruntime CPU session of ``model_file`` with ``threads`` intra-op threads and no busy-waiting between
    ops: on a shared CPU spinning threads steal time from the other jobs. Which file (the int8 export or its fp32
    copy) is the caller's choice: chatbot.onnx_dequantize.session_file under runtime.int8_matmul."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])


def set_metadata(proto: Any, meta: dict[str, str]) -> Any:
    """Replace an ONNX model proto's metadata with ``meta`` (what the export was made from and how); returns it."""
    del proto.metadata_props[:]
    for key, value in meta.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    return proto
