"""Nodes ONNX Runtime has no kernel for at their types are named with the rest of a diagnosis
(issue 20): read from ONNX Runtime's own kernel table, so `check` lists a bool CumSum behind an op
the exporter rejected at once, and `fix --auto` fixes both kinds in one round instead of finding
the second one only after a whole-model export of the first fix."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from fixport.core.onnx_io.kernel_types import kernel_gaps
from fixport.core.onnx_io.onnx_graph import onnx_to_graph
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, CompareRequest
from fixport.core.records.results import ModelRequest

NO_KERNEL = "Could not find an implementation"

BOOL_DIFF_THEN_CUMSUM = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, positions):  # transformers' packed-sequence check, on booleans
            return (torch.diff(positions, dim=-1) != 1).cumsum(-1)

    def build():
        return Model().eval(), (torch.tensor([[0, 1, 2, 0, 1, 5]]),)
"""

# Deformable DETR's sampling grid in small: reference points from linspace divided by a size. torch
# computes everything in float32; the TorchScript exporter's type promotion makes the grid float64,
# and ONNX Runtime has no GridSample kernel for a float input with a double grid.
PROMOTED_GRID = """
    import torch
    import torch.nn.functional as F

    class Model(torch.nn.Module):
        def forward(self, x, offsets):
            height, width = x.shape[2], x.shape[3]
            ys = torch.linspace(0.5, height - 0.5, height, dtype=x.dtype)
            xs = torch.linspace(0.5, width - 0.5, width, dtype=x.dtype)
            ref_y, ref_x = torch.meshgrid(ys, xs, indexing="ij")
            reference = torch.stack([ref_x.reshape(-1) / width, ref_y.reshape(-1) / height], -1)
            grid = reference[None, :, None, :] + offsets
            return F.grid_sample(x, 2 * grid - 1, align_corners=False)

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(1, 2, 3, 4), torch.rand(1, 12, 1, 2) * 0.1)
"""


def _model(op_type: str, elem_type: int, typed_in_graph: bool = True) -> onnx.ModelProto:
    """x -> Identity -> ``op_type`` (CumSum over axis 0, or Max with itself), the Identity's output
    typed in the graph or not."""
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [0])
    second = "axis" if op_type == "CumSum" else "same"
    nodes = [helper.make_node("Identity", ["x"], ["same"], name="copy"),
             helper.make_node(op_type, ["same", second], ["y"], name="the_node")]
    value_info = [helper.make_tensor_value_info("same", elem_type, [4])] if typed_in_graph else []
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem_type, [4])],
                              [helper.make_tensor_value_info("y", elem_type, [4])], [axis], value_info=value_info)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnx_runtime_refusal(model: onnx.ModelProto) -> str | None:
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as error:  # ONNX Runtime's own exception types
        return str(error)
    return None


# CumSum's schema takes no bool (ONNX Runtime refuses the graph's types); Max's schema takes int16,
# but ONNX Runtime's CPU provider has no kernel for it.
@pytest.mark.parametrize(("op_type", "elem_type", "given", "refusal"), [
    ("CumSum", TensorProto.BOOL, "T=bool", "Type Error"),
    ("Max", TensorProto.INT16, "T=int16", NO_KERNEL),
])
def test_a_node_without_a_kernel_for_its_type_is_named_as_onnx_runtime_refuses_it(
        op_type: str, elem_type: int, given: str, refusal: str) -> None:
    model = _model(op_type, elem_type)
    (gap,) = kernel_gaps(onnx_to_graph(model), model)
    assert gap.node.name == "the_node" and gap.given == given
    assert "int64" in gap.accepted and given.split("=")[1] not in gap.accepted.split(": ")[1].split(", ")
    refused = _onnx_runtime_refusal(model)
    assert refused is not None and refusal in refused and "the_node" in refused


@pytest.mark.parametrize("op_type", ["CumSum", "Max"])
@pytest.mark.parametrize("elem_type", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT16])
def test_nodes_onnx_runtime_runs_are_not_named(op_type: str, elem_type: int) -> None:
    """float16 runs where float does: ONNX Runtime casts around a CPU kernel that lacks it."""
    model = _model(op_type, elem_type)
    assert kernel_gaps(onnx_to_graph(model), model) == []
    assert _onnx_runtime_refusal(model) is None


def test_values_the_export_left_untyped_are_typed_by_inference() -> None:
    model = _model("CumSum", TensorProto.BOOL, typed_in_graph=False)
    graph = onnx_to_graph(model)
    assert graph.value("same").dtype is None
    assert [gap.node.name for gap in kernel_gaps(graph, model)] == ["the_node"]


def test_check_lists_the_node_onnx_runtime_will_refuse_with_the_one_the_exporter_rejected(cli, model_file) -> None:
    path = model_file("bool_cumsum.py", BOOL_DIFF_THEN_CUMSUM)
    checked = cli("check", str(path), "--exporter", "torchscript")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "aten::diff" in checked.stdout and "aten::cumsum" in checked.stdout
    assert "ONNX's CumSum-14 does not take T=bool" in " ".join(checked.stdout.split())


def test_fix_auto_fixes_both_in_one_round_and_exports_the_whole_model_twice(worker, model_file) -> None:
    path = model_file("bool_cumsum.py", BOOL_DIFF_THEN_CUMSUM)
    stages: list[str] = []
    result = worker.run(AutoFixRequest(ModelRequest(str(path)), options={"exporter": "torchscript"}),
                        progress=lambda _fraction, message="": stages.append(message))
    assert {p.kind for p in result.before.unsupported} == {"aten::diff", "aten::cumsum"}
    bool_cumsum = next(p for p in result.before.unsupported if p.kind == "aten::cumsum")
    assert bool_cumsum.kernel_gap == ""  # torch sums a bool too: no cast back to torch's types to offer
    assert not [r for r in result.rejected if r.candidate == "standard.inputs_as_traced"]
    assert result.after.unsupported == []
    assert {c.kind for c in result.choices} == {"aten::diff", "aten::cumsum"}
    assert all(c.on_node for c in result.choices)
    assert result.whole_model_exports == 2  # as it is, then with both fixes
    exports = [m.split(":")[0] for m in stages if m.startswith("exporting")]
    assert exports[0] == "exporting as it is" and exports[-1] == "exporting the whole model with the fixes", exports
    assert result.after.output_max_abs is not None and np.isclose(result.after.output_max_abs, 0.0)


def test_an_op_onnx_runtime_runs_by_its_function_body_is_not_named() -> None:
    """LeakyRelu has a CPU kernel for float only, but a function body for opset 16 on: ONNX Runtime
    runs that for double. Elu's body is written for opset 18, so at 17 a double Elu is refused."""
    def single(op_type: str) -> onnx.ModelProto:
        graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], name="the_node")], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [4])])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    leaky, elu = single("LeakyRelu"), single("Elu")
    assert kernel_gaps(onnx_to_graph(leaky), leaky) == [] and _onnx_runtime_refusal(leaky) is None
    assert [gap.node.name for gap in kernel_gaps(onnx_to_graph(elu), elu)] == ["the_node"]
    assert NO_KERNEL in (_onnx_runtime_refusal(elu) or "")


def test_fix_all_from_the_windows_analysis_names_its_one_export_as_the_fixed_model(worker, model_file) -> None:
    """The window hands the search its analysis: the one whole-model export has the fixes in it."""
    path = model_file("bool_cumsum.py", BOOL_DIFF_THEN_CUMSUM)
    options = {"exporter": "torchscript"}
    first = worker.run(AutoFixRequest(ModelRequest(str(path)), options=options))
    stages: list[str] = []
    again = worker.run(AutoFixRequest(ModelRequest(str(path)), options=options, analysis=first.before),
                       progress=lambda _fraction, message="": stages.append(message))
    assert again.whole_model_exports == 1 and again.after.unsupported == []
    exports = {m.split(":")[0] for m in stages if m.startswith("exporting")}
    assert exports == {"exporting the whole model with the fixes"}, stages


def test_the_kernel_table_is_read_in_a_child_and_kept_per_build(tmp_path) -> None:
    from fixport.core.onnx_io.kernel_table import cpu_kernel_rows, runtime_build

    rows = cpu_kernel_rows(tmp_path)
    assert any(op == "CumSum" and domain == "" for op, domain, _, _ in rows)
    kept = tmp_path / f"cpu-kernels-{runtime_build()}.json"
    assert kept.is_file()
    kept.write_text('{"rows": [["Kept", "", [1, 99], {}]]}', encoding="utf-8")
    assert cpu_kernel_rows(tmp_path) == [("Kept", "", [1, 99], {})]  # read from the file, not again


def test_a_build_whose_kernel_table_crashes_costs_the_check_not_the_process(tmp_path) -> None:
    """onnxruntime-gpu without TensorRT's libraries dies with SIGSEGV in get_all_opkernel_def():
    the child that reads it dies instead, and the crash is remembered, not repeated."""
    from fixport.core.onnx_io.kernel_table import cpu_kernel_rows

    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    assert cpu_kernel_rows(tmp_path, reader=crash) == []
    assert cpu_kernel_rows(tmp_path, reader="raise SystemExit('not read again')") == []


def test_a_node_onnx_runtime_has_no_kernel_for_at_promoted_types_is_placed_fixed_by_a_cast_and_compared(
        worker, model_file) -> None:
    """check places the refusal on aten::grid_sampler (line, scope, ONNX node); fix --auto casts the
    grid back to torch's float32 and verifies it on the node; compare with the fix passes."""
    path = model_file("promoted_grid.py", PROMOTED_GRID)
    options = {"exporter": "torchscript"}
    checked = worker.run(AnalyzeRequest(ModelRequest(str(path)), options))
    (problem,) = checked.unsupported
    assert problem.kind == "aten::grid_sampler" and problem.source == "promoted_grid.py:13", problem
    assert problem.onnx_node.endswith("GridSample") and problem.kernel_gap == "T2=double"
    fixed = worker.run(AutoFixRequest(ModelRequest(str(path)), options=options))
    (choice,) = fixed.choices
    assert (choice.template_id, choice.family, choice.on_node) == ("standard.inputs_as_traced", "kernel_types", True)
    assert fixed.after.unsupported == [] and fixed.after.output_max_abs < 1e-5
    compared = worker.run(CompareRequest(ModelRequest(str(path)), options, mappings=fixed.mappings,
                                         analyze_nodes=False))
    assert compared.passed


def test_a_promoted_grid_behind_an_op_the_exporter_rejects_is_listed_and_fixed_in_the_same_round(
        worker, model_file) -> None:
    """Read from the kernel table before ONNX Runtime can run the model: the cast is offered there too."""
    source = PROMOTED_GRID.replace("align_corners=False)", "align_corners=False), torch.diff(x, dim=-1)")
    path = model_file("promoted_grid_and_diff.py", source)
    fixed = worker.run(AutoFixRequest(ModelRequest(str(path)), options={"exporter": "torchscript"}))
    gap = next(p for p in fixed.before.unsupported if p.kind == "aten::grid_sampler")
    assert gap.kernel_gap == "T2=double" and {p.kind for p in fixed.before.unsupported} == {"aten::diff",
                                                                                              "aten::grid_sampler"}
    assert {c.kind: c.template_id for c in fixed.choices}["aten::grid_sampler"] == "standard.inputs_as_traced"
    assert fixed.after.unsupported == [] and fixed.whole_model_exports == 2


def test_the_cast_is_offered_only_for_a_node_without_a_kernel_for_its_types(tmp_path) -> None:
    from fixport.core.exporters.torchscript.candidates import INPUTS_AS_TRACED_TEMPLATE_ID, candidates_for
    from fixport.core.words.problems import UnsupportedNode
    from fixport.core.words.vocabulary import ProblemReason
    from fixport.symbolics.library import TemplateLibrary

    def problem(kernel_gap: str) -> UnsupportedNode:
        return UnsupportedNode("aten::grid_sampler", "n1", ProblemReason.RUNTIME_ERROR, "", "", "",
                               kernel_gap=kernel_gap)

    library = TemplateLibrary(user_dir=tmp_path)
    first = candidates_for(problem("T2=double"), 17, library, allow_custom=False)[0]
    assert first.mapping.template_id == INPUTS_AS_TRACED_TEMPLATE_ID
    others = candidates_for(problem(""), 17, library, allow_custom=False)
    assert INPUTS_AS_TRACED_TEMPLATE_ID not in {c.mapping.template_id for c in others}
