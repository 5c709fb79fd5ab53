"""Reranking stages: (question, top-50 hits) → best hits, one per document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from chatbot.file_digest import sha256_of
from chatbot.index import Hit
from chatbot.onnx_files import ONNX_FILE, cpu_session, weights_file
from corpus.model import Segment
from corpus.segmenter import embedding_text, passage_key


class Reranker(Protocol):
    name: str

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray: ...


def best_per_document(hits: Sequence[Hit], n: int | None = None) -> list[Hit]:
    """Keep each document's best-scoring segment, in score order, then the first ``n``. A segment with the text
    of a segment of an already kept document (the same passage published under two documents) is skipped, so
    every link shows a passage no earlier link holds; its document may still enter with another segment. A segment
    without text (never made by the segmenter) is nobody's copy."""
    keys = [passage_key(h.segment) for h in hits]
    of_document: dict[str, set[str]] = {}
    for h, key in zip(hits, keys, strict=True):
        of_document.setdefault(h.segment.doc_id, set()).add(key)
    seen: set[str] = set()
    shown: set[str] = set()
    out: list[Hit] = []
    for i in sorted(range(len(hits)), key=lambda i: -hits[i].score):
        hit = hits[i]
        if hit.segment.doc_id in seen or (keys[i] and keys[i] in shown):
            continue
        seen.add(hit.segment.doc_id)
        shown |= of_document[hit.segment.doc_id]
        out.append(hit)
        if n is not None and len(out) == n:
            break
    return out


def rerank(
    question: str,
    hits: Sequence[Hit],
    reranker: Reranker | None,
    n: int | None = 3,
    candidates: int | None = None,
    rrf_k: int | None = None,
    first_weight: float = 1.0,
) -> list[Hit]:
    """Rescore ``hits`` against the question; the best ``n`` of distinct documents (all if None).

    ``candidates``: only the first that many hits (the first stage's best) are rescored; documents found only
    further down follow them in first-stage order, with their first-stage score and no reranker score.
    ``rrf_k``: order the rescored hits by reciprocal rank fusion of their first-stage rank (their position in
    ``hits``) and their reranker rank, 1/(k + r1) + 1/(k + r2), instead of by the reranker score alone; the
    reranker's own score stays in ``detail`` under its name, the fused one under ``rrf``. ``first_weight``: the
    first-stage term's weight in that fusion, w/(k + r1) + 1/(k + r2) (1: plain RRF)."""
    if reranker is None or not hits:
        return best_per_document(hits, n)
    head, tail = (hits[:candidates], hits[candidates:]) if candidates else (hits, [])
    scores = np.asarray(reranker.score(question, head), dtype=np.float64)
    order = scores if rrf_k is None else rrf_scores(scores, rrf_k, first_weight)
    rescored = [
        Hit(h.segment, float(o), {**h.detail, reranker.name: float(s), **({} if rrf_k is None else {"rrf": float(o)})})
        for h, s, o in zip(head, scores, order, strict=True)
    ]
    ranked = best_per_document(rescored)
    seen = {h.segment.doc_id for h in ranked}
    shown = {passage_key(h.segment) for h in rescored if h.segment.doc_id in seen} - {""}
    ranked += best_per_document(
        [h for h in tail if h.segment.doc_id not in seen and passage_key(h.segment) not in shown]
    )
    return ranked if n is None else ranked[:n]


def rerank_other_language(
    question: str,
    hits: Sequence[Hit],
    reranker: Reranker,
    language: str,
    n: int | None = 3,
    candidates: int | None = None,
    rrf_k: int | None = None,
) -> list[Hit]:
    """``rerank`` for a model that reads only passages in another language than the question's ``language``
    (rerank.language_passages="other"): those of the first ``candidates`` hits are rescored (fused with their
    first-stage order by RRF when ``rrf_k``) and reordered among the positions they held; passages in the
    question's language keep their position and score. A moved hit takes the first-stage score of the position
    it lands on, so the first stage's order of positions, and of the languages, stays as it was."""
    head, tail = (list(hits[:candidates]), list(hits[candidates:])) if candidates else (list(hits), [])
    slots = [i for i, h in enumerate(head) if h.segment.language != language]
    if slots:
        moved = [head[i] for i in slots]
        scores = np.asarray(reranker.score(question, moved), dtype=np.float64)
        order = scores if rrf_k is None else rrf_scores(scores, rrf_k)
        slot_scores = [head[i].score for i in slots]
        for slot, score, j in zip(slots, slot_scores, np.argsort(-order, kind="stable"), strict=True):
            h = moved[j]
            head[slot] = Hit(h.segment, float(score), {**h.detail, reranker.name: float(scores[j])})
    return best_per_document(head + tail, n)


def rrf_scores(scores: np.ndarray, k: int, first_weight: float = 1.0) -> np.ndarray:
    """Reciprocal rank fusion of the given order (rank = position, 1-based) with the order of ``scores``
    (ties keep the given order): first_weight/(k + position) + 1/(k + score rank)."""
    position = np.arange(1, len(scores) + 1, dtype=np.float64)
    by_score = np.empty(len(scores), dtype=np.float64)
    by_score[np.argsort(-scores, kind="stable")] = position
    return first_weight / (k + position) + 1.0 / (k + by_score)


def _minmax(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    return np.zeros_like(values) if hi - lo < 1e-9 else (values - lo) / (hi - lo)


class FusionReranker:
    """Interim reranker: min-max-normalised bi-encoder score fused with BM25 (and optionally a
    second embedder's cosine). Cheap: BM25 scores and stored dense scores cost no model call."""

    name = "fusion"
    note: str | None = None  # set when it stands in for a missing cross-encoder

    def __init__(self, bm25, weight: float = 0.5, second_embedder=None, max_chars: int = 900) -> None:
        self.bm25 = bm25
        self.weight = weight
        self.second = second_embedder
        self.max_chars = max_chars

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        all_bm25 = self.bm25.scores(question)
        lexical = np.array(
            [all_bm25[self.bm25.position[h.segment.id]] if h.segment.id in self.bm25.position else 0.0 for h in hits],
            dtype=np.float32,
        )
        if self.second is not None:
            q = self.second.embed_queries([question])[0]
            p = self.second.embed_passages([h.segment.text[: self.max_chars] for h in hits])
            semantic = p @ q
        else:
            semantic = np.array([h.detail.get("dense", h.score) for h in hits], dtype=np.float32)
        return self.weight * _minmax(semantic) + (1 - self.weight) * _minmax(lexical)


class OnnxCrossEncoder:
    """A CrossEncoder's int8 ONNX export (chatbot/training/onnx_export.py) run with onnxruntime: the
    directory's own tokenizer (tokenizers, no torch), pairs sorted by length so each batch pads little."""

    def __init__(
        self,
        model_dir: Path,
        threads: int = 1,
        max_length: int = 256,
        batch_size: int = 16,
        int8_matmul: str = "int8",
    ) -> None:
        from tokenizers import Tokenizer

        from chatbot.onnx_dequantize import session_file

        model_dir = Path(model_dir)
        self.model_file = session_file(model_dir / ONNX_FILE, int8_matmul)  # the export or its fp32 copy
        self.session = cpu_session(self.model_file, threads)
        meta = self.session.get_modelmeta().custom_metadata_map
        self.activation = meta.get("activation", "sigmoid")
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        self.max_length = max_length
        self.batch_size = batch_size
        pad = self.tokenizer.token_to_id("[PAD]")  # BERT vocabularies; e5's (XLM-R) pads with <pad>
        self.pad_id = pad if pad is not None else self.tokenizer.token_to_id("<pad>") or 0
        self.meta = dict(meta)

    def stale_reason(self, model_dir: Path) -> str | None:
        """Why this export may not stand for the directory's weights (None: made from them)."""
        weights = weights_file(Path(model_dir))
        if weights is not None and self.meta.get("source_sha256") != sha256_of(weights):
            return f"{ONNX_FILE} was not made from {weights.name} (re-run `chatbot train export-onnx`)"
        if self.activation not in ("sigmoid", "identity"):
            return f"{ONNX_FILE} has an unsupported activation {self.activation!r}"
        return None

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(q, p) for q, p in pairs])
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        logits = np.empty(len(pairs), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.full((len(chunk), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                e = encodings[i]
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
                types[row, : len(e.ids)] = e.type_ids
            out = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
            logits[chunk] = out.reshape(-1)
        return 1.0 / (1.0 + np.exp(-logits)) if self.activation == "sigmoid" else logits


class CrossEncoderReranker:
    """Any sentence_transformers.CrossEncoder from a local directory. With ``with_title`` (the default, how the
    shipped models/reranker was trained) a segment is read as the bi-encoder reads it: "title: heading" line,
    then the text cut to ``max_chars``.

    ``runtime="onnx"`` runs the directory's int8 ONNX export (``onnx/model_qint8.onnx``, made by `chatbot
    train export-onnx` from the directory's own weights) with onnxruntime; a directory without one, or with
    one made from other weights, runs with torch instead and says why in ``note``. ``runtime="torch"``:
    sentence-transformers in fp32. ``max_length``: word pieces read per (question, segment) pair.
    ``int8_matmul``: runtime.int8_matmul (int8: the export as shipped; fp32 / auto: its dequantized fp32 copy
    where chatbot.onnx_dequantize says so); the services pass the setting.
    """

    name = "cross-encoder"
    rrf_k: int | None = None  # set: this model's own rank-fusion constant (rerank.language_rrf_k)
    own_language: str | None = None  # set: it reads only passages in another language (rerank.language_passages)

    def __init__(
        self,
        model_path: Path,
        threads: int = 2,
        max_chars: int = 900,
        batch_size: int = 16,
        with_title: bool = True,
        runtime: str = "torch",
        max_length: int | None = None,
        int8_matmul: str = "int8",
    ) -> None:
        model_path = Path(model_path)
        if not model_path.exists():
            raise FileNotFoundError(f"cross-encoder directory {model_path} does not exist")
        if runtime not in ("torch", "onnx"):
            raise ValueError(f"unknown cross-encoder runtime {runtime!r}; choose torch or onnx")
        self.model_path = model_path
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.with_title = with_title
        self.note: str | None = None
        self.onnx: OnnxCrossEncoder | None = None
        self.model = None
        if runtime == "onnx":
            why = f"no {ONNX_FILE} in {model_path}"
            if (model_path / ONNX_FILE).is_file():
                runner = OnnxCrossEncoder(model_path, threads, max_length or 256, batch_size, int8_matmul)
                why = runner.stale_reason(model_path)
                self.onnx = None if why else runner
            if why:
                self.note = f"rerank.runtime=onnx, torch used: {why}"
        if self.onnx is None:
            import torch
            from sentence_transformers import CrossEncoder

            torch.set_num_threads(threads)
            self.model = CrossEncoder(str(model_path), device="cpu")
            if max_length is not None:
                self.model.max_seq_length = max_length
        self.runtime = "onnx-int8" if self.onnx is not None else "torch"

    @classmethod
    def from_settings(
        cls, model_path: Path, settings: Any, max_length: int | None = None, threads: int | None = None
    ) -> CrossEncoderReranker:
        """A cross-encoder as the settings run one: rerank.max_chars, runtime, batch_size and max_length (unless
        given), runtime.int8_matmul, embedding.threads (unless given)."""
        r = settings.rerank
        return cls(
            model_path,
            threads=settings.embedding.threads if threads is None else threads,
            max_chars=r.max_chars,
            runtime=r.runtime,
            max_length=r.max_length if max_length is None else max_length,
            int8_matmul=settings.runtime.int8_matmul,
            batch_size=r.batch_size,
        )

    def passage(self, segment: Segment) -> str:
        text = segment.text[: self.max_chars]
        return embedding_text(replace(segment, text=text)) if self.with_title else text

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Scores of raw (question, passage) pairs (passages used as given)."""
        if self.onnx is not None:
            return self.onnx.predict(pairs)
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(
            self.model.predict(list(pairs), batch_size=self.batch_size, show_progress_bar=False), dtype=np.float32
        )

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        return self.predict([(question, self.passage(h.segment)) for h in hits])
