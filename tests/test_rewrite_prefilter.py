"""torch.onnx's optimizer with its multi-output rewrite rules pre-filtered gives the same model,
and the installed onnxscript still has what the pre-filter relies on."""
from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxscript.optimizer
from onnx import TensorProto, helper, numpy_helper

from fixport.core.exporters.dynamo.rewrite_prefilter import multi_output_rules_prefiltered


def _rotate_half() -> ir.Model:
    """Two Slices of one value that together cover its last axis, as a decoder's rotary embedding
    takes them: onnxscript's SlicesSplit rule makes them one Split."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 16])
    constants = [numpy_helper.from_array(np.array([value], dtype=np.int64), name)
                 for name, value in (("zero", 0), ("half", 8), ("end", 16), ("last", -1))]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             # the second half first: onnxscript tries the node itself as the other Slice first and
             # stops at that pairing's failed condition, so only this order is rewritten
             helper.make_node("Slice", ["r", "half", "end", "last"], ["second"]),
             helper.make_node("Slice", ["r", "zero", "half", "last"], ["first"]),
             helper.make_node("Neg", ["second"], ["negated"]),
             helper.make_node("Concat", ["negated", "first"], ["rotated"], axis=-1),
             helper.make_node("Mul", ["rotated", "x"], ["y"])]
    graph = helper.make_graph(nodes, "rotate_half", [x], [y], constants,
                              value_info=[helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3, 16])])
    return ir.serde.deserialize_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def test_onnxscripts_matcher_still_has_what_the_prefilter_relies_on() -> None:
    from onnxscript.rewriter._matcher import SimplePatternMatcher

    original = SimplePatternMatcher.match
    with multi_output_rules_prefiltered() as on:
        assert on, "onnxscript's matcher moved: the optimizer runs without the pre-filter, as slow as before"
        assert SimplePatternMatcher.match is not original
    assert SimplePatternMatcher.match is original  # put back after the block


def test_the_prefiltered_optimizer_makes_the_same_model_with_the_multi_output_rewrite_applied() -> None:
    plain, prefiltered = _rotate_half(), _rotate_half()
    onnxscript.optimizer.optimize_ir(plain)
    with multi_output_rules_prefiltered():
        onnxscript.optimizer.optimize_ir(prefiltered)
    assert [n.op_type for n in prefiltered.graph].count("Split") == 1  # SlicesSplit matched through the filter
    assert "Slice" not in [n.op_type for n in prefiltered.graph]
    assert ir.serde.serialize_model(prefiltered) == ir.serde.serialize_model(plain)
