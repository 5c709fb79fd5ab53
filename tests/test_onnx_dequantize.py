"""The fp32 copy of an int8 ONNX export (chatbot.onnx_dequantize) on a hand-made two-MatMul graph, and how the
runtime.int8_matmul setting resolves on a CPU with and without VNNI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from chatbot.onnx_dequantize import (  # noqa: E402
    CACHE_SUBDIR,
    dequantize_matmuls,
    fp32_copy,
    resolve_int8_matmul,
    session_file,
)
from chatbot.onnx_files import cpu_session  # noqa: E402

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n"
VNNI = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f avx512_vnni\n"


def _float_model(path: Path) -> None:
    """x [n, 32] -> MatMul(w1 [32, 16]) -> Relu -> MatMul(w2 [16, 4]) -> y. The weights are multiples of 1/256
    up to +-127/256, so symmetric int8 quantization keeps them exactly and only the rewrite can move outputs."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def weights(shape: tuple[int, int], name: str):
        steps = rng.integers(-127, 128, shape)
        steps[0, 0] = 127
        return numpy_helper.from_array((steps / 256).astype(np.float32), name)

    w1, w2 = weights((32, 16), "w1"), weights((16, 4), "w2")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
        [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> tuple[Path, Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = tmp_path_factory.mktemp("tiny")
    fp32, int8 = folder / "model.onnx", folder / "model_qint8.onnx"
    _float_model(fp32)
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    return cpu_session(path, 1).run(["y"], {"x": x})[0]


def _ops(path: Path) -> list[str]:
    return [n.op_type for n in onnx.load(str(path)).graph.node]


def test_rewrite_replaces_every_matmul_integer_and_keeps_the_outputs(models, tmp_path):
    fp32, int8 = models
    assert _ops(int8).count("MatMulInteger") == 2  # the fixture really is quantized
    out = tmp_path / "dequantized.onnx"
    assert dequantize_matmuls(int8, out) == 2
    assert _ops(out) == ["MatMul", "Relu", "MatMul"]  # quantizers and scale products gone too
    x = np.random.default_rng(1).normal(0, 1, (5, 32)).astype(np.float32)
    np.testing.assert_allclose(_run(out, x), _run(fp32, x), atol=1e-2)


def test_copy_is_built_once_under_the_source_sha256(models, tmp_path):
    _, int8 = models
    from chatbot.onnx_files import file_sha256

    first = fp32_copy(int8, tmp_path)
    assert first == tmp_path / CACHE_SUBDIR / f"{file_sha256(int8)}.onnx"
    stamp = first.stat().st_mtime_ns
    assert fp32_copy(int8, tmp_path) == first and first.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert [p.name for p in (tmp_path / CACHE_SUBDIR).iterdir()] == [first.name]  # no temporary left


def test_session_file_follows_the_resolved_mode(models, tmp_path):
    _, int8 = models
    assert session_file(int8, "int8", AVX2_ONLY, tmp_path) == int8
    assert session_file(int8, "auto", VNNI, tmp_path) == int8
    assert session_file(int8, "auto", AVX2_ONLY, tmp_path).parent == tmp_path / CACHE_SUBDIR
    assert session_file(int8, "fp32", VNNI, tmp_path).parent == tmp_path / CACHE_SUBDIR


@pytest.mark.parametrize(
    ("mode", "cpuinfo", "expected"),
    [
        ("auto", AVX2_ONLY, "fp32"),
        ("auto", VNNI, "int8"),
        ("auto", "flags\t: avx2 avx_vnni\n", "int8"),
        ("auto", "flags\t: avx2 amx_tile amx_int8\n", "int8"),
        ("auto", "flags\t: avx2 avx512_vnni_x\n", "fp32"),  # a whole flag, not a prefix
        ("int8", AVX2_ONLY, "int8"),
        ("fp32", VNNI, "fp32"),
    ],
)
def test_int8_matmul_resolution(mode, cpuinfo, expected):
    assert resolve_int8_matmul(mode, cpuinfo) == expected


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="int8_matmul must be auto, int8 or fp32, not 'fp16'"):
        resolve_int8_matmul("fp16", VNNI)


def test_setting_defaults_to_auto_and_rejects_other_values():
    from pydantic import ValidationError

    from chatbot.settings import load_settings

    assert load_settings().runtime.int8_matmul == "auto"  # measured in evaluation/results/int8-auto-s16.md
    assert load_settings(runtime={"int8_matmul": "fp32"}).runtime.int8_matmul == "fp32"
    with pytest.raises(ValidationError, match="int8_matmul"):
        load_settings(runtime={"int8_matmul": "fast"})


def test_the_services_load_the_files_their_own_settings_name(monkeypatch, tmp_path):
    """runtime.int8_matmul comes from the Settings the services were built with, not from the environment."""
    from chatbot.embedders import load_embedder
    from chatbot.services import Services
    from chatbot.settings import SHIPPED_RERANKER, Settings

    monkeypatch.setenv("CHATBOT_RUNTIME__INT8_MATMUL", "int8")
    fp32 = Services(Settings(paths={"data_dir": tmp_path / "a"}, runtime={"int8_matmul": "fp32"}))
    assert fp32.settings.runtime.int8_matmul == "fp32"
    assert fp32.cross_encoder.onnx.model_file.parent.name == "onnx-fp32"
    assert fp32.embedder.onnx_file.parent.name == "onnx-fp32"
    assert fp32.embedder is load_embedder("e5-onnx", fp32.settings.embedding.threads, "fp32")

    monkeypatch.setenv("CHATBOT_RUNTIME__INT8_MATMUL", "fp32")
    int8 = Services(Settings(paths={"data_dir": tmp_path / "b"}, runtime={"int8_matmul": "int8"}))
    assert int8.cross_encoder.onnx.model_file == SHIPPED_RERANKER / "onnx" / "model_qint8.onnx"
    assert int8.embedder.onnx_file.name == "model_qint8.onnx"
    assert int8.embedder is not fp32.embedder
