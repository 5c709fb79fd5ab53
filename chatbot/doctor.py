"""``chatbot doctor``: checks what the product needs, one line each, with the fix for what fails.

Each check is a small function of the settings returning a ``Check``; ``run_checks`` runs them in order and
never raises (a check that crashes is a failed line naming the exception).
"""

from __future__ import annotations

import importlib.metadata
import shutil
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chatbot import llm_runtime
from chatbot.resources import source_root
from chatbot.settings import SHIPPED_RERANKER, Settings

CHROMIUM = Path("/usr/bin/chromium")


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


CheckFn = Callable[[Settings], Check]


def _requirements(pyproject: Path | None) -> list[str]:
    """The dependencies of pyproject.toml, else (an installed copy) those of the installed distribution."""
    if pyproject is not None:
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return [r for r in importlib.metadata.requires("certified-chatbot") or [] if "extra ==" not in r]


def check_packages(settings: Settings, pyproject: Path | None = None) -> Check:
    """Every dependency of pyproject.toml (or of the installed package) in a version its specifier accepts."""
    from packaging.requirements import Requirement

    root = source_root()
    if pyproject is None and root is not None:
        pyproject = root / "pyproject.toml"
    try:
        requirements = [Requirement(r) for r in _requirements(pyproject)]
    except importlib.metadata.PackageNotFoundError:
        return Check("packages", "warn", "neither a source checkout nor an installed distribution: not compared")
    wrong = []
    for req in requirements:
        try:
            have = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{req.name} missing (want {req.specifier})")
            continue
        if not req.specifier.contains(have, prereleases=True):
            wrong.append(f"{req.name} {have} (want {req.specifier})")
    if wrong:
        return Check("packages", "fail", "; ".join(wrong[:6]), "pip install -e . (or make install)")
    return Check("packages", "ok", f"{len(requirements)} dependencies installed at accepted versions")


def check_bi_encoder(settings: Settings) -> Check:
    from chatbot.embedders import load_embedder

    start = time.perf_counter()
    embedder = load_embedder(settings.embedding.model, settings.embedding.threads, settings.runtime.int8_matmul)
    vec = embedder.embed_queries(["Is it safe to drink coffee when pregnant?"])
    ms = (time.perf_counter() - start) * 1000
    return Check("bi-encoder", "ok", f"{embedder.name}: dim {vec.shape[1]}, loaded and encoded in {ms:.0f} ms")


def check_cross_encoder(settings: Settings) -> Check:
    from chatbot.stages.rerank import CrossEncoderReranker

    r = settings.rerank
    path = r.model_path or SHIPPED_RERANKER
    if not (Path(path) / "config.json").is_file():
        return Check("cross-encoder", "fail", f"no model in {path}", "restore models/reranker from git")
    model = CrossEncoderReranker.from_settings(path, settings, threads=1)
    question = "How much caffeine can I have a day when pregnant?"
    good = "Pregnant women should limit caffeine to 200 milligrams a day, about two mugs of instant coffee."
    bad = "Tie the laces of your running shoes firmly before a long walk."
    scores = [float(x) for x in model.predict([(question, good), (question, bad)])]
    if scores[0] <= scores[1]:
        return Check("cross-encoder", "fail", f"ranks an unrelated passage first ({scores})", "retrain or restore it")
    return Check(
        "cross-encoder", "ok", f"{Path(path).name} ({r.runtime}): relevant {scores[0]:.2f} > unrelated {scores[1]:.2f}"
    )


def check_index(settings: Settings) -> Check:
    from chatbot.index import IndexError_
    from chatbot.pipeline import Services

    services = Services(settings)
    try:
        n = services.index.count()
    except IndexError_ as exc:
        return Check("index", "fail", str(exc), "chatbot ingest corpus/demo/cards (or make run)")
    if n == 0:
        return Check("index", "fail", "the index is empty", "chatbot ingest corpus/demo/cards")
    return Check("index", "ok", f"{services.collection_name!r}: {n} segments, built with {services.embedder.name}")


def check_database(settings: Settings) -> Check:
    from alembic.script import ScriptDirectory

    from chatbot.store.db import alembic_config, current_revision, make_engine

    url = settings.store.url
    if not url:
        path = Path(settings.paths.data_dir) / "chatbot.sqlite3"
        if not path.exists():  # do not create it: a bare file without tables is worse than none
            return Check("database", "warn", f"{path} not created yet", "chatbot serve creates and migrates it")
        url = f"sqlite:///{path}"
    engine = make_engine(url)
    try:
        head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
        current = current_revision(engine)
    finally:
        engine.dispose()
    if current != head:
        return Check("database", "fail", f"at {current}, latest is {head}", "chatbot serve (migrates at start)")
    return Check("database", "ok", f"{engine.url.render_as_string(hide_password=True)} at {head}")


def check_build_tools(settings: Settings) -> Check:
    missing = [tool for tool in ("cmake", "gcc", "g++") if shutil.which(tool) is None]
    if missing:
        return Check("build tools", "warn", f"missing {', '.join(missing)}", "apt-get install cmake build-essential")
    return Check("build tools", "ok", "cmake, gcc, g++ present (llama-server can be rebuilt)")


def check_chromium(settings: Settings) -> Check:
    if not CHROMIUM.exists():
        return Check("chromium", "warn", f"{CHROMIUM} missing (browser tests only)", "apt-get install chromium")
    return Check("chromium", "ok", f"{CHROMIUM} present")


def check_llm(settings: Settings) -> Check:
    """Build present for this CPU, and (embedded endpoint) a server of our own starts and answers."""
    from chatbot.llm import LLMClient
    from chatbot.llm_server import LLMUnavailable, is_embedded_endpoint

    s = settings.llm
    cpu = "AMX" if llm_runtime.has_amx() else "no AMX"
    if not is_embedded_endpoint(s):
        client = LLMClient(s, settings.paths.data_dir, autostart=False)
        try:
            client.smoke_check()
        except LLMUnavailable as exc:
            return Check("llm", "fail", f"{s.base_url}: {exc}", "start that server or fix llm.base_url")
        return Check("llm", "ok", f"{s.base_url} answers a one-token completion")
    if not Path(s.server_binary).exists():
        return Check(
            "llm",
            "fail",
            f"no llama-server {s.server_variant} build for this CPU ({cpu}) at {s.server_binary}",
            f"python -m chatbot.llm_runtime build --variant {s.server_variant} (or make llm)",
        )
    spare = s.model_copy(update={"port": s.port + 2, "base_url": f"http://127.0.0.1:{s.port + 2}/v1"})
    client = LLMClient(spare, settings.paths.data_dir, autostart=True)
    start = time.perf_counter()
    try:
        client.ensure_ready()  # spawns it and runs the smoke check
        reply = client.smoke_reply if client.smoke_reply is not None else client.smoke_check()
    except LLMUnavailable as exc:
        return Check(
            "llm", "fail", str(exc), f"python -m chatbot.llm_runtime build --variant {s.server_variant} --force"
        )
    finally:
        client.close()
    seconds = time.perf_counter() - start
    return Check(
        "llm",
        "ok",
        f"{s.server_variant} build ({cpu}, repack={'on' if s.repack else 'off'}) started {Path(s.model_path).name} "
        f"and answered {reply!r} in {seconds:.1f} s",
    )


CHECKS: list[tuple[str, CheckFn]] = [
    ("packages", check_packages),
    ("bi-encoder", check_bi_encoder),
    ("cross-encoder", check_cross_encoder),
    ("index", check_index),
    ("database", check_database),
    ("build tools", check_build_tools),
    ("chromium", check_chromium),
    ("llm", check_llm),
]


def run_checks(settings: Settings, skip: set[str] = frozenset()) -> list[Check]:
    results = []
    for name, fn in CHECKS:
        if name in skip:
            continue
        try:
            results.append(fn(settings))
        except Exception as exc:  # a doctor reports, it does not crash
            results.append(Check(name, "fail", f"{type(exc).__name__}: {exc}"[:400]))
    return results


def format_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        line = f"{c.status.upper():4}  {c.name:<{width}}  {c.detail}"
        if c.fix and c.status != "ok":
            line += f"\n{'':4}  {'':<{width}}  fix: {c.fix}"
        lines.append(line)
    return "\n".join(lines)


def as_json(checks: list[Check]) -> dict[str, Any]:
    return {"ok": all(c.status != "fail" for c in checks), "checks": [asdict(c) for c in checks]}
