"""int8 saturation check (session 15): the shipped reranker-e5's int8 ONNX scores against the same weights
dequantized to fp32 MatMuls, on the hand-written cases of tests/test_reranker_e5_model.py.

    python -m evaluation.int8_saturation [--model models/reranker-e5]

On CPUs without VNNI, onnxruntime's u8s8 MatMulInteger kernel sums pairs of products into int16 with saturation;
chatbot.onnx_dequantize's rewrite (quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul
chains replaced by one fp32 MatMul with (W - zero_point) * scale) shows how far that moves the scores on the
machine it runs on.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from chatbot.onnx_dequantize import dequantize_matmuls


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
            name: CrossEncoderReranker(folder, threads=1, runtime="onnx", max_length=64, int8_matmul="int8")
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
