"""A non-editable install works on its own: the wheel carries the prompts, the shipped models, the demo cards,
the calibration and the migrations, and answers from a directory with no checkout.

The wheel is built from a copy of the project's sources (no .venv, caches or results), installed with
``pip install --no-deps --target`` (the dependencies come from this interpreter's environment, offline) and
run with ``PYTHONPATH`` pointing at the target only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "chatbot", "corpus", "evaluation", "ui", "models", "prompts")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "results")
MAX_WHEEL_BYTES = 97_000_000  # the reranker (safetensors + int8 ONNX) is most of it; reranker-e5 adds 19.8 MB,
# the gate memory with its 8,230 labelled questions and their key phrases 3.6 MB (session 39)
INGESTED = ("en-preg-folic-acid", "en-preg-pregnancy-tests", "en-nutr-vegetarian-vegan-pregnancy", "en-preg-caffeine")
QUESTIONS = {
    "folic": "How much folic acid should I take before and during pregnancy?",
    "urgent": "My baby is not breathing and has turned blue",
}
FOLIC = [
    "https://www.nhs.uk/pregnancy/keeping-well/vitamins-supplements-and-nutrition/",
    "https://www.nhs.uk/pregnancy/trying-for-a-baby/doing-a-pregnancy-test/",
    "https://www.nhs.uk/pregnancy/keeping-well/vegetarian-or-vegan-and-pregnant/",
]
EMERGENCY_CARD_URL = "https://www.nhs.uk/nhs-services/urgent-and-emergency-care-services/when-to-call-999/"


def _setuptools_config() -> dict:
    return tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _folder(package: str, package_dir: dict[str, str]) -> Path:
    for prefix, target in package_dir.items():
        if package == prefix or package.startswith(prefix + "."):
            return PROJECT / target / Path(*package[len(prefix) :].split(".")[1:])
    return PROJECT / Path(*package.split("."))


def test_every_code_folder_is_declared_and_every_declared_package_exists_with_its_files():
    config = _setuptools_config()
    declared, package_dir, data = set(config["packages"]), config["package-dir"], config["package-data"]
    code = {
        ".".join(path.parent.relative_to(PROJECT).parts)
        for top in ("chatbot", "corpus", "evaluation", "ui")
        for path in (PROJECT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }

    assert sorted(code - declared) == []
    assert sorted(p for p in declared if not _folder(p, package_dir).is_dir()) == []
    assert sorted(p for p in declared - code if p not in data) == []  # a data folder names its files
    for package, patterns in data.items():
        for pattern in patterns:
            assert list(_folder(package, package_dir).glob(pattern)), f"{package}: nothing matches {pattern}"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CHATBOT_") and k != "PYTHONPATH"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PIP_NO_INDEX": "1", **extra})
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args[:4]} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """Build the wheel from a copy of the sources and install it (no deps) into a fresh target folder."""
    tmp = tmp_path_factory.mktemp("install")
    src, dist, site, work = tmp / "src", tmp / "dist", tmp / "site", tmp / "work"
    for name in SOURCES:
        origin = PROJECT / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, ignore=SKIP)
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(origin, src / name)
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    start = time.perf_counter()
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)], tmp, _env())
    wheel = next(dist.glob("certified_chatbot-*.whl"))
    _run([*pip, "install", "--no-deps", "--no-compile", "--target", str(site), str(wheel)], tmp, _env())
    print(f"wheel {wheel.stat().st_size / 1e6:.1f} MB, built and installed in {time.perf_counter() - start:.1f} s")
    return {"wheel": wheel, "site": site, "work": work, "data": tmp / "data", "cache": tmp / "cache"}


def test_the_wheel_carries_the_shipped_files_and_no_development_files(installed):
    wheel = installed["wheel"]
    names = set(zipfile.ZipFile(wheel).namelist())

    for needed in (
        "chatbot/_shipped/models/reranker/model.safetensors",
        "chatbot/_shipped/models/reranker/onnx/model_qint8.onnx",
        "chatbot/_shipped/models/reranker/tokenizer.json",
        "chatbot/_shipped/models/reranker-e5/onnx/model_qint8.onnx",
        "chatbot/_shipped/models/reranker-e5/tokenizer.json",
        "chatbot/_shipped/models/reranker-e5/config.json",
        "chatbot/_shipped/models/redflags/weights.npz",
        "chatbot/_shipped/models/redflags/context-head.npz",
        "chatbot/_shipped/models/answer_scorer/answer_scorer.npz",
        "chatbot/_shipped/models/answer_scorer/answer_scorer_replies.npz",
        "chatbot/_shipped/models/answer_scorer/unit_weights.json",
        "chatbot/_shipped/models/relevance_gate/gate.json",
        "chatbot/_shipped/models/asked_kind/weights.npz",
        "chatbot/_shipped/models/dismissal/weights.npz",
        "chatbot/_shipped/models/diagnosis_request/weights.npz",
        "chatbot/_shipped/models/query_adapter/adapter.npz",
        "chatbot/_shipped/models/query_adapter/adapter.json",
        "chatbot/_shipped/models/query_encoder/layers.safetensors",
        "chatbot/_shipped/models/query_encoder/encoder.json",
        "chatbot/_shipped/prompts/cot_hydoc.txt",
        "chatbot/logical/calibration.json",
        "chatbot/logical/data/synonyms.tsv",
        "chatbot/data/patient-words-it/cards.tsv",
        "chatbot/store/migrations/env.py",
        "chatbot/store/migrations/script.py.mako",
        "chatbot/store/migrations/versions/0001_initial_schema.py",
        "corpus/demo/cards/en-preg-folic-acid.md",
        "evaluation/redteam/questions.jsonl",
    ):
        assert needed in names, needed
    prompts = {p.name for p in (PROJECT / "prompts").glob("*.txt")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("chatbot/_shipped/prompts/")} == prompts
    tops = {n.split("/", 1)[0] for n in names}
    assert sorted(t for t in tops if not t.endswith(".dist-info")) == ["chatbot", "corpus", "evaluation", "ui"]
    assert [n for n in names if "__pycache__" in n or "/results/" in n or n.startswith(("tests/", ".venv"))] == []
    assert wheel.stat().st_size < MAX_WHEEL_BYTES


def test_the_installed_copy_answers_from_another_directory_with_its_shipped_models(installed):
    site, work = installed["site"], installed["work"]
    # an empty cache: the default embedder (e5-onnx) is built on first use, as after `pip install .`
    cache = installed["cache"]
    env = _env(PYTHONPATH=str(site), CHATBOT_PATHS__DATA_DIR=str(installed["data"]), CERTIFIED_CHATBOT_CACHE=str(cache))
    where = _run(
        [
            sys.executable,
            "-c",
            "import json, chatbot, chatbot.resources as r, chatbot.settings as s;"
            "print(json.dumps([chatbot.__file__, str(r.source_root()), str(r.prompts_dir()),"
            " str(s.SHIPPED_RERANKER), str(s.load_settings().safety.redflag_model), str(r.demo_cards()),"
            " str(r.migrations_dir()), str(s.load_settings().paths.results_dir)]))",
        ],
        work,
        env,
    )
    module, root, prompts, reranker, redflags, cards, migrations, results = json.loads(where.stdout)
    assert Path(module) == site / "chatbot" / "__init__.py"
    assert root == "None"
    assert Path(prompts) == site / "chatbot" / "_shipped" / "prompts"
    assert Path(reranker) == site / "chatbot" / "_shipped" / "models" / "reranker"
    assert Path(redflags) == site / "chatbot" / "_shipped" / "models" / "redflags"
    assert Path(cards) == site / "corpus" / "demo" / "cards"
    assert Path(migrations) == site / "chatbot" / "store" / "migrations"
    assert Path(results) == work / "results"

    chatbot = [sys.executable, "-m", "chatbot.cli"]
    # A few installed cards keep the test short; the urgent cards are read from the installed folder itself
    # (safety.urgent_cards). The first ingest builds e5 (~30 s, more on a busy machine) with a one-line notice.
    ingest = [str(Path(cards) / f"{name}.md") for name in INGESTED]
    first = _run([*chatbot, "ingest", *ingest, "--quiet"], work, env, timeout=900)
    ingested = json.loads(first.stdout.strip().splitlines()[-1])
    assert (ingested["documents"], ingested["embedding_model"]) == (len(INGESTED), "multilingual-e5-small-onnx-int8")
    e5 = cache / "models" / "e5-small"
    assert f"building the e5 model into {e5} (not built): once, offline, about 30 s" in first.stderr.splitlines()
    assert sorted(json.loads((e5 / "build.json").read_text(encoding="utf-8"))["files"]) == sorted(
        p.relative_to(e5).as_posix() for p in e5.rglob("*") if p.is_file() and p.name != "build.json"
    )

    batch = work / "questions.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in QUESTIONS.items()), encoding="utf-8")
    asked = _run([*chatbot, "ask", "--batch", str(batch), "--pipeline", "naive", "--quiet"], work, env)
    assert "building the e5 model" not in asked.stderr  # built once
    out = asked.stdout
    answers = {a["id"]: a for a in (json.loads(line) for line in out.splitlines() if line.strip())}
    folic, urgent = answers["folic"], answers["urgent"]
    assert (folic["status"], folic["urgent"], [link["url"] for link in folic["links"]]) == ("answered", False, FOLIC)
    assert (folic["trace"]["reranker"], folic["trace"]["reranker_runtime"]) == ("cross-encoder", "onnx-int8")
    assert folic["trace"]["safety"]["red_flag_screen"]["classifier"]["urgent_score"] < 0.2
    assert (urgent["status"], urgent["urgent"], urgent["urgent_action"]) == ("no_certified_info", True, "emergency")
    assert urgent["urgent_links"][0]["url"] == EMERGENCY_CARD_URL
    assert urgent["trace"]["safety"]["red_flag_screen"]["classifier"]["urgent_score"] > 0.5

    token = json.loads(_run([*chatbot, "tokens", "create", "smoke"], work, env).stdout)  # the migrations run
    assert token["name"] == "smoke" and (installed["data"] / "chatbot.sqlite3").is_file()
    assert sorted(p.name for p in work.iterdir()) == ["questions.jsonl"]  # nothing written where it ran
