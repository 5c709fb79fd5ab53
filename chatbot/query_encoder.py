"""The tuned QUERY encoder (``embedding.query_encoder``): e5 whose top layers were fine-tuned to read questions
against the unchanged passage index (``chatbot/training/query_encoder.py``). Passages, indexes and every cosine
the relevance gate and the red-flag screen read stay raw e5's.

A shipped encoder is a folder with ``layers.safetensors`` (the tuned layers only, float16, under their BertModel
names) and ``encoder.json`` (its sha256 and the sha256 of the e5 build's weights it was tuned from). On first
use the full model (the local e5 build with those layers swapped in) is exported to int8 ONNX once into
``<cache>/models/query-encoder-<sha12>`` (like `chatbot models build-e5`; offline, about 30 s).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.onnx_files import file_sha256

BASE_EMBEDDER = "multilingual-e5-small-onnx-int8"
LAYERS_FILE, MANIFEST = "layers.safetensors", "encoder.json"


class QueryEncoderError(ValueError):
    """A query encoder folder that is missing, corrupt, or tuned from another e5 build."""


def _base_weights_sha(build_dir: Path) -> str:
    info = json.loads((build_dir / "build.json").read_text(encoding="utf-8"))
    return info["files"]["hf/model.safetensors"]["sha256"]


def save_encoder(
    folder: Path, layers: dict[str, np.ndarray], metrics: dict[str, Any] | None = None, base_sha: str | None = None
) -> Path:
    """Write ``layers.safetensors`` (float16) + ``encoder.json`` and, when given, ``metrics.json``. ``base_sha``:
    the sha256 of the e5 build's weights the layers were tuned from (default: the local build's)."""
    from safetensors.numpy import save_file

    from chatbot.e5_build import default_out_dir

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: np.ascontiguousarray(v, dtype=np.float16) for k, v in sorted(layers.items())}, str(folder / LAYERS_FILE)
    )
    manifest = {
        "base_embedder": BASE_EMBEDDER,
        "base_weights_sha256": base_sha or _base_weights_sha(default_out_dir()),
        "layers": sorted({int(k.split(".")[2]) for k in layers}),
        "sha256": file_sha256(folder / LAYERS_FILE),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if metrics is not None:
        (folder / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    return folder


def read_manifest(folder: Path) -> dict:
    """``encoder.json`` of ``folder`` with the weights' sha256 checked; QueryEncoderError says what is wrong."""
    folder = Path(folder)
    for name in (MANIFEST, LAYERS_FILE):
        if not (folder / name).is_file():
            raise QueryEncoderError(f"query encoder file {folder / name} is missing (embedding.query_encoder)")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        expected = manifest["sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise QueryEncoderError(f"{folder / MANIFEST} is not a query encoder manifest: {exc}") from exc
    if file_sha256(folder / LAYERS_FILE) != expected:
        raise QueryEncoderError(f"{folder / LAYERS_FILE} is corrupt: its sha256 differs from {MANIFEST}")
    return manifest


def ensure_onnx(folder: Path, threads: int = 1) -> Path:
    """The int8 ONNX of the tuned encoder in the cache, exported on first use; returns its file."""
    from safetensors.numpy import load_file, save_file

    from chatbot.e5_build import HF_DIR, build_lock, default_out_dir, ensure_e5_built
    from chatbot.e5_onnx_export import export_onnx

    manifest = read_manifest(folder)
    base = ensure_e5_built(None, deep=("hf/model.safetensors", "hf/tokenizer.json"))
    if _base_weights_sha(base) != manifest["base_weights_sha256"]:
        raise QueryEncoderError(
            f"query encoder {folder} was tuned from another e5 build (weights sha256 "
            f"{manifest['base_weights_sha256'][:12]}…); rebuild e5 with `chatbot models build-e5` or retrain it"
        )
    out = default_out_dir().parent / f"query-encoder-{manifest['sha256'][:12]}"
    onnx_file = out / "model_qint8.onnx"
    if onnx_file.is_file():
        return onnx_file
    with build_lock(out):
        if onnx_file.is_file():
            return onnx_file
        print(f"building the tuned query encoder into {out}: once, offline, 1-3 min", file=sys.stderr, flush=True)
        work = out.parent / f".{out.name}.work"
        shutil.rmtree(work, ignore_errors=True)
        hf = work / "hf"
        hf.mkdir(parents=True)
        for path in (base / HF_DIR).iterdir():
            if path.is_file() and path.name != "model.safetensors":
                shutil.copyfile(path, hf / path.name)
        state = load_file(str(base / HF_DIR / "model.safetensors"))
        tuned = load_file(str(Path(folder) / LAYERS_FILE))
        unknown = sorted(set(tuned) - set(state))
        if unknown:
            raise QueryEncoderError(f"{folder / LAYERS_FILE} holds tensors e5 has not: {unknown[:3]}")
        state.update({k: v.astype(np.float32) for k, v in tuned.items()})
        save_file(state, str(hf / "model.safetensors"), metadata={"format": "pt"})
        export_onnx(hf, work / "model_qint8.onnx", threads)
        out.mkdir(parents=True, exist_ok=True)
        (work / "model_qint8.onnx").replace(onnx_file)
        shutil.rmtree(work, ignore_errors=True)
    return onnx_file


@lru_cache(maxsize=2)
def _windows(folder: str, threads: int, int8_matmul: str) -> Any:
    from chatbot.e5_build import TOKENIZER_FILE, default_out_dir
    from chatbot.e5_runtime import WindowedE5, onnx_forward
    from chatbot.onnx_dequantize import session_file

    onnx_file = session_file(ensure_onnx(Path(folder), threads), int8_matmul)
    return WindowedE5(default_out_dir() / TOKENIZER_FILE, onnx_forward(onnx_file, threads))


class TunedQueryEmbedder:
    """Question vectors from ``encode`` (the tuned encoder: texts -> unit rows), passages from ``raw`` (the base
    e5-onnx, whose ``name`` pins the index). ``raw`` + ``adapt`` is the protocol ``DenseRetriever`` reads to keep
    raw e5 cosines for the gate. ``languages``: only questions ``chatbot.language`` reads in one of these use it
    (None: all)."""

    def __init__(
        self, raw: Any, encode: Callable[[Sequence[str]], np.ndarray], languages: Sequence[str] | None = None
    ) -> None:
        if getattr(raw, "name", None) != BASE_EMBEDDER:
            raise QueryEncoderError(
                f"the query encoder reads questions for the {BASE_EMBEDDER} index, not {getattr(raw, 'name', raw)!r}"
            )
        from chatbot.vector_cache import VectorCache

        self.raw, self.name, self.dim = raw, raw.name, raw.dim
        self.languages = None if languages is None else tuple(languages)
        self._tuned = VectorCache(encode)

    def _use(self, texts: Sequence[str]) -> list[bool]:
        if self.languages is None:
            return [True] * len(texts)
        from chatbot.language import question_language

        return [question_language(t) in self.languages for t in texts]

    def adapt(self, raw_vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """Retrieval vectors of ``texts``: the tuned encoder's, or the raw row for a language it skips."""
        out = np.array(raw_vectors, dtype=np.float32, copy=True)
        use = self._use(texts)
        picked = [t for t, u in zip(texts, use, strict=True) if u]
        if picked:
            out[np.asarray(use)] = np.asarray(self._tuned.embed(picked), dtype=np.float32)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.adapt(self.raw.embed_queries(texts), texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.raw.embed_passages(texts)


def effective_setting(setting: str, e5_onnx: bool) -> str:
    """``embedding.query_encoder`` as it applies to the embedder: "auto" is "shipped" over e5-onnx (``e5_onnx``: the
    index the encoder was tuned for) and "none" over any other embedder; other values unchanged."""
    setting = (setting or "").strip()
    if setting.lower() == "auto":
        return "shipped" if e5_onnx else "none"
    return setting


def setting_over(setting: str, embedder: Any) -> str:
    """``embedding.query_encoder`` as it applies over ``embedder``, the embedder retrieval actually runs with: "auto"
    is "shipped" when its ``name`` is BASE_EMBEDDER (the index the encoder was tuned for: not a trimmed-vocabulary or
    torch e5 build, a test's or a plug-in's embedder) and "none" otherwise. The pipeline's question embedder and the
    relevance gate's key both decide through this, so the gate always matches the retrieval it judges."""
    return effective_setting(setting, getattr(embedder, "name", None) == BASE_EMBEDDER)


def encoder_folder(setting: str, root: Path) -> Path | None:
    """The encoder folder ``embedding.query_encoder`` names ("shipped" or a folder, relative to ``root``), None
    for "none"/empty."""
    setting = (setting or "").strip()
    if setting.lower() in ("", "none"):
        return None
    if setting.lower() == "shipped":
        from chatbot.resources import shipped_model

        return shipped_model("query_encoder")
    return Path(setting) if Path(setting).is_absolute() else root / setting


@lru_cache(maxsize=8)
def _encoder_sha(folder: str) -> str:
    try:
        return str(json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise QueryEncoderError(f"query encoder manifest {Path(folder) / MANIFEST} cannot be read: {exc}") from exc


def encoder_tag(setting: str, root: Path, languages: Sequence[str] | None = None) -> str | None:
    """What the relevance gate is fitted for: "query-encoder-<sha12 of its weights>" plus "[it]" when only some
    languages' questions use it (None: the encoder is off). A retrained encoder has another tag, so a gate fitted
    on the old one's scores is never used with it (``chatbot.stages.relevance.gate_key``)."""
    folder = encoder_folder(setting, root)
    if folder is None:
        return None
    tag = f"query-encoder-{_encoder_sha(str(folder.resolve()))[:12]}"
    langs = sorted(set(languages or ()))
    return tag if not langs or {"en", "it"} <= set(langs) else f"{tag}[{','.join(langs)}]"


def query_encoder_embedder(
    embedder: Any,
    setting: str,
    root: Path,
    threads: int = 1,
    languages: Sequence[str] | None = None,
    int8_matmul: str = "int8",
) -> Any | None:
    """A TunedQueryEmbedder over ``embedder`` for ``setting`` ("shipped" or a folder), None for "none"/empty."""
    folder = encoder_folder(setting, root)
    return None if folder is None else load_tuned_embedder(embedder, folder, threads, languages, int8_matmul)


def load_tuned_embedder(
    raw: Any, folder: Path, threads: int = 1, languages: Sequence[str] | None = None, int8_matmul: str = "int8"
) -> Any:
    """The TunedQueryEmbedder of the encoder in ``folder`` over ``raw`` (its ONNX built on first use; its fp32 copy
    where ``int8_matmul``, runtime.int8_matmul, says so)."""
    from chatbot.e5_hf import PROMPTS

    if getattr(raw, "name", None) != BASE_EMBEDDER:  # before any build
        return TunedQueryEmbedder(raw, lambda texts: np.zeros((0, 0)), languages)
    windows = _windows(str(Path(folder).resolve()), threads, int8_matmul)
    max_chars = getattr(raw, "max_chars", 1200)
    return TunedQueryEmbedder(
        raw, lambda texts: windows.encode([PROMPTS["query"] + t[:max_chars] for t in texts]), languages
    )
