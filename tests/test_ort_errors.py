"""Every ONNX Runtime error that names a node is placed on that node (issue 33, item 2): each
phrasing is ONNX Runtime's own, raised by a tiny model made to trigger it, never a guessed string."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from fixport.core.onnx_io.diagnosis import runtime_error_problem
from fixport.core.onnx_io.onnx_graph import onnx_to_graph
from fixport.core.onnx_io.ort_errors import OrtErrorSite, ort_error_site
from fixport.core.words.vocabulary import UNPLACED_KIND, ProblemReason

FLOAT, DOUBLE = TensorProto.FLOAT, TensorProto.DOUBLE


def _value(name: str, elem_type: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def _model(node: onnx.NodeProto, inputs: list, opset: int = 17, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Identity", [inputs[0].name], ["first"], name="before"), node], "g",
                              inputs, [_value(node.output[0], inputs[0].type.tensor_type.elem_type, None)],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("custom", 1)])


def _onnx_runtime_error(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str:
    """ONNX Runtime's own message for ``model``, at load or while it runs."""
    options = ort.SessionOptions()
    options.log_severity_level = 4
    with pytest.raises(Exception) as raised:  # ONNX Runtime's own exception types
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        session.run(None, feeds)
    return str(raised.value)


def _grid_sample(name: str) -> onnx.ModelProto:
    return _model(helper.make_node("GridSample", ["first", "grid"], ["y"], name=name),
                  [_value("x", FLOAT, [1, 1, 4, 4]), _value("grid", DOUBLE, [1, 2, 2, 2])], opset=16)


_GRID_FEEDS = {"x": np.zeros((1, 1, 4, 4), np.float32), "grid": np.zeros((1, 2, 2, 2))}
_THREE = {"a": np.zeros(3, np.float32)}

# (phrasing, model, feeds, the node's name, its op type): one ONNX Runtime stage each.
PHRASINGS = [
    ("no kernel for the types (load)", _grid_sample("enc/attn/GridSample"), _GRID_FEEDS, "enc/attn/GridSample",
     "GridSample"),
    ("a kernel failing (run)",
     _model(helper.make_node("Reshape", ["first", "shape"], ["y"], name="the_reshape"),
            [_value("a", FLOAT, ["n"]), _value("shape", TensorProto.INT64, [1])]),
     {**_THREE, "shape": np.array([4])}, "the_reshape", "Reshape"),
    ("an index out of range (run)",
     _model(helper.make_node("Gather", ["first", "i"], ["y"], name="the_gather"),
            [_value("a", FLOAT, ["n"]), _value("i", TensorProto.INT64, ["m"])]),
     {**_THREE, "i": np.array([7])}, "the_gather", "Gather"),
    ("shape inference (load)",
     _model(helper.make_node("Add", ["first", "b"], ["y"], name="the_add"), [_value("a", FLOAT, [3]),
                                                                            _value("b", FLOAT, [4])]),
     {**_THREE, "b": np.zeros(4, np.float32)}, "the_add", "Add"),
    ("type inference of an attribute (load)",
     _model(helper.make_node("Transpose", ["first"], ["y"], name="the_transpose", perm=[0, 1, 2]),
            [_value("a", FLOAT, [3, 2])]), {"a": np.zeros((3, 2), np.float32)}, "the_transpose", "Transpose"),
    ("a type the schema refuses (load)",
     _model(helper.make_node("CumSum", ["first", "axis"], ["y"], name="the_cumsum"),
            [_value("a", TensorProto.BOOL, [4])],
            initializers=[helper.make_tensor("axis", TensorProto.INT64, [], [0])]),
     {"a": np.zeros(4, bool)}, "the_cumsum", "CumSum"),
    ("one type parameter bound to two types (load)",
     _model(helper.make_node("Add", ["first", "b"], ["y"], name="the_mixed_add"),
            [_value("a", FLOAT, [3]), _value("b", DOUBLE, [3])]),
     {**_THREE, "b": np.zeros(3)}, "the_mixed_add", "Add"),
    ("the model checker (load)",
     _model(helper.make_node("Relu", ["first"], ["y"], name="the_relu", foo=1), [_value("a", FLOAT, [3])]),
     _THREE, "the_relu", "Relu"),
    ("an op ONNX Runtime does not know (load)",
     _model(helper.make_node("Foo", ["first"], ["y"], name="the_foo", domain="custom"), [_value("a", FLOAT, [3])]),
     _THREE, "", "Foo"),
]


@pytest.mark.parametrize(("model", "feeds", "name", "op_type"), [p[1:] for p in PHRASINGS],
                         ids=[p[0] for p in PHRASINGS])
def test_each_onnx_runtime_phrasing_is_placed_on_its_node(model, feeds, name: str, op_type: str) -> None:
    error = _onnx_runtime_error(model, feeds)
    site = ort_error_site(error)
    assert (site.node_name, site.op_type) == (name, op_type), error
    problem = runtime_error_problem(error, onnx_to_graph(model), None, model=model)
    graph_node = next(n for n in model.graph.node if n.op_type == op_type)
    assert problem.onnx_node == graph_node.name and problem.kind.endswith(f"::{op_type}"), error
    assert problem.reason == ProblemReason.RUNTIME_ERROR


def test_a_node_without_a_name_is_found_by_the_op_type_onnx_runtime_names() -> None:
    model = _grid_sample("")
    error = _onnx_runtime_error(model, _GRID_FEEDS)
    assert ort_error_site(error) == OrtErrorSite("", "GridSample", None)
    graph = onnx_to_graph(model)
    problem = runtime_error_problem(error, graph, None, model=model)
    assert problem.kind == "onnx::GridSample" and graph.node_by_id[problem.onnx_node].op_type == "GridSample"


def test_a_mixed_type_node_says_which_types_onnx_runtime_has_no_kernel_for() -> None:
    model = _grid_sample("enc/attn/GridSample")
    problem = runtime_error_problem(_onnx_runtime_error(model, _GRID_FEEDS), onnx_to_graph(model), None, model=model)
    assert problem.kernel_gap == "T2=double"
    assert "no GridSample kernel for T2=double (it takes T2: float)" in problem.message


def test_an_input_no_node_makes_is_placed_on_the_node_reading_it() -> None:
    model = _model(helper.make_node("Relu", ["nowhere"], ["y"], name="reads_nothing"), [_value("a", FLOAT, [3])])
    error = _onnx_runtime_error(model, _THREE)
    assert ort_error_site(error).input_name == "nowhere"
    assert runtime_error_problem(error, onnx_to_graph(model), None).kind == "onnx::Relu"


def test_an_error_that_names_nothing_stays_unplaced() -> None:
    model = _grid_sample("enc/attn/GridSample")
    problem = runtime_error_problem("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : bad allocation",
                                    onnx_to_graph(model), None)
    assert problem.kind == UNPLACED_KIND and not ort_error_site("bad allocation").named


def test_a_name_the_graph_lacks_is_not_guessed_by_its_op_type() -> None:
    """A node inside a subgraph or function body: another node of the same op type is not it."""
    model = _grid_sample("enc/attn/GridSample")
    error = _onnx_runtime_error(model, _GRID_FEEDS).replace("enc/attn/GridSample", "loop_body/GridSample")
    assert runtime_error_problem(error, onnx_to_graph(model), None).kind == UNPLACED_KIND
