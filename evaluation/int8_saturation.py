"""int8 saturation check (session 15): the shipped reranker-e5's int8 ONNX scores against the same weights
dequantized to fp32 MatMuls, on the hand-written cases of tests/test_reranker_e5_model.py.

    python -m evaluation.int8_saturation [--model models/reranker-e5]

On CPUs without VNNI, onnxruntime's u8s8 MatMulInteger kernel sums pairs of products into int16 with saturation;
the rewrite below (quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul chains replaced by
one fp32 MatMul with (W - zero_point) * scale) shows how far that moves the scores on the machine it runs on.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np


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
            helper.make_node("MatMul", [quantize.input[0], w_q + "_fp32"], [mul.output[0]], name=n.name + "_fp32")
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
    del graph.node[:]
    graph.node.extend(ordered)
    onnx.save(model, str(dst))
    return len(added)


def main(argv: list[str] | None = None) -> int:
    from chatbot.index import Hit
    from chatbot.settings import SHIPPED_RERANKER
    from chatbot.stages.rerank import CrossEncoderReranker
    from corpus.model import Segment
    from tests.test_reranker_e5_model import CASES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=SHIPPED_RERANKER.parent / "reranker-e5")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fp32_dir = Path(tmp) / "model"
        shutil.copytree(args.model, fp32_dir)
        replaced = dequantize_matmuls(args.model / "onnx" / "model_qint8.onnx", fp32_dir / "onnx" / "model_qint8.onnx")
        runs = {
            name: CrossEncoderReranker(folder, threads=1, runtime="onnx", max_length=64)
            for name, folder in (("int8", args.model), ("fp32", fp32_dir))
        }
        print(f"{replaced} MatMulInteger chains dequantized")
        print("| case | relevant | int8 scores | fp32 scores |\n|---|---|---|---|")
        for k, (question, passages, relevant) in enumerate(CASES):
            hits = [Hit(Segment(f"s{i}", f"d{i}", t, "", f"https://e.org/{i}", 0), 0.0) for i, t in enumerate(passages)]
            cells = [" ".join(f"{x:.3f}" for x in runs[n].score(question, hits)) for n in ("int8", "fp32")]
            print(f"| {k} | {relevant} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
