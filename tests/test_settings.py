from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from chatbot.settings import Settings, config_file, describe, load_settings

PROJECT = Path(__file__).resolve().parent.parent


def rows_by_key(settings: Settings) -> dict[str, dict]:
    return {row["key"]: row for row in describe(settings)}


def test_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))

    s = Settings()

    assert s.paths.data_dir == tmp_path / "xdg" / "certified-chatbot"
    assert (s.corpus.segment_max_chars, s.corpus.segment_min_chars, s.corpus.strict) == (900, 120, False)
    assert (s.index.collection, s.index.server_url, s.index.exact) == ("certified", None, False)
    assert (s.retrieval.top_k, s.retrieval.top_n, s.retrieval.pipeline) == (50, 3, "dense+rerank")
    assert s.embedding.model == "e5-onnx"
    assert (s.rerank.kind, s.rerank.runtime, s.rerank.model_path) == ("cross-encoder", "onnx", None)
    assert (s.rerank.max_length, s.rerank.candidates, s.rerank.cross_encoder_languages) == (192, 20, ["en"])
    assert s.rerank.batch_size == 1
    assert s.rerank.rrf_k == 60
    assert s.safety.relevance_score == "dense"
    assert 0.0 <= s.rerank.fusion_weight <= 1.0
    assert config_file() is None


def test_describe_lists_every_leaf_with_default_source_and_a_description():
    rows = describe(Settings())

    assert len(rows) == sum(len(type(getattr(Settings(), g)).model_fields) for g in Settings.model_fields)
    assert {row["source"] for row in rows} == {"default"}
    assert all(row["description"] for row in rows)
    assert rows_by_key(Settings())["retrieval.top_k"]["value"] == 50


def test_env_variable_overrides_and_is_reported(monkeypatch):
    monkeypatch.setenv("CHATBOT_RETRIEVAL__TOP_K", "30")

    s = load_settings()
    rows = rows_by_key(s)

    assert s.retrieval.top_k == 30
    assert rows["retrieval.top_k"]["value"] == 30
    assert rows["retrieval.top_k"]["source"] == "env CHATBOT_RETRIEVAL__TOP_K"
    assert rows["retrieval.top_n"]["source"] == "default"


def test_lower_case_env_variable_is_accepted_and_reported(monkeypatch):
    monkeypatch.setenv("chatbot_retrieval__top_n", "5")

    s = Settings()

    assert s.retrieval.top_n == 5
    assert rows_by_key(s)["retrieval.top_n"]["source"] == "env CHATBOT_RETRIEVAL__TOP_N"


def test_toml_file_from_chatbot_config(monkeypatch, tmp_path):
    path = tmp_path / "conf" / "my.toml"
    path.parent.mkdir()
    path.write_text('[retrieval]\ntop_n = 5\n\n[index]\ncollection = "medquad"\n', encoding="utf-8")
    monkeypatch.setenv("CHATBOT_CONFIG", str(path))

    s = Settings()
    rows = rows_by_key(s)

    assert (s.retrieval.top_n, s.index.collection) == (5, "medquad")
    assert rows["retrieval.top_n"]["source"] == f"file {path}"
    assert rows["index.collection"]["source"] == f"file {path}"
    assert rows["retrieval.top_k"]["source"] == "default"


def test_local_chatbot_toml_is_used_without_chatbot_config(tmp_path):
    # The autouse fixture runs every test in tmp_path.
    (tmp_path / "chatbot.toml").write_text("[retrieval]\ntop_k = 12\n", encoding="utf-8")

    assert config_file() == Path("chatbot.toml")
    assert Settings().retrieval.top_k == 12
    assert rows_by_key(Settings())["retrieval.top_k"]["source"] == "file chatbot.toml"


def test_env_beats_file_and_overrides_beat_env(monkeypatch, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[retrieval]\ntop_k = 12\n", encoding="utf-8")
    monkeypatch.setenv("CHATBOT_CONFIG", str(path))
    monkeypatch.setenv("CHATBOT_RETRIEVAL__TOP_K", "40")

    assert Settings().retrieval.top_k == 40
    assert rows_by_key(Settings())["retrieval.top_k"]["source"] == "env CHATBOT_RETRIEVAL__TOP_K"
    assert load_settings(retrieval={"top_k": 7}).retrieval.top_k == 7


def test_missing_config_file_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CHATBOT_CONFIG", str(tmp_path / "nope.toml"))

    with pytest.raises(FileNotFoundError, match=r"nope\.toml \(from CHATBOT_CONFIG\) does not exist"):
        Settings()


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"retrieval": {"top_k": 0}}, r"retrieval\.top_k\s+Input should be greater than or equal to 1"),
        ({"corpus": {"segment_max_chars": 99}}, r"corpus\.segment_max_chars\s+Input should be greater than or equal"),
        ({"rerank": {"fusion_weight": 1.5}}, r"rerank\.fusion_weight\s+Input should be less than or equal to 1"),
        ({"rerank": {"kind": "magic"}}, r"rerank\.kind\s+Input should be 'cross-encoder', 'fusion' or 'none'"),
        ({"rerank": {"runtime": "tensorrt"}}, r"rerank\.runtime\s+Input should be 'onnx' or 'torch'"),
        ({"rerank": {"max_length": 1024}}, r"rerank\.max_length\s+Input should be less than or equal to 512"),
        (
            {"rerank": {"language_passages": {"it": "some"}}},
            r"rerank\.language_passages\.it\s+Input should be 'all' or 'other'",
        ),
        ({"safety": {"relevance_score": "x"}}, r"safety\.relevance_score\s+Input should be 'dense' or 'cross-encoder'"),
        (
            {"embedding": {"model": "gpt"}},
            r"embedding\.model\s+Input should be 'minilm', 'e5', 'use', 'e5-onnx' or 'endpoint'",
        ),
        ({"llm": {"timeout_s": 0}}, r"llm\.timeout_s\s+Input should be greater than 0"),
        ({"nonsense": {}}, r"nonsense\s+Extra inputs are not permitted"),
    ],
)
def test_invalid_values_raise_validation_error(overrides, match):
    with pytest.raises(ValidationError, match=match):
        Settings(**overrides)


def test_invalid_env_value_raises_validation_error(monkeypatch):
    monkeypatch.setenv("CHATBOT_RETRIEVAL__TOP_K", "many")

    with pytest.raises(ValidationError, match=r"retrieval\.top_k\s+Input should be a valid integer"):
        Settings()


def test_invalid_file_value_raises_validation_error(monkeypatch, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[index]\nhnsw_m = 2\n", encoding="utf-8")
    monkeypatch.setenv("CHATBOT_CONFIG", str(path))

    with pytest.raises(ValidationError, match=r"index\.hnsw_m\s+Input should be greater than or equal to 4"):
        Settings()


def _descriptions() -> dict[str, str]:
    from chatbot.settings import Settings

    settings = Settings()
    return {
        f"{group}.{name}": field.description or ""
        for group in Settings.model_fields
        for name, field in type(getattr(settings, group)).model_fields.items()
    }


def test_reports_go_to_the_checkouts_evaluation_results_whatever_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert Settings().paths.results_dir == PROJECT / "evaluation" / "results"

    monkeypatch.setenv("CHATBOT_PATHS__RESULTS_DIR", str(tmp_path / "reports"))
    assert Settings().paths.results_dir == tmp_path / "reports"


def test_every_setting_states_its_trade_off_briefly():
    too_long = {key: len(text) for key, text in _descriptions().items() if len(text) > 300}
    empty = [key for key, text in _descriptions().items() if not text.strip()]
    assert (too_long, empty) == ({}, [])


def test_every_result_file_a_setting_names_exists():
    import re

    named = {m for text in _descriptions().values() for m in re.findall(r"evaluation/results/[\w.-]+\.md", text)}
    assert named  # the descriptions do point to their measurements
    assert sorted(p for p in named if not (PROJECT / p).is_file()) == []
