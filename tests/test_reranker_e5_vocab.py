"""The bilingual cross-encoder's trimmed vocabulary (chatbot/training/reranker_e5.py): the trimmed tokenizer
segments covered text exactly as e5's full tokenizer does (same pieces, renumbered ids), spells an uncovered
word with smaller kept pieces instead of <unk>, and keeps the pair template's special ids consistent.

Needs the local e5 build's tokenizer (`chatbot models build-e5`, made by `make install`)."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer

from chatbot.e5_build import default_out_dir
from chatbot.training.reranker_e5 import kept_ids, trimmed_tokenizer

VOCAB_TEXTS = [
    "Posso bere caffè in gravidanza? In gravidanza limita la caffeina a circa 200 mg al giorno.",
    "How much caffeine can I drink during pregnancy? Limit caffeine to about 200 mg a day.",
]


@pytest.fixture(scope="module")
def full() -> dict:
    path = default_out_dir() / "hf" / "tokenizer.json"
    if not path.is_file():  # built at install: its absence is a broken install, not a skip
        pytest.fail(f"{path} is missing: run `chatbot models build-e5`")
    return json.loads(path.read_text(encoding="utf-8"))


def test_covered_text_is_segmented_exactly_as_by_the_full_tokenizer(full):
    keep = kept_ids(full, VOCAB_TEXTS * 2, min_count=2, log=lambda m: None)
    small = Tokenizer.from_str(json.dumps(trimmed_tokenizer(full, keep)))
    big = Tokenizer.from_str(json.dumps(full))
    assert small.get_vocab_size() == len(keep) < 2000
    for text in VOCAB_TEXTS:
        a, b = big.encode(text), small.encode(text)
        assert a.tokens == b.tokens
        assert [keep[i] for i in b.ids] == a.ids  # new id -> old id through the kept list


def test_pair_template_and_special_ids_follow_the_renumbering(full):
    keep = kept_ids(full, VOCAB_TEXTS * 2, min_count=2, log=lambda m: None)
    trimmed = trimmed_tokenizer(full, keep)
    small = Tokenizer.from_str(json.dumps(trimmed))
    enc = small.encode("caffè in gravidanza", "200 mg al giorno")
    assert enc.tokens[0] == "<s>" and enc.tokens.count("</s>") == 3
    assert small.token_to_id("<pad>") == 1 and small.token_to_id("<unk>") == 3
    assert small.token_to_id("<mask>") == len(keep) - 1
    assert trimmed["model"]["vocab"][trimmed["model"]["unk_id"]][0] == "<unk>"


def test_an_uncovered_word_falls_back_to_kept_pieces_not_unk(full):
    keep = kept_ids(full, VOCAB_TEXTS * 2, min_count=2, log=lambda m: None)
    small = Tokenizer.from_str(json.dumps(trimmed_tokenizer(full, keep)))
    enc = small.encode("zwitterione", add_special_tokens=False)  # not in the vocabulary texts
    assert "<unk>" not in enc.tokens
    assert "".join(enc.tokens).replace("▁", "") == "zwitterione"
    once = kept_ids(full, VOCAB_TEXTS, min_count=2, log=lambda m: None)  # each text seen once: words dropped
    assert len(once) < len(keep)
