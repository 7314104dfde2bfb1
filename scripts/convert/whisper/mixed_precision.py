"""Int8 models with chosen layers kept in float (build-time, needs TensorFlow's flatbuffer tools).

TFLite's dynamic-range quantisation turns every large weight into int8. To keep some layers
float we edit the int8 flatbuffer: for each chosen FULLY_CONNECTED / CONV_2D, the int8 weight
tensor is replaced by the float32 weights of the same op in the float32 conversion of the same
graph. Both conversions come from one TensorFlow function, so
their operators correspond one to one (checked).

Layer names follow the TensorFlow op names of scripts/convert/whisper/tf_graphs.py's encoder: "conv1", "conv2",
"L<i>.<q|k|v|out|ff1|ff2>" for encoder layer i, "cross.<k|v><i>" for the decoder layer i's
cross-attention projections computed in the encoder.
"""

from __future__ import annotations

import re

import numpy as np

WEIGHT_OPS = ("FULLY_CONNECTED", "CONV_2D")
_ROLES = ("q", "k", "v", None, None, "out", "ff1", "ff2")  # the 8 MatMuls of one encoder layer, in order
ENCODER_LAYERS = 4


def _schema():
    from tensorflow.lite.python import schema_py_generated as schema

    return schema


def _op_names():
    schema = _schema()
    return {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def encoder_layer_name(weight_tensor_name: str) -> str | None:
    """Our name for an encoder weight from its TensorFlow name ("...;MatMul_13;..." -> "L1.out")."""
    conv = re.search(r"Conv2D(?:_(\d+))?", weight_tensor_name)
    if conv:
        return f"conv{int(conv.group(1) or 0) + 1}"
    mm = re.findall(r"MatMul(?:_(\d+))?", weight_tensor_name)
    if not mm:
        return None
    idx = int(mm[-1] or 0)
    if idx < 8 * ENCODER_LAYERS:
        role = _ROLES[idx % 8]
        return f"L{idx // 8}.{role}" if role else None
    j = idx - 8 * ENCODER_LAYERS
    return f"cross.{'kv'[j % 2]}{j // 2}"


def weight_layers(model_bytes: bytes) -> list[tuple[int, str, str]]:
    """(operator index, layer name, weight type) of every weight op of an encoder model."""
    from tensorflow.lite.tools import flatbuffer_utils as fbu

    schema = _schema()
    types = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    names = _op_names()
    model = fbu.convert_bytearray_to_object(bytearray(model_bytes))
    g = model.subgraphs[0]
    out = []
    for i, op in enumerate(g.operators):
        if names[model.operatorCodes[op.opcodeIndex].builtinCode] in WEIGHT_OPS:
            w = g.tensors[op.inputs[1]]
            layer = encoder_layer_name(w.name.decode())
            if layer:
                out.append((i, layer, types[w.type]))
    return out


def keep_float(int8_bytes: bytes, fp32_bytes: bytes, layers: set[str]) -> bytes:
    """The int8 model with the weights of `layers` taken, in float32, from the float32 model."""
    from tensorflow.lite.tools import flatbuffer_utils as fbu

    schema = _schema()
    names = _op_names()
    q = fbu.convert_bytearray_to_object(bytearray(int8_bytes))
    f = fbu.convert_bytearray_to_object(bytearray(fp32_bytes))
    qg, fg = q.subgraphs[0], f.subgraphs[0]
    if len(qg.operators) != len(fg.operators):
        raise ValueError("the int8 and float32 models do not have the same operators")
    done = set()
    for qop, fop in zip(qg.operators, fg.operators, strict=True):
        op = names[q.operatorCodes[qop.opcodeIndex].builtinCode]
        if op != names[f.operatorCodes[fop.opcodeIndex].builtinCode]:
            raise ValueError("the int8 and float32 models do not have the same operators")
        if op not in WEIGHT_OPS:
            continue
        wq, wf = qg.tensors[qop.inputs[1]], fg.tensors[fop.inputs[1]]
        layer = encoder_layer_name(wq.name.decode())
        if layer not in layers or wq.type != schema.TensorType.INT8:
            continue
        data = np.frombuffer(bytes(f.buffers[wf.buffer].data), dtype=np.float32)
        if list(wq.shape) != list(wf.shape):
            raise ValueError(f"{layer}: weight shapes differ ({list(wq.shape)} vs {list(wf.shape)})")
        wq.type = schema.TensorType.FLOAT32
        wq.quantization = None
        q.buffers[wq.buffer].data = np.frombuffer(data.tobytes(), dtype=np.uint8)
        done.add(layer)
    missing = set(layers) - done
    if missing:
        raise ValueError(f"no int8 weight op for layers {sorted(missing)}")
    return bytes(fbu.convert_object_to_bytearray(q))
