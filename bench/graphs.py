"""Graph pane benchmark: build four graphs in code, time layout / scene / first paint / frames.

Usage: QT_QPA_PLATFORM=offscreen python bench/graphs.py [--runs 5] [--only resnet50,bert,10k,50k]

ResNet-50 (TorchScript + ONNX) and a BERT-base-like encoder are built directly as neutral
graphs with realistic scopes; the synthetic DAGs are built with onnx.helper and converted with
fixport.core.onnx_io.onnx_graph.onnx_to_graph, like a file opened from disk.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from fixport.core.words.graph import Graph, Node, Value  # noqa: E402

FRAME_COUNT = 40
VIEW_SIZE = (1400, 900)


class NeutralBuilder:
    """Appends nodes to a neutral Graph; ONNX flavour names nodes '/scope/Op', TorchScript keeps scope."""

    def __init__(self, kind: str, name: str) -> None:
        self.graph = Graph(kind=kind, name=name)  # type: ignore[arg-type]
        self._names: dict[str, int] = {}
        self._values = 0

    def input(self, name: str, shape: tuple, dtype: str = "float32") -> str:
        self.graph.values[name] = Value(name, dtype, shape)
        self.graph.inputs.append(name)
        return name

    def op(self, kind: str, scope: str, inputs: list[str], shape: tuple | None = None,
           dtype: str = "float32", outputs: int = 1) -> str:
        op = kind.split("::")[-1]
        if self.graph.kind == "onnx":
            base = f"/{scope}/{op}" if scope else op
            count = self._names.get(base, 0)
            self._names[base] = count + 1
            node_id = name = base if count == 0 else f"{base}_{count}"
            node_scope = ""  # derived from the name, like a real export
        else:
            count = self._names.get(f"{scope}|{kind}", 0)
            self._names[f"{scope}|{kind}"] = count + 1
            node_id, name, node_scope = f"{scope}|model.py:{40 + count}|{kind}|{count}", kind, scope
        outs = []
        for _ in range(outputs):
            self._values += 1
            value = f"v{self._values}" if self.graph.kind == "onnx" else f"{op}.{self._values}"
            self.graph.values[value] = Value(value, dtype, shape)
            outs.append(value)
        self.graph.nodes.append(Node(node_id, kind, name, list(inputs), outs, scope=node_scope))
        return outs[0]


# --- ResNet-50 ----------------------------------------------------------------------------------
RESNET_STAGES = ((64, 3, 56), (128, 4, 28), (256, 6, 14), (512, 3, 7))


def resnet50_torchscript() -> Graph:
    b = NeutralBuilder("torchscript", "ResNet50")
    x = b.input("x.1", (1, 3, 224, 224))

    def conv(scope: str, inp: str, channels: int, size: int) -> str:
        ints = [b.op("prim::Constant", scope, [], (), "int64") for _ in range(2)]
        lists = [b.op("prim::ListConstruct", scope, ints, (2,), "int64") for _ in range(3)]
        return b.op("aten::_convolution", scope, [inp, *lists], (1, channels, size, size))

    def bn(scope: str, inp: str, channels: int, size: int) -> str:
        eps = b.op("prim::Constant", scope, [], (), "float64")
        return b.op("aten::batch_norm", scope, [inp, eps], (1, channels, size, size))

    h = conv("conv1", x, 64, 112)
    h = b.op("aten::relu_", "relu", [bn("bn1", h, 64, 112)], (1, 64, 112, 112))
    h = b.op("aten::max_pool2d", "maxpool", [h, b.op("prim::Constant", "maxpool", [], (), "int64")], (1, 64, 56, 56))
    for stage, (width, blocks, size) in enumerate(RESNET_STAGES, start=1):
        for block in range(blocks):
            scope = f"layer{stage}/{block}"
            identity = h
            out = h
            for index, channels in enumerate((width, width, width * 4), start=1):
                out = bn(f"{scope}/bn{index}", conv(f"{scope}/conv{index}", out, channels, size), channels, size)
                if index < 3:
                    out = b.op("aten::relu_", f"{scope}/relu", [out], (1, channels, size, size))
            if block == 0:
                identity = bn(f"{scope}/downsample/1", conv(f"{scope}/downsample/0", h, width * 4, size),
                              width * 4, size)
            alpha = b.op("prim::Constant", scope, [], (), "int64")
            out = b.op("aten::add_", scope, [out, identity, alpha], (1, width * 4, size, size))
            h = b.op("aten::relu_", f"{scope}/relu", [out], (1, width * 4, size, size))
    h = b.op("aten::adaptive_avg_pool2d", "avgpool", [h, b.op("prim::ListConstruct", "avgpool", [], (2,), "int64")],
             (1, 2048, 1, 1))
    h = b.op("aten::flatten", "", [h, b.op("prim::Constant", "", [], (), "int64")], (1, 2048))
    h = b.op("aten::linear", "fc", [h], (1, 1000))
    b.graph.outputs.append(h)
    return b.graph


def resnet50_onnx() -> Graph:
    b = NeutralBuilder("onnx", "ResNet50")
    x = b.input("input", (1, 3, 224, 224))
    h = b.op("onnx::Relu", "relu", [b.op("onnx::Conv", "conv1", [x], (1, 64, 112, 112))], (1, 64, 112, 112))
    h = b.op("onnx::MaxPool", "maxpool", [h], (1, 64, 56, 56))
    for stage, (width, blocks, size) in enumerate(RESNET_STAGES, start=1):
        for block in range(blocks):
            scope = f"layer{stage}/layer{stage}.{block}"
            out = h
            for index, channels in enumerate((width, width, width * 4), start=1):
                out = b.op("onnx::Conv", f"{scope}/conv{index}", [out], (1, channels, size, size))
                if index < 3:
                    out = b.op("onnx::Relu", f"{scope}/relu", [out], (1, channels, size, size))
            identity = b.op("onnx::Conv", f"{scope}/downsample/downsample.0", [h], (1, width * 4, size, size)) \
                if block == 0 else h
            out = b.op("onnx::Add", scope, [out, identity], (1, width * 4, size, size))
            h = b.op("onnx::Relu", f"{scope}/relu_2", [out], (1, width * 4, size, size))
    h = b.op("onnx::GlobalAveragePool", "avgpool", [h], (1, 2048, 1, 1))
    h = b.op("onnx::Flatten", "", [h], (1, 2048))
    b.graph.outputs.append(b.op("onnx::Gemm", "fc", [h], (1, 1000)))
    return b.graph


# --- BERT-base-like encoder -----------------------------------------------------------------------
BERT_LAYERS, HIDDEN, HEADS, SEQ = 12, 768, 12, 128


def _bert_reshape_onnx(b: NeutralBuilder, scope: str, x: str, shape: tuple) -> str:
    dims = []
    for _axis in range(2):
        shape_of = b.op("onnx::Shape", scope, [x], (3,), "int64")
        index = b.op("onnx::Constant", scope, [], (), "int64")
        dims.append(b.op("onnx::Unsqueeze", scope, [b.op("onnx::Gather", scope, [shape_of, index], (), "int64")],
                         (1,), "int64"))
    target = b.op("onnx::Concat", scope, [*dims, b.op("onnx::Constant", scope, [], (2,), "int64")], (4,), "int64")
    return b.op("onnx::Reshape", scope, [x, target], shape)


def bert_onnx() -> Graph:
    b = NeutralBuilder("onnx", "BertModel")
    ids = b.input("input_ids", (1, SEQ), "int64")
    mask = b.input("attention_mask", (1, SEQ), "int64")
    hidden = (1, SEQ, HIDDEN)
    words = b.op("onnx::Gather", "bert/embeddings/word_embeddings", [ids], hidden)
    positions = b.op("onnx::Gather", "bert/embeddings/position_embeddings",
                     [b.op("onnx::Slice", "bert/embeddings",
                           [b.op("onnx::Constant", "bert/embeddings", [], (512,), "int64")], (1, SEQ), "int64")],
                     hidden)
    types = b.op("onnx::Gather", "bert/embeddings/token_type_embeddings", [b.op("onnx::Constant", "bert/embeddings", [],
                                                                                (1, SEQ), "int64")], hidden)
    h = b.op("onnx::Add", "bert/embeddings", [b.op("onnx::Add", "bert/embeddings", [words, types], hidden), positions],
             hidden)
    h = b.op("onnx::LayerNormalization", "bert/embeddings/LayerNorm", [h], hidden)
    m = b.op("onnx::Unsqueeze", "bert", [mask], (1, 1, 1, SEQ), "int64")
    m = b.op("onnx::Cast", "bert", [b.op("onnx::Unsqueeze", "bert", [m], (1, 1, 1, SEQ), "int64")], (1, 1, 1, SEQ))
    m = b.op("onnx::Mul", "bert", [b.op("onnx::Sub", "bert", [m], (1, 1, 1, SEQ))], (1, 1, 1, SEQ))
    heads = (1, SEQ, HEADS, HIDDEN // HEADS)
    for layer in range(BERT_LAYERS):
        base = f"bert/encoder/layer.{layer}"
        att = f"{base}/attention/self"
        projected = {}
        for name in ("query", "key", "value"):
            p = b.op("onnx::Add", f"{att}/{name}", [b.op("onnx::MatMul", f"{att}/{name}", [h], hidden)], hidden)
            projected[name] = b.op("onnx::Transpose", att, [_bert_reshape_onnx(b, att, p, heads)], heads)
        key_t = b.op("onnx::Transpose", att, [projected["key"]], heads)
        scores = b.op("onnx::MatMul", att, [projected["query"], key_t], (1, HEADS, SEQ, SEQ))
        scores = b.op("onnx::Div", att, [scores, b.op("onnx::Constant", att, [], (), "float32")], (1, HEADS, SEQ, SEQ))
        probs = b.op("onnx::Softmax", att, [b.op("onnx::Add", att, [scores, m], (1, HEADS, SEQ, SEQ))],
                     (1, HEADS, SEQ, SEQ))
        context = b.op("onnx::Transpose", att, [b.op("onnx::MatMul", att, [probs, projected["value"]], heads)], heads)
        context = _bert_reshape_onnx(b, att, context, hidden)
        out = f"{base}/attention/output"
        a = b.op("onnx::Add", f"{out}/dense", [b.op("onnx::MatMul", f"{out}/dense", [context], hidden)], hidden)
        h = b.op("onnx::LayerNormalization", f"{out}/LayerNorm", [b.op("onnx::Add", out, [a, h], hidden)], hidden)
        inter = f"{base}/intermediate/dense"
        wide = (1, SEQ, HIDDEN * 4)
        f = b.op("onnx::Add", inter, [b.op("onnx::MatMul", inter, [h], wide)], wide)
        act = f"{base}/intermediate/intermediate_act_fn"
        g = b.op("onnx::Erf", act, [b.op("onnx::Div", act, [f, b.op("onnx::Constant", act, [], (), "float32")], wide)],
                 wide)
        g = b.op("onnx::Add", act, [g, b.op("onnx::Constant", act, [], (), "float32")], wide)
        g = b.op("onnx::Mul", act,
                 [b.op("onnx::Mul", act, [f, g], wide), b.op("onnx::Constant", act, [], (), "float32")], wide)
        out = f"{base}/output"
        d = b.op("onnx::Add", f"{out}/dense", [b.op("onnx::MatMul", f"{out}/dense", [g], hidden)], hidden)
        h = b.op("onnx::LayerNormalization", f"{out}/LayerNorm", [b.op("onnx::Add", out, [d, h], hidden)], hidden)
    pooled = b.op("onnx::Gather", "bert/pooler", [h, b.op("onnx::Constant", "bert/pooler", [], (), "int64")],
                  (1, HIDDEN))
    pooled = b.op("onnx::Gemm", "bert/pooler/dense", [pooled], (1, HIDDEN))
    b.graph.outputs += [h, b.op("onnx::Tanh", "bert/pooler/activation", [pooled], (1, HIDDEN))]
    return b.graph


def _bert_view_ts(b: NeutralBuilder, scope: str, x: str, shape: tuple) -> str:
    sizes = []
    for _ in range(2):
        dim = b.op("prim::Constant", scope, [], (), "int64")
        size = b.op("aten::size", scope, [x, dim], (), "int64")
        sizes.append(b.op("aten::Int", scope, [b.op("prim::NumToTensor", scope, [size], (), "int64")], (), "int64"))
    consts = [b.op("prim::Constant", scope, [], (), "int64") for _ in range(2)]
    target = b.op("prim::ListConstruct", scope, [*sizes, *consts], (4,), "int64")
    return b.op("aten::view", scope, [x, target], shape)


def bert_torchscript() -> Graph:
    b = NeutralBuilder("torchscript", "BertModel")
    ids = b.input("input_ids", (1, SEQ), "int64")
    mask = b.input("attention_mask", (1, SEQ), "int64")
    hidden = (1, SEQ, HIDDEN)

    def const(scope: str) -> str:
        return b.op("prim::Constant", scope, [], (), "int64")

    def linear(scope: str, x: str, shape: tuple) -> str:
        return b.op("aten::linear", scope, [x, b.op("prim::GetAttr", scope, [], shape)], shape)

    def dropout(scope: str, x: str) -> str:
        return b.op("aten::dropout", scope, [x, const(scope), const(scope)], hidden)

    emb = "embeddings"
    words = b.op("aten::embedding", f"{emb}/word_embeddings", [ids, const(emb)], hidden)
    pos = b.op("aten::slice", emb, [const(emb), const(emb), const(emb)], (1, SEQ), "int64")
    h = b.op("aten::add", emb, [words, b.op("aten::embedding", f"{emb}/position_embeddings", [pos], hidden)], hidden)
    h = dropout(f"{emb}/dropout", b.op("aten::layer_norm", f"{emb}/LayerNorm", [h, const(emb)], hidden))
    m = b.op("aten::unsqueeze", "", [b.op("aten::unsqueeze", "", [mask, const("")], (1, 1, SEQ), "int64"), const("")],
             (1, 1, 1, SEQ), "int64")
    m = b.op("aten::mul", "", [b.op("aten::rsub", "", [b.op("aten::to", "", [m, const(""), const("")],
                                                              (1, 1, 1, SEQ)), const("")], (1, 1, 1, SEQ)), const("")],
             (1, 1, 1, SEQ))
    heads = (1, SEQ, HEADS, HIDDEN // HEADS)
    for layer in range(BERT_LAYERS):
        base = f"encoder/layer/{layer}"
        att = f"{base}/attention/self"
        projected = {}
        for name in ("query", "key", "value"):
            p = linear(f"{att}/{name}", h, hidden)
            v = _bert_view_ts(b, att, p, heads)
            dims = b.op("prim::ListConstruct", att, [const(att) for _ in range(4)], (4,), "int64")
            projected[name] = b.op("aten::permute", att, [v, dims], heads)
        key_t = b.op("aten::transpose", att, [projected["key"], const(att), const(att)], heads)
        scores = b.op("aten::matmul", att, [projected["query"], key_t], (1, HEADS, SEQ, SEQ))
        scores = b.op("aten::div", att, [scores, const(att)], (1, HEADS, SEQ, SEQ))
        scores = b.op("aten::add", att, [scores, m, const(att)], (1, HEADS, SEQ, SEQ))
        probs = b.op("aten::softmax", att, [scores, const(att), const(att)], (1, HEADS, SEQ, SEQ))
        probs = dropout(f"{att}/dropout", probs)
        context = b.op("aten::matmul", att, [probs, projected["value"]], heads)
        dims = b.op("prim::ListConstruct", att, [const(att) for _ in range(4)], (4,), "int64")
        context = b.op("aten::contiguous", att, [b.op("aten::permute", att, [context, dims], heads), const(att)], heads)
        context = _bert_view_ts(b, att, context, hidden)
        out = f"{base}/attention/output"
        a = dropout(f"{out}/dropout", linear(f"{out}/dense", context, hidden))
        a = b.op("aten::add", out, [a, h, const(out)], hidden)
        h = b.op("aten::layer_norm", f"{out}/LayerNorm", [a, const(out), const(out), const(out)], hidden)
        wide = (1, SEQ, HIDDEN * 4)
        g = b.op("aten::gelu", f"{base}/intermediate/intermediate_act_fn",
                 [linear(f"{base}/intermediate/dense", h, wide), const(base)], wide)
        out = f"{base}/output"
        d = dropout(f"{out}/dropout", linear(f"{out}/dense", g, hidden))
        d = b.op("aten::add", out, [d, h, const(out)], hidden)
        h = b.op("aten::layer_norm", f"{out}/LayerNorm", [d, const(out), const(out), const(out)], hidden)
    first = b.op("aten::select", "pooler",
                 [b.op("aten::slice", "pooler", [h, const("pooler")], hidden), const("pooler")], (1, HIDDEN))
    pooled = b.op("aten::tanh", "pooler/activation", [linear("pooler/dense", first, (1, HIDDEN))], (1, HIDDEN))
    b.graph.outputs += [h, b.op("prim::TupleConstruct", "", [h, pooled], ())]
    return b.graph


# --- synthetic ONNX DAGs ---------------------------------------------------------------------------
def synthetic_onnx_model(node_count: int, seed: int = 0) -> onnx.ModelProto:
    """A network-like DAG: residual blocks, attention-like fan-out, inception-like concats, shape
    subgraphs and a few long skips; scopes /model/stage{s}/{block}/{layer}/Op like a real export."""
    rng = random.Random(seed)
    nodes: list[onnx.NodeProto] = []
    infos: list[onnx.ValueInfoProto] = []
    names: dict[str, int] = {}
    counter = [0]
    stages = 3 if node_count > 20000 else 4

    def op(op_type: str, scope: str, inputs: list[str], shape: list[int], dtype: int = TensorProto.FLOAT) -> str:
        base = f"/{scope}/{op_type}"
        count = names.get(base, 0)
        names[base] = count + 1
        counter[0] += 1
        out = f"t{counter[0]}"
        nodes.append(helper.make_node(op_type, inputs, [out], name=base if count == 0 else f"{base}_{count}"))
        infos.append(helper.make_tensor_value_info(out, dtype, shape))
        return out

    def conv_block(scope: str, x: str, shape: list[int]) -> str:
        h = op("Relu", f"{scope}/act1", [op("BatchNormalization", f"{scope}/bn1",
                                            [op("Conv", f"{scope}/conv1", [x, f"{scope}.w1"], shape)], shape)], shape)
        h = op("BatchNormalization", f"{scope}/bn2", [op("Conv", f"{scope}/conv2", [h, f"{scope}.w2"], shape)], shape)
        return op("Relu", f"{scope}/act2", [op("Add", scope, [h, x], shape)], shape)

    def attention_block(scope: str, x: str, shape: list[int]) -> str:
        q, k, v = (op("MatMul", f"{scope}/{n}", [x, f"{scope}.{n}"], shape) for n in ("q", "k", "v"))
        shape_of = op("Shape", scope, [x], [3], TensorProto.INT64)
        dim = op("Gather", scope, [shape_of, op("Constant", scope, [], [], TensorProto.INT64)], [], TensorProto.INT64)
        target = op("Concat", scope, [op("Unsqueeze", scope, [dim], [1], TensorProto.INT64),
                                       op("Constant", scope, [], [2], TensorProto.INT64)], [3], TensorProto.INT64)
        k = op("Transpose", scope, [op("Reshape", scope, [k, target], shape)], shape)
        probs = op("Softmax", scope, [op("Div", scope, [op("MatMul", scope, [q, k], shape),
                                                         op("Constant", scope, [], [])], shape)], shape)
        context = op("MatMul", f"{scope}/out", [op("MatMul", scope, [probs, v], shape), f"{scope}.o"], shape)
        return op("LayerNormalization", f"{scope}/norm", [op("Add", scope, [context, x], shape)], shape)

    def inception_block(scope: str, x: str, shape: list[int]) -> str:
        branches = []
        for branch in range(rng.randint(3, 4)):
            h = x
            for depth in range(rng.randint(1, 3)):
                h = op("Relu", f"{scope}/b{branch}/act{depth}",
                       [op("Conv", f"{scope}/b{branch}/conv{depth}", [h], shape)], shape)
            branches.append(h)
        return op("Conv", f"{scope}/project", [op("Concat", scope, branches, shape)], shape)

    blocks = (conv_block, conv_block, attention_block, inception_block)
    average_block_nodes = 14
    per_stage = max(node_count // (stages * average_block_nodes), 1)
    x = "input"
    shape = [1, 64, 32, 32]
    for stage in range(stages):
        stage_input = x
        for index in range(per_stage):
            if len(nodes) >= node_count:
                break
            x = rng.choice(blocks)(f"model/stage{stage}/{index}", x, shape)
            if index % 50 == 49:  # a long skip across fifty blocks
                x = op("Add", f"model/stage{stage}/skip{index}", [x, stage_input], shape)
                stage_input = x
        x = op("MaxPool", f"model/stage{stage}/downsample", [x], shape)
    while len(nodes) < node_count:
        x = op("Relu", "model/head", [x], shape)
    graph = helper.make_graph(nodes, "synthetic", [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], value_info=infos)
    return helper.make_model(graph)


def synthetic_graph(node_count: int) -> Graph:
    from fixport.core.onnx_io.onnx_graph import onnx_to_graph
    return onnx_to_graph(synthetic_onnx_model(node_count))


def load_onnx_file_bytes(data: bytes) -> Graph:
    """What opening an .onnx file costs Fixport: parse the protobuf, build the neutral graph."""
    from fixport.core.onnx_io.onnx_graph import onnx_to_graph
    return onnx_to_graph(onnx.load_from_string(data))


# Each source builds either neutral graphs directly or the bytes of an .onnx file to open.
GRAPHS: dict[str, Callable[[], list[Graph | bytes]]] = {
    "resnet50": lambda: [resnet50_torchscript(), resnet50_onnx()],
    "bert": lambda: [bert_torchscript(), bert_onnx()],
    "10k": lambda: [synthetic_onnx_model(10_000).SerializeToString()],
    "50k": lambda: [synthetic_onnx_model(50_000).SerializeToString()],
}
TARGETS = {"resnet50": (0.5, 0.8, 16), "bert": (0.6, 1.0, 16), "10k": (0.8, 1.2, 16), "50k": (1.5, 3.0, 33)}


# --- measurement ---------------------------------------------------------------------------------
def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _open(app, panes, graphs, action: Callable) -> dict[str, float]:
    """Run ``action(pane, graph)`` for each pane, then paint each viewport; split the timings."""
    times = {"layout": 0.0, "scene": 0.0, "paint": 0.0, "total": 0.0}
    for pane, graph in zip(panes, graphs):
        started = time.perf_counter()
        action(pane, graph)
        built = time.perf_counter()
        pane.view.viewport().grab()  # first paint, rendered offscreen
        painted = time.perf_counter()
        stats = pane.render_stats()
        times["layout"] += stats.get("layout_s", 0.0)
        times["scene"] += stats.get("scene_s", 0.0)
        times["paint"] += painted - built
        times["total"] += painted - started
    return times


def _frames(app, pane, count: int = FRAME_COUNT) -> list[float]:
    """Alternate small zooms and pans; time a synchronous repaint of the viewport each frame."""
    view = pane.view
    result = []
    for index in range(count):
        if index % 2:
            view.zoom_by(1.06 if index % 4 == 1 else 1 / 1.06)
        else:
            bar = view.horizontalScrollBar() if index % 4 == 0 else view.verticalScrollBar()
            bar.setValue(bar.value() + (25 if index % 8 < 4 else -25))
        started = time.perf_counter()
        view.viewport().repaint()
        result.append(time.perf_counter() - started)
    return result


def _show_everything(pane) -> None:
    from PySide6.QtCore import QRectF, Qt

    left, top, right, bottom = pane.layout.bounds
    pane.view.fitInView(QRectF(left, top, right - left, bottom - top), Qt.AspectRatioMode.KeepAspectRatio)


def _fmt(values: list[float], scale: float = 1.0, digits: int = 3) -> str:
    med = statistics.median(values) * scale
    return f"{med:.{digits}f} ({min(values) * scale:.{digits}f}–{max(values) * scale:.{digits}f})"


def bench(names: list[str], runs: int) -> None:
    from PySide6.QtWidgets import QApplication

    from fixport.gui.graph_view import GraphPane

    app = QApplication.instance() or QApplication([])
    rows = []
    for name in names:
        samples: dict[str, list[float]] = {}
        frames: dict[str, list[float]] = {"collapsed": [], "expanded": [], "expanded 1:1": [], "all in view": []}
        sizes = ""
        for _ in range(runs):
            started = time.perf_counter()
            sources = GRAPHS[name]()
            samples.setdefault("build", []).append(time.perf_counter() - started)
            started = time.perf_counter()
            graphs = [load_onnx_file_bytes(s) if isinstance(s, bytes) else s for s in sources]
            samples.setdefault("load", []).append(time.perf_counter() - started)
            del sources
            panes = []
            for _graph in graphs:
                pane = GraphPane(synchronous=True)
                pane.resize(*VIEW_SIZE)
                pane.show()
                panes.append(pane)
            app.processEvents()
            collapsed = _open(app, panes, graphs, lambda pane, graph: pane.set_graph_sync(graph))
            sizes = " + ".join(f"{len(g.nodes)} nodes/{int(p.render_stats()['items'])} items"
                               for g, p in zip(graphs, panes))
            frames["collapsed"] += _frames(app, panes[-1])
            expanded = _open(app, panes, graphs, lambda pane, graph: pane.expand_all())
            frames["expanded"] += _frames(app, panes[-1])  # the view fit_view chose
            panes[-1].view.resetTransform()
            frames["expanded 1:1"] += _frames(app, panes[-1])
            _show_everything(panes[-1])  # worst case: every node and edge on screen
            frames["all in view"] += _frames(app, panes[-1])
            for phase, times in (("collapsed", collapsed), ("expanded", expanded)):
                for key, value in times.items():
                    samples.setdefault(f"{phase} {key}", []).append(value)
            rss = _rss_mb()
            for pane in panes:
                pane.close()
                pane.deleteLater()
            app.processEvents()
            del graphs, panes
        rows.append((name, sizes, samples, frames, rss))
    collapsed_target, expanded_target, frame_target = 0, 0, 0
    print(f"\nmedian of {runs} runs (min–max); seconds unless noted; VIEW {VIEW_SIZE[0]}x{VIEW_SIZE[1]}")
    print("build: the bench makes the graph (not Fixport's time); load: parse the .onnx file and build the "
          "neutral graph;\nopened→drawn = load + group+layout + scene + first paint (both panes where there are two)")
    header = (f"{'graph':9} {'phase':9} {'build':>20} {'load':>20} {'group+layout':>20} {'scene':>20} "
              f"{'first paint':>20} {'opened→drawn':>20} target")
    print(header)
    print("-" * len(header))
    for name, sizes, samples, frames, rss in rows:
        collapsed_target, expanded_target, frame_target = TARGETS[name]
        for phase, target in (("collapsed", collapsed_target), ("expanded", expanded_target)):
            opened = [load + total for load, total in zip(samples["load"], samples[phase + " total"])]
            print(f"{name:9} {phase:9} {_fmt(samples['build']) if phase == 'collapsed' else '':>20} "
                  f"{_fmt(samples['load']) if phase == 'collapsed' else '':>20} "
                  f"{_fmt(samples[phase + ' layout']):>20} {_fmt(samples[phase + ' scene']):>20} "
                  f"{_fmt(samples[phase + ' paint']):>20} {_fmt(opened):>20} ≤ {target} s")
        frame_text = "  ".join(f"{label}: {_fmt(values, 1000, 1)} ms" for label, values in frames.items())
        print(f"{'':9} frames    {frame_text}   (target ≤ {frame_target} ms)")
        print(f"{'':9} sizes     {sizes}; RSS after run {rss:.0f} MB")
    print(f"peak RSS so far: {_peak_rss_mb():.0f} MB")


def both_panes_memory() -> None:
    """Two 50k-node graphs, fully expanded, in two panes: the memory target."""
    from PySide6.QtWidgets import QApplication

    from fixport.gui.graph_view import GraphPane

    app = QApplication.instance() or QApplication([])
    graphs = [synthetic_graph(50_000), synthetic_graph(50_000)]
    panes = []
    for graph in graphs:
        pane = GraphPane(synchronous=True)
        pane.resize(*VIEW_SIZE)
        pane.show()
        pane.set_graph_sync(graph)
        pane.expand_all()
        pane.fit_view()
        pane.view.viewport().grab()
        panes.append(pane)
    app.processEvents()
    print(f"two 50k panes, expanded: RSS {_rss_mb():.0f} MB, peak {_peak_rss_mb():.0f} MB (target < 1536 MB)")
    for pane in panes:
        pane.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default=",".join(GRAPHS))
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    bench(args.only.split(","), args.runs)
    if not args.no_memory:
        both_panes_memory()


if __name__ == "__main__":
    main()
