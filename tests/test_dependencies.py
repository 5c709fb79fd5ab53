"""Locked, lean dependencies: deptry finds no missing, unused or transitive-only dependency; the served product
imports only the base dependencies (training and plotting stay in the [train] and [eval] extras); the locks pin
every pyproject pin, every package with a hash, and the CPU torch; a command of a missing extra says how to
install it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from chatbot import cli

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
FIRST_PARTY = {"chatbot", "corpus", "ui", "evaluation", "tests", "__future__"}
DEV_LOCK, SERVE_LOCK = ROOT / "requirements" / "dev.lock", ROOT / "requirements" / "serve.lock"
# what the served product must never install: the training and plotting stacks, the benchmarks, the test tools
NOT_SERVED = {"datasets", "accelerate", "matplotlib", "krippendorff", "ir-measures", "pytrec-eval-terrier"}
NOT_SERVED |= {"pytest", "ruff", "playwright", "fpdf2", "deptry", "pip-tools", "pyarrow"}


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


BASE = _names(PROJECT["dependencies"])
EXTRAS = {extra: _names(reqs) for extra, reqs in PROJECT["optional-dependencies"].items()}


def _deptry(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deptry", "--no-ansi", "."], cwd=root, capture_output=True, text=True, timeout=300
    )


def test_deptry_finds_no_missing_unused_or_transitive_dependency():
    done = _deptry(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No dependency issues found" in done.stdout + done.stderr


def test_deptry_fails_on_an_undeclared_import_and_an_unused_pin(tmp_path):
    """The checker can fail: tokenizers (imported by chatbot/) undeclared, bcrypt (never imported) pinned."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    text = text.replace('    "tokenizers==0.23.3",\n', "")
    text = text.replace('"alembic==1.20.1",', '"alembic==1.20.1", "bcrypt==5.0.0",')
    assert "tokenizers==" not in text and "bcrypt==5.0.0" in text
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    for top in ("chatbot", "corpus", "ui", "evaluation", "scripts"):
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("results", "__pycache__", "*.onnx"))

    done = _deptry(tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"DEP003 'tokenizers' imported but it is a transitive dependency", out), out
    assert re.search(r"DEP002 'bcrypt' defined as a dependency but not used", out), out


def _third_party_imports(files: list[Path]) -> dict[str, set[str]]:
    """Top-level module -> the files importing it (module level or inside functions), stdlib and ours left out."""
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _files(*tops: str, skip: str | None = None) -> list[Path]:
    return [p for top in tops for p in (ROOT / top).rglob("*.py") if skip is None or skip not in p.parts]


@pytest.mark.parametrize(
    ("part", "files", "allowed"),
    [
        ("product", _files("chatbot", "ui", "corpus", skip="training"), BASE),
        ("training", _files("chatbot/training"), BASE | EXTRAS["train"]),
        ("evaluation", _files("evaluation"), BASE | EXTRAS["eval"]),
    ],
)
def test_each_part_imports_only_what_its_install_declares(part, files, allowed):
    """The served product (chatbot/ but training, ui/, corpus/) imports base dependencies only."""
    module_to_dists = importlib.metadata.packages_distributions()
    wrong = {}
    for module, where in sorted(_third_party_imports(files).items()):
        dists = {canonicalize_name(d) for d in module_to_dists.get(module, [])}
        if not dists & allowed:
            wrong[module] = (sorted(dists) or ["not installed"], sorted(where)[:3])
    assert wrong == {}, f"{part} imports packages its install does not declare"


def _lock(path: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of a pip-compile --generate-hashes file."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", path.read_text(encoding="utf-8")):
        match = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if match:
            pins[canonicalize_name(match[1])] = (match[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return pins


def test_the_locks_pin_every_pyproject_pin_with_hashes_and_the_cpu_torch():
    dev, serve = _lock(DEV_LOCK), _lock(SERVE_LOCK)
    assert "Python 3.11" in DEV_LOCK.read_text(encoding="utf-8").splitlines()[1]
    assert [name for name, (_v, hashes) in {**dev, **serve}.items() if not hashes] == []
    declared = [*PROJECT["dependencies"], *(r for reqs in PROJECT["optional-dependencies"].values() for r in reqs)]
    for line in declared:
        req = Requirement(line)
        assert req.specifier.contains(dev[canonicalize_name(req.name)][0]), (line, dev.get(req.name))
        if line in PROJECT["dependencies"] or line in PROJECT["optional-dependencies"]["postgres"]:
            assert req.specifier.contains(serve[canonicalize_name(req.name)][0]), (line, serve.get(req.name))
    assert {name: pin for name, pin in serve.items() if dev.get(name) != pin} == {}  # same versions, same hashes
    assert dev["torch"][0] == serve["torch"][0] == "2.13.0+cpu"
    assert [n for n in dev if n.startswith(("nvidia-", "triton", "cuda"))] == []
    assert sorted(NOT_SERVED & set(serve)) == []
    assert sorted(NOT_SERVED - set(dev)) == []
    # the five pins nobody imports are gone from pyproject.toml and stay in the lock only as transitive packages
    for name in ("langchain-core", "pytrec-eval-terrier", "gradio-client", "litellm", "bcrypt"):
        assert name not in BASE and all(name not in e for e in EXTRAS.values()), name
        assert name in dev, name


def test_a_command_of_a_missing_extra_exits_with_the_install_command(monkeypatch):
    cli.require_extra("eval")  # installed from dev.lock: nothing missing
    cli.require_extra("train")
    real = importlib.metadata.version

    def version(name: str) -> str:
        if canonicalize_name(name) in {"matplotlib", "krippendorff"}:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(SystemExit) as exc:
        cli.require_extra("eval")
    assert str(exc.value).startswith("error: this command needs the [eval] extra, not installed here (missing: ")
    assert sorted(re.search(r"missing: ([^)]*)", str(exc.value))[1].split(", ")) == ["krippendorff", "matplotlib"]
    assert "pip install 'certified-chatbot[eval]'" in str(exc.value)
    cli.require_extra("train")  # the other extra is unaffected
