"""fp32 copies of our int8 ONNX exports for CPUs whose int8 MatMul is not exact.

quantize_dynamic exports u8 activations x s8 weights (MatMulInteger). On CPUs without VNNI (AVX2-only), onnxruntime's
u8s8 kernel adds pairs of products into int16 with saturation, which moved the Italian reranker's scores a lot
(evaluation/results/int8-saturation-s15.md). The copy replaces each DynamicQuantizeLinear -> MatMulInteger -> Cast
-> Mul chain by one fp32 MatMul with the dequantized weights ((W - zero point) x scale): same weights, nothing
retrained. It is built once into the cache, named by the source file's sha256.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from chatbot.file_digest import sha256_of

Int8Matmul = Literal["auto", "int8", "fp32"]
# CPU flags with which onnxruntime's u8s8 MatMul sums exactly (VNNI / AMX dot products).
EXACT_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
CACHE_SUBDIR = "onnx-fp32"


def exact_int8_cpu(cpuinfo: str | None = None) -> bool:
    """Whether this CPU (or the given /proc/cpuinfo text) has a VNNI / AMX-INT8 flag."""
    from chatbot.llm_runtime import cpu_flags

    flags = cpu_flags(cpuinfo)
    return any(f in flags for f in EXACT_INT8_FLAGS)


def resolve_int8_matmul(mode: str, cpuinfo: str | None = None) -> Literal["int8", "fp32"]:
    """``auto``: int8 where the CPU has VNNI / AMX-INT8, else fp32; ``int8`` / ``fp32`` as said."""
    if mode == "auto":
        return "int8" if exact_int8_cpu(cpuinfo) else "fp32"
    if mode in ("int8", "fp32"):
        return mode  # type: ignore[return-value]
    raise ValueError(f"int8_matmul must be auto, int8 or fp32, not {mode!r}")


def dequantize_matmuls(src: Path, dst: Path) -> int:
    """Write ``src`` with every MatMulInteger chain replaced by an fp32 MatMul; returns how many were replaced."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in graph.node if n.op_type == "Constant"}

    def array(name: str) -> np.ndarray:
        return numpy_helper.to_array(inits[name]) if name in inits else consts[name]

    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    drop, added = set(), []
    for n in list(graph.node):
        if n.op_type != "MatMulInteger":
            continue
        a_q, w_q, _, w_zp = n.input
        quantize = producer[a_q]
        cast = consumers[n.output[0]][0]
        mul = consumers[cast.output[0]][0]
        scales = producer[next(i for i in mul.input if i != cast.output[0])]
        w_scale = next(i for i in scales.input if i != quantize.output[1])
        weights = (array(w_q).astype(np.float32) - array(w_zp).astype(np.float32)) * array(w_scale).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(weights.astype(np.float32), w_q + "_fp32"))
        added.append(
            helper.make_node(
                "MatMul", [quantize.input[0], w_q + "_fp32"], [mul.output[0]], name=f"{n.name or mul.output[0]}_fp32"
            )
        )
        drop.update({id(n), id(cast), id(mul)})
    nodes = [n for n in graph.node if id(n) not in drop] + added
    ready = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    ordered: list = []
    while nodes:  # topological order: the new MatMuls go where their inputs exist
        rest = [n for n in nodes if not all(i in ready for i in n.input)]
        for n in nodes:
            if n not in rest:
                ordered.append(n)
                ready.update(n.output)
        if len(rest) == len(nodes):
            raise ValueError(f"cannot order node {rest[0].name}")
        nodes = rest
    outputs = {o.name for o in graph.output}
    while True:  # drop what only fed the replaced chains (the activations' quantizers and scale products)
        used = {i for n in ordered for i in n.input} | outputs
        live = [n for n in ordered if any(o in used for o in n.output)]
        if len(live) == len(ordered):
            break
        ordered = live
    del graph.node[:]
    graph.node.extend(ordered)
    kept = [i for i in graph.initializer if i.name in used]  # the int8 weights are no longer read
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.save(model, str(dst))
    return len(added)


def fp32_copy(model_file: Path, cache: Path | None = None) -> Path:
    """The dequantized copy of ``model_file`` under ``cache`` (default the chatbot cache), built on first use."""
    from chatbot.llm_runtime import cache_dir

    root = cache or cache_dir()
    folder = root / CACHE_SUBDIR
    target = folder / f"{sha256_of(Path(model_file), root)}.onnx"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{target.name}.{os.getpid()}.tmp"
    try:
        dequantize_matmuls(Path(model_file), tmp)
        tmp.replace(target)  # atomic: a concurrent process sees a whole file or none
    finally:
        tmp.unlink(missing_ok=True)
    return target


def session_file(model_file: Path, mode: str, cpuinfo: str | None = None, cache: Path | None = None) -> Path:
    """The file an onnxruntime session should load for ``model_file`` under ``int8_matmul = mode``."""
    if resolve_int8_matmul(mode, cpuinfo) == "int8":
        return Path(model_file)
    return fp32_copy(model_file, cache)
