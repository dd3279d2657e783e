"""`compare --exporters`: one model, both exporters, real exports held to torch and to each other."""
from __future__ import annotations

import pytest

from fixport.core.comparison.node_alignment import op_name
from fixport.core.foundation.errors import FixportError
from fixport.core.records.exporter_comparison import (
    FIXES_FROM_AUTO_FIX,
    FIXES_FROM_PROJECT,
    NO_AUTO_FIX,
    NO_FIXES_NEEDED,
    ExporterComparison,
    parse_exporters,
)
from fixport.core.records.requests import AutoFixRequest, CompareExportersRequest, CompareRequest
from fixport.core.records.results import ModelRequest

EXPORTERS = ["torchscript", "dynamo"]

PLAIN_MODEL = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.lin = nn.Linear(8, 5)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            y = y.mean(dim=1)
            return self.lin(y).softmax(-1)


    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(1, 3, 8, 8),)
"""

# torch.onnx's TorchScript symbolic for softplus drops `threshold` (above it torch returns x
# itself): with threshold=1 its export is wrong where beta*x > 1; the dynamo exporter's is right.
SOFTPLUS_MODEL = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.act = nn.Softplus(beta=2.0, threshold=1.0)

        def forward(self, x):
            y = self.lin(x)
            y = self.act(y)
            return y * 2


    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(2, 6),)
"""

# The TorchScript exporter refuses a non-zero threshold; the dynamo exporter converts it.
THRESHOLD_MODEL = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.threshold = nn.Threshold(0.1, 20.0)

        def forward(self, x):
            return self.threshold(self.conv(x))


    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(1, 3, 6, 6),)
"""


def _compare(worker, path, **options) -> ExporterComparison:
    return worker.run(CompareExportersRequest(ModelRequest(str(path)), EXPORTERS, **options))


@pytest.mark.slow
def test_two_exports_that_agree_say_so_with_size_and_latency(worker, model_file) -> None:
    result = _compare(worker, model_file("plain.py", PLAIN_MODEL))

    assert result.agree and "agree" in result.verdict()
    assert [run.exporter for run in result.runs] == EXPORTERS
    for run in result.runs:
        assert run.passed and run.problems == [] and run.fixes_from == NO_FIXES_NEEDED
        cost = run.comparison.cost
        assert cost.file_bytes > 1000 and cost.node_count >= 5 and cost.latency_runs == 5 and cost.latency_ms > 0
        assert run.first_divergent is None and run.nodes_compared >= 5
    assert [output.within_tolerance for output in result.outputs] == [True]
    places = {(node.scope, node.source.rsplit(":", 1)[-1]) for node in result.nodes}
    assert {("conv", "13"), ("", "13"), ("", "14"), ("lin", "15"), ("", "15")} <= places  # conv, relu, mean, ...
    assert result.first_difference is None and not any(node.differ for node in result.nodes)


@pytest.mark.slow  # the window's test runs the same comparison in the fast tier
def test_exports_that_differ_name_the_line_where_they_first_differ(worker, model_file) -> None:
    result = _compare(worker, model_file("softplus.py", SOFTPLUS_MODEL))

    torchscript, dynamo = result.runs
    assert not result.agree and not torchscript.passed and dynamo.passed
    assert torchscript.first_divergent.source == "softplus.py:14" and torchscript.first_divergent.scope == "act"
    assert dynamo.first_divergent is None
    assert not result.outputs_agree and result.outputs[0].max_abs > 0.1
    first = result.first_difference
    assert (first.scope, first.source, op_name(first.op)) == ("act", "softplus.py:14", "softplus")
    assert first.max_abs > 0.1 and first.vs_torch["dynamo"] < 1e-5 and first.exceeds_torch["torchscript"]
    assert "first differ at aten::softplus in act at softplus.py:14" in result.verdict()
    linear = next(node for node in result.nodes if node.source == "softplus.py:13")
    assert not linear.differ  # before the softplus the two exports still agree


@pytest.mark.slow
def test_each_export_gets_what_it_needs(worker, model_file) -> None:
    """The TorchScript export needs a fix for the threshold, found by fix --auto; dynamo needs none."""
    path = model_file("threshold.py", THRESHOLD_MODEL)
    result = _compare(worker, path)

    torchscript, dynamo = result.runs
    assert torchscript.problems == ["aten::threshold (symbolic_rejected) at threshold.py:13"]
    assert torchscript.fixes_from == FIXES_FROM_AUTO_FIX and len(torchscript.fixes) == 1
    assert torchscript.fixes[0].startswith("aten::threshold -> ")
    assert dynamo.problems == [] and dynamo.fixes_from == NO_FIXES_NEEDED
    assert result.agree


@pytest.mark.slow
def test_without_auto_fix_only_the_projects_fixes_apply(worker, model_file) -> None:
    path = model_file("threshold.py", THRESHOLD_MODEL)
    unfixed = _compare(worker, path, auto_fix=False)
    torchscript, dynamo = unfixed.runs
    assert torchscript.fixes_from == NO_AUTO_FIX and not torchscript.compared
    assert torchscript.error == ("1 problem(s) keep the export from running in ONNX Runtime: "
                                 "aten::threshold (symbolic_rejected)") and "fix --auto" in torchscript.hint
    assert dynamo.passed and not unfixed.agree and "Not comparable: torchscript" in unfixed.verdict()

    fixes = worker.run(AutoFixRequest(ModelRequest(str(path)))).mappings  # as a project saved by `fix --auto`
    from_project = _compare(worker, path, auto_fix=False, mappings_by_exporter={"torchscript": fixes})
    assert from_project.runs[0].fixes_from == FIXES_FROM_PROJECT and from_project.agree


def test_every_compare_times_the_export(worker, model_file) -> None:
    path = model_file("plain.py", PLAIN_MODEL)
    result = worker.run(CompareRequest(ModelRequest(str(path)), latency_runs=3, analyze_nodes=False))
    assert result.cost.latency_runs == 3 and result.cost.latency_ms > 0 and result.cost.node_count >= 5
    assert result.to_json()["cost"]["file_bytes"] == result.cost.file_bytes

    untimed = worker.run(CompareRequest(ModelRequest(str(path)), latency_runs=0, analyze_nodes=False))
    assert untimed.cost.latency_ms is None and untimed.cost.file_bytes == result.cost.file_bytes
    with pytest.raises(FixportError, match="--latency-runs -1 is out of range"):
        worker.run(CompareRequest(ModelRequest(str(path)), latency_runs=-1))


def test_exporters_are_two_known_names() -> None:
    assert parse_exporters("dynamo, torchscript", ("torchscript", "dynamo")) == ["dynamo", "torchscript"]
    for wrong in ("dynamo", "dynamo,dynamo", "torchscript,onnx"):
        with pytest.raises(ValueError, match="--exporters"):
            parse_exporters(wrong, ("torchscript", "dynamo"))
    assert op_name("aten::_convolution") == "convolution" and op_name("aten::conv2d.default") == "conv2d"


def test_cli_compare_exporters_refuses_one_exporter_and_the_exporter_flag(cli, model_file) -> None:
    path = str(model_file("plain.py", PLAIN_MODEL))
    one = cli("compare", path, "--exporters", "dynamo")
    assert one.returncode == 2 and "--exporters takes two different exporters" in one.stderr + one.stdout
    both = cli("compare", path, "--exporters", "torchscript,dynamo", "--exporter", "dynamo")
    assert both.returncode == 2 and "--exporter and --exporters cannot be used together" in both.stderr + both.stdout
    assert "Traceback" not in one.stderr + both.stderr



def test_values_pair_by_place_then_closest_value() -> None:
    """Built by hand (no export): a line with two casts, one scope spelled two ways, one line named
    at two frames of one call."""
    import numpy as np

    from fixport.core.comparison.node_alignment import NodeSide, align, scope_path
    from fixport.core.project.tolerances import ToleranceTable
    from fixport.core.records.compare_result import NodeError

    def error(node: str, scope: str, source: str, kind: str, vs_torch: float = 0.0) -> NodeError:
        return NodeError(node, kind, node, node, kind, scope, source, "", (2,), "float32", vs_torch, 0.0, 0.0, 1e-3,
                         1e-5, vs_torch > 1e-5)

    first = NodeSide("torchscript", [error("a", "", "m.py:3", "onnx::Cast"), error("b", "", "m.py:3", "onnx::Cast"),
                                     error("c", "mlp/mlp/0", "m.py:9", "onnx::Add")],
                     {"a": "aten::to", "b": "aten::to", "c": "aten::linear"},
                     {"a": np.array([1.0, 2.0]), "b": np.array([5.0, 6.0]), "c": np.array([0.5, 0.5])})
    second = NodeSide("dynamo", [error("x", "", "m.py:3", "onnx::Cast"), error("y", "", "m.py:3", "onnx::Cast"),
                                 error("z", "mlp/0", "m.py:20", "onnx::Add", 0.2)],
                      {"x": "aten::_to_copy.default", "y": "aten::_to_copy.default", "z": "aten::linear.default"},
                      {"x": np.array([5.0, 6.0]), "y": np.array([1.0, 2.0]), "z": np.array([0.5, 0.7])})
    nodes, unaligned = align(first, second, ToleranceTable())

    pairs = [(n.onnx_nodes["torchscript"], n.onnx_nodes["dynamo"]) for n in nodes]
    assert pairs == [("a", "y"), ("b", "x"), ("c", "z")]
    assert [n.differ for n in nodes] == [False, False, True] and unaligned == {"torchscript": 0, "dynamo": 0}
    assert scope_path("mlp/mlp/0") == scope_path("mlp.0") == "mlp/0"

CHOOSES_DYNAMO = '\n    FIXPORT_EXAMPLE = {"export_options": {"exporter": "dynamo"}}\n'


def test_the_window_files_the_fixes_under_the_exporter_a_model_file_chooses(worker, model_file) -> None:
    """A model file that chooses dynamo for itself: the window's graphs show its dynamo export, so the
    project's fixes are dynamo's and its export is the one shown (they were filed under TorchScript)."""
    from fixport.core.project.project import FixMapping
    from fixport.core.session.workbench import Workbench
    from fixport.gui.compare_exporters import exporters_request, shown_exporter

    workbench = Workbench()
    workbench.open_model(model_file("chooses_dynamo.py", PLAIN_MODEL + CHOOSES_DYNAMO))
    workbench.analysis = worker.run(workbench.analyze_request())
    assert workbench.analysis.options.exporter == "dynamo"
    workbench.project.mappings.append(FixMapping("aten::softmax.int", "dynamo.some_fix", "TEMPLATE = {}"))
    request = exporters_request(workbench, "cpu", {})
    assert shown_exporter(workbench) == "dynamo" and request.exporters == ["dynamo", "torchscript"]
    assert list(request.mappings_by_exporter) == ["dynamo"]
