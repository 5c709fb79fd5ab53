"""Pack the e5 cross-encoder's training run for another machine (a GPU): the mined examples, the validation
items and the untrained base, all in one folder that ``chatbot/training/reranker_gpu.py`` reads with torch and
transformers only (`chatbot train reranker -- --base e5 ... --export DIR`).

``examples.json.gz``: a table of unique texts and, per example, the indices of its question, positive and hard
negatives; ``validation.json.gz``: per validation question its candidates (indices), their documents, the
graded gains and the bi-encoder cosines (the first stage's order). ``base/``: the e5 base's config, tokenizer
and weights; the word embeddings travel as int8 with one float16 scale per row (``word_int8`` /
``word_scale``; e5's build is itself dequantised from 4-bit weights, the round trip moves a row by < 0.5% of
its largest value) and the transformer layers as float16, so a 6-layer base fits a 40 MB carry and a
4-layer run on the device keeps the first 4 of them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from chatbot.training.reranker_examples import Example, ValItem


class _Texts:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def table(self) -> list[str]:
        return list(self.index)


def write_examples(path: Path, examples: list[Example]) -> int:
    """``examples.json.gz``; returns the number of unique texts."""
    texts = _Texts()
    rows = [
        {"g": e.group, "q": texts(e.question), "p": texts(e.positive), "n": [texts(t) for t in e.negatives]}
        for e in examples
    ]
    _dump(path, {"texts": texts.table(), "examples": rows})
    return len(texts.index)


def write_validation(path: Path, items: list[ValItem]) -> None:
    """``validation.json.gz``: the held-out questions' candidates, documents, gains and first-stage cosines."""
    texts = _Texts()
    rows = [
        {
            "g": it.group,
            "q": texts(it.question),
            "c": [texts(p) for p in it.passages],
            "docs": list(it.docs),
            "gains": dict(it.gains),
            "dense": [round(float(x), 6) for x in it.dense],
        }
        for it in items
    ]
    _dump(path, {"texts": texts.table(), "items": rows})


def read_json_gz(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _dump(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
        json.dump(obj, fh, ensure_ascii=False)


def quantise_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: (int8 values, float16 scales) with ``values * scale`` ~ ``matrix``."""
    scale = np.abs(matrix).max(axis=1, keepdims=True).astype(np.float32) / 127.0
    scale[scale == 0] = 1.0
    scale16 = scale.astype(np.float16)
    values = np.clip(np.rint(matrix / scale16.astype(np.float32)), -127, 127).astype(np.int8)
    return values, scale16


def pack_base(base_dir: Path, out: Path) -> dict[str, int]:
    """Copy the base's config and tokenizer files to ``out`` and write ``weights.safetensors``: word embeddings
    as int8 rows + float16 scales, everything else float16. Returns {file: bytes}."""
    import shutil

    from safetensors.numpy import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(base_dir.iterdir()):
        if path.is_file() and path.suffix == ".json":
            shutil.copyfile(path, out / path.name)
    weights = load_file(str(base_dir / "model.safetensors"))
    packed: dict[str, np.ndarray] = {}
    for key, value in weights.items():
        if key.endswith("word_embeddings.weight"):
            packed["word_int8"], packed["word_scale"] = quantise_rows(value.astype(np.float32))
        else:
            packed[key] = value.astype(np.float16)
    save_file(packed, str(out / "weights.safetensors"))
    return {p.name: p.stat().st_size for p in sorted(out.iterdir())}


def unpack_model(packed: Path, config: dict, base_dir: Path, out: Path) -> Path:
    """A trained model from ``reranker_gpu.py`` (``packed``: its L<n>.safetensors, ``config``: the config in its
    L<n>.json) as a transformers folder under ``out``: float32 weights, the base's tokenizer files; ready for
    ``chatbot train export-onnx``."""
    import shutil

    from safetensors.numpy import load_file, save_file

    weights = load_file(str(packed))
    state = {k: v.astype(np.float32) for k, v in weights.items() if k not in ("word_int8", "word_scale")}
    word = weights["word_int8"].astype(np.float32) * weights["word_scale"].astype(np.float32)
    state["bert.embeddings.word_embeddings.weight"] = word
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = dict(config, architectures=["BertForSequenceClassification"])
    cfg.pop("torch_dtype", None)
    cfg.pop("dtype", None)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (base_dir / name).is_file():
            shutil.copyfile(base_dir / name, out / name)
    return out
